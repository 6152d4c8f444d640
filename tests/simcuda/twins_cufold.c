/* twins_cufold.c - host twins of cufold's own kernels (rewrite/kernels/batch.cu), exported as
 * sim_twin_<entry> so twins.c finds them by name. tests/simcuda layer; the table layouts come
 * from rewrite/kernels/batch.h, the header the kernels themselves are compiled with.
 *
 * The kernels spread ranges over blocks and bytes over threads with stride loops, so whatever
 * the grid, every range is done completely: the twins do each range whole, in table order.
 * A copy moves bytes (memmove: overlapping ranges are the caller's error, and this keeps the
 * twin defined for them); a memset writes byte o of a range as byte (o % elem_size) of the
 * value, exactly the kernel's rule, alignment regardless. */
#include "sim_int.h"

#include <stdint.h>
#include <string.h>

#include "rewrite/kernels/batch.h"

void sim_twin_cufold_batch_copy(const struct sim_launch *l);
void sim_twin_cufold_batch_memset(const struct sim_launch *l);
void sim_twin_cufold_batch_copy_buf(const struct sim_launch *l);
void sim_twin_cufold_batch_copy2d(const struct sim_launch *l);
void sim_twin_cufold_batch_memset_buf(const struct sim_launch *l);

_Static_assert(sizeof(struct rw_batch_copy_table) == RW_BATCH_TABLE_SIZE, "copy table layout");
_Static_assert(sizeof(struct rw_batch_memset_table) == RW_BATCH_TABLE_SIZE, "memset table layout");
_Static_assert(sizeof(struct rw_batch_copy2d_table) == RW_BATCH_TABLE_SIZE, "pitched copy table layout");

/* Whether the launch has the parameter sizes the kernel was compiled with. */
static bool sizes_are(const struct sim_launch *l, unsigned int n, size_t s0, size_t s1)
{
	if (l->param_count == n && l->param_sizes[0] == s0 && (n < 2 || l->param_sizes[1] == s1))
		return true;
	sim_log("kernel %s: its parameters do not match cufold's kernel of that name; not run",
		l->name);
	return false;
}

static void copy_range(const struct rw_batch_copy_range *r)
{
	if (r->bytes)
		memmove((void *)(uintptr_t)r->dst, (const void *)(uintptr_t)r->src, (size_t)r->bytes);
}

static void memset_range(const struct rw_batch_memset_range *r)
{
	unsigned char *d = (unsigned char *)(uintptr_t)r->dst;
	unsigned int es = r->elem_size == 2 || r->elem_size == 4 ? r->elem_size : 1;

	uint64_t filled;

	/* one element, then the filled prefix doubled: every copy starts at a multiple of es, so
	 * byte o still gets byte o % es of the value */
	for (filled = 0; filled < es && filled < r->bytes; filled++)
		d[filled] = (unsigned char)(r->value >> (8 * (unsigned int)filled));
	while (filled < r->bytes) {
		uint64_t n = filled < r->bytes - filled ? filled : r->bytes - filled;

		memcpy(d + filled, d, (size_t)n);
		filled += n;
	}
}

void sim_twin_cufold_batch_copy(const struct sim_launch *l)
{
	struct rw_batch_copy_table t;

	if (!sizes_are(l, 1, sizeof(t), 0))
		return;
	memcpy(&t, l->params[0], sizeof(t));
	for (uint32_t r = 0; r < t.count && r < RW_BATCH_MAX; r++)
		copy_range(&t.r[r]);
}

void sim_twin_cufold_batch_memset(const struct sim_launch *l)
{
	struct rw_batch_memset_table t;

	if (!sizes_are(l, 1, sizeof(t), 0))
		return;
	memcpy(&t, l->params[0], sizeof(t));
	for (uint32_t r = 0; r < t.count && r < RW_BATCH_MAX; r++)
		memset_range(&t.r[r]);
}

void sim_twin_cufold_batch_copy_buf(const struct sim_launch *l)
{
	const struct rw_batch_copy_range *ranges;
	uint32_t count;

	if (!sizes_are(l, 2, sizeof(void *), sizeof(uint32_t)))
		return;
	memcpy(&ranges, l->params[0], sizeof(ranges));
	memcpy(&count, l->params[1], sizeof(count));
	for (uint32_t r = 0; r < count; r++) {
		struct rw_batch_copy_range one;

		memcpy(&one, &ranges[r], sizeof(one));
		copy_range(&one);
	}
}

void sim_twin_cufold_batch_memset_buf(const struct sim_launch *l)
{
	const struct rw_batch_memset_range *ranges;
	uint32_t count;

	if (!sizes_are(l, 2, sizeof(void *), sizeof(uint32_t)))
		return;
	memcpy(&ranges, l->params[0], sizeof(ranges));
	memcpy(&count, l->params[1], sizeof(count));
	for (uint32_t r = 0; r < count; r++) {
		struct rw_batch_memset_range one;

		memcpy(&one, &ranges[r], sizeof(one));
		memset_range(&one);
	}
}

void sim_twin_cufold_batch_copy2d(const struct sim_launch *l)
{
	struct rw_batch_copy2d_table t;

	if (!sizes_are(l, 1, sizeof(t), 0))
		return;
	memcpy(&t, l->params[0], sizeof(t));
	for (uint32_t r = 0; r < t.count && r < RW_BATCH2D_MAX; r++)
		for (uint64_t row = 0; row < t.r[r].height; row++)
			memmove((void *)(uintptr_t)(t.r[r].dst + row * t.r[r].dpitch),
				(const void *)(uintptr_t)(t.r[r].src + row * t.r[r].spitch), (size_t)t.r[r].width);
}
