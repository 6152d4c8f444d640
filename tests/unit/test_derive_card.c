/* test_derive_card.c - cards derived from PTX (rewrite/derive_card.c) against the hand-written
 * cards of the test kernels and against what the kernels really touch on the software device
 * (its oracle, SIMCUDA_ORACLE, through build/progs/oracle_runner). tests layer (cmocka,
 * libcufold.a; the device runs in a child process).
 *
 * 1. hand cards: for every kernel of the test bed with a hand card, over many launches, every
 *    pointer's derived span is equal to or wider than the hand card's, never narrower (a
 *    derived `unknown` is wider than anything); counted per kernel as equal / wider / unknown /
 *    refused and printed. The kernels whose loops nvcc unrolls by 4 with a remainder loop
 *    (must_equal: gemm_ex among them) must be equal.
 * 2. oracle: every test kernel that derives a card is launched with varied sizes and grids; every
 *    byte range the device saw it read, write or update must lie inside the span of the pointer
 *    whose allocation it is in, with that access in the card; a range in no parameter's
 *    allocation (a module variable) fails. Pointers inside by-value struct parameters (the
 *    card's `field` lines) get allocations of their own, the struct's other words small
 *    integers (8-byte ones where the kernel reads 8 bytes: CuPy's ptrdiff_t sizes and strides),
 *    and are checked the same way. The same records are then checked with every span narrowed
 *    by 4 bytes, which must fail: the check can fail; so must CuPy's kernels' records on their
 *    own (their spans exact: test_cupy_spans). CUFOLD_DERIVE_NARROW_TEST=N
 *    narrows the real check by N bytes, to see it fail by hand; CUFOLD_DERIVE_SEED=N draws
 *    other launch shapes (and mutants, see test_mutations). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errors.h"
#include "driver/ptx.h"
#include "rewrite/cards.h"
#include "rewrite/derive_card.h"

#define ALLOC (256u << 10) /* bytes of each pointer parameter's allocation in the oracle runs */
#define LAUNCHES 12        /* oracle launches per kernel */
#define HAND_LAUNCHES 64   /* launch shapes each hand card comparison evaluates */
#define MAX_MODS 32

struct module {
	char path[512];
	struct ptx_module *m;
};

static struct module mods[MAX_MODS];
static unsigned nmods;

static uint32_t rng = 12345;

static uint32_t rnd(uint32_t n)
{
	rng = rng * 1103515245u + 12345u;
	return n ? (rng >> 8) % n : 0;
}

static char *read_all(const char *path)
{
	FILE *fp = fopen(path, "rb");
	char *text = NULL;
	long len;

	if (!fp)
		return NULL;
	fseek(fp, 0, SEEK_END);
	len = ftell(fp);
	rewind(fp);
	text = calloc(1, (size_t)len + 1);
	if (text && fread(text, 1, (size_t)len, fp) != (size_t)len) {
		free(text);
		text = NULL;
	}
	fclose(fp);
	return text;
}

/* Every .ptx file of dir into mods[]. */
static void load_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) && nmods < MAX_MODS) {
		size_t n = strlen(e->d_name);
		char err[256], *text;

		if (n < 5 || strcmp(e->d_name + n - 4, ".ptx"))
			continue;
		snprintf(mods[nmods].path, sizeof(mods[nmods].path), "%s/%s", dir, e->d_name);
		text = read_all(mods[nmods].path);
		if (!text)
			continue;
		mods[nmods].m = ptx_parse(text, strlen(text), err, sizeof(err));
		free(text);
		if (mods[nmods].m)
			nmods++;
		else
			print_message("%s: %s\n", mods[nmods].path, err);
	}
	closedir(d);
}

/* The test bed's PTX and the numba / NVRTC PTX committed beside it. */
static int load_modules(void **state)
{
	const char *seed = getenv("CUFOLD_DERIVE_SEED");

	(void)state;
	if (seed)
		rng = (uint32_t)strtoul(seed, NULL, 0); /* other launch shapes and mutants, by hand */
	load_dir(TEST_PTX_DIR);
	load_dir(TEST_DATA_PTX_DIR);
	return nmods ? 0 : -1;
}

static int free_modules(void **state)
{
	(void)state;
	for (unsigned i = 0; i < nmods; i++)
		ptx_module_free(mods[i].m);
	return 0;
}

/* The derived card of f, parsed into its own set; NULL when refused (why says so). */
static struct rw_cards *derive(const struct ptx_module *m, const struct ptx_func *f, char *why, size_t len)
{
	static char card[16384];
	struct rw_cards *set;
	int rc = rw_card_derive(m, f->name, card, sizeof(card), why, len);

	if (rc == -CF_ENOSYS)
		return NULL;
	assert_int_equal(rc, 0);
	set = rw_cards_create();
	assert_non_null(set);
	if (rw_cards_parse(set, f->name, card, strlen(card)) != 0)
		fail_msg("derived card of %s does not parse:\n%s", f->name, card);
	assert_non_null(rw_cards_find(set, f->name));
	return set;
}

/* A launch of f: parameter bytes from vals (8-byte pointers and integers alike), layout from
 * the PTX. */
static void launch_args(const struct ptx_func *f, unsigned char *buf, const uint64_t *vals,
			struct rw_param_info *info, struct rw_launch_args *a, const unsigned dims[6])
{
	memset(buf, 0, f->param_bytes + 8);
	for (uint32_t k = 0; k < f->nparams; k++) {
		info[k].offset = f->params[k].offset;
		info[k].size = f->params[k].size;
		if (f->params[k].size <= 8)
			memcpy(buf + info[k].offset, &vals[k], f->params[k].size);
	}
	*a = (struct rw_launch_args){ .buf = buf, .buf_size = f->param_bytes, .params = info,
				      .nparams = f->nparams, .grid = { dims[0], dims[1], dims[2] },
				      .block = { dims[3], dims[4], dims[5] } };
}

/* The access of pointer parameter k in set, or NULL. */
static const struct rw_access *acc_of(const struct rw_access_set *set, unsigned k)
{
	for (unsigned i = 0; i < set->n; i++)
		if (set->acc[i].entry < 0 && set->acc[i].param == k)
			return &set->acc[i];
	return NULL;
}

/* The byte offsets of the pointers the card reads out of struct parameter k (its `field`
 * lines): each 8-byte slot of the struct holds a marker, and the card's field accesses say
 * which markers they read. */
