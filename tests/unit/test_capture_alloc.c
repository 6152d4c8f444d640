/* test_capture_alloc.c - the allocation map (capture/alloc.c): pointer words resolve to
 * (allocation, offset) across allocate, free and reallocate at the same address, overlapping
 * ranges replace older ones, unmapping drops what lies inside, and lookups stay right over many
 * ranges. tests layer (cmocka, libcufold.a; no driver). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "common/errors.h"

static struct cap_engine *ce; /* the engine part under test */

static int setup(void **state)
{
	struct cap_config cfg = { .max_templates = 4 };

	(void)state;
	ce = cap_engine_create(&cfg);
	return ce ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	cap_engine_destroy(ce);
	return 0;
}

static void test_resolve(void **state)
{
	const struct cap_alloc *a;

	(void)state;
	assert_int_equal(cap_alloc_add(ce, 0x10000, 0x1000, CAP_ALLOC_DEVICE), 0);
	assert_int_equal(cap_alloc_add(ce, 0x20000, 0x100, CAP_ALLOC_HOST_PINNED), 0);
	assert_int_equal(cap_alloc_add(ce, 0x30000, 0x10, CAP_ALLOC_MANAGED), 0);
	assert_int_equal(cap_alloc_count(ce), 3);
	a = cap_alloc_find(ce, 0x10000);
	assert_non_null(a);
	assert_int_equal(a->base, 0x10000);
	assert_int_equal(a->size, 0x1000);
	assert_int_equal(a->kind, CAP_ALLOC_DEVICE);
	assert_true(cap_alloc_is_device(a));
	a = cap_alloc_find(ce, 0x10fff); /* last byte */
	assert_non_null(a);
	assert_int_equal(0x10fff - a->base, 0xfff);
	assert_null(cap_alloc_find(ce, 0x11000)); /* one past */
	assert_null(cap_alloc_find(ce, 0xffff));
	assert_null(cap_alloc_find(ce, 0));
	a = cap_alloc_find(ce, 0x20080);
	assert_non_null(a);
	assert_int_equal(a->kind, CAP_ALLOC_HOST_PINNED);
	assert_false(cap_alloc_is_device(a));
	assert_true(cap_alloc_is_device(cap_alloc_find(ce, 0x3000f)));
	assert_int_equal(cap_alloc_add(ce, 0x40000, 0, CAP_ALLOC_DEVICE), -CF_EINVAL);
}

static void test_free_and_realloc(void **state)
{
	struct cap_alloc gone;
	uint64_t id1, id2;

	(void)state;
	assert_int_equal(cap_alloc_add(ce, 0x10000, 0x1000, CAP_ALLOC_DEVICE), 0);
	id1 = cap_alloc_find(ce, 0x10010)->id;
	assert_int_equal(cap_alloc_remove(ce, 0x10010, NULL), -CF_ENOENT); /* not a base */
	assert_int_equal(cap_alloc_remove(ce, 0x10000, &gone), 0);
	assert_int_equal(gone.id, id1);
	assert_null(cap_alloc_find(ce, 0x10010));
	assert_int_equal(cap_alloc_remove(ce, 0x10000, NULL), -CF_ENOENT);
	/* the driver hands the same address out again: a new allocation */
	assert_int_equal(cap_alloc_add(ce, 0x10000, 0x800, CAP_ALLOC_ASYNC), 0);
	id2 = cap_alloc_find(ce, 0x10010)->id;
	assert_int_not_equal(id1, id2);
	assert_null(cap_alloc_find(ce, 0x10800));
	assert_int_equal(cap_alloc_find(ce, 0x107ff)->kind, CAP_ALLOC_ASYNC);
	/* a failed free puts it back with its id */
	assert_int_equal(cap_alloc_remove(ce, 0x10000, &gone), 0);
	assert_int_equal(cap_alloc_restore(ce, &gone), 0);
	assert_int_equal(cap_alloc_find(ce, 0x10000)->id, id2);
}

static void test_overlap_replaces(void **state)
{
	(void)state;
	assert_int_equal(cap_alloc_add(ce, 0x1000, 0x1000, CAP_ALLOC_DEVICE), 0);
	assert_int_equal(cap_alloc_add(ce, 0x3000, 0x1000, CAP_ALLOC_DEVICE), 0);
	assert_int_equal(cap_alloc_add(ce, 0x5000, 0x1000, CAP_ALLOC_DEVICE), 0);
	/* a range over the end of the first and all of the second: both were freed unseen */
	assert_int_equal(cap_alloc_add(ce, 0x1800, 0x2800, CAP_ALLOC_MANAGED), 0);
	assert_int_equal(cap_alloc_count(ce), 2);
	assert_null(cap_alloc_find(ce, 0x1000));
	assert_int_equal(cap_alloc_find(ce, 0x3fff)->base, 0x1800);
	assert_int_equal(cap_alloc_find(ce, 0x5000)->base, 0x5000);
}

