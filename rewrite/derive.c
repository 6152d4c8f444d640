/* derive.c - the op a plan node submits, derived from the bindings of the original ops it
 * covers: merged copies and memsets, forwarded and chained sources, launches of cufold's batch
 * kernels with their by-value tables, a cat kernel as one copy, an elementwise kernel over the
 * summed count. rewrite layer. The rules decide WHAT a node is; this file alone decides how its
 * op is built, so the rewriter (at rewrite time) and replay (at every launch) build the same. */
#include <stddef.h>
#include <string.h>

#include "common/errors.h"
#include "driver/api.h"
#include "rewrite/effects.h"
#include "rewrite/kernels.h"
#include "rewrite/plan.h"
#include "rewrite/rewriter.h"

/* ------------------------------------------------------------------ cufold's kernels */

static uint32_t table_offset[1] = { 0 };
static uint32_t table_size[1] = { RW_BATCH_TABLE_SIZE };

/* Name and layout of the by-value batch kernels (one parameter: the 776-byte table). */
static const struct cap_func batch_info[3] = {
	{ .nparams = 1, .param_bytes = RW_BATCH_TABLE_SIZE, .layout_known = true, .name = "cufold_batch_copy",
	  .offset = table_offset, .size = table_size },
	{ .nparams = 1, .param_bytes = RW_BATCH_TABLE_SIZE, .layout_known = true, .name = "cufold_batch_memset",
	  .offset = table_offset, .size = table_size },
	{ .nparams = 1, .param_bytes = RW_BATCH_TABLE_SIZE, .layout_known = true, .name = "cufold_batch_copy2d",
	  .offset = table_offset, .size = table_size },
};

static CUresult (*kernel_resolver)(CUcontext ctx, int kernel, CUfunction *out);

void rw__set_kernel_resolver(CUresult (*fn)(CUcontext ctx, int kernel, CUfunction *out))
{
	kernel_resolver = fn;
}

static CUresult resolve(struct rw_kernels *kc, CUcontext ctx, enum rw_kernel k, CUfunction *out)
{
	if (kernel_resolver)
		return kernel_resolver(ctx, (int)k, out);
	return rw_kernels_func(kc, ctx, k, out);
}

#define BATCH_BLOCK 256u          /* threads per block of a batch launch */
#define BATCH_BYTES_PER_BLOCK 4096u /* bytes one block moves per pass (16 per thread) */
#define BATCH_MAX_GRID_X 1024u    /* blocks per range at most (the kernels loop over the rest) */

/* The launch of batch kernel k over n ranges, the longest max_bytes, on first's stream; the
 * table is already in scratch. */
static int batch_launch(struct rw_kernels *kc, const struct cap_op *first, enum rw_kernel k, uint32_t n,
			uint64_t max_bytes, void *scratch, struct cap_op *out)
{
	CUfunction fn;
	uint64_t gx = (max_bytes + BATCH_BYTES_PER_BLOCK - 1) / BATCH_BYTES_PER_BLOCK;

	if (resolve(kc, first->ctx, k, &fn) != CUDA_SUCCESS)
		return -CF_EINVAL;
	rw_kernels_launch_op(first, fn, &batch_info[k == RW_K_BATCH_COPY ? 0 : k == RW_K_BATCH_MEMSET ? 1 : 2], out);
	out->u.kernel.grid[0] = (unsigned)(gx < 1 ? 1 : gx > BATCH_MAX_GRID_X ? BATCH_MAX_GRID_X : gx);
	out->u.kernel.grid[1] = n;
	out->u.kernel.grid[2] = 1;
	out->u.kernel.block[0] = BATCH_BLOCK;
	out->u.kernel.block[1] = 1;
	out->u.kernel.block[2] = 1;
	out->u.kernel.param_size = RW_BATCH_TABLE_SIZE;
	out->u.kernel.params = scratch;
	return 0;
}

/* The op member m of batch node n stands for (a copy or memset derived like a node of its
 * kind; without members, original op m). */
static int member_op(struct rw_kernels *kc, const struct rw_plan_node *n, uint32_t m, const struct cap_op *const *ops,
		     struct cap_op *out)
{
	struct rw_plan_node v;

	if (!n->nmembers) {
		*out = *ops[n->orig[m]];
		return 0;
	}
	if (n->members[m].first + n->members[m].count > n->norig || n->members[m].kind == RW_NODE_BATCH_COPY ||
	    n->members[m].kind == RW_NODE_BATCH_SET || n->members[m].kind == RW_NODE_BATCH_COPY2D)
		return -CF_EINVAL;
	memset(&v, 0, sizeof(v));
	v.kind = n->members[m].kind;
	v.norig = n->members[m].count;
	v.orig = &n->orig[n->members[m].first];
	v.from = n->members[m].from;
	return rw_node_derive(kc, &v, ops, out);
}

/* The three batch tables differ only in their rows: the same size, the count at the same place. */
_Static_assert(sizeof(struct rw_batch_copy_table) == RW_BATCH_TABLE_SIZE &&
		       sizeof(struct rw_batch_memset_table) == RW_BATCH_TABLE_SIZE &&
		       sizeof(struct rw_batch_copy2d_table) == RW_BATCH_TABLE_SIZE,
	       "batch tables are RW_BATCH_TABLE_SIZE bytes");
