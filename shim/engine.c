/* engine.c - the per-call policy (see engine.h): starting capture (and replay in
 * CUFOLD_MODE=replay), the engine's mutex, the thread's current context, classifying calls,
 * handing recorded calls and boundaries to replay, fork and exit, and writing the outputs. shim
 * layer.
 *
 * States:
 *
 *	IDLE --first call, mode trace/replay, driver loaded--> RECORDING --exit--> DONE
 *	  |                                                        |
 *	  +--mode off or no driver--> DONE         out of memory --+--> DONE
 *
 * In DONE every hook only counts and forwards. A forked child re-enters RECORDING with an
 * empty capture. */
#include "shim/engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/compiler.h"
#include "common/config.h"
#include "common/errors.h"
#include "common/file.h"
#include "common/log.h"
#include "common/serial.h"
#include "replay/replay.h"
#include "rewrite/rewriter.h"
#include "shim/signals.h"

enum engine_state {
	ENGINE_IDLE = 0,      /* not started */
	ENGINE_RECORDING = 1, /* capture is on */
	ENGINE_DONE = 2,      /* passing through: mode off, no driver, out of memory, or after exit */
};

#define TRACE_MAX_BYTES (64u << 20) /* CUFOLD_TRACE keeps at most this much of event text */

/* Process-wide: which engine is current and what the process as a whole has done. Everything
 * a recorded call changes is in the engine (engine.h); these only change at start, fork and
 * exit (scripts/check-state lists them, with these reasons). */
static struct cf_engine *engine; /* the current engine, NULL before start (acquire/release) */
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER; /* one thread makes the engine */
static int state;                /* enum engine_state (acquire/release) */
static bool is_child;            /* a forked child (outputs only with %p in the path) */
static int atfork_prepare_done;  /* the prepare and parent handlers are registered */
static struct cf_engine *prepared; /* the engine atfork_prepare locked for this fork, or NULL */
static int strict_registered;    /* strict_on_exit is registered (CUFOLD_STRICT=1) */
static int exit_status = -1;     /* the status the program passed to exit (on_exit), or -1 */
static struct cf_engine *exited; /* the engine engine_exit flushed (strict_exit reads it) */

static inline void lock_hold_op(struct cf_engine *e)
{
	cf_lock(&e->lock);
	cf_serial_enter(); /* debug builds: capture checks it is called under it (common/serial.h) */
	shim_inside_enter(); /* nothing cufold calls from here may land in a hook again */
}

/* Every acquisition but a stream-work call's (op_begin: lock_hold_op, rpl_lane_take_arm). */
static inline void lock_hold(struct cf_engine *e)
{
	lock_hold_op(e);
	if (e->rpl)
		rpl_lane_disarm(e->rpl); /* replay's armed lane holds only from one call to the next */
}

/* The current engine (NULL before one was made). */
static struct cf_engine *engine_get(void)
{
	return __atomic_load_n(&engine, __ATOMIC_ACQUIRE);
}

/* Take the current engine's lock; the answer is the engine it guards (held until lock_drop).
 * Only called once the engine exists (state left IDLE). */
static struct cf_engine *engine_lock(void)
{
	struct cf_engine *e = __atomic_load_n(&engine, __ATOMIC_ACQUIRE);

	lock_hold(e);
	return e;
}

/* Whether the engine still records, asked again under the lock: a thread that passed
 * recording() may have waited on the lock while exit flushed and stopped. */
static bool still_recording(const struct cf_engine *e)
{
	return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENGINE_RECORDING && cap_is_ready(e->cap);
}

static void lock_release(struct cf_engine *e)
{
	shim_inside_leave();
	cf_serial_leave();
	cf_unlock(&e->lock);
}

/* lock_drop in CUFOLD_MODE=replay: what replay left for after the lock goes. */
static void __attribute__((noinline)) lock_drop_replay(struct cf_engine *e)
{
	struct rpl_wait w;
	bool wait = rpl_take_wait(e->rpl, &w), build = rpl_build_take(e->rpl);

	lock_release(e);
	/* a template build replay scheduled: outside the lock, so other threads' calls go on
	 * while it rewrites, builds, instantiates and uploads; published under the lock again
	 * before this thread's own call goes on (the program sees the order it always did) */
	if (cf_unlikely(build)) {
		shim_inside_enter();
		rpl_build_run(e->rpl);
		shim_inside_leave();
		lock_hold(e);
		rpl_build_publish(e->rpl);
		lock_drop_replay(e); /* a wait (or the next build) it left */
	}
	/* a synchronization replay needed: never under the lock (a host function queued before
	 * the awaited work may wait for a thread blocked on it) */
	if (cf_unlikely(wait)) {
		shim_inside_enter();
		rpl_wait(&w);
		shim_inside_leave();
	}
}

static inline void lock_drop(struct cf_engine *e)
{
	if (e->rpl && rpl_due_at_drop(e->rpl))
		lock_drop_replay(e);
	else
		lock_release(e);
}

/* A driver call capture makes itself: counted like the program's calls, so every call the
 * driver receives through cufold is in cufold's per-symbol counts. */
static void note_own(enum drv_api_id id)
{
	int saved = shim__thread.inside;

	shim__thread.inside = 0;
	shim_note_call(id);
	shim__thread.inside = saved;
}

static CUcontext current_ctx(void);

/* Under the lock, once replay holds nothing deferred: the stream-ordered frees held behind
 * deferred work reach the driver, in the program's order, after that work (shim_engine_
 * free_async). A free of the legacy stream goes in the context it was called in. */
