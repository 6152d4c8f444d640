/* parallel.c - rule (level 2): ops of one stream wait only for the earlier ops they truly
 * depend on through memory, not for everything before them. rewrite layer.
 *
 *   before:  X1 -> X2 -> X3 -> X4     (one stream: each waits for the one before)
 *   after:   X1 -> X3, X2 -> X4       (say X3 reads what X1 wrote, X4 what X2 wrote; X1 and X2
 *                                      touch disjoint memory, as do X3 and X2, X1 and X4)
 *
 * Op k keeps a wait for op j < k when their effects (rewrite/effects.h) conflict: one writes
 * what the other reads or writes, or either may touch anything (a kernel without a card, an
 * `indirect` one), or when they are more than PARALLEL_SPAN ops apart. Waits implied by others
 * are left out (transitive reduction).
 *
 * Safe when (each a guard checked when bindings change, on the bindings of that launch):
 *  - for every pair left unordered, independent(j, k): k writes nothing j reads or writes and
 *    reads nothing j writes (and neither's effects are unknown), so either order, or both at
 *    once, leaves memory as the stream order did;
 *  - every op of the segment is a kernel, copy or memset of one stream (checked once: the shape
 *    fixes it): no event or other stream whose ordering the dropped waits could carry. The
 *    segment still launches as one graph after everything before it on the stream, and
 *    everything after it still waits for all of it.
 *
 * Level 2: like batch-elementwise it trusts kernel cards beyond copies and memsets (a card
 * that under-states a kernel's reach would let two launches race). It runs last (benefit 0),
 * once the other rules have settled the list.
 *
 * Why it pays: independent small kernels, copies and memsets overlap on the device instead of
 * each waiting for the previous launch to finish (the graph exposes the concurrency the single
 * stream hid). */
#include "common/errors.h"
#include "rewrite/rewriter.h"

/* Pairs further apart than this stay ordered: the guards (one per unordered pair) stay linear in
 * the segment's length, and ops that far apart gain little from overlapping. */
#define PARALLEL_SPAN 64
/* Longer segments are left in order: the plan's bookkeeping of pairs is quadratic in them
 * (CUFOLD_SEGMENT defaults to 512). */
#define PARALLEL_MAX_OPS 4096

/* Whether the whole list is one stream's kernels, copies and memsets (pure). */
static bool one_stream(const struct rw_rewriter *rw)
{
	return rw_count(rw) >= 2 && rw_plain_between(rw, 0, rw_count(rw)) &&
	       rw_node_at(rw, 0)->op.kind <= CAP_OP_MEMSET;
}

static bool parallel_match(const struct rw_rewriter *rw, uint32_t i)
{
	uint32_t n = rw_count(rw);

	if (i != 0 || n > PARALLEL_MAX_OPS || rw_any_unordered(rw) || !one_stream(rw))
		return false;
	/* worth it only when some pair can be left unordered */
	for (uint32_t k = 1; k < n; k++)
		for (uint32_t j = k > PARALLEL_SPAN ? k - PARALLEL_SPAN : 0; j < k; j++)
			if (rw_need(rw, NULL, RW_G_INDEPENDENT, j, k) == 0)
				return true;
	return false;
}

static int parallel_apply(struct rw_rewriter *rw, uint32_t i)
{
	uint32_t n = rw_count(rw);
	int rc = 0;

	(void)i;
	for (uint32_t k = 1; k < n && rc == 0; k++) {
		for (uint32_t j = k > PARALLEL_SPAN ? k - PARALLEL_SPAN : 0; j < k && rc == 0; j++) {
			if (rw_need(rw, NULL, RW_G_INDEPENDENT, j, k) != 0)
				continue;
			rc = rw_need(rw, rw, RW_G_INDEPENDENT, j, k);
			if (rc == 0)
				rc = rw_unorder(rw, j, k);
		}
	}
	return rc;
}

const struct rw_rule rw_rule_parallel = {
	.name = "parallel",
	.benefit = 0,
	.level = 2,
	.match = parallel_match,
	.apply = parallel_apply,
};
RW_RULE_REGISTER(parallel);
