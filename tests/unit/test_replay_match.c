/* test_replay_match.c - replay's matcher in-process against the software device (libcuda.so.1
 * from LD_LIBRARY_PATH, as tests/run sets it), playing the engine's part by hand: warm-up then
 * deferral, segments launched as they complete, the last segment at the boundary, a mismatch
 * flushing the deferred ops eagerly in order, patching moved pointers, two shapes sharing a
 * prefix, retirement on a free, eviction. Results are checked on the device (values exact in
 * float). tests layer (cmocka, libcufold.a). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "driver/real.h"
#include "replay/replay.h"
#include "shim/shim.h"

static struct cap_engine *ce; /* the engine part under test */
static struct rpl_engine *re; /* replay's part over ce */

#define N 256

static CUcontext ctx;
static CUmodule mod;
static CUfunction f_fill, f_axpy;
static CUstream s1;
static CUdeviceptr ya, yb, x1, x2;

static void check(CUresult rc, const char *what)
{
	if (rc != CUDA_SUCCESS) {
		fprintf(stderr, "%s failed: %d\n", what, (int)rc);
		fail();
	}
}
#define CK(call) check((call), #call)

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

static void fill(CUdeviceptr p, float v)
{
	int n = N;
	void *a[] = {&p, &v, &n};

	CK(DRV_REAL(cuLaunchKernel)(f_fill, 1, 1, 1, N, 1, 1, 0, s1, a, NULL));
	CK(DRV_REAL(cuStreamSynchronize)(s1));
}

static float first_value(CUdeviceptr p)
{
	float h[N];

	CK(DRV_REAL(cuCtxSynchronize)());
	CK(DRV_REAL(cuMemcpyDtoH_v2)(h, p, sizeof(h)));
	for (int i = 1; i < N; i++)
		if (h[i] != h[0])
			fail_msg("element %d differs: %g vs %g", i, (double)h[i], (double)h[0]);
	return h[0];
}

/* The engine's part for one axpy call y += a * x on s1 (grid g): record, match (with extra
 * flags on the op, as capture would set them), issue when told. */
static enum rpl_verdict axpy_flags(CUdeviceptr y, CUdeviceptr x, float a, unsigned int g, uint8_t flags)
{
	int n = N;
	void *args[] = {&y, &x, &a, &n};
	struct cap_call c;
	struct cap_who who = { .ctx = ctx, .tid = 1, .t_ns = 1 };
	struct cap_rec rec;
	struct cap_op op;
	enum rpl_verdict v;

	memset(&c, 0, sizeof(c));
	c.kind = CAP_OP_KERNEL;
	c.api = DRV_ID_cuLaunchKernel;
	c.stream = s1;
	c.u.kernel.f = f_axpy;
	c.u.kernel.grid[0] = g;
	c.u.kernel.grid[1] = c.u.kernel.grid[2] = 1;
	c.u.kernel.block[0] = (N + g - 1) / g;
	c.u.kernel.block[1] = c.u.kernel.block[2] = 1;
	c.u.kernel.params = args;
	assert_int_equal(cap_record(ce, &c, &who, &rec), 0);
	assert_int_equal(rec.result, CAP_REC_RECORDED);
	assert_non_null(cap_window_op(cap_window_current(ce), rec.index));
	op = *cap_window_op(cap_window_current(ce), rec.index);
	op.flags |= flags;
	v = rpl_op(re, &op, NULL);
	if (v == RPL_EAGER)
		CK(DRV_REAL(cuLaunchKernel)(f_axpy, g, 1, 1, (N + g - 1) / g, 1, 1, 0, s1, args, NULL));
	return v;
}

static enum rpl_verdict axpy(CUdeviceptr y, CUdeviceptr x, float a, unsigned int g)
{
	return axpy_flags(y, x, a, g, 0);
}

/* The engine's part for a launch of axpy (params NULL: one capture cannot record, and refuses,
 * closing the window itself) handing rpl_op the window's own op, as the engine does (replay
 * then reads a deferred op where capture keeps it). */
static enum rpl_verdict axpy_in_window(CUdeviceptr y, CUdeviceptr x, float a, unsigned int g, bool opaque)
{
	int n = N;
	void *args[] = {&y, &x, &a, &n};
	struct cap_call c;
	struct cap_who who = { .ctx = ctx, .tid = 1, .t_ns = 1 };
	struct cap_rec rec;
	enum rpl_verdict v = RPL_EAGER;

