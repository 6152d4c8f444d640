/* template.c - templates: a window shape's ops classified, cut into segments (runs of
 * consecutive graphable ops, on any of the window's streams: small at the window's start and end,
 * growing in between up to CUFOLD_SEGMENT, never through what a rewrite relies on), each built as
 * CUDA graphs (segment.c: one graph, or one per stream), instantiated and uploaded. replay layer.
 *
 * A graph is never captured from the program's streams: explicit nodes cannot be invalidated
 * by the program's own captures or by another thread's queries (interposers.md D.6). What cannot
 * be a node (host-visible calls that end the window, per-thread default streams, launch
 * attributes, cooperative launches, peer copies, host functions, external events) is issued in
 * place (RPL_CLS_EAGER) between segments, in the program's order. */
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "common/config.h"
#include "common/errors.h"
#include "common/log.h"
#include "replay/replay_int.h"
#include "rewrite/effects.h"
#include "rewrite/rewriter.h"

/* ------------------------------------------------------------------ classes */

static bool api_is_cooperative(uint16_t api)
{
	return drv_api_is(api, DRV_API_COOPERATIVE);
}

/* Whether an entry point is an asynchronous form (driver/api.h). */
static bool is_async_api(uint16_t api)
{
	return drv_api_is(api, DRV_API_ASYNC);
}

enum rpl_cls rpl__classify(const struct cap_op *op)
{
	if (op->flags & (CAP_OPF_ENDS_WINDOW | CAP_OPF_FAILED))
		return RPL_CLS_EAGER;
	/* it touches memory cufold cannot classify (the host may see it without a boundary):
	 * issued in place, never kept; a template that had it as a node mismatches here */
	if (op->flags & CAP_OPF_NO_DEFER)
		return RPL_CLS_EAGER;
	/* A synchronous copy or memset (no Async in its name) runs in place: the driver may only
	 * promise ordering on the legacy stream, but programs lean on such calls being done when
	 * they return (a memset before a launch on a non-blocking stream), and deferring one into a
	 * graph would turn that habit into a real race. */
	if ((op->kind == CAP_OP_MEMCPY || op->kind == CAP_OP_MEMSET) && !is_async_api(op->api))
		return RPL_CLS_EAGER;
	/* A per-thread default stream can only be named by its own thread: an op on it could not
	 * be submitted by a flush from another thread. */
	if (op->stream_kind == CAP_STREAM_PER_THREAD)
		return RPL_CLS_EAGER;
	switch (op->kind) {
	case CAP_OP_KERNEL: {
		const struct cap_kernel *k = &op->u.kernel;

		if (k->nattrs || api_is_cooperative(op->api) || !k->func || !k->params)
			return RPL_CLS_EAGER;
		if (!k->via_extra && (!k->info || !k->info->layout_known))
			return RPL_CLS_EAGER;
		return RPL_CLS_GRAPH;
	}
	case CAP_OP_MEMCPY: {
		const struct cap_memcpy *c = &op->u.memcpy;

		/* a pageable source is staged (at the call, then into a pinned buffer the node reads);
		 * a pageable destination is host-visible and ends the window anyway */
		if (c->dst_pageable || c->dst_ctx || c->src_ctx || c->dir == CAP_DIR_HTOH || c->dir == CAP_DIR_DTOH ||
		    !c->bytes || (c->src_pageable && (c->dir != CAP_DIR_HTOD || !c->src_span)))
			return RPL_CLS_EAGER;
		if (c->d.srcMemoryType == CU_MEMORYTYPE_ARRAY || c->d.dstMemoryType == CU_MEMORYTYPE_ARRAY)
			return RPL_CLS_EAGER;
		return RPL_CLS_GRAPH;
	}
	case CAP_OP_MEMSET:
		return op->u.memset.width && op->u.memset.height ? RPL_CLS_GRAPH : RPL_CLS_EAGER;
	case CAP_OP_EVENT_RECORD:
	case CAP_OP_EVENT_WAIT:
		/* external records and waits have no node form */
		return op->u.event.flags == 0 ? RPL_CLS_GRAPH : RPL_CLS_EAGER;
	default:
		/* host functions: issued in place (a host node would run the program's callback on
		 * the driver's thread at a different time relative to other host work) */
		return RPL_CLS_EAGER;
	}
}

/* ------------------------------------------------------------------ node parameters */

int rpl__node_set_kernel(struct rpl_node *n, const struct cap_op *op)
{
	const struct cap_kernel *k = &op->u.kernel;
	uint32_t np = k->via_extra ? 0 : k->info->nparams;
	void *params;

	/* a node patched with parameters of the size it holds keeps its buffer (the driver copied
	 * the old bytes when they were set): no allocation per patched node and launch */
	if (n->params && n->param_size == k->param_size && (k->via_extra || !np || n->param_ptrs)) {
		memmove(n->params, k->params, k->param_size);
		params = n->params;
		goto out_set;
	}
	params = malloc(k->param_size ? k->param_size : 1);
	if (!params)
		return -CF_ENOMEM;
	memcpy(params, k->params, k->param_size);
	if (!k->via_extra && !n->param_ptrs && np) {
		n->param_ptrs = calloc(np, sizeof(void *));
		if (!n->param_ptrs) {
			free(params);
			return -CF_ENOMEM;
		}
	}
	free(n->params);
out_set:
	n->params = params;
	n->param_size = k->param_size;
	n->func = k->func;
	for (uint32_t i = 0; i < np; i++)
		n->param_ptrs[i] = (char *)params + k->info->offset[i];
	return 0;
}

