/* test_driver_image.c - the one decoder of images (driver/image.h): every form nvcc writes for
 * one kernel file (PTX text, a bare cubin, fatbins with zstd- and LZ4-compressed PTX, with
 * machine code compressed too, uncompressed with two PTX versions, PTX too new, machine code
 * only, compute_90a with sm_90a) and the runtime's wrapper around one; the PTX a device of a
 * given compute capability would JIT; machine code's kernels and parameter layouts; LZ4 blocks
 * made by hand; zstd without libzstd (a child process whose dlopen finds none); and every
 * truncation and a spread of corruptions of every image, which must give an error or an
 * answer, never a crash or a read outside the bytes given (run it under SAN=address). tests
 * layer (cmocka, libcufold.a); the images are built by the Makefile (FATBINS, MCODES). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/errors.h"
#include "driver/image.h"

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

/* The image file TEST_PTX_DIR/<name>, in a buffer of exactly its size (so ASan sees an
 * over-read), and its length. */
static unsigned char *read_file(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	unsigned char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/%s", TEST_PTX_DIR, name);
	f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s (built by make)", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc(n ? (size_t)n : 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* The PTX a device of compute capability cc JITs from file's image: it must be found. */
static char *ptx_of(const char *file, unsigned int cc, size_t *len)
{
	size_t n;
	unsigned char *img = read_file(file, &n);
	char *text = NULL, err[256] = "";
	bool mc = true;
	int rc = img_ptx_text(img, n, cc, &text, len, &mc, err, sizeof(err));

	if (rc != 0)
		fail_msg("%s for %u: %s (%s)", file, cc, cf_errname(rc), err);
	assert_false(mc);
	assert_int_equal(strlen(text), *len);
	free(img);
	return text;
}

/* The PTX's .target line says which entry was chosen. */
static void expect_target(const char *file, unsigned int cc, const char *target)
{
	size_t len;
	char *text = ptx_of(file, cc, &len);

	if (!strstr(text, target))
		fail_msg("%s for %u: the PTX chosen has no \"%s\"", file, cc, target);
	assert_non_null(strstr(text, ".entry axpy"));
	free(text);
}

static void test_forms(void **state)
{
	static const struct {
		const char *file;
		enum img_form form;
	} cases[] = {
		{ "elementwise.ptx", IMG_FORM_PTX },
		{ "elementwise.fatbin", IMG_FORM_FATBIN },
		{ "elementwise.lz4.fatbin", IMG_FORM_FATBIN },
		{ "elementwise.cubin", IMG_FORM_ELF },
		{ "mcode.sm90.cubin", IMG_FORM_ELF },
	};
	struct fb_wrapper w = { 0x466243b1u, 1, NULL, NULL };
	size_t n, lim = 16;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned char *img = read_file(cases[i].file, &n);

		assert_int_equal(img_form_of(img, n), cases[i].form);
		assert_int_equal(img_form_of(img, SIZE_MAX), cases[i].form);
		if (cases[i].form == IMG_FORM_FATBIN) {
			w.data = img;
			assert_int_equal(img_form_of(&w, SIZE_MAX), IMG_FORM_WRAPPER);
			assert_ptr_equal(img_unwrap(&w, &lim), img);
			assert_true(lim == SIZE_MAX);
			assert_int_equal(img_fatbin_span(img, SIZE_MAX), n);
			assert_int_equal(img_fatbin_span(img, n - 1), 0);
		}
		if (cases[i].form == IMG_FORM_ELF)
			assert_int_equal(img_elf_span(img, SIZE_MAX), n);
		free(img);
	}
	/* text: PTX only when .version comes first after comments and blanks */
	assert_int_equal(img_form_of("// c\n/* d */\n\t.version 8.0\n", SIZE_MAX), IMG_FORM_PTX);
	assert_int_equal(img_form_of(".version", 8), IMG_FORM_PTX);
	assert_int_equal(img_form_of(".version", 7), IMG_FORM_UNKNOWN);
	assert_int_equal(img_form_of("/* .version", SIZE_MAX), IMG_FORM_UNKNOWN);
	assert_int_equal(img_form_of(".target sm_90", SIZE_MAX), IMG_FORM_UNKNOWN);
	assert_int_equal(img_form_of("", SIZE_MAX), IMG_FORM_UNKNOWN);
	assert_int_equal(img_form_of(NULL, SIZE_MAX), IMG_FORM_UNKNOWN);
	assert_string_equal(img_form_name(IMG_FORM_WRAPPER), "wrapper");
	/* a wrapper pointing at no fatbin, and one cut short */
	w.data = "not a fatbin";
	lim = SIZE_MAX;
	assert_null(img_unwrap(&w, &lim));
	lim = 8;
	assert_null(img_unwrap(&w, &lim));
}