	memset(&c, 0, sizeof(c));
	c.kind = CAP_OP_KERNEL;
	c.api = DRV_ID_cuLaunchKernel;
	c.stream = s1;
	c.u.kernel.f = f_axpy;
	c.u.kernel.grid[0] = g;
	c.u.kernel.grid[1] = c.u.kernel.grid[2] = 1;
	c.u.kernel.block[0] = (N + g - 1) / g;
	c.u.kernel.block[1] = c.u.kernel.block[2] = 1;
	c.u.kernel.params = opaque ? NULL : args;
	cap_record(ce, &c, &who, &rec);
	if (rec.op) {
		v = rpl_op(re, rec.op, &rec);
	} else {
		assert_true(opaque && rec.result == CAP_REC_OPAQUE);
		rpl_flush(re); /* as the engine's replay_op: the window closed inside capture */
	}
	if (rec.closed || !rec.op)
		rpl_window_closed(re, rec.closed);
	if (v == RPL_EAGER && !opaque)
		CK(DRV_REAL(cuLaunchKernel)(f_axpy, g, 1, 1, (N + g - 1) / g, 1, 1, 0, s1, args, NULL));
	return v;
}

/* A boundary (the program synchronizes): flush, close, then the call. */
static void sync_boundary(void)
{
	struct cap_shape *s;

	rpl_flush(re);
	s = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
	rpl_window_closed(re, s);
	if (rpl_build_take(re)) { /* as the engine's lock drop does */
		rpl_build_run(re);
		rpl_build_publish(re);
	}
	CK(DRV_REAL(cuStreamSynchronize)(s1));
}

static struct rpl_totals totals(void)
{
	struct rpl_totals t;

	rpl_get_totals(re, &t);
	return t;
}

static void shape_evicted(void *arg, struct cap_shape *s)
{
	rpl_shape_evicted(arg, s);
}

static int setup(void **state)
{
	struct cap_config cfg = { .max_templates = 2, .barrier_kernels = "nccl*" };
	struct rpl_config rc = { .warmup = 2, .segment = 4, .min_ops = 2 };
	CUdevice dev;
	char *ptx;

	(void)state;
	if (shim_init() != 0)
		return -1;
	CK(DRV_REAL(cuInit)(0));
	CK(DRV_REAL(cuDeviceGet)(&dev, 0));
	CK(DRV_REAL(cuDevicePrimaryCtxRetain)(&ctx, dev));
	CK(DRV_REAL(cuCtxSetCurrent)(ctx));
	ptx = read_ptx("elementwise");
	if (!ptx)
		return -1;
	CK(DRV_REAL(cuModuleLoadData)(&mod, ptx));
	free(ptx);
	CK(DRV_REAL(cuModuleGetFunction)(&f_fill, mod, "fill"));
	CK(DRV_REAL(cuModuleGetFunction)(&f_axpy, mod, "axpy"));
	CK(DRV_REAL(cuStreamCreate)(&s1, CU_STREAM_NON_BLOCKING));
	CK(DRV_REAL(cuMemAlloc_v2)(&ya, N * sizeof(float)));
	CK(DRV_REAL(cuMemAlloc_v2)(&yb, N * sizeof(float)));
	CK(DRV_REAL(cuMemAlloc_v2)(&x1, N * sizeof(float)));
	CK(DRV_REAL(cuMemAlloc_v2)(&x2, N * sizeof(float)));
	ce = cap_engine_create(&cfg);
	re = ce ? rpl_engine_create(ce, &rc) : NULL;
	if (!re)
		return -1;
	cap_set_replay(ce, shape_evicted, NULL, re);
	cap_stream_created(ce, s1, CU_STREAM_NON_BLOCKING);
	cap_alloc_add(ce, ya, N * sizeof(float), CAP_ALLOC_DEVICE);
	cap_alloc_add(ce, yb, N * sizeof(float), CAP_ALLOC_DEVICE);
	cap_alloc_add(ce, x1, N * sizeof(float), CAP_ALLOC_DEVICE);
	cap_alloc_add(ce, x2, N * sizeof(float), CAP_ALLOC_DEVICE);
	fill(x1, 1.0f);
	fill(x2, 0.5f);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rpl_engine_destroy(re);
	cap_engine_destroy(ce);
	return 0;
}

