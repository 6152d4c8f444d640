/* sim_device_cc.c - unit tests of SIMCUDA_CC, the compute capability the software device reports:
 * with SIMCUDA_CC=100 every query says 10.0 and a fatbin whose only PTX is compute_100 (refused
 * at the default 9.0, tests/unit/sim_fatbin.c) loads and runs. tests layer; runs against
 * libcuda.so.1; the image is built by the Makefile (FATBINS). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

#ifndef TEST_PTX_DIR
#define TEST_PTX_DIR "build/kernels"
#endif

static void test_reported(void **state)
{
	CUdevice dev;
	int major = 0, minor = -1;

	(void)state;
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
	assert_int_equal(major, 10);
	assert_int_equal(minor, 0);
}

static void test_newer_ptx_loads(void **state)
{
	char path[512];
	CUmodule m;
	CUfunction f;
	CUdeviceptr d;
	float h[32];
	float v = 1.5f;
	int n = 32;
	void *args[] = { &d, &v, &n };

	(void)state;
	snprintf(path, sizeof(path), "%s/elementwise.new.fatbin", TEST_PTX_DIR);
	CHECK(cuModuleLoad(&m, path));
	CHECK(cuModuleGetFunction(&f, m, "fill"));
	CHECK(cuMemAlloc(&d, sizeof(h)));
	CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(h, d, sizeof(h)));
	for (int i = 0; i < 32; i++)
		assert_true(h[i] == 1.5f);
	CHECK(cuMemFree(d));
	CHECK(cuModuleUnload(m));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reported),
		cmocka_unit_test(test_newer_ptx_loads),
	};

	setenv("SIMCUDA_CC", "100", 1); /* before the device reads it */
	tl_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
