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

/* A change of the map (or of the probes' answers) that may move the resolution of the addresses
 * [lo, last] (outside: of every address outside the map): the gen goes up, and the change goes
 * into the log. A change of the very range the newest entry holds is merged into it (an insert
 * bumps the gen twice). */
static void changed(struct cap_engine *ce, uint64_t lo, uint64_t last, bool outside)
{
	struct cap_alloc_map *m = &ce->alloc;
	struct cap_alloc_change *c;

	m->gen++;
	if (m->log_used) {
		c = &m->log[(m->log_head + CAP_ALLOC_LOG - 1) % CAP_ALLOC_LOG];
		if (c->lo == lo && c->last == last && c->outside == outside) {
			c->gen = m->gen;
			return;
		}
	}
	c = &m->log[m->log_head];
	if (m->log_used == CAP_ALLOC_LOG)
		m->log_floor = c->gen; /* the oldest entry goes: changes up to its gen are forgotten */
	else
		m->log_used++;
	*c = (struct cap_alloc_change){ .gen = m->gen, .lo = lo, .last = last, .outside = outside };
	m->log_head = (m->log_head + 1) % CAP_ALLOC_LOG;
}

static bool change_touches(struct cap_engine *ce, const struct cap_alloc_change *c, uint64_t a)
{
	if (c->outside)
		return !cap_alloc_find(ce, a);
	return a >= c->lo && a <= c->last;
}

bool cap__alloc_same_since_slow(struct cap_engine *ce, uint64_t gen, uint64_t a, uint64_t b)
{
	struct cap_alloc_map *m = &ce->alloc;

	if (gen > m->gen || gen < m->log_floor)
		return false; /* not a gen of this map's past, or older than the log reaches */
	for (uint32_t k = 0; k < m->log_used; k++) {
		const struct cap_alloc_change *c = &m->log[(m->log_head + CAP_ALLOC_LOG - 1 - k) % CAP_ALLOC_LOG];

		if (c->gen <= gen)
			return true; /* this one and the older ones were seen at gen */
		if (change_touches(ce, c, a) || change_touches(ce, c, b))
			return false;
	}
	/* every change since the floor was looked at (the log holds all of them) */
	return true;
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
	uint64_t end = a->base + a->size, lo = a->base, last = end - 1;
	size_t i, j;

	if (a->size == 0 || end < a->base) {
		changed(ce, 1, 0, false); /* nothing changed; the gen moves as it always did */
		return -CF_EINVAL;
	}
	/* drop what overlaps [base, end) */
	i = upper(ce, a->base);
	if (i > 0 && ce->alloc.ranges[i - 1].base + ce->alloc.ranges[i - 1].size > a->base)
		i--;
	for (j = i; j < ce->alloc.nranges && ce->alloc.ranges[j].base < end; j++)
		;
	/* the addresses whose answer may change: the new range and all of the ranges it drops */
	if (j > i) {
		const struct cap_alloc *l = &ce->alloc.ranges[j - 1];

		lo = ce->alloc.ranges[i].base < lo ? ce->alloc.ranges[i].base : lo;
		last = l->base + (l->size - 1) > last ? l->base + (l->size - 1) : last;
	}
	changed(ce, lo, last, false);
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
	changed(ce, base, base + size - 1, false); /* insert's change again (merged into it) */
	return rc;
}

int cap_alloc_restore(struct cap_engine *ce, const struct cap_alloc *a)
{
	cf_assert(cf_serial_is_held());
	return insert(ce, a); /* its change is logged by insert */
}

int cap_alloc_remove(struct cap_engine *ce, uint64_t base, struct cap_alloc *out)
{
	size_t i;

	cf_assert(cf_serial_is_held());
	i = upper(ce, base);
	if (i == 0 || ce->alloc.ranges[i - 1].base != base) {
		changed(ce, 1, 0, false); /* nothing changed; the gen moves as it always did */
		return -CF_ENOENT;
	}
	i--;
	if (out)
		*out = ce->alloc.ranges[i];
	changed(ce, base, base + (ce->alloc.ranges[i].size - 1), false);
	memmove(&ce->alloc.ranges[i], &ce->alloc.ranges[i + 1],
		(ce->alloc.nranges - i - 1) * sizeof(*ce->alloc.ranges));
	ce->alloc.nranges--;
	return 0;
}

int cap_alloc_remove_range(struct cap_engine *ce, uint64_t base, uint64_t size)
{
	uint64_t end = base + size;
	size_t i = base ? upper(ce, base - 1) : 0, j; /* first range starting at or after base */

	cf_assert(cf_serial_is_held());
	if (end < base)
		end = UINT64_MAX;
	for (j = i; j < ce->alloc.nranges && ce->alloc.ranges[j].base < end &&
		    ce->alloc.ranges[j].size <= end - ce->alloc.ranges[j].base;
	     j++)
		;
	if (j > i)
		changed(ce, ce->alloc.ranges[i].base, ce->alloc.ranges[j - 1].base + (ce->alloc.ranges[j - 1].size - 1),
			false);
	else
		changed(ce, 1, 0, false); /* nothing changed; the gen moves as it always did */
	memmove(&ce->alloc.ranges[i], &ce->alloc.ranges[j], (ce->alloc.nranges - j) * sizeof(*ce->alloc.ranges));
	ce->alloc.nranges -= j - i;
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
	/* a new answer: what was resolved before in this page may have read another */
	changed(ce, (page - 1) << PROBE_PAGE_SHIFT, ((page - 1) << PROBE_PAGE_SHIFT) + ((1u << PROBE_PAGE_SHIFT) - 1),
		false);
	return answer;
}

void cap__alloc_probe_reset(struct cap_engine *ce)
{
	memset(ce->alloc.probes, 0, sizeof(ce->alloc.probes));
	changed(ce, 1, 0, true); /* every address outside the map may be answered otherwise now */
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
