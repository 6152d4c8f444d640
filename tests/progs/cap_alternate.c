/* cap_alternate.c - a training loop whose iterations alternate between two shapes (a train step
 * and an evaluation step, each ending with the loss copied to the host), so
 * tests/e2e/capture_alternate.sh can check that cufold keeps one window shape per iteration
 * shape. It knows nothing of cufold; it prints what it computed.
 * usage: cap_alternate [iterations]   tests layer. */
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

#define N 1024

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 10, n = N;
	CUmodule m;
	CUfunction f_fill, f_scale, f_add, f_relu;
	CUstream s;
	CUdeviceptr w, g, out;
	float host[4], half = 0.5f;
	uint64_t h = TL_HASH_INIT;
	unsigned int blocks = N / 256;

	tl_init();
	m = tl_load_module("elementwise");
	f_fill = tl_func(m, "fill");
	f_scale = tl_func(m, "scale");
	f_add = tl_func(m, "add");
	f_relu = tl_func(m, "relu");
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&w, N * sizeof(float)));
	CHECK(cuMemAlloc(&g, N * sizeof(float)));
	CHECK(cuMemAlloc(&out, N * sizeof(float)));
	CHECK(cuMemsetD32(w, 0, N));
	for (int it = 0; it < iters; it++) {
		float v = (float)(it % 3) - 1.0f;
		void *fill_g[] = { &g, &v, &n };
		void *scale_g[] = { &g, &g, &half, &n };
		void *add_w[] = { &w, &w, &g, &n };
		void *relu_o[] = { &out, &w, &n };

		if (it % 2 == 0) { /* train step: 4 ops */
			CHECK(cuLaunchKernel(f_fill, blocks, 1, 1, 256, 1, 1, 0, s, fill_g, NULL));
			CHECK(cuLaunchKernel(f_scale, blocks, 1, 1, 256, 1, 1, 0, s, scale_g, NULL));
			CHECK(cuLaunchKernel(f_add, blocks, 1, 1, 256, 1, 1, 0, s, add_w, NULL));
			CHECK(cuMemcpyDtoHAsync(host, w, sizeof(host), s));
		} else { /* evaluation step: 3 ops */
			CHECK(cuMemsetD32Async(out, 0, N, s));
			CHECK(cuLaunchKernel(f_relu, blocks, 1, 1, 256, 1, 1, 0, s, relu_o, NULL));
			CHECK(cuMemcpyDtoHAsync(host, out, sizeof(host), s));
		}
		CHECK(cuStreamSynchronize(s));
		h = tl_hash(host, sizeof(host), h);
	}
	printf("cap_alternate iterations=%d checksum=%016llx\n", iters, (unsigned long long)h);
	return 0;
}
