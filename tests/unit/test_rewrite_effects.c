/* test_rewrite_effects.c - the effects module's pitched regions: rw_range_overlap checked against a
 * brute-force byte-set model (exhaustively on small regions, then on random ones), and the
 * ranges rw_op_effects gives 2-D copies, 2-D memsets, 3-D copies and cufold_batch_copy2d
 * launches; purity of 2-D copies. tests layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rewrite/effects.h"
#include "rewrite/kernels/batch.h"
#include "rw_test.h"

#define BUF 0x7f0000000000ull  /* a device buffer */
#define SPACE 4096             /* bytes the model covers: every region of the tests fits */

/* ------------------------------------------------------------------ the model */

/* A region as the tests make it: height rows of width bytes pitch apart (pitch 0: one
 * contiguous range of width bytes). */
struct region {
	uint64_t addr;               /* first byte */
	uint64_t width;              /* bytes per row (contiguous: the length) */
	uint64_t height;             /* rows (contiguous: 1) */
	uint64_t pitch;              /* bytes from a row to the next; 0: contiguous */
};

static struct rw_range range_of(const struct region *g)
{
	if (!g->pitch)
		return (struct rw_range){ g->addr, g->width, 0, 0 };
	return (struct rw_range){ g->addr, (g->height - 1) * g->pitch + g->width, g->width, g->pitch };
}

static void mark(unsigned char *set, const struct region *g, unsigned char bit)
{
	uint64_t rows = g->pitch ? g->height : 1;

	for (uint64_t r = 0; r < rows; r++)
		for (uint64_t c = 0; c < g->width; c++) {
			uint64_t a = g->addr + r * g->pitch + c;

			assert_true(a < SPACE);
			set[a] |= bit;
		}
}

/* Whether the two regions share a byte, by their byte sets. */
static bool brute_overlap(const struct region *x, const struct region *y)
{
	static unsigned char set[SPACE];
	bool hit = false;

	memset(set, 0, sizeof(set));
	mark(set, x, 1);
	mark(set, y, 2);
	for (size_t i = 0; i < SPACE && !hit; i++)
		hit = set[i] == 3;
	return hit;
}

static bool span_overlap(const struct rw_range *x, const struct rw_range *y)
{
	return x->bytes && y->bytes && x->addr < y->addr + y->bytes && y->addr < x->addr + x->bytes;
}

static void describe(char *buf, size_t cap, const struct region *g)
{
	if (g->pitch)
		snprintf(buf, cap, "{addr %llu, width %llu, height %llu, pitch %llu}", (unsigned long long)g->addr,
			 (unsigned long long)g->width, (unsigned long long)g->height, (unsigned long long)g->pitch);
	else
		snprintf(buf, cap, "{addr %llu, bytes %llu}", (unsigned long long)g->addr,
			 (unsigned long long)g->width);
}

struct tally {
	uint64_t cases, overlaps, exact, by_span; /* pairs checked; brute overlaps; exact kind; different pitches */
};

/* The contract of rw_range_overlap on one pair, both ways round: never a missed overlap; exact
 * when neither is pitched, one is contiguous, or both have one pitch; else the spans decide. */
static void check_pair(const struct region *x, const struct region *y, struct tally *t)
{
	struct rw_range rx = range_of(x), ry = range_of(y);
	bool want = brute_overlap(x, y), got = rw_range_overlap(&rx, &ry), back = rw_range_overlap(&ry, &rx);
	bool exact = !x->pitch || !y->pitch || x->pitch == y->pitch;
	char a[128], b[128];

	t->cases++;
	t->overlaps += want;
	if (exact)
		t->exact++;
	else
		t->by_span++;
	if (got != back || (want && !got) || (exact && got != want) || (!exact && got != span_overlap(&rx, &ry))) {
		describe(a, sizeof(a), x);
		describe(b, sizeof(b), y);
		fail_msg("rw_range_overlap(%s, %s) = %d (reversed %d), the bytes say %d", a, b, got, back, want);
	}
}

