/* replay.h - replay of repeated windows as CUDA graphs: templates built from a window shape
 * seen CUFOLD_WARMUP times, matching of later calls against them, deferral, segment launches
 * with patched bindings, and the eager fallback. replay layer: includes rewrite/, capture/,
 * driver/ and common/.
 *
 * Threading: like capture, nothing here locks; every function must be called with the
 * engine's mutex held (shim/engine.c), so one window's calls from all threads are matched in
 * one order. Every driver call replay makes goes through DRV_REAL.
 *
 * The contract with the engine, per call of the program in CUFOLD_MODE=replay:
 *  - a stream-work call that capture recorded as op: rpl_op(op) says RPL_DEFER (the hook returns
 *    CUDA_SUCCESS without calling the driver; replay owns a deep copy) or RPL_EAGER (the hook
 *    issues the call itself, after the lock is dropped, as the program's own call); on RPL_EAGER
 *    every deferred op has already been submitted, in order. Issuing after the drop is safe:
 *    another thread may take the lock first and get its own op deferred or flushed ahead of
 *    this one, but that op's call overlaps this call (which has not returned), so the program
 *    cannot order the two; any op the program orders after this one is made after the issue;
 *  - while a program stream capture is open (the engine counts them), no call is deferred:
 *    the engine does not call rpl_op, it calls rpl_flush (a wait on an event of a capture joins
 *    its stream to the capture, which must happen in the driver at once);
 *  - before any other call reaches the driver (a boundary, a call cufold does not model, a
 *    call capture could not record): rpl_flush();
 *  - whenever capture closes a window (cap_boundary or cap_rec.closed): rpl_window_closed();
 *  - an eagerly issued op the driver refused: rpl_op_failed();
 *  - at exit, after the last flush: rpl_stop() (every later op is RPL_EAGER);
 *  - after every lock drop: rpl_take_wait(), and rpl_wait() outside the lock when it says so.
 *
 * Replay never waits on the device under the lock: a host function queued on a stream may
 * wait for a thread that is blocked on the lock. */
#ifndef RPL_REPLAY_H
#define RPL_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "capture/capture.h"

struct rpl_config {
	unsigned int warmup;         /* sightings of a shape before it becomes a template */
	unsigned int segment;        /* most ops per graph segment */
	unsigned int min_ops;        /* windows with fewer graphable ops stay eager */
	int opt;                     /* CUFOLD_OPT 0..2 (rules CUFOLD_RULES switches on run at 0 too), or
				      * RPL_OPT_NONE: no rewriting at all */
	bool gate;                   /* CUFOLD_GATE: a template is followed only while it pays */
	bool churn;                  /* CUFOLD_CHURN: the churn check may retire a template whose
				      * bindings move (retire.c: rpl__check_churn) */
	bool strict;                 /* CUFOLD_STRICT: failures of cufold's own and failed guards
				      * are logged as errors (rpl_strict_events counts them anyway) */
};

enum rpl_verdict {
	RPL_EAGER = 0, /* issue the call now; nothing is deferred any more */
	RPL_DEFER = 1, /* kept: return CUDA_SUCCESS to the program */
};

/* Why deferred work went to the driver eagerly instead of as a graph (report). */
#define RPL_FALLBACK_LIST(X) \
	X(MISMATCH, "a call differed from the template") \
	X(BOUNDARY, "a boundary came before a segment was complete") \
	X(BUILD, "building or instantiating a graph failed") \
	X(PATCH, "patching a graph node failed") \
	X(LAUNCH, "launching a graph failed") \
	X(NOMEM, "out of memory deferring a call") \
	X(FREE, "memory the template references was freed") \
	X(CHURN, "bindings change on most launches (cheaper eager)") \
	X(GUARD, "a rewrite guard failed on the call's bindings") \
	X(BUSY, "a stage buffer was still read by the previous launch") \
	X(POLL, "a query polled deferred work that was not growing") \
	X(PROBE, "submitted eagerly once to measure eager submission's cost (churn check)")

