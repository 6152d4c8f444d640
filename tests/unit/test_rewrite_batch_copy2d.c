/* test_rewrite_batch_copy2d.c - golden and negative tests of the batch-copy rule on 2-D (pitched)
 * copies: the batch_copy2d nodes it makes for per-head splits and glues, the derived launch of
 * cufold_batch_copy2d (function, grid, every field of the table), guards failing when bindings
 * move, and the near misses it must leave alone. tests layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "rewrite/effects.h"
#include "rw_test.h"

extern const struct rw_rule rw_rule_batch_copy;

#define BUF_QKV 0x7f0000000000ull /* a fused qkv activation: T rows of 3 * DM bytes */
#define BUF_H 0x7f0001000000ull   /* per-head blocks, T * HW bytes each, HEAD_STRIDE apart */
#define BUF_O 0x7f0002000000ull   /* the heads glued back: T rows of DM bytes */
#define BUF_S 0x7f0003000000ull   /* a source of 1-D copies */
#define BUF_D 0x7f0004000000ull   /* a destination of 1-D copies */
#define HW 64u                    /* bytes of one head's row */
#define NH 4u                     /* heads */
#define DM (NH * HW)              /* bytes of one model row (256) */
#define T 8u                      /* rows (tokens) */
#define HEAD_STRIDE 0x1000u       /* between per-head blocks */

/* Head h of q split off the fused qkv rows (a strided .contiguous()): column block h of pitch
 * 3 * DM into a dense block. */
static struct cap_op split_op(unsigned h, CUstream s)
{
	return rwt_copy2d_op(BUF_QKV + h * HW, 3 * DM, BUF_H + h * HEAD_STRIDE, HW, HW, T, s);
}

/* Head h glued back into the model rows: a dense block into column block h of pitch DM. */
static struct cap_op glue_op(unsigned h, CUstream s)
{
	return rwt_copy2d_op(BUF_H + h * HEAD_STRIDE, HW, BUF_O + h * HW, DM, HW, T, s);
}

/* Rewrite ops[0..n) with batch-copy alone, cufold's kernels resolved by the fake resolver; the
 * plan's one-line form into buf. */
static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	const struct rw_rule *rules[1] = { &rw_rule_batch_copy };

	rw__set_kernel_resolver(rwt_fake_resolver);
	return rwt_run(ops, n, rules, 1, buf, cap);
}

/* The launch a batch_copy2d node derives: cufold_batch_copy2d, y = one block row per region. */
static void check_launch(const struct cap_op *out, unsigned gx, unsigned regions, CUstream s)
{
	rwt_check_batch_launch(out, RW_K_BATCH_COPY2D, gx, regions, s);
	assert_string_equal(out->u.kernel.info->name, "cufold_batch_copy2d");
}

/* The table of a derived launch holds exactly want[0..n), the rest zero. */
static void check_table(const struct cap_op *out, const struct rw_batch_copy2d_range *want, uint32_t n)
{
	struct rw_batch_copy2d_table t;

	assert_int_equal(sizeof(t), 776);
	assert_int_equal(offsetof(struct rw_batch_copy2d_table, count), RW_BATCH_COUNT_OFFSET);
	memcpy(&t, out->u.kernel.params, sizeof(t));
	assert_int_equal(t.count, n);
	assert_int_equal(t.pad, 0);
	for (uint32_t i = 0; i < RW_BATCH2D_MAX; i++) {
		struct rw_batch_copy2d_range zero = { 0, 0, 0, 0, 0, 0 }, w = i < n ? want[i] : zero;

		if (t.r[i].dst != w.dst || t.r[i].src != w.src || t.r[i].width != w.width || t.r[i].height != w.height ||
		    t.r[i].dpitch != w.dpitch || t.r[i].spitch != w.spitch)
			fail_msg("region %u: {dst %#llx, src %#llx, width %llu, height %llu, dpitch %llu, spitch %llu}, "
				 "want {%#llx, %#llx, %llu, %llu, %llu, %llu}",
				 i, (unsigned long long)t.r[i].dst, (unsigned long long)t.r[i].src,
				 (unsigned long long)t.r[i].width, (unsigned long long)t.r[i].height,
				 (unsigned long long)t.r[i].dpitch, (unsigned long long)t.r[i].spitch,
				 (unsigned long long)w.dst, (unsigned long long)w.src, (unsigned long long)w.width,
				 (unsigned long long)w.height, (unsigned long long)w.dpitch, (unsigned long long)w.spitch);
	}
}

