/* sim_race.c - two streams share a buffer: stream A fills it, stream B scales it into out.
 * With `wait` B waits for A through an event and out is always 2.0; without it nothing orders
 * the two, and the software device's random schedule must sometimes run B first.
 * Prints "out=<value>".   usage: sim_race wait|nowait   tests layer. */
#include <stdio.h>
#include <string.h>

#include "testlib.h"

int main(int argc, char **argv)
{
	int wait = argc > 1 && !strcmp(argv[1], "wait");
	int n = 1024;
	float one = 1.0f, two = 2.0f, out_host[1024];
	CUmodule mod;
	CUfunction fill, scale;
	CUstream a, b;
	CUevent done;
	CUdeviceptr x, out;

	tl_init();
	mod = tl_load_module("elementwise");
	fill = tl_func(mod, "fill");
	scale = tl_func(mod, "scale");
	CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
	CHECK(cuMemAlloc(&x, n * sizeof(float)));
	CHECK(cuMemAlloc(&out, n * sizeof(float)));
	CHECK(cuMemsetD32(x, 0, (size_t)n));
	CHECK(cuMemsetD32(out, 0, (size_t)n));
	{
		void *args[] = {&x, &one, &n};

		CHECK(cuLaunchKernel(fill, 4, 1, 1, 256, 1, 1, 0, a, args, NULL));
	}
	CHECK(cuEventRecord(done, a));
	if (wait)
		CHECK(cuStreamWaitEvent(b, done, 0));
	{
		void *args[] = {&out, &x, &two, &n};

		CHECK(cuLaunchKernel(scale, 4, 1, 1, 256, 1, 1, 0, b, args, NULL));
	}
	CHECK(cuCtxSynchronize());
	CHECK(cuMemcpyDtoH(out_host, out, sizeof(out_host)));
	(void)one;
	printf("out=%.1f\n", (double)out_host[n - 1]);
	return 0;
}