enum rpl_fallback {
#define RPL_FALLBACK_ENUM_(name, label) RPL_FB_##name,
	RPL_FALLBACK_LIST(RPL_FALLBACK_ENUM_)
#undef RPL_FALLBACK_ENUM_
	RPL_FB_COUNT
};

const char *rpl_fallback_name(enum rpl_fallback f);

/* Replay's part of an engine (replay_int.h): templates, matching, deferred ops and errors,
 * totals. Opaque outside replay/; it reads the same engine's capture part. */
struct rpl_engine;

/* A new replay part over capture part cap; NULL when out of memory. */
struct rpl_engine *rpl_engine_create(struct cap_engine *cap, const struct rpl_config *cfg);
/* Submit what is deferred, destroy every graph and template, free re (NULL is ignored). A
 * forked child never calls this on its parent's part (the graphs are the parent's). */
void rpl_engine_destroy(struct rpl_engine *re);

/* Exit: submit what is deferred; from now on every op is answered RPL_EAGER (a thread that
 * records after the exit flush must not leave work that nothing submits). */
void rpl_stop(struct rpl_engine *re);

/* A device wait replay could not make under the lock (after a failure it could not order in
 * the driver): the stream to synchronize before the program goes on. */
struct rpl_wait {
	CUstream stream;             /* stream to synchronize */
	CUcontext ctx;               /* its context (current while waiting) */
};
/* Under the lock: whether a wait is due (cheap); takes it. */
bool rpl_take_wait(struct rpl_engine *re, struct rpl_wait *w);
/* Outside the lock: make it. */
void rpl_wait(const struct rpl_wait *w);

/* Template builds (rewrite, graph build, cuGraphInstantiate, cuGraphUpload) run outside the
 * engine's lock, so other threads' calls do not wait for them. Under the lock: whether a build
 * is due (cheap); takes it. Then rpl_build_run outside the lock, and rpl_build_publish under
 * it again (the engine's lock drop does all three). */
bool rpl_build_take(struct rpl_engine *re);
/* What every caller may read of a replay part without a call: struct rpl_engine begins with it
 * (the engine asks it under the lock on every recorded call, issue 22). */
struct rpl_engine_head {
	bool wait_due;               /* a synchronization is held for the engine to make */
	bool build_due;              /* a build is scheduled: the next lock drop takes it */
	uint32_t npending;           /* errors of deferred ops pending (deferred_errors.c) */
	uint32_t lane_armed_tid;     /* the armed lane (lane.c) may take the next call, if it is this
				      * thread's and nothing else took the engine's lock since; 0:
				      * disarmed (a thread's id is never 0: one compare asks both) */
	uint32_t lane_tid;           /* the thread of the lane's held run (and its pending ops) */
	uint32_t lane_pending;       /* ops the armed lane took whose stores and counts wait for
				      * rpl_lane_settle (nonzero only while armed) */
};

/* The armed lane's arm (lane.c). Functions of lane.c, not inline here: the release build's
 * link-time optimization inlines them into the engine's entry (Makefile: LTO). */

/* Under the lock: make the stores and counts of the ops the armed lane took since it last
 * settled, if any (rpl_lane_settle in lane.c). Every reader of capture's window or replay's run
 * state other than the lane itself comes after an acquisition that settles (rpl_lane_disarm,
 * rpl_lane_take_arm) or calls this. */
void rpl_lane_settle_pending(struct rpl_engine *re);

/* At every acquisition of the engine's lock but a stream-work call's (the engine's, under it):
 * the armed lane holds only across two calls with nothing between them; what it took is
 * settled. */
void rpl_lane_disarm(struct rpl_engine *re);

/* Under the lock, first thing in a stream-work call of thread tid: whether the armed lane
 * (below) may take it, the op before, armed, having been this thread's with nothing between.
 * It is disarmed either way: the lane arms it again when it takes the call, and so do replay's
 * other lanes (match.c); where it was not this thread's, what the lane took is settled. Where
 * the lane is never armed (pointers that move every step) this costs a load and a store. */
