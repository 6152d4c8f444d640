/* test_common_arena.c - the bump allocator (common/arena.c, its inline fast path in arena.h since
 * issue 22): alignment, zero-byte and absurd sizes, no two allocations overlapping across block
 * changes and big one-offs, a reset that keeps and reuses its largest block, a move into an
 * empty and into a filled arena, and which blocks hold a pointer (cf_arena_holds). tests layer
 * (cmocka, libcufold.a). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/arena.h"

enum { NALLOC = 2000 };

static unsigned char *ptrs[NALLOC]; /* what each allocation returned */
static size_t sizes[NALLOC];        /* its size */

/* Fill allocation i with its own byte, then check every earlier one still holds its own. */
static void fill_and_check(int n)
{
	for (int i = 0; i < n; i++)
		memset(ptrs[i], (int)(i & 0xff), sizes[i]);
	for (int i = 0; i < n; i++)
		for (size_t j = 0; j < sizes[i]; j++)
			if (ptrs[i][j] != (unsigned char)(i & 0xff))
				fail_msg("allocation %d (%zu bytes) overwritten at byte %zu", i, sizes[i], j);
}

static int alloc_many(struct cf_arena *a, int n, unsigned seed)
{
	for (int i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		/* mostly small, some larger than a block (one-offs), some zero */
		sizes[i] = (seed >> 8) % 97 == 0 ? 3000 + (seed >> 16) % 2000 : (seed >> 16) % 200;
		ptrs[i] = cf_arena_alloc(a, sizes[i]);
		assert_non_null(ptrs[i]);
		assert_int_equal((uintptr_t)ptrs[i] & 15, 0);
	}
	return n;
}

static void test_alloc(void **state)
{
	struct cf_arena a;

	(void)state;
	cf_arena_init(&a, 1024);
	fill_and_check(alloc_many(&a, NALLOC, 1));
	assert_null(cf_arena_alloc(&a, SIZE_MAX));
	assert_null(cf_arena_alloc(&a, SIZE_MAX - 7));
	assert_non_null(cf_arena_alloc(&a, 0));
	assert_true(a.used <= a.reserved);
	cf_arena_fini(&a);
	/* usable again after fini */
	fill_and_check(alloc_many(&a, 100, 2));
	cf_arena_fini(&a);
}

static void test_reset_reuses(void **state)
{
	struct cf_arena a;
	size_t reserved;

	(void)state;
	cf_arena_init(&a, 4096);
	alloc_many(&a, 500, 3);
	cf_arena_reset(&a);
	reserved = a.reserved;
	assert_true(reserved >= 4096);
	assert_int_equal(a.used, 0);
	/* what fits in the kept block comes from it: nothing new is reserved */
	for (int i = 0; i < 10; i++) {
		ptrs[i] = cf_arena_alloc(&a, 100);
		sizes[i] = 100;
	}
	assert_int_equal(a.reserved, reserved);
	fill_and_check(10);
	cf_arena_fini(&a);
}

static void test_move(void **state)
{
	struct cf_arena a, b, c;
	int n;

	(void)state;
	cf_arena_init(&a, 1024);
	cf_arena_init(&b, 1024);
	cf_arena_init(&c, 1024);
	n = alloc_many(&a, 300, 4);
	cf_arena_move(&b, &a); /* into an empty arena: b fills a's block on */
	assert_null(a.head);
	for (int i = n; i < n + 300; i++) {
		sizes[i] = 40;
		ptrs[i] = cf_arena_alloc(&b, sizes[i]);
	}
	n += 300;
	ptrs[n] = cf_arena_alloc(&c, 10);
	sizes[n++] = 10;
	cf_arena_move(&c, &b); /* into a filled one */
	for (int i = n; i < n + 300; i++) {
		sizes[i] = 24;
		ptrs[i] = cf_arena_alloc(&c, sizes[i]);
	}
	n += 300;
	fill_and_check(n);
	/* a emptied by the move is usable again */
	ptrs[0] = cf_arena_alloc(&a, 16);
	assert_non_null(ptrs[0]);
	cf_arena_fini(&a);
	cf_arena_fini(&b);
	cf_arena_fini(&c);
}

/* cf_arena_holds: every allocation's first and last byte, across blocks and a big one-off, and
 * nothing of another arena's, a stack variable's or one past a block; none after a reset but
 * the kept block's. */
static void test_holds(void **state)
{
	struct cf_arena a, b;
	unsigned char *big, *other;
	int local = 0;

	(void)state;
	cf_arena_init(&a, 256);
	cf_arena_init(&b, 256);
	for (int i = 0; i < 100; i++) {
		sizes[i] = 24;
		ptrs[i] = cf_arena_alloc(&a, sizes[i]);
		assert_non_null(ptrs[i]);
	}
	big = cf_arena_alloc(&a, 4096);
	other = cf_arena_alloc(&b, 24);
	assert_non_null(big);
	assert_non_null(other);
	for (int i = 0; i < 100; i++) {
		assert_true(cf_arena_holds(&a, ptrs[i]));
		assert_true(cf_arena_holds(&a, ptrs[i] + sizes[i] - 1));
		assert_false(cf_arena_holds(&b, ptrs[i]));
	}
	assert_true(cf_arena_holds(&a, big));
	assert_true(cf_arena_holds(&a, big + 4095));
	assert_false(cf_arena_holds(&a, big + 4096)); /* (its block is exactly 4096 bytes) */
	assert_false(cf_arena_holds(&a, other));
	assert_true(cf_arena_holds(&b, other));
	assert_false(cf_arena_holds(&a, &local));
	assert_false(cf_arena_holds(&a, NULL));
	cf_arena_reset(&a); /* keeps the largest block, the big one's */
	assert_true(cf_arena_holds(&a, big));
	assert_false(cf_arena_holds(&a, ptrs[0]));
	cf_arena_fini(&a);
	assert_false(cf_arena_holds(&a, big));
	cf_arena_fini(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc),
		cmocka_unit_test(test_reset_reuses),
		cmocka_unit_test(test_move),
		cmocka_unit_test(test_holds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
