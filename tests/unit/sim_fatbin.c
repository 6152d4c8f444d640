/* sim_fatbin.c - unit tests of the software device's binary images: nvcc's fat binaries (the
 * default zstd-compressed one, LZ4, uncompressed with two PTX versions) loaded every way a
 * program can (module data, data with options, fat binary, file, wrapper, library data and
 * file) give the same functions and layouts as the PTX and run; machine code only, a bare cubin
 * and PTX newer than the device are refused naming kernels and architectures. tests layer;
 * runs against libcuda.so.1; the images are built by the Makefile (FATBINS). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

#ifndef TEST_PTX_DIR
#define TEST_PTX_DIR "build/kernels"
#endif

/* What __cudaRegisterFatBinary receives: nvcc's __fatBinC_Wrapper_t. */
struct fb_wrapper {
	uint32_t magic;              /* 0x466243b1 */
	uint32_t version;            /* 1 */
	const void *data;            /* the fatbin */
	const void *filename;        /* unused */
};

static char *image_path(const char *suffix)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/elementwise%s", TEST_PTX_DIR, suffix);
	return path;
}

static void *read_image(const char *suffix, size_t *len)
{
	FILE *f = fopen(image_path(suffix), "rb");
	void *buf;
	long n;

	if (!f)
		fail_msg("cannot open %s (built by make)", image_path(suffix));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

/* The module has elementwise.cu's eight kernels with the PTX's layouts, and `fill` runs. */
static void check_module(CUmodule m, int want_ptx_sm)
{
	CUfunction f;
	unsigned int count = 0;
	size_t o, s;
	int ptx_sm = 0;
	CUdeviceptr d;
	float h[64];
	float v = 2.5f;
	int n = 64;
	void *args[] = { &d, &v, &n };

	CHECK(cuModuleGetFunctionCount(&count, m));
	assert_int_equal(count, 8);
	CHECK(cuModuleGetFunction(&f, m, "axpy"));
	CHECK(cuFuncGetParamInfo(f, 3, &o, &s));
	assert_int_equal(o, 20);
	assert_int_equal(s, 4);
	CHECK(cuModuleGetFunction(&f, m, "fill"));
	CHECK(cuFuncGetAttribute(&ptx_sm, CU_FUNC_ATTRIBUTE_PTX_VERSION, f));
	assert_int_equal(ptx_sm, want_ptx_sm);
	CHECK(cuMemAlloc(&d, sizeof(h)));
	CHECK(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(h, d, sizeof(h)));
	for (int i = 0; i < 64; i++)
		assert_true(h[i] == 2.5f);
	CHECK(cuMemFree(d));
}

static void load_every_way(const char *suffix, int want_ptx_sm)
{
	size_t len;
	void *img = read_image(suffix, &len);
	struct fb_wrapper w = { 0x466243b1u, 1, img, NULL };
	char log[256] = "";
	CUjit_option opts[] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *vals[] = { log, (void *)(uintptr_t)sizeof(log) };
	CUmodule m;
	CUlibrary lib;

	CHECK(cuModuleLoadData(&m, img));
	check_module(m, want_ptx_sm);
	CHECK(cuModuleUnload(m));
	CHECK(cuModuleLoadDataEx(&m, img, 2, opts, vals));
	check_module(m, want_ptx_sm);
	CHECK(cuModuleUnload(m));
	CHECK(cuModuleLoadFatBinary(&m, img));
	check_module(m, want_ptx_sm);
	CHECK(cuModuleUnload(m));
	CHECK(cuModuleLoadFatBinary(&m, &w));
	check_module(m, want_ptx_sm);
	CHECK(cuModuleUnload(m));
	CHECK(cuModuleLoadData(&m, &w));
	check_module(m, want_ptx_sm);
	CHECK(cuModuleUnload(m));
	CHECK(cuModuleLoad(&m, image_path(suffix)));
	check_module(m, want_ptx_sm);
	CHECK(cuModuleUnload(m));
	CHECK(cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryGetModule(&m, lib));
	check_module(m, want_ptx_sm);
	CHECK(cuLibraryUnload(lib));
	CHECK(cuLibraryLoadFromFile(&lib, image_path(suffix), NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryGetModule(&m, lib));
	check_module(m, want_ptx_sm);
	CHECK(cuLibraryUnload(lib));
	free(img);
}

/* ------------------------------------------------------------------ tests */

static void test_default_fatbin(void **state)
{
	(void)state;
	tl_init();
	/* nvcc 13's default: sm_75 code and compute_75 PTX, zstd-compressed */
	load_every_way(".fatbin", 75);
}

static void test_lz4_fatbin(void **state)
{
	(void)state;
	load_every_way(".lz4.fatbin", 90);
}

static void test_newest_usable_ptx(void **state)
{
	(void)state;
	/* compute_80 and compute_90 PTX, uncompressed: the device (9.0) takes compute_90 */
	load_every_way(".plain.fatbin", 90);
}

/* Load with an error log and expect rc and every word of `want` in the log. */
static void expect_refused(const char *suffix, CUresult want_rc, const char *const *want)
{
	void *img = read_image(suffix, NULL);
	char log[1024] = "";
	CUjit_option opts[] = { CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *vals[] = { log, (void *)(uintptr_t)sizeof(log) };
	CUmodule m;
	CUlibrary lib;

	assert_int_equal(cuModuleLoadDataEx(&m, img, 2, opts, vals), want_rc);
	for (const char *const *w = want; *w; w++)
		if (!strstr(log, *w))
			fail_msg("%s: \"%s\" not in the error log: %s", suffix, *w, log);
	vals[1] = (void *)(uintptr_t)sizeof(log);
	log[0] = 0;
	assert_int_equal(cuLibraryLoadData(&lib, img, opts, vals, 2, NULL, NULL, 0), want_rc);
	assert_non_null(strstr(log, want[0]));
	assert_int_equal(cuModuleLoad(&m, image_path(suffix)), want_rc);
	assert_int_equal(cuModuleLoadFatBinary(&m, img), want_rc);
	free(img);
}

static void test_machine_code_refused(void **state)
{
	static const char *const sass[] = { "machine code only", "sm_80 sm_90", "fill", "axpy",
					    "tanh_kernel", "compute_XX", NULL };
	static const char *const cubin[] = { "ELF cubin for sm_90", "fill", "relu", NULL };
	static const char *const too_new[] = { "compute_100", NULL };

	(void)state;
	expect_refused(".sass.fatbin", CUDA_ERROR_NO_BINARY_FOR_GPU, sass);
	expect_refused(".cubin", CUDA_ERROR_NO_BINARY_FOR_GPU, cubin);
	expect_refused(".new.fatbin", CUDA_ERROR_NO_BINARY_FOR_GPU, too_new);
}

static void test_truncated_file(void **state)
{
	size_t len;
	void *img = read_image(".plain.fatbin", &len);
	char path[] = "/tmp/sim_fatbin_XXXXXX";
	int fd = mkstemp(path);
	CUmodule m;

	(void)state;
	assert_true(fd >= 0);
	/* cut inside the second entry: the header's sizes run past the end of the file */
	assert_int_equal(write(fd, img, len / 2), (ssize_t)(len / 2));
	close(fd);
	assert_int_equal(cuModuleLoad(&m, path), CUDA_ERROR_INVALID_IMAGE);
	/* a file shorter than the fatbin header itself */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, img, 8), 8);
	close(fd);
	assert_int_equal(cuModuleLoad(&m, path), CUDA_ERROR_INVALID_IMAGE);
	unlink(path);
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_fatbin),
		cmocka_unit_test(test_lz4_fatbin),
		cmocka_unit_test(test_newest_usable_ptx),
		cmocka_unit_test(test_machine_code_refused),
		cmocka_unit_test(test_truncated_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
