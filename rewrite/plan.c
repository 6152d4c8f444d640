/* plan.c - rewrite plans: checking guards against the bindings of a launch, deriving the op a
 * plan node submits, and the one-line form golden tests compare. rewrite layer. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "common/errors.h"
#include "common/log.h"
#include "rewrite/effects.h"
#include "rewrite/plan.h"
#include "rewrite/rewriter.h"

static const char *const guard_names[] = {
#define RW_GUARD_NAME_(name, label) label,
	RW_GUARD_LIST(RW_GUARD_NAME_)
#undef RW_GUARD_NAME_
};

static const char *const node_names[] = {
#define RW_NODE_NAME_(name, label) label,
	RW_NODE_LIST(RW_NODE_NAME_)
#undef RW_NODE_NAME_
};

const char *rw_guard_name(enum rw_guard_kind k)
{
	return (unsigned)k < RW_G_COUNT ? guard_names[k] : "?";
}

const char *rw_node_kind_name(enum rw_node_kind k)
{
	return (unsigned)k < RW_NODE_KIND_COUNT ? node_names[k] : "?";
}

/* Whether [a0, a0+an) and [b0, b0+bn) overlap (no wrap-around: both are real address ranges). */
static bool ranges_overlap(uint64_t a0, uint64_t an, uint64_t b0, uint64_t bn)
{
	return an && bn && a0 < b0 + bn && b0 < a0 + an;
}

/* ------------------------------------------------------------------ conditions on effects */


static struct rw_eff_view view_of(const struct rw_effects *e)
{
	return (struct rw_eff_view){ e->all, e->r, e->w, e->nr, e->nw };
}

static bool covers_eff(const struct rw_eff_view *ea, const struct cap_op *b)
{
	struct rw_range r;

	if (!rw_op_sure_write(b, &r) || ea->all)
		return false;
	for (uint32_t i = 0; i < ea->nw; i++)
		if (ea->w[i].bytes && (ea->w[i].addr < r.addr || ea->w[i].addr + ea->w[i].bytes > r.addr + r.bytes))
			return false;
	return true;
}

/* b reads nothing a writes (reads), b writes nothing a touches (writes). */
static bool apart_eff(const struct rw_eff_view *ea, const struct rw_eff_view *eb, bool reads, bool writes)
{
	if (ea->all || eb->all)
		return false;
	for (uint32_t i = 0; i < ea->nw; i++) {
		if (reads && rw_ranges_overlap(eb->r, eb->nr, &ea->w[i]))
			return false;
		if (writes && rw_ranges_overlap(eb->w, eb->nw, &ea->w[i]))
			return false;
	}
	for (uint32_t i = 0; writes && i < ea->nr; i++)
		if (rw_ranges_overlap(eb->w, eb->nw, &ea->r[i]))
			return false;
	return true;
}

static bool cond_covers(const struct cap_op *a, const struct cap_op *b)
{
	struct rw_effects ea;
	struct rw_eff_view va;

	rw_op_effects(a, &ea);
	va = view_of(&ea);
	return covers_eff(&va, b);
}

static bool cond_apart(const struct cap_op *a, const struct cap_op *b, bool reads, bool writes)
{
	struct rw_effects ea, eb;
	struct rw_eff_view va, vb;

	rw_op_effects(a, &ea);
	rw_op_effects(b, &eb);
	va = view_of(&ea);
	vb = view_of(&eb);
	return apart_eff(&va, &vb, reads, writes);
}

int rw_cond_holds_eff(enum rw_guard_kind kind, const struct rw_eff_view *ea, const struct rw_eff_view *eb,
		      const struct cap_op *b)
{
	switch (kind) {
	case RW_G_COVERS:
		return covers_eff(ea, b);
	case RW_G_UNREAD:
		return apart_eff(ea, eb, true, false);
	case RW_G_UNWRITTEN:
		return apart_eff(ea, eb, false, true);
	case RW_G_INDEPENDENT:
		return apart_eff(ea, eb, true, true);
	default:
		return -1;
	}
}

static bool cond_within(const struct cap_op *a, const struct cap_op *b)
{
	if (a->kind != CAP_OP_MEMCPY || b->kind != CAP_OP_MEMCPY)
		return false;
	return b->u.memcpy.src_first >= a->u.memcpy.dst_first &&
	       b->u.memcpy.src_first - a->u.memcpy.dst_first <= a->u.memcpy.dst_span &&
	       b->u.memcpy.src_span <= a->u.memcpy.dst_span - (b->u.memcpy.src_first - a->u.memcpy.dst_first);
}

static bool cond_set_abuts(const struct cap_op *a, const struct cap_op *b)
{
	const struct cap_memset *x = &a->u.memset, *y = &b->u.memset;

	return a->kind == CAP_OP_MEMSET && b->kind == CAP_OP_MEMSET && x->height == 1 && y->height == 1 &&
	       x->elem_size == y->elem_size && x->value == y->value && y->dst == x->dst + rw_set_bytes(a);
}

/* The access set of an elementwise 1-D launch whose grid is derived from its count, else false. */
static bool elem_set(const struct cap_op *op, struct rw_access_set *s)
{
	const struct cap_kernel *k = &op->u.kernel;
	unsigned want = RW_SET_ELEMENTWISE | RW_SET_COVERS | RW_SET_COUNT;

	if (op->kind != CAP_OP_KERNEL || rw_op_kernel_access(op, s) != 0 || (s->flags & want) != want ||
	    (s->flags & (RW_SET_INDIRECT | RW_SET_UNKNOWN_SPAN)) || s->count_param < 0 || s->count <= 0)
		return false;
	if (k->nattrs || k->via_extra || k->grid[1] != 1 || k->grid[2] != 1 || k->block[1] != 1 || k->block[2] != 1 ||
	    !k->block[0])
		return false;
	/* "grid derived from n": exactly the blocks the count needs */
	return (uint64_t)k->grid[0] == ((uint64_t)s->count + k->block[0] - 1) / k->block[0];
}

