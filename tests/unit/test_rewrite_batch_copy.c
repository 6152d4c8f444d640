/* test_rewrite_batch_copy.c - golden and negative tests of the batch-copy rule on small hand-made
 * windows: the batch nodes it makes, the derived launch of cufold's batch kernels (function, grid,
 * table bytes), guards failing when bindings move, and the near misses it must leave alone.
 * tests layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <string.h>

#include "common/errors.h"
#include "rw_test.h"

extern const struct rw_rule rw_rule_batch_copy;
extern const struct rw_rule rw_rule_coalesce;

#define BUF_S 0x7f0000000000ull /* a source buffer */
#define BUF_D 0x7f0001000000ull /* a destination buffer */
#define BUF_K 0x7f0002000000ull /* what an unrelated kernel writes */

/* A `fill` kernel (builtin card: x ptr w n*4, v f32, n i32) writing n floats at x. */
static const struct cap_func fill_info = RWT_FUNC(0xf111, 1, "fill", RWT_LAYOUT_FILL);
static unsigned char fill_params[16];

static struct cap_op fill_op(uint64_t x, int32_t n, CUstream s)
{
	rwt_pack_fill(&fill_info, fill_params, x, 1.0f, n);
	return rwt_kernel_op(&fill_info, fill_params, rwt_grid((uint32_t)n, 256), 256, s);
}

/* Rewrite ops[0..n) with exactly rules[0..nrules), cufold's kernels resolved by the fake
 * resolver; the plan's one-line form into buf. */
static struct rw_plan *run_rules(struct cap_op *ops, uint32_t n, const struct rw_rule *const *rules, size_t nrules,
				 char *buf, size_t cap)
{
	rw__set_kernel_resolver(rwt_fake_resolver);
	return rwt_run(ops, n, rules, nrules, buf, cap);
}

/* Batch-copy alone. */
static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	const struct rw_rule *rules[1] = { &rw_rule_batch_copy };

	return run_rules(ops, n, rules, 1, buf, cap);
}

/* The copy table of a derived launch holds exactly want[0..n), the rest zero. */
static void check_copy_table(const struct cap_op *out, const struct rw_batch_copy_range *want, uint32_t n)
{
	struct rw_batch_copy_table t;

	assert_int_equal(sizeof(t), 776);
	memcpy(&t, out->u.kernel.params, sizeof(t));
	assert_int_equal(t.count, n);
	assert_int_equal(t.pad, 0);
	for (uint32_t i = 0; i < RW_BATCH_MAX; i++) {
		struct rw_batch_copy_range zero = { 0, 0, 0 }, w = i < n ? want[i] : zero;

		assert_int_equal(t.r[i].dst, w.dst);
		assert_int_equal(t.r[i].src, w.src);
		assert_int_equal(t.r[i].bytes, w.bytes);
	}
}

/* ------------------------------------------------------------------ golden */

