/* dead_write.c - rule: a copy or memset whose every byte is overwritten later in the window
 * before anything reads it is dropped. rewrite layer.
 *
 *   before:  W   copy S -> D  (or memset D)      n bytes   (stream s)
 *            X1 .. Xm   kernels, copies, memsets on s that read nothing of [D, D+n)
 *            Y   surely writes all of [D, D+n), reading none of it   (stream s)
 *   after:   X1 .. Xm, Y                          (W is not submitted)
 *
 * Liveness: a buffer is live unless it is overwritten in the window before any read. Here
 * W's bytes are overwritten by Y and read by nobody in between, so nothing can ever see them:
 * the window after the rewrite leaves every byte of memory as before.
 *
 * Safe when (each a guard checked on every launch, on the bindings of that launch):
 *  - W is an asynchronous 1-D device-to-device copy in linear memory (linear_dtod) or an
 *    asynchronous 1-D memset (set_1d): its only effect is writing [D, D+n);
 *  - Y covers W (covers: Y is a 1-D copy or memset whose destination holds [D, D+n));
 *  - X1 .. Xm and Y read nothing W writes (unread; an op whose effects are unknown - a kernel
 *    without a card, say - fails it);
 *  - W, X1 .. Xm and Y are one stream's consecutive kernels, copies and memsets in the window
 *    (checked once: the shape fixes it), so no other stream or host callback can read D between
 *    them. (An event record between them ends the search: a waiting stream could read D.)
 *
 * Why it pays: a whole copy or memset (a copy-engine launch and a graph node) disappears; with
 * copy-chain it removes intermediate copies, with slice-glue the slices nobody reads again. */
#include "common/errors.h"
#include "rewrite/rewriter.h"

#define DEAD_SCAN 64 /* nodes looked ahead for the overwrite */

/* Whether node i is a copy or memset whose only effect is a write (checked on the window). */
static bool dead_candidate(const struct rw_rewriter *rw, uint32_t i)
{
	const struct rw_node *w = rw_node_at(rw, i);

	if (!w)
		return false;
	if (w->op.kind == CAP_OP_MEMCPY)
		return rw_need(rw, NULL, RW_G_LINEAR_DTOD, i, i) == 0;
	if (w->op.kind == CAP_OP_MEMSET)
		return rw_need(rw, NULL, RW_G_SET_1D, i, i) == 0;
	return false;
}

/* Every condition dropping node i relies on, with j its overwrite: 0 when all hold (rec NULL)
 * or were recorded (rec). */
static int dead_conditions(const struct rw_rewriter *rw, struct rw_rewriter *rec, uint32_t i, uint32_t j)
{
	enum rw_guard_kind self = rw_node_at(rw, i)->op.kind == CAP_OP_MEMCPY ? RW_G_LINEAR_DTOD : RW_G_SET_1D;
	int rc = rw_need(rw, rec, self, i, i);

	if (rc == 0)
		rc = rw_need(rw, rec, RW_G_COVERS, i, j);
	for (uint32_t k = i + 1; k <= j && rc == 0; k++)
		rc = rw_need(rw, rec, RW_G_UNREAD, i, k);
	return rc;
}

/* The node that overwrites node i before any read, or 0 (pure). */
static uint32_t dead_find(const struct rw_rewriter *rw, uint32_t i)
{
	uint32_t last, cover;

	if (!dead_candidate(rw, i) || i + 1 >= rw_count(rw))
		return 0;
	last = rw_count(rw) - 1 < i + DEAD_SCAN ? rw_count(rw) - 1 : i + DEAD_SCAN;
	/* the first node that overwrites all the bytes (by its bounds, cheaply), then whether any
	 * node up to it, itself included, may read them (one sweep): an overwrite after a read is
	 * no use, and so is any later one */
	cover = rw_first_holding(rw, RW_G_COVERS, i, last);
	if (cover > last || rw_first_failing(rw, RW_G_UNREAD, i, cover) <= cover)
		return 0;
	/* nothing reads them before the overwrite, all on one stream (else: give up) */
	if (!rw_plain_between(rw, i, cover + 1))
		return 0;
	return dead_conditions(rw, NULL, i, cover) == 0 ? cover : 0;
}

static bool dead_match(const struct rw_rewriter *rw, uint32_t i)
{
	return dead_find(rw, i) != 0;
}

static int dead_apply(struct rw_rewriter *rw, uint32_t i)
{
	uint32_t j = dead_find(rw, i);
	int rc;

	if (!j)
		return -CF_EINVAL;
	rc = dead_conditions(rw, rw, i, j);
	return rc ? rc : rw_erase(rw, i);
}

const struct rw_rule rw_rule_dead_write = {
	.name = "dead-write",
	.benefit = 15,
	.level = 1,
	.match = dead_match,
	.apply = dead_apply,
	.reach = DEAD_SCAN + 1, /* match reads i and the DEAD_SCAN nodes after it */
	.reads_tracked = true, /* through the noting accessors only: up to the first node in the way */
};
RW_RULE_REGISTER(dead_write);