void rpl__kernel_params(const struct rpl_node *n, const struct cap_op *op, CUDA_KERNEL_NODE_PARAMS *p,
			  void **extra_buf, size_t *extra_size)
{
	const struct cap_kernel *k = &op->u.kernel;

	memset(p, 0, sizeof(*p));
	p->func = k->func;
	p->gridDimX = k->grid[0];
	p->gridDimY = k->grid[1];
	p->gridDimZ = k->grid[2];
	p->blockDimX = k->block[0];
	p->blockDimY = k->block[1];
	p->blockDimZ = k->block[2];
	p->sharedMemBytes = k->shared_bytes;
	if (k->via_extra) {
		*extra_size = n->param_size;
		extra_buf[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
		extra_buf[1] = n->params;
		extra_buf[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
		extra_buf[3] = extra_size;
		extra_buf[4] = CU_LAUNCH_PARAM_END;
		p->extra = extra_buf;
	} else {
		p->kernelParams = n->param_ptrs;
	}
}

void rpl__memset_params(const struct cap_op *op, CUDA_MEMSET_NODE_PARAMS *p)
{
	const struct cap_memset *m = &op->u.memset;

	memset(p, 0, sizeof(*p));
	p->dst = m->dst;
	p->pitch = m->height > 1 ? m->pitch : m->width * m->elem_size;
	p->value = m->value;
	p->elementSize = m->elem_size;
	p->width = m->width;
	p->height = m->height;
}

bool rpl__copy_equal(const CUDA_MEMCPY3D *a, const CUDA_MEMCPY3D *b)
{
	return a->srcXInBytes == b->srcXInBytes && a->srcY == b->srcY && a->srcZ == b->srcZ &&
	       a->srcMemoryType == b->srcMemoryType && a->srcHost == b->srcHost && a->srcDevice == b->srcDevice &&
	       a->srcArray == b->srcArray && a->srcPitch == b->srcPitch && a->srcHeight == b->srcHeight &&
	       a->dstXInBytes == b->dstXInBytes && a->dstY == b->dstY && a->dstZ == b->dstZ &&
	       a->dstMemoryType == b->dstMemoryType && a->dstHost == b->dstHost && a->dstDevice == b->dstDevice &&
	       a->dstArray == b->dstArray && a->dstPitch == b->dstPitch && a->dstHeight == b->dstHeight &&
	       a->WidthInBytes == b->WidthInBytes && a->Height == b->Height && a->Depth == b->Depth;
}

void rpl__copy_desc(const struct cap_op *op, const void *stage, CUDA_MEMCPY3D *d)
{
	*d = op->u.memcpy.d;
	if (!stage)
		return;
	/* the stage holds the source span from its first byte: same pitch and slice height */
	d->srcXInBytes = 0;
	d->srcY = 0;
	d->srcZ = 0;
	if (d->srcMemoryType == CU_MEMORYTYPE_HOST)
		d->srcHost = stage;
	else
		d->srcDevice = (CUdeviceptr)(uintptr_t)stage;
}

bool rpl__memset_equal(const CUDA_MEMSET_NODE_PARAMS *a, const CUDA_MEMSET_NODE_PARAMS *b)
{
	return a->dst == b->dst && a->pitch == b->pitch && a->value == b->value && a->elementSize == b->elementSize &&
	       a->width == b->width && a->height == b->height;
}

/* ------------------------------------------------------------------ rewrite plans */

/* When CUFOLD_OPT or a switch of CUFOLD_RULES enables a rule (at level 0 too) and the shape is
 * not replayed unrewritten (RPL_OPT_NONE), each segment's ops go through the rewriter when it is
 * built (rewrite/plan.h, struct rw_run: a plan node stands at its first op's position; the other
 * ops it covers and the ops the plan erased get no graph node, though g->nodes keeps one entry
 * per op). */
struct rw_run *rpl__plan_ops(struct rpl_engine *re, const struct cap_window *w, uint32_t first, uint32_t n,
			     const struct rpl_config *cfg)
{
	const struct cf_config *cc = cf_config_get();
	struct rw_config rc = { cfg->opt, cc ? cc->rules : NULL, re->kernels, &re->rename };
	const struct cap_op **ops;
	struct rw_run *run;

	if (cfg->opt == RPL_OPT_NONE || !rw_config_has_rules(&rc) || !(ops = malloc(n * sizeof(*ops))))
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		ops[i] = cap_window_op(w, first + i);
	/* the trace graph's indices are the window's: the run is rewritten on window order alone
	 * (its ops are consecutive in the window, so adjacency means the same) */
	run = rw_run_create(ops, n, &rc);
	free(ops);
	return run;
}

/* Keep together the ops [lo, hi] of a plan over the run at first: no cut inside. */
#define GLUE_REWRITE 1 /* glued[i]: a rewrite relies on ops i and i + 1 in one segment */
#define GLUE_PARALLEL 2 /* glued[i]: ops i and i + 1 are in a run the parallel rule reorders */

static void glue_span(uint8_t *glued, uint32_t first, uint32_t lo, uint32_t hi)
{
	for (uint32_t k = lo; k < hi; k++)
		glued[first + k] |= GLUE_REWRITE;
}

/* Widen [*lo, *hi] to the ops plan node n covers and the op it reads from. */
static void node_span(const struct rw_plan_node *n, uint32_t *lo, uint32_t *hi)
{
	for (uint32_t k = 0; k < n->norig; k++) {
		*lo = n->orig[k] < *lo ? n->orig[k] : *lo;
		*hi = n->orig[k] > *hi ? n->orig[k] : *hi;
	}
	if (n->from != RW_NONE) {
		*lo = n->from < *lo ? n->from : *lo;
		*hi = n->from > *hi ? n->from : *hi;
	}
}

/* Mark in glued[] (one entry per window op: GLUE_REWRITE = no segment cut between it and the
 * next) every span a rewrite of the run [first, first+n) relies on: a plan node's ops and the op
 * it reads from, and the ops each guard names. Cutting the run at the small sizes segment_size
 * asks for must not cost the rules their matches; cuts move past such spans instead. This is
 * about benefit only: each segment is planned on its own ops, so no rewrite ever spans a cut.
 * A run the parallel rule reorders is marked GLUE_PARALLEL: sizes still cut it, but no cut is
 * added to keep streams apart in its window (cut_add). */
static void glue_rewrites(struct rpl_engine *re, uint8_t *glued, const struct cap_window *w, uint32_t first,
			  uint32_t n, const struct rpl_config *cfg)
{
	struct rw_run *run = rpl__plan_ops(re, w, first, n, cfg);
	const struct rw_plan *p;

	if (!run)
		return;
	p = run->plan;
	for (uint32_t k = 0; p->dep_start && k + 1 < n; k++)
		glued[first + k] |= GLUE_PARALLEL;
	for (uint32_t k = 0; k < p->nnodes; k++) {
		uint32_t lo = UINT32_MAX, hi = 0;

		node_span(&p->nodes[k], &lo, &hi);
		if (lo < hi)
			glue_span(glued, first, lo, hi);
	}
	for (uint32_t k = 0; k < p->nguards; k++) {
		const struct rw_guard *gd = &p->guards[k];
		uint32_t lo = gd->a < gd->b ? gd->a : gd->b, hi = gd->a < gd->b ? gd->b : gd->a;

		/* pairs the parallel rule leaves unordered: a cut orders them anyway, and gluing its
		 * 64-op windows would make every segment of a level-2 plan whole again (batch
		 * nodes, which rely on them too, are glued by their own span) */
		if (gd->kind == RW_G_INDEPENDENT)
			continue;
		if (gd->na >= 0)
			node_span(&p->snaps[gd->na], &lo, &hi);
		if (gd->nb >= 0)
			node_span(&p->snaps[gd->nb], &lo, &hi);
		if (lo < hi)
			glue_span(glued, first, lo, hi);
	}
	rw_run_destroy(run);
}

bool rpl__seg_guards_hold(struct rpl_engine *re, const struct rpl_seg *g, const struct cap_op *def, bool exact)
{
	/* at a launch, under the engine's lock: unknown spans resolve in the live allocation map */
	struct rw_alloc_view v = { .live = re->cap, .gen = cap_alloc_gen(re->cap) }, *was;
	bool ok;

	if (!g->run)
		return true;
	was = rw_alloc_view_use(&v);
	ok = rw_run_guards_hold_exact(g->run, def, exact);
	rw_alloc_view_use(was);
	return ok;
}

const struct cap_op *rpl__seg_op(const struct rpl_seg *g, uint32_t i, const struct cap_op *def, struct cap_op *tmp)
{
	return g->run ? rw_run_op(g->run, i, def, tmp) : &def[i];
}

/* Bytes a launch of cufold's batch kernels copies or sets: what its table writes (decoded once,
 * by rewrite/effects.c). */
static uint64_t batch_bytes(const struct cap_op *op)
{
	const struct cap_kernel *k = &op->u.kernel;
	struct rw_effects e;
	uint64_t n = 0;

	if (!k->info || strncmp(k->info->name, "cufold_batch_", 13) != 0)
		return 0;
	rw_op_effects(op, &e);
	for (uint32_t i = 0; !e.all && i < e.nw; i++)
		n += e.w[i].pitch ? e.w[i].width * ((e.w[i].bytes - e.w[i].width) / e.w[i].pitch + 1) : e.w[i].bytes;
	return n;
}

/* Count what one op does into the figures' column col (0 before, 1 after). */
static void figures_count(struct rpl_rewrite_figures *f, const struct cap_op *op, int col)
{
	switch (op->kind) {
	case CAP_OP_KERNEL:
		f->kernels[col]++;
		f->bytes[col] += batch_bytes(op);
		break;
	case CAP_OP_MEMCPY:
		f->copies[col]++;
		f->bytes[col] += cap_op_bytes(op);
		break;
	case CAP_OP_MEMSET:
		f->memsets[col]++;
		f->bytes[col] += cap_op_bytes(op);
		break;
	default:
		break;
	}
}

/* Add site to sites[0..*n) (at most max) unless it is there. */
static void site_add(uint64_t *sites, uint32_t *n, uint32_t max, uint64_t site)
{
	if (!site)
		return;
	for (uint32_t i = 0; i < *n; i++)
		if (sites[i] == site)
			return;
	if (*n < max)
		sites[(*n)++] = site;
}

/* The figures of rule (made on first use), or NULL when the table is full. */
static struct rpl_rule_figures *figures_rule(struct rpl_rewrite_figures *f, const char *rule)
{
	uint32_t j = 0;

	while (j < f->nrules && strcmp(f->rules[j].rule, rule) != 0)
		j++;
	if (j == f->nrules) {
		if (f->nrules == CF_ARRAY_SIZE(f->rules))
			return NULL;
		memset(&f->rules[j], 0, sizeof(f->rules[j]));
		f->rules[j].rule = rule;
		f->nrules++;
	}
	return &f->rules[j];
}

/* Op op was changed by rule: its call site goes to the template's and the rule's lists. */
static void figures_site(struct rpl_rewrite_figures *f, const char *rule, const struct cap_op *op)
{
	struct rpl_rule_figures *r = rule ? figures_rule(f, rule) : NULL;

	site_add(f->sites, &f->nsites, RPL_SITES_MAX, op->callsite);
	if (r)
		site_add(r->sites, &r->nsites, CF_ARRAY_SIZE(r->sites), op->callsite);
}

/* Tell capture what segment g's plan does to each op of shape s (for CUFOLD_DOT). */
static void seg_mark(struct cap_shape *s, const struct rpl_seg *g)
{
	const struct rw_plan *p = g->run ? g->run->plan : NULL;

	for (uint32_t k = 0; p && k < p->nnodes; k++) {
		const struct rw_plan_node *n = &p->nodes[k];

		if (n->kind == RW_NODE_OP)
			continue;
		(void)cap_shape_mark(s, g->first + n->orig[0], CAP_MARK_REWRITTEN, 0, n->rule);
		for (uint32_t j = 1; j < n->norig; j++)
			(void)cap_shape_mark(s, g->first + n->orig[j], CAP_MARK_MERGED, g->first + n->orig[0], n->rule);
	}
	for (uint32_t i = 0; p && p->erased_by && i < g->n; i++)
		if (p->erased_by[i])
			(void)cap_shape_mark(s, g->first + i, CAP_MARK_REMOVED, 0, p->erased_by[i]);
}

/* Whether plan p makes original op i write elsewhere. */
static bool launch_renamed(const struct rw_plan *p, uint32_t i)
{
	for (uint32_t k = 0; k < p->nren; k++)
		if (p->ren[k].op == i)
			return true;
	return false;
}

/* Why each launch of a program's kernel in segment g that the rewrite left a launch of its own
 * (a plan's plain node, or every launch when there is no plan) was not fused with others. */
static void figures_apart(struct rpl_engine *re, struct rpl_rewrite_figures *f, const struct rpl_seg *g,
			  const struct cap_window *w)
{
	const struct cap_op **ops = malloc(g->n * sizeof(*ops));

	if (!ops)
		return;
	for (uint32_t i = 0; i < g->n; i++)
		ops[i] = cap_window_op(w, g->first + i);
	for (uint32_t i = 0; i < g->n; i++) {
		const struct cap_kernel *k = &ops[i]->u.kernel;

		if (ops[i]->kind != CAP_OP_KERNEL || (k->info && !strncmp(k->info->name, "cufold_", 7)))
			continue;
		if (g->run && (g->run->node_of[i] < 0 ||
			       g->run->plan->nodes[g->run->node_of[i]].kind != RW_NODE_OP))
			continue;
		if (g->run && launch_renamed(g->run->plan, i))
			continue; /* written elsewhere, kept apart by a dependence of its own: in `renamed` */
		enum rw_apart a = rw_multi_apart(re->kernels, ops, g->n, i);
		struct rw_rename rn;

		f->apart[a]++;
		if (a == RW_APART_REUSED && rw_multi_renamable(ops, g->n, i, &rn)) {
			f->renamable.launches++;
			f->renamable.whole += rn.whole;
			if (rn.renamed == i)
				f->renamable.bytes += rn.bytes;
		}
	}
	free(ops);
}

/* Kernel launches one launch of unit g's graph runs (a segment or a block; window w): its
 * plan's nodes that launch a kernel, or its kernel ops without a plan. */
static uint32_t unit_kernels(const struct rpl_seg *g, const struct cap_window *w)
{
	const struct rw_plan *p = g->run ? g->run->plan : NULL;
	uint32_t n = 0;

	for (uint32_t k = 0; p && k < p->nnodes; k++) {
		struct cap_op tmp;

		n += rw_plan_node_op(p, k, g->run->ops, &tmp) == 0 && tmp.kind == CAP_OP_KERNEL;
	}
	for (uint32_t i = 0; !p && i < g->n; i++)
		n += cap_window_op(w, g->first + i)->kind == CAP_OP_KERNEL;
	return n;
}

/* Add segment g's rewrite (window w) to the template's figures. */
static void figures_add(struct rpl_engine *re, struct rpl_rewrite_figures *f, const struct rpl_seg *g,
			const struct cap_window *w)
{
	const struct rw_plan *p = g->run ? g->run->plan : NULL;

	figures_apart(re, f, g, w);

	for (uint32_t i = 0; i < g->n; i++) {
		figures_count(f, cap_window_op(w, g->first + i), 0);
		if (!p)
			figures_count(f, cap_window_op(w, g->first + i), 1);
	}
	if (!p)
		return;
	for (uint32_t k = 0; k < p->nren; k++) {
		f->renamable.renamed++;
		f->renamable.renamed_bytes += p->ren[k].cap;
		f->renamable.copied_back += p->ren[k].back;
		f->renamable.copied_back_for_readers += p->ren[k].back && p->ren[k].nkept;
		f->renamable.readers_kept += p->ren[k].nkept;
	}
	for (uint32_t r = 0; r < p->nstats; r++) {
		struct rpl_rule_figures *rf = figures_rule(f, p->stats[r].rule);

		if (rf)
			rf->count += p->stats[r].count;
	}
	for (uint32_t k = 0; k < p->nnodes; k++) {
		struct cap_op tmp;

		if (rw_plan_node_op(p, k, g->run->ops, &tmp) == 0)
			figures_count(f, &tmp, 1);
		if (p->nodes[k].kind == RW_NODE_BATCH_KERNEL) {
			f->fused[0] += p->nodes[k].norig;
			f->fused[1]++;
		}
	}
	/* every rule that merged, rewrote or removed an op names its call site */
	for (uint32_t i = 0; i < g->n; i++) {
		for (uint32_t r = 0; p->touched_by && r < RW_TOUCH_MAX && p->touched_by[i][r]; r++)
			figures_site(f, p->touched_by[i][r], cap_window_op(w, g->first + i));
		if (p->erased_by && p->erased_by[i])
			figures_site(f, p->erased_by[i], cap_window_op(w, g->first + i));
	}
}

/* ------------------------------------------------------------------ building */

void rpl__template_release(struct rpl_engine *re, struct rpl_template *t)
{
	rpl__refs_free(t); /* the nodes it indexes go below */
	for (uint32_t k = 0; t->blocks && k < t->nblocks; k++) {
		struct rpl_seg *g = &t->blocks[k];
		uint32_t first = g->first, n = g->n, nseg = g->nseg;
		uint64_t launches = g->launches;
		uint32_t kernels_run = g->kernels_run;

		rpl__seg_destroy(re, g);
		g->first = first;
		g->n = n;
		g->nseg = nseg;
		g->launches = launches;
		g->kernels_run = kernels_run;
	}
	for (uint32_t k = 0; t->segs && k < t->nsegs; k++) {
		struct rpl_seg *g = &t->segs[k];
		uint32_t first = g->first, n = g->n;
		uint64_t launches = g->launches, patched = g->patched_launches, patches = g->patches;
		uint32_t kernels_run = g->kernels_run;

		rpl__seg_destroy(re, g);
		g->first = first;
		g->n = n;
		g->launches = launches;
		g->kernels_run = kernels_run;
		g->patched_launches = patched;
		g->patches = patches;
	}
	if (t->join_ev) {
		rpl__own_call(re);
		DRV_REAL(cuEventDestroy_v2)(t->join_ev);
		t->join_ev = NULL;
	}
	if (t->fork_ev) {
		rpl__own_call(re);
		DRV_REAL(cuEventDestroy_v2)(t->fork_ev);
		t->fork_ev = NULL;
	}
	if (t->stand_ev) {
		/* after the segments' graphs and execs, whose event nodes may name it */
		rpl__own_call(re);
		DRV_REAL(cuEventDestroy_v2)(t->stand_ev);
		t->stand_ev = NULL;
	}
}

void rpl__template_destroy(struct rpl_engine *re, struct rpl_template *t)
{
	if (!t)
		return;
	rpl__template_release(re, t);
	free(t->segs);
	free(t->blocks);
	free(t->ops);
	free(t->moved_sites);
	free(t->moved);
	free(t);
}

/* The most ops of a segment that starts at the p-th of a window's g graphable ops: segments
 * grow from RPL_SEG_FIRST (4, 4, 8, 16, ... as many as came before), so the device gets work
 * after a few calls instead of after a whole window of the program's host time, and shrink
 * toward the window's end (at most half of what is left), so little device work is left to run
 * after the host has issued the last call; never more than CUFOLD_SEGMENT. The shrinking stops
 * at a 32nd of the window (between 4 and 32 ops): each cut costs a launch and, at CUFOLD_OPT=2,
 * the overlap the parallel rule finds across it (transformer, host-bound, level 2: 222 us per
 * step halving down to 4 ops, 214 us stopping at 16, 207 us without shrinking), while a 32nd of
 * the window's device time is what is left exposed at its end. A function of the shape alone:
 * every sighting is cut at the same places (match.c, invariant 3). */
static uint32_t segment_size(uint32_t p, uint32_t g, uint32_t max)
{
	uint32_t grow = p > RPL_SEG_FIRST ? p : RPL_SEG_FIRST;
	uint32_t left = g - p, shrink = (left + 1) / 2, last = g / RPL_SEG_LAST_SHARE;

	last = last < RPL_SEG_FIRST ? RPL_SEG_FIRST : last > RPL_SEG_LAST_MAX ? RPL_SEG_LAST_MAX : last;
	if (shrink < last)
		shrink = last;
	if (grow > shrink)
		grow = shrink;
	return grow < max ? grow : max;
}

/* The order the program's own events put between the streams of the open segment, so a cut can
 * come before the op that would make two streams wait on each other both ways: such a segment
 * could not be split into one graph per stream (segment.c), and every boundary would then be a
 * barrier across its streams. A function of the shape, like every cut. Not in a window the
 * parallel rule reorders, unless its segments are small (at most RPL_SEG_SMALL ops: the cuts the
 * gate tries where big ones lost, gate.c): its plans order every pair of ops they do not prove
 * independent, across streams too, so its segments do not split anyway, and moving their
 * boundaries costs it what it overlaps (measured: recsys at CUFOLD_OPT=2, host-bound, 901 us per
 * step without these cuts, 1121 us with them; at CUFOLD_OPT=0 1606 us without, 1554 with). */
#define CUT_WAITS 64 /* waits remembered per segment; past that, no cut is made for them */

struct cut_event {
	uint16_t event;              /* event slot */
	uint8_t stream;              /* index of a stream of the segment */
};

struct cut_order {
	uint32_t nstreams;           /* streams seen in the segment */
	uint16_t stream[RPL_MAX_PARTS]; /* their slots */
	bool reach[RPL_MAX_PARTS][RPL_MAX_PARTS]; /* [a][b]: a's part must launch before b's */
	uint32_t nrec;               /* event slots recorded in the segment */
	struct cut_event rec[CUT_WAITS]; /* each with the stream of its records */
	uint32_t nwait;              /* waits in the segment on a record before it */
	struct cut_event wait[CUT_WAITS]; /* each with its stream */
};

/* Index of slot among the segment's streams (added), or -1 past RPL_MAX_PARTS. */
static int cut_stream(struct cut_order *c, uint16_t slot)
{
	uint32_t k = 0;

	while (k < c->nstreams && c->stream[k] != slot)
		k++;
	if (k == c->nstreams) {
		if (k == RPL_MAX_PARTS)
			return -1;
		c->stream[c->nstreams++] = slot;
	}
	return (int)k;
}

/* a before b, closed transitively; false when b is already before a (a cycle). */
static bool cut_before(struct cut_order *c, int a, int b)
{
	if (a == b || c->reach[a][b])
		return true;
	if (c->reach[b][a])
		return false;
	for (uint32_t x = 0; x < c->nstreams; x++)
		for (uint32_t y = 0; y < c->nstreams; y++)
			if ((x == (uint32_t)a || c->reach[x][a]) && (y == (uint32_t)b || c->reach[b][y]))
				c->reach[x][y] = true;
	return true;
}

/* Add op to the segment's order; false when it would order two streams both ways: the caller
 * then cuts before it and adds it to a fresh order (c is left half-updated, and dropped). */
static bool cut_add(struct cut_order *c, const struct cap_op *op)
{
	int p = cut_stream(c, op->stream_slot);
	bool ok = true;

	if (p < 0 || (op->kind != CAP_OP_EVENT_RECORD && op->kind != CAP_OP_EVENT_WAIT))
		return true;
	if (op->kind == CAP_OP_EVENT_WAIT) {
		uint32_t k = 0;

		while (k < c->nrec && c->rec[k].event != op->u.event.slot)
			k++;
		if (k < c->nrec)
			ok = cut_before(c, c->rec[k].stream, p); /* its record first */
		else if (c->nwait < CUT_WAITS)
			c->wait[c->nwait++] = (struct cut_event){ op->u.event.slot, (uint8_t)p };
	} else {
		uint32_t k = 0;

		/* waits earlier in the segment saw an older record: their streams first */
		for (uint32_t j = 0; j < c->nwait && ok; j++)
			if (c->wait[j].event == op->u.event.slot)
				ok = cut_before(c, c->wait[j].stream, p);
		while (k < c->nrec && c->rec[k].event != op->u.event.slot)
			k++;
		if (k == c->nrec && c->nrec < CUT_WAITS)
			c->rec[c->nrec++] = (struct cut_event){ op->u.event.slot, (uint8_t)p };
		else if (k < c->nrec && c->rec[k].stream != p)
			ok = false; /* records of one event on two streams */
	}
	return ok;
}

/* Distinct streams the ops of g name (slots). */
static uint32_t seg_streams(const struct rpl_seg *g, const struct cap_window *w)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < g->n; i++) {
		const struct cap_op *o = cap_window_op(w, g->first + i);
		bool seen = false;

		for (uint32_t j = 0; j < i && !seen; j++)
			seen = cap_window_op(w, g->first + j)->stream_slot == o->stream_slot;
		n += !seen;
	}
	return n;
}

