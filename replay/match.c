/* match.c - the replay state machine: following templates call by call (candidates, the
 * segment cuts they follow), deferring matched ops, and the window's start and close; the
 * state and lifecycle the other replay files share (launch.c submits what is deferred,
 * retire.c retires templates). replay layer; owns the matcher's state (struct rpl_state) and
 * the list of templates.
 *
 * Invariants:
 *  1. Callers serialize (the engine's mutex). Deferred ops are deep copies (parameters in
 *     replay's own arena), so they never point into the program's memory or into a capture
 *     window that may be recycled.
 *  2. Every deferred op is one of the window's ops in order, and the deferred ops are exactly
 *     the ops [def_first, def_first + ndef) of the window: a contiguous run of graphable ops
 *     (on any of its streams) that ends at the window's depth; it is one whole segment of a
 *     candidate only when the cuts it followed were that candidate's (invariant 3), else it goes
 *     eagerly when submitted. Nothing else of the program is
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/compiler.h"
#include "common/errors.h"
#include "common/log.h"
#include "replay/replay_int.h"

struct rpl_totals rpl__totals;

#define RPL_SAMPLE_MAX_NS 20000 /* a timed match longer than this is not counted (preemption) */

struct rpl_state rpl__st;

/* Every live note. */
struct note_link *rpl__notes;

static const char *const fallback_names[RPL_FB_COUNT] = {
#define RPL_FALLBACK_NAME_(name, label) #name,
	RPL_FALLBACK_LIST(RPL_FALLBACK_NAME_)
#undef RPL_FALLBACK_NAME_
};

const char *rpl_fallback_name(enum rpl_fallback f)
{
	return (unsigned)f < RPL_FB_COUNT ? fallback_names[f] : "?";
}

static const char *const fallback_labels[RPL_FB_COUNT] = {
#define RPL_FALLBACK_LABEL_(name, label) label,
	RPL_FALLBACK_LIST(RPL_FALLBACK_LABEL_)
#undef RPL_FALLBACK_LABEL_
};

static uint64_t strict_events; /* fallbacks CUFOLD_STRICT counts (rpl_strict_events) */
static uint32_t strict_logged; /* bit per fallback kind logged, bit RPL_FB_COUNT: passthrough */

/* Whether a fallback is one CUFOLD_STRICT counts: cufold's own failure, or a failed guard. */
static bool fallback_is_strict(enum rpl_fallback why)
{
	return why == RPL_FB_BUILD || why == RPL_FB_PATCH || why == RPL_FB_LAUNCH || why == RPL_FB_NOMEM ||
	       why == RPL_FB_GUARD;
}

static void strict_note(unsigned kind, const char *name, const char *what)
{
	strict_events++;
	if (!rpl__st.cfg.strict || (strict_logged & (1u << kind)))
		return;
	strict_logged |= 1u << kind;
	cf_log_err("CUFOLD_STRICT: %s (%s); the program's results are unchanged, but a program that exits with "
		   "status 0 will exit with status 70", name, what);
}

void rpl__fallback_note(struct rpl_template *t, enum rpl_fallback why)
{
	rpl__totals.fallbacks[why]++;
	if (t)
		t->fallbacks[why]++;
	if (fallback_is_strict(why)) {
		char name[32];

		rpl__mark_event("fallback", rpl_fallback_name(why));
		snprintf(name, sizeof(name), "a %s fallback", rpl_fallback_name(why));
		strict_note(why, name, fallback_labels[why]);
	}
}

void rpl__passthrough_note(const char *what)
{
	rpl__mark_event("passthrough", what);
	strict_note(RPL_FB_COUNT, "a context sent to passthrough", what);
}

