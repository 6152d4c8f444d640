/* cap_reload.c - programs that once made cufold's capture misbehave, for
 * tests/e2e/capture_reload.sh: a step loop that loads (and unloads) an unrelated module each
 * step, copies the driver refuses, and many short-lived threads each using its per-thread default
 * stream. It knows nothing of cufold; it prints what it computed.
 * usage: cap_reload reload|keep STEPS   (reload: unload the other module each step; keep: never)
 *        cap_reload badcopy             (three device-to-host copies from a bad pointer)
 *        cap_reload threads N           (N threads one after another, one memset each)
 *        cap_reload enumerate STEPS     (cuLibraryEnumerateKernels into a larger array whose
 *                                        spare entries hold a CUfunction; then launch that) 
 * tests layer. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define N 1024

static CUcontext ctx;
static CUdeviceptr buf;

static int reload(int steps, int unload)
{
	CUmodule m = tl_load_module("elementwise");
	CUfunction f_fill = tl_func(m, "fill");
	CUstream s;
	float host[4];
	uint64_t h = TL_HASH_INIT;
	int n = N;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (int step = 0; step < steps; step++) {
		CUmodule other = tl_load_module("linalg");
		float v = (float)step;
		void *args[] = { &buf, &v, &n };

		if (unload)
			CHECK(cuModuleUnload(other));
		CHECK(cuLaunchKernel(f_fill, N / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
		CHECK(cuStreamSynchronize(s));
	}
	CHECK(cuMemcpyDtoH(host, buf, sizeof(host)));
	h = tl_hash(host, sizeof(host), h);
	printf("cap_reload %s steps=%d checksum=%016llx\n", unload ? "reload" : "keep", steps, (unsigned long long)h);
	return 0;
}

static int badcopy(void)
{
	float host[4] = { 0 };
	int refused = 0;

	CHECK(cuMemsetD32Async(buf, 0x3f800000u, N, 0));
	for (int i = 0; i < 3; i++) {
		/* a device address nothing was allocated at */
		if (cuMemcpyDtoH(host, (CUdeviceptr)0x10, sizeof(host)) != CUDA_SUCCESS)
			refused++;
	}
	CHECK(cuCtxSynchronize());
	CHECK(cuMemcpyDtoH(host, buf, sizeof(host)));
	printf("cap_reload badcopy refused=%d first=%g\n", refused, (double)host[0]);
	return 0;
}

static void *one_thread(void *arg)
{
	unsigned int v = (unsigned int)(uintptr_t)arg;

	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuMemsetD32Async(buf + (v % N) * sizeof(float), v, 1, CU_STREAM_PER_THREAD));
	CHECK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
	return NULL;
}

static int threads(int count)
{
	uint32_t host[N];

	for (int i = 0; i < count; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, one_thread, (void *)(uintptr_t)i) != 0 || pthread_join(t, NULL) != 0) {
			fprintf(stderr, "thread %d failed\n", i);
			return 1;
		}
	}
	CHECK(cuMemcpyDtoH(host, buf, sizeof(host)));
	printf("cap_reload threads=%d checksum=%016llx\n", count,
	       (unsigned long long)tl_hash(host, sizeof(host), TL_HASH_INIT));
	return 0;
}

static int enumerate(int steps)
{
	CUmodule m = tl_load_module("elementwise");
	CUfunction f_fill = tl_func(m, "fill");
	char *ptx = tl_read_ptx("elementwise");
	CUkernel k[64];
	CUlibrary lib;
	unsigned int count = 0;
	float host[4];
	int n = N;

	CHECK(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
	free(ptx);
	CHECK(cuLibraryGetKernelCount(&count, lib));
	/* the driver fills `count` entries; the rest keep what the program left there */
	for (int i = 0; i < 64; i++)
		k[i] = (CUkernel)f_fill;
	CHECK(cuLibraryEnumerateKernels(k, 64, lib));
	for (int step = 0; step < steps; step++) {
		float v = (float)step;
		void *args[] = { &buf, &v, &n };

		CHECK(cuLaunchKernel(f_fill, N / 256, 1, 1, 256, 1, 1, 0, 0, args, NULL));
		CHECK(cuStreamSynchronize(0));
	}
	CHECK(cuMemcpyDtoH(host, buf, sizeof(host)));
	printf("cap_reload enumerate kernels=%u value=%g\n", count, (double)host[0]);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "reload";
	int count = argc > 2 ? atoi(argv[2]) : 10;

	ctx = tl_init();
	CHECK(cuMemAlloc(&buf, N * sizeof(float)));
	CHECK(cuMemsetD32(buf, 0, N));
	if (strcmp(mode, "reload") == 0 || strcmp(mode, "keep") == 0)
		return reload(count, strcmp(mode, "reload") == 0);
	if (strcmp(mode, "badcopy") == 0)
		return badcopy();
	if (strcmp(mode, "threads") == 0)
		return threads(count);
	if (strcmp(mode, "enumerate") == 0)
		return enumerate(count);
	fprintf(stderr, "usage: cap_reload reload|keep|badcopy|threads|enumerate [N]\n");
	return 2;
}