/* Six axpys: two windows eager, then the third replays as segments [0,4) and [4,6). */
static void test_warmup_then_replay(void **state)
{
	struct rpl_totals t0, t;

	(void)state;
	fill(ya, 0.0f);
	t0 = totals();
	for (int w = 0; w < 2; w++) {
		for (int i = 0; i < 6; i++)
			assert_int_equal(axpy(ya, x1, 2.0f, 1), RPL_EAGER);
		sync_boundary();
	}
	t = totals();
	assert_int_equal(t.templates - t0.templates, 1);
	assert_int_equal(t.segments - t0.segments, 2);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(axpy(ya, x1, 2.0f, 1), RPL_DEFER);
		t = totals();
		/* each segment launches as its last op is kept: [0,4) at the fourth, [4,6) at the
		 * sixth (the window may still go on; the next op would then simply be eager) */
		assert_int_equal(t.graph_launches - t0.graph_launches, i >= 5 ? 2 : i >= 3 ? 1 : 0);
	}
	sync_boundary();
	t = totals();
	assert_int_equal(t.graph_launches - t0.graph_launches, 2);
	assert_int_equal(t.ops_flushed - t0.ops_flushed, 0);
	assert_int_equal(t.ops_replayed - t0.ops_replayed, 6);
	assert_true(first_value(ya) == 36.0f); /* 18 axpys of 2 * 1 */
}

/* A different grid at the sixth op: the kept fifth op (its segment [4,6) is not complete) is
 * submitted eagerly, then the call itself, and the window records to its end. */
static void test_mismatch_flushes_in_order(void **state)
{
	struct rpl_totals t0, t;

	(void)state;
	fill(ya, 0.0f);
	t0 = totals();
	for (int i = 0; i < 5; i++)
		assert_int_equal(axpy(ya, x1, 2.0f, 1), RPL_DEFER);
	assert_int_equal(axpy(ya, x1, 2.0f, 2), RPL_EAGER); /* the mismatch */
	assert_int_equal(axpy(ya, x1, 2.0f, 1), RPL_EAGER); /* recording to the window's end */
	sync_boundary();
	t = totals();
	assert_int_equal(t.graph_launches - t0.graph_launches, 1);
	assert_int_equal(t.ops_flushed - t0.ops_flushed, 1);
	assert_int_equal(t.fallbacks[RPL_FB_MISMATCH] - t0.fallbacks[RPL_FB_MISMATCH], 1);
	assert_true(first_value(ya) == 14.0f);
}

/* Moved pointers and a changed scalar are patched into the exec, not re-instantiated. */
static void test_patch_moved_bindings(void **state)
{
	struct rpl_totals t0, t;

	(void)state;
	fill(yb, 1.0f);
	t0 = totals();
	for (int i = 0; i < 6; i++)
		assert_int_equal(axpy(yb, i == 2 ? x1 : x2, i == 5 ? 4.0f : 2.0f, 1), RPL_DEFER);
	sync_boundary();
	t = totals();
	assert_int_equal(t.graph_launches - t0.graph_launches, 2);
	assert_int_equal(t.templates - t0.templates, 0);
	/* every node of the template pointed at ya and x1: all six move to yb, and the scalars */
	assert_true(t.patches - t0.patches >= 6);
	assert_true(first_value(yb) == 1.0f + 1.0f + 2.0f + 1.0f + 1.0f + 1.0f + 2.0f);
}

/* Two shapes, one a prefix of the other (the short one, 6 ops, replayed to its end twice by
 * the tests above; the long one, 9 ops, new): while both are possible the window follows the
 * cuts of the one more windows have followed, and a window that turns out to be the other one
 * submits at most the rest of one of its segments eagerly. */
