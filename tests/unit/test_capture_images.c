/* test_capture_images.c - capture's images (capture/images.c): the PTX of every loaded module
 * and library kept once per distinct text, freed when nothing names it any more (unloaded, and
 * no function record launched from it), held by the function records made from it
 * (cap_func_ptx), and part of a record's identity; a JIT link's PTX inputs stand for the
 * machine code it outputs; an unload forgets exactly its own handles, visiting only those, and
 * a handle that cannot be indexed by owner is not kept. Runs against the software device
 * in-process (libcuda.so.1 from LD_LIBRARY_PATH, as tests/run sets it). tests layer (cmocka,
 * libcufold.a); the images are built by the Makefile (FATBINS). */
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

/* Out of memory on demand: calloc, where cf_map takes its slots, fails while calloc_fails is
 * set. Not in sanitizer builds, whose runtime owns the allocator, nor under valgrind, which
 * replaces this one (the test is skipped there: calloc_can_fail). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TEST_CALLOC_FAILS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define TEST_CALLOC_FAILS 0
#endif
#endif
#ifndef TEST_CALLOC_FAILS
#define TEST_CALLOC_FAILS 1
extern void *__libc_calloc(size_t n, size_t size);
static bool calloc_fails;

void *calloc(size_t n, size_t size)
{
	return calloc_fails ? NULL : __libc_calloc(n, size);
}
#endif

/* Whether calloc fails on demand here (false where another allocator replaced it). */
static bool calloc_can_fail(void)
{
	bool fails = false;
#if TEST_CALLOC_FAILS
	void *(*volatile alloc)(size_t, size_t) = calloc; /* not a call the compiler may elide */
	void *p;

	calloc_fails = true;
	p = alloc(1, 1);
	calloc_fails = false;
	fails = !p;
	free(p);
#endif
	return fails;
}

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

/* ------------------------------------------------------------------ unloads by owner */

enum bind_kind { BK_FN, BK_KERNEL, BK_MOD, BK_LIB };

/* A handle the test bound, what it should answer, and whose it is. */
struct handle_rec {
	enum bind_kind kind;         /* which lookup answers it */
	int owner;                   /* index in owner_h, -1 once forgotten */
	struct cap_image *img;       /* what it was bound to */
};

#define OWNERS 7                     /* modules 0..2, libraries 3..6 */
#define PER 24                       /* functions per module; kernels per library */
#define HANDLES 512
/* a library's binds: its kernels, a function of each, its module, 3 functions of that, itself */
#define LIB_BINDS (2 * PER + 1 + 3 + 1)
static uint64_t owner_h[OWNERS];     /* the fake modules' and libraries' handles (8-aligned) */
static uint64_t hnd[HANDLES];        /* fake function, kernel and library-module handles */
static struct handle_rec rec[HANDLES + OWNERS]; /* hnd's, then the owners' own entries */
static int nhnd;                     /* hnd's used */

static bool owner_is_lib(int o)
{
	return o >= 3;
}

static void *owner_ptr(int o)
{
	return &owner_h[o];
}

/* The map a kind lives in (the test reads the engine's maps: capture_int.h). */
static struct cf_map *map_of_kind(enum bind_kind k)
{
	return k == BK_FN ? &ce->images.fns : k == BK_KERNEL ? &ce->images.kernels :
	       k == BK_MOD ? &ce->images.mods : &ce->images.libs;
}

static void *ptr_of(int i)
{
	return i < HANDLES ? (void *)&hnd[i] : owner_ptr(i - HANDLES);
}

/* What capture answers for rec[i]'s handle now: its image, NULL when not bound. */
static struct cap_image *answer(int i)
{
	void *h = ptr_of(i);

