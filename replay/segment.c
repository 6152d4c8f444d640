/* segment.c - building a segment's CUDA graphs: the dependencies of its ops inside the segment,
 * the split into one graph per stream where that keeps eager execution's overlap, and the nodes.
 * replay layer.
 *
 * Dependencies. A node depends on the nodes of its trace-graph predecessors inside the segment
 * (stream order, the legacy stream's implicit synchronization, event record -> wait) or, in a
 * plan of the parallel rule, on exactly the plan nodes it depends on through memory. An op
 * without a node (folded into a plan node, or erased) passes the dependencies it had on to the
 * nodes after it; a later member of a batch kernel also passes on the batch kernel's node, which
 * does its work (its first member may be on another stream). Everything before the segment was
 * submitted before its launch.
 *
 * Split (issue 11, part 3). One graph launched on one stream, after joining the segment's other
 * streams and forking to them after (launch.c), makes each segment boundary a barrier across the
 * window's streams: a side stream that ran beside the main one in eager execution waits for it
 * at every boundary. So a segment on several streams is built as one graph per stream (a part),
 * each launched on its own stream, when launching the parts one after another keeps every
 * ordering eager execution had inside the segment:
 *  - the only dependencies between two parts are the program's event record -> wait pairs (no
 *    implicit synchronization with the legacy stream, no plan node over two streams, no
 *    parallel-rule memory dependency across streams, no batch kernel moved past an event wait
 *    of its stream: it would not wait for what the waited-for streams did before the segment);
 *  - such a wait becomes an event-wait node, which waits for the event's most recent record
 *    when its graph is launched: so every record of an event in the segment is in one part, and
 *    a wait on it in another part comes after all of them (that part is launched first) or
 *    before all of them (it is launched after);
 *  - these launched-before relations have no cycle (parts go in a topological order, ties in
 *    the order their streams first appear).
 * Work outside the segment needs nothing more: each stream's earlier work is ahead of its part on
 * the stream, and a wait on a record outside the segment is an event-wait node either way.
 * Otherwise the segment is one graph, as before.
 *
 * Nodes. Event records are record nodes (the program's later waits, queries and elapsed times
 * see them); a wait on a record inside its own graph is an empty node (the edge does the
 * waiting), on one outside it an event-wait node. A copy from pageable memory reads a pinned
 * stage buffer of its node, refilled at each launch from the bytes taken at the call. */
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "replay/replay_int.h"

/* Positions of a segment (indices from its first op). */
struct pos_list {
	uint32_t *v;                 /* positions (owned), or NULL */
	uint32_t n;                  /* entries */
};

static bool pos_folded(const struct rpl_seg *g, uint32_t i)
{
	return g->run && rw_run_is_folded(g->run, i);
}

/* Add p to v[0..*n) unless it is there. */
static void list_add(uint32_t *v, uint32_t *n, uint32_t p)
{
	for (uint32_t k = 0; k < *n; k++)
		if (v[k] == p)
			return;
	v[(*n)++] = p;
}

/* Position p as a dependency: itself when it has a node, else what it stands in for: what it
 * depended on and, for a later member of a batch kernel (head[p], the node's position), the
 * node doing its work (which may stand on another stream than p's successors). */
static void dep_position(const struct rpl_seg *g, const struct pos_list *d, const uint32_t *head, uint32_t p,
			 uint32_t *v, uint32_t *n)
{
	if (!pos_folded(g, p)) {
		list_add(v, n, p);
		return;
	}
	if (head && head[p] != UINT32_MAX)
		list_add(v, n, head[p]);
	for (uint32_t k = 0; k < d[p].n; k++)
		list_add(v, n, d[p].v[k]);
}

/* Per position: the position of the batch kernel node it is a later member of, or UINT32_MAX;
 * NULL when the plan has no batch kernel (*ok true) or memory ran out (*ok false). */