/* The pointer access of parameter p in s, or NULL. */
static const struct rw_access *elem_ptr(const struct rw_access_set *s, unsigned p)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->acc[i].entry < 0 && s->acc[i].param == p)
			return &s->acc[i];
	return NULL;
}

static bool cond_elem_abuts(const struct cap_op *a, const struct cap_op *b)
{
	const struct cap_kernel *x = &a->u.kernel, *y = &b->u.kernel;
	struct rw_access_set sa, sb;

	if (!elem_set(a, &sa) || !elem_set(b, &sb) || x->func != y->func || x->info != y->info ||
	    x->block[0] != y->block[0] || x->shared_bytes != y->shared_bytes || a->stream != b->stream ||
	    sa.count_param != sb.count_param || sa.n != sb.n)
		return false;
	for (uint32_t p = 0; p < x->info->nparams; p++) {
		const struct rw_access *pa = elem_ptr(&sa, p), *pb = elem_ptr(&sb, p);

		if (pa || pb) {
			/* element i touches element i: the span is count elements of a fixed size */
			if (!pa || !pb || pa->flags != pb->flags || !pa->bytes || pa->bytes % (uint64_t)sa.count ||
			    pb->bytes != pa->bytes / (uint64_t)sa.count * (uint64_t)sb.count ||
			    pb->addr != pa->addr + pa->bytes)
				return false;
		} else if ((int)p != sa.count_param &&
			   memcmp((const char *)x->params + x->info->offset[p], (const char *)y->params + x->info->offset[p],
				  x->info->size[p]) != 0) {
			return false; /* a different scalar */
		}
	}
	return true;
}

static bool cond_elem_safe(const struct cap_op *a, const struct cap_op *b)
{
	struct rw_access_set sa, sb;

	if (!elem_set(a, &sa) || !elem_set(b, &sb) || sa.n != sb.n)
		return false;
	for (unsigned i = 0; i < sa.n; i++) {
		const struct rw_access *p0 = &sa.acc[i], *p1 = elem_ptr(&sb, p0->param);

		if (p0->entry >= 0 || !p1 || p1->addr < p0->addr)
			return false;
		if (!(p0->flags & RW_ACC_WRITE))
			continue; /* read only: checked against each written pointer */
		for (unsigned j = 0; j < sa.n; j++) {
			const struct rw_access *q0 = &sa.acc[j], *q1 = elem_ptr(&sb, q0->param);

			if (j == i || q0->entry >= 0)
				continue;
			if (!q1 || q1->addr < q0->addr)
				return false;
			if (q0->addr == p0->addr && q1->addr == p1->addr && q0->bytes == p0->bytes && q1->bytes == p1->bytes)
				continue; /* the same pointer in every launch: element i meets element i */
			if (ranges_overlap(p0->addr, p1->addr + p1->bytes - p0->addr, q0->addr,
					   q1->addr + q1->bytes - q0->addr))
				return false;
		}
	}
	return true;
}

static bool cond_cat_identity(const struct cap_op *a)
{
	struct rw_access_set s;
	const struct rw_access_table *t;
	uint64_t total = 0, first;

	/* the kernel writes its whole output only when its grid covers it (cards.h: RW_SET_COVERS) */
	if (a->kind != CAP_OP_KERNEL || rw_op_kernel_access(a, &s) != 0 || !(s.flags & RW_SET_CAT) ||
	    !(s.flags & RW_SET_COVERS) || s.cat_out < 0 ||
	    (s.flags & (RW_SET_INDIRECT | RW_SET_UNKNOWN_SPAN)) || !s.ntables || !s.tables[0].n)
		return false;
	t = &s.tables[0];
	first = s.acc[t->first].addr;
	for (uint32_t i = 0; i < t->n; i++) {
		const struct rw_access *e = &s.acc[t->first + i];

		if (e->addr != first + total || (e->flags & RW_ACC_WRITE))
			return false;
		total += e->bytes;
	}
	/* nothing else is written, nothing else read: the kernel is exactly the copy */
	for (unsigned i = 0; i < s.n; i++) {
		bool in_table = i >= t->first && i < (unsigned)t->first + t->n;

		if ((int)i != s.cat_out && !in_table && (s.acc[i].flags & (RW_ACC_READ | RW_ACC_WRITE)))
			return false;
	}
	return total && s.acc[s.cat_out].bytes == total && !ranges_overlap(first, total, s.acc[s.cat_out].addr, total);
}

