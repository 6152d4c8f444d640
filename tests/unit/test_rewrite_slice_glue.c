/* test_rewrite_slice_glue.c - golden and negative tests of the slice-glue rule on small hand-made
 * windows: the plan it makes (one-line form, derived copy), guards failing when bindings move,
 * and the near misses it must leave alone. tests layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <string.h>

#include "common/errors.h"
#include "rw_test.h"

extern const struct rw_rule rw_rule_slice_glue;
extern const struct rw_rule rw_rule_coalesce;

#define BUF_S 0x7f0000000000ull /* a source buffer */
#define BUF_D 0x7f0001000000ull /* a destination buffer */
#define BUF_P 0x7f0002000000ull /* the pieces: 0x10000 apart */

/* Rewrite ops[0..n) with slice-glue alone; the plan's one-line form into buf. */
static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	const struct rw_rule *rules[1] = { &rw_rule_slice_glue };

	return rwt_run(ops, n, rules, 1, buf, cap);
}

/* k slices of 32+8i bytes of BUF_S into separate pieces, then glued in order into BUF_D. */
static uint32_t pattern(struct cap_op *ops, uint32_t k)
{
	uint64_t off = 0;

	for (uint32_t i = 0; i < k; i++) {
		uint64_t n = 32 + 8 * i;

		ops[i] = rwt_copy_op(BUF_S + off, BUF_P + 0x10000 * i, n, STREAM_A);
		ops[k + i] = rwt_copy_op(BUF_P + 0x10000 * i, BUF_D + 16 + off, n, STREAM_A);
		off += n;
	}
	return 2 * k;
}

/* ------------------------------------------------------------------ golden */

static void test_two_slices(void **state)
{
	struct cap_op ops[4];
	const struct cap_op *ptr[4];
	struct cap_op out;
	char buf[2048];
	struct rw_plan *p;

	(void)state;
	pattern(ops, 2);
	p = run(ops, 4, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) op(1) forward(2,3) | linear_dtod(0,0) linear_dtod(1,1) same_stream(0,1) "
				 "linear_dtod(2,2) same_stream(0,2) linear_dtod(3,3) same_stream(0,3) "
				 "forwards(0,2) src_abuts(0,1) dst_abuts(2,3) forwards(1,3) misses(0,0) misses(0,2) "
				 "misses(0,1) misses(0,3) misses(1,0) misses(1,2) misses(1,1) misses(1,3)");
	assert_int_equal(p->nstats, 1);
	assert_string_equal(p->stats[0].rule, "slice-glue");
	assert_string_equal(p->nodes[2].rule, "slice-glue");
	rwt_ptrs(ops, 4, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.u.memcpy.d.srcDevice, BUF_S);
	assert_int_equal(out.u.memcpy.d.dstDevice, BUF_P);
	assert_int_equal(rw_plan_node_op(p, 2, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_MEMCPY);
	assert_int_equal(out.u.memcpy.d.srcDevice, BUF_S);
	assert_int_equal(out.u.memcpy.src_first, BUF_S);
	assert_int_equal(out.u.memcpy.d.dstDevice, BUF_D + 16);
	assert_int_equal(out.u.memcpy.dst_first, BUF_D + 16);
	assert_int_equal(out.u.memcpy.bytes, 72);
	assert_int_equal(out.u.memcpy.d.WidthInBytes, 72);
	assert_int_equal(rw_plan_node_op(p, 3, ptr, &out), -CF_EINVAL);
	rw_plan_destroy(p);
}

/* The e2e program's shape: 8 slices, 8 glue copies -> 8 slices + 1 copy; guards fail on moves. */
static void test_eight_slices(void **state)
{
	struct cap_op ops[17];
	const struct cap_op *ptr[17];
	struct cap_op out, tmp;
	char buf[16384];
	struct rw_plan *p;
	struct rw_run *r;
	uint32_t failed = 999;

	(void)state;
	pattern(ops, 8);
	ops[16] = rwt_memset_op(BUF_D, 16, STREAM_A);
	p = run(ops, 17, buf, sizeof(buf));
	assert_int_equal(p->nnodes, 10);
	{
		static const char head[] = "op(0) op(1) op(2) op(3) op(4) op(5) op(6) op(7) "
					   "forward(8,9,10,11,12,13,14,15) op(16) |";

		assert_memory_equal(buf, head, sizeof(head) - 1);
	}
	assert_int_equal(p->nodes[8].kind, RW_NODE_FORWARD);
	rwt_ptrs(ops, 17, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 8, ptr, &out), 0);
	assert_int_equal(out.u.memcpy.d.srcDevice, BUF_S);
	assert_int_equal(out.u.memcpy.d.dstDevice, BUF_D + 16);
	assert_int_equal(out.u.memcpy.bytes, 8 * 32 + 8 * 28);
	/* a piece moves: forwards fails */
	ops[13].u.memcpy.src_first += 0x100;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_FORWARDS);
	ops[13].u.memcpy.src_first -= 0x100;
	/* C moves onto A: misses fails */
	for (uint32_t t = 8; t < 16; t++)
		ops[t].u.memcpy.dst_first = ops[t].u.memcpy.dst_first - BUF_D + BUF_S + 64;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_MISSES);
	rw_plan_destroy(p);
	/* the run layout replay uses: the forward node heads op 8, ops 9..15 are empty nodes */
	pattern(ops, 8);
	rwt_ptrs(ops, 17, ptr);
	{
		struct rw_config cfg = { 1, "-coalesce", NULL, NULL };

		r = rw_run_create(ptr, 17, &cfg);
	}
	assert_non_null(r);
	assert_true(rw_run_guards_hold(r, ops));
	assert_ptr_equal(rw_run_op(r, 0, ops, &tmp), &ops[0]);
	assert_int_equal(rw_run_op(r, 8, ops, &tmp)->u.memcpy.d.srcDevice, BUF_S);
	assert_null(rw_run_op(r, 9, ops, &tmp));
	assert_true(rw_run_is_folded(r, 15));
	assert_false(rw_run_is_folded(r, 16));
	rw_run_destroy(r);
}

