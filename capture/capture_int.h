/* capture_int.h - private to capture/: capture's part of the engine (struct cap_engine),
 * windows, the trie and shapes, the caches of streams, events and functions, and the helpers
 * the files share. capture layer. */
#ifndef CAP_CAPTURE_INT_H
#define CAP_CAPTURE_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "common/arena.h"
#include "common/compiler.h"
#include "common/file.h"
#include "common/map.h"
#include "common/serial.h"
#include "common/table.h"
#include "driver/real.h"

#define CAP_DEFAULT_WINDOW_MAX_OPS 65536u
#define CAP_MAX_SLOTS 65535u          /* streams or events one window may name */
#define CAP_EXTRA_MAX_WORDS 64        /* an `extra` list longer than this is garbage */
#define CAP_MAX_PARAM_BYTES (64 * 1024) /* more than any driver accepts (32764 today) */

/* ------------------------------------------------------------------ windows */

struct cap_window {
	struct cap_op *ops;          /* the ops in call order (growable array) */
	uint32_t nops, cap;          /* used and allocated entries of ops */
	uint32_t filled;             /* ops[0, filled) hold ops capture wrote (a reset keeps them):
				      * cap_record may find the op it records there already */
	uint32_t binds_new_from;     /* the first op recorded with bindings that may not be its
				      * predicted op's (no prediction, or hashed anew), UINT32_MAX: none.
				      * A window that is its prediction's shape again has its last
				      * sighting's bindings in every op before it: its sighting
				      * compares from there (trie.c) */
	struct cf_arena arena;       /* parameter bytes, attributes, staged sources */
	const struct cap_window *lender; /* the predicted window whose arena some of this open
				      * window's kernel ops' parameters point into (issue 22: an op the
				      * fast lanes took whose bytes are its predicted op's, at the same
				      * index, borrows them instead of a copy), or NULL. Resolved before
				      * the lender can change or go: at the close (keep_small takes the
				      * lender's arena over, else record.c's borrow_end copies), where
				      * the lender leaves its shape (keep_spare) and before its ops move
				      * (retract_closed). A closed window owns all it points to. The
				      * lanes borrow only while the window's own arena is empty: once a
				      * launch puts its own bytes there (one that moved, PyTorch's every
				      * step), the close would copy the borrowed anyway, so the launches
				      * after it copy at once, as before (issue 22) */
	uint32_t borrow_hi;          /* one past the last op that borrowed (0: none) */
	struct cap_wstream *streams; /* slot -> stream (growable) */
	uint32_t nstreams, capstreams; /* used and allocated slots */
	CUevent *events;             /* slot -> event (growable) */
	uint32_t nevents, capevents; /* used and allocated slots */
	uint64_t seq;                /* window number */
	uint64_t t_begin, t_end;     /* monotonic time of the first op and of the close */
	uint64_t alloc_gen_begin;    /* the allocation map's gen at the first op and at the close:
				      * each op resolved as it would now where no change since the */
	uint64_t alloc_gen_end;      /* first touched an address it looked up (record.c: resolves_now) */
	uint64_t funcs_gen_begin;    /* the function lookups' gen at the first op and at the close: */
	uint64_t funcs_gen_end;      /* equal, every launch's handle resolved as it would now, while
				      * the gen is still that (record.c: repeat_kernel) */
	uint8_t closed_by;           /* enum cap_boundary, once closed */
	uint16_t closed_api;         /* enum drv_api_id of the closing call */
	uint64_t closed_site;        /* call site of the closing call (CUFOLD_CALLSITES), or 0 */
	uint32_t nfailed;            /* ops marked CAP_OPF_FAILED */
	bool pinned;                 /* a template build outside the lock reads it (cap_shape_pin_last) */
	bool orphan;                 /* pinned, and no shape holds it any more: cap_window_unpin frees it */
};

/* Whether the call c (a copy or a memset) repeats p in every field of its kind's part that
 * its key, bindings and vid read, compared straight from the call's arguments (a 1-D copy:
 * only the fields cap_call_copy_1d does not fix, nor the memory types, which its entry point
 * fixes; a copy from pageable memory or not 1-D on both sides never does). The header (api,
 * stream, context, slot) is the caller's to compare, the api first.
 * Shared by cap_op_take_like and the fast lane (record.c: repeat), so both compare the same. */
