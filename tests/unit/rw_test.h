/* rw_test.h - what the rewrite rules' unit tests (tests/unit/test_rewrite_*.c) share: ops built as
 * capture records them, kernel layouts, rewriting a window into a plan and its one-line form,
 * the identity check of near misses, the fake kernel resolver. tests layer (cmocka, libcufold.a).
 *
 * Everything is static inline, so a test file pays only for what it uses and -Werror stays
 * quiet about the rest. A file whose ops must carry capture's hashes (key and bind: duplicate
 * compares ops by them, and rw_run's last-launch cache reads them) defines RWT_HASH_OPS before
 * including this header; every builder then hashes its op as capture does. */
#ifndef RW_TEST_H
#define RW_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "common/errors.h"
#include "driver/api.h"
#include "rewrite/kernels.h"
#include "rewrite/plan.h"
#include "rewrite/rewriter.h"

/* The test kernels' cards are not built in (rewrite/builtin_cards.txt): read them the way a user
 * provides cards, through CUFOLD_CARDS (tests/run sets it; this covers running a binary alone),
 * before the first card lookup. */
__attribute__((constructor)) static void rwt_test_cards(void)
{
	setenv("CUFOLD_CARDS", TEST_CARDS_FILE, 0);
}

#define STREAM_A ((CUstream)0x1000) /* the streams of the windows: slot 0 */
#define STREAM_B ((CUstream)0x2000) /* slot 1 */
#define RWT_MAX_OPS 64              /* ops of one window rwt_run takes at most */
#define RWT_BLOCK 128u              /* threads a block of rwt_kernel_n_op's launches */

/* ------------------------------------------------------------------ ops */

static inline uint16_t rwt_slot_of(CUstream s)
{
	return s == STREAM_A ? 0 : 1;
}

/* The last step of every builder: hashed as capture would, where the file asks for it. */
static inline struct cap_op rwt_finish(struct cap_op op)
{
#ifdef RWT_HASH_OPS
	cap_op_hash(&op);
#endif
	return op;
}

/* The fields every op of stream s has, the rest zero. */
static inline struct cap_op rwt_op(enum cap_op_kind kind, enum drv_api_id api, CUstream s)
{
	struct cap_op op;

	memset(&op, 0, sizeof(op));
	op.kind = kind;
	op.api = api;
	op.stream = s;
	op.stream_slot = rwt_slot_of(s);
	op.stream_kind = CAP_STREAM_BLOCKING;
	return op;
}

/* Point a 2-D copy at new sides and extent, keeping every form capture keeps consistent (spans
 * as capture's box_span computes them). */
static inline void rwt_copy2d_set(struct cap_op *op, uint64_t src, size_t spitch, uint64_t dst, size_t dpitch,
				  size_t width, size_t height)
{
	struct cap_memcpy *m = &op->u.memcpy;

	m->d.srcDevice = src;
	m->d.dstDevice = dst;
	m->d.srcPitch = spitch;
	m->d.dstPitch = dpitch;
	m->d.WidthInBytes = width;
	m->d.Height = height;
	m->bytes = (uint64_t)width * height * m->d.Depth;
	m->src_first = src;
	m->dst_first = dst;
	m->src_span = (uint64_t)(height - 1) * spitch + width;
	m->dst_span = (uint64_t)(height - 1) * dpitch + width;
}

/* A device-to-device copy through entry point api, before its sides are set. */
static inline struct cap_op rwt_dtod_op(enum drv_api_id api, CUstream s)
{
	struct cap_op op = rwt_op(CAP_OP_MEMCPY, api, s);

	op.u.memcpy.d.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	op.u.memcpy.d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	op.u.memcpy.d.Depth = 1;
	op.u.memcpy.dir = CAP_DIR_DTOD;
	return op;
}

/* An asynchronous 2-D device-to-device copy (cuMemcpy2DAsync) as capture records it. */
static inline struct cap_op rwt_copy2d_op(uint64_t src, size_t spitch, uint64_t dst, size_t dpitch, size_t width,
					  size_t height, CUstream s)
{
	struct cap_op op = rwt_dtod_op(DRV_ID_cuMemcpy2DAsync_v2, s);

	rwt_copy2d_set(&op, src, spitch, dst, dpitch, width, height);
	return rwt_finish(op);
}