/* Classify the window's ops into t->ops (t->ngraph counted). False: ops of another context. */
static bool tops_classify(struct rpl_template *t, const struct cap_window *w)
{
	for (uint32_t i = 0; i < t->nops; i++) {
		const struct cap_op *op = cap_window_op(w, i);
		struct rpl_top *o = &t->ops[i];

		if (op->ctx != t->ctx)
			return false;
		o->key = op->key;
		o->kind = op->kind;
		o->stream_slot = op->stream_slot;
		o->cls = (uint8_t)rpl__classify(op);
		o->flags = op->flags;
		o->vid = op->vid;
		o->seg = -1;
		t->ngraph += o->cls == RPL_CLS_GRAPH;
	}
	return true;
}

/* Cut t's runs of graphable ops into segments (t->segs[].first/n, t->ops[].seg): sizes from
 * segment_size, never inside what a rewrite relies on, and before an op that would order two
 * streams both ways (cut_add). glued (t->nops zeroed entries) gets what the rules would do
 * between each op and the next (GLUE_*). The small cuts the gate tries where big ones lost
 * (at most RPL_SEG_SMALL ops) cut by size alone, through rewrites too: glued, dataparallel's
 * first segment at CUFOLD_OPT=1 was its batch copy and 12 gradient memsets merged (14 ops), so
 * with 20 us of program host time per op and +200 us kernels the device got nothing for 280 us
 * of each step (14,839 us a step replayed, 14,698 eager; cut at 4 ops, 14,600). 0 or
 * -CF_ENOMEM. */