static void frees_issue(struct cf_engine *e)
{
	for (unsigned int i = 0; i < e->nheld; i++) {
		const struct shim_held_free *h = &e->held[i];
		CUcontext dummy;
		bool pushed = false;
		CUresult rc;

		if ((!h->stream || h->stream == CU_STREAM_LEGACY) && h->ctx && h->ctx != current_ctx()) {
			/* (a _ptsz free held here names its stream: no NULL, which is per-thread) */
			note_own(DRV_ID_cuCtxPushCurrent_v2);
			pushed = DRV_REAL(cuCtxPushCurrent_v2)(h->ctx) == CUDA_SUCCESS;
		}
		if (h->ptsz) /* the program's call, counted then */
			rc = DRV_REAL(cuMemFreeAsync_ptsz)(h->p, h->stream);
		else
			rc = DRV_REAL(cuMemFreeAsync)(h->p, h->stream);
		if (pushed) {
			note_own(DRV_ID_cuCtxPopCurrent_v2);
			DRV_REAL(cuCtxPopCurrent_v2)(&dummy);
		}
		if (rc != CUDA_SUCCESS)
			cf_log_warn_once("a stream-ordered free cufold held behind deferred work failed (%d) when "
					 "it reached the driver; the program was told it succeeded", (int)rc);
	}
	e->nheld = 0;
}

/* A boundary under the lock: replay submits what it deferred, then the window closes before
 * the call reaches the driver. */
static void close_window(struct cf_engine *e, enum cap_boundary kind, enum drv_api_id api)
{
	struct cap_shape *s;

	if (e->rpl)
		rpl_flush(e->rpl);
	if (e->nheld)
		frees_issue(e);
	s = cap_boundary(e->cap, kind, api);
	if (e->rpl)
		rpl_window_closed(e->rpl, s);
}

/* Under the lock: close the window when the call can observe its work (ends), else only count
 * the call (the report's calls seen vs windows closed). */
static void end_window_if(struct cf_engine *e, bool ends, enum cap_boundary kind, enum drv_api_id api)
{
	if (ends)
		close_window(e, kind, api);
	else
		cap_boundary_seen(e->cap, kind);
}

/* Fork: the window ends (FORK) and the lock is held across the fork, so no thread of the parent
 * is inside the engine when it is copied. These handlers are registered at the first recorded
 * op, after the driver registered its own (the driver is initialized by then): prepare
 * handlers run in reverse order of registration, so cufold's lock is taken before the
 * driver's and a thread that calls the driver while holding cufold's lock can always finish. */
static void atfork_prepare(void)
{
	struct cf_engine *e;

	prepared = NULL;
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != ENGINE_RECORDING)
		return;
	e = engine_lock();
	prepared = e;
	if (still_recording(e))
		close_window(e, CAP_BOUNDARY_FORK, DRV_API_COUNT);
}

static void atfork_parent(void)
{
	if (prepared)
		lock_drop(prepared);
	prepared = NULL;
}

static struct cf_engine *engine_create(void);

/* The engine's part of the process's one fork child handler (shim.c's atfork_child): the child
 * abandons the parent's engine (leaked: never walked, freed or unlocked, since another thread
 * of the parent may have been inside it, and its graphs and handles are the parent's) and
 * records into a new one. */
void shim_engine__atfork_child(void)
{
	struct cf_engine *e;

	pthread_mutex_init(&start_lock, NULL);
	cf_serial_forget();
	prepared = NULL;
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != ENGINE_RECORDING)
		return;
	shim__thread.inside = 0;
	is_child = true;
	shim__thread.ctx_ok = false;
	cf_tid_forget();
	e = engine_create();
	if (!e) {
		cf_log_err("out of memory starting capture in a forked child; cufold passes every call through");
		__atomic_store_n(&state, ENGINE_DONE, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&engine, e, __ATOMIC_RELEASE);
}

/* CUFOLD_STRICT: the program exits 0 but replay fell back for a failure of its own or a failed
 * guard: the status becomes 70 (EX_SOFTWARE), once the outputs are written and stdio flushed.
 * Called by whichever of strict_on_exit and engine_exit runs second: exit handlers registered
 * after the engine started run before the library destructors, those registered earlier (a
 * program that calls CUDA from a library constructor) after them. */
static void strict_exit(void)
{
	struct cf_engine *e = exited;
	uint64_t n;

	if (exit_status != 0 || !e || !e->exit_done || !e->rpl || !(n = rpl_strict_events(e->rpl)))
		return;
	cf_log_err("CUFOLD_STRICT=1: %llu failures of cufold's own or failed rewrite guards; the program exited "
		   "with status 0, the process exits with status 70", (unsigned long long)n);
	fflush(NULL);
	_exit(70);
}

static void strict_on_exit(int status, void *arg)
{
	(void)arg;
	exit_status = status;
	strict_exit();
}

static void shape_evicted(void *arg, struct cap_shape *s)
{
	rpl_shape_evicted(arg, s);
}

static void report_extra(void *arg, struct cf_json *j)
{
	rpl_write_report_json(arg, j);
}

/* A new engine as the configuration says (capture, and replay in CUFOLD_MODE=replay); NULL
 * when out of memory. */
static struct cf_engine *engine_create(void)
{
	const struct cf_config *cfg = cf_config_get();
	struct cf_engine *e = calloc(1, sizeof(*e));
	struct cap_config cc;

	if (!e)
		return NULL;
	cf_lock_init(&e->lock);
	memset(&cc, 0, sizeof(cc));
	cc.max_templates = cfg->max_templates;
	cc.barrier_kernels = cfg->barrier_kernels;
	cc.callsites = cfg->callsites;
	cc.trace_max_bytes = cfg->trace[0] ? TRACE_MAX_BYTES : 0;
	cc.mode_name = cf_mode_name(shim_mode());
	cc.note_driver_call = note_own;
	e->callsites = cfg->callsites;
	e->timestamps = cfg->trace[0] != 0;
	e->cap = cap_engine_create(&cc);
	if (!e->cap) {
		free(e);
		return NULL;
	}
	if (shim_mode() == CF_MODE_REPLAY) {
		struct rpl_config rc_ = {
			.warmup = cfg->warmup, .segment = cfg->segment, .min_ops = cfg->min_ops, .opt = cfg->opt,
			.gate = cfg->gate, .churn = cfg->churn, .strict = cfg->strict,
		};

		/* without replay the engine still records (as before: trace mode's outputs) */
		e->rpl = rpl_engine_create(e->cap, &rc_);
		e->lane = e->rpl && !e->callsites && !e->timestamps;
		if (e->rpl)
			cap_set_replay(e->cap, shape_evicted, report_extra, e->rpl);
	}
	return e;
}