/* An asynchronous 1-D device-to-device copy (cuMemcpyDtoDAsync) as capture records it: no
 * pitches, one row. */
static inline struct cap_op rwt_copy_op(uint64_t src, uint64_t dst, uint64_t bytes, CUstream s)
{
	struct cap_op op = rwt_dtod_op(DRV_ID_cuMemcpyDtoDAsync_v2, s);

	rwt_copy2d_set(&op, src, 0, dst, 0, bytes, 1);
	return rwt_finish(op);
}

/* Move a copy's source (descriptor and resolved address together, as capture records it). */
static inline void rwt_move_src(struct cap_op *op, uint64_t src)
{
	op->u.memcpy.d.srcDevice = src;
	op->u.memcpy.src_first = src;
}

static inline void rwt_move_dst(struct cap_op *op, uint64_t dst)
{
	op->u.memcpy.d.dstDevice = dst;
	op->u.memcpy.dst_first = dst;
}

static inline void rwt_copy_move(struct cap_op *op, uint64_t src, uint64_t dst)
{
	rwt_move_src(op, src);
	rwt_move_dst(op, dst);
}

/* An asynchronous 1-D memset of width elements of elem_size bytes (1, 2 or 4) of value. */
static inline struct cap_op rwt_memset_elems_op(uint64_t dst, size_t width, unsigned elem_size, unsigned value,
						CUstream s)
{
	enum drv_api_id api = elem_size == 4 ? DRV_ID_cuMemsetD32Async
			       : elem_size == 2 ? DRV_ID_cuMemsetD16Async : DRV_ID_cuMemsetD8Async;
	struct cap_op op = rwt_op(CAP_OP_MEMSET, api, s);

	op.u.memset.dst = dst;
	op.u.memset.elem_size = elem_size;
	op.u.memset.value = value;
	op.u.memset.width = width;
	op.u.memset.pitch = width * elem_size;
	op.u.memset.height = 1;
	return rwt_finish(op);
}

/* An asynchronous cuMemsetD8Async of bytes bytes of zero. */
static inline struct cap_op rwt_memset_op(uint64_t dst, uint64_t bytes, CUstream s)
{
	return rwt_memset_elems_op(dst, bytes, 1, 0, s);
}

static inline struct cap_op rwt_event_record_op(CUstream s)
{
	struct cap_op op = rwt_op(CAP_OP_EVENT_RECORD, DRV_ID_cuEventRecord, s);

	op.u.event.event = (CUevent)0x3000;
	return rwt_finish(op);
}

/* ------------------------------------------------------------------ kernels */

/* Parameter layouts as cuFuncGetParamInfo reports them for the built-in cards' kernels: scale
 * and axpy (out/y ptr, in/x ptr, a f32, n i32), fill (x ptr, v f32, n i32), and "mystery" (p
 * ptr, n i32), the layout the tests give a kernel no card describes. Each RWT_LAYOUT_* is
 * nparams, param_bytes, offsets, sizes: the last four arguments of RWT_FUNC. */
static uint32_t rwt_scale_off[4] __attribute__((unused)) = { 0, 8, 16, 20 };
static uint32_t rwt_scale_size[4] __attribute__((unused)) = { 8, 8, 4, 4 };
static uint32_t rwt_fill_off[3] __attribute__((unused)) = { 0, 8, 12 };
static uint32_t rwt_fill_size[3] __attribute__((unused)) = { 8, 4, 4 };
static uint32_t rwt_mystery_off[2] __attribute__((unused)) = { 0, 8 };
static uint32_t rwt_mystery_size[2] __attribute__((unused)) = { 8, 4 };
#define RWT_LAYOUT_SCALE 4, 24, rwt_scale_off, rwt_scale_size
#define RWT_LAYOUT_FILL 3, 16, rwt_fill_off, rwt_fill_size
#define RWT_LAYOUT_MYSTERY 2, 12, rwt_mystery_off, rwt_mystery_size

