/* capture.h - what cufold records of a program's GPU work: ops (one unit of stream work each),
 * windows (the ops between two points where the host can observe the device), the trie of
 * window shapes, the allocation map, the trace graph and the outputs for people. capture
 * layer: includes only common/ and driver/.
 *
 * State: everything capture keeps is in a struct cap_engine (one per engine, shim/engine.h),
 * the first argument of every function that reads or changes it.
 *
 * Threading: nothing here locks. Every function taking a struct cap_engine, except
 * cap_callsite_capture (the call-site registry has its own lock) and the success half of
 * cap_op_done (atomic counters), must be called with the engine's lock held
 * (shim/engine.c's engine_lock), so windows see the ops of all threads in one order.
 *
 * Lifetimes: an op returned by cap_window_op lives as long as its window; the open window
 * lives until the next boundary; a closed window becomes its shape's `last` and lives until the
 * shape sees its next window or is evicted (CUFOLD_MAX_TEMPLATES, least recently used first).
 * Function records (struct cap_func, one per kernel name and layout) live until
 * cap_engine_destroy. */
#ifndef CAP_CAPTURE_H
#define CAP_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/arena.h"
#include "driver/api.h"

/* ------------------------------------------------------------------ ops */

enum cap_op_kind {
	CAP_OP_KERNEL = 0,       /* cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel */
	CAP_OP_MEMCPY = 1,       /* every cuMemcpy* the device implements (linear memory) */
	CAP_OP_MEMSET = 2,       /* cuMemsetD{8,16,32}, cuMemsetD2D{8,16,32}, sync and async */
	CAP_OP_EVENT_RECORD = 3, /* cuEventRecord, cuEventRecordWithFlags */
	CAP_OP_EVENT_WAIT = 4,   /* cuStreamWaitEvent */
	CAP_OP_HOST_FN = 5,      /* cuLaunchHostFunc */
	CAP_OP_KIND_COUNT
};

/* How the stream of an op behaves towards others (decides the trace graph's edges). */
enum cap_stream_kind {
	CAP_STREAM_LEGACY = 0,       /* the legacy default stream: orders with every blocking stream */
	CAP_STREAM_PER_THREAD = 1,   /* a thread's per-thread default stream (blocking) */
	CAP_STREAM_BLOCKING = 2,     /* a created stream without CU_STREAM_NON_BLOCKING */
	CAP_STREAM_NON_BLOCKING = 3, /* a created stream with CU_STREAM_NON_BLOCKING */
};

/* Where the bytes of a copy go, resolved with the allocation map at the call. */
enum cap_copy_dir {
	CAP_DIR_HTOD = 0, /* host (pageable, pinned or registered) to device */
	CAP_DIR_DTOH = 1, /* device to host */
	CAP_DIR_DTOD = 2, /* device to device (managed memory counts as device) */
	CAP_DIR_HTOH = 3, /* host to host */
};

/* What the image a kernel was loaded from offers (capture/images.c). */
enum cap_code {
	CAP_CODE_UNKNOWN = 0,        /* no image seen for it (a loader cufold does not hook, or loaded
				      * before cufold started) */
	CAP_CODE_PTX = 1,            /* PTX text the device would JIT */
	CAP_CODE_MACHINE = 2,        /* machine code only */
	CAP_CODE_NONE = 3,           /* neither (a malformed image, zstd-compressed PTX without
				      * libzstd.so.1, an unreadable file, ...) */
};

/* The code of the images the program loaded: one record per distinct PTX text (images without
 * PTX share one record per code). Lives while a loaded module or library, a handle looked up
 * from one, or a function record names it. */
struct cap_image {
	uint64_t id;                 /* never reused within an engine (1 and 2: the shared records) */
	enum cap_code code;          /* CAP_CODE_PTX, _MACHINE or _NONE */
	const char *ptx;             /* the module's whole PTX, NUL-terminated (owned); NULL unless PTX */
	size_t ptx_len;              /* its bytes, without the NUL */
	uint32_t refs;               /* references (images.c) */
	void *parsed;                /* its PTX parsed (struct ptx_module, cap_func_module), made on
				      * first use and published with one atomic store; NULL before */
};

/* A kernel's name and parameter layout, cached per function (capture/funcs.c). */
struct cap_func {
	CUfunction func;             /* the first handle seen of it (others may share the record) */
	uint32_t id;                 /* 1, 2, ... per (name, layout) in order of first launch; stands
				      * for the kernel in keys (the handle is a binding) */
	uint32_t nparams;            /* parameters, when the layout is known */
	uint32_t param_bytes;        /* bytes of the laid-out parameters (last offset + size) */
	bool layout_known;           /* cuFuncGetParamInfo answered (else only `extra` launches record) */
	bool dense;                  /* the parameters, in order, cover every byte of param_bytes: a
				      * layout needs no padding zeroed (record.c: pack_params) */
	bool barrier;                /* the name matches CUFOLD_BARRIER_KERNELS */
	const char *name;            /* cuFuncGetName's answer (owned), or "?" */
	uint32_t *offset;            /* per parameter: byte offset (owned), NULL when nparams == 0 */
	uint32_t *size;              /* per parameter: bytes */
	uint32_t *by_size;           /* where every parameter is 8 or 4 bytes: the 8-byte ones, then
				      * the 4-byte ones, each as (index, offset), 2 * nparams words
				      * (owned); else NULL. The fast lanes compare a launch's parameters
				      * by it with no size dispatch (capture_int.h: cap__params_repeat,
				      * issue 22) */
	uint32_t nwide;              /* by_size's 8-byte parameters (the rest are 4-byte) */
	bool packed;                 /* by_size is the parameters' own order from offset 0: the first
				      * nwide are 8 bytes at 8k, the rest 4 bytes after them (pointers,
				      * then ints and floats, as most kernels declare them): compared
				      * with no (index, offset) read (cap__params_repeat) */
	uint64_t launches;           /* successful eager launches (atomic; report) */
	struct cap_image *image;     /* the code it was loaded from (one reference), NULL when unknown;
				      * part of the record's identity: the same name and layout from
				      * another text is another record */
	void *derived;               /* rewrite's card derived from the PTX (rewrite/derived.c): one of
				      * the two fields a layer above writes, once, with an atomic store;
				      * NULL until a rule first asks */
	void *user_card;             /* rewrite's answer for the user's card of name (rewrite/derived.c,
				      * written like derived, only on records with an image): the
				      * lookup, its lock and the name's hash once, not per launch */
	struct cap_func *next;       /* every function, newest first */
};