static void test_shared_prefix(void **state)
{
	struct rpl_totals t0, t;

	(void)state;
	fill(ya, 0.0f);
	for (int w = 0; w < 2; w++) {
		for (int i = 0; i < 9; i++)
			axpy(ya, x1, 1.0f, 1);
		sync_boundary();
	}
	t0 = totals();
	assert_int_equal(t0.templates_live, 2);
	/* the long shape (segments [0,4) [4,8) [8,9)) while the short one ([0,4) [4,6)) leads:
	 * [4,6) goes as the short shape's graph at the sixth op; then only the long shape is
	 * left, and [6,8), half of its segment [4,8), goes eagerly at the eighth */
	for (int i = 0; i < 9; i++) {
		assert_int_equal(axpy(ya, x1, 1.0f, 1), RPL_DEFER);
		t = totals();
		assert_int_equal(t.graph_launches - t0.graph_launches, i >= 8 ? 3 : i >= 5 ? 2 : i >= 3 ? 1 : 0);
		assert_int_equal(t.ops_flushed - t0.ops_flushed, i >= 7 ? 2 : 0);
	}
	sync_boundary();
	t = totals();
	assert_int_equal(t.graph_launches - t0.graph_launches, 3);
	/* the short shape, which still leads: its segments go as its graphs at once */
	for (int i = 0; i < 6; i++)
		assert_int_equal(axpy(ya, x1, 1.0f, 1), RPL_DEFER);
	t = totals();
	assert_int_equal(t.graph_launches - t0.graph_launches, 5);
	sync_boundary();
	t = totals();
	assert_int_equal(t.graph_launches - t0.graph_launches, 5);
	assert_int_equal(t.ops_flushed - t0.ops_flushed, 2);
	/* six ops then one neither shape has: both segments went as graphs, the odd call eagerly */
	for (int i = 0; i < 6; i++)
		assert_int_equal(axpy(ya, x1, 1.0f, 1), RPL_DEFER);
	assert_int_equal(axpy(ya, x1, 1.0f, 2), RPL_EAGER);
	sync_boundary();
	t = totals();
	assert_int_equal(t.graph_launches - t0.graph_launches, 7);
	assert_int_equal(t.ops_flushed - t0.ops_flushed, 2);
	assert_true(first_value(ya) == 18.0f + 9.0f + 6.0f + 7.0f);
}

/* A free of memory a template references retires it; an unrelated free does not. */
static void test_free_retires(void **state)
{
	struct rpl_totals t0, t;

	(void)state;
	t0 = totals();
	rpl_memory_released(re, 0x10, 0x10);
	t = totals();
	assert_int_equal(t.retired, t0.retired);
	rpl_memory_released(re, ya, N * sizeof(float));
	t = totals();
	assert_true(t.retired > t0.retired);
	assert_int_equal(t.fallbacks[RPL_FB_FREE] - t0.fallbacks[RPL_FB_FREE], t.retired - t0.retired);
	/* the next window of the shape is eager (nothing to follow) */
	fill(ya, 0.0f);
	for (int i = 0; i < 6; i++)
		assert_int_equal(axpy(ya, x1, 1.0f, 1), RPL_EAGER);
	sync_boundary();
	assert_true(first_value(ya) == 6.0f);
}

/* Three ops on yb, warmed into a template (each test below starts from it). */
static void warm_three(void)
{
	for (int w = 0; w < 2; w++) {
		for (int i = 0; i < 3; i++)
			axpy(yb, x2, 1.0f, 4);
		sync_boundary();
	}
}

/* An op capture marks CAP_OPF_NO_DEFER (memory cufold cannot classify) is issued in place,
 * never kept: the run before it goes first, and the window records to its end. */
static void test_no_defer_issued_in_place(void **state)
{
#ifdef CAP_OPF_NO_DEFER
	struct rpl_totals t0, t;

	(void)state;
	fill(yb, 0.0f);
	warm_three();
	t0 = totals();
	assert_int_equal(axpy(yb, x2, 1.0f, 4), RPL_DEFER); /* the template is live */
	assert_int_equal(axpy_flags(yb, x2, 1.0f, 4, CAP_OPF_NO_DEFER), RPL_EAGER);
	t = totals();
	assert_int_equal(t.ops_flushed - t0.ops_flushed, 1); /* the kept op went first */
	assert_int_equal(axpy(yb, x2, 1.0f, 4), RPL_EAGER);
	sync_boundary();
	/* a window that starts with it keeps nothing either */
	assert_int_equal(axpy_flags(yb, x2, 1.0f, 4, CAP_OPF_NO_DEFER), RPL_EAGER);
	assert_int_equal(axpy(yb, x2, 1.0f, 4), RPL_EAGER);
	sync_boundary();
	t = totals();
	assert_int_equal(t.graph_launches, t0.graph_launches);
	assert_true(first_value(yb) == 6.0f * 0.5f + 5.0f * 0.5f);
#else
	(void)state;
	skip();
#endif
}

/* After rpl_stop (exit) nothing is kept, even in a window a template matches. Last: replay
 * stays stopped. */
/* Deferred ops read in the open window's slots (not copied, issue 22) outlive a close capture
 * makes itself (an op it cannot record): capture tells replay first, which keeps them; they go
 * in order, before the refused call. Reading them in the window after it closed fails here. */
