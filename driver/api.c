/* api.c - the table of exported driver symbols and lookup by name. driver layer. */
#include "driver/api.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"

/* Each symbol's flags and stream argument as constants named after it: a symbol the flags file
 * forgets does not compile. */
enum {
#define CF_API_FLAGS(symbol, flags, stream_arg) \
	DRV_FLAGS_##symbol = (flags), \
	DRV_STREAM_ARG_##symbol = (stream_arg),
#include "driver/cuda_api_flags.def"
#undef CF_API_FLAGS
};

const struct drv_api_info drv_api[DRV_API_COUNT] = {
#define CF_API(symbol, base, version, pt, ret, decls, args) \
	{ #symbol, #base, version, pt, true, DRV_FLAGS_##symbol, DRV_STREAM_ARG_##symbol },
#define CF_API_UNTYPED(symbol) { #symbol, #symbol, 0, 0, false, DRV_FLAGS_##symbol, DRV_STREAM_ARG_##symbol },
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED
};

/* Ids in name order, for binary search. The def is sorted except for its untyped tail, so the
 * index is built once instead of trusting the generator's order. */
static uint16_t by_name[DRV_API_COUNT];
static int by_name_state; /* 0 not built, 1 being built, 2 ready */

_Static_assert(DRV_API_COUNT < UINT16_MAX, "ids fit in uint16_t");

static int cmp_ids(const void *a, const void *b)
{
	return strcmp(drv_api[*(const uint16_t *)a].name, drv_api[*(const uint16_t *)b].name);
}

static void build_index(void)
{
	int expected = 0;

	if (!__atomic_compare_exchange_n(&by_name_state, &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* another thread builds it: a few microseconds of CPU work, nothing that waits */
		while (__atomic_load_n(&by_name_state, __ATOMIC_ACQUIRE) != 2)
			;
		return;
	}
	for (int i = 0; i < DRV_API_COUNT; i++)
		by_name[i] = (uint16_t)i;
	qsort(by_name, DRV_API_COUNT, sizeof(by_name[0]), cmp_ids);
	__atomic_store_n(&by_name_state, 2, __ATOMIC_RELEASE);
}

int drv_api_find(const char *name)
{
	int lo = 0, hi = DRV_API_COUNT - 1;

	if (!name)
		return -1;
	if (cf_unlikely(__atomic_load_n(&by_name_state, __ATOMIC_ACQUIRE) != 2))
		build_index();
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		int c = strcmp(name, drv_api[by_name[mid]].name);

		if (c == 0)
			return by_name[mid];
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

void drv__api_atfork_child(void)
{
	/* a thread of the parent was sorting the index: sort again on next use */
	if (__atomic_load_n(&by_name_state, __ATOMIC_RELAXED) == 1)
		__atomic_store_n(&by_name_state, 0, __ATOMIC_RELAXED);
}