static inline bool cap__call_repeats(const struct cap_call *c, const struct cap_op *p)
{
	if (c->kind != p->kind)
		return false;
	if (c->kind == CAP_OP_MEMCPY) {
		const struct cap_memcpy *a = &c->u.memcpy, *b = &p->u.memcpy;

		if (!a->oned || !b->oned || (p->flags & CAP_OPF_NO_DEFER) || b->src_pageable)
			return false;
		/* the memory types are the entry point's (cap_call_copy_1d's callers pass constants,
		 * shim/hooks_copy.c), and the callers compared the entry points */
		cf_assert(c->api == p->api && a->d.srcMemoryType == b->d.srcMemoryType &&
			  a->d.dstMemoryType == b->d.dstMemoryType);
		return a->d.srcDevice == b->d.srcDevice && a->d.dstDevice == b->d.dstDevice &&
		       a->d.WidthInBytes == b->d.WidthInBytes && a->d.srcHost == b->d.srcHost &&
		       a->d.dstHost == b->d.dstHost && a->dst_ctx == b->dst_ctx && a->src_ctx == b->src_ctx;
	}
	if (c->kind == CAP_OP_MEMSET) {
		const struct cap_memset *a = &c->u.memset, *b = &p->u.memset;

		return a->dst == b->dst && a->pitch == b->pitch && a->elem_size == b->elem_size &&
		       a->value == b->value && a->width == b->width && a->height == b->height;
	}
	return false;
}

/* w borrows nothing (any bytes it borrowed are its own now, or it is being reset). */
static inline void cap__borrow_none(struct cap_window *w)
{
	w->lender = NULL;
	w->borrow_hi = 0;
}

/* A window that leaves its shape (replaced, evicted, retracted): kept as the spare, or freed,
 * unless pinned (then the unpin frees it). */
void cap__window_drop(struct cap_engine *ce, struct cap_window *w);

struct cap_window *cap__window_new(void);
/* out: the complete descriptor of a 1-D copy whose call (cap_call_copy_1d) stored in only the
 * types, addresses and width. */
static inline void cap__copy_1d_complete(CUDA_MEMCPY3D *out, const CUDA_MEMCPY3D *in)
{
	/* every member stored (padding left: nothing compares descriptors bytewise), rather than a
	 * memset, whose "rep stos" cost one instruction per word on every copy (issue 22) */
	out->srcXInBytes = out->srcY = out->srcZ = out->srcLOD = 0;
	out->srcMemoryType = in->srcMemoryType;
	out->srcHost = in->srcHost;
	out->srcDevice = in->srcDevice;
	out->srcArray = NULL;
	out->reserved0 = NULL;
	out->srcPitch = out->srcHeight = 0;
	out->dstXInBytes = out->dstY = out->dstZ = out->dstLOD = 0;
	out->dstMemoryType = in->dstMemoryType;
	out->dstHost = in->dstHost;
	out->dstDevice = in->dstDevice;
	out->dstArray = NULL;
	out->reserved1 = NULL;
	out->dstPitch = out->dstHeight = 0;
	out->WidthInBytes = in->WidthInBytes;
	out->Height = 1;
	out->Depth = 1;
}
void cap__window_free(struct cap_window *w);
/* Empty w for reuse, keeping its memory. */
void cap__window_reset(struct cap_window *w);
/* Bytes w holds. */
size_t cap__window_bytes(const struct cap_window *w);

/* ------------------------------------------------------------------ the trie and shapes (trie.c) */

struct cap_trie_node {
	struct cap_trie_node *parent; /* NULL for the root */
	uint64_t key;                /* op key on the edge from parent */
	uint32_t depth;              /* ops from the root */
	uint32_t nchildren;          /* nodes whose parent this is */
	struct cap_shape *shape;     /* the window shape ending here, or NULL */
	struct cap_trie_node *last_child; /* the child last walked to, or NULL (trie.c: tried before
					   * the edge map; cleared when that child is freed) */
};

