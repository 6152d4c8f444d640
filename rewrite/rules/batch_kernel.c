/* batch_kernel.c - rule (level 1): launches of one kernel over separate data, independent of one
 * another and of everything they are moved past, become one launch of the kernel's
 * multi-instance variant (horizontal fusion; PyTorch's _foreach kernels and Apex's
 * multi_tensor_apply do it by hand for optimizers). rewrite layer.
 *
 *   before:  k<<<g1, b>>>(a1, x1, n1)   (stream s)
 *            other<<<...>>>(...)        (stream s: touches none of what k's launches touch)
 *            record e2 / wait e1        (stream s; e1 recorded on stream t, after u)
 *            u<<<...>>>(...)            (stream t, before e1's record: touches none of it either)
 *            k<<<g2, b>>>(a2, x2, n2)   (stream s)
 *   after:   k_cf_multi<<<g1 + g2, b>>>({ 2, [0, g1], (a1, x1, n1), (a2, x2, n2) })
 *            other, record e2, wait e1, u: as they were
 *
 * The variant (rewrite/variant.c, JIT-compiled from the kernel's PTX) gives each instance its
 * own parameters, its own %ctaid.x and %nctaid.x: inside the launch an instance runs exactly as
 * its launch did. What is not the same is timing: the members run at once, where the first one
 * stood, before the ops they were moved past.
 *
 * Grouping follows the window's dependence graph, not adjacency. A later member m, on the first
 * member's stream s or another, depends (eager execution) on the ops its ancestry holds: every
 * earlier op of its stream, and through each event wait among them, the record it waits for and
 * that record's own ancestry, on whatever stream (as a per-stream prefix of the list: the
 * ancestry of an op is closed under stream order; a batch kernel node is in the order of each of
 * its members' streams). Moved to where the first member stood, m keeps the ancestry the first
 * member has and loses the rest: those are the ops m "passes", with every op issued between the
 * first member and m, which nothing may order against m (a race the program has stays in the
 * order it was issued in). So (each a guard checked on every launch, on the bindings of that
 * launch):
 *  - independent(x, m) for every member m and every kernel, copy or memset x m passes (the
 *    members before it among them): what one writes the other neither reads nor writes. Effects
 *    come from the kernel's card (written, or derived from its PTX): a kernel whose effects are
 *    unknown or indirect is never independent of anything, so it is never fused, and nothing
 *    that depends on one is moved past it. A chain of launches of one kernel is one member
 *    depending on another: never fused. No member can reach another through any path (that
 *    would be a passed op it depends on), so the merged node makes no cycle.
 * Not guarded, because the template fixes them: the function, grid and block (key fields: the
 * variant needs one block shape and one grid y and z), streams and events (slots name one handle
 * each in every window of the shape). Event records and waits touch no memory: passing a record
 * only makes it wait for more; a wait is followed to its record (the latest one before it in the
 * list) and what that record waits for is passed too. The scan stops at what it cannot follow: a
 * wait whose record is not in the list (its ancestry reaches outside: an earlier segment, another
 * window), an op of another context, an op on s that is not a kernel, copy, memset, record or
 * wait, and, when the list has an op on the legacy stream (implicit synchronization, which this
 * reading does not model), at the first op that is not a kernel, copy or memset of s (members
 * then are on s only).
 *
 * Where the merged node sits, and its dependencies (replay: rewrite/plan.h struct rw_run,
 * replay/segment.c): at the first member's position, on the first member's stream, with the
 * first member's dependencies. The later members' positions have no node; what depended on one
 * of them depends on the merged node and on what that member depended on (segment.c), so its
 * stream's order goes on past it. What a later member waited for that the first did not is not
 * waited for: proved unneeded inside the segment by the guards, and outside it (work before the
 * segment on the streams its ancestry runs on) done before the segment starts only when the
 * segment is one graph launched after joining its streams: segment.c does not split a segment
 * into per-stream graphs when a batch node passes a wait of its stream or has members on
 * several streams.
 *
 * Level 1: the results are the program's own to the bit; only the number of launches changes.
 *
 * Why it pays: k launches of a latency-bound kernel (an optimizer's update per parameter, a
 * tower's layer per feature) become one. */
#include <string.h>

#include "common/errors.h"
#include "rewrite/rewriter.h"
#include "rewrite/variant.h"

#define SCAN_MAX 256u   /* nodes after the first member a match looks at */
#define SLOTS_MAX 64u   /* stream slots the ancestry follows; an op on a later slot stops the scan */
#define PASSED_MAX 512u /* ops a member may pass; more stop the scan */
#define NO_NODE UINT32_MAX

