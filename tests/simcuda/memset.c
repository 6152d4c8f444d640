/* memset.c - the software device's memsets: cuMemsetD{8,16,32} and cuMemsetD2D{8,16,32} in every
 * form, and the memset payload that eager memsets and graph memset nodes run. tests/simcuda layer.
 *
 * A memset is one work item on a stream. The synchronous forms go on the legacy stream (the
 * per-thread stream for _ptds) and run before the call returns; the host clock waits for them
 * only when the target is host memory, since CUDA's memset of device memory does not block the
 * host. The target must lie in one live allocation (device, managed, or pinned host memory
 * through its device address) and be aligned to the element size. */
#include "sim_mem_int.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ the payload */

static void memset_run(struct sim_work *w, void *payload)
{
	struct sim_memset *m = payload;

	(void)w;
	for (size_t y = 0; y < m->height; y++) {
		char *row = m->dst + y * m->pitch;

		switch (m->elem_size) {
		case 1:
			memset(row, (int)(m->value & 0xff), m->width);
			break;
		case 2: {
			uint16_t v = (uint16_t)m->value;

			for (size_t x = 0; x < m->width; x++)
				memcpy(row + 2 * x, &v, 2);
			break;
		}
		default: {
			uint32_t v = m->value;

			for (size_t x = 0; x < m->width; x++)
				memcpy(row + 4 * x, &v, 4);
			break;
		}
		}
	}
	sim_stats_add_bytes_set((uint64_t)m->width * m->elem_size * m->height);
}

static void *memset_clone(const void *payload)
{
	struct sim_memset *m = malloc(sizeof(*m));

	if (m)
		*m = *(const struct sim_memset *)payload;
	return m;
}

static void memset_cost(const void *payload, bool in_graph, struct sim_cost_parts *out)
{
	const struct sim_memset *m = payload;
	double bytes = (double)m->width * m->elem_size * m->height;

	(void)in_graph;
	out->floor_ns = sim_cost.dev_memset_ns;
	out->work_ns = (uint64_t)(bytes / sim_cost.dev_memset_bytes_per_ns);
	out->res = SIM_RES_COPY;
}

static const char *memset_label(const void *payload)
{
	const struct sim_memset *m = payload;

	return m->elem_size == 1 ? "D8" : m->elem_size == 2 ? "D16" : "D32";
}

const struct sim_work_ops sim_memset_ops = {
	.kind = "memset",
	.run = memset_run,
	.free = free,
	.clone = memset_clone,
	.cost = memset_cost,
	.label = memset_label,
};

/* ------------------------------------------------------------------ submitting */

