/* hooks_memset.c - hand-written hooks of every cuMemsetD{8,16,32} and cuMemsetD2D{8,16,32}
 * entry point: synchronous (legacy and _ptds) and asynchronous (legacy and _ptsz). shim layer.
 *
 * Each becomes a CAP_OP_MEMSET. A synchronous memset ends its window when its target is
 * host-visible (pinned, registered or managed memory, or memory cufold does not know), because
 * then it blocks the host; of device memory it does not (capture/record.c decides). */
#include "shim/engine.h"

static void fill(struct cap_call *c, CUdeviceptr dst, size_t pitch, unsigned int elem, unsigned int value, size_t w,
		 size_t h, CUstream s)
{
	c->kind = CAP_OP_MEMSET;
	c->stream = s;
	c->u.memset.dst = dst;
	c->u.memset.pitch = pitch ? pitch : w * elem;
	c->u.memset.elem_size = elem;
	c->u.memset.value = value;
	c->u.memset.width = w;
	c->u.memset.height = h;
}

/* a 1-D memset's arguments read back from what fill stored (SHIM_OP_HOOK_C; a 2-D one's pitch is
 * not: fill makes a 0 pitch the row's width) */
#define D1_CARGS_(T) c_.u.memset.dst, (T)c_.u.memset.value, c_.u.memset.width
#define D1_CARGS(T) (D1_CARGS_(T))
#define D1A_CARGS(T) (D1_CARGS_(T), c_.stream)
#define D1(symbol, T, elem) \
	SHIM_OP_HOOK_C(symbol, (CUdeviceptr_v2 d, T v, size_t n), (d, v, n), fill(&c_, d, 0, elem, v, n, 1, 0), \
		       D1_CARGS(T))
#define D1A(symbol, T, elem) \
	SHIM_OP_HOOK_C(symbol, (CUdeviceptr_v2 d, T v, size_t n, CUstream s), (d, v, n, s), \
		       fill(&c_, d, 0, elem, v, n, 1, s), D1A_CARGS(T))
#define D2(symbol, T, elem) \
	SHIM_OP_HOOK(symbol, (CUdeviceptr_v2 d, size_t pitch, T v, size_t w, size_t h), (d, pitch, v, w, h), \
		     fill(&c_, d, pitch, elem, v, w, h, 0))
#define D2A(symbol, T, elem) \
	SHIM_OP_HOOK(symbol, (CUdeviceptr_v2 d, size_t pitch, T v, size_t w, size_t h, CUstream s), \
		     (d, pitch, v, w, h, s), fill(&c_, d, pitch, elem, v, w, h, s))

D1(cuMemsetD8_v2, unsigned char, 1)
D1(cuMemsetD8_v2_ptds, unsigned char, 1)
D1(cuMemsetD16_v2, unsigned short, 2)
D1(cuMemsetD16_v2_ptds, unsigned short, 2)
D1(cuMemsetD32_v2, unsigned int, 4)
D1(cuMemsetD32_v2_ptds, unsigned int, 4)
D1A(cuMemsetD8Async, unsigned char, 1)
D1A(cuMemsetD8Async_ptsz, unsigned char, 1)
D1A(cuMemsetD16Async, unsigned short, 2)
D1A(cuMemsetD16Async_ptsz, unsigned short, 2)
D1A(cuMemsetD32Async, unsigned int, 4)
D1A(cuMemsetD32Async_ptsz, unsigned int, 4)
D2(cuMemsetD2D8_v2, unsigned char, 1)
D2(cuMemsetD2D8_v2_ptds, unsigned char, 1)
D2(cuMemsetD2D16_v2, unsigned short, 2)
D2(cuMemsetD2D16_v2_ptds, unsigned short, 2)
D2(cuMemsetD2D32_v2, unsigned int, 4)
D2(cuMemsetD2D32_v2_ptds, unsigned int, 4)
D2A(cuMemsetD2D8Async, unsigned char, 1)
D2A(cuMemsetD2D8Async_ptsz, unsigned char, 1)
D2A(cuMemsetD2D16Async, unsigned short, 2)
D2A(cuMemsetD2D16Async_ptsz, unsigned short, 2)
D2A(cuMemsetD2D32Async, unsigned int, 4)
D2A(cuMemsetD2D32Async_ptsz, unsigned int, 4)