/* ------------------------------------------------------------------ rw_range_overlap */

/* Every pitched region with pitch <= 6, addr <= 12, height <= 3 and every contiguous range
 * with addr <= 20, length <= 12 (length 0 too), against every other: 750k pairs. */
static void test_overlap_exhaustive_small(void **state)
{
	static struct region all[1024];
	struct tally t = { 0, 0, 0, 0 };
	size_t n = 0;

	(void)state;
	for (uint64_t p = 2; p <= 6; p++)
		for (uint64_t w = 1; w < p; w++)
			for (uint64_t a = 0; a <= 12; a++)
				for (uint64_t h = 1; h <= 3; h++)
					all[n++] = (struct region){ a, w, h, p };
	for (uint64_t a = 0; a <= 20; a++)
		for (uint64_t len = 0; len <= 12; len++)
			all[n++] = (struct region){ a, len, 1, 0 };
	assert_true(n <= sizeof(all) / sizeof(all[0]));
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			check_pair(&all[i], &all[j], &t);
	assert_int_equal(t.cases, (uint64_t)n * n);
	/* the population has both answers in every class */
	assert_true(t.overlaps > t.cases / 10 && t.overlaps < t.cases * 9 / 10);
	assert_true(t.by_span > 100000);
}

/* A fixed-seed generator (xorshift64*): the same cases on every machine. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static uint64_t rng_in(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + rng_next(s) % (hi - lo + 1);
}

/* A pitched region of that pitch (0: any pitch 2..64), widths below the pitch, 1..8 rows. */
static struct region random_pitched(uint64_t *s, uint64_t pitch)
{
	struct region g;

	g.pitch = pitch ? pitch : rng_in(s, 2, 64);
	g.width = rng_in(s, 1, g.pitch - 1);
	g.height = rng_in(s, 1, 8);
	g.addr = rng_in(s, 0, 600);
	return g;
}

static struct region random_contiguous(uint64_t *s)
{
	struct region g = { rng_in(s, 0, 900), rng_in(s, 0, 200), 1, 0 };

	if (rng_in(s, 0, 3) == 0)
		g.width = rng_in(s, 1, 8); /* short ones fall in pitch gaps */
	return g;
}

/* Random pairs of each class, several seeds; regions kept near each other so that most pairs'
 * spans overlap (the interesting case). */
static void test_overlap_random(void **state)
{
	static const uint64_t seeds[] = { 1, 42, 0x5eed, 20261130, 0xdeadbeefcafe };
	struct tally t = { 0, 0, 0, 0 };
	uint64_t same = 0;

	(void)state;
	for (size_t k = 0; k < sizeof(seeds) / sizeof(seeds[0]); k++) {
		uint64_t s = seeds[k];

		for (int i = 0; i < 20000; i++) {
			struct region x, y;

			switch (i % 4) {
			case 0: /* one pitch: exact by columns */
				x = random_pitched(&s, 0);
				y = random_pitched(&s, x.pitch);
				same++;
				break;
			case 1: /* pitched against contiguous: exact */
				x = random_pitched(&s, 0);
				y = random_contiguous(&s);
				break;
			case 2: /* any pitches: exact or by span */
				x = random_pitched(&s, 0);
				y = random_pitched(&s, 0);
				break;
			default: /* pitches that share factors, so regions interleave often */
				x = random_pitched(&s, 8 * rng_in(&s, 1, 8));
				y = random_pitched(&s, 8 * rng_in(&s, 1, 8));
				break;
			}
			/* pull y near x half of the time */
			if (rng_in(&s, 0, 1))
				y.addr = x.addr + rng_in(&s, 0, 64);
			check_pair(&x, &y, &t);
		}
	}
	assert_int_equal(t.cases, 100000);
	assert_true(same >= 25000);
	assert_true(t.overlaps > 20000 && t.overlaps < 80000);
}

