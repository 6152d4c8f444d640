/* launch.c - submitting deferred ops: their deep copies, the eager flush in program order, and
 * segment launches (patching changed nodes, stage buffers, stream joins and forks). replay layer;
 * works on match.c's state and keeps its invariants 1, 2 and 5-9. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/compiler.h"
#include "common/errors.h"
#include "common/log.h"
#include "replay/replay_int.h"

/* The op's context current on this thread: only a call from another thread can find a
 * different one (the op was recorded with the context current on its own thread). */
static void op_ctx_enter(struct rpl_engine *re, const struct cap_op *op, bool *pushed)
{
	*pushed = false;
	if (op->tid != cf_tid())
		rpl__ctx_enter(re, op->ctx, pushed);
}

/* ------------------------------------------------------------------ deferral and submission */

static void def_clear(struct rpl_engine *re)
{
	re->st.ndef = 0;
	re->st.nexact = 0;
	re->st.idle_scanned = re->st.idle_nfirst = 0;
	re->st.def_copied = false;
	re->st.poll_t0 = 0;
	re->st.poll_own_ndef = 0;
	cf_arena_reset(&re->st.arena);
	/* the program's destroys of events those ops named, held back until they were submitted
	 * (the program was answered CUDA_SUCCESS: a destroy of a valid event cannot fail) */
	for (uint32_t i = 0; i < re->st.nlater_ev; i++) {
		rpl__own_call(re);
		DRV_REAL(cuEventDestroy_v2)(re->st.later_ev[i]);
	}
	re->st.nlater_ev = 0;
}

/* *c = *op, of the union only the member op's kind uses (a copy of the whole op was half of
 * what deferring one cost, issue 22); each size a constant, so no call. */
static void op_copy(struct cap_op *c, const struct cap_op *op)
{
	const size_t head = offsetof(struct cap_op, u);

	switch (op->kind) {
	case CAP_OP_KERNEL:
		memcpy(c, op, head + sizeof(op->u.kernel));
		break;
	case CAP_OP_MEMCPY:
		memcpy(c, op, head + sizeof(op->u.memcpy));
		break;
	case CAP_OP_MEMSET:
		memcpy(c, op, head + sizeof(op->u.memset));
		break;
	case CAP_OP_EVENT_RECORD:
	case CAP_OP_EVENT_WAIT:
		memcpy(c, op, head + sizeof(op->u.event));
		break;
	default:
		*c = *op;
		break;
	}
}

/* Append a deep copy of op to def. 0 or -CF_ENOMEM. */
static int def_copy(struct rpl_engine *re, uint32_t i, const struct cap_op *op)
{
	struct cap_op *c;

	if (i == re->st.capdef) {
		uint32_t ncap = re->st.capdef ? 2 * re->st.capdef : 256;
		struct cap_op *n = realloc(re->st.def, ncap * sizeof(*n));

		if (!n)
			return -CF_ENOMEM;
		re->st.def = n;
		re->st.capdef = ncap;
	}
	c = &re->st.def[i];
	op_copy(c, op);
	if (op->kind == CAP_OP_KERNEL) {
		c->u.kernel.params = cf_arena_dup(&re->st.arena, op->u.kernel.params, op->u.kernel.param_size);
		if (!c->u.kernel.params)
			return -CF_ENOMEM;
		c->u.kernel.attrs = NULL; /* graphable kernels have none */
		c->u.kernel.nattrs = 0;
	} else if (op->kind == CAP_OP_MEMCPY && op->u.memcpy.src_pageable) {
		/* the program may reuse its buffer as soon as the call returns: take the bytes now,
		 * as the driver stages a pageable source */
		c->flags &= (uint8_t)~CAP_OPF_STAGED;
		c->u.memcpy.staged = NULL;
		if (cap_op_stage(c, &re->st.arena) != 0)
			return -CF_ENOMEM;
	}
	return 0;
}

/* The run read in the open window's slots becomes copies. 0 or -CF_ENOMEM (then nothing is
 * deferred any more: the caller goes eagerly, its ops were never copied). */
static int def_to_copies(struct rpl_engine *re)
{
	const struct cap_op *w = rpl__def(re);

	for (uint32_t i = 0; w && i < re->st.ndef; i++)
		if (def_copy(re, i, &w[i]) != 0)
			return -CF_ENOMEM;
	re->st.def_copied = true;
	return 0;
}

const struct cap_op *rpl__def(struct rpl_engine *re)
{
	const struct cap_window *w;

	if (re->st.def_copied || !re->st.ndef)
		return re->st.def;
	w = cap_window_current(re->cap);
	/* the run is the open window's (rpl__def_keep copied it before any close) */
	cf_assert(w && cap_window_seq(w) == re->st.def_win && re->st.def_first + re->st.ndef <= cap_window_nops(w));
	return cap_window_op(w, re->st.def_first);
}

void rpl__def_keep(void *arg)
{
	struct rpl_engine *re = arg;

	if (!re->st.ndef || re->st.def_copied)
		return;
	if (def_to_copies(re) != 0) {
		/* no memory to keep them past the close: they go now, in order, before the call
		 * that closes the window reaches the driver (as at any boundary) */
		re->st.def_copied = false;
		rpl_flush(re);
	}
}

/* rpl__defer of an op kept as a copy: the run's ops read in the window become copies first. */
static __attribute__((noinline)) int defer_copy(struct rpl_engine *re, const struct cap_op *op, uint32_t index)
{
	if (!re->st.def_copied) {
		if (re->st.ndef && def_to_copies(re) != 0)
			return -CF_ENOMEM;
		re->st.def_copied = true;
	}
	if (def_copy(re, re->st.ndef, op) != 0)
		return -CF_ENOMEM;
	if (re->st.ndef == 0)
		re->st.def_first = index;
	re->st.ndef++;
	re->st.win_deferred = true;
	re->totals.ops_deferred++;
	return 0;
}

