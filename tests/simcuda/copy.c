/* copy.c - the software device's copies of linear memory: every cuMemcpy* entry point, and the
 * copy payload that eager copies and graph memcpy nodes run. tests/simcuda layer.
 *
 * What each kind of entry point does (CUDA's "API synchronization behavior"):
 *  - every copy is one work item on a stream; a synchronous one (no Async) goes on the legacy
 *    stream (the per-thread stream for _ptds) and runs before the call returns; the host clock
 *    waits for it when a host buffer is involved (device-to-device is not host-synchronous);
 *  - an Async copy from pageable host memory is staged at the call, so the program may reuse
 *    its buffer at once; from pinned or registered memory nothing is staged;
 *  - an Async copy into pageable host memory is synchronous, as in CUDA;
 *  - while the stream is captured nothing is staged or run: the capture records the copy.
 * Addresses are checked at the call: a device-side range outside every live allocation is
 * CUDA_ERROR_INVALID_VALUE. An array side (array.c) is its elements' device allocation, with
 * the array's row pitch; a box outside the array is CUDA_ERROR_INVALID_VALUE. */
#include "sim_mem_int.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ the payload */

/* Bytes from the first to one past the last byte of one side of a built copy (checked for
 * overflow when it was built). */
static size_t side_span(const struct sim_copy *c, size_t pitch, size_t slice_rows)
{
	if (c->width == 0 || c->height == 0 || c->depth == 0)
		return 0;
	return (c->depth - 1) * slice_rows * pitch + (c->height - 1) * pitch + c->width;
}

static size_t copy_bytes(const struct sim_copy *c)
{
	return c->width * c->height * c->depth;
}

static void copy_run(struct sim_work *w, void *payload)
{
	struct sim_copy *c = payload;
	size_t bytes = copy_bytes(c);

	(void)w;
	if (bytes == 0)
		return;
	if (c->dst_pitch == c->width && c->src_pitch == c->width &&
	    (c->depth == 1 || (c->dst_height == c->height && c->src_height == c->height))) {
		memmove(c->dst, c->src, bytes);
	} else {
		for (size_t z = 0; z < c->depth; z++)
			for (size_t y = 0; y < c->height; y++)
				memmove(c->dst + (z * c->dst_height + y) * c->dst_pitch,
					c->src + (z * c->src_height + y) * c->src_pitch, c->width);
	}
	sim_stats_add_bytes_copied(bytes);
}

static void copy_free(void *payload)
{
	struct sim_copy *c = payload;

	if (!c)
		return;
	free(c->staged);
	free(c);
}

static void *copy_clone(const void *payload)
{
	const struct sim_copy *c = payload;
	struct sim_copy *n = malloc(sizeof(*n));
	size_t span;

	if (!n)
		return NULL;
	*n = *c;
	if (c->staged) {
		span = side_span(c, c->src_pitch, c->src_height);
		n->staged = malloc(span ? span : 1);
		if (!n->staged) {
			free(n);
			return NULL;
		}
		memcpy(n->staged, c->src, span);
		n->src = n->staged;
	}
	return n;
}

static void copy_cost(const void *payload, bool in_graph, struct sim_cost_parts *out)
{
	const struct sim_copy *c = payload;
	double bytes = (double)copy_bytes(c);

	(void)in_graph;
	if (c->dst_type == CU_MEMORYTYPE_DEVICE && c->src_type == CU_MEMORYTYPE_DEVICE) {
		out->floor_ns = sim_cost.dev_copy_ns;
		out->work_ns = (uint64_t)(bytes / sim_cost.dev_d2d_bytes_per_ns);
		out->res = SIM_RES_COPY;
	} else {
		out->floor_ns = sim_cost.dev_h2d_ns;
		out->work_ns = (uint64_t)(bytes / sim_cost.dev_h2d_bytes_per_ns);
		out->res = SIM_RES_LINK;
	}
}