/* Hand-picked pairs, each stating one fact the rules rely on. */
static void test_overlap_cases(void **state)
{
	/* q/k/v column blocks of one pitch: disjoint though their spans overlap */
	struct rw_range q = { BUF, 7 * 768 + 256, 256, 768 }, k = { BUF + 256, 7 * 768 + 256, 256, 768 };
	struct rw_range v = { BUF + 512, 7 * 768 + 256, 256, 768 };
	/* a block that starts in the gap of q's rows and wraps into the next row's columns */
	struct rw_range wrap = { BUF + 700, 7 * 768 + 100, 100, 768 };
	struct rw_range gap = { BUF + 3 * 768 + 256, 512, 0, 0 };    /* the gap after q's row 3 */
	struct rw_range gap1 = { BUF + 3 * 768 + 255, 2, 0, 0 };     /* q's last byte of row 3, then the gap */
	struct rw_range after = { BUF + 7 * 768 + 256, 4096, 0, 0 }; /* right after q's span */
	struct rw_range zero = { BUF + 100, 0, 0, 0 };

	(void)state;
	assert_false(rw_range_overlap(&q, &k));
	assert_false(rw_range_overlap(&k, &v));
	assert_false(rw_range_overlap(&q, &v));
	assert_true(rw_range_overlap(&q, &q));
	assert_true(rw_range_overlap(&wrap, &q)); /* its row r ends in q's row r + 1 */
	assert_false(rw_range_overlap(&wrap, &k));
	assert_true(rw_range_overlap(&wrap, &v));
	assert_false(rw_range_overlap(&gap, &q));
	assert_true(rw_range_overlap(&gap, &k));
	assert_true(rw_range_overlap(&gap1, &q));
	assert_false(rw_range_overlap(&after, &q));
	assert_false(rw_range_overlap(&zero, &q));
	assert_false(rw_range_overlap(&q, &zero));
	{
		struct rw_range list[3] = { q, v, after };

		assert_true(rw_ranges_overlap(list, 3, &k)); /* k's last row is where `after` starts */
		list[2] = zero;
		assert_false(rw_ranges_overlap(list, 3, &k));
		assert_true(rw_ranges_overlap(list, 3, &gap)); /* v's row 3 lies in q's gap */
		list[1] = zero;
		assert_false(rw_ranges_overlap(list, 3, &gap));
		assert_true(rw_ranges_overlap(list, 3, &wrap));
		assert_false(rw_ranges_overlap(list, 0, &q));
	}
	/* the same rows at another pitch: by span */
	{
		struct rw_range k2 = { BUF + 256, 3 * 1536 + 256, 256, 1536 };

		assert_true(rw_range_overlap(&q, &k2));
	}
	/* ... even far apart by columns */
	{
		struct rw_range p8 = { 0, 8 * 7 + 1, 1, 8 }, p16 = { 4, 16 * 3 + 1, 1, 16 };

		assert_true(rw_range_overlap(&p8, &p16)); /* {0,8,..,56} and {4,20,36,52}: no byte shared */
	}
}

static void test_effects_lists(void **state)
{
	struct rw_effects e;
	struct rw_range k = { BUF + 256, 7 * 768 + 256, 256, 768 };
	struct rw_range q = { BUF, 7 * 768 + 256, 256, 768 };

	(void)state;
	memset(&e, 0, sizeof(e));
	e.nr = 1;
	e.r[0] = q;
	e.nw = 1;
	e.w[0] = (struct rw_range){ BUF + 0x10000, 100, 0, 0 };
	assert_false(rw_ranges_overlap(e.r, e.nr, &k));
	assert_true(rw_ranges_overlap(e.r, e.nr, &q));
	assert_false(rw_ranges_overlap(e.w, e.nw, &q));
}

/* ------------------------------------------------------------------ rw_op_effects */

