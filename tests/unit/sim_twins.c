/* sim_twins.c - unit tests of the software device's twin registry: built-in twins found by
 * name, SIMCUDA_TWINS plugins (a bad path is reported once and skipped), a kernel without a
 * twin (run by the PTX interpreter, silently: sim_interp.c tests the interpreter), and a twin
 * refusing a kernel whose parameters are not the ones it was written for. tests layer; runs against libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim_twin.h"
#include "testlib.h"

/* Exported by the software device (sim_twin_* names are public). */
sim_twin_fn sim_twin_find(const char *entry);

static char plugin_path[4096];   /* $ROOT/$B/plugins/extra_twins.so when it exists */

/* ------------------------------------------------------------------ stderr capture */

struct capture {
	int saved;                   /* the real stderr */
	FILE *file;                  /* where fd 2 goes meanwhile */
};

static void capture_begin(struct capture *c)
{
	fflush(stderr);
	c->file = tmpfile();
	assert_non_null(c->file);
	c->saved = dup(2);
	assert_true(c->saved >= 0);
	assert_true(dup2(fileno(c->file), 2) >= 0);
}

/* Stop capturing; the text written meanwhile, malloc'd. */
static char *capture_end(struct capture *c)
{
	long n;
	char *text;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	n = ftell(c->file);
	text = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
	assert_non_null(text);
	rewind(c->file);
	if (n > 0 && fread(text, 1, (size_t)n, c->file) != (size_t)n)
		text[0] = 0;
	fclose(c->file);
	fputs(text, stderr); /* keep it in the test log */
	return text;
}

static int count_lines_with(const char *text, const char *needle)
{
	int n = 0;

	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (memmem(line, len, needle, strlen(needle)))
			n++;
		line = end ? end + 1 : NULL;
	}
	return n;
}

/* ------------------------------------------------------------------ tests */

/* The first lookup loads SIMCUDA_TWINS: the bad path is reported once, the good one loaded. */
static void test_plugins_loaded_once(void **state)
{
	struct capture c;
	char *text;

	(void)state;
	capture_begin(&c);
	assert_non_null(sim_twin_find("fill"));
	assert_non_null(sim_twin_find("relu"));
	text = capture_end(&c);
	assert_int_equal(count_lines_with(text, "/nonexistent/twins.so"), 1);
	assert_int_equal(count_lines_with(text, "SIMCUDA_TWINS"), 1);
	free(text);
}

static void test_find_builtin(void **state)
{
	char longname[600];
	void *sym;
	sim_twin_fn want, got;

	(void)state;
	sym = dlsym(RTLD_DEFAULT, "sim_twin_gemm");
	assert_non_null(sym);
	memcpy(&want, &sym, sizeof(want));
	got = sim_twin_find("gemm");
	assert_true(got == want);
	assert_non_null(sim_twin_find("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
	assert_non_null(sim_twin_find("cat"));
	assert_null(sim_twin_find("no_such_kernel"));
	assert_null(sim_twin_find("find")); /* the registry itself is not a twin */
	assert_null(sim_twin_find(""));
	assert_null(sim_twin_find(NULL));
	memset(longname, 'k', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	assert_null(sim_twin_find(longname));
}

static void test_plugin_twin_runs(void **state)
{
	CUmodule m;
	CUfunction f;
	CUdeviceptr din, dout;
	float in[10], out[10];
	int n = 10;
	void *args[] = { &dout, &din, &n };

	(void)state;
	if (!plugin_path[0])
		skip();
	assert_non_null(sim_twin_find("plugin_square"));
	m = tl_load_module("plugin");
	f = tl_func(m, "plugin_square");
	for (int i = 0; i < 10; i++)
		in[i] = (float)i - 4.5f;
	CHECK(cuMemAlloc(&din, sizeof(in)));
	CHECK(cuMemAlloc(&dout, sizeof(out)));
	CHECK(cuMemcpyHtoD(din, in, sizeof(in)));
	CHECK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int i = 0; i < 10; i++)
		assert_true(out[i] == in[i] * in[i]);
	CHECK(cuMemFree(din));
	CHECK(cuMemFree(dout));
	CHECK(cuModuleUnload(m));
}

static void test_missing_twin(void **state)
{
	static const char ptx[] =
		".version 9.0\n.target sm_90\n.address_size 64\n"
		".visible .entry kernel_without_twin(.param .u64 p, .param .u32 n)\n{\n\tret;\n}\n";
	CUmodule m;
	CUfunction f;
	CUdeviceptr d = 0;
	int n = 1;
	void *args[] = { &d, &n };
	struct capture c;
	char *text;

	(void)state;
	CHECK(cuModuleLoadData(&m, ptx));
	CHECK(cuModuleGetFunction(&f, m, "kernel_without_twin"));
	capture_begin(&c);
	/* no twin: the PTX interpreter runs it, which is no error and says nothing */
	CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CHECK(cuCtxSynchronize());
	text = capture_end(&c);
	assert_int_equal(count_lines_with(text, "kernel_without_twin"), 0);
	free(text);
	CHECK(cuModuleUnload(m));
}

/* A program's own kernel named like a test kernel, with other parameters: the built-in twin
 * refuses to run it (one log line) instead of reading a wrong layout. */
static void test_signature_mismatch(void **state)
{
	static const char ptx[] =
		".version 9.0\n.target sm_90\n.address_size 64\n"
		".visible .entry fill(.param .u64 p)\n{\n\tret;\n}\n";
	CUmodule m;
	CUfunction f;
	CUdeviceptr d;
	float h[4] = { 1, 2, 3, 4 }, got[4];
	void *args[] = { &d };
	struct capture c;
	char *text;

	(void)state;
	CHECK(cuMemAlloc(&d, sizeof(h)));
	CHECK(cuMemcpyHtoD(d, h, sizeof(h)));
	CHECK(cuModuleLoadData(&m, ptx));
	CHECK(cuModuleGetFunction(&f, m, "fill"));
	capture_begin(&c);
	CHECK(cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, NULL, args, NULL));
	CHECK(cuCtxSynchronize());
	text = capture_end(&c);
	assert_int_equal(count_lines_with(text, "kernel fill: its parameters do not match"), 1);
	free(text);
	CHECK(cuMemcpyDtoH(got, d, sizeof(got)));
	assert_memory_equal(got, h, sizeof(h));
	CHECK(cuModuleUnload(m));
	CHECK(cuMemFree(d));
}

int main(void)
{
	const char *root = getenv("ROOT"), *b = getenv("B");
	char env[8192];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plugins_loaded_once),
		cmocka_unit_test(test_find_builtin),
		cmocka_unit_test(test_plugin_twin_runs),
		cmocka_unit_test(test_missing_twin),
		cmocka_unit_test(test_signature_mismatch),
	};

	/* tests/run exports ROOT and B; the plugin is built to $B/plugins. */
	if (root && b) {
		snprintf(plugin_path, sizeof(plugin_path), "%s/%s/plugins/extra_twins.so", root, b);
		if (access(plugin_path, R_OK) != 0)
			plugin_path[0] = 0;
	}
	snprintf(env, sizeof(env), "/nonexistent/twins.so%s%s", plugin_path[0] ? ":" : "",
		 plugin_path);
	setenv("SIMCUDA_TWINS", env, 1);
	tl_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
