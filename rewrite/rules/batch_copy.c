/* batch_copy.c - rule: consecutive independent small copies (or memsets) become one launch of
 * cufold's batched copy (memset) kernel. rewrite layer.
 *
 *   before:  copy S1 -> D1  n1 bytes     (stream s)      memset D1  n1 bytes of v1
 *            copy S2 -> D2  n2 bytes     (stream s)      memset D2  n2 bytes of v2
 *            ...                                          ...
 *            copy Sk -> Dk  nk bytes     (stream s)      memset Dk  nk bytes of vk
 *   after:   cufold_batch_copy({D1,S1,n1} .. {Dk,Sk,nk})  cufold_batch_memset({D1,n1,v1,e1} ..)
 *   (2-D copies: cufold_batch_copy2d({D1,S1,width,rows,dpitch,spitch} ..))
 *
 * The kernels (rewrite/kernels/batch.cu) run the ranges of their by-value table in any order
 * and any interleaving, so the copies must not depend on each other.
 *
 * Safe when (each a guard checked on every launch, on the bindings of that launch):
 *  - every member is an asynchronous device-to-device copy in linear memory, 1-D (linear_dtod)
 *    or 2-D (pitched_dtod: rows of one width, pitches at least the width), or every member an
 *    asynchronous 1-D memset (set_1d);
 *  - no copy's source overlaps its own destination (pure);
 *  - for every pair, the later writes nothing the earlier reads or writes and reads nothing the
 *    earlier writes (independent), so any order gives the bytes the stream order gave;
 *  - they are consecutive in the window on one stream (ops between them erased by other rules
 *    do not count), each waiting for nothing its predecessor does not (the shape fixes it).
 * A member is any copy the other rules made (coalesced, forwarded, chained, a cat turned copy):
 * its range is derived like that node at every launch, and the guards name the node.
 * At most RW_BATCH_MAX (32) ranges go in one launch of the 1-D kernel, RW_BATCH2D_MAX (16)
 * regions in one of the pitched kernel (cufold_batch_copy2d, used when some copy is 2-D, like
 * the per-head copies of a strided .contiguous()); a longer run makes several.
 *
 * Why it pays: k copy-engine launches (k graph nodes, each with its own launch latency) become
 * one kernel node; small copies are latency-bound, so one launch moving all of them costs about
 * what one of them did. Ranges larger than BATCH_SMALL_BYTES are left to the copy engine. */
#include "common/errors.h"
#include "rewrite/effects.h"
#include "rewrite/kernels/batch.h"
#include "rewrite/rewriter.h"

#define BATCH_SMALL_BYTES (4u << 20) /* larger copies gain nothing from batching */

/* Whether node i is a 2-D copy (pure). */
static bool is_2d(const struct rw_rewriter *rw, uint32_t i)
{
	return rw_node_at(rw, i)->op.kind == CAP_OP_MEMCPY && rw_node_at(rw, i)->op.u.memcpy.d.Height > 1;
}

/* The condition saying what node i is: a 1-D memset, a 1-D copy or a 2-D copy. */
static enum rw_guard_kind member_kind(const struct rw_rewriter *rw, uint32_t i, bool set)
{
	return set ? RW_G_SET_1D : is_2d(rw, i) ? RW_G_PITCHED_DTOD : RW_G_LINEAR_DTOD;
}

/* Whether node i can be a member: a copy or memset (set) of any kind but a batch, small. */
static bool batch_member(const struct rw_rewriter *rw, uint32_t i, bool set)
{
	const struct rw_node *x = rw_node_at(rw, i);

	if (!x || x->nmembers || x->op.kind != (set ? CAP_OP_MEMSET : CAP_OP_MEMCPY))
		return false;
	if (rw_need(rw, NULL, member_kind(rw, i, set), i, i) != 0)
		return false;
	return cap_op_bytes(&x->op) <= BATCH_SMALL_BYTES;
}

/* The conditions node j joining a batch of nodes [i, j) relies on: 0 when they hold (rec
 * NULL) or were recorded (rec). Each node is one range of the table. */
static int batch_joins(const struct rw_rewriter *rw, struct rw_rewriter *rec, uint32_t i, uint32_t j, bool set)
{
	int rc = rw_need(rw, rec, member_kind(rw, j, set), j, j);

	if (rc == 0 && !set)
		rc = rw_need(rw, rec, RW_G_PURE, j, j);
	if (rc == 0 && j != i)
		rc = rw_need(rw, rec, RW_G_SAME_STREAM, i, j);
	for (uint32_t a = i; a < j && rc == 0; a++)
		rc = rw_need(rw, rec, RW_G_INDEPENDENT, a, j);
	return rc;
}

/* How many nodes from i go in one batch (0: none); *set: memsets, *two_d: some copy is 2-D
 * (the pitched kernel, RW_BATCH2D_MAX regions). Pure. */
static uint32_t batch_find(const struct rw_rewriter *rw, uint32_t i, bool *set, bool *two_d)
{
	const struct rw_node *x = rw_node_at(rw, i);
	uint32_t n = 1;

	if (!x)
		return 0;
	*set = x->op.kind == CAP_OP_MEMSET;
	*two_d = !*set && is_2d(rw, i);
	if (!batch_member(rw, i, *set) || batch_joins(rw, NULL, i, i, *set) != 0)
		return 0;
	while (i + n < rw_count(rw)) {
		const struct rw_node *y = rw_node_at(rw, i + n), *p = rw_node_at(rw, i + n - 1);
		bool y2d = !*set && is_2d(rw, i + n);

		if (n + 1 > ((*two_d || y2d) ? RW_BATCH2D_MAX : RW_BATCH_MAX))
			break;
		if (!batch_member(rw, i + n, *set) || !rw_orig_follows(rw, p->orig[p->norig - 1], y->orig[0]) ||
		    batch_joins(rw, NULL, i, i + n, *set) != 0)
			break;
		*two_d |= y2d;
		n++;
	}
	return n >= 2 ? n : 0;
}

static bool batch_match(const struct rw_rewriter *rw, uint32_t i)
{
	bool set, two_d;

	return batch_find(rw, i, &set, &two_d) != 0;
}

static int batch_apply(struct rw_rewriter *rw, uint32_t i)
{
	bool set, two_d;
	uint32_t n = batch_find(rw, i, &set, &two_d);
	enum rw_node_kind kind = set ? RW_NODE_BATCH_SET : two_d ? RW_NODE_BATCH_COPY2D : RW_NODE_BATCH_COPY;
	int rc = 0;

	if (!n)
		return -CF_EINVAL;
	for (uint32_t j = i; j < i + n && rc == 0; j++)
		rc = batch_joins(rw, rw, i, j, set);
	return rc ? rc : rw_replace(rw, i, n, kind, RW_NONE, "batch-copy");
}

const struct rw_rule rw_rule_batch_copy = {
	.name = "batch-copy",
	.benefit = 1,
	.level = 1,
	.match = batch_match,
	.apply = batch_apply,
	.reach = RW_BATCH_MAX, /* match reads the run of members from i */
};
RW_RULE_REGISTER(batch_copy);