/* Registered at level 1 and with coalesce the pattern still folds the same way. */
static void test_registered(void **state)
{
	struct cap_op ops[16];
	const struct cap_op *ptr[16];
	struct rw_config cfg0 = { 0, NULL, NULL, NULL }, cfg1 = { 1, NULL, NULL, NULL };
	struct rw_plan *p;

	(void)state;
	assert_int_equal(rw_rule_slice_glue.level, 1);
	assert_true(rw_rule_is_enabled(&rw_rule_slice_glue, &cfg1));
	assert_false(rw_rule_is_enabled(&rw_rule_slice_glue, &cfg0));
	pattern(ops, 8);
	rwt_ptrs(ops, 16, ptr);
	p = rw_rewrite(ptr, 16, NULL, &cfg1, NULL, 0);
	assert_non_null(p);
	assert_int_equal(p->nnodes, 9);
	rw_plan_destroy(p);
	p = rw_rewrite(ptr, 16, NULL, &cfg0, NULL, 0);
	assert_true(rw_plan_is_identity(p));
	rw_plan_destroy(p);
}

/* ------------------------------------------------------------------ negative */

static void test_glue_order(void **state)
{
	struct cap_op ops[6], t;

	(void)state;
	pattern(ops, 3);
	t = ops[4]; /* glue pieces 0, 2, 1 */
	ops[4] = ops[5];
	ops[5] = t;
	rwt_expect_identity(run, ops, 6);
}

static void test_piece_bytes(void **state)
{
	struct cap_op ops[6];

	(void)state;
	pattern(ops, 3);
	ops[4].u.memcpy.bytes -= 8; /* glues fewer bytes than the slice wrote (dst still abuts) */
	ops[4].u.memcpy.d.WidthInBytes -= 8;
	ops[5].u.memcpy.dst_first -= 8;
	ops[5].u.memcpy.d.dstDevice -= 8;
	rwt_expect_identity(run, ops, 6);
}

static void test_op_between(void **state)
{
	struct cap_op ops[7];

	(void)state;
	pattern(ops, 3);
	ops[6] = ops[5];
	ops[5] = ops[4];
	ops[4] = ops[3];
	ops[3] = rwt_memset_op(BUF_P + 0x10000, 4, STREAM_A); /* writes piece 1 between P and G */
	rwt_expect_identity(run, ops, 7);
	ops[3] = rwt_copy_op(BUF_S, BUF_S + 0x1000, 4, STREAM_A); /* even an unrelated copy */
	rwt_expect_identity(run, ops, 7);
}

static void test_other_stream(void **state)
{
	struct cap_op ops[6];

	(void)state;
	pattern(ops, 3);
	ops[4].stream = STREAM_B;
	ops[4].stream_slot = 1;
	rwt_expect_identity(run, ops, 6);
}

static void test_overlap_c_a(void **state)
{
	struct cap_op ops[6];

	(void)state;
	pattern(ops, 3);
	for (uint32_t t = 3; t < 6; t++) { /* C starts inside A */
		ops[t].u.memcpy.dst_first = ops[t].u.memcpy.dst_first - BUF_D + BUF_S;
		ops[t].u.memcpy.d.dstDevice = ops[t].u.memcpy.dst_first;
	}
	rwt_expect_identity(run, ops, 6);
}

static void test_overlap_pieces(void **state)
{
	struct cap_op ops[6];

	(void)state;
	pattern(ops, 3);
	/* piece 1 starts inside piece 0 */
	ops[1].u.memcpy.dst_first = BUF_P + 16;
	ops[1].u.memcpy.d.dstDevice = BUF_P + 16;
	ops[4].u.memcpy.src_first = BUF_P + 16;
	ops[4].u.memcpy.d.srcDevice = BUF_P + 16;
	rwt_expect_identity(run, ops, 6);
	/* a piece inside A */
	pattern(ops, 3);
	ops[2].u.memcpy.dst_first = BUF_S + 8;
	ops[5].u.memcpy.src_first = BUF_S + 8;
	rwt_expect_identity(run, ops, 6);
}

static void test_src_not_abutting(void **state)
{
	struct cap_op ops[6];

	(void)state;
	pattern(ops, 3);
	ops[1].u.memcpy.src_first += 8;
	rwt_expect_identity(run, ops, 6);
}

static void test_not_async(void **state)
{
	struct cap_op ops[6];

	(void)state;
	pattern(ops, 3);
	ops[5].api = DRV_ID_cuMemcpyDtoD_v2;
	rwt_expect_identity(run, ops, 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_slices),     cmocka_unit_test(test_eight_slices),
		cmocka_unit_test(test_registered),     cmocka_unit_test(test_glue_order),
		cmocka_unit_test(test_piece_bytes),    cmocka_unit_test(test_op_between),
		cmocka_unit_test(test_other_stream),   cmocka_unit_test(test_overlap_c_a),
		cmocka_unit_test(test_overlap_pieces), cmocka_unit_test(test_src_not_abutting),
		cmocka_unit_test(test_not_async),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