/* Every function record of ce, newest first (f->next); read under the engine's lock. */
struct cap_engine;
const struct cap_func *cap_funcs_all(struct cap_engine *ce);

/* The PTX text of the module f was loaded from (which holds f's `.entry` f->name), NULL with
 * *len 0 when there is none at hand (cap_func_code says why). Valid while f lives. */
const char *cap_func_ptx(const struct cap_func *f, size_t *len);
enum cap_code cap_func_code(const struct cap_func *f);
/* That text parsed (driver/ptx.h), once per image whatever asks (the effects analysis, the
 * variants), NULL when there is no PTX or it does not parse (err says why when errlen). Made
 * on first use, outside the engine's lock too (a template build): thread-safe; valid while f
 * lives. */
struct ptx_module;
const struct ptx_module *cap_func_module(const struct cap_func *f, char *err, size_t errlen);
/* "unknown", "ptx", "machine_code", "none" (the report's words). */
const char *cap_code_name(enum cap_code c);

struct cap_kernel {
	CUfunction handle;           /* the handle as passed: a CUfunction or a CUkernel cast to one */
	CUfunction func;             /* the per-context function (== handle unless a CUkernel) */
	const struct cap_func *info; /* name and layout */
	unsigned int grid[3];        /* grid dimensions */
	unsigned int block[3];       /* block dimensions */
	unsigned int shared_bytes;   /* dynamic shared memory */
	uint32_t param_size;         /* bytes in params */
	void *params;                /* deep copy of the parameter bytes (window arena): laid out per
				      * info's offsets (kernelParams), or the extra buffer verbatim */
	CUlaunchAttribute *attrs;    /* cuLaunchKernelEx's attributes, deep-copied; NULL if none */
	uint32_t nattrs;             /* entries in attrs */
	bool via_extra;              /* parameters were passed as an `extra` buffer */
};

struct cap_memcpy {
	CUDA_MEMCPY3D d;             /* normalized descriptor: memory types as the entry point names
				      * them (UNIFIED for cuMemcpy/cuMemcpyAsync), offsets, pitches,
				      * extent; 1-D copies have Height = Depth = 1 */
	CUcontext dst_ctx, src_ctx;  /* the contexts a peer copy names; NULL otherwise */
	uint64_t bytes;              /* WidthInBytes * Height * Depth */
	uint8_t dir;                 /* enum cap_copy_dir */
	bool src_pageable;           /* host source not pinned or registered (replay must stage it) */
	bool dst_pageable;           /* host destination not pinned or registered */
	bool oned;                   /* d was filled by cap_call_copy_1d: every field but the memory
				      * types, addresses and width is that function's constant (in a
				      * call, not even stored: capture completes it); the other
				      * builders, and a hook that fills d itself, clear it */
	uint64_t src_first;          /* address of the first source byte (offsets applied) */
	uint64_t dst_first;          /* address of the first destination byte */
	uint64_t src_span, dst_span; /* bytes from the first to one past the last byte of each side */
	void *staged;                /* private copy of the source span (cap_op_stage), or NULL */
};

struct cap_memset {
	CUdeviceptr dst;             /* first byte */
	size_t pitch;                /* bytes between rows (2-D forms; width * elem_size for 1-D) */
	unsigned int elem_size;      /* 1, 2 or 4 */
	unsigned int value;          /* element value */
	size_t width;                /* elements per row */
	size_t height;               /* rows (1 for the 1-D forms) */
};

struct cap_event_op {
	CUevent event;               /* the program's event */
	unsigned int flags;          /* cuEventRecordWithFlags / cuStreamWaitEvent flags */
	uint16_t slot;               /* the event's slot in the window (0, 1, ... by first use) */
};

struct cap_host_fn {
	CUhostFn fn;                 /* the program's function */
	void *data;                  /* its argument */
};

/* Flags of an op. */
#define CAP_OPF_ENDS_WINDOW 0x01 /* a synchronous op the host observes: its window ends with it */
#define CAP_OPF_FAILED 0x02      /* the driver refused the call (dropped when the window closes) */
#define CAP_OPF_STAGED 0x04      /* u.memcpy.staged holds the source bytes */
/* A side of the op is memory the allocation map does not know and the driver does not call
 * pageable (device memory cufold never saw allocated: IPC, pool import, interop). Capture
 * cannot tell its lifetime or stage it: replay must issue the op eagerly, never defer it. */
#define CAP_OPF_NO_DEFER 0x08

