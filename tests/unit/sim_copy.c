/* sim_copy.c - unit tests of the software device's copies: every direction, 2-D and 3-D with
 * pitches and offsets, unified and peer copies, staging of pageable memory, the synchronous
 * cases of the Async forms, per-thread variants, invalid arguments, and correct results of a
 * properly ordered program under several seeds of the random schedule.
 * tests layer; runs against the software device's libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "testlib.h"

extern char **environ;

/* Per-thread-stream entry points: cuda.h declares them only for per-thread builds. */
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
				   CUstream hStream);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
				   CUstream hStream);
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy);
CUresult cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream);

static CUcontext ctx;
static const char *self_path;

static void fill(void *p, size_t n, unsigned int seed)
{
	unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 7 + seed * 13 + 1);
}

static bool all_bytes(const void *p, size_t n, unsigned char v)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != v)
			return false;
	return true;
}

static void *dev_ptr(CUdeviceptr d)
{
	return (void *)(uintptr_t)d;
}

/* ------------------------------------------------------------------ 1-D */

static void test_roundtrip_sync(void **state)
{
	const size_t n = 10000;
	unsigned char *src = malloc(n), *dst = malloc(n);
	CUdeviceptr a, b;

	(void)state;
	fill(src, n, 1);
	memset(dst, 0, n);
	CHECK(cuMemAlloc(&a, n));
	CHECK(cuMemAlloc(&b, n));
	assert_int_equal(cuMemcpyHtoD(a, src, n), CUDA_SUCCESS);
	assert_memory_equal(dev_ptr(a), src, n); /* synchronous: done on return */
	assert_int_equal(cuMemcpyDtoD(b, a, n), CUDA_SUCCESS);
	assert_memory_equal(dev_ptr(b), src, n);
	assert_int_equal(cuMemcpyDtoH(dst, b, n), CUDA_SUCCESS);
	assert_memory_equal(dst, src, n);
	/* sub-ranges with offsets */
	memset(dst, 0, n);
	CHECK(cuMemcpyDtoH(dst + 3, b + 100, 50));
	assert_memory_equal(dst + 3, src + 100, 50);
	assert_int_equal(dst[2], 0);
	assert_int_equal(dst[53], 0);
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
	free(src);
	free(dst);
}

static void test_async_directions(void **state)
{
	const size_t n = 4096;
	unsigned char *src = malloc(n), *dst;
	CUdeviceptr a, b;
	CUstream s;

	(void)state;
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAllocHost((void **)&dst, n));
	memset(dst, 0, n);
	fill(src, n, 2);
	CHECK(cuMemAlloc(&a, n));
	CHECK(cuMemAlloc(&b, n));
	CHECK(cuMemcpyHtoDAsync(a, src, n, s));
	CHECK(cuMemcpyDtoDAsync(b, a, n, s));
	CHECK(cuMemcpyDtoHAsync(dst, b, n, s));
	/* into pinned memory: truly asynchronous, nothing has run yet */
	assert_true(all_bytes(dst, n, 0));
	CHECK(cuStreamSynchronize(s));
	assert_memory_equal(dst, src, n);
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
	CHECK(cuMemFreeHost(dst));
	CHECK(cuStreamDestroy(s));
	free(src);
}

static void test_pageable_source_is_staged(void **state)
{
	const size_t n = 3000;
	unsigned char *h = malloc(n);
	CUdeviceptr d;
	CUstream s;

	(void)state;
	CHECK(cuStreamCreate(&s, 0));
	CHECK(cuMemAlloc(&d, n));
	memset(h, 1, n);
	CHECK(cuMemcpyHtoDAsync(d, h, n, s));
	memset(h, 2, n); /* the program may reuse a pageable buffer at once */
	CHECK(cuStreamSynchronize(s));
	assert_true(all_bytes(dev_ptr(d), n, 1));
	/* the same through cuMemcpyAsync with unified addressing */
	memset(h, 3, n);
	CHECK(cuMemcpyAsync(d, (CUdeviceptr)(uintptr_t)h, n, s));
	memset(h, 4, n);
	CHECK(cuStreamSynchronize(s));
	assert_true(all_bytes(dev_ptr(d), n, 3));
	CHECK(cuMemFree(d));
	CHECK(cuStreamDestroy(s));
	free(h);
}

