/* test_shim.c - the shim against the software device (libcuda.so.1 from LD_LIBRARY_PATH, as
 * tests/run sets it): the real table before and after initialization, routing of every real
 * pointer to its hook, the cuGetProcAddress hooks, dlsym's decisions, counting and the
 * "inside cufold" guard. tests layer (cmocka, libcufold.a). */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "shim/shim_int.h"

static void test_before_init(void **state)
{
	void *h, *addr[DRV_API_COUNT];

	(void)state;
	/* an entry of the table can always be called: it answers NOT_FOUND until the driver is loaded */
	assert_int_equal(DRV_REAL(cuInit)(0), CUDA_ERROR_NOT_FOUND);
	assert_null(drv_real_addr(DRV_ID_cuInit));
	/* a path that does not load falls back to libcuda.so.1 */
	assert_int_equal(drv_real__open("/nonexistent/libcuda.so.1", &h, addr), 0);
	assert_non_null(h);
	assert_non_null(addr[DRV_ID_cuInit]);
	assert_int_equal(drv_real__open("libcuda.so.1", &h, addr), 0);
	assert_non_null(addr[DRV_ID_cuLaunchKernel_ptsz]);
	/* a library that loads but is not a driver (no cuInit, cuDriverGetVersion,
	 * cuGetProcAddress) is refused the same way */
	assert_int_equal(drv_real__open("libc.so.6", &h, addr), 0);
	assert_non_null(h);
	assert_non_null(addr[DRV_ID_cuInit]);
	assert_ptr_equal(drv_real_dlsym(h, "cuInit"), addr[DRV_ID_cuInit]);
	assert_non_null(addr[DRV_ID_cuDriverGetVersion]);
}

static void test_init(void **state)
{
	int version = 0;

	(void)state;
	unsetenv("CUFOLD_MODE");
	unsetenv("CUFOLD_LIBCUDA");
	if (shim_init() != 0)
		fail_msg("shim_init failed: is the software device on LD_LIBRARY_PATH (tests/run sets it)?");
	assert_int_equal(shim_init(), 0); /* idempotent */
	assert_int_equal(shim_mode(), CF_MODE_REPLAY);
	assert_false(shim_is_passthrough());
	for (int id = 0; id < DRV_API_COUNT; id++)
		assert_true(drv_real_has((enum drv_api_id)id));
	assert_non_null(drv_real_handle());
	assert_non_null(drv_real_link_map());
	assert_int_equal(DRV_REAL(cuDriverGetVersion)(&version), CUDA_SUCCESS);
	assert_int_equal(version, 13000);
	/* the table holds the driver's own definitions, found through its handle */
	assert_ptr_equal(drv_real_dlsym(drv_real_handle(), "cuInit"), drv_real_addr(DRV_ID_cuInit));
}

static void test_route_every_symbol(void **state)
{
	int x;

	(void)state;
	for (int id = 0; id < DRV_API_COUNT; id++) {
		void *real = drv_real_addr((enum drv_api_id)id);

		assert_ptr_equal(shim_route_procaddr(real, drv_api[id].base, drv_api[id].version, 0),
				 shim_hook_addr((enum drv_api_id)id));
		assert_ptr_equal(shim_route_dlsym(real, drv_api[id].name), shim_hook_addr((enum drv_api_id)id));
	}
	assert_ptr_equal(shim_route_procaddr(&x, "cuInit", 2000, 0), &x);
}