static void test_remove_range(void **state)
{
	(void)state;
	for (uint64_t i = 0; i < 8; i++)
		assert_int_equal(cap_alloc_add(ce, 0x100000 + i * 0x1000, 0x1000, CAP_ALLOC_MAPPED), 0);
	/* unmapping [0x102000, 0x105000) drops the three ranges inside, nothing else */
	assert_int_equal(cap_alloc_remove_range(ce, 0x102000, 0x3000), 3);
	assert_int_equal(cap_alloc_count(ce), 5);
	assert_non_null(cap_alloc_find(ce, 0x101fff));
	assert_null(cap_alloc_find(ce, 0x102000));
	assert_null(cap_alloc_find(ce, 0x104fff));
	assert_non_null(cap_alloc_find(ce, 0x105000));
	assert_int_equal(cap_alloc_remove_range(ce, 0x102000, 0x3000), 0);
}

/* cap_alloc_find remembers where it found the last ranges: after ranges come and go (indices
 * shift), a remembered index never answers for memory that is not in the range there now. */
static void test_remembered_ranges(void **state)
{
	(void)state;
	assert_int_equal(cap_alloc_add(ce, 0x10000, 0x1000, CAP_ALLOC_DEVICE), 0);
	assert_int_equal(cap_alloc_add(ce, 0x20000, 0x1000, CAP_ALLOC_DEVICE), 0);
	assert_int_equal(cap_alloc_find(ce, 0x20010)->base, 0x20000); /* remembered: index 1 */
	assert_int_equal(cap_alloc_find(ce, 0x10010)->base, 0x10000); /* index 0 */
	assert_int_equal(cap_alloc_remove(ce, 0x20000, NULL), 0);
	assert_null(cap_alloc_find(ce, 0x20010)); /* index 1 is past the end now */
	assert_int_equal(cap_alloc_remove(ce, 0x10000, NULL), 0);
	assert_null(cap_alloc_find(ce, 0x10010));
	/* a range moved under a remembered index: it answers only for its own bytes */
	assert_int_equal(cap_alloc_add(ce, 0x30000, 0x1000, CAP_ALLOC_HOST_PINNED), 0);
	assert_int_equal(cap_alloc_find(ce, 0x30000)->kind, CAP_ALLOC_HOST_PINNED);
	assert_int_equal(cap_alloc_add(ce, 0x8000, 0x1000, CAP_ALLOC_DEVICE), 0); /* 0x30000 moves to 1 */
	assert_null(cap_alloc_find(ce, 0x10010));
	assert_int_equal(cap_alloc_find(ce, 0x8010)->base, 0x8000);
	assert_int_equal(cap_alloc_find(ce, 0x30fff)->base, 0x30000);
	assert_null(cap_alloc_find(ce, 0x31000));
}

/* Many ranges in random order: every probe agrees with a linear scan. */
static void test_many(void **state)
{
	enum { N = 4000 };
	static uint64_t base[N], size[N];
	uint32_t x = 12345;

	(void)state;
	for (int i = 0; i < N; i++) {
		base[i] = 0x1000000ull + (uint64_t)i * 0x10000;
		size[i] = 0x100 + (uint64_t)(i % 37) * 0x100;
	}
	for (int i = N - 1; i > 0; i--) { /* shuffle insertion order */
		int j;
		uint64_t t;

		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		j = (int)(x % (uint32_t)(i + 1));
		t = base[i], base[i] = base[j], base[j] = t;
		t = size[i], size[i] = size[j], size[j] = t;
	}
	for (int i = 0; i < N; i++)
		assert_int_equal(cap_alloc_add(ce, base[i], size[i], CAP_ALLOC_DEVICE), 0);
	assert_int_equal(cap_alloc_count(ce), N);
	for (int k = 0; k < 20000; k++) {
		uint64_t p, hit = 0;
		const struct cap_alloc *a;

		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		p = 0x1000000ull + (uint64_t)(x % (N * 0x10000u));
		for (int i = 0; i < N; i++)
			if (p >= base[i] && p < base[i] + size[i])
				hit = base[i];
		a = cap_alloc_find(ce, p);
		if (hit) {
			assert_non_null(a);
			assert_int_equal(a->base, hit);
		} else {
			assert_null(a);
		}
	}
	/* free every other one */
	for (int i = 0; i < N; i += 2)
		assert_int_equal(cap_alloc_remove(ce, base[i], NULL), 0);
	for (int i = 0; i < N; i++)
		assert_true((cap_alloc_find(ce, base[i] + size[i] - 1) != NULL) == (i % 2 == 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_resolve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_and_realloc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlap_replaces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remembered_ranges, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
