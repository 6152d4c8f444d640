/* sim_vmm.c - unit tests of the software device's virtual memory management: granularity,
 * reservations, physical allocations, mappings (one allocation seen at two addresses), access,
 * what the rest of the device knows of mapped memory (copies across mappings, memsets,
 * pointer attributes, address ranges, cuMemFree refusing it), retained handles, the lifetime
 * of physical memory, that an unmap runs pending work first, a range striped over two
 * devices (vectorAddMMAP's layout), and sharing through a POSIX file descriptor. tests layer; runs against
 * the software device's libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

#define MIB (1ull << 20)

static size_t free_now(void)
{
	size_t free_b = 0, total = 0;

	CHECK(cuMemGetInfo(&free_b, &total));
	return free_b;
}

static CUmemAllocationProp device_prop(int dev)
{
	CUmemAllocationProp p;

	memset(&p, 0, sizeof(p));
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = dev;
	return p;
}

static CUmemAccessDesc rw_on(int dev)
{
	CUmemAccessDesc d;

	memset(&d, 0, sizeof(d));
	d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	d.location.id = dev;
	d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return d;
}

static void test_granularity(void **state)
{
	CUmemAllocationProp p = device_prop(0);
	size_t g = 0;

	(void)state;
	CHECK(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	assert_int_equal(g, 2 * MIB);
	CHECK(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	assert_int_equal(g, 2 * MIB);
	assert_int_equal(cuMemGetAllocationGranularity(NULL, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemGetAllocationGranularity(&g, NULL, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemGetAllocationGranularity(&g, &p, (CUmemAllocationGranularity_flags)7),
			 CUDA_ERROR_INVALID_VALUE);
	p.type = CU_MEM_ALLOCATION_TYPE_INVALID;
	assert_int_equal(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
			 CUDA_ERROR_INVALID_VALUE);
}

static void test_create_release(void **state)
{
	CUmemAllocationProp p = device_prop(0), q;
	CUmemGenericAllocationHandle h;
	size_t f0 = free_now();

	(void)state;
	CHECK(cuMemCreate(&h, 4 * MIB, &p, 0));
	assert_int_equal(f0 - free_now(), 4 * MIB);
	CHECK(cuMemGetAllocationPropertiesFromHandle(&q, h));
	assert_int_equal(q.type, CU_MEM_ALLOCATION_TYPE_PINNED);
	assert_int_equal(q.location.id, 0);
	CHECK(cuMemRelease(h));
	assert_int_equal(free_now(), f0);
	assert_int_equal(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemGetAllocationPropertiesFromHandle(&q, h), CUDA_ERROR_INVALID_VALUE);

	assert_int_equal(cuMemCreate(&h, MIB, &p, 0), CUDA_ERROR_INVALID_VALUE); /* not a multiple */
	assert_int_equal(cuMemCreate(&h, 0, &p, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemCreate(&h, 2 * MIB, &p, 1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemCreate(NULL, 2 * MIB, &p, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemCreate(&h, (size_t)200 << 30, &p, 0), CUDA_ERROR_OUT_OF_MEMORY);
	p.location.id = 7;
	assert_int_equal(cuMemCreate(&h, 2 * MIB, &p, 0), CUDA_ERROR_INVALID_DEVICE);
	p = device_prop(0);
	p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_FABRIC;
	assert_int_equal(cuMemCreate(&h, 2 * MIB, &p, 0), CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(free_now(), f0);
}

static void test_reserve_free(void **state)
{
	CUdeviceptr a = 0, b = 0;

	(void)state;
	CHECK(cuMemAddressReserve(&a, 64 * MIB, 0, 0, 0));
	assert_int_equal(a % (2 * MIB), 0);
	CHECK(cuMemAddressReserve(&b, 2 * MIB, 64 * MIB, 0, 0));
	assert_int_equal(b % (64 * MIB), 0);
	assert_true(b >= a + 64 * MIB || b + 2 * MIB <= a);
	/* nothing is mapped: not device memory yet */
	assert_int_equal(cuMemsetD8(a, 1, 16), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemAddressFree(a, 32 * MIB), CUDA_ERROR_INVALID_VALUE); /* size must match */
	CHECK(cuMemAddressFree(a, 64 * MIB));
	assert_int_equal(cuMemAddressFree(a, 64 * MIB), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemAddressFree(b, 2 * MIB));
	/* two reservations of 9/8 of the device's memory each, as PyTorch's expandable segments
	 * make one per stream */
	CHECK(cuMemAddressReserve(&a, (size_t)170 << 30, 0, 0, 0));
	CHECK(cuMemAddressReserve(&b, (size_t)170 << 30, 0, 0, 0));
	CHECK(cuMemAddressFree(a, (size_t)170 << 30));
	CHECK(cuMemAddressFree(b, (size_t)170 << 30));
	assert_int_equal(cuMemAddressReserve(&a, 100, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemAddressReserve(&a, 2 * MIB, 3 * MIB, 0, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemAddressReserve(&a, 2 * MIB, 0, 0, 1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemAddressReserve(NULL, 2 * MIB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
	/* an ordinary allocation still works after the range was handed back */
	CHECK(cuMemAlloc(&a, 4096));
	memset((void *)(uintptr_t)a, 1, 4096);
	CHECK(cuMemFree(a));
}

static void test_map_two_views(void **state)
{
	CUmemAllocationProp p = device_prop(0);
	CUmemGenericAllocationHandle h, h2;
	CUmemAccessDesc d = rw_on(0);
	CUmemLocation loc = d.location;
	CUdeviceptr va, base = 0, dev = 0;
	unsigned long long flags = 99;
	unsigned char in[16], out[16];
	size_t size = 0, f0 = free_now();
	CUcontext c = NULL;
	unsigned int mt = 0;

	(void)state;
	CHECK(cuMemAddressReserve(&va, 16 * MIB, 0, 0, 0));
	CHECK(cuMemCreate(&h, 4 * MIB, &p, 0));
	/* the same 4 MiB at va and at va + 4 MiB */
	CHECK(cuMemMap(va, 4 * MIB, 0, h, 0));
	CHECK(cuMemMap(va + 4 * MIB, 4 * MIB, 0, h, 0));
	assert_int_equal(cuMemMap(va + 2 * MIB, 2 * MIB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* mapped */
	assert_int_equal(cuMemMap(va + 8 * MIB, 4 * MIB, 2 * MIB, h, 0), CUDA_ERROR_INVALID_VALUE); /* past end */
	assert_int_equal(cuMemMap(va + 14 * MIB, 4 * MIB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* past range */
	assert_int_equal(cuMemMap(va + 8 * MIB + 4096, 2 * MIB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemMap(va + 8 * MIB, 2 * MIB, 0, h, 1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemMap(va + 8 * MIB, 2 * MIB, 0, (CUmemGenericAllocationHandle)&p, 0),
			 CUDA_ERROR_INVALID_VALUE);

	/* mappings start without access */
	CHECK(cuMemGetAccess(&flags, &loc, va));
	assert_int_equal(flags, CU_MEM_ACCESS_FLAGS_PROT_NONE);
	assert_int_equal(cuMemsetD8(va, 1, 16), CUDA_ERROR_INVALID_VALUE);
	/* one call over both mappings; a range that is not whole mappings is refused */
	assert_int_equal(cuMemSetAccess(va, 6 * MIB, &d, 1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemSetAccess(va, 8 * MIB, &d, 0), CUDA_ERROR_INVALID_VALUE);
	d.location.id = 7;
	assert_int_equal(cuMemSetAccess(va, 8 * MIB, &d, 1), CUDA_ERROR_INVALID_DEVICE);
	d = rw_on(0);
	CHECK(cuMemSetAccess(va, 8 * MIB, &d, 1));
	CHECK(cuMemGetAccess(&flags, &loc, va + 5 * MIB));
	assert_int_equal(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
	assert_int_equal(cuMemGetAccess(&flags, &loc, va + 9 * MIB), CUDA_ERROR_INVALID_VALUE);

	/* written through one view, read through the other */
	CHECK(cuMemsetD32(va, 0x01020304u, MIB));
	CHECK(cuMemcpyDtoH(out, va + 4 * MIB, sizeof(out)));
	for (int i = 0; i < 16; i += 4)
		assert_int_equal(out[i], 0x04);
	/* a copy crossing from the first mapping into the second: the tail of the allocation
	 * (through view 1) and its head (through view 2) */
	for (int i = 0; i < 16; i++)
		in[i] = (unsigned char)(0xa0 + i);
	CHECK(cuMemcpyHtoD(va + 4 * MIB - 8, in, sizeof(in)));
	CHECK(cuMemcpyDtoH(out, va, 8));
	assert_memory_equal(out, in + 8, 8);
	assert_int_equal(((unsigned char *)(uintptr_t)(va + 8 * MIB - 1))[0], 0xa7); /* host view */

	/* what the rest of the device knows of it */
	CHECK(cuMemGetAddressRange(&base, &size, va + 5 * MIB));
	assert_int_equal(base, va);
	assert_int_equal(size, 8 * MIB);
	CHECK(cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, va + 100));
	assert_int_equal(mt, CU_MEMORYTYPE_DEVICE);
	CHECK(cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, va + 100));
	assert_int_equal(dev, va + 100);
	CHECK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, va));
	assert_non_null(c);
	assert_int_equal(cuMemFree(va), CUDA_ERROR_INVALID_VALUE);

	/* retained handles are the mapped handle, at any address inside a mapping */
	CHECK(cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)(va + 4 * MIB + 123)));
	assert_true(h2 == h);
	CHECK(cuMemRelease(h2));
	assert_int_equal(cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)(va + 9 * MIB)),
			 CUDA_ERROR_INVALID_VALUE);

	/* unmapping: whole mappings only; the other view still works */
	assert_int_equal(cuMemUnmap(va, 2 * MIB), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemUnmap(va, 4 * MIB));
	assert_int_equal(cuMemsetD8(va, 1, 16), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemGetAddressRange(&base, &size, va), CUDA_ERROR_NOT_FOUND);
	CHECK(cuMemGetAddressRange(&base, &size, va + 4 * MIB));
	assert_int_equal(base, va + 4 * MIB);
	assert_int_equal(size, 4 * MIB);
	assert_int_equal(cuMemAddressFree(va, 16 * MIB), CUDA_ERROR_INVALID_VALUE); /* still mapped */

	/* the physical memory lives while mapped, even with no handle left */
	CHECK(cuMemRelease(h));
	assert_int_equal(f0 - free_now(), 4 * MIB);
	CHECK(cuMemcpyDtoH(out, va + 4 * MIB, 8));
	assert_memory_equal(out, in + 8, 8);
	CHECK(cuMemUnmap(va + 4 * MIB, 4 * MIB));
	assert_int_equal(free_now(), f0);
	CHECK(cuMemAddressFree(va, 16 * MIB));
}

static void test_remap_reads_same_bytes(void **state)
{
	CUmemAllocationProp p = device_prop(0);
	CUmemGenericAllocationHandle h;
	CUmemAccessDesc d = rw_on(0);
	CUdeviceptr va;
	uint32_t v = 0;

	(void)state;
	CHECK(cuMemAddressReserve(&va, 8 * MIB, 0, 0, 0));
	CHECK(cuMemCreate(&h, 2 * MIB, &p, 0));
	CHECK(cuMemMap(va, 2 * MIB, 0, h, 0));
	CHECK(cuMemSetAccess(va, 2 * MIB, &d, 1));
	CHECK(cuMemsetD32(va, 0xdeadbeefu, 1024));
	CHECK(cuMemUnmap(va, 2 * MIB));
	/* mapped again elsewhere: the bytes moved with the allocation; access must be set again */
	CHECK(cuMemMap(va + 6 * MIB, 2 * MIB, 0, h, 0));
	assert_int_equal(cuMemcpyDtoH(&v, va + 6 * MIB, 4), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemSetAccess(va + 6 * MIB, 2 * MIB, &d, 1));
	CHECK(cuMemcpyDtoH(&v, va + 6 * MIB + 4 * 1023, 4));
	assert_int_equal(v, 0xdeadbeefu);
	CHECK(cuMemUnmap(va + 6 * MIB, 2 * MIB));
	CHECK(cuMemRelease(h));
	CHECK(cuMemAddressFree(va, 8 * MIB));
}

static void test_unmap_runs_pending_work(void **state)
{
	CUmemAllocationProp p = device_prop(0);
	CUmemGenericAllocationHandle h;
	CUmemAccessDesc d = rw_on(0);
	CUdeviceptr va;
	CUstream s;
	uint32_t v = 0;

	(void)state;
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAddressReserve(&va, 4 * MIB, 0, 0, 0));
	CHECK(cuMemCreate(&h, 2 * MIB, &p, 0));
	CHECK(cuMemMap(va, 2 * MIB, 0, h, 0));
	CHECK(cuMemMap(va + 2 * MIB, 2 * MIB, 0, h, 0));
	CHECK(cuMemSetAccess(va, 4 * MIB, &d, 1));
	CHECK(cuMemsetD32(va, 0, 1024));
	/* queued, not run: the unmap must run it before the addresses go */
	CHECK(cuMemsetD32Async(va, 0x77777777u, 1024, s));
	CHECK(cuMemUnmap(va, 2 * MIB));
	memcpy(&v, (const void *)(uintptr_t)(va + 2 * MIB + 400), 4);
	assert_int_equal(v, 0x77777777u);
	CHECK(cuMemUnmap(va + 2 * MIB, 2 * MIB));
	CHECK(cuMemRelease(h));
	CHECK(cuMemAddressFree(va, 4 * MIB));
	CHECK(cuStreamDestroy(s));
}

/* vectorAddMMAP's layout: one range striped over two devices' memory, handles released at
 * once, access granted to both devices over the whole range in one call. */
static void test_striped_two_devices(void **state)
{
	CUmemAllocationProp p0 = device_prop(0), p1 = device_prop(1);
	CUmemAccessDesc d[2] = { rw_on(0), rw_on(1) };
	CUmemGenericAllocationHandle h0, h1;
	CUmemLocation loc = d[1].location;
	unsigned long long flags = 0;
	size_t f0 = free_now();
	uint32_t v[2];
	CUdeviceptr va;
	int n = 0;

	(void)state;
	CHECK(cuDeviceGetCount(&n));
	assert_int_equal(n, 2);
	CHECK(cuMemAddressReserve(&va, 4 * MIB, 0, 0, 0));
	CHECK(cuMemCreate(&h0, 2 * MIB, &p0, 0));
	CHECK(cuMemCreate(&h1, 2 * MIB, &p1, 0));
	CHECK(cuMemMap(va, 2 * MIB, 0, h0, 0));
	CHECK(cuMemMap(va + 2 * MIB, 2 * MIB, 0, h1, 0));
	CHECK(cuMemRelease(h0));
	CHECK(cuMemRelease(h1));
	CHECK(cuMemSetAccess(va, 4 * MIB, d, 2));
	CHECK(cuMemGetAccess(&flags, &loc, va + 3 * MIB));
	assert_int_equal(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
	/* one memset over both stripes */
	CHECK(cuMemsetD32(va, 0x5a5a5a5au, MIB));
	CHECK(cuMemcpyDtoH(&v[0], va + 2 * MIB - 4, 4));
	CHECK(cuMemcpyDtoH(&v[1], va + 4 * MIB - 4, 4));
	assert_int_equal(v[0], 0x5a5a5a5au);
	assert_int_equal(v[1], 0x5a5a5a5au);
	CHECK(cuMemUnmap(va, 4 * MIB)); /* both mappings at once */
	assert_int_equal(free_now(), f0);
	CHECK(cuMemAddressFree(va, 4 * MIB));
}

/* Sharing through a POSIX file descriptor: the exported and the imported handle map the same
 * bytes, and only the exporter's allocation counts as used memory. */
static void test_share_fd(void **state)
{
	CUmemAllocationProp p = device_prop(0);
	CUmemGenericAllocationHandle h, h2, plain;
	CUmemAccessDesc d = rw_on(0);
	size_t f0 = free_now();
	CUdeviceptr va;
	uint32_t v = 0;
	int fd = -1, devnull;

	(void)state;
	p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	CHECK(cuMemCreate(&h, 2 * MIB, &p, 0));
	CHECK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
	assert_true(fd >= 0);
	CHECK(cuMemImportFromShareableHandle(&h2, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
	close(fd);
	assert_true(h2 != h);
	assert_int_equal(f0 - free_now(), 2 * MIB);
	CHECK(cuMemAddressReserve(&va, 4 * MIB, 0, 0, 0));
	CHECK(cuMemMap(va, 2 * MIB, 0, h, 0));
	CHECK(cuMemMap(va + 2 * MIB, 2 * MIB, 0, h2, 0));
	CHECK(cuMemRelease(h));
	CHECK(cuMemRelease(h2));
	CHECK(cuMemSetAccess(va, 4 * MIB, &d, 1));
	CHECK(cuMemsetD32(va + 64, 0x600dcafeu, 1));
	CHECK(cuMemcpyDtoH(&v, va + 2 * MIB + 64, 4));
	assert_int_equal(v, 0x600dcafeu);
	CHECK(cuMemUnmap(va, 4 * MIB));
	CHECK(cuMemAddressFree(va, 4 * MIB));
	assert_int_equal(free_now(), f0);

	/* an allocation not created exportable, another handle type, a file of no chunk */
	p.requestedHandleTypes = 0;
	CHECK(cuMemCreate(&plain, 2 * MIB, &p, 0));
	assert_int_equal(cuMemExportToShareableHandle(&fd, plain, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemExportToShareableHandle(&fd, plain, CU_MEM_HANDLE_TYPE_FABRIC, 0),
			 CUDA_ERROR_NOT_SUPPORTED);
	CHECK(cuMemRelease(plain));
	devnull = open("/dev/null", O_RDONLY);
	assert_int_equal(cuMemImportFromShareableHandle(&h2, (void *)(intptr_t)devnull,
							CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
			 CUDA_ERROR_INVALID_VALUE);
	close(devnull);
	assert_int_equal(free_now(), f0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_granularity),
		cmocka_unit_test(test_create_release),
		cmocka_unit_test(test_reserve_free),
		cmocka_unit_test(test_map_two_views),
		cmocka_unit_test(test_remap_reads_same_bytes),
		cmocka_unit_test(test_unmap_runs_pending_work),
		cmocka_unit_test(test_striped_two_devices),
		cmocka_unit_test(test_share_fd),
	};

	setenv("SIMCUDA_DEVICES", "2", 1); /* before cuInit reads it */
	tl_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