/* An asynchronous 2-D device-to-device copy on STREAM_A as capture records it. */
static struct cap_op copy2d_op(uint64_t src, size_t spitch, uint64_t dst, size_t dpitch, size_t width, size_t height)
{
	return rwt_copy2d_op(src, spitch, dst, dpitch, width, height, STREAM_A);
}

static void expect_range(const struct rw_range *r, uint64_t addr, uint64_t bytes, uint64_t width, uint64_t pitch)
{
	assert_int_equal(r->addr, addr);
	assert_int_equal(r->bytes, bytes);
	assert_int_equal(r->width, width);
	assert_int_equal(r->pitch, pitch);
}

static void test_effects_copy2d(void **state)
{
	struct cap_op op = copy2d_op(BUF + 16, 64, BUF + 0x1000, 48, 20, 5);
	struct rw_effects e;

	(void)state;
	rw_op_effects(&op, &e);
	assert_false(e.all);
	assert_int_equal(e.nr, 1);
	assert_int_equal(e.nw, 1);
	expect_range(&e.r[0], BUF + 16, 4 * 64 + 20, 20, 64);
	expect_range(&e.w[0], BUF + 0x1000, 4 * 48 + 20, 20, 48);
	/* a dense side (pitch == width) is one contiguous range */
	op = copy2d_op(BUF, 20, BUF + 0x1000, 48, 20, 5);
	rw_op_effects(&op, &e);
	expect_range(&e.r[0], BUF, 100, 0, 0);
	expect_range(&e.w[0], BUF + 0x1000, 4 * 48 + 20, 20, 48);
	/* one row: contiguous whatever the pitches */
	op = copy2d_op(BUF, 64, BUF + 0x1000, 48, 20, 1);
	rw_op_effects(&op, &e);
	expect_range(&e.r[0], BUF, 20, 0, 0);
	expect_range(&e.w[0], BUF + 0x1000, 20, 0, 0);
	/* a 2-D copy is never a sure write (pitch gaps are not written) */
	{
		struct rw_range r;

		op = copy2d_op(BUF, 64, BUF + 0x1000, 48, 20, 5);
		assert_false(rw_op_sure_write(&op, &r));
	}
}

static void test_effects_memset2d(void **state)
{
	struct cap_op op;
	struct rw_effects e;

	(void)state;
	memset(&op, 0, sizeof(op));
	op.kind = CAP_OP_MEMSET;
	op.api = DRV_ID_cuMemsetD2D32Async;
	op.stream = STREAM_A;
	op.u.memset.dst = BUF + 8;
	op.u.memset.elem_size = 4;
	op.u.memset.value = 0x3f800000;
	op.u.memset.width = 10;  /* 40 bytes a row */
	op.u.memset.pitch = 100;
	op.u.memset.height = 5;
	rw_op_effects(&op, &e);
	assert_false(e.all);
	assert_int_equal(e.nr, 0);
	assert_int_equal(e.nw, 1);
	expect_range(&e.w[0], BUF + 8, 4 * 100 + 40, 40, 100);
	assert_true(rw_op_is_pure(&op));
	assert_false(rw_op_is_set_1d(&op));
	/* rows that abut: one range */
	op.u.memset.pitch = 40;
	rw_op_effects(&op, &e);
	expect_range(&e.w[0], BUF + 8, 200, 0, 0);
	/* one row */
	op.u.memset.pitch = 100;
	op.u.memset.height = 1;
	rw_op_effects(&op, &e);
	expect_range(&e.w[0], BUF + 8, 40, 0, 0);
}