static int cuts_make(struct rpl_engine *re, struct rpl_template *t, const struct cap_window *w,
		     const struct rpl_config *cfg, uint8_t *glued)
{
	struct cut_order order = { 0 };      /* the open segment's stream order */
	bool stream_cuts = true;             /* cut to keep streams apart (cut_add) */
	bool small = cfg->segment <= RPL_SEG_SMALL; /* the gate's second cuts: sizes cut through
					      * what rewrites rely on (below) */
	uint32_t run_len = 0, seg_limit = 0;

	/* what the rules would do to each run (cut at CUFOLD_SEGMENT, as segments were before they
	 * started small): the cuts below keep those spans whole */
	for (uint32_t i = 0; i < t->nops;) {
		uint32_t n = 0;

		while (i + n < t->nops && t->ops[i + n].cls == RPL_CLS_GRAPH && n < cfg->segment)
			n++;
		if (n > 1)
			glue_rewrites(re, glued, w, i, n, cfg);
		i += n ? n : 1;
	}
	for (uint32_t i = 0; i < t->nops && cfg->segment > RPL_SEG_SMALL; i++)
		stream_cuts &= !(glued[i] & GLUE_PARALLEL);
	for (uint32_t i = 0, p = 0; i < t->nops; i++) {
		struct rpl_top *o = &t->ops[i];

		if (o->cls != RPL_CLS_GRAPH) {
			run_len = 0;
			continue;
		}
		bool by_size = run_len == 0 || (run_len >= seg_limit && (!(glued[i - 1] & GLUE_REWRITE) || small)) ||
			       run_len >= cfg->segment;

		if (by_size || (stream_cuts && !glued[i - 1] && !cut_add(&order, cap_window_op(w, i)))) {
			t->segs[t->nsegs].stream_cut = !by_size;
			memset(&order, 0, sizeof(order));
			(void)cut_add(&order, cap_window_op(w, i));
			run_len = 0;
			seg_limit = segment_size(p, t->ngraph, cfg->segment);
			t->segs[t->nsegs].first = i;
			t->nsegs++;
		}
		run_len++;
		p++;
		t->segs[t->nsegs - 1].n = run_len;
		o->seg = (int32_t)(t->nsegs - 1);
	}
	return 0;
}

