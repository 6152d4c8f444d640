/* exec.c - the replay state machine: following templates call by call, deferring matched ops,
 * launching complete segments (patching changed nodes first, joining the other streams a
 * segment touches before its launch and forking them after), and falling back to eager
 * submission in the program's order on any mismatch or failure; retiring templates (frees,
 * churn, eviction, destroyed events, unloads). replay layer; owns the matcher's state and the
 * list of templates.
 *
 * Invariants:
 *  1. Callers serialize (the engine's mutex). Deferred ops are deep copies (parameters in
 *     replay's own arena), so they never point into the program's memory or into a capture
 *     window that may be recycled.
 *  2. Every deferred op is one of the window's ops in order, and the deferred ops are exactly
 *     the ops [def_first, def_first + ndef) of the window: a contiguous run of graphable ops
 *     (on any of its streams) inside one segment of every candidate. Nothing else of the program is
 *     submitted while ops are deferred: rpl_op answers RPL_EAGER only after submitting them,
 *     and the engine calls rpl_flush before any other call reaches the driver.
 *  3. All candidates agree with the window so far: same keys and classes at every position
 *     < depth (runs start after the same eager ops). Their cuts may differ (a function of each
 *     template's shape: template.c's segment_size); the deferred run is submitted at the cuts of
 *     the leading candidate (segment_ends_at), or at a flush, as a graph when one candidate has
 *     exactly that run as a segment (any candidate's exec with that segment does the same work:
 *     equal keys, bindings patched), else eagerly.
 *  4. In RPL_M_RECORDING nothing is deferred; the state lasts until the window closes.
 *  5. A failure of cufold's own (build, patch, launch, memory) submits the deferred ops
 *     eagerly, so the program's results never depend on it; the context then only passes
 *     through (sticky), with one warning.
 *  6. A segment's exec holds, per node, the bindings recorded in its rpl_node; a launch first
 *     patches every node whose deferred op's bindings differ (compared exactly, not by hash).
 *  7. A graph launches on the legacy stream when one of its ops is on it (so CUDA's implicit
 *     synchronization covers the whole graph), else on its first op's stream; every other
 *     stream it touches joins before (event record there, wait on the launch stream) and forks
 *     after (record on the launch stream, wait there): later work on every stream is ordered
 *     after the graph, earlier work before it, as the program's own submissions were.
 *  8. A stage buffer is written by the host only after the previous launch of its exec has
 *     finished (its done event), so a launch in flight never sees the next call's bytes.
 *  9. Nothing here waits on the device (callers hold the engine's mutex, and a host function
 *     queued before the awaited work may wait for a thread blocked on that mutex): a stage
 *     buffer still in use is asked with cuEventQuery, and when busy that launch goes eagerly
 *     (BUSY); a synchronization that a failure makes necessary is left to the engine, which
 *     makes it after dropping its mutex (rpl_take_wait).
 * 10. After rpl_stop (exit) nothing is deferred.
 *
 * States of the open window:
 *
 *                 rpl_op: some template starts with the op's key
 *       FRESH ------------------------------------------------> MATCHING --+
 *         ^  \                                                  |   ^      | match: defer;
 *         |   \ rpl_op: no template starts so                   |   +------+ segment complete:
 *         |    v                                                 |            launch
 *         |  RECORDING <---------------------------------------- +
 *         |      |      mismatch, failure, flush (deferred ops submitted eagerly
 *         |      |      unless they form a whole segment of a candidate)
 *         +------+
 *      rpl_window_closed (the window's shape may become a template)
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/compiler.h"
#include "common/errors.h"
#include "common/log.h"
#include "replay/replay_int.h"
#include "rewrite/kernels.h"

struct rpl_totals rpl__totals;

#define RPL_SAMPLE_MAX_NS 20000 /* a timed match longer than this is not counted (preemption) */

static struct {
	bool ready;                  /* rpl_init ran */
	bool no_driver;              /* forked child: never call the driver for the parent's objects */
	bool stopped;                /* rpl_stop ran (exit): nothing is deferred any more */
	bool wait_due;               /* wait holds a synchronization for the engine to make */
	struct rpl_wait wait;        /* see rpl_take_wait */
	struct rpl_config cfg;       /* configuration */
	struct rpl_template *templates; /* every live template, newest first */
	struct rpl_template *retired; /* retired templates' figures, newest first (no graphs) */
	uint8_t mstate;              /* enum rpl_mstate */
	uint32_t depth;              /* ops of the open window matched so far */
	struct rpl_template *cand[RPL_MAX_CAND]; /* templates the window still agrees with */
	uint32_t ncand;              /* used entries of cand */
	struct rpl_template *ended;  /* a candidate whose every op matched (window complete) */
	struct cap_op *def;          /* deferred ops, in order (copies) */
	uint32_t ndef, capdef;       /* used and allocated entries of def */
	uint32_t def_first;          /* window index of def[0] */
	struct cf_arena arena;       /* parameter bytes of deferred ops */
	CUcontext failed[RPL_MAX_FAILED_CTX]; /* contexts in sticky passthrough */
	uint32_t nfailed;            /* used entries of failed */
	bool all_failed;             /* more failed contexts than fit: every context passes through */
	uint64_t clock_ns;           /* cost of one cf_now_ns() (calibrated at init) */
	uint32_t poll_ndef;          /* ndef when a query last found the deferred run */
	uint64_t poll_t0;            /* when the deferred run was last seen growing by a query; 0: never */
	uint64_t win_t0;             /* gate clock at the open window's first op (0: none yet) */
	bool win_deferred;           /* an op of the open window was deferred */
	struct {
		struct rpl_shape_note *note; /* the shape of the last closed window */
		bool valid;          /* a sample is due at the next window's first op */
		bool replayed;       /* it replayed to the end (else it ran wholly eager) */
		uint64_t t0;         /* its gate clock at its first op */
		uint64_t exclude;    /* time that was not the program's (template builds) */
		uint64_t charge;     /* cufold's matching cost on a modeled clock */
	} pend;                      /* the last window's time, taken when the next one starts */
} st;