static uint32_t *batch_heads(const struct rpl_seg *g, bool *ok)
{
	const struct rw_plan *plan = g->run ? g->run->plan : NULL;
	uint32_t *head = NULL;

	*ok = true;
	for (uint32_t k = 0; plan && k < plan->nnodes; k++) {
		const struct rw_plan_node *pn = &plan->nodes[k];

		if (pn->kind != RW_NODE_BATCH_KERNEL)
			continue;
		if (!head) {
			head = malloc(g->n * sizeof(*head));
			if (!head) {
				*ok = false;
				return NULL;
			}
			for (uint32_t i = 0; i < g->n; i++)
				head[i] = UINT32_MAX;
		}
		for (uint32_t m = 1; m < pn->norig; m++)
			head[pn->orig[m]] = pn->orig[0];
	}
	return head;
}

/* d[i]: the positions with nodes that position i depends on. 0 or -CF_ENOMEM. */
static int deps_compute(const struct rpl_seg *g, const struct cap_graph *tg, struct pos_list *d)
{
	const struct rw_plan *plan = g->run ? g->run->plan : NULL;
	uint32_t *scratch = malloc((g->n + 1) * sizeof(*scratch));
	bool heads_ok;
	uint32_t *head = batch_heads(g, &heads_ok);

	if (!scratch || !heads_ok) {
		free(scratch);
		free(head);
		return -CF_ENOMEM;
	}
	for (uint32_t i = 0; i < g->n; i++) {
		uint32_t n = 0;

		if (plan && plan->dep_start && !pos_folded(g, i)) {
			/* the parallel rule: exactly the plan nodes this one depends on through memory */
			uint32_t k = (uint32_t)g->run->node_of[i];

			for (uint32_t e = plan->dep_start[k]; e < plan->dep_start[k + 1]; e++)
				dep_position(g, d, head, plan->nodes[plan->dep_list[e]].orig[0], scratch, &n);
		} else {
			uint32_t np = cap_graph_npred(tg, g->first + i);
			const uint32_t *pred = cap_graph_pred(tg, g->first + i);

			for (uint32_t j = 0; j < np; j++)
				if (pred[j] >= g->first && pred[j] < g->first + i)
					dep_position(g, d, head, pred[j] - g->first, scratch, &n);
		}
		if (n) {
			d[i].v = malloc(n * sizeof(*d[i].v));
			if (!d[i].v) {
				free(scratch);
				free(head);
				return -CF_ENOMEM;
			}
			memcpy(d[i].v, scratch, n * sizeof(*scratch));
			d[i].n = n;
		}
	}
	free(scratch);
	free(head);
	return 0;
}

/* ------------------------------------------------------------------ the split */

/* What deciding the split works with: parts by first appearance of their stream. */
struct split {
	uint32_t nparts;             /* streams of the segment */
	uint16_t slot[RPL_MAX_PARTS]; /* each part's stream slot */
	uint8_t *part;               /* per position: its part (by first appearance) */
	bool before[RPL_MAX_PARTS][RPL_MAX_PARTS]; /* [a][b]: a must be launched before b */
};

/* The part of every position by its stream; false when there are more than RPL_MAX_PARTS
 * streams or an op on the legacy stream (its implicit synchronization is with every blocking
 * stream, not only its own). */
static bool split_parts(struct split *sp, const struct rpl_seg *g, const struct cap_window *w)
{
	for (uint32_t i = 0; i < g->n; i++) {
		const struct cap_op *op = cap_window_op(w, g->first + i);
		uint32_t p = 0;

		if (op->stream_kind == CAP_STREAM_LEGACY)
			return false;
		while (p < sp->nparts && sp->slot[p] != op->stream_slot)
			p++;
		if (p == sp->nparts) {
			if (sp->nparts == RPL_MAX_PARTS)
				return false;
			sp->slot[sp->nparts++] = op->stream_slot;
		}
		sp->part[i] = (uint8_t)p;
	}
	return true;
}

/* Whether a dependency of position i on position p in another part is an event record -> wait
 * pair (the only kind a split keeps, as an event-wait node); it orders p's part first. */
