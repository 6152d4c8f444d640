/* rename.c - writing elsewhere (output renaming): a launch kept from its batch only by memory
 * the program reuses writes a buffer of cufold's own instead. rewrite layer.
 *
 *   before:  k<<<>>>(x1, R)      A: writes R
 *            g<<<>>>(R, y1)      reads R
 *            k<<<>>>(x2, R)      L: writes R again (CuPy's pool handed R out again)
 *            g<<<>>>(R, y2)      reads R
 *   after:   k_cf_multi(A: (x1, R), L: (x2, R'))   R' cufold's buffer
 *            g<<<>>>(R, y1)
 *            [copy R' -> R]      at L's position, unless dropped (below)
 *            g<<<>>>(R', y2)     a reader patched
 *
 * The plan is made by the ordinary rules over the window with L's pointer and its readers'
 * pointers patched (plan->view): the batch-kernel rule sees L write R', which nothing else
 * touches, and fuses it; its guards are recorded and checked on the patched ops. Each launch:
 *  1. L's write through that pointer is still an exact span written whole, not read by L, that
 *     fits R' (rw__rename_access), and the scan of what follows L (rw__rename_scan) finds the
 *     very readers the plan patched, no other, and the same next write into R, which covers all
 *     L writes where the copy back was dropped, and after which nothing reads R where it was
 *     not (the plan was made over the window where L writes R': no rule may have taken a later
 *     read of R for one of R's older bytes);
 *  2. with a copy back, the ops the plan moved above L's position touch nothing of R (the copy
 *     writes R there);
 *  3. the patched copies are remade from the launch's own bindings (a reader's pointer keeps its
 *     offset into R), so moving bindings are followed and R' stays cufold's fixed buffer.
 * Anything else fails the check: the window goes eagerly, as for any guard.
 *
 * Buffers are allocated through the real driver when the plan is made (the launch's context
 * pushed when it is not current), counted against the engine's budget
 * (CUFOLD_RENAME_MAX_BYTES), and freed with the plan: a template retired or destroyed frees
 * them. A buffer that cannot be had leaves its launch as it was. */
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "driver/api.h"
#include "driver/real.h"
#include "rewrite/effects.h"
#include "rewrite/plan.h"
#include "rewrite/rewriter.h"

#define ROUNDS 4   /* plans made while dropping renames that did not let their launch join a batch */
#define DISCOVER 6 /* passes over the window as patched that look for more launches to rename */

static const struct rw_rename_hooks *rename_hooks; /* rw__set_rename_hooks (tests), or NULL */

void rw__set_rename_hooks(const struct rw_rename_hooks *h)
{
	rename_hooks = h;
}

static int buf_alloc(CUcontext ctx, uint64_t bytes, uint64_t *out)
{
	CUdeviceptr p = 0;
	bool pushed;
	CUresult rc;

	if (rename_hooks)
		return rename_hooks->alloc(ctx, bytes, out);
	rc = drv_ctx_enter(ctx, &pushed);
	if (rc == CUDA_SUCCESS)
		rc = DRV_REAL(cuMemAlloc_v2)(&p, (size_t)bytes);
	(void)drv_ctx_leave(pushed);
	if (rc != CUDA_SUCCESS)
		return -CF_ENOMEM;
	*out = (uint64_t)p;
	return 0;
}

static void buf_free(CUcontext ctx, uint64_t buf)
{
	bool pushed;

	if (rename_hooks) {
		rename_hooks->free(ctx, buf);
		return;
	}
	/* at exit the context may be gone: the driver then says so and frees nothing more */
	if (drv_ctx_enter(ctx, &pushed) == CUDA_SUCCESS)
		(void)DRV_REAL(cuMemFree_v2)((CUdeviceptr)buf);
	(void)drv_ctx_leave(pushed);
}

