/* sim_launch.c - unit tests of kernel launches on the software device: every test kernel run
 * through its twin and checked against values computed here, CUkernel handles,
 * cuLaunchKernelEx, the extra buffer, parameter copying and launch errors.
 * tests layer; runs against the software device's libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

/* Not declared by cuda.h unless the per-thread default stream is selected. */
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
			     unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
			     unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
			     void **kernelParams, void **extra);

#define CAT_MAX 8

struct cat_args {
	const float *src[CAT_MAX];   /* input pointers */
	int len[CAT_MAX];            /* floats from each */
	int count;                   /* inputs used */
};

struct split_args {
	float *dst[CAT_MAX];         /* output pointers */
	int len[CAT_MAX];            /* floats to each */
	int count;                   /* outputs used */
};

static CUmodule mod_elem, mod_linalg, mod_nn, mod_copy, mod_nccl;

/* ------------------------------------------------------------------ helpers */

static CUdeviceptr dev_alloc(size_t n)
{
	CUdeviceptr d;

	CHECK(cuMemAlloc(&d, n));
	return d;
}

static CUdeviceptr dev_upload(const void *p, size_t n)
{
	CUdeviceptr d = dev_alloc(n);

	CHECK(cuMemcpyHtoD(d, p, n));
	return d;
}

static void dev_download(void *p, CUdeviceptr d, size_t n)
{
	CHECK(cuMemcpyDtoH(p, d, n));
}

static void run1d(CUfunction f, unsigned int grid, unsigned int block, void **params)
{
	CHECK(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, NULL, params, NULL));
	CHECK(cuCtxSynchronize());
}

static float *host_random(size_t n, uint32_t seed)
{
	float *p = malloc(n * sizeof(float));

	assert_non_null(p);
	tl_fill_random(p, n, seed);
	return p;
}

static void assert_floats_bitequal(const float *a, const float *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t x, y;

		memcpy(&x, &a[i], 4);
		memcpy(&y, &b[i], 4);
		if (x != y)
			fail_msg("element %zu: got %a (0x%08x), want %a (0x%08x)", i, (double)a[i], x,
				 (double)b[i], y);
	}
}

static int setup(void **state)
{
	(void)state;
	tl_init();
	mod_elem = tl_load_module("elementwise");
	mod_linalg = tl_load_module("linalg");
	mod_nn = tl_load_module("nn");
	mod_copy = tl_load_module("copy");
	mod_nccl = tl_load_module("nccl");
	return 0;
}

/* ------------------------------------------------------------------ elementwise.cu */

static void test_fill_and_short_grid(void **state)
{
	enum { N = 1000 };
	CUfunction f = tl_func(mod_elem, "fill");
	CUdeviceptr d = dev_alloc(N * sizeof(float));
	float v = 2.5f, w = -1.0f, h[N];
	int n = N;
	void *args[] = { &d, &v, &n };
	void *args2[] = { &d, &w, &n };

	(void)state;
	run1d(f, (N + 255) / 256, 256, args);
	dev_download(h, d, sizeof(h));
	for (int i = 0; i < N; i++)
		assert_true(h[i] == 2.5f);
	/* 2 blocks of 32 threads: only the first 64 elements, exactly like a GPU */
	run1d(f, 2, 32, args2);
	dev_download(h, d, sizeof(h));
	for (int i = 0; i < N; i++)
		assert_true(h[i] == (i < 64 ? -1.0f : 2.5f));
	CHECK(cuMemFree(d));
}