/* The initializer of a struct cap_func as capture records a kernel whose layout it learnt:
 * RWT_FUNC(handle, id, name, RWT_LAYOUT_SCALE), or with the layout spelt out (nparams,
 * param_bytes, offsets, sizes). The extra level expands a RWT_LAYOUT_* into its four parts. */
#define RWT_FUNC(handle, fid, fname, ...) RWT_FUNC_(handle, fid, fname, __VA_ARGS__)
#define RWT_FUNC_(handle, fid, fname, np, bytes, off, sz)                                                       \
	{ .func = (CUfunction)(handle), .id = (fid), .nparams = (np), .param_bytes = (bytes), .layout_known = true, \
	  .name = (fname), .offset = (off), .size = (sz) }

/* Blocks of block threads covering n elements. */
static inline unsigned rwt_grid(uint32_t n, unsigned block)
{
	return (n + block - 1) / block;
}

/* A 1-D cuLaunchKernel of f on grid blocks of block threads; params: its packed parameter bytes
 * (the caller's storage, f->param_bytes of them, set before the call: the hash covers them). */
static inline struct cap_op rwt_kernel_op(const struct cap_func *f, void *params, unsigned grid, unsigned block,
					  CUstream s)
{
	struct cap_op op = rwt_op(CAP_OP_KERNEL, DRV_ID_cuLaunchKernel, s);

	op.u.kernel.handle = f->func;
	op.u.kernel.func = f->func;
	op.u.kernel.info = f;
	op.u.kernel.grid[0] = grid;
	op.u.kernel.grid[1] = op.u.kernel.grid[2] = 1;
	op.u.kernel.block[0] = block;
	op.u.kernel.block[1] = op.u.kernel.block[2] = 1;
	op.u.kernel.param_size = f->param_bytes;
	op.u.kernel.params = params;
	return rwt_finish(op);
}

/* A launch of f over n elements, RWT_BLOCK threads a block. */
static inline struct cap_op rwt_kernel_n_op(const struct cap_func *f, void *params, uint32_t n, CUstream s)
{
	return rwt_kernel_op(f, params, rwt_grid(n, RWT_BLOCK), RWT_BLOCK, s);
}

/* Put a value into packed parameter bytes at off. */
static inline void rwt_put_u64(void *pb, uint32_t off, uint64_t v)
{
	memcpy((unsigned char *)pb + off, &v, 8);
}

static inline void rwt_put_i32(void *pb, uint32_t off, int32_t v)
{
	memcpy((unsigned char *)pb + off, &v, 4);
}

static inline void rwt_put_f32(void *pb, uint32_t off, float v)
{
	memcpy((unsigned char *)pb + off, &v, 4);
}

/* The pointer (8 bytes) or 4-byte value at off of a launch's parameters. */
static inline uint64_t rwt_param_u64(const struct cap_op *op, uint32_t off)
{
	uint64_t v;

	memcpy(&v, (const unsigned char *)op->u.kernel.params + off, 8);
	return v;
}

static inline int32_t rwt_param_i32(const struct cap_op *op, uint32_t off)
{
	int32_t v;

	memcpy(&v, (const unsigned char *)op->u.kernel.params + off, 4);
	return v;
}

static inline float rwt_param_f32(const struct cap_op *op, uint32_t off)
{
	float v;

	memcpy(&v, (const unsigned char *)op->u.kernel.params + off, 4);
	return v;
}

/* Move a pointer parameter of a launch already built (its hash is not redone). */
static inline void rwt_set_param_u64(struct cap_op *op, uint32_t off, uint64_t v)
{
	rwt_put_u64(op->u.kernel.params, off, v);
}

/* Pack pb for f of the scale layout (scale, axpy): p0, p1, a, n at f's offsets, the rest zero. */
static inline void rwt_pack_scale(const struct cap_func *f, void *pb, uint64_t p0, uint64_t p1, float a, int32_t n)
{
	memset(pb, 0, f->param_bytes);
	rwt_put_u64(pb, f->offset[0], p0);
	rwt_put_u64(pb, f->offset[1], p1);
	rwt_put_f32(pb, f->offset[2], a);
	rwt_put_i32(pb, f->offset[3], n);
}