static void test_three_copies(void **state)
{
	struct cap_op ops[3] = { rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 0x1000, BUF_D + 0x1000, 100, STREAM_A),
				 rwt_copy_op(BUF_S + 0x2000, BUF_D + 0x2000, 8, STREAM_A) };
	const struct cap_op *ptr[3];
	struct cap_op out;
	char buf[2048];
	struct rw_plan *p = run(ops, 3, buf, sizeof(buf));
	uint32_t failed = 999;

	(void)state;
	assert_string_equal(buf, "batch_copy(0,1,2) | linear_dtod(0,0) pure(0,0) linear_dtod(1,1) pure(1,1) "
				 "same_stream(0,1) independent(0,1) linear_dtod(2,2) pure(2,2) same_stream(0,2) "
				 "independent(0,2) independent(1,2)");
	assert_int_equal(p->nnodes, 1);
	assert_int_equal(p->nodes[0].kind, RW_NODE_BATCH_COPY);
	assert_string_equal(p->nodes[0].rule, "batch-copy");
	assert_int_equal(p->nstats, 1);
	assert_string_equal(p->stats[0].rule, "batch-copy");
	assert_int_equal(p->stats[0].count, 1);
	rwt_ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	rwt_check_batch_launch(&out, RW_K_BATCH_COPY, 1, 3, STREAM_A);
	{
		struct rw_batch_copy_range want[3] = { { BUF_D, BUF_S, 64 },
						       { BUF_D + 0x1000, BUF_S + 0x1000, 100 },
						       { BUF_D + 0x2000, BUF_S + 0x2000, 8 } };

		check_copy_table(&out, want, 3);
	}
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), -CF_EINVAL);

	/* other bindings, still independent: the guards hold and the table follows them */
	rwt_copy_move(&ops[1], BUF_D + 0x5000, BUF_S + 0x5000);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	{
		struct rw_batch_copy_range want[3] = { { BUF_D, BUF_S, 64 },
						       { BUF_S + 0x5000, BUF_D + 0x5000, 100 },
						       { BUF_D + 0x2000, BUF_S + 0x2000, 8 } };

		check_copy_table(&out, want, 3);
	}

	/* copy 2 now writes into what copy 0 writes: not independent */
	rwt_copy_move(&ops[1], BUF_S + 0x1000, BUF_D + 0x1000);
	rwt_copy_move(&ops[2], BUF_S + 0x2000, BUF_D + 60);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 0);
	assert_int_equal(p->guards[failed].b, 2);
	/* copy 2 reads what copy 1 writes */
	rwt_copy_move(&ops[2], BUF_D + 0x1000 + 96, BUF_D + 0x2000);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 1);
	assert_int_equal(p->guards[failed].b, 2);
	/* copy 1 reads its own destination */
	rwt_copy_move(&ops[2], BUF_S + 0x2000, BUF_D + 0x2000);
	rwt_copy_move(&ops[1], BUF_S + 0x1000, BUF_S + 0x1000 + 50);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_PURE);
	assert_int_equal(p->guards[failed].a, 1);
	/* copy 1 is now synchronous */
	rwt_copy_move(&ops[1], BUF_S + 0x1000, BUF_D + 0x1000);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	ops[1].api = DRV_ID_cuMemcpyDtoD_v2;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_LINEAR_DTOD);
	rw_plan_destroy(p);
}

/* grid.x: ceil(longest range / 4096) blocks, at most 1024. */
static void test_grid(void **state)
{
	struct cap_op ops[2] = { rwt_copy_op(BUF_S, BUF_D, 100, STREAM_A),
				 rwt_copy_op(BUF_S + 0x10000, BUF_D + 0x10000, 8193, STREAM_A) };
	const struct cap_op *ptr[2];
	struct cap_op out;
	char buf[1024];
	struct rw_plan *p = run(ops, 2, buf, sizeof(buf));

	(void)state;
	rwt_ptrs(ops, 2, ptr);
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	rwt_check_batch_launch(&out, RW_K_BATCH_COPY, 3, 2, STREAM_A);
	/* exactly 4096: one block */
	ops[1].u.memcpy.bytes = ops[1].u.memcpy.d.WidthInBytes = 4096;
	ops[1].u.memcpy.src_span = ops[1].u.memcpy.dst_span = 4096;
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	rwt_check_batch_launch(&out, RW_K_BATCH_COPY, 1, 2, STREAM_A);
	rw_plan_destroy(p);

	/* the largest range batched (4 MiB): 1024 blocks, the cap */
	ops[0] = rwt_copy_op(BUF_S, BUF_D, 4u << 20, STREAM_A);
	ops[1] = rwt_copy_op(BUF_S + (8u << 20), BUF_D + (8u << 20), 16, STREAM_A);
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "batch_copy(0,1) | linear_dtod(0,0) pure(0,0) linear_dtod(1,1) pure(1,1) "
				 "same_stream(0,1) independent(0,1)");
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	rwt_check_batch_launch(&out, RW_K_BATCH_COPY, 1024, 2, STREAM_A);
	rw_plan_destroy(p);
}