static bool split_cross_dep(struct split *sp, const struct rpl_seg *g, const struct cap_window *w, uint32_t i,
			    uint32_t p)
{
	const struct cap_op *wait = cap_window_op(w, g->first + i), *rec = cap_window_op(w, g->first + p);

	if (wait->kind != CAP_OP_EVENT_WAIT || rec->kind != CAP_OP_EVENT_RECORD ||
	    wait->u.event.slot != rec->u.event.slot)
		return false;
	sp->before[sp->part[p]][sp->part[i]] = true;
	return true;
}

/* Whether a plan node at position i covers (or reads from) ops of one part only. */
static bool split_node_one_part(const struct split *sp, const struct rpl_seg *g, uint32_t i)
{
	const struct rw_plan_node *pn;

	if (!g->run)
		return true;
	pn = &g->run->plan->nodes[g->run->node_of[i]];
	for (uint32_t k = 0; k < pn->norig; k++)
		if (sp->part[pn->orig[k]] != sp->part[i])
			return false;
	return pn->from == RW_NONE || sp->part[pn->from] == sp->part[i];
}

/* Whether the plan node at position i is a batch kernel whose later members were moved past an
 * event wait of their stream (rewrite/rules/batch_kernel.c): the merged node does not wait for
 * what the wait brought in. Inside the segment the rule proved that unneeded; work before the
 * segment on the waited-for streams is done before the node runs only when the segment is one
 * graph launched after joining its streams. */
static bool split_node_passes_wait(const struct rpl_seg *g, const struct cap_window *w, uint32_t i)
{
	const struct rw_plan_node *pn;
	const struct cap_op *first;

	if (!g->run || g->run->node_of[i] < 0)
		return false;
	pn = &g->run->plan->nodes[g->run->node_of[i]];
	if (pn->kind != RW_NODE_BATCH_KERNEL)
		return false;
	first = cap_window_op(w, g->first + pn->orig[0]);
	for (uint32_t p = pn->orig[0] + 1; p < pn->orig[pn->norig - 1]; p++) {
		const struct cap_op *op = cap_window_op(w, g->first + p);

		if (op->kind == CAP_OP_EVENT_WAIT && op->stream_slot == first->stream_slot)
			return true;
	}
	return false;
}

/* The event rule: every record of a slot in one part; a wait in another part before all of
 * them (its part first) or after all of them (theirs first). Event ops must have nodes. */
static bool split_events(struct split *sp, const struct rpl_seg *g, const struct cap_window *w)
{
	for (uint32_t i = 0; i < g->n; i++) {
		const struct cap_op *wt = cap_window_op(w, g->first + i);
		bool before = false, after = false;
		int32_t rpart = -1;

		if (wt->kind != CAP_OP_EVENT_RECORD && wt->kind != CAP_OP_EVENT_WAIT)
			continue;
		if (pos_folded(g, i))
			return false;
		if (wt->kind == CAP_OP_EVENT_RECORD)
			rpart = sp->part[i];
		for (uint32_t j = 0; j < g->n; j++) {
			const struct cap_op *r = cap_window_op(w, g->first + j);

			if (j == i || r->kind != CAP_OP_EVENT_RECORD || r->u.event.slot != wt->u.event.slot)
				continue;
			if (rpart >= 0 && rpart != sp->part[j])
				return false; /* records of one event in two parts */
			rpart = sp->part[j];
			before |= j < i;
			after |= j > i;
		}
		if (wt->kind != CAP_OP_EVENT_WAIT || rpart < 0 || rpart == sp->part[i])
			continue;
		if (before && after)
			return false;
		if (before)
			sp->before[rpart][sp->part[i]] = true;
		else
			sp->before[sp->part[i]][rpart] = true;
	}
	return true;
}

/* Parts in a topological order of sp->before (ties by first appearance) into order[]; false on a
 * cycle. */
static bool split_order(const struct split *sp, uint8_t *order)
{
	bool placed[RPL_MAX_PARTS] = { false };

	for (uint32_t k = 0; k < sp->nparts; k++) {
		uint32_t p = 0;

		for (; p < sp->nparts; p++) {
			bool ready = !placed[p];

			for (uint32_t q = 0; q < sp->nparts && ready; q++)
				ready = placed[q] || !sp->before[q][p];
			if (ready)
				break;
		}
		if (p == sp->nparts)
			return false;
		placed[p] = true;
		order[k] = (uint8_t)p;
	}
	return true;
}