static void test_procaddr_hooks(void **state)
{
	CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	drv_pfn_cuGetProcAddress_v2 gpa = shim_hand_cuGetProcAddress_v2;
	drv_pfn_cuGetProcAddress gpa4 = shim_hand_cuGetProcAddress;
	void *p = NULL;

	(void)state;
	assert_int_equal(gpa("cuMemAlloc", &p, 3020, 0, &status), CUDA_SUCCESS);
	assert_int_equal(status, CU_GET_PROC_ADDRESS_SUCCESS);
	assert_ptr_equal(p, shim_hook_addr(DRV_ID_cuMemAlloc_v2));
	assert_int_equal(gpa("cuMemAlloc", &p, 2000, 0, &status), CUDA_SUCCESS);
	assert_ptr_equal(p, shim_hook_addr(DRV_ID_cuMemAlloc));
	assert_int_equal(gpa("cuLaunchKernel", &p, 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL),
			 CUDA_SUCCESS);
	assert_ptr_equal(p, shim_hook_addr(DRV_ID_cuLaunchKernel_ptsz));
	assert_int_equal(gpa("cuCtxGetDevice", &p, 13000, 0, NULL), CUDA_SUCCESS);
	assert_ptr_equal(p, shim_hook_addr(DRV_ID_cuCtxGetDevice_v2));
	assert_int_equal(gpa("cuCtxGetDevice", &p, 12000, 0, NULL), CUDA_SUCCESS);
	assert_ptr_equal(p, shim_hook_addr(DRV_ID_cuCtxGetDevice));
	/* cuGetProcAddress itself: cufold's wrapper of the version asked for */
	assert_int_equal(gpa("cuGetProcAddress", &p, 12000, 0, NULL), CUDA_SUCCESS);
	assert_ptr_equal(p, shim_hook_addr(DRV_ID_cuGetProcAddress_v2));
	assert_int_equal(gpa4("cuGetProcAddress", &p, 11030, 0), CUDA_SUCCESS);
	assert_ptr_equal(p, shim_hook_addr(DRV_ID_cuGetProcAddress));
	/* unknown names: exactly the driver's answer */
	p = &status;
	assert_int_equal(gpa("cuNoSuchThing", &p, 12000, 0, &status), CUDA_SUCCESS);
	assert_null(p);
	assert_int_equal(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

static void test_dlsym_decisions(void **state)
{
	void *h = drv_real_handle(), *answer = &answer;

	(void)state;
	/* an explicit handle and a driver name: cufold answers with its hook */
	assert_int_equal(shim__dlsym_decide(h, "cuInit", NULL, &answer), 1);
	assert_ptr_equal(answer, shim_hook_addr(DRV_ID_cuInit));
	assert_int_equal(shim__dlsym_decide(h, "cuMemAlloc", NULL, &answer), 1);
	assert_ptr_equal(answer, shim_hook_addr(DRV_ID_cuMemAlloc));
	/* everything else goes to glibc's dlsym with the caller intact */
	assert_int_equal(shim__dlsym_decide(RTLD_NEXT, "cuInit", NULL, &answer), 0);
	assert_int_equal(shim__dlsym_decide(RTLD_DEFAULT, "cuInit", NULL, &answer), 0);
	assert_int_equal(shim__dlsym_decide(h, "cudnnCreate", NULL, &answer), 0);
	assert_int_equal(shim__dlsym_decide(h, "cuNoSuchThing", NULL, &answer), 0);
	assert_int_equal(shim__dlsym_decide(h, "cu", NULL, &answer), 0);
	assert_int_equal(shim__dlsym_decide(h, NULL, NULL, &answer), 0);
	/* the driver looking itself up, and cufold's own code, are left alone */
	assert_int_equal(shim__dlsym_decide(h, "cuInit", drv_real_addr(DRV_ID_cuMemFree_v2), &answer), 0);
	assert_int_equal(shim__dlsym_decide(h, "cuInit", (void *)&state, &answer), 1); /* a stack address */
	shim_inside_enter();
	assert_int_equal(shim__dlsym_decide(h, "cuInit", NULL, &answer), 0);
	shim_inside_leave();
}

static void test_counting_and_guard(void **state)
{
	uint64_t before = shim_count(DRV_ID_cuDeviceGetCount);

	(void)state;
	shim_note_unmodeled(DRV_ID_cuDeviceGetCount);
	shim_note_call(DRV_ID_cuDeviceGetCount);
	assert_int_equal(shim_count(DRV_ID_cuDeviceGetCount), before + 2);
	shim_inside_enter();
	assert_true(shim_is_inside());
	shim_note_unmodeled(DRV_ID_cuDeviceGetCount);
	shim_inside_leave();
	assert_false(shim_is_inside());
	assert_int_equal(shim_count(DRV_ID_cuDeviceGetCount), before + 2);
	assert_int_equal(shim_count((enum drv_api_id)DRV_API_COUNT), 0);
}

static int probe_called;

/* Stands in for the driver's function behind an untyped symbol: every argument register, both
 * kinds, and arguments on the stack must arrive intact through cufold's trampoline. */
static CUresult probe_args(long a, long b, long c, long d, long e, long f, long g, long h, double x0, double x1,
			   double x2, double x3, double x4, double x5, double x6, double x7, double x8)
{
	probe_called++;
	if (a != 1 || b != 2 || c != 3 || d != 4 || e != 5 || f != 6 || g != 7 || h != 8)
		return CUDA_ERROR_INVALID_VALUE;
	if (x0 != 0.5 || x1 != 1.5 || x2 != 2.5 || x3 != 3.5 || x4 != 4.5 || x5 != 5.5 || x6 != 6.5 || x7 != 7.5 ||
	    x8 != 8.5)
		return CUDA_ERROR_INVALID_VALUE;
	return (CUresult)4242;
}

static void test_untyped_trampoline(void **state)
{
	typedef CUresult (*probe_fn)(long, long, long, long, long, long, long, long, double, double, double, double,
				     double, double, double, double, double);
	static void *addr[DRV_API_COUNT];
	probe_fn via_hook, real = probe_args;
	void *hook = shim_hook_addr(DRV_ID_cuProfilerInitialize);
	uint64_t before = shim_count(DRV_ID_cuProfilerInitialize);

	(void)state;
	for (int id = 0; id < DRV_API_COUNT; id++)
		addr[id] = drv_real_addr((enum drv_api_id)id);
	memcpy(&addr[DRV_ID_cuProfilerInitialize], &real, sizeof(void *));
	drv_real__publish(drv_real_handle(), addr);

	memcpy(&via_hook, &hook, sizeof(hook));
	assert_int_equal(via_hook(1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5), 4242);
	assert_int_equal(probe_called, 1);
	assert_int_equal(shim_count(DRV_ID_cuProfilerInitialize), before + 1);

	addr[DRV_ID_cuProfilerInitialize] = NULL; /* a driver without it */
	drv_real__publish(drv_real_handle(), addr);
	assert_int_equal(via_hook(1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5),
			 CUDA_ERROR_NOT_FOUND);
	assert_int_equal(probe_called, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_before_init),
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_route_every_symbol),
		cmocka_unit_test(test_procaddr_hooks),
		cmocka_unit_test(test_dlsym_decisions),
		cmocka_unit_test(test_counting_and_guard),
		cmocka_unit_test(test_untyped_trampoline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
