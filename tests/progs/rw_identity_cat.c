/* rw_identity_cat.c - the identity-cat rule's program: each step scales a buffer, then the `cat`
 * kernel concatenates 8 views of it that lie end to end, in order (what torch.cat over the
 * pieces of one split leaves), into an output; accumulates the output and waits; prints a
 * checksum. Knows nothing of cufold; with and without it the output must be identical.
 * Three rounds per step. usage: rw_identity_cat MODE [steps]   tests layer.
 *
 * Modes:
 *   steady    the same buffers every step: the views abut in every launch (cat becomes a copy)
 *   moving    the first half as steady; then, taking turns: another source and output (the
 *             guard holds with new pointers), the views in reverse order (not the identity: the
 *             guard fails), and an output that overlaps the source (the guard fails)
 *   nearmiss  every step the views leave a gap of one float between them: never a copy */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "app_time.h" /* APP_US=N: N us of host time before every enqueue */

#define N 4096    /* floats per buffer */
#define VIEWS 8   /* inputs of one cat (the kernel takes at most 8) */
#define ROUNDS 3  /* scale, cat, add per step */

/* Must match tests/kernels/copy.cu. */
struct cat_args {
	CUdeviceptr src[VIEWS];   /* input pointers, in output order */
	int len[VIEWS];           /* floats taken from each input */
	int count;                /* inputs used */
};

static CUfunction f_scale, f_add, f_cat;

static void k_scale(CUdeviceptr out, CUdeviceptr in, float s, int n, CUstream st)
{
	void *a[] = { &out, &in, &s, &n };

	CHECK(cuLaunchKernel(f_scale, (unsigned)((n + 255) / 256), 1, 1, 256, 1, 1, 0, st, a, NULL));
}

static void k_add(CUdeviceptr out, CUdeviceptr x, CUdeviceptr y, int n, CUstream st)
{
	void *a[] = { &out, &x, &y, &n };

	CHECK(cuLaunchKernel(f_add, (unsigned)((n + 255) / 256), 1, 1, 256, 1, 1, 0, st, a, NULL));
}

/* out = cat of VIEWS views of src, each `len` floats, `stride` floats apart, in order or
 * reversed. */
static void k_cat(CUdeviceptr out, CUdeviceptr src, int len, int stride, int reversed, CUstream st)
{
	struct cat_args a;
	void *args[] = { &a, &out };
	int total = VIEWS * len;

	memset(&a, 0, sizeof(a));
	a.count = VIEWS;
	for (int k = 0; k < VIEWS; k++) {
		int j = reversed ? VIEWS - 1 - k : k;

		a.src[k] = src + (size_t)j * stride * sizeof(float);
		a.len[k] = len;
	}
	CHECK(cuLaunchKernel(f_cat, (unsigned)((total + 255) / 256), 1, 1, 256, 1, 1, 0, st, args, NULL));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "steady";
	int steps = argc > 2 ? atoi(argv[2]) : 12;
	int moving = !strcmp(mode, "moving"), nearmiss = !strcmp(mode, "nearmiss");
	size_t bytes = N * sizeof(float);
	int len = N / VIEWS - (nearmiss ? 1 : 0);
	CUdeviceptr src, out, src2, out2, acc, big;
	float *h = malloc(2 * bytes);
	uint64_t hash = TL_HASH_INIT;
	CUmodule elem, copy;
	CUstream st;

	if (!h || (!moving && !nearmiss && strcmp(mode, "steady"))) {
		fprintf(stderr, "usage: rw_identity_cat steady|moving|nearmiss [steps]\n");
		return 2;
	}
	tl_init();
	elem = tl_load_module("elementwise");
	copy = tl_load_module("copy");
	f_scale = tl_func(elem, "scale");
	f_add = tl_func(elem, "add");
	f_cat = tl_func(copy, "cat");
	CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&src, bytes));
	CHECK(cuMemAlloc(&out, bytes));
	CHECK(cuMemAlloc(&src2, bytes));
	CHECK(cuMemAlloc(&out2, bytes));
	CHECK(cuMemAlloc(&acc, bytes));
	CHECK(cuMemAlloc(&big, 2 * bytes));
	tl_fill_random(h, N, 7);
	CHECK(cuMemcpyHtoD(src, h, bytes));
	tl_fill_random(h, N, 11);
	CHECK(cuMemcpyHtoD(src2, h, bytes));
	tl_fill_random(h, 2 * N, 13);
	CHECK(cuMemcpyHtoD(big, h, 2 * bytes));
	CHECK(cuMemsetD8(acc, 0, bytes));
	CHECK(cuMemsetD8(out, 0, bytes));
	CHECK(cuMemsetD8(out2, 0, bytes));

	for (int step = 0; step < steps; step++) {
		int phase = moving && step >= steps / 2 ? 1 + (step - steps / 2) % 3 : 0;
		CUdeviceptr s = phase == 1 ? src2 : phase == 3 ? big : src;
		CUdeviceptr d = phase == 1 ? out2 : phase == 3 ? big + bytes / 2 : out;

		/* three rounds: a window of 9 ops, enough to be replayed (CUFOLD_MIN_OPS) */
		for (int r = 0; r < ROUNDS; r++) {
			k_scale(s, s, 1.25f, N, st);
			/* phase 3: the output starts halfway into the source (they overlap) */
			k_cat(d, s, len, N / VIEWS, phase == 2, st);
			k_add(acc, acc, d, N, st);
		}
		CHECK(cuStreamSynchronize(st));
	}
	hash = tl_hash_device(acc, bytes, hash);
	hash = tl_hash_device(out, bytes, hash);
	hash = tl_hash_device(out2, bytes, hash);
	hash = tl_hash_device(big, 2 * bytes, hash);
	printf("rw_identity_cat %s %d: %016llx\n", mode, steps, (unsigned long long)hash);
	free(h);
	return 0;
}
