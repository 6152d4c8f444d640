/* icpt_work.h - the driver work the interception test programs do, written once and reached
 * through whatever path the including program tests. tests layer; header only.
 *
 * Before including, a program defines CU(fn): how it calls driver function fn. A program
 * linked directly defines CU(fn) as fn; one that looked the driver up fills a struct icpt_api
 * (fields named like the functions, so cuda.h's renaming macros give each field the name of
 * the exported variant) and defines CU(fn) as api.fn. The work prints one line per step with a
 * hash of what the device computed, so runs with and without cufold can be compared byte for
 * byte. */
#ifndef ICPT_WORK_H
#define ICPT_WORK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#ifndef CU
#error "define CU(fn) before including icpt_work.h"
#endif

#define ICPT_N 4096

/* Every driver function the work calls; X(fn). */
#define ICPT_API(X) \
	X(cuInit) X(cuDriverGetVersion) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDevicePrimaryCtxRetain) \
	X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxSynchronize) \
	X(cuModuleLoadData) X(cuModuleGetFunction) X(cuModuleUnload) X(cuMemAlloc) X(cuMemFree) \
	X(cuMemAllocHost) X(cuMemFreeHost) X(cuMemsetD32) X(cuMemsetD32Async) X(cuMemsetD8) \
	X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyDtoD) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) \
	X(cuStreamCreate) X(cuStreamSynchronize) X(cuStreamDestroy) X(cuStreamWaitEvent) \
	X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventDestroy) X(cuLaunchKernel)

struct icpt_api {
#define ICPT_FIELD(fn) __typeof__(&fn) fn; /* the driver's fn, however it was found */
	ICPT_API(ICPT_FIELD)
#undef ICPT_FIELD
};

#define ICPT_CHECK(call) \
	do { \
		CUresult icpt_rc_ = (call); \
		if (icpt_rc_ != CUDA_SUCCESS) { \
			fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, (int)icpt_rc_); \
			exit(1); \
		} \
	} while (0)

