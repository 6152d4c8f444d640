/* rw_coalesce.c - the coalesce rule's program: each step scales a buffer, copies it to another
 * in 8 abutting slices on one stream (8 copies the rule folds into 1), accumulates, and waits;
 * prints a checksum. Knows nothing of cufold; with and without it the output must be identical.
 * usage: rw_coalesce MODE [steps]   tests layer.
 *
 * Modes:
 *   steady  the same buffers every step (the guards hold on every launch)
 *   moving  the first half as steady; then, taking turns: a shift inside one buffer where each
 *           slice reads what the previous one wrote (abutting, in bounds, but sources overlap
 *           destinations: the disjoint guard fails, and one copy would give other bytes),
 *           another pair of buffers (the guards hold with new pointers), and the slices in
 *           reverse order (the abutment guards fail) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "app_time.h" /* APP_US=N: N us of host time before every enqueue */

#define N 4096    /* floats per buffer */
#define SLICES 8  /* copies per step */

static CUfunction f_scale, f_add;

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

/* The 8 slice copies src -> dst (order: 0 forward, 1 reversed). */
static void slices(CUdeviceptr dst, CUdeviceptr src, int reversed, CUstream st)
{
	size_t chunk = N / SLICES * sizeof(float);

	for (int k = 0; k < SLICES; k++) {
		int j = reversed ? SLICES - 1 - k : k;

		CHECK(cuMemcpyDtoDAsync(dst + j * chunk, src + j * chunk, chunk, st));
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "steady";
	int steps = argc > 2 ? atoi(argv[2]) : 12;
	int moving = !strcmp(mode, "moving");
	size_t bytes = N * sizeof(float);
	CUdeviceptr src, dst, src2, dst2, acc, big;
	float *h = malloc(bytes + bytes / SLICES);
	uint64_t hash = TL_HASH_INIT;
	CUmodule elem;
	CUstream st;

	if (!h || (!moving && strcmp(mode, "steady"))) {
		fprintf(stderr, "usage: rw_coalesce steady|moving [steps]\n");
		return 2;
	}
	tl_init();
	elem = tl_load_module("elementwise");
	f_scale = tl_func(elem, "scale");
	f_add = tl_func(elem, "add");
	CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&src, bytes));
	CHECK(cuMemAlloc(&dst, bytes));
	CHECK(cuMemAlloc(&src2, bytes));
	CHECK(cuMemAlloc(&dst2, bytes));
	CHECK(cuMemAlloc(&acc, bytes));
	CHECK(cuMemAlloc(&big, bytes + bytes / SLICES)); /* one chunk more: room for the shift */
	tl_fill_random(h, N, 7);
	CHECK(cuMemcpyHtoD(src, h, bytes));
	tl_fill_random(h, N, 11);
	CHECK(cuMemcpyHtoD(src2, h, bytes));
	tl_fill_random(h, N + N / SLICES, 13);
	CHECK(cuMemcpyHtoD(big, h, bytes + bytes / SLICES));
	CHECK(cuMemsetD8(acc, 0, bytes));
	CHECK(cuMemsetD8(dst, 0, bytes));
	CHECK(cuMemsetD8(dst2, 0, bytes));

	for (int step = 0; step < steps; step++) {
		int phase = moving && step >= steps / 2 ? 1 + (step - steps / 2) % 3 : 0;
		CUdeviceptr s = phase == 2 ? src2 : src, d = phase == 2 ? dst2 : dst;

		if (phase == 1) {
			/* big[k+1] = big[k] slice by slice: the shape of the other steps, the bytes
			 * of a cascade (each slice reads the one written just before) */
			k_scale(big, big, 1.0f, N, st);
			slices(big + bytes / SLICES, big, 0, st);
			k_add(acc, acc, big, N, st);
		} else {
			k_scale(s, s, 1.25f, N, st);
			slices(d, s, phase == 3, st);
			k_add(acc, acc, d, N, st);
		}
		CHECK(cuStreamSynchronize(st));
	}
	hash = tl_hash_device(acc, bytes, hash);
	hash = tl_hash_device(dst, bytes, hash);
	hash = tl_hash_device(dst2, bytes, hash);
	hash = tl_hash_device(big, bytes + bytes / SLICES, hash);
	printf("rw_coalesce %s %d: %016llx\n", mode, steps, (unsigned long long)hash);
	free(h);
	return 0;
}
