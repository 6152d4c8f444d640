/* test_capture_images.c - capture's images (capture/images.c): the PTX of every loaded module
 * and library kept once per distinct text, freed when nothing names it any more (unloaded, and
 * no function record launched from it), held by the function records made from it
 * (cap_func_ptx), and part of a record's identity; a JIT link's PTX inputs stand for the
 * machine code it outputs. Runs against the software device in-process
 * (libcuda.so.1 from LD_LIBRARY_PATH, as tests/run sets it). tests layer (cmocka, libcufold.a);
 * the images are built by the Makefile (FATBINS). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "capture/capture_int.h"
#include "driver/real.h"
#include "shim/shim.h"

#ifndef TEST_PTX_DIR
#define TEST_PTX_DIR "build/kernels"
#endif

static struct cap_engine *ce; /* the engine part under test */
static CUcontext ctx;

static void check(CUresult rc, const char *what)
{
	if (rc != CUDA_SUCCESS)
		fail_msg("%s failed: %d", what, (int)rc);
}
#define CK(call) check((call), #call)

static char *path_of(const char *file)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/%s", TEST_PTX_DIR, file);
	return path;
}

static void *read_file(const char *file)
{
	FILE *f = fopen(path_of(file), "rb");
	char *buf;
	long n;

	if (!f)
		fail_msg("cannot open %s (built by make)", path_of(file));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static struct cap_totals totals(void)
{
	struct cap_totals t;

	cap_get_totals(ce, &t);
	return t;
}

/* Load a module from the bytes of file and tell capture, as the loading hooks do. */
static CUmodule load(const char *file)
{
	void *img = read_file(file);
	CUmodule m;

	CK(DRV_REAL(cuModuleLoadData)(&m, img));
	cap_image_loaded(ce, false, m, img, NULL);
	free(img);
	return m;
}

static void unload(CUmodule m)
{
	cap_funcs_forget_module(ce, m, NULL); /* what the unload hook tells capture */
	CK(DRV_REAL(cuModuleUnload)(m));
}

/* The record of a module's function, as a launch of it makes it (once per handle). */
static struct cap_func *func_of(CUmodule m, const char *name)
{
	CUfunction f;

	CK(DRV_REAL(cuModuleGetFunction)(&f, m, name));
	cap_image_link(ce, CAP_LINK_MODULE_FUNCTION, f, m);
	return cap__func_get(ce, f, ctx, NULL);
}

static int group_setup(void **state)
{
	struct cap_config cfg = { .max_templates = 8 };
	CUdevice dev;

	(void)state;
	if (shim_init() != 0)
		return -1;
	CK(DRV_REAL(cuInit)(0));
	CK(DRV_REAL(cuDeviceGet)(&dev, 0));
	CK(DRV_REAL(cuDevicePrimaryCtxRetain)(&ctx, dev));
	CK(DRV_REAL(cuCtxSetCurrent)(ctx));
	ce = cap_engine_create(&cfg);
	return ce ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	cap_engine_destroy(ce);
	return 0;
}

/* cap__func_get remembers its answers (funcs.c): a module's unload, or capture forgetting every
 * handle, makes the next launch of a handle ask again (a binding is made anew), never answered
 * from what was remembered before. */
static void test_lookup_forgotten(void **state)
{
	CUmodule a;
	CUfunction f;
	struct cap_func *r;

	(void)state;
	a = load("elementwise.ptx");
	CK(DRV_REAL(cuModuleGetFunction)(&f, a, "fill"));
	cap_image_link(ce, CAP_LINK_MODULE_FUNCTION, f, a);
	r = cap__func_get(ce, f, ctx, NULL);
	assert_non_null(r);
	assert_ptr_equal(cap__func_get(ce, f, ctx, NULL), r); /* remembered */
	assert_non_null(cf_map_get(&ce->funcs.by_func, (uint64_t)(uintptr_t)f));
	cap_funcs_forget_module(ce, a, NULL); /* the module's handles go */
	assert_null(cf_map_get(&ce->funcs.by_func, (uint64_t)(uintptr_t)f));
	assert_non_null(cap__func_get(ce, f, ctx, NULL));
	assert_non_null(cf_map_get(&ce->funcs.by_func, (uint64_t)(uintptr_t)f)); /* asked again */
	cap_funcs_forget(ce); /* every handle goes (an unload capture could not attribute) */
	assert_null(cf_map_get(&ce->funcs.by_func, (uint64_t)(uintptr_t)f));
	assert_non_null(cap__func_get(ce, f, ctx, NULL));
	assert_non_null(cf_map_get(&ce->funcs.by_func, (uint64_t)(uintptr_t)f));
	unload(a);
}

/* One copy per distinct text; unloaded and unused, it is freed. */
static void test_dedup_and_free(void **state)
{
	struct cap_totals t0 = totals(), t;
	CUmodule a, b, lz4, plain;

	(void)state;
	a = load("elementwise.ptx");
	b = load("elementwise.ptx");
	t = totals();
	assert_int_equal(t.images_loaded - t0.images_loaded, 2);
	assert_int_equal(t.images_ptx - t0.images_ptx, 2);
	assert_int_equal(t.ptx_texts_kept - t0.ptx_texts_kept, 1);
	/* an LZ4 fatbin's compute_90 PTX (nvcc blanks its comments: another text), and the same
	 * text stored uncompressed in another fatbin */
	lz4 = load("elementwise.lz4.fatbin");
	plain = load("elementwise.plain.fatbin");
	t = totals();
	assert_int_equal(t.ptx_texts_kept - t0.ptx_texts_kept, 2);
	unload(a);
	assert_int_equal(totals().ptx_texts_kept - t0.ptx_texts_kept, 2); /* b still holds it */
	unload(b);
	assert_int_equal(totals().ptx_texts_kept - t0.ptx_texts_kept, 1);
	unload(lz4);
	unload(plain);
	t = totals();
	assert_int_equal(t.ptx_texts_kept, t0.ptx_texts_kept);
	assert_int_equal(t.ptx_bytes_kept, t0.ptx_bytes_kept);
}

/* A function record names its image's PTX and keeps it after the unload; a kernel of the same
 * name and layout from another text is another record. */
static void test_function_records(void **state)
{
	struct cap_totals t0 = totals();
	CUmodule m = load("elementwise.ptx"), other = load("elementwise.lz4.fatbin");
	struct cap_func *f = func_of(m, "fill"), *g = func_of(other, "fill");
	size_t len = 0;
	const char *ptx = cap_func_ptx(f, &len);

	(void)state;
	assert_non_null(f);
	assert_non_null(ptx);
	assert_int_equal(strlen(ptx), len);
	assert_non_null(strstr(ptx, ".entry fill"));
	assert_int_equal(cap_func_code(f), CAP_CODE_PTX);
	assert_string_equal(cap_code_name(cap_func_code(f)), "ptx");
	assert_non_null(g);
	assert_ptr_not_equal(f, g);
	assert_true(f->id != g->id);
	assert_ptr_equal(func_of(m, "fill"), f); /* the same handle: the same record */
	unload(m);
	unload(other);
	assert_int_equal(totals().ptx_texts_kept - t0.ptx_texts_kept, 2); /* the records hold both */
	assert_ptr_equal(cap_func_ptx(f, NULL), ptx);
	/* loaded again: the same text, so the same image and the same record */
	m = load("elementwise.ptx");
	assert_int_equal(totals().ptx_texts_kept - t0.ptx_texts_kept, 2);
	assert_ptr_equal(func_of(m, "fill"), f);
	unload(m);
}

/* A library's kernel, the function resolved from it and the library's module name the
 * library's image; unloading the library forgets all three handles. */
static void test_library_kernels(void **state)
{
	void *img = read_file("elementwise.all-zstd.fatbin");
	CUlibrary lib;
	CUkernel k;
	CUfunction fk;
	CUmodule lm;
	struct cap_func *f;

	(void)state;
	CK(DRV_REAL(cuLibraryLoadData)(&lib, img, NULL, NULL, 0, NULL, NULL, 0));
	cap_image_loaded(ce, true, lib, img, NULL);
	CK(DRV_REAL(cuLibraryGetKernel)(&k, lib, "relu"));
	cap_kernel_handle_add(ce, k);
	cap_image_link(ce, CAP_LINK_LIBRARY_KERNEL, k, lib);
	assert_non_null(cap__image_of(ce, NULL, k, NULL));
	CK(DRV_REAL(cuKernelGetFunction)(&fk, k));
	cap_image_link(ce, CAP_LINK_KERNEL_FUNCTION, fk, k);
	assert_ptr_equal(cap__image_of(ce, fk, NULL, NULL), cap__image_of(ce, NULL, k, NULL));
	f = cap__func_get(ce, (CUfunction)k, ctx, NULL);
	assert_non_null(f);
	assert_int_equal(cap_func_code(f), CAP_CODE_PTX);
	assert_non_null(strstr(cap_func_ptx(f, NULL), ".entry relu"));
	/* the library's module (cuLibraryGetModule): its functions find the image through it */
	CK(DRV_REAL(cuLibraryGetModule)(&lm, lib));
	cap_image_link(ce, CAP_LINK_LIBRARY_MODULE, lm, lib);
	assert_ptr_equal(cap__image_of(ce, NULL, NULL, lm), cap__image_of(ce, NULL, k, NULL));
	cap_funcs_forget_module(ce, NULL, lib);
	assert_null(cap__image_of(ce, fk, k, lm));
	CK(DRV_REAL(cuLibraryUnload)(lib));
	free(img);
}

/* Machine code only, a file, an image that is not one. */
static void test_without_ptx(void **state)
{
	struct cap_totals t0 = totals(), t;
	void *cubin = read_file("mcode.sm90.cubin");
	int fake[2];

	(void)state;
	cap_image_loaded(ce, false, &fake[0], cubin, NULL);
	cap_image_loaded(ce, false, &fake[1], "not an image", NULL);
	cap_image_loaded(ce, true, &fake[0], NULL, path_of("elementwise.fatbin"));
	cap_image_loaded(ce, true, &fake[1], NULL, path_of("no-such-file"));
	t = totals();
	assert_int_equal(t.images_loaded - t0.images_loaded, 4);
	assert_int_equal(t.images_machine_code - t0.images_machine_code, 1);
	assert_int_equal(t.images_no_code - t0.images_no_code, 2);
	assert_int_equal(t.images_ptx - t0.images_ptx, 1); /* the file: zstd compute_75 PTX */
	assert_int_equal(cap__image_of(ce, NULL, NULL, (CUmodule)&fake[0])->code, CAP_CODE_MACHINE);
	cap_funcs_forget_module(ce, (CUmodule)&fake[0], NULL);
	cap_funcs_forget_module(ce, (CUmodule)&fake[1], NULL);
	cap_funcs_forget_module(ce, NULL, (CUlibrary)&fake[0]);
	cap_funcs_forget_module(ce, NULL, (CUlibrary)&fake[1]);
	assert_int_equal(totals().ptx_texts_kept, t0.ptx_texts_kept);
	free(cubin);
}

/* A module loaded from a JIT link's output (machine code on a GPU: a cubin stands for it here)
 * has the link's PTX inputs, joined with one set of headers; destroyed, the link is forgotten. */
static void test_jit_link(void **state)
{
	struct cap_totals t0 = totals(), t;
	char *fill = read_file("elementwise.ptx"), *linalg = read_file("linalg.ptx");
	void *cubin = read_file("mcode.sm90.cubin");
	int link, mod[2];
	const struct cap_image *img;
	const char *p;
	int versions = 0;

	(void)state;
	cap_link_input(ce, (CUlinkState)&link, CU_JIT_INPUT_PTX, fill, strlen(fill) + 1, NULL);
	cap_link_input(ce, (CUlinkState)&link, CU_JIT_INPUT_CUBIN, cubin, 64, NULL); /* no PTX in it */
	cap_link_input(ce, (CUlinkState)&link, CU_JIT_INPUT_PTX, NULL, 0, path_of("linalg.ptx"));
	cap_link_complete(ce, (CUlinkState)&link, cubin);
	cap_image_loaded(ce, false, &mod[0], cubin, NULL);
	img = cap__image_of(ce, NULL, NULL, (CUmodule)&mod[0]);
	assert_int_equal(img->code, CAP_CODE_PTX);
	assert_int_equal(img->ptx_len, strlen(img->ptx));
	assert_int_equal(img->ptx_len, strlen(fill) + 1 + strlen(linalg) + 2 * 3); /* 3 headers commented */
	assert_memory_equal(img->ptx, fill, strlen(fill));
	for (p = img->ptx; (p = strstr(p, ".version")); p++)
		versions += p == img->ptx || p[-1] == '\n';
	assert_int_equal(versions, 1);
	assert_non_null(strstr(img->ptx, "\n//.version"));
	cap_link_destroy(ce, (CUlinkState)&link);
	cap_image_loaded(ce, false, &mod[1], cubin, NULL); /* the same bytes, no link any more */
	assert_int_equal(cap__image_of(ce, NULL, NULL, (CUmodule)&mod[1])->code, CAP_CODE_MACHINE);
	t = totals();
	assert_int_equal(t.images_ptx - t0.images_ptx, 1);
	assert_int_equal(t.images_machine_code - t0.images_machine_code, 1);
	cap_funcs_forget_module(ce, (CUmodule)&mod[0], NULL);
	cap_funcs_forget_module(ce, (CUmodule)&mod[1], NULL);
	assert_int_equal(totals().ptx_texts_kept, t0.ptx_texts_kept);
	free(fill);
	free(linalg);
	free(cubin);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dedup_and_free),
		cmocka_unit_test(test_function_records),
		cmocka_unit_test(test_library_kernels),
		cmocka_unit_test(test_without_ptx),
		cmocka_unit_test(test_jit_link),
		cmocka_unit_test(test_lookup_forgotten),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
