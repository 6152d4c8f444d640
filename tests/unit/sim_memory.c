/* sim_memory.c - unit tests of the software device's memory: allocation, reuse, address
 * lookups, cuMemGetInfo, pinned/registered host memory, pointer attributes, stream-ordered
 * allocation and pools. tests layer; runs against the software device's libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define H200_TOTAL 150754820096ull

/* Per-thread-stream entry points: cuda.h declares them only for per-thread builds. */
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);

static CUcontext ctx;

static size_t free_now(void)
{
	size_t free_b = 0, total = 0;

	CHECK(cuMemGetInfo(&free_b, &total));
	return free_b;
}

static void test_alloc_free_reuse(void **state)
{
	CUdeviceptr p = 0, q = 0, r = 0;
	size_t f0 = free_now();

	(void)state;
	assert_int_equal(cuMemAlloc(&p, 1000), CUDA_SUCCESS);
	assert_int_equal(p % 256, 0);
	assert_int_equal(f0 - free_now(), 1024); /* 256-byte granularity */
	assert_int_equal(cuMemAlloc(&q, 1), CUDA_SUCCESS);
	assert_int_equal(q % 256, 0);
	assert_true(q >= p + 1024 || q + 256 <= p); /* no overlap */
	/* device memory is directly usable by host code */
	memset((void *)(uintptr_t)p, 0x5a, 1000);
	assert_int_equal(((unsigned char *)(uintptr_t)p)[999], 0x5a);

	assert_int_equal(cuMemFree(p + 256), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemFree(p), CUDA_SUCCESS);
	assert_int_equal(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemFree(0), CUDA_SUCCESS); /* a no-op: the runtime's cudaFree(0) */
	/* first fit: the freed range is handed out again */
	assert_int_equal(cuMemAlloc(&r, 1000), CUDA_SUCCESS);
	assert_int_equal(r, p);
	CHECK(cuMemFree(r));
	CHECK(cuMemFree(q));
	assert_int_equal(free_now(), f0);

	assert_int_equal(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemAlloc(NULL, 16), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemAlloc(&p, (size_t)200 << 30), CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(free_now(), f0);
}

static void test_freed_pages_read_zero(void **state)
{
	const size_t n = 1 << 20;
	CUdeviceptr p, q;
	unsigned char *h;

	(void)state;
	CHECK(cuMemAlloc(&p, n));
	memset((void *)(uintptr_t)p, 0xab, n);
	CHECK(cuMemFree(p));
	CHECK(cuMemAlloc(&q, n));
	assert_int_equal(q, p);
	h = (unsigned char *)(uintptr_t)q;
	/* whole pages inside the freed range were given back to the kernel */
	assert_int_equal(h[n / 2], 0);
	assert_int_equal(h[n - 8192], 0);
	CHECK(cuMemFree(q));
}

static void test_many_allocations(void **state)
{
	enum { N = 500 };
	CUdeviceptr p[N];
	size_t f0 = free_now();

	(void)state;
	for (int i = 0; i < N; i++)
		CHECK(cuMemAlloc(&p[i], (size_t)(i % 7 + 1) * 300));
	/* free every other one, then the rest: the free list must merge back to one piece */
	for (int i = 0; i < N; i += 2)
		CHECK(cuMemFree(p[i]));
	for (int i = 1; i < N; i += 2) {
		CUdeviceptr base = 0;
		size_t size = 0;

		CHECK(cuMemGetAddressRange(&base, &size, p[i] + 5));
		assert_int_equal(base, p[i]);
		assert_int_equal(size, (size_t)(i % 7 + 1) * 300);
		CHECK(cuMemFree(p[i]));
	}
	assert_int_equal(free_now(), f0);
}

static void test_address_range(void **state)
{
	CUdeviceptr a, b, base = 0;
	size_t size = 0;
	int local = 0;

	(void)state;
	CHECK(cuMemAlloc(&a, 1000));
	CHECK(cuMemAlloc(&b, 5000));
	assert_int_equal(cuMemGetAddressRange(&base, &size, b + 4999), CUDA_SUCCESS);
	assert_int_equal(base, b);
	assert_int_equal(size, 5000);
	assert_int_equal(cuMemGetAddressRange(&base, NULL, a), CUDA_SUCCESS);
	assert_int_equal(base, a);
	assert_int_equal(cuMemGetAddressRange(&base, &size, b + 5000), CUDA_ERROR_NOT_FOUND);
	assert_int_equal(cuMemGetAddressRange(&base, &size, (CUdeviceptr)(uintptr_t)&local),
			 CUDA_ERROR_NOT_FOUND);
	CHECK(cuMemFree(a));
	assert_int_equal(cuMemGetAddressRange(&base, &size, a), CUDA_ERROR_NOT_FOUND);
	CHECK(cuMemFree(b));
}

static void test_get_info(void **state)
{
	size_t f = 0, t = 0, f1;
	CUdeviceptr p;

	(void)state;
	assert_int_equal(cuMemGetInfo(&f, &t), CUDA_SUCCESS);
	assert_int_equal(t, H200_TOTAL);
	assert_true(f <= t);
	CHECK(cuMemAlloc(&p, (size_t)1 << 30));
	CHECK(cuMemGetInfo(&f1, &t));
	assert_int_equal(f - f1, (size_t)1 << 30);
	CHECK(cuMemFree(p));
	assert_int_equal(free_now(), f);
	assert_int_equal(cuMemGetInfo(NULL, &t), CUDA_ERROR_INVALID_VALUE);
}

static void test_alloc_pitch(void **state)
{
	CUdeviceptr p;
	size_t pitch = 0, size = 0;

	(void)state;
	assert_int_equal(cuMemAllocPitch(&p, &pitch, 1000, 10, 4), CUDA_SUCCESS);
	assert_true(pitch >= 1000);
	assert_int_equal(pitch % 512, 0);
	CHECK(cuMemGetAddressRange(NULL, &size, p));
	assert_true(size >= pitch * 10);
	CHECK(cuMemFree(p));
	assert_int_equal(cuMemAllocPitch(&p, &pitch, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemAllocPitch(&p, &pitch, 0, 10, 4), CUDA_ERROR_INVALID_VALUE);
}

static void test_managed(void **state)
{
	CUdeviceptr p;
	unsigned int managed = 0, type = 0;
	void *host = NULL;

	(void)state;
	assert_int_equal(cuMemAllocManaged(&p, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
	CHECK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
	assert_int_equal(managed, 1);
	CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
	assert_int_equal(type, CU_MEMORYTYPE_DEVICE);
	CHECK(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p + 8));
	assert_ptr_equal(host, (void *)(uintptr_t)(p + 8));
	CHECK(cuMemFree(p));
	assert_int_equal(cuMemAllocManaged(&p, 4096, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemAllocManaged(&p, 4096, 7), CUDA_ERROR_INVALID_VALUE);
}

static void test_host_pinned(void **state)
{
	void *h = NULL, *h2 = NULL, *m;
	unsigned int flags = 99, type = 0;
	CUdeviceptr d = 0;
	size_t f0 = free_now();

	(void)state;
	assert_int_equal(cuMemAllocHost(&h, 10000), CUDA_SUCCESS);
	assert_non_null(h);
	memset(h, 1, 10000);
	assert_int_equal(free_now(), f0); /* host memory: the device's free memory is unchanged */
	CHECK(cuMemHostGetFlags(&flags, h));
	assert_int_equal(flags, 0);
	CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)h));
	assert_int_equal(type, CU_MEMORYTYPE_HOST);
	CHECK(cuMemHostGetDevicePointer(&d, (char *)h + 100, 0));
	assert_int_equal(d, (CUdeviceptr)(uintptr_t)h + 100);
	assert_int_equal(cuMemHostGetDevicePointer(&d, h, 1), CUDA_ERROR_INVALID_VALUE);
	/* pinned memory is freed with cuMemFreeHost only */
	assert_int_equal(cuMemFree((CUdeviceptr)(uintptr_t)h), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemFreeHost(h), CUDA_SUCCESS);
	assert_int_equal(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);

	assert_int_equal(cuMemHostAlloc(&h2, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
			 CUDA_SUCCESS);
	CHECK(cuMemHostGetFlags(&flags, h2));
	assert_int_equal(flags, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
	CHECK(cuMemFreeHost(h2));
	assert_int_equal(cuMemHostAlloc(&h2, 64, 0x80), CUDA_ERROR_INVALID_VALUE);

	m = malloc(64);
	assert_int_equal(cuMemFreeHost(m), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemHostGetFlags(&flags, m), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemHostGetDevicePointer(&d, m, 0), CUDA_ERROR_INVALID_VALUE);
	free(m);
}

static void test_host_register(void **state)
{
	char *buf = malloc(8192);
	unsigned int type = 0, flags = 0;
	CUdeviceptr d;

	(void)state;
	assert_int_equal(cuMemHostRegister(buf, 8192, CU_MEMHOSTREGISTER_PORTABLE), CUDA_SUCCESS);
	assert_int_equal(cuMemHostRegister(buf + 100, 10, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
	CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				    (CUdeviceptr)(uintptr_t)(buf + 50)));
	assert_int_equal(type, CU_MEMORYTYPE_HOST);
	CHECK(cuMemHostGetFlags(&flags, buf));
	assert_int_equal(flags, CU_MEMHOSTREGISTER_PORTABLE);
	CHECK(cuMemHostGetDevicePointer(&d, buf, 0));
	assert_int_equal(d, (CUdeviceptr)(uintptr_t)buf);
	assert_int_equal(cuMemHostUnregister(buf + 1), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	assert_int_equal(cuMemHostUnregister(buf), CUDA_SUCCESS);
	assert_int_equal(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
	assert_int_equal(cuMemHostRegister(buf, 0, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemHostRegister(NULL, 8, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemHostRegister(buf, 8, 0x100), CUDA_ERROR_INVALID_VALUE);
	free(buf);
}

static void test_pointer_attributes(void **state)
{
	CUdeviceptr p, q, d = 0, start = 0;
	CUcontext c = NULL;
	unsigned int type = 0, mapped = 9;
	unsigned long long id1 = 0, id2 = 0, id3 = 0;
	void *host = (void *)1;
	size_t size = 0;
	int ordinal = -1, local = 0;
	CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_CONTEXT,
					CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_HOST_POINTER,
					CU_POINTER_ATTRIBUTE_MAPPED, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL };
	void *data[] = { &type, &c, &size, &host, &mapped, &ordinal };

	(void)state;
	CHECK(cuMemAlloc(&p, 3000));
	CHECK(cuMemAlloc(&q, 100));
	CHECK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, p + 10));
	assert_ptr_equal(c, ctx);
	CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
	assert_int_equal(type, CU_MEMORYTYPE_DEVICE);
	CHECK(cuPointerGetAttribute(&d, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p + 10));
	assert_int_equal(d, p + 10);
	assert_int_equal(cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p),
			 CUDA_ERROR_INVALID_VALUE);
	CHECK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + 2999));
	assert_int_equal(start, p);
	CHECK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p + 2999));
	assert_int_equal(size, 3000);
	CHECK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
	assert_int_equal(ordinal, 0);
	CHECK(cuPointerGetAttribute(&id1, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
	CHECK(cuPointerGetAttribute(&id2, CU_POINTER_ATTRIBUTE_BUFFER_ID, q));
	assert_int_not_equal(id1, id2);
	/* buffer ids are never reused, even when the address is */
	CHECK(cuMemFree(p));
	CHECK(cuMemAlloc(&p, 3000));
	CHECK(cuPointerGetAttribute(&id3, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
	assert_int_not_equal(id3, id1);
	assert_int_not_equal(id3, id2);

	/* unknown memory: cuPointerGetAttribute fails, cuPointerGetAttributes gives defaults */
	assert_int_equal(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					       (CUdeviceptr)(uintptr_t)&local),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuPointerGetAttributes(6, attrs, data, (CUdeviceptr)(uintptr_t)&local),
			 CUDA_SUCCESS);
	assert_int_equal(type, 0);
	assert_null(c);
	assert_int_equal(size, 0);
	assert_null(host);
	assert_int_equal(mapped, 0);
	assert_int_equal(ordinal, -2);
	/* and for a device pointer */
	assert_int_equal(cuPointerGetAttributes(6, attrs, data, q), CUDA_SUCCESS);
	assert_int_equal(type, CU_MEMORYTYPE_DEVICE);
	assert_ptr_equal(c, ctx);
	assert_int_equal(size, 100);
	assert_null(host);
	assert_int_equal(mapped, 1);
	assert_int_equal(ordinal, 0);
	CHECK(cuMemFree(p));
	CHECK(cuMemFree(q));
}

static void test_async_free_is_ordered(void **state)
{
	const size_t n = 1 << 20;
	CUstream s;
	CUdeviceptr p;
	unsigned int *h, attr_type;

	(void)state;
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAllocHost((void **)&h, n));
	memset(h, 0, n);
	for (int round = 0; round < 20; round++) {
		assert_int_equal(cuMemAllocAsync(&p, n, s), CUDA_SUCCESS);
		CHECK(cuMemsetD32Async(p, 0xc0ffee00u + (unsigned int)round, n / 4, s));
		CHECK(cuMemcpyDtoHAsync(h, p, n, s));
		assert_int_equal(cuMemFreeAsync(p, s), CUDA_SUCCESS);
		/* a second free of the same allocation, stream-ordered or not, is an error */
		assert_int_equal(cuMemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE);
		CHECK(cuStreamSynchronize(s));
		/* the copy ran before the free released (and zeroed) the pages */
		assert_int_equal(h[n / 8], 0xc0ffee00u + (unsigned int)round);
		assert_int_equal(cuPointerGetAttribute(&attr_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p),
				 CUDA_ERROR_INVALID_VALUE);
	}
	assert_int_equal(cuMemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemFreeHost(h));
	CHECK(cuStreamDestroy(s));
}

static void test_free_drains_pending_work(void **state)
{
	const size_t n = 1 << 16;
	CUstream s;
	CUdeviceptr p;
	unsigned char *h;

	(void)state;
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAllocHost((void **)&h, n));
	memset(h, 0, n);
	CHECK(cuMemAlloc(&p, n));
	CHECK(cuMemsetD8Async(p, 0x77, n, s));
	CHECK(cuMemcpyDtoHAsync(h, p, n, s)); /* pinned: queued, not run */
	assert_int_equal(h[100], 0);
	/* cuMemFree synchronizes: the queued work runs before the memory goes */
	CHECK(cuMemFree(p));
	assert_int_equal(h[100], 0x77);
	assert_int_equal(h[n - 1], 0x77);
	CHECK(cuMemFreeHost(h));
	CHECK(cuStreamDestroy(s));
}

