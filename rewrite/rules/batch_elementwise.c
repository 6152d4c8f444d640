/* batch_elementwise.c - rule (level 2): back-to-back launches of one elementwise kernel over
 * abutting ranges with the same scalars become one launch over all of them. rewrite layer.
 *
 *   before:  k<<<ceil(n1/b), b>>>(out,      in,      s, n1)    (stream s)
 *            k<<<ceil(n2/b), b>>>(out + n1, in + n1, s, n2)    (stream s, next op)
 *   after:   k<<<ceil((n1+n2)/b), b>>>(out, in, s, n1 + n2)
 *
 * The kernel's card must say `elementwise` (element i touches only element i of each pointer,
 * for i in [0, count)) with `count` one integer parameter; then element n1 + j of the merged
 * launch is element j of the second.
 *
 * Safe when (each a guard checked on every launch, on the bindings of that launch):
 *  - elem_abuts(a, b) for each adjacent pair: the same function, block and shared memory; both
 *    grids exactly ceil(count / block) (the grid is derived from the count); every pointer of b
 *    starts where a's span ends, spans proportional to the counts; every other parameter (the
 *    scalars) equal; the same stream;
 *  - elem_safe(first, last): over the merged ranges, no written pointer's range meets another
 *    pointer's range (unless both are the same pointer in every launch, as y in y += a*x), so
 *    no launch reads what another writes: running them at once is running them in order;
 *  - they are adjacent in the window, the second waiting for nothing the first does not.
 *
 * Level 2: it changes the grid the program chose, which a kernel with a card that is subtly
 * wrong about `elementwise` would notice; level 1 only drops or merges copies and memsets.
 *
 * Why it pays: k launches of a latency-bound kernel become one. */
#include "common/errors.h"
#include "rewrite/rewriter.h"

/* Node i: an untouched kernel or a node this rule made; then its first and last original op. */
static bool elem_node(const struct rw_rewriter *rw, uint32_t i)
{
	const struct rw_node *x = rw_node_at(rw, i);

	return x && x->op.kind == CAP_OP_KERNEL && (x->kind == RW_NODE_OP || x->kind == RW_NODE_ELEMENTWISE);
}

/* The guards merging node i with the untouched kernel i+1 relies on, on original ops. */
static int elem_conditions(const struct rw_rewriter *rw, struct rw_rewriter *rec, uint32_t i)
{
	const struct rw_node *x = rw_node_at(rw, i), *y = rw_node_at(rw, i + 1);
	uint32_t f = x->orig[0], a = x->orig[x->norig - 1], b = y->orig[0];

	if (rec) {
		int rc = rw_guard(rec, RW_G_ELEM_ABUTS, a, b);

		return rc ? rc : rw_guard(rec, RW_G_ELEM_SAFE, f, b);
	}
	return rw_cond_holds(RW_G_ELEM_ABUTS, rw_orig(rw, a), rw_orig(rw, b), false) &&
			       rw_cond_holds(RW_G_ELEM_SAFE, rw_orig(rw, f), rw_orig(rw, b), false)
		       ? 0
		       : 1;
}

static bool elem_match(const struct rw_rewriter *rw, uint32_t i)
{
	const struct rw_node *x = rw_node_at(rw, i);

	if (!elem_node(rw, i) || !rw_is_plain(rw, i + 1) || rw_node_at(rw, i + 1)->op.kind != CAP_OP_KERNEL)
		return false;
	if (!rw_orig_follows(rw, x->orig[x->norig - 1], rw_node_at(rw, i + 1)->orig[0]))
		return false;
	return elem_conditions(rw, NULL, i) == 0;
}

static int elem_apply(struct rw_rewriter *rw, uint32_t i)
{
	int rc = elem_conditions(rw, rw, i);

	return rc ? rc : rw_replace(rw, i, 2, RW_NODE_ELEMENTWISE, RW_NONE, "batch-elementwise");
}

const struct rw_rule rw_rule_batch_elementwise = {
	.name = "batch-elementwise",
	.benefit = 5,
	.level = 2,
	.match = elem_match,
	.apply = elem_apply,
	.reach = 2, /* match reads i and i + 1 */
};
RW_RULE_REGISTER(batch_elementwise);
