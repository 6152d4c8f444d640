/* replay_int.h - private to replay/: templates (per op of a window shape: key, class and
 * segment; per segment: the graph, its exec and the bindings the exec holds), the matcher's
 * state and the helpers the files share. replay layer. */
#ifndef RPL_REPLAY_INT_H
#define RPL_REPLAY_INT_H

#include <stddef.h>
#include <string.h>

#include "capture/capture.h"
#include "common/arena.h"
#include "driver/real.h"
#include "replay/replay.h"
#include "rewrite/plan.h"

#define RPL_MAX_CAND 8        /* templates followed at once through a shared prefix */
#define RPL_MAX_FAILED_CTX 16 /* contexts in sticky passthrough remembered (more: all) */
#define RPL_FREE_RETIRES 2    /* after this many retirements by frees, a shape's template patches instead */
#define RPL_MAX_RETIRED 64    /* retired templates kept for the report */
#define RPL_LATER_EVENTS 16   /* event destroys held back behind deferred ops (more: those are flushed) */
#define RPL_SEG_FIRST 4        /* ops of a window's first segment (template.c: segment_size) */
#define RPL_SEG_LAST_SHARE 32  /* segments shrink toward a window's end down to 1/32 of its ops */
#define RPL_SEG_LAST_MAX 32    /* ... or down to this many, whichever is fewer (segment_size) */
#define RPL_BLOCK_LEVELS 3    /* buddy blocks of 2, 4 and 8 segments (template.c: blocks_make) */
#define RPL_BLOCK_WIDTH 2     /* a block the parallel rule reordered: at most this many plan nodes
			       * per step of its longest chain (template.c: block_wide) ... */
#define RPL_BLOCK_SMALL 16    /* ... unless it has at most this many */
#define RPL_CHURN_LAUNCHES 8  /* launches before a template's patching cost is judged */
#define RPL_POLL_STALL_NS 2000000 /* another thread's polls of a deferred run that has not grown
				   * for this long submit it (rpl_poll); long enough that a step's
				   * thread descheduled on a busy machine is not taken for a stalled one */
#define RPL_PROBE_OPS 32      /* the churn probe waits (up to a template's segment count of runs) for a
			       * run whose eager tail is at most this many ops (launch.c: probe_at) */
#define RPL_GUARD_RETIRES 3   /* after this many retirements by failed guards, a shape is replayed unrewritten */
#define RPL_OPT_NONE (-1)     /* rpl_config.opt of a shape replayed unrewritten: no rule at all, not even
			       * one CUFOLD_RULES switches on (level 0 runs those) */
#define RPL_SITES_MAX 8       /* call sites of rewritten ops kept per template (report) */

/* How an op of a template is submitted when it matches. */
enum rpl_cls {
	RPL_CLS_GRAPH = 0, /* a node of a segment's graph: deferred, launched with its segment */
	RPL_CLS_EAGER = 1, /* issued in place (host-visible, pageable, or not yet graphable): the
			    * segment before it launches first, so the order is the program's */
};

/* One op of a template. */
struct rpl_top {
	uint64_t key;                /* capture's op key */
	int32_t seg;                 /* segment index (RPL_CLS_GRAPH), or -1 */
	uint8_t cls;                 /* enum rpl_cls */
	uint8_t flags;               /* the op's CAP_OPF_* when the template was built (beside cls:
				      * the lane reads both as one word, rpl__top_graph_plain) */
	uint8_t kind;                /* enum cap_op_kind */
	uint16_t stream_slot;        /* the window's stream slot */
	uint64_t vid;                /* the op's value identity then (capture.h), 0: none: a later op
				      * with this vid and these flags has this key and class, so
				      * matching need not classify it again (match.c, op_cls) */
};

/* o is a graph node's op (RPL_CLS_GRAPH, 0) recorded with no flags: cls and flags read as one
 * 16-bit word, 0 (replay/lane.c) */
static inline bool rpl__top_graph_plain(const struct rpl_top *o)
{
	uint16_t w;

	_Static_assert(RPL_CLS_GRAPH == 0 && offsetof(struct rpl_top, flags) == offsetof(struct rpl_top, cls) + 1,
		       "rpl_top: cls (graph: 0) and flags side by side");
	memcpy(&w, &o->cls, sizeof(w));
	return w == 0;
}

/* One node of a segment's graph and the bindings its exec holds now. */
struct rpl_node {
	CUgraphNode node;            /* the node in the segment's graph */
	uint8_t kind;                /* enum cap_op_kind */
	CUfunction func;             /* kernel: the function the exec holds (a binding: a reloaded
				      * module or another handle of the same kernel may differ) */
	uint32_t param_size;         /* kernel: bytes of params */
	void *params;                /* kernel: parameter bytes the exec holds (owned) */
	void **param_ptrs;           /* kernel: pointers into params per parameter (owned), or NULL */
	CUDA_MEMCPY3D copy;          /* memcpy: the descriptor the exec holds */
	CUDA_MEMSET_NODE_PARAMS set; /* memset: the parameters the exec holds */
	CUevent event;               /* event record / wait: the event the exec holds */
	void *stage;                 /* memcpy from pageable memory: replay's pinned copy of the
				      * source span, the node's source (owned, cuMemAllocHost) */
	size_t stage_bytes;          /* its size */
	bool empty;                  /* a wait whose record is in its graph: an empty node */
	uint8_t part;                /* the graph (segment part) it is in; for an op without a
				      * node, the part of its stream */
};