/* What a scan from the first member knows. */
struct scan {
	uint32_t i;                  /* the first member */
	uint16_t slot;               /* its stream slot */
	uint32_t reach[SLOTS_MAX];   /* per slot: the nodes of that slot before reach[slot] are
				      * ancestors of the point just after the last node of s scanned */
	uint32_t passed[PASSED_MAX]; /* the ancestors the first member does not have, in the order
				      * found: what a member found now would pass */
	uint32_t npassed;            /* entries */
	uint32_t idx[RW_MULTI_MAX];  /* the members: idx[0] = i */
	uint32_t npass[RW_MULTI_MAX]; /* per member: the passed entries it must be independent of */
	uint32_t n;                  /* members */
};

static inline const struct cap_op *op_at(const struct rw_rewriter *rw, uint32_t k)
{
	return &rw_nodes(rw)[k].op;
}

static bool is_event(const struct cap_op *op)
{
	return op->kind == CAP_OP_EVENT_RECORD || op->kind == CAP_OP_EVENT_WAIT;
}

static bool touches_memory_known_kind(const struct cap_op *op)
{
	return op->kind == CAP_OP_KERNEL || op->kind == CAP_OP_MEMCPY || op->kind == CAP_OP_MEMSET;
}

/* Whether node k is in slot s's stream order: its op's stream, or, for a batch kernel, the stream
 * of any of its members (what followed a member on its stream waits for the merged node). */
static bool on_slot(const struct rw_rewriter *rw, uint32_t k, uint32_t s)
{
	const struct rw_node *nd = &rw_nodes(rw)[k];

	if (nd->op.stream_slot == s)
		return true;
	if (nd->kind != RW_NODE_BATCH_KERNEL)
		return false;
	for (uint32_t m = 1; m < nd->norig; m++)
		if (rw_orig(rw, nd->orig[m])->stream_slot == s)
			return true;
	return false;
}

/* Whether node k, in slot s's order, is an ancestor already through another stream it is in
 * the order of (a batch kernel with members on several streams). */
static bool ancestor_elsewhere(const struct rw_rewriter *rw, const struct scan *sc, uint32_t k, uint32_t s)
{
	const struct rw_node *nd = &rw_nodes(rw)[k];

	if (nd->kind != RW_NODE_BATCH_KERNEL)
		return false;
	for (uint32_t m = 0; m < nd->norig; m++) {
		uint32_t t = rw_orig(rw, nd->orig[m])->stream_slot;

		if (t != s && t < SLOTS_MAX && k < sc->reach[t])
			return true;
	}
	return false;
}

/* The record wait w (node) waits for: the latest record of its event before it, or NO_NODE. */
static uint32_t record_of(const struct rw_rewriter *rw, uint32_t w)
{
	uint16_t ev = op_at(rw, w)->u.event.slot;

	for (uint32_t q = w; q-- > 0;) {
		const struct cap_op *op = op_at(rw, q);

		if (op->kind == CAP_OP_EVENT_RECORD && op->u.event.slot == ev)
			return q;
	}
	return NO_NODE;
}

/* sc->reach: the ancestry of node i (not i itself), read from the list below it. false when an
 * op on a slot past SLOTS_MAX is met (the ancestry is then not known). */
static bool ancestry_make(const struct rw_rewriter *rw, struct scan *sc)
{
	memset(sc->reach, 0, sizeof(sc->reach));
	sc->reach[sc->slot] = sc->i;
	for (uint32_t p = sc->i; p-- > 0;) {
		const struct cap_op *op = op_at(rw, p);
		uint32_t r;

		if (op->stream_slot >= SLOTS_MAX)
			return false;
		if (p >= sc->reach[op->stream_slot] || op->kind != CAP_OP_EVENT_WAIT)
			continue;
		r = record_of(rw, p);
		if (r == NO_NODE)
			continue; /* outside the list: the first member's own dependency, kept */
		if (op_at(rw, r)->stream_slot >= SLOTS_MAX)
			return false;
		if (sc->reach[op_at(rw, r)->stream_slot] < r + 1)
			sc->reach[op_at(rw, r)->stream_slot] = r + 1;
	}
	return true;
}

static bool passed_add(struct scan *sc, uint32_t k)
{
	if (sc->npassed == PASSED_MAX)
		return false;
	sc->passed[sc->npassed++] = k;
	return true;
}

/* Add the ancestry of record node rec (itself included) beyond what sc->reach holds to the
 * passed ops. false when it cannot be followed: a wait whose record is not in the list, an op
 * that is neither an event op nor a kernel, copy or memset, an unknown slot, too many. */
