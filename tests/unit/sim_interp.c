/* sim_interp.c - the software device's PTX interpreter checked against the hand-written twins:
 * every test kernel of tests/kernels/ (*.cu) with a built-in twin runs on random inputs over
 * several grid and block shapes, once as its twin and once interpreted, and every buffer it
 * was given must come out bit-identical. Kernels whose twin calls the C library's expf/tanhf
 * (the GPU code is nvcc's own expansion with ex2.approx) are compared within a relative error
 * instead; they are listed as `approx` below. Also: a kernel with an instruction the
 * interpreter does not model fails its launch with CUDA_ERROR_NOT_SUPPORTED and one log line
 * naming the kernel and the instruction. tests layer; runs against libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <fenv.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simcuda.h"
#include "testlib.h"

void simcuda_interp_force(int on); /* exported by the software device for tests */

#define MAX_PARAMS 14
#define MAX_BUFS 16
#define APPROX_REL 1e-5 /* expf/tanhf: the C library vs nvcc's expansion, a few ulp */

enum pkind {
	P_END,                       /* end of the list */
	P_OUT,                       /* float buffer of n (random too: unwritten parts must stay) */
	P_IN,                        /* float buffer of n, random */
	P_IDX,                       /* int buffer of n, random in [0, v) */
	P_OFFS,                      /* int offsets of n entries, 0 .. v, non-decreasing */
	P_INT,                       /* int v */
	P_FLT,                       /* float f */
	P_CAT,                       /* struct cat_args/split_args of copy.cu: 3 buffers */
};

struct pspec {
	enum pkind k;                /* kind */
	int n;                       /* elements of a buffer */
	int v;                       /* int value, index bound or offset total */
	float f;                     /* float value */
};

enum shape {
	SH_1D,                       /* nx threads over a 1-D grid */
	SH_2D,                       /* nx columns (x) by ny rows (y) */
	SH_ROW,                      /* one block per row: ny blocks */
	SH_ONE,                      /* one block (a second one must do nothing) */
};

struct kspec {
	const char *file;            /* tests/kernels/<file>.cu */
	const char *name;            /* entry */
	enum shape sh;               /* how it is launched */
	int nx, ny, nz;              /* extent (nz: grid z, batches) */
	bool approx;                 /* compared within APPROX_REL (see the file comment) */
	struct pspec p[MAX_PARAMS];  /* parameters */
};

#define O(n) { P_OUT, n, 0, 0 }
#define I(n) { P_IN, n, 0, 0 }
#define N(v) { P_INT, 0, v, 0 }
#define F(f) { P_FLT, 0, 0, f }
#define IDX(n, v) { P_IDX, n, v, 0 }
#define OFFS(n, v) { P_OFFS, n, v, 0 }
#define CAT { P_CAT, 0, 0, 0 }

