/* alloc.c - the allocation map: every range of memory the program owns through the driver
 * (device, stream-ordered, managed, pinned and registered host memory, mapped VMM ranges), so
 * any pointer word resolves to (allocation, offset) in O(log n). capture layer.
 *
 * A sorted array of non-overlapping ranges: lookups are a binary search, inserts and removals
 * move the tail (programs hold thousands of allocations at most, and allocate far less often
 * than they launch). When the driver hands out a range that overlaps one we still hold, the
 * old one was freed by a path we did not see (a pool trimmed, a context destroyed): it goes. */
#include <stdlib.h>
#include <string.h>

#include "capture/capture_int.h"
#include "common/compiler.h"
#include "common/errors.h"

/* What the driver said of pages outside the map (cap__alloc_probe): ce->alloc.probes,
 * CAP_PROBE_SLOTS entries direct-mapped by page. */
#define PROBE_PAGE_SHIFT 12

/* Index of the first range whose base is > addr. */
static size_t upper(struct cap_engine *ce, uint64_t addr)
{
	size_t lo = 0, hi = ce->alloc.nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ce->alloc.ranges[mid].base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The last two ranges found are tried first: a copy's two sides and the ops around it name a
 * few allocations over and over, and the search cost forty instructions each (issue 22). A hint
 * needs no invalidation: the ranges are sorted and disjoint, so whichever range sits at a hinted
 * index now is the answer when it holds addr. */
const struct cap_alloc *cap_alloc_find(struct cap_engine *ce, uint64_t addr)
{
	struct cap_alloc_map *m = &ce->alloc;
	size_t i;

	for (unsigned int k = 0; k < 2; k++) {
		i = m->hint[k];
		if (i < m->nranges && addr - m->ranges[i].base < m->ranges[i].size)
			return &m->ranges[i];
	}
	i = upper(ce, addr);
	if (i == 0)
		return NULL;
	i--;
	if (addr - m->ranges[i].base < m->ranges[i].size) {
		m->hint[1] = m->hint[0];
		m->hint[0] = i;
		return &m->ranges[i];
	}
	return NULL;
}

static int insert(struct cap_engine *ce, const struct cap_alloc *a)
{
	uint64_t end = a->base + a->size;
	size_t i, j;

	ce->alloc.gen++;
	if (a->size == 0 || end < a->base)
		return -CF_EINVAL;
	/* drop what overlaps [base, end) */
	i = upper(ce, a->base);
	if (i > 0 && ce->alloc.ranges[i - 1].base + ce->alloc.ranges[i - 1].size > a->base)
		i--;
	for (j = i; j < ce->alloc.nranges && ce->alloc.ranges[j].base < end; j++)
		;
	if (j > i) {
		memmove(&ce->alloc.ranges[i], &ce->alloc.ranges[j],
			(ce->alloc.nranges - j) * sizeof(*ce->alloc.ranges));
		ce->alloc.nranges -= j - i;
	}
	if (ce->alloc.nranges == ce->alloc.capranges) {
		size_t ncap = ce->alloc.capranges ? 2 * ce->alloc.capranges : 64;
		struct cap_alloc *n = realloc(ce->alloc.ranges, ncap * sizeof(*n));

		if (!n)
			return -CF_ENOMEM;
		ce->alloc.ranges = n;
		ce->alloc.capranges = ncap;
	}
	memmove(&ce->alloc.ranges[i + 1], &ce->alloc.ranges[i], (ce->alloc.nranges - i) * sizeof(*ce->alloc.ranges));
	ce->alloc.ranges[i] = *a;
	ce->alloc.nranges++;
	/* still sorted and non-overlapping around the new range */
	cf_assert(i == 0 || ce->alloc.ranges[i - 1].base + ce->alloc.ranges[i - 1].size <= a->base);
	cf_assert(i + 1 == ce->alloc.nranges || end <= ce->alloc.ranges[i + 1].base);
	return 0;
}

int cap_alloc_add(struct cap_engine *ce, uint64_t base, uint64_t size, enum cap_alloc_kind kind)
{
	struct cap_alloc a = { .base = base, .size = size, .id = ce->alloc.next_id, .kind = (uint8_t)kind };
	int rc;

	cf_assert(cf_serial_is_held()); /* the caller's lock (capture.h) */
	rc = insert(ce, &a);

	if (rc == 0)
		ce->alloc.next_id++;
	ce->alloc.gen++;
	return rc;
}

int cap_alloc_restore(struct cap_engine *ce, const struct cap_alloc *a)
{
	cf_assert(cf_serial_is_held());
	ce->alloc.gen++;
	return insert(ce, a);
}

int cap_alloc_remove(struct cap_engine *ce, uint64_t base, struct cap_alloc *out)
{
	size_t i;

	cf_assert(cf_serial_is_held());
	ce->alloc.gen++;
	i = upper(ce, base);
	if (i == 0 || ce->alloc.ranges[i - 1].base != base)
		return -CF_ENOENT;
	i--;
	if (out)
		*out = ce->alloc.ranges[i];
	memmove(&ce->alloc.ranges[i], &ce->alloc.ranges[i + 1],
		(ce->alloc.nranges - i - 1) * sizeof(*ce->alloc.ranges));
	ce->alloc.nranges--;
	ce->alloc.gen++;
	return 0;
}

int cap_alloc_remove_range(struct cap_engine *ce, uint64_t base, uint64_t size)
{
	uint64_t end = base + size;
	size_t i = base ? upper(ce, base - 1) : 0, j; /* first range starting at or after base */

	cf_assert(cf_serial_is_held());
	ce->alloc.gen++;
	if (end < base)
		end = UINT64_MAX;
	for (j = i; j < ce->alloc.nranges && ce->alloc.ranges[j].base < end &&
		    ce->alloc.ranges[j].size <= end - ce->alloc.ranges[j].base;
	     j++)
		;
	memmove(&ce->alloc.ranges[i], &ce->alloc.ranges[j], (ce->alloc.nranges - j) * sizeof(*ce->alloc.ranges));
	ce->alloc.nranges -= j - i;
	ce->alloc.gen++;
	return (int)(j - i);
}

size_t cap_alloc_count(struct cap_engine *ce)
{
	return ce->alloc.nranges;
}

uint64_t cap_alloc_gen(struct cap_engine *ce)
{
	return ce->alloc.gen;
}

static int by_base(const void *x, const void *y)
{
	const struct cap_alloc *a = x, *b = y;

	return a->base < b->base ? -1 : a->base > b->base;
}

int cap_alloc_snapshot(struct cap_engine *ce, const struct cap_window *w, struct cap_alloc **out, size_t *n)
{
	struct cap_alloc *snap = NULL;
	size_t used = 0, cap = 0, kept = 0;

	cf_assert(cf_serial_is_held());
	for (uint32_t i = 0; i < cap_window_nops(w); i++) {
		const struct cap_op *op = cap_window_op(w, i);

		for (uint32_t off = 0; op->kind == CAP_OP_KERNEL && off + 8 <= op->u.kernel.param_size; off += 8) {
			const struct cap_alloc *a;
			uint64_t word;

			memcpy(&word, (const char *)op->u.kernel.params + off, sizeof(word));
			if (!word || !(a = cap_alloc_find(ce, word)))
				continue;
			if (used == cap) {
				size_t ncap = cap ? 2 * cap : 64;
				struct cap_alloc *m = realloc(snap, ncap * sizeof(*m));

				if (!m) {
					free(snap);
					return -CF_ENOMEM;
				}
				snap = m;
				cap = ncap;
			}
			snap[used++] = *a;
		}
	}
	if (used)
		qsort(snap, used, sizeof(*snap), by_base);
	for (size_t k = 0; k < used; k++)
		if (!kept || snap[kept - 1].id != snap[k].id)
			snap[kept++] = snap[k];
	*out = snap;
	*n = kept;
	return 0;
}

const struct cap_alloc *cap_alloc_snapshot_find(const struct cap_alloc *snap, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) { /* the first entry whose base is > addr */
		size_t mid = lo + (hi - lo) / 2;

		if (snap[mid].base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr - snap[lo - 1].base < snap[lo - 1].size)
		return &snap[lo - 1];
	return NULL;
}

bool cap_alloc_is_device(const struct cap_alloc *a)
{
	return a && (a->kind == CAP_ALLOC_DEVICE || a->kind == CAP_ALLOC_ASYNC || a->kind == CAP_ALLOC_MANAGED ||
		     a->kind == CAP_ALLOC_MAPPED);
}

enum cap_probe cap__alloc_probe(struct cap_engine *ce, uint64_t addr)
{
	uint64_t page = (addr >> PROBE_PAGE_SHIFT) + 1;
	struct cap_probe_slot *slot = &ce->alloc.probes[page % CAP_PROBE_SLOTS];
	unsigned int type = 0;
	enum cap_probe answer;
	CUresult rc;

	if (slot->page == page)
		return (enum cap_probe)slot->answer;
	if (!DRV_REAL(cuPointerGetAttribute))
		return CAP_PROBE_PAGEABLE; /* no driver to ask (unit tests of windows alone) */
	cap__own_call(ce, DRV_ID_cuPointerGetAttribute);
	rc = DRV_REAL(cuPointerGetAttribute)(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)addr);
	if (rc == CUDA_ERROR_INVALID_VALUE)
		answer = CAP_PROBE_PAGEABLE; /* memory the driver does not know: plain host memory */
	else if (rc == CUDA_SUCCESS && type == CU_MEMORYTYPE_HOST)
		answer = CAP_PROBE_HOST;
	else if (rc == CUDA_SUCCESS && type == CU_MEMORYTYPE_DEVICE)
		answer = CAP_PROBE_DEVICE;
	else
		answer = CAP_PROBE_UNKNOWN;
	slot->page = page;
	slot->answer = (uint8_t)answer;
	ce->alloc.gen++; /* a new answer: what was resolved before may have read another */
	return answer;
}

void cap__alloc_probe_reset(struct cap_engine *ce)
{
	memset(ce->alloc.probes, 0, sizeof(ce->alloc.probes));
	ce->alloc.gen++;
}

void cap__alloc_fini(struct cap_engine *ce)
{
	cap__alloc_probe_reset(ce);
	free(ce->alloc.ranges);
	ce->alloc.ranges = NULL;
	ce->alloc.nranges = ce->alloc.capranges = 0;
	ce->alloc.next_id = 1;
}

size_t cap__alloc_bytes(struct cap_engine *ce)
{
	return ce->alloc.capranges * sizeof(*ce->alloc.ranges);
}
