/* sim_memset.c - unit tests of the software device's memsets: each element width, 1-D and 2-D,
 * synchronous, Async and per-thread forms, stream ordering, and invalid arguments.
 * tests layer; runs against the software device's libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

/* Per-thread-stream entry points: cuda.h declares them only for per-thread builds. */
CUresult cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUresult cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N);
CUresult cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
			       size_t Width, size_t Height);
CUresult cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N,
			       CUstream hStream);
CUresult cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
				 size_t Width, size_t Height, CUstream hStream);

static unsigned char *bytes(CUdeviceptr d)
{
	return (unsigned char *)(uintptr_t)d;
}

static void test_1d_widths(void **state)
{
	CUdeviceptr d;
	uint16_t *h16;
	uint32_t *h32;

	(void)state;
	CHECK(cuMemAlloc(&d, 1024));
	CHECK(cuMemsetD8(d, 0, 1024));
	assert_int_equal(cuMemsetD8(d + 1, 0xa5, 100), CUDA_SUCCESS);
	assert_int_equal(bytes(d)[0], 0);
	assert_int_equal(bytes(d)[1], 0xa5);
	assert_int_equal(bytes(d)[100], 0xa5);
	assert_int_equal(bytes(d)[101], 0);

	CHECK(cuMemsetD8(d, 0, 1024));
	assert_int_equal(cuMemsetD16(d + 2, 0xbeef, 10), CUDA_SUCCESS);
	h16 = (uint16_t *)bytes(d);
	assert_int_equal(h16[0], 0);
	for (int i = 1; i <= 10; i++)
		assert_int_equal(h16[i], 0xbeef);
	assert_int_equal(h16[11], 0);

	CHECK(cuMemsetD8(d, 0, 1024));
	assert_int_equal(cuMemsetD32(d + 4, 0x12345678u, 255), CUDA_SUCCESS);
	h32 = (uint32_t *)bytes(d);
	assert_int_equal(h32[0], 0);
	for (int i = 1; i <= 255; i++)
		assert_int_equal(h32[i], 0x12345678u);
	CHECK(cuMemFree(d));
}

static void test_2d_widths(void **state)
{
	enum { P = 64, H = 5 };
	CUdeviceptr d;

	(void)state;
	CHECK(cuMemAlloc(&d, P * H));
	CHECK(cuMemsetD8(d, 0, P * H));
	assert_int_equal(cuMemsetD2D8(d + 3, P, 0x11, 10, H), CUDA_SUCCESS);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < P; x++)
			assert_int_equal(bytes(d)[y * P + x], x >= 3 && x < 13 ? 0x11 : 0);

	CHECK(cuMemsetD8(d, 0, P * H));
	assert_int_equal(cuMemsetD2D16(d, P, 0x2233, 7, H), CUDA_SUCCESS);
	for (int y = 0; y < H; y++) {
		uint16_t *row = (uint16_t *)(bytes(d) + y * P);

		for (int x = 0; x < P / 2; x++)
			assert_int_equal(row[x], x < 7 ? 0x2233 : 0);
	}

	CHECK(cuMemsetD8(d, 0, P * H));
	assert_int_equal(cuMemsetD2D32(d + 8, P, 0xcafef00du, 3, H - 1), CUDA_SUCCESS);
	for (int y = 0; y < H; y++) {
		uint32_t *row = (uint32_t *)(bytes(d) + y * P);

		for (int x = 0; x < P / 4; x++)
			assert_int_equal(row[x], y < H - 1 && x >= 2 && x < 5 ? 0xcafef00du : 0u);
	}
	CHECK(cuMemFree(d));
}

static void test_async_forms(void **state)
{
	enum { P = 128, H = 4 };
	CUdeviceptr d;
	CUstream s;
	uint32_t *h;

	(void)state;
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&d, P * H));
	CHECK(cuMemAllocHost((void **)&h, P * H));
	CHECK(cuMemsetD8(d, 0, P * H));
	CHECK(cuMemsetD8Async(d, 1, P * H, s));
	CHECK(cuMemsetD16Async(d, 0x0202, P * H / 2, s));
	CHECK(cuMemsetD32Async(d, 0x03030303u, P * H / 4, s));
	CHECK(cuMemsetD2D8Async(d, P, 4, 8, H, s));
	CHECK(cuMemsetD2D16Async(d + 8, P, 0x0505, 4, H, s));
	CHECK(cuMemsetD2D32Async(d + 16, P, 0x06060606u, 2, H, s));
	/* queued, not run: the device still holds zeros */
	assert_int_equal(bytes(d)[0], 0);
	CHECK(cuMemcpyDtoHAsync(h, d, P * H, s));
	CHECK(cuStreamSynchronize(s));
	for (int y = 0; y < H; y++)
		for (int x = 0; x < P; x++) {
			unsigned char want = x < 8 ? 4 : x < 16 ? 5 : x < 24 ? 6 : 3;

			assert_int_equal(((unsigned char *)h)[y * P + x], want);
		}
	CHECK(cuMemFreeHost(h));
	CHECK(cuMemFree(d));
	CHECK(cuStreamDestroy(s));
}

