/* hook_args.c - every entry point whose hook passes the call on with arguments read back from
 * cufold's record of it (shim/engine.h: SHIM_OP_HOOK_C): the sixteen 1-D copies (unified, host to
 * device, device to host, device to device; synchronous, _ptds, asynchronous, _ptsz), the four
 * peer copies, the twelve 1-D memsets of 8, 16 and 32 bits and the four plain and cooperative
 * launches (fills and axpys, block sums whose rounding is the block's size, and 2-D grids), each
 * once a step with arguments that differ from the others' (sizes, offsets, values, grids), so that one argument read back from the wrong field, or two exchanged, changes
 * the memory the program hashes. Prints one checksum a step. It knows nothing of cufold: with and
 * without it the output must be identical.
 * usage: hook_args [steps]   tests layer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

/* cuda.h declares these only under the per-thread default stream macros */
CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n);
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream s);
CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n);
CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream s);
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n);
CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n);
CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n,
				CUstream s);
CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n);
CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n);
CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n);
CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s);
CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream s);
CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream s);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
			     unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params,
			     void **extra);
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
					unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,
					CUstream s, void **params);

#define SLOTS 64                   /* buffers of the device arena, one per call a step */
#define SLOT 4096                  /* bytes a buffer */
#define FLOATS (SLOT / 4)

static CUdeviceptr arena;         /* SLOTS buffers */
static unsigned char *host;        /* pinned: SLOTS buffers on the host side */

static CUdeviceptr dev(int i, size_t off)
{
	return arena + (CUdeviceptr)i * SLOT + off;
}

static unsigned char *hst(int i, size_t off)
{
	return host + (size_t)i * SLOT + off;
}

/* f launched once through each of the four launch entry points, the i-th with grid and block
 * g[i] (x, y, z of each) and parameters args[i]. */
static void launch_each(CUfunction f, const unsigned int g[4][6], void **args[4], CUstream s)
{
	CHECK(cuLaunchKernel(f, g[0][0], g[0][1], g[0][2], g[0][3], g[0][4], g[0][5], 0, s, args[0], NULL));
	CHECK(cuLaunchKernel_ptsz(f, g[1][0], g[1][1], g[1][2], g[1][3], g[1][4], g[1][5], 0, s, args[1], NULL));
	CHECK(cuLaunchCooperativeKernel(f, g[2][0], g[2][1], g[2][2], g[2][3], g[2][4], g[2][5], 0, s, args[2]));
	CHECK(cuLaunchCooperativeKernel_ptsz(f, g[3][0], g[3][1], g[3][2], g[3][3], g[3][4], g[3][5], 0, s, args[3]));
}

/* The calls of one step. Every size, offset and value differs from every other call's and moves
 * with the step, so that a swapped or misread argument writes other bytes. */