static void test_ptx_every_form(void **state)
{
	size_t a, b, c, d;
	char *plain, *lz4, *all_lz4, *all_zstd, *file;
	unsigned char *raw;

	(void)state;
	/* nvcc 13's default: zstd-compressed compute_75 PTX beside sm_75 code */
	expect_target("elementwise.fatbin", 90, ".target sm_75");
	expect_target("elementwise.lz4.fatbin", 90, ".target sm_90");
	/* the newest PTX the device can JIT: compute_90 on 9.0, compute_80 on 8.6 */
	expect_target("elementwise.plain.fatbin", 90, ".target sm_90");
	expect_target("elementwise.plain.fatbin", 86, ".target sm_80");
	expect_target("elementwise.new.fatbin", 100, ".target sm_100");
	expect_target("elementwise.all-lz4.fatbin", 90, ".target sm_90");
	expect_target("elementwise.all-zstd.fatbin", 90, ".target sm_90");
	expect_target("elementwise.ptx", 90, ".target sm_90");
	/* one text, whether stored plain, LZ4 or zstd: the decoders give the bytes nvcc wrote */
	plain = ptx_of("elementwise.plain.fatbin", 90, &a);
	lz4 = ptx_of("elementwise.lz4.fatbin", 90, &b);
	all_lz4 = ptx_of("elementwise.all-lz4.fatbin", 90, &c);
	all_zstd = ptx_of("elementwise.all-zstd.fatbin", 90, &d);
	assert_string_equal(plain, lz4);
	assert_string_equal(plain, all_lz4);
	assert_string_equal(plain, all_zstd);
	/* PTX text is itself (fatbin's PTX has its comments blanked: not the same text) */
	file = ptx_of("elementwise.ptx", 90, &d);
	raw = read_file("elementwise.ptx", &a);
	assert_int_equal(d, a);
	assert_memory_equal(file, raw, a);
	free(raw);
	free(plain);
	free(lz4);
	free(all_lz4);
	free(all_zstd);
	free(file);
}

static void test_ptx_through_wrapper(void **state)
{
	size_t n, len;
	unsigned char *img = read_file("elementwise.lz4.fatbin", &n);
	struct fb_wrapper w = { 0x466243b1u, 1, img, NULL };
	char *text = NULL, err[256];
	bool mc = true;

	(void)state;
	assert_int_equal(img_ptx_text(&w, SIZE_MAX, 90, &text, &len, &mc, err, sizeof(err)), 0);
	assert_false(mc);
	assert_non_null(strstr(text, ".target sm_90"));
	free(text);
	/* an unknown length: the fatbin's own header bounds it */
	assert_int_equal(img_ptx_text(img, SIZE_MAX, 90, &text, &len, &mc, err, sizeof(err)), 0);
	free(text);
	free(img);
}

/* An image without PTX the device can JIT: the result, whether it is machine code, the words
 * of the reason. */
static void expect_no_ptx(const char *file, unsigned int cc, int want, bool want_mc, const char *word)
{
	size_t n, len = 7;
	unsigned char *img = read_file(file, &n);
	char *text = (char *)1, err[256] = "";
	bool mc = !want_mc;

	assert_int_equal(img_ptx_text(img, n, cc, &text, &len, &mc, err, sizeof(err)), want);
	assert_null(text);
	assert_int_equal(len, 0);
	assert_int_equal(mc, want_mc);
	if (!strstr(err, word))
		fail_msg("%s: \"%s\" not in \"%s\"", file, word, err);
	free(img);
}

static void test_no_ptx(void **state)
{
	(void)state;
	expect_no_ptx("elementwise.sass.fatbin", 90, -CF_ENOENT, true, "sm_80 sm_90");
	expect_no_ptx("elementwise.cubin", 90, -CF_ENOENT, true, "ELF cubin for sm_90");
	expect_no_ptx("mcode.sm90.fatbin", 90, -CF_ENOENT, true, "machine code only");
	expect_no_ptx("elementwise.new.fatbin", 90, -CF_ENOENT, false, "compute_100");
	/* compute_75 is the oldest PTX there: a 7.0 device can JIT none of it */
	expect_no_ptx("elementwise.fatbin", 70, -CF_ENOENT, true, "compute_75");
}

