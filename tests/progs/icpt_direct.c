/* icpt_direct.c - interception path 1: a program linked directly against libcuda.so.1, whose
 * calls bind to cufold's exported names when it is preloaded. Also calls cuGetProcAddress by
 * name with explicit versions, the way NCCL and PyTorch do. tests layer. */
#define CU(fn) fn
#include "icpt_work.h"

#include <cudaProfiler.h>

int main(void)
{
	CUcontext ctx = icpt_init();
	CUdevice dev;
	__typeof__(&cuMemsetD32) memset32 = NULL;
	CUdriverProcAddressQueryResult status;
	CUdeviceptr p;
	unsigned int v[4];

	icpt_work("direct", 1);
	icpt_work("direct", 2);

	/* a library's lookup with an explicit version, then a call through the pointer */
	ICPT_CHECK(cuGetProcAddress("cuMemsetD32", (void **)&memset32, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
	printf("procaddr cuMemsetD32 status %d found %d\n", (int)status, memset32 != NULL);
	ICPT_CHECK(cuMemAlloc(&p, sizeof(v)));
	ICPT_CHECK(memset32(p, 0x01020304u, 4));
	ICPT_CHECK(cuMemcpyDtoH(v, p, sizeof(v)));
	printf("procaddr memset %08x %08x\n", v[0], v[3]);
	ICPT_CHECK(cuMemFree(p));

	/* names the toolkit gives no typedef for go through cufold's untyped trampoline */
	printf("profiler %d %d\n", (int)cuProfilerStart(), (int)cuProfilerStop());

	ICPT_CHECK(cuCtxGetDevice(&dev));
	ICPT_CHECK(cuCtxGetCurrent(&ctx));
	ICPT_CHECK(cuDevicePrimaryCtxRelease(dev));
	printf("done\n");
	return 0;
}