static void start(void)
{
	const struct cf_config *cfg;
	struct cf_engine *e;
	int rc;

	rc = shim_init();
	if (rc == -CF_EBUSY)
		return; /* called from cufold's own initialization: decide on a later call */
	cfg = cf_config_get();
	shim_inside_enter();
	pthread_mutex_lock(&start_lock);
	if (__atomic_load_n(&state, __ATOMIC_RELAXED) != ENGINE_IDLE)
		goto out;
	if (rc != 0 || shim_mode() == CF_MODE_OFF) {
		__atomic_store_n(&state, ENGINE_DONE, __ATOMIC_RELEASE);
		goto out;
	}
	e = engine_create();
	if (!e) {
		cf_log_err("out of memory starting capture; cufold passes every call through");
		__atomic_store_n(&state, ENGINE_DONE, __ATOMIC_RELEASE);
		goto out;
	}
	if (e->rpl) {
		if (cfg->strict && !__atomic_exchange_n(&strict_registered, 1, __ATOMIC_RELAXED))
			on_exit(strict_on_exit, NULL);
		/* an unknown name in CUFOLD_RULES is reported now, not when a first plan is made */
		(void)rw_config_has_rules(&(struct rw_config){ .opt = cfg->opt, .rules = cfg->rules });
	}
	__atomic_store_n(&engine, e, __ATOMIC_RELEASE);
	__atomic_store_n(&state, ENGINE_RECORDING, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&start_lock);
	shim_inside_leave();
}

/* Whether to record; starts the engine on first use. */
static bool recording(void)
{
	int s = __atomic_load_n(&state, __ATOMIC_ACQUIRE);

	if (cf_likely(s == ENGINE_RECORDING))
		return true;
	if (s == ENGINE_DONE)
		return false;
	start();
	return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENGINE_RECORDING;
}

/* current_ctx when the thread's context is not known: asked of the driver. */
static __attribute__((noinline)) CUcontext current_ctx_ask(void)
{
	CUcontext c = NULL;

	note_own(DRV_ID_cuCtxGetCurrent);
	if (DRV_REAL(cuCtxGetCurrent)(&c) != CUDA_SUCCESS)
		c = NULL;
	shim__thread.ctx = c;
	shim__thread.ctx_ok = true;
	return c;
}

/* The calling thread's current context (asked of the driver once after each change). Under
 * the lock. */
static inline CUcontext current_ctx(void)
{
	return cf_likely(shim__thread.ctx_ok) ? shim__thread.ctx : current_ctx_ask();
}

/* Whether the stream an op names is being captured by the program (asked only while some
 * capture is in progress). An error answer counts as capturing: leave the call alone. */
static bool stream_capturing(const struct cap_call *c)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	CUresult rc;

	if (drv_api[c->api].pt != DRV_PT_NONE) {
		note_own(DRV_ID_cuStreamIsCapturing_ptsz);
		rc = DRV_REAL(cuStreamIsCapturing_ptsz)(c->stream, &st);
	} else {
		note_own(DRV_ID_cuStreamIsCapturing);
		rc = DRV_REAL(cuStreamIsCapturing)(c->stream, &st);
	}
	return rc != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* ------------------------------------------------------------------ stream work */

/* Replay's part of a recorded call (under the lock). Returns true when replay kept the call:
 * the hook answers *rc without calling the driver. */
static bool replay_op(struct cf_engine *e, struct shim_tok *t, CUresult *rc)
{
	const struct cap_op *op = t->rec.op; /* capture's answer: nothing is asked of it again */
	enum rpl_verdict v = RPL_EAGER;

	/* While the program captures a stream, nothing is kept: a wait on an event recorded in a
	 * capture makes its stream join the capture, which the driver must see now (queries of
	 * capture state do not flush); every call is a boundary for replay until it ends. */
	if (op && __atomic_load_n(&e->captures, __ATOMIC_ACQUIRE) == 0)
		v = rpl_op(e->rpl, op, &t->rec);
	else
		rpl_flush(e->rpl); /* not recorded (barrier, opaque, no memory), or a capture is open */
	if (t->rec.closed || !op)
		rpl_window_closed(e->rpl, t->rec.closed);
	if (v != RPL_DEFER)
		return false;
	cap_op_done(e->cap, &t->rec, false);
	t->active = false;
	*rc = CUDA_SUCCESS;
	return true;
}

/* An op on a stream the program is capturing: it passes through unrecorded (cold). */
static void __attribute__((noinline)) op_capturing(struct cf_engine *e, const struct cap_call *c)
{
	lock_hold(e);
	if (still_recording(e)) {
		if (e->rpl)
			rpl_flush(e->rpl); /* nothing is kept while a capture is open; never kept behind it */
		cap_note_passthrough(e->cap, (enum drv_api_id)c->api);
	}
	lock_drop(e);
}

/* Replay's part of op_begin under the lock, after capture recorded the call: false when the
 * engine answered the call itself (*rc). */
static inline bool op_replay(struct cf_engine *e, struct shim_tok *t, CUcontext ctx,
						 CUresult *rc)
{
	if (replay_op(e, t, rc))
		return false;
	/* a blocking copy observes the device: it returns what a deferred op left behind */
	if (cf_unlikely(t->rec.ends_window && rpl_error_pending(e->rpl)))
		t->err = rpl_error_take(e->rpl, ctx, false);
	return true;
}