uint64_t rpl_strict_events(void)
{
	return strict_events;
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

/* ------------------------------------------------------------------ set-up */

int rpl_init(const struct rpl_config *cfg)
{
	if (rpl__st.ready)
		return 0;
	memset(&rpl__st, 0, sizeof(rpl__st));
	rpl__st.cfg = *cfg;
	if (!rpl__st.cfg.segment)
		rpl__st.cfg.segment = 1;
	if (!rpl__st.cfg.warmup)
		rpl__st.cfg.warmup = 1;
	cf_arena_init(&rpl__st.arena, 16 * 1024);
	rpl__gate_init();
	rpl__mark_init();
	/* what reading the clock itself costs, taken out of the matching cost measured */
	{
		uint64_t t0 = cf_now_ns(), t1;

		for (int i = 0; i < 64; i++)
			t1 = cf_now_ns();
		t1 = cf_now_ns();
		rpl__st.clock_ns = (t1 - t0) / 66;
	}
	rpl__st.ready = true;
	return 0;
}

static void templates_drop_all(void)
{
	struct rpl_template *t = rpl__st.templates, *next;

	for (struct rpl_template *r = rpl__st.retired; r; r = next) {
		next = r->next;
		rpl__template_destroy(r);
	}
	rpl__st.retired = NULL;
	for (; t; t = next) {
		next = t->next;
		if (rpl__st.no_driver) {
			/* the parent's graphs: only host memory is ours to free */
			t->join_ev = t->fork_ev = NULL;
			for (uint32_t k = 0; k < t->nsegs; k++) {
				for (uint32_t j = 0; t->segs[k].parts && j < t->segs[k].nparts; j++) {
					t->segs[k].parts[j].exec = NULL;
					t->segs[k].parts[j].graph = NULL;
					t->segs[k].parts[j].done_ev = NULL;
				}
				for (uint32_t i = 0; t->segs[k].nodes && i < t->segs[k].n; i++)
					t->segs[k].nodes[i].stage = NULL;
			}
		}
		rpl__template_destroy(t);
	}
	rpl__st.templates = NULL;
}

static void notes_free(void)
{
	struct note_link *l = rpl__notes, *next;

	for (; l; l = next) {
		next = l->next;
		if (!rpl__st.no_driver && cap_is_ready() && cap_shape_user(l->shape) == &l->note)
			cap_shape_set_user(l->shape, NULL);
		free(l);
	}
	rpl__notes = NULL;
}

void rpl_fini(void)
{
	if (!rpl__st.ready)
		return;
	rpl_flush();
	templates_drop_all();
	notes_free();
	free(rpl__st.def);
	cf_arena_fini(&rpl__st.arena);
	memset(&rpl__st, 0, sizeof(rpl__st));
}

void rpl_atfork_child(void)
{
	struct rpl_config cfg = rpl__st.cfg;

	if (!rpl__st.ready)
		return;
	/* The parent flushed before forking; whatever is left belongs to the parent. */
	rpl__st.ndef = 0;
	rpl__st.no_driver = true;
	templates_drop_all();
	notes_free();
	free(rpl__st.def);
	cf_arena_fini(&rpl__st.arena);
	memset(&rpl__st, 0, sizeof(rpl__st));
	memset(&rpl__totals, 0, sizeof(rpl__totals));
	strict_events = 0; /* the parent's failures are the parent's exit status */
	strict_logged = 0;
	rpl__errors_reset();
	rpl_init(&cfg);
}

struct rpl_template *rpl__templates(void)
{
	return rpl__st.templates;
}

struct rpl_template *rpl__retired(void)
{
	return rpl__st.retired;
}

/* ------------------------------------------------------------------ matching */

/* The matcher's state between calls (debug builds: cf_assert compiles out in release). */
static void state_check(void)
{
	/* invariant 2: the deferred ops are the window's ops [def_first, depth), in order */
	cf_assert(!rpl__st.ndef || rpl__st.def_first + rpl__st.ndef == rpl__st.depth);
	/* invariants 4 and 10: only a matching window keeps ops, and none after rpl_stop */
	cf_assert(!rpl__st.ndef || (rpl__st.mstate == RPL_M_MATCHING && !rpl__st.stopped));
	/* invariant 3: a matching window follows 1..RPL_MAX_CAND candidates; a fresh one none yet */
	cf_assert(rpl__st.ncand <= RPL_MAX_CAND);
	cf_assert(rpl__st.mstate != RPL_M_MATCHING || rpl__st.ncand > 0);
	cf_assert(rpl__st.mstate != RPL_M_FRESH || (rpl__st.depth == 0 && rpl__st.ncand == 0));
}

static enum rpl_verdict go_recording(enum rpl_fallback why)
{
	rpl__submit_deferred(why);
	cf_assert(rpl__st.ndef == 0); /* invariant 4: nothing deferred while recording */
	rpl__st.mstate = RPL_M_RECORDING;
	rpl__st.ncand = 0;
	rpl__st.ended = NULL;
	return RPL_EAGER;
}

/* A window's first op: the last window's time is known now (gate.c). */
static void gate_window_start(void)
{
	uint64_t now = rpl__gate_clock();

	if (rpl__st.pend.valid) { /* valid: a note and a start time (rpl_window_closed) */
		struct rpl_shape_note *n = rpl__st.pend.note;
		uint64_t dt = now - rpl__st.pend.t0;
		struct cap_shape *s = n->tpl ? n->tpl->shape : NULL;

		dt = dt > rpl__st.pend.exclude ? dt - rpl__st.pend.exclude : 0;
		if (rpl__gate_sample(&n->gate, rpl__st.pend.replayed, dt + rpl__st.pend.charge,
				     s ? cap_shape_sightings(s) : 0, n->tpl ? n->tpl->shape_id : 0, rpl__st.cfg.gate,
				     n->tpl && rpl__template_max_seg(n->tpl) > RPL_SEG_SMALL) &&
		    n->tpl)
			rpl__template_retire(n->tpl, "the gate rebuilds it with other segment cuts");
	}
	rpl__st.pend.valid = false;
	rpl__st.win_t0 = now;
	rpl__st.win_deferred = false;
}

/* Start a window: the templates whose first op has op's key (and context), and whose shape's
 * replay pays or is being tried (gate.c). */
static void pick_candidates(const struct cap_op *op)
{
	rpl__st.ncand = 0;
	for (struct rpl_template *t = rpl__st.templates; t && rpl__st.ncand < RPL_MAX_CAND; t = t->next) {
		struct rpl_shape_note *n;

		if (t->ops[0].key != op->key || t->ctx != op->ctx)
			continue;
		n = rpl__note_of(t->shape);
		if (n && !rpl__gate_allows(&n->gate, cap_shape_sightings(t->shape)))
			continue;
		rpl__st.cand[rpl__st.ncand++] = t;
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

	for (uint32_t i = 0; i < rpl__st.ncand; i++)
		j += agrees(rpl__st.cand[i], op, d, cls);
	if (!j)
		return false;
	j = 0;
	for (uint32_t i = 0; i < rpl__st.ncand; i++)
		if (agrees(rpl__st.cand[i], op, d, cls))
			rpl__st.cand[j++] = rpl__st.cand[i];
	rpl__st.ncand = j;
	return true;
}

/* Whether the leading candidate's segment of position d ends right after d. Candidates agree on
 * every op so far but may cut differently (cuts depend on a template's length and rewrites);
 * the window follows the cuts of the candidate most windows have followed to the end (the
 * first of equals: the newest), so a shape the program runs most goes as whole graphs, and a
 * window that turns out to be another shape submits at most the rest of one segment eagerly. */
static bool segment_ends_at(uint32_t d)
{
	const struct rpl_template *lead = rpl__st.cand[0];
	const struct rpl_seg *g;

	for (uint32_t i = 1; i < rpl__st.ncand; i++)
		if (rpl__st.cand[i]->windows > lead->windows)
			lead = rpl__st.cand[i];
	/* invariant 3: every candidate has op d, of the class graph, so it lies in a segment */
	cf_assert(d < lead->nops && lead->ops[d].cls == RPL_CLS_GRAPH && lead->ops[d].seg >= 0);
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

	if (!rpl__st.ready)
		return RPL_EAGER;
	state_check();
	if (cf_unlikely(rpl__st.stopped)) {
		if (CF_NEVER(rpl__st.ndef != 0))
			rpl__submit_deferred(RPL_FB_BOUNDARY);
		return RPL_EAGER;
	}
	if (rpl__st.mstate == RPL_M_RECORDING) {
		if (CF_NEVER(rpl__st.ndef != 0))
			rpl__submit_deferred(RPL_FB_BOUNDARY);
		return RPL_EAGER;
	}
	if (cf_unlikely(rpl__st.nfailed) && rpl_ctx_is_failed(op->ctx))
		return go_recording(RPL_FB_MISMATCH);
	timed = (rpl__totals.matched_ops++ & 15) == 0;
	if (timed)
		t0 = cf_now_ns();
	d = rpl__st.depth;
	cls = rpl__classify(op);
	if (rpl__st.mstate == RPL_M_FRESH) {
		gate_window_start();
		pick_candidates(op);
		rpl__st.mstate = RPL_M_MATCHING;
	}
	if (!filter_candidates(op, d, cls)) {
		rpl__st.depth = d + 1;
		return go_recording(RPL_FB_MISMATCH);
	}
	rpl__st.depth = d + 1;
	cf_assert(rpl__st.ncand > 0 && rpl__st.ncand <= RPL_MAX_CAND); /* invariant 3 */
	rpl__st.ended = NULL;
	for (uint32_t i = 0; i < rpl__st.ncand; i++)
		if (rpl__st.cand[i]->nops == d + 1)
			rpl__st.ended = rpl__st.cand[i];
	if (cls == RPL_CLS_EAGER) {
		/* the run before it goes first: as a candidate's graph when it is one of its whole
		 * segments, else eagerly (invariant 3) */
		rpl__submit_deferred(RPL_FB_BOUNDARY);
		return RPL_EAGER;
	}
	if (rpl__defer(op, d) != 0)
		return go_recording(RPL_FB_NOMEM);
	if (segment_ends_at(d)) {
		rpl__submit_deferred(RPL_FB_BOUNDARY);
		v = RPL_DEFER;
	} else if (timed) {
		uint64_t dt = cf_now_ns() - t0;

		/* a sample that long was preempted or faulted: it measures the machine, not us */
		if (dt < RPL_SAMPLE_MAX_NS) {
			rpl__totals.match_ns += dt > rpl__st.clock_ns ? dt - rpl__st.clock_ns : 0;
			rpl__totals.match_samples++;
		}
	}
	return v;
}

void rpl_stop(void)
{
	if (!rpl__st.ready)
		return;
	rpl_flush();
	cf_assert(rpl__st.ndef == 0); /* invariant 10: nothing deferred after rpl_stop */
	rpl__st.stopped = true;
	rpl__errors_at_exit();
}

bool rpl_take_wait(struct rpl_wait *w)
{
	if (cf_likely(!rpl__st.wait_due))
		return false;
	*w = rpl__st.wait;
	rpl__st.wait_due = false;
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
	if (rpl__st.mstate == RPL_M_MATCHING)
		go_recording(RPL_FB_MISMATCH);
}

bool rpl_has_deferred(void)
{
	return rpl__st.ndef != 0;
}

bool rpl_deferred_from(uint32_t *first)
{
	if (!rpl__st.ndef)
		return false;
	*first = rpl__st.def_first;
	return true;
}

CUresult rpl_flush(void)
{
	CUresult rc;

	if (!rpl__st.ready || (rpl__st.mstate != RPL_M_MATCHING && !rpl__st.ndef))
		return CUDA_SUCCESS;
	rc = rpl__submit_deferred(RPL_FB_BOUNDARY);
	rpl__st.mstate = RPL_M_RECORDING;
	rpl__st.ncand = 0;
	state_check(); /* invariant 4: recording, nothing deferred */
	return rc;
}

bool rpl_poll(uint32_t tid)
{
	uint64_t now;

	if (!rpl__st.ndef)
		return false;
	if (rpl__st.def[rpl__st.ndef - 1].tid != tid) {
		now = cf_now_ns();
		if (!rpl__st.poll_t0 || rpl__st.poll_ndef != rpl__st.ndef) {
			rpl__st.poll_ndef = rpl__st.ndef; /* still growing: its thread is issuing the step */
			rpl__st.poll_t0 = now;
		}
		if (now - rpl__st.poll_t0 < RPL_POLL_STALL_NS) {
			rpl__totals.polls_not_ready++;
			return true;
		}
	}
	/* submitted (eagerly unless it is a whole segment) and the window goes on matching: the
	 * next run starts mid-segment and goes eagerly at the leader's next cut, and the segments
	 * after that go as graphs again (a poll costs at most one more partial segment) */
	rpl__submit_deferred(RPL_FB_POLL);
	return false;
}

/* Build shape s's template (note n) from its last window, link it in, or mark the shape
 * rejected; the build's time is kept out of the window's sample. */
static void template_make(struct cap_shape *s, struct rpl_shape_note *n)
{
	struct rpl_config cfg = rpl__st.cfg; /* the configuration its template is built with */
	uint64_t build_t0 = rpl__gate_clock(), wall_t0 = cf_now_ns(), wall;
	const char *why = NULL;
	bool own_failure = false;
	struct rpl_template *t;

	rpl__mark_build_begin(cap_shape_id(s));
	if (n->guard_retires >= RPL_GUARD_RETIRES)
		cfg.opt = RPL_OPT_NONE; /* its bindings keep breaking the plans' guards: as it is */
	if (n->gate.cuts && cfg.segment > RPL_SEG_SMALL)
		cfg.segment = RPL_SEG_SMALL; /* its big segments lost (gate.c): small ones */
	t = rpl__template_build(s, &cfg, &why, &own_failure);
	rpl__mark_end();
	wall = cf_now_ns() - wall_t0;
	if (wall > rpl__totals.build_ns_max) { /* the report's worst window close */
		rpl__totals.build_ns_max = wall;
		rpl__totals.build_ops_max = cap_window_nops(cap_shape_last(s));
	}
	rpl__st.pend.exclude = rpl__gate_clock() - build_t0; /* the build is not the window's time */
	if (!t) {
		n->rejected = true;
		n->why = why;
		if (own_failure) {
			rpl__fallback_note(NULL, RPL_FB_BUILD);
			rpl__ctx_fail(cap_window_op(cap_shape_last(s), 0)->ctx, "building a graph failed");
		}
		return;
	}
	n->tpl = t;
	t->next = rpl__st.templates;
	if (rpl__st.templates)
		rpl__st.templates->prev = t;
	rpl__st.templates = t;
	rpl__totals.templates++;
	rpl__totals.templates_live++;
	rpl__totals.segments += t->nsegs;
}

/* The note of shape s, made on first use (NULL: out of memory). */
static struct rpl_shape_note *note_get(struct cap_shape *s)
{
	struct rpl_shape_note *n = rpl__note_of(s);
	struct note_link *l;

	if (n)
		return n;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->shape = s;
	l->next = rpl__notes;
	rpl__notes = l;
	cap_shape_set_user(s, &l->note);
	return &l->note;
}

void rpl_window_closed(struct cap_shape *s)
{
	struct rpl_template *ended = rpl__st.ended;
	const struct cap_window *w;
	struct rpl_shape_note *n;

	if (!rpl__st.ready)
		return;
	if (rpl__st.ndef)
		rpl_flush();
	rpl__st.mstate = RPL_M_FRESH;
	rpl__st.depth = 0;
	rpl__st.ncand = 0;
	rpl__st.ended = NULL;
	state_check(); /* invariant 2: a deferred run never outlives its window */
	if (!s)
		return; /* nothing closed (an empty window): the last window's sample still waits */
	rpl__st.pend.valid = false;
	n = note_get(s);
	if (!n)
		return;
	/* its time is taken when the next window starts: replayed to the end, or wholly eager */
	rpl__st.pend.note = n;
	rpl__st.pend.replayed = n->tpl && ended == n->tpl;
	rpl__st.pend.valid = rpl__st.win_t0 && (rpl__st.pend.replayed || !rpl__st.win_deferred);
	rpl__st.pend.t0 = rpl__st.win_t0;
	rpl__st.pend.exclude = 0;
	rpl__st.pend.charge = 0;
	if (rpl__st.pend.replayed && rpl__gate_is_modeled())
		rpl__st.pend.charge = (uint64_t)(rpl_host_ns_per_op() * (double)n->tpl->nops);
	if (n->tpl) {
		if (ended == n->tpl)
			n->tpl->windows++;
		return;
	}
	if (n->rejected || cap_shape_sightings(s) < rpl__st.cfg.warmup ||
	    (n->retired_at && cap_shape_sightings(s) - n->retired_at < rpl__st.cfg.warmup))
		return;
	w = cap_shape_last(s);
	if (!w || !cap_window_nops(w) || rpl_ctx_is_failed(cap_window_op(w, 0)->ctx))
		return;
	template_make(s, n);
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
	size_t n = sizeof(rpl__st) + rpl__st.capdef * sizeof(*rpl__st.def) + rpl__st.arena.reserved;

	for (struct rpl_template *t = rpl__st.templates; t; t = t->next)
		n += rpl__template_bytes(t);
	for (struct note_link *l = rpl__notes; l; l = l->next)
		n += sizeof(*l);
	return n;
}