#define RPL_MAX_PARTS 8         /* streams a segment may be split over (segment.c) */

/* One graph of a segment: the whole segment, or (split) the nodes of one of its streams. */
struct rpl_part {
	CUgraph graph;               /* built with explicit node APIs */
	CUgraphExec exec;            /* instantiated (and uploaded) */
	uint32_t first;              /* position of its first op in the segment: the deferred op
				      * there names the stream a split part is launched on */
	bool legacy;                 /* has legacy-stream ops */
	bool staged;                 /* has nodes reading a stage buffer (done_ev guards them) */
	CUevent done_ev;             /* recorded after each launch: the stage buffers are free */
};

/* A run of consecutive graphable ops of a window (on any of its streams), cut as
 * template.c's segment_size says. Its ops on one stream, or on several streams whose only
 * orderings inside the segment are the program's own event record -> wait pairs going one way,
 * are split into one graph per stream (nparts > 1), each launched on its own stream: streams
 * overlap as they did in eager execution. Otherwise it is one graph (nparts == 1) launched on
 * one stream and joined with the others before and forked to them after (launch.c). */
struct rpl_seg {
	uint32_t first;              /* index of its first op in the window */
	uint32_t n;                  /* ops (nodes) */
	struct rpl_node *nodes;      /* n entries, in window order */
	struct rpl_part *parts;      /* nparts entries, in launch order */
	uint32_t nparts;             /* graphs: 1, or one per stream when split */
	bool staged;                 /* some part reads stage buffers */
	bool one_stream;             /* one graph, every op on one stream slot: its launches' ops
				      * are on one stream (slots are in the key), with no joins
				      * (launch.c: launch_unit asks def_streams nothing) */
	uint64_t launches;           /* launches (of all its parts) */
	uint64_t patched_launches;   /* launches that patched at least one node */
	uint64_t patches;            /* nodes patched */
	CUevent stand_ev;            /* the template's stand-in event (not owned): event nodes are
				      * built with it and set to the program's event at each launch */
	struct rw_run *run;          /* the rewrite plan of its ops (CUFOLD_OPT >= 1), or NULL: a
				      * plan node stands at its first op's position; the other ops
				      * it covers and the ops it erased get no graph node */
	uint64_t patched_gen;        /* with a run: the bindings generation (rw_run_bindings_gen)
				      * its nodes were last patched to; 0 when unknown */
	uint32_t kernels_run;        /* kernel launches one launch of its graph runs (its plan's nodes,
				      * or its ops): the report weighs them by launches */
	uint32_t nseg;               /* a buddy block (t->blocks): the segments it stands for, from
				      * t->ops[first].seg on; 0 for a segment */
	int32_t block;               /* a segment: the largest block starting with it (t->blocks
				      * index; smaller ones follow it), or -1 */
	uint64_t last_launch;        /* t->unit_launches at its last launch (0: never launched): of
				      * a segment and the blocks holding it, the one launched last
				      * holds the bindings its ops had last (template.c: references) */
	bool stream_cut;             /* a segment: cut from the one before it to keep its streams
				      * apart (template.c: cut_add), not by size */
	bool went_eager;             /* a segment: its ops last went eagerly (the churn check's
				      * probe, numbered in last_launch like a launch): no graph holds
				      * the bindings they had (template.c: references) */
	bool starves;                /* a segment: a run kept deferred past its end (the device was
				      * busy) found the device idle at the next segment's end, longer
				      * than a launch costs after: from then on it launches at its end,
				      * busy or not (launch.c) */
	uint64_t fill_ns;            /* a segment: gate clock from the end of the segment before it
				      * (its boundary handled) to its own end, when the last window
				      * that saw both ends saw them; 0: not yet (launch.c: holds) */
};

/* What the rewrite did to a template's graphable ops, counted when it was built (report). */
struct rpl_rewrite_figures {
	uint32_t kernels[2];         /* kernel launches before / after */
	uint32_t copies[2];          /* copies before / after */
	uint32_t memsets[2];         /* memsets before / after */
	uint64_t bytes[2];           /* bytes copied or set before / after (copies, memsets and
				      * cufold's batch kernels, which count as kernels too) */
	uint32_t fused[2];           /* batch-kernel: launches fused / the launches running them */
	uint32_t apart[RW_APART_COUNT]; /* launches of programs' kernels left alone, by why */
	struct {
		uint32_t launches;   /* memory_reused launches left that writing elsewhere might
				      * let fuse (rw_multi_renamable's analysis) */
		uint32_t whole;      /* of them, those whose renamed writes are surely whole */
		uint64_t bytes;      /* buffer bytes the launches that would write elsewhere need */
		uint32_t renamed;    /* launches the plans made write elsewhere (rewrite/rename.c) */
		uint64_t renamed_bytes; /* their buffers' bytes */
		uint32_t copied_back; /* of them, those copied back at their position */
		uint32_t copied_back_for_readers; /* of those, copied back because a reader no
				      * patch follows was kept reading the program's range */
		uint32_t readers_kept; /* those readers, summed over the renamed launches */
	} renamable;
	struct rpl_rule_figures {
		const char *rule;    /* its name (static) */
		uint32_t count;      /* applications, summed over segments */
		uint64_t sites[4];   /* call sites of the ops it removed, merged or rewrote */
		uint32_t nsites;     /* used entries */
	} rules[16];                 /* rules that fired */
	uint32_t nrules;             /* used entries */
	uint64_t sites[RPL_SITES_MAX]; /* call sites of ops a rule changed, removed or merged */
	uint32_t nsites;             /* used entries */
};