_Static_assert(offsetof(struct rw_batch_copy_table, count) == RW_BATCH_COUNT_OFFSET &&
		       offsetof(struct rw_batch_memset_table, count) == RW_BATCH_COUNT_OFFSET &&
		       offsetof(struct rw_batch_copy2d_table, count) == RW_BATCH_COUNT_OFFSET,
	       "batch tables keep their count at RW_BATCH_COUNT_OFFSET");

/* Row i of a batch table from the member op m; returns the bytes the row moves. */
static uint64_t row_copy(void *table, uint32_t i, const struct cap_op *m)
{
	struct rw_batch_copy_range *r = &((struct rw_batch_copy_table *)table)->r[i];

	r->dst = m->u.memcpy.dst_first;
	r->src = m->u.memcpy.src_first;
	r->bytes = m->u.memcpy.bytes;
	return r->bytes;
}

static uint64_t row_memset(void *table, uint32_t i, const struct cap_op *m)
{
	struct rw_batch_memset_range *r = &((struct rw_batch_memset_table *)table)->r[i];

	r->dst = m->u.memset.dst;
	r->bytes = rw_set_bytes(m);
	r->value = m->u.memset.value;
	r->elem_size = m->u.memset.elem_size;
	return r->bytes;
}

static uint64_t row_copy2d(void *table, uint32_t i, const struct cap_op *m)
{
	struct rw_batch_copy2d_range *r = &((struct rw_batch_copy2d_table *)table)->r[i];
	const struct cap_memcpy *c = &m->u.memcpy;

	r->dst = c->dst_first;
	r->src = c->src_first;
	r->width = c->d.WidthInBytes;
	r->height = c->d.Height;
	r->dpitch = c->d.Height > 1 ? c->d.dstPitch : c->d.WidthInBytes;
	r->spitch = c->d.Height > 1 ? c->d.srcPitch : c->d.WidthInBytes;
	return c->bytes;
}

/* What differs between the batch kernels. */
struct batch_kind {
	enum rw_kernel kernel;       /* which of cufold's kernels */
	uint32_t max;                /* rows its table holds */
	bool (*takes)(const struct cap_op *op); /* whether a member op fits a row */
	uint64_t (*row)(void *table, uint32_t i, const struct cap_op *m); /* fills row i */
};

static const struct batch_kind batch_copy = { RW_K_BATCH_COPY, RW_BATCH_MAX, rw_op_is_linear_dtod, row_copy };
static const struct batch_kind batch_memset = { RW_K_BATCH_MEMSET, RW_BATCH_MAX, rw_op_is_set_1d, row_memset };
static const struct batch_kind batch_copy2d = { RW_K_BATCH_COPY2D, RW_BATCH2D_MAX, rw_op_is_pitched_dtod,
						row_copy2d };

/* A batch node: its table, in the node's scratch, filled from its members, and the launch of
 * its kernel over the table. */
static int derive_batch(struct rw_kernels *kc, const struct rw_plan_node *n, const struct batch_kind *bk,
			const struct cap_op *const *ops, struct cap_op *out)
{
	uint32_t count = n->nmembers ? n->nmembers : n->norig;
	uint64_t max_bytes = 0, bytes;
	struct cap_op m;
	int rc = -CF_EINVAL;

	if (!n->scratch || n->scratch_size < RW_BATCH_TABLE_SIZE || count > bk->max)
		goto out;
	memset(n->scratch, 0, RW_BATCH_TABLE_SIZE);
	for (uint32_t i = 0; i < count; i++) {
		if (member_op(kc, n, i, ops, &m) != 0 || !bk->takes(&m))
			goto out;
		bytes = bk->row(n->scratch, i, &m);
		if (bytes > max_bytes)
			max_bytes = bytes;
	}
	memcpy((unsigned char *)n->scratch + RW_BATCH_COUNT_OFFSET, &count, sizeof(count));
	rc = batch_launch(kc, ops[n->orig[0]], bk->kernel, count, max_bytes, n->scratch, out);
out:
	return rc;
}

/* ------------------------------------------------------------------ copies and memsets */

/* A 1-D copy as `tmpl` but over bytes bytes. */
static void copy_resize(struct cap_op *out, uint64_t bytes)
{
	CUDA_MEMCPY3D *d = &out->u.memcpy.d;

	/* one row over linear memory, named by its first byte alone: a one-row copy made with a
	 * 2-D entry point may name its row through offsets and a pitch smaller than the new width,
	 * which the driver would refuse */
	if (d->srcMemoryType == CU_MEMORYTYPE_DEVICE || d->srcMemoryType == CU_MEMORYTYPE_UNIFIED) {
		d->srcDevice = out->u.memcpy.src_first;
		d->srcXInBytes = d->srcY = d->srcZ = 0;
		d->srcPitch = bytes;
		d->srcHeight = 1;
	}
	if (d->dstMemoryType == CU_MEMORYTYPE_DEVICE || d->dstMemoryType == CU_MEMORYTYPE_UNIFIED) {
		d->dstDevice = out->u.memcpy.dst_first;
		d->dstXInBytes = d->dstY = d->dstZ = 0;
		d->dstPitch = bytes;
		d->dstHeight = 1;
	}
	d->WidthInBytes = bytes;
	out->u.memcpy.bytes = bytes;
	out->u.memcpy.src_span = bytes;
	out->u.memcpy.dst_span = bytes;
	out->u.memcpy.staged = NULL;
	out->flags &= (uint8_t)~CAP_OPF_STAGED;
}