static inline unsigned int icpt_bits(float f)
{
	unsigned int u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* cuInit, device 0, its primary context made current. */
static inline CUcontext icpt_init(void)
{
	CUdevice dev;
	CUcontext ctx;
	int version = 0, count = 0;

	ICPT_CHECK(CU(cuInit)(0));
	ICPT_CHECK(CU(cuDriverGetVersion)(&version));
	ICPT_CHECK(CU(cuDeviceGetCount)(&count));
	ICPT_CHECK(CU(cuDeviceGet)(&dev, 0));
	ICPT_CHECK(CU(cuDevicePrimaryCtxRetain)(&ctx, dev));
	ICPT_CHECK(CU(cuCtxSetCurrent)(ctx));
	printf("init version %d devices %d\n", version, count);
	return ctx;
}

struct icpt_kernels {
	CUmodule mod;    /* tests/kernels/elementwise.cu */
	CUfunction fill; /* x[i] = v */
	CUfunction axpy; /* y[i] = a*x[i] + y[i] */
	CUfunction add;  /* out[i] = a[i] + b[i] */
};

static inline void icpt_load_kernels(struct icpt_kernels *k)
{
	char *ptx = tl_read_ptx("elementwise");

	ICPT_CHECK(CU(cuModuleLoadData)(&k->mod, ptx));
	free(ptx);
	ICPT_CHECK(CU(cuModuleGetFunction)(&k->fill, k->mod, "fill"));
	ICPT_CHECK(CU(cuModuleGetFunction)(&k->axpy, k->mod, "axpy"));
	ICPT_CHECK(CU(cuModuleGetFunction)(&k->add, k->mod, "add"));
}

static inline void icpt_fill(const struct icpt_kernels *k, CUdeviceptr x, float v, int n, CUstream s)
{
	void *args[] = { &x, &v, &n };

	ICPT_CHECK(CU(cuLaunchKernel)(k->fill, (unsigned)(n + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

static inline void icpt_axpy(const struct icpt_kernels *k, CUdeviceptr y, CUdeviceptr x, float a, int n, CUstream s)
{
	void *args[] = { &y, &x, &a, &n };

	ICPT_CHECK(CU(cuLaunchKernel)(k->axpy, (unsigned)(n + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

static inline void icpt_add(const struct icpt_kernels *k, CUdeviceptr out, CUdeviceptr a, CUdeviceptr b, int n,
			    CUstream s)
{
	void *args[] = { &out, &a, &b, &n };

	ICPT_CHECK(CU(cuLaunchKernel)(k->add, (unsigned)(n + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

/* Two streams ordered by an event, kernels, memsets and copies of every direction; prints
 * "<tag> <step> <hash>" lines. seed varies the data. */
static inline void icpt_work(const char *tag, unsigned seed)
{
	struct icpt_kernels k;
	CUdeviceptr x, y, z;
	CUstream s1, s2;
	CUevent ev;
	float *host, *pinned;
	size_t bytes = ICPT_N * sizeof(float);

	icpt_load_kernels(&k);
	host = malloc(bytes);
	if (!host)
		exit(1);
	tl_fill_random(host, ICPT_N, seed);
	ICPT_CHECK(CU(cuMemAllocHost)((void **)&pinned, bytes));
	ICPT_CHECK(CU(cuMemAlloc)(&x, bytes));
	ICPT_CHECK(CU(cuMemAlloc)(&y, bytes));
	ICPT_CHECK(CU(cuMemAlloc)(&z, bytes));
	ICPT_CHECK(CU(cuStreamCreate)(&s1, CU_STREAM_NON_BLOCKING));
	ICPT_CHECK(CU(cuStreamCreate)(&s2, CU_STREAM_NON_BLOCKING));
	ICPT_CHECK(CU(cuEventCreate)(&ev, CU_EVENT_DISABLE_TIMING));

	/* y = 2 on s2; x = 1.5 + seed on s1; s1 waits for s2; y = 3x + y; z = host; z = y + z */
	ICPT_CHECK(CU(cuMemsetD32Async)(y, icpt_bits(2.0f), ICPT_N, s2));
	ICPT_CHECK(CU(cuEventRecord)(ev, s2));
	icpt_fill(&k, x, 1.5f + (float)seed, ICPT_N, s1);
	ICPT_CHECK(CU(cuStreamWaitEvent)(s1, ev, 0));
	icpt_axpy(&k, y, x, 3.0f, ICPT_N, s1);
	ICPT_CHECK(CU(cuMemcpyHtoDAsync)(z, host, bytes, s1));
	icpt_add(&k, z, y, z, ICPT_N, s1);
	ICPT_CHECK(CU(cuMemcpyDtoHAsync)(pinned, z, bytes, s1));
	ICPT_CHECK(CU(cuStreamSynchronize)(s1));
	printf("%s streams %016llx\n", tag, (unsigned long long)tl_hash(pinned, bytes, TL_HASH_INIT));

	/* the legacy stream, synchronous calls */
	ICPT_CHECK(CU(cuMemcpyHtoD)(x, host, bytes));
	ICPT_CHECK(CU(cuMemsetD8)(y, 0x3f, bytes / 2));
	ICPT_CHECK(CU(cuMemsetD32)(y + bytes / 2, icpt_bits(-0.25f), ICPT_N / 2));
	icpt_add(&k, z, x, y, ICPT_N, 0);
	ICPT_CHECK(CU(cuMemcpyDtoD)(x, z, bytes));
	ICPT_CHECK(CU(cuCtxSynchronize)());
	ICPT_CHECK(CU(cuMemcpyDtoH)(host, x, bytes));
	printf("%s legacy %016llx\n", tag, (unsigned long long)tl_hash(host, bytes, TL_HASH_INIT));

	ICPT_CHECK(CU(cuEventSynchronize)(ev));
	ICPT_CHECK(CU(cuEventDestroy)(ev));
	ICPT_CHECK(CU(cuStreamDestroy)(s1));
	ICPT_CHECK(CU(cuStreamDestroy)(s2));
	ICPT_CHECK(CU(cuMemFree)(x));
	ICPT_CHECK(CU(cuMemFree)(y));
	ICPT_CHECK(CU(cuMemFree)(z));
	ICPT_CHECK(CU(cuMemFreeHost)(pinned));
	ICPT_CHECK(CU(cuModuleUnload)(k.mod));
	free(host);
}

#endif