static const struct kspec kernels[] = {
	{ "elementwise", "fill", SH_1D, 1000, 1, 1, false, { O(1000), F(1.5f), N(1000) } },
	{ "elementwise", "copy", SH_1D, 1000, 1, 1, false, { O(1000), I(1000), N(1000) } },
	{ "elementwise", "axpy", SH_1D, 1000, 1, 1, false, { O(1000), I(1000), F(0.75f), N(1000) } },
	{ "elementwise", "add", SH_1D, 1000, 1, 1, false, { O(1000), I(1000), I(1000), N(1000) } },
	{ "elementwise", "mul", SH_1D, 1000, 1, 1, false, { O(1000), I(1000), I(1000), N(1000) } },
	{ "elementwise", "scale", SH_1D, 1000, 1, 1, false, { O(1000), I(1000), F(-3.25f), N(1000) } },
	{ "elementwise", "relu", SH_1D, 1000, 1, 1, false, { O(1000), I(1000), N(1000) } },
	{ "elementwise", "tanh_kernel", SH_1D, 1000, 1, 1, true, { O(1000), I(1000), N(1000) } },
	{ "linalg", "gemm", SH_2D, 45, 37, 1, false,
	  { O(37 * 45), I(37 * 19), I(19 * 45), N(37), N(45), N(19), F(0.5f) } },
	{ "linalg", "gemm", SH_2D, 45, 37, 1, false,
	  { O(37 * 45), I(37 * 19), I(19 * 45), N(37), N(45), N(19), F(0.0f) } },
	{ "linalg", "reduce_sum", SH_ONE, 700, 1, 1, false, { O(1), I(700), N(700) } },
	{ "nccl", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", SH_1D, 1000, 1, 1, false, { O(1000), N(1000) } },
	{ "copy", "cat", SH_1D, 387, 1, 1, false, { CAT, O(400) } },
	{ "copy", "split_copy", SH_1D, 387, 1, 1, false, { I(400), CAT } },
	{ "nn", "embedding_bag_sum", SH_1D, 160, 1, 1, false,
	  { I(50 * 16), IDX(120, 50), OFFS(11, 120), N(10), N(16), O(160) } },
	{ "nn", "layernorm_row", SH_ROW, 0, 7, 1, false,
	  { O(7 * 300), I(7 * 300), I(300), I(300), N(300), F(1e-5f) } },
	{ "nn", "softmax_row", SH_ROW, 0, 7, 1, true, { O(7 * 300), I(7 * 300), N(300) } },
	{ "train", "bias_add", SH_1D, 33 * 17, 1, 1, false, { O(33 * 17), I(17), N(33), N(17) } },
	{ "train", "bias_grad", SH_1D, 17, 1, 1, false, { O(17), I(33 * 17), N(33), N(17) } },
	{ "train", "relu_backward", SH_1D, 1000, 1, 1, false, { O(1000), I(1000), I(1000), N(1000) } },
	{ "train", "tanh_backward", SH_1D, 1000, 1, 1, false, { O(1000), I(1000), I(1000), N(1000) } },
	{ "train", "gemm_ex", SH_2D, 21, 13, 2, false,
	  { O(2 * 13 * 21), I(2 * 13 * 9), I(2 * 9 * 21), N(13), N(21), N(9), N(0), N(0), F(1.0f),
	    F(0.0f), N(13 * 9), N(9 * 21), N(13 * 21) } },
	{ "train", "gemm_ex", SH_2D, 21, 13, 2, false,
	  { O(2 * 13 * 21), I(2 * 13 * 9), I(2 * 9 * 21), N(13), N(21), N(9), N(1), N(1), F(0.5f),
	    F(1.5f), N(13 * 9), N(9 * 21), N(13 * 21) } },
	{ "train", "embedding_bag_backward", SH_1D, 16, 1, 1, false,
	  { O(50 * 16), IDX(120, 50), OFFS(11, 120), N(10), N(16), I(160) } },
	{ "train", "dot_interaction", SH_1D, 60, 1, 1, false, { O(60), I(5 * 6 * 8), N(5), N(6), N(8) } },
	{ "train", "dot_interaction_backward", SH_1D, 240, 1, 1, false,
	  { O(240), I(60), I(240), N(5), N(6), N(8) } },
	{ "train", "concat2_rows", SH_1D, 9 * 30, 1, 1, false,
	  { O(9 * 30), I(9 * 12), N(12), I(9 * 18), N(18), N(9) } },
	{ "train", "split2_rows", SH_1D, 9 * 30, 1, 1, false,
	  { O(9 * 12), N(12), O(9 * 18), N(18), I(9 * 30), N(9) } },
	{ "train", "layernorm_backward_row", SH_ROW, 0, 7, 1, false,
	  { O(7 * 300), O(7 * 300), I(7 * 300), I(7 * 300), I(300), N(300), F(1e-5f) } },
	{ "train", "layernorm_param_grad", SH_1D, 40, 1, 1, false,
	  { O(40), O(40), I(11 * 40), I(11 * 40), N(11), N(40) } },
	{ "train", "softmax_backward_row", SH_ROW, 0, 7, 1, false,
	  { O(7 * 300), I(7 * 300), I(7 * 300), N(300) } },
	{ "train", "bce_logits", SH_1D, 1000, 1, 1, true,
	  { O(1000), O(1000), I(1000), I(1000), N(1000), F(1e-3f) } },
	{ "train", "mse_loss", SH_1D, 1000, 1, 1, false,
	  { O(1000), O(1000), I(1000), I(1000), N(1000), F(1e-3f) } },
};

/* One launch configuration. */
struct dims {
	unsigned int gx, gy, gz, bx, by, bz;
};

struct bufs {
	CUdeviceptr d[MAX_BUFS];     /* device buffers */
	size_t bytes[MAX_BUFS];      /* their sizes */
	void *init[MAX_BUFS];        /* initial contents */
	unsigned int n;              /* buffers used */
};

static uint32_t rng = 12345;

static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static CUdeviceptr new_buf(struct bufs *b, size_t bytes, const void *init)
{
	unsigned int i = b->n++;

	assert_true(i < MAX_BUFS);
	CHECK(cuMemAlloc(&b->d[i], bytes));
	b->bytes[i] = bytes;
	b->init[i] = malloc(bytes);
	assert_non_null(b->init[i]);
	memcpy(b->init[i], init, bytes);
	return b->d[i];
}

static CUdeviceptr rand_floats(struct bufs *b, int n)
{
	float *h = malloc((size_t)n * sizeof(float));
	CUdeviceptr d;

	assert_non_null(h);
	for (int i = 0; i < n; i++)
		h[i] = (float)((int)(next_rand() % 4001) - 2000) / 997.0f;
	d = new_buf(b, (size_t)n * sizeof(float), h);
	free(h);
	return d;
}

/* The parameter bytes of a spec, buffers made in b. */
static void build_params(const struct kspec *k, struct bufs *b, unsigned char store[][128], void **args)
{
	for (int i = 0; i < MAX_PARAMS && k->p[i].k != P_END; i++) {
		const struct pspec *p = &k->p[i];
		CUdeviceptr d = 0;

		args[i] = store[i];
		switch (p->k) {
		case P_OUT:
		case P_IN:
			d = rand_floats(b, p->n);
			memcpy(store[i], &d, sizeof(d));
			break;
		case P_IDX:
		case P_OFFS: {
			int *h = malloc((size_t)p->n * sizeof(int));

			assert_non_null(h);
			for (int j = 0; j < p->n; j++)
				h[j] = p->k == P_IDX ? (int)(next_rand() % (uint32_t)p->v) : 0;
			if (p->k == P_OFFS) {
				for (int j = 1; j < p->n - 1; j++)
					h[j] = (int)(next_rand() % (uint32_t)(p->v + 1));
				h[p->n - 1] = p->v;
				for (int j = 1; j < p->n; j++) /* sort: offsets never decrease */
					for (int q = j; q > 0 && h[q - 1] > h[q]; q--) {
						int t = h[q];

						h[q] = h[q - 1];
						h[q - 1] = t;
					}
			}
			d = new_buf(b, (size_t)p->n * sizeof(int), h);
			memcpy(store[i], &d, sizeof(d));
			free(h);
			break;
		}
		case P_INT:
			memcpy(store[i], &p->v, sizeof(int));
			break;
		case P_FLT:
			memcpy(store[i], &p->f, sizeof(float));
			break;
		case P_CAT: { /* { float *ptr[8]; int len[8]; int count; } with 3 parts */
			static const int len[3] = { 100, 250, 37 };
			unsigned char s[104] = { 0 };
			int count = 3;

			for (int j = 0; j < 3; j++) {
				d = rand_floats(b, len[j]);
				memcpy(s + 8 * j, &d, sizeof(d));
				memcpy(s + 64 + 4 * j, &len[j], sizeof(int));
			}
			memcpy(s + 96, &count, sizeof(int));
			memcpy(store[i], s, sizeof(s));
			break;
		}
		case P_END:
			break;
		}
	}
}

static void reset_bufs(const struct bufs *b)
{
	for (unsigned int i = 0; i < b->n; i++)
		CHECK(cuMemcpyHtoD(b->d[i], b->init[i], b->bytes[i]));
}

static void **snapshot(const struct bufs *b)
{
	void **out = calloc(b->n, sizeof(*out));

	assert_non_null(out);
	for (unsigned int i = 0; i < b->n; i++) {
		out[i] = malloc(b->bytes[i]);
		assert_non_null(out[i]);
		CHECK(cuMemcpyDtoH(out[i], b->d[i], b->bytes[i]));
	}
	return out;
}

static unsigned int shapes(const struct kspec *k, struct dims *out)
{
	unsigned int n = 0;

	switch (k->sh) {
	case SH_1D: {
		static const unsigned int blocks[] = { 32, 96, 128, 1 };

		for (unsigned int i = 0; i < 4; i++) {
			unsigned int bx = blocks[i], gx = ((unsigned int)k->nx + bx - 1) / bx;

			out[n++] = (struct dims){ gx, 1, 1, bx, 1, 1 };
		}
		out[n++] = (struct dims){ 2, 1, 1, 64, 1, 1 }; /* covers only part */
		break;
	}
	case SH_2D: {
		static const unsigned int bxy[][2] = { { 8, 8 }, { 16, 4 }, { 32, 1 }, { 5, 7 } };

		for (unsigned int i = 0; i < 4; i++) {
			unsigned int bx = bxy[i][0], by = bxy[i][1];

			out[n++] = (struct dims){ ((unsigned int)k->nx + bx - 1) / bx,
						  ((unsigned int)k->ny + by - 1) / by, (unsigned int)k->nz,
						  bx, by, 1 };
		}
		break;
	}
	case SH_ROW: {
		static const unsigned int blocks[] = { 1, 32, 64, 100 };

		for (unsigned int i = 0; i < 4; i++)
			out[n++] = (struct dims){ (unsigned int)k->ny, 1, 1, blocks[i], 1, 1 };
		break;
	}
	case SH_ONE: {
		static const unsigned int blocks[] = { 1, 32, 256, 1000 };

		for (unsigned int i = 0; i < 4; i++)
			out[n++] = (struct dims){ 1, 1, 1, blocks[i], 1, 1 };
		out[n++] = (struct dims){ 2, 1, 1, 64, 2, 1 };
		break;
	}
	}
	return n;
}

static void run(CUfunction f, const struct dims *s, void **args, bool interp)
{
	simcuda_interp_force(interp);
	CHECK(cuLaunchKernel(f, s->gx, s->gy, s->gz, s->bx, s->by, s->bz, 0, NULL, args, NULL));
	CHECK(cuCtxSynchronize());
	simcuda_interp_force(0);
}

static void compare(const struct kspec *k, const struct dims *s, const struct bufs *b, void **twin,
		    void **interp, unsigned int *approx_seen)
{
	for (unsigned int i = 0; i < b->n; i++) {
		if (!memcmp(twin[i], interp[i], b->bytes[i]))
			continue;
		for (size_t j = 0; j < b->bytes[i] / sizeof(float); j++) {
			float x = ((float *)twin[i])[j], y = ((float *)interp[i])[j];

			if (!memcmp(&x, &y, sizeof(x)))
				continue;
			if (k->approx && fabsf(x - y) <= APPROX_REL * fmaxf(1.0f, fabsf(x))) {
				(*approx_seen)++;
				continue;
			}
			fail_msg("%s grid %ux%ux%u block %ux%ux%u: buffer %u element %zu: twin %a, "
				 "interpreted %a",
				 k->name, s->gx, s->gy, s->gz, s->bx, s->by, s->bz, i, j, (double)x, (double)y);
		}
	}
}

static void test_against_twins(void **state)
{
	unsigned int approx_seen = 0, runs = 0;

	(void)state;
	for (size_t ki = 0; ki < sizeof(kernels) / sizeof(kernels[0]); ki++) {
		const struct kspec *k = &kernels[ki];
		CUmodule m = tl_load_module(k->file);
		CUfunction f = tl_func(m, k->name);
		unsigned char store[MAX_PARAMS][128];
		void *args[MAX_PARAMS];
		struct bufs b = { .n = 0 };
		struct dims sh[8];
		unsigned int nsh = shapes(k, sh);

		build_params(k, &b, store, args);
		for (unsigned int si = 0; si < nsh; si++) {
			void **twin, **interp;

			reset_bufs(&b);
			run(f, &sh[si], args, false);
			twin = snapshot(&b);
			reset_bufs(&b);
			run(f, &sh[si], args, true);
			interp = snapshot(&b);
			compare(k, &sh[si], &b, twin, interp, &approx_seen);
			for (unsigned int i = 0; i < b.n; i++) {
				free(twin[i]);
				free(interp[i]);
			}
			free(twin);
			free(interp);
			runs++;
		}
		for (unsigned int i = 0; i < b.n; i++) {
			CHECK(cuMemFree(b.d[i]));
			free(b.init[i]);
		}
		CHECK(cuModuleUnload(m));
	}
	printf("%u launches compared; %u float(s) of the approx kernels differed within %g\n", runs,
	       approx_seen, APPROX_REL);
}

/* ------------------------------------------------------------------ kernels without twins */

/* nt_power_plus of notwin.cu, one rounded operation per statement as the kernel's. */
static float power_plus(float x, int k)
{
	float r = 1.0f;

	for (int i = 0; i < k; i++)
		r = r * x;
	return r + (float)k;
}

/* A kernel whose name is longer than 200 characters (as numba-cuda and CUB mangle) runs. */
static void test_notwin_long_name(void **state)
{
	static const char name[] = "nt_long_name_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
				  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
				  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
				  "xxxxxxxxxxxxx";
	CUmodule m = tl_load_module("notwin");
	CUfunction f = tl_func(m, name);
	int out[32], v = 40;
	CUdeviceptr d;
	void *args[] = { &d, &v };

	(void)state;
	assert_true(sizeof(name) > 200);
	CHECK(cuMemAlloc(&d, sizeof(out)));
	CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(out, d, sizeof(out)));
	for (int i = 0; i < 32; i++)
		assert_int_equal(out[i], 40 + i);
	CHECK(cuMemFree(d));
	CHECK(cuModuleUnload(m));
}

