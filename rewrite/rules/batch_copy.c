/* batch_copy.c - rule: consecutive independent small copies (or memsets) become one launch of
 * cufold's batched copy (memset) kernel. rewrite layer.
 *
 *   before:  copy S1 -> D1  n1 bytes     (stream s)      memset D1  n1 bytes of v1
 *            copy S2 -> D2  n2 bytes     (stream s)      memset D2  n2 bytes of v2
 *            ...                                          ...
 *            copy Sk -> Dk  nk bytes     (stream s)      memset Dk  nk bytes of vk
 *   after:   cufold_batch_copy({D1,S1,n1} .. {Dk,Sk,nk})  cufold_batch_memset({D1,n1,v1,e1} ..)
 *
 * The kernels (rewrite/kernels/batch.cu) run the ranges of their by-value table in any order
 * and any interleaving, so the copies must not depend on each other.
 *
 * Safe when (each a guard checked on every launch, on the bindings of that launch):
 *  - every op is an asynchronous 1-D device-to-device copy in linear memory (linear_dtod), or
 *    every op an asynchronous 1-D memset (set_1d);
 *  - no copy's source overlaps its own destination (pure);
 *  - for every pair, the later writes nothing the earlier reads or writes and reads nothing the
 *    earlier writes (independent), so any order gives the bytes the stream order gave;
 *  - they are consecutive in the window on one stream, each waiting for nothing its predecessor
 *    does not (the shape fixes it); a node coalesce made counts with its pieces.
 * At most RW_BATCH_MAX (32) ranges go in one launch; a longer run makes several.
 *
 * Why it pays: k copy-engine launches (k graph nodes, each with its own launch latency) become
 * one kernel node; small copies are latency-bound, so one launch moving all of them costs about
 * what one of them did. Ranges larger than BATCH_SMALL_BYTES are left to the copy engine. */
#include "common/errors.h"
#include "rewrite/effects.h"
#include "rewrite/kernels/batch.h"
#include "rewrite/rewriter.h"

#define BATCH_SMALL_BYTES (4u << 20) /* larger copies gain nothing from batching */

/* Whether node i can be a member: memsets (set) or copies, untouched or coalesced, small. */
static bool batch_member(const struct rw_rewriter *rw, uint32_t i, bool set)
{
	const struct rw_node *x = rw_node_at(rw, i);

	if (!x || (x->kind != RW_NODE_OP && x->kind != (set ? RW_NODE_SET : RW_NODE_COPY)))
		return false;
	for (uint32_t k = 0; k < x->norig; k++) {
		const struct cap_op *o = rw_orig(rw, x->orig[k]);

		if (set ? !rw_op_is_set_1d(o) : !rw_op_is_linear_dtod(o))
			return false;
	}
	return cap_op_bytes(&x->op) <= BATCH_SMALL_BYTES;
}

/* Whether original op b can join a batch of the original ops [first, b) (pure). */
static bool batch_joins(const struct rw_rewriter *rw, uint32_t first, uint32_t b, bool set)
{
	const struct cap_op *ob = rw_orig(rw, b);

	if (!rw_cond_holds(set ? RW_G_SET_1D : RW_G_LINEAR_DTOD, ob, ob, true) ||
	    (!set && !rw_cond_holds(RW_G_PURE, ob, ob, true)) ||
	    !rw_cond_holds(RW_G_SAME_STREAM, rw_orig(rw, first), ob, b == first))
		return false;
	for (uint32_t a = first; a < b; a++)
		if (!rw_cond_holds(RW_G_INDEPENDENT, rw_orig(rw, a), ob, false))
			return false;
	return true;
}

/* Record every condition batching the original ops [first, last] relies on (each range of the
 * table is one original op). */
static int batch_record(struct rw_rewriter *rw, uint32_t first, uint32_t last, bool set)
{
	int rc = 0;

	for (uint32_t b = first; b <= last && rc == 0; b++) {
		rc = rw_guard(rw, set ? RW_G_SET_1D : RW_G_LINEAR_DTOD, b, b);
		if (rc == 0 && !set)
			rc = rw_guard(rw, RW_G_PURE, b, b);
		if (rc == 0 && b != first)
			rc = rw_guard(rw, RW_G_SAME_STREAM, first, b);
		for (uint32_t a = first; a < b && rc == 0; a++)
			rc = rw_guard(rw, RW_G_INDEPENDENT, a, b);
	}
	return rc;
}

/* How many nodes from i go in one batch (0: none). Pure. */
static uint32_t batch_find(const struct rw_rewriter *rw, uint32_t i, bool *set)
{
	const struct rw_node *x = rw_node_at(rw, i);
	uint32_t n = 1, ranges;

	if (!x)
		return 0;
	*set = x->op.kind == CAP_OP_MEMSET;
	if (!batch_member(rw, i, *set))
		return 0;
	for (uint32_t k = 0; k < x->norig; k++)
		if (!batch_joins(rw, x->orig[0], x->orig[k], *set))
			return 0;
	ranges = x->norig;
	while (i + n < rw_count(rw)) {
		const struct rw_node *y = rw_node_at(rw, i + n), *p = rw_node_at(rw, i + n - 1);
		bool joins = batch_member(rw, i + n, *set) && ranges + y->norig <= RW_BATCH_MAX &&
			     rw_orig_follows(rw, p->orig[p->norig - 1], y->orig[0]);

		for (uint32_t k = 0; joins && k < y->norig; k++)
			joins = batch_joins(rw, x->orig[0], y->orig[k], *set);
		if (!joins)
			break;
		ranges += y->norig;
		n++;
	}
	return n >= 2 ? n : 0;
}

static bool batch_match(const struct rw_rewriter *rw, uint32_t i)
{
	bool set;

	return batch_find(rw, i, &set) != 0;
}

static int batch_apply(struct rw_rewriter *rw, uint32_t i)
{
	bool set;
	uint32_t n = batch_find(rw, i, &set);
	int rc;

	if (!n)
		return -CF_EINVAL;
	{
		const struct rw_node *l = rw_node_at(rw, i + n - 1);

		rc = batch_record(rw, rw_node_at(rw, i)->orig[0], l->orig[l->norig - 1], set);
	}
	return rc ? rc : rw_replace(rw, i, n, set ? RW_NODE_BATCH_SET : RW_NODE_BATCH_COPY, RW_NONE, "batch-copy");
}

const struct rw_rule rw_rule_batch_copy = {
	.name = "batch-copy",
	.benefit = 1,
	.level = 1,
	.match = batch_match,
	.apply = batch_apply,
};
RW_RULE_REGISTER(batch_copy);
