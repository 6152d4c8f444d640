/* plan.c - rewrite plans: checking guards against the bindings of a launch, deriving the op a
 * plan node submits, and the one-line form golden tests compare. rewrite layer. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "rewrite/plan.h"
#include "rewrite/rewriter.h"

static const char *const guard_names[] = {
#define RW_GUARD_NAME_(name, label) label,
	RW_GUARD_LIST(RW_GUARD_NAME_)
#undef RW_GUARD_NAME_
};

const char *rw_guard_name(enum rw_guard_kind k)
{
	return (unsigned)k < RW_G_COUNT ? guard_names[k] : "?";
}

/* Whether [a0, a0+an) and [b0, b0+bn) overlap (no wrap-around: both are real address ranges). */
static bool ranges_overlap(uint64_t a0, uint64_t an, uint64_t b0, uint64_t bn)
{
	return an && bn && a0 < b0 + bn && b0 < a0 + an;
}

bool rw_guard_holds(const struct rw_guard *g, const struct cap_op *const *ops)
{
	const struct cap_op *a = ops[g->a], *b = ops[g->b];

	switch (g->kind) {
	case RW_G_SRC_ABUTS:
		return a->kind == CAP_OP_MEMCPY && b->kind == CAP_OP_MEMCPY &&
		       b->u.memcpy.src_first == a->u.memcpy.src_first + a->u.memcpy.bytes;
	case RW_G_DST_ABUTS:
		return a->kind == CAP_OP_MEMCPY && b->kind == CAP_OP_MEMCPY &&
		       b->u.memcpy.dst_first == a->u.memcpy.dst_first + a->u.memcpy.bytes;
	case RW_G_SAME_STREAM:
		return a->stream == b->stream && a->stream_slot == b->stream_slot && a->ctx == b->ctx;
	case RW_G_LINEAR_DTOD:
		return rw_op_is_linear_dtod(a);
	case RW_G_DISJOINT: {
		uint64_t src0, dst0, srcn, dstn;

		if (a->kind != CAP_OP_MEMCPY || b->kind != CAP_OP_MEMCPY)
			return false;
		src0 = a->u.memcpy.src_first;
		dst0 = a->u.memcpy.dst_first;
		/* the ends must not lie before the starts (that would not be a union of abutting pieces) */
		if (b->u.memcpy.src_first < src0 || b->u.memcpy.dst_first < dst0)
			return false;
		srcn = b->u.memcpy.src_first + b->u.memcpy.bytes - src0;
		dstn = b->u.memcpy.dst_first + b->u.memcpy.bytes - dst0;
		return !ranges_overlap(src0, srcn, dst0, dstn);
	}
	case RW_G_FORWARDS:
		return a->kind == CAP_OP_MEMCPY && b->kind == CAP_OP_MEMCPY &&
		       b->u.memcpy.src_first == a->u.memcpy.dst_first && b->u.memcpy.bytes == a->u.memcpy.bytes;
	case RW_G_MISSES:
		if (a->kind != CAP_OP_MEMCPY || b->kind != CAP_OP_MEMCPY)
			return false;
		if (ranges_overlap(a->u.memcpy.src_first, a->u.memcpy.bytes, b->u.memcpy.dst_first, b->u.memcpy.bytes))
			return false;
		return g->a == g->b ||
		       !ranges_overlap(a->u.memcpy.dst_first, a->u.memcpy.bytes, b->u.memcpy.dst_first, b->u.memcpy.bytes);
	default:
		return false;
	}
}

bool rw_plan_guards_hold(const struct rw_plan *p, const struct cap_op *const *ops, uint32_t *failed)
{
	for (uint32_t i = 0; i < p->nguards; i++) {
		if (!rw_guard_holds(&p->guards[i], ops)) {
			if (failed)
				*failed = i;
			return false;
		}
	}
	return true;
}