int rpl__defer(struct rpl_engine *re, const struct cap_op *op, uint32_t index, const struct cap_rec *rec)
{
	uint64_t win;

	/* invariants 4 and 10: only a matching window defers, never after rpl_stop */
	cf_assert(re->st.mstate == RPL_M_MATCHING && !re->st.stopped);
	/* invariant 2: the deferred ops are a contiguous run of the window's ops */
	cf_assert(!re->st.ndef || re->st.def_first + re->st.ndef == index);
	/* read where capture keeps it (the run's second copy was most of deferring one, issue 22):
	 * the open window's op at index, unless its source must be staged now */
	if (re->st.def_copied || (op->kind == CAP_OP_MEMCPY && op->u.memcpy.src_pageable) ||
	    !(win = rpl__window_holds(op, index, rec)) || (re->st.ndef && win != re->st.def_win))
		return defer_copy(re, op, index);
	cf_assert(win == cap_window_holds(re->cap, op, index)); /* what capture would answer */
	rpl__defer_in_window(re, index, win);
	return 0;
}

/* Submit one deferred op eagerly; *first gets the first driver error. */
static void issue_op(struct rpl_engine *re, const struct cap_op *op, CUresult *first)
{
	bool pushed;
	CUresult rc;

	op_ctx_enter(re, op, &pushed);
	if (op->kind == CAP_OP_KERNEL) {
		/* the churn check's eager cost: a kernel launch as the driver charges it */
		uint64_t t0 = rpl__gate_clock();

		rc = cap_op_issue(op);
		re->eager_ns += rpl__gate_clock() - t0;
		re->eager_kernels++;
	} else {
		rc = cap_op_issue(op);
	}
	rpl__ctx_leave(re, pushed);
	if (rc != CUDA_SUCCESS) {
		/* the program was told it succeeded: its next observing call returns it */
		rpl__error_note(re, op, rc);
		if (*first == CUDA_SUCCESS)
			*first = rc;
	}
}

/* Submit the deferred ops eagerly, in order, from the off-th on (those before it were launched
 * as graphs): all of them, or, of g's (the graph at off), those of its parts from from_part on
 * (the parts before it were launched). Nothing is deferred afterwards. Returns the first driver
 * error. */
static CUresult flush_ops(struct rpl_engine *re, enum rpl_fallback why, uint32_t off, const struct rpl_seg *g,
			  uint32_t from_part)
{
	CUresult first = CUDA_SUCCESS;

	if (off >= re->st.ndef) {
		def_clear(re);
		return CUDA_SUCCESS;
	}
	rpl__fallback_note(re, re->st.ncand ? re->st.cand[0] : NULL, why);
	rpl__mark_flush_begin(re->st.ndef - off, why);
	for (uint32_t i = off; i < re->st.ndef; i++)
		if (!g || i - off >= g->n || g->nodes[i - off].part >= from_part)
			issue_op(re, &rpl__def(re)[i], &first);
	re->totals.ops_flushed += re->st.ndef - off;
	def_clear(re);
	rpl__mark_end();
	return first;
}

static CUresult flush_eager(struct rpl_engine *re, enum rpl_fallback why)
{
	return flush_ops(re, why, 0, NULL, 0);
}