/* Make out read from `from`'s source, delta bytes past its first byte. */
static void copy_source_of(struct cap_op *out, const struct cap_op *from, uint64_t delta)
{
	const struct cap_memcpy *f = &from->u.memcpy;
	struct cap_memcpy *o = &out->u.memcpy;

	/* 1-D (guarded): the source is the first byte `from` read, moved by delta */
	o->d.srcXInBytes = f->d.srcXInBytes + delta;
	o->d.srcY = f->d.srcY;
	o->d.srcZ = f->d.srcZ;
	o->d.srcLOD = f->d.srcLOD;
	o->d.srcMemoryType = f->d.srcMemoryType;
	o->d.srcHost = f->d.srcHost;
	o->d.srcDevice = f->d.srcDevice;
	o->d.srcArray = f->d.srcArray;
	o->d.srcPitch = f->d.srcPitch;
	o->d.srcHeight = f->d.srcHeight;
	o->src_ctx = f->src_ctx;
	o->src_pageable = f->src_pageable;
	o->src_first = f->src_first + delta;
	if (f->d.srcMemoryType == CU_MEMORYTYPE_DEVICE || f->d.srcMemoryType == CU_MEMORYTYPE_UNIFIED) {
		/* linear memory named by its address alone, as a 1-D entry point takes it (the op
		 * would be right even if issued through its entry point) */
		o->d.srcDevice = o->src_first;
		o->d.srcXInBytes = 0;
		o->d.srcY = 0;
		o->d.srcZ = 0;
		o->d.srcPitch = o->bytes;
		o->d.srcHeight = 1;
	}
}

static int derive_copy(const struct rw_plan_node *n, const struct cap_op *const *ops, struct cap_op *out)
{
	uint64_t bytes = 0;

	for (uint32_t i = 0; i < n->norig; i++) {
		if (ops[n->orig[i]]->kind != CAP_OP_MEMCPY)
			return -CF_EINVAL;
		bytes += ops[n->orig[i]]->u.memcpy.bytes;
	}
	*out = *ops[n->orig[0]];
	copy_resize(out, bytes);
	if (n->kind == RW_NODE_FORWARD || n->kind == RW_NODE_CHAIN) {
		const struct cap_op *from;
		uint64_t delta = 0;

		if (n->from >= RW_NONE || ops[n->from]->kind != CAP_OP_MEMCPY)
			return -CF_EINVAL;
		from = ops[n->from];
		if (n->kind == RW_NODE_CHAIN) {
			if (out->u.memcpy.src_first < from->u.memcpy.dst_first)
				return -CF_EINVAL;
			delta = out->u.memcpy.src_first - from->u.memcpy.dst_first;
		}
		copy_source_of(out, from, delta);
	}
	return 0;
}

static int derive_set(const struct rw_plan_node *n, const struct cap_op *const *ops, struct cap_op *out)
{
	size_t width = 0;

	for (uint32_t i = 0; i < n->norig; i++) {
		if (ops[n->orig[i]]->kind != CAP_OP_MEMSET)
			return -CF_EINVAL;
		width += ops[n->orig[i]]->u.memset.width;
	}
	*out = *ops[n->orig[0]];
	out->u.memset.width = width;
	out->u.memset.pitch = width * out->u.memset.elem_size;
	return 0;
}

/* ------------------------------------------------------------------ kernels */

static int derive_cat_copy(const struct rw_plan_node *n, const struct cap_op *const *ops, struct cap_op *out)
{
	const struct cap_op *k = ops[n->orig[0]];
	struct rw_access_set set;
	uint64_t bytes = 0, src, dst;

	if (n->norig != 1 || rw_op_kernel_access(k, &set) != 0 || !(set.flags & RW_SET_CAT) || set.cat_out < 0 ||
	    !set.ntables || !set.tables[0].n)
		return -CF_EINVAL;
	for (uint32_t i = 0; i < set.tables[0].n; i++)
		bytes += set.acc[set.tables[0].first + i].bytes;
	src = set.acc[set.tables[0].first].addr;
	dst = set.acc[set.cat_out].addr;
	rw_op_standing_for(out, k, CAP_OP_MEMCPY, DRV_ID_cuMemcpyDtoDAsync_v2);
	out->u.memcpy.d.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	out->u.memcpy.d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	out->u.memcpy.d.srcDevice = src;
	out->u.memcpy.d.dstDevice = dst;
	out->u.memcpy.d.Height = 1;
	out->u.memcpy.d.Depth = 1;
	out->u.memcpy.dir = CAP_DIR_DTOD;
	out->u.memcpy.src_first = src;
	out->u.memcpy.dst_first = dst;
	copy_resize(out, bytes);
	return bytes ? 0 : -CF_EINVAL;
}