/* shim_note_call once the engine records (initialization finished in a mode other than off)
 * for an entry point's id: the count and the signals' poll, inline. Only from op_begin, whose
 * hooks call it only outside cufold (shim_is_inside, asserted). */
static inline void note_call_recording(enum drv_api_id id)
{
	cf_assert(!shim__thread.inside);
	__atomic_fetch_add(&shim__counts[id], 1, __ATOMIC_RELAXED);
	shim_signals_check(); /* a periodic report due, or a forked child to re-arm */
}

/* One op in OP_TIMED_EVERY of each thread's is timed whole (tick 0), and one other is a sample of
 * the armed lane's matching (LANE_SAMPLE_TICK). 1 in 16 cost recsys 8.6 instructions an op (the
 * clock reads and the samples' books), 1 in 32 half that; thousands of ops a step leave the
 * means as steady (issue 22). */
#define OP_TIMED_EVERY 32u
#define LANE_SAMPLE_TICK (OP_TIMED_EVERY / 2)

/* A thread's op at tick 0 of its OP_TIMED_EVERY (cold): the first recorded op of the process
 * registers the fork handlers (atfork_prepare says why then: a thread's first op is at tick 0,
 * so the process's first is too), and in replay the op is timed whole: the clock at its start
 * (never 0), else 0. */
static __attribute__((noinline)) uint64_t op_first_of_period(struct cf_engine *e)
{
	uint64_t t0;

	if (cf_unlikely(!__atomic_load_n(&atfork_prepare_done, __ATOMIC_RELAXED)) &&
	    !__atomic_exchange_n(&atfork_prepare_done, 1, __ATOMIC_RELAXED))
		pthread_atfork(atfork_prepare, atfork_parent, NULL);
	if (!e->rpl)
		return 0;
	t0 = rpl_own_clock();
	return t0 ? t0 : 1;
}

/* A timed call's end (cold), timed from t0: whole (tick 0, rpl_own_time's clock), or, a call the
 * armed lane took, its matching (LANE_SAMPLE_TICK, the monotonic clock). */
static __attribute__((noinline)) void op_timed(struct cf_engine *e, uint32_t tick, uint64_t t0)
{
	if (tick == 0)
		rpl_own_time(e->rpl, rpl_own_clock() - t0);
	else
		rpl_lane_sampled(e->rpl, cf_now_ns() - t0);
}

bool shim_engine_op_begin(const struct cap_call *c, struct shim_tok *t, CUresult *rc)
{
	struct cf_engine *e;
	struct cap_who who;
	bool go_on = true;
	uint64_t t0 = 0;
	uint32_t tick;

	/* an entry point's own id (the hooks: DRV_ID_<symbol>) */
	cf_assert(c->api < DRV_API_COUNT);
	if (cf_likely(__atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENGINE_RECORDING)) {
		note_call_recording((enum drv_api_id)c->api);
	} else {
		shim_note_call((enum drv_api_id)c->api);
		if (!recording()) {
			t->active = false;
			return true;
		}
	}
	e = engine_get();
	if (cf_unlikely(__atomic_load_n(&e->captures, __ATOMIC_ACQUIRE) > 0) && stream_capturing(c)) {
		op_capturing(e, c);
		t->active = false;
		return true;
	}
	who.tid = cf_tid();
	if (cf_unlikely(!e->lane)) { /* (with e->lane neither is kept: set where capture records) */
		who.callsite = cf_unlikely(e->callsites) ? cap_callsite_capture(e->cap) : 0;
		who.t_ns = cf_unlikely(e->timestamps) ? cf_now_ns() : 0; /* only the trace reads it */
	}
	/* one op in OP_TIMED_EVERY of each thread is timed whole: cufold's own time on it, lock
	 * wait included (replay/replay.h, rpl_own_time); t0 != 0 says this one is */
	tick = shim__thread.ops++ & (OP_TIMED_EVERY - 1);
	if (cf_unlikely(tick == 0))
		t0 = op_first_of_period(e);
	lock_hold_op(e);
	/* the armed lane first: the op after one replay followed, recorded and deferred at once.
	 * Taking the arm disarms it either way (replay.h); e->lane: replay runs, and ops carry no
	 * call site or time stamp (rpl__lane_arm never arms otherwise). Armed, the engine still
	 * records: it stops only under the lock (stop_and_write), which disarms it, as the begin of
	 * a capture does (shim_engine_capture_done), and replay arms nothing while one is open
	 * (replay_op): armed, no capture is. */
	if (e->lane) {
		if (rpl_lane_take_arm(e->rpl, who.tid)) {
			enum rpl_lane_took took;

			/* armed: no capture is open and no deferred op's error is pending (replay
			 * arms nothing then, and noting an error disarms) */
			cf_assert(still_recording(e) && __atomic_load_n(&e->captures, __ATOMIC_ACQUIRE) == 0 &&
				  !rpl_error_pending(e->rpl));
			/* one call in OP_TIMED_EVERY of the thread's, never one timed whole, times the
			 * lane's matching (rpl_lane_sampled); t0 then holds its start */
			if (cf_unlikely(tick == LANE_SAMPLE_TICK))
				t0 = cf_now_ns();
			took = rpl_lane(e->rpl, c, current_ctx());
			if (cf_likely(took == RPL_LANE_TOOK)) {
				/* nothing is due at the drop: only a segment's end schedules (replay.h) */
				cf_assert(!rpl_due_at_drop(e->rpl));
				if (cf_unlikely(t0))
					op_timed(e, tick, t0);
				lock_release(e);
				*rc = CUDA_SUCCESS;
				return false;
			}
			if (tick == LANE_SAMPLE_TICK)
				t0 = 0; /* (not a sample of the lane's) */
			if (took == RPL_LANE_TOOK_END) {
				*rc = CUDA_SUCCESS;
				go_on = false;
				goto out;
			}
		}
		who.callsite = 0; /* with e->lane neither is kept (the lane reads neither) */
		who.t_ns = 0;
	} else if (e->rpl) {
		rpl_lane_disarm(e->rpl); /* (with e->lane, rpl_lane_take_arm disarmed it) */
	}
	t->active = false;
	t->err = CUDA_SUCCESS;
	if (cf_likely(still_recording(e))) {
		who.ctx = current_ctx();
		if (cf_unlikely(e->rpl && rpl_error_pending(e->rpl))) {
			/* a deferred op left this context unusable: the driver would refuse this too */
			*rc = rpl_error_take(e->rpl, who.ctx, true);
			if (*rc != CUDA_SUCCESS) {
				go_on = false;
				goto out;
			}
		}
		cap_record(e->cap, c, &who, &t->rec);
		t->e = e;
		t->active = true;
		if (e->rpl)
			go_on = op_replay(e, t, who.ctx, rc);
		if (cf_unlikely(e->nheld) && !(e->rpl && rpl_has_deferred(e->rpl)))
			frees_issue(e); /* the work before them was submitted: they follow it */
	}
out:
	if (cf_unlikely(t0))
		op_timed(e, tick, t0); /* (tick 0: a lane sample's tick not the lane's was let go) */
	lock_drop(e);
	return go_on;
}