/* Whether segment b starts right where a ends (no eager op between them). */
static bool segs_adjacent(const struct rpl_seg *a, const struct rpl_seg *b)
{
	return a->first + a->n == b->first;
}

/* The most segments from k on (before s1) one block may take: at most CUFOLD_SEGMENT ops. */
static uint32_t block_most(const struct rpl_template *t, const struct rpl_config *cfg, uint32_t k, uint32_t s1)
{
	uint32_t m = 0, ops = 0;

	while (k + m < s1 && ops + t->segs[k + m].n <= cfg->segment)
		ops += t->segs[k + m++].n;
	return m;
}

/* Ops of segments k .. k + nseg - 1. */
static uint32_t block_ops(const struct rpl_template *t, uint32_t k, uint32_t nseg)
{
	return t->segs[k + nseg - 1].first + t->segs[k + nseg - 1].n - t->segs[k].first;
}

/* Append the block of segments k .. k + nseg - 1 to t->blocks; its ops. */
static uint32_t block_add(struct rpl_template *t, uint32_t *nb, uint32_t k, uint32_t nseg)
{
	struct rpl_seg *b = &t->blocks[*nb];
	const struct rpl_seg *e = &t->segs[k + nseg - 1];

	if (t->segs[k].block < 0)
		t->segs[k].block = (int32_t)*nb;
	b->first = t->segs[k].first;
	b->n = e->first + e->n - b->first;
	b->nseg = nseg;
	b->block = -1;
	(*nb)++;
	return b->n;
}

