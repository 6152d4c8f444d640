/* hooks_copy.c - hand-written hooks of every cuMemcpy* entry point of linear memory the device
 * implements: 1-D (unified, peer, HtoD, DtoH, DtoD), 2-D, 2-D unaligned, 3-D and 3-D peer, each
 * synchronous (legacy and _ptds) and asynchronous (legacy and _ptsz). shim layer.
 *
 * Every copy becomes a CAP_OP_MEMCPY with one normalized 3-D descriptor; capture decides from
 * the allocation map which copies end their window (a synchronous copy touching host memory, and
 * any copy into host memory). Copies of arrays and batched copies are not modeled: they stay
 * boundaries through the generated hooks. A NULL descriptor is the driver's to refuse; nothing
 * is recorded for it (kind CAP_OP_KIND_COUNT). */
#include <string.h>

#include "shim/engine.h"

#define H CU_MEMORYTYPE_HOST
#define D CU_MEMORYTYPE_DEVICE
#define U CU_MEMORYTYPE_UNIFIED

static void fill_1d(struct cap_call *c, CUmemorytype dt, uint64_t dst, CUmemorytype st, uint64_t src, size_t n,
		    CUstream s)
{
	c->kind = CAP_OP_MEMCPY;
	c->stream = s;
	cap_call_copy_1d(c, dt, dst, st, src, n);
}

static void fill_peer(struct cap_call *c, CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
		      size_t n, CUstream s)
{
	fill_1d(c, D, dst, D, src, n, s);
	c->u.memcpy.dst_ctx = dctx;
	c->u.memcpy.src_ctx = sctx;
}

static void fill_2d(struct cap_call *c, const CUDA_MEMCPY2D *p, CUstream s)
{
	c->stream = s;
	if (!p) {
		c->kind = CAP_OP_KIND_COUNT;
		return;
	}
	c->kind = CAP_OP_MEMCPY;
	cap_call_copy_2d(c, p);
}

static void fill_3d(struct cap_call *c, const CUDA_MEMCPY3D *p, CUstream s)
{
	c->stream = s;
	if (!p) {
		c->kind = CAP_OP_KIND_COUNT;
		return;
	}
	c->kind = CAP_OP_MEMCPY;
	c->u.memcpy.d = *p;
	c->u.memcpy.dst_ctx = NULL;
	c->u.memcpy.src_ctx = NULL;
	c->u.memcpy.oned = false; /* any descriptor: compared whole (cap_op_take_like) */
}

static void fill_3d_peer(struct cap_call *c, const CUDA_MEMCPY3D_PEER *p, CUstream s)
{
	c->stream = s;
	if (!p) {
		c->kind = CAP_OP_KIND_COUNT;
		return;
	}
	c->kind = CAP_OP_MEMCPY;
	cap_call_copy_3d_peer(c, p);
}

#define HP(p) ((uint64_t)(uintptr_t)(p))

/* unified */
SHIM_OP_HOOK(cuMemcpy, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n), (dst, src, n),
	     fill_1d(&c_, U, dst, U, src, n, 0))
SHIM_OP_HOOK(cuMemcpy_ptds, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n), (dst, src, n),
	     fill_1d(&c_, U, dst, U, src, n, 0))
SHIM_OP_HOOK(cuMemcpyAsync, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n, CUstream s), (dst, src, n, s),
	     fill_1d(&c_, U, dst, U, src, n, s))
SHIM_OP_HOOK(cuMemcpyAsync_ptsz, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n, CUstream s), (dst, src, n, s),
	     fill_1d(&c_, U, dst, U, src, n, s))

/* peer */
#define PEER_DECLS (CUdeviceptr_v2 dst, CUcontext dctx, CUdeviceptr_v2 src, CUcontext sctx, size_t n)
#define PEER_ARGS (dst, dctx, src, sctx, n)
#define PEER_ASYNC_DECLS (CUdeviceptr_v2 dst, CUcontext dctx, CUdeviceptr_v2 src, CUcontext sctx, size_t n, CUstream s)
#define PEER_ASYNC_ARGS (dst, dctx, src, sctx, n, s)
SHIM_OP_HOOK(cuMemcpyPeer, PEER_DECLS, PEER_ARGS, fill_peer(&c_, dst, dctx, src, sctx, n, 0))
SHIM_OP_HOOK(cuMemcpyPeer_ptds, PEER_DECLS, PEER_ARGS, fill_peer(&c_, dst, dctx, src, sctx, n, 0))
SHIM_OP_HOOK(cuMemcpyPeerAsync, PEER_ASYNC_DECLS, PEER_ASYNC_ARGS, fill_peer(&c_, dst, dctx, src, sctx, n, s))
SHIM_OP_HOOK(cuMemcpyPeerAsync_ptsz, PEER_ASYNC_DECLS, PEER_ASYNC_ARGS, fill_peer(&c_, dst, dctx, src, sctx, n, s))

