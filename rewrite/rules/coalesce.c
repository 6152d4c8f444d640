/* coalesce.c - rule: back-to-back copies over abutting ranges become one copy; back-to-back
 * memsets of one value over abutting ranges become one memset. rewrite layer.
 *
 *   before:  copy  S      -> D       n1 bytes   (stream s)
 *            copy  S+n1   -> D+n1    n2 bytes   (stream s, next op of the window)
 *   after:   copy  S      -> D       n1+n2 bytes
 *
 *   before:  memset D      n1 bytes of v        (stream s)
 *            memset D+n1   n2 bytes of v        (stream s, next op; same element size)
 *   after:   memset D      n1+n2 bytes of v
 *
 * Safe when (each is a guard checked on every launch, on the original ops' bindings):
 *  - both are asynchronous 1-D device-to-device copies in linear memory (linear_dtod), or both
 *    asynchronous 1-D memsets (set_1d);
 *  - they are on the same stream and adjacent in the window, and the second waits for nothing
 *    the first does not (same_stream; the trace graph, checked once: the shape fixes it), so
 *    no op of the program can run between them;
 *  - the ranges abut (src_abuts and dst_abuts; set_abuts, which also asks for the same element
 *    size and value);
 *  - copies: the union of the sources does not overlap the union of the destinations
 *    (disjoint): else the first copy could write bytes the second reads, which one copy would
 *    read unwritten. (Memsets read nothing.)
 * A chain of k pieces folds pairwise: node (1..j) + piece j+1, guards naming original ops.
 *
 * Why it pays: one copy or memset node instead of k (each costs a launch of the copy engine and
 * a node in the graph), and larger transfers run nearer the bandwidth peak. */
#include "common/errors.h"
#include "rewrite/rewriter.h"

/* Whether node i is a copy (memset, when set) coalesce can extend: an original op or a node
 * this rule made. */
static bool piece(const struct rw_node *x, bool set)
{
	if (!x || x->op.kind != (set ? CAP_OP_MEMSET : CAP_OP_MEMCPY))
		return false;
	return x->kind == RW_NODE_OP || (x->kind == (set ? RW_NODE_SET : RW_NODE_COPY) && x->rule);
}

/* The guards the rewrite of node i with node i+1 relies on (a: last original op of node i,
 * b: the next op, f: the first original op of node i) into g; returns how many. */
static uint32_t coalesce_guards(const struct rw_rewriter *rw, uint32_t i, bool set, struct rw_guard *g)
{
	const struct rw_node *x = rw_node_at(rw, i), *y = rw_node_at(rw, i + 1);
	uint32_t f = x->orig[0], a = x->orig[x->norig - 1], b = y->orig[0], n = 0;

	if (set) {
		g[n++] = (struct rw_guard){ RW_G_SET_1D, f, f, -1, -1 };
		g[n++] = (struct rw_guard){ RW_G_SET_1D, b, b, -1, -1 };
		g[n++] = (struct rw_guard){ RW_G_SAME_STREAM, f, b, -1, -1 };
		g[n++] = (struct rw_guard){ RW_G_SET_ABUTS, a, b, -1, -1 };
		return n;
	}
	g[n++] = (struct rw_guard){ RW_G_LINEAR_DTOD, f, f, -1, -1 };
	g[n++] = (struct rw_guard){ RW_G_LINEAR_DTOD, b, b, -1, -1 };
	g[n++] = (struct rw_guard){ RW_G_SAME_STREAM, f, b, -1, -1 };
	g[n++] = (struct rw_guard){ RW_G_SRC_ABUTS, a, b, -1, -1 };
	g[n++] = (struct rw_guard){ RW_G_DST_ABUTS, a, b, -1, -1 };
	g[n++] = (struct rw_guard){ RW_G_DISJOINT, f, b, -1, -1 };
	return n;
}

/* Whether node i and i+1 are memsets (1), copies (0), or neither (-1). */
static int coalesce_kind(const struct rw_rewriter *rw, uint32_t i)
{
	const struct rw_node *x = rw_node_at(rw, i), *y = rw_node_at(rw, i + 1);

	if (!x || !y || y->kind != RW_NODE_OP)
		return -1;
	if (piece(x, false) && y->op.kind == CAP_OP_MEMCPY)
		return 0;
	if (piece(x, true) && y->op.kind == CAP_OP_MEMSET)
		return 1;
	return -1;
}

static bool coalesce_match(const struct rw_rewriter *rw, uint32_t i)
{
	int set = coalesce_kind(rw, i);
	const struct rw_node *x, *y;
	struct rw_guard g[6];
	uint32_t n;

	if (set < 0)
		return false;
	x = rw_node_at(rw, i);
	y = rw_node_at(rw, i + 1);
	/* the pieces of node i are in order (invariant), so a chain is abutting throughout when each
	 * step was; nothing may lie between i's last piece and the next op */
	if (!rw_orig_follows(rw, x->orig[x->norig - 1], y->orig[0]))
		return false;
	n = coalesce_guards(rw, i, set, g);
	for (uint32_t k = 0; k < n; k++) {
		/* the guards name original ops only: evaluate them on the window as captured */
		if (!rw_cond_holds((enum rw_guard_kind)g[k].kind, rw_orig(rw, g[k].a), rw_orig(rw, g[k].b),
				   g[k].a == g[k].b))
			return false;
	}
	return true;
}

static int coalesce_apply(struct rw_rewriter *rw, uint32_t i)
{
	int set = coalesce_kind(rw, i);
	struct rw_guard g[6];
	uint32_t n;
	int rc = 0;

	if (set < 0)
		return -CF_EINVAL;
	n = coalesce_guards(rw, i, set, g);
	for (uint32_t k = 0; k < n && rc == 0; k++)
		rc = rw_guard(rw, (enum rw_guard_kind)g[k].kind, g[k].a, g[k].b);
	if (rc != 0)
		return rc;
	return rw_replace(rw, i, 2, set ? RW_NODE_SET : RW_NODE_COPY, RW_NONE, "coalesce");
}

const struct rw_rule rw_rule_coalesce = {
	.name = "coalesce",
	.benefit = 10,
	.level = 1,
	.match = coalesce_match,
	.apply = coalesce_apply,
	.reach = 2, /* match reads i and i + 1 */
};
RW_RULE_REGISTER(coalesce);
