/* sim_array.c - unit tests of the software device's CUDA arrays: creation and descriptors,
 * invalid descriptors and handles, 2-D and 3-D copies with an array on either side or both
 * (sub-boxes checked element by element, boxes outside the array refused), the linear copies
 * to, from and between arrays in every form, and destruction. tests layer; runs against libcuda.so.1. */
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
CUresult cuMemcpyHtoA_v2_ptds(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount);
CUresult cuMemcpyAtoH_v2_ptds(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUresult cuMemcpyHtoAAsync_v2_ptsz(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount,
				   CUstream hStream);
CUresult cuMemcpyAtoHAsync_v2_ptsz(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
				   CUstream hStream);
CUresult cuMemcpyDtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount);
CUresult cuMemcpyAtoD_v2_ptds(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount);
CUresult cuMemcpyAtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
			      size_t ByteCount);

static size_t free_now(void)
{
	size_t free_b = 0, total = 0;

	CHECK(cuMemGetInfo(&free_b, &total));
	return free_b;
}

static void test_create_describe(void **state)
{
	CUDA_ARRAY_DESCRIPTOR d = { .Width = 64, .Height = 32, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1 }, g;
	CUDA_ARRAY3D_DESCRIPTOR d3 = { .Width = 16, .Height = 8, .Depth = 4, .Format = CU_AD_FORMAT_UNSIGNED_INT16,
				       .NumChannels = 2 }, g3;
	CUarray a, b;
	size_t f0 = free_now();

	(void)state;
	CHECK(cuArrayCreate(&a, &d));
	assert_int_equal(f0 - free_now(), 64 * 32 * 4);
	CHECK(cuArrayGetDescriptor(&g, a));
	assert_int_equal(g.Width, 64);
	assert_int_equal(g.Height, 32);
	assert_int_equal(g.Format, CU_AD_FORMAT_FLOAT);
	assert_int_equal(g.NumChannels, 1);
	CHECK(cuArray3DGetDescriptor(&g3, a));
	assert_int_equal(g3.Depth, 0);
	CHECK(cuArray3DCreate(&b, &d3));
	CHECK(cuArray3DGetDescriptor(&g3, b));
	assert_memory_equal(&g3, &d3, sizeof(d3));
	CHECK(cuArrayDestroy(b));
	CHECK(cuArrayDestroy(a));
	assert_int_equal(free_now(), f0);
	assert_int_equal(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cuArrayGetDescriptor(&g, a), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cuArrayGetDescriptor(NULL, a), CUDA_ERROR_INVALID_VALUE);

	assert_int_equal(cuArrayCreate(&a, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuArrayCreate(NULL, &d), CUDA_ERROR_INVALID_VALUE);
	d.Width = 0;
	assert_int_equal(cuArrayCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
	d.Width = 64;
	d.NumChannels = 3;
	assert_int_equal(cuArrayCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
	d.NumChannels = 1;
	d.Format = (CUarray_format)0x99;
	assert_int_equal(cuArrayCreate(&a, &d), CUDA_ERROR_INVALID_VALUE);
	d3.Height = 0; /* 3-D without a height */
	assert_int_equal(cuArray3DCreate(&a, &d3), CUDA_ERROR_INVALID_VALUE);
	d3.Flags = CUDA_ARRAY3D_LAYERED; /* but layers of 1-D rows are fine */
	CHECK(cuArray3DCreate(&a, &d3));
	CHECK(cuArrayDestroy(a));
	d3.Flags = CUDA_ARRAY3D_CUBEMAP;
	assert_int_equal(cuArray3DCreate(&a, &d3), CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(free_now(), f0);
}

/* 2-D: host -> array, a sub-box array -> device (pitched), array -> array, array -> host. */
static void test_copy_2d(void **state)
{
	enum { W = 64, H = 32 };
	CUDA_ARRAY_DESCRIPTOR d = { .Width = W, .Height = H, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1 };
	float *img = malloc(W * H * sizeof(float)), out[8 * 5], back[W * H];
	CUDA_MEMCPY2D c;
	CUdeviceptr dev;
	size_t pitch;
	CUarray a, b;

	(void)state;
	for (int i = 0; i < W * H; i++)
		img[i] = (float)i;
	CHECK(cuArrayCreate(&a, &d));
	CHECK(cuArrayCreate(&b, &d));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = img;
	c.srcPitch = W * sizeof(float);
	c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c.dstArray = a;
	c.WidthInBytes = W * sizeof(float);
	c.Height = H;
	CHECK(cuMemcpy2D(&c));

	/* the 8 x 5 box at column 10, row 20 of the array into a pitched device buffer */
	CHECK(cuMemAllocPitch(&dev, &pitch, 8 * sizeof(float), 5, 4));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	c.srcArray = a;
	c.srcXInBytes = 10 * sizeof(float);
	c.srcY = 20;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = dev;
	c.dstPitch = pitch;
	c.WidthInBytes = 8 * sizeof(float);
	c.Height = 5;
	CHECK(cuMemcpy2D(&c));
	for (int y = 0; y < 5; y++)
		CHECK(cuMemcpyDtoH(out + y * 8, dev + y * pitch, 8 * sizeof(float)));
	for (int y = 0; y < 5; y++)
		for (int x = 0; x < 8; x++)
			assert_true(out[y * 8 + x] == img[(20 + y) * W + 10 + x]);
	/* a box running past the array's edge is refused */
	c.srcY = 28;
	assert_int_equal(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
	c.srcY = 0;
	c.srcXInBytes = (W - 4) * sizeof(float);
	assert_int_equal(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);

	/* array to array, then back to the host asynchronously */
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	c.srcArray = a;
	c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c.dstArray = b;
	c.WidthInBytes = W * sizeof(float);
	c.Height = H;
	CHECK(cuMemcpy2D(&c));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	c.srcArray = b;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = back;
	c.dstPitch = W * sizeof(float);
	c.WidthInBytes = W * sizeof(float);
	c.Height = H;
	CHECK(cuMemcpy2DAsync(&c, NULL));
	CHECK(cuCtxSynchronize());
	assert_memory_equal(back, img, sizeof(back));

	CHECK(cuArrayDestroy(a));
	c.srcArray = a; /* destroyed */
	assert_int_equal(cuMemcpy2D(&c), CUDA_ERROR_INVALID_HANDLE);
	CHECK(cuArrayDestroy(b));
	CHECK(cuMemFree(dev));
	free(img);
}

/* 3-D: host -> array, then a sub-box array -> host. */
static void test_copy_3d(void **state)
{
	enum { W = 16, H = 8, D = 4 };
	CUDA_ARRAY3D_DESCRIPTOR d = { .Width = W, .Height = H, .Depth = D, .Format = CU_AD_FORMAT_UNSIGNED_INT16,
				      .NumChannels = 2 };
	uint32_t vol[D][H][W], box[2][3][4]; /* elements are 2 x 16 bits */
	CUDA_MEMCPY3D c;
	CUarray a;

	(void)state;
	for (int z = 0; z < D; z++)
		for (int y = 0; y < H; y++)
			for (int x = 0; x < W; x++)
				vol[z][y][x] = (uint32_t)(z << 16 | y << 8 | x);
	CHECK(cuArray3DCreate(&a, &d));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = vol;
	c.srcPitch = W * 4;
	c.srcHeight = H;
	c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c.dstArray = a;
	c.WidthInBytes = W * 4;
	c.Height = H;
	c.Depth = D;
	CHECK(cuMemcpy3D(&c));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	c.srcArray = a;
	c.srcXInBytes = 2 * 4;
	c.srcY = 1;
	c.srcZ = 1;
	c.dstMemoryType = CU_MEMORYTYPE_HOST;
	c.dstHost = box;
	c.dstPitch = 4 * 4;
	c.dstHeight = 3;
	c.WidthInBytes = 4 * 4;
	c.Height = 3;
	c.Depth = 2;
	CHECK(cuMemcpy3D(&c));
	for (int z = 0; z < 2; z++)
		for (int y = 0; y < 3; y++)
			for (int x = 0; x < 4; x++)
				assert_int_equal(box[z][y][x], vol[1 + z][1 + y][2 + x]);
	c.srcZ = 3; /* slices 3 and 4 of 4 */
	assert_int_equal(cuMemcpy3D(&c), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuArrayDestroy(a));
}

static void test_linear_copies(void **state)
{
	CUDA_ARRAY_DESCRIPTOR d = { .Width = 1000, .Height = 0, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
				    .NumChannels = 1 };
	unsigned char in[100], out[100];
	CUdeviceptr dev;
	CUstream s;
	CUarray a, b;

	(void)state;
	for (int i = 0; i < 100; i++)
		in[i] = (unsigned char)(3 * i + 1);
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuArrayCreate(&a, &d));
	CHECK(cuMemAlloc(&dev, 100));
	CHECK(cuMemcpyHtoA(a, 10, in, 100));
	CHECK(cuMemcpyAtoD(dev, a, 10, 100));
	CHECK(cuMemcpyDtoA(a, 900, dev, 100));
	memset(out, 0, sizeof(out));
	CHECK(cuMemcpyAtoH(out, a, 900, 100));
	assert_memory_equal(out, in, 100);
	memset(out, 0, sizeof(out));
	CHECK(cuMemcpyHtoAAsync(a, 500, in, 100, s));
	CHECK(cuMemcpyAtoHAsync(out, a, 500, 100, s));
	CHECK(cuStreamSynchronize(s));
	assert_memory_equal(out, in, 100);
	assert_int_equal(cuMemcpyHtoA(a, 950, in, 100), CUDA_ERROR_INVALID_VALUE); /* past the end */
	/* array to array, and the per-thread-stream forms */
	CHECK(cuArrayCreate(&b, &d));
	CHECK(cuMemcpyAtoA(b, 0, a, 500, 100));
	memset(out, 0, sizeof(out));
	CHECK(cuMemcpyAtoH_v2_ptds(out, b, 0, 100));
	assert_memory_equal(out, in, 100);
	CHECK(cuMemcpyHtoA_v2_ptds(b, 200, in, 50));
	CHECK(cuMemcpyAtoA_v2_ptds(a, 0, b, 200, 50));
	CHECK(cuMemcpyAtoD_v2_ptds(dev, a, 0, 50));
	CHECK(cuMemcpyDtoA_v2_ptds(b, 300, dev, 50));
	CHECK(cuMemcpyHtoAAsync_v2_ptsz(a, 600, in + 50, 50, NULL));
	memset(out, 0, sizeof(out));
	CHECK(cuMemcpyAtoHAsync_v2_ptsz(out, b, 300, 50, NULL));
	CHECK(cuMemcpyAtoHAsync_v2_ptsz(out + 50, a, 600, 50, NULL));
	CHECK(cuCtxSynchronize());
	assert_memory_equal(out, in, 100);
	CHECK(cuArrayDestroy(b));
	CHECK(cuArrayDestroy(a));
	assert_int_equal(cuMemcpyAtoH(out, a, 0, 10), CUDA_ERROR_INVALID_HANDLE);
	CHECK(cuMemFree(dev));
	CHECK(cuStreamDestroy(s));
}

/* A copy into an array and one out of it, captured into a graph and launched twice. */
static void test_copies_in_graph(void **state)
{
	CUDA_ARRAY_DESCRIPTOR d = { .Width = 32, .Height = 4, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1 };
	float in[128], out[128];
	CUDA_MEMCPY2D c;
	CUgraphExec x;
	CUdeviceptr dev;
	CUgraph g;
	CUstream s;
	CUarray a;

	(void)state;
	for (int i = 0; i < 128; i++)
		in[i] = (float)i * 0.5f;
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuArrayCreate(&a, &d));
	CHECK(cuMemAlloc(&dev, sizeof(out)));
	CHECK(cuMemcpyHtoD(dev, in, sizeof(in)));
	CHECK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = dev;
	c.srcPitch = 32 * sizeof(float);
	c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c.dstArray = a;
	c.WidthInBytes = 32 * sizeof(float);
	c.Height = 4;
	CHECK(cuMemcpy2DAsync(&c, s));
	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	c.srcArray = a;
	c.srcY = 1;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = dev;
	c.dstPitch = 32 * sizeof(float);
	c.WidthInBytes = 32 * sizeof(float);
	c.Height = 3;
	CHECK(cuMemcpy2DAsync(&c, s));
	CHECK(cuStreamEndCapture(s, &g));
	CHECK(cuGraphInstantiate(&x, g, 0));
	/* each launch moves the rows of dev up by one */
	CHECK(cuGraphLaunch(x, s));
	CHECK(cuGraphLaunch(x, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemcpyDtoH(out, dev, sizeof(out)));
	assert_memory_equal(out, in + 64, 2 * 32 * sizeof(float));
	assert_memory_equal(out + 96, in + 96, 32 * sizeof(float)); /* the last row stays */
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
	CHECK(cuArrayDestroy(a));
	CHECK(cuMemFree(dev));
	CHECK(cuStreamDestroy(s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_describe),
		cmocka_unit_test(test_copy_2d),
		cmocka_unit_test(test_copy_3d),
		cmocka_unit_test(test_linear_copies),
		cmocka_unit_test(test_copies_in_graph),
	};

	tl_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