/* Decide g's parts: set every position's nodes[i].part (launch order) and return the count; 1
 * when the segment stays one graph. */
static uint32_t split_decide(struct rpl_seg *g, const struct cap_window *w, const struct pos_list *d)
{
	struct split sp;
	uint8_t order[RPL_MAX_PARTS], rank[RPL_MAX_PARTS];
	const char *why = NULL;
	uint32_t nparts = 1;

	memset(&sp, 0, sizeof(sp));
	sp.part = calloc(g->n, 1);
	if (!sp.part || !split_parts(&sp, g, w) || sp.nparts < 2)
		goto out_one;
	for (uint32_t i = 0; i < g->n; i++) {
		if (pos_folded(g, i))
			continue; /* its dependencies are checked where they are passed on */
		if (!split_node_one_part(&sp, g, i)) {
			why = "a rewrite spans streams";
			goto out_one;
		}
		if (split_node_passes_wait(g, w, i)) {
			why = "a batch kernel was moved past an event wait";
			goto out_one;
		}
		for (uint32_t k = 0; k < d[i].n; k++)
			if (sp.part[d[i].v[k]] != sp.part[i] && !split_cross_dep(&sp, g, w, i, d[i].v[k])) {
				why = "streams ordered by more than event pairs";
				goto out_one;
			}
	}
	if (!split_events(&sp, g, w)) {
		why = "event records and waits not one way";
		goto out_one;
	}
	if (!split_order(&sp, order)) {
		why = "streams wait on each other both ways";
		goto out_one;
	}
	for (uint32_t k = 0; k < sp.nparts; k++)
		rank[order[k]] = (uint8_t)k;
	for (uint32_t i = 0; i < g->n; i++)
		g->nodes[i].part = rank[sp.part[i]];
	nparts = sp.nparts;
out_one:
	if (why)
		cf_log_debug("segment at op %u (%u ops, %u streams) stays one graph: %s", g->first, g->n, sp.nparts,
			     why);
	if (nparts == 1)
		for (uint32_t i = 0; i < g->n; i++)
			g->nodes[i].part = 0;
	free(sp.part);
	return nparts;
}

/* ------------------------------------------------------------------ nodes */

/* Whether an op of part `part` before position i records the event slot of the wait op. */
static bool recorded_in_part(const struct cap_window *w, const struct rpl_seg *g, uint32_t i, uint16_t slot)
{
	for (uint32_t j = 0; j < i; j++) {
		const struct cap_op *o = cap_window_op(w, g->first + j);

		if (g->nodes[j].part == g->nodes[i].part && o->kind == CAP_OP_EVENT_RECORD && o->u.event.slot == slot)
			return true;
	}
	return false;
}

/* Add op (position i of segment g) to its part's graph, depending on the nodes d lists in the
 * same part (a dependency on another part is an event record -> wait pair: the wait is an
 * event-wait node). A folded op gets no node. */
