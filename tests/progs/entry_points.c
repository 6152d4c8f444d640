/* entry_points.c - a training-shaped loop that uses the entry points real clients call besides
 * launches and linear copies: its kernels come from a module JIT-linked from two PTX files
 * (cuLink*), every step asks the occupancy calculator for its block size (as frameworks do
 * before launching), and every step moves data through CUDA arrays with 2-D and 3-D copies in
 * the middle of its work (among them the same copy into two arrays: only the array handles tell
 * those copies apart). Prints a checksum of everything it computed; it knows nothing of
 * cufold, so with and without it the output must be identical.
 * usage: entry_points [steps]   tests layer. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define W 256                        /* floats per row */
#define H 16                         /* rows */
#define N (W * H)                    /* floats per tensor */

static CUfunction f_fill, f_axpy, f_scale, f_add;
static int block = 256;              /* block size the occupancy calculator chose */
static uint64_t h64 = TL_HASH_INIT;

static void launch(CUfunction f, CUstream s, void **args)
{
	CHECK(cuLaunchKernel(f, (N + block - 1) / block, 1, 1, block, 1, 1, 0, s, args, NULL));
}

static void k_fill(CUdeviceptr x, float v, CUstream s)
{
	int n = N;
	void *a[] = {&x, &v, &n};

	launch(f_fill, s, a);
}

static void k_axpy(CUdeviceptr y, CUdeviceptr x, float al, CUstream s)
{
	int n = N;
	void *a[] = {&y, &x, &al, &n};

	launch(f_axpy, s, a);
}

static void k_scale(CUdeviceptr o, CUdeviceptr i, float sc, CUstream s)
{
	int n = N;
	void *a[] = {&o, &i, &sc, &n};

	launch(f_scale, s, a);
}

static void k_add(CUdeviceptr o, CUdeviceptr x, CUdeviceptr y, CUstream s)
{
	int n = N;
	void *a[] = {&o, &x, &y, &n};

	launch(f_add, s, a);
}

/* Link the elementwise kernels with another PTX file, as a JIT-linking program does. */
static CUmodule link_module(void)
{
	char *a = tl_read_ptx("elementwise"), *b = tl_read_ptx("copy"), errlog[256] = "";
	CUjit_option opts[] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *vals[] = { errlog, (void *)(uintptr_t)sizeof(errlog) };
	CUlinkState l;
	CUmodule mod;
	void *image;
	size_t size;

	CHECK(cuLinkCreate(2, opts, vals, &l));
	CHECK(cuLinkAddData(l, CU_JIT_INPUT_PTX, a, strlen(a) + 1, "elementwise.ptx", 0, NULL, NULL));
	CHECK(cuLinkAddData(l, CU_JIT_INPUT_PTX, b, strlen(b) + 1, "copy.ptx", 0, NULL, NULL));
	CHECK(cuLinkComplete(l, &image, &size));
	CHECK(cuModuleLoadData(&mod, image));
	CHECK(cuLinkDestroy(l));
	free(a);
	free(b);
	return mod;
}

/* A 2-D copy of the whole H x W tensor between linear device memory and an array. */
static void copy_2d(CUdeviceptr dev, CUarray arr, bool to_array, CUstream s)
{
	CUDA_MEMCPY2D c;

	memset(&c, 0, sizeof(c));
	if (to_array) {
		c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
		c.srcDevice = dev;
		c.srcPitch = W * sizeof(float);
		c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
		c.dstArray = arr;
	} else {
		c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
		c.srcArray = arr;
		c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		c.dstDevice = dev;
		c.dstPitch = W * sizeof(float);
	}
	c.WidthInBytes = W * sizeof(float);
	c.Height = H;
	CHECK(cuMemcpy2DAsync(&c, s));
}

/* z -> the 3-D array: the tensor as 2 slices of H/2 rows. */
static void copy_3d_in(CUdeviceptr dev, CUarray arr, CUstream s)
{
	CUDA_MEMCPY3D c;

	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = dev;
	c.srcPitch = W * sizeof(float);
	c.srcHeight = H / 2;
	c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
	c.dstArray = arr;
	c.WidthInBytes = W * sizeof(float);
	c.Height = H / 2;
	c.Depth = 2;
	CHECK(cuMemcpy3DAsync(&c, s));
}