int rw_plan_node_op(const struct rw_plan *p, uint32_t k, const struct cap_op *const *ops, struct cap_op *out)
{
	const struct rw_plan_node *n;
	uint64_t bytes = 0;

	if (k >= p->nnodes)
		return -CF_EINVAL;
	n = &p->nodes[k];
	*out = *ops[n->orig[0]];
	switch (n->kind) {
	case RW_NODE_OP:
		return 0;
	case RW_NODE_COPY:
	case RW_NODE_FORWARD:
		for (uint32_t i = 0; i < n->norig; i++) {
			if (ops[n->orig[i]]->kind != CAP_OP_MEMCPY)
				return -CF_EINVAL;
			bytes += ops[n->orig[i]]->u.memcpy.bytes;
		}
		/* 1-D (guarded): width is the whole extent; the first piece's offsets and pointers
		 * name the first byte of both unions */
		out->u.memcpy.d.WidthInBytes = bytes;
		out->u.memcpy.bytes = bytes;
		out->u.memcpy.src_span = bytes;
		out->u.memcpy.dst_span = bytes;
		out->u.memcpy.staged = NULL;
		out->flags &= (uint8_t)~CAP_OPF_STAGED;
		if (n->kind == RW_NODE_FORWARD) {
			const struct cap_op *from = NULL;

			for (uint32_t g = 0; g < p->nguards && !from; g++)
				if (p->guards[g].kind == RW_G_FORWARDS && p->guards[g].b == n->orig[0])
					from = ops[p->guards[g].a];
			if (!from || from->kind != CAP_OP_MEMCPY)
				return -CF_EINVAL;
			/* 1-D (guarded): the source is the first byte the slice copy read */
			out->u.memcpy.d.srcXInBytes = from->u.memcpy.d.srcXInBytes;
			out->u.memcpy.d.srcY = from->u.memcpy.d.srcY;
			out->u.memcpy.d.srcZ = from->u.memcpy.d.srcZ;
			out->u.memcpy.d.srcLOD = from->u.memcpy.d.srcLOD;
			out->u.memcpy.d.srcMemoryType = from->u.memcpy.d.srcMemoryType;
			out->u.memcpy.d.srcHost = from->u.memcpy.d.srcHost;
			out->u.memcpy.d.srcDevice = from->u.memcpy.d.srcDevice;
			out->u.memcpy.d.srcArray = from->u.memcpy.d.srcArray;
			out->u.memcpy.d.srcPitch = from->u.memcpy.d.srcPitch;
			out->u.memcpy.d.srcHeight = from->u.memcpy.d.srcHeight;
			out->u.memcpy.src_ctx = from->u.memcpy.src_ctx;
			out->u.memcpy.src_pageable = from->u.memcpy.src_pageable;
			out->u.memcpy.src_first = from->u.memcpy.src_first;
		}
		return 0;
	default:
		return -CF_EINVAL;
	}
}

bool rw_plan_is_identity(const struct rw_plan *p)
{
	if (p->nnodes != p->norig || p->nguards)
		return false;
	for (uint32_t i = 0; i < p->nnodes; i++)
		if (p->nodes[i].kind != RW_NODE_OP || p->nodes[i].orig[0] != i)
			return false;
	return true;
}

/* Append to buf like snprintf, counting past its end. */
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(*len < cap ? buf + *len : NULL, *len < cap ? cap - *len : 0, fmt, ap);
	va_end(ap);
	if (w > 0)
		*len += (size_t)w;
}

int rw_plan_format(const struct rw_plan *p, char *buf, size_t cap)
{
	size_t len = 0;

	if (cap)
		buf[0] = '\0';
	for (uint32_t k = 0; k < p->nnodes; k++) {
		const struct rw_plan_node *n = &p->nodes[k];

		put(buf, cap, &len, "%s%s(", k ? " " : "",
		    n->kind == RW_NODE_COPY ? "copy" : n->kind == RW_NODE_FORWARD ? "forward" : "op");
		for (uint32_t i = 0; i < n->norig; i++)
			put(buf, cap, &len, "%s%u", i ? "," : "", (unsigned)n->orig[i]);
		put(buf, cap, &len, ")");
	}
	if (p->nguards)
		put(buf, cap, &len, " |");
	for (uint32_t i = 0; i < p->nguards; i++)
		put(buf, cap, &len, " %s(%u,%u)", rw_guard_name((enum rw_guard_kind)p->guards[i].kind),
		    (unsigned)p->guards[i].a, (unsigned)p->guards[i].b);
	return (int)len;
}