/* Pack pb for f of the fill layout: x, v, n. */
static inline void rwt_pack_fill(const struct cap_func *f, void *pb, uint64_t x, float v, int32_t n)
{
	memset(pb, 0, f->param_bytes);
	rwt_put_u64(pb, f->offset[0], x);
	rwt_put_f32(pb, f->offset[1], v);
	rwt_put_i32(pb, f->offset[2], n);
}

/* Pack pb for f of the mystery layout: p, n. */
static inline void rwt_pack_mystery(const struct cap_func *f, void *pb, uint64_t p, int32_t n)
{
	memset(pb, 0, f->param_bytes);
	rwt_put_u64(pb, f->offset[0], p);
	rwt_put_i32(pb, f->offset[1], n);
}

/* scale (or axpy, f of that layout): out[i] = sc * in[i], i < n; its parameters packed in pb
 * (the caller's storage); launched over n. */
static inline struct cap_op rwt_scale_op(const struct cap_func *f, void *pb, uint64_t out, uint64_t in, float sc,
					 int32_t n, CUstream s)
{
	rwt_pack_scale(f, pb, out, in, sc, n);
	return rwt_kernel_n_op(f, pb, (uint32_t)n, s);
}

/* fill: x[i] = v, i < n (writes x, n*4 bytes). */
static inline struct cap_op rwt_fill_op(const struct cap_func *f, void *pb, uint64_t x, float v, int32_t n,
					CUstream s)
{
	rwt_pack_fill(f, pb, x, v, n);
	return rwt_kernel_n_op(f, pb, (uint32_t)n, s);
}

/* A kernel no card describes, given a pointer p: it may read and write anything. */
static inline struct cap_op rwt_mystery_op(const struct cap_func *f, void *pb, uint64_t p, int32_t n, CUstream s)
{
	rwt_pack_mystery(f, pb, p, n);
	return rwt_kernel_n_op(f, pb, (uint32_t)n, s);
}

/* ------------------------------------------------------------------ cufold's batch kernels */

/* What the fake resolver answers for kernel k: recognizable, never a real handle. */
#define RWT_FAKE_FUNC(k) ((CUfunction)(uintptr_t)(0xfeed0000u + (unsigned)(k)))

/* Resolves cufold's batch kernels without a device (rw__set_kernel_resolver). */
static inline CUresult rwt_fake_resolver(CUcontext ctx, int kernel, CUfunction *out)
{
	(void)ctx;
	*out = RWT_FAKE_FUNC(kernel);
	return CUDA_SUCCESS;
}

/* The launch every batch node derives under the fake resolver: kernel k with one table
 * parameter, y = one block row per range (or region), 256 threads a block, on stream s. */
static inline void rwt_check_batch_launch(const struct cap_op *out, enum rw_kernel k, unsigned gx, unsigned ranges,
					  CUstream s)
{
	assert_int_equal(out->kind, CAP_OP_KERNEL);
	assert_int_equal(out->api, DRV_ID_cuLaunchKernel);
	assert_ptr_equal(out->u.kernel.func, RWT_FAKE_FUNC(k));
	assert_ptr_equal(out->u.kernel.handle, RWT_FAKE_FUNC(k));
	assert_non_null(out->u.kernel.info);
	assert_string_equal(out->u.kernel.info->name, rw_kernel_name(k));
	assert_int_equal(out->u.kernel.info->nparams, 1);
	assert_int_equal(out->u.kernel.info->offset[0], 0);
	assert_int_equal(out->u.kernel.info->size[0], RW_BATCH_TABLE_SIZE);
	assert_int_equal(out->u.kernel.grid[0], gx);
	assert_int_equal(out->u.kernel.grid[1], ranges);
	assert_int_equal(out->u.kernel.grid[2], 1);
	assert_int_equal(out->u.kernel.block[0], 256);
	assert_int_equal(out->u.kernel.block[1], 1);
	assert_int_equal(out->u.kernel.block[2], 1);
	assert_int_equal(out->u.kernel.shared_bytes, 0);
	assert_int_equal(out->u.kernel.param_size, 776);
	assert_false(out->u.kernel.via_extra);
	assert_non_null(out->u.kernel.params);
	assert_ptr_equal(out->stream, s);
	assert_int_equal(out->stream_slot, rwt_slot_of(s));
	assert_int_equal(out->stream_kind, CAP_STREAM_BLOCKING);
}

