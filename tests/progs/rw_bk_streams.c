/* rw_bk_streams.c - batch-kernel across streams and events: per feature, a launch on the main
 * stream, an event the side stream waits for, a launch there, an event the main stream waits for
 * (a tower's per-feature work handed between two streams, as frameworks run side streams). Every
 * buffer its own allocation; a hash of everything is printed. Knows nothing of cufold; with and
 * without it the output must be identical. tests layer.
 *
 * usage: rw_bk_streams fuse|chain|alternate [steps]
 *
 * Per step, for each feature f (N floats per buffer), on stream s unless said:
 *   y_f = s_f * in_f (scale);  record e_f;  t waits e_f;  z_f = tanh(y_f) (tanh_kernel, on t);
 *   record d_f on t;  s waits d_f
 * then for each f: x_f = x_f + z_f (add, on s). fuse: in_f = x_f, so the scales of the features
 * are independent of one another though each waits (through d_{f-1}) for the previous feature's
 * tanh on t: batch-kernel runs them as one launch, the tanhs as another, the adds as a third.
 * chain: in_f = z_{f-1} for f > 0: each scale reads what the previous feature's tanh wrote on the
 * other stream, a dependent chain across streams and events: the scales and the tanhs must stay
 * apart (the adds still fuse). alternate: feature f's scale and tanh both run on s for even f, on
 * t for odd f (t waits for s at the start of the step, s for t before the adds): the scales of
 * both streams become one launch, the tanhs another; then a scale of another block shape on t
 * reads z_1 (t's order alone makes it wait for the tanh that became part of a launch standing on
 * s: replay must give it that launch as a dependency). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define N 2048 /* floats per buffer */
#define F 6    /* features */
#define SPARE 256 /* bytes allocated after each buffer, so no two buffers abut */

static CUfunction f_scale, f_tanh, f_add;

static unsigned grid(int n)
{
	return (unsigned)((n + 255) / 256);
}

static void launch(CUfunction f, CUstream st, void **a)
{
	CHECK(cuLaunchKernel(f, grid(N), 1, 1, 256, 1, 1, 0, st, a, NULL));
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
	const char *mode = argc > 1 ? argv[1] : "fuse";
	int steps = argc > 2 ? atoi(argv[2]) : 8, n = N, chain = !strcmp(mode, "chain");
	int alternate = !strcmp(mode, "alternate");
	size_t bytes = N * sizeof(float);
	CUdeviceptr x[F], y[F], z[F], w;
	CUevent e[F], d[F];
	float *h = malloc(bytes);
	uint64_t hash = TL_HASH_INIT;
	CUmodule elem;
	CUstream s, t;

	if (!h || (!chain && !alternate && strcmp(mode, "fuse"))) {
		fprintf(stderr, "usage: rw_bk_streams fuse|chain|alternate [steps]\n");
		return 2;
	}
	tl_init();
	elem = tl_load_module("elementwise");
	f_scale = tl_func(elem, "scale");
	f_tanh = tl_func(elem, "tanh_kernel");
	f_add = tl_func(elem, "add");
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
	for (int f = 0; f < F; f++) {
		x[f] = alloc(bytes);
		y[f] = alloc(bytes);
		z[f] = alloc(bytes);
		tl_fill_random(h, N, 31 + (uint32_t)f);
		CHECK(cuMemcpyHtoD(x[f], h, bytes));
		CHECK(cuEventCreate(&e[f], CU_EVENT_DISABLE_TIMING));
		CHECK(cuEventCreate(&d[f], CU_EVENT_DISABLE_TIMING));
	}
	w = alloc(bytes);
	for (int step = 0; step < steps; step++) {
		if (alternate) {
			CHECK(cuEventRecord(e[0], s));
			CHECK(cuStreamWaitEvent(t, e[0], 0));
		}
		for (int f = 0; f < F && alternate; f++) {
			float sc = 0.5f + 0.125f * (float)f;
			CUstream u = f % 2 ? t : s;
			void *as[] = { &y[f], &x[f], &sc, &n };
			void *at[] = { &z[f], &y[f], &n };

			launch(f_scale, u, as);
			launch(f_tanh, u, at);
		}
		if (alternate) {
			float two = 2.0f;
			void *aw[] = { &w, &z[1], &two, &n };

			CHECK(cuLaunchKernel(f_scale, grid(N) * 2, 1, 1, 128, 1, 1, 0, t, aw, NULL));
			CHECK(cuEventRecord(d[0], t));
			CHECK(cuStreamWaitEvent(s, d[0], 0));
		}
		for (int f = 0; f < F && !alternate; f++) {
			CUdeviceptr in = chain && f > 0 ? z[f - 1] : x[f];
			float sc = 0.5f + 0.125f * (float)f;
			void *as[] = { &y[f], &in, &sc, &n };
			void *at[] = { &z[f], &y[f], &n };

			launch(f_scale, s, as);
			CHECK(cuEventRecord(e[f], s));
			CHECK(cuStreamWaitEvent(t, e[f], 0));
			launch(f_tanh, t, at);
			CHECK(cuEventRecord(d[f], t));
			CHECK(cuStreamWaitEvent(s, d[f], 0));
		}
		for (int f = 0; f < F; f++) {
			void *aa[] = { &x[f], &x[f], &z[f], &n };

			launch(f_add, s, aa);
		}
		CHECK(cuStreamSynchronize(s));
	}
	for (int f = 0; f < F; f++) {
		hash = tl_hash_device(x[f], bytes, hash);
		hash = tl_hash_device(y[f], bytes, hash);
		hash = tl_hash_device(z[f], bytes, hash);
	}
	hash = tl_hash_device(w, bytes, hash);
	printf("rw_bk_streams %s %d: %016llx\n", mode, steps, (unsigned long long)hash);
	free(h);
	return 0;
}