/* The guards of a batch of ops [0, n) that are all 2-D, as rw_plan_format writes them. */
static void guards_2d(char *buf, size_t cap, uint32_t first, uint32_t n)
{
	size_t len = 0;

	buf[0] = 0;
	for (uint32_t j = first; j < first + n; j++) {
		len += (size_t)snprintf(buf + len, cap - len, "%spitched_dtod(%u,%u) pure(%u,%u)", j == first ? "" : " ",
					j, j, j, j);
		if (j != first)
			len += (size_t)snprintf(buf + len, cap - len, " same_stream(%u,%u)", first, j);
		for (uint32_t a = first; a < j; a++)
			len += (size_t)snprintf(buf + len, cap - len, " independent(%u,%u)", a, j);
		assert_true(len < cap);
	}
}

/* ------------------------------------------------------------------ golden */

/* q split into its 4 heads: 4 strided column blocks of one source, one launch. */
static void test_head_split(void **state)
{
	struct cap_op ops[4] = { split_op(0, STREAM_A), split_op(1, STREAM_A), split_op(2, STREAM_A), split_op(3, STREAM_A) };
	const struct cap_op *ptr[4];
	struct cap_op out;
	char buf[4096], want[4096];
	struct rw_plan *p = run(ops, 4, buf, sizeof(buf));

	(void)state;
	assert_string_equal(buf, "batch_copy2d(0,1,2,3) | pitched_dtod(0,0) pure(0,0) pitched_dtod(1,1) pure(1,1) "
				 "same_stream(0,1) independent(0,1) pitched_dtod(2,2) pure(2,2) same_stream(0,2) "
				 "independent(0,2) independent(1,2) pitched_dtod(3,3) pure(3,3) same_stream(0,3) "
				 "independent(0,3) independent(1,3) independent(2,3)");
	memcpy(want, "batch_copy2d(0,1,2,3) | ", 24);
	guards_2d(want + 24, sizeof(want) - 24, 0, 4);
	assert_string_equal(buf, want);
	assert_int_equal(p->nnodes, 1);
	assert_int_equal(p->nodes[0].kind, RW_NODE_BATCH_COPY2D);
	assert_int_equal(p->nodes[0].norig, 4);
	assert_string_equal(p->nodes[0].rule, "batch-copy");
	assert_int_equal(p->nstats, 1);
	assert_string_equal(p->stats[0].rule, "batch-copy");
	assert_int_equal(p->stats[0].count, 1);
	rwt_ptrs(ops, 4, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	/* 8 rows of 64 bytes each: 512 bytes, one block of x */
	check_launch(&out, 1, 4, STREAM_A);
	{
		struct rw_batch_copy2d_range w[4];

		for (unsigned h = 0; h < 4; h++)
			w[h] = (struct rw_batch_copy2d_range){ BUF_H + h * HEAD_STRIDE, BUF_QKV + h * HW, HW, T, HW, 3 * DM };
		check_table(&out, w, 4);
	}
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), -CF_EINVAL);

	/* the next launch splits k (the source moved by DM): the guards hold, the table follows */
	for (unsigned h = 0; h < 4; h++)
		rwt_copy2d_set(&ops[h], BUF_QKV + DM + h * HW, 3 * DM, BUF_H + h * HEAD_STRIDE, HW, HW, T);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	{
		struct rw_batch_copy2d_range w[4];

		for (unsigned h = 0; h < 4; h++)
			w[h] = (struct rw_batch_copy2d_range){ BUF_H + h * HEAD_STRIDE, BUF_QKV + DM + h * HW, HW, T, HW, 3 * DM };
		check_table(&out, w, 4);
	}
	/* longer sequences: 300 rows of 64 bytes = 19200 bytes -> 5 blocks of 4096 */
	for (unsigned h = 0; h < 4; h++)
		rwt_copy2d_set(&ops[h], BUF_QKV + h * HW, 3 * DM, BUF_H + h * 0x10000, HW, HW, 300);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	check_launch(&out, 5, 4, STREAM_A);
	rw_plan_destroy(p);
}

/* The heads glued back: destinations are column blocks of one pitch whose spans overlap but
 * whose columns do not. */
