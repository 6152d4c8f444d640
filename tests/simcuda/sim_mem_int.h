/* sim_mem_int.h - private interface shared by the software device's memory files (memory.c,
 * copy.c, memset.c) and usable by graph nodes. tests/simcuda layer; extends sim_int.h. */
#ifndef SIM_MEM_INT_H
#define SIM_MEM_INT_H

#include "sim_int.h"

struct sim_pool;

/* Allocate bytes of device (SIM_MEM_DEVICE) or managed (SIM_MEM_MANAGED) memory in the reserved
 * range for ctx, optionally charged to a pool. CUDA_ERROR_INVALID_VALUE for 0 bytes,
 * CUDA_ERROR_OUT_OF_MEMORY when the device is full. */
CUresult sim_mem_alloc(struct sim_ctx *ctx, size_t bytes, enum sim_mem_kind kind,
		       struct sim_pool *pool, CUdeviceptr *out);
/* Release the device or managed allocation that starts at p, at once (no draining: the caller
 * has ordered it after every user). CUDA_ERROR_INVALID_VALUE when p starts none. */
CUresult sim_mem_free(CUdeviceptr p);

/* How an entry point waits for the stream work it submitted. */
enum sim_mem_wait {
	SIM_WAIT_NONE = 0,  /* asynchronous: return once queued */
	SIM_WAIT_DRAIN = 1, /* run it before returning; the host clock does not wait for it */
	SIM_WAIT_HOST = 2,  /* run it before returning and move the host clock to its end */
};

/* Submit a copy or memset payload (ops/payload, ownership passes) to s. When wait is not
 * NONE and s is not being captured, run pending work until the item has run. sync_call says
 * the entry point is a synchronous one (asks the capture layer whether it may go on). */
CUresult sim_mem_submit(struct sim_stream *s, const struct sim_work_ops *ops, void *payload,
			enum sim_mem_wait wait, bool sync_call);

/* Whether p lies in the reserved device range (allocated or not). */
bool sim_mem_in_range(uintptr_t p);

/* A copy from a 3-D descriptor submitted as its entry point would (copy.c): synchronous or not,
 * on stream h resolved by pt. For the array copies of array.c. */
CUresult sim__copy_3d(const CUDA_MEMCPY3D *p, CUstream h, enum sim_pt pt, bool is_async);
/* The array side of a copy (array.c): the array whose handle is handle must hold the box of
 * w bytes x h rows x d slices at (x bytes, y, z); gives its elements' first byte, row pitch and
 * rows per slice. CUDA_ERROR_INVALID_HANDLE for a dead handle, INVALID_VALUE for none or outside it. */
CUresult sim__array_side(uintptr_t handle, size_t x, size_t y, size_t z, size_t w, size_t h, size_t d,
			 uintptr_t *base, size_t *pitch, size_t *slice_rows);

/* Virtual memory management (vmm.c) on the same range and allocation map (memory.c). */
/* Take size bytes aligned to align (a power of two, a multiple of the page size) from the range
 * as an address reservation, uncharged. CUDA_ERROR_OUT_OF_MEMORY when the range is full. */
CUresult sim__mem_range_reserve(size_t size, size_t align, uintptr_t *out);
/* Give a reservation back to the range (the caller has made its pages ordinary memory again). */
void sim__mem_range_release(uintptr_t base, size_t size);
/* Count physical bytes (cuMemCreate) as used device memory; false when the device is full. */
bool sim__mem_charge(size_t bytes);
void sim__mem_uncharge(size_t bytes);
/* Enter accessible mapped memory [base, base+size) in the allocation map as device memory that
 * cuMemFree refuses (CUDA_ERROR_INVALID_VALUE when it overlaps an entry); remove every such
 * entry that starts inside [base, base+size). */
CUresult sim__mem_map_vmm(uintptr_t base, size_t size, struct sim_ctx *ctx, int device);
void sim__mem_unmap_vmm(uintptr_t base, size_t size);

#endif