bool rpl_lane_take_arm(struct rpl_engine *re, uint32_t tid);

/* The armed lane (lane.c), under the lock before capture records the call: TOOK or TOOK_END
 * when it took the call c (recorded and deferred it; the hook answers CUDA_SUCCESS without
 * calling the driver), its stores and counts left for rpl_lane_settle; REFUSED having settled
 * what it took before and changed nothing else (the call takes the usual path: cap_record, then
 * rpl_op).
 * ctx: the thread's current context (the call is the armed thread's, and it has no call site or
 * time stamp). */
enum rpl_lane_took {
	RPL_LANE_REFUSED = 0, /* the usual path takes the call */
	RPL_LANE_TOOK,        /* taken; nothing is due at the lock's drop (rpl_due_at_drop) */
	RPL_LANE_TOOK_END,    /* taken, and it ended its segment: a launch, a wait or a build may be
			       * due at the drop */
};
enum rpl_lane_took rpl_lane(struct rpl_engine *re, const struct cap_call *c, CUcontext ctx); /* rpl_lane_take_arm */
/* A call the lane took (TOOK) took ns in the engine from the lock to the lane's answer: one
 * call in 32 of a thread's (shim/engine.c: OP_TIMED_EVERY), never one the engine times whole
 * (rpl_own_time: the clock reads would count in cufold's own time), is a sample of replay's
 * matching (rpl_host_ns_per_op). */
void rpl_lane_sampled(struct rpl_engine *re, uint64_t ns);

/* Under the lock: whether a wait or a build is due at the lock's drop (one cheap question the
 * engine asks first, so a drop with nothing due costs no more). */
static inline bool rpl_due_at_drop(const struct rpl_engine *re)
{
	const struct rpl_engine_head *h = (const struct rpl_engine_head *)(const void *)re;

	return h->wait_due || h->build_due;
}
void rpl_build_run(struct rpl_engine *re);
void rpl_build_publish(struct rpl_engine *re);

/* A call capture recorded (op is valid for this call only). rec: capture's answer that holds op
 * (rec->op), which says where op is without asking capture again, or NULL: op is the caller's
 * own (then a deferred op is copied). */
enum rpl_verdict rpl_op(struct rpl_engine *re, const struct cap_op *op, const struct cap_rec *rec);
/* The op last answered RPL_EAGER failed in the driver: the window stops matching. */
void rpl_op_failed(struct rpl_engine *re);
/* Submit everything deferred (a complete segment as its graph, else eagerly in order); the
 * window stops matching until the next one opens. Returns the first driver error of an eager
 * submission, or CUDA_SUCCESS. */
CUresult rpl_flush(struct rpl_engine *re);
/* Whether ops are deferred now (cheap; for boundaries on the fast path). */
bool rpl_has_deferred(struct rpl_engine *re);
/* Where the deferred run starts in the open window: true and *first when ops are deferred. */
bool rpl_deferred_from(struct rpl_engine *re, uint32_t *first);
/* A query of thread tid asks about deferred work (cap_window_observed from rpl_deferred_from).
 * True: answer CUDA_ERROR_NOT_READY, which is the truth (the work is not even submitted).
 * False: replay submitted what it kept (the query goes to the driver). Polling makes progress:
 * the thread that made the last deferred op is answered NOT_READY when it made an op of the
 * run since its last such answer (it goes on with the step: CuPy's pinned pool), else its query
 * submits (it spins: it cannot issue more while it polls); another thread's polls are answered
 * NOT_READY while the deferred run keeps growing, and submit it once it has not grown for
 * RPL_POLL_STALL_NS. */
bool rpl_poll(struct rpl_engine *re, uint32_t tid);

