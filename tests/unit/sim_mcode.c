/* sim_mcode.c - unit tests of the software device's machine-code mode (SIMCUDA_MACHINE_CODE=noop):
 * an image nvcc built as sm_90 machine code only (tests/kernels/mcode.cu) is refused when the
 * mode is off; when on it loads every way, its kernels have their real names (one of 603
 * characters) and the parameter layouts nvcc laid out, its variables are found with their
 * initial bytes, a launch leaves memory alone but is timed and counted, and machine code for
 * another architecture loads but does not launch. The PTX reader takes the long name too.
 * tests layer; runs against libcuda.so.1.
 *
 * The mode is read once per process, so main runs the refusals, then runs itself again with
 * the mode on and SIMCUDA_STATS set, and reads the launch counts from the stats it wrote. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

#ifndef TEST_PTX_DIR
#define TEST_PTX_DIR "build/kernels"
#endif

#define LONG_NAME "mc_" REP60("long_name_")
#define REP10(s) s s s s s s s s s s
#define REP60(s) REP10(s) REP10(s) REP10(s) REP10(s) REP10(s) REP10(s)

struct fb_wrapper {
	uint32_t magic;              /* 0x466243b1 */
	uint32_t version;            /* 1 */
	const void *data;            /* the fatbin */
	const void *filename;        /* unused */
};

static char *image_path(const char *suffix)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/mcode%s", TEST_PTX_DIR, suffix);
	return path;
}

static void *read_image(const char *suffix)
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
	return buf;
}

/* ------------------------------------------------------------------ mode off */