struct rpl_template {
	struct cap_shape *shape;     /* capture's shape it replays */
	uint64_t shape_id;           /* cap_shape_id (report) */
	uint64_t built_window;       /* window number it was built from */
	CUcontext ctx;               /* every op's context */
	uint32_t nops;               /* ops of the window */
	struct rpl_top *ops;         /* nops entries */
	uint32_t ngraph;             /* ops of class RPL_CLS_GRAPH */
	uint32_t nsegs;              /* segments */
	struct rpl_seg *segs;        /* nsegs entries */
	bool multi_stream;           /* some unsplit segment spans several streams */
	bool one_slot;               /* every graph op is on one stream slot: a deferred run of it
				      * is on one stream (launch.c: device_idle walks none of it) */
	uint32_t split_segs;         /* segments split into one graph per stream */
	struct rpl_seg *blocks;      /* buddy blocks: graphs of 2, 4, ... adjacent segments, aligned
				      * in their run after its first segment (template.c: blocks_make),
				      * launched in place of those segments while the device is busy */
	uint32_t nblocks;            /* entries of blocks, by first segment, largest first */
	uint64_t block_nodes;        /* nodes of the blocks' graphs (their cost: memory, build) */
	uint64_t boundaries_idle;    /* segment ends that found the device idle: launched */
	uint64_t boundaries_busy;    /* segment ends that found it busy: the run went on deferred */
	uint64_t boundaries_starved; /* segment ends that found it idle after the run went on
				      * deferred at the one before (which then starves, above) */
	uint64_t busy_at;            /* gate clock at the last segment end that found it busy */
	uint64_t boundaries_held;    /* segment ends that found the device idle and held the run
				      * (the next segment was due sooner than a launch costs) */
	uint64_t idle_at;            /* gate clock at the first of the held ends the run is in, or 0 */
	uint64_t end_at;             /* gate clock when the last segment end was handled */
	uint64_t end_win;            /* the window it was in (cap_window_seq) */
	int32_t end_seg;             /* its segment, or -1 */
	uint64_t block_launches;     /* launches of blocks (of t->launches) */
	uint64_t unit_launches;      /* launches of segments and blocks, numbering them (last_launch) */
	uint32_t seg_cap;            /* the most ops a segment was allowed (CUFOLD_SEGMENT, or
				      * RPL_SEG_SMALL after the gate's first lost trial) */
	CUevent join_ev, fork_ev;    /* replay's own events for stream joins and forks */
	CUevent stand_ev;            /* replay's own event that event nodes are built with (the
				      * program's events are bindings: a per-step event may be
				      * destroyed before the build runs or between launches) */
	uint64_t windows;            /* windows matched to the end */
	uint64_t win_launches;       /* launches when the last of them ended (retire.c: churn is judged
				      * on whole windows, not on a window's first launches) */
	uint64_t win_patched;        /* patched_launches then */
	uint64_t launches;           /* segment launches */
	uint64_t graph_launches;     /* graph launches (a split segment's launch is one per part) */
	uint64_t ops_replayed;       /* ops submitted inside launches */
	uint64_t patches;            /* nodes patched */
	uint64_t patched_launches;   /* launches that patched at least one node */
	const char *retired_why;     /* retired: why (static text); NULL while live */
	uint64_t fallbacks[RPL_FB_COUNT]; /* eager fallbacks while following it, by reason */
	struct rpl_rewrite_figures rw; /* what the rewrite did */
	uint64_t *moved_sites;       /* call sites of patched ops (report), up to RPL_SITES */
	uint32_t nmoved_sites;       /* used entries */
	uint64_t patch_ns;           /* gate clock spent patching nodes, over all launches (churn) */
	uint64_t launch_ns;          /* gate clock spent launching graphs (joins, stages included) */
	bool churn_probed;           /* one launch went eagerly to measure eager cost (retire.c) */
	uint32_t probe_waits;        /* runs passed over for the probe: their eager tail was long (launch.c) */
	struct rpl_moved *moved;     /* bindings that moved (report), RPL_MOVED entries, or NULL */
	uint32_t nmoved;             /* used entries (the first RPL_MOVED bindings seen moving) */
	uint32_t moved_cursor;       /* where note_moved's next search starts (launch.c) */
	uint32_t moved_max_op;       /* the largest op index in moved[] */
	struct rpl_refs *refs;       /* the values its nodes hold, indexed (refs.c), or NULL */
	uint32_t refs_asked;         /* frees asked of it (refs.c: the first few are scanned) */
	struct rpl_template *prev, *next; /* every live template */
};

/* A binding of a template that patching had to change: a kernel parameter, or a whole node
 * (param -1: a copy, memset or event node, a kernel whose function or layout changed, or a
 * kernel whose parameter layout is unknown). */
#define RPL_MOVED 32
#define RPL_MOVED_EXACT 64 /* a graph's launches whose moved bindings are all followed (launch.c) */
struct rpl_moved {
	uint32_t op;                 /* its op's index in the window */
	int32_t param;               /* parameter index, or -1 */
	uint64_t launches;           /* launches that changed it */
	char what[48];               /* the kernel's name, or the node's kind */
};

#define RPL_SITES 8

#define RPL_GATE_SAMPLES 8     /* window times kept per shape and way of running it */
#define RPL_GATE_TRIAL_WINDOWS 4 /* replayed windows measured before the gate decides */
#define RPL_GATE_BACKOFF 16ull /* sightings a losing shape stays eager after its first trial */
#define RPL_GATE_AMORTIZE (RPL_GATE_BACKOFF << 6) /* windows a shape's builds are charged over: the
				* longest a decision stands before the gate looks again (gate.c) */