/* An op the driver refused: capture drops it from its window, replay is told (cold). */
static void __attribute__((noinline)) op_refused(struct cf_engine *e, struct shim_tok *t)
{
	lock_hold(e);
	cap_op_done(e->cap, &t->rec, true);
	if (e->rpl && still_recording(e))
		rpl_op_failed(e->rpl);
	lock_drop(e);
}

CUresult shim_engine_op_end(struct shim_tok *t, CUresult rc)
{
	if (!t->active)
		return rc;
	if (cf_likely(rc == CUDA_SUCCESS)) {
		cap_op_done(t->e->cap, &t->rec, false);
		return t->err;
	}
	op_refused(t->e, t);
	return rc;
}

/* ------------------------------------------------------------------ other calls */

/* A query of capture state in CUFOLD_MODE=replay: what replay keeps reaches the driver first. */
static void __attribute__((noinline)) flush_for_query(void)
{
	struct cf_engine *e = engine_lock();

	if (still_recording(e) && rpl_has_deferred(e->rpl))
		rpl_flush(e->rpl);
	lock_drop(e);
}

void shim_engine_neutral(enum drv_api_id api)
{
	shim_note_call(api);
	/* the capture state of a stream depends on the waits it was given: kept ones must reach
	 * the driver first. Only while a capture is open: with none, no kept call can join a
	 * stream to one (beginning a capture is a boundary that submits what is kept), and
	 * frameworks ask before every launch (CuPy), where a flush would end replay's window */
	if (drv_api_is(api, DRV_API_CAPTURE_QUERY) && __atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENGINE_RECORDING &&
	    engine_get()->rpl && __atomic_load_n(&engine_get()->captures, __ATOMIC_ACQUIRE) > 0)
		flush_for_query();
}

void shim_engine_observe(enum cap_boundary kind, enum drv_api_id api, struct cap_target *t, struct shim_obs *o)
{
	struct cf_engine *e;

	o->answered = false;
	o->err = CUDA_SUCCESS;
	shim_note_call(api);
	if (!recording())
		return;
	e = engine_lock();
	if (!still_recording(e))
		goto out;
	t->ctx = current_ctx();
	t->tid = cf_tid();
	if (kind == CAP_BOUNDARY_SYNC) {
		end_window_if(e, cap_window_observed(e->cap, t, 0), kind, api);
	} else {
		uint32_t first;

		/* a query never ends the window: background threads poll (watchdogs, allocators) at
		 * moments no step repeats; deferred work it asks about is truly not complete yet */
		cap_boundary_seen(e->cap, kind);
		if (e->rpl && rpl_deferred_from(e->rpl, &first) && cap_window_observed(e->cap, t, first) &&
		    rpl_poll(e->rpl, t->tid)) {
			o->answered = true;
			o->answer = CUDA_ERROR_NOT_READY;
		}
	}
	if (e->rpl && rpl_error_pending(e->rpl)) {
		o->err = rpl_error_take(e->rpl, t->ctx, false);
		if (o->err != CUDA_SUCCESS && o->answered)
			o->answer = o->err;
	}
out:
	lock_drop(e);
}

CUresult shim_engine_observed(const struct shim_obs *o, CUresult rc)
{
	/* the deferred op's error is what the program would have met first */
	if (o->err != CUDA_SUCCESS && (rc == CUDA_SUCCESS || rc == CUDA_ERROR_NOT_READY))
		return o->err;
	return rc;
}

static void boundary_locked(enum cap_boundary kind, enum drv_api_id api)
{
	struct cf_engine *e = engine_lock();

	if (still_recording(e))
		close_window(e, kind, api);
	lock_drop(e);
}

void shim_engine_boundary(enum cap_boundary kind, enum drv_api_id api)
{
	shim_note_call(api);
	shim__thread.ctx_ok = false; /* cheap insurance: a call we do not model may switch contexts */
	if (recording())
		boundary_locked(kind, api);
}

void shim_engine_unmodeled(enum drv_api_id api)
{
	struct cf_engine *e;

	if (shim_is_inside())
		return;
	shim__thread.ctx_ok = false;
	if (recording())
		boundary_locked(CAP_BOUNDARY_UNMODELED, api);
	if (drv_api_is(api, DRV_API_DESTROYS_PRIMARY) && recording() && engine_get()->rpl) {
		/* which context is not passed here: every template retires and every context's
		 * batch module is forgotten (rare calls; a live context just loads it again) */
		e = engine_lock();
		if (still_recording(e))
			rpl_context_destroyed(e->rpl, NULL);
		lock_drop(e);
		rpl_context_gone(e->rpl, NULL);
	}
}