bool rw_cond_holds(enum rw_guard_kind kind, const struct cap_op *a, const struct cap_op *b, bool same)
{
	switch (kind) {
	case RW_G_SRC_ABUTS:
		return a->kind == CAP_OP_MEMCPY && b->kind == CAP_OP_MEMCPY &&
		       b->u.memcpy.src_first == a->u.memcpy.src_first + a->u.memcpy.bytes;
	case RW_G_DST_ABUTS:
		return a->kind == CAP_OP_MEMCPY && b->kind == CAP_OP_MEMCPY &&
		       b->u.memcpy.dst_first == a->u.memcpy.dst_first + a->u.memcpy.bytes;
	case RW_G_SAME_STREAM:
		return a->stream == b->stream && a->stream_slot == b->stream_slot && a->ctx == b->ctx;
	case RW_G_LINEAR_DTOD:
		return rw_op_is_linear_dtod(a);
	case RW_G_PITCHED_DTOD:
		return rw_op_is_pitched_dtod(a);
	case RW_G_DISJOINT: {
		uint64_t src0, dst0, srcn, dstn;

		if (a->kind != CAP_OP_MEMCPY || b->kind != CAP_OP_MEMCPY)
			return false;
		src0 = a->u.memcpy.src_first;
		dst0 = a->u.memcpy.dst_first;
		/* the ends must not lie before the starts (that would not be a union of abutting pieces) */
		if (b->u.memcpy.src_first < src0 || b->u.memcpy.dst_first < dst0)
			return false;
		srcn = b->u.memcpy.src_first + b->u.memcpy.bytes - src0;
		dstn = b->u.memcpy.dst_first + b->u.memcpy.bytes - dst0;
		return !ranges_overlap(src0, srcn, dst0, dstn);
	}
	case RW_G_FORWARDS:
		return a->kind == CAP_OP_MEMCPY && b->kind == CAP_OP_MEMCPY &&
		       b->u.memcpy.src_first == a->u.memcpy.dst_first && b->u.memcpy.bytes == a->u.memcpy.bytes;
	case RW_G_MISSES:
		if (a->kind != CAP_OP_MEMCPY || b->kind != CAP_OP_MEMCPY)
			return false;
		if (ranges_overlap(a->u.memcpy.src_first, a->u.memcpy.bytes, b->u.memcpy.dst_first, b->u.memcpy.bytes))
			return false;
		return same ||
		       !ranges_overlap(a->u.memcpy.dst_first, a->u.memcpy.bytes, b->u.memcpy.dst_first, b->u.memcpy.bytes);
	case RW_G_SET_1D:
		return rw_op_is_set_1d(a);
	case RW_G_SET_ABUTS:
		return cond_set_abuts(a, b);
	case RW_G_COVERS:
		return cond_covers(a, b);
	case RW_G_UNREAD:
		return cond_apart(a, b, true, false);
	case RW_G_UNWRITTEN:
		return cond_apart(a, b, false, true);
	case RW_G_INDEPENDENT:
		return cond_apart(a, b, true, true);
	case RW_G_SAME_OP:
		return rw_op_same(a, b);
	case RW_G_PURE:
		return rw_op_is_pure(a);
	case RW_G_WITHIN:
		return cond_within(a, b);
	case RW_G_ELEM_ABUTS:
		return cond_elem_abuts(a, b);
	case RW_G_ELEM_SAFE:
		return cond_elem_safe(a, b);
	case RW_G_CAT_IDENTITY:
		return cond_cat_identity(a);
	default:
		return false;
	}
}

/* The op guard side (index, snapshot) stands for: ops[index], or the snapshot's op derived for
 * this check. */
static const struct cap_op *guard_side(const struct rw_plan *p, uint32_t index, int32_t snap,
				       const struct cap_op *const *ops)
{
	if (snap < 0)
		return ops[index];
	return (uint32_t)snap < p->nsnaps ? &p->snap_ops[snap] : NULL;
}

/* inlined: it runs per op of every launch's compare with the remembered passes (run_same_as) */
static inline __attribute__((always_inline)) bool op_same_as(const struct cap_op *d, const struct cap_op *e);

/* Original op index's effects taken from a remembered pass of run r whose op index has the very
 * same bindings (effects are a function of an op's bindings, the allocation map and its card:
 * the premise of the remembered passes, rw_run_guards_hold): CuPy's pool cycles each op's
 * buffers with a short period while the run's bindings as a whole never repeat. Into slot s;
 * false when no pass has them (or out of memory). */
static bool eff_recall(struct rw_plan *p, const struct rw_run *r, uint32_t index, const struct cap_op *op,
		       struct rw_eff_slot *s)
{
	for (int k = 0; k < RW_RUN_SEEN; k++) {
		const struct rw_run_seen *e = &r->seen[k];
		const struct rw_eff_slot *m;
		struct rw_effects x;

		if (!e->gen || !e->eff || !e->eff[index].valid || !op_same_as(op, &e->ops[index]))
			continue;
		m = &e->eff[index];
		x.all = m->all;
		x.nr = m->nr;
		x.nw = m->nw;
		if (x.nr > RW_ACCESS_MAX || x.nw > RW_ACCESS_MAX)
			return false;
		memcpy(x.r, &e->pool[m->r], m->nr * sizeof(x.r[0]));
		memcpy(x.w, &e->pool[m->w], m->nw * sizeof(x.w[0]));
		if (!rw_eff_pool_put(&p->eff_pool, &p->eff_used, &p->eff_cap, &x, &s->r, &s->w))
			return false;
		s->all = x.all;
		s->nr = x.nr;
		s->nw = x.nw;
		s->valid = true;
		return true;
	}
	return false;
}

/* The effects of guard side (index, snap) for this check, worked out once (slot of the cache),
 * or recalled from a remembered pass of run r (may be NULL). false when out of memory (the
 * caller then works them out itself). */
static bool eff_slot(struct rw_plan *p, const struct rw_run *r, uint32_t index, int32_t snap,
		     const struct cap_op *op, const struct cap_op *const *ops, struct rw_eff_view *v)
{
	uint32_t k = snap >= 0 ? p->norig + (uint32_t)snap : index;
	struct rw_eff_slot *s = &p->eff[k];

	if (!s->valid && snap < 0 && r)
		eff_recall(p, r, index, op, s);

	if (!s->valid && snap >= 0 && p->snaps[snap].kind == RW_NODE_BATCH_KERNEL) {
		/* a multi-instance launch touches what its instances touch */
		if (!rw_eff_pool_put_batch(&p->eff_pool, &p->eff_used, &p->eff_cap, ops, p->snaps[snap].orig,
					   p->snaps[snap].norig, s))
			return false;
		s->valid = true;
	}
	if (!s->valid) {
		struct rw_effects e;

		rw_op_effects(op, &e);
		if (!rw_eff_pool_put(&p->eff_pool, &p->eff_used, &p->eff_cap, &e, &s->r, &s->w))
			return false;
		s->all = e.all;
		s->nr = e.nr;
		s->nw = e.nw;
		s->valid = true;
	}
	/* views point into the pool: take them only once every slot of the guard is made */
	*v = (struct rw_eff_view){ s->all, NULL, NULL, s->nr, s->nw };
	return true;
}

static void eff_bind(const struct rw_plan *p, uint32_t index, int32_t snap, struct rw_eff_view *v)
{
	const struct rw_eff_slot *s = &p->eff[snap >= 0 ? p->norig + (uint32_t)snap : index];

	v->r = &p->eff_pool[s->r];
	v->w = &p->eff_pool[s->w];
}

/* A guard on effects, with each side's effects from the plan's cache; -1 when the cache cannot
 * serve (out of memory, or a kind that needs more than effects). */