/* host to device */
SHIM_OP_HOOK(cuMemcpyHtoD_v2, (CUdeviceptr_v2 dst, const void *src, size_t n), (dst, src, n),
	     fill_1d(&c_, D, dst, H, HP(src), n, 0))
SHIM_OP_HOOK(cuMemcpyHtoD_v2_ptds, (CUdeviceptr_v2 dst, const void *src, size_t n), (dst, src, n),
	     fill_1d(&c_, D, dst, H, HP(src), n, 0))
SHIM_OP_HOOK(cuMemcpyHtoDAsync_v2, (CUdeviceptr_v2 dst, const void *src, size_t n, CUstream s), (dst, src, n, s),
	     fill_1d(&c_, D, dst, H, HP(src), n, s))
SHIM_OP_HOOK(cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr_v2 dst, const void *src, size_t n, CUstream s),
	     (dst, src, n, s), fill_1d(&c_, D, dst, H, HP(src), n, s))

/* device to host */
SHIM_OP_HOOK(cuMemcpyDtoH_v2, (void *dst, CUdeviceptr_v2 src, size_t n), (dst, src, n),
	     fill_1d(&c_, H, HP(dst), D, src, n, 0))
SHIM_OP_HOOK(cuMemcpyDtoH_v2_ptds, (void *dst, CUdeviceptr_v2 src, size_t n), (dst, src, n),
	     fill_1d(&c_, H, HP(dst), D, src, n, 0))
SHIM_OP_HOOK(cuMemcpyDtoHAsync_v2, (void *dst, CUdeviceptr_v2 src, size_t n, CUstream s), (dst, src, n, s),
	     fill_1d(&c_, H, HP(dst), D, src, n, s))
SHIM_OP_HOOK(cuMemcpyDtoHAsync_v2_ptsz, (void *dst, CUdeviceptr_v2 src, size_t n, CUstream s), (dst, src, n, s),
	     fill_1d(&c_, H, HP(dst), D, src, n, s))

/* device to device */
SHIM_OP_HOOK(cuMemcpyDtoD_v2, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n), (dst, src, n),
	     fill_1d(&c_, D, dst, D, src, n, 0))
SHIM_OP_HOOK(cuMemcpyDtoD_v2_ptds, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n), (dst, src, n),
	     fill_1d(&c_, D, dst, D, src, n, 0))
SHIM_OP_HOOK(cuMemcpyDtoDAsync_v2, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n, CUstream s),
	     (dst, src, n, s), fill_1d(&c_, D, dst, D, src, n, s))
SHIM_OP_HOOK(cuMemcpyDtoDAsync_v2_ptsz, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n, CUstream s),
	     (dst, src, n, s), fill_1d(&c_, D, dst, D, src, n, s))

/* 2-D */
SHIM_OP_HOOK(cuMemcpy2D_v2, (const CUDA_MEMCPY2D_v2 *p), (p), fill_2d(&c_, p, 0))
SHIM_OP_HOOK(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D_v2 *p), (p), fill_2d(&c_, p, 0))
SHIM_OP_HOOK(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D_v2 *p), (p), fill_2d(&c_, p, 0))
SHIM_OP_HOOK(cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D_v2 *p), (p), fill_2d(&c_, p, 0))
SHIM_OP_HOOK(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D_v2 *p, CUstream s), (p, s), fill_2d(&c_, p, s))
SHIM_OP_HOOK(cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D_v2 *p, CUstream s), (p, s), fill_2d(&c_, p, s))

/* 3-D */
SHIM_OP_HOOK(cuMemcpy3D_v2, (const CUDA_MEMCPY3D_v2 *p), (p), fill_3d(&c_, p, 0))
SHIM_OP_HOOK(cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D_v2 *p), (p), fill_3d(&c_, p, 0))
SHIM_OP_HOOK(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D_v2 *p, CUstream s), (p, s), fill_3d(&c_, p, s))
SHIM_OP_HOOK(cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D_v2 *p, CUstream s), (p, s), fill_3d(&c_, p, s))
SHIM_OP_HOOK(cuMemcpy3DPeer, (const CUDA_MEMCPY3D_PEER_v1 *p), (p), fill_3d_peer(&c_, p, 0))
SHIM_OP_HOOK(cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER_v1 *p), (p), fill_3d_peer(&c_, p, 0))
SHIM_OP_HOOK(cuMemcpy3DPeerAsync, (const CUDA_MEMCPY3D_PEER_v1 *p, CUstream s), (p, s), fill_3d_peer(&c_, p, s))
SHIM_OP_HOOK(cuMemcpy3DPeerAsync_ptsz, (const CUDA_MEMCPY3D_PEER_v1 *p, CUstream s), (p, s),
	     fill_3d_peer(&c_, p, s))
