/* effects.c - the ranges one op reads and writes (copies and memsets from their arguments,
 * kernels from their cards), purity and sameness of ops. rewrite layer; pure computation. */
#include <string.h>

#include "common/compiler.h"
#include "common/errors.h"
#include "common/serial.h"
#include "driver/api.h"
#include "rewrite/derived.h"
#include "rewrite/effects.h"
#include "rewrite/kernels/batch.h"
#include "rewrite/rewriter.h"

static bool overlap(uint64_t a0, uint64_t an, uint64_t b0, uint64_t bn)
{
	return an && bn && a0 < b0 + bn && b0 < a0 + an;
}

/* Whether pitched region p (rows of p->width bytes from p->addr, p->pitch apart, the last ending
 * at the span's end) meets the contiguous [a, a + n). */
static bool pitched_meets(const struct rw_range *p, uint64_t a, uint64_t n)
{
	uint64_t rows = (p->bytes - p->width) / p->pitch + 1, r;

	if (!overlap(p->addr, p->bytes, a, n))
		return false;
	/* the first row that ends after a; it meets [a, a+n) when it starts before a + n */
	r = a < p->addr + p->width ? 0 : (a - p->addr - p->width) / p->pitch + 1;
	return r < rows && p->addr + r * p->pitch < a + n;
}

bool rw_range_overlap(const struct rw_range *x, const struct rw_range *y)
{
	if (!overlap(x->addr, x->bytes, y->addr, y->bytes))
		return false;
	if (!x->pitch && !y->pitch)
		return true;
	if (!y->pitch)
		return pitched_meets(x, y->addr, y->bytes);
	if (!x->pitch)
		return pitched_meets(y, x->addr, x->bytes);
	if (x->pitch == y->pitch) {
		/* columns on a circle of one pitch: x covers [0, wx), y covers [o, o + wy) */
		uint64_t o = y->addr >= x->addr ? (y->addr - x->addr) % x->pitch
						: (x->pitch - (x->addr - y->addr) % x->pitch) % x->pitch;

		return !(o >= x->width && o + y->width <= x->pitch);
	}
	return true; /* different pitches: by span */
}

bool rw_ranges_overlap(const struct rw_range *list, uint32_t n, const struct rw_range *q)
{
	for (uint32_t i = 0; i < n; i++)
		if (rw_range_overlap(&list[i], q))
			return true;
	return false;
}

/* A side of a copy: pitched when it has several rows of one layer, else its span. */
static struct rw_range copy_side(uint64_t first, uint64_t span, const CUDA_MEMCPY3D *d, size_t pitch)
{
	if (d->Height > 1 && d->Depth == 1 && pitch > d->WidthInBytes)
		return (struct rw_range){ first, span, d->WidthInBytes, pitch };
	return (struct rw_range){ first, span, 0, 0 };
}

uint64_t rw_set_bytes(const struct cap_op *op)
{
	return (uint64_t)op->u.memset.width * op->u.memset.elem_size;
}

/* Bytes from a memset's first byte to one past its last. */
static uint64_t set_span(const struct cap_memset *m)
{
	uint64_t row = (uint64_t)m->width * m->elem_size;

	return m->height > 1 ? (uint64_t)m->pitch * (m->height - 1) + row : row;
}

int rw_op_kernel_access(const struct cap_op *op, struct rw_access_set *set)
{
	const struct cap_kernel *k = &op->u.kernel;
	struct rw_param_info info[RW_CARD_MAX_PARAMS];
	struct rw_launch_args args;
	const struct rw_card *card;

	if (op->kind != CAP_OP_KERNEL || !k->info || !k->info->layout_known || k->info->nparams > RW_CARD_MAX_PARAMS)
		return -CF_EINVAL;
	card = rw_card_for(k->info, NULL); /* the user's card, else one derived from the PTX */
	if (!card)
		return -CF_ENOENT;
	for (uint32_t i = 0; i < k->info->nparams; i++) {
		info[i].offset = k->info->offset[i];
		info[i].size = k->info->size[i];
	}
	memset(&args, 0, sizeof(args));
	args.buf = k->params;
	args.buf_size = k->param_size;
	args.params = info;
	args.nparams = k->info->nparams;
	memcpy(args.grid, k->grid, sizeof(args.grid));
	memcpy(args.block, k->block, sizeof(args.block));
	return rw_card_access(card, &args, set);
}

/* A pitched or contiguous range of a 2-D batch region's side. */
static struct rw_range region_side(uint64_t first, uint64_t width, uint64_t height, uint64_t pitch)
{
	uint64_t span = (height - 1) * pitch + width;

	if (height > 1 && pitch > width)
		return (struct rw_range){ first, span, width, pitch };
	return (struct rw_range){ first, span, 0, 0 };
}

/* cufold's own batch kernels: their tables decoded here, by name, never through a card (a card
 * cannot say a pitched region, and a user's card matching the name must not change what cufold
 * believes of its own kernels). false for any other kernel. */