static void test_survey(void **state)
{
	size_t n;
	unsigned char *img = read_file("elementwise.all-zstd.fatbin", &n);
	struct img_survey s;

	(void)state;
	assert_int_equal(img_survey(img, n, 90, true, &s), 0);
	assert_int_equal(s.entries, 2);
	assert_int_equal(s.ptx_entries, 1);
	assert_int_equal(s.elf_entries, 1);
	assert_int_equal(s.undecodable, 0);
	assert_true(s.have_ptx && s.have_elf && s.have_newest_elf);
	assert_int_equal(s.ptx.arch, 90);
	assert_true(s.elf.flags & IMG_FLAG_ZSTD);
	assert_string_equal(s.archs, "compute_90 sm_90");
	/* the compressed ELF was decompressed for its kernels' names */
	assert_non_null(strstr(s.kernels, "axpy"));
	assert_non_null(strstr(s.kernels, "fill"));
	free(img);
	img = read_file("elementwise.sass.fatbin", &n);
	assert_int_equal(img_survey(img, n, 86, false, &s), 0);
	assert_false(s.have_ptx);
	assert_int_equal(s.elf.arch, 80);      /* 8.6 runs sm_80, not sm_90 */
	assert_int_equal(s.newest_elf.arch, 90);
	assert_string_equal(s.kernels, "");
	free(img);
	assert_true(img_sm_runs(90, 90));
	assert_false(img_sm_runs(90, 86));
	assert_false(img_sm_runs(80, 90));
	assert_true(img_sm_runs(80, 86));
}

/* compute_90a / sm_90a: that architecture only, PTX and machine code alike. */
static void test_arch_specific(void **state)
{
	size_t n;
	unsigned char *img = read_file("elementwise.a90.fatbin", &n);
	struct img_survey s;
	struct img_entry e = { IMG_KIND_PTX, 100, IMG_FLAG_FAMILY, NULL, 0, 0 };

	(void)state;
	expect_target("elementwise.a90.fatbin", 90, ".target sm_90a");
	assert_int_equal(img_survey(img, n, 90, false, &s), 0);
	assert_string_equal(s.archs, "compute_90a sm_90a");
	assert_true(s.have_ptx && s.have_elf);
	/* a 9.1 device would run sm_90 code and JIT compute_90 PTX, but neither of these */
	assert_int_equal(img_survey(img, n, 91, false, &s), 0);
	assert_false(s.have_ptx || s.have_elf);
	assert_true(s.ptx_other_arch);
	expect_no_ptx("elementwise.a90.fatbin", 91, -CF_ENOENT, true, "specific to another architecture");
	expect_no_ptx("elementwise.a90.fatbin", 100, -CF_ENOENT, true, "compute_90a");
	/* family-specific: the same major, minor not below */
	assert_true(img_entry_usable(&e, 103));
	assert_false(img_entry_usable(&e, 110));
	assert_false(img_entry_usable(&e, 90));
	e.flags = 0;
	assert_true(img_entry_usable(&e, 110)); /* plain PTX JITs forward */
	free(img);
}

/* ------------------------------------------------------------------ machine code */

static const struct img_kernel *kernel_named(const struct img_mcode *m, const char *prefix)
{
	for (unsigned int i = 0; i < m->nkernels; i++)
		if (!strncmp(m->kernels[i].name, prefix, strlen(prefix)))
			return &m->kernels[i];
	fail_msg("no kernel %s...", prefix);
	return NULL;
}

/* mcode.cu's kernels with nvcc's layouts, and its two variables. */
static void check_mcode(const struct img_mcode *m)
{
	static const size_t off[] = { 0, 8, 16, 32, 48, 52, 56 }, size[] = { 1, 8, 8, 16, 4, 3, 2 };
	const struct img_kernel *k;
	bool counter = false, table = false;

	assert_int_equal(m->arch, 90);
	assert_int_equal(m->nkernels, 4);
	k = kernel_named(m, "mc_mixed");
	assert_int_equal(k->nparams, 7);
	for (unsigned int i = 0; i < 7; i++) {
		assert_int_equal(k->params[i].offset, off[i]);
		assert_int_equal(k->params[i].size, size[i]);
	}
	assert_int_equal(k->params[3].align, 16);
	assert_int_equal(kernel_named(m, "mc_none")->nparams, 0);
	k = kernel_named(m, "mc_large");
	assert_int_equal(k->params[1].offset, 800);
	assert_int_equal(k->param_bytes, 808);
	assert_int_equal(strlen(kernel_named(m, "mc_long_name")->name), 603);
	for (unsigned int i = 0; i < m->nglobals; i++) {
		if (!strcmp(m->globals[i].name, "mc_counter")) {
			counter = true;
			assert_int_equal(m->globals[i].size, 4);
			assert_non_null(m->globals[i].init);
			assert_int_equal(m->globals[i].init[0], 7);
		}
		if (!strcmp(m->globals[i].name, "mc_table")) {
			table = true;
			assert_int_equal(m->globals[i].size, 16);
		}
	}
	assert_true(counter && table);
}