/* Take bytes from the budget: false when it would pass the maximum. */
static bool budget_take(struct rw_rename_budget *b, uint64_t bytes)
{
	uint64_t used = __atomic_load_n(&b->used, __ATOMIC_RELAXED), peak;

	do {
		if (bytes > b->max || used > b->max - bytes)
			return false;
	} while (!__atomic_compare_exchange_n(&b->used, &used, used + bytes, true, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	peak = __atomic_load_n(&b->peak, __ATOMIC_RELAXED);
	while (used + bytes > peak &&
	       !__atomic_compare_exchange_n(&b->peak, &peak, used + bytes, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return true;
}

static void budget_give(struct rw_rename_budget *b, uint64_t bytes)
{
	if (b)
		__atomic_fetch_sub(&b->used, bytes, __ATOMIC_RELAXED);
}

static void refused(struct rw_rename_budget *b)
{
	__atomic_fetch_add(&b->refused, 1, __ATOMIC_RELAXED);
}

static uint64_t read_u64(const struct cap_op *op, uint32_t word)
{
	uint64_t v;

	memcpy(&v, (const unsigned char *)op->u.kernel.params + word, sizeof(v));
	return v;
}

static void write_u64(struct cap_op *op, uint32_t word, uint64_t v)
{
	memcpy((unsigned char *)op->u.kernel.params + word, &v, sizeof(v));
}

/* One patch of a patched copy: the pointer at word becomes ren's buffer (a renamed launch's
 * own), or the buffer at the reader's offset into the range (a reader). */
struct patch {
	uint32_t word;               /* offset in the parameters */
	uint32_t ren;                /* which rename */
	bool reader;                 /* a reader's pointer (else the launch's own) */
};

/* What a plan being made with renames holds (moved into the plan when it is kept). */
struct renames {
	uint32_t n;                  /* renames */
	struct rw_ren *ren;          /* n entries */
	struct rw_rename_use *uses;  /* every rename's readers */
	uint32_t nuses;              /* entries */
	uint32_t *first_patch;       /* per patched copy, its patches (npatched + 1) */
	struct patch *patches;       /* in patched-copy order */
};

/* The plan's private part of renames: the patch table. */
struct rw_rename_tab {
	uint32_t *first_patch;       /* npatched + 1 entries */
	struct patch *patches;       /* patches, by patched copy */
};

/* Remake patched copy c of plan p from ops (the launch's own bindings): 0, or -CF_EINVAL when
 * a reader's pointer left its range (the check fails then). */
static int remake(struct rw_plan *p, const struct rw_rename_tab *t, uint32_t c, const struct cap_op *const *ops)
{
	const struct cap_op *src = ops[p->patched_orig[c]];
	struct cap_op *dst = &p->patched[c];
	void *params = dst->u.kernel.params;

	if (src->kind != CAP_OP_KERNEL && src->kind != CAP_OP_MEMCPY)
		return -CF_EINVAL;
	*dst = *src;
	dst->vid = 0; /* not the original op's value any more */
	if (src->kind == CAP_OP_KERNEL) {
		if (!params)
			return -CF_EINVAL;
		dst->u.kernel.params = params;
		memcpy(params, src->u.kernel.params, src->u.kernel.param_size);
	}
	for (uint32_t k = t->first_patch[c]; k < t->first_patch[c + 1]; k++) {
		const struct patch *pt = &t->patches[k];
		const struct rw_ren *r = &p->ren[pt->ren];
		uint64_t v, base = read_u64(ops[r->op], r->word);

		if (!pt->reader) {
			if (src->kind != CAP_OP_KERNEL || (uint64_t)pt->word + 8 > src->u.kernel.param_size)
				return -CF_EINVAL;
			write_u64(dst, pt->word, r->buf);
			continue;
		}
		if (pt->word == RW_USE_COPY_SOURCE) {
			/* a 1-D device copy (the scan checked): its source moved into the buffer */
			CUDA_MEMCPY3D *d = &dst->u.memcpy.d;

			if (src->kind != CAP_OP_MEMCPY)
				return -CF_EINVAL;
			v = src->u.memcpy.src_first;
			if (v < base || v - base >= r->cap)
				return -CF_EINVAL;
			dst->u.memcpy.src_first = r->buf + (v - base);
			d->srcDevice = (CUdeviceptr)dst->u.memcpy.src_first;
			d->srcXInBytes = d->srcY = d->srcZ = 0;
			d->srcPitch = dst->u.memcpy.bytes;
			d->srcHeight = 1;
			continue;
		}
		if (src->kind != CAP_OP_KERNEL || (uint64_t)pt->word + 8 > src->u.kernel.param_size)
			return -CF_EINVAL;
		v = read_u64(src, pt->word);
		if (v < base || v - base >= r->cap)
			return -CF_EINVAL;
		write_u64(dst, pt->word, r->buf + (v - base));
	}
	return 0;
}

/* Whether view op m touches nothing of r. */
static bool untouched(const struct cap_op *m, const struct rw_range *r)
{
	struct rw_effects e;

	if (m->kind == CAP_OP_EVENT_RECORD || m->kind == CAP_OP_EVENT_WAIT)
		return true;
	rw_op_effects(m, &e);
	return !e.all && !rw_ranges_overlap(e.r, e.nr, r) && !rw_ranges_overlap(e.w, e.nw, r);
}

#define WATCH_NODE 0x80000000u /* a hoist entry that names a plan node whose reads are watched */

/* Whether plan node k, derived over view, may read r (a batch kernel: any of its instances). */
static bool node_reads(struct rw_plan *p, uint32_t k, const struct cap_op *const *view, const struct rw_range *r)
{
	const struct rw_plan_node *n = &p->nodes[k];
	struct rw_effects e;
	struct cap_op tmp;

	if (n->kind == RW_NODE_BATCH_KERNEL) {
		for (uint32_t m = 0; m < n->norig; m++) {
			rw_op_effects(view[n->orig[m]], &e);
			if (e.all || rw_ranges_overlap(e.r, e.nr, r))
				return true;
		}
		return false;
	}
	if (rw_node_derive(p->kernels, n, view, &tmp) != 0)
		return true;
	rw_op_effects(&tmp, &e);
	return e.all || rw_ranges_overlap(e.r, e.nr, r);
}

bool rw__rename_view(struct rw_plan *p, const struct cap_op *const *ops)
{
	const struct rw_rename_tab *t = p->rename_tab;
	struct rw_rename_scan sc;

	for (uint32_t c = 0; c < p->npatched; c++)
		if (remake(p, t, c, ops) != 0)
			return false;
	for (uint32_t x = 0; x < p->norig; x++)
		p->view[x] = p->patched_of[x] >= 0 ? &p->patched[p->patched_of[x]] : ops[x];
	for (uint32_t k = 0; k < p->nren; k++) {
		const struct rw_ren *r = &p->ren[k];
		struct rw_range rr;

		if (rw__rename_access(ops[r->op], r->word, &rr) != 0 || rr.bytes > r->cap)
			return false;
		/* the very readers the plan patched, the same next write, and as the plan made it
		 * over the patched window, nothing else that reads R (rules relied on that) */
		rw__rename_scan(ops, p->norig, r->op, &rr, &sc);
		if (sc.refused || (sc.back && !r->back) || sc.end != r->end || sc.nuse != r->nuse)
			return false;
		for (uint32_t u = 0; u < sc.nuse; u++)
			if (sc.use[u].op != p->uses[r->first_use + u].op || sc.use[u].word != p->uses[r->first_use + u].word)
				return false;
		for (uint32_t h = 0; h < r->nhoist; h++) {
			uint32_t x = p->hoist[r->first_hoist + h];

			if (x & WATCH_NODE ? node_reads(p, x & ~WATCH_NODE, p->view, &rr) : !untouched(p->view[x], &rr))
				return false;
		}
	}
	return true;
}

/* p->view[x] from ops: the patched copy remade, or ops[x]. false when a patch cannot be made. */
static bool view_set(struct rw_plan *p, uint32_t x, const struct cap_op *const *ops)
{
	if (x >= p->norig)
		return true;
	if (p->patched_of[x] < 0) {
		p->view[x] = ops[x];
		return true;
	}
	if (remake(p, p->rename_tab, (uint32_t)p->patched_of[x], ops) != 0)
		return false;
	p->view[x] = &p->patched[p->patched_of[x]];
	return true;
}

const struct cap_op *const *rw__rename_node_view(struct rw_plan *p, const struct rw_plan_node *n,
						 const struct cap_op *const *ops)
{
	/* what a derivation reads: the node's ops, its `from` and its members' (rewrite/derive.c) */
	for (uint32_t j = 0; j < n->norig; j++)
		if (!view_set(p, n->orig[j], ops))
			return NULL;
	if (!view_set(p, n->from, ops))
		return NULL;
	for (uint32_t m = 0; m < n->nmembers; m++)
		if (!view_set(p, n->members[m].from, ops))
			return NULL;
	return p->view;
}

int rw__rename_back_derive(const struct rw_plan_node *n, const struct cap_op *const *ops, struct cap_op *out)
{
	const struct rw_ren *r = n->ren;
	const struct cap_op *l;
	struct rw_range rr;
	CUDA_MEMCPY3D *d;

	if (!r || n->norig != 1 || n->orig[0] != r->op)
		return -CF_EINVAL;
	l = ops[r->op];
	if (rw__rename_access(l, r->word, &rr) != 0 || rr.bytes > r->cap)
		return -CF_EINVAL;
	memset(out, 0, sizeof(*out));
	out->kind = CAP_OP_MEMCPY;
	out->api = DRV_ID_cuMemcpyDtoDAsync_v2;
	out->stream_kind = l->stream_kind;
	out->stream_slot = l->stream_slot;
	out->tid = l->tid;
	out->stream = l->stream;
	out->ctx = l->ctx;
	d = &out->u.memcpy.d;
	d->srcMemoryType = CU_MEMORYTYPE_DEVICE;
	d->dstMemoryType = CU_MEMORYTYPE_DEVICE;
	d->srcDevice = (CUdeviceptr)r->buf;
	d->dstDevice = (CUdeviceptr)rr.addr;
	d->srcPitch = d->dstPitch = rr.bytes;
	d->srcHeight = d->dstHeight = 1;
	d->WidthInBytes = rr.bytes;
	d->Height = 1;
	d->Depth = 1;
	out->u.memcpy.bytes = rr.bytes;
	out->u.memcpy.dir = CAP_DIR_DTOD;
	out->u.memcpy.src_first = r->buf;
	out->u.memcpy.dst_first = rr.addr;
	out->u.memcpy.src_span = out->u.memcpy.dst_span = rr.bytes;
	return 0;
}

/* ------------------------------------------------------------------ making a plan */

/* A launch picked to write elsewhere, while the plan is made. */
struct pick {
	uint32_t op, word;           /* the launch and its pointer */
	uint64_t buf, cap;           /* its buffer, 0 until allocated */
	bool drop;                   /* refused in this round */
};

static void renames_free(struct renames *rs)
{
	free(rs->ren);
	free(rs->uses);
	free(rs->first_patch);
	free(rs->patches);
	memset(rs, 0, sizeof(*rs));
}

static void release(struct rw_rename_budget *b, CUcontext ctx, uint64_t buf, uint64_t cap)
{
	buf_free(ctx, buf);
	budget_give(b, cap);
}

/* The patched copies of ops under renames rs: p's patched_of, patched, patched_params,
 * patched_orig, npatched and rs's patch table. 0 or -CF_ENOMEM. */
static int patched_make(struct rw_plan *p, const struct cap_op *const *ops, uint32_t n, struct renames *rs)
{
	uint32_t np = 0, npt = 0, c = 0;
	size_t bytes = 0, at = 0;
	int32_t *of = malloc(n * sizeof(*of));
	uint32_t *cnt = NULL;

	if (!of)
		return -CF_ENOMEM;
	for (uint32_t x = 0; x < n; x++)
		of[x] = -1;
	for (uint32_t k = 0; k < rs->n; k++) {
		const struct rw_ren *r = &rs->ren[k];

		of[r->op] = 0;
		for (uint32_t u = 0; u < r->nuse; u++)
			if (rs->uses[r->first_use + u].word != RW_USE_KEPT)
				of[rs->uses[r->first_use + u].op] = 0;
	}
	for (uint32_t x = 0; x < n; x++)
		if (of[x] == 0) {
			of[x] = (int32_t)np++;
			bytes += ops[x]->kind == CAP_OP_KERNEL ? ops[x]->u.kernel.param_size : 0;
		}
	p->patched_of = of;
	p->npatched = np;
	p->patched = calloc(np ? np : 1, sizeof(*p->patched));
	p->patched_params = malloc(bytes ? bytes : 1);
	p->patched_orig = malloc((np ? np : 1) * sizeof(*p->patched_orig));
	cnt = calloc(np + 1, sizeof(*cnt));
	for (uint32_t k = 0; k < rs->n; k++)
		npt += 1 + rs->ren[k].nuse - rs->ren[k].nkept;
	rs->patches = malloc((npt ? npt : 1) * sizeof(*rs->patches));
	rs->first_patch = calloc(np + 1, sizeof(*rs->first_patch));
	if (!p->patched || !p->patched_params || !p->patched_orig || !cnt || !rs->patches || !rs->first_patch) {
		free(cnt);
		return -CF_ENOMEM;
	}
	for (uint32_t x = 0; x < n; x++)
		if (of[x] >= 0) {
			p->patched_orig[of[x]] = x;
			if (ops[x]->kind != CAP_OP_KERNEL)
				continue;
			p->patched[of[x]].u.kernel.params = p->patched_params + at;
			at += ops[x]->u.kernel.param_size;
		}
	/* counting sort of the patches by patched copy */
	for (uint32_t k = 0; k < rs->n; k++) {
		const struct rw_ren *r = &rs->ren[k];

		cnt[of[r->op] + 1]++;
		for (uint32_t u = 0; u < r->nuse; u++)
			if (rs->uses[r->first_use + u].word != RW_USE_KEPT)
				cnt[of[rs->uses[r->first_use + u].op] + 1]++;
	}
	for (c = 0; c < np; c++)
		cnt[c + 1] += cnt[c];
	memcpy(rs->first_patch, cnt, (np + 1) * sizeof(*cnt));
	for (uint32_t k = 0; k < rs->n; k++) {
		const struct rw_ren *r = &rs->ren[k];

		rs->patches[cnt[of[r->op]]++] = (struct patch){ r->word, k, false };
		for (uint32_t u = 0; u < r->nuse; u++) {
			const struct rw_rename_use *us = &rs->uses[r->first_use + u];

			if (us->word != RW_USE_KEPT)
				rs->patches[cnt[of[us->op]]++] = (struct patch){ us->word, k, true };
		}
	}
	free(cnt);
	return 0;
}

static void patched_free(struct rw_plan *p)
{
	free(p->patched_of);
	free(p->patched);
	free(p->patched_params);
	free(p->patched_orig);
	free(p->view);
	p->patched_of = NULL;
	p->patched = NULL;
	p->patched_params = NULL;
	p->patched_orig = NULL;
	p->view = NULL;
	p->npatched = 0;
}

/* The renames of the picks not dropped, scanned on ops: rs (ren, uses). 0 or -CF_ENOMEM; a pick
 * whose range cannot be had any more is dropped. */
static int renames_make(const struct cap_op *const *ops, uint32_t n, struct pick *pk, uint32_t npk,
			struct renames *rs)
{
	struct rw_rename_scan sc;
	uint32_t cap_uses = 0;

	memset(rs, 0, sizeof(*rs));
	rs->ren = calloc(npk ? npk : 1, sizeof(*rs->ren));
	if (!rs->ren)
		return -CF_ENOMEM;
	for (uint32_t k = 0; k < npk; k++) {
		struct rw_range rr;
		struct rw_ren *r;

		if (pk[k].drop)
			continue;
		if (rw__rename_access(ops[pk[k].op], pk[k].word, &rr) != 0 || rr.bytes > pk[k].cap) {
			pk[k].drop = true;
			continue;
		}
		rw__rename_scan(ops, n, pk[k].op, &rr, &sc);
		if (sc.refused) {
			pk[k].drop = true;
			continue;
		}
		if (rs->nuses + sc.nuse > cap_uses) {
			uint32_t want = (rs->nuses + sc.nuse) * 2 + 16;
			struct rw_rename_use *u = realloc(rs->uses, want * sizeof(*u));

			if (!u)
				return -CF_ENOMEM;
			rs->uses = u;
			cap_uses = want;
		}
		r = &rs->ren[rs->n++];
		r->op = pk[k].op;
		r->word = pk[k].word;
		r->buf = pk[k].buf;
		r->cap = pk[k].cap;
		r->ctx = ops[pk[k].op]->ctx;
		r->back = sc.back;
		r->end = sc.end;
		r->first_use = rs->nuses;
		r->nuse = sc.nuse;
		r->nkept = sc.nkept;
		memcpy(&rs->uses[rs->nuses], sc.use, sc.nuse * sizeof(sc.use[0]));
		rs->nuses += sc.nuse;
	}
	return 0;
}

/* The node of plan p that covers original op x, and x's place in it (j). */
static uint32_t node_covering(const struct rw_plan *p, uint32_t x, uint32_t *j)
{
	for (uint32_t k = 0; k < p->nnodes; k++)
		for (uint32_t m = 0; m < p->nodes[k].norig; m++)
			if (p->nodes[k].orig[m] == x) {
				*j = m;
				return k;
			}
	return RW_NONE;
}

/* Check the plan p made over the view: each rename's launch is a later member of a batch on the
 * first member's stream (else its pick is dropped); a rename with a copy back gets the ops
 * moved above its position (p->hoist), which must not touch its range now (else dropped).
 * Returns how many picks were dropped, or -CF_ENOMEM. */
static int plan_judge(struct rw_plan *p, const struct cap_op *const *ops, const struct cap_op *const *view,
		      struct renames *rs, struct pick *pk, uint32_t npk, uint32_t **hoist, uint32_t *nhoist)
{
	uint32_t cap = 0, dropped = 0;

	*nhoist = 0;
	for (uint32_t k = 0; k < rs->n; k++) {
		struct rw_ren *r = &rs->ren[k];
		uint32_t j = 0, nd = node_covering(p, r->op, &j);
		/* a copy back stands at L's position: L must have left it for a batch on the same stream
		 * (the batch's node then comes first in that stream's order); without one, L may stay */
		bool ok = !p->dep_start &&
			  (!r->back || (nd != RW_NONE && p->nodes[nd].kind == RW_NODE_BATCH_KERNEL && j > 0 &&
					ops[p->nodes[nd].orig[0]]->stream_slot == ops[r->op]->stream_slot));
		struct rw_range rr;

		r->batch = nd;
		r->first_hoist = *nhoist;
		r->nhoist = 0;
		/* a kept reader reads R where eager did, after the copy back: it must stay a node of
		 * its own (a rule that merged, chained or moved it took R for its older bytes, which
		 * the window as patched has there) on L's stream (ordered after L's position by the
		 * stream alone; the copy back is there) */
		for (uint32_t u = 0; ok && u < r->nuse; u++) {
			const struct rw_rename_use *us = &rs->uses[r->first_use + u];
			uint32_t kj = 0, kn;

			if (us->word != RW_USE_KEPT)
				continue;
			kn = node_covering(p, us->op, &kj);
			ok = kn != RW_NONE && p->nodes[kn].kind == RW_NODE_OP && p->nodes[kn].norig == 1 &&
			     p->nodes[kn].from == RW_NONE && (!p->erased_by || !p->erased_by[us->op]) &&
			     ops[us->op]->stream_slot == ops[r->op]->stream_slot &&
			     ops[us->op]->stream_kind == ops[r->op]->stream_kind;
		}
		if (ok && r->back) {
			ok = rw__rename_access(ops[r->op], r->word, &rr) == 0;
			for (uint32_t q = 0; ok && q < p->nnodes; q++) {
				const struct rw_plan_node *pn = &p->nodes[q];

				if (pn->orig[0] >= r->op)
					continue;
				for (uint32_t m = 1; ok && m < pn->norig; m++) {
					if (pn->orig[m] <= r->op)
						continue;
					if (*nhoist == cap) {
						uint32_t *h = realloc(*hoist, (cap * 2 + 16) * sizeof(*h));

						if (!h)
							return -CF_ENOMEM;
						*hoist = h;
						cap = cap * 2 + 16;
					}
					(*hoist)[(*nhoist)++] = pn->orig[m];
					r->nhoist++;
					ok = untouched(view[pn->orig[m]], &rr);
				}
			}
			/* after L's position R holds L's bytes (the copy back), where the window as
			 * patched has R's older ones: a node a rule made that reads R there (a copy
			 * chained to where an earlier copy read) would read the wrong bytes */
			for (uint32_t q = 0; ok && q < p->nnodes; q++) {
				const struct rw_plan_node *pn = &p->nodes[q];

				if (pn->orig[0] <= r->op || pn->kind == RW_NODE_OP)
					continue;
				if (*nhoist == cap) {
					uint32_t *h = realloc(*hoist, (cap * 2 + 16) * sizeof(*h));

					if (!h)
						return -CF_ENOMEM;
					*hoist = h;
					cap = cap * 2 + 16;
				}
				(*hoist)[(*nhoist)++] = q | WATCH_NODE;
				r->nhoist++;
				ok = !node_reads(p, q, view, &rr);
			}
			/* and an op after it that a rule erased, as the same bytes written again or as
			 * a duplicate, may have been judged so on R's older bytes */
			for (uint32_t q = r->op + 1; ok && p->erased_by && q < p->norig; q++) {
				if (!p->erased_by[q])
					continue;
				if (*nhoist == cap) {
					uint32_t *h = realloc(*hoist, (cap * 2 + 16) * sizeof(*h));

					if (!h)
						return -CF_ENOMEM;
					*hoist = h;
					cap = cap * 2 + 16;
				}
				(*hoist)[(*nhoist)++] = q;
				r->nhoist++;
				ok = untouched(view[q], &rr);
			}
		}
		if (!ok) {
			cf_log_debug("writing elsewhere: op %u dropped: node %u kind %d place %u back %d hoists %u", r->op,
				     nd, nd != RW_NONE ? p->nodes[nd].kind : -1, j, r->back, r->nhoist);
			for (uint32_t q = 0; q < npk; q++)
				if (pk[q].op == r->op)
					pk[q].drop = true;
			dropped++;
		}
	}
	return (int)dropped;
}

/* Append a RENAME_BACK node for each rename with a copy back. 0 or -CF_ENOMEM. */
static int backs_add(struct rw_plan *p)
{
	uint32_t nb = 0;
	struct rw_plan_node *nodes;

	for (uint32_t k = 0; k < p->nren; k++)
		nb += p->ren[k].back;
	if (!nb)
		return 0;
	nodes = realloc(p->nodes, (p->nnodes + nb) * sizeof(*nodes));
	if (!nodes)
		return -CF_ENOMEM;
	p->nodes = nodes;
	for (uint32_t k = 0; k < p->nren; k++) {
		struct rw_plan_node *pn;

		if (!p->ren[k].back)
			continue;
		pn = &p->nodes[p->nnodes];
		memset(pn, 0, sizeof(*pn));
		pn->kind = RW_NODE_RENAME_BACK;
		pn->norig = 1;
		pn->from = RW_NONE;
		pn->ren = &p->ren[k];
		pn->rule = "rename";
		pn->orig = malloc(sizeof(*pn->orig));
		if (!pn->orig)
			return -CF_ENOMEM;
		pn->orig[0] = p->ren[k].op;
		p->nnodes++;
	}
	return 0;
}

/* Whether cfg runs batch-kernel (renaming serves it alone). */
static bool batch_enabled(const struct rw_config *cfg)
{
	size_t nr;
	const struct rw_rule *const *rules = rw_rules_registered(&nr);

	for (size_t k = 0; k < nr; k++)
		if (!strcmp(rules[k]->name, "batch-kernel"))
			return rw_rule_is_enabled(rules[k], cfg);
	return false;
}

/* Add to pk[0..npk) the launches the reuse partner search of a candidate (cand[i]) names (each once);
 * returns the new count. ops may be the window as already patched: a launch that read what a
 * renamed one wrote reads the buffer there, which can leave only reuse between it and its own
 * partner (CuPy's pool overwrites a temporary by the next feature's launch before its reader). */
static uint32_t picks_add(const struct cap_op *const *ops, uint32_t n, const struct rw_config *cfg, const bool *cand,
			  struct pick *pk, uint32_t npk)
{
	uint32_t op, word;

	for (uint32_t i = 0; i < n; i++) {
		bool seen = false;

		if (!cand[i] || ops[i]->kind != CAP_OP_KERNEL || !rw_multi_possible(cfg->kernels, ops[i]) ||
		    !rw__rename_target(ops, n, i, &op, &word))
			continue;
		for (uint32_t k = 0; k < npk && !seen; k++)
			seen = pk[k].op == op;
		if (!seen)
			pk[npk++] = (struct pick){ op, word, 0, 0, false };
	}
	return npk;
}

/* Allocate the buffers of the picks that have none (a refused one is dropped). */
static void picks_alloc(const struct cap_op *const *ops, struct pick *pk, uint32_t npk, struct rw_rename_budget *b)
{
	for (uint32_t k = 0; k < npk; k++) {
		struct rw_range rr;
		uint64_t cap;

		if (pk[k].drop || pk[k].buf)
			continue;
		if (rw__rename_access(ops[pk[k].op], pk[k].word, &rr) != 0) {
			pk[k].drop = true;
			continue;
		}
		cap = (rr.bytes + 255) & ~(uint64_t)255;
		if (!budget_take(b, cap)) {
			refused(b);
			pk[k].drop = true;
			continue;
		}
		if (buf_alloc(ops[pk[k].op]->ctx, cap, &pk[k].buf) != 0) {
			cf_log_info("writing elsewhere: no buffer of %llu bytes; the launch stays as it was",
				    (unsigned long long)cap);
			budget_give(b, cap);
			refused(b);
			pk[k].buf = 0;
			pk[k].drop = true;
			continue;
		}
		pk[k].cap = cap;
	}
}

/* Free the buffers of dropped picks. */
static void picks_release(const struct cap_op *const *ops, struct pick *pk, uint32_t npk, struct rw_rename_budget *b)
{
	for (uint32_t k = 0; k < npk; k++)
		if (pk[k].drop && pk[k].buf) {
			release(b, ops[pk[k].op]->ctx, pk[k].buf, pk[k].cap);
			pk[k].buf = 0;
		}
}

/* The renames of picks pk (their buffers had first), their patched copies and the window as
 * patched, into rs and shell (tab: the table of which pointers each copy has patched, pointing
 * into rs): 0, or -1 when there are none or they cannot be made or do not hold on ops. */
static int shell_make(const struct cap_op *const *ops, uint32_t n, struct pick *pk, uint32_t npk,
		      struct rw_rename_budget *b, struct renames *rs, struct rw_plan *shell, struct rw_rename_tab *tab)
{
	picks_alloc(ops, pk, npk, b);
	renames_free(rs);
	patched_free(shell);
	if (renames_make(ops, n, pk, npk, rs) != 0 || !rs->n)
		return -1;
	shell->norig = n;
	shell->nren = rs->n;
	shell->ren = rs->ren;
	shell->uses = rs->uses;
	if (patched_make(shell, ops, n, rs) != 0 || !(shell->view = malloc(n * sizeof(*shell->view))))
		return -1;
	tab->first_patch = rs->first_patch;
	tab->patches = rs->patches;
	shell->rename_tab = tab;
	return rw__rename_view(shell, ops) ? 0 : -1;
}

struct rw_plan *rw__rename_rewrite(const struct cap_op *const *ops, uint32_t n, const struct rw_config *cfg)
{
	struct rw_rename_budget *b = cfg ? cfg->rename : NULL;
	struct pick *pk = NULL;
	struct rw_plan *p = NULL, shell;
	struct renames rs;
	uint32_t npk = 0, *hoist = NULL, nhoist = 0;
	struct rw_rename_tab tab_of_shell = { NULL, NULL }, *tab = &tab_of_shell;

	struct rw_plan *plain = NULL;
	bool *cand = NULL;

	memset(&rs, 0, sizeof(rs));
	memset(&shell, 0, sizeof(shell));
	/* the plan without renaming first: only the launches it leaves alone are looked at (the
	 * search is the costly part; most windows have none kept apart by reuse) */
	plain = rw_rewrite(ops, n, NULL, cfg, NULL, 0);
	if (!plain || plain->dep_start || !b || !b->max || !batch_enabled(cfg) || !(pk = malloc(n * sizeof(*pk))) ||
	    !(cand = calloc(n, sizeof(*cand))))
		goto out_plain;
	for (uint32_t k = 0; k < plain->nnodes; k++)
		if (plain->nodes[k].kind == RW_NODE_OP && ops[plain->nodes[k].orig[0]]->kind == CAP_OP_KERNEL)
			cand[plain->nodes[k].orig[0]] = true;
	npk = picks_add(ops, n, cfg, cand, pk, 0);
	/* renaming some launches can leave only reuse between others: look again over the window
	 * as patched, until nothing new turns up */
	for (int pass = 0; pass < DISCOVER && npk; pass++) {
		uint32_t before = npk;

		if (shell_make(ops, n, pk, npk, b, &rs, &shell, tab) != 0)
			break;
		npk = picks_add(shell.view, n, cfg, cand, pk, npk);
		if (npk == before)
			break;
	}
	for (int round = 0; round < ROUNDS && npk; round++) {
		int dropped;

		if (shell_make(ops, n, pk, npk, b, &rs, &shell, tab) != 0)
			break;
		p = rw_rewrite(shell.view, n, NULL, cfg, NULL, 0);
		if (!p)
			break;
		shell.nnodes = 0;
		dropped = plan_judge(p, ops, shell.view, &rs, pk, npk, &hoist, &nhoist);
		cf_log_debug("writing elsewhere: round %d of %u ops: %u picked, %u renamed, %d dropped", round, n, npk,
			     rs.n, dropped);
		if (dropped == 0) {
			uint32_t kept = 0, backs = 0;

			for (uint32_t k = 0; k < rs.n; k++) {
				kept += rs.ren[k].nkept;
				backs += rs.ren[k].back;
			}
			cf_log_debug("writing elsewhere: %u renamed, %u copied back, %u readers kept", rs.n, backs, kept);
			/* keep it: the renames move into the plan */
			p->nren = rs.n;
			p->ren = rs.ren;
			p->uses = rs.uses;
			p->hoist = hoist;
			p->patched_of = shell.patched_of;
			p->patched = shell.patched;
			p->patched_params = shell.patched_params;
			p->patched_orig = shell.patched_orig;
			p->npatched = shell.npatched;
			p->view = shell.view;
			p->budget = b;
			p->rename_tab = malloc(sizeof(*p->rename_tab));
			if (!p->rename_tab) {
				p->nren = 0;
				p->ren = NULL;
				p->uses = NULL;
				p->hoist = NULL;
				p->patched_of = NULL;
				p->patched = NULL;
				p->patched_params = NULL;
				p->patched_orig = NULL;
				p->view = NULL;
				rw_plan_destroy(p);
				p = NULL;
				break;
			}
			*p->rename_tab = *tab;
			for (uint32_t k = 0; k < npk; k++)
				pk[k].buf = pk[k].drop ? pk[k].buf : 0; /* the plan owns them now */
			if (backs_add(p) != 0) {
				rw_plan_destroy(p);
				p = NULL;
				hoist = NULL;
				memset(&rs, 0, sizeof(rs));
				memset(&shell, 0, sizeof(shell));
				goto out_plain;
			}
			hoist = NULL;
			memset(&rs, 0, sizeof(rs));
			memset(&shell, 0, sizeof(shell));
			picks_release(ops, pk, npk, b);
			free(pk);
			free(cand);
			if (p->nnodes >= plain->nnodes && !(rename_hooks && rename_hooks->keep_all)) {
				/* no fewer nodes than without renaming (a copy back takes the node its
				 * launch's fusion saved: rw_patterns lost 1.4 us a step to one): not worth
				 * its buffers and bytes; destroying the plan frees them */
				cf_log_debug("writing elsewhere: %u nodes against %u without: not kept", p->nnodes,
					     plain->nnodes);
				rw_plan_destroy(p);
				return plain;
			}
			rw_plan_destroy(plain);
			return p;
		}
		if (dropped < 0)
			break;
		rw_plan_destroy(p);
		p = NULL;
		picks_release(ops, pk, npk, b);
	}
	rw_plan_destroy(p);
	p = NULL;
out_plain:
	free(hoist);
	renames_free(&rs);
	patched_free(&shell);
	if (pk) {
		for (uint32_t k = 0; k < npk; k++)
			pk[k].drop = true;
		picks_release(ops, pk, npk, b);
	}
	free(pk);
	free(cand);
	return plain;
}

void rw__rename_release(struct rw_plan *p)
{
	for (uint32_t k = 0; k < p->nren; k++)
		release(p->budget, p->ren[k].ctx, p->ren[k].buf, p->ren[k].cap);
	free(p->ren);
	free(p->uses);
	free(p->hoist);
	if (p->rename_tab) {
		free(p->rename_tab->first_patch);
		free(p->rename_tab->patches);
		free(p->rename_tab);
	}
	patched_free(p);
	p->ren = NULL;
	p->nren = 0;
}