static int derive_elementwise(const struct rw_plan_node *n, const struct cap_op *const *ops, struct cap_op *out)
{
	const struct cap_op *first = ops[n->orig[0]];
	const struct cap_kernel *k = &first->u.kernel;
	struct rw_access_set set;
	int64_t total = 0;
	int cparam = -1;
	uint32_t off, size;

	if (first->kind != CAP_OP_KERNEL || !n->scratch || n->scratch_size < k->param_size || !k->block[0])
		return -CF_EINVAL;
	for (uint32_t i = 0; i < n->norig; i++) {
		if (rw_op_kernel_access(ops[n->orig[i]], &set) != 0 || !(set.flags & RW_SET_COUNT) ||
		    set.count_param < 0 || set.count < 0 || __builtin_add_overflow(total, set.count, &total) ||
		    (cparam >= 0 && cparam != set.count_param))
			return -CF_EINVAL;
		cparam = set.count_param;
	}
	if (cparam < 0 || (uint32_t)cparam >= k->info->nparams)
		return -CF_EINVAL;
	off = k->info->offset[cparam];
	size = k->info->size[cparam];
	if ((size != 4 && size != 8) || off + size > k->param_size || (size == 4 && total > INT32_MAX) ||
	    (total + k->block[0] - 1) / k->block[0] > INT32_MAX)
		return -CF_EINVAL;
	memcpy(n->scratch, k->params, k->param_size);
	if (size == 4) {
		int32_t v = (int32_t)total;

		memcpy((char *)n->scratch + off, &v, 4);
	} else {
		memcpy((char *)n->scratch + off, &total, 8);
	}
	*out = *first;
	out->u.kernel.params = n->scratch;
	out->u.kernel.grid[0] = (unsigned)((total + k->block[0] - 1) / k->block[0]);
	return 0;
}

/* ------------------------------------------------------------------ multi-instance launches */

static const struct rw_multi_hooks *multi_hooks; /* rw__set_multi_hooks (tests), or NULL */

void rw__set_multi_hooks(const struct rw_multi_hooks *h)
{
	multi_hooks = h;
}

bool rw_multi_possible(struct rw_kernels *kc, const struct cap_op *op)
{
	if (op->kind != CAP_OP_KERNEL || op->u.kernel.attrs || !op->u.kernel.info ||
	    !op->u.kernel.info->layout_known)
		return false;
	return multi_hooks ? multi_hooks->possible(op) : rw_kernels_multi_possible(kc, op);
}

bool rw_multi_fits(const struct cap_op *a, const struct cap_op *b)
{
	const struct cap_kernel *x = &a->u.kernel, *y = &b->u.kernel;

	/* one dynamic shared size (the variant launches with the first's), and no more than a
	 * function gets without CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, which the program
	 * set on its kernel and nobody on the variant */
	return a->kind == CAP_OP_KERNEL && b->kind == CAP_OP_KERNEL && y->info == x->info && y->block[0] == x->block[0] &&
	       y->block[1] == x->block[1] && y->block[2] == x->block[2] && y->grid[1] == x->grid[1] &&
	       y->grid[2] == x->grid[2] && !y->attrs && y->shared_bytes == x->shared_bytes &&
	       x->shared_bytes <= RW_MULTI_SHARED_MAX;
}

const char *rw_apart_name(enum rw_apart a)
{
	static const char *const names[] = {
#define RW_APART_NAME_(name, key) key,
		RW_APART_LIST(RW_APART_NAME_)
#undef RW_APART_NAME_
	};

	return (unsigned)a < RW_APART_COUNT ? names[a] : "?";
}

/* Whether some launch of ops[i]'s kernel and shape lies past a kernel whose
 * effects are unknown (batch-kernel moves nothing past one): beyond the first such kernel on
 * either side of it. */
static bool unknown_between(const struct cap_op *const *ops, uint32_t n, uint32_t i)
{
	for (int dir = -1; dir <= 1; dir += 2) {
		bool unknown = false;

		for (uint32_t j = i + (uint32_t)dir; j < n; j += (uint32_t)dir) {
			struct rw_effects e;

			if (unknown && rw_multi_fits(ops[i], ops[j]))
				return true;
			if (!unknown && ops[j]->kind == CAP_OP_KERNEL && !rw_multi_fits(ops[i], ops[j])) {
				rw_op_effects(ops[j], &e);
				unknown = e.all;
			}
		}
	}
	return false;
}

#define REUSE_LOOK 512u   /* effects of ops rw_multi_apart looks at for one launch, at most */
#define REUSE_RANGES 256u /* ranges written by what depends on a launch, followed at most */

/* Whether launch `to` may run beside launch `from` < to (one kernel and shape) but for memory
 * reused between them: it depends on nothing `from` wrote, directly or through what reads it
 * (ops[from + 1 .. to) that read a range written by `from` or by such an op), while it writes
 * what an op between them (from included) reads or writes. A write-after-read or
 * write-after-write is all that orders them then: writing elsewhere would undo it. *budget:
 * effects still to look at; false when spent, or when an op's effects are unknown. */