static void test_head_glue(void **state)
{
	struct cap_op ops[4] = { glue_op(0, STREAM_A), glue_op(1, STREAM_A), glue_op(2, STREAM_A), glue_op(3, STREAM_A) };
	const struct cap_op *ptr[4];
	struct cap_op out;
	char buf[4096], want[4096];
	struct rw_plan *p = run(ops, 4, buf, sizeof(buf));
	uint32_t failed = 999;

	(void)state;
	memcpy(want, "batch_copy2d(0,1,2,3) | ", 24);
	guards_2d(want + 24, sizeof(want) - 24, 0, 4);
	assert_string_equal(buf, want);
	assert_int_equal(p->nodes[0].kind, RW_NODE_BATCH_COPY2D);
	rwt_ptrs(ops, 4, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	check_launch(&out, 1, 4, STREAM_A);
	{
		struct rw_batch_copy2d_range w[4];

		for (unsigned h = 0; h < 4; h++)
			w[h] = (struct rw_batch_copy2d_range){ BUF_O + h * HW, BUF_H + h * HEAD_STRIDE, HW, T, DM, HW };
		check_table(&out, w, 4);
	}

	/* heads 1 and 2 trade places: still disjoint columns */
	rwt_copy2d_set(&ops[1], BUF_H + HEAD_STRIDE, HW, BUF_O + 2 * HW, DM, HW, T);
	rwt_copy2d_set(&ops[2], BUF_H + 2 * HEAD_STRIDE, HW, BUF_O + HW, DM, HW, T);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	rwt_copy2d_set(&ops[1], BUF_H + HEAD_STRIDE, HW, BUF_O + HW, DM, HW, T);
	rwt_copy2d_set(&ops[2], BUF_H + 2 * HEAD_STRIDE, HW, BUF_O + 2 * HW, DM, HW, T);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));

	/* head 2 moved half a head left: its columns [96, 160) meet head 1's [64, 128) */
	rwt_copy2d_set(&ops[2], BUF_H + 2 * HEAD_STRIDE, HW, BUF_O + HW + HW / 2, DM, HW, T);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 1);
	assert_int_equal(p->guards[failed].b, 2);
	/* one byte is enough: head 2 starts at head 1's last column */
	rwt_copy2d_set(&ops[2], BUF_H + 2 * HEAD_STRIDE, HW, BUF_O + 2 * HW - 1, DM, HW, T);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 1);
	assert_int_equal(p->guards[failed].b, 2);
	/* head 3 wraps: its columns [224, 288) reach head 0's column 0 of the next row */
	rwt_copy2d_set(&ops[2], BUF_H + 2 * HEAD_STRIDE, HW, BUF_O + 2 * HW, DM, HW, T);
	rwt_copy2d_set(&ops[3], BUF_H + 3 * HEAD_STRIDE, HW, BUF_O + 3 * HW + HW / 2, DM, HW, T);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 0);
	assert_int_equal(p->guards[failed].b, 3);
	/* head 3 one row down, its own columns: disjoint again (its last row is past the others') */
	rwt_copy2d_set(&ops[3], BUF_H + 3 * HEAD_STRIDE, HW, BUF_O + DM + 3 * HW, DM, HW, T);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* head 3 at another pitch (its spans still meet the others'): compared by span, fails */
	rwt_copy2d_set(&ops[3], BUF_H + 3 * HEAD_STRIDE, HW, BUF_O + 3 * HW, 2 * DM, HW, T);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].b, 3);
	/* head 3 reads what head 0 writes */
	rwt_copy2d_set(&ops[3], BUF_O + 5 * DM + 10, HW, BUF_O + 3 * HW, DM, HW, 1);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 0);
	assert_int_equal(p->guards[failed].b, 3);
	/* ... from head 0's gap after its row 5: columns [64, 128) there are head 1's */
	rwt_copy2d_set(&ops[3], BUF_O + 5 * DM + HW, HW, BUF_O + 3 * HW, DM, HW, 1);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 1);
	/* head 3 now one row: the guards hold, the table has height 1 and the width as pitches */
	rwt_copy2d_set(&ops[3], BUF_H + 3 * HEAD_STRIDE, HW, BUF_O + 3 * HW, DM, HW, 1);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	{
		struct rw_batch_copy2d_range w[4];

		for (unsigned h = 0; h < 4; h++)
			w[h] = (struct rw_batch_copy2d_range){ BUF_O + h * HW, BUF_H + h * HEAD_STRIDE, HW, T, DM, HW };
		w[3] = (struct rw_batch_copy2d_range){ BUF_O + 3 * HW, BUF_H + 3 * HEAD_STRIDE, HW, 1, HW, HW };
		check_table(&out, w, 4);
	}
	/* head 1 becomes a 3-D copy: not a pitched device copy */
	rwt_copy2d_set(&ops[3], BUF_H + 3 * HEAD_STRIDE, HW, BUF_O + 3 * HW, DM, HW, T);
	ops[1].api = DRV_ID_cuMemcpy3DAsync_v2;
	ops[1].u.memcpy.d.Depth = 2;
	ops[1].u.memcpy.d.srcHeight = T;
	ops[1].u.memcpy.d.dstHeight = T;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_PITCHED_DTOD);
	assert_int_equal(p->guards[failed].a, 1);
	/* head 1 back, but its source now reads its own destination's columns */
	ops[1] = glue_op(1, STREAM_A);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	rwt_copy2d_set(&ops[1], BUF_O + HW + 8, DM, BUF_O + HW, DM, HW, T);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_PURE);
	assert_int_equal(p->guards[failed].a, 1);
	/* ... its own gap's columns (of the same pitch): pure, but head 2 writes there */
	rwt_copy2d_set(&ops[1], BUF_O + 2 * HW, DM, BUF_O + HW, DM, HW, T);
	assert_true(rw_op_is_pure(&ops[1]));
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 1);
	assert_int_equal(p->guards[failed].b, 2);
	rw_plan_destroy(p);
}

