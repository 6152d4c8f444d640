/* icpt_bench.c - calls one cheap driver entry point N times, for scripts/bench-overhead (which
 * counts instructions with callgrind at two values of N and takes the difference per call).
 * tests layer.
 *
 *   icpt_bench N ctxget|memset|launch [direct|procaddr]
 *     ctxget   cuCtxGetCurrent
 *     memset   cuMemsetD32Async of 4 bytes on a stream
 *     launch   cuLaunchKernel of fill over 1 element on a stream (synchronized every 256)
 *     direct   call the exported name (default); procaddr: through cuGetProcAddress's pointer */
#include <stdlib.h>

#define CU(fn) fn
#include "icpt_work.h"

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	const char *what = argc > 2 ? argv[2] : "ctxget";
	int procaddr = argc > 3 && strcmp(argv[3], "procaddr") == 0;
	__typeof__(&cuCtxGetCurrent) ctxget = cuCtxGetCurrent;
	__typeof__(&cuMemsetD32Async) memset32 = cuMemsetD32Async;
	__typeof__(&cuLaunchKernel) launch = cuLaunchKernel;
	struct icpt_kernels k;
	CUcontext ctx;
	CUstream s;
	CUdeviceptr p;
	float v = 1.0f;
	int one = 1;
	void *args[] = { &p, &v, &one };

	if (procaddr) {
		ICPT_CHECK(cuGetProcAddress("cuCtxGetCurrent", (void **)&ctxget, 4000, 0, NULL));
		ICPT_CHECK(cuGetProcAddress("cuMemsetD32Async", (void **)&memset32, 3020, 0, NULL));
		ICPT_CHECK(cuGetProcAddress("cuLaunchKernel", (void **)&launch, 4000, 0, NULL));
	}
	icpt_init();
	icpt_load_kernels(&k);
	ICPT_CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	ICPT_CHECK(cuMemAlloc(&p, 4));
	for (long i = 0; i < n; i++) {
		if (strcmp(what, "ctxget") == 0) {
			ICPT_CHECK(ctxget(&ctx));
		} else if (strcmp(what, "memset") == 0) {
			ICPT_CHECK(memset32(p, (unsigned)i, 1, s));
		} else {
			ICPT_CHECK(launch(k.fill, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
			if (i % 256 == 255)
				ICPT_CHECK(cuStreamSynchronize(s));
		}
	}
	ICPT_CHECK(cuStreamSynchronize(s));
	printf("%s %ld calls done\n", what, n);
	return 0;
}