struct cap_shape {
	uint64_t id;                 /* 1, 2, ... in order of first sighting */
	struct cap_trie_node *end;   /* its terminal trie node */
	uint64_t sightings;          /* windows of this shape */
	uint64_t stable;             /* sightings whose bindings equaled the previous sighting's */
	bool last_stable;            /* the last sighting did */
	uint64_t first_window;       /* window number of the first sighting */
	uint64_t last_window;        /* of the last sighting (least recently used goes first) */
	struct cap_window *last;     /* ops of the last sighting (owned) */
	uint32_t nops;               /* ops per window */
	uint32_t *moved;             /* per op: sightings whose binding differed from the previous */
	uint32_t kinds[CAP_OP_KIND_COUNT]; /* its ops by kind (every sighting alike: a key names
					    * its op's kind), counted once for record.c's totals */
	uint64_t closed_by[CAP_BOUNDARY_COUNT]; /* what ended its windows */
	struct cap_shape *prev, *next; /* recency list, most recent first */
	struct cap_shape *succ;      /* the shape whose window followed this one's last time, or
				      * NULL (record.c: the open window's prediction) */
	void *user;                  /* replay's template */
	struct cap_mark *marks;      /* per op: what the rewrite did to it (owned), or NULL */
};

/* Shape s is being freed: nothing capture keeps may point at it any more (record.c: the
 * prediction and the successor links). s is off the recency list already. */
void cap__shape_gone(struct cap_engine *ce, struct cap_shape *s);

/* Insert the closed window w (ops compacted, nops > 0) into the trie: an existing shape takes
 * w as its last sighting and *spare gets the window it replaces; a new shape takes w. May evict
 * the least recently used shape. Returns the shape, or NULL on failure (w then goes to *spare). */
struct cap_shape *cap__trie_insert(struct cap_engine *ce, struct cap_window *w, struct cap_window **spare);
/* cap__trie_insert for a window known to follow shape s's path (every key equal to its last
 * sighting's, as many ops): no walk of the trie (record.c, when the prediction held). */
struct cap_shape *cap__trie_insert_known(struct cap_engine *ce, struct cap_window *w, struct cap_shape *s,
					 struct cap_window **spare);
/* Drop shape s (replay is told, as of an eviction) and hand back its last window, which it no
 * longer owns: a sighting that must not count (one of its ops turned out refused). */
struct cap_window *cap__trie_retract(struct cap_engine *ce, struct cap_shape *s);
void cap__trie_fini(struct cap_engine *ce);
size_t cap__trie_bytes(struct cap_engine *ce);

/* ------------------------------------------------------------------ caches (funcs.c) */

/* The function record of a launch's handle in ctx (a CUkernel resolves through
 * cuKernelGetFunction); NULL when the driver cannot resolve it. */
struct cap_func *cap__func_get(struct cap_engine *ce, CUfunction handle, CUcontext ctx, CUfunction *func);
void cap__funcs_fini(struct cap_engine *ce);
size_t cap__funcs_bytes(struct cap_engine *ce);
/* Every function record ever made, newest first. */
struct cap_func *cap__funcs_all(struct cap_engine *ce);

/* ------------------------------------------------------------------ images (images.c) */

void cap__images_init(struct cap_engine *ce);
void cap__images_fini(struct cap_engine *ce);
size_t cap__images_bytes(struct cap_engine *ce);
/* The image a new function handle comes from: bound to func, else to the CUkernel it was
 * resolved from, else to its module; NULL when unknown. */
struct cap_image *cap__image_of(struct cap_engine *ce, CUfunction func, CUkernel kernel, CUmodule mod);
/* A reference for a function record (img may be NULL); unref frees a text nobody names. */
void cap__image_ref(struct cap_image *img);
void cap__image_unref(struct cap_engine *ce, struct cap_image *img);
/* A module or library is unloaded: forget it and the handles looked up from it. */
void cap__images_forget(struct cap_engine *ce, CUmodule mod, CUlibrary lib);
/* Forget every function and kernel handle (which were unloaded is not known). */
void cap__images_drop_handles(struct cap_engine *ce);

/* Whether a name matches one of the comma-separated globs. */
bool cap__name_matches(const char *patterns, const char *name);

/* A stream's process-wide record (streams.c). */
struct cap_stream {
	CUstream handle;             /* as passed */
	CUcontext ctx;               /* for the legacy and per-thread streams; NULL otherwise */
	uint32_t tid;                /* per-thread stream's thread; else 0 */
	uint32_t id;                 /* process-wide number (1, 2, ...) */
	uint8_t kind;                /* enum cap_stream_kind */
	uint64_t win;                /* window number its slot belongs to */
	uint16_t slot;               /* its slot in window `win` */
	uint32_t last;               /* index of its last op in window `win` */
};
/* The record of a stream as an op would name it, or NULL when capture never saw it (nothing is
 * created and the driver is not asked). */