static void test_refused_when_off(void **state)
{
	void *fb = read_image(".sm90.fatbin"), *cubin = read_image(".sm90.cubin");
	CUmodule m;
	CUlibrary lib;

	(void)state;
	assert_int_equal(cuModuleLoadData(&m, fb), CUDA_ERROR_NO_BINARY_FOR_GPU);
	assert_int_equal(cuModuleLoadData(&m, cubin), CUDA_ERROR_NO_BINARY_FOR_GPU);
	assert_int_equal(cuLibraryLoadData(&lib, fb, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_NO_BINARY_FOR_GPU);
	free(fb);
	free(cubin);
}

/* The same kernels as PTX (built by make from mcode.cu): a name of 603 characters reads. */
static void test_long_ptx_name(void **state)
{
	CUmodule m;
	CUfunction f;
	size_t o = 99, s = 99;

	(void)state;
	CHECK(cuModuleLoad(&m, image_path(".ptx")));
	CHECK(cuModuleGetFunction(&f, m, LONG_NAME));
	CHECK(cuFuncGetParamInfo(f, 0, &o, &s));
	assert_int_equal(o, 0);
	assert_int_equal(s, 8);
	CHECK(cuModuleUnload(m));
}

/* ------------------------------------------------------------------ mode on */

static void expect_param(CUfunction f, size_t i, size_t off, size_t size)
{
	size_t o = 99, s = 99;

	CHECK(cuFuncGetParamInfo(f, i, &o, &s));
	assert_int_equal(o, off);
	assert_int_equal(s, size);
}

/* The module's four kernels, by their real names, with nvcc's layouts. */
static void check_layouts(CUmodule m)
{
	static const size_t off[] = { 0, 8, 16, 32, 48, 52, 56 }, size[] = { 1, 8, 8, 16, 4, 3, 2 };
	unsigned int count = 0;
	CUfunction f;
	const char *name;
	size_t o;

	CHECK(cuModuleGetFunctionCount(&count, m));
	assert_int_equal(count, 4);
	CHECK(cuModuleGetFunction(&f, m, "mc_mixed"));
	for (size_t i = 0; i < 7; i++)
		expect_param(f, i, off[i], size[i]);
	assert_int_equal(cuFuncGetParamInfo(f, 7, &o, NULL), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuModuleGetFunction(&f, m, "mc_none"));
	assert_int_equal(cuFuncGetParamInfo(f, 0, &o, NULL), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuModuleGetFunction(&f, m, "mc_large"));
	expect_param(f, 0, 0, 800);
	expect_param(f, 1, 800, 8);
	CHECK(cuModuleGetFunction(&f, m, LONG_NAME));
	CHECK(cuFuncGetName(&name, f));
	assert_int_equal(strlen(name), 603);
	expect_param(f, 0, 0, 8);
	assert_int_equal(cuModuleGetFunction(&f, m, "mc_absent"), CUDA_ERROR_NOT_FOUND);
}

static void test_loads_every_way(void **state)
{
	void *fb = read_image(".sm90.fatbin"), *cubin = read_image(".sm90.cubin");
	struct fb_wrapper w = { 0x466243b1u, 1, fb, NULL };
	CUmodule m;
	CUlibrary lib;
	CUkernel k;
	size_t o = 0, s = 0;

	(void)state;
	CHECK(cuModuleLoadData(&m, fb));
	check_layouts(m);
	CHECK(cuModuleUnload(m));
	CHECK(cuModuleLoadData(&m, cubin));
	check_layouts(m);
	CHECK(cuModuleUnload(m));
	CHECK(cuModuleLoadFatBinary(&m, &w));
	check_layouts(m);
	CHECK(cuModuleUnload(m));
	CHECK(cuLibraryLoadData(&lib, fb, NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryGetKernel(&k, lib, "mc_mixed"));
	CHECK(cuKernelGetParamInfo(k, 3, &o, &s));
	assert_int_equal(o, 32);
	assert_int_equal(s, 16);
	CHECK(cuLibraryGetModule(&m, lib));
	check_layouts(m);
	CHECK(cuLibraryUnload(lib));
	free(fb);
	free(cubin);
}

static void test_globals(void **state)
{
	void *fb = read_image(".sm90.fatbin");
	CUlibrary lib;
	CUmodule m;
	CUdeviceptr d, d2;
	size_t bytes = 0;
	int counter = 0;
	float table[4];

	(void)state;
	CHECK(cuLibraryLoadData(&lib, fb, NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryGetGlobal(&d, &bytes, lib, "mc_counter"));
	assert_int_equal(bytes, sizeof(int));
	CHECK(cuMemcpyDtoH(&counter, d, sizeof(counter)));
	assert_int_equal(counter, 7);
	CHECK(cuLibraryGetGlobal(&d2, NULL, lib, "mc_counter"));
	assert_true(d2 == d); /* one variable, one address */
	CHECK(cuLibraryGetModule(&m, lib));
	CHECK(cuModuleGetGlobal(&d, &bytes, m, "mc_table"));
	assert_int_equal(bytes, sizeof(table));
	CHECK(cuMemcpyDtoH(table, d, sizeof(table)));
	assert_true(table[0] == 1.0f && table[3] == 4.0f);
	assert_int_equal(cuLibraryGetGlobal(&d, &bytes, lib, "mc_absent"), CUDA_ERROR_NOT_FOUND);
	CHECK(cuLibraryUnload(lib));
	free(fb);
}

/* Two launches of mc_mixed: memory stays as it was, the launches take modeled time (and main
 * checks they were counted). */
static void test_launch_is_noop(void **state)
{
	void *fb = read_image(".sm90.fatbin");
	CUmodule m;
	CUfunction f;
	CUdeviceptr d;
	CUevent a, b;
	float h[256], elapsed = 0;
	char c = 1;
	double x = 2;
	struct {
		_Alignas(16) float v[4];
	} q = { { 1, 2, 3, 4 } };
	int n = 1;
	char odd[3] = { 1, 2, 3 };
	short sh = 5;
	void *args[] = { &c, &x, &d, &q, &n, odd, &sh };

	(void)state;
	CHECK(cuModuleLoadData(&m, fb));
	CHECK(cuModuleGetFunction(&f, m, "mc_mixed"));
	CHECK(cuMemAlloc(&d, sizeof(h)));
	CHECK(cuMemsetD32(d, 0x7fc00001u, 256));
	CHECK(cuEventCreate(&a, CU_EVENT_DEFAULT));
	CHECK(cuEventCreate(&b, CU_EVENT_DEFAULT));
	CHECK(cuEventRecord(a, NULL));
	CHECK(cuLaunchKernel(f, 4096, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
	CHECK(cuLaunchKernel(f, 4096, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
	CHECK(cuEventRecord(b, NULL));
	CHECK(cuEventSynchronize(b));
	CHECK(cuEventElapsedTime(&elapsed, a, b));
	assert_true(elapsed > 0);
	CHECK(cuMemcpyDtoH(h, d, sizeof(h)));
	for (int i = 0; i < 256; i++) {
		uint32_t bits;

		memcpy(&bits, &h[i], 4);
		assert_int_equal(bits, 0x7fc00001u);
	}
	CHECK(cuMemFree(d));
	CHECK(cuModuleUnload(m));
	free(fb);
}

/* Machine code for sm_80 loads (as the driver loading lazily) but its kernels do not launch. */
static void test_other_arch(void **state)
{
	void *fb = read_image(".sm80.fatbin");
	CUmodule m;
	CUfunction f;

	(void)state;
	CHECK(cuModuleLoadData(&m, fb));
	CHECK(cuModuleGetFunction(&f, m, "mc_none"));
	assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_NO_BINARY_FOR_GPU);
	CHECK(cuModuleUnload(m));
	free(fb);
}

static int setup(void **state)
{
	static CUcontext ctx;

	(void)state;
	CHECK(cuInit(0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CHECK(cuCtxSetCurrent(ctx));
	return 0;
}

/* The count of `name` in group `group` of a SIMCUDA_STATS file, -1 when absent. */
static long stats_count(const char *path, const char *group, const char *name)
{
	FILE *f = fopen(path, "r");
	char line[1024], key[256];
	bool in = false;
	long v = -1;

	if (!f)
		return -1;
	snprintf(key, sizeof(key), "\"%s\":", name);
	while (fgets(line, sizeof(line), f) && v < 0) {
		char *p;

		if (strstr(line, group) && strchr(line, '{'))
			in = true;
		else if (in && strchr(line, '}'))
			in = false;
		else if (in && (p = strstr(line, key)))
			v = strtol(p + strlen(key), NULL, 10);
	}
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest off[] = {
		cmocka_unit_test(test_refused_when_off),
		cmocka_unit_test(test_long_ptx_name),
	};
	const struct CMUnitTest on[] = {
		cmocka_unit_test(test_loads_every_way),
		cmocka_unit_test(test_globals),
		cmocka_unit_test(test_launch_is_noop),
		cmocka_unit_test(test_other_arch),
	};
	char stats[] = "/tmp/sim_mcode_XXXXXX";
	int rc, status = 0, fd;
	pid_t pid;

	(void)argc;
	if (getenv("SIMCUDA_MACHINE_CODE"))
		return cmocka_run_group_tests_name("sim_mcode (mode on)", on, setup, NULL);
	rc = cmocka_run_group_tests_name("sim_mcode (mode off)", off, setup, NULL);
	fd = mkstemp(stats);
	if (fd < 0)
		return 1;
	close(fd);
	pid = fork();
	if (pid == 0) {
		setenv("SIMCUDA_MACHINE_CODE", "noop", 1);
		setenv("SIMCUDA_STATS", stats, 1);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		rc = 1;
	/* both launches of test_launch_is_noop were counted as launches and as kernels run */
	if (stats_count(stats, "\"launches\"", "mc_mixed") != 2 || stats_count(stats, "\"kernels\"", "mc_mixed") != 2) {
		fprintf(stderr, "sim_mcode: mc_mixed launches %ld, kernels %ld in %s (want 2 and 2)\n",
			stats_count(stats, "\"launches\"", "mc_mixed"), stats_count(stats, "\"kernels\"", "mc_mixed"),
			stats);
		rc = 1;
	} else {
		unlink(stats);
	}
	return rc;
}
