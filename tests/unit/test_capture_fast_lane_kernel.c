/* test_capture_fast_lane_kernel.c - capture's fast lane for kernel launches (record.c:
 * repeat_kernel, issue 22): a launch that repeats the predicted kernel op is recorded with a copy
 * of its parameter bytes and its key, bindings and vid, without building or hashing. Two engines
 * side by side, one with the fast lane and one without, record the same launches; every op and
 * answer must be the same in both, every op's key and bindings what hashing its fields gives, its
 * vid the predicted op's only where replay's guards would call them equal. Each thing a launch
 * can change is changed in turn, at one op of a window that repeats the two before it. tests
 * layer (cmocka, libcufold.a, the software device for the function records). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "capture/capture_int.h"
#include "driver/real.h"
#include "rewrite/effects.h"
#include "shim/shim.h"

#define CTX2 ((CUcontext)0x7002)
#define NOPS 12 /* launches a window: fill and axpy on s1, s2 and the legacy stream */

static CUcontext ctx;
static CUmodule mod;
static CUfunction f_fill, f_axpy;
static CUstream s1, s2;

static char *read_ptx(const char *name)
{
	const char *root = getenv("ROOT"), *b = getenv("B");
	char path[4096];
	FILE *f;
	long n;
	char *text;

	if (!b)
		b = "build";
	if (b[0] == '/' || !root)
		snprintf(path, sizeof(path), "%s/kernels/%s.ptx", b, name);
	else
		snprintf(path, sizeof(path), "%s/%s/kernels/%s.ptx", root, b, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	text = calloc(1, (size_t)n + 1);
	if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
		free(text);
		text = NULL;
	}
	fclose(f);
	return text;
}