struct cap_op {
	uint8_t kind;                /* enum cap_op_kind */
	uint8_t flags;               /* CAP_OPF_* */
	uint8_t stream_kind;         /* enum cap_stream_kind */
	uint16_t api;                /* enum drv_api_id: the exact entry point called */
	uint16_t stream_slot;        /* the stream's slot in the window (0, 1, ... by first use) */
	uint32_t tid;                /* host thread (gettid) */
	CUstream stream;             /* the stream argument as passed (0 for synchronous forms) */
	CUcontext ctx;               /* current context at the call */
	uint64_t key;                /* hash of what decides the graph's shape (cap_op_key) */
	uint64_t bind;               /* hash of the bindings: what a graph node can be patched with */
	uint64_t callsite;           /* hash of the caller's frames outside cufold; 0 when off */
	uint64_t seq;                /* process-wide op number */
	/* Value identity: two ops with the same non-zero vid are equal in kind, api, stream,
	 * context and every field of their kind's part a graph node is made from (not in seq, tid,
	 * t_ns, callsite, flags or staged bytes). Capture gives an op its predicted op's vid when
	 * it compared every such field equal (cap_op_hash_like), else its own seq; 0 (any op not
	 * recorded by capture) says nothing. Replay's guards compare it before the fields. */
	uint64_t vid;
	uint64_t t_ns;               /* monotonic time of the call */
	union {
		struct cap_kernel kernel;
		struct cap_memcpy memcpy;
		struct cap_memset memset;
		struct cap_event_op event;
		struct cap_host_fn host_fn;
	} u;
};

/* Re-issue op eagerly through the real driver with exactly the entry point and arguments the
 * program used (staged source bytes when the op has them). Returns the driver's result. Needs
 * no lock; op must stay alive during the call. */
CUresult cap_op_issue(const struct cap_op *op);
/* Copy a pageable host source of a copy into a (so the op can outlive the program's buffer, as
 * the driver stages it); a no-op for other ops. 0 or -CF_ENOMEM. */
int cap_op_stage(struct cap_op *op, struct cf_arena *a);
/* Recompute op->key and op->bind from its fields (after editing an op). */
void cap_op_hash(struct cap_op *op);
/* cap_op_hash, answered from p (an op hashed before: the one the window is expected to repeat)
 * where the fields each hash reads are equal, compared field by field, which costs a fraction of
 * hashing them (issue 22). Returns whether p's key was taken; p may be NULL. The result is
 * always what cap_op_hash would give. Sets op->vid to p's when op equals p in every field vid
 * covers, else to 0 (the recorder then gives it its own seq). */
bool cap_op_hash_like(struct cap_op *op, const struct cap_op *p);
/* cap_op_hash_like for a copy op whose descriptor equals p's (a copy) in every field that
 * resolving reads and whose resolution was taken from p (capture's record path): compares only
 * the fields that can still differ. */
bool cap_op_hash_copy_like(struct cap_op *op, const struct cap_op *p);
/* The kernel name of a kernel op, else the entry point's base name. */
const char *cap_op_name(const struct cap_op *op);
const char *cap_op_kind_name(enum cap_op_kind kind);
/* Bytes an op moves or sets (0 for the others). */
uint64_t cap_op_bytes(const struct cap_op *op);

/* ------------------------------------------------------------------ calls (what hooks pass) */

/* One stream-work call as the program made it: pointers into the caller's memory, valid only
 * during the call. cap_record deep-copies what it keeps. */
struct cap_call {
	uint8_t kind;                /* enum cap_op_kind */
	uint16_t api;                /* enum drv_api_id of the hook */
	CUstream stream;             /* stream argument (0 for synchronous forms) */
	union {
		struct {
			CUfunction f;             /* function or kernel handle */
			unsigned int grid[3];     /* grid dimensions */
			unsigned int block[3];    /* block dimensions */
			unsigned int shared_bytes; /* dynamic shared memory */
			void **params;            /* kernelParams, or NULL */
			void **extra;             /* extra, or NULL */
			const CUlaunchAttribute *attrs; /* Ex attributes, or NULL */
			unsigned int nattrs;      /* entries in attrs */
		} kernel;
		struct cap_memcpy memcpy;     /* d, contexts; the rest is filled by cap_record */
		struct cap_memset memset;
		struct cap_event_op event;    /* event, flags (slot filled by cap_record) */
		struct cap_host_fn host_fn;
	} u;
};

/* Fill the normalized descriptor of a 1-D copy: types as the entry point names them. Only the
 * types, addresses and width are stored (and oned set): capture completes the rest (offsets 0,
 * no pitches or arrays, Height = Depth = 1) where it builds an op from the call. */
static inline void cap_call_copy_1d(struct cap_call *c, CUmemorytype dst_type, uint64_t dst,
				    CUmemorytype src_type, uint64_t src, size_t bytes)
{
	CUDA_MEMCPY3D *d = &c->u.memcpy.d;

	/* only what varies (oned: capture completes the descriptor where it builds an op,
	 * cap__copy_1d_complete; a repeated call is compared on these alone, cap_op_take_like).
	 * Inline: the call cost a copy's hook a fifth of its instructions (issue 22) */
	d->srcMemoryType = src_type;
	d->srcHost = src_type == CU_MEMORYTYPE_HOST ? (const void *)(uintptr_t)src : NULL;
	d->srcDevice = src_type == CU_MEMORYTYPE_HOST ? 0 : (CUdeviceptr)src;
	d->dstMemoryType = dst_type;
	d->dstHost = dst_type == CU_MEMORYTYPE_HOST ? (void *)(uintptr_t)dst : NULL;
	d->dstDevice = dst_type == CU_MEMORYTYPE_HOST ? 0 : (CUdeviceptr)dst;
	d->WidthInBytes = bytes;
	c->u.memcpy.dst_ctx = NULL;
	c->u.memcpy.src_ctx = NULL;
	c->u.memcpy.oned = true;
}
void cap_call_copy_2d(struct cap_call *c, const CUDA_MEMCPY2D *p);
void cap_call_copy_3d_peer(struct cap_call *c, const CUDA_MEMCPY3D_PEER *p);