/* The deferred ops from the off-th on, eagerly: a graph at off could not launch. */
static void flush_from(struct rpl_engine *re, enum rpl_fallback why, uint32_t off)
{
	flush_ops(re, why, off, NULL, 0);
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

/* How much one launch of graph g (a segment or a block) counts in its template's changes of
 * binding (report): every one of g's first RPL_MOVED_EXACT launches, then one in 16 of g's,
 * counted 16 times, and 0 (not followed) for the others. Counted per graph: a template's
 * graphs launch in a pattern that repeats every step, which one count over them all would
 * sample unevenly (two graphs a step: one always sampled, the other never). Following every
 * launch costs a compare per parameter of every kernel node patched: on PyTorch, whose bindings
 * move every step, about 250 instructions an op (issue 22). */
static uint32_t moved_weight(const struct rpl_seg *g)
{
	if (g->launches <= RPL_MOVED_EXACT)
		return 1;
	return (g->launches & 15) == 0 ? 16 : 0;
}

/* Count one launch's change of binding (op, param) of t (report), weight launches' worth
 * (moved_weight); what names the node. */
static void note_moved(struct rpl_template *t, uint32_t op, int32_t param, const char *what, uint32_t weight)
{
	struct rpl_moved *m;

	if (t->nmoved == RPL_MOVED && op > t->moved_max_op)
		return; /* not followed (a full table's bindings are mostly the first ops') */
	/* a launch patches in op order, so its next moved binding is most often the entry after
	 * the last one found: the search starts there (a patch stays O(nodes)) */
	for (uint32_t j = 0, i = t->moved_cursor; j < t->nmoved; j++, i = i + 1 < t->nmoved ? i + 1 : 0)
		if (t->moved[i].op == op && t->moved[i].param == param) {
			t->moved[i].launches += weight;
			t->moved_cursor = i + 1 < t->nmoved ? i + 1 : 0;
			return;
		}
	if (!t->moved) {
		t->moved = calloc(RPL_MOVED, sizeof(*t->moved));
		if (!t->moved)
			return;
	}
	if (t->nmoved == RPL_MOVED)
		return; /* the first RPL_MOVED bindings seen moving are followed */
	m = &t->moved[t->nmoved++];
	if (op > t->moved_max_op)
		t->moved_max_op = op;
	m->op = op;
	m->param = param;
	m->launches = weight;
	snprintf(m->what, sizeof(m->what), "%s", what ? what : "?");
}

/* Which parameters of kernel node n the launch's op changes (before n takes them). */
static void note_moved_kernel(struct rpl_template *t, uint32_t opi, const struct rpl_node *n, const struct cap_op *op,
			      uint32_t weight)
{
	const struct cap_kernel *k = &op->u.kernel;
	const struct cap_func *fi = k->info;
	const char *name = fi && fi->name ? fi->name : "?";

	if (n->func != k->func || n->param_size != k->param_size || !fi || !fi->layout_known || k->via_extra ||
	    !fi->nparams || fi->param_bytes > k->param_size) {
		note_moved(t, opi, -1, name, weight);
		return;
	}
	for (uint32_t p = 0; p < fi->nparams; p++)
		if (memcmp((const char *)n->params + fi->offset[p], (const char *)k->params + fi->offset[p],
			   fi->size[p]) != 0)
			note_moved(t, opi, (int32_t)p, name, weight);
}

/* Patch the nodes of g whose bindings differ from the deferred ops' (a node whose bindings did
 * not change is not touched). 0, or a driver error. */
static CUresult patch(struct rpl_engine *re, struct rpl_template *t, struct rpl_seg *g, const struct cap_op *def,
		      uint32_t *npatched)
{
	CUresult rc = CUDA_SUCCESS;
	const uint32_t weight = moved_weight(g);

	*npatched = 0;
	for (uint32_t i = 0; i < g->n && rc == CUDA_SUCCESS; i++) {
		struct cap_op tmp; /* a plan node's op derived from this launch's bindings */
		const struct cap_op *op = rpl__seg_op(g, i, def, &tmp);
		struct rpl_node *n = &g->nodes[i];
		CUgraphExec exec = g->parts[n->part].exec;

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
			if (weight)
				note_moved_kernel(t, g->first + i, n, op, weight);
			if (rpl__node_set_kernel(n, op) != 0)
				return CUDA_ERROR_OUT_OF_MEMORY;
			rpl__kernel_params(n, op, &p, extra_buf, &extra_size);
			rpl__own_call(re);
			rc = DRV_REAL(cuGraphExecKernelNodeSetParams_v2)(exec, n->node, &p);
			break;
		}
		case CAP_OP_MEMCPY: {
			CUDA_MEMCPY3D d;

			rpl__copy_desc(op, n->stage, &d);
			if (rpl__copy_equal(&n->copy, &d))
				continue;
			if (weight)
				note_moved(t, g->first + i, -1, "copy", weight);
			n->copy = d;
			rpl__own_call(re);
			rc = DRV_REAL(cuGraphExecMemcpyNodeSetParams)(exec, n->node, &n->copy, op->ctx);
			break;
		}
		case CAP_OP_MEMSET: {
			CUDA_MEMSET_NODE_PARAMS p;

			rpl__memset_params(op, &p);
			if (rpl__memset_equal(&n->set, &p))
				continue;
			if (weight)
				note_moved(t, g->first + i, -1, "memset", weight);
			n->set = p;
			rpl__own_call(re);
			rc = DRV_REAL(cuGraphExecMemsetNodeSetParams)(exec, n->node, &n->set, op->ctx);
			break;
		}
		case CAP_OP_EVENT_RECORD:
			if (n->event == op->u.event.event)
				continue;
			if (weight)
				note_moved(t, g->first + i, -1, "event record", weight);
			n->event = op->u.event.event;
			rpl__own_call(re);
			rc = DRV_REAL(cuGraphExecEventRecordNodeSetEvent)(exec, n->node, n->event);
			break;
		case CAP_OP_EVENT_WAIT:
			if (n->empty || n->event == op->u.event.event)
				continue;
			if (weight)
				note_moved(t, g->first + i, -1, "event wait", weight);
			n->event = op->u.event.event;
			rpl__own_call(re);
			rc = DRV_REAL(cuGraphExecEventWaitNodeSetEvent)(exec, n->node, n->event);
			break;
		default:
			rc = CUDA_ERROR_NOT_SUPPORTED;
			break;
		}
		(*npatched)++;
		rpl__refs_touch(t, g, i); /* its values changed: refs.c reads it again */
		note_moved_site(t, op->callsite);
	}
	return rc;
}

#define RPL_MAX_JOIN 64 /* streams one segment may join; more: the segment goes eagerly */

/* Whether every staged copy's source span has the size of its node's stage buffer (the span
 * also depends on pitches, which are bindings). */
static bool stages_fit(const struct rpl_seg *g, const struct cap_op *def)
{
	for (uint32_t i = 0; i < g->n; i++)
		if (g->nodes[i].stage && (!(def[i].flags & CAP_OPF_STAGED) ||
					  def[i].u.memcpy.src_span != g->nodes[i].stage_bytes))
			return false;
	return true;
}

/* When the previous launch of g's graphs has read their stage buffers, fill them with the bytes
 * staged at the calls; CUDA_ERROR_NOT_READY when it has not (never waits: invariant 9). */
