/* match.c - the replay state machine: following templates call by call (candidates, the
 * segment cuts they follow), deferring matched ops, and the window's start and close; the
 * state and lifecycle the other replay files share (launch.c submits what is deferred,
 * retire.c retires templates). replay layer; owns replay's part of the engine (struct
 * rpl_engine, replay_int.h: the matcher's state, the templates, totals, notes, deferred errors),
 * which every function here takes first; one per engine, so two engines never share a template.
 *
 * Invariants:
 *  1. Callers serialize (the engine's mutex), except rpl_build_run (invariant 11). Deferred
 *     ops never point into the program's memory: they are read in the open capture window's
 *     own slots (capture's deep copies), which capture keeps until it closes the window and
 *     tells replay first (rpl__def_keep makes them copies then), or are deep copies in
 *     replay's own buffer and arena (a staged pageable source, an op not in the open window),
 *     so never in a window that may be recycled.
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
 * 11. A template build runs outside the engine's mutex: rpl_window_closed only schedules it
 *     (one per engine at a time) with the shape's last window pinned, the engine's lock drop
 *     runs it (rpl_build_run reads only that window, its configuration and the driver, and
 *     writes only the build and the atomic own-call counter) and publishes it under the mutex
 *     again (rpl_build_publish) before the thread's own call goes on. What retired templates in
 *     between (frees, destroyed events, unloads, destroyed contexts: rpl__build_note) is
 *     applied to the result as it is published, as if it had been built at once; a build
 *     whose shape went, whose context failed, or that missed more retirements than it keeps,
 *     is discarded.
 *
 * A build's life:
 *
 *     rpl_window_closed --schedule, pin--> DUE --rpl_build_take (lock drop)--> RUNNING
 *         (outside the lock) --rpl_build_publish (under it)--> template linked in, shape
 *         rejected, or discarded (shape gone, context failed, stale); window unpinned
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
 *      rpl_window_closed (the window's shape may be scheduled for a build, invariant 11)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/compiler.h"
#include "common/config.h"
#include "common/errors.h"
#include "common/log.h"
#include "replay/replay_int.h"
#include "rewrite/effects.h"
#include "rewrite/kernels.h"

#define RPL_CLOCK_PAIRS 256     /* empty pairs of reads whose mean rpl_clock_pair_ns takes */

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


/* Whether a fallback is one CUFOLD_STRICT counts: cufold's own failure, or a failed guard. */
static bool fallback_is_strict(enum rpl_fallback why)
{
	return why == RPL_FB_BUILD || why == RPL_FB_PATCH || why == RPL_FB_LAUNCH || why == RPL_FB_NOMEM ||
	       why == RPL_FB_GUARD;
}

static void strict_note(struct rpl_engine *re, unsigned kind, const char *name, const char *what)
{
	re->strict_events++;
	if (!re->st.cfg.strict || (re->strict_logged & (1u << kind)))
		return;
	re->strict_logged |= 1u << kind;
	cf_log_err("CUFOLD_STRICT: %s (%s); the program's results are unchanged, but a program that exits with "
		   "status 0 will exit with status 70", name, what);
}

void rpl__fallback_note(struct rpl_engine *re, struct rpl_template *t, enum rpl_fallback why)
{
	re->totals.fallbacks[why]++;
	if (t)
		t->fallbacks[why]++;
	if (fallback_is_strict(why)) {
		char name[32];

		rpl__mark_event("fallback", rpl_fallback_name(why));
		snprintf(name, sizeof(name), "a %s fallback", rpl_fallback_name(why));
		strict_note(re, why, name, fallback_labels[why]);
	}
}

void rpl__passthrough_note(struct rpl_engine *re, const char *what)
{
	rpl__mark_event("passthrough", what);
	strict_note(re, RPL_FB_COUNT, "a context sent to passthrough", what);
}

uint64_t rpl_strict_events(struct rpl_engine *re)
{
	return re->strict_events;
}

void rpl__own_call(struct rpl_engine *re)
{
	/* atomic: template builds count their driver calls outside the lock */
	__atomic_fetch_add(&re->totals.own_calls, 1, __ATOMIC_RELAXED);
}

