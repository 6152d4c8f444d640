/* retire.c - retiring templates: frees, churn, eviction, unloads, destroyed
 * contexts, and the contexts in sticky passthrough after a failure of cufold's own; a destroyed
 * event retires nothing (its nodes are set again at their next launch). replay layer;
 * works on match.c's state (invariant 5). */
#include <stdlib.h>

#include "common/compiler.h"
#include "common/log.h"
#include "replay/replay_int.h"
#include "rewrite/kernels.h"

/* ------------------------------------------------------------------ templates */

static void template_unlink(struct rpl_engine *re, struct rpl_template *t)
{
	if (t->prev)
		t->prev->next = t->next;
	else
		re->st.templates = t->next;
	if (t->next)
		t->next->prev = t->prev;
	t->prev = t->next = NULL;
}

/* Drop t from the candidates (the window then follows the others, or records). */
static void cand_forget(struct rpl_engine *re, struct rpl_template *t)
{
	uint32_t j = 0;

	for (uint32_t i = 0; i < re->st.ncand; i++)
		if (re->st.cand[i] != t)
			re->st.cand[j++] = re->st.cand[i];
	re->st.ncand = j;
	if (re->st.ended == t)
		re->st.ended = NULL;
}

/* Retire t: its graphs go, its figures stay for the report
 * (the most recent RPL_MAX_RETIRED). */
void rpl__template_retire(struct rpl_engine *re, struct rpl_template *t, const char *why)
{
	struct rpl_shape_note *n = rpl__note_of(t->shape);
	struct rpl_template **pt;
	uint32_t kept = 0;
	size_t bytes = rpl_memory_bytes(re); /* t's memory goes below: the report's peak keeps it */

	if (bytes > re->totals.host_bytes_peak)
		re->totals.host_bytes_peak = bytes;

	/* a retirement inside a window (capture evicting a shape while the call that closes the
	 * window is recorded): what is kept goes first, while t may still be the graph for it */
	if (re->st.ndef) {
		rpl__submit_deferred(re, RPL_FB_BOUNDARY);
		/* that submission may have launched t and retired it already (a failed guard, churn,
		 * a failure of cufold's own): it must not be unlinked and released twice */
		if (t->retired_why)
			return;
	}
	cf_assert(re->st.ndef == 0); /* invariant 2: no deferred op outlives a candidate's retirement */
	cand_forget(re, t);
	if (re->st.mstate == RPL_M_MATCHING && re->st.ncand == 0)
		re->st.mstate = RPL_M_RECORDING;
	if (n && n->tpl == t) {
		n->tpl = NULL;
		n->retired_at = cap_shape_sightings(t->shape);
	}
	template_unlink(re, t);
	re->totals.templates_live--;
	re->totals.retired++;
	rpl__template_release(re, t);
	t->shape = NULL;
	t->retired_why = why;
	t->next = re->st.retired;
	re->st.retired = t;
	for (pt = &re->st.retired; *pt; pt = &(*pt)->next) {
		if (++kept > RPL_MAX_RETIRED) {
			struct rpl_template *old = *pt;

			*pt = NULL;
			while (old) {
				struct rpl_template *nx = old->next;

				rpl__template_destroy(re, old);
				old = nx;
			}
			break;
		}
	}
}

/* Churn: a template whose bindings move on most of its launches is judged on its measured
 * costs, per template (so per shape), after RPL_CHURN_LAUNCHES launches and after every launch
 * from then on:
 *   replayed: the gate clock (gate.c: the software device's modeled host clock, else the
 *             monotonic clock) spent patching its nodes and launching its graphs, plus cufold's
 *             own matching cost per op (rpl_host_ns_per_op) for every op replayed;
 *   eager:    the ops it replayed, each at the mean gate-clock cost of one eager kernel launch
 *             (every kernel launch.c submits eagerly is timed; when none has been yet, the
 *             template's next launch goes eagerly once, a PROBE fallback, to measure it).
 * It goes back to eager only when replaying costs at least as much: moving bindings alone do not
 * retire it while patching the nodes that moved (unchanged ones are skipped) and one launch per
 * segment are cheaper than submitting its ops one by one. CUFOLD_CHURN=0 turns the check off
 * (and its probe): for benchmarks that measure replay where the clock is slowed (callgrind). */
static bool churn_due(const struct rpl_template *t)
{
	/* as of the last whole window: a window whose first launch patches (a step counter) and
	 * whose rest goes as one block would look due between its two launches */
	return t->win_launches >= RPL_CHURN_LAUNCHES && t->win_patched * 2 > t->win_launches;
}

