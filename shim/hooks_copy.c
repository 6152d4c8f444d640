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

/* A 1-D copy's arguments read back from what cap_call_copy_1d stored (SHIM_OP_HOOK_C): each side
 * in the descriptor's field its memory type names (the unified type's in the device field). */
#define C1D_DST_H c_.u.memcpy.d.dstHost
#define C1D_DST_D c_.u.memcpy.d.dstDevice
#define C1D_DST_U c_.u.memcpy.d.dstDevice
#define C1D_SRC_H c_.u.memcpy.d.srcHost
#define C1D_SRC_D c_.u.memcpy.d.srcDevice
#define C1D_SRC_U c_.u.memcpy.d.srcDevice
#define C1D_(dst, src) dst, src, c_.u.memcpy.d.WidthInBytes
#define C1D(dt, st) (C1D_(C1D_DST_##dt, C1D_SRC_##st))
#define C1DA(dt, st) (C1D_(C1D_DST_##dt, C1D_SRC_##st), c_.stream)
#define PEER_CARGS_ \
	c_.u.memcpy.d.dstDevice, c_.u.memcpy.dst_ctx, c_.u.memcpy.d.srcDevice, c_.u.memcpy.src_ctx, \
	c_.u.memcpy.d.WidthInBytes
#define PEER_CARGS (PEER_CARGS_)
#define PEER_ASYNC_CARGS (PEER_CARGS_, c_.stream)

/* unified */
SHIM_OP_HOOK_C(cuMemcpy, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n), (dst, src, n),
	     fill_1d(&c_, U, dst, U, src, n, 0), C1D(U, U))
SHIM_OP_HOOK_C(cuMemcpy_ptds, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n), (dst, src, n),
	     fill_1d(&c_, U, dst, U, src, n, 0), C1D(U, U))
SHIM_OP_HOOK_C(cuMemcpyAsync, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n, CUstream s), (dst, src, n, s),
	     fill_1d(&c_, U, dst, U, src, n, s), C1DA(U, U))
SHIM_OP_HOOK_C(cuMemcpyAsync_ptsz, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n, CUstream s), (dst, src, n, s),
	     fill_1d(&c_, U, dst, U, src, n, s), C1DA(U, U))

/* peer */
#define PEER_DECLS (CUdeviceptr_v2 dst, CUcontext dctx, CUdeviceptr_v2 src, CUcontext sctx, size_t n)
#define PEER_ARGS (dst, dctx, src, sctx, n)
#define PEER_ASYNC_DECLS (CUdeviceptr_v2 dst, CUcontext dctx, CUdeviceptr_v2 src, CUcontext sctx, size_t n, CUstream s)
#define PEER_ASYNC_ARGS (dst, dctx, src, sctx, n, s)
SHIM_OP_HOOK_C(cuMemcpyPeer, PEER_DECLS, PEER_ARGS, fill_peer(&c_, dst, dctx, src, sctx, n, 0),
	       PEER_CARGS)
SHIM_OP_HOOK_C(cuMemcpyPeer_ptds, PEER_DECLS, PEER_ARGS, fill_peer(&c_, dst, dctx, src, sctx, n, 0),
	       PEER_CARGS)
SHIM_OP_HOOK_C(cuMemcpyPeerAsync, PEER_ASYNC_DECLS, PEER_ASYNC_ARGS, fill_peer(&c_, dst, dctx, src, sctx, n, s),
	       PEER_ASYNC_CARGS)
SHIM_OP_HOOK_C(cuMemcpyPeerAsync_ptsz, PEER_ASYNC_DECLS, PEER_ASYNC_ARGS, fill_peer(&c_, dst, dctx, src, sctx, n, s),
	       PEER_ASYNC_CARGS)

/* host to device */
SHIM_OP_HOOK_C(cuMemcpyHtoD_v2, (CUdeviceptr_v2 dst, const void *src, size_t n), (dst, src, n),
	     fill_1d(&c_, D, dst, H, HP(src), n, 0), C1D(D, H))
SHIM_OP_HOOK_C(cuMemcpyHtoD_v2_ptds, (CUdeviceptr_v2 dst, const void *src, size_t n), (dst, src, n),
	     fill_1d(&c_, D, dst, H, HP(src), n, 0), C1D(D, H))
SHIM_OP_HOOK_C(cuMemcpyHtoDAsync_v2, (CUdeviceptr_v2 dst, const void *src, size_t n, CUstream s), (dst, src, n, s),
	     fill_1d(&c_, D, dst, H, HP(src), n, s), C1DA(D, H))
SHIM_OP_HOOK_C(cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr_v2 dst, const void *src, size_t n, CUstream s),
	     (dst, src, n, s), fill_1d(&c_, D, dst, H, HP(src), n, s), C1DA(D, H))

/* device to host */
SHIM_OP_HOOK_C(cuMemcpyDtoH_v2, (void *dst, CUdeviceptr_v2 src, size_t n), (dst, src, n),
	     fill_1d(&c_, H, HP(dst), D, src, n, 0), C1D(H, D))
SHIM_OP_HOOK_C(cuMemcpyDtoH_v2_ptds, (void *dst, CUdeviceptr_v2 src, size_t n), (dst, src, n),
	     fill_1d(&c_, H, HP(dst), D, src, n, 0), C1D(H, D))
SHIM_OP_HOOK_C(cuMemcpyDtoHAsync_v2, (void *dst, CUdeviceptr_v2 src, size_t n, CUstream s), (dst, src, n, s),
	     fill_1d(&c_, H, HP(dst), D, src, n, s), C1DA(H, D))
SHIM_OP_HOOK_C(cuMemcpyDtoHAsync_v2_ptsz, (void *dst, CUdeviceptr_v2 src, size_t n, CUstream s), (dst, src, n, s),
	     fill_1d(&c_, H, HP(dst), D, src, n, s), C1DA(H, D))

/* device to device */
SHIM_OP_HOOK_C(cuMemcpyDtoD_v2, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n), (dst, src, n),
	     fill_1d(&c_, D, dst, D, src, n, 0), C1D(D, D))
SHIM_OP_HOOK_C(cuMemcpyDtoD_v2_ptds, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n), (dst, src, n),
	     fill_1d(&c_, D, dst, D, src, n, 0), C1D(D, D))
SHIM_OP_HOOK_C(cuMemcpyDtoDAsync_v2, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n, CUstream s),
	     (dst, src, n, s), fill_1d(&c_, D, dst, D, src, n, s), C1DA(D, D))
SHIM_OP_HOOK_C(cuMemcpyDtoDAsync_v2_ptsz, (CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t n, CUstream s),
	     (dst, src, n, s), fill_1d(&c_, D, dst, D, src, n, s), C1DA(D, D))

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