	switch (rec[i].kind) {
	case BK_FN:
		return cap__image_of(ce, h, NULL, NULL);
	case BK_KERNEL:
		return cap__image_of(ce, NULL, h, NULL);
	case BK_MOD:
		return cap__image_of(ce, NULL, NULL, h);
	case BK_LIB:
	default:
		return cf_map_get(&ce->images.libs, (uint64_t)(uintptr_t)h) ? rec[i].img : NULL;
	}
}

/* Every handle the test bound answers as recorded, every forgotten one not at all, and the
 * maps hold exactly the live ones. */
static void check_handles(const char *when)
{
	size_t live[4] = { 0 };

	for (int i = 0; i < HANDLES + OWNERS; i++) {
		struct cap_image *got;

		if (i < HANDLES && i >= nhnd)
			continue;
		got = answer(i);
		if (rec[i].owner >= 0 && got != rec[i].img)
			fail_msg("%s: handle %d (kind %d, owner %d) answers %p, not %p", when, i, (int)rec[i].kind,
				 rec[i].owner, (void *)got, (void *)rec[i].img);
		if (rec[i].owner < 0 && cf_map_get(map_of_kind(rec[i].kind), (uint64_t)(uintptr_t)ptr_of(i)))
			fail_msg("%s: handle %d (kind %d) forgotten but still bound", when, i, (int)rec[i].kind);
		live[rec[i].kind] += rec[i].owner >= 0;
	}
	for (int k = BK_FN; k <= BK_LIB; k++)
		if (map_of_kind((enum bind_kind)k)->n != live[k])
			fail_msg("%s: map of kind %d holds %zu entries, %zu live", when, k,
				 map_of_kind((enum bind_kind)k)->n, live[k]);
}

static int new_handle(enum bind_kind kind, int owner, struct cap_image *img)
{
	assert_true(nhnd < HANDLES);
	assert_non_null(img);
	rec[nhnd] = (struct handle_rec){ kind, owner, img };
	return nhnd++;
}

/* Forget owner o as its unload does; the binds visited must be exactly those it held. */
static void forget_owner(int o, uint64_t expect_visits)
{
	uint64_t v0 = ce->images.forget_visits, n = 0;

	for (int i = 0; i < HANDLES + OWNERS; i++)
		n += (i < nhnd || i >= HANDLES) && rec[i].owner == o;
	if (owner_is_lib(o))
		cap__images_forget(ce, NULL, owner_ptr(o));
	else
		cap__images_forget(ce, owner_ptr(o), NULL);
	for (int i = 0; i < HANDLES + OWNERS; i++)
		if ((i < nhnd || i >= HANDLES) && rec[i].owner == o)
			rec[i].owner = -1;
	assert_int_equal(n, expect_visits);
	assert_int_equal(ce->images.forget_visits - v0, expect_visits);
}

/* Modules and libraries with functions, kernels and library modules bound (by the links the
 * hooks make), forgotten one owner at a time, before and after handles are bound again to
 * another owner: each unload drops exactly its owner's handles, every other still answers,
 * and it visits only what it drops (the old scan visited every handle bound, ~24 k kernels
 * for each of PyTorch's 477 libraries at exit). */