/* A 3-D copy: its whole span, an upper bound (slices are srcHeight rows apart). */
static void test_effects_copy3d(void **state)
{
	struct cap_op op = copy2d_op(BUF, 64, BUF + 0x10000, 128, 20, 4);
	struct rw_effects e;

	(void)state;
	op.api = DRV_ID_cuMemcpy3DAsync_v2;
	op.u.memcpy.d.Depth = 3;
	op.u.memcpy.d.srcHeight = 6;
	op.u.memcpy.d.dstHeight = 4;
	op.u.memcpy.bytes = 20 * 4 * 3;
	op.u.memcpy.src_span = 2 * 6 * 64 + 3 * 64 + 20;
	op.u.memcpy.dst_span = 2 * 4 * 128 + 3 * 128 + 20;
	rw_op_effects(&op, &e);
	assert_false(e.all);
	assert_int_equal(e.nr, 1);
	assert_int_equal(e.nw, 1);
	expect_range(&e.r[0], BUF, 2 * 6 * 64 + 3 * 64 + 20, 0, 0);
	expect_range(&e.w[0], BUF + 0x10000, 2 * 4 * 128 + 3 * 128 + 20, 0, 0);
	assert_false(rw_op_is_pitched_dtod(&op));
	assert_false(rw_op_is_linear_dtod(&op));
}

/* A launch of cufold_batch_copy2d: its table decoded, one read and one write per region. */
static uint32_t table_offset[1] = { 0 };
static uint32_t table_size[1] = { RW_BATCH_TABLE_SIZE };
static const struct cap_func copy2d_info = { .func = (CUfunction)0xc2d, .id = 7, .nparams = 1,
					     .param_bytes = RW_BATCH_TABLE_SIZE, .layout_known = true,
					     .name = "cufold_batch_copy2d", .offset = table_offset,
					     .size = table_size };

static void test_effects_batch_copy2d(void **state)
{
	struct rw_batch_copy2d_table t;
	struct cap_op op;
	struct rw_effects e;

	(void)state;
	assert_int_equal(sizeof(t), RW_BATCH_TABLE_SIZE);
	memset(&t, 0, sizeof(t));
	t.r[0] = (struct rw_batch_copy2d_range){ BUF + 0x1000, BUF, 64, 8, 64, 768 };       /* head split */
	t.r[1] = (struct rw_batch_copy2d_range){ BUF + 0x2000, BUF + 0x3000, 100, 1, 100, 100 }; /* 1-D */
	t.r[2] = (struct rw_batch_copy2d_range){ BUF + 0x4000, BUF + 0x5000, 0, 4, 8, 8 };    /* nothing */
	t.r[3] = (struct rw_batch_copy2d_range){ BUF + 0x6000, BUF + 0x7000, 16, 3, 256, 4 }; /* rows overlap */
	t.r[4] = (struct rw_batch_copy2d_range){ BUF + 0x9000, BUF + 0x8000, 32, 2, 48, 32 };
	t.count = 5;
	memset(&op, 0, sizeof(op));
	op.kind = CAP_OP_KERNEL;
	op.api = DRV_ID_cuLaunchKernel;
	op.stream = STREAM_A;
	op.u.kernel.func = op.u.kernel.handle = copy2d_info.func;
	op.u.kernel.info = &copy2d_info;
	op.u.kernel.grid[0] = op.u.kernel.grid[1] = op.u.kernel.grid[2] = 1;
	op.u.kernel.block[0] = 256;
	op.u.kernel.block[1] = op.u.kernel.block[2] = 1;
	op.u.kernel.param_size = sizeof(t);
	op.u.kernel.params = &t;
	rw_op_effects(&op, &e);
	assert_false(e.all);
	assert_int_equal(e.nr, 4);
	assert_int_equal(e.nw, 4);
	expect_range(&e.r[0], BUF, 7 * 768 + 64, 64, 768);
	expect_range(&e.w[0], BUF + 0x1000, 8 * 64, 0, 0);
	expect_range(&e.r[1], BUF + 0x3000, 100, 0, 0);
	expect_range(&e.w[1], BUF + 0x2000, 100, 0, 0);
	expect_range(&e.r[2], BUF + 0x7000, 2 * 4 + 16, 0, 0);
	expect_range(&e.w[2], BUF + 0x6000, 2 * 256 + 16, 16, 256);
	expect_range(&e.r[3], BUF + 0x8000, 64, 0, 0);
	expect_range(&e.w[3], BUF + 0x9000, 48 + 32, 32, 48);
	/* not pure (its card is indirect): the rules ask its table, not purity */
	assert_false(rw_op_is_pure(&op));
	/* a count over the table's 16 slots reads 16 regions at most */
	for (uint32_t i = 5; i < RW_BATCH2D_MAX; i++)
		t.r[i] = (struct rw_batch_copy2d_range){ BUF + 0x10000 * (i + 1), BUF + 0x10000 * (i + 1) + 0x8000, 8, 2, 16, 16 };
	t.count = 1000;
	rw_op_effects(&op, &e);
	assert_false(e.all);
	assert_int_equal(e.nr, RW_BATCH2D_MAX - 1);
	assert_int_equal(e.nw, RW_BATCH2D_MAX - 1);
	/* a launch whose parameters do not have the table's shape: anything */
	op.u.kernel.param_size = 8;
	rw_op_effects(&op, &e);
	assert_true(e.all);
	op.u.kernel.param_size = sizeof(t);
	op.u.kernel.via_extra = true;
	rw_op_effects(&op, &e);
	assert_true(e.all);
}