/* 1-D and 2-D copies in one run: the pitched kernel, 1-D ones as one row (pitch = width). */
static void test_mixed(void **state)
{
	struct cap_op ops[4] = { split_op(0, STREAM_A), rwt_copy_op(BUF_S, BUF_D, 100, STREAM_A), split_op(1, STREAM_A),
				 rwt_copy_op(BUF_S + 0x1000, BUF_D + 0x1000, 7, STREAM_A) };
	const struct cap_op *ptr[4];
	struct cap_op out;
	char buf[4096];
	struct rw_plan *p = run(ops, 4, buf, sizeof(buf));
	uint32_t failed = 999;

	(void)state;
	assert_string_equal(buf, "batch_copy2d(0,1,2,3) | pitched_dtod(0,0) pure(0,0) linear_dtod(1,1) pure(1,1) "
				 "same_stream(0,1) independent(0,1) pitched_dtod(2,2) pure(2,2) same_stream(0,2) "
				 "independent(0,2) independent(1,2) linear_dtod(3,3) pure(3,3) same_stream(0,3) "
				 "independent(0,3) independent(1,3) independent(2,3)");
	assert_int_equal(p->nodes[0].kind, RW_NODE_BATCH_COPY2D);
	rwt_ptrs(ops, 4, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	check_launch(&out, 1, 4, STREAM_A);
	{
		struct rw_batch_copy2d_range w[4] = {
			{ BUF_H, BUF_QKV, HW, T, HW, 3 * DM },
			{ BUF_D, BUF_S, 100, 1, 100, 100 },
			{ BUF_H + HEAD_STRIDE, BUF_QKV + HW, HW, T, HW, 3 * DM },
			{ BUF_D + 0x1000, BUF_S + 0x1000, 7, 1, 7, 7 },
		};

		check_table(&out, w, 4);
	}
	/* the 1-D copy must stay 1-D: its guard is linear_dtod */
	rwt_copy2d_set(&ops[1], BUF_S, 50, BUF_D, 50, 50, 2);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_LINEAR_DTOD);
	assert_int_equal(p->guards[failed].a, 1);
	/* a 1-D copy writing into a head's block */
	ops[1] = rwt_copy_op(BUF_S, BUF_H + HEAD_STRIDE + 500, 100, STREAM_A);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 1);
	assert_int_equal(p->guards[failed].b, 2);
	/* the 1-D copy writes into the gaps of the qkv rows the heads read: fine */
	ops[1] = rwt_copy_op(BUF_S, BUF_QKV + 2 * HW, 3 * DM - 2 * HW, STREAM_A);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* one byte more and it writes head 0's row 1 */
	ops[1] = rwt_copy_op(BUF_S, BUF_QKV + 2 * HW, 3 * DM - 2 * HW + 1, STREAM_A);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 0);
	assert_int_equal(p->guards[failed].b, 1);
	rw_plan_destroy(p);

	/* led by a 1-D copy, a 2-D one following: still the pitched kernel */
	ops[0] = rwt_copy_op(BUF_S, BUF_D, 100, STREAM_A);
	ops[1] = glue_op(2, STREAM_A);
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "batch_copy2d(0,1) | linear_dtod(0,0) pure(0,0) pitched_dtod(1,1) pure(1,1) "
				 "same_stream(0,1) independent(0,1)");
	rwt_ptrs(ops, 2, ptr);
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	check_launch(&out, 1, 2, STREAM_A);
	{
		struct rw_batch_copy2d_range w[2] = {
			{ BUF_D, BUF_S, 100, 1, 100, 100 },
			{ BUF_O + 2 * HW, BUF_H + 2 * HEAD_STRIDE, HW, T, DM, HW },
		};

		check_table(&out, w, 2);
	}
	rw_plan_destroy(p);
}