#define RPL_SEG_SMALL 32       /* segment cap of a shape's second cuts (gate.c): a trial that lost
				* with segments grown to CUFOLD_SEGMENT is tried again with these */

enum rpl_gate_state {
	RPL_GATE_TRIAL = 0,  /* replayed windows are being measured */
	RPL_GATE_ON = 1,     /* replay pays: followed */
	RPL_GATE_OFF = 2,    /* replay did not pay: eager until off_until */
};

/* gate.c: whether replaying a shape pays. */
struct rpl_gate {
	uint64_t eager[RPL_GATE_SAMPLES]; /* recent eager window times (ns), a ring */
	uint32_t neager;             /* eager samples taken (ring position: neager % SAMPLES) */
	uint64_t replayed[RPL_GATE_SAMPLES]; /* replayed window times of the current trial (ns) */
	uint32_t nreplayed;          /* used entries */
	uint8_t state;               /* enum rpl_gate_state */
	uint32_t trials;             /* trials that ended OFF */
	uint64_t off_until;          /* OFF: sightings at which the shape is tried again */
	uint64_t decided_at;         /* sightings when the last decision was taken (0: none) */
	uint64_t eager_med, replay_med; /* the figures of that decision (ns per window) */
	uint8_t cuts;                /* 0: segments grow to CUFOLD_SEGMENT; 1: to RPL_SEG_SMALL */
	uint64_t big_med;            /* cuts 1: the replayed median the big segments had (ns) */
	uint64_t build_ns;           /* the shape's template builds so far, on the gate clock (ns) */
	uint32_t builds;             /* how many */
};

/* What replay remembers of a shape between templates (cap_shape_user). */
struct rpl_shape_note {
	struct rpl_gate gate;        /* whether replaying it pays (gate.c) */
	struct rpl_template *tpl;    /* its template, or NULL */
	bool rejected;               /* cannot be replayed (reason in why) */
	const char *why;             /* static text */
	uint64_t retired_at;         /* sightings when its last template retired */
	uint32_t free_retires;       /* retirements caused by frees */
	uint32_t guard_retires;      /* retirements caused by failed rewrite guards */
	bool patch_frees;            /* frees no longer retire it (allocates per step) */
};

/* What retires templates (retire.c), kept while a build is in flight to apply to its result
 * when it is published, as if it had been built at once. */
enum rpl_retirement_kind {
	RPL_RET_FREE = 0,            /* rpl_memory_released(a, b) */
	RPL_RET_EVENT = 1,           /* rpl_event_destroyed((CUevent)a) */
	RPL_RET_FUNCTIONS = 2,       /* rpl_functions_unloaded */
	RPL_RET_CONTEXT = 3,         /* rpl_context_destroyed((CUcontext)a) */
};
struct rpl_retirement {
	uint8_t kind;                /* enum rpl_retirement_kind */
	uint64_t a, b;               /* its arguments */
};
#define RPL_BUILD_LATER 16       /* retirements kept per build (more: the build is discarded) */

/* A template build, scheduled under the lock when a shape is due one, run outside it by the
 * thread whose lock drop takes it (rpl_build_take), and published under it again. */
struct rpl_build {
	struct cap_shape *shape;     /* the shape; NULL once it went (the result is discarded) */
	struct rpl_shape_note *note; /* its note (NULL with shape) */
	const struct cap_window *w;  /* its last window, pinned (cap_shape_pin_last) */
	uint64_t shape_id;           /* cap_shape_id(shape), read under the lock */
	CUcontext ctx;               /* the window's first op's context */
	struct rpl_config cfg;       /* the configuration it is built with */
	struct rpl_retirement later[RPL_BUILD_LATER]; /* retirements since it was scheduled */
	uint32_t nlater;             /* used entries of later */
	bool stale;                  /* more of them than fit: the result is discarded */
	struct rpl_template *t;      /* the result, or NULL (why, own_failure) */
	const char *why;             /* why there is none (static text) */
	bool own_failure;            /* cufold's own failure (not the shape's) */
	uint64_t t_ns;               /* gate clock time the build took */
	uint64_t wall_ns;            /* monotonic time it took (the report's worst window close) */
	uint64_t own_ns;             /* cufold's time it took (rpl_own_clock: the device's CPU time in
				      * its calls, instantiation and upload, left out) */
	uint32_t nops;               /* ops of its window */
	struct cap_alloc *allocs;    /* the allocations its kernels' pointer words point into, as
				      * the map held them at scheduling (cap_alloc_snapshot; the
				      * build runs outside the lock): unknown spans resolve to them */
	size_t nallocs;
	uint64_t alloc_gen;          /* the map's generation then */
};

/* The matcher (match.c). */
enum rpl_mstate {
	RPL_M_FRESH = 0,     /* a window just opened: the next op picks candidates */
	RPL_M_MATCHING = 1,  /* following candidates; ops may be deferred */
	RPL_M_RECORDING = 2, /* this window is eager to its end */
};

/* The matcher's state, shared by match.c (which owns it: its invariants and state diagram),
 * launch.c and retire.c. One per engine: struct rpl_engine.st. */
/* The armed lane (lane.c): what the op that armed it established, valid for the next call only,
 * by the same thread, with nothing between (the head's lane_armed_tid). */
