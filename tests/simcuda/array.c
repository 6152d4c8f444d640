/* array.c - the software device's CUDA arrays: creation, descriptors, destruction, the
 * array side of copies (copy.c) and the linear copies to and from arrays (cuMemcpyHtoA,
 * AtoH, DtoA, AtoD, AtoA and their async and per-thread forms). tests/simcuda layer.
 *
 * An array is opaque to the program; here its elements are one device allocation (memory.c)
 * laid out row after row, slice after slice, with no padding: the layout only the copies see.
 * No textures or surfaces read it. Copies with an array side are ordinary copies between
 * that allocation and the other side (copy.c resolves the array side with sim__array_side),
 * so they are stream work like any copy, in eager calls and in graph nodes alike.
 * cuArrayDestroy runs all pending work first, as cuMemFree does, so no queued copy touches a
 * destroyed array. Mipmapped, cubemap and sparse arrays are CUDA_ERROR_NOT_SUPPORTED. */
#include "sim_mem_int.h"

#include <stdlib.h>
#include <string.h>

#define SIM_MAGIC_ARRAY 0x41525231u  /* "ARR1" */
#define ARRAY_MAX_DIM 65536u         /* the largest extent accepted in any dimension */

struct sim_array {
	uint32_t magic;              /* SIM_MAGIC_ARRAY; cleared when destroyed */
	CUDA_ARRAY3D_DESCRIPTOR desc; /* as created (Height/Depth 0 for 1-D/2-D) */
	CUdeviceptr data;            /* the elements: a device allocation */
	size_t row_bytes;            /* Width * element size: the row pitch */
	size_t rows;                 /* rows per slice: Height, at least 1 */
	size_t slices;               /* slices (layers): Depth, at least 1 */
};

static struct sim_array *array_from(CUarray h)
{
	struct sim_array *a = (struct sim_array *)h;

	return sim_handle_is_live(a, SIM_MAGIC_ARRAY) ? a : NULL;
}

/* Bytes of one channel of a format; 0 for formats the device does not model. */
static size_t format_bytes(CUarray_format f)
{
	switch (f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4;
	default:
		return 0;
	}
}

static CUresult array_create(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
	const unsigned int known = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_TEXTURE_GATHER;
	struct sim_ctx *ctx;
	struct sim_array *a;
	size_t elem, bytes;
	CUresult rc = sim_ctx_require(&ctx);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!out || !d)
		return CUDA_ERROR_INVALID_VALUE;
	if (d->Flags & ~known)
		return CUDA_ERROR_NOT_SUPPORTED;
	elem = format_bytes(d->Format) * d->NumChannels;
	if (elem == 0 || (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4) || d->Width == 0 ||
	    d->Width > ARRAY_MAX_DIM || d->Height > ARRAY_MAX_DIM || d->Depth > ARRAY_MAX_DIM)
		return CUDA_ERROR_INVALID_VALUE;
	/* a 3-D array needs a height; a layered one may be 1-D (layers of rows) */
	if (d->Depth && !d->Height && !(d->Flags & CUDA_ARRAY3D_LAYERED))
		return CUDA_ERROR_INVALID_VALUE;
	if ((d->Flags & CUDA_ARRAY3D_LAYERED) && !d->Depth)
		return CUDA_ERROR_INVALID_VALUE;
	a = calloc(1, sizeof(*a));
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a->desc = *d;
	a->row_bytes = d->Width * elem;
	a->rows = d->Height ? d->Height : 1;
	a->slices = d->Depth ? d->Depth : 1;
	if (__builtin_mul_overflow(a->row_bytes, a->rows, &bytes) ||
	    __builtin_mul_overflow(bytes, a->slices, &bytes)) {
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	rc = sim_mem_alloc(ctx, bytes, SIM_MEM_DEVICE, NULL, &a->data);
	if (rc != CUDA_SUCCESS) {
		free(a);
		return rc;
	}
	a->magic = SIM_MAGIC_ARRAY;
	sim_handle_add(a);
	*out = (CUarray)a;
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ copy.c's array side */

CUresult sim__array_side(uintptr_t handle, size_t x, size_t y, size_t z, size_t w, size_t h, size_t d,
			 uintptr_t *base, size_t *pitch, size_t *slice_rows)
{
	struct sim_array *a = array_from((CUarray)handle);

	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	if (!a)
		return CUDA_ERROR_INVALID_HANDLE;
	/* the box must lie inside the array (x and w in bytes) */
	if (x > a->row_bytes || w > a->row_bytes - x || y > a->rows || h > a->rows - y || z > a->slices ||
	    d > a->slices - z)
		return CUDA_ERROR_INVALID_VALUE;
	*base = (uintptr_t)a->data;
	*pitch = a->row_bytes;
	*slice_rows = a->rows;
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ entry points: arrays */

CUresult sim_api_cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
	CUDA_ARRAY3D_DESCRIPTOR d = { 0 };
	CUresult rc = CUDA_SUCCESS;

	if (pAllocateArray) {
		d.Width = pAllocateArray->Width;
		d.Height = pAllocateArray->Height;
		d.Format = pAllocateArray->Format;
		d.NumChannels = pAllocateArray->NumChannels;
	}
	rc = array_create(pHandle, pAllocateArray ? &d : NULL);
	return rc;
}

CUresult sim_api_cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
	return array_create(pHandle, pAllocateArray);
}