static void test_pinned_source_is_not_staged(void **state)
{
	const size_t n = 3000;
	unsigned char *h, *r = malloc(n);
	CUdeviceptr d;
	CUstream s;

	(void)state;
	CHECK(cuStreamCreate(&s, 0));
	CHECK(cuMemAlloc(&d, n));
	CHECK(cuMemAllocHost((void **)&h, n));
	memset(h, 1, n);
	CHECK(cuMemcpyHtoDAsync(d, h, n, s));
	memset(h, 2, n); /* CUDA's rule is broken on purpose: the copy reads at run time */
	CHECK(cuStreamSynchronize(s));
	assert_true(all_bytes(dev_ptr(d), n, 2));
	CHECK(cuMemFreeHost(h));
	/* registered memory behaves like pinned memory */
	memset(r, 5, n);
	CHECK(cuMemHostRegister(r, n, 0));
	CHECK(cuMemcpyHtoDAsync(d, r, n, s));
	memset(r, 6, n);
	CHECK(cuStreamSynchronize(s));
	assert_true(all_bytes(dev_ptr(d), n, 6));
	CHECK(cuMemHostUnregister(r));
	CHECK(cuMemFree(d));
	CHECK(cuStreamDestroy(s));
	free(r);
}

static void test_pageable_destination_is_synchronous(void **state)
{
	const size_t n = 2048;
	unsigned char *h = calloc(1, n);
	CUdeviceptr d;
	CUstream s;

	(void)state;
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&d, n));
	CHECK(cuMemsetD8Async(d, 0x42, n, s));
	CHECK(cuMemcpyDtoHAsync(h, d, n, s));
	/* CUDA: an Async copy into pageable memory returns when it is done */
	assert_true(all_bytes(h, n, 0x42));
	CHECK(cuMemFree(d));
	CHECK(cuStreamDestroy(s));
	free(h);
}