struct cap_stream *cap__stream_find(struct cap_engine *ce, CUstream h, int pt, CUcontext ctx, uint32_t tid);
/* The event slot bookkeeping: slot of e in window `win`, assigning the next one. */
struct cap_event_rec {
	CUevent handle;              /* the program's event */
	uint64_t win;                /* window number its slot belongs to */
	uint16_t slot;               /* its slot in window `win` */
	uint64_t rec_win;            /* window number of its last record (0: none recorded) */
	uint32_t rec_index;          /* index of that record in window `rec_win` */
};
struct cap_event_rec *cap__event_get(struct cap_engine *ce, CUevent e);
/* The record of an event, or NULL when capture never saw it (nothing is created). */
struct cap_event_rec *cap__event_find(struct cap_engine *ce, CUevent e);
void cap__streams_fini(struct cap_engine *ce);
size_t cap__streams_bytes(struct cap_engine *ce);

/* ------------------------------------------------------------------ allocation map (alloc.c) */

void cap__alloc_fini(struct cap_engine *ce);
size_t cap__alloc_bytes(struct cap_engine *ce);

/* What the driver says of an address outside the map (memory capture never saw allocated:
 * cuIpcOpenMemHandle, pool imports, interop). Asked once per page and cached until
 * cap__alloc_probe_reset (at boundaries that may change mappings: frees, unmodeled calls). */
enum cap_probe {
	CAP_PROBE_PAGEABLE = 0,      /* the driver does not know it: pageable host memory */
	CAP_PROBE_HOST = 1,          /* host memory the driver knows (pinned or registered elsewhere) */
	CAP_PROBE_DEVICE = 2,        /* device memory */
	CAP_PROBE_UNKNOWN = 3,       /* any other answer or error */
};
enum cap_probe cap__alloc_probe(struct cap_engine *ce, uint64_t addr);
void cap__alloc_probe_reset(struct cap_engine *ce);
/* Whether addresses a and b resolve now (cap_alloc_find, cap__alloc_probe) as they did at the
 * map's gen `gen`, no later: true when no change of the map or of the probes' answers since
 * touched either (the change log, CAP_ALLOC_LOG changes back); false when one may have, or the
 * log does not reach back to gen. */
bool cap__alloc_same_since_slow(struct cap_engine *ce, uint64_t gen, uint64_t a, uint64_t b);
/* (cap__alloc_same_since, inline: below the engine) */

/* ------------------------------------------------------------------ the capture part (engine.c) */

#define CAP_PROBE_SLOTS 64           /* the allocation map's cache of probed pages (alloc.c) */

struct cap_probe_slot {
	uint64_t page;               /* address >> 12, plus one (0: empty slot) */
	uint8_t answer;              /* enum cap_probe */
};

/* alloc.c: one change of the allocation map or of the probes' answers, in the change log: the
 * addresses whose resolution it may have changed, [lo, last]. */
#define CAP_ALLOC_LOG 32             /* changes remembered (cap__alloc_same_since) */
struct cap_alloc_change {
	uint64_t gen;                /* the map's gen after it (merged changes of one range: the last) */
	uint64_t lo, last;           /* first and last address it may have changed; lo > last: none */
	bool outside;                /* the probes' answers forgotten: every address outside the map */
};

/* alloc.c: the allocation map. */
struct cap_alloc_map {
	struct cap_alloc *ranges;    /* sorted by base, non-overlapping */
	size_t nranges, capranges;   /* used and allocated entries */
	size_t hint[2];              /* indices of the ranges cap_alloc_find found last (alloc.c) */
	uint64_t gen;                /* bumped by every change of the map or of the probes' answers:
				      * a copy resolved at an equal gen resolves the same (record.c), a
				      * rewrite plan's allocation extents hold (cap_alloc_gen) */
	uint64_t next_id;            /* id of the next allocation */
	struct cap_probe_slot probes[CAP_PROBE_SLOTS]; /* what the driver said of pages outside it */
	/* the last CAP_ALLOC_LOG changes, a ring (newest at log_head - 1): which addresses each gen
	 * since log_floor may have moved, so a copy resolved at an older gen is known to resolve
	 * the same when no change since touched its sides (issue 22: a program that allocates and
	 * frees every step, dataparallel, kept the fast lanes off for all its ops) */
	struct cap_alloc_change log[CAP_ALLOC_LOG];
	uint32_t log_head;           /* next entry written (mod CAP_ALLOC_LOG) */
	uint32_t log_used;           /* entries written, at most CAP_ALLOC_LOG */
	uint64_t log_floor;          /* every change with a gen above it is in the log */
};