/* ------------------------------------------------------------------ purity */

static void test_pure_copy2d(void **state)
{
	/* source columns [0, 16) and destination columns [16, 32) of rows 64 apart: they interleave */
	struct cap_op op = copy2d_op(BUF, 64, BUF + 16, 64, 16, 4);

	(void)state;
	assert_true(rw_op_is_pitched_dtod(&op));
	assert_true(rw_op_is_pure(&op));
	/* destination columns [48, 64): the wrap, still apart */
	op = copy2d_op(BUF, 64, BUF + 48, 64, 16, 4);
	assert_true(rw_op_is_pure(&op));
	/* the destination one row down, other columns */
	op = copy2d_op(BUF, 64, BUF + 64 + 32, 64, 16, 4);
	assert_true(rw_op_is_pure(&op));
	/* columns [8, 24) meet [0, 16) */
	op = copy2d_op(BUF, 64, BUF + 8, 64, 16, 4);
	assert_false(rw_op_is_pure(&op));
	/* columns [56, 72) wrap onto column 0 of the next row */
	op = copy2d_op(BUF, 64, BUF + 56, 64, 16, 4);
	assert_false(rw_op_is_pure(&op));
	/* the destination's last row is the source's first row shifted up by 3 rows: one row meets */
	op = copy2d_op(BUF + 3 * 64, 64, BUF, 64, 16, 4);
	assert_false(rw_op_is_pure(&op));
	/* below the source's span: pure */
	op = copy2d_op(BUF, 64, BUF + 4 * 64, 64, 16, 4);
	assert_true(rw_op_is_pure(&op));
	/* different pitches whose spans overlap are compared by span: not pure (an upper bound),
	 * though {0..15, 64..79, ..} and {32..47, 160..175, ..} share no byte */
	op = copy2d_op(BUF, 64, BUF + 32, 128, 16, 4);
	assert_false(rw_op_is_pure(&op));
	/* a dense destination (3 rows of 16 abutting: 48 bytes) inside the source's first gap */
	op = copy2d_op(BUF, 64, BUF + 16, 16, 16, 3);
	assert_true(rw_op_is_pure(&op));
	/* one byte later it reaches the source's row 1 */
	op = copy2d_op(BUF, 64, BUF + 17, 16, 16, 3);
	assert_false(rw_op_is_pure(&op));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overlap_exhaustive_small),
		cmocka_unit_test(test_overlap_random),
		cmocka_unit_test(test_overlap_cases),
		cmocka_unit_test(test_effects_lists),
		cmocka_unit_test(test_effects_copy2d),
		cmocka_unit_test(test_effects_memset2d),
		cmocka_unit_test(test_effects_copy3d),
		cmocka_unit_test(test_effects_batch_copy2d),
		cmocka_unit_test(test_pure_copy2d),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