/* The recording fast path (issue 22): whether the call c, a copy or memset, is the predicted op
 * p again in every field its key, bindings and vid read, compared straight from the call's
 * arguments (a 1-D copy: only the fields cap_call_copy_1d does not fix). op's common part is
 * filled (kind, api, stream, context, stream slot and kind); p resolved its copies at the
 * allocation map's present gen. When true, op's kind part, flags (ENDS_WINDOW), key, bindings
 * and vid are p's, as building and hashing it would give; when false op is untouched and the
 * caller builds it. A copy from pageable memory, a copy resolved with the driver's help and
 * any copy not 1-D on both sides always take the long path. held: op's kind part already holds an
 * op of p's vid and kind (a recycled slot, the caller checked), so it is not copied again. */
bool cap_op_take_like(struct cap_op *op, const struct cap_call *c, const struct cap_op *p, bool held);

/* ------------------------------------------------------------------ boundaries */

/* X(name, label): what ends a window. */
#define CAP_BOUNDARY_LIST(X) \
	X(SYNC, "synchronize") \
	X(QUERY, "query") \
	X(HOST_COPY, "host-visible copy or memset") \
	X(FREE, "free or unmap") \
	X(MODULE_UNLOAD, "module unload") \
	X(CONTEXT, "context switch or destroy") \
	X(DESTROY, "stream or event destroyed") \
	X(CAPTURE, "program's stream capture") \
	X(BARRIER, "barrier kernel") \
	X(OPAQUE, "launch cufold cannot record") \
	X(UNMODELED, "call cufold does not model") \
	X(FULL, "window full") \
	X(FORK, "fork") \
	X(EXIT, "exit")

enum cap_boundary {
#define CAP_BOUNDARY_ENUM_(name, label) CAP_BOUNDARY_##name,
	CAP_BOUNDARY_LIST(CAP_BOUNDARY_ENUM_)
#undef CAP_BOUNDARY_ENUM_
	CAP_BOUNDARY_COUNT
};

const char *cap_boundary_name(enum cap_boundary b);  /* "SYNC" */
const char *cap_boundary_label(enum cap_boundary b); /* "synchronize" */

/* ------------------------------------------------------------------ set-up */

struct cap_shape;

struct cf_json;

struct cap_config {
	unsigned int max_templates;  /* window shapes kept (CUFOLD_MAX_TEMPLATES); least recently used go */
	const char *barrier_kernels; /* CUFOLD_BARRIER_KERNELS: glob[,glob] (copied) */
	bool callsites;              /* CUFOLD_CALLSITES */
	size_t trace_max_bytes;      /* collect Chrome trace events up to this size; 0: none */
	uint32_t window_max_ops;     /* a longer window is closed (FULL); 0: default 65536 */
	const char *mode_name;       /* "trace" or "replay", for the outputs (static string) */
	bool no_fast_lane;           /* record every call the long way (tests: the fast lanes, record.c's
				      * repeat and repeat_kernel, must leave what the long way leaves) */
	/* Told of every driver call capture makes itself (may be NULL). */
	void (*note_driver_call)(enum drv_api_id id);
	/* A shape is about to be evicted (replay drops its template); may be NULL. */
	void (*shape_evicted)(void *arg, struct cap_shape *s);
	/* Writing the report: append members (keys and values, common/json.h) at the end of its
	 * top-level object, e.g. replay's figures (may be NULL). Called with the caller's lock held. */
	void (*report_extra)(void *arg, struct cf_json *j);
	void *arg;                   /* passed to shape_evicted and report_extra */
};

/* Capture's part of an engine (capture_int.h): every window, shape, record and counter one
 * engine holds. Opaque: only capture/ reads its fields. An engine never shares state with
 * another, so tests build two side by side. */
struct cap_engine;

/* A new capture part, recording; NULL when out of memory. */
struct cap_engine *cap_engine_create(const struct cap_config *cfg);
/* Free ce and everything it holds (NULL is ignored). A forked child never calls this on its
 * parent's part: memory another thread of the parent was changing at the fork is abandoned. */
void cap_engine_destroy(struct cap_engine *ce);
/* Replay's callbacks (capture is made first, replay over it): see struct cap_config. */
void cap_set_replay(struct cap_engine *ce, void (*shape_evicted)(void *arg, struct cap_shape *s),
		    void (*report_extra)(void *arg, struct cf_json *j), void *arg);
/* fn(arg) is called under the caller's lock at the start of every close of the open window, at a
 * boundary or inside cap_record (an op that ends its window or fills it, or one refused): the
 * last moment the window's ops are where cap_window_op found them (closing compacts, files and
 * may recycle the window). Replay reads its deferred ops there until then. NULL: none. */
void cap_set_window_closing(struct cap_engine *ce, void (*fn)(void *arg), void *arg);
/* What every caller may read of a capture part without a call: struct cap_engine begins with
 * it (the engine asks it under the lock on every recorded call). */
struct cap_engine_head {
	bool ready;                  /* it still records (false once out of memory stopped it) */
};

/* Whether ce still records (false once out of memory stopped it). */
static inline bool cap_is_ready(const struct cap_engine *ce)
{
	return ((const struct cap_engine_head *)(const void *)ce)->ready;
}