static const char *copy_label(const void *payload)
{
	const struct sim_copy *c = payload;
	bool dd = c->dst_type == CU_MEMORYTYPE_DEVICE, sd = c->src_type == CU_MEMORYTYPE_DEVICE;

	return sd ? (dd ? "DtoD" : "DtoH") : (dd ? "HtoD" : "HtoH");
}

const struct sim_work_ops sim_copy_ops = {
	.kind = "memcpy",
	.run = copy_run,
	.free = copy_free,
	.clone = copy_clone,
	.cost = copy_cost,
	.label = copy_label,
};

/* ------------------------------------------------------------------ building a payload */

/* One side of a 3-D copy, as the descriptor gives it. */
struct copy_side {
	CUmemorytype type;           /* host, device, unified or array */
	uintptr_t addr;              /* host or device base address, or the CUarray */
	size_t x, y, z;              /* offset: bytes, rows, slices */
	size_t pitch;                /* bytes between rows */
	size_t slice_rows;           /* rows between slices */
};

/* Bytes from the first to one past the last byte of a w x h x d box, or false on overflow. */
static bool box_span(size_t w, size_t h, size_t d, size_t pitch, size_t rows, size_t *out)
{
	size_t slices, tail;

	*out = 0;
	if (w == 0 || h == 0 || d == 0)
		return true;
	return !__builtin_mul_overflow(d - 1, rows, &slices) &&
	       !__builtin_mul_overflow(slices, pitch, &slices) &&
	       !__builtin_mul_overflow(h - 1, pitch, &tail) &&
	       !__builtin_add_overflow(slices, tail, &tail) &&
	       !__builtin_add_overflow(tail, w, out);
}

