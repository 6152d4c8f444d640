/* duplicate.c - rule: the same pure op issued again, with nothing in between writing what it
 * reads or writes, is dropped. rewrite layer.
 *
 *   before:  X          a kernel (card: pure), a copy or a memset   (stream s)
 *            Y1 .. Ym   kernels, copies, memsets on s writing nothing X reads or writes
 *            X'         X again: the same entry point, stream and arguments
 *   after:   X, Y1 .. Ym                        (X' is not submitted)
 *
 * Safe when (each a guard checked on every launch, on the bindings of that launch):
 *  - X is pure (pure: a memset; a copy whose source misses its destination; a kernel whose card
 *    says `pure`, whose access set is complete and whose writes miss its reads), so run again
 *    on the same inputs it writes the same bytes and does nothing else;
 *  - X' is X with the same bindings (same_op);
 *  - Y1 .. Ym write nothing X reads or writes (unwritten), so X' would find the inputs X found
 *    and write over outputs that still hold what X wrote;
 *  - X, the Yi and X' are one stream's consecutive kernels, copies and memsets in the window
 *    (checked once: the shape fixes it).
 *
 * Why it pays: a launch or copy that changes no byte disappears (the repeated zeroing of a
 * buffer, a recomputed mask, a copy done twice). */
#include "common/errors.h"
#include "rewrite/rewriter.h"

#define DUP_SCAN 64 /* nodes looked ahead for the repeat */

static int dup_conditions(const struct rw_rewriter *rw, struct rw_rewriter *rec, uint32_t i, uint32_t j)
{
	int rc = rw_need(rw, rec, RW_G_PURE, i, i);

	if (rc == 0)
		rc = rw_need(rw, rec, RW_G_SAME_OP, i, j);
	for (uint32_t k = i + 1; k < j && rc == 0; k++)
		rc = rw_need(rw, rec, RW_G_UNWRITTEN, i, k);
	return rc;
}

/* The node repeating node i, or 0 (pure). */
static uint32_t dup_find(const struct rw_rewriter *rw, uint32_t i)
{
	const struct rw_node *x = rw_node_at(rw, i);
	uint32_t last, j;

	if (!x || !rw_is_plain(rw, i) || rw_need(rw, NULL, RW_G_PURE, i, i) != 0 || i + 1 >= rw_count(rw))
		return 0;
	last = rw_count(rw) - 1 < i + DUP_SCAN ? rw_count(rw) - 1 : i + DUP_SCAN;
	/* the first candidate repeat, by its key and bindings first (a compare a node, over the
	 * list itself; rw_node_at on the last node looked at notes how far the scan read) */
	for (j = i + 1; j <= last; j++) {
		const struct rw_node *y = &rw_nodes(rw)[j];

		if (y->op.key == x->op.key && y->op.bind == x->op.bind && rw_is_plain(rw, j) &&
		    rw_need(rw, NULL, RW_G_SAME_OP, i, j) == 0)
			break;
	}
	(void)rw_node_at(rw, j <= last ? j : last);
	/* none, or something before it writes what X touches (X' would not repeat X; a later
	 * candidate would be behind that node too): found in one sweep up to it. All on X's
	 * stream: plainness only grows shorter with j, so it is asked once, of the repeat */
	if (j > last || rw_first_failing(rw, RW_G_UNWRITTEN, i, j - 1) < j)
		return 0;
	return rw_plain_between(rw, i, j + 1) && dup_conditions(rw, NULL, i, j) == 0 ? j : 0;
}

static bool dup_match(const struct rw_rewriter *rw, uint32_t i)
{
	return dup_find(rw, i) != 0;
}

static int dup_apply(struct rw_rewriter *rw, uint32_t i)
{
	uint32_t j = dup_find(rw, i);
	int rc;

	if (!j)
		return -CF_EINVAL;
	rc = dup_conditions(rw, rw, i, j);
	return rc ? rc : rw_erase(rw, j);
}

const struct rw_rule rw_rule_duplicate = {
	.name = "duplicate",
	.benefit = 30,
	.level = 1,
	.match = dup_match,
	.apply = dup_apply,
	.reach = DUP_SCAN + 1, /* match reads i and the DUP_SCAN nodes after it */
	.reads_tracked = true, /* through the noting accessors only: up to the first node in the way */
};
RW_RULE_REGISTER(duplicate);
