/* batch.h - the by-value tables of cufold's batched copy and memset kernels, shared by the
 * kernels (batch.cu, nvcc), the rewriter (C) and the software device's twins. rewrite layer;
 * header only, no includes beyond <stdint.h>, so both compilers read the same layout.
 *
 * Layout (every field naturally aligned, no hidden padding; the PTX parameter of a table is
 * `.param .align 8 .b8 p[776]`):
 *   copy range   { u64 dst; u64 src; u64 bytes; }              24 bytes
 *   memset range { u64 dst; u64 bytes; u32 value; u32 elem_size; }  24 bytes
 *   table        { range r[32]; u32 count; u32 pad; }           776 bytes
 *   pitched copy { u64 dst, src, width, height, dpitch, spitch; } 48 bytes, 16 per table, the
 *                same 776 bytes
 * The built-in kernel cards (rewrite/builtin_cards.txt) spell these offsets out: change both
 * together. */
#ifndef RW_KERNELS_BATCH_H
#define RW_KERNELS_BATCH_H

#include <stdint.h>

/* Ranges one by-value table holds; more go through the _buf kernels. */
#define RW_BATCH_MAX 32

/* One independent copy: bytes from src to dst. No range's destination may overlap another
 * range's source or destination, nor its own source (the kernels run ranges in any order). */
struct rw_batch_copy_range {
	uint64_t dst;                /* device address written */
	uint64_t src;                /* device address read */
	uint64_t bytes;              /* length; any value, any alignment */
};

/* One memset: byte o of [dst, dst + bytes) gets byte (o % elem_size) of value (little-endian),
 * which is cuMemsetD8/D16/D32 when dst is aligned to elem_size and bytes a multiple of it. */
struct rw_batch_memset_range {
	uint64_t dst;                /* device address written */
	uint64_t bytes;              /* length in bytes (count * elem_size for a driver memset) */
	uint32_t value;              /* the element's value; only its low elem_size bytes count */
	uint32_t elem_size;          /* 1, 2 or 4; anything else is treated as 1 */
};

struct rw_batch_copy_table {
	struct rw_batch_copy_range r[RW_BATCH_MAX];   /* ranges [0, count) are copied */
	uint32_t count;                               /* ranges used; values above RW_BATCH_MAX are clamped */
	uint32_t pad;                                 /* keeps the size a multiple of 8 */
};

struct rw_batch_memset_table {
	struct rw_batch_memset_range r[RW_BATCH_MAX]; /* ranges [0, count) are set */
	uint32_t count;                               /* ranges used; values above RW_BATCH_MAX are clamped */
	uint32_t pad;                                 /* keeps the size a multiple of 8 */
};

/* One independent pitched copy: height rows of width bytes, row r from src + r * spitch to
 * dst + r * dpitch (a 1-D copy is height 1). No region's destination may overlap another
 * region's source or destination, nor its own source. */
struct rw_batch_copy2d_range {
	uint64_t dst;                /* first byte written */
	uint64_t src;                /* first byte read */
	uint64_t width;              /* bytes per row */
	uint64_t height;             /* rows */
	uint64_t dpitch;             /* bytes from one destination row to the next */
	uint64_t spitch;             /* bytes from one source row to the next */
};

/* Pitched regions one by-value table holds (the table has the same 776 bytes). */
#define RW_BATCH2D_MAX 16

struct rw_batch_copy2d_table {
	struct rw_batch_copy2d_range r[RW_BATCH2D_MAX]; /* regions [0, count) are copied */
	uint32_t count;                                 /* regions used; values above RW_BATCH2D_MAX are clamped */
	uint32_t pad;                                   /* keeps the size a multiple of 8 */
};

/* Offsets the kernel cards use (checked by the unit tests with offsetof). */
#define RW_BATCH_RANGE_SIZE 24
#define RW_BATCH_TABLE_SIZE 776
#define RW_BATCH_COUNT_OFFSET 768

#endif