/* A note with its list link (notes are few: one per shape seen). */
struct note_link {
	struct rpl_shape_note note;  /* what cap_shape_user points at */
	struct cap_shape *shape;     /* its shape */
	struct note_link *next;      /* every note */
};
static struct note_link *notes_all; /* every live note */

static const char *const fallback_names[RPL_FB_COUNT] = {
#define RPL_FALLBACK_NAME_(name, label) #name,
	RPL_FALLBACK_LIST(RPL_FALLBACK_NAME_)
#undef RPL_FALLBACK_NAME_
};

const char *rpl_fallback_name(enum rpl_fallback f)
{
	return (unsigned)f < RPL_FB_COUNT ? fallback_names[f] : "?";
}

void rpl__own_call(void)
{
	rpl__totals.own_calls++;
}

void rpl__ctx_enter(CUcontext ctx, bool *pushed)
{
	CUcontext cur = NULL;

	*pushed = false;
	if (!ctx)
		return;
	rpl__own_call();
	if (SHIM_REAL(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur == ctx)
		return;
	/* a refused push would submit another thread's op in no context (INVALID_CONTEXT at its
	 * next observation): try once more before giving up, and say so */
	for (int tries = 0; tries < 2 && !*pushed; tries++) {
		rpl__own_call();
		*pushed = SHIM_REAL(cuCtxPushCurrent_v2)(ctx) == CUDA_SUCCESS;
	}
	if (!*pushed)
		cf_log_warn_once("replay: cannot make another thread's context current to submit its work; that "
				 "work fails and the program gets the error at its next synchronization");
}

void rpl__ctx_leave(bool pushed)
{
	CUcontext dummy;

	if (!pushed)
		return;
	rpl__own_call();
	SHIM_REAL(cuCtxPopCurrent_v2)(&dummy);
}

/* The op's context current on this thread: only a call from another thread can find a
 * different one (the op was recorded with the context current on its own thread). */
static void op_ctx_enter(const struct cap_op *op, bool *pushed)
{
	*pushed = false;
	if (op->tid != cf_tid())
		rpl__ctx_enter(op->ctx, pushed);
}

/* ------------------------------------------------------------------ set-up */

int rpl_init(const struct rpl_config *cfg)
{
	if (st.ready)
		return 0;
	memset(&st, 0, sizeof(st));
	st.cfg = *cfg;
	if (!st.cfg.segment)
		st.cfg.segment = 1;
	if (!st.cfg.warmup)
		st.cfg.warmup = 1;
	cf_arena_init(&st.arena, 16 * 1024);
	rpl__gate_init();
	/* what reading the clock itself costs, taken out of the matching cost measured */
	{
		uint64_t t0 = cf_now_ns(), t1;

		for (int i = 0; i < 64; i++)
			t1 = cf_now_ns();
		t1 = cf_now_ns();
		st.clock_ns = (t1 - t0) / 66;
	}
	st.ready = true;
	return 0;
}

static void templates_drop_all(void)
{
	struct rpl_template *t = st.templates, *next;

	for (struct rpl_template *r = st.retired; r; r = next) {
		next = r->next;
		rpl__template_destroy(r);
	}
	st.retired = NULL;
	for (; t; t = next) {
		next = t->next;
		if (st.no_driver) {
			/* the parent's graphs: only host memory is ours to free */
			for (uint32_t k = 0; k < t->nsegs; k++) {
				t->segs[k].exec = NULL;
				t->segs[k].graph = NULL;
			}
			t->join_ev = t->fork_ev = NULL;
			for (uint32_t k = 0; k < t->nsegs; k++) {
				t->segs[k].done_ev = NULL;
				for (uint32_t i = 0; t->segs[k].nodes && i < t->segs[k].n; i++)
					t->segs[k].nodes[i].stage = NULL;
			}
		}
		rpl__template_destroy(t);
	}
	st.templates = NULL;
}

static void notes_free(void)
{
	struct note_link *l = notes_all, *next;

	for (; l; l = next) {
		next = l->next;
		if (!st.no_driver && cap_is_ready() && cap_shape_user(l->shape) == &l->note)
			cap_shape_set_user(l->shape, NULL);
		free(l);
	}
	notes_all = NULL;
}

void rpl_fini(void)
{
	if (!st.ready)
		return;
	rpl_flush();
	templates_drop_all();
	notes_free();
	free(st.def);
	cf_arena_fini(&st.arena);
	memset(&st, 0, sizeof(st));
}

void rpl_atfork_child(void)
{
	struct rpl_config cfg = st.cfg;

	if (!st.ready)
		return;
	/* The parent flushed before forking; whatever is left belongs to the parent. */
	st.ndef = 0;
	st.no_driver = true;
	templates_drop_all();
	notes_free();
	free(st.def);
	cf_arena_fini(&st.arena);
	memset(&st, 0, sizeof(st));
	memset(&rpl__totals, 0, sizeof(rpl__totals));
	rpl__errors_reset();
	rpl_init(&cfg);
}

struct rpl_template *rpl__templates(void)
{
	return st.templates;
}

struct rpl_template *rpl__retired(void)
{
	return st.retired;
}

/* ------------------------------------------------------------------ templates */

static void template_unlink(struct rpl_template *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		st.templates = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->prev = t->next = NULL;
}

/* Drop t from the candidates (the window then follows the others, or records). */
static void cand_forget(struct rpl_template *t)
{
	uint32_t j = 0;

	for (uint32_t i = 0; i < st.ncand; i++)
		if (st.cand[i] != t)
			st.cand[j++] = st.cand[i];
	st.ncand = j;
	if (st.ended == t)
		st.ended = NULL;
}

static struct rpl_shape_note *note_of(struct cap_shape *s)
{
	return s ? cap_shape_user(s) : NULL;
}

static CUresult submit_deferred(enum rpl_fallback why);

/* Retire t: its graphs go, its figures stay for the report
 * (the most recent RPL_MAX_RETIRED). */
static void template_retire(struct rpl_template *t, const char *why)
{
	struct rpl_shape_note *n = note_of(t->shape);
	struct rpl_template **pt;
	uint32_t kept = 0;

	/* a retirement inside a window (capture evicting a shape while the call that closes the
	 * window is recorded): what is kept goes first, while t may still be the graph for it */
	if (st.ndef)
		submit_deferred(RPL_FB_BOUNDARY);
	cand_forget(t);
	if (st.mstate == RPL_M_MATCHING && st.ncand == 0)
		st.mstate = RPL_M_RECORDING;
	if (n && n->tpl == t) {
		n->tpl = NULL;
		n->retired_at = cap_shape_sightings(t->shape);
	}
	template_unlink(t);
	rpl__totals.templates_live--;
	rpl__totals.retired++;
	if (st.no_driver) {
		rpl__template_destroy(t);
		return;
	}
	rpl__template_release(t);
	t->shape = NULL;
	t->retired_why = why;
	t->next = st.retired;
	st.retired = t;
	for (pt = &st.retired; *pt; pt = &(*pt)->next) {
		if (++kept > RPL_MAX_RETIRED) {
			struct rpl_template *old = *pt;

			*pt = NULL;
			while (old) {
				struct rpl_template *nx = old->next;

				rpl__template_destroy(old);
				old = nx;
			}
			break;
		}
	}
}

/* After a launch: a template whose bindings move on most launches and whose patching costs as
 * many driver calls as submitting its ops eagerly does not pay; it goes back to eager for good. */
static void check_churn(struct rpl_template *t)
{
	struct rpl_shape_note *n;

	if (t->launches < RPL_CHURN_LAUNCHES || t->patched_launches * 2 <= t->launches ||
	    t->launches + t->patches < t->ops_replayed)
		return;
	n = note_of(t->shape);
	t->fallbacks[RPL_FB_CHURN]++;
	rpl__totals.fallbacks[RPL_FB_CHURN]++;
	cf_log_info("replay: window shape %llu goes back to eager: its bindings change on %llu of %llu launches and "
		    "patching costs more than it saves",
		    (unsigned long long)t->shape_id, (unsigned long long)t->patched_launches,
		    (unsigned long long)t->launches);
	template_retire(t, "bindings change on most launches; patching costs more than eager submission");
	if (n) {
		n->rejected = true;
		n->why = "bindings change on most launches";
	}
}

/* ------------------------------------------------------------------ sticky failure */

bool rpl_ctx_is_failed(CUcontext ctx)
{
	if (cf_likely(!st.nfailed))
		return false;
	if (st.all_failed)
		return true;
	for (uint32_t i = 0; i < st.nfailed; i++)
		if (st.failed[i] == ctx)
			return true;
	return false;
}

static void ctx_fail(CUcontext ctx, const char *what)
{
	struct rpl_template *t, *next;

	if (rpl_ctx_is_failed(ctx))
		return;
	cf_log_warn("replay: %s; cufold passes every call of this context straight to the driver from now on "
		    "(results are unchanged)", what);
	rpl__totals.failed = true;
	if (st.nfailed < RPL_MAX_FAILED_CTX)
		st.failed[st.nfailed++] = ctx;
	else
		st.all_failed = true;
	for (t = st.templates; t; t = next) {
		next = t->next;
		if (st.all_failed || t->ctx == ctx) {
			struct rpl_shape_note *n = note_of(t->shape);

			template_retire(t, "its context went to passthrough after a failure");
			if (n) {
				n->rejected = true;
				n->why = "its context went to passthrough after a failure";
			}
		}
	}
}

/* ------------------------------------------------------------------ deferral and submission */

static void def_clear(void)
{
	st.ndef = 0;
	st.poll_t0 = 0;
	cf_arena_reset(&st.arena);
}

/* Keep a deep copy of op. 0 or -CF_ENOMEM. */
static int defer(const struct cap_op *op, uint32_t index)
{
	struct cap_op *c;

	if (st.ndef == st.capdef) {
		uint32_t ncap = st.capdef ? 2 * st.capdef : 256;
		struct cap_op *n = realloc(st.def, ncap * sizeof(*n));

		if (!n)
			return -CF_ENOMEM;
		st.def = n;
		st.capdef = ncap;
	}
	c = &st.def[st.ndef];
	*c = *op;
	if (op->kind == CAP_OP_KERNEL) {
		c->u.kernel.params = cf_arena_dup(&st.arena, op->u.kernel.params, op->u.kernel.param_size);
		if (!c->u.kernel.params)
			return -CF_ENOMEM;
		c->u.kernel.attrs = NULL; /* graphable kernels have none */
		c->u.kernel.nattrs = 0;
	} else if (op->kind == CAP_OP_MEMCPY && op->u.memcpy.src_pageable) {
		/* the program may reuse its buffer as soon as the call returns: take the bytes now,
		 * as the driver stages a pageable source */
		c->flags &= (uint8_t)~CAP_OPF_STAGED;
		c->u.memcpy.staged = NULL;
		if (cap_op_stage(c, &st.arena) != 0)
			return -CF_ENOMEM;
	}
	if (st.ndef == 0)
		st.def_first = index;
	st.ndef++;
	st.win_deferred = true;
	rpl__totals.ops_deferred++;
	return 0;
}

/* Submit every deferred op eagerly, in order. Returns the first driver error. */
static CUresult flush_eager(enum rpl_fallback why)
{
	CUresult first = CUDA_SUCCESS;

	if (!st.ndef)
		return CUDA_SUCCESS;
	rpl__totals.fallbacks[why]++;
	if (st.ncand)
		st.cand[0]->fallbacks[why]++;
	for (uint32_t i = 0; i < st.ndef; i++) {
		const struct cap_op *op = &st.def[i];
		bool pushed;
		CUresult rc;

		op_ctx_enter(op, &pushed);
		rc = cap_op_issue(op);
		rpl__ctx_leave(pushed);
		if (rc != CUDA_SUCCESS) {
			/* the program was told it succeeded: its next observing call returns it */
			rpl__error_note(op, rc);
			if (first == CUDA_SUCCESS)
				first = rc;
		}
	}
	rpl__totals.ops_flushed += st.ndef;
	def_clear();
	return first;
}

static void note_moved_site(struct rpl_template *t, uint64_t site)
{
	if (!site)
		return;
	for (uint32_t i = 0; i < t->nmoved_sites; i++)
		if (t->moved_sites[i] == site)
			return;
	if (!t->moved_sites) {
		t->moved_sites = calloc(RPL_SITES, sizeof(*t->moved_sites));
		if (!t->moved_sites)
			return;
	}
	if (t->nmoved_sites < RPL_SITES)
		t->moved_sites[t->nmoved_sites++] = site;
}

/* Patch the nodes of g whose bindings differ from the deferred ops'. 0, or a driver error. */
static CUresult patch(struct rpl_template *t, struct rpl_seg *g, uint32_t *npatched)
{
	CUresult rc = CUDA_SUCCESS;

	*npatched = 0;
	for (uint32_t i = 0; i < g->n && rc == CUDA_SUCCESS; i++) {
		struct cap_op tmp; /* a plan node's op derived from this launch's bindings */
		const struct cap_op *op = rpl__seg_op(g, i, st.def, &tmp);
		struct rpl_node *n = &g->nodes[i];

		if (!op && g->run && !rw_run_is_folded(g->run, i))
			return CUDA_ERROR_NOT_SUPPORTED; /* a plan node that could not be derived: the
							  * node must not run with last launch's op */
		if (!op || (n->empty && n->kind != CAP_OP_EVENT_WAIT))
			continue; /* folded into another node, or erased */

		switch (op->kind) {
		case CAP_OP_KERNEL: {
			CUDA_KERNEL_NODE_PARAMS p;
			void *extra_buf[5];
			size_t extra_size;

			if (n->func == op->u.kernel.func && n->param_size == op->u.kernel.param_size &&
			    memcmp(n->params, op->u.kernel.params, n->param_size) == 0)
				continue;
			if (rpl__node_set_kernel(n, op) != 0)
				return CUDA_ERROR_OUT_OF_MEMORY;
			rpl__kernel_params(n, op, &p, extra_buf, &extra_size);
			rpl__own_call();
			rc = SHIM_REAL(cuGraphExecKernelNodeSetParams_v2)(g->exec, n->node, &p);
			break;
		}
		case CAP_OP_MEMCPY: {
			CUDA_MEMCPY3D d;

			rpl__copy_desc(op, n->stage, &d);
			if (rpl__copy_equal(&n->copy, &d))
				continue;
			n->copy = d;
			rpl__own_call();
			rc = SHIM_REAL(cuGraphExecMemcpyNodeSetParams)(g->exec, n->node, &n->copy, op->ctx);
			break;
		}
		case CAP_OP_MEMSET: {
			CUDA_MEMSET_NODE_PARAMS p;

			rpl__memset_params(op, &p);
			if (rpl__memset_equal(&n->set, &p))
				continue;
			n->set = p;
			rpl__own_call();
			rc = SHIM_REAL(cuGraphExecMemsetNodeSetParams)(g->exec, n->node, &n->set, op->ctx);
			break;
		}
		case CAP_OP_EVENT_RECORD:
			if (n->event == op->u.event.event)
				continue;
			n->event = op->u.event.event;
			rpl__own_call();
			rc = SHIM_REAL(cuGraphExecEventRecordNodeSetEvent)(g->exec, n->node, n->event);
			break;
		case CAP_OP_EVENT_WAIT:
			if (n->empty || n->event == op->u.event.event)
				continue;
			n->event = op->u.event.event;
			rpl__own_call();
			rc = SHIM_REAL(cuGraphExecEventWaitNodeSetEvent)(g->exec, n->node, n->event);
			break;
		default:
			rc = CUDA_ERROR_NOT_SUPPORTED;
			break;
		}
		(*npatched)++;
		note_moved_site(t, op->callsite);
	}
	return rc;
}

#define RPL_MAX_JOIN 64 /* streams one segment may join; more: the segment goes eagerly */

/* Whether every staged copy's source span has the size of its node's stage buffer (the span
 * also depends on pitches, which are bindings). */
static bool stages_fit(const struct rpl_seg *g)
{
	for (uint32_t i = 0; i < g->n; i++)
		if (g->nodes[i].stage && (!(st.def[i].flags & CAP_OPF_STAGED) ||
					  st.def[i].u.memcpy.src_span != g->nodes[i].stage_bytes))
			return false;
	return true;
}

/* When the exec's previous launch has read its stage buffers, fill them with the bytes staged
 * at the calls; CUDA_ERROR_NOT_READY when it has not (never waits: invariant 9). */
static CUresult stages_fill(struct rpl_seg *g)
{
	if (g->launches) {
		CUresult rc;

		rpl__own_call();
		rc = SHIM_REAL(cuEventQuery)(g->done_ev);
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	for (uint32_t i = 0; i < g->n; i++)
		if (g->nodes[i].stage)
			memcpy(g->nodes[i].stage, st.def[i].u.memcpy.staged, g->nodes[i].stage_bytes);
	return CUDA_SUCCESS;
}

/* Mark the end of a launch that reads stage buffers. */
static CUresult rec_done(struct rpl_seg *g, CUstream launch)
{
	rpl__own_call();
	return SHIM_REAL(cuEventRecord)(g->done_ev, launch);
}

/* The streams of the deferred ops: *launch is where the graph goes (the legacy stream when an op
 * is on it, so CUDA's implicit synchronization with blocking streams holds for the whole graph;
 * else the first op's stream), others[] every other stream. Returns the count of others, or -1
 * when there are too many. */
static int def_streams(CUstream *launch, CUstream *others)
{
	const struct cap_op *lop = &st.def[0];
	int n = 0;

	for (uint32_t i = 0; i < st.ndef; i++)
		if (st.def[i].stream_kind == CAP_STREAM_LEGACY) {
			lop = &st.def[i];
			break;
		}
	*launch = lop->stream;
	for (uint32_t i = 0; i < st.ndef; i++) {
		const struct cap_op *o = &st.def[i];
		bool seen;

		if (o->stream_slot == lop->stream_slot ||
		    (o->stream_kind == CAP_STREAM_LEGACY && lop->stream_kind == CAP_STREAM_LEGACY))
			continue;
		seen = false;
		for (int j = 0; j < n && !seen; j++)
			seen = others[j] == o->stream;
		if (seen)
			continue;
		if (n == RPL_MAX_JOIN)
			return -1;
		others[n++] = o->stream;
	}
	return n;
}

/* Every other stream's earlier work before the launch stream's next (join), or the launch
 * stream's work before every other stream's next (fork): record ev on one side, wait on the
 * other. */
static CUresult join(CUevent ev, CUstream launch, const CUstream *others, int n, bool fork)
{
	CUresult rc = CUDA_SUCCESS;

	if (fork && n) {
		rpl__own_call();
		rc = SHIM_REAL(cuEventRecord)(ev, launch);
	}
	for (int i = 0; i < n && rc == CUDA_SUCCESS; i++) {
		if (fork) {
			rpl__own_call();
			rc = SHIM_REAL(cuStreamWaitEvent)(others[i], ev, 0);
		} else {
			rpl__own_call();
			rc = SHIM_REAL(cuEventRecord)(ev, others[i]);
			if (rc == CUDA_SUCCESS) {
				rpl__own_call();
				rc = SHIM_REAL(cuStreamWaitEvent)(launch, ev, 0);
			}
		}
	}
	return rc;
}

/* Launch segment k of t for the deferred ops (which are exactly its ops). On a failure the
 * deferred ops are submitted eagerly and the context goes to passthrough. */
static void launch_seg(struct rpl_template *t, uint32_t k)
{
	struct rpl_seg *g = &t->segs[k];
	const struct cap_op *first = &st.def[0];
	CUstream launch, others[RPL_MAX_JOIN];
	uint32_t npatched = 0;
	CUcontext ctx = first->ctx;
	bool pushed;
	int nothers;
	CUresult rc;

	nothers = def_streams(&launch, others);
	if (nothers < 0 || (nothers > 0 && !t->join_ev)) {
		flush_eager(RPL_FB_MISMATCH);
		return;
	}
	if (g->staged && !stages_fit(g)) {
		flush_eager(RPL_FB_MISMATCH);
		return;
	}
	if (!rpl__seg_guards_hold(g, st.def)) {
		/* the rewrite plan was not proven for these bindings: the program's ops go as
		 * they were, in order, and the shape is planned again from a later sighting */
		struct rpl_shape_note *n = cap_shape_user(t->shape);

		flush_eager(RPL_FB_GUARD);
		if (n && ++n->guard_retires == RPL_GUARD_RETIRES)
			cf_log_info("window shape %llu: rewrite guards failed %d times; it is replayed without "
				    "rewriting from now on", (unsigned long long)t->shape_id, RPL_GUARD_RETIRES);
		template_retire(t, "a rewrite guard failed on a launch's bindings");
		return;
	}
	rc = patch(t, g, &npatched);
	if (rc != CUDA_SUCCESS) {
		flush_eager(RPL_FB_PATCH);
		ctx_fail(ctx, "patching a graph node failed");
		return;
	}
	op_ctx_enter(first, &pushed);
	if (g->staged) {
		rc = stages_fill(g);
		if (rc == CUDA_ERROR_NOT_READY) {
			/* the previous launch still reads the buffers: this one goes eagerly (the
			 * copies from the bytes taken at the calls), which needs no wait */
			rpl__ctx_leave(pushed);
			flush_eager(RPL_FB_BUSY);
			return;
		}
		if (rc != CUDA_SUCCESS) {
			rpl__ctx_leave(pushed);
			flush_eager(RPL_FB_LAUNCH);
			ctx_fail(ctx, "waiting for a graph's earlier launch failed");
			return;
		}
	}
	/* joins only add ordering: if one fails, the eager flush below is still in order */
	rc = join(t->join_ev, launch, others, nothers, false);
	if (rc == CUDA_SUCCESS) {
		rpl__own_call();
		rc = SHIM_REAL(cuGraphLaunch)(g->exec, launch);
		if (rc == CUDA_SUCCESS && (join(t->fork_ev, launch, others, nothers, true) != CUDA_SUCCESS ||
					   (g->staged && rec_done(g, launch) != CUDA_SUCCESS))) {
			/* the graph runs but later work on the other streams would not wait for it:
			 * the engine waits for it after dropping its mutex (invariant 9), before the
			 * program's call returns; then stop replaying */
			st.wait.stream = launch;
			st.wait.ctx = ctx;
			st.wait_due = true;
			rpl__ctx_leave(pushed);
			def_clear();
			ctx_fail(ctx, "ordering streams after a graph launch failed");
			return;
		}
	}
	rpl__ctx_leave(pushed);
	if (rc != CUDA_SUCCESS) {
		flush_eager(RPL_FB_LAUNCH);
		ctx_fail(ctx, "launching a graph failed");
		return;
	}
	g->launches++;
	g->patches += npatched;
	if (npatched) {
		g->patched_launches++;
		t->patched_launches++;
	}
	t->launches++;
	t->patches += npatched;
	t->ops_replayed += g->n;
	rpl__totals.graph_launches++;
	rpl__totals.patches += npatched;
	rpl__totals.ops_replayed += g->n;
	def_clear();
	check_churn(t);
}

/* A candidate with exactly the deferred run as one of its segments, and that segment. */
static struct rpl_template *whole_segment(uint32_t *k)
{
	for (uint32_t c = 0; c < st.ncand; c++) {
		struct rpl_template *t = st.cand[c];
		int32_t s;

		if (st.def_first >= t->nops)
			continue;
		s = t->ops[st.def_first].seg;
		if (s >= 0 && t->segs[s].first == st.def_first && t->segs[s].n == st.ndef) {
			*k = (uint32_t)s;
			return t;
		}
	}
	return NULL;
}

/* Submit what is deferred: as a graph when it is a whole segment, else eagerly. */
static CUresult submit_deferred(enum rpl_fallback why)
{
	struct rpl_template *t;
	uint32_t k;

	if (!st.ndef)
		return CUDA_SUCCESS;
	t = whole_segment(&k);
	if (t) {
		launch_seg(t, k);
		return CUDA_SUCCESS;
	}
	return flush_eager(why);
}

/* ------------------------------------------------------------------ matching */

static enum rpl_verdict go_recording(enum rpl_fallback why)
{
	submit_deferred(why);
	st.mstate = RPL_M_RECORDING;
	st.ncand = 0;
	st.ended = NULL;
	return RPL_EAGER;
}

/* A window's first op: the last window's time is known now (gate.c). */
static void gate_window_start(void)
{
	uint64_t now = rpl__gate_clock();

	if (st.pend.valid && st.pend.note && st.win_t0) {
		struct rpl_shape_note *n = st.pend.note;
		uint64_t dt = now - st.pend.t0;
		struct cap_shape *s = n->tpl ? n->tpl->shape : NULL;

		dt = dt > st.pend.exclude ? dt - st.pend.exclude : 0;
		rpl__gate_sample(&n->gate, st.pend.replayed, dt + st.pend.charge, s ? cap_shape_sightings(s) : 0,
				 n->tpl ? n->tpl->shape_id : 0, st.cfg.gate);
	}
	st.pend.valid = false;
	st.win_t0 = now;
	st.win_deferred = false;
}

/* Start a window: the templates whose first op has op's key (and context), and whose shape's
 * replay pays or is being tried (gate.c). */
static void pick_candidates(const struct cap_op *op)
{
	st.ncand = 0;
	for (struct rpl_template *t = st.templates; t && st.ncand < RPL_MAX_CAND; t = t->next) {
		struct rpl_shape_note *n;

		if (t->ops[0].key != op->key || t->ctx != op->ctx)
			continue;
		n = note_of(t->shape);
		if (n && !rpl__gate_allows(&n->gate, cap_shape_sightings(t->shape)))
			continue;
		st.cand[st.ncand++] = t;
	}
}

static bool agrees(const struct rpl_template *t, const struct cap_op *op, uint32_t d, enum rpl_cls cls)
{
	return d < t->nops && t->ops[d].key == op->key && t->ops[d].cls == cls;
}

/* Keep the candidates that agree with op at position d; when none does, keep them all (the
 * deferred run may still be a whole segment of one of them) and return false. */
static bool filter_candidates(const struct cap_op *op, uint32_t d, enum rpl_cls cls)
{
	uint32_t j = 0;

	for (uint32_t i = 0; i < st.ncand; i++)
		j += agrees(st.cand[i], op, d, cls);
	if (!j)
		return false;
	j = 0;
	for (uint32_t i = 0; i < st.ncand; i++)
		if (agrees(st.cand[i], op, d, cls))
			st.cand[j++] = st.cand[i];
	st.ncand = j;
	return true;
}

/* Whether the leading candidate's segment of position d ends right after d. Candidates agree on
 * every op so far but may cut differently (cuts depend on a template's length and rewrites);
 * the window follows the cuts of the candidate most windows have followed to the end (the
 * first of equals: the newest), so a shape the program runs most goes as whole graphs, and a
 * window that turns out to be another shape submits at most the rest of one segment eagerly. */
static bool segment_ends_at(uint32_t d)
{
	const struct rpl_template *lead = st.cand[0];
	const struct rpl_seg *g;

	for (uint32_t i = 1; i < st.ncand; i++)
		if (st.cand[i]->windows > lead->windows)
			lead = st.cand[i];
	g = &lead->segs[lead->ops[d].seg];
	return g->first + g->n == d + 1;
}

enum rpl_verdict rpl_op(const struct cap_op *op)
{
	enum rpl_verdict v = RPL_DEFER;
	enum rpl_cls cls;
	uint64_t t0 = 0;
	uint32_t d;
	bool timed;

	if (!st.ready)
		return RPL_EAGER;
	if (cf_unlikely(st.stopped)) {
		if (CF_NEVER(st.ndef != 0))
			submit_deferred(RPL_FB_BOUNDARY);
		return RPL_EAGER;
	}
	if (st.mstate == RPL_M_RECORDING) {
		if (CF_NEVER(st.ndef != 0))
			submit_deferred(RPL_FB_BOUNDARY);
		return RPL_EAGER;
	}
	if (cf_unlikely(st.nfailed) && rpl_ctx_is_failed(op->ctx))
		return go_recording(RPL_FB_MISMATCH);
	timed = (rpl__totals.matched_ops++ & 15) == 0;
	if (timed)
		t0 = cf_now_ns();
	d = st.depth;
	cls = rpl__classify(op);
	if (st.mstate == RPL_M_FRESH) {
		gate_window_start();
		pick_candidates(op);
		st.mstate = RPL_M_MATCHING;
	}
	if (!filter_candidates(op, d, cls)) {
		st.depth = d + 1;
		return go_recording(RPL_FB_MISMATCH);
	}
	st.depth = d + 1;
	st.ended = NULL;
	for (uint32_t i = 0; i < st.ncand; i++)
		if (st.cand[i]->nops == d + 1)
			st.ended = st.cand[i];
	if (cls == RPL_CLS_EAGER) {
		/* the run before it is a whole segment of every candidate (invariant 3) */
		submit_deferred(RPL_FB_BOUNDARY);
		return RPL_EAGER;
	}
	if (defer(op, d) != 0)
		return go_recording(RPL_FB_NOMEM);
	if (segment_ends_at(d)) {
		submit_deferred(RPL_FB_BOUNDARY);
		v = RPL_DEFER;
	} else if (timed) {
		uint64_t dt = cf_now_ns() - t0;

		/* a sample that long was preempted or faulted: it measures the machine, not us */
		if (dt < RPL_SAMPLE_MAX_NS) {
			rpl__totals.match_ns += dt > st.clock_ns ? dt - st.clock_ns : 0;
			rpl__totals.match_samples++;
		}
	}
	return v;
}

void rpl_stop(void)
{
	if (!st.ready)
		return;
	rpl_flush();
	st.stopped = true;
	rpl__errors_at_exit();
}

bool rpl_take_wait(struct rpl_wait *w)
{
	if (cf_likely(!st.wait_due))
		return false;
	*w = st.wait;
	st.wait_due = false;
	return true;
}

/* Outside the lock: the calls are not counted (the totals are the lock's). */
void rpl_wait(const struct rpl_wait *w)
{
	CUcontext cur = NULL, dummy;
	bool pushed = false;

	if (w->ctx && (SHIM_REAL(cuCtxGetCurrent)(&cur) != CUDA_SUCCESS || cur != w->ctx))
		pushed = SHIM_REAL(cuCtxPushCurrent_v2)(w->ctx) == CUDA_SUCCESS;
	SHIM_REAL(cuStreamSynchronize)(w->stream);
	if (pushed)
		SHIM_REAL(cuCtxPopCurrent_v2)(&dummy);
}

void rpl_op_failed(void)
{
	/* the window no longer has the op the templates expect at this position */
	if (st.mstate == RPL_M_MATCHING)
		go_recording(RPL_FB_MISMATCH);
}

bool rpl_has_deferred(void)
{
	return st.ndef != 0;
}

bool rpl_deferred_from(uint32_t *first)
{
	if (!st.ndef)
		return false;
	*first = st.def_first;
	return true;
}

static CUresult flush_for(enum rpl_fallback why)
{
	CUresult rc;

	if (!st.ready || (st.mstate != RPL_M_MATCHING && !st.ndef))
		return CUDA_SUCCESS;
	rc = submit_deferred(why);
	st.mstate = RPL_M_RECORDING;
	st.ncand = 0;
	return rc;
}

CUresult rpl_flush(void)
{
	return flush_for(RPL_FB_BOUNDARY);
}

bool rpl_poll(uint32_t tid)
{
	uint64_t now;

	if (!st.ndef)
		return false;
	if (st.def[st.ndef - 1].tid != tid) {
		now = cf_now_ns();
		if (!st.poll_t0 || st.poll_ndef != st.ndef) {
			st.poll_ndef = st.ndef; /* still growing: its thread is issuing the step */
			st.poll_t0 = now;
		}
		if (now - st.poll_t0 < RPL_POLL_STALL_NS) {
			rpl__totals.polls_not_ready++;
			return true;
		}
	}
	/* submitted (eagerly unless it is a whole segment) and the window goes on matching: the
	 * next run starts mid-segment and goes eagerly at the leader's next cut, and the segments
	 * after that go as graphs again (a poll costs at most one more partial segment) */
	submit_deferred(RPL_FB_POLL);
	return false;
}

void rpl_window_closed(struct cap_shape *s)
{
	struct rpl_shape_note *n;
	struct rpl_template *ended = st.ended, *t;
	const char *why = NULL;
	bool own_failure = false;
	uint64_t build_t0;

	if (!st.ready)
		return;
	if (st.ndef)
		rpl_flush();
	st.mstate = RPL_M_FRESH;
	st.depth = 0;
	st.ncand = 0;
	st.ended = NULL;
	if (!s)
		return; /* nothing closed (an empty window): the last window's sample still waits */
	st.pend.valid = false;
	n = note_of(s);
	if (!n) {
		struct note_link *l = calloc(1, sizeof(*l));

		if (!l)
			return;
		l->shape = s;
		l->next = notes_all;
		notes_all = l;
		n = &l->note;
		cap_shape_set_user(s, n);
	}
	/* its time is taken when the next window starts: replayed to the end, or wholly eager */
	st.pend.note = n;
	st.pend.replayed = n->tpl && ended == n->tpl;
	st.pend.valid = st.win_t0 && (st.pend.replayed || !st.win_deferred);
	st.pend.t0 = st.win_t0;
	st.pend.exclude = 0;
	st.pend.charge = 0;
	if (st.pend.replayed && rpl__gate_is_modeled())
		st.pend.charge = (uint64_t)(rpl_host_ns_per_op() * (double)n->tpl->nops);
	if (n->tpl) {
		if (ended == n->tpl)
			n->tpl->windows++;
		return;
	}
	if (n->rejected)
		return;
	if (cap_shape_sightings(s) < st.cfg.warmup ||
	    (n->retired_at && cap_shape_sightings(s) - n->retired_at < st.cfg.warmup))
		return;
	{
		const struct cap_window *w = cap_shape_last(s);

		if (!w || !cap_window_nops(w) || rpl_ctx_is_failed(cap_window_op(w, 0)->ctx))
			return;
	}
	build_t0 = rpl__gate_clock();
	if (n->guard_retires >= RPL_GUARD_RETIRES) {
		/* its bindings keep breaking the plans' guards: replay it as it is */
		struct rpl_config plain = st.cfg;

		plain.opt = RPL_OPT_NONE;
		t = rpl__template_build(s, &plain, &why, &own_failure);
	} else {
		t = rpl__template_build(s, &st.cfg, &why, &own_failure);
	}
	st.pend.exclude = rpl__gate_clock() - build_t0; /* the build is not the window's time */
	if (!t) {
		n->rejected = true;
		n->why = why;
		if (own_failure) {
			rpl__totals.fallbacks[RPL_FB_BUILD]++;
			ctx_fail(cap_window_op(cap_shape_last(s), 0)->ctx, "building a graph failed");
		}
		return;
	}
	n->tpl = t;
	t->next = st.templates;
	if (st.templates)
		st.templates->prev = t;
	st.templates = t;
	rpl__totals.templates++;
	rpl__totals.templates_live++;
	rpl__totals.segments += t->nsegs;
}

void rpl_shape_evicted(struct cap_shape *s)
{
	struct rpl_shape_note *n = note_of(s);
	struct note_link **pl;

	if (!n)
		return;
	if (n->tpl)
		template_retire(n->tpl, "its window shape was evicted (CUFOLD_MAX_TEMPLATES)");
	if (st.pend.note == n)
		st.pend.valid = false;
	cap_shape_set_user(s, NULL);
	for (pl = &notes_all; *pl; pl = &(*pl)->next) {
		if (&(*pl)->note == n) {
			struct note_link *l = *pl;

			*pl = l->next;
			free(l);
			break;
		}
	}
}

void rpl_memory_released(uint64_t base, uint64_t size)
{
	struct rpl_template *t, *next;

	if (!st.ready || !size)
		return;
	for (t = st.templates; t; t = next) {
		struct rpl_shape_note *n = note_of(t->shape);

		next = t->next;
		if (n && n->patch_frees)
			continue;
		if (!rpl__template_references(t, base, size))
			continue;
		/* deferred ops of t were submitted by the flush before this free */
		if (st.ndef)
			rpl_flush();
		t->fallbacks[RPL_FB_FREE]++;
		rpl__totals.fallbacks[RPL_FB_FREE]++;
		if (n && ++n->free_retires >= RPL_FREE_RETIRES)
			n->patch_frees = true; /* it allocates per step: patching covers the moves */
		template_retire(t, "memory it references was freed");
	}
}

static bool references_event(const struct rpl_template *t, CUevent e)
{
	for (uint32_t k = 0; k < t->nsegs; k++)
		for (uint32_t i = 0; i < t->segs[k].n; i++)
			if (t->segs[k].nodes[i].event == e)
				return true;
	return false;
}

void rpl_event_destroyed(CUevent e)
{
	struct rpl_template *t, *next;

	if (!st.ready || !e)
		return;
	for (t = st.templates; t; t = next) {
		next = t->next;
		if (references_event(t, e))
			template_retire(t, "an event it records or waits for was destroyed");
	}
}

void rpl_functions_unloaded(void)
{
	while (st.ready && st.templates)
		template_retire(st.templates, "a module or library was unloaded");
}

void rpl_context_destroyed(CUcontext ctx)
{
	struct rpl_template *t, *next;

	if (!st.ready)
		return;
	for (t = st.templates; t; t = next) {
		next = t->next;
		if (!ctx || t->ctx == ctx)
			template_retire(t, "its context was destroyed");
	}
}

void rpl_context_gone(CUcontext ctx)
{
	rw_kernels_forget(ctx);
}

/* ------------------------------------------------------------------ statistics */

void rpl_get_totals(struct rpl_totals *t)
{
	*t = rpl__totals;
}

double rpl_host_ns_per_op(void)
{
	return rpl__totals.match_samples ? (double)rpl__totals.match_ns / (double)rpl__totals.match_samples : 0.0;
}

size_t rpl_memory_bytes(void)
{
	size_t n = sizeof(st) + st.capdef * sizeof(*st.def) + st.arena.reserved;

	for (struct rpl_template *t = st.templates; t; t = t->next)
		n += rpl__template_bytes(t);
	for (struct note_link *l = notes_all; l; l = l->next)
		n += sizeof(*l);
	return n;
}