static unsigned struct_fields(const struct rw_card *c, const struct ptx_func *f, unsigned k, uint32_t *offs)
{
	unsigned char buf[1024 + 8];
	struct rw_param_info info[64];
	struct rw_launch_args a;
	struct rw_access_set set;
	uint64_t vals[64] = { 0 };
	unsigned dims[6] = { 1, 1, 1, 1, 1, 1 }, n = 0;

	launch_args(f, buf, vals, info, &a, dims);
	for (uint64_t slot = 0; slot + 8 <= f->params[k].size; slot += 8) {
		uint64_t marker = (slot / 8 + 1) << 40;

		memcpy(buf + info[k].offset + slot, &marker, 8);
	}
	assert_int_equal(rw_card_access(c, &a, &set), 0);
	for (unsigned i = 0; i < set.n; i++)
		if (set.acc[i].table == RW_ACCESS_FIELD && set.acc[i].param == k) {
			uint64_t slot = (set.acc[i].addr >> 40) - 1;

			/* a field at an offset that is not 8-aligned reads no marker whole */
			assert_true((set.acc[i].addr & ((1ull << 40) - 1)) == 0 && slot * 8 < f->params[k].size);
			offs[n++] = (uint32_t)(slot * 8);
		}
	return n;
}

/* The access whose allocation holds address lo: a pointer parameter's (vals[k] its pointer) or a
 * struct field's; its base address in *base. NULL when none. */
static const struct rw_access *acc_at(const struct ptx_func *f, const struct rw_access_set *set,
				      const uint64_t *vals, uint64_t lo, uint64_t alloc, uint64_t *base)
{
	for (uint32_t k = 0; k < f->nparams; k++)
		if (f->params[k].size == 8 && lo >= vals[k] && lo < vals[k] + alloc && acc_of(set, k)) {
			*base = vals[k];
			return acc_of(set, k);
		}
	for (unsigned i = 0; i < set->n; i++)
		if (set->acc[i].table == RW_ACCESS_FIELD && set->acc[i].addr && lo >= set->acc[i].addr &&
		    lo < set->acc[i].addr + alloc) {
			*base = set->acc[i].addr;
			return &set->acc[i];
		}
	return NULL;
}

/* ------------------------------------------------------------------ 1. hand cards */

enum { H_EQUAL, H_WIDER, H_UNKNOWN, H_REFUSED, H_NARROWER, H_N };

/* How the derived card of f compares with its hand card over many launches. */
static int compare_hand(const struct ptx_module *m, const struct ptx_func *f, const struct rw_card *hand)
{
	char why[256];
	struct rw_cards *dset = derive(m, f, why, sizeof(why));
	const struct rw_card *dc;
	int verdict = H_EQUAL;

	if (!dset)
		return H_REFUSED;
	dc = rw_cards_find(dset, f->name);
	for (int l = 0; l < HAND_LAUNCHES; l++) {
		unsigned char buf[1024 + 8];
		struct rw_param_info info[64];
		struct rw_launch_args a;
		struct rw_access_set hs, ds;
		uint64_t vals[64];
		unsigned dims[6] = { 1 + rnd(8), 1 + rnd(3), 1 + rnd(3), 1 + rnd(128), 1 + rnd(4), 1 + rnd(2) };

		for (uint32_t k = 0; k < f->nparams && k < 64; k++)
			vals[k] = f->params[k].size == 8 ? 0x100000000ull * (k + 1) : 1 + rnd(200);
		launch_args(f, buf, vals, info, &a, dims);
		if (rw_card_access(hand, &a, &hs) != 0)
			return H_REFUSED; /* the hand card does not fit the PTX: nothing to compare */
		assert_int_equal(rw_card_access(dc, &a, &ds), 0);
		for (unsigned i = 0; i < hs.n; i++) {
			const struct rw_access *h = &hs.acc[i], *d;

			if (h->entry >= 0 || !h->flags)
				continue;
			d = acc_of(&ds, h->param);
			if (!d || (h->flags & ~d->flags & (RW_ACC_READ | RW_ACC_WRITE))) {
				print_message("  %s p%u: hand card says %s%s, derived %s%s\n", f->name, h->param,
					      h->flags & RW_ACC_READ ? "r" : "", h->flags & RW_ACC_WRITE ? "w" : "",
					      d && (d->flags & RW_ACC_READ) ? "r" : "",
					      d && (d->flags & RW_ACC_WRITE) ? "w" : "");
				verdict = H_NARROWER;
			} else if (d->flags & RW_ACC_UNKNOWN) {
				if (verdict < H_UNKNOWN)
					verdict = H_UNKNOWN;
			} else if (h->flags & RW_ACC_UNKNOWN) {
				/* a hand card may say unknown where the kernel's bound is plain: the
				 * oracle decides whether the derived bound holds */
				if (verdict < H_WIDER)
					verdict = H_WIDER;
			} else if (d->bytes < h->bytes) {
				print_message("  %s p%u: hand %llu bytes, derived %llu (grid %u %u %u block %u %u "
					      "%u)\n", f->name, h->param, (unsigned long long)h->bytes,
					      (unsigned long long)d->bytes, dims[0], dims[1], dims[2], dims[3],
					      dims[4], dims[5]);
				verdict = H_NARROWER;
			} else if (d->bytes > h->bytes && verdict < H_WIDER) {
				verdict = H_WIDER;
			}
		}
	}
	rw_cards_destroy(dset);
	return verdict;
}

/* Kernels whose loops nvcc unrolls by 4 with a remainder loop after them: the exit value of the
 * unrolled part (k - k%4, from its down-counter) and the remainder's bound make their spans
 * exactly the hand card's, which the batch-kernel rule needs where tensors are slices of one
 * allocation (recsys's gemm_ex: a span a few rows wider meets the next slice). */
static const char *const must_equal[] = { "gemm", "gemm_ex", "bias_grad", "layernorm_row", "softmax_row",
					  "layernorm_backward_row", "layernorm_param_grad",
					  "softmax_backward_row", NULL };

static bool is_must_equal(const char *name)
{
	for (unsigned i = 0; must_equal[i]; i++)
		if (!strcmp(name, must_equal[i]))
			return true;
	return false;
}

static void test_hand_cards(void **state)
{
	static const char *const names[H_N] = { "equal", "wider", "unknown", "refused", "NARROWER" };
	struct rw_cards *hand = rw_cards_create();
	unsigned count[H_N] = { 0 }, unequal = 0, seen = 0;

	(void)state;
	assert_non_null(hand);
	assert_true(rw_cards_load_file(hand, TEST_CARDS_FILE) >= 0);
	for (unsigned i = 0; i < nmods; i++)
		for (uint32_t j = 0; j < mods[i].m->nfuncs; j++) {
			const struct ptx_func *f = &mods[i].m->funcs[j];
			const struct rw_card *hc;
			int v;

			if (!f->is_entry || f->is_decl || !(hc = rw_cards_find(hand, f->name)))
				continue;
			v = compare_hand(mods[i].m, f, hc);
			count[v]++;
			print_message("  %-28s %s\n", f->name, names[v]);
			if (is_must_equal(f->name)) {
				seen++;
				if (v != H_EQUAL) {
					print_message("  %s: want its hand card's spans exactly\n", f->name);
					unequal++;
				}
			}
		}
	print_message("hand-carded kernels: %u equal, %u wider, %u unknown, %u refused, %u narrower\n",
		      count[H_EQUAL], count[H_WIDER], count[H_UNKNOWN], count[H_REFUSED], count[H_NARROWER]);
	assert_int_equal(count[H_NARROWER], 0);
	assert_true(count[H_EQUAL] >= 10);
	assert_int_equal(unequal, 0);
	assert_int_equal(seen, sizeof(must_equal) / sizeof(must_equal[0]) - 1);
	rw_cards_destroy(hand);
}