bool rpl__churn_needs_probe(const struct rpl_engine *re, const struct rpl_template *t)
{
	/* once (the caller sets churn_probed when it probes): a run without kernels measures nothing */
	return re->st.cfg.churn && churn_due(t) && !re->eager_kernels && !t->churn_probed;
}

void rpl__check_churn(struct rpl_engine *re, struct rpl_template *t)
{
	struct rpl_shape_note *n;
	double replay_ns, eager_ns;

	if (!re->st.cfg.churn || !churn_due(t) || !re->eager_kernels || !t->ops_replayed)
		return;
	replay_ns = (double)(t->patch_ns + t->launch_ns) + rpl_host_ns_per_op(re) * (double)t->ops_replayed;
	eager_ns = (double)re->eager_ns / (double)re->eager_kernels * (double)t->ops_replayed;
	if (replay_ns < eager_ns)
		return;
	n = rpl__note_of(t->shape);
	t->fallbacks[RPL_FB_CHURN]++;
	re->totals.fallbacks[RPL_FB_CHURN]++;
	cf_log_info("replay: window shape %llu goes back to eager: its bindings change on %llu of %llu launches and "
		    "patching them costs more than eager submission (%.2f us per op replayed, %.2f us eager; %.1f nodes "
		    "patched per launch)",
		    (unsigned long long)t->shape_id, (unsigned long long)t->patched_launches,
		    (unsigned long long)t->launches, replay_ns / 1e3 / (double)t->ops_replayed,
		    eager_ns / 1e3 / (double)t->ops_replayed, (double)t->patches / (double)t->launches);
	rpl__template_retire(re, t, "bindings change on most launches; patching costs more than eager submission");
	if (n) {
		n->rejected = true;
		n->why = "bindings change on most launches; patching costs more than eager submission";
	}
}

/* ------------------------------------------------------------------ sticky failure */

bool rpl_ctx_is_failed(struct rpl_engine *re, CUcontext ctx)
{
	if (cf_likely(!re->st.nfailed))
		return false;
	if (re->st.all_failed)
		return true;
	for (uint32_t i = 0; i < re->st.nfailed; i++)
		if (re->st.failed[i] == ctx)
			return true;
	return false;
}

void rpl__ctx_fail(struct rpl_engine *re, CUcontext ctx, const char *what)
{
	struct rpl_template *t, *next;

	if (rpl_ctx_is_failed(re, ctx))
		return;
	cf_log_warn("replay: %s; cufold passes every call of this context straight to the driver from now on "
		    "(results are unchanged)", what);
	re->totals.failed = true;
	rpl__passthrough_note(re, what);
	if (re->st.nfailed < RPL_MAX_FAILED_CTX)
		re->st.failed[re->st.nfailed++] = ctx;
	else
		re->st.all_failed = true;
	for (t = re->st.templates; t; t = next) {
		next = t->next;
		if (re->st.all_failed || t->ctx == ctx) {
			struct rpl_shape_note *n = rpl__note_of(t->shape);

			rpl__template_retire(re, t, "its context went to passthrough after a failure");
			if (n) {
				n->rejected = true;
				n->why = "its context went to passthrough after a failure";
			}
		}
	}
	cf_assert(rpl_ctx_is_failed(re, ctx)); /* invariant 5: sticky from now on */
}

void rpl__build_note(struct rpl_engine *re, enum rpl_retirement_kind kind, uint64_t a, uint64_t b)
{
	struct rpl_build *bd = &re->st.build;

	if (!re->head.build_due && !re->st.build_running)
		return;
	if (bd->nlater == RPL_BUILD_LATER) {
		bd->stale = true;
		return;
	}
	bd->later[bd->nlater++] = (struct rpl_retirement){ .kind = (uint8_t)kind, .a = a, .b = b };
}

void rpl_shape_evicted(struct rpl_engine *re, struct cap_shape *s)
{
	struct rpl_shape_note *n = rpl__note_of(s);
	struct rpl_note_link **pl;

	if ((re->head.build_due || re->st.build_running) && re->st.build.shape == s) {
		re->st.build.shape = NULL; /* its build is discarded at its publish */
		re->st.build.note = NULL;
	}
	if (!n)
		return;
	if (n->tpl)
		rpl__template_retire(re, n->tpl, "its window shape was evicted (CUFOLD_MAX_TEMPLATES)");
	if (re->st.pend.note == n)
		re->st.pend.valid = false;
	cap_shape_set_user(s, NULL);
	for (pl = &re->notes; *pl; pl = &(*pl)->next) {
		if (&(*pl)->note == n) {
			struct rpl_note_link *l = *pl;

			*pl = l->next;
			free(l);
			break;
		}
	}
}