static int group_setup(void **state)
{
	CUdevice dev;
	char *ptx;

	(void)state;
	if (shim_init() != 0 || DRV_REAL(cuInit)(0) != CUDA_SUCCESS || DRV_REAL(cuDeviceGet)(&dev, 0) != CUDA_SUCCESS ||
	    DRV_REAL(cuDevicePrimaryCtxRetain)(&ctx, dev) != CUDA_SUCCESS || DRV_REAL(cuCtxSetCurrent)(ctx) != CUDA_SUCCESS)
		return -1;
	ptx = read_ptx("elementwise");
	if (!ptx)
		return -1;
	if (DRV_REAL(cuModuleLoadData)(&mod, ptx) != CUDA_SUCCESS)
		return -1;
	free(ptx);
	if (DRV_REAL(cuModuleGetFunction)(&f_fill, mod, "fill") != CUDA_SUCCESS ||
	    DRV_REAL(cuModuleGetFunction)(&f_axpy, mod, "axpy") != CUDA_SUCCESS ||
	    DRV_REAL(cuStreamCreate)(&s1, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
	    DRV_REAL(cuStreamCreate)(&s2, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
		return -1;
	return 0;
}

/* What a launch's parameters point at (the program's stack, as the call sees it). */
struct args {
	CUdeviceptr y, x;            /* fill(x, v, n) / axpy(y, x, a, n) */
	float v;
	int n;
	void *params[4];             /* kernelParams */
	uint8_t buf[24];             /* an `extra` buffer */
	size_t size;
	void *extra[5];
	CUlaunchAttribute attr;
};

enum change {
	CH_NONE, CH_FUNC, CH_API, CH_STREAM, CH_LEGACY, CH_CTX, CH_TID, CH_GRID0, CH_GRID1, CH_GRID2, CH_BLOCK0,
	CH_BLOCK1, CH_BLOCK2, CH_SHARED, CH_PTR, CH_PTR2, CH_FLOAT, CH_INT, CH_ATTRS, CH_EXTRA, CH_COUNT
};
static const char *const change_names[CH_COUNT] = {
	"none", "function", "api", "stream", "legacy stream", "context", "thread", "grid x", "grid y", "grid z",
	"block x", "block y", "block z", "shared bytes", "first pointer", "second pointer", "float", "int",
	"attributes", "extra buffer",
};

/* The i-th launch of the step, with change ch applied. */
static void step_call(int i, enum change ch, struct cap_call *c, struct cap_who *who, struct args *a)
{
	bool axpy = i % 2 == 1;

	if (ch == CH_FUNC)
		axpy = !axpy;
	memset(c, 0, sizeof(*c));
	memset(a, 0, sizeof(*a));
	*who = (struct cap_who){ .ctx = ch == CH_CTX ? CTX2 : ctx, .tid = ch == CH_TID ? 2 : 1, .t_ns = 0 };
	c->kind = CAP_OP_KERNEL;
	c->api = ch == CH_API ? DRV_ID_cuLaunchKernel_ptsz : DRV_ID_cuLaunchKernel;
	c->stream = i % 3 == 0 ? s1 : i % 3 == 1 ? s2 : 0;
	if (ch == CH_STREAM)
		c->stream = c->stream == s1 ? s2 : s1;
	if (ch == CH_LEGACY) /* the legacy stream named the other way: same record and slot */
		c->stream = c->stream ? 0 : CU_STREAM_LEGACY;
	c->u.kernel.f = axpy ? f_axpy : f_fill;
	c->u.kernel.grid[0] = 4u + (unsigned)i + (ch == CH_GRID0);
	c->u.kernel.grid[1] = 1u + (ch == CH_GRID1);
	c->u.kernel.grid[2] = 1u + (ch == CH_GRID2);
	c->u.kernel.block[0] = 128u + (ch == CH_BLOCK0);
	c->u.kernel.block[1] = 1u + (ch == CH_BLOCK1);
	c->u.kernel.block[2] = 1u + (ch == CH_BLOCK2);
	c->u.kernel.shared_bytes = ch == CH_SHARED ? 64 : 0;
	a->y = 0x100000ull + 0x1000ull * (unsigned)i + (ch == CH_PTR ? 8 : 0);
	a->x = 0x200000ull + 0x1000ull * (unsigned)i + (ch == CH_PTR2 ? 8 : 0);
	a->v = 1.5f + (float)i + (ch == CH_FLOAT ? 0.25f : 0.0f);
	a->n = 512 + i + (ch == CH_INT);
	if (axpy) {
		a->params[0] = &a->y;
		a->params[1] = &a->x;
		a->params[2] = &a->v;
		a->params[3] = &a->n;
	} else {
		a->params[0] = ch == CH_PTR2 ? (void *)&a->x : (void *)&a->y;
		a->params[1] = &a->v;
		a->params[2] = &a->n;
	}
	c->u.kernel.params = a->params;
	if (ch == CH_ATTRS) { /* the entry point kept: only the attributes tell the ops apart */
		a->attr.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
		c->u.kernel.attrs = &a->attr;
		c->u.kernel.nattrs = 1;
	}
	if (ch == CH_EXTRA) { /* the same bytes, passed as a buffer: not the same op */
		memcpy(a->buf, &a->y, 8);
		memcpy(a->buf + 8, axpy ? (const void *)&a->x : (const void *)&a->v, axpy ? 8 : 4);
		memcpy(a->buf + (axpy ? 16 : 12), axpy ? (const void *)&a->v : (const void *)&a->n, 4);
		if (axpy)
			memcpy(a->buf + 20, &a->n, 4);
		a->size = axpy ? 24 : 16;
		a->extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
		a->extra[1] = a->buf;
		a->extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
		a->extra[3] = &a->size;
		a->extra[4] = CU_LAUNCH_PARAM_END;
		c->u.kernel.params = NULL;
		c->u.kernel.extra = a->extra;
	}
}

static struct cap_engine *make(bool fast)
{
	struct cap_config cfg = { .max_templates = 8, .no_fast_lane = !fast };
	struct cap_engine *ce = cap_engine_create(&cfg);

	assert_non_null(ce);
	cap_stream_created(ce, s1, CU_STREAM_NON_BLOCKING);
	cap_stream_created(ce, s2, CU_STREAM_NON_BLOCKING);
	return ce;
}

/* Every field the two recordings could differ in (the function records are each engine's own:
 * compared by their ids). */
static void same_op(const struct cap_op *a, const struct cap_op *b, const char *what)
{
	const struct cap_kernel *x = &a->u.kernel, *y = &b->u.kernel;

	if (a->kind != b->kind || a->flags != b->flags || a->stream_kind != b->stream_kind || a->api != b->api ||
	    a->stream_slot != b->stream_slot || a->tid != b->tid || a->stream != b->stream || a->ctx != b->ctx ||
	    a->key != b->key || a->bind != b->bind || a->callsite != b->callsite || a->seq != b->seq ||
	    a->vid != b->vid || a->t_ns != b->t_ns)
		fail_msg("%s: the fast lane's op differs from the long path's in its header", what);
	if (a->kind != CAP_OP_KERNEL)
		fail_msg("%s: not a kernel op", what);
	if (x->handle != y->handle || x->func != y->func || !x->info != !y->info ||
	    (x->info && x->info->id != y->info->id) || memcmp(x->grid, y->grid, sizeof(x->grid)) != 0 ||
	    memcmp(x->block, y->block, sizeof(x->block)) != 0 || x->shared_bytes != y->shared_bytes ||
	    x->param_size != y->param_size || x->nattrs != y->nattrs || !x->attrs != !y->attrs ||
	    x->via_extra != y->via_extra || (x->param_size && memcmp(x->params, y->params, x->param_size) != 0))
		fail_msg("%s: the fast lane's kernel part differs", what);
}

/* The op as recorded says what the call said, and its hashes are its fields'. */
static void op_is_call(const struct cap_op *op, const struct cap_call *c, const struct cap_who *who,
		       const struct args *a, const char *what)
{
	const struct cap_kernel *k = &op->u.kernel;
	struct cap_op h = *op;

	if (op->api != c->api || op->stream != c->stream || op->ctx != who->ctx || op->tid != who->tid)
		fail_msg("%s: the op's header is not the call's", what);
	if (k->handle != c->u.kernel.f || memcmp(k->grid, c->u.kernel.grid, sizeof(k->grid)) != 0 ||
	    memcmp(k->block, c->u.kernel.block, sizeof(k->block)) != 0 || k->shared_bytes != c->u.kernel.shared_bytes ||
	    k->nattrs != c->u.kernel.nattrs)
		fail_msg("%s: the op's launch is not the call's", what);
	if (c->u.kernel.params) {
		for (uint32_t i = 0; i < k->info->nparams; i++)
			if (memcmp((const char *)k->params + k->info->offset[i], c->u.kernel.params[i], k->info->size[i]) != 0)
				fail_msg("%s: the op's parameter %u is not the call's", what, i);
	} else if (k->param_size != a->size || memcmp(k->params, a->buf, a->size) != 0) {
		fail_msg("%s: the op's extra buffer is not the call's", what);
	}
	cap_op_hash(&h);
	if (h.key != op->key || h.bind != op->bind)
		fail_msg("%s: the op's key or bindings are not its fields' hashes", what);
}

/* Three windows of the step into both engines, the third with change ch applied to op `at`.
 * Returns the ops the fast lane recorded. */
static uint64_t run(enum change ch, int at, bool differs)
{
	struct cap_engine *e[2] = { make(true), make(false) };
	const struct cap_op *prev[NOPS] = { 0 }; /* the second window's ops, in the fast engine */
	const char *what = change_names[ch];
	struct cap_totals t;

	for (int win = 0; win < 3; win++) {
		for (int i = 0; i < NOPS; i++) {
			struct cap_rec r[2];
			struct cap_call c;
			struct cap_who who;
			struct args a;

			step_call(i, win == 2 && i == at ? ch : CH_NONE, &c, &who, &a);
			for (int k = 0; k < 2; k++) {
				assert_int_equal(cap_record(e[k], &c, &who, &r[k]), 0);
				assert_int_equal(r[k].result, CAP_REC_RECORDED);
			}
			if (r[0].kind != r[1].kind || r[0].ends_window != r[1].ends_window || r[0].index != r[1].index ||
			    r[0].window != r[1].window || r[0].seq != r[1].seq || r[0].bytes != r[1].bytes ||
			    !r[0].func != !r[1].func || (r[0].func && r[0].func->id != r[1].func->id) ||
			    (r[0].closed == NULL) != (r[1].closed == NULL))
				fail_msg("%s: window %d op %d: the fast lane's answer differs", what, win, i);
			same_op(r[0].op, r[1].op, what);
			op_is_call(r[0].op, &c, &who, &a, what);
			if (win == 2 && prev[i] && r[0].op->vid == prev[i]->vid && !rw_op_same(r[0].op, prev[i]))
				fail_msg("%s: op %d took the predicted op's vid but is not the same op", what, i);
			if (win == 2 && i == at && differs && prev[i] && r[0].op->vid == prev[i]->vid)
				fail_msg("%s: op %d was changed but kept the predicted op's vid", what, i);
		}
		if (win == 1) /* the ops stay in the shape's last window while the third records */
			for (int i = 0; i < NOPS; i++)
				prev[i] = cap_window_op(cap_window_current(e[0]), (uint32_t)i);
		for (int k = 0; k < 2; k++)
			assert_non_null(cap_boundary(e[k], CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize));
	}
	cap_get_totals(e[0], &t);
	cap_engine_destroy(e[0]);
	cap_engine_destroy(e[1]);
	return t.ops_fast;
}

/* A step repeated: the third window goes by the fast lane but for each stream's first launch
 * (which numbers its slot the long way), and the answers are the long path's. */
static void test_repeat_is_long_path(void **state)
{
	uint64_t fast;

	(void)state;
	fast = run(CH_NONE, -1, false);
	print_message("fast lane: %llu of %d launches\n", (unsigned long long)fast, 3 * NOPS);
	assert_int_equal(fast, NOPS - 3);
}

/* Each thing a launch can change, changed at a fill (even index) and at an axpy (odd), on each
 * stream: the op is the call's, and never the predicted op's identity. */
static void test_each_field(void **state)
{
	(void)state;
	for (int ch = CH_FUNC; ch < CH_COUNT; ch++) {
		if (ch == CH_TID)
			continue;
		for (int at = 3; at < 9; at++)
			run((enum change)ch, at, true);
	}
}

/* Another thread's launch at a repeated position: recorded with its thread, by either path. */
static void test_thread(void **state)
{
	(void)state;
	for (int at = 3; at < 9; at++)
		run(CH_TID, at, false); /* the thread is no part of an op's identity */
}

/* A launch of f on s1 through kernelParams, one block of 32 threads. */
static void one_block_call(struct cap_call *c, CUfunction f, void **params)
{
	memset(c, 0, sizeof(*c));
	c->kind = CAP_OP_KERNEL;
	c->api = DRV_ID_cuLaunchKernel;
	c->stream = s1;
	c->u.kernel.f = f;
	c->u.kernel.grid[0] = c->u.kernel.grid[1] = c->u.kernel.grid[2] = 1;
	c->u.kernel.block[0] = 32;
	c->u.kernel.block[1] = c->u.kernel.block[2] = 1;
	c->u.kernel.params = params;
}

/* A kernel whose first parameter is a 16-byte struct (compared whole, off the lane's word loop:
 * params_repeat_from) and whose second is an int after it: a change in the struct or in the int
 * gives the op a value identity of its own, and none keeps the predicted op's, by the fast lane. */
static void test_struct_param(void **state)
{
	CUmodule m;
	CUfunction fs;
	char *ptx = read_ptx("effects_struct");

	(void)state;
	assert_non_null(ptx);
	assert_int_equal(DRV_REAL(cuModuleLoadData)(&m, ptx), CUDA_SUCCESS);
	free(ptx);
	assert_int_equal(DRV_REAL(cuModuleGetFunction)(&fs, m, "fx_struct_ptrs"), CUDA_SUCCESS);
	for (int ch = 0; ch < 3; ch++) { /* nothing, the struct's second word, the int */
		struct cap_engine *ce = make(true);
		uint64_t prev_vid = 0, vid = 0;
		struct cap_totals t;

		for (int win = 0; win < 3; win++) {
			for (int i = 0; i < 2; i++) {
				struct {
					uint64_t a, b;
				} st = { 0x100000ull + (unsigned)i, 0x200000ull + (win == 2 && ch == 1 ? 8u : 0u) };
				uint32_t n = 64u + (unsigned)i + (win == 2 && ch == 2);
				void *params[2] = { &st, &n };
				struct cap_who who = { .ctx = ctx, .tid = 1, .t_ns = 0 };
				struct cap_call c;
				struct cap_rec r;

				one_block_call(&c, fs, params);
				assert_int_equal(cap_record(ce, &c, &who, &r), 0);
				assert_int_equal(r.result, CAP_REC_RECORDED);
				if (i == 1 && win == 1)
					prev_vid = r.op->vid;
				if (i == 1 && win == 2)
					vid = r.op->vid;
			}
			assert_non_null(cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize));
		}
		cap_get_totals(ce, &t);
		cap_engine_destroy(ce);
		assert_true(prev_vid != 0);
		if (ch == 0) {
			assert_true(vid == prev_vid);
			assert_true(t.ops_fast >= 1); /* the third window's second launch took the lane */
		} else if (vid == prev_vid) {
			fail_msg("change %d: the launch kept the predicted op's value identity", ch);
		}
	}
	assert_int_equal(DRV_REAL(cuModuleUnload)(m), CUDA_SUCCESS);
}

/* Every launch's pointers move every window (PyTorch: each step's tensors are at other
 * addresses), and in the fifth window one launch's also repeat the window before's: the kernel
 * lane lays the parameters out from the call (record.c: kernel_moved), no position repeating,
 * and every op and answer is the long path's, with a value identity of its own but where the
 * bytes repeat. */
static void test_moving(void **state)
{
	struct cap_engine *e[2] = { make(true), make(false) };
	uint64_t before = 0, vid_prev = 0;
	struct cap_totals t;

	(void)state;
	for (int win = 0; win < 6; win++) {
		for (int i = 0; i < NOPS; i++) {
			int shift = win == 4 && i == 5 ? 3 : win; /* op 5 of window 4: window 3's bytes */
			struct cap_rec r[2];
			struct cap_call c;
			struct cap_who who;
			struct args a;

			step_call(i, CH_NONE, &c, &who, &a);
			a.y += 0x10000ull * (unsigned)shift;
			a.x += 0x10000ull * (unsigned)shift;
			for (int k = 0; k < 2; k++) {
				assert_int_equal(cap_record(e[k], &c, &who, &r[k]), 0);
				assert_int_equal(r[k].result, CAP_REC_RECORDED);
			}
			if (r[0].index != r[1].index || r[0].window != r[1].window || r[0].seq != r[1].seq ||
			    r[0].bytes != r[1].bytes || !r[0].func != !r[1].func ||
			    (r[0].func && r[0].func->id != r[1].func->id))
				fail_msg("moving: window %d op %d: the fast lane's answer differs", win, i);
			same_op(r[0].op, r[1].op, "moving");
			op_is_call(r[0].op, &c, &who, &a, "moving");
			if (i == 5 && win == 3)
				vid_prev = r[0].op->vid;
			if (i == 5 && win == 4 && r[0].op->vid != vid_prev)
				fail_msg("moving: the op whose bytes repeated did not keep the predicted op's identity");
			if (i != 5 && win >= 2 && r[0].op->vid != r[0].op->seq)
				fail_msg("moving: window %d op %d moved but kept another op's identity", win, i);
		}
		for (int k = 0; k < 2; k++)
			assert_non_null(cap_boundary(e[k], CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize));
		if (win == 1) {
			cap_get_totals(e[0], &t);
			before = t.ops_fast;
		}
	}
	cap_get_totals(e[0], &t);
	print_message("moving: the fast lane took %llu of %d launches after the second window\n",
		      (unsigned long long)(t.ops_fast - before), 4 * NOPS);
	/* each recycled window's launches but each stream's first (which numbers its slot) */
	assert_true(t.ops_fast - before >= 3 * (NOPS - 3));
	cap_engine_destroy(e[0]);
	cap_engine_destroy(e[1]);
}

/* Padding between parameters is zeroed however a launch is recorded (so equal parameters are
 * equal bytes): fx_struct_pick(struct fx_table t, int pick, float *out) has 4 bytes of it before
 * out (a layout that is not dense), fx_struct_table(struct fx_table t, float *out) none (dense:
 * nothing to zero). Every window's out moves, so later windows go by the kernel lane's moved
 * path (kernel_moved); the caller's bytes in the gap are not zero. */
static void test_padding(void **state)
{
	struct fx_table {
		uint64_t src[4];
		int32_t len[4];
		int32_t count;
	};
	CUmodule m;
	CUfunction fpick, ftable;
	char *ptx = read_ptx("effects_struct");
	struct cap_engine *ce = make(true);
	struct cap_totals t0, t1;

	(void)state;
	assert_non_null(ptx);
	assert_int_equal(DRV_REAL(cuModuleLoadData)(&m, ptx), CUDA_SUCCESS);
	free(ptx);
	assert_int_equal(DRV_REAL(cuModuleGetFunction)(&fpick, m, "fx_struct_pick"), CUDA_SUCCESS);
	assert_int_equal(DRV_REAL(cuModuleGetFunction)(&ftable, m, "fx_struct_table"), CUDA_SUCCESS);
	for (int win = 0; win < 5; win++) {
		if (win == 2)
			cap_get_totals(ce, &t0);
		for (int i = 0; i < 4; i++) {
			struct {
				struct fx_table t;
				int32_t pick;
				uint32_t junk; /* what the gap would hold if it were copied */
				uint64_t out;
			} a;
			void *params[3];
			struct cap_who who = { .ctx = ctx, .tid = 1, .t_ns = 0 };
			struct cap_call c;
			struct cap_rec r;
			bool pick = i % 2 == 0;
			const unsigned char *pb;

			memset(&a, 0xab, sizeof(a));
			for (int k = 0; k < 4; k++) {
				a.t.src[k] = 0x100000ull * (unsigned)(k + 1);
				a.t.len[k] = 64;
			}
			a.t.count = 4;
			a.pick = 1;
			a.out = 0x900000ull + 0x1000ull * (unsigned)(win * 4 + i);
			params[0] = &a.t;
			params[1] = pick ? (void *)&a.pick : (void *)&a.out;
			params[2] = &a.out;
			one_block_call(&c, pick ? fpick : ftable, params);
			assert_int_equal(cap_record(ce, &c, &who, &r), 0);
			assert_int_equal(r.result, CAP_REC_RECORDED);
			assert_non_null(r.func);
			pb = r.op->u.kernel.params;
			if (pick) {
				assert_false(r.func->dense);
				assert_int_equal(r.func->param_bytes, 72);
				for (int k = 60; k < 64; k++)
					if (pb[k] != 0)
						fail_msg("window %d: fx_struct_pick's padding byte %d is %#x", win, k, pb[k]);
				assert_memory_equal(pb + 56, &a.pick, 4);
				assert_memory_equal(pb + 64, &a.out, 8);
			} else {
				assert_true(r.func->dense);
				assert_int_equal(r.func->param_bytes, 64);
				assert_memory_equal(pb + 56, &a.out, 8);
			}
			assert_memory_equal(pb, &a.t, sizeof(a.t));
		}
		assert_non_null(cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize));
	}
	cap_get_totals(ce, &t1);
	/* the recycled windows' launches but the stream's first went by the lane */
	assert_true(t1.ops_fast - t0.ops_fast >= 2 * 3);
	cap_engine_destroy(ce);
	assert_int_equal(DRV_REAL(cuModuleUnload)(m), CUDA_SUCCESS);
}

/* The i-th call of a one-stream step: a memset on s1 first (it numbers the stream's slot, with
 * nothing in the window's arena), then the step's launches moved onto s1, so every launch of a
 * repeated window can go by the lane. */
static void one_stream_call(int i, enum change ch, struct cap_call *c, struct cap_who *who, struct args *a)
{
	step_call(i, ch, c, who, a);
	c->stream = s1;
	if (i == 0) {
		memset(c, 0, sizeof(*c));
		c->kind = CAP_OP_MEMSET;
		c->api = DRV_ID_cuMemsetD32Async;
		c->stream = s1;
		c->u.memset = (struct cap_memset){ .dst = 0x300000, .pitch = 64, .elem_size = 4, .value = 7, .width = 16,
						   .height = 1 };
	}
}

/* Launches the kernel lane took borrow their predicted op's bytes (capture_int.h: lender) while
 * the window has none of its own, and a closed window owns every byte its ops point to, whichever
 * way it came to: taking its lender's arena (a repeated window: its launches' bytes stay where
 * the window before's were), copying them (a window with a moved launch: the launches before it
 * borrowed, those after it copy at once), or copying before its lender's ops move (an op of the
 * lender refused after the lender closed: retract_closed). Each window's bytes are the calls'
 * after its close. */
static void test_borrowed_bytes(void **state)
{
	struct cap_engine *ce = make(true);
	uint8_t want[NOPS][32];      /* each launch's bytes */
	const void *at[NOPS];        /* where they were when it was recorded */
	const void *closed[NOPS] = { 0 }; /* where the window before's are since its close */
	const struct cap_window *before = NULL; /* the window closed before */
	struct cap_rec lender_rec = { 0 };
	int kept = 0;

	(void)state;
	for (int win = 0; win < 12; win++) {
		const struct cap_window *w;
		struct cap_shape *sh;

		for (int i = 0; i < NOPS; i++) {
			enum change ch = (win == 4 && i == 5) || (win == 8 && i == NOPS - 1) ? CH_PTR : CH_NONE;
			struct cap_call c;
			struct cap_who who;
			struct args a;
			struct cap_rec r;

			one_stream_call(i, ch, &c, &who, &a);
			assert_int_equal(cap_record(ce, &c, &who, &r), 0);
			assert_int_equal(r.result, CAP_REC_RECORDED);
			at[i] = NULL;
			if (i == 0)
				continue;
			op_is_call(r.op, &c, &who, &a, "borrowed");
			assert_true(r.op->u.kernel.param_size <= sizeof(want[0]));
			memcpy(want[i], r.op->u.kernel.params, r.op->u.kernel.param_size);
			at[i] = r.op->u.kernel.params;
			if (win == 4 && i != 5) {
				/* before the launch that moved, its bytes are borrowed; after it, the
				 * window has bytes of its own and they are copied at once */
				const bool own = cf_arena_holds(&cap_window_current(ce)->arena, at[i]);

				if (own != (i > 5) || (i < 5 && at[i] != closed[i]))
					fail_msg("window 4 op %d: %s", i, i > 5 ? "borrowed after the window's own bytes" :
										 "not borrowed");
			}
			if (win == 8 && i == 2)
				lender_rec = r;
			if (win == 9 && i == 6) {
				/* window 8's op 2 refused now: window 8, this one's lender, is filed again
				 * without it (its ops move) */
				assert_ptr_equal(cap_shape_last(cap_shape_first(ce)), before);
				assert_ptr_equal(cap_window_current(ce)->lender, before);
				cap_op_done(ce, &lender_rec, true);
				assert_int_equal(cap_window_nops(before), NOPS - 1);
				assert_null(cap_window_current(ce)->lender);
			}
		}
		sh = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
		assert_non_null(sh);
		w = cap_shape_last(sh);
		assert_null(w->lender);
		for (int i = 1; i < NOPS; i++) {
			const struct cap_kernel *k = &cap_window_op(w, (uint32_t)i)->u.kernel;

			if (!cf_arena_holds(&w->arena, k->params))
				fail_msg("window %d op %d: its bytes are not in its own arena", win, i);
			if (memcmp(k->params, want[i], k->param_size) != 0)
				fail_msg("window %d op %d: its bytes are not the call's after the close", win, i);
		}
		/* a repeat in a recycled window borrowed every launch and took its lender's arena:
		 * its bytes are where the lender's were. Not so: windows 0 and 1 (no prediction, no
		 * recycled slots), 4 and 8 (a launch moved: its bytes are the window's own, so the
		 * borrowed ones are copied), 5, 6 and 9 (a launch whose position moved the window
		 * before is laid out anew: record.c, kernel_moved), 10 (a new window: the retraction
		 * in 9 left no spare) */
		if (win == 2 || win == 3 || win == 7 || win == 11) {
			for (int i = 1; i < NOPS; i++)
				if (at[i] != closed[i] || cap_window_op(w, (uint32_t)i)->u.kernel.params != at[i])
					fail_msg("window %d op %d: a repeated launch did not borrow its bytes", win, i);
			kept++;
		}
		for (int i = 1; i < NOPS; i++)
			closed[i] = cap_window_op(w, (uint32_t)i)->u.kernel.params;
		before = w;
	}
	assert_int_equal(kept, 4);
	cap_engine_destroy(ce);
}

/* A kernel with no parameters (launched with kernelParams NULL) is recorded by capture's kernel
 * lane as by the long path: its parameter pointer is not NULL either way (replay classifies a
 * launch whose pointer is NULL eager, template.c: op_cls). Found when the lane left it NULL: a
 * PyTorch template had one graph op fewer than before. From window 3 on they name another handle
 * of the same kernel (its module loaded twice): a binding, so window 3's ops have their own
 * identities, and window 4's launches repeat ops that did (record.c: kernel_moved, which left
 * NULL too until stop 44); windows 2 and 5 repeat as the lane does (repeat_kernel). */
static void test_no_params(void **state)
{
	static const char ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
				  ".visible .entry cf_test_nop()\n{\n\tret;\n}\n";
	struct cap_engine *e[2] = { make(true), make(false) };
	CUmodule m, m2;
	CUfunction f_nop, f_nop2;
	struct cap_totals t;

	(void)state;
	assert_int_equal(DRV_REAL(cuModuleLoadData)(&m, ptx), CUDA_SUCCESS);
	assert_int_equal(DRV_REAL(cuModuleGetFunction)(&f_nop, m, "cf_test_nop"), CUDA_SUCCESS);
	assert_int_equal(DRV_REAL(cuModuleLoadData)(&m2, ptx), CUDA_SUCCESS);
	assert_int_equal(DRV_REAL(cuModuleGetFunction)(&f_nop2, m2, "cf_test_nop"), CUDA_SUCCESS);
	for (int win = 0; win < 6; win++) {
		for (int i = 0; i < 4; i++) {
			struct cap_call c;
			struct cap_who who;
			struct args a;
			struct cap_rec r[2];

			one_stream_call(i, CH_NONE, &c, &who, &a);
			if (i > 0) {
				c.u.kernel.f = win >= 3 ? f_nop2 : f_nop;
				c.u.kernel.params = NULL;
			}
			for (int k = 0; k < 2; k++) {
				assert_int_equal(cap_record(e[k], &c, &who, &r[k]), 0);
				assert_int_equal(r[k].result, CAP_REC_RECORDED);
			}
			if (i > 0) {
				same_op(r[0].op, r[1].op, "no parameters");
				assert_int_equal(r[0].op->u.kernel.param_size, 0);
				if (!r[0].op->u.kernel.params != !r[1].op->u.kernel.params)
					fail_msg("window %d op %d: the lane's parameter pointer is %sNULL, the long path's "
						 "is not", win, i, r[0].op->u.kernel.params ? "not " : "");
			}
		}
		for (int k = 0; k < 2; k++)
			assert_non_null(cap_boundary(e[k], CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize));
	}
	cap_get_totals(e[0], &t);
	/* windows 2, 4 and 5 (their launches by the lane: repeat_kernel, kernel_moved, repeat_kernel) */
	print_message("no parameters: %llu ops by the fast lane\n", (unsigned long long)t.ops_fast);
	assert_true(t.ops_fast >= 3 * 3);
	cap_engine_destroy(e[0]);
	cap_engine_destroy(e[1]);
	assert_int_equal(DRV_REAL(cuModuleUnload)(m), CUDA_SUCCESS);
	assert_int_equal(DRV_REAL(cuModuleUnload)(m2), CUDA_SUCCESS);
}

/* The compare plans of a parameter layout (funcs.c: cap__plan_params) and the compare through
 * each (capture_int.h: cap__params_repeat, both lanes'): packed where the 8-byte parameters come
 * first from offset 0 and the 4-byte ones right after them, by size where every one is 8 or 4
 * bytes, else by the layout. Through each, the bytes a call points at compare equal to the same
 * bytes laid out, and not with any byte of any parameter changed or a parameter's pointer NULL. */
static void test_param_plans(void **state)
{
	static const struct {
		uint32_t n, off[5], size[5];
		bool packed, by_size;
	} cases[] = {
		{ 4, { 0, 8, 16, 20 }, { 8, 8, 4, 4 }, true, true },           /* axpy: pointers, float, int */
		{ 2, { 0, 8 }, { 8, 8 }, true, true },                         /* pointers only */
		{ 3, { 0, 4, 8 }, { 4, 4, 4 }, true, true },                   /* ints only */
		{ 3, { 0, 8, 16 }, { 4, 8, 4 }, false, true },                 /* an int first, padded */
		{ 3, { 0, 8, 12 }, { 8, 4, 4 }, true, true },                  /* two 4-byte after one 8 */
		{ 3, { 0, 8, 16 }, { 8, 8, 4 }, true, true },
		{ 3, { 0, 12, 16 }, { 8, 4, 8 }, false, true },                /* 4-byte between 8-byte */
		{ 2, { 0, 16 }, { 8, 8 }, false, true },                       /* in order, a gap */
		{ 2, { 0, 12 }, { 8, 4 }, false, true },
		{ 4, { 0, 16, 24, 28 }, { 16, 8, 4, 2 }, false, false },       /* a struct and a short */
		{ 3, { 0, 8, 12 }, { 8, 4, 1 }, false, false },
	};

	(void)state;
	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		struct cap_func f = { 0 };
		uint32_t off[5], size[5];
		uint8_t vals[5][16], pb[64] = { 0 };
		void *pp[5];
		struct cap_call c = { 0 };

		memcpy(off, cases[ci].off, sizeof(off));
		memcpy(size, cases[ci].size, sizeof(size));
		f.nparams = cases[ci].n;
		f.offset = off;
		f.size = size;
		f.param_bytes = off[f.nparams - 1] + size[f.nparams - 1];
		cap__plan_params(&f);
		if (f.packed != cases[ci].packed || !f.by_size != !cases[ci].by_size)
			fail_msg("layout %zu: packed %d, by size %d; expected %d, %d", ci, f.packed, f.by_size != NULL,
				 cases[ci].packed, cases[ci].by_size);
		for (uint32_t k = 0; k < f.nparams; k++) {
			for (uint32_t b = 0; b < sizeof(vals[k]); b++)
				vals[k][b] = (uint8_t)(0x11 * (k + 1) + 7 * b);
			memcpy(pb + off[k], vals[k], size[k]);
			pp[k] = vals[k];
		}
		c.kind = CAP_OP_KERNEL;
		c.u.kernel.params = pp;
		if (!cap__params_repeat(&c, &f, (const char *)pb))
			fail_msg("layout %zu: the same bytes compared unequal", ci);
		for (uint32_t k = 0; k < f.nparams; k++) {
			for (uint32_t b = 0; b < size[k]; b++) {
				vals[k][b] ^= 0x40;
				if (cap__params_repeat(&c, &f, (const char *)pb))
					fail_msg("layout %zu: parameter %u byte %u changed, compared equal", ci, k, b);
				vals[k][b] ^= 0x40;
			}
			pp[k] = NULL;
			if (cap__params_repeat(&c, &f, (const char *)pb))
				fail_msg("layout %zu: parameter %u's pointer NULL, compared equal", ci, k);
			pp[k] = vals[k];
		}
		free(f.by_size);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_repeat_is_long_path),
		cmocka_unit_test(test_each_field),
		cmocka_unit_test(test_thread),
		cmocka_unit_test(test_struct_param),
		cmocka_unit_test(test_moving),
		cmocka_unit_test(test_padding),
		cmocka_unit_test(test_borrowed_bytes),
		cmocka_unit_test(test_no_params),
		cmocka_unit_test(test_param_plans),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