static bool ancestry_extend(const struct rw_rewriter *rw, struct scan *sc, uint32_t rec)
{
	uint32_t stack[32], n = 0;

	stack[n++] = rec;
	while (n) {
		uint32_t top = stack[--n], s = op_at(rw, top)->stream_slot, lo;

		if (s >= SLOTS_MAX)
			return false;
		lo = sc->reach[s];
		if (top < lo)
			continue;
		sc->reach[s] = top + 1;
		for (uint32_t q = top + 1; q-- > lo;) {
			const struct cap_op *op = op_at(rw, q);

			if (op->kind == CAP_OP_EVENT_RECORD || !on_slot(rw, q, s))
				continue;
			if (op->ctx != op_at(rw, sc->i)->ctx)
				return false;
			if (op->kind == CAP_OP_EVENT_WAIT) {
				uint32_t r = record_of(rw, q);

				if (r == NO_NODE || n == sizeof(stack) / sizeof(stack[0]))
					return false;
				stack[n++] = r;
			} else if (!touches_memory_known_kind(op)) {
				return false;
			} else if (q < sc->i && !ancestor_elsewhere(rw, sc, q, s) && !passed_add(sc, q)) {
				return false; /* (those after the first member the scan itself passed) */
			}
		}
	}
	return true;
}

/* Whether node j may be an instance beside node i: an untouched launch of i's shape. */
static inline bool same_shape(const struct rw_rewriter *rw, uint32_t i, uint32_t j)
{
	const struct cap_op *a = op_at(rw, i), *b = op_at(rw, j);

	/* the kernel first, inline: most nodes a scan meets are other kernels */
	return b->kind == CAP_OP_KERNEL && b->u.kernel.info == a->u.kernel.info && rw_is_plain(rw, j) &&
	       rw_multi_fits(a, b);
}

/* Whether node j is independent of the passed ops from..npassed (event ops touch no memory).
 * The latest first: a launch most often depends on what came just before it. */
static bool independent_of_passed_from(const struct rw_rewriter *rw, const struct scan *sc, uint32_t from,
				       uint32_t j)
{
	for (uint32_t k = sc->npassed; k-- > from;)
		if (!is_event(op_at(rw, sc->passed[k])) && rw_need(rw, NULL, RW_G_INDEPENDENT, sc->passed[k], j) != 0)
			return false;
	return true;
}

static bool independent_of_passed(const struct rw_rewriter *rw, const struct scan *sc, uint32_t j)
{
	return independent_of_passed_from(rw, sc, 0, j);
}

/* Make sc->reach the first member's ancestry, once (most scans never read below the first
 * member); *ancestry says whether it is. false when it cannot be known. */
static bool ancestry_ready(const struct rw_rewriter *rw, struct scan *sc, bool *ancestry)
{
	uint32_t keep = sc->reach[sc->slot];

	if (*ancestry)
		return true;
	if (!ancestry_make(rw, sc))
		return false;
	sc->reach[sc->slot] = keep;
	*ancestry = true;
	return true;
}

/* Step the scan over node j, which is not a kernel, copy or memset of the members' stream:
 * false when the scan must stop there. A kernel, copy or memset of another stream is passed
 * whether or not a member depends on it: what the program does not order, a race, stays in the
 * order it was issued in. */
static bool step_other(const struct rw_rewriter *rw, struct scan *sc, uint32_t j, bool *ancestry)
{
	const struct cap_op *op = op_at(rw, j);
	uint32_t r;

	if (op->ctx != op_at(rw, sc->i)->ctx || op->stream_slot >= SLOTS_MAX)
		return false;
	if (touches_memory_known_kind(op))
		return passed_add(sc, j);
	if (!is_event(op))
		return false;
	if (op->stream_slot != sc->slot)
		return true; /* reached through a later wait, if at all (ancestry_extend) */
	sc->reach[sc->slot] = j + 1;
	if (op->kind == CAP_OP_EVENT_RECORD)
		return true;
	r = record_of(rw, j);
	return ancestry_ready(rw, sc, ancestry) && r != NO_NODE && ancestry_extend(rw, sc, r);
}

/* Whether node j, a launch of the first member's shape on another stream, may be a member: its
 * own stream's earlier ops and what their waits bring in, as far as the first member does not
 * have them, are passed too (those before the first member are added to sc's passed ops), and it
 * is independent of every op passed. On a no, sc is as it was. */
static bool cross_member(const struct rw_rewriter *rw, struct scan *sc, uint32_t j, bool *ancestry)
{
	uint32_t keep_n = sc->npassed, keep_reach[SLOTS_MAX];
	bool ok;

	/* what it passes in any case first: most candidates fail there, without a walk below */
	if (!independent_of_passed(rw, sc, j) || !ancestry_ready(rw, sc, ancestry))
		return false;
	memcpy(keep_reach, sc->reach, sizeof(keep_reach));
	/* j's own stream up to j (j itself and its stream's ops after the first member are passed
	 * by the scan already) */
	ok = ancestry_extend(rw, sc, j) && independent_of_passed_from(rw, sc, keep_n, j);
	if (!ok) {
		sc->npassed = keep_n;
		memcpy(sc->reach, keep_reach, sizeof(keep_reach));
	}
	return ok;
}