static bool batch_effects(const struct cap_op *op, struct rw_effects *e)
{
	const struct cap_kernel *k = &op->u.kernel;
	const char *name = k->info ? k->info->name : NULL;

	if (!name || strncmp(name, "cufold_", 7) != 0)
		return false;
	if (k->param_size != RW_BATCH_TABLE_SIZE || k->via_extra ||
	    (strcmp(name, "cufold_batch_copy") && strcmp(name, "cufold_batch_memset") &&
	     strcmp(name, "cufold_batch_copy2d"))) {
		e->all = true; /* the _buf kernels read their table from device memory */
		return true;
	}
	if (!strcmp(name, "cufold_batch_copy")) {
		struct rw_batch_copy_table t;

		memcpy(&t, k->params, sizeof(t));
		for (uint32_t i = 0; i < t.count && i < RW_BATCH_MAX; i++) {
			e->r[e->nr++] = (struct rw_range){ t.r[i].src, t.r[i].bytes, 0, 0 };
			e->w[e->nw++] = (struct rw_range){ t.r[i].dst, t.r[i].bytes, 0, 0 };
		}
	} else if (!strcmp(name, "cufold_batch_memset")) {
		struct rw_batch_memset_table t;

		memcpy(&t, k->params, sizeof(t));
		for (uint32_t i = 0; i < t.count && i < RW_BATCH_MAX; i++)
			e->w[e->nw++] = (struct rw_range){ t.r[i].dst, t.r[i].bytes, 0, 0 };
	} else {
		struct rw_batch_copy2d_table t;

		memcpy(&t, k->params, sizeof(t));
		for (uint32_t i = 0; i < t.count && i < RW_BATCH2D_MAX; i++) {
			const struct rw_batch_copy2d_range *g = &t.r[i];

			if (!g->width || !g->height)
				continue;
			e->r[e->nr++] = region_side(g->src, g->width, g->height, g->spitch);
			e->w[e->nw++] = region_side(g->dst, g->width, g->height, g->dpitch);
		}
	}
	return true;
}

static __thread struct rw_alloc_view *alloc_view;

struct rw_alloc_view *rw_alloc_view_use(struct rw_alloc_view *v)
{
	struct rw_alloc_view *was = alloc_view;

	alloc_view = v;
	return was;
}

struct rw_alloc_view *rw_alloc_view_current(void)
{
	return alloc_view;
}

/* The extent of the allocation addr points into, as this thread's view knows it; false when
 * it does not (the span is then everything). */
static bool alloc_extent(uint64_t addr, struct rw_range *out)
{
	struct rw_alloc_view *v = alloc_view;
	const struct cap_alloc *a = NULL;

	if (!v)
		return false;
	v->asked = true;
	if (v->snap)
		a = cap_alloc_snapshot_find(v->snap, v->nsnap, addr);
	else if (v->live) {
		cf_assert(cf_serial_is_held()); /* the map's array moves under other threads' calls */
		a = cap_alloc_find(v->live, addr);
	}
	if (!a)
		return false;
	*out = (struct rw_range){ a->base, a->size, 0, 0 };
	return true;
}

static void kernel_effects(const struct cap_op *op, struct rw_effects *e)
{
	struct rw_access_set set;

	if (batch_effects(op, e))
		return;

	/* indirect: addresses from loaded data, anywhere; an unknown span is its allocation */
	if (rw_op_kernel_access(op, &set) != 0 || (set.flags & RW_SET_INDIRECT)) {
		e->all = true;
		return;
	}
	for (unsigned i = 0; i < set.n; i++) {
		const struct rw_access *a = &set.acc[i];
		struct rw_range r = { a->addr, a->bytes, 0, 0 };

		if ((a->flags & RW_ACC_UNKNOWN) && !alloc_extent(a->addr, &r)) {
			e->all = true;
			e->nr = e->nw = 0;
			return;
		}
		if (a->flags & RW_ACC_READ)
			e->r[e->nr++] = r;
		if (a->flags & RW_ACC_WRITE)
			e->w[e->nw++] = r;
	}
}

void rw_op_effects(const struct cap_op *op, struct rw_effects *e)
{
	e->all = false;
	e->nr = e->nw = 0;
	switch (op->kind) {
	case CAP_OP_MEMCPY: {
		const struct cap_memcpy *c = &op->u.memcpy;

		/* a pageable side is host memory only the host reaches: it cannot alias device ranges,
		 * but it is listed all the same (the ranges are plain addresses) */
		e->r[e->nr++] = copy_side(c->src_first, c->src_span, &c->d, c->d.srcPitch);
		e->w[e->nw++] = copy_side(c->dst_first, c->dst_span, &c->d, c->d.dstPitch);
		return;
	}
	case CAP_OP_MEMSET: {
		const struct cap_memset *m = &op->u.memset;
		uint64_t row = (uint64_t)m->width * m->elem_size;

		if (m->height > 1 && m->pitch > row)
			e->w[e->nw++] = (struct rw_range){ m->dst, set_span(m), row, m->pitch };
		else
			e->w[e->nw++] = (struct rw_range){ m->dst, set_span(m), 0, 0 };
		return;
	}
	case CAP_OP_KERNEL:
		kernel_effects(op, e);
		return;
	default:
		e->all = true;
		return;
	}
}