CUresult sim_api_cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
	struct sim_array *a;
	CUresult rc = CUDA_SUCCESS;

	a = array_from(hArray);
	if (!pArrayDescriptor)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!a)
		rc = CUDA_ERROR_INVALID_HANDLE;
	else {
		pArrayDescriptor->Width = a->desc.Width;
		pArrayDescriptor->Height = a->desc.Height;
		pArrayDescriptor->Format = a->desc.Format;
		pArrayDescriptor->NumChannels = a->desc.NumChannels;
	}
	return rc;
}

CUresult sim_api_cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
	struct sim_array *a;
	CUresult rc = CUDA_SUCCESS;

	a = array_from(hArray);
	if (!pArrayDescriptor)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!a)
		rc = CUDA_ERROR_INVALID_HANDLE;
	else
		*pArrayDescriptor = a->desc;
	return rc;
}

CUresult sim_api_cuArrayDestroy(CUarray hArray)
{
	struct sim_ctx *ctx;
	struct sim_array *a;
	CUresult rc;

	rc = sim_ctx_require(&ctx);
	if (rc != CUDA_SUCCESS)
		goto out;
	a = array_from(hArray);
	if (!a) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	rc = sim__capture_check_sync(ctx, NULL);
	if (rc != CUDA_SUCCESS)
		goto out;
	sim_sched_drain(NULL);
	sim_handle_remove(a);
	a->magic = 0;
	sim_mem_free(a->data);
	free(a);
out:
	return rc;
}

/* ------------------------------------------------------------------ entry points: linear copies */

/* One side of a linear copy to or from an array: offset bytes into its first row (the whole
 * array for a 1-D one; a copy past the end of the row is CUDA_ERROR_INVALID_VALUE). */
static void array_end(CUDA_MEMCPY3D *p, bool is_dst, CUarray a, size_t offset)
{
	if (is_dst) {
		p->dstMemoryType = CU_MEMORYTYPE_ARRAY;
		p->dstArray = a;
		p->dstXInBytes = offset;
	} else {
		p->srcMemoryType = CU_MEMORYTYPE_ARRAY;
		p->srcArray = a;
		p->srcXInBytes = offset;
	}
}

/* A linear copy with one or two array sides; the other side is host or device memory. */
static CUresult array_copy(CUDA_MEMCPY3D *p, size_t n, CUstream h, enum sim_pt pt, bool is_async)
{
	p->WidthInBytes = n;
	p->Height = 1;
	p->Depth = 1;
	return sim__copy_3d(p, h, pt, is_async);
}

static CUresult htoa(CUarray a, size_t off, const void *src, size_t n, CUstream h, enum sim_pt pt, bool is_async)
{
	CUDA_MEMCPY3D p = { 0 };

	array_end(&p, true, a, off);
	p.srcMemoryType = CU_MEMORYTYPE_HOST;
	p.srcHost = src;
	return array_copy(&p, n, h, pt, is_async);
}

