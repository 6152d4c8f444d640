/* rw_rename.c - a tower's shape for writing elsewhere (output renaming): per feature a launch
 * writes a temporary that a pool hands out again to the next feature, and a reader between.
 * Every other buffer its own allocation; a hash of everything, the temporary last, is printed.
 * Knows nothing of cufold; with and without it the output must be identical. tests layer.
 *
 * usage: rw_rename tower|copy|chain [steps]
 *
 * Per step, on stream s, for each feature f (N floats per buffer):
 *   t = s_f * x_f (scale, t the one temporary);  y_f = y_f + t (add)
 * tower: only reused memory orders the scales (each writes t, which the add before it read):
 * with t written elsewhere they run as one launch, the adds as another; the last scale's output
 * must be in t when the step ends (a copy back), the others' are overwritten by the next scale.
 * copy: a device copy t -> z_f after each scale, a reader whose source is patched too. chain: s_f reads y_{f-1}, which the
 * add before it wrote: a true dependence, nothing is renamed or fused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define N 2048    /* floats per buffer */
#define F 4       /* features */
#define SPARE 256 /* bytes allocated after each buffer, so no two buffers abut */

static CUfunction f_scale, f_add;

static void launch(CUfunction f, CUstream st, void **a)
{
	CHECK(cuLaunchKernel(f, (N + 255) / 256, 1, 1, 256, 1, 1, 0, st, a, NULL));
}

static CUdeviceptr alloc(size_t bytes)
{
	CUdeviceptr p;

	CHECK(cuMemAlloc(&p, bytes + SPARE));
	CHECK(cuMemsetD8(p, 0, bytes + SPARE));
	return p;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "tower";
	int steps = argc > 2 ? atoi(argv[2]) : 8, n = N, copy = !strcmp(mode, "copy"), chain = !strcmp(mode, "chain");
	size_t bytes = N * sizeof(float);
	CUdeviceptr x[F], y[F], z[F], t;
	float *h = malloc(bytes);
	uint64_t hash = TL_HASH_INIT;
	CUmodule elem;
	CUstream s;

	if (!h || (!copy && !chain && strcmp(mode, "tower"))) {
		fprintf(stderr, "usage: rw_rename tower|copy|chain [steps]\n");
		return 2;
	}
	tl_init();
	elem = tl_load_module("elementwise");
	f_scale = tl_func(elem, "scale");
	f_add = tl_func(elem, "add");
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (int f = 0; f < F; f++) {
		x[f] = alloc(bytes);
		y[f] = alloc(bytes);
		z[f] = alloc(bytes);
		tl_fill_random(h, N, 7 + (uint32_t)f);
		CHECK(cuMemcpyHtoD(x[f], h, bytes));
	}
	t = alloc(bytes);
	for (int step = 0; step < steps; step++) {
		for (int f = 0; f < F; f++) {
			float sc = 0.25f + 0.125f * (float)f;
			CUdeviceptr in = chain && f > 0 ? y[f - 1] : x[f];
			void *as[] = { &t, &in, &sc, &n };
			void *aa[] = { &y[f], &y[f], &t, &n };

			launch(f_scale, s, as);
			if (copy)
				CHECK(cuMemcpyDtoDAsync(z[f], t, bytes, s));
			launch(f_add, s, aa);
		}
		CHECK(cuStreamSynchronize(s));
	}
	for (int f = 0; f < F; f++) {
		hash = tl_hash_device(y[f], bytes, hash);
		hash = tl_hash_device(z[f], bytes, hash);
	}
	hash = tl_hash_device(t, bytes, hash);
	printf("rw_rename %s %d: %016llx\n", mode, steps, (unsigned long long)hash);
	free(h);
	return 0;
}