/* t's buddy blocks: in each run of adjacent segments, after its first (which launches alone as
 * soon as its ops are in, so the device gets work early), every aligned group of 2, 4, ...
 * 2^RPL_BLOCK_LEVELS segments of at most CUFOLD_SEGMENT ops, built as one graph. A run whose
 * segments come in while the device is busy then launches as a few blocks instead of a launch per
 * segment (launch.c: rpl__segment_end): segments 1..10 as [1..8] and [9..10]. Groups are aligned
 * from the run's second segment and again from each segment cut to keep streams apart
 * (stream_cut), and no block spans such a cut: its union would order two streams both ways, so it
 * could not be split per stream, and one graph over split segments is dropped (block_joins_split).
 * Aligned past the cut, recsys at CUFOLD_OPT=1 paired nothing after it (a split 234-op segment,
 * then [128 + 64] and 19 ops alone): 10 graph launches a step; aligned from it, 8.
 * Besides them, greedy blocks: from the group's first segment as many segments as fit
 * (CUFOLD_SEGMENT ops, not past a stream cut), then again from the segment
 * after them, and so on; and from the other segments too (a run starts after wherever the device
 * was found idle) while all blocks hold at most RPL_BLOCK_LEVELS + 1 nodes per graphable op. Each
 * is the largest unit from where it starts, so a run the device keeps busy ends where the next
 * cut or size would end it, not at a power of two: recsys at
 * CUFOLD_OPT=0 went from 10 graph launches a step to 7 ([1..7] of segments 1..8 before its cut,
 * [9..13] after it), dataparallel from 8-9 to 7. (Those tail blocks once retired dataparallel's
 * template by FREE: its churn check's probe sent a segment eagerly, and the segment's graph, a
 * step older, named a buffer its allocator then freed; such a segment counts no graph's bindings
 * now, went_eager.) The blocks hold each op once more per block over it: the chain of greedy
 * blocks and the buddy blocks up to RPL_BLOCK_LEVELS + 1 more nodes than the segments alone, the
 * other greedy ones within the same bound (the report's block_nodes).
 * 0 or -CF_ENOMEM. */