static int guard_on_effects(struct rw_plan *p, const struct rw_run *r, const struct rw_guard *g,
			    const struct cap_op *a, const struct cap_op *b, const struct cap_op *const *ops)
{
	struct rw_eff_view va, vb;

	if (!p->eff || (g->kind != RW_G_UNREAD && g->kind != RW_G_UNWRITTEN && g->kind != RW_G_INDEPENDENT &&
			g->kind != RW_G_COVERS))
		return -1;
	if (!eff_slot(p, r, g->a, g->na, a, ops, &va) ||
	    (g->kind != RW_G_COVERS && !eff_slot(p, r, g->b, g->nb, b, ops, &vb)))
		return -1;
	eff_bind(p, g->a, g->na, &va);
	if (g->kind == RW_G_COVERS)
		return covers_eff(&va, b);
	eff_bind(p, g->b, g->nb, &vb);
	return apart_eff(&va, &vb, g->kind != RW_G_UNWRITTEN, g->kind != RW_G_UNREAD);
}

/* Marks of a snapshot in an incremental check (struct rw_run snap_mark). */
#define RUN_SNAP_MOVED 1u /* an op it is derived from moved */
#define RUN_SNAP_NEED 2u  /* a guard to check names it: derive it from this launch's ops */

/* Whether plan node n, derived from ops, may differ from its derivation from the ops of the base
 * pass: some op it reads moved. A node reads its originals, its `from` and its members' `from`
 * (rewrite/derive.c); a kind not known here counts as moved (a new kind whose derivation reads
 * other ops must name them here). */
static bool node_moved(const struct rw_plan_node *n, const uint8_t *moved)
{
	if (n->kind >= RW_NODE_KIND_COUNT)
		return true;
	for (uint32_t j = 0; j < n->norig; j++)
		if (moved[n->orig[j]])
			return true;
	if (n->from != RW_NONE && moved[n->from])
		return true;
	for (uint32_t m = 0; m < n->nmembers; m++)
		if (n->members[m].from != RW_NONE && moved[n->members[m].from])
			return true;
	return false;
}

/* Whether guard side (index, snap) may stand for another op than at the base pass. */
static bool side_moved(const struct rw_plan *p, uint32_t index, int32_t snap, const uint8_t *moved,
		       const uint8_t *snap_mark)
{
	if (snap < 0)
		return moved[index] != 0;
	return (uint32_t)snap >= p->nsnaps || (snap_mark[snap] & RUN_SNAP_MOVED);
}

/* The guards check. moved == NULL: every guard, every snapshot derived, the effects cache
 * started afresh. Else an incremental check against a base pass (rw_run_guards_hold says why
 * that is sound): only the guards with a side that moved (moved[i]: op i's bindings differ from
 * the base's) are checked, only the snapshots they name are derived, and the cached effects of
 * ops and snapshots that did not move are kept (the caller vouches that the cache was worked out
 * from the base's bindings: keep_eff). */
static bool plan_check(struct rw_plan *p, const struct rw_run *r, const struct cap_op *const *ops,
		       const uint8_t *moved, uint8_t *snap_mark, bool keep_eff, uint32_t *failed)
{
	bool fresh;

	if (p->nren) {
		/* the plan was made over the ops as patched: check the renames, then the rest there */
		if (!rw__rename_view(p, ops)) {
			if (failed)
				*failed = RW_GUARD_NO_SNAPSHOT;
			return false;
		}
		ops = p->view;
	}
	if (!p->eff && p->nguards)
		p->eff = calloc(p->norig + p->nsnaps, sizeof(*p->eff));
	if (moved) {
		for (uint32_t s = 0; s < p->nsnaps; s++)
			snap_mark[s] = node_moved(&p->snaps[s], moved) ? RUN_SNAP_MOVED : 0;
	}
	/* slots given up leave their ranges in the pool: start afresh once they outweigh the rest */
	if (keep_eff && p->eff_used > 2 * p->eff_fresh + 256)
		keep_eff = false;
	fresh = !(p->eff && keep_eff && moved);
	if (!fresh) {
		for (uint32_t i = 0; i < p->norig; i++)
			if (moved[i])
				p->eff[i].valid = false;
		for (uint32_t s = 0; s < p->nsnaps; s++)
			if (snap_mark[s] & RUN_SNAP_MOVED)
				p->eff[p->norig + s].valid = false;
	} else if (p->eff) {
		memset(p->eff, 0, (p->norig + p->nsnaps) * sizeof(*p->eff));
		p->eff_used = 0;
	}
	/* the snapshots the guards to check name, each derived once (a snapshot may appear in many
	 * guards); an unmoved snapshot's op is derived again all the same: the scratch of the last
	 * check may point into ops that are gone */
	for (uint32_t i = 0; moved && i < p->nguards; i++) {
		const struct rw_guard *g = &p->guards[i];

		if (!side_moved(p, g->a, g->na, moved, snap_mark) && !side_moved(p, g->b, g->nb, moved, snap_mark))
			continue;
		if (g->na >= 0 && (uint32_t)g->na < p->nsnaps)
			snap_mark[g->na] |= RUN_SNAP_NEED;
		if (g->nb >= 0 && (uint32_t)g->nb < p->nsnaps)
			snap_mark[g->nb] |= RUN_SNAP_NEED;
	}
	for (uint32_t s = 0; s < p->nsnaps; s++) {
		if (moved && !(snap_mark[s] & RUN_SNAP_NEED))
			continue;
		if (rw_node_derive(p->kernels, &p->snaps[s], ops, &p->snap_ops[s]) != 0) {
			if (failed)
				*failed = RW_GUARD_NO_SNAPSHOT;
			return false;
		}
	}
	for (uint32_t i = 0; i < p->nguards; i++) {
		const struct rw_guard *g = &p->guards[i];
		const struct cap_op *a, *b;
		int held;

		cf_assert(g->a < p->norig && g->b < p->norig); /* guards name original ops (guard_add) */
		if (moved && !side_moved(p, g->a, g->na, moved, snap_mark) && !side_moved(p, g->b, g->nb, moved, snap_mark))
			continue; /* held at the base, on the very same ops */
		a = guard_side(p, g->a, g->na, ops);
		b = guard_side(p, g->b, g->nb, ops);
		held = a && b ? guard_on_effects(p, r, g, a, b, ops) : 0;

		if (held < 0)
			held = rw_cond_holds((enum rw_guard_kind)g->kind, a, b, g->a == g->b && g->na == g->nb);
		if (!held) {
			if (failed)
				*failed = i;
			return false;
		}
	}
	if (fresh)
		p->eff_fresh = p->eff_used;
	return true;
}