/* funcs.c: a function lookup remembered (cap__func_get's answer for a handle in a context). */
#define CAP_FUNC_CACHE 64            /* entries, indexed by a few bits of the handle */
struct cap_func_hit {
	CUfunction handle;           /* the handle launched */
	CUcontext ctx;               /* in this context */
	CUfunction fn;               /* the per-context function it resolved to */
	struct cap_func *f;          /* its record; NULL: empty entry */
};

/* funcs.c: function records. */
struct cap_funcs {
	struct cap_func_hit hits[CAP_FUNC_CACHE]; /* recent lookups, emptied at every change */
	struct cf_map by_func;       /* CUfunction -> struct func_bind */
	struct cf_table by_sig;      /* (name, layout) -> struct func_rec */
	struct cf_map kernels;       /* set of CUkernel handles (value: a marker) */
	struct cf_map kernel_fns;    /* hash(CUkernel, CUcontext) -> struct kernel_fn */
	struct cap_func *all;        /* every record, newest first */
	uint32_t next_id;            /* id of the next record */
	size_t nbytes;               /* bytes of records (statistics) */
	uint64_t gen;                /* hits_clear's count: a lookup answers as before while unchanged */
};

/* images.c: the code of loaded images, and which handles came from which. */
struct cap_images {
	struct cf_table by_text;     /* PTX text -> struct image_rec (one per distinct text) */
	struct cf_map mods;          /* CUmodule -> struct image_bind */
	struct cf_map libs;          /* CUlibrary -> struct image_bind */
	struct cf_map kernels;       /* CUkernel -> struct image_bind (owner: its library) */
	struct cf_map fns;           /* CUfunction -> struct image_bind (owner: module or library) */
	struct cf_map owners;        /* owner -> the first struct image_bind of its list (all four maps) */
	struct cf_map links;         /* CUlinkState -> struct link_rec */
	struct cap_image machine;    /* the record of every image with machine code only */
	struct cap_image none;       /* the record of every image with no code found */
	uint64_t next_id;            /* id of the next text record */
	unsigned int device_arch;    /* compute capability images are read for; 0 until asked */
	size_t texts;                /* text records alive */
	size_t text_bytes;           /* their texts' bytes */
	uint64_t forget_visits;      /* binds unloads have looked at (tests: one per bind dropped) */
};

/* streams.c: a stream lookup remembered (cap__stream_get's answer for these arguments). */
#define CAP_STREAM_CACHE 4           /* entries, indexed by a few bits of the handle and thread */
struct cap_stream_hit {
	CUstream h;                  /* the arguments asked with */
	CUcontext ctx;
	uint32_t tid;
	int pt;
	struct cap_stream *s;        /* the answer; NULL: empty entry */
};

/* streams.c: stream and event records. */
struct cap_streams {
	struct cf_map streams;       /* created stream handle, or hash of a default stream -> record */
	struct cap_stream_hit hits[CAP_STREAM_CACHE]; /* recent lookups: most ops name a stream
						       * the last few did, and the map's probe cost a
						       * hundred instructions an op (issue 22); emptied
						       * whenever a record is freed */
	uint32_t last_hit;           /* the entry of hits that answered last: most ops name the
				      * stream the op before did, asked first (no hash) */
	struct cf_map events;        /* event handle -> struct cap_event_rec */
	uint32_t next_id;            /* number of the next stream record */
	size_t nbytes;               /* bytes of records */
	uint32_t npt;                /* per-thread stream records */
};

/* trace.c: the events of CUFOLD_TRACE. */
struct cap_trace {
	char *buf;                   /* ",\n{event}" strings, back to back */
	size_t len, cap;             /* used and allocated bytes */
	bool truncated;              /* a window did not fit */
	uint64_t windows_traced;     /* windows whose events are in buf */
	uint64_t base_ns;            /* time 0 of the trace: the first op traced */
	struct cf_map tracks;        /* stream id -> struct trace_stream */
};