struct rpl_lane {
	bool held;                   /* what follows was checked since the arming (arm_holds) */
	uint64_t refused_win;        /* the window arm_holds last refused: not armed again in it */
	struct cap_op *op_end;       /* the next op's slot must stay below it (the prediction's and
				      * the template's lengths, the window's filled slots, its cap) */
	struct cap_window *w;        /* capture's open window */
	const struct cap_window *pw; /* its prediction's last sighting */
	const struct rpl_template *t; /* the one candidate followed */
	/* the next op's slot in w, predicted op in pw and template op in t (index w->nops: each
	 * advances by one per lane op, where an index would be multiplied out three times) */
	struct cap_op *op;
	const struct cap_op *p;
	const struct rpl_top *o;
	bool funcs_same;             /* no function lookup's answer changed since pw began */
	bool borrow;                 /* w's arena was empty at the arm: the run's launches borrow p's
				      * parameter bytes (capture_int.h: lender), else copy them */
	const struct cap_op *seg_last; /* the slot of the last op of the segment the held run is in
				      * (segments are runs of positions; a run ends with its segment,
				      * or before a position outside any), NULL: none. Slots, not
				      * indices: the lane compares the slot it fills, and needs no
				      * index (5 instructions an op) */
	/* the stream record the last lane op named (held: records are freed only under the lock),
	 * and its slot and kind in the window: taken again for a predicted op on that slot (lane.c);
	 * NULL: none yet. The ops the lane took and has not settled are all on it. */
	struct cap_stream *s;
	uint16_t s_slot;
	uint8_t s_kind;
};


#define RPL_SAMPLE_MAX_NS 20000 /* a timed match longer than this is not counted (preemption) */

struct rpl_state {
	struct rpl_lane lane;        /* lane.c */
	bool ready;                  /* rpl_engine_create finished */
	bool stopped;                /* rpl_stop ran (exit): nothing is deferred any more */
	bool build_running;          /* build was taken and is not yet published */
	struct rpl_build build;      /* the one template build in flight (see rpl_build_take) */

	struct rpl_wait wait;        /* see rpl_take_wait */
	struct rpl_config cfg;       /* configuration */
	struct rpl_template *templates; /* every live template, newest first */
	struct rpl_template *retired; /* retired templates' figures, newest first (no graphs) */
	uint8_t mstate;              /* enum rpl_mstate */
	uint32_t depth;              /* ops of the open window matched so far */
	struct rpl_template *cand[RPL_MAX_CAND]; /* templates the window still agrees with */
	uint32_t ncand;              /* used entries of cand */
	struct rpl_template *ended;  /* a candidate whose every op matched (window complete) */
	/* The deferred ops are read through rpl__def: while def_copied is false they are the open
	 * window's own ops [def_first, def_first + ndef) in capture (no copy: the window keeps
	 * them until it closes, and capture says so first, rpl__def_keep); else copies in def. */
	struct cap_op *def;          /* deferred ops, in order (copies), when def_copied */
	uint32_t ndef, capdef;       /* deferred ops, and allocated entries of def */
	uint32_t def_first;          /* window index of the first deferred op */
	bool def_copied;             /* the deferred ops are copies in def (else the window's) */
	uint64_t def_win;            /* the window they are in (cap_window_seq), while not copied */
	const struct rpl_template *exact_t; /* the template the deferred run repeats exactly: */
	uint32_t nexact;             /* its leading ops with the vid and flags of exact_t's op at their
				      * position (rw_run_guards_hold_exact; reset by def_clear) */
	struct cf_arena arena;       /* parameter bytes of deferred ops */
	uint32_t idle_scanned;       /* deferred ops device_idle has looked at (launch.c) */
	uint32_t idle_nfirst;        /* used entries of idle_first */
	uint32_t idle_first[RPL_MAX_PARTS]; /* of those, each stream's first op (index in def),
					     * in order */
	CUstream idle_stream[RPL_MAX_PARTS]; /* and its stream */
	CUevent later_ev[RPL_LATER_EVENTS]; /* events the program destroyed while deferred ops named
					     * them: destroyed once those are submitted (def_clear) */
	uint32_t nlater_ev;          /* used entries of later_ev */
	CUcontext failed[RPL_MAX_FAILED_CTX]; /* contexts in sticky passthrough */
	uint32_t nfailed;            /* used entries of failed */
	bool all_failed;             /* more failed contexts than fit: every context passes through */
	uint64_t clock_ns;           /* what an empty pair of cf_now_ns() reads (calibrated at init):
				      * taken once from each timed match sample */
	uint64_t own_clock_ns;       /* what an empty pair of rpl_own_clock() reads (calibrated at
				      * init): taken once from each rpl_own_time sample */
	uint32_t poll_ndef;          /* ndef when a query last found the deferred run */
	uint64_t poll_t0;            /* when the deferred run was last seen growing by a query; 0: never */
	uint32_t poll_own_ndef;      /* ndef when its own thread's query was last answered NOT_READY;
				      * 0: none since the run began (rpl_poll) */
	uint64_t win_t0;             /* gate clock at the open window's first op (0: none yet) */
	bool win_deferred;           /* an op of the open window was deferred */
	struct {
		struct rpl_shape_note *note; /* the shape of the last closed window */
		bool valid;          /* a sample is due at the next window's first op */
		bool replayed;       /* it replayed to the end (else it ran wholly eager) */
		uint64_t t0;         /* its gate clock at its first op */
		uint64_t charge;     /* cufold's matching cost on a modeled clock */
	} pend;                      /* the last window's time, taken when the next one starts */
};