/* elementwise (and its count) only where it holds: a guarded p + 4*i kernel is, a grid-stride
 * loop and a kernel exchanging data through shared memory are not. */
static void test_elementwise_claims(void **state)
{
	static const struct { const char *kernel; bool elementwise; } cases[] = {
		{ "fill", true }, { "axpy", true }, { "fx_index64", true }, { "fx_grid_stride", false },
		{ "fx_shared_neighbor", false }, { "bias_add", false }, { "fx_rows_cols", false },
	};
	unsigned found = 0;

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
		for (unsigned i = 0; i < nmods; i++)
			for (uint32_t j = 0; j < mods[i].m->nfuncs; j++) {
				const struct ptx_func *f = &mods[i].m->funcs[j];
				struct rw_cards *set;
				char why[256];

				if (!f->is_entry || strcmp(f->name, cases[c].kernel))
					continue;
				set = derive(mods[i].m, f, why, sizeof(why));
				assert_non_null(set);
				if (!!(rw_card_flags(rw_cards_find(set, f->name)) & RW_CARD_ELEMENTWISE) !=
				    cases[c].elementwise)
					fail_msg("%s: elementwise should be %d", f->name, cases[c].elementwise);
				rw_cards_destroy(set);
				found++;
			}
	assert_int_equal(found, sizeof(cases) / sizeof(cases[0]));
}

/* Mutated PTX (a random line dropped, or two lines swapped) that still parses is derived
 * without a crash, with a card that parses or a refusal: the analysis never assumes nvcc's
 * shapes hold. */
