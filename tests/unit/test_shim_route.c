/* test_shim_route.c - routing by identity with a fake real table: which symbol a pointer is, which
 * of several symbols at one address a lookup meant, and that unknown pointers stay unknown.
 * tests layer (cmocka, libcufold.a). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "shim/shim_int.h"

static char fake_code[DRV_API_COUNT * 16]; /* stands in for the driver's functions */
static void *fake[DRV_API_COUNT];
static struct shim_ptrmap map;

static int setup(void **state)
{
	(void)state;
	for (int id = 0; id < DRV_API_COUNT; id++)
		fake[id] = &fake_code[id * 16];
	return 0;
}

static void test_every_pointer_is_identified(void **state)
{
	(void)state;
	shim__ptrmap_build(&map, fake);
	for (int id = 0; id < DRV_API_COUNT; id++) {
		assert_int_equal(shim__ptrmap_find(&map, fake[id]), id);
		assert_int_equal(shim__ptrmap_pick(&map, id, NULL, NULL, 0, 0), id);
	}
	assert_int_equal(shim__ptrmap_find(&map, NULL), -1);
	assert_int_equal(shim__ptrmap_find(&map, &fake_code[1]), -1);
	assert_int_equal(shim__ptrmap_find(&map, &map), -1);
}

static void test_absent_symbols_are_not_mapped(void **state)
{
	(void)state;
	fake[DRV_ID_cuInit] = NULL;
	shim__ptrmap_build(&map, fake);
	assert_int_equal(shim__ptrmap_find(&map, &fake_code[DRV_ID_cuInit * 16]), -1);
	assert_int_equal(shim__ptrmap_find(&map, fake[DRV_ID_cuMemAlloc_v2]), DRV_ID_cuMemAlloc_v2);
	fake[DRV_ID_cuInit] = &fake_code[DRV_ID_cuInit * 16];
}

/* Addresses that all land in the same slot must still be told apart. */
static void test_colliding_addresses(void **state)
{
	static char spread[DRV_API_COUNT][4096];
	void *addr[DRV_API_COUNT];

	(void)state;
	for (int id = 0; id < DRV_API_COUNT; id++)
		addr[id] = spread[id];
	shim__ptrmap_build(&map, addr);
	for (int id = 0; id < DRV_API_COUNT; id++)
		assert_int_equal(shim__ptrmap_find(&map, addr[id]), id);
}

/* A driver that exports two names at one address: the lookup's own words decide. */
static void test_aliases(void **state)
{
	int first;

	(void)state;
	fake[DRV_ID_cuCtxDestroy_v2] = fake[DRV_ID_cuCtxDestroy];
	fake[DRV_ID_cuLaunchKernel_ptsz] = fake[DRV_ID_cuLaunchKernel];
	shim__ptrmap_build(&map, fake);

	first = shim__ptrmap_find(&map, fake[DRV_ID_cuCtxDestroy]);
	assert_int_equal(first, DRV_ID_cuCtxDestroy);
	/* dlsym asks by exact name */
	assert_int_equal(shim__ptrmap_pick(&map, first, "cuCtxDestroy_v2", NULL, 0, 0), DRV_ID_cuCtxDestroy_v2);
	assert_int_equal(shim__ptrmap_pick(&map, first, "cuCtxDestroy", NULL, 0, 0), DRV_ID_cuCtxDestroy);
	/* cuGetProcAddress asks by base and version: the newest ABI not above the version */
	assert_int_equal(shim__ptrmap_pick(&map, first, NULL, "cuCtxDestroy", 4000, 0), DRV_ID_cuCtxDestroy_v2);
	assert_int_equal(shim__ptrmap_pick(&map, first, NULL, "cuCtxDestroy", 13000, 0), DRV_ID_cuCtxDestroy_v2);
	assert_int_equal(shim__ptrmap_pick(&map, first, NULL, "cuCtxDestroy", 3020, 0), DRV_ID_cuCtxDestroy);

	/* the per-thread flag picks the per-thread variant, and only it */
	first = shim__ptrmap_find(&map, fake[DRV_ID_cuLaunchKernel]);
	assert_int_equal(shim__ptrmap_pick(&map, first, NULL, "cuLaunchKernel", 7000,
					   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
			 DRV_ID_cuLaunchKernel_ptsz);
	assert_int_equal(shim__ptrmap_pick(&map, first, NULL, "cuLaunchKernel", 7000, 0), DRV_ID_cuLaunchKernel);
	assert_int_equal(shim__ptrmap_pick(&map, first, NULL, "cuLaunchKernel", 4000,
					   CU_GET_PROC_ADDRESS_LEGACY_STREAM),
			 DRV_ID_cuLaunchKernel);

	fake[DRV_ID_cuCtxDestroy_v2] = &fake_code[DRV_ID_cuCtxDestroy_v2 * 16];
	fake[DRV_ID_cuLaunchKernel_ptsz] = &fake_code[DRV_ID_cuLaunchKernel_ptsz * 16];
}

/* Before the driver is loaded nothing is rewritten. */
static void test_route_before_init(void **state)
{
	int x;

	(void)state;
	assert_ptr_equal(shim_route_procaddr(&x, "cuInit", 2000, 0), &x);
	assert_ptr_equal(shim_route_dlsym(&x, "cuInit"), &x);
	assert_null(shim_route_dlsym(NULL, "cuInit"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_pointer_is_identified),
		cmocka_unit_test(test_absent_symbols_are_not_mapped),
		cmocka_unit_test(test_colliding_addresses),
		cmocka_unit_test(test_aliases),
		cmocka_unit_test(test_route_before_init),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