/* A note with its list link (notes are few: one per shape seen). */
struct rpl_note_link {
	struct rpl_shape_note note;  /* what cap_shape_user points at */
	struct cap_shape *shape;     /* its shape */
	struct rpl_note_link *next;  /* every note */
};

/* deferred_errors.c: errors of deferred work, kept until the program can see them. */
#define RPL_MAX_PENDING 16        /* contexts with an error pending (more: the oldest is kept) */
#define RPL_ERR_HISTORY 16        /* failures described in the report */

struct rpl_pending {
	CUcontext ctx;               /* the failed op's context */
	CUresult rc;                 /* the driver's answer */
	bool sticky;                 /* returned by every later observing call */
	uint32_t hist;               /* its entry in the report's history, or RPL_ERR_HISTORY */
};

struct rpl_failure {
	CUresult rc;                 /* the driver's answer */
	uint16_t api;                /* enum drv_api_id of the op */
	const char *name;            /* kernel name or entry point (lives as long as capture) */
	uint64_t callsite;           /* the op's call site hash, 0 when off */
	uint64_t seq;                /* the op's number */
	bool reported;               /* some call of the program returned it */
};

struct rpl_errors {
	struct rpl_pending pending[RPL_MAX_PENDING]; /* errors not yet returned (or sticky): the
						     * engine head's npending of them */
	struct rpl_failure hist[RPL_ERR_HISTORY]; /* the first failures */
	uint32_t nhist;              /* used entries */
	uint64_t failures;           /* deferred ops the driver refused */
	uint64_t reported;           /* observing calls that returned such an error */
	uint64_t unseen_at_exit;     /* errors no call had returned when the program exited */
};

/* Replay's part of an engine: everything replay changes, one instance per engine. */
struct rpl_engine {
	struct rpl_engine_head head; /* first: wait_due, build_due, npending (replay.h) */
	struct cap_engine *cap;      /* the same engine's capture part (replay reads its windows) */
	struct rpl_state st;         /* matching, deferral, templates (match.c) */
	struct rpl_totals totals;    /* counters (rpl_get_totals) */
	struct rpl_note_link *notes;     /* every live note */
	uint64_t strict_events;      /* fallbacks CUFOLD_STRICT counts (rpl_strict_events) */
	uint32_t strict_logged;      /* bit per fallback kind logged, bit RPL_FB_COUNT: passthrough */
	struct rpl_errors errs;      /* deferred_errors.c */
	uint64_t eager_ns;           /* gate clock spent issuing deferred kernels eagerly (launch.c) */
	uint64_t eager_kernels;      /* how many: their mean is the churn check's eager cost */
	struct rw_kernels *kernels;  /* cufold's kernels loaded per context (rewrite/kernels.h; own
				      * lock: builds off the engine's lock and rpl_context_gone reach
				      * it); set at creation, never changed */
	struct rw_rename_budget rename; /* cufold's buffers for writing elsewhere (rewrite/plan.h:
				      * max from CUFOLD_RENAME_MAX_BYTES; used changed atomically,
				      * builds run off the engine's lock) */
};

/* What replay remembers of s (NULL: nothing yet, or no shape). */
static inline struct rpl_shape_note *rpl__note_of(struct cap_shape *s)
{
	return s ? cap_shape_user(s) : NULL;
}

/* launch.c. Defer op, the window's op index (invariant 2): kept where capture recorded it when
 * it is the open window's op there and needs no staging, else as a deep copy (then every op of
 * the run is). 0 or -CF_ENOMEM. */
int rpl__defer(struct rpl_engine *re, const struct cap_op *op, uint32_t index, const struct cap_rec *rec);
/* The deferred ops, ndef of them in order (invariant 2); valid until the next op is recorded
 * (capture may move the window's slots as it grows): read again after every call. NULL when
 * nothing is deferred. */
const struct cap_op *rpl__def(struct rpl_engine *re);
/* Capture is about to close the open window (cap_set_window_closing): deferred ops still read in
 * its slots are copied (they are submitted after the close, as before). */
void rpl__def_keep(void *arg);
/* Submit what is deferred: as a graph when it is a whole segment of a candidate, else eagerly
 * (the first driver error of an eager submission). Nothing is deferred afterwards. */
CUresult rpl__submit_deferred(struct rpl_engine *re, enum rpl_fallback why);
/* The deferred run just completed a segment of the leading candidate: it is submitted (launched)
 * when the device is idle or nothing bigger can take it, else it stays deferred to be launched
 * later with the next segments as fewer, bigger graphs (buddy blocks). */
void rpl__segment_end(struct rpl_engine *re);
/* The n ops deferred at index from of the run, all on stream h (a run the lane took and settled,
 * replay/lane.c), looked at as device_idle's walk would look at them at the next segment end:
 * their stream noted as the run's when it is new (queried there, with the others), the walk
 * moved past them. Walked at every end instead, they cost recsys 6 instructions an op. Nothing
 * when the walk has not come up to from. */
void rpl__idle_note_run(struct rpl_engine *re, uint32_t from, uint32_t n, CUstream h);

/* segment.c. Build g's graphs (its ops and plan from window w, trace graph tg), in the current
 * context; on a failure what was built stays in g for rpl__seg_destroy. */
CUresult rpl__seg_build(struct rpl_engine *re, struct rpl_seg *g, const struct cap_window *w,
			const struct cap_graph *tg, const struct rpl_config *cfg);
/* Free g's graphs, execs, events, stage buffers and plan; g is zeroed. */
void rpl__seg_destroy(struct rpl_engine *re, struct rpl_seg *g);