bool rw_plan_guards_hold(const struct rw_plan *p_const, const struct cap_op *const *ops, uint32_t *failed)
{
	/* the check caches (snapshot ops, effects) are the plan's scratch: plans are checked by one
	 * thread at a time (replay runs under the engine's lock) */
	struct rw_plan *p = (struct rw_plan *)p_const;

	p->eff_tag = 0; /* the cache is this check's: no run's pass vouches for it */
	return plan_check(p, NULL, ops, NULL, NULL, false, failed);
}

int rw_plan_node_op(const struct rw_plan *p, uint32_t k, const struct cap_op *const *ops, struct cap_op *out)
{
	const struct rw_plan_node *n;

	if (k >= p->nnodes)
		return -CF_EINVAL;
	n = &p->nodes[k];
	if (n->kind == RW_NODE_RENAME_BACK)
		return rw__rename_back_derive(n, ops, out);
	if (p->nren && !(ops = rw__rename_node_view((struct rw_plan *)p, n, ops)))
		return -CF_EINVAL;
	return rw_node_derive(p->kernels, n, ops, out);
}

bool rw_plan_is_identity(const struct rw_plan *p)
{
	if (p->nnodes != p->norig || p->nguards)
		return false;
	for (uint32_t i = 0; i < p->nnodes; i++)
		if (p->nodes[i].kind != RW_NODE_OP || p->nodes[i].orig[0] != i)
			return false;
	return true;
}

/* Append to buf like snprintf, counting past its end. */
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(*len < cap ? buf + *len : NULL, *len < cap ? cap - *len : 0, fmt, ap);
	va_end(ap);
	if (w > 0)
		*len += (size_t)w;
}

/* One node (or snapshot) as "kind(i,j,..)", a node with a source as "kind(i<-f)". */
static void put_node(char *buf, size_t cap, size_t *len, const struct rw_plan_node *n)
{
	put(buf, cap, len, "%s(", rw_node_kind_name((enum rw_node_kind)n->kind));
	if (n->nmembers) {
		/* a batch: its members, an untouched op by its index */
		for (uint32_t m = 0; m < n->nmembers; m++) {
			struct rw_plan_node v = { .kind = n->members[m].kind, .norig = n->members[m].count,
						  .orig = &n->orig[n->members[m].first], .from = n->members[m].from };

			put(buf, cap, len, "%s", m ? "," : "");
			if (v.kind == RW_NODE_OP && v.norig == 1)
				put(buf, cap, len, "%u", (unsigned)v.orig[0]);
			else
				put_node(buf, cap, len, &v);
		}
		put(buf, cap, len, ")");
		return;
	}
	for (uint32_t i = 0; i < n->norig; i++)
		put(buf, cap, len, "%s%u", i ? "," : "", (unsigned)n->orig[i]);
	if (n->kind == RW_NODE_CHAIN && n->from != RW_NONE)
		put(buf, cap, len, "<-%u", (unsigned)n->from);
	put(buf, cap, len, ")");
}

/* One side of a guard: the original op's index, or its snapshot. */
static void put_side(char *buf, size_t cap, size_t *len, const struct rw_plan *p, uint32_t index, int32_t snap)
{
	if (snap >= 0 && (uint32_t)snap < p->nsnaps)
		put_node(buf, cap, len, &p->snaps[snap]);
	else
		put(buf, cap, len, "%u", (unsigned)index);
}

int rw_plan_format(const struct rw_plan *p, char *buf, size_t cap)
{
	size_t len = 0;

	if (cap)
		buf[0] = '\0';
	for (uint32_t k = 0; k < p->nnodes; k++) {
		if (k)
			put(buf, cap, &len, " ");
		put_node(buf, cap, &len, &p->nodes[k]);
	}
	if (p->nguards)
		put(buf, cap, &len, " |");
	for (uint32_t i = 0; i < p->nguards; i++) {
		const struct rw_guard *g = &p->guards[i];

		put(buf, cap, &len, " %s(", rw_guard_name((enum rw_guard_kind)g->kind));
		put_side(buf, cap, &len, p, g->a, g->na);
		put(buf, cap, &len, ",");
		put_side(buf, cap, &len, p, g->b, g->nb);
		put(buf, cap, &len, ")");
	}
	return (int)len;
}

static void nodes_free(struct rw_plan_node *nodes, uint32_t n)
{
	for (uint32_t k = 0; nodes && k < n; k++) {
		free(nodes[k].orig);
		free(nodes[k].scratch);
		free(nodes[k].members);
	}
	free(nodes);
}

void rw_plan_destroy(struct rw_plan *p)
{
	if (!p)
		return;
	rw__rename_release(p);
	nodes_free(p->nodes, p->nnodes);
	nodes_free(p->snaps, p->nsnaps);
	free(p->snap_ops);
	free(p->eff);
	free(p->eff_pool);
	free(p->erased_by);
	free(p->touched_by);
	free(p->dep_start);
	free(p->dep_list);
	free(p->guards);
	free(p->stats);
	free(p);
}

/* ------------------------------------------------------------------ runs */

static bool run_guards_hold_ptrs(struct rw_run *r, const struct cap_op *const *ops);

struct rw_run *rw_run_create(const struct cap_op *const *ops, uint32_t n, const struct rw_config *cfg)
{
	struct rw_run *r = calloc(1, sizeof(*r));