static bool reuse_only(const struct cap_op *const *ops, uint32_t from, uint32_t to, uint32_t *budget)
{
	struct rw_range dep[REUSE_RANGES];
	struct rw_effects l, e;
	uint32_t ndep = 0;
	bool conflict = false;

	rw_op_effects(ops[to], &l);
	if (l.all)
		return false;
	for (uint32_t k = from; k < to; k++) {
		bool reads_dep = k == from;

		if (!*budget)
			return false;
		(*budget)--;
		rw_op_effects(ops[k], &e);
		if (e.all)
			return false;
		for (uint32_t r = 0; r < e.nr && !reads_dep; r++)
			reads_dep = rw_ranges_overlap(dep, ndep, &e.r[r]);
		if (reads_dep) {
			if (ndep + e.nw > REUSE_RANGES)
				return false;
			memcpy(&dep[ndep], e.w, e.nw * sizeof(e.w[0]));
			ndep += e.nw;
		}
		for (uint32_t w = 0; w < l.nw && !conflict; w++)
			conflict = rw_ranges_overlap(e.r, e.nr, &l.w[w]) || rw_ranges_overlap(e.w, e.nw, &l.w[w]);
	}
	for (uint32_t r = 0; r < l.nr; r++)
		if (rw_ranges_overlap(dep, ndep, &l.r[r]))
			return false; /* it depends on `from` */
	return conflict;
}

/* The nearest other launch of ops[i]'s kernel that only reused memory orders against it (as
 * reuse_only says), each side in turn: *from < *to, one of them i. false when there is none. */
static bool reuse_partner(const struct cap_op *const *ops, uint32_t n, uint32_t i, uint32_t *from, uint32_t *to)
{
	uint32_t budget = REUSE_LOOK;

	/* the others nearest first on each side (a tower's next feature is some way off: the
	 * launches of the kernel in its own chain come first, and depend on it) */
	for (uint32_t d = 1; d < n && budget; d++) {
		if (i >= d && rw_multi_fits(ops[i], ops[i - d]) && reuse_only(ops, i - d, i, &budget)) {
			*from = i - d;
			*to = i;
			return true;
		}
		if (i + d < n && rw_multi_fits(ops[i], ops[i + d]) && reuse_only(ops, i, i + d, &budget)) {
			*from = i;
			*to = i + d;
			return true;
		}
	}
	return false;
}

/* Whether contiguous range [addr, addr + bytes) lies inside contiguous range r. */
static bool inside(uint64_t addr, uint64_t bytes, const struct rw_range *r)
{
	return bytes && addr >= r->addr && addr - r->addr <= r->bytes && bytes <= r->bytes - (addr - r->addr);
}

/* Whether access a of a launch names its span through one pointer a rewrite could point
 * elsewhere (a pointer parameter or a struct field, not a table entry) and knows it (not
 * `unknown`). */
static bool access_patchable(const struct rw_access *a)
{
	return !(a->flags & RW_ACC_UNKNOWN) && (a->entry < 0 || a->table == RW_ACCESS_FIELD);
}

/* How op, after the renamed launch, meets its renamed range r: RN_NONE (touches nothing of it),
 * RN_PATCH (reads it only through spans a pointer patch would move to the buffer), RN_END (no
 * read, or patchable reads, and then a write into r: a full overwrite ends r's life, a partial
 * one is where the copy back would go; either way what follows reads r as eager left it), or
 * RN_NO (reads it in a way no patch can follow: an unknown span, a table entry, an `all` op, a
 * read straddling r's bounds, a copy that is not a 1-D device copy). */
enum rn_meet { RN_NONE, RN_PATCH, RN_END, RN_NO };

static enum rn_meet rename_meets(const struct cap_op *op, const struct rw_range *r)
{
	struct rw_effects e;
	bool reads = false, writes = false;

	if (op->kind == CAP_OP_EVENT_RECORD || op->kind == CAP_OP_EVENT_WAIT)
		return RN_NONE; /* touch no memory */
	rw_op_effects(op, &e);
	if (e.all)
		return RN_NO;
	for (uint32_t k = 0; k < e.nr && !reads; k++)
		reads = rw_range_overlap(&e.r[k], r);
	for (uint32_t k = 0; k < e.nw && !writes; k++)
		writes = rw_range_overlap(&e.w[k], r);
	if (!reads)
		return writes ? RN_END : RN_NONE;
	if (op->kind == CAP_OP_MEMCPY) {
		if (!rw_op_is_linear_dtod(op) || !inside(op->u.memcpy.src_first, op->u.memcpy.bytes, r))
			return RN_NO;
	} else if (op->kind == CAP_OP_KERNEL) {
		struct rw_access_set set;

		if (rw_op_kernel_access(op, &set) != 0 || (set.flags & (RW_SET_INDIRECT | RW_SET_UNKNOWN_SPAN)))
			return RN_NO;
		for (unsigned k = 0; k < set.n; k++) {
			const struct rw_access *a = &set.acc[k];
			struct rw_range q = { a->addr, a->bytes, 0, 0 };

			if ((a->flags & RW_ACC_READ) && rw_range_overlap(&q, r) &&
			    (!access_patchable(a) || !inside(a->addr, a->bytes, r)))
				return RN_NO;
		}
	} else {
		return RN_NO;
	}
	return writes ? RN_END : RN_PATCH;
}

/* Whether launch ops[to], kept from ops[from] only by reused memory, could write elsewhere:
 * each range it writes that an op of ops[from .. to) reads or writes is an exact span through a
 * pointer it could be pointed away with, it reads nothing of that range itself, and every later
 * op of the run that reads it before it is written again reads it through a span a patch could
 * follow (rename_meets). out gets the bytes the buffers would take and whether every renamed
 * range is surely written whole (what a copy back over the range needs). */