/* A box of the 3-D array (rows 1..H/4 of both slices, all but 8 columns) into dev, shifted. */
static void copy_3d_out(CUarray arr, CUdeviceptr dev, CUstream s)
{
	CUDA_MEMCPY3D c;

	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
	c.srcArray = arr;
	c.srcY = 1;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = dev + 8 * sizeof(float);
	c.dstPitch = W * sizeof(float);
	c.dstHeight = H / 2;
	c.WidthInBytes = (W - 8) * sizeof(float);
	c.Height = H / 4;
	c.Depth = 2;
	CHECK(cuMemcpy3DAsync(&c, s));
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 12, grid = 0;
	CUDA_ARRAY_DESCRIPTOR d2 = { .Width = W, .Height = H, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1 };
	CUDA_ARRAY3D_DESCRIPTOR d3 = { .Width = W, .Height = H / 2, .Depth = 2, .Format = CU_AD_FORMAT_FLOAT,
				       .NumChannels = 1 };
	CUdeviceptr x, y, z, w;
	CUarray a2, b2, a3;
	CUmodule mod;
	CUstream s;
	float loss[16];

	tl_init();
	mod = link_module();
	f_fill = tl_func(mod, "fill");
	f_axpy = tl_func(mod, "axpy");
	f_scale = tl_func(mod, "scale");
	f_add = tl_func(mod, "add");
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&x, N * sizeof(float)));
	CHECK(cuMemAlloc(&y, N * sizeof(float)));
	CHECK(cuMemAlloc(&z, N * sizeof(float)));
	CHECK(cuMemAlloc(&w, N * sizeof(float)));
	CHECK(cuArrayCreate(&a2, &d2));
	CHECK(cuArrayCreate(&b2, &d2));
	CHECK(cuArray3DCreate(&a3, &d3));

	k_fill(x, 0.5f, s);
	k_fill(y, 1.0f, s);
	k_fill(z, 0.0f, s);
	k_fill(w, 0.0f, s);
	for (int step = 0; step < steps; step++) {
		/* the block size, asked for in the middle of the step's work */
		for (int layer = 0; layer < 3; layer++) {
			k_axpy(y, x, 0.5f, s);
			k_scale(x, y, 0.75f, s);
			CHECK(cuOccupancyMaxPotentialBlockSize(&grid, &block, f_axpy, NULL, 0, 256));
		}
		copy_2d(y, a2, true, s);         /* y -> array */
		copy_2d(y, b2, true, s);         /* the same copy into another array */
		k_scale(y, y, 0.5f, s);          /* y changes after the copies read it */
		copy_2d(z, a2, false, s);        /* array -> z: the old y */
		k_add(z, z, y, s);               /* z = old y + new y: 1.5 old y */
		copy_3d_in(z, a3, s);            /* z -> the 3-D array */
		copy_3d_out(a3, x, s);           /* part of it back into x, shifted */
		copy_2d(w, b2, false, s);        /* the second array -> w: the old y too */
		k_add(x, x, w, s);
		k_axpy(x, z, 0.125f, s);
		k_axpy(y, x, -0.25f, s);
		CHECK(cuMemcpyDtoHAsync(loss, y, sizeof(loss), s));
		CHECK(cuStreamSynchronize(s));
		h64 = tl_hash(loss, sizeof(loss), h64);
	}
	h64 = tl_hash_device(x, N * sizeof(float), h64);
	h64 = tl_hash_device(y, N * sizeof(float), h64);
	h64 = tl_hash_device(z, N * sizeof(float), h64);
	printf("entry_points %d steps, block %d grid %d: %016llx\n", steps, block, grid, (unsigned long long)h64);
	CHECK(cuArrayDestroy(a3));
	CHECK(cuArrayDestroy(b2));
	CHECK(cuArrayDestroy(a2));
	CHECK(cuMemFree(w));
	CHECK(cuMemFree(z));
	CHECK(cuMemFree(y));
	CHECK(cuMemFree(x));
	CHECK(cuStreamDestroy(s));
	CHECK(cuModuleUnload(mod));
	return 0;
}