static void test_four_memsets(void **state)
{
	struct cap_op ops[4] = { rwt_memset_elems_op(BUF_D, 100, 1, 0x11, STREAM_A),
				 rwt_memset_elems_op(BUF_D + 0x1000, 50, 2, 0x2222, STREAM_A),
				 rwt_memset_elems_op(BUF_D + 0x2000, 2000, 4, 0x3f800000, STREAM_A),
				 rwt_memset_elems_op(BUF_D + 0x4000, 3, 1, 0, STREAM_A) };
	const struct cap_op *ptr[4];
	struct rw_batch_memset_table t;
	struct cap_op out;
	char buf[2048];
	struct rw_plan *p = run(ops, 4, buf, sizeof(buf));
	uint32_t failed = 999;

	(void)state;
	/* memsets read nothing: no purity to check */
	assert_string_equal(buf, "batch_set(0,1,2,3) | set_1d(0,0) set_1d(1,1) same_stream(0,1) independent(0,1) "
				 "set_1d(2,2) same_stream(0,2) independent(0,2) independent(1,2) set_1d(3,3) "
				 "same_stream(0,3) independent(0,3) independent(1,3) independent(2,3)");
	assert_int_equal(p->nodes[0].kind, RW_NODE_BATCH_SET);
	rwt_ptrs(ops, 4, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	/* the longest range: 2000 * 4 = 8000 bytes -> 2 blocks */
	rwt_check_batch_launch(&out, RW_K_BATCH_MEMSET, 2, 4, STREAM_A);
	assert_int_equal(sizeof(t), 776);
	memcpy(&t, out.u.kernel.params, sizeof(t));
	assert_int_equal(t.count, 4);
	assert_int_equal(t.r[0].dst, BUF_D);
	assert_int_equal(t.r[0].bytes, 100);
	assert_int_equal(t.r[0].value, 0x11);
	assert_int_equal(t.r[0].elem_size, 1);
	assert_int_equal(t.r[1].dst, BUF_D + 0x1000);
	assert_int_equal(t.r[1].bytes, 100);
	assert_int_equal(t.r[1].value, 0x2222);
	assert_int_equal(t.r[1].elem_size, 2);
	assert_int_equal(t.r[2].dst, BUF_D + 0x2000);
	assert_int_equal(t.r[2].bytes, 8000);
	assert_int_equal(t.r[2].value, 0x3f800000);
	assert_int_equal(t.r[2].elem_size, 4);
	assert_int_equal(t.r[3].dst, BUF_D + 0x4000);
	assert_int_equal(t.r[3].bytes, 3);
	assert_int_equal(t.r[3].value, 0);
	assert_int_equal(t.r[3].elem_size, 1);
	for (uint32_t i = 4; i < RW_BATCH_MAX; i++) {
		assert_int_equal(t.r[i].dst, 0);
		assert_int_equal(t.r[i].bytes, 0);
	}
	/* memset 3 grows into memset 2 (writes meet): the guard naming them fails */
	ops[2].u.memset.width = 0x2000 / 4 + 4;
	ops[2].u.memset.pitch = ops[2].u.memset.width * 4;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 2);
	assert_int_equal(p->guards[failed].b, 3);
	rw_plan_destroy(p);
}