	if (!r || !n)
		goto out_drop;
	r->n = n;
	r->cur = -1;
	r->node_of = malloc(n * sizeof(*r->node_of));
	r->ops = malloc(n * sizeof(*r->ops));
	if (!r->node_of || !r->ops)
		goto out_drop;
	r->plan = rw__rename_rewrite(ops, n, cfg);
	if (!r->plan || rw_plan_is_identity(r->plan))
		goto out_drop;
	r->moved = calloc(n, 1);
	r->snap_mark = calloc(r->plan->nsnaps + 1, 1);
	if (!r->moved || !r->snap_mark)
		goto out_drop;
	for (uint32_t i = 0; i < n; i++)
		r->node_of[i] = -2;
	for (uint32_t k = 0; k < r->plan->nnodes; k++) {
		const struct rw_plan_node *pn = &r->plan->nodes[k];

		r->node_of[pn->orig[0]] = (int32_t)k;
		for (uint32_t j = 1; j < pn->norig; j++)
			r->node_of[pn->orig[j]] = -1;
	}
	/* a node covers a run of ops with only erased ops (-2) inside it: it can stand at its
	 * first op's position, everything else of the run being empty nodes. A batch_kernel node
	 * may cover ops with others between them: its members were proved independent of every
	 * kernel, copy and memset they pass, whatever its stream, and of what the event waits of
	 * their stream they pass brought in (its guards; rewrite/rules/batch_kernel.c). Standing at
	 * its first op's position it has the first member's dependencies, and everything after a
	 * later member still waits for it: that member's predecessor on its stream comes after the
	 * first member on that stream. */
	for (uint32_t k = 0; k < r->plan->nnodes; k++) {
		const struct rw_plan_node *pn = &r->plan->nodes[k];

		if (pn->kind == RW_NODE_BATCH_KERNEL)
			continue;
		for (uint32_t j = 1; j < pn->norig; j++)
			for (uint32_t x = pn->orig[j - 1] + 1; x < pn->orig[j]; x++)
				if (r->node_of[x] != -2)
					goto out_drop;
	}
	/* an erased op keeps its position as an empty node: the order around it stays */
	for (uint32_t i = 0; i < n; i++)
		if (r->node_of[i] == -2)
			r->node_of[i] = -1;
	/* the plan must derive every node from the window it was made from */
	if (!run_guards_hold_ptrs(r, ops))
		goto out_drop;
	return r;

out_drop:
	rw_run_destroy(r);
	return NULL;
}

void rw_run_destroy(struct rw_run *r)
{
	if (!r)
		return;
	rw_plan_destroy(r->plan);
	free(r->node_of);
	free(r->ops);
	free(r->moved);
	free(r->snap_mark);
	for (int k = 0; k < RW_RUN_SEEN; k++) {
		free(r->seen[k].ops);
		free(r->seen[k].params);
		free(r->seen[k].eff);
		free(r->seen[k].pool);
	}
	free(r);
}

size_t rw_run_remembered_bytes(const struct rw_run *r)
{
	size_t n = 0;

	for (int k = 0; r && k < RW_RUN_SEEN; k++) {
		const struct rw_run_seen *e = &r->seen[k];

		n += (e->ops ? r->n * sizeof(*e->ops) : 0) + e->cap + (e->eff ? r->n * sizeof(*e->eff) : 0) +
		     e->pool_cap * sizeof(*e->pool);
	}
	return n;
}

/* Say which guard failed (CUFOLD_LOG=info): a launch that falls back for a guard is otherwise
 * only a count in the report, and the guard and its two ops are what a reader needs. */
static void log_failed_guard(const struct rw_run *r, uint32_t failed)
{
	const struct rw_guard *g;

	if (!cf_log_enabled(CF_LOG_INFO))
		return;
	if (failed == RW_GUARD_NO_SNAPSHOT || failed >= r->plan->nguards) {
		cf_log_info("cufold: rewrite check: a snapshot of the plan (%u ops) could not be derived", r->n);
		return;
	}
	g = &r->plan->guards[failed];
	cf_log_info("cufold: rewrite check: guard %u of %u (%s) failed between op %u (%s) and op %u (%s) of %u",
		    failed, r->plan->nguards, rw_guard_name((enum rw_guard_kind)g->kind), g->a,
		    r->ops[g->a] ? cap_op_name(r->ops[g->a]) : "?", g->b,
		    r->ops[g->b] ? cap_op_name(r->ops[g->b]) : "?", r->n);
}

/* Whether the guards hold for r->ops and every node derives from them: in full (moved NULL), or
 * incrementally against the pass the plan's effects cache was worked out for (r->moved). */
static bool run_check(struct rw_run *r, const uint8_t *moved)
{
	struct cap_op tmp;
	uint32_t failed = RW_GUARD_NO_SNAPSHOT;

	if (moved)
		r->npart++;
	else
		r->nfull++;
	if (!plan_check(r->plan, r, r->ops, moved, r->snap_mark, moved != NULL, &failed)) {
		log_failed_guard(r, failed);
		return false;
	}
	/* every derived node can be derived (cufold's kernels load, the originals are of the
	 * kinds the node needs), so rw_run_op never comes back empty-handed for a node; a node
	 * none of whose ops moved derived at the base from the very same bindings */
	for (uint32_t k = 0; k < r->plan->nnodes; k++)
		if (r->plan->nodes[k].kind != RW_NODE_OP && (!moved || node_moved(&r->plan->nodes[k], moved)) &&
		    rw_plan_node_op(r->plan, k, r->ops, &tmp) != 0)
			return false;
	return true;
}

static bool run_guards_hold_ptrs(struct rw_run *r, const struct cap_op *const *ops)
{
	for (uint32_t i = 0; i < r->n; i++)
		r->ops[i] = ops[i];
	r->ops_def = NULL;
	r->plan->eff_tag = 0;
	return run_check(r, NULL);
}

/* Keep the effects the check that just passed worked out (the plan's slots of original ops hold
 * def's: rw_run_guards_hold) with the pass e, for eff_recall; none kept when out of memory. */