static void test_per_thread_forms(void **state)
{
	CUdeviceptr d;

	(void)state;
	CHECK(cuMemAlloc(&d, 256));
	assert_int_equal(cuMemsetD8_v2_ptds(d, 9, 256), CUDA_SUCCESS);
	assert_int_equal(bytes(d)[255], 9);
	assert_int_equal(cuMemsetD32_v2_ptds(d, 0x07070707u, 64), CUDA_SUCCESS);
	assert_int_equal(bytes(d)[255], 7);
	assert_int_equal(cuMemsetD2D16_v2_ptds(d, 64, 0x0808, 32, 4), CUDA_SUCCESS);
	assert_int_equal(bytes(d)[255], 8);
	assert_int_equal(cuMemsetD16Async_ptsz(d, 0x0a0a, 128, NULL), CUDA_SUCCESS);
	assert_int_equal(cuMemsetD2D32Async_ptsz(d, 64, 0x0b0b0b0bu, 8, 4, CU_STREAM_PER_THREAD),
			 CUDA_SUCCESS);
	CHECK(cuCtxSynchronize());
	assert_int_equal(bytes(d)[0], 0x0b);
	assert_int_equal(bytes(d)[32], 0x0a);
	CHECK(cuMemFree(d));
}

static void test_targets(void **state)
{
	void *pinned;
	CUdeviceptr m;

	(void)state;
	/* pinned host memory through its (unified) device address, and managed memory */
	CHECK(cuMemAllocHost(&pinned, 64));
	assert_int_equal(cuMemsetD8((CUdeviceptr)(uintptr_t)pinned, 0x3c, 64), CUDA_SUCCESS);
	assert_int_equal(((unsigned char *)pinned)[63], 0x3c);
	CHECK(cuMemFreeHost(pinned));
	CHECK(cuMemAllocManaged(&m, 64, CU_MEM_ATTACH_GLOBAL));
	assert_int_equal(cuMemsetD32(m, 0x01020304u, 16), CUDA_SUCCESS);
	assert_int_equal(((uint32_t *)(uintptr_t)m)[15], 0x01020304u);
	CHECK(cuMemFree(m));
}

static void test_invalid(void **state)
{
	CUdeviceptr d, gone;
	char *h = calloc(1, 64);

	(void)state;
	CHECK(cuMemAlloc(&d, 256));
	CHECK(cuMemAlloc(&gone, 256));
	CHECK(cuMemFree(gone));
	/* misaligned for the element size */
	assert_int_equal(cuMemsetD16(d + 1, 1, 4), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemsetD32(d + 2, 1, 4), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemsetD2D32Async(d + 6, 64, 1, 2, 2, NULL), CUDA_ERROR_INVALID_VALUE);
	/* past the allocation, freed memory, pageable host memory */
	assert_int_equal(cuMemsetD8(d, 1, 257), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemsetD32(d + 4, 1, 64), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemsetD8(gone, 1, 16), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemsetD8((CUdeviceptr)(uintptr_t)h, 1, 16), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemsetD2D8(d, 64, 1, 64, 5), CUDA_ERROR_INVALID_VALUE);
	/* pitch below the row width */
	assert_int_equal(cuMemsetD2D16(d, 16, 1, 10, 2), CUDA_ERROR_INVALID_VALUE);
	/* nothing to set */
	assert_int_equal(cuMemsetD8(d, 1, 0), CUDA_SUCCESS);
	assert_int_equal(cuMemsetD2D8(d, 64, 1, 0, 3), CUDA_SUCCESS);
	assert_int_equal(bytes(d)[0], 0);
	/* a bad stream handle */
	assert_int_equal(cuMemsetD8Async(d, 1, 4, (CUstream)h), CUDA_ERROR_INVALID_HANDLE);
	CHECK(cuMemFree(d));
	free(h);
}

static void test_ordering_with_copies(void **state)
{
	enum { N = 1024 };
	CUdeviceptr a, b;
	CUstream s;
	uint32_t *h;

	(void)state;
	CHECK(cuStreamCreate(&s, 0));
	CHECK(cuMemAlloc(&a, N * 4));
	CHECK(cuMemAlloc(&b, N * 4));
	CHECK(cuMemAllocHost((void **)&h, N * 4 * 3));
	for (uint32_t round = 0; round < 30; round++) {
		CHECK(cuMemsetD32Async(a, round, N, s));
		CHECK(cuMemcpyDtoDAsync(b, a, N * 4, s));
		CHECK(cuMemsetD32Async(a, 0xffffffffu, N, s));
		CHECK(cuMemcpyDtoHAsync(h, b, N * 4, s));
		CHECK(cuMemcpyDtoHAsync(h + N, a, N * 4, s));
		/* the legacy stream waits for s (a blocking stream) */
		CHECK(cuMemsetD32Async(b, round + 7, N, NULL));
		CHECK(cuMemcpyDtoHAsync(h + 2 * N, b, N * 4, NULL));
		CHECK(cuCtxSynchronize());
		assert_int_equal(h[N / 2], round);
		assert_int_equal(h[N + 3], 0xffffffffu);
		assert_int_equal(h[2 * N + N - 1], round + 7);
	}
	CHECK(cuMemFreeHost(h));
	CHECK(cuMemFree(a));
	CHECK(cuMemFree(b));
	CHECK(cuStreamDestroy(s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_1d_widths),
		cmocka_unit_test(test_2d_widths),
		cmocka_unit_test(test_async_forms),
		cmocka_unit_test(test_per_thread_forms),
		cmocka_unit_test(test_targets),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_ordering_with_copies),
	};

	tl_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