static int first_elf(const struct img_entry *e, void *arg)
{
	if (e->kind != IMG_KIND_ELF)
		return 0;
	*(struct img_entry *)arg = *e;
	return 1;
}

static void test_machine_code(void **state)
{
	size_t n, len;
	unsigned char *img = read_file("mcode.sm90.cubin", &n);
	struct img_mcode m;
	struct img_entry e;
	char *elf, err[256], names[1024] = "";

	(void)state;
	assert_int_equal(img_elf_read(img, n, &m, err, sizeof(err)), 0);
	check_mcode(&m);
	img_mcode_free(&m);
	assert_int_equal(m.nkernels, 0);
	img_elf_kernels(img, n, names, sizeof(names));
	assert_non_null(strstr(names, "mc_mixed"));
	assert_int_equal(img_elf_arch(img, n), 90);
	free(img);
	/* the same machine code as a fatbin's entry */
	img = read_file("mcode.sm90.fatbin", &n);
	assert_int_equal(img_fatbin_walk(img, n, first_elf, &e), 1);
	assert_int_equal(e.arch, 90);
	assert_int_equal(img_entry_bytes(&e, &elf, &len, err, sizeof(err)), 0);
	assert_int_equal(img_elf_read(elf, len, &m, err, sizeof(err)), 0);
	check_mcode(&m);
	img_mcode_free(&m);
	free(elf);
	free(img);
	/* not an ELF */
	assert_int_equal(img_elf_read("garbage", 8, &m, err, sizeof(err)), -CF_EINVAL);
	assert_non_null(strstr(err, "not a 64-bit ELF"));
}

/* ------------------------------------------------------------------ LZ4 */

static void test_lz4_blocks(void **state)
{
	/* literals "abc", then a match of 6 at offset 3 (overlapping), then literals "xy" */
	static const unsigned char ok[] = { 0x32, 'a', 'b', 'c', 3, 0, 0x20, 'x', 'y' };
	static const unsigned char off0[] = { 0x10, 'a', 0, 0 };
	static const unsigned char far[] = { 0x10, 'a', 2, 0 };
	static const unsigned char cut[] = { 0xf0, 255 };
	static const unsigned char lit_past[] = { 0x50, 'a', 'b' };
	unsigned char out[32];

	(void)state;
	assert_int_equal(img_lz4_block_decode(ok, sizeof(ok), out, sizeof(out)), 11);
	assert_memory_equal(out, "abcabcabcxy", 11);
	assert_int_equal(img_lz4_block_decode(ok, sizeof(ok), out, 10), -1); /* does not fit */
	assert_int_equal(img_lz4_block_decode(off0, sizeof(off0), out, sizeof(out)), -1);
	assert_int_equal(img_lz4_block_decode(far, sizeof(far), out, sizeof(out)), -1);
	assert_int_equal(img_lz4_block_decode(cut, sizeof(cut), out, sizeof(out)), -1);
	assert_int_equal(img_lz4_block_decode(lit_past, sizeof(lit_past), out, sizeof(out)), -1);
	assert_int_equal(img_lz4_block_decode(ok, 0, out, sizeof(out)), 0);
}

/* ------------------------------------------------------------------ without libzstd */

static bool hide_zstd;               /* this process's dlopen finds no libzstd */

/* The decoder opens libzstd with dlopen: this one, in the test program, comes first. */
void *dlopen(const char *file, int mode)
{
	void *(*next)(const char *, int);

	if (hide_zstd && file && strstr(file, "libzstd"))
		return NULL;
	*(void **)&next = dlsym(RTLD_NEXT, "dlopen");
	return next(file, mode);
}

