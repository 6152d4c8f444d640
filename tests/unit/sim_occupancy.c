/* sim_occupancy.c - unit tests of the software device's occupancy calculator: blocks per SM
 * from warps, registers, shared memory and the block limit, the block size that maximizes
 * occupancy (with and without the block-size-to-shared-memory callback) and the dynamic
 * shared memory available per block, with the errors the driver documents. tests layer;
 * runs against the software device's libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static CUfunction fn;
static int b2d_calls;                /* calls of the callback below */
static int b2d_sizes[64];            /* the block sizes it was asked about, in order */

/* 256 bytes of dynamic shared memory per thread: only small blocks fit under 48 KiB. */
static size_t b2d_256_per_thread(int block_size)
{
	if (b2d_calls < 64)
		b2d_sizes[b2d_calls] = block_size;
	b2d_calls++;
	return (size_t)block_size * 256;
}

static int active(int block, size_t dyn)
{
	int n = -1;

	CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, block, dyn));
	return n;
}

static void test_active_blocks(void **state)
{
	int n = -1;

	(void)state;
	assert_int_equal(active(256, 0), 8);    /* 8 warps of the SM's 64 */
	assert_int_equal(active(32, 0), 32);    /* the per-SM block limit */
	assert_int_equal(active(1024, 0), 2);
	assert_int_equal(active(100, 0), 16);   /* rounded up to 4 warps */
	assert_int_equal(active(1025, 0), 0);   /* cannot launch */
	/* 48 KiB + the 1 KiB reserve per block: 4 of them fit in 228 KiB */
	assert_int_equal(active(256, 49152), 4);
	/* beyond the function's dynamic shared memory limit: not launchable */
	assert_int_equal(active(256, 49153), 0);
	CHECK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 100000));
	assert_int_equal(active(256, 100000), 2);
	CHECK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 49152));

	CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, fn, 256, 0,
								    CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE));
	assert_int_equal(n, 8);
	assert_int_equal(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, fn, 256, 0, 2),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn, 0, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuOccupancyMaxActiveBlocksPerMultiprocessor(NULL, fn, 32, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, NULL, 32, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, (CUfunction)&n, 32, 0),
			 CUDA_ERROR_INVALID_HANDLE);
}

static void test_potential_block_size(void **state)
{
	int grid = -1, block = -1;

	(void)state;
	CHECK(cuOccupancyMaxPotentialBlockSize(&grid, &block, fn, NULL, 0, 0));
	assert_int_equal(block, 1024);          /* 2 blocks fill the SM: the largest wins */
	assert_int_equal(grid, 2 * 132);
	/* a limit that is not a whole warp: 100 (1600 threads), 96 (2016), 64 (2048, full) */
	CHECK(cuOccupancyMaxPotentialBlockSize(&grid, &block, fn, NULL, 0, 100));
	assert_int_equal(block, 64);
	assert_int_equal(grid, 32 * 132);
	/* the constant dynamic size counts for every block size: 4 blocks by shared memory, 2 of
	 * 1024 threads fill the SM; with 150000 bytes only one block fits */
	CHECK(cuOccupancyMaxPotentialBlockSizeWithFlags(&grid, &block, fn, NULL, 49152, 0, 0));
	assert_int_equal(block, 1024);
	assert_int_equal(grid, 2 * 132);
	CHECK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200000));
	CHECK(cuOccupancyMaxPotentialBlockSizeWithFlags(&grid, &block, fn, NULL, 150000, 0, 0));
	assert_int_equal(block, 1024);
	assert_int_equal(grid, 132);
	CHECK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 49152));
	assert_int_equal(cuOccupancyMaxPotentialBlockSizeWithFlags(&grid, &block, fn, NULL, 0, 0, 4),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuOccupancyMaxPotentialBlockSize(NULL, &block, fn, NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuOccupancyMaxPotentialBlockSize(&grid, NULL, fn, NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuOccupancyMaxPotentialBlockSize(&grid, &block, NULL, NULL, 0, 0), CUDA_ERROR_INVALID_VALUE);
}

static void test_potential_callback(void **state)
{
	int grid = -1, block = -1;

	(void)state;
	b2d_calls = 0;
	/* The callback overrides dynamicSMemSize. Threads per SM: 192 -> 4 blocks (768),
	 * 160 -> 5 (800), 128 -> 6 (768), 96 -> 9 (864), 64 -> 13 (832), 32 -> 25 (800). */
	CHECK(cuOccupancyMaxPotentialBlockSize(&grid, &block, fn, b2d_256_per_thread, 1 << 30, 0));
	assert_int_equal(block, 96);
	assert_int_equal(grid, 9 * 132);
	/* asked about every warp multiple, largest first, since the SM is never full */
	assert_int_equal(b2d_calls, 32);
	assert_int_equal(b2d_sizes[0], 1024);
	assert_int_equal(b2d_sizes[31], 32);
	b2d_calls = 0;
	CHECK(cuOccupancyMaxPotentialBlockSize(&grid, &block, fn, b2d_256_per_thread, 0, 50));
	assert_int_equal(b2d_sizes[0], 50);     /* capped at the limit */
	assert_int_equal(b2d_calls, 2);
	/* 50 -> 16 blocks (800 threads), 32 -> 25 (800): on a tie the larger block wins */
	assert_int_equal(block, 50);
	assert_int_equal(grid, 16 * 132);
}

static void test_available_dynamic_smem(void **state)
{
	size_t avail = 0;

	(void)state;
	CHECK(cuOccupancyAvailableDynamicSMemPerBlock(&avail, fn, 2, 256));
	assert_int_equal(avail, 49152);         /* capped by the function's limit */
	CHECK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200000));
	CHECK(cuOccupancyAvailableDynamicSMemPerBlock(&avail, fn, 2, 256));
	assert_int_equal(avail, 233472 / 2 - 1024);
	CHECK(cuOccupancyAvailableDynamicSMemPerBlock(&avail, fn, 3, 256));
	assert_int_equal(avail, 77824 / 128 * 128 - 1024);
	CHECK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 49152));
	/* 9 blocks of 256 threads do not fit on an SM at all */
	assert_int_equal(cuOccupancyAvailableDynamicSMemPerBlock(&avail, fn, 9, 256), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuOccupancyAvailableDynamicSMemPerBlock(&avail, fn, 0, 256), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuOccupancyAvailableDynamicSMemPerBlock(NULL, fn, 1, 256), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuOccupancyAvailableDynamicSMemPerBlock(&avail, NULL, 1, 256), CUDA_ERROR_INVALID_VALUE);
}