static int blocks_make(struct rpl_template *t, const struct rpl_config *cfg)
{
	uint64_t nodes = 0, budget = (uint64_t)t->ngraph * (RPL_BLOCK_LEVELS + 1);
	uint32_t nb = 0;

	t->blocks = calloc((size_t)t->nsegs * (RPL_BLOCK_LEVELS + 1) + 1, sizeof(*t->blocks));
	if (!t->blocks)
		return -CF_ENOMEM;
	for (uint32_t k = 0; k < t->nsegs; k++)
		t->segs[k].block = -1;
	for (uint32_t r0 = 0, r1; r0 < t->nsegs; r0 = r1) {
		for (r1 = r0 + 1; r1 < t->nsegs && segs_adjacent(&t->segs[r1 - 1], &t->segs[r1]); r1++)
			;
		/* groups aligned from s0 within [s0, s1): the run after its first, split at stream cuts */
		for (uint32_t s0 = r0 + 1, s1; s0 < r1; s0 = s1) {
			for (s1 = s0 + 1; s1 < r1 && !t->segs[s1].stream_cut; s1++)
				;
			for (uint32_t k = s0, next = s0; k < s1; k++) {
				uint32_t most = block_most(t, cfg, k, s1), top = 0;
				bool greedy = most >= 2 && (k == next || nodes + block_ops(t, k, most) <= budget);

				next = k == next ? k + (most > 1 ? most : 1) : next;
				for (uint32_t lv = RPL_BLOCK_LEVELS; lv >= 1; lv--) {
					uint32_t size = 1u << lv;

					if ((k - s0) % size || size > most)
						continue;
					if (!top && greedy && size < most)
						nodes += block_add(t, &nb, k, most); /* the greedy block first */
					top = size;
					nodes += block_add(t, &nb, k, size);
				}
				if (!top && greedy)
					nodes += block_add(t, &nb, k, most);
			}
		}
	}
	t->nblocks = nb;
	return 0;
}

/* Build one segment's or block's graphs; notes whether an unsplit one spans streams. */
static CUresult seg_build_one(struct rpl_engine *re, struct rpl_template *t, struct rpl_seg *g,
			      const struct cap_window *w, const struct cap_graph *tg, const struct rpl_config *cfg)
{
	CUresult rc;

	g->stand_ev = t->stand_ev;
	rc = rpl__seg_build(re, g, w, tg, cfg);
	if (rc == CUDA_SUCCESS && g->nparts == 1) {
		uint32_t n = seg_streams(g, w);

		g->one_stream = n == 1;
		t->multi_stream |= n > 1;
	}
	return rc;
}

/* Whether block b is one graph over several streams (joined before and forked after) where one
 * of its segments is not: a segment split into a graph per stream, or one on fewer streams.
 * Launching it would order streams its segments leave apart (recsys's lookup stream: 825 -> 854
 * us a step; dataparallel's communication stream, whose events its allocator queries before
 * reusing a bucket: 87 -> 155 us), so it is not used. */
static bool block_joins_split(const struct rpl_template *t, const struct rpl_seg *b, const struct cap_window *w)
{
	int32_t k = t->ops[b->first].seg;
	uint32_t streams;

	if (b->nparts != 1 || (streams = seg_streams(b, w)) < 2)
		return false;
	for (uint32_t j = 0; j < b->nseg; j++) {
		const struct rpl_seg *g = &t->segs[(uint32_t)k + j];

		if (g->nparts > 1 || seg_streams(g, w) < streams)
			return true;
	}
	return false;
}

/* Whether the parallel rule reordered block b's ops into branches (CUFOLD_OPT=2) wider than
 * RPL_BLOCK_WIDTH plan nodes per step of its longest chain, with more than RPL_BLOCK_SMALL nodes.
 * The device's front end hands a graph's nodes out one at a time (one per 0.56 us from its
 * launch in the software device's model, tests/simcuda/cost.c), while its segments' graphs,
 * launched one by one as their ops came in, were handed out as the earlier ones ran: a wide
 * block is bound by that (inference at CUFOLD_OPT=2, host-bound, 209 nodes 25 deep: 78 -> 133
 * us a step), a chain is bound by its own nodes' work. So such a block is not used; recsys's
 * (3 to 12 nodes, its batched kernels) and the transformer's (181 nodes 152 deep) are: 14 -> 8
 * and 6 -> 3 host submissions a step, host-bound. */
static bool block_wide(const struct rpl_seg *b)
{
	const struct rw_plan *p = b->run ? b->run->plan : NULL;
	uint32_t *depth, longest = 0;
	bool wide;

	if (!p || !p->dep_start || p->nnodes <= RPL_BLOCK_SMALL)
		return false;
	depth = calloc(p->nnodes, sizeof(*depth));
	if (!depth)
		return true; /* not proven narrow */
	for (uint32_t k = 0; k < p->nnodes; k++) {
		/* dep_list entries are earlier nodes: their depths are known */
		for (uint32_t e = p->dep_start[k]; e < p->dep_start[k + 1]; e++)
			if (depth[p->dep_list[e]] + 1 > depth[k])
				depth[k] = depth[p->dep_list[e]] + 1;
		longest = depth[k] > longest ? depth[k] : longest;
	}
	wide = p->nnodes > (uint64_t)RPL_BLOCK_WIDTH * (longest + 1);
	free(depth);
	return wide;
}

/* Give up block b: its graphs go; nseg 0 says it is never launched (launch.c: unit_at). */
static void block_drop(struct rpl_engine *re, struct rpl_seg *b)
{
	uint32_t first = b->first, n = b->n;

	rpl__seg_destroy(re, b);
	b->first = first;
	b->n = n;
	b->block = -1;
}

/* Build every segment's graphs (and the join/fork events an unsplit multi-stream segment
 * needs) in t's context. */