static void test_copy_axpy_add_mul_scale(void **state)
{
	enum { N = 777 };
	float *x = host_random(N, 1), *y = host_random(N, 2), want[N], got[N];
	CUdeviceptr dx = dev_upload(x, sizeof(want)), dy = dev_upload(y, sizeof(want));
	CUdeviceptr dout = dev_alloc(sizeof(want));
	float a = 0.3f, s = -1.7f;
	int n = N;
	void *copy_args[] = { &dout, &dx, &n };
	void *axpy_args[] = { &dy, &dx, &a, &n };
	void *bin_args[] = { &dout, &dx, &dy, &n };
	void *scale_args[] = { &dout, &dx, &s, &n };

	(void)state;
	run1d(tl_func(mod_elem, "copy"), 4, 256, copy_args);
	dev_download(got, dout, sizeof(got));
	assert_floats_bitequal(got, x, N);

	run1d(tl_func(mod_elem, "axpy"), 4, 256, axpy_args);
	dev_download(got, dy, sizeof(got));
	for (int i = 0; i < N; i++) {
		float t = a * x[i];

		y[i] = t + y[i];
	}
	assert_floats_bitequal(got, y, N);

	run1d(tl_func(mod_elem, "add"), 4, 256, bin_args);
	dev_download(got, dout, sizeof(got));
	for (int i = 0; i < N; i++)
		want[i] = x[i] + y[i];
	assert_floats_bitequal(got, want, N);

	run1d(tl_func(mod_elem, "mul"), 4, 256, bin_args);
	dev_download(got, dout, sizeof(got));
	for (int i = 0; i < N; i++)
		want[i] = x[i] * y[i];
	assert_floats_bitequal(got, want, N);

	run1d(tl_func(mod_elem, "scale"), 4, 256, scale_args);
	dev_download(got, dout, sizeof(got));
	for (int i = 0; i < N; i++)
		want[i] = s * x[i];
	assert_floats_bitequal(got, want, N);
	free(x);
	free(y);
	CHECK(cuMemFree(dx));
	CHECK(cuMemFree(dy));
	CHECK(cuMemFree(dout));
}

static void test_relu_tanh(void **state)
{
	float in[8] = { -2.0f, -0.0f, 0.0f, 1e-30f, 3.5f, NAN, -INFINITY, INFINITY };
	float want[8] = { 0.0f, 0.0f, 0.0f, 1e-30f, 3.5f, 0.0f, 0.0f, INFINITY };
	float got[8];
	CUdeviceptr din = dev_upload(in, sizeof(in)), dout = dev_alloc(sizeof(in));
	int n = 8;
	void *args[] = { &dout, &din, &n };

	(void)state;
	run1d(tl_func(mod_elem, "relu"), 1, 32, args);
	dev_download(got, dout, sizeof(got));
	assert_floats_bitequal(got, want, 8);
	assert_false(signbit(got[1])); /* relu(-0) is +0: the comparison is false */

	run1d(tl_func(mod_elem, "tanh_kernel"), 1, 32, args);
	dev_download(got, dout, sizeof(got));
	for (int i = 0; i < 8; i++)
		want[i] = tanhf(in[i]);
	assert_floats_bitequal(got, want, 8);
	assert_true(got[7] == 1.0f && got[6] == -1.0f);
	CHECK(cuMemFree(din));
	CHECK(cuMemFree(dout));
}

/* ------------------------------------------------------------------ linalg.cu */

static void gemm_ref(float *C, const float *A, const float *B, int m, int n, int k, float beta,
		     int rows, int cols)
{
	for (int r = 0; r < m && r < rows; r++) {
		for (int c = 0; c < n && c < cols; c++) {
			float acc = 0.0f;

			for (int p = 0; p < k; p++) {
				float t = A[r * k + p] * B[p * n + c];

				acc = acc + t;
			}
			if (beta != 0.0f) {
				float t = beta * C[r * n + c];

				acc = acc + t;
			}
			C[r * n + c] = acc;
		}
	}
}

static void test_gemm(void **state)
{
	enum { M = 5, N = 7, K = 3 };
	float *A = host_random(M * K, 3), *B = host_random(K * N, 4), *C0 = host_random(M * N, 5);
	float want[M * N], got[M * N];
	CUdeviceptr dA = dev_upload(A, M * K * 4), dB = dev_upload(B, K * N * 4);
	CUdeviceptr dC = dev_upload(C0, sizeof(want));
	CUfunction f = tl_func(mod_linalg, "gemm");
	int m = M, n = N, k = K;
	float beta = 0.0f;
	void *args[] = { &dC, &dA, &dB, &m, &n, &k, &beta };

	(void)state;
	/* beta = 0: C is not read; 4x4 blocks, 2x2 grid covers 8x8 >= 5x7 */
	CHECK(cuLaunchKernel(f, 2, 2, 1, 4, 4, 1, 0, NULL, args, NULL));
	dev_download(got, dC, sizeof(got));
	memcpy(want, C0, sizeof(want));
	gemm_ref(want, A, B, M, N, K, 0.0f, M, N);
	assert_floats_bitequal(got, want, M * N);
	/* sanity against a double-precision dot product */
	for (int r = 0; r < M; r++)
		for (int c = 0; c < N; c++) {
			double d = 0;

			for (int p = 0; p < K; p++)
				d += (double)A[r * K + p] * B[p * N + c];
			assert_true(fabs(d - got[r * N + c]) < 1e-5);
		}

	/* beta = 0.5 on a grid of one 4x4 block: only C[0..3][0..3] is updated */
	beta = 0.5f;
	CHECK(cuLaunchKernel(f, 1, 1, 1, 4, 4, 1, 0, NULL, args, NULL));
	dev_download(got, dC, sizeof(got));
	gemm_ref(want, A, B, M, N, K, 0.5f, 4, 4);
	assert_floats_bitequal(got, want, M * N);
	free(A);
	free(B);
	free(C0);
	CHECK(cuMemFree(dA));
	CHECK(cuMemFree(dB));
	CHECK(cuMemFree(dC));
}