/* retire.c. Retire t: its graphs go, its figures stay for the report. */
void rpl__template_retire(struct rpl_engine *re, struct rpl_template *t, const char *why);
/* After a launch: retire t when patching its moving bindings costs more than eager. */
void rpl__check_churn(struct rpl_engine *re, struct rpl_template *t);
/* Whether t's next launch goes eagerly once so that the churn check has an eager cost to compare. */
bool rpl__churn_needs_probe(const struct rpl_engine *re, const struct rpl_template *t);
/* A failure of cufold's own in ctx: ctx goes to sticky passthrough (invariant 5). */
void rpl__ctx_fail(struct rpl_engine *re, CUcontext ctx, const char *what);

/* template.c */
/* The rewriter's run over the window's ops [first, first+n) (CUFOLD_OPT, CUFOLD_RULES), or NULL
 * when no rule is enabled. */
struct rw_run *rpl__plan_ops(struct rpl_engine *re, const struct cap_window *w, uint32_t first, uint32_t n,
			     const struct rpl_config *cfg);
/* Shape shape_id's template from its window w (pinned: this runs outside the engine's lock,
 * reading only w, cfg and the driver; t->shape is set when it is published), or NULL with *why
 * (and *own_failure when cufold itself failed). */
struct rpl_template *rpl__template_build(struct rpl_engine *re, const struct cap_window *w, uint64_t shape_id,
					 const struct rpl_config *cfg, const char **why, bool *own_failure);
/* Under the lock, once t->shape is set: the shape's marks say what t's rewrites did. */
void rpl__template_mark(struct rpl_template *t);
void rpl__template_destroy(struct rpl_engine *re, struct rpl_template *t);
/* The most ops of one of t's segments. */
uint32_t rpl__template_max_seg(const struct rpl_template *t);
/* Destroy t's graphs, execs and events, keeping its figures (a retired template). */
void rpl__template_release(struct rpl_engine *re, struct rpl_template *t);
/* Classify one op (what a template would make of it). */
enum rpl_cls rpl__classify(const struct cap_op *op);
/* Build the node-form of a kernel op's parameters into n (owned copies). 0 or -CF_ENOMEM. */
int rpl__node_set_kernel(struct rpl_node *n, const struct cap_op *op);
/* The node parameters of a kernel op; the pointers point into n (which must hold op's
 * parameters) and into extra_buf[5]/extra_size, which the caller keeps alive for the call. */
void rpl__kernel_params(const struct rpl_node *n, const struct cap_op *op, CUDA_KERNEL_NODE_PARAMS *p,
			void **extra_buf, size_t *extra_size);
void rpl__memset_params(const struct cap_op *op, CUDA_MEMSET_NODE_PARAMS *p);
bool rpl__copy_equal(const CUDA_MEMCPY3D *a, const CUDA_MEMCPY3D *b);
/* The descriptor of a copy node: the op's, reading from stage when it has one. */
void rpl__copy_desc(const struct cap_op *op, const void *stage, CUDA_MEMCPY3D *d);
bool rpl__memset_equal(const CUDA_MEMSET_NODE_PARAMS *a, const CUDA_MEMSET_NODE_PARAMS *b);
/* Whether the rewrite plan of g (if any) holds for the deferred ops def[0..g->n): its guards,
 * and every node derivable. */
bool rpl__seg_guards_hold(struct rpl_engine *re, const struct rpl_seg *g, const struct cap_op *def, bool exact);
/* The op node i of g stands for at this launch (right after rpl__seg_guards_hold(g, def) said
 * yes): &def[i], tmp filled with a derived op, or NULL: an op without a node of its own (folded
 * into another node or erased), or a plan node that could not be derived (a failure). */
const struct cap_op *rpl__seg_op(const struct rpl_seg *g, uint32_t i, const struct cap_op *def, struct cap_op *tmp);
/* refs.c: whether any binding of t points into [base, base+size) (the bindings each segment's
 * ops had last), from an index of its nodes' values made at the first question; the same answer
 * by a scan of every node (tests); node i of g changed its values (launch.c: patch); the index
 * freed (with the nodes). */
bool rpl__template_references(struct rpl_template *t, uint64_t base, uint64_t size);
bool rpl__template_references_scan(const struct rpl_template *t, uint64_t base, uint64_t size);
void rpl__refs_touch(struct rpl_template *t, const struct rpl_seg *g, uint32_t i);
void rpl__refs_free(struct rpl_template *t);
size_t rpl__refs_bytes(const struct rpl_template *t);
size_t rpl__template_bytes(const struct rpl_template *t);

/* A driver call replay makes (counted). */
void rpl__own_call(struct rpl_engine *re);
/* Make ctx current on this thread if it is not; *pushed says whether to pop. */
void rpl__ctx_enter(struct rpl_engine *re, CUcontext ctx, bool *pushed);
void rpl__ctx_leave(struct rpl_engine *re, bool pushed);

/* gate.c. The clock window times are taken with (ns); whether it is a software device's model. */
void rpl__gate_init(void);
uint64_t rpl__gate_clock(void);
bool rpl__gate_is_modeled(void);
/* A window of the shape took ns: replayed to the end, or wholly eager. May decide (enabled:
 * CUFOLD_GATE; when false the gate measures but never turns replay off; can_shrink: a segment of
 * its template has more than RPL_SEG_SMALL ops). True when the shape's template must be rebuilt with other cuts
 * (g->cuts says which) and tried again. */