static void test_notwin_powers(void **state)
{
	CUmodule m = tl_load_module("notwin");
	CUfunction f = tl_func(m, "nt_powers");
	enum { NP = 1234 };
	float *in = malloc(NP * sizeof(float)), *out = malloc(NP * sizeof(float));
	CUdeviceptr din, dout;
	long long n = NP;
	void *args[] = { &dout, &din, &n };
	static const unsigned int grids[][2] = { { 1, 32 }, { 3, 64 }, { 40, 32 }, { 2, 1000 } };

	(void)state;
	assert_true(in && out);
	tl_fill_random(in, NP, 7);
	CHECK(cuMemAlloc(&din, NP * sizeof(float)));
	CHECK(cuMemAlloc(&dout, NP * sizeof(float)));
	CHECK(cuMemcpyHtoD(din, in, NP * sizeof(float)));
	for (unsigned int g = 0; g < 4; g++) {
		CHECK(cuMemsetD8(dout, 0, NP * sizeof(float)));
		CHECK(cuLaunchKernel(f, grids[g][0], 1, 1, grids[g][1], 1, 1, 0, NULL, args, NULL));
		CHECK(cuMemcpyDtoH(out, dout, NP * sizeof(float)));
		for (int i = 0; i < NP; i++) {
			float want = power_plus(in[i], i % 4);

			if (memcmp(&want, &out[i], sizeof(float)))
				fail_msg("nt_powers grid %u: out[%d] = %a, want %a", g, i, (double)out[i],
					 (double)want);
		}
	}
	CHECK(cuMemFree(din));
	CHECK(cuMemFree(dout));
	CHECK(cuModuleUnload(m));
	free(in);
	free(out);
}