/* ------------------------------------------------------------------ recording */

/* Who makes a call. */
struct cap_who {
	CUcontext ctx;               /* current context */
	uint32_t tid;                /* host thread */
	uint64_t callsite;           /* cap_callsite_capture's hash, or 0 */
	uint64_t t_ns;               /* monotonic time of the call */
};

enum cap_rec_result {
	CAP_REC_RECORDED = 0,  /* appended to the open window */
	CAP_REC_BARRIER = 1,   /* a barrier kernel: the window closed, the launch runs outside windows */
	CAP_REC_OPAQUE = 2,    /* cannot be recorded (unknown layout, bad arguments): window closed */
	CAP_REC_NOMEM = 3,     /* out of memory: window closed, nothing recorded */
};

/* The result of cap_record, passed back to cap_op_done. */
struct cap_rec {
	uint8_t result;              /* enum cap_rec_result */
	uint8_t kind;                /* enum cap_op_kind of the call */
	bool ends_window;            /* the op closed its window (synchronous, host-visible) */
	bool repeated;               /* recorded by the fast lane: the predicted op again, a copy,
				      * memset or kernel launch (replay tries its own lane only then) */
	uint32_t index;              /* op index in its window: cap_window_op(cap_window_current(),
				      * index), or, when ends_window, in cap_shape_last(closed) */
	uint64_t window;             /* window number the op went to */
	uint64_t seq;                /* the op's number (cap_op.seq), 0 when not recorded */
	uint64_t bytes;              /* bytes it moves or sets */
	struct cap_func *func;       /* kernel calls: the function, or NULL */
	struct cap_shape *closed;    /* shape of a window this call closed, or NULL */
	const struct cap_op *op;     /* the op as recorded (in the open window, or in the window the
				      * call closed), NULL when not recorded; valid while the lock
				      * that recorded it is held: what replay matches */
};

/* Record a call into the open window (deep copies), applying barrier and end-of-window rules.
 * Returns 0, or a negative CF_E* code (rec->result says what happened). */
int cap_record(struct cap_engine *ce, const struct cap_call *call, const struct cap_who *who, struct cap_rec *rec);
/* After the driver answered: counts successes; marks a failed op so the window drops it. An op
 * whose window already closed (it ended the window itself, filled it, or another thread's
 * boundary came between the call and its answer) is taken out of that window if the window is
 * still its shape's last sighting: the shape is dropped (replay is told through shape_evicted)
 * and the window without the op is filed again, so no shape ever holds a refused call. The
 * counting part is lock-free; call with failed=true only under the lock. */
void cap_op_done(struct cap_engine *ce, const struct cap_rec *rec, bool failed);

/* A boundary is about to reach the driver: close the open window (if it has ops). Returns its
 * shape, or NULL (empty window, or not tracked). */
struct cap_shape *cap_boundary(struct cap_engine *ce, enum cap_boundary kind, enum drv_api_id api);

/* Count a boundary without closing (a call passed through while the program captures). */
void cap_note_passthrough(struct cap_engine *ce, enum drv_api_id api);

/* ------------------------------------------------------------------ what the host observes (observe.c) */

/* A synchronize or query ends the window only when what it asks about could include work of
 * the open window (work replay may hold back); any other such call goes to the driver and the
 * window goes on. The decision depends only on the calls the program made, so a shape is cut
 * at the same place whether its ops were deferred or not. */
enum cap_target_kind {
	CAP_TARGET_STREAM = 0,       /* a stream's work (the legacy stream: conservatively, all work) */
	CAP_TARGET_EVENT = 1,        /* the work before an event's last record */
	CAP_TARGET_CONTEXT = 2,      /* all work (windows are process-wide) */
};

struct cap_target {
	uint8_t kind;                /* enum cap_target_kind */
	uint8_t pt;                  /* stream: the entry point's per-thread kind (DRV_PT_*) */
	CUstream stream;             /* CAP_TARGET_STREAM: the handle as passed */
	CUevent event;               /* CAP_TARGET_EVENT */
	CUcontext ctx;               /* the caller's current context (default streams are per context) */
	uint32_t tid;                /* the caller's thread (per-thread default streams) */
};

/* Whether a call asking about t could observe an op of the open window at index >= from. */
bool cap_window_observed(struct cap_engine *ce, const struct cap_target *t, uint32_t from);
/* Whether an op of the open window names memory in [base, base+size): a copy's or memset's
 * extent, or an 8-byte-aligned kernel parameter word (the same test replay applies to its
 * templates; memory reached only through pointers stored in device memory is not seen). */
bool cap_window_references(struct cap_engine *ce, uint64_t base, uint64_t size);
/* Whether thread tid made an op of the open window (a context switch of a thread that made
 * none cannot change what the window's ops run in). */
bool cap_window_has_thread(struct cap_engine *ce, uint32_t tid);
/* Count a boundary call that did not close the window (the report's calls vs windows_closed). */
void cap_boundary_seen(struct cap_engine *ce, enum cap_boundary kind);

/* ------------------------------------------------------------------ handles capture learns of */

/* A stream the program created, with its flags (saves a cuStreamGetFlags). */
void cap_stream_created(struct cap_engine *ce, CUstream s, unsigned int flags);
/* A stream or event is being destroyed: forget it (its handle may be reused). */
void cap_stream_forget(struct cap_engine *ce, CUstream s);
void cap_event_forget(struct cap_engine *ce, CUevent e);
/* A CUkernel handle (cuLibraryGetKernel): launches of it resolve with cuKernelGetFunction. True
 * when it was new (the function lookups' answers were forgotten); a handle learned again changes
 * nothing. */