bool rw_op_is_set_1d(const struct cap_op *op)
{
	if (op->kind != CAP_OP_MEMSET || op->u.memset.height != 1 || !op->u.memset.width)
		return false;
	if (op->flags & (CAP_OPF_ENDS_WINDOW | CAP_OPF_FAILED | CAP_OPF_NO_DEFER))
		return false;
	return op->stream_kind != CAP_STREAM_PER_THREAD && drv_api_is(op->api, DRV_API_ASYNC);
}

bool rw_op_sure_write(const struct cap_op *op, struct rw_range *out)
{
	if (op->kind == CAP_OP_MEMCPY && rw_op_is_linear_dtod(op)) {
		*out = (struct rw_range){ op->u.memcpy.dst_first, op->u.memcpy.bytes, 0, 0 };
		return true;
	}
	if (op->kind == CAP_OP_MEMSET && op->u.memset.height == 1) {
		*out = (struct rw_range){ op->u.memset.dst, rw_set_bytes(op), 0, 0 };
		return out->bytes != 0;
	}
	return false;
}

bool rw_op_is_pure(const struct cap_op *op)
{
	struct rw_effects e;

	switch (op->kind) {
	case CAP_OP_MEMSET:
		return true;
	case CAP_OP_MEMCPY:
		rw_op_effects(op, &e);
		return !rw_range_overlap(&e.r[0], &e.w[0]);
	case CAP_OP_KERNEL: {
		struct rw_access_set set;

		if (rw_op_kernel_access(op, &set) != 0 || !(set.flags & RW_SET_PURE))
			return false;
		if (set.flags & (RW_SET_INDIRECT | RW_SET_UNKNOWN_SPAN) || rw_access_set_self_overlaps(&set))
			return false;
		rw_op_effects(op, &e);
		return !e.all;
	}
	default:
		return false;
	}
}

/* rw_op_same, kind by kind. A launch with attributes is never the same: they are not compared. */
static bool kernel_same(const struct cap_kernel *x, const struct cap_kernel *y)
{
	return x->func == y->func && x->handle == y->handle && !x->nattrs && !y->nattrs &&
	       memcmp(x->grid, y->grid, sizeof(x->grid)) == 0 && memcmp(x->block, y->block, sizeof(x->block)) == 0 &&
	       x->shared_bytes == y->shared_bytes && x->param_size == y->param_size && x->via_extra == y->via_extra &&
	       memcmp(x->params, y->params, x->param_size) == 0;
}

/* Field by field: the descriptor has padding. A pageable source is read at each call: never the same. */
static bool memcpy_same(const struct cap_memcpy *x, const struct cap_memcpy *y)
{
	const CUDA_MEMCPY3D *p = &x->d, *q = &y->d;

	if (x->src_pageable || y->src_pageable)
		return false;
	/* field by field: the descriptor has padding; the array handles too, since capture resolves
	 * every array side from address 0 and only the handle tells arrays apart */
	return x->dir == y->dir && x->src_first == y->src_first && x->dst_first == y->dst_first &&
	       x->bytes == y->bytes && x->src_span == y->src_span && x->dst_span == y->dst_span &&
	       x->src_ctx == y->src_ctx && x->dst_ctx == y->dst_ctx && p->WidthInBytes == q->WidthInBytes &&
	       p->Height == q->Height && p->Depth == q->Depth && p->srcPitch == q->srcPitch &&
	       p->dstPitch == q->dstPitch && p->srcHeight == q->srcHeight && p->dstHeight == q->dstHeight &&
	       p->srcMemoryType == q->srcMemoryType && p->dstMemoryType == q->dstMemoryType &&
	       p->srcArray == q->srcArray && p->dstArray == q->dstArray;
}

static bool memset_same(const struct cap_memset *x, const struct cap_memset *y)
{
	return x->dst == y->dst && x->pitch == y->pitch && x->elem_size == y->elem_size && x->value == y->value &&
	       x->width == y->width && x->height == y->height;
}

bool rw_op_same(const struct cap_op *a, const struct cap_op *b)
{
	bool same = false;

	if (a->kind != b->kind || a->api != b->api || a->stream != b->stream || a->ctx != b->ctx)
		return false;
	switch (a->kind) {
	case CAP_OP_KERNEL:
		same = kernel_same(&a->u.kernel, &b->u.kernel);
		break;
	case CAP_OP_MEMCPY:
		same = memcpy_same(&a->u.memcpy, &b->u.memcpy);
		break;
	case CAP_OP_MEMSET:
		same = memset_same(&a->u.memset, &b->u.memset);
		break;
	case CAP_OP_EVENT_RECORD:
	case CAP_OP_EVENT_WAIT:
		same = a->u.event.event == b->u.event.event && a->u.event.flags == b->u.event.flags &&
		       a->u.event.slot == b->u.event.slot;
		break;
	default:
		break;
	}
	return same;
}
