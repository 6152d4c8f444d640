/* batch_kernel.c - rule (level 1): launches of one kernel over separate data, independent of one
 * another and of everything they are moved past, become one launch of the kernel's
 * multi-instance variant (horizontal fusion; PyTorch's _foreach kernels and Apex's
 * multi_tensor_apply do it by hand for optimizers). rewrite layer.
 *
 *   before:  k<<<g1, b>>>(a1, x1, n1)   (stream s)
 *            other<<<...>>>(...)        (stream s: touches none of what k's launches touch)
 *            k<<<g2, b>>>(a2, x2, n2)   (stream s)
 *   after:   k_cf_multi<<<g1 + g2, b>>>({ 2, [0, g1], (a1, x1, n1), (a2, x2, n2) })
 *            other<<<...>>>(...)
 *
 * The variant (rewrite/variant.c, JIT-compiled from the kernel's PTX) gives each instance its
 * own parameters, its own %ctaid.x and %nctaid.x: inside the launch an instance runs exactly as
 * its launch did. What is not the same is timing: the members run at once, and before the ops
 * they were moved past.
 *
 * Safe when (each a guard checked on every launch, on the bindings of that launch):
 *  - independent(x, m) for every two members, and for every member m and every op x between the
 *    first member and m: what one writes the other neither reads nor writes. Effects come from
 *    the kernel's card (written, or derived from its PTX): a kernel whose effects are unknown or
 *    indirect is never independent of anything, so it is never fused.
 * Not guarded, because the template fixes them: the function, grid and block (key fields: the
 * variant needs one block shape and one grid y and z), the stream (every node between is plain:
 * a kernel, copy or memset on the first member's stream, so no event, wait or other stream
 * orders anything between them).
 *
 * Level 1: the results are the program's own to the bit; only the number of launches changes.
 *
 * Why it pays: k launches of a latency-bound kernel (an optimizer's update per parameter, a
 * tower's layer per feature) become one. */
#include "common/errors.h"
#include "rewrite/rewriter.h"

#define SCAN_MAX 256u /* nodes after the first member a match looks at */

/* Whether node j is an untouched launch that may be an instance together with node i's. */
static bool same_shape(const struct rw_rewriter *rw, uint32_t i, uint32_t j)
{
	return rw_is_plain(rw, j) && rw_multi_fits(&rw_node_at(rw, i)->op, &rw_node_at(rw, j)->op);
}

/* The members of a fusion starting at node i: idx[0] = i, then every later node in i's plain run
 * (at most SCAN_MAX on) of i's shape that is independent of the members before it and of every
 * node it would pass. Returns the member count (1: nothing to fuse). */
static uint32_t gather(const struct rw_rewriter *rw, uint32_t i, uint32_t *idx)
{
	uint32_t n = 1, last = i + SCAN_MAX < rw_count(rw) ? i + SCAN_MAX : rw_count(rw) - 1;
	const struct rw_node *x = rw_node_at(rw, i);

	idx[0] = i;
	if (!x || !rw_is_plain(rw, i) || x->op.kind != CAP_OP_KERNEL || x->op.u.kernel.attrs)
		return 1;
	for (uint32_t j = i + 1; j <= last && n < RW_MULTI_MAX && rw_plain_between(rw, i, j + 1); j++) {
		bool ok = same_shape(rw, i, j);

		/* independent of every node from the first member on that it would pass: the
		 * members gathered so far and the nodes between them */
		for (uint32_t k = i; ok && k < j; k++)
			ok = rw_need(rw, NULL, RW_G_INDEPENDENT, k, j) == 0;
		if (ok)
			idx[n++] = j;
	}
	return n;
}

static bool bk_match(const struct rw_rewriter *rw, uint32_t i)
{
	uint32_t idx[RW_MULTI_MAX];
	const struct rw_node *x = rw_node_at(rw, i);

	if (!x || !rw_is_plain(rw, i) || x->op.kind != CAP_OP_KERNEL)
		return false;
	return gather(rw, i, idx) >= 2 && rw_can_multi(rw, i);
}

static int bk_apply(struct rw_rewriter *rw, uint32_t i)
{
	uint32_t idx[RW_MULTI_MAX], n = gather(rw, i, idx);
	int rc = 0;

	if (n < 2)
		return -CF_EINVAL;
	for (uint32_t m = 1; m < n && !rc; m++)
		for (uint32_t k = i; k < idx[m] && !rc; k++)
			rc = rw_need(rw, rw, RW_G_INDEPENDENT, k, idx[m]);
	return rc ? rc : rw_gather(rw, idx, n, RW_NODE_BATCH_KERNEL, "batch-kernel");
}

const struct rw_rule rw_rule_batch_kernel = {
	.name = "batch-kernel",
	.benefit = 4,
	.level = 1,
	.match = bk_match,
	.apply = bk_apply,
	.reach = SCAN_MAX + 1, /* match reads i .. i + SCAN_MAX */
};
RW_RULE_REGISTER(batch_kernel);
