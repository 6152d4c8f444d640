/* test_driver_api.c - the generated view of driver/cuda_api.def: ids, names, versions, variants, lookup
 * by name, the modeled.def membership and the hook table. tests layer (cmocka, libcufold.a). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "shim/shim_int.h"

static void test_every_name_is_found(void **state)
{
	(void)state;
	assert_int_equal(DRV_API_COUNT, 637);
	for (int id = 0; id < DRV_API_COUNT; id++) {
		assert_non_null(drv_api[id].name);
		assert_int_equal(drv_api_find(drv_api[id].name), id);
	}
}

static void test_unknown_names(void **state)
{
	(void)state;
	assert_int_equal(drv_api_find(NULL), -1);
	assert_int_equal(drv_api_find(""), -1);
	assert_int_equal(drv_api_find("cu"), -1);
	assert_int_equal(drv_api_find("cuMemAlloc_v9"), -1);
	assert_int_equal(drv_api_find("cudnnCreate"), -1);
	assert_int_equal(drv_api_find("cuinit"), -1);
	assert_int_equal(drv_api_find("cuProfilerStop "), -1);
	assert_true(drv_api_find("cuProfilerStop") >= 0); /* the untyped tail of the def */
	assert_true(drv_api_find("cuArray3DCreate") >= 0); /* the first entry */
}

static void test_driver_name_shape(void **state)
{
	(void)state;
	assert_true(drv_name_is_driver("cuInit"));
	assert_true(drv_name_is_driver("cuX"));
	assert_false(drv_name_is_driver("cudnnCreate"));
	assert_false(drv_name_is_driver("cublasCreate_v2"));
	assert_false(drv_name_is_driver("cu"));
	assert_false(drv_name_is_driver("cu_"));
	assert_false(drv_name_is_driver("CuInit"));
	assert_false(drv_name_is_driver(NULL));
}

static void test_variants(void **state)
{
	const struct drv_api_info *a;

	(void)state;
	a = &drv_api[DRV_ID_cuLaunchKernel_ptsz];
	assert_string_equal(a->name, "cuLaunchKernel_ptsz");
	assert_string_equal(a->base, "cuLaunchKernel");
	assert_int_equal(a->version, 7000);
	assert_int_equal(a->pt, DRV_PT_PTSZ);
	assert_true(a->typed);
	a = &drv_api[DRV_ID_cuMemcpyHtoD_v2_ptds];
	assert_string_equal(a->base, "cuMemcpyHtoD");
	assert_int_equal(a->pt, DRV_PT_PTDS);
	a = &drv_api[DRV_ID_cuCtxGetDevice_v2];
	assert_int_equal(a->version, 13000);
	assert_int_equal(drv_api[DRV_ID_cuCtxGetDevice].version, 2000);
	/* cuda.h's macro renames cuMemAlloc to cuMemAlloc_v2; the generated names must not */
	assert_string_equal(drv_api[DRV_ID_cuMemAlloc].name, "cuMemAlloc");
	assert_int_equal(drv_api[DRV_ID_cuMemAlloc].version, 2000);
	assert_string_equal(drv_api[DRV_ID_cuMemAlloc_v2].name, "cuMemAlloc_v2");
	assert_false(drv_api[DRV_ID_cuProfilerStart].typed);
}

static void test_modeled(void **state)
{
	int n = 0, lines = 0;
	char line[512];
	FILE *f = fopen("shim/modeled.def", "r");

	(void)state;
	for (int id = 0; id < DRV_API_COUNT; id++)
		n += shim_is_modeled(id);
	/* exactly the symbols modeled.def lists (the test runs from the repository root) */
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		lines += strncmp(line, "#define SHIM_MODELED_", 21) == 0;
	fclose(f);
	assert_int_equal(n, lines);
	assert_true(shim_is_modeled(DRV_ID_cuGetProcAddress));
	assert_true(shim_is_modeled(DRV_ID_cuGetProcAddress_v2));
	assert_true(shim_is_modeled(DRV_ID_cuLaunchKernel));
	assert_false(shim_is_modeled(DRV_ID_cuArray3DCreate));
	assert_int_equal(SHIM_IF_MODELED(SHIM_MODELED_cuGetProcAddress, 7, 9), 7);
	assert_int_equal(SHIM_IF_MODELED(SHIM_MODELED_cuInit, 7, 9), 9);
}

static void test_hook_table(void **state)
{
	drv_fn hand = (drv_fn)shim_hand_cuGetProcAddress_v2;
	void *p;

	(void)state;
	for (int id = 0; id < DRV_API_COUNT; id++) {
		p = shim_hook_addr((enum drv_api_id)id);
		assert_non_null(p);
		assert_int_equal(shim_hook_find(p), id); /* all distinct */
	}
	/* a modeled symbol's hook is its hand-written function, not a generated one */
	memcpy(&p, &hand, sizeof(p));
	assert_ptr_equal(shim_hook_addr(DRV_ID_cuGetProcAddress_v2), p);
	assert_null(shim_hook_addr((enum drv_api_id)DRV_API_COUNT));
	assert_int_equal(shim_hook_find(&p), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_name_is_found),
		cmocka_unit_test(test_unknown_names),
		cmocka_unit_test(test_driver_name_shape),
		cmocka_unit_test(test_variants),
		cmocka_unit_test(test_modeled),
		cmocka_unit_test(test_hook_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