/* In a child (libzstd is looked for once per process): zstd entries are "compressed, no
 * decoder", the rest of the image still reads. */
static int without_zstd(void)
{
	size_t n, len;
	unsigned char *img;
	char *text = NULL, err[256] = "";
	bool mc;
	struct img_survey s;

	hide_zstd = true;
	img = read_file("elementwise.fatbin", &n); /* zstd PTX, plain sm_75 code */
	if (img_survey(img, n, 75, true, &s) || s.undecodable != 1 || s.have_ptx || !s.have_elf ||
	    !strstr(s.kernels, "axpy"))
		return 1;
	if (img_ptx_text(img, n, 90, &text, &len, &mc, err, sizeof(err)) != -CF_ENOSYS || text ||
	    !strstr(err, "libzstd"))
		return 2;
	free(img);
	img = read_file("elementwise.lz4.fatbin", &n); /* LZ4 needs no library */
	if (img_ptx_text(img, n, 90, &text, &len, &mc, err, sizeof(err)) != 0)
		return 3;
	free(text);
	free(img);
	return 0;
}

static void test_without_zstd(void **state)
{
	int status = -1;
	pid_t pid = fork();

	(void)state;
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(without_zstd());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ------------------------------------------------------------------ hostile input */

/* Every reader on bytes [0, n) of a copy of exactly n bytes; results are not checked: an
 * error or an answer both do, a crash or an over-read (ASan) does not. */
static void read_all_ways(const unsigned char *bytes, size_t n)
{
	unsigned char *img = malloc(n ? n : 1);
	char *text = NULL, err[256], names[512] = "";
	size_t len;
	bool mc;
	struct img_survey *s = malloc(sizeof(*s));
	struct img_mcode m;

	assert_non_null(img);
	assert_non_null(s);
	memcpy(img, bytes, n);
	if (img_ptx_text(img, n, 90, &text, &len, &mc, err, sizeof(err)) == 0)
		free(text);
	if (img_form_of(img, n) == IMG_FORM_FATBIN)
		(void)img_survey(img, n, 90, true, s);
	if (img_form_of(img, n) == IMG_FORM_ELF) {
		if (img_elf_read(img, n, &m, err, sizeof(err)) == 0)
			img_mcode_free(&m);
		img_elf_kernels(img, n, names, sizeof(names));
		(void)img_elf_span(img, n);
	}
	free(s);
	free(img);
}

static void test_hostile(void **state)
{
	static const char *const files[] = {
		"elementwise.fatbin", "elementwise.lz4.fatbin", "elementwise.plain.fatbin",
		"elementwise.all-lz4.fatbin", "elementwise.all-zstd.fatbin", "elementwise.cubin",
		"mcode.sm90.cubin", "elementwise.ptx", "elementwise.a90.fatbin",
	};
	unsigned int seed = 23;

	(void)state;
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		size_t n;
		unsigned char *img = read_file(files[f], &n), *bad = malloc(n);

		assert_non_null(bad);
		/* every truncation near the headers, then a spread over the rest */
		for (size_t cut = 0; cut < n; cut += cut < 512 ? 1 : 97)
			read_all_ways(img, cut);
		/* single bytes set to values that upset sizes and offsets, at every header byte
		 * and a spread over the payloads */
		for (size_t at = 0; at < n; at += at < 256 ? 1 : 61) {
			static const unsigned char vals[] = { 0x00, 0xff, 0x7f, 0x80, 0x01 };

			for (size_t v = 0; v < sizeof(vals); v++) {
				memcpy(bad, img, n);
				bad[at] = vals[v];
				read_all_ways(bad, n);
			}
		}
		/* random bytes over random spans */
		for (int k = 0; k < 200; k++) {
			memcpy(bad, img, n);
			for (int j = 0; j < 8; j++)
				bad[rand_r(&seed) % n] = (unsigned char)rand_r(&seed);
			read_all_ways(bad, n);
		}
		free(bad);
		free(img);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* first: libzstd is looked for once per process, and the child must look first */
		cmocka_unit_test(test_without_zstd),
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_ptx_every_form),
		cmocka_unit_test(test_ptx_through_wrapper),
		cmocka_unit_test(test_no_ptx),
		cmocka_unit_test(test_survey),
		cmocka_unit_test(test_arch_specific),
		cmocka_unit_test(test_machine_code),
		cmocka_unit_test(test_lz4_blocks),
		cmocka_unit_test(test_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