static void test_reduce_sum(void **state)
{
	enum { N = 1000, T = 128 };
	float *x = host_random(N, 6), got = 0, want = 0;
	CUdeviceptr dx = dev_upload(x, N * 4), dout = dev_alloc(4);
	int n = N;
	void *args[] = { &dout, &dx, &n };
	double d = 0;

	(void)state;
	/* 3 blocks: only block 0 works; thread t sums x[t], x[t+T], ... then thread 0 the parts */
	CHECK(cuLaunchKernel(tl_func(mod_linalg, "reduce_sum"), 3, 1, 1, T, 1, 1, 0, NULL, args, NULL));
	dev_download(&got, dout, 4);
	for (int t = 0; t < T; t++) {
		float acc = 0;

		for (int i = t; i < N; i += T)
			acc = acc + x[i];
		want = want + acc;
	}
	for (int i = 0; i < N; i++)
		d += x[i];
	assert_floats_bitequal(&got, &want, 1);
	assert_true(fabs(d - got) < 1e-3);
	free(x);
	CHECK(cuMemFree(dx));
	CHECK(cuMemFree(dout));
}

/* ------------------------------------------------------------------ nn.cu */

static void test_embedding_bag(void **state)
{
	enum { ROWS = 10, DIM = 4, NBAGS = 3 };
	float *table = host_random(ROWS * DIM, 7), want[NBAGS * DIM], got[NBAGS * DIM];
	int indices[] = { 1, 3, 3, 9, 0, 2, 5 };
	int offsets[NBAGS + 1] = { 0, 3, 3, 7 }; /* bag 1 is empty */
	CUdeviceptr dt = dev_upload(table, ROWS * DIM * 4), di = dev_upload(indices, sizeof(indices));
	CUdeviceptr doff = dev_upload(offsets, sizeof(offsets)), dout = dev_alloc(sizeof(got));
	int nbags = NBAGS, dim = DIM;
	void *args[] = { &dt, &di, &doff, &nbags, &dim, &dout };

	(void)state;
	run1d(tl_func(mod_nn, "embedding_bag_sum"), 1, 64, args);
	dev_download(got, dout, sizeof(got));
	for (int b = 0; b < NBAGS; b++)
		for (int d = 0; d < DIM; d++) {
			float acc = 0;

			for (int j = offsets[b]; j < offsets[b + 1]; j++)
				acc = acc + table[indices[j] * DIM + d];
			want[b * DIM + d] = acc;
		}
	assert_floats_bitequal(got, want, NBAGS * DIM);
	assert_true(got[DIM] == 0.0f && got[2 * DIM - 1] == 0.0f);
	free(table);
	CHECK(cuMemFree(dt));
	CHECK(cuMemFree(di));
	CHECK(cuMemFree(doff));
	CHECK(cuMemFree(dout));
}

