/* icpt_ctor.c - a shared library whose constructor makes the process's first driver calls, so
 * cufold must initialize from inside the dynamic loader (tests/progs/icpt_ctor.c loads it;
 * tests/e2e/shim_ctor.sh also preloads it). tests layer. */
#include <cuda.h>
#include <stdint.h>
#include <string.h>

int icpt_ctor_result(int *version, unsigned int *words, int n);

static CUresult ctor_rc = CUDA_ERROR_UNKNOWN; /* first failure of the constructor's calls */
static int ctor_version;                    /* cuDriverGetVersion in the constructor */
static unsigned int ctor_words[8];          /* device memory read back by the constructor */

#define STEP(call) \
	do { \
		if ((rc = (call)) != CUDA_SUCCESS) \
			goto out; \
	} while (0)

__attribute__((constructor)) static void first_driver_calls(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr p = 0;
	CUresult rc;

	STEP(cuInit(0));
	STEP(cuDriverGetVersion(&ctor_version));
	STEP(cuDeviceGet(&dev, 0));
	STEP(cuDevicePrimaryCtxRetain(&ctx, dev));
	STEP(cuCtxSetCurrent(ctx));
	STEP(cuMemAlloc(&p, sizeof(ctor_words)));
	STEP(cuMemsetD32(p, 0xc7c7c7c7u, 8));
	STEP(cuMemsetD8(p + 4, 0x11, 4));
	STEP(cuMemcpyDtoH(ctor_words, p, sizeof(ctor_words)));
out:
	if (p)
		cuMemFree(p);
	ctor_rc = rc;
}

int icpt_ctor_result(int *version, unsigned int *words, int n)
{
	*version = ctor_version;
	memcpy(words, ctor_words, sizeof(unsigned int) * (size_t)(n < 8 ? n : 8));
	return (int)ctor_rc;
}
