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

static struct cap_alloc *ranges; /* sorted by base, non-overlapping */
static size_t nranges, capranges; /* used and allocated entries */
static uint64_t next_id = 1;    /* id of the next allocation */

/* What the driver said of pages outside the map (cap__alloc_probe), direct-mapped by page. */
#define PROBE_SLOTS 64
#define PROBE_PAGE_SHIFT 12
struct probe_slot {
	uint64_t page;               /* address >> PROBE_PAGE_SHIFT, plus one (0: empty slot) */
	uint8_t answer;              /* enum cap_probe */
};
static struct probe_slot probes[PROBE_SLOTS]; /* the cache */

/* Index of the first range whose base is > addr. */
static size_t upper(uint64_t addr)
{
	size_t lo = 0, hi = nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ranges[mid].base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct cap_alloc *cap_alloc_find(uint64_t addr)
{
	size_t i = upper(addr);

	if (i == 0)
		return NULL;
	i--;
	if (addr - ranges[i].base < ranges[i].size)
		return &ranges[i];
	return NULL;
}

static int insert(const struct cap_alloc *a)
{
	uint64_t end = a->base + a->size;
	size_t i, j;

	if (a->size == 0 || end < a->base)
		return -CF_EINVAL;
	/* drop what overlaps [base, end) */
	i = upper(a->base);
	if (i > 0 && ranges[i - 1].base + ranges[i - 1].size > a->base)
		i--;
	for (j = i; j < nranges && ranges[j].base < end; j++)
		;
	if (j > i) {
		memmove(&ranges[i], &ranges[j], (nranges - j) * sizeof(*ranges));
		nranges -= j - i;
	}
	if (nranges == capranges) {
		size_t ncap = capranges ? 2 * capranges : 64;
		struct cap_alloc *n = realloc(ranges, ncap * sizeof(*n));

		if (!n)
			return -CF_ENOMEM;
		ranges = n;
		capranges = ncap;
	}
	memmove(&ranges[i + 1], &ranges[i], (nranges - i) * sizeof(*ranges));
	ranges[i] = *a;
	nranges++;
	/* still sorted and non-overlapping around the new range */
	cf_assert(i == 0 || ranges[i - 1].base + ranges[i - 1].size <= a->base);
	cf_assert(i + 1 == nranges || end <= ranges[i + 1].base);
	return 0;
}

int cap_alloc_add(uint64_t base, uint64_t size, enum cap_alloc_kind kind)
{
	struct cap_alloc a = { .base = base, .size = size, .id = next_id, .kind = (uint8_t)kind };
	int rc;

	cf_assert(cf_serial_is_held()); /* the caller's lock (capture.h) */
	rc = insert(&a);

	if (rc == 0)
		next_id++;
	return rc;
}

int cap_alloc_restore(const struct cap_alloc *a)
{
	cf_assert(cf_serial_is_held());
	return insert(a);
}

int cap_alloc_remove(uint64_t base, struct cap_alloc *out)
{
	size_t i;

	cf_assert(cf_serial_is_held());
	i = upper(base);
	if (i == 0 || ranges[i - 1].base != base)
		return -CF_ENOENT;
	i--;
	if (out)
		*out = ranges[i];
	memmove(&ranges[i], &ranges[i + 1], (nranges - i - 1) * sizeof(*ranges));
	nranges--;
	return 0;
}

int cap_alloc_remove_range(uint64_t base, uint64_t size)
{
	uint64_t end = base + size;
	size_t i = base ? upper(base - 1) : 0, j; /* first range starting at or after base */

	cf_assert(cf_serial_is_held());
	if (end < base)
		end = UINT64_MAX;
	for (j = i; j < nranges && ranges[j].base < end && ranges[j].size <= end - ranges[j].base; j++)
		;
	memmove(&ranges[i], &ranges[j], (nranges - j) * sizeof(*ranges));
	nranges -= j - i;
	return (int)(j - i);
}

size_t cap_alloc_count(void)
{
	return nranges;
}

bool cap_alloc_is_device(const struct cap_alloc *a)
{
	return a && (a->kind == CAP_ALLOC_DEVICE || a->kind == CAP_ALLOC_ASYNC || a->kind == CAP_ALLOC_MANAGED ||
		     a->kind == CAP_ALLOC_MAPPED);
}

enum cap_probe cap__alloc_probe(uint64_t addr)
{
	uint64_t page = (addr >> PROBE_PAGE_SHIFT) + 1;
	struct probe_slot *slot = &probes[page % PROBE_SLOTS];
	unsigned int type = 0;
	enum cap_probe answer;
	CUresult rc;

	if (slot->page == page)
		return (enum cap_probe)slot->answer;
	if (!SHIM_REAL(cuPointerGetAttribute))
		return CAP_PROBE_PAGEABLE; /* no driver to ask (unit tests of windows alone) */
	cap__own_call(SHIM_ID_cuPointerGetAttribute);
	rc = SHIM_REAL(cuPointerGetAttribute)(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)addr);
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
	return answer;
}

void cap__alloc_probe_reset(void)
{
	memset(probes, 0, sizeof(probes));
}

void cap__alloc_fini(void)
{
	cap__alloc_probe_reset();
	cap__free(ranges);
	ranges = NULL;
	nranges = capranges = 0;
	next_id = 1;
}

size_t cap__alloc_bytes(void)
{
	return capranges * sizeof(*ranges);
}
