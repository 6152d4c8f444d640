/* hooks_mem.c - hand-written hooks of the calls that feed the allocation map: allocations of
 * device, stream-ordered, managed, pinned and registered host memory and VMM mappings (after
 * the driver succeeded), and frees and unmaps (boundaries: the window closes and the range
 * leaves the map before the driver frees it). shim layer.
 *
 * The map updates of cuMemMap/cuMemUnmap are covered by the unit tests of capture/alloc.c and,
 * against the software device's virtual memory management, by tests/e2e/capture_vmm_grow.sh (an unmap
 * ends exactly the windows that reference it). cuMemCreate and cuMemRelease handle physical
 * memory only and stay unmodeled. */
#include "shim/engine.h"

#define U64(p) ((uint64_t)(uintptr_t)(p))

/* An allocation whose address comes back in *out (a CUdeviceptr or a host pointer). */
#define ALLOC_HOOK(symbol, kind, decls, args, out, size) \
	SHIM_HOOK(symbol) decls \
	{ \
		CUresult rc; \
		if (shim_is_inside()) \
			return drv_real.p_##symbol args; \
		shim_engine_neutral(DRV_ID_##symbol); \
		rc = drv_real.p_##symbol args; \
		if (rc == CUDA_ERROR_OUT_OF_MEMORY && shim_engine_frees_release()) \
			rc = drv_real.p_##symbol args; /* the frees cufold held may make room */ \
		if (rc == CUDA_SUCCESS && (out)) \
			shim_engine_alloc(DRV_ID_##symbol, U64(*(out)), (size), CAP_ALLOC_##kind); \
		return rc; \
	}

ALLOC_HOOK(cuMemAlloc_v2, DEVICE, (CUdeviceptr_v2 * p, size_t n), (p, n), p, n)
ALLOC_HOOK(cuMemAllocPitch_v2, DEVICE, (CUdeviceptr_v2 * p, size_t *pitch, size_t w, size_t h, unsigned int elem),
	   (p, pitch, w, h, elem), p, pitch ? *pitch * h : 0)
ALLOC_HOOK(cuMemAllocManaged, MANAGED, (CUdeviceptr_v2 * p, size_t n, unsigned int flags), (p, n, flags), p, n)
ALLOC_HOOK(cuMemAllocHost_v2, HOST_PINNED, (void **p, size_t n), (p, n), p, n)
ALLOC_HOOK(cuMemHostAlloc, HOST_PINNED, (void **p, size_t n, unsigned int flags), (p, n, flags), p, n)
ALLOC_HOOK(cuMemAllocAsync, ASYNC, (CUdeviceptr_v2 * p, size_t n, CUstream s), (p, n, s), p, n)
ALLOC_HOOK(cuMemAllocAsync_ptsz, ASYNC, (CUdeviceptr_v2 * p, size_t n, CUstream s), (p, n, s), p, n)
ALLOC_HOOK(cuMemAllocFromPoolAsync, ASYNC, (CUdeviceptr_v2 * p, size_t n, CUmemoryPool pool, CUstream s),
	   (p, n, pool, s), p, n)
ALLOC_HOOK(cuMemAllocFromPoolAsync_ptsz, ASYNC, (CUdeviceptr_v2 * p, size_t n, CUmemoryPool pool, CUstream s),
	   (p, n, pool, s), p, n)

SHIM_HOOK(cuMemHostRegister_v2)(void *p, size_t n, unsigned int flags)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuMemHostRegister_v2(p, n, flags);
	shim_engine_neutral(DRV_ID_cuMemHostRegister_v2);
	rc = drv_real.p_cuMemHostRegister_v2(p, n, flags);
	if (rc == CUDA_SUCCESS)
		shim_engine_alloc(DRV_ID_cuMemHostRegister_v2, U64(p), n, CAP_ALLOC_HOST_REGISTERED);
	return rc;
}

SHIM_HOOK(cuMemMap)(CUdeviceptr_v2 ptr, size_t size, size_t offset, CUmemGenericAllocationHandle_v1 h,
		    unsigned long long flags)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuMemMap(ptr, size, offset, h, flags);
	shim_engine_neutral(DRV_ID_cuMemMap);
	rc = drv_real.p_cuMemMap(ptr, size, offset, h, flags);
	if (rc == CUDA_SUCCESS)
		shim_engine_alloc(DRV_ID_cuMemMap, ptr, size, CAP_ALLOC_MAPPED);
	return rc;
}

SHIM_HOOK(cuMemUnmap)(CUdeviceptr_v2 ptr, size_t size)
{
	if (!shim_is_inside())
		shim_engine_unmap(DRV_ID_cuMemUnmap, ptr, size);
	return drv_real.p_cuMemUnmap(ptr, size);
}

/* A free of the allocation at base. */
#define FREE_HOOK(symbol, decls, args, base) \
	SHIM_HOOK(symbol) decls \
	{ \
		struct shim_free_tok t; \
		CUresult rc; \
		if (shim_is_inside()) \
			return drv_real.p_##symbol args; \
		shim_engine_free_begin(DRV_ID_##symbol, U64(base), &t); \
		rc = drv_real.p_##symbol args; \
		shim_engine_free_end(&t, rc); \
		return rc; \
	}

FREE_HOOK(cuMemFree_v2, (CUdeviceptr_v2 p), (p), p)
FREE_HOOK(cuMemFreeHost, (void *p), (p), p)
FREE_HOOK(cuMemHostUnregister, (void *p), (p), p)

/* A stream-ordered free: held behind replay's deferred work (engine.h), never a boundary. */
#define FREE_ASYNC_HOOK(symbol) \
	SHIM_HOOK(symbol)(CUdeviceptr_v2 p, CUstream s) \
	{ \
		struct shim_free_tok t; \
		CUresult rc; \
		if (shim_is_inside()) \
			return drv_real.p_##symbol(p, s); \
		if (shim_engine_free_async(DRV_ID_##symbol, U64(p), s, &t)) \
			return CUDA_SUCCESS; \
		rc = drv_real.p_##symbol(p, s); \
		shim_engine_free_end(&t, rc); \
		return rc; \
	}

FREE_ASYNC_HOOK(cuMemFreeAsync)
FREE_ASYNC_HOOK(cuMemFreeAsync_ptsz)
