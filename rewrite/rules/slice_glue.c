/* slice_glue.c - rule: copies that glue back the slices of a buffer become one copy from that
 * buffer. rewrite layer.
 *
 *   before:  copy  A+o_1     -> piece_1   n_1 bytes   (stream s)     the slice copies P_1..P_k
 *            ...
 *            copy  A+o_k     -> piece_k   n_k bytes   o_{i+1} = o_i + n_i
 *            copy  piece_1   -> C+e_1     n_1 bytes                  the glue copies G_1..G_k
 *            ...
 *            copy  piece_k   -> C+e_k     n_k bytes   e_{i+1} = e_i + n_i
 *   after:   P_1 .. P_k unchanged (the pieces may be read after the window: no liveness claim)
 *            copy  A+o_1     -> C+e_1     n_1 + .. + n_k bytes      (where G_1 was)
 *
 * Safe when (each a guard checked on every launch, on the original ops' bindings):
 *  - all 2k are asynchronous 1-D device-to-device copies in linear memory (linear_dtod) on one
 *    stream (same_stream), consecutive in the window and each waiting for nothing its
 *    predecessor does not (trace graph, checked once: the shape fixes it), so the ops from P_1 to
 *    G_k are exactly these copies;
 *  - A's slices abut in order (src_abuts), C's destinations abut in order (dst_abuts), and G_i
 *    reads exactly what P_i wrote (forwards: src G_i == dst P_i, same bytes), so C+e_1.. gets
 *    A+o_1.. byte for byte;
 *  - no piece overlaps A or another piece (misses(P_s, P_t)): else a later slice copy would
 *    change A or a piece before the one copy (now reading A after every P) reads it;
 *  - C overlaps neither A nor any piece (misses(P_s, G_t)): else a glue copy would change what
 *    a later one reads, and the one copy would overlap itself.
 *
 * Why it pays: k glue copies become one (each copy is a copy-engine launch and a graph node),
 * the one copy runs nearer the bandwidth peak, and it no longer waits on the pieces. */
#include "rewrite/rewriter.h"

#define GLUE_MAX 64 /* longest run of slices considered (guards grow as k squared) */

/* Whether node j is one original 1-D device-to-device copy. */
static const struct cap_op *glue_copy_at(const struct rw_rewriter *rw, uint32_t j)
{
	const struct rw_node *x = rw_node_at(rw, j);

	if (!x || x->kind != RW_NODE_OP || x->norig != 1 || x->op.kind != CAP_OP_MEMCPY)
		return NULL;
	return rw_op_is_linear_dtod(rw_orig(rw, x->orig[0])) ? rw_orig(rw, x->orig[0]) : NULL;
}

static uint32_t glue_orig(const struct rw_rewriter *rw, uint32_t j)
{
	return rw_node_at(rw, j)->orig[0];
}

/* One guard: evaluated on the window as captured (rec NULL), or recorded into rec. */
static int glue_guard(const struct rw_rewriter *rw, struct rw_rewriter *rec, enum rw_guard_kind kind, uint32_t a,
		      uint32_t b)
{
	if (rec)
		return rw_guard(rec, kind, a, b);
	/* misses(a, a) differs from misses(a, b): keep the identity of the indices */
	return rw_cond_holds(kind, rw_orig(rw, a), rw_orig(rw, b), a == b) ? 0 : -1;
}

/* Every condition the rewrite of the 2k nodes from i relies on: 0 when all hold (rec NULL) or
 * were recorded (rec), else nonzero. */
static int glue_conditions(const struct rw_rewriter *rw, struct rw_rewriter *rec, uint32_t i, uint32_t k)
{
	uint32_t p0 = glue_orig(rw, i);
	int rc = 0;

	for (uint32_t t = 0; t < 2 * k && rc == 0; t++) {
		uint32_t o = glue_orig(rw, i + t);

		rc = glue_guard(rw, rec, RW_G_LINEAR_DTOD, o, o);
		if (rc == 0 && t > 0)
			rc = glue_guard(rw, rec, RW_G_SAME_STREAM, p0, o);
	}
	for (uint32_t t = 0; t < k && rc == 0; t++) {
		uint32_t pt = glue_orig(rw, i + t), gt = glue_orig(rw, i + k + t);

		rc = glue_guard(rw, rec, RW_G_FORWARDS, pt, gt);
		if (rc == 0 && t + 1 < k)
			rc = glue_guard(rw, rec, RW_G_SRC_ABUTS, pt, glue_orig(rw, i + t + 1));
		if (rc == 0 && t + 1 < k)
			rc = glue_guard(rw, rec, RW_G_DST_ABUTS, gt, glue_orig(rw, i + k + t + 1));
	}
	for (uint32_t s = 0; s < k && rc == 0; s++) {
		uint32_t ps = glue_orig(rw, i + s);

		for (uint32_t t = 0; t < k && rc == 0; t++) {
			rc = glue_guard(rw, rec, RW_G_MISSES, ps, glue_orig(rw, i + t));
			if (rc == 0)
				rc = glue_guard(rw, rec, RW_G_MISSES, ps, glue_orig(rw, i + k + t));
		}
	}
	return rc;
}

/* The number of slices k of a slice-glue pattern starting at node i, or 0. Pure. */
static uint32_t glue_find(const struct rw_rewriter *rw, uint32_t i)
{
	const struct cap_op *p1 = glue_copy_at(rw, i), *c;
	uint32_t k = 0;

	if (!p1)
		return 0;
	/* G_1 is the first later copy reading what P_1 wrote; every node before it must be a slice */
	for (uint32_t j = i + 1; j < rw_count(rw) && j - i <= GLUE_MAX && !k; j++) {
		c = glue_copy_at(rw, j);
		if (!c)
			return 0;
		if (c->u.memcpy.src_first == p1->u.memcpy.dst_first)
			k = j - i;
	}
	/* one slice gains nothing (the list would not get shorter) */
	if (k < 2 || i + 2 * k > rw_count(rw))
		return 0;
	for (uint32_t t = 1; t < 2 * k; t++)
		if (!glue_copy_at(rw, i + t) || !rw_orig_follows(rw, glue_orig(rw, i + t - 1), glue_orig(rw, i + t)))
			return 0;
	return glue_conditions(rw, NULL, i, k) == 0 ? k : 0;
}

static bool glue_match(const struct rw_rewriter *rw, uint32_t i)
{
	return glue_find(rw, i) != 0;
}

static int glue_apply(struct rw_rewriter *rw, uint32_t i)
{
	uint32_t k = glue_find(rw, i);
	int rc;

	if (!k)
		return 0;
	rc = glue_conditions(rw, rw, i, k);
	if (rc != 0)
		return rc;
	/* the glue copies become one copy reading where the first slice copy read */
	return rw_replace(rw, i + k, k, RW_NODE_FORWARD, glue_orig(rw, i), "slice-glue");
}

const struct rw_rule rw_rule_slice_glue = {
	.name = "slice-glue",
	.benefit = 20,
	.level = 1,
	.match = glue_match,
	.apply = glue_apply,
	.reach = 2 * GLUE_MAX, /* match reads the 2k copies from i, k <= GLUE_MAX */
};
RW_RULE_REGISTER(slice_glue);