/* trie.c: the trie of window shapes. */
struct cap_trie {
	struct cap_trie_node root;   /* the empty prefix */
	struct cf_map edges;         /* hash(parent, key) -> child */
	size_t nnodes;               /* nodes besides the root */
	struct cap_shape *mru, *lru; /* recency list ends */
	size_t nshapes;              /* shapes alive */
	uint64_t next_shape_id;      /* id of the next new shape */
};

/* callsite.c: the registry of call sites, with its own lock: hooks unwind and register before
 * they take the engine's lock. */
struct cap_sites {
	pthread_mutex_t lock;        /* guards sites */
	struct cf_table sites;       /* hash -> struct site */
};

/* Capture's part of the engine: everything capture changes, one instance per engine. */
struct cap_engine {
	struct cap_engine_head head; /* first: ready (cap_is_ready reads it inline) */
	struct cap_config cfg;       /* configuration (barrier_kernels points at barrier) */
	char barrier[1024];          /* the barrier patterns */
	struct cap_window *cur;      /* the open window */
	struct cap_window *spare;    /* a reset window ready to be the next one, or NULL */
	uint64_t win_seq;            /* number of the open window */
	uint64_t op_seq;             /* ops recorded so far */
	struct cap_shape *prev_shape; /* the shape the last window closed as, or NULL */
	struct cap_shape *pred;      /* the shape the open window is expected to repeat (prev_shape's
				      * successor, else prev_shape), NULL once an op differed: its
				      * last window's op at each index answers the hashes of the
				      * call recorded there when the fields are equal (record.c) */
	struct cap_totals totals;    /* counters (some updated atomically, see cap_op_done) */
	struct cap_alloc_map alloc;  /* alloc.c */
	struct cap_funcs funcs;      /* funcs.c */
	struct cap_images images;    /* images.c */
	struct cap_streams streams;  /* streams.c */
	struct cap_trace trace;      /* trace.c */
	struct cap_trie trie;        /* trie.c */
	struct cap_sites sites;      /* callsite.c */
	/* Told before the open window closes (cap_set_window_closing): replay keeps its deferred
	 * ops in that window's own slots until then (NULL: nobody is). */
	void (*window_closing)(void *arg);
	void *closing_arg;           /* window_closing's argument */
};

/* cap__alloc_same_since (above): the map unchanged since gen answers at once. */
static inline bool cap__alloc_same_since(struct cap_engine *ce, uint64_t gen, uint64_t a, uint64_t b)
{
	return gen == ce->alloc.gen || cap__alloc_same_since_slow(ce, gen, a, b);
}

/* The record of the stream an op names (made, and its kind asked of the driver, on first use);
 * NULL when out of memory. Inline: a remembered lookup answers most calls (streams.c). */
struct cap_stream *cap__stream_get_slow(struct cap_engine *ce, struct cap_stream_hit *hit, CUstream h, int pt,
					CUcontext ctx, uint32_t tid);
static inline bool cap__stream_hit_is(const struct cap_stream_hit *hit, CUstream h, int pt, CUcontext ctx,
				      uint32_t tid)
{
	return hit->s && hit->h == h && hit->pt == pt && hit->ctx == ctx && hit->tid == tid;
}
static inline struct cap_stream *cap__stream_get(struct cap_engine *ce, CUstream h, int pt, CUcontext ctx, uint32_t tid)
{
	uintptr_t u = (uintptr_t)h;
	uint32_t i = ce->streams.last_hit;
	struct cap_stream_hit *hit = &ce->streams.hits[i & (CAP_STREAM_CACHE - 1)];

	if (__builtin_expect(cap__stream_hit_is(hit, h, pt, ctx, tid), 1))
		return hit->s;
	i = ((u >> 4) ^ (u >> 10) ^ tid) & (CAP_STREAM_CACHE - 1);
	ce->streams.last_hit = i;
	hit = &ce->streams.hits[i];
	if (cap__stream_hit_is(hit, h, pt, ctx, tid))
		return hit->s;
	return cap__stream_get_slow(ce, hit, h, pt, ctx, tid);
}