/* Check, build and submit a 2-D memset of width elements by height rows. */
static CUresult memset_2d(CUdeviceptr dst, size_t pitch, unsigned int elem, uint32_t value,
			  size_t width, size_t height, CUstream h, enum sim_pt pt, bool is_async)
{
	struct sim_stream *s;
	struct sim_memset *m;
	enum sim_mem_kind kind;
	enum sim_mem_wait wait;
	size_t row_bytes, span;
	CUresult rc = sim_stream_resolve(h, pt, &s);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (__builtin_mul_overflow(width, elem, &row_bytes))
		return CUDA_ERROR_INVALID_VALUE;
	if (height > 1 && pitch < row_bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (dst % elem != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (width == 0 || height == 0)
		return CUDA_SUCCESS;
	if (__builtin_mul_overflow(height - 1, pitch, &span) ||
	    __builtin_add_overflow(span, row_bytes, &span))
		return CUDA_ERROR_INVALID_VALUE;
	if (!sim_mem_find((uintptr_t)dst, span, NULL, NULL, &kind))
		return CUDA_ERROR_INVALID_VALUE;
	m = malloc(sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*m = (struct sim_memset){
		.dst = (char *)(uintptr_t)dst,
		.pitch = height > 1 ? pitch : row_bytes,
		.elem_size = elem,
		.value = value,
		.width = width,
		.height = height,
	};
	if (is_async)
		wait = SIM_WAIT_NONE;
	else if (kind == SIM_MEM_HOST_PINNED || kind == SIM_MEM_HOST_REGISTERED)
		wait = SIM_WAIT_HOST;
	else
		wait = SIM_WAIT_DRAIN;
	return sim_mem_submit(s, &sim_memset_ops, m, wait, !is_async);
}

/* ------------------------------------------------------------------ entry points: 1-D */

CUresult sim_api_cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	return memset_2d(dstDevice, 0, 1, uc, N, 1, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	return memset_2d(dstDevice, 0, 1, uc, N, 1, NULL, SIM_PT_PER_THREAD, false);
}

CUresult sim_api_cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
	return memset_2d(dstDevice, 0, 2, us, N, 1, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemsetD16_v2_ptds(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
	return memset_2d(dstDevice, 0, 2, us, N, 1, NULL, SIM_PT_PER_THREAD, false);
}

CUresult sim_api_cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
	return memset_2d(dstDevice, 0, 4, ui, N, 1, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
	return memset_2d(dstDevice, 0, 4, ui, N, 1, NULL, SIM_PT_PER_THREAD, false);
}

CUresult sim_api_cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
	return memset_2d(dstDevice, 0, 1, uc, N, 1, hStream, SIM_PT_LEGACY, true);
}

CUresult sim_api_cuMemsetD8Async_ptsz(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
	return memset_2d(dstDevice, 0, 1, uc, N, 1, hStream, SIM_PT_PER_THREAD, true);
}

CUresult sim_api_cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
{
	return memset_2d(dstDevice, 0, 2, us, N, 1, hStream, SIM_PT_LEGACY, true);
}

CUresult sim_api_cuMemsetD16Async_ptsz(CUdeviceptr dstDevice, unsigned short us, size_t N,
				       CUstream hStream)
{
	return memset_2d(dstDevice, 0, 2, us, N, 1, hStream, SIM_PT_PER_THREAD, true);
}

CUresult sim_api_cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
	return memset_2d(dstDevice, 0, 4, ui, N, 1, hStream, SIM_PT_LEGACY, true);
}

CUresult sim_api_cuMemsetD32Async_ptsz(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
	return memset_2d(dstDevice, 0, 4, ui, N, 1, hStream, SIM_PT_PER_THREAD, true);
}

/* ------------------------------------------------------------------ entry points: 2-D */

CUresult sim_api_cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
				 size_t Height)
{
	return memset_2d(dstDevice, dstPitch, 1, uc, Width, Height, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
				      size_t Width, size_t Height)
{
	return memset_2d(dstDevice, dstPitch, 1, uc, Width, Height, NULL, SIM_PT_PER_THREAD, false);
}

CUresult sim_api_cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us, size_t Width,
				  size_t Height)
{
	return memset_2d(dstDevice, dstPitch, 2, us, Width, Height, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
				       size_t Width, size_t Height)
{
	return memset_2d(dstDevice, dstPitch, 2, us, Width, Height, NULL, SIM_PT_PER_THREAD, false);
}

CUresult sim_api_cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
				  size_t Height)
{
	return memset_2d(dstDevice, dstPitch, 4, ui, Width, Height, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
				       size_t Width, size_t Height)
{
	return memset_2d(dstDevice, dstPitch, 4, ui, Width, Height, NULL, SIM_PT_PER_THREAD, false);
}

CUresult sim_api_cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
				   size_t Height, CUstream hStream)
{
	return memset_2d(dstDevice, dstPitch, 1, uc, Width, Height, hStream, SIM_PT_LEGACY, true);
}

CUresult sim_api_cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned char uc,
					size_t Width, size_t Height, CUstream hStream)
{
	return memset_2d(dstDevice, dstPitch, 1, uc, Width, Height, hStream, SIM_PT_PER_THREAD, true);
}

CUresult sim_api_cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
				    size_t Width, size_t Height, CUstream hStream)
{
	return memset_2d(dstDevice, dstPitch, 2, us, Width, Height, hStream, SIM_PT_LEGACY, true);
}

CUresult sim_api_cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned short us,
					 size_t Width, size_t Height, CUstream hStream)
{
	return memset_2d(dstDevice, dstPitch, 2, us, Width, Height, hStream, SIM_PT_PER_THREAD, true);
}

CUresult sim_api_cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
				    size_t Height, CUstream hStream)
{
	return memset_2d(dstDevice, dstPitch, 4, ui, Width, Height, hStream, SIM_PT_LEGACY, true);
}

CUresult sim_api_cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice, size_t dstPitch, unsigned int ui,
					 size_t Width, size_t Height, CUstream hStream)
{
	return memset_2d(dstDevice, dstPitch, 4, ui, Width, Height, hStream, SIM_PT_PER_THREAD, true);
}