static void test_per_thread_variants(void **state)
{
	const size_t n = 1000;
	unsigned char *src = malloc(n), *dst = calloc(1, n);
	CUdeviceptr a, b;

	(void)state;
	fill(src, n, 3);
	CHECK(cuMemAlloc(&a, n));
	CHECK(cuMemAlloc(&b, n));
	assert_int_equal(cuMemcpyHtoD_v2_ptds(a, src, n), CUDA_SUCCESS);
	assert_memory_equal(dev_ptr(a), src, n);
	assert_int_equal(cuMemcpyDtoD_v2_ptds(b, a, n), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoH_v2_ptds(dst, b, n), CUDA_SUCCESS);
	assert_memory_equal(dst, src, n);
	fill(src, n, 4);
	assert_int_equal(cuMemcpyHtoDAsync_v2_ptsz(a, src, n, NULL), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyAsync_ptsz(b, a, n, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
	memset(dst, 0, n);
	assert_int_equal(cuMemcpyDtoHAsync_v2_ptsz(dst, b, n, NULL), CUDA_SUCCESS); /* pageable */
	assert_memory_equal(dst, src, n);
	memset(dst, 0, n);
	assert_int_equal(cuMemcpy_ptds((CUdeviceptr)(uintptr_t)dst, a, n), CUDA_SUCCESS);
	assert_memory_equal(dst, src, n);
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
	free(src);
	free(dst);
}

static void test_unified_memcpy(void **state)
{
	const size_t n = 777;
	unsigned char *h1 = malloc(n), *h2 = calloc(1, n), *h3 = calloc(1, n);
	CUdeviceptr d1, d2, m;

	(void)state;
	fill(h1, n, 5);
	CHECK(cuMemAlloc(&d1, n));
	CHECK(cuMemAlloc(&d2, n));
	CHECK(cuMemAllocManaged(&m, n, CU_MEM_ATTACH_GLOBAL));
	assert_int_equal(cuMemcpy(d1, (CUdeviceptr)(uintptr_t)h1, n), CUDA_SUCCESS); /* H->D */
	assert_int_equal(cuMemcpy(d2, d1, n), CUDA_SUCCESS);                         /* D->D */
	assert_int_equal(cuMemcpy(m, d2, n), CUDA_SUCCESS);                          /* D->managed */
	assert_int_equal(cuMemcpy((CUdeviceptr)(uintptr_t)h2, m, n), CUDA_SUCCESS);  /* D->H */
	assert_memory_equal(h2, h1, n);
	assert_int_equal(cuMemcpy((CUdeviceptr)(uintptr_t)h3, (CUdeviceptr)(uintptr_t)h2, n),
			 CUDA_SUCCESS); /* H->H */
	assert_memory_equal(h3, h1, n);
	/* managed memory is host-accessible */
	assert_memory_equal(dev_ptr(m), h1, n);
	CHECK(cuMemFree(d1));
	CHECK(cuMemFree(d2));
	CHECK(cuMemFree(m));
	free(h1);
	free(h2);
	free(h3);
}

static void test_peer(void **state)
{
	const size_t n = 512;
	unsigned char *h = malloc(n);
	CUdeviceptr a, b;
	CUstream s;
	CUDA_MEMCPY3D_PEER p;

	(void)state;
	fill(h, n, 6);
	CHECK(cuStreamCreate(&s, 0));
	CHECK(cuMemAlloc(&a, n));
	CHECK(cuMemAlloc(&b, 2 * n));
	CHECK(cuMemcpyHtoD(a, h, n));
	assert_int_equal(cuMemcpyPeer(b, ctx, a, ctx, n), CUDA_SUCCESS);
	assert_memory_equal(dev_ptr(b), h, n);
	CHECK(cuMemsetD8(b, 0, 2 * n));
	assert_int_equal(cuMemcpyPeerAsync(b, ctx, a, ctx, n, s), CUDA_SUCCESS);
	CHECK(cuStreamSynchronize(s));
	assert_memory_equal(dev_ptr(b), h, n);
	assert_int_equal(cuMemcpyPeer(b, NULL, a, ctx, n), CUDA_ERROR_INVALID_CONTEXT);

	/* two tight slices of 4 rows of a into slices 8 rows apart in b */
	CHECK(cuMemsetD8(b, 0, 2 * n));
	memset(&p, 0, sizeof(p));
	p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	p.srcDevice = a;
	p.srcContext = ctx;
	p.srcPitch = 64;
	p.srcHeight = 4;
	p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	p.dstDevice = b;
	p.dstContext = ctx;
	p.dstPitch = 64;
	p.dstHeight = 8;
	p.WidthInBytes = 64;
	p.Height = 4;
	p.Depth = 2;
	assert_int_equal(cuMemcpy3DPeer(&p), CUDA_SUCCESS);
	assert_memory_equal(dev_ptr(b), h, 256);
	assert_true(all_bytes((char *)dev_ptr(b) + 256, 256, 0));
	assert_memory_equal((char *)dev_ptr(b) + 512, h + 256, 256);
	assert_true(all_bytes((char *)dev_ptr(b) + 768, 256, 0));
	CHECK(cuMemsetD8(b, 0, 2 * n));
	assert_int_equal(cuMemcpy3DPeerAsync(&p, s), CUDA_SUCCESS);
	CHECK(cuStreamSynchronize(s));
	assert_memory_equal((char *)dev_ptr(b) + 512, h + 256, 256);
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
	CHECK(cuStreamDestroy(s));
	free(h);
}

/* ------------------------------------------------------------------ 2-D and 3-D */

static void test_2d_pitches_and_offsets(void **state)
{
	enum { SP = 100, SH = 20, W = 37, H = 9, DP = 64, DH = 12 };
	unsigned char *src = malloc(SP * SH), *dst = malloc(DP * DH);
	CUdeviceptr d1, d2;
	size_t p1, p2;
	CUDA_MEMCPY2D c;

	(void)state;
	fill(src, SP * SH, 7);
	memset(dst, 0xee, DP * DH);
	CHECK(cuMemAllocPitch(&d1, &p1, 200, 16, 4));
	CHECK(cuMemAllocPitch(&d2, &p2, 300, 16, 4));
	CHECK(cuMemsetD8(d1, 0, p1 * 16));

	/* host (x=5, y=3) -> device 1 (x=16, y=2) */
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = src;
	c.srcPitch = SP;
	c.srcXInBytes = 5;
	c.srcY = 3;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = d1;
	c.dstPitch = p1;
	c.dstXInBytes = 16;
	c.dstY = 2;
	c.WidthInBytes = W;
	c.Height = H;
	assert_int_equal(cuMemcpy2D(&c), CUDA_SUCCESS);
	for (int y = 0; y < H; y++)
		assert_memory_equal((char *)dev_ptr(d1) + (y + 2) * p1 + 16, src + (y + 3) * SP + 5, W);
	assert_int_equal(((unsigned char *)dev_ptr(d1))[2 * p1 + 15], 0);
	assert_int_equal(((unsigned char *)dev_ptr(d1))[2 * p1 + 16 + W], 0);

	/* device 1 -> device 2 (x=1, y=0), asynchronously, unaligned variant too */
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = d1;
	c.srcPitch = p1;
	c.srcXInBytes = 16;
	c.srcY = 2;
	c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
	c.dstDevice = d2;
	c.dstPitch = p2;
	c.dstXInBytes = 1;
	c.WidthInBytes = W;
	c.Height = H;
	assert_int_equal(cuMemcpy2DAsync(&c, NULL), CUDA_SUCCESS);
	CHECK(cuCtxSynchronize());
	assert_int_equal(cuMemcpy2DUnaligned(&c), CUDA_SUCCESS);

	/* device 2 -> host (x=1, y=1), pitch 64 */
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = d2;
	c.srcPitch = p2;
	c.srcXInBytes = 1;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = dst;
	c.dstPitch = DP;
	c.dstXInBytes = 1;
	c.dstY = 1;
	c.WidthInBytes = W;
	c.Height = H;
	assert_int_equal(cuMemcpy2D_v2_ptds(&c), CUDA_SUCCESS);
	for (int y = 0; y < DH; y++)
		for (int x = 0; x < DP; x++) {
			bool inside = y >= 1 && y < 1 + H && x >= 1 && x < 1 + W;
			unsigned char want = inside ? src[(y - 1 + 3) * SP + (x - 1 + 5)] : 0xee;

			assert_int_equal(dst[y * DP + x], want);
		}
	CHECK(cuMemFree(d1));
	CHECK(cuMemFree(d2));
	free(src);
	free(dst);
}

static void test_3d_pitches_and_offsets(void **state)
{
	enum { SP = 50, SH = 12, SD = 5, W = 20, H = 7, D = 3, DP = 32, DH = 8, DD = 4 };
	unsigned char *src = malloc(SP * SH * SD), *back = malloc(W * H * D);
	CUdeviceptr dev;
	CUstream s;
	CUDA_MEMCPY3D c;

	(void)state;
	fill(src, SP * SH * SD, 8);
	memset(back, 0, W * H * D);
	CHECK(cuStreamCreate(&s, 0));
	CHECK(cuMemAlloc(&dev, DP * DH * DD));
	CHECK(cuMemsetD8(dev, 0xcc, DP * DH * DD));

	/* host box (x=2, y=1, z=1) -> device box (x=4, y=0, z=1) */
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = src;
	c.srcPitch = SP;
	c.srcHeight = SH;
	c.srcXInBytes = 2;
	c.srcY = 1;
	c.srcZ = 1;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = dev;
	c.dstPitch = DP;
	c.dstHeight = DH;
	c.dstXInBytes = 4;
	c.dstZ = 1;
	c.WidthInBytes = W;
	c.Height = H;
	c.Depth = D;
	assert_int_equal(cuMemcpy3D(&c), CUDA_SUCCESS);
	for (int z = 0; z < DD; z++)
		for (int y = 0; y < DH; y++)
			for (int x = 0; x < DP; x++) {
				bool inside = z >= 1 && z < 1 + D && y < H && x >= 4 && x < 4 + W;
				unsigned char want = inside ? src[((z - 1 + 1) * SH + y + 1) * SP + x - 4 + 2]
							    : 0xcc;

				assert_int_equal(((unsigned char *)dev_ptr(dev))[(z * DH + y) * DP + x], want);
			}

	/* and back into a tight host box, asynchronously on the per-thread stream */
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = dev;
	c.srcPitch = DP;
	c.srcHeight = DH;
	c.srcXInBytes = 4;
	c.srcZ = 1;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = back;
	c.dstPitch = W;
	c.dstHeight = H;
	c.WidthInBytes = W;
	c.Height = H;
	c.Depth = D;
	assert_int_equal(cuMemcpy3DAsync_v2_ptsz(&c, NULL), CUDA_SUCCESS); /* pageable: synchronous */
	for (int z = 0; z < D; z++)
		for (int y = 0; y < H; y++)
			assert_memory_equal(back + (z * H + y) * W, src + ((z + 1) * SH + y + 1) * SP + 2, W);
	memset(back, 0, W * H * D);
	assert_int_equal(cuMemcpy3DAsync(&c, s), CUDA_SUCCESS);
	assert_memory_equal(back, src + (1 * SH + 1) * SP + 2, W);
	CHECK(cuMemFree(dev));
	CHECK(cuStreamDestroy(s));
	free(src);
	free(back);
}

/* ------------------------------------------------------------------ invalid arguments */

static void test_invalid(void **state)
{
	unsigned char h[256] = { 0 };
	CUdeviceptr d, gone;
	CUDA_MEMCPY2D c;
	CUDA_MEMCPY3D c3;

	(void)state;
	CHECK(cuMemAlloc(&d, 4096));
	CHECK(cuMemAlloc(&gone, 4096));
	CHECK(cuMemFree(gone));
	/* a device range that runs past its allocation or hits no allocation */
	assert_int_equal(cuMemcpyHtoD(d + 4000, h, 200), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemcpyDtoH(h, d + 4096, 1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemcpyDtoH(h, gone, 16), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemcpyDtoD(d, gone, 16), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemcpyHtoD((CUdeviceptr)(uintptr_t)h, h + 128, 16), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemcpy(gone, (CUdeviceptr)(uintptr_t)h, 16), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemcpyHtoDAsync(d + 4090, h, 16, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemcpyHtoD(d, NULL, 16), CUDA_ERROR_INVALID_VALUE);
	/* zero bytes: nothing to do */
	assert_int_equal(cuMemcpyHtoD(d, h, 0), CUDA_SUCCESS);
	assert_int_equal(cuMemcpyDtoD(gone, gone, 0), CUDA_SUCCESS);

	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = d;
	c.dstPitch = 64;
	c.WidthInBytes = 16;
	c.Height = 2;
	assert_int_equal(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE); /* no array named (sim_array.c) */
	c.srcMemoryType = (CUmemorytype)0x77;
	assert_int_equal(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = h;
	c.srcPitch = 8; /* pitch below the width */
	assert_int_equal(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
	c.srcPitch = 64;
	c.dstY = 64; /* row 64 of a 4096-byte allocation is past its end */
	assert_int_equal(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
	c.dstY = 63;
	c.Height = 1;
	assert_int_equal(cuMemcpy2D(&c), CUDA_SUCCESS);
	assert_int_equal(cuMemcpy2D(NULL), CUDA_ERROR_INVALID_VALUE);

	memset(&c3, 0, sizeof(c3));
	c3.srcMemoryType = CU_MEMORYTYPE_HOST;
	c3.srcHost = h;
	c3.srcPitch = 16;
	c3.srcHeight = 1; /* slice height below Height */
	c3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c3.dstDevice = d;
	c3.dstPitch = 16;
	c3.dstHeight = 2;
	c3.WidthInBytes = 16;
	c3.Height = 2;
	c3.Depth = 2;
	assert_int_equal(cuMemcpy3D(&c3), CUDA_ERROR_INVALID_VALUE);
	c3.srcHeight = 2;
	assert_int_equal(cuMemcpy3D(&c3), CUDA_SUCCESS);
	c3.dstZ = 1000; /* far past the allocation */
	assert_int_equal(cuMemcpy3D(&c3), CUDA_ERROR_INVALID_VALUE);
	c3.dstZ = 0;
	c3.dstXInBytes = SIZE_MAX - 4; /* offset overflow */
	assert_int_equal(cuMemcpy3D(&c3), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemFree(d));
}

/* ------------------------------------------------------------------ the random schedule */

/* A properly ordered two-stream pipeline: runs in a child process under one seed; exits 0
 * when every result is right. */
static int ordered_pipeline(void)
{
	enum { N = 4096, ITERS = 12 };
	CUstream s1, s2;
	CUevent e1, e2;
	CUdeviceptr a, b, c, d;
	uint32_t *out, *page = malloc(N * 4);
	int bad = 0;

	tl_init();
	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&e2, CU_EVENT_DISABLE_TIMING));
	CHECK(cuMemAlloc(&a, N * 4));
	CHECK(cuMemAlloc(&b, N * 4));
	CHECK(cuMemAlloc(&c, N * 4));
	CHECK(cuMemAlloc(&d, (size_t)N * 4 * ITERS));
	CHECK(cuMemAllocHost((void **)&out, (size_t)N * 4 * ITERS * 2));
	for (uint32_t i = 0; i < ITERS; i++) {
		CHECK(cuStreamWaitEvent(s1, e2, 0)); /* s2 is done with b */
		CHECK(cuMemsetD32Async(a, 1000 + i, N, s1));
		CHECK(cuMemcpyDtoDAsync(b, a, N * 4, s1));
		CHECK(cuEventRecord(e1, s1));
		CHECK(cuStreamWaitEvent(s2, e1, 0));
		CHECK(cuMemcpyDtoDAsync(c, b, N * 4, s2));
		CHECK(cuMemsetD32Async(b, 0xdeadbeefu, N, s2));
		for (int k = 0; k < N; k++)
			page[k] = 5000 + i;
		CHECK(cuMemcpyHtoDAsync(d + (size_t)i * N * 4, page, N * 4, s2)); /* staged */
		memset(page, 0xff, N * 4);
		CHECK(cuMemcpyDtoHAsync(out + (size_t)i * N, c, N * 4, s2));
		CHECK(cuEventRecord(e2, s2));
	}
	CHECK(cuMemcpyDtoHAsync(out + (size_t)ITERS * N, d, (size_t)N * 4 * ITERS, s2));
	CHECK(cuCtxSynchronize());
	for (uint32_t i = 0; i < ITERS; i++)
		for (int k = 0; k < N; k++) {
			if (out[(size_t)i * N + k] != 1000 + i)
				bad++;
			if (out[(size_t)(ITERS + i) * N + k] != 5000 + i)
				bad++;
		}
	if (bad)
		fprintf(stderr, "ordered pipeline: %d wrong words\n", bad);
	free(page);
	return bad ? 1 : 0;
}

static void test_random_schedule_seeds(void **state)
{
	(void)state;
	for (int seed = 1; seed <= 8; seed++) {
		char seed_env[32];
		char *argv[] = { (char *)self_path, (char *)"ordered-pipeline", NULL };
		pid_t pid;
		int status = 0;

		snprintf(seed_env, sizeof(seed_env), "%d", seed);
		setenv("SIMCUDA_SCHEDULE", "random", 1);
		setenv("SIMCUDA_SEED", seed_env, 1);
		assert_int_equal(posix_spawn(&pid, self_path, NULL, NULL, argv, environ), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_sync),
		cmocka_unit_test(test_async_directions),
		cmocka_unit_test(test_pageable_source_is_staged),
		cmocka_unit_test(test_pinned_source_is_not_staged),
		cmocka_unit_test(test_pageable_destination_is_synchronous),
		cmocka_unit_test(test_per_thread_variants),
		cmocka_unit_test(test_unified_memcpy),
		cmocka_unit_test(test_peer),
		cmocka_unit_test(test_2d_pitches_and_offsets),
		cmocka_unit_test(test_3d_pitches_and_offsets),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_random_schedule_seeds),
	};

	self_path = argv[0];
	if (argc > 1 && !strcmp(argv[1], "ordered-pipeline"))
		return ordered_pipeline();
	ctx = tl_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