void rpl__ctx_enter(struct rpl_engine *re, CUcontext ctx, bool *pushed)
{
	CUcontext cur = NULL;

	*pushed = false;
	if (!ctx)
		return;
	rpl__own_call(re);
	if (DRV_REAL(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur == ctx)
		return;
	/* a refused push would submit another thread's op in no context (INVALID_CONTEXT at its
	 * next observation): try once more before giving up, and say so */
	for (int tries = 0; tries < 2 && !*pushed; tries++) {
		rpl__own_call(re);
		*pushed = DRV_REAL(cuCtxPushCurrent_v2)(ctx) == CUDA_SUCCESS;
	}
	if (!*pushed)
		cf_log_warn_once("replay: cannot make another thread's context current to submit its work; that "
				 "work fails and the program gets the error at its next synchronization");
}

void rpl__ctx_leave(struct rpl_engine *re, bool pushed)
{
	CUcontext dummy;

	if (!pushed)
		return;
	rpl__own_call(re);
	DRV_REAL(cuCtxPopCurrent_v2)(&dummy);
}

/* ------------------------------------------------------------------ set-up */

/* cf_now_ns, which is inline, as a function for rpl_calibrate_clocks */
static uint64_t now_ns(void)
{
	return cf_now_ns();
}

uint64_t rpl_clock_pair_ns(rpl_clock_fn clock)
{
	uint64_t sum = 0, n = 0;

	(void)clock(); /* the first read may fault in the vDSO's page or a thread's TLS block */
	(void)clock();
	for (int i = 0; i < RPL_CLOCK_PAIRS; i++) {
		uint64_t t0 = clock();
		uint64_t dt = clock() - t0;

		/* a pair that long was preempted: as a sample that long is not counted */
		if (dt < RPL_SAMPLE_MAX_NS) {
			sum += dt;
			n++;
		}
	}
	return n ? (sum + n / 2) / n : 0;
}

void rpl_calibrate_clocks(struct rpl_engine *re, rpl_clock_fn match_clock, rpl_clock_fn own_clock)
{
	re->st.clock_ns = rpl_clock_pair_ns(match_clock);
	re->st.own_clock_ns = rpl_clock_pair_ns(own_clock);
	cf_log_debug("an empty pair of clock reads: %llu ns (matching samples), %llu ns (own time samples)",
		     (unsigned long long)re->st.clock_ns, (unsigned long long)re->st.own_clock_ns);
}

struct rpl_engine *rpl_engine_create(struct cap_engine *cap, const struct rpl_config *cfg)
{
	struct rpl_engine *re = calloc(1, sizeof(*re));

	if (!re)
		return NULL;
	re->kernels = rw_kernels_create();
	if (!re->kernels) {
		free(re);
		return NULL;
	}
	re->cap = cap;
	re->rename.max = cf_config_get()->rename_max_bytes;
	re->st.cfg = *cfg;
	if (!re->st.cfg.segment)
		re->st.cfg.segment = 1;
	if (!re->st.cfg.warmup)
		re->st.cfg.warmup = 1;
	cf_arena_init(&re->st.arena, 16 * 1024);
	if (cap)
		cap_set_window_closing(cap, rpl__def_keep, re); /* deferred ops are read in its window */
	rpl__gate_init();
	rpl__mark_init();
	rpl_calibrate_clocks(re, now_ns, rpl_own_clock); /* after rpl__gate_init: the own clock's */
	re->st.ready = true;
	return re;
}

static void templates_drop_all(struct rpl_engine *re)
{
	struct rpl_template *t = re->st.templates, *next;

	for (struct rpl_template *r = re->st.retired; r; r = next) {
		next = r->next;
		rpl__template_destroy(re, r);
	}
	re->st.retired = NULL;
	for (; t; t = next) {
		next = t->next;
		rpl__template_destroy(re, t);
	}
	re->st.templates = NULL;
}

static void notes_free(struct rpl_engine *re)
{
	struct rpl_note_link *l = re->notes, *next;

	for (; l; l = next) {
		next = l->next;
		if (cap_is_ready(re->cap) && cap_shape_user(l->shape) == &l->note)
			cap_shape_set_user(l->shape, NULL);
		free(l);
	}
	re->notes = NULL;
}

void rpl_engine_destroy(struct rpl_engine *re)
{
	if (!re)
		return;
	if (re->head.build_due)
		cap_window_unpin(re->cap, re->st.build.w); /* scheduled, never run */
	free(re->st.build.allocs);
	rpl_flush(re);
	if (re->cap)
		cap_set_window_closing(re->cap, NULL, NULL); /* nothing is read in its windows now */
	templates_drop_all(re);
	notes_free(re);
	free(re->st.def);
	cf_arena_fini(&re->st.arena);
	rw_kernels_destroy(re->kernels);
	free(re);
}

struct rpl_template *rpl__templates(struct rpl_engine *re)
{
	return re->st.templates;
}

struct rpl_template *rpl__retired(struct rpl_engine *re)
{
	return re->st.retired;
}

/* ------------------------------------------------------------------ matching */

/* The matcher's state between calls (debug builds: cf_assert compiles out in release). */
static void state_check(struct rpl_engine *re)
{
	(void)re; /* release builds compile the checks out */
	/* invariant 2: the deferred ops are the window's ops [def_first, depth), in order */
	cf_assert(!re->st.ndef || re->st.def_first + re->st.ndef == re->st.depth);
	/* invariants 4 and 10: only a matching window keeps ops, and none after rpl_stop */
	cf_assert(!re->st.ndef || (re->st.mstate == RPL_M_MATCHING && !re->st.stopped));
	/* invariant 3: a matching window follows 1..RPL_MAX_CAND candidates; a fresh one none yet */
	cf_assert(re->st.ncand <= RPL_MAX_CAND);
	cf_assert(re->st.mstate != RPL_M_MATCHING || re->st.ncand > 0);
	cf_assert(re->st.mstate != RPL_M_FRESH || (re->st.depth == 0 && re->st.ncand == 0));
}

static enum rpl_verdict go_recording(struct rpl_engine *re, enum rpl_fallback why)
{
	rpl__submit_deferred(re, why);
	cf_assert(re->st.ndef == 0); /* invariant 4: nothing deferred while recording */
	re->st.mstate = RPL_M_RECORDING;
	re->st.ncand = 0;
	re->st.ended = NULL;
	return RPL_EAGER;
}

/* A window's first op: the last window's time is known now (gate.c). */
static void gate_window_start(struct rpl_engine *re)
{
	uint64_t now = rpl__gate_clock();

	if (re->st.pend.valid) { /* valid: a note and a start time (rpl_window_closed) */
		struct rpl_shape_note *n = re->st.pend.note;
		uint64_t dt = now - re->st.pend.t0;
		struct cap_shape *s = n->tpl ? n->tpl->shape : NULL;

		if (rpl__gate_sample(&n->gate, re->st.pend.replayed, dt + re->st.pend.charge,
				     s ? cap_shape_sightings(s) : 0, n->tpl ? n->tpl->shape_id : 0, re->st.cfg.gate,
				     n->tpl && rpl__template_max_seg(n->tpl) > RPL_SEG_SMALL) &&
		    n->tpl)
			rpl__template_retire(re, n->tpl, "the gate rebuilds it with other segment cuts");
	}
	re->st.pend.valid = false;
	re->st.win_t0 = now;
	re->st.win_deferred = false;
}

/* Start a window: the templates whose first op has op's key (and context), and whose shape's
 * replay pays or is being tried (gate.c). */
static void pick_candidates(struct rpl_engine *re, const struct cap_op *op)
{
	re->st.ncand = 0;
	for (struct rpl_template *t = re->st.templates; t && re->st.ncand < RPL_MAX_CAND; t = t->next) {
		struct rpl_shape_note *n;

		if (t->ops[0].key != op->key || t->ctx != op->ctx)
			continue;
		n = rpl__note_of(t->shape);
		if (n && !rpl__gate_allows(&n->gate, cap_shape_sightings(t->shape)))
			continue;
		re->st.cand[re->st.ncand++] = t;
	}
}

static bool agrees(const struct rpl_template *t, const struct cap_op *op, uint32_t d, enum rpl_cls cls)
{
	return d < t->nops && t->ops[d].key == op->key && t->ops[d].cls == cls;
}

/* Keep the candidates that agree with op at position d, in order, and note the last of them
 * that ends there (re->st.ended); when none does, keep them all (the deferred run may still be
 * a whole segment of one of them) and return false. One pass: the compaction writes nothing
 * until a candidate agrees, so a pass with none leaves the list as it was. */
static bool filter_candidates(struct rpl_engine *re, const struct cap_op *op, uint32_t d, enum rpl_cls cls)
{
	struct rpl_template *ended = NULL;
	uint32_t j = 0;

	if (re->st.ncand == 1) { /* the common case once a shape has one template: no compaction */
		struct rpl_template *t = re->st.cand[0];

		if (!agrees(t, op, d, cls))
			return false;
		re->st.ended = t->nops == d + 1 ? t : NULL;
		return true;
	}
	for (uint32_t i = 0; i < re->st.ncand; i++) {
		struct rpl_template *t = re->st.cand[i];

		if (!agrees(t, op, d, cls))
			continue;
		re->st.cand[j++] = t;
		if (t->nops == d + 1)
			ended = t;
	}
	if (!j)
		return false;
	re->st.ncand = j;
	re->st.ended = ended;
	return true;
}

/* op's class (rpl__classify) at position d: the first candidate's op d's when op has its value
 * identity and flags (issue 22). Ops of one vid share every field classifying reads but the
 * flags: capture gives an op its predicted op's vid only when their keys and every binding a
 * node is made from are equal (capture.h), so the class, a function of those fields and the
 * flags, is the one the template's op was given. */
static inline enum rpl_cls op_cls(const struct rpl_engine *re, const struct cap_op *op, uint32_t d)
{
	const struct rpl_template *t = re->st.ncand ? re->st.cand[0] : NULL;

	if (op->vid && t && d < t->nops && t->ops[d].vid == op->vid && t->ops[d].flags == op->flags)
		return (enum rpl_cls)t->ops[d].cls;
	return rpl__classify(op);
}

/* Whether the leading candidate's segment of position d ends right after d. Candidates agree on
 * every op so far but may cut differently (cuts depend on a template's length and rewrites);
 * the window follows the cuts of the candidate most windows have followed to the end (the
 * first of equals: the newest), so a shape the program runs most goes as whole graphs, and a
 * window that turns out to be another shape submits at most the rest of one segment eagerly. */
static bool segment_ends_at(struct rpl_engine *re, uint32_t d)
{
	const struct rpl_template *lead = re->st.cand[0];
	const struct rpl_seg *g;

	for (uint32_t i = 1; i < re->st.ncand; i++)
		if (re->st.cand[i]->windows > lead->windows)
			lead = re->st.cand[i];
	/* invariant 3: every candidate has op d, of the class graph, so it lies in a segment */
	cf_assert(d < lead->nops && lead->ops[d].cls == RPL_CLS_GRAPH && lead->ops[d].seg >= 0);
	g = &lead->segs[lead->ops[d].seg];
	return g->first + g->n == d + 1;
}

/* The fast lane (issue 22), tried where capture's fast lane recorded the op (rec->repeated: the
 * same op as last time at this position, so likely the template's too; elsewhere the lane's
 * misses would cost more than its hits save): the window follows one candidate, op is its op d
 * again (the same value identity, flags and key, so its class is that op's: op_cls), of class
 * graph, read in the open window's slot (rpl__window_holds), and its segment goes on after it.
 * Then deferring it is what the long path below does in that case (filter_candidates with one
 * candidate, rpl__defer, segment_ends_at false), without the calls. Any other case takes the
 * long path: returns false having changed nothing. */
static inline bool follow(struct rpl_engine *re, const struct cap_op *op, const struct cap_rec *rec)
{
	const struct rpl_template *t = re->st.cand[0];
	const struct rpl_top *o;
	uint32_t d = re->st.depth;
	uint64_t win;

	if (re->st.mstate != RPL_M_MATCHING || re->st.ncand != 1 || re->st.nfailed || re->st.def_copied ||
	    d + 1 >= t->nops)
		return false;
	/* what capture's lane guarantees of the op it took (rec->repeated): a vid, no pageable
	 * source, and the open window's slot rec->index (rpl__window_holds but for the index) */
	cf_assert(rec->repeated && op->vid && !(op->kind == CAP_OP_MEMCPY && op->u.memcpy.src_pageable));
	cf_assert(rpl__window_holds(op, rec->index, rec) == rec->window);
	o = &t->ops[d];
	win = rec->window;
	if (o->vid != op->vid || o->flags != op->flags || o->key != op->key || o->cls != RPL_CLS_GRAPH ||
	    rec->index != d || (re->st.ndef && win != re->st.def_win))
		return false;
	/* invariant 3: op d of the one candidate lies in a segment; it must not end there */
	cf_assert(o->seg >= 0);
	if (t->segs[o->seg].first + t->segs[o->seg].n == d + 1)
		return false;
	re->totals.matched_ops++;
	re->st.ended = NULL; /* d + 1 < t->nops */
	re->st.depth = d + 1;
	rpl__defer_in_window(re, d, win);
	rpl__note_exact(re, t, true); /* o's vid and flags (above) */
	rpl__lane_arm(re, op, win);
	return true;
}

/* follow for the one op in 16 that is timed: the lane's cost where it takes the op (what the gate
 * charges, rpl_host_ns_per_op); else the long path times it. Out of line: the untimed lane pays
 * no frame for the clock's calls. */
static __attribute__((noinline)) bool follow_timed(struct rpl_engine *re, const struct cap_op *op,
						   const struct cap_rec *rec)
{
	uint64_t t0 = cf_now_ns();

	if (!follow(re, op, rec))
		return false;
	rpl__match_sampled(re, cf_now_ns() - t0);
	return true;
}

/* rpl_op's long path: every op the fast lane (follow) does not take. Out of line, so the fast
 * lane pays none of its frame. */
static __attribute__((noinline)) enum rpl_verdict op_long(struct rpl_engine *re, const struct cap_op *op,
							  const struct cap_rec *rec)
{
	enum rpl_verdict v = RPL_DEFER;
	enum rpl_cls cls;
	uint64_t t0 = 0;
	uint32_t d;
	bool timed;

	if (cf_unlikely(re->st.stopped)) {
		if (CF_NEVER(re->st.ndef != 0))
			rpl__submit_deferred(re, RPL_FB_BOUNDARY);
		return RPL_EAGER;
	}
	if (re->st.mstate == RPL_M_RECORDING) {
		if (CF_NEVER(re->st.ndef != 0))
			rpl__submit_deferred(re, RPL_FB_BOUNDARY);
		return RPL_EAGER;
	}
	if (cf_unlikely(re->st.nfailed) && rpl_ctx_is_failed(re, op->ctx))
		return go_recording(re, RPL_FB_MISMATCH);
	timed = (re->totals.matched_ops++ & 15) == 0;
	if (timed)
		t0 = cf_now_ns();
	d = re->st.depth;
	if (re->st.mstate == RPL_M_FRESH) {
		gate_window_start(re);
		pick_candidates(re, op);
		re->st.mstate = RPL_M_MATCHING;
	}
	cls = op_cls(re, op, d);
	if (!filter_candidates(re, op, d, cls)) {
		re->st.depth = d + 1;
		return go_recording(re, RPL_FB_MISMATCH);
	}
	re->st.depth = d + 1;
	cf_assert(re->st.ncand > 0 && re->st.ncand <= RPL_MAX_CAND); /* invariant 3 */
	if (cls == RPL_CLS_EAGER) {
		/* the run before it goes first: as a candidate's graph when it is one of its whole
		 * segments, else eagerly (invariant 3) */
		rpl__submit_deferred(re, RPL_FB_BOUNDARY);
		return RPL_EAGER;
	}
	if (rpl__defer(re, op, d, rec) != 0)
		return go_recording(re, RPL_FB_NOMEM);
	{
		const struct rpl_template *c0 = re->st.cand[0];

		rpl__note_exact(re, c0, op->vid && d < c0->nops && c0->ops[d].vid == op->vid &&
					      c0->ops[d].flags == op->flags);
	}
	if (segment_ends_at(re, d)) {
		rpl__segment_end(re); /* launched, or kept while the device is busy (launch.c) */
		v = RPL_DEFER;
	} else if (timed) {
		rpl__match_sampled(re, cf_now_ns() - t0);
	}
	/* the next op may take the armed lane where this one repeated its position (capture's lane
	 * took it); where positions move, arming would cost each op more than the lane saves */
	if (rec && rec->repeated)
		rpl__lane_arm(re, op, rec->window);
	return v;
}

enum rpl_verdict rpl_op(struct rpl_engine *re, const struct cap_op *op, const struct cap_rec *rec)
{
	if (!re->st.ready)
		return RPL_EAGER;
	state_check(re);
	if (rec && rec->repeated && cf_likely(!re->st.stopped)) {
		if (cf_likely(re->totals.matched_ops & 15)) {
			if (follow(re, op, rec))
				return RPL_DEFER;
		} else if (follow_timed(re, op, rec)) {
			return RPL_DEFER;
		}
	}
	return op_long(re, op, rec);
}

void rpl_stop(struct rpl_engine *re)
{
	if (!re->st.ready)
		return;
	rpl_flush(re);
	cf_assert(re->st.ndef == 0); /* invariant 10: nothing deferred after rpl_stop */
	re->st.stopped = true;
	rpl__errors_at_exit(re);
}

bool rpl_take_wait(struct rpl_engine *re, struct rpl_wait *w)
{
	if (cf_likely(!re->head.wait_due))
		return false;
	*w = re->st.wait;
	re->head.wait_due = false;
	return true;
}

/* Outside the lock: the calls are not counted (the totals are the lock's). */
void rpl_wait(const struct rpl_wait *w)
{
	CUcontext cur = NULL, dummy;
	bool pushed = false;

	if (w->ctx && (DRV_REAL(cuCtxGetCurrent)(&cur) != CUDA_SUCCESS || cur != w->ctx))
		pushed = DRV_REAL(cuCtxPushCurrent_v2)(w->ctx) == CUDA_SUCCESS;
	DRV_REAL(cuStreamSynchronize)(w->stream);
	if (pushed)
		DRV_REAL(cuCtxPopCurrent_v2)(&dummy);
}

void rpl_op_failed(struct rpl_engine *re)
{
	/* the window no longer has the op the templates expect at this position */
	if (re->st.mstate == RPL_M_MATCHING)
		go_recording(re, RPL_FB_MISMATCH);
}

bool rpl_has_deferred(struct rpl_engine *re)
{
	return re->st.ndef != 0;
}

bool rpl_deferred_from(struct rpl_engine *re, uint32_t *first)
{
	if (!re->st.ndef)
		return false;
	*first = re->st.def_first;
	return true;
}

CUresult rpl_flush(struct rpl_engine *re)
{
	CUresult rc;

	if (!re->st.ready || (re->st.mstate != RPL_M_MATCHING && !re->st.ndef))
		return CUDA_SUCCESS;
	rc = rpl__submit_deferred(re, RPL_FB_BOUNDARY);
	re->st.mstate = RPL_M_RECORDING;
	re->st.ncand = 0;
	state_check(re); /* invariant 4: recording, nothing deferred */
	return rc;
}

bool rpl_poll(struct rpl_engine *re, uint32_t tid)
{
	uint64_t now;

	if (!re->st.ndef)
		return false;
	if (rpl__def(re)[re->st.ndef - 1].tid == tid) {
		/* its own thread: a query with an op of the window since its last one (or the first)
		 * is answered NOT_READY and the run keeps growing (CuPy queries the event it has just
		 * recorded after each pinned copy, then goes on with the step); a query again with
		 * none in between (a thread spinning on it) submits */
		if (re->st.poll_own_ndef != re->st.ndef) {
			re->st.poll_own_ndef = re->st.ndef;
			re->totals.polls_not_ready++;
			return true;
		}
	} else {
		now = cf_now_ns();
		if (!re->st.poll_t0 || re->st.poll_ndef != re->st.ndef) {
			re->st.poll_ndef = re->st.ndef; /* still growing: its thread is issuing the step */
			re->st.poll_t0 = now;
		}
		if (now - re->st.poll_t0 < RPL_POLL_STALL_NS) {
			re->totals.polls_not_ready++;
			return true;
		}
	}
	/* submitted (eagerly unless it is a whole segment) and the window goes on matching: the
	 * next run starts mid-segment and goes eagerly at the leader's next cut, and the segments
	 * after that go as graphs again (a poll costs at most one more partial segment) */
	rpl__submit_deferred(re, RPL_FB_POLL);
	return false;
}

/* Schedule the build of shape s's template (note n) from its last window: the lock drop that
 * follows runs it outside the lock (rpl_build_take). One build at a time: while one is in flight
 * another due shape waits for its next sighting. */
static void build_schedule(struct rpl_engine *re, struct cap_shape *s, struct rpl_shape_note *n)
{
	struct rpl_build *b = &re->st.build;

	if (re->head.build_due || re->st.build_running)
		return;
	free(b->allocs); /* a build never run (rpl_engine_destroy frees it too) */
	memset(b, 0, sizeof(*b));
	b->cfg = re->st.cfg; /* the configuration its template is built with */
	if (n->guard_retires >= RPL_GUARD_RETIRES)
		b->cfg.opt = RPL_OPT_NONE; /* its bindings keep breaking the plans' guards: as it is */
	if (n->gate.cuts && b->cfg.segment > RPL_SEG_SMALL)
		b->cfg.segment = RPL_SEG_SMALL; /* its big segments lost (gate.c): small ones */
	b->shape = s;
	b->note = n;
	b->shape_id = cap_shape_id(s);
	b->w = cap_shape_pin_last(re->cap, s);
	b->nops = cap_window_nops(b->w);
	b->ctx = cap_window_op(b->w, 0)->ctx;
	/* out of memory: no snapshot, and unknown spans stay "everything" */
	if (cap_alloc_snapshot(re->cap, b->w, &b->allocs, &b->nallocs) != 0)
		b->nallocs = 0;
	b->alloc_gen = cap_alloc_gen(re->cap);
	re->head.build_due = true;
}

bool rpl_build_take(struct rpl_engine *re)
{
	if (cf_likely(!re->head.build_due))
		return false;
	re->head.build_due = false;
	re->st.build_running = true;
	return true;
}

void rpl_build_run(struct rpl_engine *re)
{
	struct rpl_build *b = &re->st.build;
	struct rw_alloc_view v = { .snap = b->allocs, .nsnap = b->nallocs, .gen = b->alloc_gen }, *was;
	uint64_t t0 = rpl__gate_clock(), wall_t0 = cf_now_ns(), own_t0 = rpl_own_clock();

	rpl__mark_build_begin(b->shape_id);
	was = rw_alloc_view_use(&v);
	b->t = rpl__template_build(re, b->w, b->shape_id, &b->cfg, &b->why, &b->own_failure);
	rw_alloc_view_use(was);
	rpl__mark_end();
	b->t_ns = rpl__gate_clock() - t0;
	b->wall_ns = cf_now_ns() - wall_t0;
	b->own_ns = rpl_own_clock() - own_t0;
}

static void later_apply(struct rpl_engine *re, const struct rpl_retirement *r)
{
	switch (r->kind) {
	case RPL_RET_FREE:
		rpl_memory_released(re, r->a, r->b);
		break;
	case RPL_RET_EVENT:
		rpl_event_destroyed(re, (CUevent)(uintptr_t)r->a);
		break;
	case RPL_RET_FUNCTIONS:
		rpl_functions_unloaded(re);
		break;
	default:
		rpl_context_destroyed(re, (CUcontext)(uintptr_t)r->a);
		break;
	}
}

/* Link the built template in (then the retirements it missed), or mark the shape rejected; the
 * window the build ran in gives the gate no sample, and the build's time goes on its own line. A build whose shape went, whose context
 * failed, or that missed more retirements than it keeps, is discarded: the shape is built again
 * at a later sighting. */
void rpl_build_publish(struct rpl_engine *re)
{
	struct rpl_build *b = &re->st.build;
	struct rpl_shape_note *n = b->note;
	struct rpl_template *t = b->t;

	re->st.build_running = false;
	/* every build is cufold's time, kept or not (the timed sample of calls leaves builds out:
	 * they run at the lock's drop) */
	re->totals.build_own_ns += b->own_ns;
	re->totals.builds++;
	cap_window_unpin(re->cap, b->w);
	free(b->allocs);
	b->allocs = NULL;
	b->nallocs = 0;
	b->w = NULL;
	b->t = NULL;
	if (!b->shape || b->stale || !re->st.ready || (t && rpl_ctx_is_failed(re, t->ctx))) {
		rpl__template_destroy(re, t);
		return;
	}
	if (b->wall_ns > re->totals.build_ns_max) { /* the report's worst window close */
		re->totals.build_ns_max = b->wall_ns;
		re->totals.build_ops_max = b->nops;
	}
	/* The window the build ran in gives no sample: the build ran before its closing call reached
	 * the driver, so it overlapped whatever device work that call waits for, by an amount
	 * nothing here sees; taking the whole build out made that window's eager sample shorter
	 * than eager execution's (rpl_loop train, +2 us kernels: 141.0 us against 156.6 us), and
	 * keeping it in would make it longer. The build is the gate's own line instead (gate.c). */
	re->st.pend.valid = false;
	n->gate.build_ns += b->t_ns;
	n->gate.builds++;
	if (!t) {
		n->rejected = true;
		n->why = b->why;
		if (b->own_failure) {
			rpl__fallback_note(re, NULL, RPL_FB_BUILD);
			rpl__ctx_fail(re, b->ctx, "building a graph failed");
		}
		return;
	}
	t->shape = b->shape;
	rpl__template_mark(t);
	n->tpl = t;
	t->next = re->st.templates;
	if (re->st.templates)
		re->st.templates->prev = t;
	re->st.templates = t;
	re->totals.templates++;
	re->totals.templates_live++;
	re->totals.segments += t->nsegs;
	/* what retired templates while it was built applies to it, as if built at once */
	for (uint32_t i = 0; i < b->nlater; i++)
		later_apply(re, &b->later[i]);
}

/* The note of shape s, made on first use (NULL: out of memory). */
static struct rpl_shape_note *note_get(struct rpl_engine *re, struct cap_shape *s)
{
	struct rpl_shape_note *n = rpl__note_of(s);
	struct rpl_note_link *l;

	if (n)
		return n;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->shape = s;
	l->next = re->notes;
	re->notes = l;
	cap_shape_set_user(s, &l->note);
	return &l->note;
}

void rpl_window_closed(struct rpl_engine *re, struct cap_shape *s)
{
	struct rpl_template *ended = re->st.ended;
	const struct cap_window *w;
	struct rpl_shape_note *n;

	if (!re->st.ready)
		return;
	if (re->st.ndef)
		rpl_flush(re);
	re->st.mstate = RPL_M_FRESH;
	re->st.depth = 0;
	re->st.ncand = 0;
	re->st.ended = NULL;
	state_check(re); /* invariant 2: a deferred run never outlives its window */
	if (!s)
		return; /* nothing closed (an empty window): the last window's sample still waits */
	re->st.pend.valid = false;
	n = note_get(re, s);
	if (!n)
		return;
	/* its time is taken when the next window starts: replayed to the end, or wholly eager */
	re->st.pend.note = n;
	re->st.pend.replayed = n->tpl && ended == n->tpl;
	re->st.pend.valid = re->st.win_t0 && (re->st.pend.replayed || !re->st.win_deferred);
	re->st.pend.t0 = re->st.win_t0;
	re->st.pend.charge = 0;
	if (re->st.pend.replayed && rpl__gate_is_modeled())
		re->st.pend.charge = (uint64_t)(rpl_host_ns_per_op(re) * (double)n->tpl->nops);
	if (n->tpl) {
		if (ended == n->tpl) {
			n->tpl->windows++;
			n->tpl->win_launches = n->tpl->launches;
			n->tpl->win_patched = n->tpl->patched_launches;
		}
		return;
	}
	if (n->rejected || cap_shape_sightings(s) < re->st.cfg.warmup ||
	    (n->retired_at && cap_shape_sightings(s) - n->retired_at < re->st.cfg.warmup))
		return;
	w = cap_shape_last(s);
	if (!w || !cap_window_nops(w) || rpl_ctx_is_failed(re, cap_window_op(w, 0)->ctx))
		return;
	build_schedule(re, s, n);
}

/* ------------------------------------------------------------------ statistics */

void rpl_get_totals(struct rpl_engine *re, struct rpl_totals *t)
{
	*t = re->totals;
	t->own_calls = __atomic_load_n(&re->totals.own_calls, __ATOMIC_RELAXED);
}

void rpl_own_time(struct rpl_engine *re, uint64_t ns)
{
	/* a sample that long was preempted or faulted: it measures the machine, not us */
	if (ns >= RPL_SAMPLE_MAX_NS)
		return;
	/* the reading is the work plus what an empty pair of the same reads reads (own_clock_ns,
	 * rpl_calibrate_clocks): taken once. Until 2026-12-06 twice one read's cost was taken, ~22
	 * ns too much a sample: the fixed loop's report read 13-16 ns an op. */
	ns = ns > re->st.own_clock_ns ? ns - re->st.own_clock_ns : 0;
	re->totals.own_ns += ns;
	re->totals.own_samples++;
}

double rpl_own_ns_per_op(struct rpl_engine *re)
{
	return re->totals.own_samples ? (double)re->totals.own_ns / (double)re->totals.own_samples : 0.0;
}

double rpl_own_ns_per_op_with_builds(struct rpl_engine *re)
{
	struct cap_totals ct;
	uint64_t ops;

	cap_get_totals(re->cap, &ct);
	ops = cap_totals_ops(&ct);
	return rpl_own_ns_per_op(re) + (ops ? (double)re->totals.build_own_ns / (double)ops : 0.0);
}

double rpl_host_ns_per_op(struct rpl_engine *re)
{
	return re->totals.match_samples ? (double)re->totals.match_ns / (double)re->totals.match_samples : 0.0;
}

size_t rpl_memory_bytes(struct rpl_engine *re)
{
	size_t n = sizeof(re->st) + re->st.capdef * sizeof(*re->st.def) + re->st.arena.reserved;

	for (struct rpl_template *t = re->st.templates; t; t = t->next)
		n += rpl__template_bytes(t);
	for (struct rpl_note_link *l = re->notes; l; l = l->next)
		n += sizeof(*l);
	return n;
}