static void test_layernorm_softmax(void **state)
{
	enum { ROWS = 3, COLS = 50 };
	float *x = host_random(ROWS * COLS, 8), *g = host_random(COLS, 9), *b = host_random(COLS, 10);
	float want[ROWS * COLS], got[ROWS * COLS], eps = 1e-5f;
	CUdeviceptr dx = dev_upload(x, sizeof(got)), dg = dev_upload(g, COLS * 4);
	CUdeviceptr db = dev_upload(b, COLS * 4), dout = dev_alloc(sizeof(got));
	int cols = COLS;
	void *ln_args[] = { &dout, &dx, &dg, &db, &cols, &eps };
	void *sm_args[] = { &dout, &dx, &cols };

	(void)state;
	/* one block per row; 16 threads stride the 50 columns */
	run1d(tl_func(mod_nn, "layernorm_row"), ROWS, 16, ln_args);
	dev_download(got, dout, sizeof(got));
	for (int r = 0; r < ROWS; r++) {
		const float *xr = x + r * COLS;
		float s = 0, v = 0, mean, rstd, t;
		double m = 0;

		for (int j = 0; j < COLS; j++)
			s = s + xr[j];
		mean = s / (float)COLS;
		for (int j = 0; j < COLS; j++) {
			float d = xr[j] - mean;

			t = d * d;
			v = v + t;
		}
		v = v / (float)COLS;
		t = v + eps;
		t = sqrtf(t);
		rstd = 1.0f / t;
		for (int j = 0; j < COLS; j++) {
			float d = xr[j] - mean;

			d = d * rstd;
			t = d * g[j];
			want[r * COLS + j] = t + b[j];
			m += (want[r * COLS + j] - b[j]) / g[j];
		}
		assert_true(fabs(m / COLS) < 1e-3); /* the normalized row has mean ~0 */
	}
	assert_floats_bitequal(got, want, ROWS * COLS);

	run1d(tl_func(mod_nn, "softmax_row"), ROWS, 32, sm_args);
	dev_download(got, dout, sizeof(got));
	for (int r = 0; r < ROWS; r++) {
		const float *xr = x + r * COLS;
		float mx = xr[0], s = 0;
		double total = 0;

		for (int j = 1; j < COLS; j++)
			mx = fmaxf(mx, xr[j]);
		for (int j = 0; j < COLS; j++)
			s = s + expf(xr[j] - mx);
		for (int j = 0; j < COLS; j++) {
			want[r * COLS + j] = expf(xr[j] - mx) / s;
			total += got[r * COLS + j];
		}
		assert_true(fabs(total - 1.0) < 1e-5);
	}
	assert_floats_bitequal(got, want, ROWS * COLS);
	free(x);
	free(g);
	free(b);
	CHECK(cuMemFree(dx));
	CHECK(cuMemFree(dg));
	CHECK(cuMemFree(db));
	CHECK(cuMemFree(dout));
}

/* ------------------------------------------------------------------ copy.cu, nccl.cu */

static void test_cat_and_split(void **state)
{
	float a[5], b[3], c[7], got[15], back[15];
	CUdeviceptr da, db, dc, dout, ds[3];
	struct cat_args ca;
	struct split_args sa;
	int lens[3] = { 5, 3, 7 };
	void *cat_params[] = { &ca, &dout };
	void *split_params[] = { &dout, &sa };

	(void)state;
	tl_fill_random(a, 5, 11);
	tl_fill_random(b, 3, 12);
	tl_fill_random(c, 7, 13);
	da = dev_upload(a, sizeof(a));
	db = dev_upload(b, sizeof(b));
	dc = dev_upload(c, sizeof(c));
	dout = dev_alloc(sizeof(got));
	CHECK(cuMemsetD32(dout, 0, 15));
	memset(&ca, 0, sizeof(ca));
	ca.src[0] = (const float *)(uintptr_t)da;
	ca.src[1] = (const float *)(uintptr_t)db;
	ca.src[2] = (const float *)(uintptr_t)dc;
	memcpy(ca.len, lens, sizeof(lens));
	ca.count = 3;
	run1d(tl_func(mod_copy, "cat"), 1, 32, cat_params);
	dev_download(got, dout, sizeof(got));
	assert_floats_bitequal(got, a, 5);
	assert_floats_bitequal(got + 5, b, 3);
	assert_floats_bitequal(got + 8, c, 7);

	memset(&sa, 0, sizeof(sa));
	for (int i = 0; i < 3; i++) {
		ds[i] = dev_alloc((size_t)lens[i] * 4);
		sa.dst[i] = (float *)(uintptr_t)ds[i];
		sa.len[i] = lens[i];
	}
	sa.count = 3;
	run1d(tl_func(mod_copy, "split_copy"), 2, 8, split_params);
	for (int i = 0, at = 0; i < 3; at += lens[i], i++) {
		dev_download(back, ds[i], (size_t)lens[i] * 4);
		assert_floats_bitequal(back, got + at, (size_t)lens[i]);
		CHECK(cuMemFree(ds[i]));
	}

	/* a grid of 4 threads copies only the first 4 outputs */
	CHECK(cuMemsetD32(dout, 0, 15));
	CHECK(cuLaunchKernel(tl_func(mod_copy, "cat"), 1, 1, 1, 4, 1, 1, 0, NULL, cat_params, NULL));
	dev_download(got, dout, sizeof(got));
	assert_floats_bitequal(got, a, 4);
	assert_true(got[4] == 0.0f && got[14] == 0.0f);
	CHECK(cuMemFree(da));
	CHECK(cuMemFree(db));
	CHECK(cuMemFree(dc));
	CHECK(cuMemFree(dout));
}