static bool rename_fits(const struct cap_op *const *ops, uint32_t n, uint32_t from, uint32_t to,
			struct rw_rename *out)
{
	struct rw_access_set set;
	struct rw_range ren[RW_ACCESS_MAX];
	uint32_t nren = 0;

	out->bytes = 0;
	out->whole = true;
	if (rw_op_kernel_access(ops[to], &set) != 0 || (set.flags & RW_SET_INDIRECT))
		return false;
	for (unsigned k = 0; k < set.n; k++) {
		const struct rw_access *a = &set.acc[k];
		struct rw_range r = { a->addr, a->bytes, 0, 0 };
		bool conflict = false;

		if (!(a->flags & RW_ACC_WRITE))
			continue;
		if (a->flags & RW_ACC_UNKNOWN)
			return false; /* the range is not known: neither is what would conflict */
		for (uint32_t q = from; q < to && !conflict; q++) {
			struct rw_effects e;

			rw_op_effects(ops[q], &e);
			conflict = e.all || rw_ranges_overlap(e.r, e.nr, &r) || rw_ranges_overlap(e.w, e.nw, &r);
		}
		if (!conflict)
			continue;
		if (!access_patchable(a) || (a->flags & RW_ACC_READ))
			return false;
		for (unsigned b = 0; b < set.n; b++) {
			struct rw_range q = { set.acc[b].addr, set.acc[b].bytes, 0, 0 };

			if (b != k && (set.acc[b].flags & RW_ACC_READ) &&
			    ((set.acc[b].flags & RW_ACC_UNKNOWN) || rw_range_overlap(&q, &r)))
				return false; /* it reads what it writes: the buffer would need the old bytes */
		}
		ren[nren++] = r;
		out->bytes += a->bytes;
		if (!(a->flags & RW_ACC_WHOLE) &&
		    (set.flags & (RW_SET_ELEMENTWISE | RW_SET_COVERS)) != (RW_SET_ELEMENTWISE | RW_SET_COVERS))
			out->whole = false;
	}
	if (!nren)
		return false;
	for (uint32_t k = 0; k < nren; k++)
		for (uint32_t q = to + 1; q < n; q++) {
			enum rn_meet m = rename_meets(ops[q], &ren[k]);

			if (m == RN_NO || q - to > REUSE_LOOK)
				return false; /* (past the look's reach: not known, so no) */
			if (m == RN_END)
				break;
		}
	return true;
}

bool rw_multi_renamable(const struct cap_op *const *ops, uint32_t n, uint32_t i, struct rw_rename *out)
{
	uint32_t from, to;

	if (!reuse_partner(ops, n, i, &from, &to) || !rename_fits(ops, n, from, to, out))
		return false;
	out->renamed = to;
	return true;
}

/* Whether access k of set is surely written whole (what a copy back of its whole span needs). */
static bool written_whole(const struct rw_access_set *set, unsigned k)
{
	return (set->acc[k].flags & RW_ACC_WHOLE) ||
	       (set->flags & (RW_SET_ELEMENTWISE | RW_SET_COVERS)) == (RW_SET_ELEMENTWISE | RW_SET_COVERS);
}

/* Whether access k of set may be written elsewhere: an exact span, written whole, through a
 * pointer parameter or field, that the launch reads through none of its accesses. */
static bool access_renamable(const struct rw_access_set *set, unsigned k, uint32_t param_size)
{
	const struct rw_access *a = &set->acc[k];
	struct rw_range r = { a->addr, a->bytes, 0, 0 };

	if (!(a->flags & RW_ACC_WRITE) || (a->flags & RW_ACC_READ) || !access_patchable(a) || !a->bytes ||
	    !written_whole(set, k) || (uint64_t)a->word + 8 > param_size)
		return false;
	for (unsigned b = 0; b < set->n; b++) {
		struct rw_range q = { set->acc[b].addr, set->acc[b].bytes, 0, 0 };

		if (b != k && (set->acc[b].flags & RW_ACC_READ) &&
		    ((set->acc[b].flags & RW_ACC_UNKNOWN) || rw_range_overlap(&q, &r)))
			return false;
	}
	return true;
}

int rw__rename_access(const struct cap_op *op, uint32_t word, struct rw_range *out)
{
	struct rw_access_set set;

	if (op->kind != CAP_OP_KERNEL || rw_op_kernel_access(op, &set) != 0 || (set.flags & RW_SET_INDIRECT))
		return -CF_EINVAL;
	for (unsigned k = 0; k < set.n; k++) {
		if (set.acc[k].word != word || !(set.acc[k].flags & RW_ACC_WRITE))
			continue;
		if (!access_renamable(&set, k, op->u.kernel.param_size))
			return -CF_EINVAL;
		*out = (struct rw_range){ set.acc[k].addr, set.acc[k].bytes, 0, 0 };
		return 0;
	}
	return -CF_EINVAL;
}

