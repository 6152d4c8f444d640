/* rw_slice_glue.c - the slice-glue rule's program: each step scales a buffer, copies it in 8
 * abutting slices into 8 separate allocations, copies those back in order into another buffer
 * (8 glue copies the rule replaces by 1), accumulates, and waits; prints a checksum. Knows
 * nothing of cufold; with and without it the output must be identical.
 * usage: rw_slice_glue MODE [steps]   tests layer.
 *
 * Modes:
 *   steady  the same buffers every step (the guards hold on every launch)
 *   moving  the first half as steady; then, taking turns: another set of pieces and another
 *           destination (the guards hold with new pointers), and a glue destination one slice
 *           further inside the sliced buffer itself (it overlaps the source: the misses guard
 *           fails, and one copy would read bytes the glue copies already wrote) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "app_time.h" /* APP_US=N: N us of host time before every enqueue */

#define N 4096    /* floats per buffer */
#define SLICES 8  /* slices (and glue copies) per step */

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

/* SLICES pieces, each its own allocation with a spare one between (so no two pieces abut and
 * the coalesce rule has nothing to fold). */
static void alloc_pieces(CUdeviceptr *piece, CUdeviceptr *spare, size_t chunk)
{
	for (int k = 0; k < SLICES; k++) {
		CHECK(cuMemAlloc(&piece[k], chunk));
		CHECK(cuMemAlloc(&spare[k], 256));
	}
}

/* Slice src into the pieces, then glue them back in order into dst. */
static void slice_glue(CUdeviceptr dst, CUdeviceptr src, const CUdeviceptr *piece, size_t chunk, CUstream st)
{
	for (int k = 0; k < SLICES; k++)
		CHECK(cuMemcpyDtoDAsync(piece[k], src + k * chunk, chunk, st));
	for (int k = 0; k < SLICES; k++)
		CHECK(cuMemcpyDtoDAsync(dst + k * chunk, piece[k], chunk, st));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "steady";
	int steps = argc > 2 ? atoi(argv[2]) : 12;
	int moving = !strcmp(mode, "moving");
	size_t bytes = N * sizeof(float), chunk = bytes / SLICES;
	CUdeviceptr src, dst, dst2, acc, big, p1[SLICES], p2[SLICES], s1[SLICES], s2[SLICES];
	float *h = malloc(bytes + chunk);
	uint64_t hash = TL_HASH_INIT;
	CUmodule elem;
	CUstream st;

	if (!h || (!moving && strcmp(mode, "steady"))) {
		fprintf(stderr, "usage: rw_slice_glue steady|moving [steps]\n");
		return 2;
	}
	tl_init();
	elem = tl_load_module("elementwise");
	f_scale = tl_func(elem, "scale");
	f_add = tl_func(elem, "add");
	CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&src, bytes));
	CHECK(cuMemAlloc(&dst, bytes));
	CHECK(cuMemAlloc(&dst2, bytes));
	CHECK(cuMemAlloc(&acc, bytes));
	CHECK(cuMemAlloc(&big, bytes + chunk)); /* one chunk more: room for the shifted glue */
	alloc_pieces(p1, s1, chunk);
	alloc_pieces(p2, s2, chunk);
	tl_fill_random(h, N, 7);
	CHECK(cuMemcpyHtoD(src, h, bytes));
	tl_fill_random(h, N + N / SLICES, 13);
	CHECK(cuMemcpyHtoD(big, h, bytes + chunk));
	CHECK(cuMemsetD8(acc, 0, bytes));
	CHECK(cuMemsetD8(dst, 0, bytes));
	CHECK(cuMemsetD8(dst2, 0, bytes));

	for (int step = 0; step < steps; step++) {
		int phase = moving && step >= steps / 2 ? 1 + (step - steps / 2) % 2 : 0;

		if (phase == 2) {
			/* big[k+1] = big[k] for every slice at once (through the pieces): the same
			 * shape, but the glue destination overlaps the sliced source */
			k_scale(big, big, 1.0f, N, st);
			slice_glue(big + chunk, big, p1, chunk, st);
			k_add(acc, acc, big, N, st);
		} else {
			CUdeviceptr d = phase == 1 ? dst2 : dst;

			k_scale(src, src, 1.25f, N, st);
			slice_glue(d, src, phase == 1 ? p2 : p1, chunk, st);
			k_add(acc, acc, d, N, st);
		}
		CHECK(cuStreamSynchronize(st));
	}
	hash = tl_hash_device(acc, bytes, hash);
	hash = tl_hash_device(dst, bytes, hash);
	hash = tl_hash_device(dst2, bytes, hash);
	hash = tl_hash_device(big, bytes + chunk, hash);
	for (int k = 0; k < SLICES; k++) { /* the pieces are still there after the window */
		hash = tl_hash_device(p1[k], chunk, hash);
		hash = tl_hash_device(p2[k], chunk, hash);
	}
	printf("rw_slice_glue %s %d: %016llx\n", mode, steps, (unsigned long long)hash);
	free(h);
	return 0;
}