/* Whether node k may be a member beside the first one, x, as far as its shape and stream say. */
static inline bool candidate_at(const struct rw_rewriter *rw, const struct scan *sc, const struct cap_op *x,
				uint32_t k)
{
	const struct cap_op *op = op_at(rw, k);

	if (op->kind != CAP_OP_KERNEL || op->u.kernel.info != x->u.kernel.info)
		return false;
	return (op->stream_slot == sc->slot || !rw_has_legacy(rw)) && same_shape(rw, sc->i, k);
}

/* The members of a fusion starting at node i (sc->idx, sc->n: 1 when nothing to fuse): i, then
 * every later node of i's shape, at most SCAN_MAX on, that is independent of every op it would
 * pass (the file's header), and for each the passed ops it relies on. */
static void gather(const struct rw_rewriter *rw, uint32_t i, struct scan *sc)
{
	const struct cap_op *x = op_at(rw, i);
	uint32_t last = i + SCAN_MAX < rw_count(rw) ? i + SCAN_MAX : rw_count(rw) - 1;
	uint32_t most;
	bool ancestry = false, cross = false, cross_known = false;

	sc->i = sc->idx[0] = i;
	sc->n = 1;
	sc->npass[0] = 0;
	sc->npassed = 0;
	sc->slot = x->stream_slot;
	if (!rw_is_plain(rw, i) || x->kind != CAP_OP_KERNEL || x->u.kernel.attrs || x->stream_slot >= SLOTS_MAX)
		return;
	/* the members' parameter blocks must fit the variant's table (CuPy's three CArrays and a
	 * CIndexer, 120 bytes: 30 of them): a larger group fails to build, and the whole window's
	 * rewrite with it */
	most = rw_variant_capacity(x->u.kernel.param_size);
	/* the last candidate: most launches have none left, and a scan past it finds nothing */
	while (last > i && !candidate_at(rw, sc, x, last))
		last--;
	if (last == i)
		return;
	memset(sc->reach, 0, sizeof(sc->reach));
	(void)passed_add(sc, i);
	sc->reach[sc->slot] = i + 1;
	for (uint32_t j = i + 1; j <= last && sc->n < most; j++) {
		const struct cap_op *y = op_at(rw, j);

		if (y->stream_slot != sc->slot || !touches_memory_known_kind(y) || y->ctx != x->ctx) {
			/* an op that is not a kernel, copy or memset of the members' stream */
			if (!cross_known) {
				cross = !rw_has_legacy(rw);
				cross_known = true;
			}
			if (!cross)
				break;
			if (y->ctx == x->ctx && y->stream_slot < SLOTS_MAX && same_shape(rw, i, j) &&
			    cross_member(rw, sc, j, &ancestry)) {
				sc->npass[sc->n] = sc->npassed;
				sc->idx[sc->n++] = j;
			}
			if (!step_other(rw, sc, j, &ancestry))
				break;
			continue;
		}
		if (same_shape(rw, i, j) && independent_of_passed(rw, sc, j)) {
			sc->npass[sc->n] = sc->npassed;
			sc->idx[sc->n++] = j;
		}
		if (!passed_add(sc, j))
			break;
		sc->reach[sc->slot] = j + 1;
	}
}

static bool bk_match(const struct rw_rewriter *rw, uint32_t i)
{
	struct scan sc;
	const struct rw_node *x = rw_node_at(rw, i);

	if (!x || !rw_is_plain(rw, i) || x->op.kind != CAP_OP_KERNEL)
		return false;
	gather(rw, i, &sc);
	return sc.n >= 2 && rw_can_multi(rw, i);
}

static int bk_apply(struct rw_rewriter *rw, uint32_t i)
{
	struct scan sc;
	int rc = 0;

	gather(rw, i, &sc);
	if (sc.n < 2)
		return -CF_EINVAL;
	for (uint32_t m = 1; m < sc.n && !rc; m++)
		for (uint32_t k = 0; k < sc.npass[m] && !rc; k++)
			if (!is_event(&rw_node_at(rw, sc.passed[k])->op))
				rc = rw_need(rw, rw, RW_G_INDEPENDENT, sc.passed[k], sc.idx[m]);
	return rc ? rc : rw_gather(rw, sc.idx, sc.n, RW_NODE_BATCH_KERNEL, "batch-kernel");
}

const struct rw_rule rw_rule_batch_kernel = {
	.name = "batch-kernel",
	.benefit = 4,
	.level = 1,
	.match = bk_match,
	.apply = bk_apply,
	.reach = SCAN_MAX + 1, /* match reads i .. i + SCAN_MAX, */
	.reads_before = true,  /* and below i: a passed wait's record and its ancestry */
};
RW_RULE_REGISTER(batch_kernel);