/* Errors of deferred ops that failed when submitted (deferred_errors.c). An error pending for
 * ctx (NULL: any context) to return instead of success: for a call that observes the device
 * (work = false) any pending error, once (sticky ones every time); for a stream work call
 * (work = true) only a sticky one. CUDA_SUCCESS when none. */
CUresult rpl_error_take(struct rpl_engine *re, CUcontext ctx, bool work);
/* Whether any error is pending (cheap). */
static inline bool rpl_error_pending(const struct rpl_engine *re)
{
	return ((const struct rpl_engine_head *)(const void *)re)->npending != 0;
}
/* A window closed with shape s (NULL when it was empty or not tracked): the next call starts
 * a new window; a shape seen often enough becomes a template. */
void rpl_window_closed(struct rpl_engine *re, struct cap_shape *s);
/* Capture is evicting s: drop its template. */
void rpl_shape_evicted(struct rpl_engine *re, struct cap_shape *s);
/* The program frees or unmaps [base, base+size): templates whose graphs reference it retire. */
void rpl_memory_released(struct rpl_engine *re, uint64_t base, uint64_t size);
/* The program destroys an event: nodes naming it are set again at their next launch (the
 * handle may be reused for another event); no template retires. */
/* ... and before that: true when deferred ops name e, so replay keeps the destroy and makes it
 * once they are submitted (the caller answers CUDA_SUCCESS and must not destroy e); false: the
 * caller destroys it now (nothing deferred names it, or it was submitted first). */
bool rpl_event_destroy_later(struct rpl_engine *re, CUevent e);
void rpl_event_destroyed(struct rpl_engine *re, CUevent e);
/* A module or library is unloaded: every template retires (its functions may be gone). */
void rpl_functions_unloaded(struct rpl_engine *re);
/* A context is destroyed (NULL: unknown which): its templates retire. */
void rpl_context_destroyed(struct rpl_engine *re, CUcontext ctx);
/* ctx is gone (destroyed successfully; NULL: any may be): forget the kernels cufold loaded into
 * it in re's cache (NULL re is ignored). No engine lock needed (the cache has its own). */
void rpl_context_gone(struct rpl_engine *re, CUcontext ctx);
/* Whether replay gave up on ctx (a failure of cufold's own): its calls only pass through. */
bool rpl_ctx_is_failed(struct rpl_engine *re, CUcontext ctx);

struct rpl_totals {
	uint64_t templates;          /* templates built */
	uint64_t templates_live;     /* templates alive now */
	uint64_t segments;           /* graph segments built */
	uint64_t graph_launches;     /* segment launches */
	uint64_t ops_replayed;       /* ops submitted inside graph launches */
	uint64_t ops_deferred;       /* ops answered RPL_DEFER */
	uint64_t ops_flushed;        /* deferred ops submitted eagerly */
	uint64_t patches;            /* graph nodes patched */
	uint64_t fallbacks[RPL_FB_COUNT]; /* eager fallbacks by reason */
	uint64_t retired;            /* templates retired (free, churn, failure) */
	uint64_t own_calls;          /* driver calls replay made */
	uint64_t matched_ops;        /* ops compared against a template */
	uint64_t lane_ops;           /* of those, recorded and deferred by the armed lane (lane.c) */
	uint64_t match_ns;           /* time spent matching the timed sample of ops */
	uint64_t match_samples;      /* ops in the timed sample */
	uint64_t own_ns;             /* cufold's time on the engine's timed sample of calls */
	uint64_t own_samples;        /* calls in that sample */
	uint64_t host_bytes_peak;    /* the most rpl_memory_bytes said at a retirement (retire.c) */
	uint64_t polls_not_ready;    /* queries answered CUDA_ERROR_NOT_READY for deferred work */
	uint64_t build_ns_max;       /* the longest template build (first, rebuild or the gate's
				      * retrial alike: a window close's spike), ns */
	uint64_t build_ops_max;      /* ops of the window that build was made from */
	uint64_t builds;             /* template builds run (first, rebuilds, retrials, rejected) */
	uint64_t build_own_ns;       /* cufold's time in them (rpl_own_clock), ns */
	bool failed;                 /* some context went to sticky passthrough */
};
void rpl_get_totals(struct rpl_engine *re, struct rpl_totals *t);
/* Fallbacks caused by a failure of cufold's own (BUILD, PATCH, LAUNCH, NOMEM, a context sent to
 * passthrough) or by a failed rewrite guard (GUARD) in this process so far: what CUFOLD_STRICT
 * turns into an exit status. */