static void test_async_alloc_ptsz(void **state)
{
	CUdeviceptr p;
	size_t f0 = free_now();

	(void)state;
	assert_int_equal(cuMemAllocAsync_ptsz(&p, 512, NULL), CUDA_SUCCESS);
	assert_int_equal(f0 - free_now(), 512);
	assert_int_equal(cuMemFreeAsync_ptsz(p, NULL), CUDA_SUCCESS);
	CHECK(cuCtxSynchronize());
	assert_int_equal(free_now(), f0);
	/* cuMemFree of an allocation whose async free is queued: it is already being freed */
	CHECK(cuMemAllocAsync(&p, 512, NULL));
	CHECK(cuMemFreeAsync(p, NULL));
	assert_int_equal(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(free_now(), f0);
}

static void test_pools(void **state)
{
	CUmemoryPool def = NULL, cur = NULL, pool = NULL, attr_pool = NULL;
	CUmemPoolProps props;
	cuuint64_t v = 1;
	int iv = 0;
	CUdeviceptr p, q;
	CUstream s;

	(void)state;
	CHECK(cuStreamCreate(&s, 0));
	assert_int_equal(cuDeviceGetDefaultMemPool(&def, 0), CUDA_SUCCESS);
	assert_non_null(def);
	assert_int_equal(cuDeviceGetDefaultMemPool(&def, 5), CUDA_ERROR_INVALID_DEVICE);
	CHECK(cuDeviceGetMemPool(&cur, 0));
	assert_ptr_equal(cur, def);
	CHECK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v));
	assert_int_equal(v, 0);
	v = 1 << 20;
	CHECK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v));
	v = 0;
	CHECK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v));
	assert_int_equal(v, 1 << 20);
	CHECK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &iv));
	assert_int_equal(iv, 1);

	/* earlier tests used the default pool: reset its high watermark to what is in use */
	v = 0;
	CHECK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
	CHECK(cuMemAllocAsync(&p, 4000, s));
	CHECK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
	assert_int_equal(v, 4000);
	CHECK(cuPointerGetAttribute(&attr_pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
	assert_ptr_equal(attr_pool, def);
	CHECK(cuMemFreeAsync(p, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
	assert_int_equal(v, 0);
	CHECK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
	assert_int_equal(v, 4000);
	v = 5;
	assert_int_equal(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v),
			 CUDA_ERROR_INVALID_VALUE);
	v = 0;
	CHECK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
	v = 9;
	CHECK(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
	assert_int_equal(v, 0);
	assert_int_equal(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemPoolTrimTo(def, 0), CUDA_SUCCESS);
	assert_int_equal(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);

	memset(&props, 0, sizeof(props));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	assert_int_equal(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
	CHECK(cuMemAllocFromPoolAsync(&q, 100, pool, s));
	CHECK(cuPointerGetAttribute(&attr_pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, q));
	assert_ptr_equal(attr_pool, pool);
	CHECK(cuDeviceSetMemPool(0, pool));
	CHECK(cuMemAllocAsync(&p, 100, s));
	CHECK(cuPointerGetAttribute(&attr_pool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
	assert_ptr_equal(attr_pool, pool);
	CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
	assert_int_equal(v, 200);
	/* destroyed with live allocations: they stay usable until freed */
	assert_int_equal(cuMemPoolDestroy(pool), CUDA_SUCCESS);
	assert_int_equal(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v),
			 CUDA_ERROR_INVALID_VALUE);
	CHECK(cuDeviceGetMemPool(&cur, 0));
	assert_ptr_equal(cur, def);
	CHECK(cuMemsetD8(q, 1, 100));
	CHECK(cuMemFreeAsync(q, s));
	CHECK(cuMemFree(p));
	CHECK(cuStreamSynchronize(s));
	props.location.id = 3;
	assert_int_equal(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_DEVICE);
	props.location.id = 0;
	props.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
	assert_int_equal(cuMemPoolCreate(&pool, &props), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuStreamDestroy(s));
}

static void *no_context_thread(void *arg)
{
	CUdeviceptr p;

	*(CUresult *)arg = cuMemAlloc(&p, 16);
	return NULL;
}

static void test_needs_context(void **state)
{
	pthread_t t;
	CUresult rc = CUDA_SUCCESS;

	(void)state;
	assert_int_equal(pthread_create(&t, NULL, no_context_thread, &rc), 0);
	pthread_join(t, NULL);
	assert_int_equal(rc, CUDA_ERROR_INVALID_CONTEXT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_free_reuse),
		cmocka_unit_test(test_freed_pages_read_zero),
		cmocka_unit_test(test_many_allocations),
		cmocka_unit_test(test_address_range),
		cmocka_unit_test(test_get_info),
		cmocka_unit_test(test_alloc_pitch),
		cmocka_unit_test(test_managed),
		cmocka_unit_test(test_host_pinned),
		cmocka_unit_test(test_host_register),
		cmocka_unit_test(test_pointer_attributes),
		cmocka_unit_test(test_async_free_is_ordered),
		cmocka_unit_test(test_free_drains_pending_work),
		cmocka_unit_test(test_async_alloc_ptsz),
		cmocka_unit_test(test_pools),
		cmocka_unit_test(test_needs_context),
	};

	ctx = tl_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