static CUresult stages_fill(struct rpl_engine *re, struct rpl_seg *g, const struct cap_op *def)
{
	for (uint32_t k = 0; g->launches && k < g->nparts; k++) {
		CUresult rc;

		if (!g->parts[k].staged)
			continue;
		rpl__own_call(re);
		rc = DRV_REAL(cuEventQuery)(g->parts[k].done_ev);
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	for (uint32_t i = 0; i < g->n; i++)
		if (g->nodes[i].stage)
			memcpy(g->nodes[i].stage, def[i].u.memcpy.staged, g->nodes[i].stage_bytes);
	return CUDA_SUCCESS;
}

/* Mark the end of a launch of part pt when it reads stage buffers. */
static CUresult rec_done(struct rpl_engine *re, const struct rpl_part *pt, CUstream launch)
{
	if (!pt->staged)
		return CUDA_SUCCESS;
	rpl__own_call(re);
	return DRV_REAL(cuEventRecord)(pt->done_ev, launch);
}

/* The streams of the deferred ops: *launch is where the graph goes (the legacy stream when an op
 * is on it, so CUDA's implicit synchronization with blocking streams holds for the whole graph;
 * else the first op's stream), others[] every other stream. Returns the count of others, or -1
 * when there are too many. */
static int def_streams(const struct cap_op *def, uint32_t ndef, CUstream *launch, CUstream *others)
{
	const struct cap_op *lop = &def[0];
	uint32_t same = 1;
	int n = 0;

	/* most runs are on one stream: then it is the launch stream and there is no other (one
	 * compare an op instead of the two walks below, issue 22) */
	while (same < ndef && def[same].stream_slot == lop->stream_slot)
		same++;
	if (same >= ndef) {
		*launch = lop->stream;
		return 0;
	}
	for (uint32_t i = 0; i < ndef; i++)
		if (def[i].stream_kind == CAP_STREAM_LEGACY) {
			lop = &def[i];
			break;
		}
	*launch = lop->stream;
	for (uint32_t i = 0; i < ndef; i++) {
		const struct cap_op *o = &def[i];
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
static CUresult join(struct rpl_engine *re, CUevent ev, CUstream launch, const CUstream *others, int n, bool fork)
{
	CUresult rc = CUDA_SUCCESS;

	if (fork && n) {
		rpl__own_call(re);
		rc = DRV_REAL(cuEventRecord)(ev, launch);
	}
	for (int i = 0; i < n && rc == CUDA_SUCCESS; i++) {
		if (fork) {
			rpl__own_call(re);
			rc = DRV_REAL(cuStreamWaitEvent)(others[i], ev, 0);
		} else {
			rpl__own_call(re);
			rc = DRV_REAL(cuEventRecord)(ev, others[i]);
			if (rc == CUDA_SUCCESS) {
				rpl__own_call(re);
				rc = DRV_REAL(cuStreamWaitEvent)(launch, ev, 0);
			}
		}
	}
	return rc;
}

/* After a graph launched but what orders later work after it failed: the deferred ops after it
 * (from the rest-th on: a run launched as several graphs) go eagerly, the engine waits for the
 * stream after dropping its mutex (invariant 9), before the program's call returns; then replay
 * stops in ctx. */
static void launched_unordered(struct rpl_engine *re, CUstream launch, CUcontext ctx, uint32_t rest)
{
	flush_from(re, RPL_FB_LAUNCH, rest);
	re->st.wait.stream = launch;
	re->st.wait.ctx = ctx;
	re->head.wait_due = true;
	def_clear(re);
	rpl__ctx_fail(re, ctx, "ordering streams after a graph launch failed");
}

/* One graph on one stream: the other streams of its ops (the deferred ones from off on) joined
 * before it and forked after. On a failure the deferred ops from off go eagerly (or, launched,
 * the engine waits for it). */
static CUresult launch_joined(struct rpl_engine *re, struct rpl_seg *g, uint32_t off, CUstream launch,
			      const CUstream *others, int nothers, const struct rpl_template *t, CUcontext ctx, bool pushed)
{
	CUresult rc;

	/* joins only add ordering: if one fails, the eager flush below is still in order */
	rc = join(re, t->join_ev, launch, others, nothers, false);
	if (rc == CUDA_SUCCESS) {
		rpl__own_call(re);
		rc = DRV_REAL(cuGraphLaunch)(g->parts[0].exec, launch);
		if (rc == CUDA_SUCCESS && (join(re, t->fork_ev, launch, others, nothers, true) != CUDA_SUCCESS ||
					   rec_done(re, &g->parts[0], launch) != CUDA_SUCCESS)) {
			rpl__ctx_leave(re, pushed);
			launched_unordered(re, launch, ctx, off + g->n);
			return CUDA_ERROR_UNKNOWN;
		}
	}
	rpl__ctx_leave(re, pushed);
	if (rc != CUDA_SUCCESS) {
		flush_from(re, RPL_FB_LAUNCH, off);
		rpl__ctx_fail(re, ctx, "launching a graph failed");
	}
	return rc;
}

/* One graph per stream, each on its own stream, in launch order (segment.c): no joins. On a
 * failure the parts not launched, and the deferred ops after g's, go eagerly. */
static CUresult launch_parts(struct rpl_engine *re, struct rpl_seg *g, uint32_t off, CUcontext ctx, bool pushed)
{
	const struct cap_op *def = rpl__def(re) + off;
	CUresult rc = CUDA_SUCCESS;
	CUstream unordered = NULL;
	bool done_failed = false;
	uint32_t k = 0;

	for (; k < g->nparts; k++) {
		CUstream s = def[g->parts[k].first].stream;

		rpl__own_call(re);
		rc = DRV_REAL(cuGraphLaunch)(g->parts[k].exec, s);
		if (rc != CUDA_SUCCESS)
			break;
		if (!done_failed && rec_done(re, &g->parts[k], s) != CUDA_SUCCESS) {
			done_failed = true;
			unordered = s;
		}
	}
	rpl__ctx_leave(re, pushed);
	if (rc != CUDA_SUCCESS) {
		/* launched parts stay; the others' ops go in order, after them */
		flush_ops(re, RPL_FB_LAUNCH, off, g, k);
		rpl__ctx_fail(re, ctx, "launching a graph failed");
		return rc;
	}
	if (done_failed) {
		launched_unordered(re, unordered, ctx, off + g->n);
		return CUDA_ERROR_UNKNOWN;
	}
	return CUDA_SUCCESS;
}

/* Count a launch of segment or block g of t that patched npatched nodes. */
static void launch_count(struct rpl_engine *re, struct rpl_template *t, struct rpl_seg *g, uint32_t npatched)
{
	g->launches++;
	g->last_launch = ++t->unit_launches;
	g->went_eager = false;
	g->patches += npatched;
	if (npatched) {
		g->patched_launches++;
		t->patched_launches++;
	}
	t->launches++;
	t->block_launches += g->nseg != 0;
	t->graph_launches += g->nparts;
	t->patches += npatched;
	t->ops_replayed += g->n;
	re->totals.graph_launches += g->nparts;
	re->totals.patches += npatched;
	re->totals.ops_replayed += g->n;
}

/* Patch g's nodes to the deferred ops from off on (its ops), unless they hold these very
 * bindings. A driver error, or CUDA_SUCCESS. */
static CUresult patch_timed(struct rpl_engine *re, struct rpl_template *t, struct rpl_seg *g, uint32_t off,
			    uint32_t *npatched)
{
	uint64_t t0 = rpl__gate_clock(), gen = g->run ? rw_run_bindings_gen(g->run) : 0;
	CUresult rc;

	*npatched = 0;
	if (gen && gen == g->patched_gen) {
		/* the very bindings its nodes were patched to: deriving the plan's ops and comparing
		 * every node would change nothing (about 300 instructions per op, issue 22) */
		rc = CUDA_SUCCESS;
	} else {
		rc = patch(re, t, g, rpl__def(re) + off, npatched);
		g->patched_gen = rc == CUDA_SUCCESS ? gen : 0;
	}
	t->patch_ns += rpl__gate_clock() - t0;
	return rc;
}

/* Launch g (a segment or block of t) for the deferred ops from off on, which begin with its ops.
 * True when it launched; false when it could not, and the deferred ops from off on went eagerly
 * (and, on a failure of cufold's own, the context went to passthrough): nothing is deferred then. */
static bool launch_unit(struct rpl_engine *re, struct rpl_template *t, struct rpl_seg *g, uint32_t off)
{
	const struct cap_op *def = rpl__def(re) + off;
	CUstream launch = NULL, others[RPL_MAX_JOIN];
	uint32_t npatched = 0;
	CUcontext ctx = def->ctx;
	uint64_t t1;
	bool pushed;
	int nothers = 0;
	CUresult rc;

	/* invariant 2: the deferred ops from off on begin with exactly g's */
	cf_assert(g->first == re->st.def_first + off && off + g->n <= re->st.ndef);
	if (g->nparts == 1 && g->one_stream) {
		/* its ops are on one stream slot, and so are the deferred ops (slots are in the key):
		 * one stream, no joins (def_streams' one-stream answer, without its walk) */
		launch = def->stream;
		cf_assert(def_streams(def, g->n, &launch, others) == 0 && launch == def->stream);
	} else if (g->nparts == 1) {
		nothers = def_streams(def, g->n, &launch, others);
		if (nothers < 0 || (nothers > 0 && !t->join_ev)) {
			flush_from(re, RPL_FB_MISMATCH, off);
			return false;
		}
	}
	if (g->staged && !stages_fit(g, def)) {
		flush_from(re, RPL_FB_MISMATCH, off);
		return false;
	}
	/* the run's ops [off, off + g->n) are g's template ops again, vid for vid: rewrite's
	 * remembered pass needs no compare (rw_run_guards_hold_exact) */
	if (!rpl__seg_guards_hold(re, g, def, re->st.exact_t == t && re->st.nexact >= off + g->n)) {
		/* the rewrite plan was not proven for these bindings: the program's ops go as
		 * they were, in order, and the shape is planned again from a later sighting */
		struct rpl_shape_note *n = cap_shape_user(t->shape);

		flush_from(re, RPL_FB_GUARD, off);
		if (n && ++n->guard_retires == RPL_GUARD_RETIRES)
			cf_log_info("window shape %llu: rewrite guards failed %d times; it is replayed without "
				    "rewriting from now on", (unsigned long long)t->shape_id, RPL_GUARD_RETIRES);
		rpl__template_retire(re, t, "a rewrite guard failed on a launch's bindings");
		return false;
	}
	rc = patch_timed(re, t, g, off, &npatched);
	t1 = rpl__gate_clock();
	if (rc != CUDA_SUCCESS) {
		flush_from(re, RPL_FB_PATCH, off);
		rpl__ctx_fail(re, ctx, "patching a graph node failed");
		return false;
	}
	op_ctx_enter(re, def, &pushed);
	if (g->staged) {
		rc = stages_fill(re, g, def);
		if (rc != CUDA_SUCCESS) {
			/* busy: the previous launch still reads the buffers; this one goes eagerly
			 * (the copies from the bytes taken at the calls), which needs no wait */
			rpl__ctx_leave(re, pushed);
			flush_from(re, rc == CUDA_ERROR_NOT_READY ? RPL_FB_BUSY : RPL_FB_LAUNCH, off);
			if (rc != CUDA_ERROR_NOT_READY)
				rpl__ctx_fail(re, ctx, "waiting for a graph's earlier launch failed");
			return false;
		}
	}
	if (g->nparts == 1)
		rc = launch_joined(re, g, off, launch, others, nothers, t, ctx, pushed);
	else
		rc = launch_parts(re, g, off, ctx, pushed);
	t->launch_ns += rpl__gate_clock() - t1; /* stage buffers' fill and the joins included */
	if (rc != CUDA_SUCCESS)
		return false;
	launch_count(re, t, g, npatched);
	return true;
}

/* Whether a block starting with segment k goes on past segment last (blocks lie wholly inside a
 * run of adjacent segments: its next segment's ops come right after last's). */
static bool block_goes_past(const struct rpl_template *t, uint32_t k, uint32_t last)
{
	int32_t b = t->segs[k].block;

	for (; b >= 0 && (uint32_t)b < t->nblocks && t->blocks[b].first == t->segs[k].first; b++)
		if (k + t->blocks[b].nseg - 1 > last)
			return true; /* (a dropped block has nseg 0) */
	return false;
}

/* The largest of t's graphs that starts with segment k and ends at segment last or before it:
 * a block, or segment k itself. */
static struct rpl_seg *unit_at(struct rpl_template *t, uint32_t k, uint32_t last)
{
	int32_t b = t->segs[k].block;

	for (; b >= 0 && (uint32_t)b < t->nblocks && t->blocks[b].first == t->segs[k].first; b++)
		if (t->blocks[b].nseg && k + t->blocks[b].nseg - 1 <= last)
			return &t->blocks[b];
	return &t->segs[k];
}

/* The churn check's probe (retire.c) in the run of segments k..last, when it is due: the segment
 * its eager tail starts at (the last one with a kernel; *off: its offset in the run), else last + 1.
 * The tail goes eagerly after the graphs before it, so the probe costs little where a run ends
 * in a small segment; a run whose tail is longer than RPL_PROBE_OPS is passed over, up to the
 * template's segment count of runs (the CuPy towers: its 262-op first segment, 4 % of a 16-step
 * run's ops, for the 12-op last one). */
static uint32_t probe_at(struct rpl_engine *re, struct rpl_template *t, uint32_t k, uint32_t last, uint32_t *off)
{
	const struct cap_op *def = rpl__def(re);
	uint32_t o = 0, j = last + 1, jo = 0;

	if (!rpl__churn_needs_probe(re, t))
		return last + 1;
	for (uint32_t s = k; s <= last; o += t->segs[s].n, s++)
		for (uint32_t i = 0; i < t->segs[s].n; i++)
			if (def[o + i].kind == CAP_OP_KERNEL) {
				j = s;
				jo = o;
				break;
			}
	if (j > last)
		return last + 1; /* no kernel: it would measure nothing */
	if (o - jo > RPL_PROBE_OPS && t->probe_waits++ < t->nsegs)
		return last + 1;
	t->churn_probed = true;
	*off = jo;
	return j;
}

/* Launch segments k..last of t for the deferred ops, which begin with exactly their ops, as the
 * fewest of its graphs: the largest block starting at each point, else a segment; the deferred
 * ops after them (a run that ends inside a segment) go eagerly, counted as fallback why. On a
 * failure the deferred ops not launched are submitted eagerly and the context goes to
 * passthrough. Returns the first driver error of an eager submission. */
static CUresult launch_segs_now(struct rpl_engine *re, struct rpl_template *t, uint32_t k, uint32_t last,
				enum rpl_fallback why)
{
	CUresult rc = CUDA_SUCCESS;
	uint32_t off = 0, poff = 0, pj = probe_at(re, t, k, last, &poff);

	while (k < pj) {
		struct rpl_seg *g = unit_at(t, k, pj - 1);

		if (!launch_unit(re, t, g, off))
			return rc; /* the rest went eagerly; t may be retired */
		off += g->n;
		k += g->nseg ? g->nseg : 1;
	}
	if (pj <= last) {
		/* the churn check compares patching with eager submission: measure the latter once,
		 * on the run's tail from its last segment with a kernel, after the graphs before it;
		 * their graphs then hold older bindings than their ops had */
		cf_assert(off == poff);
		rpl__fallback_note(re, t, RPL_FB_PROBE);
		rpl__mark_flush_begin(t->segs[pj].n, RPL_FB_PROBE);
		for (; k <= last; k++) {
			struct rpl_seg *g = &t->segs[k];

			g->last_launch = ++t->unit_launches;
			g->went_eager = true;
			for (uint32_t i = 0; i < g->n; i++)
				issue_op(re, &rpl__def(re)[off + i], &rc);
			off += g->n;
			re->totals.ops_flushed += g->n;
		}
		rpl__mark_end();
	}
	cf_assert(off <= re->st.ndef); /* invariant 2: the run begins with these segments */
	if (off < re->st.ndef)
		rc = flush_ops(re, why, off, NULL, 0);
	else
		def_clear(re);
	rpl__check_churn(re, t);
	return rc;
}

/* launch_segs_now inside an NVTX range (an eager fallback inside it is a range nested in it). */
static CUresult launch_segs(struct rpl_engine *re, struct rpl_template *t, uint32_t k, uint32_t last,
			    enum rpl_fallback why)
{
	CUresult rc;

	rpl__mark_launch_begin(t->shape_id, k, re->st.ndef);
	rc = launch_segs_now(re, t, k, last, why);
	rpl__mark_end();
	return rc;
}

/* A candidate whose segments *k..*last are the longest run of whole segments the deferred ops
 * begin with, *n ops: all of them, or fewer where the run ends inside a segment (a mismatch, a
 * flush or a poll after segments were kept while the device was busy). NULL when there is none. */
static struct rpl_template *whole_segments(struct rpl_engine *re, uint32_t *k, uint32_t *last, uint32_t *n)
{
	uint32_t end = re->st.def_first + re->st.ndef; /* the run's end, past its last op */
	struct rpl_template *best = NULL;

	*n = 0;
	for (uint32_t c = 0; c < re->st.ncand && *n < re->st.ndef; c++) {
		struct rpl_template *t = re->st.cand[c];
		uint32_t covered = 0, j;
		int32_t s;

		if (re->st.def_first >= t->nops || (s = t->ops[re->st.def_first].seg) < 0)
			continue;
		/* invariant 3: t agrees with every deferred op, so its segments from s on hold them */
		for (j = (uint32_t)s; j < t->nsegs && t->segs[j].first == re->st.def_first + covered &&
				      t->segs[j].first + t->segs[j].n <= end; j++)
			covered += t->segs[j].n;
		if (covered > *n) {
			best = t;
			*k = (uint32_t)s;
			*last = j - 1;
			*n = covered;
		}
	}
	return best;
}

/* Submit what is deferred: as graphs as far as it is whole segments, the rest eagerly. */
CUresult rpl__submit_deferred(struct rpl_engine *re, enum rpl_fallback why)
{
	struct rpl_template *t;
	uint32_t k, last, n;
	CUresult rc;

	if (!re->st.ndef)
		return CUDA_SUCCESS;
	t = whole_segments(re, &k, &last, &n);
	if (t) {
		rc = launch_segs(re, t, k, last, why);
		cf_assert(re->st.ndef == 0); /* invariant 5: launched, or submitted eagerly */
		return rc;
	}
	return flush_eager(re, why);
}

/* Whether stream s (of op) has finished all work submitted to it: one query, no wait. A query of
 * the legacy stream, which synchronizes with the context's blocking streams, is made in the
 * relaxed capture mode: in the default (global) mode it may be refused while another thread of
 * the program captures a stream, and end that capture (CUDA's rules for
 * cuThreadExchangeStreamCaptureMode; the software device follows them); another stream's query
 * is safe. A failed query counts as idle. */
static bool stream_idle(struct rpl_engine *re, const struct cap_op *op)
{
	CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	bool legacy = op->stream_kind == CAP_STREAM_LEGACY, relaxed = false, idle;

	if (legacy) {
		rpl__own_call(re);
		relaxed = DRV_REAL(cuThreadExchangeStreamCaptureMode)(&mode) == CUDA_SUCCESS;
	}
	rpl__own_call(re);
	idle = DRV_REAL(cuStreamQuery)(op->stream) != CUDA_ERROR_NOT_READY;
	if (relaxed) {
		rpl__own_call(re);
		DRV_REAL(cuThreadExchangeStreamCaptureMode)(&mode); /* the thread's own mode back */
	}
	return idle;
}

/* The index of stream h among the run's first nf noted streams (idle_stream), or nf: not one. */
static inline uint32_t idle_stream_find(const struct rpl_state *st, uint32_t nf, CUstream h)
{
	uint32_t j = 0;

	while (j < nf && st->idle_stream[j] != h)
		j++;
	return j;
}

/* Note stream h, first named by the run's op at, as the run's next stream (there is room). */
static inline void idle_stream_add(struct rpl_state *st, uint32_t at, CUstream h)
{
	cf_assert(st->idle_nfirst < RPL_MAX_PARTS);
	st->idle_first[st->idle_nfirst] = at;
	st->idle_stream[st->idle_nfirst++] = h;
}

/* Whether the run's streams noted so far (idle_first, idle_stream) are those of its ops looked at
 * (idle_scanned), each with its first op, in the order of their first ops: what device_idle's
 * walk and the lane's notes (rpl__idle_note_run) must leave. For debug builds' asserts. */
static inline bool idle_notes_hold(const struct rpl_state *st, const struct cap_op *def)
{
	uint32_t nf = 0;

	for (uint32_t i = 0; i < st->idle_scanned && nf < st->idle_nfirst; i++) {
		if (idle_stream_find(st, nf, def[i].stream) < nf)
			continue;
		if (st->idle_first[nf] != i || st->idle_stream[nf] != def[i].stream)
			return false;
		nf++;
	}
	return nf == st->idle_nfirst;
}

/* Whether the streams the deferred ops are on have finished all work submitted to them (the
 * graphs launched before, the program's eager work). Asking for one idle stream instead cost
 * recsys 2 more launches a step at the same modeled time. One cheap query each, no wait
 * (invariant 9), in the order of the streams' first ops, up to the first busy one. A failed
 * query counts as idle: the run is launched as it would have been without blocks.
 * The run's streams are remembered as it grows (idle_first, reset by def_clear): each end looks
 * only at the ops deferred since the last one. Walking the whole run at every end cost copy_loop
 * ~45 instructions an op once runs were held over idle ends (hold_idle): ~800 ops, one stream. */
static bool device_idle(struct rpl_engine *re, bool one_slot)
{
	struct rpl_state *st = &re->st;
	const struct cap_op *def = rpl__def(re);
	bool idle = true, pushed;

	cf_assert(st->idle_scanned <= st->ndef && st->idle_nfirst <= RPL_MAX_PARTS);
	cf_assert(idle_notes_hold(st, def));
	op_ctx_enter(re, &def[0], &pushed);
	for (uint32_t j = 0; j < st->idle_nfirst && idle; j++)
		idle = stream_idle(re, &def[st->idle_first[j]]);
	for (uint32_t i = st->idle_scanned, n = st->ndef; i < n && idle && st->idle_nfirst < RPL_MAX_PARTS;) {
		uint32_t nf = st->idle_nfirst;

		/* most runs are on one stream: the ops on the first one are passed over at once, and
		 * not looked at where the template's graph ops are all on one slot (one_slot) */
		if (nf && one_slot) {
			cf_assert(def[n - 1].stream == st->idle_stream[0]);
			st->idle_scanned = n;
			break;
		}
		if (nf) {
			CUstream s0 = st->idle_stream[0];

			while (i < n && def[i].stream == s0)
				i++;
			st->idle_scanned = i;
			if (i == n)
				break;
		}
		st->idle_scanned = ++i;
		if (idle_stream_find(st, nf, def[i - 1].stream) < nf)
			continue;
		idle_stream_add(st, i - 1, def[i - 1].stream);
		idle = stream_idle(re, &def[i - 1]);
	}
	rpl__ctx_leave(re, pushed);
	return idle;
}

void rpl__idle_note_run(struct rpl_engine *re, uint32_t from, uint32_t n, CUstream h)
{
	struct rpl_state *st = &re->st;

	if (st->idle_scanned != from)
		return; /* ops before them not looked at yet: device_idle walks from there */
	if (idle_stream_find(st, st->idle_nfirst, h) == st->idle_nfirst) {
		if (st->idle_nfirst == RPL_MAX_PARTS)
			return; /* (device_idle's walk stops there too) */
		idle_stream_add(st, from, h);
	}
	st->idle_scanned = from + n;
}

/* What one launch of t costs the host: its mean on the gate clock (patching and joins
 * included), 0 before the first. */
static uint64_t launch_cost(const struct rpl_template *t)
{
	return t->launches ? (t->launch_ns + t->patch_ns) / t->launches : 0;
}

/* Whether the device, found busy at t's last segment end (or idle there, and held), and idle at
 * this one, may have waited longer than a launch of t costs the host: the host's time since
 * then bounds the wait. Shorter waits cost less than the launch that would avoid them
 * (copy_loop: a few us of a 190 us step, where one launch costs 2.5 us). */
static bool starved_long(const struct rpl_template *t)
{
	return rpl__gate_clock() - t->busy_at > launch_cost(t);
}

/* Whether a run found idle at segment last's end may still wait for the next segment: it came
 * last time within what a launch costs the host, counted from where the device was first found
 * idle in this run (idle_at, or now). The device then waits less than the launch would cost,
 * and the run launches as one block instead of a launch per segment: recsys at CUFOLD_OPT=1, the
 * device idle at the ends of its small second and third segments, 9 host submissions a step ->
 * 7. A guess that was wrong is caught at the next end (starved_long: that segment starves). */
static bool hold_idle(const struct rpl_template *t, uint32_t k, uint32_t last, uint64_t now)
{
	uint64_t fill = t->segs[last + 1].fill_ns, since = last > k && t->idle_at ? now - t->idle_at : 0;

	return fill && since + fill <= launch_cost(t);
}

/* Note segment last's end (of window win) as handled: the next segment's fill_ns counts from
 * here. */
static void end_note(struct rpl_template *t, uint32_t last, uint64_t win)
{
	t->end_at = rpl__gate_clock();
	t->end_seg = (int32_t)last;
	t->end_win = win;
}

/* The policy: a run launches when its segment ends and the device is idle (it would otherwise
 * wait for the host's next calls) unless the next segment was due sooner than a launch costs
 * (hold_idle), or when no block could take it further (the run ends, or the largest block from
 * its start ends here); while the device is busy it goes on deferred, and launches later as a few
 * blocks: the device's queue does not empty for it, and a program whose host is faster than the
 * device pays a launch per block instead of one per segment. Busy now is not busy until the next
 * segment ends: where a run kept deferred found the device idle at the next end, the device
 * starved meanwhile (rpl_loop, 10 us of host time and +20 us kernels a call: 0.92x eager), so
 * that segment launches at its end from then on (its starves flag). */
void rpl__segment_end(struct rpl_engine *re)
{
	struct rpl_template *t;
	uint32_t k, last, n;
	uint64_t now, win = re->st.def_win;
	bool extend, idle = true, starved = false;

	if (!re->st.ndef)
		return;
	t = whole_segments(re, &k, &last, &n);
	if (!t || n < re->st.ndef) {
		rpl__submit_deferred(re, RPL_FB_BOUNDARY); /* not this run's cuts: what is whole goes */
		return;
	}
	now = rpl__gate_clock();
	if (t->end_seg >= 0 && (uint32_t)t->end_seg + 1 == last && t->end_win == win)
		t->segs[last].fill_ns = now - t->end_at + 1; /* (never 0: measured) */
	extend = block_goes_past(t, k, last) && !t->segs[last].starves;
	if (extend || last > k)
		idle = device_idle(re, t->one_slot);
	if (last > k && idle && starved_long(t)) {
		/* kept deferred at the last end while busy (or held), idle now: it may have run
		 * dry for longer than a launch costs */
		t->segs[last - 1].starves = true;
		t->boundaries_starved++;
		starved = true;
	}
	if (extend && (!idle || (!starved && hold_idle(t, k, last, now)))) {
		if (idle) {
			t->boundaries_held++;
			t->idle_at = last > k && t->idle_at ? t->idle_at : now;
		} else {
			t->boundaries_busy++;
			t->idle_at = 0;
		}
		t->busy_at = rpl__gate_clock();
		end_note(t, last, win);
		return; /* stays deferred: the next segment's ops join it */
	}
	t->boundaries_idle += extend;
	t->idle_at = 0;
	launch_segs(re, t, k, last, RPL_FB_BOUNDARY);
	cf_assert(re->st.ndef == 0); /* invariant 5 */
	end_note(t, last, win);
}