uint64_t rpl_strict_events(struct rpl_engine *re);
/* Measured matching cost per op (ns), 0 when nothing was matched: what replaying adds to a
 * call over recording it (the gate charges it for every op replayed). */
double rpl_host_ns_per_op(struct rpl_engine *re);
/* cufold's own time on a call (issue 22): the engine reads rpl_own_clock around its work on one
 * call in 32 of each thread (lock wait, recording, matching, deferral, the graph launches and
 * eager flushes that call made, held frees) and tells replay the elapsed ns here, under the lock;
 * what an empty pair of those reads reads is taken out (rpl_calibrate_clocks). The matching cost
 * alone (rpl_host_ns_per_op) left most of cufold out; this leaves out the hook around the engine,
 * the lock's release and the builds run at it: in steady state it reads 0.65-1.06x the CPU time
 * cufold costs an op measured natively (scripts/bench-overhead --own-check, 2026-12-06). */
void rpl_own_time(struct rpl_engine *re, uint64_t ns);
/* The clock of rpl_own_time (ns): the monotonic clock, less, on a software device that exports
 * simcuda_device_cpu_ns, the CPU time this thread spent inside the device's calls. Its model
 * charges those calls on its own host clock (a graph launch 2.5 us), and its CPU time in them
 * (interpreting kernels when a query or a synchronize runs the work) is the test device's, not
 * cufold's: counted, it charged dataparallel 340-450 ns an op, recsys about 100. */
uint64_t rpl_own_clock(void);
/* Mean of those, ns per call (0 before any). */
double rpl_own_ns_per_op(struct rpl_engine *re);
/* rpl_own_ns_per_op plus the template builds' own time spread over the ops recorded: cufold's
 * whole time per op over the run (the sample of calls leaves builds out: they run at the lock's
 * drop, after the call's timing). */
double rpl_own_ns_per_op_with_builds(struct rpl_engine *re);
/* A clock read twice around a timed sample (cf_now_ns, rpl_own_clock), ns. */
typedef uint64_t (*rpl_clock_fn)(void);
/* What an empty pair of reads of clock, t1 - t0 back to back, reads on average (ns, rounded;
 * preempted pairs left out): what a timed sample's reading exceeds its work by. That is about
 * one read's cost, not two: a read takes its instant partway through, so between the two
 * instants lie the first read's end and the second's start, one read in all. */
uint64_t rpl_clock_pair_ns(rpl_clock_fn clock);
/* Calibrate what the timed samples take out of their readings: the matching samples' pair of
 * match_clock (cf_now_ns) and rpl_own_time's pair of own_clock (rpl_own_clock, the very calls
 * the engine makes). rpl_engine_create calls it; a test passes clocks of its own. */
void rpl_calibrate_clocks(struct rpl_engine *re, rpl_clock_fn match_clock, rpl_clock_fn own_clock);
/* Write replay's members of the JSON report (common/json.h, inside its top-level object):
 * "replay" (per template: segments, launches, fallbacks with reasons, patches, moved call sites,
 * submissions saved; totals), "host_ns_per_op" (the measured matching cost) and
 * "own_ns_per_op" (cufold's whole time per call, which scripts/bench charges). */
struct cf_json;
void rpl_write_report_json(struct rpl_engine *re, struct cf_json *j);
/* Bytes of host memory replay holds. */
size_t rpl_memory_bytes(struct rpl_engine *re);

#endif