/* Where the lanes point a launch with no parameter bytes (record.c: repeat_kernel,
 * kernel_moved; replay/lane.c): a pointer to nothing that is not NULL, as the long path's empty
 * allocation is (replay classifies a kernel op with NULL parameters eager: template.c). */
extern const unsigned char cap__no_param_bytes[16];
/* funcs.c: f's compare plans from its layout (offset, size, nparams): by_size and nwide (NULL
 * and 0 where a parameter is neither 8 nor 4 bytes, or there is no memory), packed. */
void cap__plan_params(struct cap_func *f);
/* record.c: cap__params_repeat's compare from parameter k on (cold, out of line). */
__attribute__((cold)) bool cap__params_repeat_from(const struct cap_call *c, const struct cap_func *f, const char *pb,
						   uint32_t k);
/* Whether the parameters of kernel call c, laid out as f says, are the bytes of p's (laid out
 * alike, zero padding): each compared where the call points. Pointers and ints, most
 * parameters, are one load each; the loop makes no call, so the lane pays no frame for it
 * (issue 22: the memcmp in the loop cost every launch a frame of six registers), and a
 * parameter of another size hands the rest to cap__params_repeat_from. Shared by record.c's
 * kernel lane and replay's armed lane (replay/lane.c). */
static inline bool cap__params_repeat(const struct cap_call *c, const struct cap_func *f, const char *pb)
{
	const uint32_t n = f->nparams;
	void *const *pp = c->u.kernel.params;
	const uint32_t *q, *off, *size; /* (read in their paths: read first, they were spilled) */

	if (cf_likely(f->packed)) {
		/* packed: parameter k at 8k (the first nwide) or 4 nwide + 4k, no plan read (11 -> 8
		 * instructions a parameter) */
		const size_t nw = f->nwide, nn = n - nw;
		void *const *pn = pp + nw;
		const char *bn = pb + 8 * nw;

		for (size_t k = 0; k < nw; k++) {
			const void *src = pp[k];
			uint64_t x, y;

			if (!src)
				return false;
			memcpy(&x, src, 8);
			memcpy(&y, pb + 8 * k, 8);
			if (x != y)
				return false;
		}
		for (size_t k = 0; k < nn; k++) {
			const void *src = pn[k];
			uint32_t x, y;

			if (!src)
				return false;
			memcpy(&x, src, 4);
			memcpy(&y, bn + 4 * k, 4);
			if (x != y)
				return false;
		}
		return true;
	}
	q = f->by_size;
	if (cf_likely(q)) {
		/* by size: the 8-byte parameters, then the 4-byte ones, with no size to dispatch on
		 * (a parameter of 13.7 instructions took 11, issue 22). Two loops written out: one
		 * inline helper taking the size made recsys's replay 336 -> 356 an op */
		const uint32_t *wide_end = q + 2 * f->nwide, *end = q + 2 * n;

		for (; q < wide_end; q += 2) {
			const void *src = pp[q[0]];
			uint64_t x, y;

			if (!src)
				return false;
			memcpy(&x, src, 8);
			memcpy(&y, pb + q[1], 8);
			if (x != y)
				return false;
		}
		for (; q < end; q += 2) {
			const void *src = pp[q[0]];
			uint32_t x, y;

			if (!src)
				return false;
			memcpy(&x, src, 4);
			memcpy(&y, pb + q[1], 4);
			if (x != y)
				return false;
		}
		return true;
	}
	off = f->offset;
	size = f->size;
	for (uint32_t k = 0; k < n; k++) {
		const void *src = pp[k];
		const char *at = pb + off[k];

		if (!src)
			return false;
		if (size[k] == 8) {
			uint64_t x, y;

			memcpy(&x, src, 8);
			memcpy(&y, at, 8);
			if (x != y)
				return false;
		} else if (size[k] == 4) {
			uint32_t x, y;

			memcpy(&x, src, 4);
			memcpy(&y, at, 4);
			if (x != y)
				return false;
		} else {
			return cap__params_repeat_from(c, f, pb, k);
		}
	}
	return true;
}

/* grid, block and shared_bytes, side by side in the call and in the op alike: compared as three
 * 8-byte words and one 4-byte one, not seven (a memcmp of the 28 bytes expands to more) */
