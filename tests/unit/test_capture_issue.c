/* test_capture_issue.c - recorded ops re-issued through the real driver (cap_op_issue) do what the
 * program's original call did, with the same entry point: kernel launches (kernelParams, extra,
 * Ex with attributes, cooperative, _ptsz on the per-thread stream; a CUkernel handle), copies
 * (1-D, unified, 2-D, pageable sources staged), memsets (1-D and 2-D, sync and async), event
 * record and wait, host functions. The parameters are deep copies: the program's stack may
 * change after the call. Also the function cache (names, layouts, barrier globs). Runs against
 * the software device in-process (libcuda.so.1 from LD_LIBRARY_PATH, as tests/run sets it).
 * tests layer (cmocka, libcufold.a). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "capture/capture_int.h" /* funcs.gen: the lookups' generation */
#include "common/arena.h"
#include "driver/real.h"
#include "shim/shim.h"

static struct cap_engine *ce; /* the engine part under test */

#define N 256

static CUcontext ctx;
static CUmodule mod;
static CUfunction f_fill, f_axpy;
static CUstream s1, s2;
static CUdeviceptr dbuf, dbuf2;
static unsigned int hostfn_calls;

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

static unsigned int kernel_param_info_calls; /* cuKernelGetParamInfo calls capture made */

static void note_call(enum drv_api_id id)
{
	if (id == DRV_ID_cuKernelGetParamInfo)
		kernel_param_info_calls++;
}

static int group_setup(void **state)
{
	struct cap_config cfg = { .max_templates = 8, .barrier_kernels = "nccl*,axp?", .note_driver_call = note_call };
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
	CK(DRV_REAL(cuStreamCreate)(&s2, CU_STREAM_NON_BLOCKING));
	CK(DRV_REAL(cuMemAlloc_v2)(&dbuf, N * sizeof(float)));
	CK(DRV_REAL(cuMemAlloc_v2)(&dbuf2, N * sizeof(float)));
	if (!(ce = cap_engine_create(&cfg)))
		return -1;
	/* what the allocation hooks would have told capture */
	cap_alloc_add(ce, dbuf, N * sizeof(float), CAP_ALLOC_DEVICE);
	cap_alloc_add(ce, dbuf2, N * sizeof(float), CAP_ALLOC_DEVICE);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	cap_engine_destroy(ce);
	return 0;
}

/* Each test starts with an empty window, so op pointers stay valid (no regrowth) within it. */
static int fresh_window(void **state)
{
	(void)state;
	cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuCtxSynchronize);
	return 0;
}

static struct cap_who who(void)
{
	return (struct cap_who){ .ctx = ctx, .tid = 1, .t_ns = 1 };
}

static const struct cap_op *record(const struct cap_call *c)
{
	struct cap_who w = who();
	struct cap_rec rec;

	assert_int_equal(cap_record(ce, c, &w, &rec), 0);
	assert_int_equal(rec.result, CAP_REC_RECORDED);
	assert_false(rec.ends_window);
	return cap_window_op(cap_window_current(ce), rec.index);
}

static void read_back(CUdeviceptr p, void *out, size_t n)
{
	CK(DRV_REAL(cuCtxSynchronize)());
	CK(DRV_REAL(cuMemcpyDtoH_v2)(out, p, n));
}

static void zero(CUdeviceptr p)
{
	CK(DRV_REAL(cuMemsetD8_v2)(p, 0, N * sizeof(float)));
	CK(DRV_REAL(cuCtxSynchronize)());
}

static struct cap_call kernel_call(enum drv_api_id api, CUfunction f, CUstream s, void **params, void **extra)
{
	struct cap_call c;

	memset(&c, 0, sizeof(c));
	c.kind = CAP_OP_KERNEL;
	c.api = (uint16_t)api;
	c.stream = s;
	c.u.kernel.f = f;
	c.u.kernel.grid[0] = c.u.kernel.grid[1] = c.u.kernel.grid[2] = 1;
	c.u.kernel.block[0] = N;
	c.u.kernel.block[1] = c.u.kernel.block[2] = 1;
	c.u.kernel.params = params;
	c.u.kernel.extra = extra;
	return c;
}