/* Resolve one side: its first byte, its row and slice pitch, and the memory it really is. */
static CUresult resolve_side(const struct copy_side *in, size_t w, size_t h, size_t d,
			     uintptr_t *addr, size_t *pitch, size_t *slice_rows, CUmemorytype *type)
{
	size_t p = in->pitch, rows = in->slice_rows, off, span;
	uintptr_t first, last, base, start = in->addr;
	enum sim_mem_kind kind;
	bool found;
	CUresult rc;

	switch (in->type) {
	case CU_MEMORYTYPE_HOST:
	case CU_MEMORYTYPE_DEVICE:
	case CU_MEMORYTYPE_UNIFIED:
		break;
	case CU_MEMORYTYPE_ARRAY:
		/* the array's own layout replaces the descriptor's pitch and height */
		rc = sim__array_side(in->addr, in->x, in->y, in->z, w, h, d, &start, &p, &rows);
		if (rc != CUDA_SUCCESS)
			return rc;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	if ((h > 1 || d > 1) && p < w)
		return CUDA_ERROR_INVALID_VALUE;
	if (d > 1 && rows < h)
		return CUDA_ERROR_INVALID_VALUE;
	if (h <= 1 && d <= 1 && p < w)
		p = w; /* one row: the pitch is never used */
	if (d <= 1 && rows < h)
		rows = h;
	/* first = addr + (z * rows + y) * pitch + x; last = first + span */
	if (__builtin_mul_overflow(in->z, rows, &off) || __builtin_add_overflow(off, in->y, &off) ||
	    __builtin_mul_overflow(off, p, &off) || __builtin_add_overflow(off, in->x, &off) ||
	    __builtin_add_overflow(start, off, &first) || !box_span(w, h, d, p, rows, &span) ||
	    __builtin_add_overflow(first, span, &last))
		return CUDA_ERROR_INVALID_VALUE;
	*addr = first;
	*pitch = p;
	*slice_rows = rows;
	*type = CU_MEMORYTYPE_HOST;
	if (span == 0)
		return CUDA_SUCCESS;
	if (start == 0)
		return CUDA_ERROR_INVALID_VALUE;
	found = sim_mem_find(first, span, &base, NULL, &kind);
	/* A named device address, or any address in the device range, must be allocated. */
	if (!found && (in->type == CU_MEMORYTYPE_DEVICE || sim_mem_in_range(first) ||
		       sim_mem_in_range(last - 1)))
		return CUDA_ERROR_INVALID_VALUE;
	if (found && (kind == SIM_MEM_DEVICE || kind == SIM_MEM_MANAGED))
		*type = CU_MEMORYTYPE_DEVICE;
	return CUDA_SUCCESS;
}

CUresult sim_copy_from_3d(const CUDA_MEMCPY3D *p, struct sim_copy **out)
{
	struct copy_side src, dst;
	struct sim_copy *c;
	uintptr_t src_addr, dst_addr;
	CUresult rc;

	if (!p || !out)
		return CUDA_ERROR_INVALID_VALUE;
	src = (struct copy_side){
		.type = p->srcMemoryType,
		.addr = p->srcMemoryType == CU_MEMORYTYPE_HOST    ? (uintptr_t)p->srcHost
			: p->srcMemoryType == CU_MEMORYTYPE_ARRAY ? (uintptr_t)p->srcArray
								  : (uintptr_t)p->srcDevice,
		.x = p->srcXInBytes, .y = p->srcY, .z = p->srcZ,
		.pitch = p->srcPitch, .slice_rows = p->srcHeight,
	};
	dst = (struct copy_side){
		.type = p->dstMemoryType,
		.addr = p->dstMemoryType == CU_MEMORYTYPE_HOST    ? (uintptr_t)p->dstHost
			: p->dstMemoryType == CU_MEMORYTYPE_ARRAY ? (uintptr_t)p->dstArray
								  : (uintptr_t)p->dstDevice,
		.x = p->dstXInBytes, .y = p->dstY, .z = p->dstZ,
		.pitch = p->dstPitch, .slice_rows = p->dstHeight,
	};
	c = calloc(1, sizeof(*c));
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->width = p->WidthInBytes;
	c->height = p->Height;
	c->depth = p->Depth;
	rc = resolve_side(&src, c->width, c->height, c->depth, &src_addr, &c->src_pitch,
			  &c->src_height, &c->src_type);
	if (rc == CUDA_SUCCESS)
		rc = resolve_side(&dst, c->width, c->height, c->depth, &dst_addr, &c->dst_pitch,
				  &c->dst_height, &c->dst_type);
	if (rc == CUDA_SUCCESS && (p->srcLOD != 0 || p->dstLOD != 0))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc != CUDA_SUCCESS) {
		free(c);
		return rc;
	}
	c->src = (const char *)src_addr;
	c->dst = (char *)dst_addr;
	*out = c;
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ submitting */

CUresult sim_mem_submit(struct sim_stream *s, const struct sim_work_ops *ops, void *payload,
			enum sim_mem_wait wait, bool sync_call)
{
	struct sim_work *w;
	CUresult rc;

	if (sync_call) {
		rc = sim__capture_check_sync(s->ctx, s);
		if (rc != CUDA_SUCCESS) {
			ops->free(payload);
			return rc;
		}
	}
	w = sim_work_new(ops, payload, s->ctx);
	if (!w) {
		ops->free(payload);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* A captured item is recorded, not queued: there is nothing to wait for. */
	if (wait == SIM_WAIT_NONE || s->capture)
		return sim_stream_submit(s, w);
	sim_work_ref(w);
	rc = sim_stream_submit(s, w);
	if (rc == CUDA_SUCCESS) {
		sim_sched_drain(w);
		if (wait == SIM_WAIT_HOST)
			sim_host_wait_until(w->end_ns);
	}
	sim_work_unref(w);
	return rc;
}

/* Copy pageable source bytes aside so the program may reuse its buffer. */
static CUresult copy_stage(struct sim_copy *c)
{
	size_t span = side_span(c, c->src_pitch, c->src_height);
	void *buf = malloc(span ? span : 1);

	if (!buf)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memcpy(buf, c->src, span);
	c->staged = buf;
	c->src = buf;
	return CUDA_SUCCESS;
}

/* Send a built copy to its stream with the waiting its entry point implies; owns c. */
static CUresult copy_submit(struct sim_copy *c, CUstream h, enum sim_pt pt, bool is_async)
{
	struct sim_stream *s;
	enum sim_mem_wait wait;
	bool src_pageable, dst_pageable;
	CUresult rc = sim_stream_resolve(h, pt, &s);

	if (rc != CUDA_SUCCESS || copy_bytes(c) == 0)
		goto out_free;
	src_pageable = c->src_type == CU_MEMORYTYPE_HOST &&
		       !sim_mem_is_pinned(c->src, side_span(c, c->src_pitch, c->src_height));
	dst_pageable = c->dst_type == CU_MEMORYTYPE_HOST &&
		       !sim_mem_is_pinned(c->dst, side_span(c, c->dst_pitch, c->dst_height));
	if (!is_async) {
		bool host_side = c->src_type == CU_MEMORYTYPE_HOST || c->dst_type == CU_MEMORYTYPE_HOST;

		wait = host_side ? SIM_WAIT_HOST : SIM_WAIT_DRAIN;
	} else {
		wait = dst_pageable ? SIM_WAIT_HOST : SIM_WAIT_NONE;
		if (src_pageable && !s->capture) {
			rc = copy_stage(c);
			if (rc != CUDA_SUCCESS)
				goto out_free;
		}
	}
	return sim_mem_submit(s, &sim_copy_ops, c, wait, !is_async);
out_free:
	copy_free(c);
	return rc;
}

static CUresult copy_3d(const CUDA_MEMCPY3D *p, CUstream h, enum sim_pt pt, bool is_async)
{
	struct sim_copy *c;
	CUresult rc = sim_copy_from_3d(p, &c);

	if (rc != CUDA_SUCCESS)
		return rc;
	return copy_submit(c, h, pt, is_async);
}

CUresult sim__copy_3d(const CUDA_MEMCPY3D *p, CUstream h, enum sim_pt pt, bool is_async)
{
	return copy_3d(p, h, pt, is_async);
}

/* One end of a linear copy. */
struct copy_end {
	CUmemorytype type;           /* as the entry point names it */
	uintptr_t addr;              /* its address */
};

static struct copy_end on_device(CUdeviceptr p)
{
	return (struct copy_end){ CU_MEMORYTYPE_DEVICE, (uintptr_t)p };
}

static struct copy_end on_host(const void *p)
{
	return (struct copy_end){ CU_MEMORYTYPE_HOST, (uintptr_t)p };
}

static struct copy_end unified(CUdeviceptr p)
{
	return (struct copy_end){ CU_MEMORYTYPE_UNIFIED, (uintptr_t)p };
}

static void set_end(CUmemorytype *type, const void **host, CUdeviceptr *dev, struct copy_end e)
{
	*type = e.type;
	if (e.type == CU_MEMORYTYPE_HOST)
		*host = (const void *)e.addr;
	else
		*dev = (CUdeviceptr)e.addr;
}

static CUresult copy_1d(struct copy_end dst, struct copy_end src, size_t n, CUstream h,
			enum sim_pt pt, bool is_async)
{
	CUDA_MEMCPY3D p = { 0 };
	const void *dst_host = NULL;

	set_end(&p.srcMemoryType, &p.srcHost, &p.srcDevice, src);
	set_end(&p.dstMemoryType, &dst_host, &p.dstDevice, dst);
	p.dstHost = (void *)dst_host;
	p.WidthInBytes = n;
	p.Height = 1;
	p.Depth = 1;
	return copy_3d(&p, h, pt, is_async);
}

static CUresult copy_2d(const CUDA_MEMCPY2D *q, CUstream h, enum sim_pt pt, bool is_async)
{
	CUDA_MEMCPY3D p = { 0 };

	if (!q)
		return CUDA_ERROR_INVALID_VALUE;
	p.srcXInBytes = q->srcXInBytes;
	p.srcY = q->srcY;
	p.srcMemoryType = q->srcMemoryType;
	p.srcHost = q->srcHost;
	p.srcDevice = q->srcDevice;
	p.srcArray = q->srcArray;
	p.srcPitch = q->srcPitch;
	p.srcHeight = q->Height;
	p.dstXInBytes = q->dstXInBytes;
	p.dstY = q->dstY;
	p.dstMemoryType = q->dstMemoryType;
	p.dstHost = q->dstHost;
	p.dstDevice = q->dstDevice;
	p.dstArray = q->dstArray;
	p.dstPitch = q->dstPitch;
	p.dstHeight = q->Height;
	p.WidthInBytes = q->WidthInBytes;
	p.Height = q->Height;
	p.Depth = 1;
	return copy_3d(&p, h, pt, is_async);
}

/* A context named by a peer copy: it must be live. */
static bool peer_ctx_ok(CUcontext c)
{
	return sim_ctx_from(c) != NULL;
}

static CUresult copy_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
			  size_t n, CUstream h, enum sim_pt pt, bool is_async)
{
	if (!peer_ctx_ok(dst_ctx) || !peer_ctx_ok(src_ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	return copy_1d(on_device(dst), on_device(src), n, h, pt, is_async);
}

static CUresult copy_3d_peer(const CUDA_MEMCPY3D_PEER *q, CUstream h, enum sim_pt pt, bool is_async)
{
	CUDA_MEMCPY3D p = { 0 };

	if (!q)
		return CUDA_ERROR_INVALID_VALUE;
	if ((q->srcContext && !peer_ctx_ok(q->srcContext)) ||
	    (q->dstContext && !peer_ctx_ok(q->dstContext)))
		return CUDA_ERROR_INVALID_CONTEXT;
	p.srcXInBytes = q->srcXInBytes;
	p.srcY = q->srcY;
	p.srcZ = q->srcZ;
	p.srcLOD = q->srcLOD;
	p.srcMemoryType = q->srcMemoryType;
	p.srcHost = q->srcHost;
	p.srcDevice = q->srcDevice;
	p.srcArray = q->srcArray;
	p.srcPitch = q->srcPitch;
	p.srcHeight = q->srcHeight;
	p.dstXInBytes = q->dstXInBytes;
	p.dstY = q->dstY;
	p.dstZ = q->dstZ;
	p.dstLOD = q->dstLOD;
	p.dstMemoryType = q->dstMemoryType;
	p.dstHost = q->dstHost;
	p.dstDevice = q->dstDevice;
	p.dstArray = q->dstArray;
	p.dstPitch = q->dstPitch;
	p.dstHeight = q->dstHeight;
	p.WidthInBytes = q->WidthInBytes;
	p.Height = q->Height;
	p.Depth = q->Depth;
	return copy_3d(&p, h, pt, is_async);
}

/* ------------------------------------------------------------------ entry points: unified */

CUresult sim_api_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	return copy_1d(unified(dst), unified(src), ByteCount, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	return copy_1d(unified(dst), unified(src), ByteCount, NULL, SIM_PT_PER_THREAD, false);
}

CUresult sim_api_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
	return copy_1d(unified(dst), unified(src), ByteCount, hStream, SIM_PT_LEGACY, true);
}

CUresult sim_api_cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
	return copy_1d(unified(dst), unified(src), ByteCount, hStream, SIM_PT_PER_THREAD, true);
}

/* ------------------------------------------------------------------ entry points: peer */

CUresult sim_api_cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
			      CUcontext srcContext, size_t ByteCount)
{
	return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL,
			 SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
				   CUcontext srcContext, size_t ByteCount)
{
	return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, NULL,
			 SIM_PT_PER_THREAD, false);
}