/* ------------------------------------------------------------------ rewriting */

/* The array of pointers rw_rewrite and the plan's functions take, one per op. */
static inline void rwt_ptrs(struct cap_op *ops, uint32_t n, const struct cap_op **ptr)
{
	for (uint32_t i = 0; i < n; i++)
		ptr[i] = &ops[i];
}

/* Rewrite ops[0..n) with exactly rules[0..nrules); the plan's one-line form into buf, which
 * must hold all of it. */
static inline struct rw_plan *rwt_run(struct cap_op *ops, uint32_t n, const struct rw_rule *const *rules,
				      size_t nrules, char *buf, size_t cap)
{
	const struct cap_op *ptr[RWT_MAX_OPS];
	struct rw_plan *p;

	assert_true(n <= RWT_MAX_OPS);
	rwt_ptrs(ops, n, ptr);
	p = rw_rewrite(ptr, n, NULL, NULL, rules, nrules);
	assert_non_null(p);
	assert_true((size_t)rw_plan_format(p, buf, cap) < cap);
	return p;
}

/* A test file's own rewrite (its rules, its resolver), in rwt_run's terms. */
typedef struct rw_plan *(*rwt_run_fn)(struct cap_op *ops, uint32_t n, char *buf, size_t cap);

/* A near miss: rewriting ops[0..n) with run changes nothing (no node, guard, counter or
 * dependency list), and says what it did instead when it does. */
static inline void rwt_expect_identity(rwt_run_fn run_fn, struct cap_op *ops, uint32_t n)
{
	char buf[8192];
	struct rw_plan *p = run_fn(ops, n, buf, sizeof(buf));

	if (!rw_plan_is_identity(p))
		fail_msg("expected no rewrite, got: %s", buf);
	assert_int_equal(p->nnodes, n);
	assert_int_equal(p->nguards, 0);
	assert_int_equal(p->nstats, 0);
	assert_null(p->dep_start);
	assert_null(p->dep_list);
	rw_plan_destroy(p);
}

/* ------------------------------------------------------------------ a stand-in multi-instance variant */

/* batch-kernel's hooks for tests without a driver (rw__set_multi_hooks): every kernel has a
 * variant (rwt_multi_possible), and a launch of it is FAKE_MULTI over a table of k, then per
 * instance its grid x and its parameter bytes (rwt_multi_launch). */
#define FAKE_MULTI ((CUfunction)(uintptr_t)0xb47c4u)

static inline bool rwt_multi_possible(const struct cap_op *op)
{
	(void)op;
	return true;
}

static inline int rwt_multi_launch(const struct cap_op *const *members, uint32_t k, void *table, uint32_t cap,
				   struct cap_op *out)
{
	unsigned char *t = table;
	uint32_t at = 4, gx = 0, psize = members[0]->u.kernel.param_size;

	if (4 + k * (4 + psize) > cap)
		return -CF_EINVAL;
	memcpy(t, &k, 4);
	for (uint32_t i = 0; i < k; i++) {
		memcpy(t + at, &members[i]->u.kernel.grid[0], 4);
		memcpy(t + at + 4, members[i]->u.kernel.params, psize);
		at += 4 + psize;
		gx += members[i]->u.kernel.grid[0];
	}
	*out = *members[0];
	out->u.kernel.func = out->u.kernel.handle = FAKE_MULTI;
	out->u.kernel.grid[0] = gx;
	out->u.kernel.params = table;
	out->u.kernel.param_size = at;
	return 0;
}

#endif