static void test_notwin_histogram(void **state)
{
	CUmodule m = tl_load_module("notwin");
	CUfunction f = tl_func(m, "nt_histogram");
	enum { NH = 5000, BINS = 37 };
	unsigned int *in = malloc(NH * sizeof(unsigned int)), hist[BINS], want[BINS] = { 0 };
	CUdeviceptr din, dhist;
	long long n = NH;
	int nbins = BINS;
	void *args[] = { &dhist, &din, &n, &nbins };
	static const unsigned int grids[][2] = { { 1, 32 }, { 7, 96 }, { 64, 128 } };

	(void)state;
	assert_non_null(in);
	for (int i = 0; i < NH; i++) {
		in[i] = next_rand();
		want[in[i] % BINS]++;
	}
	CHECK(cuMemAlloc(&din, NH * sizeof(unsigned int)));
	CHECK(cuMemAlloc(&dhist, sizeof(hist)));
	CHECK(cuMemcpyHtoD(din, in, NH * sizeof(unsigned int)));
	for (unsigned int g = 0; g < 3; g++) {
		CHECK(cuMemsetD8(dhist, 0, sizeof(hist)));
		CHECK(cuLaunchKernel(f, grids[g][0], 1, 1, grids[g][1], 1, 1, BINS * sizeof(unsigned int),
				     NULL, args, NULL));
		CHECK(cuMemcpyDtoH(hist, dhist, sizeof(hist)));
		for (int b = 0; b < BINS; b++)
			if (hist[b] != want[b])
				fail_msg("nt_histogram grid %u: bin %d = %u, want %u", g, b, hist[b], want[b]);
	}
	CHECK(cuMemFree(din));
	CHECK(cuMemFree(dhist));
	CHECK(cuModuleUnload(m));
	free(in);
}

static void test_notwin_sum4(void **state)
{
	CUmodule m = tl_load_module("notwin");
	CUfunction f = tl_func(m, "nt_sum4");
	enum { N4 = 3001 };
	float *in = malloc(N4 * 4 * sizeof(float)), total, want = 0.0f;
	unsigned int done;
	CUdeviceptr din, dtotal, ddone;
	int n4 = N4;
	void *args[] = { &dtotal, &ddone, &din, &n4 };
	static const unsigned int grids[][2] = { { 1, 32 }, { 5, 96 }, { 13, 256 }, { 2, 1024 }, { 3, 40 } };

	(void)state;
	assert_non_null(in);
	for (int i = 0; i < N4 * 4; i++) {
		in[i] = (float)((int)(next_rand() % 201) - 100); /* small integers: any order is exact */
		want += in[i];
	}
	CHECK(cuMemAlloc(&din, N4 * 4 * sizeof(float)));
	CHECK(cuMemAlloc(&dtotal, sizeof(float)));
	CHECK(cuMemAlloc(&ddone, sizeof(unsigned int)));
	CHECK(cuMemcpyHtoD(din, in, N4 * 4 * sizeof(float)));
	for (unsigned int g = 0; g < 5; g++) {
		CHECK(cuMemsetD8(dtotal, 0, sizeof(float)));
		CHECK(cuMemsetD8(ddone, 0, sizeof(unsigned int)));
		CHECK(cuLaunchKernel(f, grids[g][0], 1, 1, grids[g][1], 1, 1, 0, NULL, args, NULL));
		CHECK(cuMemcpyDtoH(&total, dtotal, sizeof(float)));
		CHECK(cuMemcpyDtoH(&done, ddone, sizeof(unsigned int)));
		if (total != want || done != grids[g][0])
			fail_msg("nt_sum4 grid %u: total %g (want %g), %u blocks done (want %u)", g,
				 (double)total, (double)want, done, grids[g][0]);
	}
	CHECK(cuMemFree(din));
	CHECK(cuMemFree(dtotal));
	CHECK(cuMemFree(ddone));
	CHECK(cuModuleUnload(m));
	free(in);
}