void rpl_memory_released(struct rpl_engine *re, uint64_t base, uint64_t size)
{
	struct rpl_template *t, *next;

	if (!re->st.ready || !size)
		return;
	rpl__build_note(re, RPL_RET_FREE, base, size); /* a build in flight gets it at its publish */
	/* what is kept goes before any retirement, once: a submission inside the loop may launch
	 * and retire a template (a failed guard), the one `next` points at included */
	for (t = re->st.templates; t && re->st.ndef; t = t->next) {
		struct rpl_shape_note *n = rpl__note_of(t->shape);

		if (!(n && n->patch_frees) && rpl__template_references(t, base, size)) {
			rpl_flush(re);
			break;
		}
	}
	for (t = re->st.templates; t; t = next) {
		struct rpl_shape_note *n = rpl__note_of(t->shape);

		next = t->next;
		if (n && n->patch_frees)
			continue;
		if (!rpl__template_references(t, base, size))
			continue;
		cf_assert(re->st.ndef == 0); /* so the retirement below submits (and retires) nothing */
		t->fallbacks[RPL_FB_FREE]++;
		re->totals.fallbacks[RPL_FB_FREE]++;
		if (n && ++n->free_retires >= RPL_FREE_RETIRES)
			n->patch_frees = true; /* it allocates per step: patching covers the moves */
		rpl__template_retire(re, t, "memory it references was freed");
	}
}

/* Forget e in t's event nodes: each is set again before its next launch (the handle may be
 * reused for another event). */
static void forget_event(struct rpl_template *t, CUevent e)
{
	for (uint32_t k = 0; k < t->nsegs + t->nblocks; k++) {
		struct rpl_seg *g = k < t->nsegs ? &t->segs[k] : &t->blocks[k - t->nsegs];

		for (uint32_t i = 0; g->nodes && i < g->n; i++)
			if (g->nodes[i].event == e)
				g->nodes[i].event = NULL;
	}
}

bool rpl_event_destroy_later(struct rpl_engine *re, CUevent e)
{
	bool named = false;

	if (!re->st.ready || !e)
		return false;
	for (uint32_t i = 0; i < re->st.ndef && !named; i++) {
		const struct cap_op *op = &rpl__def(re)[i];

		named = (op->kind == CAP_OP_EVENT_RECORD || op->kind == CAP_OP_EVENT_WAIT) && op->u.event.event == e;
	}
	if (!named)
		return false;
	if (re->st.nlater_ev == RPL_LATER_EVENTS) {
		rpl_flush(re); /* submits the deferred ops (and the destroys held so far): e goes now */
		return false;
	}
	re->st.later_ev[re->st.nlater_ev++] = e;
	return true;
}

void rpl_event_destroyed(struct rpl_engine *re, CUevent e)
{
	if (!re->st.ready || !e)
		return;
	rpl__build_note(re, RPL_RET_EVENT, (uint64_t)(uintptr_t)e, 0); /* a build in flight gets it at its publish */
	/* an event is a binding (event nodes are built with the template's stand-in and set to the
	 * launch's event by patch()): a per-step event retires nothing. A destroy while deferred
	 * ops name e is made after they are submitted (rpl_event_destroy_later). */
	for (struct rpl_template *t = re->st.templates; t; t = t->next)
		forget_event(t, e);
}

void rpl_functions_unloaded(struct rpl_engine *re)
{
	rpl__build_note(re, RPL_RET_FUNCTIONS, 0, 0); /* a build in flight gets it at its publish */
	while (re->st.ready && re->st.templates)
		rpl__template_retire(re, re->st.templates, "a module or library was unloaded");
}

void rpl_context_destroyed(struct rpl_engine *re, CUcontext ctx)
{
	struct rpl_template *t, *next;

	if (!re->st.ready)
		return;
	rpl__build_note(re, RPL_RET_CONTEXT, (uint64_t)(uintptr_t)ctx,
			0); /* a build in flight gets it at its publish */
	for (t = re->st.templates; t; t = next) {
		next = t->next;
		if (!ctx || t->ctx == ctx)
			rpl__template_retire(re, t, "its context was destroyed");
	}
}

void rpl_context_gone(struct rpl_engine *re, CUcontext ctx)
{
	if (re)
		rw_kernels_forget(re->kernels, ctx);
}