void shim_engine_alloc(enum drv_api_id api, uint64_t base, uint64_t size, enum cap_alloc_kind kind)
{
	struct cf_engine *e;

	(void)api;
	if (!recording() || !size)
		return;
	e = engine_lock();
	if (still_recording(e) && cap_alloc_add(e->cap, base, size, kind) != 0)
		cf_log_warn_once("out of memory growing the allocation map; some pointers will not resolve");
	lock_drop(e);
}

void shim_engine_free_begin(enum drv_api_id api, uint64_t base, struct shim_free_tok *t)
{
	struct cf_engine *e;

	t->removed = false;
	shim_note_call(api);
	if (!recording())
		return;
	e = engine_lock();
	if (still_recording(e)) {
		const struct cap_alloc *a = base ? cap_alloc_find(e->cap, base) : NULL;

		/* memory cufold never saw allocated may be anything the window uses */
		end_window_if(e, !a || a->base != base || cap_window_references(e->cap, a->base, a->size),
			      CAP_BOUNDARY_FREE, api);
		t->removed = base && cap_alloc_remove(e->cap, base, &t->alloc) == 0;
		if (e->rpl && t->removed)
			rpl_memory_released(e->rpl, t->alloc.base, t->alloc.size);
	}
	lock_drop(e);
}

bool shim_engine_free_async(enum drv_api_id api, uint64_t base, CUstream s, struct shim_free_tok *t)
{
	struct cf_engine *e;
	bool held = false;

	t->removed = false;
	shim_note_call(api);
	if (!recording())
		return false;
	e = engine_lock();
	if (still_recording(e)) {
		const struct cap_alloc *a = base ? cap_alloc_find(e->cap, base) : NULL;
		bool known = a && a->base == base && a->kind == CAP_ALLOC_ASYNC;
		bool per_thread = s == CU_STREAM_PER_THREAD || (!s && api == DRV_ID_cuMemFreeAsync_ptsz);

		/* stream work after the stream's earlier work, which may read the range: the window
		 * goes on. Memory cufold never saw come from a pool may be anything: a boundary. */
		end_window_if(e, !known && (!a || a->base != base || cap_window_references(e->cap, a->base, a->size)),
			      CAP_BOUNDARY_FREE, api);
		t->removed = base && cap_alloc_remove(e->cap, base, &t->alloc) == 0;
		if (e->rpl && t->removed)
			rpl_memory_released(e->rpl, t->alloc.base, t->alloc.size);
		if (known && e->rpl && rpl_has_deferred(e->rpl)) {
			/* the deferred work may read the range: the free follows it to the driver.
			 * Known pool memory only, whose free the driver takes (so its answer now is
			 * the driver's). A per-thread default stream can only be named by its own
			 * thread: that free goes now, after everything deferred. */
			if (per_thread || e->nheld == SHIM_HELD_FREES) {
				rpl_flush(e->rpl);
				frees_issue(e);
			} else {
				e->held[e->nheld++] = (struct shim_held_free){
					base, s, current_ctx(), api == DRV_ID_cuMemFreeAsync_ptsz
				};
				held = true;
				t->removed = false; /* it stays out of the map: the program freed it */
			}
		} else if (e->nheld) {
			frees_issue(e); /* nothing deferred: earlier held frees go first */
		}
	}
	lock_drop(e);
	return held;
}

bool shim_engine_frees_release(void)
{
	struct cf_engine *e;
	bool any = false;

	if (!recording())
		return false; /* under the lock only: an allocation failing is rare */
	e = engine_lock();
	if (still_recording(e) && e->nheld) {
		if (e->rpl)
			rpl_flush(e->rpl);
		frees_issue(e);
		any = true;
	}
	lock_drop(e);
	return any;
}

void shim_engine_free_end(struct shim_free_tok *t, CUresult rc)
{
	struct cf_engine *e;

	if (!t->removed || rc == CUDA_SUCCESS)
		return;
	e = engine_lock();
	if (still_recording(e))
		cap_alloc_restore(e->cap, &t->alloc);
	lock_drop(e);
}

void shim_engine_unmap(enum drv_api_id api, uint64_t base, uint64_t size)
{
	struct cf_engine *e;

	shim_note_call(api);
	if (!recording())
		return;
	e = engine_lock();
	if (still_recording(e)) {
		end_window_if(e, cap_window_references(e->cap, base, size), CAP_BOUNDARY_FREE, api);
		cap_alloc_remove_range(e->cap, base, size);
		if (e->rpl)
			rpl_memory_released(e->rpl, base, size);
	}
	lock_drop(e);
}

void shim_engine_stream_created(CUstream s, unsigned int flags)
{
	struct cf_engine *e;

	if (!recording())
		return;
	e = engine_lock();
	if (still_recording(e))
		cap_stream_created(e->cap, s, flags);
	lock_drop(e);
}

void shim_engine_stream_destroy(enum drv_api_id api, CUstream s)
{
	struct cf_engine *e;

	shim_note_call(api);
	if (!recording())
		return;
	e = engine_lock();
	if (still_recording(e)) {
		close_window(e, CAP_BOUNDARY_DESTROY, api);
		cap_stream_forget(e->cap, s);
	}
	lock_drop(e);
}

bool shim_engine_event_destroy(enum drv_api_id api, CUevent ev)
{
	struct cf_engine *e;
	bool later = false;

	shim_note_call(api);
	if (!recording())
		return false;
	e = engine_lock();
	if (still_recording(e)) {
		/* an event is a binding (a per-step event: created, recorded, queried and destroyed
		 * every step): its destroy ends no window; while deferred ops name it, replay makes
		 * the destroy after them, as the driver completes a destroyed event's record */
		cap_boundary_seen(e->cap, CAP_BOUNDARY_DESTROY);
		cap_event_forget(e->cap, ev);
		if (e->rpl) {
			later = rpl_event_destroy_later(e->rpl, ev);
			rpl_event_destroyed(e->rpl, ev);
		}
	}
	lock_drop(e);
	return later;
}