bool cap_kernel_handle_add(struct cap_engine *ce, CUkernel k);
/* A module (library: a CUlibrary) the program loaded, from the bytes at image (as handed to the
 * driver: PTX text, a fatbin, a wrapper, a cubin) or the file at path: its PTX for the device is
 * kept (images.c) and the report counts it. Call after the driver loaded it. */
void cap_image_loaded(struct cap_engine *ce, bool library, const void *handle, const void *image, const char *path);
/* A lookup handed out a handle of loaded code: a function of a module (cuModuleGetFunction:
 * handle a CUfunction, from a CUmodule), a kernel of a library (cuLibraryGetKernel,
 * cuLibraryEnumerateKernels: a CUkernel from a CUlibrary), a kernel's function
 * (cuKernelGetFunction: a CUfunction from a CUkernel). Its function record will name the image. */
enum cap_image_link {
	CAP_LINK_MODULE_FUNCTION = 0,
	CAP_LINK_LIBRARY_KERNEL = 1,
	CAP_LINK_KERNEL_FUNCTION = 2,
	CAP_LINK_LIBRARY_MODULE = 3, /* cuLibraryGetModule: a CUmodule from a CUlibrary (a function
				      * of it then finds the image through cuFuncGetModule) */
};
void cap_image_link(struct cap_engine *ce, enum cap_image_link kind, const void *handle, const void *from);
/* A JIT link (cuLinkAddData_v2, cuLinkAddFile_v2: data and size, or the file at path;
 * cuLinkComplete: its output; cuLinkDestroy): its PTX inputs are kept until it is destroyed,
 * and a module loaded from its output has them as its PTX (a GPU's linker outputs machine
 * code: numba without nvJitLink, for one, loads its kernels that way). */
void cap_link_input(struct cap_engine *ce, CUlinkState state, CUjitInputType type, const void *data, size_t size,
		    const char *path);
void cap_link_complete(struct cap_engine *ce, CUlinkState state, const void *out);
void cap_link_destroy(struct cap_engine *ce, CUlinkState state);
/* A module or library is about to be unloaded: its function handles may be reused, forget
 * them (only them: handles of other modules stay bound, and a reloaded kernel gets its old
 * record and key id back). Asks the driver for a library's module. */
void cap_funcs_forget_module(struct cap_engine *ce, CUmodule mod, CUlibrary lib);
/* Say which module (or library) the calling thread is about to unload, before the call that
 * reaches cap_funcs_forget; needs no lock (thread-local). */
void cap_funcs_unloading(CUmodule mod, CUlibrary lib);
/* Forget the handles of the module the calling thread named with cap_funcs_unloading, or of
 * every module when it named none. */
void cap_funcs_forget(struct cap_engine *ce);
/* Whether an op of the open window runs a function of the module the calling thread named with
 * cap_funcs_unloading (true when it named none, or a function's module is not known). */
bool cap_window_uses_unloading(struct cap_engine *ce);

/* ------------------------------------------------------------------ allocation map */

enum cap_alloc_kind {
	CAP_ALLOC_DEVICE = 0,          /* cuMemAlloc, cuMemAllocPitch */
	CAP_ALLOC_ASYNC = 1,           /* cuMemAllocAsync, cuMemAllocFromPoolAsync */
	CAP_ALLOC_MANAGED = 2,         /* cuMemAllocManaged */
	CAP_ALLOC_HOST_PINNED = 3,     /* cuMemAllocHost, cuMemHostAlloc */
	CAP_ALLOC_HOST_REGISTERED = 4, /* cuMemHostRegister */
	CAP_ALLOC_MAPPED = 5,          /* cuMemMap of a cuMemCreate handle */
	CAP_ALLOC_KIND_COUNT
};

struct cap_alloc {
	uint64_t base;               /* first byte */
	uint64_t size;               /* bytes */
	uint64_t id;                 /* unique per allocation (1, 2, ...): a reuse of the same
				      * address after a free gets a new id */
	uint8_t kind;                /* enum cap_alloc_kind */
};

/* Add [base, base+size). An overlapping older range is dropped (the driver reused it). 0 or
 * -CF_ENOMEM / -CF_EINVAL (size 0). */
int cap_alloc_add(struct cap_engine *ce, uint64_t base, uint64_t size, enum cap_alloc_kind kind);
/* Remove the allocation starting at base; *out (may be NULL) gets it. 0 or -CF_ENOENT. */
int cap_alloc_remove(struct cap_engine *ce, uint64_t base, struct cap_alloc *out);
/* Put back an allocation removed by cap_alloc_remove (the free failed), keeping its id. */
int cap_alloc_restore(struct cap_engine *ce, const struct cap_alloc *a);
/* Remove every allocation inside [base, base+size) (cuMemUnmap). Returns how many. */
int cap_alloc_remove_range(struct cap_engine *ce, uint64_t base, uint64_t size);
/* The allocation containing addr, or NULL: O(log n). Valid until the map changes. */
const struct cap_alloc *cap_alloc_find(struct cap_engine *ce, uint64_t addr);
/* Live allocations. */
size_t cap_alloc_count(struct cap_engine *ce);
/* A number that changes whenever the map does (an allocation added, removed or restored): a
 * decision that relied on an allocation's extent holds while it stays the same. */
uint64_t cap_alloc_gen(struct cap_engine *ce);
struct cap_window;
/* The allocations the window's kernel parameter words (8-byte aligned, as pointers lie) point
 * into, as the map holds them now, sorted by base, each once: *out (malloc'd, the caller frees;
 * NULL when none) and *n. For work that runs outside the lock (a template build), which must
 * not read the map itself. 0 or -CF_ENOMEM. */
