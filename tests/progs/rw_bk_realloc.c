/* rw_bk_realloc.c - batch-kernel past a gather whose span is "unknown" (its allocation), when
 * that allocation is freed and allocated again at the same address with another size. Every
 * buffer its own allocation; a hash of every step's gather output is printed. Knows nothing of
 * cufold; with and without it the output must be identical. tests layer.
 *
 * usage: rw_bk_realloc [steps]
 *
 * Per step, on stream s: memset w to 0; y = s0 * x0 (scale); g = embedding_bag_sum(table, idx,
 * offs); w = s1 * x1 (scale); x1 = x1 + y (add). The two scales are independent of each other
 * and, while w lies outside the table's allocation, of the gather too: batch-kernel runs them as
 * one launch before the gather. Each step allocates idx, the table and w afresh, and frees them
 * at its end; the software device's first fit gives the same addresses every step. Even steps:
 * the table and w are two allocations, w right after the table, and the gather reads rows of the
 * table only. Odd steps: one allocation holds both (w = table + its bytes: the very same pointer
 * words as the other steps) and the gather reads rows where w lies too, so the scale writing w must
 * stay after it: a plan remembered from another step, with the table's old extent, is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define N 1024     /* floats of x0, y, x1 and w */
#define DIM 16     /* floats per table row */
#define ROWS 64    /* rows of the table proper (ROWS * DIM * 4 bytes: a multiple of 256) */
#define NBAGS 8
#define PER_BAG 4  /* indices per bag */
#define SPARE 256  /* bytes allocated after each long-lived buffer, so no two abut */

static CUfunction f_scale, f_add, f_bag;

static void launch(CUfunction f, CUstream st, unsigned threads, void **a)
{
	CHECK(cuLaunchKernel(f, (threads + 127) / 128, 1, 1, 128, 1, 1, 0, st, a, NULL));
}

static CUdeviceptr alloc(size_t bytes)
{
	CUdeviceptr p;

	CHECK(cuMemAlloc(&p, bytes));
	return p;
}

/* The step's gather: y, the table, w (allocated here), then the launches; the output hashed. */
static uint64_t step_run(int step, CUstream s, CUdeviceptr x0, CUdeviceptr y, CUdeviceptr x1, CUdeviceptr g,
			 CUdeviceptr offs, const float *table, uint64_t hash)
{
	size_t tbytes = ROWS * DIM * sizeof(float), wbytes = N * sizeof(float);
	int idx[NBAGS * PER_BAG], n = N, nbags = NBAGS, dim = DIM, odd = step >= 8 && step % 4 == 3;
	CUdeviceptr di = alloc(sizeof(idx)), t, w;
	float s0 = 0.5f, s1 = 1.5f;

	for (int i = 0; i < NBAGS * PER_BAG; i++) /* odd steps read rows of w too */
		idx[i] = odd ? (i * 7) % (ROWS + (int)(wbytes / (DIM * sizeof(float)))) : (i * 5) % ROWS;
	if (odd) {
		t = alloc(tbytes + wbytes);
		w = t + tbytes;
	} else {
		t = alloc(tbytes);
		w = alloc(wbytes);
		if (w != t + tbytes)
			fprintf(stderr, "rw_bk_realloc: w is not right after the table (the test is weaker)\n");
	}
	CHECK(cuMemcpyHtoD(di, idx, sizeof(idx)));
	CHECK(cuMemcpyHtoD(t, table, tbytes));
	CHECK(cuCtxSynchronize());
	{
		void *as0[] = { &y, &x0, &s0, &n };
		void *ab[] = { &t, &di, &offs, &nbags, &dim, &g };
		void *as1[] = { &w, &x1, &s1, &n };
		void *aa[] = { &x1, &x1, &y, &n };

		CHECK(cuMemsetD32Async(w, 0, N, s));
		launch(f_scale, s, N, as0);
		launch(f_bag, s, NBAGS * DIM, ab);
		launch(f_scale, s, N, as1);
		launch(f_add, s, N, aa);
		CHECK(cuStreamSynchronize(s));
	}
	hash = tl_hash_device(g, NBAGS * DIM * sizeof(float), hash);
	CHECK(cuMemFree(di));
	CHECK(cuMemFree(t));
	if (!odd)
		CHECK(cuMemFree(w));
	return hash;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 12, offs_h[NBAGS + 1];
	size_t bytes = N * sizeof(float);
	float *h = malloc(bytes), *table = malloc(ROWS * DIM * sizeof(float));
	uint64_t hash = TL_HASH_INIT;
	CUdeviceptr x0, y, x1, g, offs;
	CUmodule elem, nn;
	CUstream s;

	if (!h || !table)
		return 2;
	tl_init();
	elem = tl_load_module("elementwise");
	nn = tl_load_module("nn");
	f_scale = tl_func(elem, "scale");
	f_add = tl_func(elem, "add");
	f_bag = tl_func(nn, "embedding_bag_sum");
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	x0 = alloc(bytes + SPARE);
	y = alloc(bytes + SPARE);
	x1 = alloc(bytes + SPARE);
	g = alloc(NBAGS * DIM * sizeof(float) + SPARE);
	offs = alloc(sizeof(offs_h) + SPARE);
	for (int b = 0; b <= NBAGS; b++)
		offs_h[b] = b * PER_BAG;
	CHECK(cuMemcpyHtoD(offs, offs_h, sizeof(offs_h)));
	tl_fill_random(h, N, 7);
	CHECK(cuMemcpyHtoD(x0, h, bytes));
	tl_fill_random(h, N, 8);
	CHECK(cuMemcpyHtoD(x1, h, bytes));
	tl_fill_random(table, ROWS * DIM, 9);
	for (int step = 0; step < steps; step++)
		hash = step_run(step, s, x0, y, x1, g, offs, table, hash);
	printf("rw_bk_realloc %d: %016llx\n", steps, (unsigned long long)hash);
	free(h);
	free(table);
	return 0;
}