/* 40 copies: a table holds 32 ranges, so two launches (32 + 8). */
static void test_forty_copies(void **state)
{
	struct cap_op ops[40];
	const struct cap_op *ptr[40];
	struct cap_op out;
	char buf[65536];
	struct rw_plan *p;

	(void)state;
	for (uint32_t i = 0; i < 40; i++)
		ops[i] = rwt_copy_op(BUF_S + 0x1000 * i, BUF_D + 0x1000 * i, 16 + i, STREAM_A);
	p = run(ops, 40, buf, sizeof(buf));
	{
		static const char head[] = "batch_copy(0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,"
					   "25,26,27,28,29,30,31) batch_copy(32,33,34,35,36,37,38,39) | ";

		assert_memory_equal(buf, head, sizeof(head) - 1);
	}
	assert_int_equal(p->nnodes, 2);
	assert_int_equal(p->stats[0].count, 2);
	/* per member j of a batch: linear_dtod, pure, then same_stream and independent with each
	 * earlier member: 2 + 31*3 + 31*32/2 for the first, 2 + 7*3 + 7*8/2 for the second */
	assert_int_equal(p->nguards, 591 + 51);
	assert_non_null(strstr(buf, " independent(30,31) linear_dtod(32,32) pure(32,32) linear_dtod(33,33)"));
	assert_null(strstr(buf, "(31,32)"));
	rwt_ptrs(ops, 40, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	rwt_check_batch_launch(&out, RW_K_BATCH_COPY, 1, 32, STREAM_A);
	{
		struct rw_batch_copy_range want[32];

		for (uint32_t i = 0; i < 32; i++)
			want[i] = (struct rw_batch_copy_range){ BUF_D + 0x1000 * i, BUF_S + 0x1000 * i, 16 + i };
		check_copy_table(&out, want, 32);
	}
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	rwt_check_batch_launch(&out, RW_K_BATCH_COPY, 1, 8, STREAM_A);
	{
		struct rw_batch_copy_range want[8];

		for (uint32_t i = 0; i < 8; i++)
			want[i] = (struct rw_batch_copy_range){ BUF_D + 0x1000 * (32 + i), BUF_S + 0x1000 * (32 + i),
								16 + 32 + i };
		check_copy_table(&out, want, 8);
	}
	rw_plan_destroy(p);
}

/* With coalesce first, an abutting pair becomes one member: ONE range of the table. */
static void test_coalesced_member(void **state)
{
	struct cap_op ops[4] = { rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 64, BUF_D + 64, 32, STREAM_A),
				 rwt_copy_op(BUF_S + 0x1000, BUF_D + 0x1000, 16, STREAM_A),
				 rwt_copy_op(BUF_S + 0x2000, BUF_D + 0x3000, 8, STREAM_A) };
	const struct rw_rule *rules[2] = { &rw_rule_batch_copy, &rw_rule_coalesce };
	const struct cap_op *ptr[4];
	struct cap_op out;
	char buf[4096];
	struct rw_plan *p = run_rules(ops, 4, rules, 2, buf, sizeof(buf));
	uint32_t failed = 999;

	(void)state;
	/* coalesce's guards on the pair, then batch-copy's naming the pair by its snapshot */
	assert_string_equal(buf, "batch_copy(copy(0,1),2,3) | linear_dtod(0,0) linear_dtod(1,1) same_stream(0,1) "
				 "src_abuts(0,1) dst_abuts(0,1) disjoint(0,1) linear_dtod(copy(0,1),copy(0,1)) "
				 "pure(copy(0,1),copy(0,1)) linear_dtod(2,2) pure(2,2) same_stream(copy(0,1),2) "
				 "independent(copy(0,1),2) linear_dtod(3,3) pure(3,3) same_stream(copy(0,1),3) "
				 "independent(copy(0,1),3) independent(2,3)");
	assert_int_equal(p->nstats, 2);
	assert_string_equal(p->stats[0].rule, "coalesce");
	assert_string_equal(p->stats[1].rule, "batch-copy");
	assert_int_equal(p->nnodes, 1);
	assert_int_equal(p->nodes[0].kind, RW_NODE_BATCH_COPY);
	assert_int_equal(p->nodes[0].norig, 4);
	assert_int_equal(p->nodes[0].nmembers, 3);
	assert_int_equal(p->nodes[0].members[0].kind, RW_NODE_COPY);
	assert_int_equal(p->nodes[0].members[0].first, 0);
	assert_int_equal(p->nodes[0].members[0].count, 2);
	assert_int_equal(p->nodes[0].members[1].kind, RW_NODE_OP);
	assert_int_equal(p->nodes[0].members[1].first, 2);
	assert_int_equal(p->nodes[0].members[2].first, 3);
	rwt_ptrs(ops, 4, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	rwt_check_batch_launch(&out, RW_K_BATCH_COPY, 1, 3, STREAM_A);
	{
		struct rw_batch_copy_range want[3] = { { BUF_D, BUF_S, 96 },
						       { BUF_D + 0x1000, BUF_S + 0x1000, 16 },
						       { BUF_D + 0x3000, BUF_S + 0x2000, 8 } };

		check_copy_table(&out, want, 3);
	}
	/* copy 2 writes into the tail of the pair (copy 1's part): only the merged range shows it */
	rwt_copy_move(&ops[2], BUF_S + 0x1000, BUF_D + 80);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].na, 0);
	rwt_copy_move(&ops[2], BUF_S + 0x1000, BUF_D + 0x1000);
	/* the pair no longer abuts */
	rwt_copy_move(&ops[1], BUF_S + 72, BUF_D + 64);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_SRC_ABUTS);
	rw_plan_destroy(p);
}

/* ------------------------------------------------------------------ negative */

static void test_dependent(void **state)
{
	/* copy 1 reads what copy 0 wrote */
	struct cap_op ops[2] = { rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A),
				 rwt_copy_op(BUF_D + 32, BUF_D + 0x1000, 16, STREAM_A) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
	/* copy 1 writes what copy 0 read */
	ops[1] = rwt_copy_op(BUF_D + 0x1000, BUF_S + 60, 16, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	/* a memset over what a copy read (mixed kinds never batch either) */
	ops[1] = rwt_memset_elems_op(BUF_S, 4, 1, 0, STREAM_A);
	rwt_expect_identity(run, ops, 2);
}

static void test_overlapping_writes(void **state)
{
	struct cap_op ops[2] = { rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 0x1000, BUF_D + 63, 16, STREAM_A) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
	ops[0] = rwt_memset_elems_op(BUF_D, 64, 1, 1, STREAM_A);
	ops[1] = rwt_memset_elems_op(BUF_D + 60, 1, 4, 2, STREAM_A);
	rwt_expect_identity(run, ops, 2);
}

static void test_self_overlap(void **state)
{
	/* the middle copy reads its own destination: no batch may hold it, and none is left of two */
	struct cap_op ops[3] = { rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 0x1000, BUF_S + 0x1020, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 0x2000, BUF_D + 0x2000, 8, STREAM_A) };

	(void)state;
	rwt_expect_identity(run, ops, 3);
}