static CUresult add_node(struct rpl_engine *re, struct rpl_seg *g, uint32_t i, const struct cap_op *op,
			 const struct cap_window *w, const struct pos_list *d, CUgraphNode *deps)
{
	struct rpl_node *n = &g->nodes[i];
	struct rpl_part *pt = &g->parts[n->part];
	size_t ndeps = 0;
	CUresult rc;

	n->kind = op->kind;
	if (pos_folded(g, i)) {
		n->empty = true; /* covered by a plan node or erased: its order went to d */
		return CUDA_SUCCESS;
	}
	for (uint32_t k = 0; k < d[i].n; k++)
		if (g->nodes[d[i].v[k]].part == n->part)
			deps[ndeps++] = g->nodes[d[i].v[k]].node;
	if (op->stream_kind == CAP_STREAM_LEGACY)
		pt->legacy = true;
	rpl__own_call(re);
	switch (op->kind) {
	case CAP_OP_KERNEL: {
		CUDA_KERNEL_NODE_PARAMS p;
		void *extra_buf[5];
		size_t extra_size;

		if (rpl__node_set_kernel(n, op) != 0)
			return CUDA_ERROR_OUT_OF_MEMORY;
		rpl__kernel_params(n, op, &p, extra_buf, &extra_size);
		rc = DRV_REAL(cuGraphAddKernelNode_v2)(&n->node, pt->graph, ndeps ? deps : NULL, ndeps, &p);
		break;
	}
	case CAP_OP_MEMCPY:
		if (op->u.memcpy.src_pageable) {
			n->stage_bytes = op->u.memcpy.src_span;
			rc = DRV_REAL(cuMemAllocHost_v2)(&n->stage, n->stage_bytes);
			if (rc != CUDA_SUCCESS) {
				n->stage = NULL;
				break;
			}
			/* filled at each launch from the bytes staged at the call */
			pt->staged = true;
			g->staged = true;
			rpl__own_call(re);
		}
		rpl__copy_desc(op, n->stage, &n->copy);
		rc = DRV_REAL(cuGraphAddMemcpyNode)(&n->node, pt->graph, ndeps ? deps : NULL, ndeps, &n->copy, op->ctx);
		break;
	case CAP_OP_MEMSET:
		rpl__memset_params(op, &n->set);
		rc = DRV_REAL(cuGraphAddMemsetNode)(&n->node, pt->graph, ndeps ? deps : NULL, ndeps, &n->set, op->ctx);
		break;
	case CAP_OP_EVENT_RECORD:
		/* built with the stand-in, never the program's event (a binding, set at each launch:
		 * it may be destroyed by now); n->event names what the exec holds */
		n->event = g->stand_ev ? g->stand_ev : op->u.event.event;
		rc = DRV_REAL(cuGraphAddEventRecordNode)(&n->node, pt->graph, ndeps ? deps : NULL, ndeps, n->event);
		break;
	case CAP_OP_EVENT_WAIT:
		/* a record of the event earlier in this graph is an edge already (trace graph); a
		 * record outside it (earlier work, or a part launched before this one) is waited
		 * for by an event-wait node */
		if (recorded_in_part(w, g, i, op->u.event.slot)) {
			n->empty = true;
			rc = DRV_REAL(cuGraphAddEmptyNode)(&n->node, pt->graph, ndeps ? deps : NULL, ndeps);
		} else {
			n->event = g->stand_ev ? g->stand_ev : op->u.event.event;
			rc = DRV_REAL(cuGraphAddEventWaitNode)(&n->node, pt->graph, ndeps ? deps : NULL, ndeps,
								n->event);
		}
		break;
	default:
		rc = CUDA_ERROR_NOT_SUPPORTED;
		break;
	}
	return rc;
}

/* Instantiate part pt (its first op: op) and upload it ahead of its first launch. */
static CUresult part_finish(struct rpl_engine *re, struct rpl_part *pt, const struct cap_op *op)
{
	CUresult rc;

	if (pt->staged) {
		rpl__own_call(re);
		rc = DRV_REAL(cuEventCreate)(&pt->done_ev, CU_EVENT_DISABLE_TIMING);
		if (rc != CUDA_SUCCESS) {
			pt->done_ev = NULL;
			return rc;
		}
	}
	rpl__own_call(re);
	rc = DRV_REAL(cuGraphInstantiateWithFlags)(&pt->exec, pt->graph, 0);
	if (rc != CUDA_SUCCESS) {
		pt->exec = NULL;
		return rc;
	}
	/* only an optimization, so a refusal is not a failure */
	if (!pt->legacy && op->stream_kind != CAP_STREAM_PER_THREAD) {
		rpl__own_call(re);
		if (DRV_REAL(cuGraphUpload)(pt->exec, op->stream) != CUDA_SUCCESS)
			cf_log_debug("graph upload refused; the first launch uploads");
	}
	return CUDA_SUCCESS;
}

