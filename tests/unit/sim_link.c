/* sim_link.c - unit tests of the software device's JIT linker for PTX: inputs from memory and
 * from a file linked into one image that cuModuleLoadData loads and whose kernels run, the
 * error log of a bad input, duplicate entries, input types the device cannot link, and bad
 * handles and arguments. tests layer; runs against the software device's libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

static char errlog[512];

static CUlinkState link_new(void)
{
	CUjit_option opts[] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *vals[] = { errlog, (void *)(uintptr_t)sizeof(errlog) };
	CUlinkState l;

	errlog[0] = 0;
	CHECK(cuLinkCreate(2, opts, vals, &l));
	return l;
}

/* Write a test kernel file's PTX to a temporary file; returns its path (static buffer). */
static const char *ptx_file(const char *name)
{
	static char path[64];
	char *ptx = tl_read_ptx(name);
	int fd;

	snprintf(path, sizeof(path), "/tmp/sim_link_XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, ptx, strlen(ptx)), (ssize_t)strlen(ptx));
	close(fd);
	free(ptx);
	return path;
}

static void test_link_and_run(void **state)
{
	char *ptx = tl_read_ptx("elementwise");
	const char *path = ptx_file("copy");
	CUlinkState l = link_new();
	CUmodule mod;
	CUlibrary lib;
	CUkernel k;
	CUfunction fill, cat;
	CUdeviceptr x;
	float v = 2.5f, h[64];
	int n = 64;
	void *args[] = { &x, &v, &n };
	void *image = NULL;
	size_t size = 0;

	(void)state;
	CHECK(cuLinkAddData(l, CU_JIT_INPUT_PTX, ptx, strlen(ptx) + 1, "elementwise.ptx", 0, NULL, NULL));
	CHECK(cuLinkAddFile(l, CU_JIT_INPUT_PTX, path, 0, NULL, NULL));
	unlink(path);
	CHECK(cuLinkComplete(l, &image, &size));
	assert_non_null(image);
	assert_int_equal(size, strlen(image) + 1);
	assert_string_equal(errlog, "");
	/* the image loads as a module with the entries of both inputs, and they run */
	CHECK(cuModuleLoadData(&mod, image));
	CHECK(cuModuleGetFunction(&fill, mod, "fill"));
	CHECK(cuModuleGetFunction(&cat, mod, "cat"));
	CHECK(cuMemAlloc(&x, sizeof(h)));
	CHECK(cuLaunchKernel(fill, 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(h, x, sizeof(h)));
	for (int i = 0; i < 64; i++)
		assert_true(h[i] == 2.5f);
	CHECK(cuMemFree(x));
	CHECK(cuModuleUnload(mod));
	/* and as a library */
	CHECK(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryGetKernel(&k, lib, "split_copy"));
	CHECK(cuLibraryUnload(lib));
	CHECK(cuLinkDestroy(l));
	assert_int_equal(cuLinkDestroy(l), CUDA_ERROR_INVALID_HANDLE);
	free(ptx);
}

static void test_errors(void **state)
{
	char *ptx = tl_read_ptx("elementwise");
	const char bad[] = ".version 8.0\n.target sm_90\n.visible .entry broken(\n";
	CUlinkState l = link_new();
	void *image = NULL;
	size_t size = 0;

	(void)state;
	assert_int_equal(cuLinkComplete(l, &image, &size), CUDA_ERROR_INVALID_VALUE); /* nothing added */
	assert_int_equal(cuLinkAddData(l, CU_JIT_INPUT_PTX, (void *)bad, sizeof(bad), "bad.ptx", 0, NULL, NULL),
			 CUDA_ERROR_INVALID_PTX);
	assert_non_null(strstr(errlog, "bad.ptx"));
	assert_int_equal(cuLinkAddData(l, CU_JIT_INPUT_CUBIN, ptx, strlen(ptx), "x.cubin", 0, NULL, NULL),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(cuLinkAddData(l, CU_JIT_INPUT_FATBINARY, ptx, strlen(ptx), "x.fatbin", 0, NULL, NULL),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(cuLinkAddData(l, (CUjitInputType)99, ptx, strlen(ptx), "x", 0, NULL, NULL),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLinkAddData(l, CU_JIT_INPUT_PTX, NULL, 10, "x", 0, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLinkAddData(l, CU_JIT_INPUT_PTX, ptx, 0, "x", 0, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLinkAddFile(l, CU_JIT_INPUT_PTX, "/nonexistent/x.ptx", 0, NULL, NULL),
			 CUDA_ERROR_FILE_NOT_FOUND);
	/* the same entries twice: a link error naming one */
	CHECK(cuLinkAddData(l, CU_JIT_INPUT_PTX, ptx, strlen(ptx), "a.ptx", 0, NULL, NULL));
	CHECK(cuLinkAddData(l, CU_JIT_INPUT_PTX, ptx, strlen(ptx), "b.ptx", 0, NULL, NULL));
	assert_int_equal(cuLinkComplete(l, &image, &size), CUDA_ERROR_INVALID_PTX);
	assert_non_null(strstr(errlog, "defined twice"));
	assert_int_equal(cuLinkComplete(l, NULL, &size), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuLinkDestroy(l));
	assert_int_equal(cuLinkAddData(l, CU_JIT_INPUT_PTX, ptx, strlen(ptx), "a.ptx", 0, NULL, NULL),
			 CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cuLinkCreate(0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuLinkCreate(1, NULL, NULL, &l), CUDA_ERROR_INVALID_VALUE);
	free(ptx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_link_and_run),
		cmocka_unit_test(test_errors),
	};

	tl_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