void rw_plan_destroy(struct rw_plan *p)
{
	if (!p)
		return;
	for (uint32_t k = 0; p->nodes && k < p->nnodes; k++)
		free(p->nodes[k].orig);
	free(p->nodes);
	free(p->guards);
	free(p->stats);
	free(p);
}

/* ------------------------------------------------------------------ runs */

struct rw_run *rw_run_create(const struct cap_op *const *ops, uint32_t n, const struct rw_config *cfg)
{
	struct rw_run *r = calloc(1, sizeof(*r));

	if (!r || !n)
		goto out_drop;
	r->n = n;
	r->node_of = malloc(n * sizeof(*r->node_of));
	r->ops = malloc(n * sizeof(*r->ops));
	if (!r->node_of || !r->ops)
		goto out_drop;
	r->plan = rw_rewrite(ops, n, NULL, cfg, NULL, 0);
	if (!r->plan || rw_plan_is_identity(r->plan))
		goto out_drop;
	for (uint32_t i = 0; i < n; i++)
		r->node_of[i] = -2;
	for (uint32_t k = 0; k < r->plan->nnodes; k++) {
		const struct rw_plan_node *pn = &r->plan->nodes[k];

		for (uint32_t j = 0; j < pn->norig; j++)
			if (pn->orig[j] != pn->orig[0] + j)
				goto out_drop;
		r->node_of[pn->orig[0]] = (int32_t)k;
		for (uint32_t j = 1; j < pn->norig; j++)
			r->node_of[pn->orig[j]] = -1;
	}
	for (uint32_t i = 0; i < n; i++)
		if (r->node_of[i] == -2) /* erased: no position would stand for it */
			goto out_drop;
	return r;

out_drop:
	rw_run_destroy(r);
	return NULL;
}

void rw_run_destroy(struct rw_run *r)
{
	if (!r)
		return;
	rw_plan_destroy(r->plan);
	free(r->node_of);
	free(r->ops);
	free(r);
}

bool rw_run_guards_hold(struct rw_run *r, const struct cap_op *def)
{
	for (uint32_t i = 0; i < r->n; i++)
		r->ops[i] = &def[i];
	if (!rw_plan_guards_hold(r->plan, r->ops, NULL))
		return false;
	/* and every derived node can be derived from them (rules guard this already; checked so
	 * rw_run_op can never come back empty-handed for a node) */
	for (uint32_t k = 0; k < r->plan->nnodes; k++) {
		const struct rw_plan_node *pn = &r->plan->nodes[k];

		for (uint32_t j = 0; pn->kind != RW_NODE_OP && j < pn->norig; j++)
			if (def[pn->orig[j]].kind != CAP_OP_MEMCPY)
				return false;
	}
	return true;
}

bool rw_run_is_folded(const struct rw_run *r, uint32_t i)
{
	return i < r->n && r->node_of[i] < 0;
}

const struct cap_op *rw_run_op(const struct rw_run *r, uint32_t i, const struct cap_op *def, struct cap_op *tmp)
{
	uint32_t k;

	if (i >= r->n || r->node_of[i] < 0)
		return NULL;
	k = (uint32_t)r->node_of[i];
	if (r->plan->nodes[k].kind == RW_NODE_OP)
		return &def[i];
	/* rw_run_guards_hold checked these very ops, so the derivation cannot refuse them */
	return rw_plan_node_op(r->plan, k, r->ops, tmp) == 0 ? tmp : &def[i];
}