static inline bool cap__geometry_same(const unsigned int *a, const unsigned int *b)
{
	uint64_t x0, x1, x2, y0, y1, y2;
	uint32_t u, v;

	/* scalars, not arrays: the arrays went through the stack (two 16-byte loads stored and
	 * read back, 22 instructions a launch where this takes 13) */
	memcpy(&x0, a, 8);
	memcpy(&x1, a + 2, 8);
	memcpy(&x2, a + 4, 8);
	memcpy(&y0, b, 8);
	memcpy(&y1, b + 2, 8);
	memcpy(&y2, b + 4, 8);
	memcpy(&u, a + 6, 4);
	memcpy(&v, b + 6, 4);
	return ((x0 ^ y0) | (x1 ^ y1) | (x2 ^ y2) | (u ^ v)) == 0;
}
/* Kernel call c names pk's function handle with pk's geometry and shared bytes, and neither has
 * launch attributes or an extra block: what the kernel lanes compare before the function record
 * and the parameters (record.c: repeat_kernel; replay/lane.c). */
static inline bool cap__kernel_call_same_launch(const struct cap_call *c, const struct cap_kernel *pk)
{
	return c->u.kernel.f == pk->handle && !c->u.kernel.nattrs && !c->u.kernel.extra && !pk->nattrs &&
	       !pk->via_extra && cap__geometry_same(c->u.kernel.grid, pk->grid);
}
_Static_assert(offsetof(struct cap_kernel, shared_bytes) - offsetof(struct cap_kernel, grid) ==
		       6 * sizeof(unsigned int),
	       "cap_kernel: grid, block and shared_bytes are contiguous");
_Static_assert(offsetof(struct cap_call, u.kernel.shared_bytes) - offsetof(struct cap_call, u.kernel.grid) ==
		       6 * sizeof(unsigned int),
	       "cap_call: grid, block and shared_bytes are contiguous");

/* op.c: op's bindings' hash, as cap_op_hash gives it (for record.c's kernel lane where the
 * parameters moved: the key is the predicted op's, only the bindings are hashed). */
uint64_t cap__op_bind(const struct cap_op *op);

/* A driver call capture makes itself: counts it (own_calls, and the engine's callback). */
void cap__own_call(struct cap_engine *ce, enum drv_api_id id);

/* ------------------------------------------------------------------ trace collection (trace.c) */

/* Append the events of a closed window to the trace buffer (bounded). */
void cap__trace_window(struct cap_engine *ce, const struct cap_window *w, const struct cap_shape *s);
void cap__trace_fini(struct cap_engine *ce);
size_t cap__trace_bytes(struct cap_engine *ce);

/* ------------------------------------------------------------------ output helpers (output.c) */

/* Start writing path atomically (common/file.h, cf_out): the text goes to o->f, a temporary
 * file in the same folder, renamed over path by cap__out_close once complete. An existing path
 * is replaced only when it is cufold's own output of that kind (it starts with marker, ends with
 * a closing brace and, for JSON, is one complete value). "%p" in path becomes the process id.
 * Returns 0, or -CF_EIO with errno set (EEXIST: someone else's file; ELOOP: a symlink). */
int cap__out_open(struct cf_out *o, const char *path, const char *marker);
/* The same for name inside the folder dirfd ("%p" is not expanded). */
int cap__out_openat(struct cf_out *o, int dirfd, const char *name, const char *marker);
/* Flush, fsync and rename into place; 0, or -CF_EIO with errno (the temporary file removed, the
 * old file, if any, left as it was). */
int cap__out_close(struct cf_out *o);
/* path with "%p" (and "%%") expanded into out; false when it does not fit. */
bool cap__path_expand(const char *path, char *out, size_t cap);

/* Call sites by ops recorded (callsite.c): fills up to max (hash, ops), most first; returns
 * how many there are. */
struct cap_site_count {
	uint64_t hash;               /* call-site hash */
	uint64_t ops;                /* ops recorded from it */
};
size_t cap__callsite_top(struct cap_engine *ce, struct cap_site_count *out, size_t max);
/* Count one op for a call site (under the caller's lock). */
void cap__callsite_count(struct cap_engine *ce, uint64_t hash);
void cap__callsite_fini(struct cap_engine *ce);
size_t cap__callsite_bytes(struct cap_engine *ce);

/* Monotonic nanoseconds. */

#endif