int cap_alloc_snapshot(struct cap_engine *ce, const struct cap_window *w, struct cap_alloc **out, size_t *n);
/* The allocation of a snapshot (sorted by base) containing addr, or NULL: O(log n). */
const struct cap_alloc *cap_alloc_snapshot_find(const struct cap_alloc *snap, size_t n, uint64_t addr);
bool cap_alloc_is_device(const struct cap_alloc *a); /* device, async, managed or mapped */

/* ------------------------------------------------------------------ windows and shapes */

struct cap_window;

/* A stream as a window knows it (one per slot). */
struct cap_wstream {
	CUstream handle;             /* as passed (0 / CU_STREAM_LEGACY / CU_STREAM_PER_THREAD too) */
	CUcontext ctx;               /* context of the first op on it */
	uint32_t id;                 /* process-wide stream number (trace tracks) */
	uint32_t tid;                /* per-thread default stream: its thread; else 0 */
	uint8_t kind;                /* enum cap_stream_kind */
};

/* The open window (never NULL while ce is ready). */
const struct cap_window *cap_window_current(struct cap_engine *ce);
uint32_t cap_window_nops(const struct cap_window *w);
const struct cap_op *cap_window_op(const struct cap_window *w, uint32_t i);
uint32_t cap_window_nstreams(const struct cap_window *w);
const struct cap_wstream *cap_window_stream(const struct cap_window *w, uint32_t slot);
uint32_t cap_window_nevents(const struct cap_window *w);
CUevent cap_window_event(const struct cap_window *w, uint32_t slot);
uint64_t cap_window_seq(const struct cap_window *w);
/* The open window's number when op is its op at index i (where cap_window_op finds it), else 0:
 * one call on replay's deferral path. */
uint64_t cap_window_holds(const struct cap_engine *ce, const struct cap_op *op, uint32_t i);       /* window number, 1, 2, ... */
enum cap_boundary cap_window_closed_by(const struct cap_window *w);
uint16_t cap_window_closed_api(const struct cap_window *w); /* enum drv_api_id */
uint64_t cap_window_closed_site(const struct cap_window *w); /* call site of the closing call, or 0 */

/* Shapes, newest sighting first. */
struct cap_shape *cap_shape_first(struct cap_engine *ce);
struct cap_shape *cap_shape_next(const struct cap_shape *s);
size_t cap_shape_count(struct cap_engine *ce);
uint64_t cap_shape_id(const struct cap_shape *s);        /* 1, 2, ... in order of first sighting */
uint64_t cap_shape_sightings(const struct cap_shape *s);
/* Sightings whose bindings were identical to the previous sighting's. */
uint64_t cap_shape_stable(const struct cap_shape *s);
/* Whether the last sighting's bindings equal the one before (false after one sighting). */
bool cap_shape_last_stable(const struct cap_shape *s);
/* The ops of the last sighting (replay builds its template from them). */
const struct cap_window *cap_shape_last(const struct cap_shape *s);
/* Per op of the shape: sightings in which its bindings differed from the previous one. */
uint32_t cap_shape_moved(const struct cap_shape *s, uint32_t i);
/* s's last window, pinned: it stays valid (and unchanged) after the lock is dropped, even when
 * s sees its next window or goes, until cap_window_unpin (under the lock again). For a template
 * build outside the engine's lock. NULL when s has none. */
const struct cap_window *cap_shape_pin_last(struct cap_engine *ce, struct cap_shape *s);
void cap_window_unpin(struct cap_engine *ce, const struct cap_window *w);
void *cap_shape_user(const struct cap_shape *s);
void cap_shape_set_user(struct cap_shape *s, void *user);

/* What an upper layer's rewrite did to one op of a shape, for the pictures (CUFOLD_DOT). */
enum cap_mark_kind {
	CAP_MARK_NONE = 0,      /* submitted as it was */
	CAP_MARK_REMOVED = 1,   /* not submitted at all */
	CAP_MARK_MERGED = 2,    /* its work done by the node of another op (`into`) */
	CAP_MARK_REWRITTEN = 3, /* submitted as a different op (merged nodes stand here) */
};

struct cap_mark {
	uint8_t kind;                /* enum cap_mark_kind */
	uint32_t into;               /* CAP_MARK_MERGED: the op whose node does its work */
	const char *rule;            /* the rule (static text), or NULL */
};

/* Mark op i of shape s (the last mark of a rebuilt template wins; all marks go with the shape).
 * 0 or -CF_ENOMEM (then the pictures show no mark). */
int cap_shape_mark(struct cap_shape *s, uint32_t i, enum cap_mark_kind kind, uint32_t into, const char *rule);
/* Forget every mark of s (a template of it was dropped). */
void cap_shape_unmark(struct cap_shape *s);

/* The trie of op keys, for a matcher walking it as calls come (read-only; nodes stay valid
 * until the next window closes). */
struct cap_trie_node;
const struct cap_trie_node *cap_trie_root(struct cap_engine *ce);
const struct cap_trie_node *cap_trie_child(struct cap_engine *ce, const struct cap_trie_node *n, uint64_t key);
struct cap_shape *cap_trie_shape(const struct cap_trie_node *n);

/* ------------------------------------------------------------------ the trace graph */

struct cap_graph;

/* The trace graph of a window: nodes = ops, edges = stream order (with the legacy stream's
 * implicit synchronization) and event record -> wait. Allocated in its own arena. */