/* 20 heads: a table holds 16 regions, so two launches (16 + 4). */
static void test_twenty(void **state)
{
	struct cap_op ops[20];
	const struct cap_op *ptr[20];
	struct cap_op out;
	char buf[65536], want[65536];
	struct rw_plan *p;
	size_t len;

	(void)state;
	for (unsigned h = 0; h < 20; h++)
		ops[h] = rwt_copy2d_op(BUF_QKV + h * 16, 20 * 16, BUF_H + h * HEAD_STRIDE, 16, 16, 4, STREAM_A);
	p = run(ops, 20, buf, sizeof(buf));
	len = (size_t)snprintf(want, sizeof(want),
			       "batch_copy2d(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15) batch_copy2d(16,17,18,19) | ");
	guards_2d(want + len, sizeof(want) - len, 0, 16);
	len = strlen(want);
	want[len++] = ' ';
	guards_2d(want + len, sizeof(want) - len, 16, 4);
	assert_string_equal(buf, want);
	assert_int_equal(p->nnodes, 2);
	assert_int_equal(p->nodes[0].kind, RW_NODE_BATCH_COPY2D);
	assert_int_equal(p->nodes[1].kind, RW_NODE_BATCH_COPY2D);
	assert_int_equal(p->stats[0].count, 2);
	/* per member j: pitched_dtod, pure, then same_stream and independent with each earlier one */
	assert_int_equal(p->nguards, (2 * 16 + 15 + 15 * 16 / 2) + (2 * 4 + 3 + 3 * 4 / 2));
	assert_null(strstr(buf, "(15,16)"));
	rwt_ptrs(ops, 20, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	check_launch(&out, 1, 16, STREAM_A);
	{
		struct rw_batch_copy2d_range w[16];

		for (unsigned h = 0; h < 16; h++)
			w[h] = (struct rw_batch_copy2d_range){ BUF_H + h * HEAD_STRIDE, BUF_QKV + h * 16, 16, 4, 16, 320 };
		check_table(&out, w, 16);
	}
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	check_launch(&out, 1, 4, STREAM_A);
	{
		struct rw_batch_copy2d_range w[4];

		for (unsigned h = 0; h < 4; h++)
			w[h] = (struct rw_batch_copy2d_range){ BUF_H + (16 + h) * HEAD_STRIDE, BUF_QKV + (16 + h) * 16, 16, 4,
							       16, 320 };
		check_table(&out, w, 4);
	}
	rw_plan_destroy(p);

	/* 17 1-D copies then a 2-D one: the 1-D kernel takes the 17, the 2-D copy is left alone */
	for (unsigned i = 0; i < 17; i++)
		ops[i] = rwt_copy_op(BUF_S + 0x100 * i, BUF_D + 0x100 * i, 32, STREAM_A);
	ops[17] = split_op(0, STREAM_A);
	p = run(ops, 18, buf, sizeof(buf));
	assert_non_null(strstr(buf, "batch_copy(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16) op(17) | "));
	assert_int_equal(p->nnodes, 2);
	assert_int_equal(p->nodes[0].kind, RW_NODE_BATCH_COPY);
	rw_plan_destroy(p);
	/* 10 1-D copies then 10 2-D ones: 16 (the pitched kernel's limit) + 4 */
	for (unsigned i = 0; i < 10; i++)
		ops[i] = rwt_copy_op(BUF_S + 0x100 * i, BUF_D + 0x100 * i, 32, STREAM_A);
	for (unsigned h = 0; h < 10; h++)
		ops[10 + h] = rwt_copy2d_op(BUF_QKV + h * 16, 20 * 16, BUF_H + h * HEAD_STRIDE, 16, 16, 4, STREAM_A);
	p = run(ops, 20, buf, sizeof(buf));
	assert_non_null(strstr(buf, "batch_copy2d(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15) batch_copy2d(16,17,18,19) | "));
	rw_plan_destroy(p);
}

/* ------------------------------------------------------------------ negative */

static void test_overlapping_columns(void **state)
{
	/* head 1's destination columns [32, 96) meet head 0's [0, 64) */
	struct cap_op ops[2] = { glue_op(0, STREAM_A),
				 rwt_copy2d_op(BUF_H + HEAD_STRIDE, HW, BUF_O + HW / 2, DM, HW, T, STREAM_A) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
	/* by one column */
	ops[1] = rwt_copy2d_op(BUF_H + HEAD_STRIDE, HW, BUF_O + HW - 1, DM, HW, T, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	/* wrapping onto column 0 of the next row */
	ops[1] = rwt_copy2d_op(BUF_H + HEAD_STRIDE, HW, BUF_O + DM - HW / 2, DM, HW, T, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	/* the same columns one row down */
	ops[1] = rwt_copy2d_op(BUF_H + HEAD_STRIDE, HW, BUF_O + DM, DM, HW, T, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	/* a different pitch whose rows miss head 0's but whose span meets it: by span, left alone */
	ops[1] = rwt_copy2d_op(BUF_H + HEAD_STRIDE, HW, BUF_O + HW, 2 * DM, HW, T / 2, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	/* the near miss: the columns right after head 0's batch */
	ops[1] = rwt_copy2d_op(BUF_H + HEAD_STRIDE, HW, BUF_O + HW, DM, HW, T, STREAM_A);
	{
		char buf[1024];
		struct rw_plan *p = run(ops, 2, buf, sizeof(buf));

		assert_string_equal(buf, "batch_copy2d(0,1) | pitched_dtod(0,0) pure(0,0) pitched_dtod(1,1) pure(1,1) "
					 "same_stream(0,1) independent(0,1)");
		rw_plan_destroy(p);
	}
}

static void test_reads_written_rows(void **state)
{
	/* copy 1 (2-D) reads columns [32, 48) of rows 2 and 3 of what copy 0 writes */
	struct cap_op ops[2] = { glue_op(0, STREAM_A),
				 rwt_copy2d_op(BUF_O + 2 * DM + 32, DM, BUF_D, 16, 16, 2, STREAM_A) };
	char buf[1024];
	struct rw_plan *p;

	(void)state;
	rwt_expect_identity(run, ops, 2);
	/* 1-D: 8 bytes across the end of head 0's row 5 */
	ops[1] = rwt_copy_op(BUF_O + 5 * DM + HW - 4, BUF_D, 8, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	/* copy 0 reads what copy 1 then writes (the other way round) */
	ops[1] = rwt_copy_op(BUF_S, BUF_H + 100, 8, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	/* the near misses: the gap after row 5 (columns [64, 256)), and another pitch-DM column block */
	ops[1] = rwt_copy_op(BUF_O + 5 * DM + HW, BUF_D, DM - HW, STREAM_A);
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "batch_copy2d(0,1) | pitched_dtod(0,0) pure(0,0) linear_dtod(1,1) pure(1,1) "
				 "same_stream(0,1) independent(0,1)");
	rw_plan_destroy(p);
	ops[1] = rwt_copy2d_op(BUF_O + 2 * DM + HW, DM, BUF_D, 16, 16, 6, STREAM_A);
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "batch_copy2d(0,1) | pitched_dtod(0,0) pure(0,0) pitched_dtod(1,1) pure(1,1) "
				 "same_stream(0,1) independent(0,1)");
	rw_plan_destroy(p);
}

/* ------------------------------------------------------------------ random windows */

#define AREA 1024 /* bytes every random copy reads and writes in, so that they often meet */

/* The bytes one side of a copy touches, marked in set (offsets from BUF_S). */
static void mark_side(unsigned char *set, uint64_t first, size_t pitch, size_t width, size_t height)
{
	for (size_t r = 0; r < height; r++)
		for (size_t c = 0; c < width; c++) {
			uint64_t o = first - BUF_S + r * pitch + c;

			assert_true(o < 2 * AREA);
			set[o] = 1;
		}
}

static bool sets_meet(const unsigned char *x, const unsigned char *y)
{
	for (size_t i = 0; i < 2 * AREA; i++)
		if (x[i] && y[i])
			return true;
	return false;
}

static uint64_t rnd(uint64_t *s, uint64_t lo, uint64_t hi)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return lo + (*s * 0x2545f4914f6cdd1dull) % (hi - lo + 1);
}

/* Random windows of 2-6 small copies (2-D of random pitches, some shared, and 1-D) in one area:
 * every batch the rule makes must hold copies that truly share no byte written (by their byte
 * sets), each reading nothing it writes; the guards hold on the bindings it was made from and
 * the table is the copies'. */
static void test_random_windows(void **state)
{
	static unsigned char rset[6][2 * AREA], wset[6][2 * AREA];
	uint64_t seed = 0x2d2d2d2dull, batched = 0, members = 0;

	(void)state;
	for (int round = 0; round < 20000; round++) {
		struct cap_op ops[6];
		const struct cap_op *ptr[6];
		uint32_t n = (uint32_t)rnd(&seed, 2, 6);
		size_t shared_pitch = (size_t)rnd(&seed, 2, 64);
		char buf[8192];
		struct rw_plan *p;

		for (uint32_t i = 0; i < n; i++) {
			size_t w = (size_t)rnd(&seed, 1, 32), h = (size_t)rnd(&seed, 1, 6), sp, dp;

			if (rnd(&seed, 0, 3) == 0) {
				w = (size_t)rnd(&seed, 1, 96);
				ops[i] = rwt_copy_op(BUF_S + rnd(&seed, 0, AREA - 1), BUF_S + rnd(&seed, 0, AREA - 1),
						     w, STREAM_A);
				h = 1;
				sp = dp = w;
			} else {
				if (w >= shared_pitch)
					w = shared_pitch > 1 ? shared_pitch - 1 : 1;
				sp = rnd(&seed, 0, 1) ? shared_pitch : (size_t)rnd(&seed, w, 64);
				dp = rnd(&seed, 0, 1) ? shared_pitch : (size_t)rnd(&seed, w, 64);
				if (sp < w)
					sp = w;
				if (dp < w)
					dp = w;
				ops[i] = rwt_copy2d_op(BUF_S + rnd(&seed, 0, AREA - 1), sp,
						       BUF_S + rnd(&seed, 0, AREA - 1), dp, w, h, STREAM_A);
			}
			memset(rset[i], 0, sizeof(rset[i]));
			memset(wset[i], 0, sizeof(wset[i]));
			mark_side(rset[i], ops[i].u.memcpy.src_first, sp, w, h);
			mark_side(wset[i], ops[i].u.memcpy.dst_first, dp, w, h);
		}
		p = run(ops, n, buf, sizeof(buf));
		rwt_ptrs(ops, n, ptr);
		for (uint32_t k = 0; k < p->nnodes; k++) {
			const struct rw_plan_node *node = &p->nodes[k];
			struct cap_op out;

			if (node->kind == RW_NODE_OP)
				continue;
			assert_true(node->kind == RW_NODE_BATCH_COPY || node->kind == RW_NODE_BATCH_COPY2D);
			/* batch-copy alone: every member is one original copy */
			for (uint32_t x = 0; x < node->nmembers; x++) {
				assert_int_equal(node->members[x].kind, RW_NODE_OP);
				assert_int_equal(node->members[x].first, x);
				assert_int_equal(node->members[x].count, 1);
			}
			assert_true(node->nmembers == 0 || node->nmembers == node->norig);
			batched++;
			members += node->norig;
			for (uint32_t x = 0; x < node->norig; x++) {
				uint32_t a = node->orig[x];

				if (sets_meet(rset[a], wset[a]))
					fail_msg("round %d: copy %u reads what it writes, batched: %s", round, a, buf);
				for (uint32_t y = x + 1; y < node->norig; y++) {
					uint32_t b = node->orig[y];

					if (sets_meet(wset[a], wset[b]) || sets_meet(wset[a], rset[b]) || sets_meet(rset[a], wset[b]))
						fail_msg("round %d: copies %u and %u meet, batched: %s", round, a, b, buf);
				}
			}
			assert_int_equal(rw_plan_node_op(p, k, ptr, &out), 0);
			if (node->kind == RW_NODE_BATCH_COPY2D) {
				struct rw_batch_copy2d_range w[RW_BATCH2D_MAX];

				for (uint32_t x = 0; x < node->norig; x++) {
					const struct cap_memcpy *m = &ops[node->orig[x]].u.memcpy;
					bool rows = m->d.Height > 1;

					w[x] = (struct rw_batch_copy2d_range){ m->dst_first, m->src_first, m->d.WidthInBytes,
									       m->d.Height, rows ? m->d.dstPitch : m->d.WidthInBytes,
									       rows ? m->d.srcPitch : m->d.WidthInBytes };
				}
				check_table(&out, w, node->norig);
			}
		}
		assert_true(rw_plan_guards_hold(p, ptr, NULL));
		rw_plan_destroy(p);
	}
	/* the windows exercise the rule: many batches, many copies in them */
	assert_true(batched > 2000);
	assert_true(members > 2 * batched);
}

static void test_other_stream(void **state)
{
	struct cap_op ops[2] = { split_op(0, STREAM_A), split_op(1, STREAM_B) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
	ops[1] = rwt_copy_op(BUF_S, BUF_D, 100, STREAM_B);
	rwt_expect_identity(run, ops, 2);
}

static void test_not_batchable(void **state)
{
	struct cap_op ops[3] = { split_op(0, STREAM_A), split_op(1, STREAM_A), split_op(2, STREAM_A) };

	(void)state;
	/* a 3-D copy (two layers of rows): no batch may hold it, and none is left of the others */
	ops[1].api = DRV_ID_cuMemcpy3DAsync_v2;
	ops[1].u.memcpy.d.Depth = 2;
	ops[1].u.memcpy.d.srcHeight = T;
	ops[1].u.memcpy.d.dstHeight = T;
	ops[1].u.memcpy.bytes = HW * T * 2;
	ops[1].u.memcpy.src_span = (T + T - 1) * 3 * DM + HW;
	ops[1].u.memcpy.dst_span = (2 * T - 1) * HW + HW;
	rwt_expect_identity(run, ops, 3);
	/* two 3-D copies */
	ops[0] = ops[1];
	ops[0].u.memcpy.dst_first = ops[0].u.memcpy.d.dstDevice = BUF_D;
	rwt_expect_identity(run, ops, 2);
	/* a synchronous 2-D copy */
	ops[0] = split_op(0, STREAM_A);
	ops[1] = split_op(1, STREAM_A);
	ops[1].api = DRV_ID_cuMemcpy2D_v2;
	rwt_expect_identity(run, ops, 2);
	/* a destination pitch below the width (rows that overlap): not a copy the rule takes */
	ops[1] = split_op(1, STREAM_A);
	rwt_copy2d_set(&ops[1], BUF_QKV + HW, 3 * DM, BUF_H + HEAD_STRIDE, HW / 2, HW, T);
	rwt_expect_identity(run, ops, 2);
	/* a 2-D copy reading its own destination's columns (not pure) */
	ops[1] = rwt_copy2d_op(BUF_O + 8, DM, BUF_O, DM, HW, T, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	/* larger than 4 MiB */
	ops[1] = rwt_copy2d_op(BUF_QKV + HW, 3 * DM, BUF_H + HEAD_STRIDE, HW, HW, (4u << 20) / HW + 1, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	/* a host-side copy */
	ops[1] = split_op(1, STREAM_A);
	ops[1].u.memcpy.dir = CAP_DIR_DTOH;
	ops[1].u.memcpy.d.dstMemoryType = CU_MEMORYTYPE_HOST;
	rwt_expect_identity(run, ops, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head_split),          cmocka_unit_test(test_head_glue),
		cmocka_unit_test(test_mixed),               cmocka_unit_test(test_twenty),
		cmocka_unit_test(test_overlapping_columns), cmocka_unit_test(test_reads_written_rows),
		cmocka_unit_test(test_other_stream),        cmocka_unit_test(test_not_batchable),
		cmocka_unit_test(test_random_windows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
