/* copy_chain.c - rule: a copy of a copy reads from the original instead. rewrite layer.
 *
 *   before:  C1  copy A   -> B        n bytes   (stream s)
 *            X1 .. Xm  kernels, copies, memsets on s writing nothing of A or B
 *            C2  copy B+o -> C        m bytes   (B+o .. B+o+m inside B)
 *   after:   C1  copy A   -> B                  (unchanged: B may be read later)
 *            X1 .. Xm
 *            C2' copy A+o -> C        m bytes   (a chain node: no longer waits on B's bytes)
 *
 * C1 stays: B is live unless overwritten before any read, and dead-write drops C1 when it is
 * (the pair then costs one copy instead of two).
 *
 * Safe when (each a guard checked on every launch, on the bindings of that launch):
 *  - C1 and C2 are asynchronous 1-D device-to-device copies in linear memory (linear_dtod);
 *  - C2 reads inside what C1 wrote (within), so B+o.. holds A+o.. when C2 runs;
 *  - C1's source misses its destination (disjoint), so A still holds those bytes after C1;
 *  - X1 .. Xm write nothing of A or B (unwritten), so A+o.. is unchanged when C2' reads it;
 *  - C misses A and B (misses), so C2' does not overlap itself nor change A before reading;
 *  - C1, the Xi and C2 are one stream's consecutive kernels, copies and memsets in the window
 *    (checked once: the shape fixes it).
 *
 * Why it pays: with dead-write, a copy through a scratch buffer costs one copy instead of two;
 * alone, C2' no longer depends on C1, so the two can run side by side. */
#include "common/errors.h"
#include "rewrite/rewriter.h"

#define CHAIN_SCAN 64 /* nodes looked ahead for the second copy */

static bool chain_copy(const struct rw_rewriter *rw, uint32_t i)
{
	return rw_is_plain(rw, i) && rw_node_at(rw, i)->op.kind == CAP_OP_MEMCPY &&
	       rw_need(rw, NULL, RW_G_LINEAR_DTOD, i, i) == 0;
}

static int chain_conditions(const struct rw_rewriter *rw, struct rw_rewriter *rec, uint32_t i, uint32_t j)
{
	int rc = rw_need(rw, rec, RW_G_LINEAR_DTOD, i, i);

	if (rc == 0)
		rc = rw_need(rw, rec, RW_G_LINEAR_DTOD, j, j);
	if (rc == 0)
		rc = rw_need(rw, rec, RW_G_WITHIN, i, j);
	if (rc == 0)
		rc = rw_need(rw, rec, RW_G_DISJOINT, i, i);
	if (rc == 0)
		rc = rw_need(rw, rec, RW_G_MISSES, i, j);
	for (uint32_t k = i + 1; k < j && rc == 0; k++)
		rc = rw_need(rw, rec, RW_G_UNWRITTEN, i, k);
	return rc;
}

/* The copy reading what copy i wrote, or 0 (pure). */
static uint32_t chain_find(const struct rw_rewriter *rw, uint32_t i)
{
	uint32_t last, stop;

	if (!chain_copy(rw, i) || rw_need(rw, NULL, RW_G_DISJOINT, i, i) != 0 || i + 1 >= rw_count(rw))
		return 0;
	last = rw_count(rw) - 1 < i + CHAIN_SCAN ? rw_count(rw) - 1 : i + CHAIN_SCAN;
	/* the first node that writes A or B, found in one sweep */
	stop = rw_first_failing(rw, RW_G_UNWRITTEN, i, last);
	/* the second copy is looked for up to that node (something writes A or B first: the bytes
	 * C2 reads are not A's), all on one stream: plainness only grows shorter with j, so it is
	 * asked once, of the second copy */
	for (uint32_t j = i + 1; j <= stop && j <= last; j++) {
		if (chain_copy(rw, j) && rw_need(rw, NULL, RW_G_WITHIN, i, j) == 0)
			return rw_plain_between(rw, i, j + 1) && chain_conditions(rw, NULL, i, j) == 0 ? j : 0;
	}
	return 0;
}

static bool chain_match(const struct rw_rewriter *rw, uint32_t i)
{
	return chain_find(rw, i) != 0;
}

static int chain_apply(struct rw_rewriter *rw, uint32_t i)
{
	uint32_t j = chain_find(rw, i);
	int rc;

	if (!j)
		return -CF_EINVAL;
	rc = chain_conditions(rw, rw, i, j);
	return rc ? rc : rw_replace(rw, j, 1, RW_NODE_CHAIN, rw_node_at(rw, i)->orig[0], "copy-chain");
}

const struct rw_rule rw_rule_copy_chain = {
	.name = "copy-chain",
	.benefit = 12,
	.level = 1,
	.match = chain_match,
	.apply = chain_apply,
	.reach = CHAIN_SCAN + 1, /* match reads i and the CHAIN_SCAN nodes after it */
	.reads_tracked = true, /* through the noting accessors only: up to the first node in the way */
};
RW_RULE_REGISTER(copy_chain);