/* The graphs of g's parts, created empty; each part's first position. */
static CUresult parts_create(struct rpl_engine *re, struct rpl_seg *g, uint32_t nparts)
{
	CUresult rc = CUDA_SUCCESS;

	g->parts = calloc(nparts, sizeof(*g->parts));
	if (!g->parts)
		return CUDA_ERROR_OUT_OF_MEMORY;
	g->nparts = nparts;
	for (uint32_t k = 0; k < nparts; k++)
		g->parts[k].first = UINT32_MAX;
	for (uint32_t i = g->n; i-- > 0;)
		g->parts[g->nodes[i].part].first = i;
	for (uint32_t k = 0; k < nparts && rc == CUDA_SUCCESS; k++) {
		rpl__own_call(re);
		rc = DRV_REAL(cuGraphCreate)(&g->parts[k].graph, 0);
		if (rc != CUDA_SUCCESS)
			g->parts[k].graph = NULL;
	}
	return rc;
}

CUresult rpl__seg_build(struct rpl_engine *re, struct rpl_seg *g, const struct cap_window *w,
			const struct cap_graph *tg, const struct rpl_config *cfg)
{
	struct pos_list *d = NULL;
	CUgraphNode *deps = NULL;
	CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;

	g->nodes = calloc(g->n, sizeof(*g->nodes));
	deps = calloc(g->n + 1, sizeof(*deps));
	d = calloc(g->n, sizeof(*d));
	if (!g->nodes || !deps || !d)
		goto out;
	g->run = rpl__plan_ops(re, w, g->first, g->n, cfg);
	if (g->run) {
		/* the plan's op for each position, derived from the window's bindings */
		for (uint32_t j = 0; j < g->n; j++)
			g->run->ops[j] = cap_window_op(w, g->first + j);
	}
	if (deps_compute(g, tg, d) != 0)
		goto out;
	rc = parts_create(re, g, split_decide(g, w, d));
	for (uint32_t i = 0; i < g->n && rc == CUDA_SUCCESS; i++) {
		const struct cap_op *op = cap_window_op(w, g->first + i);
		struct cap_op tmp;

		if (g->run && !pos_folded(g, i)) {
			/* rw_run_create derived every node from this very window: never refused */
			if (rw_plan_node_op(g->run->plan, (uint32_t)g->run->node_of[i], g->run->ops, &tmp) != 0) {
				rc = CUDA_ERROR_NOT_SUPPORTED;
				break;
			}
			op = &tmp;
		}
		rc = add_node(re, g, i, op, w, d, deps);
	}
	for (uint32_t k = 0; k < g->nparts && rc == CUDA_SUCCESS; k++)
		rc = part_finish(re, &g->parts[k], cap_window_op(w, g->first + g->parts[k].first));
out:
	for (uint32_t i = 0; d && i < g->n; i++)
		free(d[i].v);
	free(d);
	free(deps);
	return rc;
}

void rpl__seg_destroy(struct rpl_engine *re, struct rpl_seg *g)
{
	rw_run_destroy(g->run);
	for (uint32_t k = 0; g->parts && k < g->nparts; k++) {
		struct rpl_part *pt = &g->parts[k];

		if (pt->exec) {
			rpl__own_call(re);
			DRV_REAL(cuGraphExecDestroy)(pt->exec);
		}
		if (pt->graph) {
			rpl__own_call(re);
			DRV_REAL(cuGraphDestroy)(pt->graph);
		}
		if (pt->done_ev) {
			rpl__own_call(re);
			DRV_REAL(cuEventDestroy_v2)(pt->done_ev);
		}
	}
	for (uint32_t i = 0; g->nodes && i < g->n; i++) {
		free(g->nodes[i].params);
		free(g->nodes[i].param_ptrs);
		if (g->nodes[i].stage) {
			rpl__own_call(re);
			DRV_REAL(cuMemFreeHost)(g->nodes[i].stage);
		}
	}
	free(g->parts);
	free(g->nodes);
	memset(g, 0, sizeof(*g));
}