static void test_deferred_outlive_capture_close(void **state)
{
	struct rpl_totals t0, t;

	(void)state;
	fill(yb, 0.0f);
	for (int w = 0; w < 2; w++) {
		for (int i = 0; i < 6; i++)
			assert_int_equal(axpy_in_window(yb, x2, 2.0f, 8, false), RPL_EAGER);
		sync_boundary();
	}
	t0 = totals();
	/* segment [0,4) launches at the fourth; the fifth stays deferred, in the window */
	for (int i = 0; i < 5; i++)
		assert_int_equal(axpy_in_window(yb, x2, 2.0f, 8, false), RPL_DEFER);
	assert_true(rpl_has_deferred(re));
	assert_int_equal(axpy_in_window(yb, x2, 2.0f, 8, true), RPL_EAGER); /* closes the window */
	assert_false(rpl_has_deferred(re));
	t = totals();
	assert_int_equal(t.graph_launches - t0.graph_launches, 1);
	assert_int_equal(t.ops_flushed - t0.ops_flushed, 1);
	assert_true(first_value(yb) == 17.0f * 2.0f * 0.5f); /* 12 eager, 4 in a graph, 1 flushed */
}

static void test_stop_defers_nothing(void **state)
{
	struct rpl_totals t0, t;

	(void)state;
	fill(yb, 0.0f);
	warm_three();
	assert_int_equal(axpy(yb, x2, 1.0f, 4), RPL_DEFER); /* the template is live */
	sync_boundary();
	t0 = totals();
	rpl_stop(re);
	for (int i = 0; i < 3; i++)
		assert_int_equal(axpy(yb, x2, 1.0f, 4), RPL_EAGER);
	assert_false(rpl_has_deferred(re));
	sync_boundary();
	t = totals();
	assert_int_equal(t.ops_deferred, t0.ops_deferred);
	assert_int_equal(t.graph_launches, t0.graph_launches);
	assert_true(first_value(yb) == 10.0f * 0.5f);
}

/* A free of memory a template's nodes were patched to point at retires it, after a free had the
 * template's references indexed (replay/refs.c: the patched nodes are read again, launch.c's
 * rpl__refs_touch); the memory they pointed at before the patch retires nothing. */
static void test_free_after_patch(void **state)
{
	struct rpl_totals t0, t;
	CUdeviceptr z;

	(void)state;
	CK(DRV_REAL(cuMemAlloc_v2)(&z, N * sizeof(float)));
	cap_alloc_add(ce, z, N * sizeof(float), CAP_ALLOC_DEVICE);
	for (int w = 0; w < 3; w++) { /* warm-up, then one window replayed */
		for (int i = 0; i < 5; i++)
			axpy(yb, x2, 1.0f, 16);
		sync_boundary();
	}
	t0 = totals();
	assert_true(t0.ops_replayed > 0);
	for (int i = 0; i < 16; i++) /* unrelated: past the first few (scanned), the index is made */
		rpl_memory_released(re, 0x10, 0x10);
	for (int i = 0; i < 5; i++)
		assert_int_equal(axpy(z, x2, 1.0f, 16), RPL_DEFER); /* every node patched to z */
	sync_boundary();
	t = totals();
	assert_true(t.patches - t0.patches >= 5);
	assert_int_equal(t.retired, t0.retired);
	rpl_memory_released(re, yb, N * sizeof(float)); /* what the nodes held before: nothing */
	t = totals();
	assert_int_equal(t.retired, t0.retired);
	rpl_memory_released(re, z, N * sizeof(float));
	t = totals();
	assert_true(t.retired > t0.retired);
	assert_int_equal(t.fallbacks[RPL_FB_FREE] - t0.fallbacks[RPL_FB_FREE], t.retired - t0.retired);
	cap_alloc_remove(ce, z, NULL);
	CK(DRV_REAL(cuMemFree_v2)(z));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_warmup_then_replay),
		cmocka_unit_test(test_mismatch_flushes_in_order),
		cmocka_unit_test(test_patch_moved_bindings),
		cmocka_unit_test(test_shared_prefix),
		cmocka_unit_test(test_free_retires),
		cmocka_unit_test(test_free_after_patch),
		cmocka_unit_test(test_no_defer_issued_in_place),
		cmocka_unit_test(test_deferred_outlive_capture_close),
		cmocka_unit_test(test_stop_defers_nothing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