struct cap_graph *cap_graph_build(const struct cap_window *w);
void cap_graph_destroy(struct cap_graph *g);
uint32_t cap_graph_nnodes(const struct cap_graph *g);
/* Predecessors of node i (indices of ops in the window, ascending). */
uint32_t cap_graph_npred(const struct cap_graph *g, uint32_t i);
const uint32_t *cap_graph_pred(const struct cap_graph *g, uint32_t i);
size_t cap_graph_nedges(const struct cap_graph *g);
/* Whether node b depends on node a (an edge, not a path). */
bool cap_graph_has_edge(const struct cap_graph *g, uint32_t a, uint32_t b);

/* One access of an op to memory, for memory dependencies. */
struct cap_access {
	uint64_t alloc;              /* allocation id (cap_alloc.id); 0 for host memory outside the map */
	uint64_t addr;               /* first byte */
	uint64_t len;                /* bytes (the whole allocation for a kernel's pointer words) */
	bool write;                  /* written (else read) */
};
/* The accesses of an op as the allocation map resolves them now: copies read the source and
 * write the destination, memsets write, a kernel (no cards yet) reads and writes every
 * allocation one of its 8-byte-aligned parameter words points into. Fills up to max entries;
 * returns the number there are. */
uint32_t cap_op_accesses(struct cap_engine *ce, const struct cap_op *op, struct cap_access *out, uint32_t max);
/* Memory dependencies of the window (read-after-write, write-after-read, write-after-write on
 * the same allocation, ordered by op index) in a separate edge list of g. Resolve while the
 * allocation map still holds the window's memory (at window close). Returns edges added. */
size_t cap_graph_add_memdeps(struct cap_engine *ce, struct cap_graph *g, const struct cap_window *w);
uint32_t cap_graph_nmemdep(const struct cap_graph *g, uint32_t i);
const uint32_t *cap_graph_memdep(const struct cap_graph *g, uint32_t i);

/* ------------------------------------------------------------------ call sites (callsite.c) */

/* Hash of the caller's frames outside cufold (up to 4), registering their names on first
 * sight. Thread-safe (own lock); 0 when unwinding fails. */
uint64_t cap_callsite_capture(struct cap_engine *ce);
/* "fn+0x12 < caller+0x40 < ..." for a hash, or NULL when unknown. */
const char *cap_callsite_name(struct cap_engine *ce, uint64_t hash);

/* ------------------------------------------------------------------ outputs */

struct cap_totals {
	uint64_t ops[CAP_OP_KIND_COUNT];   /* recorded ops by kind (failed ones excluded) */
	uint64_t windows;                  /* windows closed with at least one op */
	uint64_t windows_by[CAP_BOUNDARY_COUNT]; /* of which, by what closed them */
	uint64_t boundaries[CAP_BOUNDARY_COUNT]; /* boundary calls seen, empty windows included */
	uint64_t launches;                 /* successful kernel launches (barrier ones too) */
	uint64_t copies, memsets;          /* successful copies / memsets moving at least one byte */
	uint64_t bytes_copied, bytes_set;  /* their bytes */
	uint64_t passthrough;              /* calls passed through unrecorded while the program captured */
	uint64_t shapes_evicted;           /* shapes dropped by the LRU bound */
	uint64_t own_calls;                /* driver calls capture made itself */
	uint64_t ops_fast;                 /* of the ops recorded, by a fast lane (record.c: repeat, repeat_kernel) */
	uint64_t images_loaded;            /* modules and libraries loaded (images.c) */
	uint64_t images_ptx;               /* of which with PTX the device would JIT */
	uint64_t images_machine_code;      /* with machine code only */
	uint64_t images_no_code;           /* with neither found */
	uint64_t ptx_texts_kept;           /* distinct PTX texts held now (cap_get_totals) */
	uint64_t ptx_bytes_kept;           /* their bytes */
};
void cap_get_totals(struct cap_engine *ce, struct cap_totals *t);
/* The ops recorded, all kinds (the report's totals.ops). */
static inline uint64_t cap_totals_ops(const struct cap_totals *t)
{
	uint64_t all = 0;

	for (int k = 0; k < CAP_OP_KIND_COUNT; k++)
		all += t->ops[k];
	return all;
}
/* Bytes of host memory capture holds now. */
size_t cap_memory_bytes(struct cap_engine *ce);
/* The same, by part (the report's memory.parts): the open and spare windows, the shapes' trie
 * with each shape's last window, functions, images and their PTX, streams, the allocation map,
 * the trace, call sites. */
#define CAP_MEMORY_PARTS(X) X(windows) X(shapes) X(functions) X(images) X(streams) X(allocations) X(trace) X(call_sites)
struct cap_memory_parts {
#define CAP_MEMORY_PART_(name) size_t name;
	CAP_MEMORY_PARTS(CAP_MEMORY_PART_)
#undef CAP_MEMORY_PART_
};
size_t cap_memory_parts(struct cap_engine *ce, struct cap_memory_parts *p);

/* Write the outputs. Each opens path safely (never through a symlink, never truncating a file
 * that is not cufold's own output of that kind); 0 or a negative CF_E* code, with errno. */
int cap_write_report(struct cap_engine *ce, const char *path);
int cap_write_trace(struct cap_engine *ce, const char *path);
/* dir: a folder (made if missing, "%p" expanded; never a symlink) */
int cap_write_dot(struct cap_engine *ce, const char *dir);
/* The one-paragraph summary for CUFOLD_LOG=info. */
void cap_summary(struct cap_engine *ce, char *buf, size_t cap);

#endif