static void test_mutations(void **state)
{
	unsigned derived = 0, refused = 0;

	(void)state;
	for (unsigned i = 0; i < nmods; i++) {
		char *text = read_all(mods[i].path);
		size_t len;

		assert_non_null(text);
		len = strlen(text);
		for (int round = 0; round < 40; round++) {
			char *mut = malloc(len + 2), *lines[8192], err[256];
			unsigned nl = 0, drop, swap;
			size_t at = 0;
			struct ptx_module *m;

			assert_non_null(mut);
			memcpy(mut, text, len + 1);
			for (char *p = mut; p && *p && nl < 8192; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
				lines[nl++] = p;
			drop = rnd(nl);
			swap = rnd(nl);
			{
				char *out = malloc(len + 2);

				assert_non_null(out);
				for (unsigned l = 0; l < nl; l++) {
					unsigned src = l == swap ? drop : (l == drop ? swap : l);
					char *e = strchr(lines[src], '\n');
					size_t n = e ? (size_t)(e - lines[src]) + 1 : strlen(lines[src]);

					if (round % 2 == 0 && l == drop)
						continue; /* even rounds drop the line, odd ones swap two */
					memcpy(out + at, lines[src], n);
					at += n;
				}
				out[at] = '\0';
				free(mut);
				mut = out;
			}
			m = ptx_parse(mut, at, err, sizeof(err));
			for (uint32_t j = 0; m && j < m->nfuncs; j++) {
				static char card[16384];
				char why[256];
				int rc;

				if (!m->funcs[j].is_entry || m->funcs[j].is_decl)
					continue;
				rc = rw_card_derive(m, m->funcs[j].name, card, sizeof(card), why, sizeof(why));
				if (rc == 0) {
					struct rw_cards *set = rw_cards_create();

					assert_non_null(set);
					assert_int_equal(rw_cards_parse(set, "mutant", card, strlen(card)), 0);
					rw_cards_destroy(set);
					derived++;
				} else {
					assert_int_equal(rc, -CF_ENOSYS);
					refused++;
				}
			}
			ptx_module_free(m);
			free(mut);
		}
		free(text);
	}
	print_message("mutants: %u cards derived, %u refused\n", derived, refused);
	assert_true(derived > 0);
}

/* The card language's words for struct parameters: a `field` line reads its pointer out of the
 * struct's bytes, NAME@OFF[:T] names an integer inside it, a table without len= has unknown
 * spans; malformed uses are rejected. */
static void test_field_cards(void **state)
{
	static const char text[] =
		"kernel k\n"
		"  param s struct 40\n"
		"  param n i32\n"
		"  field s 0 w n*4\n"
		"  field s 8 r s@16*4 + s@24:u64\n"
		"  field s 32 rw unknown\n"
		"  table s r ptr=0+8i count=20 max=2\n"
		"end\n";
	static const char *const bad[] = {
		"kernel b\n  param n i32\n  field n 0 r 4\nend\n",                    /* not a struct */
		"kernel b\n  param s struct 8\n  field s 4 r 4\nend\n",               /* past its end */
		"kernel b\n  param s struct 8\n  field s 0 x 4\nend\n",               /* access */
		"kernel b\n  param s struct 8\n  param p ptr r s@8\nend\n",           /* past its end */
		"kernel b\n  param n i32\n  param p ptr r n@0\nend\n",                /* not a struct */
		"kernel b\n  param s struct 8\n  param p ptr r s@0:f32\nend\n",       /* type */
		"kernel b\n  param n i32\n  param p ptr r fits32(n, 4)\nend\n",       /* one argument */
		"kernel b\n  param s struct 16\n  param o ptr w table\n  cat s ptr=0+8i count=8 max=1\nend\n",
		"kernel b\n  param p ptr r 4\n  whole p 4 1 4\nend\n",                 /* whole: not written */
		"kernel b\n  param s struct 16\n  field s 0 w 4\n  whole s@8 4 1 4\nend\n", /* no such field */
		"kernel b\n  param p ptr w 4\n  whole p 0 1 4\nend\n",                 /* whole: unit 0 */
		"kernel b\n  param p ptr w 4\n  whole p 4 1 + 1 4\nend\n",             /* whole: blanks */
		"kernel b\n  param p ptr w 4\n  whole p 4 q 4\nend\n",                 /* whole: unknown name */
	};
	struct rw_cards *set = rw_cards_create();
	const struct rw_card *c;
	struct rw_param_info info[2] = { { 0, 40 }, { 40, 4 } };
	unsigned char buf[48] = { 0 };
	struct rw_launch_args a = { .buf = buf, .buf_size = 44, .params = info, .nparams = 2,
				    .grid = { 1, 1, 1 }, .block = { 1, 1, 1 } };
	struct rw_access_set set_;
	uint64_t p0 = 0x1000, p1 = 0x2000, p4 = 0x4000, u64 = 5;
	int32_t i16 = 3, n = 10, count = 7;

	(void)state;
	assert_non_null(set);
	assert_int_equal(rw_cards_parse(set, "t", text, strlen(text)), 0);
	c = rw_cards_find(set, "k");
	assert_non_null(c);
	memcpy(buf + 0, &p0, 8);
	memcpy(buf + 8, &p1, 8);
	memcpy(buf + 16, &i16, 4);
	memcpy(buf + 20, &count, 4);
	memcpy(buf + 24, &u64, 8);
	memcpy(buf + 32, &p4, 8);
	memcpy(buf + 40, &n, 4);
	assert_int_equal(rw_card_access(c, &a, &set_), 0);
	/* the table's two entries (count 20, max 2), unknown spans; then the three fields */
	assert_int_equal(set_.n, 5);
	assert_int_equal(set_.acc[0].addr, p0);
	assert_true(set_.acc[0].flags & RW_ACC_UNKNOWN);
	assert_int_equal(set_.acc[1].addr, p1);
	assert_true(set_.acc[1].flags & RW_ACC_UNKNOWN);
	assert_int_equal(set_.acc[2].addr, p0);
	assert_int_equal(set_.acc[2].bytes, 40);
	assert_int_equal(set_.acc[2].flags, RW_ACC_WRITE);
	assert_int_equal(set_.acc[2].table, RW_ACCESS_FIELD);
	assert_int_equal(set_.acc[3].addr, p1);
	assert_int_equal(set_.acc[3].bytes, 3 * 4 + 5);
	assert_int_equal(set_.acc[3].flags, RW_ACC_READ);
	assert_int_equal(set_.acc[4].addr, p4);
	assert_int_equal(set_.acc[4].flags, RW_ACC_READ | RW_ACC_WRITE | RW_ACC_UNKNOWN);
	assert_true(set_.flags & RW_SET_UNKNOWN_SPAN);
	{
		/* whole: the written field s@0 (n*4 bytes) is whole for stride s@16 in (0, 4] and
		 * count s@20 >= 1 reaching its span; p not at all (an input) */
		static const char wtext[] = "kernel kw\n  param s struct 40\n  param n i32\n"
					    "  field s 0 w n*4\n  field s 8 r 4\n  whole s@0 4 s@20 s@16\nend\n";
		struct rw_cards *ws = rw_cards_create();
		int32_t stride, cnt;

		assert_int_equal(rw_cards_parse(ws, "t", wtext, strlen(wtext)), 0);
		for (stride = 0; stride <= 8; stride += 2)
			for (cnt = 0; cnt <= 12; cnt++) {
				bool want = cnt >= 1 && stride >= 1 && stride <= 4 && n * 4 <= (cnt - 1) * stride + 4;

				memcpy(buf + 16, &stride, 4);
				memcpy(buf + 20, &cnt, 4);
				assert_int_equal(rw_card_access(rw_cards_find(ws, "kw"), &a, &set_), 0);
				assert_int_equal(set_.n, 2);
				assert_int_equal(!!(set_.acc[0].flags & RW_ACC_WHOLE), want);
				assert_false(set_.acc[1].flags & RW_ACC_WHOLE);
			}
		memcpy(buf + 16, &i16, 4);
		memcpy(buf + 20, &count, 4);
		rw_cards_destroy(ws);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (rw_cards_parse(set, "bad", bad[i], strlen(bad[i])) != 1)
			fail_msg("malformed card %zu was not rejected:\n%s", i, bad[i]);
	rw_cards_destroy(set);
}

/* Whether kernel name is one of CuPy's elementwise kernels or shaped as one (effects_cupy.cu). */
static bool cupy_shaped(const char *name)
{
	return !strncmp(name, "cupy_", 5) || !strncmp(name, "fx_cupy_", 8);
}

/* A CuPy elementwise launch's parameters: every CArray but the last parameter gets its own data
 * pointer (k+1 << 32), size, total size and byte stride; the last, the CIndexer, the size. */
static void cupy_fill(const struct ptx_func *f, unsigned char *buf, const struct rw_param_info *info,
		      int64_t size, int64_t stride)
{
	for (uint32_t k = 0; k + 1 < f->nparams; k++) {
		uint64_t data = 0x100000000ull * (k + 1);

		memcpy(buf + info[k].offset, &data, 8);
		memcpy(buf + info[k].offset + 8, &size, 8);
		memcpy(buf + info[k].offset + 16, &size, 8);
		memcpy(buf + info[k].offset + 24, &stride, 8);
	}
	memcpy(buf + info[f->nparams - 1].offset, &size, 8);
}

/* CuPy's elementwise kernels (tests/data/ptx/cupy_*.ptx, as CuPy's NVRTC wrote them) and the
 * nvcc kernels shaped like them (effects_cupy.cu): every array of the card is a `field` with an
 * exact span, (size - 1) * stride + 4 bytes from its data pointer, size the CIndexer's (the
 * last parameter), stride the CArray's at byte 24: not `unknown`, which would stand for the
 * whole allocation (all of CuPy's memory pool chunk). A negative stride (a reversed view)
 * reads as a u64 beyond int64, and a span of 2^31 bytes or more is past what the kernel's
 * 32-bit offsets reach without wrapping (fits32): both make the span unknown, never a narrow
 * or empty one. */
static void test_cupy_spans(void **state)
{
	unsigned found = 0;

	(void)state;
	for (unsigned i = 0; i < nmods; i++)
		for (uint32_t j = 0; j < mods[i].m->nfuncs; j++) {
			const struct ptx_func *f = &mods[i].m->funcs[j];
			const struct rw_card *c;
			struct rw_cards *set;
			unsigned char buf[1024 + 8];
			struct rw_param_info info[64];
			struct rw_launch_args a;
			struct rw_access_set acc;
			uint64_t vals[64] = { 0 };
			unsigned dims[6] = { 3, 1, 1, 128, 1, 1 }, fields = 0;
			char why[256];

			if (!f->is_entry || !cupy_shaped(f->name) || !strcmp(f->name, "cupy_sum"))
				continue; /* (the reduction: test_cupy_sum) */
			set = derive(mods[i].m, f, why, sizeof(why));
			if (!set)
				fail_msg("%s refused: %s", f->name, why);
			c = rw_cards_find(set, f->name);
			for (int64_t stride = -4; stride <= 12; stride += 4) {
				int64_t size = stride == 12 ? (1ll << 29) : 1000; /* 12: 6 GiB, wraps */

				launch_args(f, buf, vals, info, &a, dims);
				cupy_fill(f, buf, info, size, stride);
				assert_int_equal(rw_card_access(c, &a, &acc), 0);
				fields = 0;
				for (unsigned e = 0; e < acc.n; e++) {
					if (acc.acc[e].table != RW_ACCESS_FIELD)
						continue;
					fields++;
					assert_int_equal(acc.acc[e].addr, 0x100000000ull * (acc.acc[e].param + 1));
					if (stride < 0 || stride == 12) {
						assert_true(acc.acc[e].flags & RW_ACC_UNKNOWN);
						continue;
					}
					if (acc.acc[e].flags & RW_ACC_UNKNOWN)
						fail_msg("%s p%u: span unknown", f->name, acc.acc[e].param);
					assert_int_equal(acc.acc[e].bytes, (uint64_t)((size - 1) * stride + 4));
				}
				assert_int_equal(fields, f->nparams - 1);
			}
			rw_cards_destroy(set);
			found++;
		}
	assert_int_equal(found, 4);
}

/* The card text derived for kernel of PTX text, edited: every `from` replaced by `to` (NULL:
 * unedited). 0, or the derivation's error. */
static int derive_edited(const char *path, const char *kernel, const char *from, const char *to, char *card,
			 size_t len)
{
	char *text = read_all(path), *out, err[256], why[256];
	struct ptx_module *m;
	int rc;

	assert_non_null(text);
	out = malloc(strlen(text) * 2 + 1);
	assert_non_null(out);
	out[0] = '\0';
	for (const char *s = text;;) {
		const char *hit = from ? strstr(s, from) : NULL;

		if (!hit) {
			strcat(out, s);
			break;
		}
		strncat(out, s, (size_t)(hit - s));
		strcat(out, to);
		s = hit + strlen(from);
	}
	if (from && !strcmp(out, text))
		fail_msg("edit '%s' not found in %s", from, path);
	m = ptx_parse(out, strlen(out), err, sizeof(err));
	if (!m)
		fail_msg("%s edited: %s", path, err);
	rc = rw_card_derive(m, kernel, card, len, why, sizeof(why));
	ptx_module_free(m);
	free(out);
	free(text);
	return rc;
}

/* `whole` lines (derive_card.c whole_valid): CuPy's elementwise kernels (and the nvcc ones shaped
 * like them) store out[i] on every iteration of their grid-stride loop over [0, size), so their
 * output field is written whole (RW_ACC_WHOLE) when its stride is the element's 4 bytes, for any
 * grid; never with a wider stride, an empty range, or for an input. Refused: a loop bound read as u32 and compared signed (fx_struct_array: size -1 would be
 * 2^32 - 1 to the card), and cupy_multiply's PTX edited four ways: the store under a guard, the
 * counter stepped by ntid.x alone, the entry test against the stride instead of the size, a
 * second exit out of the loop. */
static void test_cupy_whole(void **state)
{
	static const char *const edits[][2] = {
		{ "\tst.global.f32 \t[%rd51], %f3;", "\t@%p1 st.global.f32 \t[%rd51], %f3;" },
		{ "add.s64 \t%rd55, %rd55, %rd7;", "add.s64 \t%rd55, %rd55, %rd2;" },
		{ "setp.ge.s64 \t%p1, %rd55, %rd1;", "setp.ge.s64 \t%p1, %rd55, %rd33;" },
		{ "\tmul.ftz.f32 \t%f3, %f2, %f1;", "\tmul.ftz.f32 \t%f3, %f2, %f1;\n\tsetp.eq.f32 \t%p1, %f3, 0f00000000;\n\t@%p1 bra \t$L__BB0_3;" },
	};
	static char card[16384];
	char path[600];
	unsigned found = 0;

	(void)state;
	for (unsigned i = 0; i < nmods; i++)
		for (uint32_t j = 0; j < mods[i].m->nfuncs; j++) {
			const struct ptx_func *f = &mods[i].m->funcs[j];
			char why[256];
			bool want = cupy_shaped(f->name) && strcmp(f->name, "cupy_sum") != 0;
			struct rw_cards *set;

			if (!f->is_entry || (!cupy_shaped(f->name) && strcmp(f->name, "fx_struct_array")) ||
			    !strcmp(f->name, "cupy_sum"))
				continue; /* (its one-element output: test_cupy_sum) */
			set = derive(mods[i].m, f, why, sizeof(why));
			assert_non_null(set);
			assert_int_equal(rw_card_derive(mods[i].m, f->name, card, sizeof(card), why, sizeof(why)), 0);
			if (!want) {
				if (strstr(card, "\n  whole "))
					fail_msg("%s: a whole line it must not have:\n%s", f->name, card);
				rw_cards_destroy(set);
				continue;
			}
			for (int64_t stride = 0; stride <= 8; stride += 4)
				for (int64_t size = 0; size <= 1000; size += 1000) {
					unsigned char buf[1024 + 8];
					struct rw_param_info info[64];
					struct rw_launch_args a;
					struct rw_access_set acc;
					uint64_t vals[64] = { 0 };
					unsigned dims[6] = { 1 + (unsigned)(stride + size) % 5, 1, 1, 32 + (unsigned)size % 97, 1, 1 };
					unsigned whole = 0;

					launch_args(f, buf, vals, info, &a, dims);
					cupy_fill(f, buf, info, size, stride);
					assert_int_equal(rw_card_access(rw_cards_find(set, f->name), &a, &acc), 0);
					for (unsigned e = 0; e < acc.n; e++) {
						bool w = acc.acc[e].flags & RW_ACC_WHOLE;

						if (w && (!(acc.acc[e].flags & RW_ACC_WRITE) || stride != 4 || !size))
							fail_msg("%s p%u: whole with stride %lld size %lld", f->name,
								 acc.acc[e].param, (long long)stride, (long long)size);
						whole += w;
					}
					assert_int_equal(whole, stride == 4 && size ? 1 : 0);
				}
			rw_cards_destroy(set);
			found++;
		}
	assert_int_equal(found, 4);
	snprintf(path, sizeof(path), "%s/cupy_multiply.ptx", TEST_DATA_PTX_DIR);
	assert_int_equal(derive_edited(path, "cupy_multiply__float32_float32_float32", NULL, NULL, card, sizeof(card)), 0);
	assert_non_null(strstr(card, "\n  whole p2@0 4 "));
	for (unsigned e = 0; e < sizeof(edits) / sizeof(edits[0]); e++) {
		int rc = derive_edited(path, "cupy_multiply__float32_float32_float32", edits[e][0], edits[e][1],
				       card, sizeof(card));

		if (rc == 0 && strstr(card, "\n  whole "))
			fail_msg("edit %u (%s): still whole:\n%s", e, edits[e][1], card);
	}
}

/* CuPy's sum reduction (cupy_sum: CArray in, 0-d CArray out, two CIndexers, the block stride):
 * its input is read over (in_size - 1) * stride + 4 bytes, in_size the input CIndexer's. The
 * loop steps by out_size * (512 >> popc(block_stride - 1)), which cufold does not follow, but the
 * offset's phi is 2^32 * stride times the index's, whatever the step. Its one output element is
 * written whole (derive_card.c first_whole: thread 0 of block 0 surely stores it) exactly when
 * the output size (read signed, as the kernel compares it) and the block stride are >= 1. */
static void test_cupy_sum(void **state)
{
	unsigned found = 0;

	(void)state;
	for (unsigned i = 0; i < nmods; i++)
		for (uint32_t j = 0; j < mods[i].m->nfuncs; j++) {
			const struct ptx_func *f = &mods[i].m->funcs[j];
			unsigned char buf[1024 + 8];
			struct rw_param_info info[64];
			struct rw_launch_args a;
			struct rw_access_set acc;
			uint64_t vals[64] = { 0 }, in = 0x100000000ull, out = 0x200000000ull;
			int64_t size = 1000, stride = 4, one = 1;
			uint32_t bs = 128;
			unsigned dims[6] = { 3, 1, 1, 128, 1, 1 };
			struct rw_cards *set;
			char why[256];

			if (!f->is_entry || strcmp(f->name, "cupy_sum"))
				continue;
			set = derive(mods[i].m, f, why, sizeof(why));
			if (!set)
				fail_msg("%s refused: %s", f->name, why);
			assert_int_equal(f->nparams, 5);
			launch_args(f, buf, vals, info, &a, dims);
			memcpy(buf + info[0].offset, &in, 8);
			memcpy(buf + info[0].offset + 8, &size, 8);
			memcpy(buf + info[0].offset + 16, &size, 8);
			memcpy(buf + info[0].offset + 24, &stride, 8);
			memcpy(buf + info[1].offset, &out, 8);
			memcpy(buf + info[1].offset + 8, &one, 8);
			memcpy(buf + info[2].offset, &size, 8);
			memcpy(buf + info[3].offset, &one, 8);
			memcpy(buf + info[4].offset, &bs, 4);
			assert_int_equal(rw_card_access(rw_cards_find(set, f->name), &a, &acc), 0);
			for (unsigned e = 0; e < acc.n; e++) {
				if (acc.acc[e].flags & RW_ACC_UNKNOWN)
					fail_msg("cupy_sum p%u: span unknown", acc.acc[e].param);
				if (acc.acc[e].param == 0)
					assert_int_equal(acc.acc[e].bytes, (uint64_t)((size - 1) * stride + 4));
				else
					assert_int_equal(acc.acc[e].bytes, 4);
			}
			assert_int_equal(acc.n, 2);
			for (unsigned e = 0; e < acc.n; e++)
				assert_int_equal(!!(acc.acc[e].flags & RW_ACC_WHOLE), acc.acc[e].param == 1);
			for (unsigned v = 0; v < 3; v++) { /* output size 0, -1; block stride 0: not whole */
				int64_t osz = v == 0 ? 0 : -1;
				uint32_t b0 = 0;

				memcpy(buf + info[3].offset, v < 2 ? (const void *)&osz : (const void *)&one, 8);
				memcpy(buf + info[4].offset, v < 2 ? &bs : &b0, 4);
				assert_int_equal(rw_card_access(rw_cards_find(set, f->name), &a, &acc), 0);
				for (unsigned e = 0; e < acc.n; e++)
					if (acc.acc[e].flags & RW_ACC_WHOLE)
						fail_msg("cupy_sum p%u whole (case %u)", acc.acc[e].param, v);
			}
			rw_cards_destroy(set);
			found++;
		}
	assert_int_equal(found, 1);
}

/* first_whole refuses what thread 0 of block 0 may not reach: cupy_sum's PTX edited so that its
 * store also waits on a value read from memory, on a predicate the derivation does not model (a
 * float comparison), on two parameters compared with each other, or so that thread 0 never
 * stores (only the other threads do). The unedited PTX gets the line. */
static void test_first_whole_refusals(void **state)
{
	static const char *const edits[][2] = {
		{ "\tor.pred  \t%p10, %p7, %p8;",
		  "\tld.global.u32 \t%r13, [%rd6];\n\tsetp.ne.s32 \t%p9, %r13, 0;\n\tor.pred \t%p10, %p7, %p8;\n"
		  "\tor.pred \t%p10, %p10, %p9;" },
		{ "\tor.pred  \t%p10, %p7, %p8;",
		  "\tsetp.eq.f32 \t%p9, %f13, 0f00000000;\n\tor.pred \t%p10, %p7, %p8;\n\tor.pred \t%p10, %p10, %p9;" },
		{ "\tor.pred  \t%p10, %p7, %p8;",
		  "\tsetp.lt.s64 \t%p9, %rd1, %rd30;\n\tor.pred \t%p10, %p7, %p8;\n\tor.pred \t%p10, %p10, %p9;" },
		{ "\tor.pred  \t%p10, %p7, %p8;",
		  "\tsetp.eq.u32 \t%p9, %r3, 0;\n\tor.pred \t%p10, %p7, %p8;\n\tor.pred \t%p10, %p10, %p9;" },
	};
	static char card[16384];
	char path[600];

	(void)state;
	snprintf(path, sizeof(path), "%s/cupy_sum.ptx", TEST_DATA_PTX_DIR);
	assert_int_equal(derive_edited(path, "cupy_sum", NULL, NULL, card, sizeof(card)), 0);
	if (!strstr(card, "\n  whole p1@0 4 min(p3@0:i64,1)*min(p4,1) 4\n"))
		fail_msg("cupy_sum: no whole line:\n%s", card);
	for (unsigned e = 0; e < sizeof(edits) / sizeof(edits[0]); e++) {
		int rc = derive_edited(path, "cupy_sum", edits[e][0], edits[e][1], card, sizeof(card));

		assert_int_equal(rc, 0);
		if (!strstr(card, "\n  field p1 0 w "))
			fail_msg("edit %u: p1 not written:\n%s", e, card);
		if (strstr(card, "\n  whole "))
			fail_msg("edit %u (%s): still whole:\n%s", e, edits[e][1], card);
	}
}

/* ------------------------------------------------------------------ 2. the oracle */

struct job {
	const struct ptx_module *m;
	const struct ptx_func *f;
	const char *path;
	struct rw_cards *card;        /* the derived card (owned by the first job of its kernel) */
	bool owner;
	unsigned dims[6];             /* grid and block of its launch */
};

static struct job *jobs;
static unsigned njobs;
static unsigned field_ranges; /* ranges checked against a struct field's span (check_record) */
static char oracle_path[256];

/* Whether f reads 8 bytes at byte off of struct parameter k as an integer (ld.param.u64 /
 * .s64 / .b64): CuPy's CArray sizes, shapes and strides are ptrdiff_t, and two small 4-byte
 * words there would make a size or a stride of 2^32 and more. */
static bool int64_field(const struct ptx_func *f, uint32_t k, uint32_t off)
{
	for (uint32_t i = 0; i < f->ninsns; i++) {
		const struct ptx_insn *in = &f->insns[i];
		const struct ptx_operand *a = in->nops > 1 ? &in->ops[1] : NULL;

		if (a && !strcmp(in->opcode, "ld") && in->space == PTX_SPACE_PARAM && in->vec <= 1 &&
		    ptx_type_bytes(in->type) == 8 && a->kind == PTX_OP_ADDR && a->reg == PTX_NONE &&
		    a->scope == PTX_SCOPE_PARAM && a->index == k && a->imm == (int64_t)off)
			return true;
	}
	return false;
}

/* One job line for f: an allocation for each parameter the derived card calls a pointer, small
 * values for the integers (an 8-byte integer such as a size_t count included). */
static void job_line(FILE *fp, struct job *j)
{
	const struct rw_card *c = rw_cards_find(j->card, j->f->name);
	unsigned *dims = j->dims;
	unsigned char buf[1024 + 8];
	struct rw_param_info info[64];
	struct rw_launch_args a;
	struct rw_access_set set;
	uint64_t vals[64] = { 0 };

	dims[0] = 1 + rnd(4), dims[1] = 1 + rnd(2), dims[2] = 1 + rnd(2);
	dims[3] = 1 + rnd(64), dims[4] = 1 + rnd(2), dims[5] = 1 + rnd(2);
	launch_args(j->f, buf, vals, info, &a, dims);
	assert_int_equal(rw_card_access(c, &a, &set), 0);
	fprintf(fp, "%s %s %u %u %u %u %u %u", j->path, j->f->name, dims[0], dims[1], dims[2], dims[3],
		dims[4], dims[5]);
	for (uint32_t k = 0; k < j->f->nparams; k++) {
		const struct ptx_var *p = &j->f->params[k];

		uint32_t offs[RW_CARD_MAX_FIELDS];
		unsigned nf = p->size > 8 ? struct_fields(c, j->f, k, offs) : 0;

		if (acc_of(&set, k)) {
			fprintf(fp, " p");
		} else if (nf) {
			/* its pointers get allocations, every other 4-byte word a small integer (a
			 * count, a length, a bound: the test bed's structs hold 4-byte integers) */
			fprintf(fp, " s:%llu", (unsigned long long)p->size);
			for (uint32_t w = 0; w + 4 <= p->size; w += 4) {
				bool ptr = false;

				for (unsigned q = 0; q < nf; q++)
					ptr |= w >= offs[q] && w < offs[q] + 8;
				if (ptr && w % 8 == 0) {
					fprintf(fp, "/%u=p", w);
				} else if (!ptr && w % 8 == 0 && int64_field(j->f, k, w)) {
					fprintf(fp, "/%u=u64:%u", w, rnd(25));
					w += 4; /* its high word stays 0 */
				} else if (!ptr) {
					fprintf(fp, "/%u=u32:%u", w, rnd(25));
				}
			}
		} else if (p->size > 8 && int64_field(j->f, k, 0)) {
			/* no pointers, 8-byte integers (CuPy's CIndexer: its size bounds the loop) */
			fprintf(fp, " s:%llu", (unsigned long long)p->size);
			for (uint32_t w = 0; w + 8 <= p->size; w += 8)
				fprintf(fp, "/%u=u64:%u", w, rnd(25));
		} else if (p->size > 8) {
			fprintf(fp, " b:%llu", (unsigned long long)p->size);
		} else
		if (p->type == PTX_T_F32)
			fprintf(fp, " f32:1.5");
		else if (p->type == PTX_T_F64)
			fprintf(fp, " f64:1.5");
		else if (p->size == 8)
			fprintf(fp, " u64:%u", rnd(25));
		else
			fprintf(fp, " u32:%u", rnd(25));
	}
	fprintf(fp, "\n");
}

/* The next line of a buffer being read (the newline replaced by NUL), NULL at its end. */
static char *next_line(char **cur)
{
	char *line = *cur, *nl;

	if (!line || !*line)
		return NULL;
	nl = strchr(line, '\n');
	if (nl) {
		*nl = '\0';
		*cur = nl + 1;
	} else {
		*cur = line + strlen(line);
	}
	return line;
}

static const struct ptx_func *func_of(const struct ptx_module *m, const char *name)
{
	for (uint32_t j = 0; j < m->nfuncs; j++)
		if (m->funcs[j].is_entry && !strcmp(m->funcs[j].name, name))
			return &m->funcs[j];
	return NULL;
}

/* Runs every job through oracle_runner, one process per kernel: a launch that faults leaves
 * its context unusable, and only that kernel's later launches are lost. */
static void run_jobs(void)
{
	char jobs_path[256], cmd[1024];

	snprintf(jobs_path, sizeof(jobs_path), "/tmp/cufold-oracle-%d.jobs", (int)getpid());
	snprintf(oracle_path, sizeof(oracle_path), "/tmp/cufold-oracle-%d.txt", (int)getpid());
	unlink(oracle_path);
	for (unsigned i = 0; i < njobs;) {
		FILE *fp = fopen(jobs_path, "w");
		unsigned k = i;

		assert_non_null(fp);
		for (; k < njobs && jobs[k].f == jobs[i].f; k++)
			job_line(fp, &jobs[k]);
		fclose(fp);
		snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH=%s SIMCUDA_ORACLE=%s %s %u < %s > /dev/null 2>&1",
			 TEST_SIMLIB_DIR, oracle_path, TEST_ORACLE_RUNNER, ALLOC, jobs_path);
		if (system(cmd) != 0)
			print_message("  %s: oracle_runner failed\n", jobs[i].f->name);
		i = k;
	}
	unlink(jobs_path);
}

/* Checks one oracle record of job j (lines from *cursor); returns the violations found with
 * every span narrowed by `narrow` bytes. */
static unsigned check_record(const struct job *j, char **cursor, uint64_t narrow, bool say)
{
	const struct rw_card *c = rw_cards_find(j->card, j->f->name);
	unsigned char buf[1024 + 8];
	struct rw_param_info info[64];
	struct rw_launch_args a;
	struct rw_access_set set;
	uint64_t vals[64] = { 0 };
	unsigned dims[6], bad = 0;
	char *line, *hex;

	memcpy(dims, j->dims, sizeof(dims));
	line = next_line(cursor);
	assert_non_null(line);
	assert_int_equal(strncmp(line, "params ", 7), 0);
	hex = line + 7;
	for (uint32_t k = 0; k < j->f->nparams; k++)
		for (unsigned b = 0; b < j->f->params[k].size && b < 8; b++) {
			unsigned v;

			sscanf(hex + 2 * (j->f->params[k].offset + b), "%2x", &v);
			vals[k] |= (uint64_t)v << (8 * b);
		}
	launch_args(j->f, buf, vals, info, &a, dims);
	for (uint32_t k = 0; k < j->f->nparams; k++) { /* struct parameters: their bytes too */
		if (j->f->params[k].size <= 8)
			continue;
		for (unsigned b = 0; b < j->f->params[k].size; b++) {
			unsigned v;

			sscanf(hex + 2 * (j->f->params[k].offset + b), "%2x", &v);
			buf[info[k].offset + b] = (unsigned char)v;
		}
	}
	assert_int_equal(rw_card_access(c, &a, &set), 0);
	while ((line = next_line(cursor)) && strcmp(line, "end")) {
		unsigned long long lo, hi;
		char kind;
		const struct rw_access *acc;
		uint64_t base = 0;
		unsigned k;

		if (sscanf(line, "%c 0x%llx 0x%llx", &kind, &lo, &hi) != 3)
			continue;
		acc = acc_at(j->f, &set, vals, lo, ALLOC, &base);
		k = acc ? acc->param : 0;
		if (!acc) {
			bad++;
			if (say)
				print_message("  %s: %c [0x%llx, 0x%llx) in no pointer parameter of the card\n",
					      j->f->name, kind, lo, hi);
			continue;
		}
		if ((kind == 'r' && !(acc->flags & RW_ACC_READ)) || (kind == 'w' && !(acc->flags & RW_ACC_WRITE)) ||
		    (kind == 'u' && (acc->flags & (RW_ACC_READ | RW_ACC_WRITE)) != (RW_ACC_READ | RW_ACC_WRITE))) {
			bad++;
			if (say)
				print_message("  %s p%u: %c not in the card\n", j->f->name, k, kind);
			continue;
		}
		if (acc->flags & RW_ACC_UNKNOWN)
			continue;
		field_ranges += acc->table == RW_ACCESS_FIELD && acc->entry >= 0;
		if (hi - base + narrow > acc->bytes) {
			bad++;
			if (say)
				print_message("  %s p%u: %c bytes [%llu, %llu) outside the span %llu (grid %u %u %u "
					      "block %u %u %u)\n", j->f->name, k, kind, lo - base, hi - base,
					      (unsigned long long)acc->bytes, dims[0], dims[1], dims[2], dims[3],
					      dims[4], dims[5]);
		}
	}
	return bad;
}

/* Violations over every record (only: the kernels it says yes to) with spans narrowed by
 * `narrow`. */
static unsigned check_some(uint64_t narrow, bool say, unsigned *checked, bool (*only)(const char *))
{
	char *records = read_all(oracle_path), *cur = records;
	unsigned bad = 0, i = 0;

	assert_non_null(records);
	*checked = 0;
	/* a record per launch the device ran (a launch that faulted too: what it touched before
	 * the fault counts); a job whose launch failed to start has none */
	for (i = 0; i < njobs; i++) {
		const struct job *j = &jobs[i];
		char head[8192];

		if (only && !only(j->f->name))
			continue;
		snprintf(head, sizeof(head), "launch %s %u %u %u %u %u %u", j->f->name, j->dims[0], j->dims[1],
			 j->dims[2], j->dims[3], j->dims[4], j->dims[5]);
		char *at = strstr(cur, head);

		while (at && ((at != cur && at[-1] != '\n') || at[strlen(head)] != '\n'))
			at = strstr(at + 1, head);
		if (!at) {
			if (say)
				print_message("  %s: no record (the launch did not run)\n", j->f->name);
			continue;
		}
		cur = at;
		next_line(&cur);
		bad += check_record(j, &cur, narrow, say);
		(*checked)++;
	}
	free(records);
	return bad;
}

static unsigned check_all(uint64_t narrow, bool say, unsigned *checked)
{
	return check_some(narrow, say, checked, NULL);
}

static void test_oracle(void **state)
{
	const char *n = getenv("CUFOLD_DERIVE_NARROW_TEST");
	unsigned cap = 0, bad, checked, kernels = 0;
	(void)state;
	for (unsigned i = 0; i < nmods; i++)
		for (uint32_t jx = 0; jx < mods[i].m->nfuncs; jx++) {
			const struct ptx_func *f = &mods[i].m->funcs[jx];
			char why[256];
			struct rw_cards *card;

			if (!f->is_entry || f->is_decl || !func_of(mods[i].m, f->name))
				continue;
			card = derive(mods[i].m, f, why, sizeof(why));
			if (!card)
				continue;
			kernels++;
			for (int l = 0; l < LAUNCHES; l++) {
				if (njobs == cap) {
					cap = cap ? cap * 2 : 256;
					jobs = realloc(jobs, cap * sizeof(*jobs));
					assert_non_null(jobs);
				}
				jobs[njobs++] = (struct job){ mods[i].m, f, mods[i].path, card, l == 0, { 0 } };
			}
		}
	run_jobs();
	bad = check_all(n ? strtoull(n, NULL, 0) : 0, true, &checked);
	print_message("oracle: %u kernels, %u of %u launches checked, %u violations; %u ranges through "
		      "pointers in struct parameters\n", kernels, checked, njobs, bad, field_ranges);
	assert_int_equal(bad, 0);
	assert_true(checked >= njobs * 8 / 10);
	assert_true(field_ranges >= 100); /* the struct kernels ran, and their fields were checked */
	/* the same records against spans 4 bytes narrower: the check must see it */
	assert_true(check_all(4, false, &checked) > 0);
	/* and CuPy's kernels on their own (exact spans, test_cupy_spans): their launches ran and
	 * were checked, and narrowed by 4 bytes their spans miss bytes the device touched */
	assert_int_equal(check_some(0, false, &checked, cupy_shaped), 0);
	assert_true(checked >= 5 * LAUNCHES * 8 / 10);
	assert_true(check_some(4, false, &checked, cupy_shaped) > 0);
	for (unsigned i = 0; i < njobs; i++)
		if (jobs[i].owner)
			rw_cards_destroy(jobs[i].card);
	free(jobs);
	unlink(oracle_path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hand_cards),
		cmocka_unit_test(test_elementwise_claims),
		cmocka_unit_test(test_field_cards),
		cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_cupy_spans),
		cmocka_unit_test(test_cupy_sum),
		cmocka_unit_test(test_cupy_whole),
		cmocka_unit_test(test_first_whole_refusals),
		cmocka_unit_test(test_oracle),
	};

	return cmocka_run_group_tests(tests, load_modules, free_modules);
}