/* Clusters are GPC-local (8 GPCs of 18, 18, 18, 18, 16, 16, 14, 14 SMs); 8 blocks is the portable
 * limit, 16 with the non-portable attribute. 1024-thread blocks: 2 per SM. */
static void test_clusters(void **state)
{
	CUlaunchAttribute attr = { .id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION };
	CUlaunchConfig cfg = { .gridDimX = 64, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1024, .blockDimY = 1,
			       .blockDimZ = 1, .attrs = &attr, .numAttrs = 1 };
	int n = -1;

	(void)state;
	attr.value.clusterDim.x = 2;
	attr.value.clusterDim.y = 1;
	attr.value.clusterDim.z = 1;
	CHECK(cuOccupancyMaxActiveClusters(&n, fn, &cfg));
	assert_int_equal(n, 132);
	attr.value.clusterDim.x = 8;
	CHECK(cuOccupancyMaxActiveClusters(&n, fn, &cfg));
	assert_int_equal(n, 4 * 4 + 2 * 4 + 2 * 3);
	attr.value.clusterDim.x = 16;
	assert_int_equal(cuOccupancyMaxActiveClusters(&n, fn, &cfg), CUDA_ERROR_INVALID_CLUSTER_SIZE);
	CHECK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
	CHECK(cuOccupancyMaxActiveClusters(&n, fn, &cfg));
	assert_int_equal(n, 4 * 2 + 2 * 2 + 2 * 1);
	CHECK(cuOccupancyMaxPotentialClusterSize(&n, fn, &cfg));
	assert_int_equal(n, 16);
	CHECK(cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 0));
	CHECK(cuOccupancyMaxPotentialClusterSize(&n, fn, &cfg));
	assert_int_equal(n, 8);
}

/* A context's default limits, as the driver documents them. */
static void test_ctx_limits(void **state)
{
	size_t v = 0;

	(void)state;
	CHECK(cuCtxGetLimit(&v, CU_LIMIT_PRINTF_FIFO_SIZE));
	assert_int_equal(v, 1 << 20);
	CHECK(cuCtxGetLimit(&v, CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT));
	assert_int_equal(v, 2048);
	CHECK(cuCtxGetLimit(&v, CU_LIMIT_SHMEM_SIZE));
	assert_int_equal(v, 227 * 1024);
	CHECK(cuCtxGetLimit(&v, CU_LIMIT_CIG_ENABLED));
	assert_int_equal(v, 0);
}

static void test_kernel_handle(void **state)
{
	CUlibrary lib;
	CUkernel k;
	char *ptx = tl_read_ptx("elementwise");
	int n = -1;

	(void)state;
	/* a CUkernel is accepted wherever a CUfunction is */
	CHECK(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryGetKernel(&k, lib, "fill"));
	CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, (CUfunction)k, 512, 0));
	assert_int_equal(n, 4);
	CHECK(cuLibraryUnload(lib));
	free(ptx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_active_blocks),
		cmocka_unit_test(test_potential_block_size),
		cmocka_unit_test(test_potential_callback),
		cmocka_unit_test(test_available_dynamic_smem),
		cmocka_unit_test(test_clusters),
		cmocka_unit_test(test_ctx_limits),
		cmocka_unit_test(test_kernel_handle),
	};

	tl_init();
	fn = tl_func(tl_load_module("elementwise"), "fill");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