static void test_nccl_identity(void **state)
{
	float x[64], got[64];
	CUdeviceptr d;
	int n = 64;
	void *args[] = { &d, &n };

	(void)state;
	tl_fill_random(x, 64, 14);
	d = dev_upload(x, sizeof(x));
	run1d(tl_func(mod_nccl, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"), 1, 64, args);
	dev_download(got, d, sizeof(got));
	assert_floats_bitequal(got, x, 64);
	CHECK(cuMemFree(d));
}

/* ------------------------------------------------------------------ launch paths */

static void test_kernel_handle_launch(void **state)
{
	char *ptx = tl_read_ptx("elementwise");
	CUlibrary lib;
	CUkernel k;
	CUfunction f;
	CUdeviceptr d = dev_alloc(16 * 4);
	float v = 9.0f, h[16];
	int n = 16;
	void *args[] = { &d, &v, &n };

	(void)state;
	CHECK(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
	free(ptx);
	CHECK(cuLibraryGetKernel(&k, lib, "fill"));
	/* a CUkernel is accepted wherever a CUfunction is */
	run1d((CUfunction)k, 1, 16, args);
	dev_download(h, d, sizeof(h));
	for (int i = 0; i < 16; i++)
		assert_true(h[i] == 9.0f);
	v = 4.0f;
	CHECK(cuKernelGetFunction(&f, k));
	run1d(f, 1, 16, args);
	dev_download(h, d, sizeof(h));
	assert_true(h[15] == 4.0f);
	CHECK(cuLibraryUnload(lib));
	CHECK(cuMemFree(d));
}

static void test_launch_ex(void **state)
{
	CUfunction f = tl_func(mod_elem, "fill");
	CUstream s;
	CUdeviceptr d = dev_alloc(100 * 4);
	float v = 7.0f, h[100];
	int n = 100;
	void *args[] = { &d, &v, &n };
	CUlaunchAttribute attr[2];
	CUlaunchConfig cfg;

	(void)state;
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	memset(attr, 0, sizeof(attr));
	attr[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
	attr[0].value.priority = 0;
	attr[1].id = CU_LAUNCH_ATTRIBUTE_IGNORE;
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = 2;
	cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = 64;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = s;
	cfg.attrs = attr;
	cfg.numAttrs = 2;
	CHECK(cuLaunchKernelEx(&cfg, f, args, NULL));
	CHECK(cuStreamSynchronize(s));
	dev_download(h, d, sizeof(h));
	for (int i = 0; i < 100; i++)
		assert_true(h[i] == 7.0f);

	assert_int_equal(cuLaunchKernelEx(NULL, f, args, NULL), CUDA_ERROR_INVALID_VALUE);
	cfg.attrs = NULL;
	assert_int_equal(cuLaunchKernelEx(&cfg, f, args, NULL), CUDA_ERROR_INVALID_VALUE);
	cfg.attrs = attr;
	attr[1].id = (CUlaunchAttributeID)1000;
	assert_int_equal(cuLaunchKernelEx(&cfg, f, args, NULL), CUDA_ERROR_INVALID_VALUE);
	cfg.numAttrs = 0;
	cfg.blockDimX = 0;
	assert_int_equal(cuLaunchKernelEx(&cfg, f, args, NULL), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFree(d));
}

static void test_ptsz_and_cooperative(void **state)
{
	CUfunction f = tl_func(mod_elem, "fill");
	CUdeviceptr d = dev_alloc(8 * 4);
	float v = 1.0f, h[8];
	int n = 8;
	void *args[] = { &d, &v, &n };

	(void)state;
	CHECK(cuLaunchKernel_ptsz(f, 1, 1, 1, 8, 1, 1, 0, NULL, args, NULL));
	CHECK(cuCtxSynchronize());
	dev_download(h, d, sizeof(h));
	assert_true(h[7] == 1.0f);
	v = 3.0f;
	CHECK(cuLaunchCooperativeKernel(f, 1, 1, 1, 8, 1, 1, 0, NULL, args));
	CHECK(cuCtxSynchronize());
	dev_download(h, d, sizeof(h));
	assert_true(h[0] == 3.0f && h[7] == 3.0f);
	CHECK(cuMemFree(d));
}

static void test_extra_buffer(void **state)
{
	enum { N = 40 };
	CUfunction f = tl_func(mod_elem, "axpy");
	float *x = host_random(N, 15), y[N], got[N], a = 2.0f;
	CUdeviceptr dx = dev_upload(x, sizeof(y)), dy;
	int n = N;
	size_t off[4], size, len;
	unsigned char buf[32];
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &len,
			  CU_LAUNCH_PARAM_END };
	void *bad_key[] = { (void *)(uintptr_t)7, buf, CU_LAUNCH_PARAM_END };
	void *args[] = { &dy, &dx, &a, &n };

	(void)state;
	tl_fill_random(y, N, 16);
	dy = dev_upload(y, sizeof(y));
	/* lay the buffer out as the driver says */
	memset(buf, 0, sizeof(buf));
	for (int i = 0; i < 4; i++)
		CHECK(cuFuncGetParamInfo(f, (size_t)i, &off[i], &size));
	memcpy(buf + off[0], &dy, 8);
	memcpy(buf + off[1], &dx, 8);
	memcpy(buf + off[2], &a, 4);
	memcpy(buf + off[3], &n, 4);
	len = off[3] + 4;
	CHECK(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, NULL, extra));
	CHECK(cuCtxSynchronize());
	dev_download(got, dy, sizeof(got));
	for (int i = 0; i < N; i++) {
		float t = a * x[i];

		y[i] = t + y[i];
	}
	assert_floats_bitequal(got, y, N);

	len = 12;
	assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, NULL, extra),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, NULL, bad_key),
			 CUDA_ERROR_INVALID_VALUE);
	/* both ways at once */
	assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, args, extra),
			 CUDA_ERROR_INVALID_VALUE);
	free(x);
	CHECK(cuMemFree(dx));
	CHECK(cuMemFree(dy));
}