/* The original call's result equals the re-issued op's, though the stack changed between. */
static void test_kernel_params(void **state)
{
	float v = 3.5f, orig[N], again[N];
	int n = N;
	void *args[] = { &dbuf, &v, &n };
	struct cap_call c = kernel_call(DRV_ID_cuLaunchKernel, f_fill, s1, args, NULL);
	const struct cap_op *op;

	(void)state;
	zero(dbuf);
	op = record(&c);
	CK(DRV_REAL(cuLaunchKernel)(f_fill, 1, 1, 1, N, 1, 1, 0, s1, args, NULL));
	read_back(dbuf, orig, sizeof(orig));
	assert_true(orig[0] == 3.5f && orig[N - 1] == 3.5f);
	v = -1.0f; /* the program reuses its stack */
	n = 1;
	zero(dbuf);
	assert_int_equal(cap_op_issue(op), CUDA_SUCCESS);
	read_back(dbuf, again, sizeof(again));
	assert_memory_equal(orig, again, sizeof(orig));
	assert_string_equal(op->u.kernel.info->name, "fill");
	assert_int_equal(op->u.kernel.info->nparams, 3);
	assert_int_equal(op->u.kernel.info->param_bytes, 16);
	assert_int_equal(op->u.kernel.param_size, 16);
	assert_false(op->u.kernel.via_extra);
	assert_false(op->u.kernel.info->barrier);
}

static void test_kernel_extra_and_ptsz(void **state)
{
	struct {
		CUdeviceptr p;
		float v;
		int n;
	} buf = { dbuf2, 2.0f, N };
	size_t size = sizeof(buf);
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END };
	struct cap_call c = kernel_call(DRV_ID_cuLaunchKernel_ptsz, f_fill, 0, NULL, extra);
	const struct cap_op *op;
	float out[N];

	(void)state;
	zero(dbuf2);
	op = record(&c);
	assert_true(op->u.kernel.via_extra);
	assert_int_equal(op->u.kernel.param_size, 16);
	assert_int_equal(op->stream_kind, CAP_STREAM_PER_THREAD);
	buf.v = 9.0f;
	assert_int_equal(cap_op_issue(op), CUDA_SUCCESS);
	read_back(dbuf2, out, sizeof(out));
	assert_true(out[0] == 2.0f && out[N - 1] == 2.0f);
}