static void test_forget_by_owner(void **state)
{
	static const char *const files[OWNERS] = { "elementwise.ptx", "linalg.ptx", NULL,
						   "elementwise.lz4.fatbin", "elementwise.plain.fatbin",
						   "mcode.sm90.cubin", "elementwise.all-zstd.fatbin" };
	struct cap_totals t0 = totals();
	int lmod[OWNERS], kern[OWNERS], fa, kb, lm_fn;

	(void)state;
	nhnd = 0;
	for (int o = 0; o < OWNERS; o++) {
		void *img = files[o] ? read_file(files[o]) : strdup("not an image");

		cap_image_loaded(ce, owner_is_lib(o), owner_ptr(o), img, NULL);
		free(img);
		rec[HANDLES + o] = (struct handle_rec){ owner_is_lib(o) ? BK_LIB : BK_MOD, o, NULL };
		rec[HANDLES + o].img = owner_is_lib(o) ? NULL : cap__image_of(ce, NULL, NULL, owner_ptr(o));
		if (!owner_is_lib(o)) {
			assert_non_null(rec[HANDLES + o].img);
			for (int j = 0; j < PER; j++) {
				int i = new_handle(BK_FN, o, rec[HANDLES + o].img);

				cap_image_link(ce, CAP_LINK_MODULE_FUNCTION, ptr_of(i), owner_ptr(o));
			}
			continue;
		}
		/* a library: its kernels, a function of each, its module and functions of that */
		kern[o] = nhnd;
		for (int j = 0; j < PER; j++)
			cap_image_link(ce, CAP_LINK_LIBRARY_KERNEL, ptr_of(nhnd + j), owner_ptr(o));
		rec[HANDLES + o].img = cap__image_of(ce, NULL, ptr_of(nhnd), NULL); /* the library's image */
		for (int j = 0; j < PER; j++)
			new_handle(BK_KERNEL, o, rec[HANDLES + o].img);
		for (int j = 0; j < PER; j++) {
			int i = new_handle(BK_FN, o, rec[HANDLES + o].img);

			cap_image_link(ce, CAP_LINK_KERNEL_FUNCTION, ptr_of(i), ptr_of(kern[o] + j));
		}
		lmod[o] = new_handle(BK_MOD, o, rec[HANDLES + o].img);
		cap_image_link(ce, CAP_LINK_LIBRARY_MODULE, ptr_of(lmod[o]), owner_ptr(o));
		for (int j = 0; j < 3; j++) {
			int i = new_handle(BK_FN, o, rec[HANDLES + o].img);

			cap_image_link(ce, CAP_LINK_MODULE_FUNCTION, ptr_of(i), ptr_of(lmod[o]));
		}
	}
	assert_int_equal(rec[HANDLES + 0].img->code, CAP_CODE_PTX);
	assert_int_equal(rec[HANDLES + 2].img->code, CAP_CODE_NONE);
	assert_int_equal(rec[HANDLES + 5].img->code, CAP_CODE_MACHINE);
	check_handles("bound");

	/* a module, then a library: their own entries and what was looked up from them */
	forget_owner(1, PER + 1); /* its functions and itself */
	check_handles("module 1 forgotten");
	forget_owner(5, LIB_BINDS);
	check_handles("library 5 forgotten");

	/* bound again to another owner: a function of module 0 now comes from library 3's first
	 * kernel, library 3's second kernel from library 4 (the driver handed the values out again) */
	fa = 0;
	cap_image_link(ce, CAP_LINK_KERNEL_FUNCTION, ptr_of(fa), ptr_of(kern[3]));
	rec[fa] = (struct handle_rec){ BK_FN, 3, rec[HANDLES + 3].img };
	kb = kern[3] + 1;
	cap_image_link(ce, CAP_LINK_LIBRARY_KERNEL, ptr_of(kb), owner_ptr(4));
	rec[kb] = (struct handle_rec){ BK_KERNEL, 4, rec[HANDLES + 4].img };
	/* and one bound again to the owner it has: nothing moves */
	cap_image_link(ce, CAP_LINK_KERNEL_FUNCTION, ptr_of(kern[3] + PER), ptr_of(kern[3]));
	check_handles("bound again");

	forget_owner(0, PER - 1 + 1); /* not the function that moved to library 3 */
	check_handles("module 0 forgotten");
	/* library 4's module unloaded as a module (cuModuleUnload of what cuLibraryGetModule
	 * gave): it goes alone, its functions are the library's */
	lm_fn = lmod[4] + 1;
	cap__images_forget(ce, ptr_of(lmod[4]), NULL);
	rec[lmod[4]].owner = -1;
	assert_ptr_equal(answer(lm_fn), rec[HANDLES + 4].img);
	check_handles("library 4's module forgotten");
	forget_owner(3, LIB_BINDS + 1 - 1); /* the function that moved in, not the kernel that left */
	check_handles("library 3 forgotten");
	forget_owner(4, LIB_BINDS + 1 - 1); /* the kernel that moved in, not its module */
	check_handles("library 4 forgotten");

	/* an unload capture could not attribute: every function and kernel goes; the lists keep
	 * what is left (library 6's own entry and module) */
	cap__images_drop_handles(ce);
	for (int i = 0; i < nhnd; i++)
		if (rec[i].kind == BK_FN || rec[i].kind == BK_KERNEL)
			rec[i].owner = -1;
	check_handles("every handle dropped");
	forget_owner(6, 2);
	forget_owner(2, 1);
	check_handles("all forgotten");
	assert_int_equal(ce->images.owners.n, 0);
	assert_int_equal(totals().ptx_texts_kept, t0.ptx_texts_kept);
	assert_int_equal(totals().ptx_bytes_kept, t0.ptx_bytes_kept);
}