static void run_keep_effects(struct rw_run *r, struct rw_run_seen *e)
{
	const struct rw_plan *p = r->plan;

	if (!p->eff)
		return;
	if (!e->eff)
		e->eff = malloc(r->n * sizeof(*e->eff));
	if (p->eff_used > e->pool_cap) {
		free(e->pool);
		e->pool = malloc(p->eff_used * sizeof(*e->pool));
		e->pool_cap = e->pool ? p->eff_used : 0;
	}
	if (!e->eff || (p->eff_used && !e->pool)) {
		free(e->eff);
		e->eff = NULL;
		return;
	}
	memcpy(e->eff, p->eff, r->n * sizeof(*e->eff));
	if (p->eff_used)
		memcpy(e->pool, p->eff_pool, p->eff_used * sizeof(*e->pool));
}

/* Remember def as a launch that passed (kernel parameters copied), in place of the entry
 * remembered longest ago; r->cur names it, or is -1 when memory ran out (no cache: every launch
 * with these bindings is checked). */
static void run_remember(struct rw_run *r, const struct cap_op *def, bool exact)
{
	struct rw_run_seen *e = &r->seen[r->victim];
	size_t bytes = 1, at = 0;

	r->cur = -1;
	for (uint32_t i = 0; i < r->n; i++)
		if (def[i].kind == CAP_OP_KERNEL)
			bytes += def[i].u.kernel.param_size;
	e->gen = 0;
	if (!e->ops)
		e->ops = malloc(r->n * sizeof(*e->ops));
	if (bytes > e->cap) {
		free(e->params);
		e->params = malloc(bytes);
		e->cap = e->params ? bytes : 0;
	}
	if (!e->ops || !e->params)
		return;
	for (uint32_t i = 0; i < r->n; i++) {
		e->ops[i] = def[i];
		if (def[i].kind == CAP_OP_KERNEL) {
			memcpy(e->params + at, def[i].u.kernel.params, def[i].u.kernel.param_size);
			e->ops[i].u.kernel.params = e->params + at;
			at += def[i].u.kernel.param_size;
		}
	}
	run_keep_effects(r, e);
	e->gen = ++r->gen;
	e->exact = exact;
	r->cur = (int32_t)r->victim;
	r->victim = (r->victim + 1) % RW_RUN_SEEN;
}

/* Whether op d has exactly the bindings of op e (an op of a remembered pass). */
static inline __attribute__((always_inline)) bool op_same_as(const struct cap_op *d, const struct cap_op *e)
{
	/* the same value identity: equal in every field rw_op_same compares (capture.h's vid, given
	 * only on an exact compare), so a window that repeated the last one's bindings is not
	 * compared again field by field */
	if (d->vid && d->vid == e->vid && d->flags == e->flags)
		return true;
	/* bind hashes first (cheap: a miss is found at the first op that moved), then every
	 * binding exactly */
	return d->bind == e->bind && d->key == e->key && d->flags == e->flags && rw_op_same(d, e);
}

/* Whether def has exactly the bindings of the remembered pass e. */
static bool run_same_as(const struct rw_run *r, const struct rw_run_seen *e, const struct cap_op *def)
{
	if (!e->gen)
		return false;
	for (uint32_t i = 0; i < r->n; i++)
		if (!op_same_as(&def[i], &e->ops[i]))
			return false;
	return true;
}

/* Point the scratch r->ops at def's ops (the checks and derivations read the ops through it),
 * unless it does already: the fast paths of rw_run_guards_hold_exact read none, and filling it at
 * every launch cost copy_loop ~5 instructions an op (issue 22). */
static void run_ops(struct rw_run *r, const struct cap_op *def)
{
	if (r->ops_def == def)
		return;
	for (uint32_t i = 0; i < r->n; i++)
		r->ops[i] = &def[i];
	r->ops_def = def;
}

/* Forget the remembered passes when one relied on an allocation's extent and the allocation map
 * changed since (this thread's view says how it stands now). */
static void run_forget_stale(struct rw_run *r, const struct rw_alloc_view *v)
{
	if (!r->extents || (v && v->gen == r->alloc_gen))
		return;
	for (int k = 0; k < RW_RUN_SEEN; k++)
		r->seen[k].gen = 0;
	r->cur = -1;
	r->extents = false;
	r->plan->eff_tag = 0; /* its slots may hold stale extents */
}

/* run_check, noting whether it resolved an unknown span through this thread's view. */
static bool run_check_noted(struct rw_run *r, struct rw_alloc_view *v, const uint8_t *moved)
{
	bool asked = v ? v->asked : false, ok;

	if (v)
		v->asked = false;
	ok = run_check(r, moved);
	if (v) {
		if (ok && v->asked) {
			r->extents = true;
			r->alloc_gen = v->gen;
		}
		v->asked |= asked;
	}
	return ok;
}

/* The ops of def whose bindings moved relative to the remembered pass the plan's effects cache
 * was worked out for (r->moved), or NULL when there is none: the check is then made in full.
 *
 * Why checking only the guards with a side that moved is sound. A guard is a function of the two
 * ops its sides stand for, the allocation map (an unknown span resolves to its allocation's
 * extent) and the kernels' cards:
 *  - a side is an original op, or a snapshot derived from the ops its node reads (node_moved);
 *    an op that did not move is equal to the base's in every field rw_op_same compares, the
 *    fields every condition and derivation reads (the premise the remembered passes already
 *    rest on: a launch with a remembered pass's bindings is not checked at all);
 *  - the base passed: every guard held on its bindings (checked then, or, by induction, held
 *    on the very same ops at the pass before it);
 *  - the map: a pass that resolved an extent is forgotten once the map's generation moves
 *    (run_forget_stale), base included, and the check is then made in full; a pass that
 *    resolved none read nothing of the map (whether an op's effects ask depends on its
 *    bindings and card alone);
 *  - with renames, the ops checked are the patched copies, each a function of its op and, for a
 *    reader, of its renamed launch too: a reader counts as moved with its launch (below);
 *  - a function's card is fixed once looked up (the user's cards load once, a derived card is
 *    kept on the function's record; one missing makes every guard on its launches fail, so a
 *    guard that held had it).
 * So a guard whose sides did not move holds now as it held at the base. The effects cache keeps
 * the slots of ops and snapshots that did not move for the same reason. */
