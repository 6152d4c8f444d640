/* rw_parallel.c - the parallel rule's program: each step runs 4 independent chains of small
 * kernels, memsets and copies on ONE stream, issued stage by stage (so stream order interleaves
 * the chains), then two ops that join chains; each chain's state feeds the next step, and a hash
 * of everything is printed. Knows nothing of cufold; with and without it the output must be
 * identical. tests layer.
 *
 * usage: rw_parallel MODE [steps]
 *
 * Per step, chain c (N floats each; every buffer its own allocation):
 *   memset w_c = 0;  x_c = s_c * acc_c (scale);  y_c = x_c (copy);  w_c += a_c * y_c (axpy);
 *   t_c = w_c + in_c (add);  acc_c = tanh(t_c) (tanh_kernel)
 * then mix = acc_0 + acc_3 (add) and acc_1 += 0.25 * mix (axpy): a node with two chains before
 * it, and a chain that waits for another. Only the stream orders any of it: an edge the graph
 * lacks lets the software device's random schedule run a reader before its writer on some seed.
 *
 * Modes:
 *   steady  the same buffers every step (the guards hold on every launch)
 *   moving  the first half as steady; then, taking turns: the copies write other buffers (the
 *           guards hold with new pointers), and chain 1's copy writes chain 2's x (the copy and
 *           chain 2's scale, left unordered by the plan, now write the same bytes: the
 *           independent guard fails, and stream order decides what chain 2's copy reads) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "app_time.h" /* APP_US=N: N us of host time before every enqueue */

#define N 1024  /* floats per buffer */
#define CHAINS 4
#define SPARE 256 /* bytes allocated after each buffer, so no two buffers abut */

static CUfunction f_scale, f_axpy, f_add, f_tanh;

static unsigned grid(int n)
{
	return (unsigned)((n + 255) / 256);
}

static void k_scale(CUdeviceptr out, CUdeviceptr in, float s, int n, CUstream st)
{
	void *a[] = { &out, &in, &s, &n };

	CHECK(cuLaunchKernel(f_scale, grid(n), 1, 1, 256, 1, 1, 0, st, a, NULL));
}

static void k_axpy(CUdeviceptr y, CUdeviceptr x, float alpha, int n, CUstream st)
{
	void *a[] = { &y, &x, &alpha, &n };

	CHECK(cuLaunchKernel(f_axpy, grid(n), 1, 1, 256, 1, 1, 0, st, a, NULL));
}

static void k_add(CUdeviceptr out, CUdeviceptr x, CUdeviceptr y, int n, CUstream st)
{
	void *a[] = { &out, &x, &y, &n };

	CHECK(cuLaunchKernel(f_add, grid(n), 1, 1, 256, 1, 1, 0, st, a, NULL));
}

static void k_tanh(CUdeviceptr out, CUdeviceptr in, int n, CUstream st)
{
	void *a[] = { &out, &in, &n };

	CHECK(cuLaunchKernel(f_tanh, grid(n), 1, 1, 256, 1, 1, 0, st, a, NULL));
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
	const char *mode = argc > 1 ? argv[1] : "steady";
	int steps = argc > 2 ? atoi(argv[2]) : 12;
	int moving = !strcmp(mode, "moving");
	size_t bytes = N * sizeof(float);
	CUdeviceptr acc[CHAINS], x[CHAINS], y[CHAINS], y2[CHAINS], w[CHAINS], t[CHAINS], in[CHAINS], mix;
	static const float s[CHAINS] = { 0.75f, -1.25f, 1.5f, 0.5f }, al[CHAINS] = { 1.5f, 0.5f, -0.75f, 2.0f };
	float *h = malloc(bytes);
	uint64_t hash = TL_HASH_INIT;
	CUmodule elem;
	CUstream st;

	if (!h || (!moving && strcmp(mode, "steady"))) {
		fprintf(stderr, "usage: rw_parallel steady|moving [steps]\n");
		return 2;
	}
	tl_init();
	elem = tl_load_module("elementwise");
	f_scale = tl_func(elem, "scale");
	f_axpy = tl_func(elem, "axpy");
	f_add = tl_func(elem, "add");
	f_tanh = tl_func(elem, "tanh_kernel");
	CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	for (int c = 0; c < CHAINS; c++) {
		acc[c] = alloc(bytes);
		x[c] = alloc(bytes);
		y[c] = alloc(bytes);
		y2[c] = alloc(bytes);
		w[c] = alloc(bytes);
		t[c] = alloc(bytes);
		in[c] = alloc(bytes);
		tl_fill_random(h, N, 11 + (uint32_t)c);
		CHECK(cuMemcpyHtoD(acc[c], h, bytes));
		tl_fill_random(h, N, 101 + (uint32_t)c);
		CHECK(cuMemcpyHtoD(in[c], h, bytes));
	}
	mix = alloc(bytes);

	for (int step = 0; step < steps; step++) {
		int phase = moving && step >= steps / 2 ? 1 + (step - steps / 2) % 2 : 0;
		CUdeviceptr yd[CHAINS];

		for (int c = 0; c < CHAINS; c++)
			yd[c] = phase == 1 ? y2[c] : y[c];
		if (phase == 2)
			yd[1] = x[2]; /* chain 1's copy lands on chain 2's scale output */
		/* stage by stage: the stream order interleaves the chains */
		for (int c = 0; c < CHAINS; c++)
			CHECK(cuMemsetD32Async(w[c], 0, N, st));
		for (int c = 0; c < CHAINS; c++)
			k_scale(x[c], acc[c], s[c], N, st);
		for (int c = 0; c < CHAINS; c++)
			CHECK(cuMemcpyDtoDAsync(yd[c], x[c], bytes, st));
		for (int c = 0; c < CHAINS; c++)
			k_axpy(w[c], yd[c], al[c], N, st);
		for (int c = 0; c < CHAINS; c++)
			k_add(t[c], w[c], in[c], N, st);
		for (int c = 0; c < CHAINS; c++)
			k_tanh(acc[c], t[c], N, st);
		k_add(mix, acc[0], acc[3], N, st);
		k_axpy(acc[1], mix, 0.25f, N, st);
		CHECK(cuStreamSynchronize(st));
	}
	for (int c = 0; c < CHAINS; c++) {
		hash = tl_hash_device(acc[c], bytes, hash);
		hash = tl_hash_device(x[c], bytes, hash);
		hash = tl_hash_device(y[c], bytes, hash);
		hash = tl_hash_device(y2[c], bytes, hash);
		hash = tl_hash_device(w[c], bytes, hash);
		hash = tl_hash_device(t[c], bytes, hash);
	}
	hash = tl_hash_device(mix, bytes, hash);
	printf("rw_parallel %s %d: %016llx\n", mode, steps, (unsigned long long)hash);
	free(h);
	return 0;
}