static void step_work(int step, CUcontext ctx, CUstream s, CUfunction fill, CUfunction axpy, CUfunction rsum,
		      CUfunction rc)
{
	size_t k = (size_t)(step % 5) * 4; /* moves with the step */
	int n = 200 + step;
	float v = 0.5f + (float)step;

	/* the host side's source bytes, new every step */
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < SLOT; j++)
			hst(i, 0)[j] = (unsigned char)(i * 31 + j * 7 + step);
	/* memsets: 8, 16, 32 bits; synchronous, _ptds, async, _ptsz */
	CHECK(cuMemsetD8_v2(dev(0, k), (unsigned char)(1 + step), 100 + k));
	CHECK(cuMemsetD8_v2_ptds(dev(1, k + 4), (unsigned char)(2 + step), 104 + k));
	CHECK(cuMemsetD16_v2(dev(2, k), (unsigned short)(0x303 + step), 108 + k));
	CHECK(cuMemsetD16_v2_ptds(dev(3, k + 8), (unsigned short)(0x404 + step), 112 + k));
	CHECK(cuMemsetD32_v2(dev(4, k), 0x05050505u + (unsigned)step, 116 + k));
	CHECK(cuMemsetD32_v2_ptds(dev(5, k + 12), 0x06060606u + (unsigned)step, 120 + k));
	CHECK(cuMemsetD8Async(dev(6, k), (unsigned char)(7 + step), 124 + k, s));
	CHECK(cuMemsetD8Async_ptsz(dev(7, k + 4), (unsigned char)(8 + step), 128 + k, s));
	CHECK(cuMemsetD16Async(dev(8, k), (unsigned short)(0x909 + step), 132 + k, s));
	CHECK(cuMemsetD16Async_ptsz(dev(9, k + 8), (unsigned short)(0xa0a + step), 136 + k, s));
	CHECK(cuMemsetD32Async(dev(10, k), 0x0b0b0b0bu + (unsigned)step, 140 + k, s));
	CHECK(cuMemsetD32Async_ptsz(dev(11, k + 12), 0x0c0c0c0cu + (unsigned)step, 144 + k, s));
	CHECK(cuStreamSynchronize(s));
	/* host to device: the host's bytes into slots 12..15 */
	CHECK(cuMemcpyHtoD_v2(dev(12, k), hst(0, 4), 300 + k));
	CHECK(cuMemcpyHtoD_v2_ptds(dev(13, k + 8), hst(1, 12), 304 + k));
	CHECK(cuMemcpyHtoDAsync_v2(dev(14, k + 4), hst(2, 8), 308 + k, s));
	CHECK(cuMemcpyHtoDAsync_v2_ptsz(dev(15, k + 16), hst(3, 20), 312 + k, s));
	/* device to device, unified and peer: slot i to slot i + 16, each its own size */
	CHECK(cuMemcpyDtoD_v2(dev(16, 4), dev(0, k), 400 + k));
	CHECK(cuMemcpyDtoD_v2_ptds(dev(17, 8), dev(1, k), 404 + k));
	CHECK(cuMemcpyDtoDAsync_v2(dev(18, 12), dev(2, k), 408 + k, s));
	CHECK(cuMemcpyDtoDAsync_v2_ptsz(dev(19, 16), dev(3, k), 412 + k, s));
	CHECK(cuMemcpy(dev(20, 4), dev(4, k), 416 + k));
	CHECK(cuMemcpy_ptds(dev(21, 8), dev(5, k), 420 + k));
	CHECK(cuMemcpyAsync(dev(22, 12), dev(6, k), 424 + k, s));
	CHECK(cuMemcpyAsync_ptsz(dev(23, 16), dev(7, k), 428 + k, s));
	CHECK(cuMemcpyPeer(dev(24, 4), ctx, dev(8, k), ctx, 432 + k));
	CHECK(cuMemcpyPeer_ptds(dev(25, 8), ctx, dev(9, k), ctx, 436 + k));
	CHECK(cuMemcpyPeerAsync(dev(26, 12), ctx, dev(10, k), ctx, 440 + k, s));
	CHECK(cuMemcpyPeerAsync_ptsz(dev(27, 16), ctx, dev(11, k), ctx, 444 + k, s));
	/* launches: fill slots 28..31 and axpy them into 32..35, each with its own grid, block,
	 * value and count */
	{
		static const unsigned int g_fill[4][6] = {{4, 1, 1, 64, 1, 1}, {2, 1, 1, 128, 1, 1},
							  {8, 1, 1, 32, 1, 1}, {1, 1, 1, 256, 1, 1}};
		static const unsigned int g_axpy[4][6] = {{2, 1, 1, 128, 1, 1}, {4, 1, 1, 64, 1, 1},
							  {1, 1, 1, 256, 1, 1}, {8, 1, 1, 32, 1, 1}};
		CUdeviceptr x[4] = {dev(28, 0), dev(29, 0), dev(30, 0), dev(31, 0)};
		CUdeviceptr y[4] = {dev(32, 0), dev(33, 0), dev(34, 0), dev(35, 0)};
		float vs[4] = {v, v + 1.0f, v + 2.0f, v + 3.0f}, al[4] = {0.25f, 0.5f, 0.75f, 1.5f};
		int ns[4] = {n, n + 16, n + 32, n + 48};
		void *f0[] = {&x[0], &vs[0], &ns[0]}, *f1[] = {&x[1], &vs[1], &ns[1]};
		void *f2[] = {&x[2], &vs[2], &ns[2]}, *f3[] = {&x[3], &vs[3], &ns[3]};
		void *a0[] = {&y[0], &x[0], &al[0], &ns[0]}, *a1[] = {&y[1], &x[1], &al[1], &ns[1]};
		void *a2[] = {&y[2], &x[2], &al[2], &ns[2]}, *a3[] = {&y[3], &x[3], &al[3], &ns[3]};
		void **fa[4] = {f0, f1, f2, f3}, **aa[4] = {a0, a1, a2, a3};

		launch_each(fill, g_fill, fa, s);
		launch_each(axpy, g_axpy, aa, s);
	}
	/* where grid and block count apart: a sum whose order of additions is the block's size
	 * (reduce_sum: block 0's threads, rounded at each step), and a 2-D grid's rows and columns */
	{
		static const unsigned int g_rsum[4][6] = {{1, 2, 1, 32, 1, 1}, {2, 1, 1, 64, 1, 1},
							  {1, 1, 2, 128, 1, 1}, {1, 1, 1, 16, 2, 1}};
		static const unsigned int g_rc[4][6] = {{3, 2, 1, 16, 4, 1}, {2, 3, 1, 32, 2, 1},
							{5, 1, 1, 8, 8, 1}, {1, 4, 1, 64, 1, 1}};
		CUdeviceptr in = dev(SLOTS - 1, 0);
		CUdeviceptr o[4] = {dev(36, 4), dev(36, 8), dev(36, 12), dev(36, 16)};
		CUdeviceptr q[4] = {dev(40, 0), dev(44, 0), dev(48, 0), dev(52, 0)};
		int cnt = FLOATS - step, rows = 6 + step % 3, cols = 40 + step;
		void *r0[] = {&o[0], &in, &cnt}, *r1[] = {&o[1], &in, &cnt}, *r2[] = {&o[2], &in, &cnt};
		void *r3[] = {&o[3], &in, &cnt};
		void *c0[] = {&q[0], &in, &rows, &cols}, *c1[] = {&q[1], &in, &rows, &cols};
		void *c2[] = {&q[2], &in, &rows, &cols}, *c3[] = {&q[3], &in, &rows, &cols};
		void **ra[4] = {r0, r1, r2, r3}, **ca[4] = {c0, c1, c2, c3};

		launch_each(rsum, g_rsum, ra, s);
		launch_each(rc, g_rc, ca, s);
	}
	/* device to host: slots 16..19 back into the host's slots 4..7 */
	memset(hst(4, 0), 0, 4 * SLOT);
	CHECK(cuMemcpyDtoH_v2(hst(4, 4), dev(16, k), 500 + k));
	CHECK(cuMemcpyDtoH_v2_ptds(hst(5, 8), dev(17, k), 504 + k));
	CHECK(cuMemcpyDtoHAsync_v2(hst(6, 12), dev(18, k), 508 + k, s));
	CHECK(cuMemcpyDtoHAsync_v2_ptsz(hst(7, 16), dev(19, k), 512 + k, s));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuCtxSynchronize());
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 6;
	CUcontext ctx = tl_init();
	CUmodule mod = tl_load_module("elementwise");
	CUfunction fill = tl_func(mod, "fill"), axpy = tl_func(mod, "axpy");
	CUfunction rsum = tl_func(tl_load_module("linalg"), "reduce_sum");
	CUfunction rc = tl_func(tl_load_module("effects_loops"), "fx_rows_cols");
	CUstream s;
	uint64_t h = TL_HASH_INIT;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&arena, (size_t)SLOTS * SLOT));
	CHECK(cuMemAllocHost((void **)&host, (size_t)SLOTS * SLOT));
	CHECK(cuMemsetD8(arena, 0, (size_t)SLOTS * SLOT));
	memset(host, 0, (size_t)SLOTS * SLOT);
	/* the last slot: random floats, the sums' and the 2-D grids' input */
	tl_fill_random((float *)(void *)hst(SLOTS - 1, 0), FLOATS, 42);
	CHECK(cuMemcpyHtoD_v2(dev(SLOTS - 1, 0), hst(SLOTS - 1, 0), SLOT));
	for (int step = 0; step < steps; step++) {
		step_work(step, ctx, s, fill, axpy, rsum, rc);
		h = tl_hash_device(arena, (size_t)SLOTS * SLOT, h);
		h = tl_hash(hst(4, 0), 4 * SLOT, h);
		printf("hook_args step %d %016llx\n", step, (unsigned long long)h);
	}
	CHECK(cuMemFreeHost(host));
	CHECK(cuMemFree(arena));
	CHECK(cuStreamDestroy(s));
	return 0;
}