void shim_engine_capture_begin(enum drv_api_id api)
{
	shim_engine_boundary(CAP_BOUNDARY_CAPTURE, api);
}

void shim_engine_capture_done(bool begin, CUresult rc)
{
	struct cf_engine *e = engine_get();

	if (!e)
		return; /* cufold never started (mode off, no driver): nothing is recorded */
	if (begin) {
		if (rc == CUDA_SUCCESS) {
			/* under the lock, which disarms replay's lane: armed, no capture is open (op_begin
			 * does not ask; replay arms nothing while one is, replay_op) */
			lock_hold(e);
			__atomic_fetch_add(&e->captures, 1, __ATOMIC_ACQ_REL);
			lock_release(e);
		}
		return;
	}
	/* the capture ended (a graph, or an invalidated capture that the call still ends); any
	 * other error leaves it running, and a count too high only costs queries */
	if (rc == CUDA_SUCCESS || rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
		int n = __atomic_load_n(&e->captures, __ATOMIC_ACQUIRE);

		while (n > 0 && !__atomic_compare_exchange_n(&e->captures, &n, n - 1, false, __ATOMIC_ACQ_REL,
							     __ATOMIC_ACQUIRE))
			;
	}
}

void shim_engine_ctx_set(enum drv_api_id api, CUcontext target)
{
	struct cf_engine *e;
	bool change;

	shim_note_call(api);
	if (!recording())
		return;
	e = engine_lock();
	change = current_ctx() != target || !target;
	if (still_recording(e)) {
		/* only a thread that made ops of the open window can change what they run in (a
		 * watchdog or allocator thread binding its context at start is no boundary) */
		end_window_if(e, change && cap_window_has_thread(e->cap, cf_tid()), CAP_BOUNDARY_CONTEXT, api);
	}
	lock_drop(e);
}

void shim_engine_ctx_switch(enum drv_api_id api)
{
	struct cf_engine *e;

	shim__thread.ctx_ok = false;
	if (api != DRV_ID_cuCtxDestroy_v2) {
		/* push and pop: as cuCtxSetCurrent, a boundary for a thread with ops in the window */
		shim_note_call(api);
		if (recording()) {
			e = engine_lock();
			if (still_recording(e))
				end_window_if(e, cap_window_has_thread(e->cap, cf_tid()), CAP_BOUNDARY_CONTEXT, api);
			lock_drop(e);
		}
		return;
	}
	shim_engine_boundary(CAP_BOUNDARY_CONTEXT, api);
	if (recording() && engine_get()->rpl) {
		/* which context is not passed here: every template retires (destroys are rare) */
		e = engine_lock();
		if (still_recording(e))
			rpl_context_destroyed(e->rpl, NULL);
		lock_drop(e);
	}
}

void shim_engine_ctx_destroyed(CUcontext ctx)
{
	struct cf_engine *e = engine_get();

	/* a new context may get the handle back: it must load cufold's kernels anew. The cache is
	 * the engine's replay part's: none before the engine starts, and none is used once it is
	 * done (nothing replays after exit; a child forked then keeps the parent's engine, whose
	 * cache lock another thread of the parent may have held) */
	if (e && __atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENGINE_RECORDING)
		rpl_context_gone(e->rpl, ctx);
}

void shim_engine_ctx_done(CUresult rc, bool known, CUcontext now)
{
	if (rc == CUDA_SUCCESS && known) {
		shim__thread.ctx = now;
		shim__thread.ctx_ok = true;
	} else {
		shim__thread.ctx_ok = false;
	}
}

void shim_engine_module_unload(enum drv_api_id api)
{
	struct cf_engine *e;

	shim_note_call(api);
	if (!recording())
		return;
	e = engine_lock();
	if (still_recording(e)) {
		/* the window ends only when one of its ops runs a function of the module (a framework
		 * unloads kernels it is done with in the middle of a step) */
		end_window_if(e, cap_window_uses_unloading(e->cap), CAP_BOUNDARY_MODULE_UNLOAD, api);
		cap_funcs_forget(e->cap);
		if (e->rpl)
			rpl_functions_unloaded(e->rpl);
	}
	lock_drop(e);
}

void shim_engine_kernels(enum drv_api_id api, const CUkernel *k, unsigned int n, bool count_call, CUlibrary lib)
{
	struct cf_engine *e;

	if (count_call)
		shim_note_call(api);
	if (!k || !n || !recording())
		return;
	/* the CUDA runtime asks for a kernel's handle again before launches (PyTorch: 4 a launch):
	 * a handle learned again changes nothing replay's armed lane relies on (function lookups,
	 * lane.c), so it stays armed unless one was new */
	e = engine_get();
	lock_hold_op(e);
	if (still_recording(e)) {
		bool changed = false;

		for (unsigned int i = 0; i < n; i++) {
			changed |= cap_kernel_handle_add(e->cap, k[i]);
			cap_image_link(e->cap, CAP_LINK_LIBRARY_KERNEL, k[i], lib);
		}
		if (changed && e->rpl)
			rpl_lane_disarm(e->rpl);
		else if (e->rpl)
			rpl_lane_settle_pending(e->rpl); /* what the lane took is stored: nothing here
							  * reads it, but every other entry sees it settled */
	}
	lock_drop(e);
}

void shim_engine_image_loaded(bool library, const void *handle, const void *image, const char *path)
{
	struct cf_engine *e;

	if (!handle || !recording())
		return;
	/* Decoded under the lock (it asks the driver the device's compute capability once, as
	 * capture's own call): a load is rare, and zstd-decoding one module's PTX takes
	 * microseconds to a millisecond. */
	e = engine_lock();
	if (still_recording(e))
		cap_image_loaded(e->cap, library, handle, image, path);
	lock_drop(e);
}

