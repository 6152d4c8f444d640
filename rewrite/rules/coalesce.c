/* coalesce.c - rule: back-to-back copies over abutting ranges become one copy. rewrite layer.
 *
 *   before:  copy  S      -> D       n1 bytes   (stream s)
 *            copy  S+n1   -> D+n1    n2 bytes   (stream s, next op of the window)
 *   after:   copy  S      -> D       n1+n2 bytes
 *
 * Safe when (each is a guard checked on every launch, on the original ops' bindings):
 *  - both are asynchronous 1-D device-to-device copies in linear memory (linear_dtod);
 *  - they are on the same stream and adjacent in the window, and the second waits for nothing
 *    the first does not (same_stream; the trace graph, checked once: the shape fixes it), so
 *    no op of the program can run between them;
 *  - the source and destination ranges abut (src_abuts, dst_abuts);
 *  - the union of the sources does not overlap the union of the destinations (disjoint): else
 *    the first copy could write bytes the second reads, which one copy would read unwritten.
 * A chain of k pieces folds pairwise: node (1..j) + piece j+1, guards naming original ops.
 *
 * Why it pays: one copy node instead of k (each copy costs a launch of the copy engine and a
 * node in the graph), and larger copies run nearer the bandwidth peak. */
#include "rewrite/rewriter.h"

/* The guards the rewrite of node i with node i+1 relies on (a: last original op of node i,
 * b: the next op, f: the first original op of node i) into g; returns how many. */
static uint32_t coalesce_guards(const struct rw_rewriter *rw, uint32_t i, struct rw_guard *g)
{
	const struct rw_node *x = rw_node_at(rw, i), *y = rw_node_at(rw, i + 1);
	uint32_t f = x->orig[0], a = x->orig[x->norig - 1], b = y->orig[0], n = 0;

	g[n++] = (struct rw_guard){ RW_G_LINEAR_DTOD, f, f };
	g[n++] = (struct rw_guard){ RW_G_LINEAR_DTOD, b, b };
	g[n++] = (struct rw_guard){ RW_G_SAME_STREAM, f, b };
	g[n++] = (struct rw_guard){ RW_G_SRC_ABUTS, a, b };
	g[n++] = (struct rw_guard){ RW_G_DST_ABUTS, a, b };
	g[n++] = (struct rw_guard){ RW_G_DISJOINT, f, b };
	return n;
}

static bool coalesce_match(const struct rw_rewriter *rw, uint32_t i)
{
	const struct rw_node *x = rw_node_at(rw, i), *y = rw_node_at(rw, i + 1);
	const struct cap_op *ops[2];
	struct rw_guard g[6];
	uint32_t n;

	if (!x || !y || y->kind != RW_NODE_OP || y->op.kind != CAP_OP_MEMCPY)
		return false;
	if (x->kind != RW_NODE_OP && !(x->kind == RW_NODE_COPY && x->rule && x->op.kind == CAP_OP_MEMCPY))
		return false;
	if (x->kind == RW_NODE_OP && x->op.kind != CAP_OP_MEMCPY)
		return false;
	/* the pieces of node i are in order (invariant), so a chain is abutting throughout when each
	 * step was; nothing may lie between i's last piece and the next op */
	if (!rw_orig_follows(rw, x->orig[x->norig - 1], y->orig[0]))
		return false;
	n = coalesce_guards(rw, i, g);
	for (uint32_t k = 0; k < n; k++) {
		/* the guards name original ops only: evaluate them on the window as captured */
		ops[0] = rw_orig(rw, g[k].a);
		ops[1] = rw_orig(rw, g[k].b);
		{
			struct rw_guard local = { g[k].kind, 0, 1 };

			if (!rw_guard_holds(&local, ops))
				return false;
		}
	}
	return true;
}

static int coalesce_apply(struct rw_rewriter *rw, uint32_t i)
{
	const struct rw_node *x = rw_node_at(rw, i), *y = rw_node_at(rw, i + 1);
	struct rw_guard g[6];
	struct cap_op op = x->op;
	uint64_t bytes = x->op.u.memcpy.bytes + y->op.u.memcpy.bytes;
	uint32_t n = coalesce_guards(rw, i, g);
	int rc = 0;

	for (uint32_t k = 0; k < n && rc == 0; k++)
		rc = rw_guard(rw, (enum rw_guard_kind)g[k].kind, g[k].a, g[k].b);
	if (rc != 0)
		return rc;
	op.u.memcpy.bytes = bytes;
	op.u.memcpy.d.WidthInBytes = bytes;
	op.u.memcpy.src_span = bytes;
	op.u.memcpy.dst_span = bytes;
	return rw_replace(rw, i, 2, RW_NODE_COPY, &op, "coalesce");
}

const struct rw_rule rw_rule_coalesce = {
	.name = "coalesce",
	.benefit = 10,
	.level = 1,
	.match = coalesce_match,
	.apply = coalesce_apply,
};
RW_RULE_REGISTER(coalesce);