bool rw__rename_target(const struct cap_op *const *ops, uint32_t n, uint32_t i, uint32_t *op, uint32_t *word)
{
	struct rw_access_set set;
	uint32_t from, to;
	int found = -1;

	if (!reuse_partner(ops, n, i, &from, &to) || rw_op_kernel_access(ops[to], &set) != 0 ||
	    (set.flags & RW_SET_INDIRECT))
		return false;
	for (unsigned k = 0; k < set.n; k++) {
		const struct rw_access *a = &set.acc[k];
		struct rw_range r = { a->addr, a->bytes, 0, 0 };
		bool conflict = false;

		if (!(a->flags & RW_ACC_WRITE))
			continue;
		if (a->flags & RW_ACC_UNKNOWN)
			return false;
		for (uint32_t q = from; q < to && !conflict; q++) {
			struct rw_effects e;

			rw_op_effects(ops[q], &e);
			conflict = e.all || rw_ranges_overlap(e.r, e.nr, &r) || rw_ranges_overlap(e.w, e.nw, &r);
		}
		if (!conflict)
			continue;
		/* one renamed range per launch: its copy back is one node at its position */
		if (found >= 0 || !access_renamable(&set, k, ops[to]->u.kernel.param_size))
			return false;
		found = (int)k;
	}
	if (found < 0)
		return false;
	*op = to;
	*word = set.acc[found].word;
	return true;
}

/* Whether access a is a read of r a patch of its pointer can move to the buffer: an exact span
 * inside r through a pointer parameter or field that the launch does not also write through. */
static bool use_patchable(const struct rw_access *a, const struct rw_range *r, uint32_t param_size)
{
	return access_patchable(a) && !(a->flags & RW_ACC_WRITE) && inside(a->addr, a->bytes, r) &&
	       (uint64_t)a->word + 8 <= param_size;
}

/* Whether op e surely writes every byte launch l may write: a copy or memset through
 * rw_cond_holds' COVERS, a launch through accesses that are exact spans written whole. */
static bool writes_cover(const struct cap_op *l, const struct cap_op *e)
{
	struct rw_access_set set;
	struct rw_effects el;

	if (e->kind != CAP_OP_KERNEL)
		return rw_cond_holds(RW_G_COVERS, l, e, false);
	rw_op_effects(l, &el);
	if (el.all || rw_op_kernel_access(e, &set) != 0 || (set.flags & RW_SET_INDIRECT))
		return false;
	for (uint32_t w = 0; w < el.nw; w++) {
		bool covered = false;

		if (el.w[w].width)
			return false; /* pitched: not followed */
		for (unsigned k = 0; k < set.n && !covered; k++) {
			const struct rw_access *a = &set.acc[k];

			covered = (a->flags & RW_ACC_WRITE) && !(a->flags & RW_ACC_UNKNOWN) && written_whole(&set, k) &&
				  inside(el.w[w].addr, el.w[w].bytes, &(struct rw_range){ a->addr, a->bytes, 0, 0 });
		}
		if (!covered)
			return false;
	}
	return true;
}

/* Whether op reads r (its effects), writes it, or may touch anything (*all). */
static void meets(const struct cap_op *op, const struct rw_range *r, bool *reads, bool *writes, bool *all)
{
	struct rw_effects e;

	*reads = *writes = *all = false;
	if (op->kind == CAP_OP_EVENT_RECORD || op->kind == CAP_OP_EVENT_WAIT)
		return;
	rw_op_effects(op, &e);
	*all = e.all;
	for (uint32_t k = 0; k < e.nr && !*reads; k++)
		*reads = rw_range_overlap(&e.r[k], r);
	for (uint32_t k = 0; k < e.nw && !*writes; k++)
		*writes = rw_range_overlap(&e.w[k], r);
}

/* Add op q's reads of r to out's uses: false when one cannot be patched (or too many). */
static bool uses_add(const struct cap_op *op, uint32_t q, const struct rw_range *r, struct rw_rename_scan *out)
{
	struct rw_access_set set;

	if (op->kind == CAP_OP_MEMCPY) {
		/* a 1-D device copy's source, inside r */
		if (!rw_op_is_linear_dtod(op) || !inside(op->u.memcpy.src_first, op->u.memcpy.bytes, r) ||
		    out->nuse == RW_RENAME_USES)
			return false;
		out->use[out->nuse++] = (struct rw_rename_use){ q, RW_USE_COPY_SOURCE };
		return true;
	}
	if (op->kind != CAP_OP_KERNEL || rw_op_kernel_access(op, &set) != 0 || (set.flags & RW_SET_INDIRECT))
		return false;
	for (unsigned k = 0; k < set.n; k++) {
		const struct rw_access *a = &set.acc[k];
		struct rw_range q2 = { a->addr, a->bytes, 0, 0 };

		if (!(a->flags & RW_ACC_READ))
			continue;
		if (a->flags & RW_ACC_UNKNOWN)
			return false; /* its allocation may hold the range */
		if (!rw_range_overlap(&q2, r))
			continue;
		if (!use_patchable(a, r, op->u.kernel.param_size) || out->nuse == RW_RENAME_USES)
			return false;
		out->use[out->nuse++] = (struct rw_rename_use){ q, a->word };
	}
	return true;
}

void rw__rename_scan(const struct cap_op *const *ops, uint32_t n, uint32_t l, const struct rw_range *r,
		     struct rw_rename_scan *out)
{
	bool reads, writes, all = false, covered;
	uint32_t q;