CUresult sim_api_cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
				   CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
	return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream,
			 SIM_PT_LEGACY, true);
}

CUresult sim_api_cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
					CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount,
					CUstream hStream)
{
	return copy_peer(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream,
			 SIM_PT_PER_THREAD, true);
}

/* ------------------------------------------------------------------ entry points: 1-D, synchronous */

CUresult sim_api_cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
	return copy_1d(on_device(dstDevice), on_host(srcHost), ByteCount, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
	return copy_1d(on_device(dstDevice), on_host(srcHost), ByteCount, NULL, SIM_PT_PER_THREAD,
		       false);
}

CUresult sim_api_cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	return copy_1d(on_host(dstHost), on_device(srcDevice), ByteCount, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	return copy_1d(on_host(dstHost), on_device(srcDevice), ByteCount, NULL, SIM_PT_PER_THREAD,
		       false);
}

CUresult sim_api_cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
	return copy_1d(on_device(dstDevice), on_device(srcDevice), ByteCount, NULL, SIM_PT_LEGACY,
		       false);
}

CUresult sim_api_cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
	return copy_1d(on_device(dstDevice), on_device(srcDevice), ByteCount, NULL,
		       SIM_PT_PER_THREAD, false);
}

/* ------------------------------------------------------------------ entry points: 1-D, asynchronous */

