/* cap_streams.c - two non-blocking streams joined by events, a blocking stream and the legacy
 * default stream, in one iteration repeated three times; each iteration ends with a copy to the
 * host. tests/e2e/capture_streams.sh checks cufold's graph of the iteration (DOT) has exactly
 * the edges CUDA's ordering rules give. It knows nothing of cufold; it prints what it computed.
 * tests layer. */
#include <stdio.h>

#include "testlib.h"

#define N 512

int main(void)
{
	CUmodule m;
	CUfunction f_fill, f_scale, f_add, f_axpy;
	CUstream a, b, c;
	CUevent e1, e2, e3;
	CUdeviceptr x, y, z, w;
	float host[N], one = 1.0f, two = 2.0f;
	int n = N;
	uint64_t h = TL_HASH_INIT;
	unsigned int blocks = N / 256;

	tl_init();
	m = tl_load_module("elementwise");
	f_fill = tl_func(m, "fill");
	f_scale = tl_func(m, "scale");
	f_add = tl_func(m, "add");
	f_axpy = tl_func(m, "axpy");
	CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&c, CU_STREAM_DEFAULT));
	CHECK(cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&e2, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&e3, CU_EVENT_DISABLE_TIMING));
	CHECK(cuMemAlloc(&x, N * sizeof(float)));
	CHECK(cuMemAlloc(&y, N * sizeof(float)));
	CHECK(cuMemAlloc(&z, N * sizeof(float)));
	CHECK(cuMemAlloc(&w, N * sizeof(float)));
	for (int it = 0; it < 3; it++) {
		float v = (float)(it + 1);
		void *fill_x[] = { &x, &v, &n };
		void *scale_y[] = { &y, &x, &two, &n };
		void *fill_z[] = { &z, &one, &n };
		void *add_z[] = { &z, &z, &y, &n };
		void *fill_w[] = { &w, &two, &n };
		void *axpy_w[] = { &w, &z, &v, &n };

		CHECK(cuLaunchKernel(f_fill, blocks, 1, 1, 256, 1, 1, 0, a, fill_x, NULL));  /* 0 */
		CHECK(cuEventRecord(e1, a));                                                  /* 1 */
		CHECK(cuStreamWaitEvent(b, e1, 0));                                           /* 2 */
		CHECK(cuLaunchKernel(f_scale, blocks, 1, 1, 256, 1, 1, 0, b, scale_y, NULL)); /* 3 */
		CHECK(cuLaunchKernel(f_fill, blocks, 1, 1, 256, 1, 1, 0, a, fill_z, NULL));   /* 4 */
		CHECK(cuEventRecord(e2, b));                                                  /* 5 */
		CHECK(cuStreamWaitEvent(a, e2, 0));                                           /* 6 */
		CHECK(cuLaunchKernel(f_add, blocks, 1, 1, 256, 1, 1, 0, a, add_z, NULL));     /* 7 */
		CHECK(cuEventRecord(e3, a));                                                  /* 8 */
		CHECK(cuStreamWaitEvent(c, e3, 0));                                           /* 9 */
		CHECK(cuLaunchKernel(f_fill, blocks, 1, 1, 256, 1, 1, 0, c, fill_w, NULL));   /* 10 */
		CHECK(cuLaunchKernel(f_axpy, blocks, 1, 1, 256, 1, 1, 0, 0, axpy_w, NULL));   /* 11: legacy */
		CHECK(cuMemcpyDtoHAsync(host, w, sizeof(host), 0));                           /* 12: legacy */
		CHECK(cuStreamSynchronize(0));
		h = tl_hash(host, sizeof(host), h);
		printf("iteration %d: w[0]=%g w[%d]=%g\n", it, (double)host[0], N - 1, (double)host[N - 1]);
	}
	printf("cap_streams checksum=%016llx\n", (unsigned long long)h);
	return 0;
}