/* The owners' index cannot grow: a module loaded then is not bound (its kernels' PTX is not
 * known, as when its own map cannot grow), and a handle that was another owner's is bound to
 * nothing rather than left to its old owner, whose unload would otherwise miss it. */
static void test_forget_out_of_memory(void **state)
{
	uint64_t fill[64], victim[2], lib, fn;
	size_t nfill = 0, mods_n, owners_n;
	struct cap_totals t0 = totals();

	(void)state;
	if (!calloc_can_fail())
		skip();
	/* a library with its module bound, then fake libraries until the owners' map is full
	 * (its next new key grows it), while the modules' map has room */
	cap_image_loaded(ce, true, &lib, "not an image", NULL);
	cap_image_link(ce, CAP_LINK_LIBRARY_MODULE, &victim[1], &lib);
	cap_image_link(ce, CAP_LINK_MODULE_FUNCTION, &fn, &victim[1]);
	assert_non_null(cap__image_of(ce, NULL, NULL, (CUmodule)&victim[1]));
	while ((ce->images.owners.n + 1) * 4 <= ce->images.owners.cap * 3) {
		assert_true(nfill < CF_ARRAY_SIZE(fill));
		cap_image_loaded(ce, true, &fill[nfill++], "not an image", NULL);
	}
	assert_true(ce->images.mods.cap && (ce->images.mods.n + 1) * 4 <= ce->images.mods.cap * 3);
	mods_n = ce->images.mods.n;
	owners_n = ce->images.owners.n;
#if TEST_CALLOC_FAILS
	calloc_fails = true;
	cap_image_loaded(ce, false, &victim[0], "not an image", NULL);
	cap_image_loaded(ce, false, &victim[1], "not an image", NULL); /* was library lib's module */
	calloc_fails = false;
#endif
	assert_null(cap__image_of(ce, NULL, NULL, (CUmodule)&victim[0]));
	assert_null(cap__image_of(ce, NULL, NULL, (CUmodule)&victim[1]));
	assert_int_equal(ce->images.mods.n, mods_n - 1);
	assert_int_equal(ce->images.owners.n, owners_n);
	/* the library's unload still finds its own entry and its function */
	assert_non_null(cap__image_of(ce, (CUfunction)&fn, NULL, NULL));
	cap__images_forget(ce, NULL, (CUlibrary)&lib);
	assert_null(cap__image_of(ce, (CUfunction)&fn, NULL, NULL));
	for (size_t i = 0; i < nfill; i++)
		cap__images_forget(ce, NULL, (CUlibrary)&fill[i]);
	assert_int_equal(ce->images.owners.n, 0);
	assert_int_equal(ce->images.fns.n + ce->images.kernels.n + ce->images.mods.n + ce->images.libs.n, 0);
	assert_int_equal(totals().ptx_texts_kept, t0.ptx_texts_kept);
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
		cmocka_unit_test(test_forget_by_owner),
		cmocka_unit_test(test_forget_out_of_memory),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
