/* batch.cu - cufold's own kernels: k independent copies or memsets in one launch, the table of
 * ranges passed by value (up to RW_BATCH_MAX) or read from a small device buffer (any count).
 * rewrite layer; compiled to PTX by nvcc at build time and embedded in libcufold.so
 * (rewrite/kernels.c). Twins: tests/simcuda/twins_cufold.c. Cards: rewrite/builtin_cards.txt.
 *
 * Any grid is correct: ranges are dealt to blocks by (blockIdx.y, blockIdx.z) in a stride loop
 * and the bytes of a range to the threads of the x dimension in a grid-stride loop, so a small
 * grid does the same work in more iterations (the twin copies everything, whatever the grid).
 * A useful launch is grid (ceil(max bytes / (16 * 256)), k, 1), block (256, 1, 1).
 *
 * Alignment: a range is cut into a head of single bytes up to the first 16-byte boundary of
 * dst, a body of 16-byte vectors, and a tail of single bytes. For a copy the body is used only
 * when dst and src are equally misaligned (then both reach the boundary together); otherwise
 * the whole range moves byte by byte. Bytes are bytes: NaN payloads and padding move as is. */
#include "batch.h"

/* The thread's position in the x dimension of the whole grid, counting every thread of a
 * block (y and z threads too), and the number of such positions. */
__device__ static inline void lane(unsigned long long *tid, unsigned long long *stride)
{
	unsigned long long per_block = (unsigned long long)blockDim.x * blockDim.y * blockDim.z;
	unsigned long long t = threadIdx.x + (unsigned long long)blockDim.x *
					       (threadIdx.y + (unsigned long long)blockDim.y * threadIdx.z);

	*tid = blockIdx.x * per_block + t;
	*stride = gridDim.x * per_block;
}

/* Split n bytes at dst into head bytes, 16-byte vectors and tail bytes. */
__device__ static inline void cut(unsigned long long dst, bool vectors, unsigned long long n,
				  unsigned long long *head, unsigned long long *nvec)
{
	unsigned long long h = vectors ? (16 - (dst & 15)) & 15 : n;

	if (h > n)
		h = n;
	*head = h;
	*nvec = (n - h) / 16;
}

__device__ static void copy_range(unsigned long long dst, unsigned long long src,
				  unsigned long long n)
{
	unsigned char *d = (unsigned char *)dst;
	const unsigned char *s = (const unsigned char *)src;
	unsigned long long tid, stride, head, nvec, body, items;

	lane(&tid, &stride);
	cut(dst, ((dst ^ src) & 15) == 0, n, &head, &nvec);
	body = head + nvec * 16;
	items = head + nvec + (n - body);
	for (unsigned long long i = tid; i < items; i += stride) {
		if (i < head) {
			d[i] = s[i];
		} else if (i < head + nvec) {
			unsigned long long o = head + (i - head) * 16;

			*(uint4 *)(d + o) = *(const uint4 *)(s + o);
		} else {
			unsigned long long o = body + (i - head - nvec);

			d[o] = s[o];
		}
	}
}

/* Byte o of the range is byte (o % es) of value. A 16-byte vector starting at offset o has
 * the same phase o % es in each of its four words (es divides 4), so one 32-bit pattern
 * serves the whole body. */
__device__ static void memset_range(unsigned long long dst, unsigned long long n,
				    unsigned int value, unsigned int es)
{
	unsigned char *d = (unsigned char *)dst;
	unsigned long long tid, stride, head, nvec, body, items;
	unsigned int pat = 0;

	if (es != 2 && es != 4)
		es = 1;
	lane(&tid, &stride);
	cut(dst, true, n, &head, &nvec);
	body = head + nvec * 16;
	items = head + nvec + (n - body);
	for (unsigned int j = 0; j < 4; j++)
		pat |= ((value >> (8 * (unsigned int)((head + j) % es))) & 0xffu) << (8 * j);
	for (unsigned long long i = tid; i < items; i += stride) {
		unsigned long long o;

		if (i < head) {
			o = i;
		} else if (i < head + nvec) {
			o = head + (i - head) * 16;
			*(uint4 *)(d + o) = make_uint4(pat, pat, pat, pat);
			continue;
		} else {
			o = body + (i - head - nvec);
		}
		d[o] = (unsigned char)(value >> (8 * (unsigned int)(o % es)));
	}
}

/* The first range of this block and the step between its ranges. */
__device__ static inline unsigned int first_range(void)
{
	return blockIdx.y + gridDim.y * blockIdx.z;
}

__device__ static inline unsigned int range_step(void)
{
	return gridDim.y * gridDim.z;
}

extern "C" __global__ void cufold_batch_copy(struct rw_batch_copy_table t)
{
	unsigned int count = t.count < RW_BATCH_MAX ? t.count : RW_BATCH_MAX;

	for (unsigned int r = first_range(); r < count; r += range_step())
		copy_range(t.r[r].dst, t.r[r].src, t.r[r].bytes);
}

extern "C" __global__ void cufold_batch_memset(struct rw_batch_memset_table t)
{
	unsigned int count = t.count < RW_BATCH_MAX ? t.count : RW_BATCH_MAX;

	for (unsigned int r = first_range(); r < count; r += range_step())
		memset_range(t.r[r].dst, t.r[r].bytes, t.r[r].value, t.r[r].elem_size);
}

/* Rows of a pitched region, dealt to the x dimension of the grid: 4-byte words when every
 * address, width and pitch allows, else bytes. */
__device__ static void copy_region(const struct rw_batch_copy2d_range *g)
{
	unsigned long long tid, stride;
	bool words = ((g->dst | g->src | g->width | g->dpitch | g->spitch) & 3) == 0;
	unsigned long long unit = words ? 4 : 1, per_row = g->width / unit, items = per_row * g->height;

	lane(&tid, &stride);
	for (unsigned long long i = tid; i < items; i += stride) {
		unsigned long long row = i / per_row, col = (i % per_row) * unit;
		unsigned char *d = (unsigned char *)(g->dst + row * g->dpitch + col);
		const unsigned char *s = (const unsigned char *)(g->src + row * g->spitch + col);

		if (words)
			*(unsigned int *)d = *(const unsigned int *)s;
		else
			*d = *s;
	}
}

extern "C" __global__ void cufold_batch_copy2d(struct rw_batch_copy2d_table t)
{
	unsigned int count = t.count < RW_BATCH2D_MAX ? t.count : RW_BATCH2D_MAX;

	for (unsigned int r = first_range(); r < count; r += range_step())
		copy_region(&t.r[r]);
}

/* The same over a table in device memory: ranges[0, count). */
extern "C" __global__ void cufold_batch_copy_buf(const struct rw_batch_copy_range *ranges,
						 unsigned int count)
{
	for (unsigned int r = first_range(); r < count; r += range_step())
		copy_range(ranges[r].dst, ranges[r].src, ranges[r].bytes);
}

extern "C" __global__ void cufold_batch_memset_buf(const struct rw_batch_memset_range *ranges,
						   unsigned int count)
{
	for (unsigned int r = first_range(); r < count; r += range_step())
		memset_range(ranges[r].dst, ranges[r].bytes, ranges[r].value, ranges[r].elem_size);
}