	out->end = RW_NONE;
	out->nuse = 0;
	out->nkept = 0;
	out->back = true;
	out->refused = false;
	for (q = l + 1; q < n; q++) {
		uint32_t had = out->nuse;

		meets(ops[q], r, &reads, &writes, &all);
		if (all) {
			/* it may read r, and write it, anywhere (an indirect launch: CuPy's concatenate
			 * reads its inputs through a table in device memory): kept, reading r after the
			 * copy back, and taken for the next write, one that covers nothing */
			if (out->nuse == RW_RENAME_USES) {
				out->refused = true;
				return;
			}
			out->use[out->nuse++] = (struct rw_rename_use){ q, RW_USE_KEPT };
			out->nkept++;
			out->end = q;
			break;
		}
		if (reads && !uses_add(ops[q], q, r, out)) {
			/* no patch follows its read: it keeps reading r, which the copy back at L's
			 * position holds L's bytes in again before it (rename.c keeps it after) */
			out->nuse = had;
			if (out->nuse == RW_RENAME_USES) {
				out->refused = true;
				return;
			}
			out->use[out->nuse++] = (struct rw_rename_use){ q, RW_USE_KEPT };
			out->nkept++;
		}
		if (writes) {
			out->end = q;
			break;
		}
	}
	/* no copy back when the next write surely covers all the launch writes and no reader was
	 * kept on r */
	covered = out->end != RW_NONE && !all && writes_cover(ops[l], ops[out->end]);
	out->back = out->nkept || !covered;
	if (covered)
		return;
	/* copied back at L's position, and the next write leaves some of L's bytes: the plan is
	 * made over the window where L writes the buffer, so nothing after that write may read r
	 * (what a rule would take for r's older bytes) */
	for (q = out->end == RW_NONE ? n : out->end + 1; q < n && !out->refused; q++) {
		meets(ops[q], r, &reads, &writes, &all);
		out->refused = all || reads;
	}
}

enum rw_apart rw_multi_apart(struct rw_kernels *kc, const struct cap_op *const *ops, uint32_t n, uint32_t i)
{
	struct rw_effects e;
	uint32_t from, to;
	bool others = false;

	if (!rw_multi_possible(kc, ops[i]))
		return RW_APART_NO_VARIANT;
	rw_op_effects(ops[i], &e);
	if (e.all)
		return RW_APART_EFFECTS;
	for (uint32_t j = 0; j < n && !others; j++)
		others = j != i && rw_multi_fits(ops[i], ops[j]);
	if (!others)
		return RW_APART_ALONE;
	if (unknown_between(ops, n, i))
		return RW_APART_UNKNOWN_BETWEEN;
	return reuse_partner(ops, n, i, &from, &to) ? RW_APART_REUSED : RW_APART_ORDERED;
}

/* One launch of the variant running the launches orig: the members, then the table in the
 * node's scratch and the launch over it. */
static int derive_batch_kernel(struct rw_kernels *kc, const struct rw_plan_node *n, const struct cap_op *const *ops,
			       struct cap_op *out)
{
	const struct cap_op *members[RW_MULTI_MAX];

	if (n->norig < 2 || n->norig > RW_MULTI_MAX || !n->scratch)
		return -CF_EINVAL;
	for (uint32_t i = 0; i < n->norig; i++) {
		const struct cap_op *m = ops[n->orig[i]];

		if (!rw_multi_fits(ops[n->orig[0]], m))
			return -CF_EINVAL;
		members[i] = m;
	}
	if (multi_hooks)
		return multi_hooks->launch(members, n->norig, n->scratch, n->scratch_size, out);
	return rw_kernels_multi_launch(kc, members, n->norig, n->scratch, n->scratch_size, out);
}

int rw_node_derive(struct rw_kernels *kc, const struct rw_plan_node *n, const struct cap_op *const *ops,
		   struct cap_op *out)
{
	if (!n->norig)
		return -CF_EINVAL;
	switch (n->kind) {
	case RW_NODE_OP:
		*out = *ops[n->orig[0]];
		return 0;
	case RW_NODE_COPY:
	case RW_NODE_FORWARD:
	case RW_NODE_CHAIN:
		return derive_copy(n, ops, out);
	case RW_NODE_SET:
		return derive_set(n, ops, out);
	case RW_NODE_BATCH_COPY:
		return derive_batch(kc, n, &batch_copy, ops, out);
	case RW_NODE_BATCH_SET:
		return derive_batch(kc, n, &batch_memset, ops, out);
	case RW_NODE_BATCH_COPY2D:
		return derive_batch(kc, n, &batch_copy2d, ops, out);
	case RW_NODE_CAT_COPY:
		return derive_cat_copy(n, ops, out);
	case RW_NODE_ELEMENTWISE:
		return derive_elementwise(n, ops, out);
	case RW_NODE_BATCH_KERNEL:
		return derive_batch_kernel(kc, n, ops, out);
	default:
		return -CF_EINVAL;
	}
}

uint32_t rw_node_scratch_bytes(enum rw_node_kind kind, const struct cap_op *first)
{
	switch (kind) {
	case RW_NODE_BATCH_COPY:
	case RW_NODE_BATCH_SET:
	case RW_NODE_BATCH_COPY2D:
		return RW_BATCH_TABLE_SIZE;
	case RW_NODE_ELEMENTWISE:
		return first->kind == CAP_OP_KERNEL ? first->u.kernel.param_size : 0;
	case RW_NODE_BATCH_KERNEL:
		return RW_MULTI_TABLE_BYTES;
	default:
		return 0;
	}
}