static CUresult atoh(void *dst, CUarray a, size_t off, size_t n, CUstream h, enum sim_pt pt, bool is_async)
{
	CUDA_MEMCPY3D p = { 0 };

	array_end(&p, false, a, off);
	p.dstMemoryType = CU_MEMORYTYPE_HOST;
	p.dstHost = dst;
	return array_copy(&p, n, h, pt, is_async);
}

static CUresult dtoa(CUarray a, size_t off, CUdeviceptr src, size_t n, enum sim_pt pt)
{
	CUDA_MEMCPY3D p = { 0 };

	array_end(&p, true, a, off);
	p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	p.srcDevice = src;
	return array_copy(&p, n, NULL, pt, false);
}

static CUresult atod(CUdeviceptr dst, CUarray a, size_t off, size_t n, enum sim_pt pt)
{
	CUDA_MEMCPY3D p = { 0 };

	array_end(&p, false, a, off);
	p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	p.dstDevice = dst;
	return array_copy(&p, n, NULL, pt, false);
}

static CUresult atoa(CUarray dst, size_t dst_off, CUarray src, size_t src_off, size_t n, enum sim_pt pt)
{
	CUDA_MEMCPY3D p = { 0 };

	array_end(&p, true, dst, dst_off);
	array_end(&p, false, src, src_off);
	return array_copy(&p, n, NULL, pt, false);
}

CUresult sim_api_cuMemcpyHtoA_v2(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount)
{
	return htoa(dstArray, dstOffset, srcHost, ByteCount, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemcpyHtoA_v2_ptds(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount)
{
	return htoa(dstArray, dstOffset, srcHost, ByteCount, NULL, SIM_PT_PER_THREAD, false);
}

CUresult sim_api_cuMemcpyAtoH_v2(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
	return atoh(dstHost, srcArray, srcOffset, ByteCount, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemcpyAtoH_v2_ptds(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
	return atoh(dstHost, srcArray, srcOffset, ByteCount, NULL, SIM_PT_PER_THREAD, false);
}

CUresult sim_api_cuMemcpyHtoAAsync_v2(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount,
				      CUstream hStream)
{
	return htoa(dstArray, dstOffset, srcHost, ByteCount, hStream, SIM_PT_LEGACY, true);
}

CUresult sim_api_cuMemcpyHtoAAsync_v2_ptsz(CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount,
					   CUstream hStream)
{
	return htoa(dstArray, dstOffset, srcHost, ByteCount, hStream, SIM_PT_PER_THREAD, true);
}

CUresult sim_api_cuMemcpyAtoHAsync_v2(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
				      CUstream hStream)
{
	return atoh(dstHost, srcArray, srcOffset, ByteCount, hStream, SIM_PT_LEGACY, true);
}

CUresult sim_api_cuMemcpyAtoHAsync_v2_ptsz(void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount,
					   CUstream hStream)
{
	return atoh(dstHost, srcArray, srcOffset, ByteCount, hStream, SIM_PT_PER_THREAD, true);
}

CUresult sim_api_cuMemcpyDtoA_v2(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount)
{
	return dtoa(dstArray, dstOffset, srcDevice, ByteCount, SIM_PT_LEGACY);
}

CUresult sim_api_cuMemcpyDtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount)
{
	return dtoa(dstArray, dstOffset, srcDevice, ByteCount, SIM_PT_PER_THREAD);
}

CUresult sim_api_cuMemcpyAtoD_v2(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
	return atod(dstDevice, srcArray, srcOffset, ByteCount, SIM_PT_LEGACY);
}

CUresult sim_api_cuMemcpyAtoD_v2_ptds(CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount)
{
	return atod(dstDevice, srcArray, srcOffset, ByteCount, SIM_PT_PER_THREAD);
}

CUresult sim_api_cuMemcpyAtoA_v2(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
				 size_t ByteCount)
{
	return atoa(dstArray, dstOffset, srcArray, srcOffset, ByteCount, SIM_PT_LEGACY);
}

CUresult sim_api_cuMemcpyAtoA_v2_ptds(CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset,
				      size_t ByteCount)
{
	return atoa(dstArray, dstOffset, srcArray, srcOffset, ByteCount, SIM_PT_PER_THREAD);
}