static void test_notwin_votes(void **state)
{
	CUmodule m = tl_load_module("notwin");
	CUfunction f = tl_func(m, "nt_votes");
	enum { NV = 200 };
	float x[NV];
	int out[NV];
	CUdeviceptr dx, dout;
	int n = NV;
	void *args[] = { &dout, &dx, &n };

	(void)state;
	for (int i = 0; i < NV; i++) /* warps 0..: mixed, all positive, none positive, mixed */
		x[i] = (i / 32 == 1) ? 1.0f : (i / 32 == 2) ? -1.0f : (next_rand() % 3 == 0 ? 1.0f : -1.0f);
	CHECK(cuMemAlloc(&dx, sizeof(x)));
	CHECK(cuMemAlloc(&dout, sizeof(out)));
	CHECK(cuMemcpyHtoD(dx, x, sizeof(x)));
	CHECK(cuLaunchKernel(f, 2, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int w = 0; w * 32 < NV; w++) {
		int pos = 0, lanes = 0;

		for (int i = w * 32; i < w * 32 + 32; i++)
			if (i < NV) {
				pos += x[i] > 0.0f;
				lanes++;
			}
		for (int i = w * 32; i < w * 32 + 32 && i < NV; i++) {
			/* lanes past n are threads too, voting false */
			int want = pos * 1000 + (pos == 32 ? 100 : 0) + (pos ? 10 : 0) + (x[i] > 0.0f ? pos : 0);

			if (out[i] != want)
				fail_msg("nt_votes: out[%d] = %d, want %d", i, out[i], want);
		}
		(void)lanes;
	}
	CHECK(cuMemFree(dx));
	CHECK(cuMemFree(dout));
	CHECK(cuModuleUnload(m));
}

static void test_notwin_bits(void **state)
{
	CUmodule m = tl_load_module("notwin");
	CUfunction f = tl_func(m, "nt_bits");
	enum { NB = 300 };
	int a[NB], b[NB];
	unsigned long long out[NB];
	CUdeviceptr da, db, dout;
	int n = NB;
	void *args[] = { &dout, &da, &db, &n };

	(void)state;
	for (int i = 0; i < NB; i++) {
		a[i] = (int)next_rand();
		b[i] = i % 5 == 0 ? 0 : i % 7 == 0 ? -1 : (int)next_rand() >> (i % 24);
	}
	a[1] = INT32_MIN;
	b[1] = -1;
	a[2] = 0;
	CHECK(cuMemAlloc(&da, sizeof(a)));
	CHECK(cuMemAlloc(&db, sizeof(b)));
	CHECK(cuMemAlloc(&dout, sizeof(out)));
	CHECK(cuMemcpyHtoD(da, a, sizeof(a)));
	CHECK(cuMemcpyHtoD(db, b, sizeof(b)));
	CHECK(cuLaunchKernel(f, 3, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int i = 0; i < NB; i++) {
		int x = a[i], y = b[i];
		unsigned long long r = 0, p = (unsigned long long)(long long)x * 2654435761ull;
		unsigned int ux = (unsigned int)x, rev = 0;
		long long q, rm;

		for (int k = 0; k < 32; k++)
			rev |= ((ux >> k) & 1u) << (31 - k);
		/* the GPU's INT_MIN / -1 is INT_MIN, its remainder 0 (C leaves both undefined) */
		q = y == 0 ? 0 : (x == INT32_MIN && y == -1) ? INT32_MIN : x / y;
		rm = y == 0 ? 0 : y == -1 ? 0 : x % y;
		r ^= (unsigned long long)(ux ? __builtin_clz(ux) : 32);
		r ^= (unsigned long long)rev << 3;
		r ^= (unsigned long long)((ux >> (y & 31)) & 0xffu) << 11;
		r ^= (unsigned long long)((__extension__(unsigned __int128)p *
					   ((unsigned long long)(long long)y | 1ull)) >> 64);
		r ^= (unsigned long long)q << 7;
		r ^= (unsigned long long)rm << 17;
		r ^= (unsigned long long)(unsigned int)(x < y ? x : y) << 29;
		r ^= (unsigned long long)(unsigned int)(x > y ? x : y) << 31;
		r ^= (unsigned long long)__builtin_popcount(ux ^ (unsigned int)y) << 50;
		r ^= (unsigned long long)(x < y) << 60;
		r ^= (unsigned long long)(x >= -5) << 61;
		r ^= (unsigned long long)((long long)x * y > -1000ll) << 62;
		if (out[i] != r)
			fail_msg("nt_bits: out[%d] = %llx, want %llx (a %d, b %d)", i, out[i], r, x, y);
	}
	CHECK(cuMemFree(da));
	CHECK(cuMemFree(db));
	CHECK(cuMemFree(dout));
	CHECK(cuModuleUnload(m));
}

/* f(a, b) in rounding mode `mode`: volatile operands keep the compiler from folding or moving
 * the operation across fesetround. */
enum fop { FADD, FMUL, FDIV, FSQRT, FRCP, FFMA, FI2F, FD2F };

static float in_mode(int mode, enum fop op, float a, float b, double d, int ia)
{
	volatile float va = a, vb = b, r = 0.0f;
	volatile double vd = d;
	volatile int vi = ia;

	fesetround(mode);
	switch (op) {
	case FADD: r = va + vb; break;
	case FMUL: r = va * vb; break;
	case FDIV: r = va / vb; break;
	case FSQRT: r = sqrtf(va); break;
	case FRCP: r = 1.0f / vb; break;
	case FFMA: r = fmaf(va, vb, 0.3f); break;
	case FI2F: r = (float)vi; break;
	case FD2F: r = (float)vd; break;
	}
	fesetround(FE_TONEAREST);
	return r;
}

/* The GPU's float-to-int conversions saturate and send NaN to 0. */
static int32_t f2i(double x)
{
	return isnan(x) ? 0 : x >= 2147483647.0 ? INT32_MAX : x <= -2147483648.0 ? INT32_MIN : (int32_t)x;
}

static uint32_t f2u(double x)
{
	return isnan(x) || x <= 0 ? 0 : x >= 4294967295.0 ? UINT32_MAX : (uint32_t)x;
}

static float bits_f(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static void test_notwin_fmodes(void **state)
{
	CUmodule m = tl_load_module("notwin");
	CUfunction f = tl_func(m, "nt_fmodes");
	enum { NF = 300, K = 20 };
	float a[NF], b[NF], *out = malloc(NF * K * sizeof(float));
	CUdeviceptr da, db, dout;
	int n = NF;
	void *args[] = { &dout, &da, &db, &n };

	(void)state;
	assert_non_null(out);
	tl_fill_random(a, NF, 11);
	tl_fill_random(b, NF, 12);
	for (int i = 0; i < NF; i += 7) /* wider magnitudes: saturation, subnormal quotients */
		a[i] *= (i % 2) ? 3e7f : 1e-30f;
	b[3] = 0.0f;
	CHECK(cuMemAlloc(&da, sizeof(a)));
	CHECK(cuMemAlloc(&db, sizeof(b)));
	CHECK(cuMemAlloc(&dout, NF * K * sizeof(float)));
	CHECK(cuMemcpyHtoD(da, a, sizeof(a)));
	CHECK(cuMemcpyHtoD(db, b, sizeof(b)));
	CHECK(cuLaunchKernel(f, 3, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(out, dout, NF * K * sizeof(float)));
	for (int i = 0; i < NF; i++) {
		float x = a[i], y = b[i], want[K], tmp[8], sat;

		for (int j = 0; j < 8; j++)
			tmp[j] = x * (float)j;
		want[0] = in_mode(FE_TOWARDZERO, FADD, x, y, 0, 0);
		want[1] = in_mode(FE_DOWNWARD, FADD, x, y, 0, 0);
		want[2] = in_mode(FE_UPWARD, FADD, x, y, 0, 0);
		want[3] = in_mode(FE_TOWARDZERO, FMUL, x, y, 0, 0);
		want[4] = in_mode(FE_TONEAREST, FDIV, x, y, 0, 0);
		want[5] = in_mode(FE_TOWARDZERO, FDIV, x, y, 0, 0);
		want[6] = in_mode(FE_TONEAREST, FSQRT, fabsf(x), 0, 0, 0);
		want[7] = in_mode(FE_UPWARD, FSQRT, fabsf(x), 0, 0, 0);
		want[8] = in_mode(FE_TONEAREST, FRCP, 0, y, 0, 0);
		want[9] = in_mode(FE_TOWARDZERO, FFMA, x, y, 0, 0);
		want[10] = bits_f((uint32_t)f2i(nearbyint((double)(x * 1000.0f))));
		want[11] = bits_f((uint32_t)f2i(trunc((double)(x * 3e9f))));
		want[12] = bits_f(f2u(floor((double)(x * 100.0f))));
		{
			int32_t ix;

			memcpy(&ix, &x, sizeof(ix));
			want[13] = in_mode(FE_TOWARDZERO, FI2F, 0, 0, 0, ix);
		}
		sat = isnan(x) ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x;
		want[14] = sat;
		want[15] = (float)((double)x * (double)y + 1.0);
		want[16] = in_mode(FE_TOWARDZERO, FD2F, 0, 0, (double)x / 3.0, 0);
		want[17] = tmp[(i * 3 + (y > 0.0f)) % 8];
		want[18] = fminf(x, y);
		want[19] = fmaxf(x, y);
		for (int j = 0; j < K; j++)
			if (memcmp(&want[j], &out[i * K + j], sizeof(float)))
				fail_msg("nt_fmodes: element %d result %d = %a, want %a (a %a, b %a)", i, j,
					 (double)out[i * K + j], (double)want[j], (double)x, (double)y);
	}
	CHECK(cuMemFree(da));
	CHECK(cuMemFree(db));
	CHECK(cuMemFree(dout));
	CHECK(cuModuleUnload(m));
	free(out);
}

__extension__ typedef _Float16 half_t;

static uint32_t rev32(uint32_t v)
{
	uint32_t r = 0;

	for (int k = 0; k < 32; k++)
		r |= ((v >> k) & 1u) << (31 - k);
	return r;
}

static void test_notwin_misc(void **state)
{
	CUmodule m = tl_load_module("notwin");
	CUfunction f = tl_func(m, "nt_misc");
	enum { NM = 257 };
	float fl[NM];
	unsigned int u[NM], out[NM * 8];
	CUdeviceptr df, du, dout;
	int n = NM;
	void *args[] = { &dout, &df, &du, &n };

	(void)state;
	tl_fill_random(fl, NM, 21);
	for (int i = 0; i < NM; i++) {
		u[i] = next_rand() >> (i % 9);
		if (i % 11 == 0)
			fl[i] *= 70000.0f; /* beyond f16's range */
		if (i % 13 == 0)
			fl[i] *= 1e-6f; /* f16 subnormals */
	}
	u[5] = 0;
	CHECK(cuMemAlloc(&df, sizeof(fl)));
	CHECK(cuMemAlloc(&du, sizeof(u)));
	CHECK(cuMemAlloc(&dout, sizeof(out)));
	CHECK(cuMemcpyHtoD(df, fl, sizeof(fl)));
	CHECK(cuMemcpyHtoD(du, u, sizeof(u)));
	CHECK(cuLaunchKernel(f, 3, 1, 1, 96, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int i = 0; i < NM; i++) {
		uint32_t x = u[i], y = u[(i + 1) % NM], s = u[(i + 2) % NM], want[8];
		uint64_t both = ((uint64_t)y << 32) | x, xy = ((uint64_t)x << 32) | y;
		volatile float vf = fl[i];
		half_t h;
		float back;
		uint16_t hb;
		int ffs = x ? __builtin_ctz(x) + 1 : 0;

		h = (half_t)vf;
		back = (float)h;
		memcpy(&want[0], &back, sizeof(back));
		/* round toward zero: the largest f16 not above |f| (the host's conversion ignores
		 * fesetround), found among every finite f16 */
		hb = 0;
		for (uint16_t k = 1; k <= 0x7bff; k++) {
			half_t c;

			memcpy(&c, &k, sizeof(c));
			if ((double)c <= fabs((double)fl[i]))
				hb = k;
		}
		want[1] = hb | (signbit(fl[i]) ? 0x8000u : 0);
		want[2] = (uint32_t)((both << (s & 31)) >> 32);
		want[3] = (uint32_t)(both >> (s > 32 ? 32 : s));
		{
			uint64_t t = both;

			want[4] = 0;
			for (int k = 0; k < 4; k++) {
				unsigned int sel = (s >> (4 * k)) & 7;

				want[4] |= (uint32_t)((t >> (8 * sel)) & 0xff) << (8 * k);
			}
		}
		want[5] = (uint32_t)ffs + ((x >> (s & 15)) & 0x3ffu) * 64u;
		want[6] = (x & y) ^ (~s | (x ^ y));
		want[7] = (uint32_t)(xy ? __builtin_clzll(xy) : 64) + (rev32(s) & 0xf0f0u);
		for (int j = 0; j < 8; j++)
			if (out[i * 8 + j] != want[j])
				fail_msg("nt_misc: element %d result %d = %08x, want %08x (f %a x %08x y %08x s %08x)",
					 i, j, out[i * 8 + j], want[j], (double)fl[i], x, y, s);
	}
	CHECK(cuMemFree(df));
	CHECK(cuMemFree(du));
	CHECK(cuMemFree(dout));
	CHECK(cuModuleUnload(m));
}

static void test_notwin_globals(void **state)
{
	CUmodule m = tl_load_module("notwin");
	CUfunction f = tl_func(m, "nt_globals"), rd = tl_func(m, "nt_read_calls");
	enum { NG = 100 };
	static const float coeffs[4] = { 0.5f, -1.25f, 2.0f, 0.125f };
	static const int table[5] = { 3, 1, 4, 1, 5 };
	float in[NG], out[NG];
	unsigned int calls = 0;
	CUdeviceptr din, dout, dcalls;
	int n = NG;
	void *args[] = { &dout, &din, &n }, *rargs[] = { &dcalls };

	(void)state;
	tl_fill_random(in, NG, 31);
	CHECK(cuMemAlloc(&din, sizeof(in)));
	CHECK(cuMemAlloc(&dout, sizeof(out)));
	CHECK(cuMemAlloc(&dcalls, sizeof(calls)));
	CHECK(cuMemcpyHtoD(din, in, sizeof(in)));
	CHECK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
	CHECK(cuLaunchKernel(f, 4, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
	CHECK(cuLaunchKernel(rd, 1, 1, 1, 1, 1, 1, 0, NULL, rargs, NULL));
	CHECK(cuMemcpyDtoH(out, dout, sizeof(out)));
	CHECK(cuMemcpyDtoH(&calls, dcalls, sizeof(calls)));
	for (int i = 0; i < NG; i++) {
		float want = coeffs[i % 4] * in[i] + (float)table[i % 5];

		if (memcmp(&want, &out[i], sizeof(want)))
			fail_msg("nt_globals: out[%d] = %a, want %a", i, (double)out[i], (double)want);
	}
	assert_int_equal(calls, 2 * NG); /* the counter lives as long as the module */
	CHECK(cuMemFree(din));
	CHECK(cuMemFree(dout));
	CHECK(cuMemFree(dcalls));
	CHECK(cuModuleUnload(m));
}

/* printf from a kernel: the device formats CUDA's vprintf(format, packed arguments). A block's
 * lines come together, in thread order; the blocks in the order they ran (any, unless forced to
 * index order). */
static void notwin_printf(bool linear)
{
	CUmodule m = tl_load_module("notwin");
	CUfunction f = tl_func(m, "nt_printf");
	char path[] = "/tmp/sim_interp_out_XXXXXX", text[1024] = "", want[2][512] = { "", "" }, both[1024];
	int fd = mkstemp(path), saved = dup(1), ret[4], n = 42;
	float x = 2.5f;
	long long big = -123456789012ll;
	CUdeviceptr dret;
	void *args[] = { &dret, &n, &x, &big };
	size_t wl = 0;
	FILE *fp;

	assert_true(fd >= 0 && saved >= 0);
	CHECK(cuMemAlloc(&dret, sizeof(ret)));
	fflush(stdout);
	dup2(fd, 1);
	simcuda_block_order_force(linear ? 0 : -1);
	CHECK(cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
	CHECK(cuCtxSynchronize());
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	fp = fdopen(fd, "r");
	assert_non_null(fp);
	rewind(fp);
	text[fread(text, 1, sizeof(text) - 1, fp)] = 0;
	fclose(fp);
	unlink(path);
	CHECK(cuMemcpyDtoH(ret, dret, sizeof(ret)));
	simcuda_block_order_force(-1);
	for (int b = 0; b < 2; b++, wl = 0)
		for (unsigned int t = 0; t < 2; t++) {
			int len = snprintf(want[b] + wl, sizeof(want[b]) - wl,
					   "block %d thread %u: n=%5d x=%.3f big=%lld hex=%#x %s %c%%\n", b, t, n,
					   (double)x, big, 255u + t, "ok", 'A' + (int)t);

			assert_int_equal(ret[b * 2 + (int)t], len);
			wl += (size_t)len;
		}
	snprintf(both, sizeof(both), "%s%s", want[0], want[1]);
	if (linear || strcmp(text, both) != 0) {
		if (!linear)
			snprintf(both, sizeof(both), "%s%s", want[1], want[0]);
		assert_string_equal(text, both);
	}
	CHECK(cuMemFree(dret));
	CHECK(cuModuleUnload(m));
}

static void test_notwin_printf(void **state)
{
	(void)state;
	notwin_printf(false);
	notwin_printf(true);
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return (x > y) - (x < y);
}

/* CUB's BlockReduce, BlockScan, WarpReduce and BlockRadixSort (tests/kernels/cub.cu). */
static void test_cub(void **state)
{
	CUmodule m = tl_load_module("cub");
	enum { BLOCKS = 3, N = BLOCKS * 512 };
	int in[N], out[N];
	float fin[N], fout[N];
	unsigned int uin[N], uout[N];
	CUdeviceptr din, dout;
	void *args[] = { &din, &dout };

	(void)state;
	for (int i = 0; i < N; i++) {
		in[i] = (int)(next_rand() % 2001) - 1000;
		fin[i] = (float)in[i] / 7.0f;
		uin[i] = next_rand();
	}
	CHECK(cuMemAlloc(&din, sizeof(in)));
	CHECK(cuMemAlloc(&dout, sizeof(out)));

	CHECK(cuMemcpyHtoD(din, in, sizeof(in)));
	CHECK(cuLaunchKernel(tl_func(m, "k_block_reduce"), BLOCKS, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int b = 0; b < BLOCKS; b++) {
		int sum = 0;

		for (int t = 0; t < 128; t++)
			sum += in[b * 128 + t];
		assert_int_equal(out[b], sum);
	}

	CHECK(cuLaunchKernel(tl_func(m, "k_block_scan"), BLOCKS, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int b = 0; b < BLOCKS; b++)
		for (int t = 0, sum = 0; t < 128; sum += in[b * 128 + t], t++)
			if (out[b * 128 + t] != sum)
				fail_msg("k_block_scan: block %d thread %d = %d, want %d", b, t, out[b * 128 + t], sum);

	CHECK(cuMemcpyHtoD(din, fin, sizeof(fin)));
	CHECK(cuLaunchKernel(tl_func(m, "k_warp_max"), BLOCKS, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(fout, dout, sizeof(fout)));
	for (int w = 0; w < BLOCKS * 4; w++) {
		float mx = fin[w * 32];

		for (int l = 1; l < 32; l++)
			mx = fin[w * 32 + l] > mx ? fin[w * 32 + l] : mx;
		if (fout[w] != mx)
			fail_msg("k_warp_max: warp %d = %g, want %g", w, (double)fout[w], (double)mx);
	}

	CHECK(cuMemcpyHtoD(din, uin, sizeof(uin)));
	CHECK(cuLaunchKernel(tl_func(m, "k_radix"), BLOCKS, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(uout, dout, sizeof(uout)));
	for (int b = 0; b < BLOCKS; b++) {
		qsort(uin + b * 512, 512, sizeof(unsigned int), cmp_uint);
		for (int i = 0; i < 512; i++)
			if (uout[b * 512 + i] != uin[b * 512 + i])
				fail_msg("k_radix: block %d key %d = %u, want %u", b, i, uout[b * 512 + i],
					 uin[b * 512 + i]);
	}
	CHECK(cuMemFree(din));
	CHECK(cuMemFree(dout));
	CHECK(cuModuleUnload(m));
}

/* Capture stderr (the device's log) around a call. */
static char *with_stderr(CUresult *rc, CUfunction f, void **args)
{
	char path[] = "/tmp/sim_interp_XXXXXX", *text;
	int fd = mkstemp(path), saved = dup(2);
	FILE *fp;
	long len;

	assert_true(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	*rc = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
	CHECK(cuCtxSynchronize()); /* the kernel runs here */
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	fp = fdopen(fd, "r");
	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	len = ftell(fp);
	rewind(fp);
	text = calloc(1, (size_t)len + 1);
	assert_non_null(text);
	assert_true(fread(text, 1, (size_t)len, fp) == (size_t)len);
	fclose(fp);
	unlink(path);
	return text;
}

/* A module with one kernel the interpreter runs and one it cannot: the module loads, the first
 * kernel runs, the second's launch fails (every time) with one log line. */
static void test_unsupported_fails_launch(void **state)
{
	static const char ptx[] =
		".version 9.0\n.target sm_90\n.address_size 64\n"
		".visible .entry runs(.param .u64 runs_param_0)\n{\n"
		"\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<5>;\n"
		"\tld.param.u64 %rd1, [runs_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
		"\tmov.u32 %r1, %tid.x;\n\tmul.wide.u32 %rd3, %r1, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n"
		"\tmul.lo.s32 %r2, %r1, %r1;\n\tst.global.u32 [%rd4], %r2;\n\tret;\n}\n"
		".visible .entry exotic(.param .u64 exotic_param_0)\n{\n"
		"\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<3>;\n"
		"\tld.param.u64 %rd1, [exotic_param_0];\n\tmov.u32 %r1, %clock;\n"
		"\tst.global.u32 [%rd1], %r1;\n\tret;\n}\n";
	CUmodule m;
	CUfunction ok, bad;
	CUdeviceptr d;
	void *args[] = { &d };
	unsigned int out[32];
	CUresult rc;
	char *log;

	(void)state;
	CHECK(cuModuleLoadData(&m, ptx));
	CHECK(cuModuleGetFunction(&ok, m, "runs"));
	CHECK(cuModuleGetFunction(&bad, m, "exotic"));
	CHECK(cuMemAlloc(&d, sizeof(out)));
	CHECK(cuLaunchKernel(ok, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(out, d, sizeof(out)));
	for (unsigned int i = 0; i < 32; i++)
		assert_int_equal(out[i], i * i);
	log = with_stderr(&rc, bad, args);
	assert_int_equal(rc, CUDA_ERROR_NOT_SUPPORTED);
	assert_non_null(strstr(log, "exotic"));
	assert_non_null(strstr(log, "%clock"));
	assert_non_null(strstr(log, "line 22")); /* where it is in the PTX text */
	assert_null(strchr(strchr(log, '\n') + 1, '\n')); /* one line */
	free(log);
	log = with_stderr(&rc, bad, args);
	assert_int_equal(rc, CUDA_ERROR_NOT_SUPPORTED);
	assert_string_equal(log, ""); /* said once */
	free(log);
	CHECK(cuMemFree(d));
	CHECK(cuModuleUnload(m));
}

/* A kernel storing past its shared array: the run stops there with one line naming the space,
 * offset and PTX line, instead of writing into whatever follows. */
static void test_out_of_bounds_stops(void **state)
{
	static const char ptx[] =
		".version 9.0\n.target sm_90\n.address_size 64\n"
		".visible .entry oob(.param .u64 oob_param_0)\n{\n"
		"\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<5>;\n"
		"\t.shared .align 4 .b8 buf[16];\n"
		"\tmov.u32 %r1, %tid.x;\n\tshl.b32 %r2, %r1, 2;\n\tmov.u32 %r3, buf;\n"
		"\tadd.s32 %r3, %r3, %r2;\n\tst.shared.u32 [%r3], %r1;\n"
		"\tld.param.u64 %rd1, [oob_param_0];\n\tmul.wide.u32 %rd2, %r1, 4;\n"
		"\tadd.s64 %rd3, %rd1, %rd2;\n\tst.global.u32 [%rd3], %r1;\n\tret;\n}\n";
	CUmodule m;
	CUfunction f;
	CUdeviceptr d;
	void *args[] = { &d };
	unsigned int out[32];
	CUresult rc;
	char *log;

	(void)state;
	CHECK(cuModuleLoadData(&m, ptx));
	CHECK(cuModuleGetFunction(&f, m, "oob"));
	CHECK(cuMemAlloc(&d, sizeof(out)));
	CHECK(cuMemsetD32(d, 0xdead, 32));
	log = with_stderr(&rc, f, args);
	assert_int_equal(rc, CUDA_SUCCESS);
	assert_non_null(strstr(log, "kernel oob: shared memory access out of bounds (offset 16) at PTX line 13"));
	assert_null(strchr(strchr(log, '\n') + 1, '\n')); /* one line */
	free(log);
	CHECK(cuMemcpyDtoH(out, d, sizeof(out)));
	for (unsigned int i = 0; i < 32; i++) /* stopped before the global store */
		assert_int_equal(out[i], 0xdead);
	CHECK(cuMemFree(d));
	CHECK(cuModuleUnload(m));
}

/* Module variables initialised with other variables' addresses (generic(var), var+N): the
 * interpreter fills them with the host addresses of their storage. */
static void test_address_initialisers(void **state)
{
	static const char ptx[] =
		".version 9.0\n.target sm_90\n.address_size 64\n"
		".global .align 4 .u32 vals[3] = {5, 7, 11};\n"
		".global .align 8 .u64 tab[2] = {generic(vals), generic(vals)+8};\n"
		".visible .entry rd(.param .u64 rd_param_0)\n{\n"
		"\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<5>;\n"
		"\tld.param.u64 %rd1, [rd_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n"
		"\tld.global.u64 %rd3, [tab+8];\n\tld.u32 %r1, [%rd3];\n"
		"\tld.global.u64 %rd4, [tab];\n\tld.u32 %r2, [%rd4+4];\n"
		"\tst.global.u32 [%rd2], %r1;\n\tst.global.u32 [%rd2+4], %r2;\n\tret;\n}\n";
	CUmodule m;
	CUfunction f;
	CUdeviceptr d;
	void *args[] = { &d };
	unsigned int out[2] = { 0, 0 };

	(void)state;
	CHECK(cuModuleLoadData(&m, ptx));
	CHECK(cuModuleGetFunction(&f, m, "rd"));
	CHECK(cuMemAlloc(&d, sizeof(out)));
	CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(out, d, sizeof(out)));
	assert_int_equal(out[0], 11);
	assert_int_equal(out[1], 7);
	CHECK(cuMemFree(d));
	CHECK(cuModuleUnload(m));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_against_twins),
		cmocka_unit_test(test_unsupported_fails_launch),
		cmocka_unit_test(test_out_of_bounds_stops),
		cmocka_unit_test(test_address_initialisers),
		cmocka_unit_test(test_notwin_powers),
		cmocka_unit_test(test_notwin_long_name),
		cmocka_unit_test(test_notwin_histogram),
		cmocka_unit_test(test_notwin_sum4),
		cmocka_unit_test(test_notwin_votes),
		cmocka_unit_test(test_notwin_bits),
		cmocka_unit_test(test_notwin_fmodes),
		cmocka_unit_test(test_notwin_misc),
		cmocka_unit_test(test_notwin_globals),
		cmocka_unit_test(test_notwin_printf),
		cmocka_unit_test(test_cub),
	};

	tl_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