bool rpl__gate_sample(struct rpl_gate *g, bool replayed, uint64_t ns, uint64_t sightings, uint64_t shape_id,
		      bool enabled, bool can_shrink);
/* What the shape's builds add to a replayed window in the gate's books: build_ns spread over
 * RPL_GATE_AMORTIZE windows (ns). */
uint64_t rpl__gate_build_charge(const struct rpl_gate *g);
/* Whether the shape's template may be followed now (an OFF shape past its back-off goes to TRIAL;
 * a TRIAL with its replayed windows but no eager one runs one window eagerly). */
bool rpl__gate_allows(struct rpl_gate *g, uint64_t sightings);
const char *rpl__gate_state_name(const struct rpl_gate *g);

/* retire.c: while a build is in flight, a retirement is kept for its result (rpl_build_publish
 * applies it; more than fit mark it stale). */
void rpl__build_note(struct rpl_engine *re, enum rpl_retirement_kind kind, uint64_t a, uint64_t b);

/* deferred_errors.c: a deferred op failed when submitted (the program was told it succeeded). */
void rpl__error_note(struct rpl_engine *re, const struct cap_op *op, CUresult rc);
/* Whether rc leaves a context unusable (the driver returns it from every later call). */
bool rpl__error_is_sticky(CUresult rc);
/* At exit: log the errors no call returned. */
void rpl__errors_at_exit(struct rpl_engine *re);
/* The report's "deferred_errors" member (key and value, common/json.h). */
void rpl__errors_write_json(struct rpl_engine *re, struct cf_json *j);

/* markers.c: NVTX ranges and marks in the "cufold" domain; each returns at once when no NVTX tool
 * is attached. Ranges nest: every *_begin is closed by one rpl__mark_end. */
void rpl__mark_init(void);
void rpl__mark_launch_begin(uint64_t shape_id, uint32_t seg, uint32_t nops);
void rpl__mark_flush_begin(uint32_t nops, enum rpl_fallback why);
void rpl__mark_build_begin(uint64_t shape_id);
void rpl__mark_end(void);
/* A mark (an instant): "cufold: what: why". */
void rpl__mark_event(const char *what, const char *why);

/* match.c. A fallback happened (counted in totals, and in t's figures when t is not NULL): its
 * mark, and under CUFOLD_STRICT its error when it is a failure of cufold's own or a failed guard. */
void rpl__fallback_note(struct rpl_engine *re, struct rpl_template *t, enum rpl_fallback why);
/* A context went to passthrough after a failure of cufold's own (strict: an error). */
void rpl__passthrough_note(struct rpl_engine *re, const char *what);

/* match.c: every live template (report). */
struct rpl_template *rpl__templates(struct rpl_engine *re);
/* Retired templates kept for the report. */
struct rpl_template *rpl__retired(struct rpl_engine *re);

/* The open window's number when op is its op at index, else 0: from capture's answer rec (an op
 * recorded into the open window stays there until a close, which rec would name), without a
 * call into capture per op (cap_window_holds, issue 22). */
static inline uint64_t rpl__window_holds(const struct cap_op *op, uint32_t index, const struct cap_rec *rec)
{
	return rec && rec->op == op && rec->index == index && !rec->closed && !rec->ends_window &&
			       rec->result == CAP_REC_RECORDED ?
		       rec->window :
		       0;
}

/* Defer op index of the open window win, read where capture keeps it (not copied): the run of
 * deferred ops grows by one. rpl__defer and match.c's fast lane share it. */
/* After an op of template t's position joined the deferred run: whether it had that op's vid and
 * flags (ex), counted while every op before it had too. */
static inline void rpl__note_exact(struct rpl_engine *re, const struct rpl_template *t, bool ex)
{
	if (re->st.ndef == 1) {
		re->st.exact_t = t;
		re->st.nexact = 0;
	}
	if (ex && re->st.exact_t == t && re->st.nexact + 1 == re->st.ndef)
		re->st.nexact++;
}

/* After an op replay followed (match.c: follow, op_long where capture's lane took the op): the
 * next call may take the armed lane, which checks the rest at its first use (lane.c:
 * arm_holds). Inline: most arms are never used (another acquisition comes first). */
static inline void rpl__lane_arm(struct rpl_engine *re, const struct cap_op *op, uint64_t win)
{
	/* (an error pending: the engine's call must take the usual path, which returns it; errors
	 * noted later disarm, rpl__error_note) */
	if (win == re->st.lane.refused_win || op->callsite || op->t_ns || re->head.npending)
		return; /* rpl_lane_take_arm disarmed it */
	re->head.lane_armed_tid = op->tid;
	re->head.lane_tid = op->tid;
	re->st.lane.held = false;
}

/* A timed match took dt ns (one op in 16 of those matched: follow_timed, op_long, the armed
 * lane): counted, less what reading the clock costs, unless the thread was preempted. */
static inline void rpl__match_sampled(struct rpl_engine *re, uint64_t dt)
{
	if (dt < RPL_SAMPLE_MAX_NS) {
		re->totals.match_ns += dt > re->st.clock_ns ? dt - re->st.clock_ns : 0;
		re->totals.match_samples++;
	}
}

static inline void rpl__defer_in_window(struct rpl_engine *re, uint32_t index, uint64_t win)
{
	if (re->st.ndef == 0) {
		re->st.def_first = index;
		re->st.def_win = win;
	}
	re->st.ndef++;
	re->st.win_deferred = true;
	re->totals.ops_deferred++;
}

#endif