static void test_bad_dims_and_params(void **state)
{
	CUfunction f = tl_func(mod_elem, "fill");
	CUdeviceptr d = dev_alloc(1024 * 4);
	float v = 1.0f;
	int n = 1024;
	void *args[] = { &d, &v, &n };
	void *holey[] = { &d, NULL, &n };

	(void)state;
	assert_int_equal(cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLaunchKernel(f, 1, 0, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 0, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 1025, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 32, 32, 2, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 1, 1, 65, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLaunchKernel(f, 1, 65536, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, holey, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLaunchKernel(NULL, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cuLaunchKernel((CUfunction)(void *)&n, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL),
			 CUDA_ERROR_INVALID_HANDLE);
	/* dynamic shared memory: 48 KiB without opting in, up to 227 KiB with */
	assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 64 * 1024, NULL, args, NULL),
			 CUDA_ERROR_INVALID_VALUE);
	CHECK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100 * 1024));
	CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 64 * 1024, NULL, args, NULL));
	/* the largest legal shape works */
	CHECK(cuLaunchKernel(f, 1, 1, 1, 1024, 1, 1, 0, NULL, args, NULL));
	CHECK(cuLaunchKernel(f, 1, 1, 1, 16, 16, 4, 0, NULL, args, NULL));
	CHECK(cuCtxSynchronize());
	CHECK(cuMemFree(d));
}

/* Parameters are copied at the call: changing them before the work runs changes nothing. */
static void test_params_copied_at_launch(void **state)
{
	CUfunction f = tl_func(mod_elem, "fill");
	CUdeviceptr d = dev_alloc(32 * 4);
	float v = 5.0f, h[32];
	int n = 32;
	void *args[] = { &d, &v, &n };

	(void)state;
	CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
	v = 6.0f;
	n = 1;
	CHECK(cuCtxSynchronize());
	dev_download(h, d, sizeof(h));
	for (int i = 0; i < 32; i++)
		assert_true(h[i] == 5.0f);
	CHECK(cuMemFree(d));
}

