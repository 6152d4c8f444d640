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
#include "common/config.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/serial.h"
#include "replay/replay.h"
#include "rewrite/rewriter.h"

enum engine_state {
	ENGINE_IDLE = 0,      /* not started */
	ENGINE_RECORDING = 1, /* capture is on */
	ENGINE_DONE = 2,      /* passing through: mode off, no driver, out of memory, or after exit */
};

#define TRACE_MAX_BYTES (64u << 20) /* CUFOLD_TRACE keeps at most this much of event text */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* orders all recording */
static int state;                /* enum engine_state (acquire/release) */
static int captures;             /* program stream captures in progress (atomic) */
static bool callsites;           /* CUFOLD_CALLSITES */
static bool timestamps;            /* CUFOLD_TRACE is on: ops carry the time of the call */
static bool is_child;            /* a forked child (outputs only with %p in the path) */
static int atfork_child_done;    /* the child handler is registered */
static int atfork_prepare_done;  /* the prepare and parent handlers are registered */
static bool prepared;            /* atfork_prepare took the lock for this fork */
static bool replaying;           /* CUFOLD_MODE=replay and replay started: calls may be deferred */

static int strict_registered;    /* strict_on_exit is registered (CUFOLD_STRICT=1) */
static int exit_status = -1;     /* the status the program passed to exit (on_exit), or -1 */
static bool exit_done;           /* engine_exit has flushed and written the outputs */

static __thread CUcontext tls_ctx;  /* the thread's current context, when tls_ctx_ok */
static __thread bool tls_ctx_ok;    /* tls_ctx is known */

static void lock_take(void)
{
	pthread_mutex_lock(&lock);
	cf_serial_enter(); /* debug builds: capture checks it is called under it (common/serial.h) */
	shim_inside_enter(); /* nothing cufold calls from here may land in a hook again */
}

/* Whether the engine still records, asked again under the lock: a thread that passed
 * recording() may have waited on the lock while exit flushed and stopped. */
static bool still_recording(void)
{
	return __atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENGINE_RECORDING && cap_is_ready();
}

static void lock_drop(void)
{
	struct rpl_wait w;
	bool wait = replaying && rpl_take_wait(&w);

	shim_inside_leave();
	cf_serial_leave();
	pthread_mutex_unlock(&lock);
	/* a synchronization replay needed: never under the lock (a host function queued before
	 * the awaited work may wait for a thread blocked on it) */
	if (cf_unlikely(wait)) {
		shim_inside_enter();
		rpl_wait(&w);
		shim_inside_leave();
	}
}

/* A driver call capture makes itself: counted like the program's calls, so every call the
 * driver receives through cufold is in cufold's per-symbol counts. */
static void note_own(enum shim_api_id id)
{
	int saved = shim__inside;

	shim__inside = 0;
	shim_note_call(id);
	shim__inside = saved;
}

/* A boundary under the lock: replay submits what it deferred, then the window closes before
 * the call reaches the driver. */
static void close_window(enum cap_boundary kind, enum shim_api_id api)
{
	struct cap_shape *s;

	if (replaying)
		rpl_flush();
	s = cap_boundary(kind, api);
	if (replaying)
		rpl_window_closed(s);
}

/* Under the lock: close the window when the call can observe its work (ends), else only count
 * the call (the report's calls seen vs windows closed). */
static void end_window_if(bool ends, enum cap_boundary kind, enum shim_api_id api)
{
	if (ends)
		close_window(kind, api);
	else
		cap_boundary_seen(kind);
}

/* Fork: the window ends (FORK) and the lock is held across the fork, so the child's copy of
 * the state is consistent. These handlers are registered at the first recorded op, after the
 * driver registered its own (the driver is initialized by then): prepare handlers run in
 * reverse order of registration, so cufold's lock is taken before the driver's and a thread
 * that calls the driver while holding cufold's lock can always finish. */
static void atfork_prepare(void)
{
	prepared = false;
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != ENGINE_RECORDING)
		return;
	lock_take();
	prepared = true;
	if (still_recording())
		close_window(CAP_BOUNDARY_FORK, SHIM_API_COUNT);
}

static void atfork_parent(void)
{
	if (prepared)
		lock_drop();
	prepared = false;
}