void shim_engine_link_input(CUlinkState link, CUjitInputType type, const void *data, size_t size, const char *path)
{
	struct cf_engine *e;

	if (!link || !recording())
		return;
	e = engine_lock();
	if (still_recording(e))
		cap_link_input(e->cap, link, type, data, size, path);
	lock_drop(e);
}

void shim_engine_link_complete(CUlinkState link, const void *out)
{
	struct cf_engine *e;

	if (!link || !recording())
		return;
	e = engine_lock();
	if (still_recording(e))
		cap_link_complete(e->cap, link, out);
	lock_drop(e);
}

void shim_engine_link_destroy(CUlinkState link)
{
	struct cf_engine *e;

	if (!link || !recording())
		return;
	e = engine_lock();
	if (still_recording(e))
		cap_link_destroy(e->cap, link);
	lock_drop(e);
}

void shim_engine_image_link(enum cap_image_link kind, const void *handle, const void *from)
{
	struct cf_engine *e;

	if (!handle || !from || !recording())
		return;
	e = engine_lock();
	if (still_recording(e))
		cap_image_link(e->cap, kind, handle, from);
	lock_drop(e);
}

bool shim_engine_totals(struct cap_totals *t)
{
	struct cf_engine *e;
	bool ok = false;

	if (!engine_get())
		return false;
	e = engine_lock();
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENGINE_RECORDING && cap_is_ready(e->cap)) {
		cap_get_totals(e->cap, t);
		ok = true;
	}
	lock_drop(e);
	return ok;
}

/* ------------------------------------------------------------------ exit */

/* Write one output; a path that cannot be written is reported once and the program goes on. */
static void write_output(struct cf_engine *e, const char *var, const char *path,
			 int (*writer)(struct cap_engine *ce, const char *path))
{
	const char *why;
	int rc;

	if (!path[0])
		return;
	if (is_child && !cf_path_has_pid(path))
		return; /* the parent writes this path: a forked child would overwrite it */
	errno = 0;
	rc = writer(e->cap, path);
	if (rc == 0)
		return;
	switch (errno) {
	case ELOOP:
		why = "it is a symbolic link, which cufold never follows";
		break;
	case EEXIST:
		why = "a file is there that is not cufold's own output; it is left alone";
		break;
	case EINVAL:
		why = "it is not a regular file";
		break;
	default:
		why = errno ? strerror(errno) : cf_strerror(rc);
		break;
	}
	cf_log_warn("%s=%s: cannot write it (%s); nothing written there (a file already there is left as it was), "
		    "the program is not affected", var, path, why);
}

/* Under the lock, at exit or when a signal stops the program: the last window closes, replay
 * stops and the outputs are written. Calls made after this point (other threads, later
 * destructors) pass through: the state is asked again under the lock, and replay keeps nothing
 * any more. */
static void stop_and_write(struct cf_engine *e, const struct cf_config *cfg)
{
	close_window(e, CAP_BOUNDARY_EXIT, DRV_API_COUNT);
	if (e->rpl)
		rpl_stop(e->rpl);
	__atomic_store_n(&state, ENGINE_DONE, __ATOMIC_RELEASE);
	if (!cfg->secure) {
		write_output(e, "CUFOLD_REPORT", cfg->report, cap_write_report);
		write_output(e, "CUFOLD_TRACE", cfg->trace, cap_write_trace);
		write_output(e, "CUFOLD_DOT", cfg->dot, cap_write_dot);
	}
}

__attribute__((destructor)) static void engine_exit(void)
{
	struct cf_engine *e;
	const struct cf_config *cfg;
	char summary[1024];

	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != ENGINE_RECORDING)
		return;
	cfg = cf_config_get();
	e = engine_lock();
	if (!cap_is_ready(e->cap))
		goto out;
	stop_and_write(e, cfg);
	if (cf_log_enabled(CF_LOG_INFO)) {
		cap_summary(e->cap, summary, sizeof(summary));
		cf_log_info("%s", summary);
	}
	if (e->rpl && cf_log_enabled(CF_LOG_INFO)) {
		struct rpl_totals rt;

		rpl_get_totals(e->rpl, &rt);
		cf_log_info("replay: %llu templates (%llu segments), %llu graph launches carried %llu ops, %llu nodes "
			    "patched, %llu deferred ops submitted eagerly, %llu retired, matching %.0f ns per op%s",
			    (unsigned long long)rt.templates, (unsigned long long)rt.segments,
			    (unsigned long long)rt.graph_launches, (unsigned long long)rt.ops_replayed,
			    (unsigned long long)rt.patches, (unsigned long long)rt.ops_flushed,
			    (unsigned long long)rt.retired, rpl_host_ns_per_op(e->rpl),
			    rt.failed ? "; a failure sent a context to passthrough" : "");
	}
	e->exit_done = true;
	exited = e;
out:
	lock_drop(e);
	if (e->exit_done && strict_registered)
		strict_exit(); /* _exit, not under the lock: no destructor after this one runs */
}

/* ------------------------------------------------------------------ outputs while running */

int shim_engine_write_outputs(bool final)
{
	const struct cf_config *cfg = cf_config_get();
	struct cf_engine *e;

	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != ENGINE_RECORDING)
		return 0;
	e = engine_get();
	if (!final) {
		if (!cf_trylock(&e->lock))
			return -CF_EBUSY; /* another call holds it, perhaps this thread's own caller */
	} else {
		if (!cf_lock_within(&e->lock, 2000)) {
			cf_log_warn("stopped by a signal: the engine's lock stayed taken for 2 s; the outputs are not "
				    "written");
			return -CF_ESTATE;
		}
	}
	if (e->rpl)
		rpl_lane_disarm(e->rpl);
	cf_serial_enter();
	shim_inside_enter();
	if (!still_recording(e) || cfg->secure)
		goto out;
	if (!final) {
		write_output(e, "CUFOLD_REPORT", cfg->report, cap_write_report);
		goto out;
	}
	stop_and_write(e, cfg);
out:
	lock_drop(e);
	return 0;
}