/* Work queued on a module's function still runs when the module is unloaded first. */
static void test_unload_runs_queued_work(void **state)
{
	CUmodule m = tl_load_module("elementwise");
	CUfunction f = tl_func(m, "fill");
	CUdeviceptr d = dev_alloc(64 * 4);
	float v = 8.0f, h[64];
	int n = 64;
	void *args[] = { &d, &v, &n };

	(void)state;
	CHECK(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
	CHECK(cuModuleUnload(m));
	dev_download(h, d, sizeof(h));
	for (int i = 0; i < 64; i++)
		assert_true(h[i] == 8.0f);
	CHECK(cuMemFree(d));
}

/* A graph's kernel node keeps its function alive: the graph still runs after the module is
 * unloaded (the payload holds a reference), and destroying it afterwards frees everything. */
static void test_graph_node_outlives_unload(void **state)
{
	CUmodule m = tl_load_module("elementwise");
	CUdeviceptr d = dev_alloc(64 * 4);
	float v = 12.0f, h[64];
	int n = 64;
	void *args[] = { &d, &v, &n };
	CUDA_KERNEL_NODE_PARAMS kp;
	CUgraph g;
	CUgraphNode node;
	CUgraphExec x;

	(void)state;
	memset(&kp, 0, sizeof(kp));
	kp.func = tl_func(m, "fill");
	kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
	kp.blockDimX = 64;
	kp.blockDimY = kp.blockDimZ = 1;
	kp.kernelParams = args;
	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddKernelNode(&node, g, NULL, 0, &kp));
	CHECK(cuGraphInstantiate(&x, g, 0));
	CHECK(cuModuleUnload(m));
	CHECK(cuGraphLaunch(x, NULL));
	CHECK(cuCtxSynchronize());
	dev_download(h, d, sizeof(h));
	for (int i = 0; i < 64; i++)
		assert_true(h[i] == 12.0f);
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
	CHECK(cuMemFree(d));
}

/* Stream order holds between launches: a chain fill -> scale -> add on one stream. */
static void test_stream_order_of_launches(void **state)
{
	enum { N = 256 };
	CUstream s;
	CUdeviceptr a = dev_alloc(N * 4), b = dev_alloc(N * 4);
	float one = 1.0f, three = 3.0f, h[N];
	int n = N;
	void *fill_args[] = { &a, &one, &n };
	void *scale_args[] = { &b, &a, &three, &n };
	void *add_args[] = { &a, &a, &b, &n };

	(void)state;
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (int rep = 0; rep < 3; rep++) {
		CHECK(cuLaunchKernel(tl_func(mod_elem, "fill"), 1, 1, 1, N, 1, 1, 0, s, fill_args, NULL));
		CHECK(cuLaunchKernel(tl_func(mod_elem, "scale"), 1, 1, 1, N, 1, 1, 0, s, scale_args, NULL));
		CHECK(cuLaunchKernel(tl_func(mod_elem, "add"), 1, 1, 1, N, 1, 1, 0, s, add_args, NULL));
	}
	CHECK(cuStreamSynchronize(s));
	dev_download(h, a, sizeof(h));
	for (int i = 0; i < N; i++)
		assert_true(h[i] == 4.0f);
	CHECK(cuStreamDestroy(s));
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fill_and_short_grid),
		cmocka_unit_test(test_copy_axpy_add_mul_scale),
		cmocka_unit_test(test_relu_tanh),
		cmocka_unit_test(test_gemm),
		cmocka_unit_test(test_reduce_sum),
		cmocka_unit_test(test_embedding_bag),
		cmocka_unit_test(test_layernorm_softmax),
		cmocka_unit_test(test_cat_and_split),
		cmocka_unit_test(test_nccl_identity),
		cmocka_unit_test(test_kernel_handle_launch),
		cmocka_unit_test(test_launch_ex),
		cmocka_unit_test(test_ptsz_and_cooperative),
		cmocka_unit_test(test_extra_buffer),
		cmocka_unit_test(test_bad_dims_and_params),
		cmocka_unit_test(test_params_copied_at_launch),
		cmocka_unit_test(test_unload_runs_queued_work),
		cmocka_unit_test(test_graph_node_outlives_unload),
		cmocka_unit_test(test_stream_order_of_launches),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