CUresult sim_api_cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
				      CUstream hStream)
{
	return copy_1d(on_device(dstDevice), on_host(srcHost), ByteCount, hStream, SIM_PT_LEGACY,
		       true);
}

CUresult sim_api_cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
					   CUstream hStream)
{
	return copy_1d(on_device(dstDevice), on_host(srcHost), ByteCount, hStream, SIM_PT_PER_THREAD,
		       true);
}

CUresult sim_api_cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
				      CUstream hStream)
{
	return copy_1d(on_host(dstHost), on_device(srcDevice), ByteCount, hStream, SIM_PT_LEGACY,
		       true);
}

CUresult sim_api_cuMemcpyDtoHAsync_v2_ptsz(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount,
					   CUstream hStream)
{
	return copy_1d(on_host(dstHost), on_device(srcDevice), ByteCount, hStream, SIM_PT_PER_THREAD,
		       true);
}

CUresult sim_api_cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
				      CUstream hStream)
{
	return copy_1d(on_device(dstDevice), on_device(srcDevice), ByteCount, hStream, SIM_PT_LEGACY,
		       true);
}

CUresult sim_api_cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
					   CUstream hStream)
{
	return copy_1d(on_device(dstDevice), on_device(srcDevice), ByteCount, hStream,
		       SIM_PT_PER_THREAD, true);
}