static CUresult segs_build(struct rpl_engine *re, struct rpl_template *t, const struct cap_window *w,
			   const struct rpl_config *cfg)
{
	struct cap_graph *tg = cap_graph_build(w);
	CUresult rc = CUDA_SUCCESS;
	bool pushed = false;

	if (!tg)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rpl__ctx_enter(re, t->ctx, &pushed);
	if (cap_window_nevents(w)) {
		rpl__own_call(re);
		rc = DRV_REAL(cuEventCreate)(&t->stand_ev, CU_EVENT_DISABLE_TIMING);
		if (rc != CUDA_SUCCESS)
			t->stand_ev = NULL;
	}
	for (uint32_t k = 0; k < t->nsegs && rc == CUDA_SUCCESS; k++) {
		rc = seg_build_one(re, t, &t->segs[k], w, tg, cfg);
		if (rc != CUDA_SUCCESS)
			break;
		figures_add(re, &t->rw, &t->segs[k], w);
		t->segs[k].kernels_run = unit_kernels(&t->segs[k], w);
		t->split_segs += t->segs[k].nparts > 1;
	}
	/* the blocks' rewrites are those of the same ops: the figures count the segments' (the
	 * report weighs each unit's kernels by its launches: report.c, kernels_launched) */
	for (uint32_t k = 0; k < t->nblocks && rc == CUDA_SUCCESS; k++) {
		rc = seg_build_one(re, t, &t->blocks[k], w, tg, cfg);
		if (rc == CUDA_SUCCESS)
			t->blocks[k].kernels_run = unit_kernels(&t->blocks[k], w);
		if (rc == CUDA_SUCCESS && (block_joins_split(t, &t->blocks[k], w) || block_wide(&t->blocks[k])))
			block_drop(re, &t->blocks[k]);
		t->block_nodes += t->blocks[k].nodes ? t->blocks[k].n : 0;
	}
	if (rc == CUDA_SUCCESS && t->multi_stream) {
		/* one event each for joining streams before launches and forking after: a wait
		 * takes the event's state at the call, so the events are reused at once */
		rpl__own_call(re);
		rc = DRV_REAL(cuEventCreate)(&t->join_ev, CU_EVENT_DISABLE_TIMING);
		if (rc == CUDA_SUCCESS) {
			rpl__own_call(re);
			rc = DRV_REAL(cuEventCreate)(&t->fork_ev, CU_EVENT_DISABLE_TIMING);
		}
	}
	rpl__ctx_leave(re, pushed);
	cap_graph_destroy(tg);
	return rc;
}

/* noinline: scripts/bench-overhead counts builds by this function's calls (the release build's
 * link-time optimization would fold it into its one caller) */
__attribute__((noinline)) struct rpl_template *rpl__template_build(struct rpl_engine *re, const struct cap_window *w,
								   uint64_t shape_id, const struct rpl_config *cfg,
								   const char **why, bool *own_failure)
{
	struct rpl_template *t = NULL;
	uint8_t *glued = NULL; /* per op: GLUE_* between it and the next (cuts_make) */
	uint32_t nops;
	CUresult rc;

	*why = NULL;
	*own_failure = false;
	if (!w || !(nops = cap_window_nops(w))) {
		*why = "no ops";
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		goto out_nomem;
	t->shape_id = shape_id;
	t->end_seg = -1;
	t->built_window = cap_window_seq(w);
	t->nops = nops;
	t->seg_cap = cfg->segment;
	t->ctx = cap_window_op(w, 0)->ctx;
	t->ops = calloc(nops, sizeof(*t->ops));
	t->segs = calloc(nops, sizeof(*t->segs)); /* at most one per op */
	if (!t->ops || !t->segs)
		goto out_nomem;
	if (!tops_classify(t, w)) {
		*why = "ops in more than one context";
		goto out_reject;
	}
	t->one_slot = true;
	for (uint32_t i = 0, slot = UINT32_MAX; i < nops; i++) {
		if (t->ops[i].cls != RPL_CLS_GRAPH)
			continue;
		if (slot != UINT32_MAX && t->ops[i].stream_slot != slot)
			t->one_slot = false;
		slot = t->ops[i].stream_slot;
	}
	glued = calloc(nops, 1);
	if (!glued || cuts_make(re, t, w, cfg, glued) != 0 || blocks_make(t, cfg) != 0)
		goto out_nomem;
	free(glued);
	glued = NULL;
	if (t->ngraph < cfg->min_ops || t->ngraph == 0) {
		*why = "fewer graphable ops than CUFOLD_MIN_OPS";
		goto out_reject;
	}
	rc = segs_build(re, t, w, cfg);
	if (rc != CUDA_SUCCESS) {
		cf_log_debug("building a graph for window shape %llu failed: error %d", (unsigned long long)t->shape_id,
			     (int)rc);
		*why = "graph build or instantiation failed";
		*own_failure = true;
		goto out_reject;
	}
	return t;

out_nomem:
	*why = "out of memory";
	*own_failure = true;
out_reject:
	free(glued);
	rpl__template_destroy(re, t);
	return NULL;
}

void rpl__template_mark(struct rpl_template *t)
{
	cap_shape_unmark(t->shape);
	for (uint32_t k = 0; k < t->nsegs; k++)
		seg_mark(t->shape, &t->segs[k]);
}

uint32_t rpl__template_max_seg(const struct rpl_template *t)
{
	uint32_t m = 0;

	for (uint32_t k = 0; k < t->nsegs; k++)
		m = t->segs[k].n > m ? t->segs[k].n : m;
	for (uint32_t k = 0; k < t->nblocks; k++)
		m = t->blocks[k].n > m ? t->blocks[k].n : m;
	return m;
}

size_t rpl__template_bytes(const struct rpl_template *t)
{
	size_t n = sizeof(*t) + t->nops * sizeof(*t->ops) + (t->nsegs + t->nblocks) * sizeof(*t->segs) +
		   rpl__refs_bytes(t);

	for (uint32_t k = 0; k < t->nsegs + t->nblocks; k++) {
		const struct rpl_seg *g = k < t->nsegs ? &t->segs[k] : &t->blocks[k - t->nsegs];

		n += g->n * sizeof(struct rpl_node);
		for (uint32_t i = 0; g->nodes && i < g->n; i++)
			n += g->nodes[i].param_size;
		n += rw_run_remembered_bytes(g->run); /* its plan's remembered passes (rewrite/plan.c) */
	}
	return n;
}