static void atfork_child(void)
{
	pthread_mutex_init(&lock, NULL);
	cf_serial_forget();
	prepared = false;
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != ENGINE_RECORDING)
		return;
	shim__inside = 0;
	cap_atfork_child();
	if (replaying)
		rpl_atfork_child();
	__atomic_store_n(&captures, 0, __ATOMIC_RELAXED);
	is_child = true;
	tls_ctx_ok = false;
	cf_tid_forget();
}

/* CUFOLD_STRICT: the program exits 0 but replay fell back for a failure of its own or a failed
 * guard: the status becomes 70 (EX_SOFTWARE), once the outputs are written and stdio flushed.
 * Called by whichever of strict_on_exit and engine_exit runs second: exit handlers registered
 * after the engine started run before the library destructors, those registered earlier (a
 * program that calls CUDA from a library constructor) after them. */
static void strict_exit(void)
{
	uint64_t n;

	if (exit_status != 0 || !exit_done || !replaying || !(n = rpl_strict_events()))
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

static void start(void)
{
	const struct cf_config *cfg;
	struct cap_config cc;
	int rc;

	rc = shim_init();
	if (rc == -CF_EBUSY)
		return; /* called from cufold's own initialization: decide on a later call */
	cfg = cf_config_get();
	lock_take();
	if (__atomic_load_n(&state, __ATOMIC_RELAXED) != ENGINE_IDLE)
		goto out;
	if (rc != 0 || shim_mode() == CF_MODE_OFF) {
		__atomic_store_n(&state, ENGINE_DONE, __ATOMIC_RELEASE);
		goto out;
	}
	memset(&cc, 0, sizeof(cc));
	cc.max_templates = cfg->max_templates;
	cc.barrier_kernels = cfg->barrier_kernels;
	cc.callsites = cfg->callsites;
	cc.trace_max_bytes = cfg->trace[0] ? TRACE_MAX_BYTES : 0;
	cc.mode_name = cf_mode_name(shim_mode());
	cc.note_driver_call = note_own;
	callsites = cfg->callsites;
	timestamps = cfg->trace[0] != 0;
	if (shim_mode() == CF_MODE_REPLAY) {
		cc.shape_evicted = rpl_shape_evicted;
		cc.report_extra = rpl_write_report_json;
	}
	if (cap_init(&cc) != 0) {
		cf_log_err("out of memory starting capture; cufold passes every call through");
		__atomic_store_n(&state, ENGINE_DONE, __ATOMIC_RELEASE);
		goto out;
	}
	if (shim_mode() == CF_MODE_REPLAY) {
		struct rpl_config rc_ = {
			.warmup = cfg->warmup, .segment = cfg->segment, .min_ops = cfg->min_ops, .opt = cfg->opt,
			.gate = cfg->gate, .strict = cfg->strict,
		};

		replaying = rpl_init(&rc_) == 0;
		if (replaying && cfg->strict && !__atomic_exchange_n(&strict_registered, 1, __ATOMIC_RELAXED))
			on_exit(strict_on_exit, NULL);
		/* an unknown name in CUFOLD_RULES is reported now, not when a first plan is made */
		(void)rw_config_has_rules(&(struct rw_config){ .opt = cfg->opt, .rules = cfg->rules });
	}
	if (!__atomic_exchange_n(&atfork_child_done, 1, __ATOMIC_RELAXED))
		pthread_atfork(NULL, NULL, atfork_child);
	__atomic_store_n(&state, ENGINE_RECORDING, __ATOMIC_RELEASE);
out:
	lock_drop();
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

/* The calling thread's current context (asked of the driver once after each change). Under
 * the lock. */
static CUcontext current_ctx(void)
{
	if (!tls_ctx_ok) {
		CUcontext c = NULL;

		note_own(SHIM_ID_cuCtxGetCurrent);
		if (SHIM_REAL(cuCtxGetCurrent)(&c) != CUDA_SUCCESS)
			c = NULL;
		tls_ctx = c;
		tls_ctx_ok = true;
	}
	return tls_ctx;
}

/* Whether the stream an op names is being captured by the program (asked only while some
 * capture is in progress). An error answer counts as capturing: leave the call alone. */
static bool stream_capturing(const struct cap_call *c)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
	CUresult rc;

	if (shim_api[c->api].pt != SHIM_PT_NONE) {
		note_own(SHIM_ID_cuStreamIsCapturing_ptsz);
		rc = SHIM_REAL(cuStreamIsCapturing_ptsz)(c->stream, &st);
	} else {
		note_own(SHIM_ID_cuStreamIsCapturing);
		rc = SHIM_REAL(cuStreamIsCapturing)(c->stream, &st);
	}
	return rc != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* ------------------------------------------------------------------ stream work */

/* The op capture just recorded for r (in the open window, or in the window the call itself
 * closed), or NULL. While replay matches, no op of the window failed, so indices are exact. */
static const struct cap_op *rec_op(const struct cap_rec *r)
{
	const struct cap_window *w = cap_window_current();

	if (r->result != CAP_REC_RECORDED)
		return NULL;
	if (w && cap_window_seq(w) == r->window)
		return cap_window_op(w, r->index);
	if (r->closed && (w = cap_shape_last(r->closed)) && cap_window_seq(w) == r->window)
		return cap_window_op(w, r->index);
	return NULL;
}

/* Replay's part of a recorded call (under the lock). Returns true when replay kept the call:
 * the hook answers *rc without calling the driver. */
static bool replay_op(struct shim_tok *t, CUresult *rc)
{
	const struct cap_op *op = rec_op(&t->rec);
	enum rpl_verdict v = RPL_EAGER;

	/* While the program captures a stream, nothing is kept: a wait on an event recorded in a
	 * capture makes its stream join the capture, which the driver must see now (queries of
	 * capture state do not flush); every call is a boundary for replay until it ends. */
	if (op && __atomic_load_n(&captures, __ATOMIC_ACQUIRE) == 0)
		v = rpl_op(op);
	else
		rpl_flush(); /* not recorded (barrier, opaque, no memory), or a capture is open */
	if (t->rec.closed || !op)
		rpl_window_closed(t->rec.closed);
	if (v != RPL_DEFER)
		return false;
	cap_op_done(&t->rec, false);
	t->active = false;
	*rc = CUDA_SUCCESS;
	return true;
}

bool shim_engine_op_begin(const struct cap_call *c, struct shim_tok *t, CUresult *rc)
{
	struct cap_who who;

	t->active = false;
	t->err = CUDA_SUCCESS;
	shim_note_call((enum shim_api_id)c->api);
	if (!recording())
		return true;
	if (__atomic_load_n(&captures, __ATOMIC_ACQUIRE) > 0 && stream_capturing(c)) {
		lock_take();
		if (still_recording()) {
			if (replaying)
				rpl_flush(); /* nothing is kept while a capture is open; never kept behind it */
			cap_note_passthrough((enum shim_api_id)c->api);
		}
		lock_drop();
		return true;
	}
	if (cf_unlikely(!__atomic_load_n(&atfork_prepare_done, __ATOMIC_RELAXED)) &&
	    !__atomic_exchange_n(&atfork_prepare_done, 1, __ATOMIC_RELAXED))
		pthread_atfork(atfork_prepare, atfork_parent, NULL);
	who.callsite = callsites ? cap_callsite_capture() : 0;
	who.tid = cf_tid();
	who.t_ns = timestamps ? cf_now_ns() : 0; /* only the trace reads it */
	lock_take();
	if (still_recording()) {
		who.ctx = current_ctx();
		if (cf_unlikely(replaying && rpl_error_pending())) {
			/* a deferred op left this context unusable: the driver would refuse this too */
			CUresult sticky = rpl_error_take(who.ctx, true);

			if (sticky != CUDA_SUCCESS) {
				lock_drop();
				*rc = sticky;
				return false;
			}
		}
		cap_record(c, &who, &t->rec);
		t->active = true;
		if (replaying && replay_op(t, rc)) {
			lock_drop();
			return false;
		}
		/* a blocking copy observes the device: it returns what a deferred op left behind */
		if (cf_unlikely(replaying && t->rec.ends_window && rpl_error_pending()))
			t->err = rpl_error_take(who.ctx, false);
	}
	lock_drop();
	return true;
}

CUresult shim_engine_op_end(struct shim_tok *t, CUresult rc)
{
	if (!t->active)
		return rc;
	if (rc == CUDA_SUCCESS) {
		cap_op_done(&t->rec, false);
		return t->err;
	}
	lock_take();
	cap_op_done(&t->rec, true);
	if (replaying && still_recording())
		rpl_op_failed();
	lock_drop();
	return rc;
}

/* ------------------------------------------------------------------ other calls */

void shim_engine_neutral(enum shim_api_id api)
{
	shim_note_call(api);
	/* the capture state of a stream depends on the waits it was given: kept ones must reach
	 * the driver first (nothing is kept while a capture is open, but a query is cheap to
	 * make exact) */
	if (shim_api_is(api, SHIM_API_CAPTURE_QUERY) && __atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENGINE_RECORDING && replaying) {
		lock_take();
		if (still_recording() && rpl_has_deferred())
			rpl_flush();
		lock_drop();
	}
}

void shim_engine_observe(enum cap_boundary kind, enum shim_api_id api, struct cap_target *t, struct shim_obs *o)
{
	o->answered = false;
	o->err = CUDA_SUCCESS;
	shim_note_call(api);
	if (!recording())
		return;
	lock_take();
	if (!still_recording())
		goto out;
	t->ctx = current_ctx();
	t->tid = cf_tid();
	if (kind == CAP_BOUNDARY_SYNC) {
		end_window_if(cap_window_observed(t, 0), kind, api);
	} else {
		uint32_t first;

		/* a query never ends the window: background threads poll (watchdogs, allocators) at
		 * moments no step repeats; deferred work it asks about is truly not complete yet */
		cap_boundary_seen(kind);
		if (replaying && rpl_deferred_from(&first) && cap_window_observed(t, first) && rpl_poll(t->tid)) {
			o->answered = true;
			o->answer = CUDA_ERROR_NOT_READY;
		}
	}
	if (replaying && rpl_error_pending()) {
		o->err = rpl_error_take(t->ctx, false);
		if (o->err != CUDA_SUCCESS && o->answered)
			o->answer = o->err;
	}
out:
	lock_drop();
}

CUresult shim_engine_observed(const struct shim_obs *o, CUresult rc)
{
	/* the deferred op's error is what the program would have met first */
	if (o->err != CUDA_SUCCESS && (rc == CUDA_SUCCESS || rc == CUDA_ERROR_NOT_READY))
		return o->err;
	return rc;
}

static void boundary_locked(enum cap_boundary kind, enum shim_api_id api)
{
	lock_take();
	if (still_recording())
		close_window(kind, api);
	lock_drop();
}

void shim_engine_boundary(enum cap_boundary kind, enum shim_api_id api)
{
	shim_note_call(api);
	tls_ctx_ok = false; /* cheap insurance: a call we do not model may switch contexts */
	if (recording())
		boundary_locked(kind, api);
}

void shim_engine_unmodeled(enum shim_api_id api)
{
	if (shim_is_inside())
		return;
	tls_ctx_ok = false;
	if (recording())
		boundary_locked(CAP_BOUNDARY_UNMODELED, api);
	if (shim_api_is(api, SHIM_API_DESTROYS_PRIMARY) && replaying && recording()) {
		/* which context is not passed here: every template retires and every context's
		 * batch module is forgotten (rare calls; a live context just loads it again) */
		lock_take();
		if (still_recording())
			rpl_context_destroyed(NULL);
		lock_drop();
		rpl_context_gone(NULL);
	}
}

void shim_engine_alloc(enum shim_api_id api, uint64_t base, uint64_t size, enum cap_alloc_kind kind)
{
	(void)api;
	if (!recording() || !size)
		return;
	lock_take();
	if (still_recording() && cap_alloc_add(base, size, kind) != 0)
		cf_log_warn_once("out of memory growing the allocation map; some pointers will not resolve");
	lock_drop();
}

void shim_engine_free_begin(enum shim_api_id api, uint64_t base, struct shim_free_tok *t)
{
	t->removed = false;
	shim_note_call(api);
	if (!recording())
		return;
	lock_take();
	if (still_recording()) {
		const struct cap_alloc *a = base ? cap_alloc_find(base) : NULL;

		/* memory cufold never saw allocated may be anything the window uses */
		end_window_if(!a || a->base != base || cap_window_references(a->base, a->size), CAP_BOUNDARY_FREE, api);
		t->removed = base && cap_alloc_remove(base, &t->alloc) == 0;
		if (replaying && t->removed)
			rpl_memory_released(t->alloc.base, t->alloc.size);
	}
	lock_drop();
}

void shim_engine_free_end(struct shim_free_tok *t, CUresult rc)
{
	if (!t->removed || rc == CUDA_SUCCESS)
		return;
	lock_take();
	if (still_recording())
		cap_alloc_restore(&t->alloc);
	lock_drop();
}

void shim_engine_unmap(enum shim_api_id api, uint64_t base, uint64_t size)
{
	shim_note_call(api);
	if (!recording())
		return;
	lock_take();
	if (still_recording()) {
		end_window_if(cap_window_references(base, size), CAP_BOUNDARY_FREE, api);
		cap_alloc_remove_range(base, size);
		if (replaying)
			rpl_memory_released(base, size);
	}
	lock_drop();
}

void shim_engine_stream_created(CUstream s, unsigned int flags)
{
	if (!recording())
		return;
	lock_take();
	if (still_recording())
		cap_stream_created(s, flags);
	lock_drop();
}

void shim_engine_stream_destroy(enum shim_api_id api, CUstream s)
{
	shim_note_call(api);
	if (!recording())
		return;
	lock_take();
	if (still_recording()) {
		close_window(CAP_BOUNDARY_DESTROY, api);
		cap_stream_forget(s);
	}
	lock_drop();
}

void shim_engine_event_destroy(enum shim_api_id api, CUevent e)
{
	shim_note_call(api);
	if (!recording())
		return;
	lock_take();
	if (still_recording()) {
		close_window(CAP_BOUNDARY_DESTROY, api);
		cap_event_forget(e);
		if (replaying)
			rpl_event_destroyed(e);
	}
	lock_drop();
}

void shim_engine_capture_begin(enum shim_api_id api)
{
	shim_engine_boundary(CAP_BOUNDARY_CAPTURE, api);
}

void shim_engine_capture_done(bool begin, CUresult rc)
{
	if (begin) {
		if (rc == CUDA_SUCCESS)
			__atomic_fetch_add(&captures, 1, __ATOMIC_ACQ_REL);
		return;
	}
	/* the capture ended (a graph, or an invalidated capture that the call still ends); any
	 * other error leaves it running, and a count too high only costs queries */
	if (rc == CUDA_SUCCESS || rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
		int n = __atomic_load_n(&captures, __ATOMIC_ACQUIRE);

		while (n > 0 && !__atomic_compare_exchange_n(&captures, &n, n - 1, false, __ATOMIC_ACQ_REL,
							     __ATOMIC_ACQUIRE))
			;
	}
}

void shim_engine_ctx_set(enum shim_api_id api, CUcontext target)
{
	bool change;

	shim_note_call(api);
	if (!recording())
		return;
	lock_take();
	change = current_ctx() != target || !target;
	if (still_recording()) {
		/* only a thread that made ops of the open window can change what they run in (a
		 * watchdog or allocator thread binding its context at start is no boundary) */
		end_window_if(change && cap_window_has_thread(cf_tid()), CAP_BOUNDARY_CONTEXT, api);
	}
	lock_drop();
}

void shim_engine_ctx_switch(enum shim_api_id api)
{
	tls_ctx_ok = false;
	if (api != SHIM_ID_cuCtxDestroy_v2) {
		/* push and pop: as cuCtxSetCurrent, a boundary for a thread with ops in the window */
		shim_note_call(api);
		if (recording()) {
			lock_take();
			if (still_recording())
				end_window_if(cap_window_has_thread(cf_tid()), CAP_BOUNDARY_CONTEXT, api);
			lock_drop();
		}
		return;
	}
	shim_engine_boundary(CAP_BOUNDARY_CONTEXT, api);
	if (replaying && recording()) {
		/* which context is not passed here: every template retires (destroys are rare) */
		lock_take();
		if (still_recording())
			rpl_context_destroyed(NULL);
		lock_drop();
	}
}

void shim_engine_ctx_destroyed(CUcontext ctx)
{
	/* a new context may get the handle back: it must load cufold's kernels anew */
	rpl_context_gone(ctx);
}

void shim_engine_ctx_done(CUresult rc, bool known, CUcontext now)
{
	if (rc == CUDA_SUCCESS && known) {
		tls_ctx = now;
		tls_ctx_ok = true;
	} else {
		tls_ctx_ok = false;
	}
}

void shim_engine_module_unload(enum shim_api_id api)
{
	shim_note_call(api);
	if (!recording())
		return;
	lock_take();
	if (still_recording()) {
		close_window(CAP_BOUNDARY_MODULE_UNLOAD, api);
		cap_funcs_forget();
		if (replaying)
			rpl_functions_unloaded();
	}
	lock_drop();
}

void shim_engine_kernels(enum shim_api_id api, const CUkernel *k, unsigned int n, bool count_call)
{
	if (count_call)
		shim_note_call(api);
	if (!k || !n || !recording())
		return;
	lock_take();
	if (still_recording())
		for (unsigned int i = 0; i < n; i++)
			cap_kernel_handle_add(k[i]);
	lock_drop();
}

bool shim_engine_totals(struct cap_totals *t)
{
	bool ok = false;

	lock_take();
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == ENGINE_RECORDING && cap_is_ready()) {
		cap_get_totals(t);
		ok = true;
	}
	lock_drop();
	return ok;
}

/* ------------------------------------------------------------------ exit */

/* Write one output; a path that cannot be written is reported once and the program goes on. */
static void write_output(const char *var, const char *path, int (*writer)(const char *))
{
	const char *why;
	int rc;

	if (!path[0])
		return;
	if (is_child && !strstr(path, "%p"))
		return; /* the parent writes this path: a forked child would overwrite it */
	errno = 0;
	rc = writer(path);
	if (rc == 0)
		return;
	switch (errno) {
	case ELOOP:
		why = "it is a symbolic link, which cufold never follows";
		break;
	case EEXIST:
		why = "a file is there that is not cufold's own output; it is left alone";
		break;
	default:
		why = errno ? strerror(errno) : cf_strerror(rc);
		break;
	}
	cf_log_warn("%s=%s: cannot write it (%s); nothing written there, the program is not affected", var, path,
		    why);
}

__attribute__((destructor)) static void engine_exit(void)
{
	const struct cf_config *cfg;
	char summary[1024];

	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != ENGINE_RECORDING)
		return;
	cfg = cf_config_get();
	lock_take();
	if (!cap_is_ready())
		goto out;
	close_window(CAP_BOUNDARY_EXIT, SHIM_API_COUNT);
	/* calls made after this point (other threads, later destructors) pass through: the state
	 * is asked again under the lock, and replay keeps nothing any more */
	if (replaying)
		rpl_stop();
	__atomic_store_n(&state, ENGINE_DONE, __ATOMIC_RELEASE);
	if (!cfg->secure) {
		write_output("CUFOLD_REPORT", cfg->report, cap_write_report);
		write_output("CUFOLD_TRACE", cfg->trace, cap_write_trace);
		write_output("CUFOLD_DOT", cfg->dot, cap_write_dot);
	}
	if (cf_log_enabled(CF_LOG_INFO)) {
		cap_summary(summary, sizeof(summary));
		cf_log_info("%s", summary);
	}
	if (replaying && cf_log_enabled(CF_LOG_INFO)) {
		struct rpl_totals rt;

		rpl_get_totals(&rt);
		cf_log_info("replay: %llu templates (%llu segments), %llu graph launches carried %llu ops, %llu nodes "
			    "patched, %llu deferred ops submitted eagerly, %llu retired, matching %.0f ns per op%s",
			    (unsigned long long)rt.templates, (unsigned long long)rt.segments,
			    (unsigned long long)rt.graph_launches, (unsigned long long)rt.ops_replayed,
			    (unsigned long long)rt.patches, (unsigned long long)rt.ops_flushed,
			    (unsigned long long)rt.retired, rpl_host_ns_per_op(),
			    rt.failed ? "; a failure sent a context to passthrough" : "");
	}
	exit_done = true;
out:
	lock_drop();
	if (exit_done && strict_registered)
		strict_exit(); /* _exit, not under the lock: no destructor after this one runs */
}