static void test_other_stream(void **state)
{
	struct cap_op ops[2] = { rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 0x1000, BUF_D + 0x1000, 16, STREAM_B) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
	ops[0] = rwt_memset_elems_op(BUF_D, 64, 1, 1, STREAM_A);
	ops[1] = rwt_memset_elems_op(BUF_D + 0x1000, 16, 1, 1, STREAM_B);
	rwt_expect_identity(run, ops, 2);
}

/* A kernel between two pairs: two batches, never one across it (even a kernel independent of
 * every copy). */
static void test_kernel_between(void **state)
{
	struct cap_op ops[5] = { rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 0x1000, BUF_D + 0x1000, 16, STREAM_A),
				 fill_op(BUF_K, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 0x2000, BUF_D + 0x2000, 16, STREAM_A),
				 rwt_copy_op(BUF_S + 0x3000, BUF_D + 0x3000, 16, STREAM_A) };
	char buf[2048];
	struct rw_plan *p = run(ops, 5, buf, sizeof(buf));

	(void)state;
	assert_string_equal(buf, "batch_copy(0,1) op(2) batch_copy(3,4) | linear_dtod(0,0) pure(0,0) linear_dtod(1,1) "
				 "pure(1,1) same_stream(0,1) independent(0,1) linear_dtod(3,3) pure(3,3) "
				 "linear_dtod(4,4) pure(4,4) same_stream(3,4) independent(3,4)");
	assert_int_equal(p->nnodes, 3);
	assert_int_equal(p->nodes[1].kind, RW_NODE_OP);
	assert_int_equal(p->nodes[1].orig[0], 2);
	rw_plan_destroy(p);
	/* with one copy on either side: nothing */
	ops[1] = ops[2];
	ops[2] = ops[3];
	rwt_expect_identity(run, ops, 3);
}

static void test_single(void **state)
{
	struct cap_op ops[1] = { rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A) };

	(void)state;
	rwt_expect_identity(run, ops, 1);
	ops[0] = rwt_memset_elems_op(BUF_D, 64, 1, 1, STREAM_A);
	rwt_expect_identity(run, ops, 1);
}

static void test_not_batchable(void **state)
{
	struct cap_op ops[2] = { rwt_copy_op(BUF_S, BUF_D, (4u << 20) + 1, STREAM_A),
				 rwt_copy_op(BUF_S + (8u << 20), BUF_D + (8u << 20), 16, STREAM_A) };

	(void)state;
	rwt_expect_identity(run, ops, 2); /* larger than 4 MiB: the copy engine does it better */
	ops[0] = rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A);
	ops[1].api = DRV_ID_cuMemcpyDtoD_v2; /* synchronous */
	rwt_expect_identity(run, ops, 2);
	ops[1].api = DRV_ID_cuMemcpyDtoDAsync_v2;
	ops[1].u.memcpy.d.Height = 2; /* 2-D */
	rwt_expect_identity(run, ops, 2);
	ops[1] = rwt_memset_elems_op(BUF_D + 0x1000, 16, 1, 1, STREAM_A);
	ops[0] = rwt_memset_elems_op(BUF_D, 16, 1, 1, STREAM_A);
	ops[0].u.memset.height = 2; /* 2-D memset */
	rwt_expect_identity(run, ops, 2);
	ops[0].u.memset.height = 1;
	ops[0].api = DRV_ID_cuMemsetD8_v2; /* synchronous memset */
	rwt_expect_identity(run, ops, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_three_copies),     cmocka_unit_test(test_grid),
		cmocka_unit_test(test_four_memsets),     cmocka_unit_test(test_forty_copies),
		cmocka_unit_test(test_coalesced_member), cmocka_unit_test(test_dependent),
		cmocka_unit_test(test_overlapping_writes), cmocka_unit_test(test_self_overlap),
		cmocka_unit_test(test_other_stream),     cmocka_unit_test(test_kernel_between),
		cmocka_unit_test(test_single),           cmocka_unit_test(test_not_batchable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