/* ------------------------------------------------------------------ entry points: 2-D */

CUresult sim_api_cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
	return copy_2d(pCopy, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
	return copy_2d(pCopy, NULL, SIM_PT_PER_THREAD, false);
}

CUresult sim_api_cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
{
	return copy_2d(pCopy, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
	return copy_2d(pCopy, NULL, SIM_PT_PER_THREAD, false);
}

CUresult sim_api_cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
	return copy_2d(pCopy, hStream, SIM_PT_LEGACY, true);
}

CUresult sim_api_cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
	return copy_2d(pCopy, hStream, SIM_PT_PER_THREAD, true);
}

/* ------------------------------------------------------------------ entry points: 3-D */

CUresult sim_api_cuMemcpy3D_v2(const CUDA_MEMCPY3D *pCopy)
{
	return copy_3d(pCopy, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *pCopy)
{
	return copy_3d(pCopy, NULL, SIM_PT_PER_THREAD, false);
}

CUresult sim_api_cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
	return copy_3d(pCopy, hStream, SIM_PT_LEGACY, true);
}

CUresult sim_api_cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *pCopy, CUstream hStream)
{
	return copy_3d(pCopy, hStream, SIM_PT_PER_THREAD, true);
}

CUresult sim_api_cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *pCopy)
{
	return copy_3d_peer(pCopy, NULL, SIM_PT_LEGACY, false);
}

CUresult sim_api_cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *pCopy)
{
	return copy_3d_peer(pCopy, NULL, SIM_PT_PER_THREAD, false);
}

CUresult sim_api_cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
	return copy_3d_peer(pCopy, hStream, SIM_PT_LEGACY, true);
}

CUresult sim_api_cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream)
{
	return copy_3d_peer(pCopy, hStream, SIM_PT_PER_THREAD, true);
}