static const uint8_t *run_moved(struct rw_run *r, const struct cap_op *def)
{
	const struct rw_run_seen *base = NULL;

	for (int k = 0; k < RW_RUN_SEEN && r->plan->eff_tag; k++)
		if (r->seen[k].gen == r->plan->eff_tag)
			base = &r->seen[k];
	if (!base)
		return NULL;
	for (uint32_t i = 0; i < r->n; i++)
		r->moved[i] = !op_same_as(&def[i], &base->ops[i]);
	/* writing elsewhere: the check runs over the ops as patched (plan_check's view), and a
	 * patched reader's copy is remade from its own op and its renamed launch's (its pointer
	 * keeps its offset into R, whose base is the launch's): it moved when either did. The
	 * renames' own checks (rw__rename_view) are made in full at every check. */
	for (uint32_t k = 0; k < r->plan->nren; k++) {
		const struct rw_ren *rn = &r->plan->ren[k];

		if (rn->op < r->n && r->moved[rn->op])
			for (uint32_t j = 0; j < rn->nuse; j++)
				if (r->plan->uses[rn->first_use + j].op < r->n)
					r->moved[r->plan->uses[rn->first_use + j].op] = 1;
	}
	return r->moved;
}

bool rw_run_guards_hold(struct rw_run *r, const struct cap_op *def)
{
	return rw_run_guards_hold_exact(r, def, false);
}

bool rw_run_guards_hold_exact(struct rw_run *r, const struct cap_op *def, bool exact)
{
	struct rw_alloc_view *v = rw_alloc_view_current();

	run_forget_stale(r, v);
	/* the entry matched last time first: a program whose bindings stay put asks once (and
	 * when both passes are exact, run_same_as would find every op's vid equal: not asked).
	 * Neither reads the scratch r->ops (run_ops) */
	if (r->cur >= 0 && ((exact && r->seen[r->cur].exact && r->seen[r->cur].gen) ||
			    run_same_as(r, &r->seen[r->cur], def)))
		return true;
	for (int32_t k = 0; k < RW_RUN_SEEN; k++) {
		if (k != r->cur && run_same_as(r, &r->seen[k], def)) {
			r->cur = k;
			return true;
		}
	}
	run_ops(r, def);
	if (!run_check_noted(r, v, run_moved(r, def))) {
		r->cur = -1;
		r->plan->eff_tag = 0;
		return false;
	}
	run_remember(r, def, exact);
	/* the valid slots of the effects cache are now def's: the unmoved ops' were the base's,
	 * the same bindings, the moved ones were given up or worked out afresh */
	r->plan->eff_tag = r->cur >= 0 ? r->seen[r->cur].gen : 0;
	return true;
}

uint64_t rw_run_bindings_gen(const struct rw_run *r)
{
	return r->cur >= 0 ? r->seen[r->cur].gen : 0;
}

bool rw_run_is_folded(const struct rw_run *r, uint32_t i)
{
	return i < r->n && r->node_of[i] < 0;
}

const struct cap_op *rw_run_op(struct rw_run *r, uint32_t i, const struct cap_op *def, struct cap_op *tmp)
{
	uint32_t k;

	if (i >= r->n || r->node_of[i] < 0)
		return NULL;
	k = (uint32_t)r->node_of[i];
	if (r->plan->nodes[k].kind == RW_NODE_OP && !(r->plan->patched_of && r->plan->patched_of[i] >= 0))
		return &def[i];
	/* rw_run_guards_hold checked these ops (or ops with the very same bindings); a derivation
	 * can still fail when cufold's kernels cannot be loaded: NULL, which replay takes as a
	 * failure of its own (the launch goes eagerly) */
	run_ops(r, def);
	return rw_plan_node_op(r->plan, k, r->ops, tmp) == 0 ? tmp : NULL;
}

bool rw_eff_pool_put(struct rw_range **pool, uint32_t *used, uint32_t *cap, const struct rw_effects *e,
		     uint32_t *r, uint32_t *w)
{
	uint32_t need = *used + e->nr + e->nw;

	if (need > *cap) {
		uint32_t ncap = *cap ? *cap : 256;
		struct rw_range *np;

		while (ncap < need)
			ncap *= 2;
		np = realloc(*pool, ncap * sizeof(*np));
		if (!np)
			return false;
		*pool = np;
		*cap = ncap;
	}
	*r = *used;
	memcpy(&(*pool)[*used], e->r, e->nr * sizeof(e->r[0]));
	*used += e->nr;
	*w = *used;
	memcpy(&(*pool)[*used], e->w, e->nw * sizeof(e->w[0]));
	*used += e->nw;
	return true;
}

bool rw_eff_pool_put_batch(struct rw_range **pool, uint32_t *used, uint32_t *cap, const struct cap_op *const *ops,
			   const uint32_t *orig, uint32_t n, struct rw_eff_slot *s)
{
	struct rw_effects e;
	uint32_t at[2], ignore;

	/* every instance's reads, then every instance's writes: each instance's effects worked out
	 * twice, so that one instance's are all this holds at a time */
	s->all = false;
	s->nr = s->nw = 0;
	for (uint32_t pass = 0; pass < 2; pass++) {
		at[pass] = *used;
		for (uint32_t k = 0; k < n; k++) {
			rw_op_effects(ops[orig[k]], &e);
			if (e.all) {
				s->all = true;
				s->nr = s->nw = 0;
				return true;
			}
			if (pass == 0)
				e.nw = 0;
			else
				e.nr = 0;
			if (!rw_eff_pool_put(pool, used, cap, &e, &ignore, &ignore))
				return false;
			s->nr += e.nr;
			s->nw += e.nw;
		}
	}
	s->r = at[0];
	s->w = at[1];
	return true;
}