static void test_kernel_ex_and_coop(void **state)
{
	float v = 5.0f, out[N];
	int n = N;
	void *args[] = { &dbuf, &v, &n };
	CUlaunchAttribute attr[1];
	struct cap_call c = kernel_call(DRV_ID_cuLaunchKernelEx, f_fill, s2, args, NULL);
	const struct cap_op *op;

	(void)state;
	memset(attr, 0, sizeof(attr));
	attr[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
	attr[0].value.priority = 0;
	c.u.kernel.attrs = attr;
	c.u.kernel.nattrs = 1;
	zero(dbuf);
	op = record(&c);
	{
		/* the same attribute with garbage in the union bytes PRIORITY does not use: same key */
		CUlaunchAttribute dirty[1];
		const struct cap_op *op2;

		memset(dirty, 0xab, sizeof(dirty));
		dirty[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
		dirty[0].value.priority = 0;
		c.u.kernel.attrs = dirty;
		op2 = record(&c);
		assert_int_equal(op2->key, op->key);
		dirty[0].value.priority = 1; /* a different value: a different key */
		op2 = record(&c);
		assert_int_not_equal(op2->key, op->key);
		c.u.kernel.attrs = attr;
	}
	attr[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE; /* the program reuses its attribute array */
	assert_int_equal(op->u.kernel.nattrs, 1);
	assert_int_equal(op->u.kernel.attrs[0].id, CU_LAUNCH_ATTRIBUTE_PRIORITY);
	assert_int_equal(cap_op_issue(op), CUDA_SUCCESS);
	read_back(dbuf, out, sizeof(out));
	assert_true(out[7] == 5.0f);

	c = kernel_call(DRV_ID_cuLaunchCooperativeKernel, f_fill, s1, args, NULL);
	v = 6.0f;
	op = record(&c);
	v = 0.0f;
	assert_int_equal(cap_op_issue(op), CUDA_SUCCESS);
	read_back(dbuf, out, sizeof(out));
	assert_true(out[9] == 6.0f);
}

/* A CUkernel handle (cuLibraryGetKernel) resolves to the function in the current context. */
static void test_kernel_handle(void **state)
{
	char *ptx = read_ptx("elementwise");
	CUlibrary lib;
	CUkernel k;
	struct cap_call c;
	const struct cap_op *op;
	float v = 8.0f, out[N];
	int n = N;
	void *args[] = { &dbuf, &v, &n };

	(void)state;
	assert_non_null(ptx);
	CK(DRV_REAL(cuLibraryLoadData)(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
	free(ptx);
	CK(DRV_REAL(cuLibraryGetKernel)(&k, lib, "fill"));
	cap_kernel_handle_add(ce, k);
	c = kernel_call(DRV_ID_cuLaunchKernel, (CUfunction)k, s1, args, NULL);
	kernel_param_info_calls = 0;
	op = record(&c);
	/* the layout of a CUkernel comes from cuKernelGetParamInfo */
	assert_true(kernel_param_info_calls > 0);
	assert_true(op->u.kernel.info->layout_known);
	assert_int_equal(op->u.kernel.info->nparams, 3);
	/* the same kernel of another module is the same kernel for keys: same record, same id */
	assert_ptr_not_equal(op->u.kernel.func, f_fill);
	{
		struct cap_call plain = kernel_call(DRV_ID_cuLaunchKernel, f_fill, s1, args, NULL);
		const struct cap_op *op2 = record(&plain);

		assert_ptr_equal(op2->u.kernel.info, op->u.kernel.info);
		assert_int_equal(op2->key, op->key);
		assert_int_not_equal(op2->bind, op->bind); /* the handle is a binding */
	}
	assert_ptr_equal(op->u.kernel.handle, (CUfunction)k);
	assert_ptr_not_equal(op->u.kernel.func, (CUfunction)k);
	assert_string_equal(op->u.kernel.info->name, "fill");
	zero(dbuf);
	assert_int_equal(cap_op_issue(op), CUDA_SUCCESS); /* re-issued with the CUkernel handle */
	read_back(dbuf, out, sizeof(out));
	assert_true(out[3] == 8.0f);
}

/* A CUkernel handle learned again (the CUDA runtime asks cuLibraryGetKernel before launches,
 * PyTorch 4 times a launch) changes nothing: the lookups' answers stay (funcs.gen, which
 * capture's kernel lane and replay's armed lane compare with their predicted window's) and the
 * handle still resolves; a handle new as a CUkernel clears them. */
static void test_kernel_handle_again(void **state)
{
	char *ptx = read_ptx("elementwise");
	CUlibrary lib;
	CUkernel k, k2;
	uint64_t gen;

	(void)state;
	assert_non_null(ptx);
	CK(DRV_REAL(cuLibraryLoadData)(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
	free(ptx);
	CK(DRV_REAL(cuLibraryGetKernel)(&k, lib, "fill"));
	CK(DRV_REAL(cuLibraryGetKernel)(&k2, lib, "axpy"));
	gen = ce->funcs.gen;
	cap_kernel_handle_add(ce, k);
	assert_true(ce->funcs.gen != gen); /* new: what resolved it before is forgotten */
	assert_non_null(cap__func_get(ce, (CUfunction)k, ctx, NULL));
	gen = ce->funcs.gen;
	for (int i = 0; i < 4; i++)
		cap_kernel_handle_add(ce, k);
	assert_true(ce->funcs.gen == gen);
	assert_non_null(cap__func_get(ce, (CUfunction)k, ctx, NULL));
	cap_kernel_handle_add(ce, k2);
	assert_true(ce->funcs.gen != gen);
}

/* A kernel whose name matches CUFOLD_BARRIER_KERNELS is not recorded: it ends the window. */
static void test_barrier(void **state)
{
	float a = 1.0f;
	int n = N;
	void *args[] = { &dbuf, &dbuf2, &a, &n };
	struct cap_call c = kernel_call(DRV_ID_cuLaunchKernel, f_axpy, s1, args, NULL);
	struct cap_who w = who();
	struct cap_rec rec;
	struct cap_totals t0, t1;
	struct cap_call plain = kernel_call(DRV_ID_cuLaunchKernel, f_fill, s1, (void *[]){ &dbuf, &a, &n }, NULL);

	(void)state;
	cap_get_totals(ce, &t0);

	record(&plain);
	assert_int_equal(cap_record(ce, &c, &w, &rec), 0);
	assert_int_equal(rec.result, CAP_REC_BARRIER);
	assert_non_null(rec.closed);
	assert_int_equal(cap_window_closed_by(cap_shape_last(rec.closed)), CAP_BOUNDARY_BARRIER);
	assert_int_equal(cap_window_nops(cap_window_current(ce)), 0);
	cap_op_done(ce, &rec, false);
	cap_get_totals(ce, &t1);
	assert_int_equal(t1.launches, t0.launches + 1);
	assert_int_equal(t1.windows_by[CAP_BOUNDARY_BARRIER], t0.windows_by[CAP_BOUNDARY_BARRIER] + 1);
	/* a NULL parameter pointer cannot be recorded: the window ends (the driver refuses it) */
	record(&plain);
	c = kernel_call(DRV_ID_cuLaunchKernel, f_fill, s1, (void *[]){ &dbuf, NULL, &n }, NULL);
	assert_int_not_equal(cap_record(ce, &c, &w, &rec), 0);
	assert_int_equal(rec.result, CAP_REC_OPAQUE);
	assert_non_null(rec.closed);
}

static void test_copies(void **state)
{
	float host[N], out[N], copy_of[N];
	struct cf_arena arena;
	struct cap_call c;
	struct cap_op *op;
	CUDA_MEMCPY2D d2;

	(void)state;
	cf_arena_init(&arena, 0);
	for (int i = 0; i < N; i++)
		host[i] = (float)i;
	memcpy(copy_of, host, sizeof(host));
	/* async HtoD from pageable memory, staged: the program overwrites its buffer afterwards */
	memset(&c, 0, sizeof(c));
	c.kind = CAP_OP_MEMCPY;
	c.api = DRV_ID_cuMemcpyHtoDAsync_v2;
	c.stream = s1;
	cap_call_copy_1d(&c, CU_MEMORYTYPE_DEVICE, dbuf, CU_MEMORYTYPE_HOST, (uint64_t)(uintptr_t)host, sizeof(host));
	op = (struct cap_op *)record(&c);
	assert_true(op->u.memcpy.src_pageable);
	assert_int_equal(cap_op_stage(op, &arena), 0);
	assert_true(op->flags & CAP_OPF_STAGED);
	for (int i = 0; i < N; i++)
		host[i] = -1.0f;
	zero(dbuf);
	assert_int_equal(cap_op_issue(op), CUDA_SUCCESS);
	read_back(dbuf, out, sizeof(out));
	assert_memory_equal(out, copy_of, sizeof(out));

	/* sync DtoD, then unified async */
	memset(&c, 0, sizeof(c));
	c.kind = CAP_OP_MEMCPY;
	c.api = DRV_ID_cuMemcpyDtoD_v2;
	cap_call_copy_1d(&c, CU_MEMORYTYPE_DEVICE, dbuf2, CU_MEMORYTYPE_DEVICE, dbuf, sizeof(host));
	zero(dbuf2);
	assert_int_equal(cap_op_issue(record(&c)), CUDA_SUCCESS);
	read_back(dbuf2, out, sizeof(out));
	assert_memory_equal(out, copy_of, sizeof(out));
	c.api = DRV_ID_cuMemcpyAsync_ptsz;
	c.stream = 0;
	cap_call_copy_1d(&c, CU_MEMORYTYPE_UNIFIED, dbuf2 + 16, CU_MEMORYTYPE_UNIFIED, dbuf, 16);
	assert_int_equal(cap_op_issue(record(&c)), CUDA_SUCCESS);
	read_back(dbuf2, out, sizeof(out));
	assert_true(out[4] == 0.0f && out[5] == 1.0f && out[8] == 8.0f);

	/* 2-D: four rows of 8 bytes out of a pitch of 64, into a pitch of 32, staged */
	memset(&d2, 0, sizeof(d2));
	d2.srcMemoryType = CU_MEMORYTYPE_HOST;
	d2.srcHost = copy_of;
	d2.srcXInBytes = 4;
	d2.srcY = 1;
	d2.srcPitch = 64;
	d2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	d2.dstDevice = dbuf2;
	d2.dstPitch = 32;
	d2.WidthInBytes = 8;
	d2.Height = 4;
	memset(&c, 0, sizeof(c));
	c.kind = CAP_OP_MEMCPY;
	c.api = DRV_ID_cuMemcpy2DAsync_v2;
	c.stream = s2;
	cap_call_copy_2d(&c, &d2);
	op = (struct cap_op *)record(&c);
	assert_int_equal(op->u.memcpy.bytes, 32);
	assert_int_equal(op->u.memcpy.src_first, (uint64_t)(uintptr_t)copy_of + 64 + 4);
	assert_int_equal(op->u.memcpy.src_span, 3 * 64 + 8);
	assert_int_equal(cap_op_stage(op, &arena), 0);
	zero(dbuf2);
	assert_int_equal(cap_op_issue(op), CUDA_SUCCESS);
	read_back(dbuf2, out, sizeof(out));
	for (int r = 0; r < 4; r++) {
		/* row r of the destination: source floats 16*(r+1)+1 and +2 */
		assert_true(out[r * 8] == (float)(16 * (r + 1) + 1));
		assert_true(out[r * 8 + 1] == (float)(16 * (r + 1) + 2));
		assert_true(out[r * 8 + 2] == 0.0f);
	}
	cf_arena_fini(&arena);
}

/* Memory capture never saw allocated (here: straight through the real table, as IPC or a pool
 * import would be) is not pageable host memory: such a unified copy is never staged and never
 * deferred; plain host memory on the other side still is pageable. */
static void test_unknown_memory(void **state)
{
	float host[N];
	struct cf_arena arena;
	CUdeviceptr unseen;
	struct cap_call c;
	struct cap_op *op;
	struct cap_totals t0, t1;

	(void)state;
	cf_arena_init(&arena, 0);
	memset(host, 0, sizeof(host));
	CK(DRV_REAL(cuMemAlloc_v2)(&unseen, N * sizeof(float)));
	assert_null(cap_alloc_find(ce, unseen));
	memset(&c, 0, sizeof(c));
	c.kind = CAP_OP_MEMCPY;
	c.api = DRV_ID_cuMemcpyAsync;
	c.stream = s1;
	/* unknown device source into a known device buffer */
	cap_call_copy_1d(&c, CU_MEMORYTYPE_UNIFIED, dbuf, CU_MEMORYTYPE_UNIFIED, unseen, 64);
	cap_get_totals(ce, &t0);
	op = (struct cap_op *)record(&c);
	assert_false(op->u.memcpy.src_pageable);
	assert_int_equal(op->u.memcpy.dir, CAP_DIR_DTOD);
	assert_true(op->flags & CAP_OPF_NO_DEFER);
	assert_int_equal(cap_op_stage(op, &arena), 0);
	assert_false(op->flags & CAP_OPF_STAGED);
	assert_null(op->u.memcpy.staged);
	/* the same page again: answered from the cache, no second driver call */
	cap_get_totals(ce, &t1);
	assert_int_equal(t1.own_calls, t0.own_calls + 1);
	op = (struct cap_op *)record(&c);
	assert_true(op->flags & CAP_OPF_NO_DEFER);
	cap_get_totals(ce, &t0);
	assert_int_equal(t0.own_calls, t1.own_calls);
	/* unknown device destination, pageable host source: the host side stays pageable */
	cap_call_copy_1d(&c, CU_MEMORYTYPE_UNIFIED, unseen, CU_MEMORYTYPE_UNIFIED, (uint64_t)(uintptr_t)host, 64);
	op = (struct cap_op *)record(&c);
	assert_true(op->u.memcpy.src_pageable);
	assert_false(op->u.memcpy.dst_pageable);
	assert_int_equal(op->u.memcpy.dir, CAP_DIR_HTOD);
	assert_true(op->flags & CAP_OPF_NO_DEFER);
	/* known memory on both sides: deferrable as before */
	cap_call_copy_1d(&c, CU_MEMORYTYPE_UNIFIED, dbuf2, CU_MEMORYTYPE_UNIFIED, dbuf, 64);
	op = (struct cap_op *)record(&c);
	assert_false(op->flags & CAP_OPF_NO_DEFER);
	/* after a free the cache forgets: the address may be something else now */
	cap_boundary(ce, CAP_BOUNDARY_FREE, DRV_ID_cuMemFree_v2);
	cap_get_totals(ce, &t0);
	cap_call_copy_1d(&c, CU_MEMORYTYPE_UNIFIED, dbuf, CU_MEMORYTYPE_UNIFIED, unseen, 64);
	op = (struct cap_op *)record(&c);
	assert_true(op->flags & CAP_OPF_NO_DEFER);
	cap_get_totals(ce, &t1);
	assert_int_equal(t1.own_calls, t0.own_calls + 1);
	CK(DRV_REAL(cuCtxSynchronize)());
	CK(DRV_REAL(cuMemFree_v2)(unseen));
	cf_arena_fini(&arena);
}

static void test_memsets(void **state)
{
	struct cap_call c;
	uint32_t out[N];
	uint16_t *o16 = (uint16_t *)out;

	(void)state;
	memset(&c, 0, sizeof(c));
	c.kind = CAP_OP_MEMSET;
	c.api = DRV_ID_cuMemsetD2D32Async;
	c.stream = s1;
	c.u.memset = (struct cap_memset){ .dst = dbuf, .pitch = 64, .elem_size = 4, .value = 0xdeadbeef,
					  .width = 2, .height = 3 };
	zero(dbuf);
	assert_int_equal(cap_op_issue(record(&c)), CUDA_SUCCESS);
	read_back(dbuf, out, sizeof(out));
	assert_int_equal(out[0], 0xdeadbeef);
	assert_int_equal(out[1], 0xdeadbeef);
	assert_int_equal(out[2], 0);
	assert_int_equal(out[16], 0xdeadbeef);
	assert_int_equal(out[33], 0xdeadbeef);
	assert_int_equal(out[48], 0);
	c.api = DRV_ID_cuMemsetD16_v2;
	c.stream = 0;
	c.u.memset = (struct cap_memset){ .dst = dbuf2, .pitch = 10, .elem_size = 2, .value = 0x1234, .width = 5,
					  .height = 1 };
	zero(dbuf2);
	assert_int_equal(cap_op_issue(record(&c)), CUDA_SUCCESS);
	read_back(dbuf2, out, sizeof(out));
	assert_int_equal(o16[0], 0x1234);
	assert_int_equal(o16[4], 0x1234);
	assert_int_equal(o16[5], 0);
}

static void CUDA_CB count_hostfn(void *data)
{
	__atomic_fetch_add((unsigned int *)data, 1, __ATOMIC_RELAXED);
}

static void test_events_and_host_fn(void **state)
{
	CUevent e;
	struct cap_call c;
	const struct cap_op *rec_op, *wait_op, *fn_op;

	(void)state;
	CK(DRV_REAL(cuEventCreate)(&e, CU_EVENT_DISABLE_TIMING));
	memset(&c, 0, sizeof(c));
	c.kind = CAP_OP_EVENT_RECORD;
	c.api = DRV_ID_cuEventRecordWithFlags;
	c.stream = s1;
	c.u.event.event = e;
	rec_op = record(&c);
	c.kind = CAP_OP_EVENT_WAIT;
	c.api = DRV_ID_cuStreamWaitEvent;
	c.stream = s2;
	wait_op = record(&c);
	memset(&c, 0, sizeof(c));
	c.kind = CAP_OP_HOST_FN;
	c.api = DRV_ID_cuLaunchHostFunc;
	c.stream = s2;
	c.u.host_fn.fn = count_hostfn;
	c.u.host_fn.data = &hostfn_calls;
	fn_op = record(&c);
	assert_int_equal(rec_op->u.event.slot, wait_op->u.event.slot);
	assert_int_equal(cap_op_issue(rec_op), CUDA_SUCCESS);
	assert_int_equal(cap_op_issue(wait_op), CUDA_SUCCESS);
	assert_int_equal(cap_op_issue(fn_op), CUDA_SUCCESS);
	CK(DRV_REAL(cuStreamSynchronize)(s2));
	assert_int_equal(__atomic_load_n(&hostfn_calls, __ATOMIC_RELAXED), 1);
	assert_int_equal(DRV_REAL(cuEventQuery)(e), CUDA_SUCCESS);
	/* the driver's own answer comes back: a destroyed event is refused again */
	CK(DRV_REAL(cuEventDestroy_v2)(e));
	assert_int_not_equal(cap_op_issue(rec_op), CUDA_SUCCESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_kernel_params, fresh_window),
		cmocka_unit_test_setup(test_kernel_extra_and_ptsz, fresh_window),
		cmocka_unit_test_setup(test_kernel_ex_and_coop, fresh_window),
		cmocka_unit_test_setup(test_kernel_handle, fresh_window),
		cmocka_unit_test_setup(test_kernel_handle_again, fresh_window),
		cmocka_unit_test_setup(test_barrier, fresh_window),
		cmocka_unit_test_setup(test_copies, fresh_window),
		cmocka_unit_test_setup(test_unknown_memory, fresh_window),
		cmocka_unit_test_setup(test_memsets, fresh_window),
		cmocka_unit_test_setup(test_events_and_host_fn, fresh_window),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
