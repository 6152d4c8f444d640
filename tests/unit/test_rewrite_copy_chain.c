/* test_rewrite_copy_chain.c - golden and negative tests of the copy-chain rule on small hand-made
 * windows: the chain node and the copy it derives, with dead-write the scratch copy dropped,
 * guards failing when bindings move, and the near misses (a source or middle buffer written
 * between, overlaps, a read outside the middle buffer) it must leave alone. tests layer
 * (cmocka, libcufold.a). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/errors.h"
#define RWT_HASH_OPS /* ops carry capture's hashes, as the rewriter sees them */
#include "rw_test.h"

extern const struct rw_rule rw_rule_copy_chain;
extern const struct rw_rule rw_rule_dead_write;

#define BUF_A 0x7f0000000000ull /* the original */
#define BUF_B 0x7f0001000000ull /* the middle (scratch) buffer */
#define BUF_C 0x7f0002000000ull /* the final destination */
#define BUF_E 0x7f0003000000ull /* unrelated memory */
#define NB 256                  /* bytes of the first copy */

static const struct cap_func scale_func = RWT_FUNC(0x5001, 1, "scale", RWT_LAYOUT_SCALE);
/* a kernel no card describes: it may read and write anything */
static const struct cap_func mystery_func = RWT_FUNC(0x5002, 2, "mystery", RWT_LAYOUT_MYSTERY);

/* Rewrite ops[0..n) with copy-chain alone, or with dead-write too; the plan's one-line form
 * into buf. */
static struct rw_plan *run_rules(struct cap_op *ops, uint32_t n, bool with_dead, char *buf, size_t cap)
{
	const struct rw_rule *rules[2] = { &rw_rule_copy_chain, &rw_rule_dead_write };

	return rwt_run(ops, n, rules, with_dead ? 2 : 1, buf, cap);
}

static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	return run_rules(ops, n, false, buf, cap);
}

/* ------------------------------------------------------------------ golden */

/* A -> B, then B -> C: the second copy reads A. */
static void test_chain(void **state)
{
	struct cap_op ops[2], out;
	const struct cap_op *ptr[2];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_B, BUF_C, NB, STREAM_A);
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) chain(1<-0) | linear_dtod(0,0) linear_dtod(1,1) within(0,1) disjoint(0,0) "
				 "misses(0,1)");
	assert_int_equal(p->nstats, 1);
	assert_string_equal(p->stats[0].rule, "copy-chain");
	assert_int_equal(p->nodes[1].kind, RW_NODE_CHAIN);
	assert_int_equal(p->nodes[1].from, 0);
	assert_string_equal(p->nodes[1].rule, "copy-chain");
	rwt_ptrs(ops, 2, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.u.memcpy.src_first, BUF_A);
	assert_int_equal(out.u.memcpy.dst_first, BUF_B);
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_MEMCPY);
	assert_int_equal(out.api, DRV_ID_cuMemcpyDtoDAsync_v2);
	assert_ptr_equal(out.stream, STREAM_A);
	assert_int_equal(out.u.memcpy.d.srcDevice, BUF_A);
	assert_int_equal(out.u.memcpy.d.srcXInBytes, 0);
	assert_int_equal(out.u.memcpy.src_first, BUF_A);
	assert_int_equal(out.u.memcpy.d.dstDevice, BUF_C);
	assert_int_equal(out.u.memcpy.dst_first, BUF_C);
	assert_int_equal(out.u.memcpy.bytes, NB);
	assert_int_equal(out.u.memcpy.d.WidthInBytes, NB);
	assert_int_equal(rw_plan_node_op(p, 2, ptr, &out), -CF_EINVAL);
	/* derived afresh from this launch's bindings: A moves, the chain follows */
	rwt_move_src(&ops[0], BUF_E);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	assert_int_equal(out.u.memcpy.src_first, BUF_E);
	rwt_move_src(&ops[0], BUF_A);
	/* the second copy reads 8 bytes past B's end */
	rwt_move_src(&ops[1], BUF_B + 8);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_WITHIN);
	rwt_move_src(&ops[1], BUF_B);
	/* C moves onto A's end */
	rwt_move_dst(&ops[1], BUF_A + NB - 1);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_MISSES);
	rwt_move_dst(&ops[1], BUF_C);
	/* A moves onto B: the first copy overlaps itself */
	rwt_move_src(&ops[0], BUF_B + 16);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_DISJOINT);
	rw_plan_destroy(p);
}

/* A sub-range: B+64 -> C, 64 bytes, reads A+64. */
static void test_chain_subrange(void **state)
{
	struct cap_op ops[2], out;
	const struct cap_op *ptr[2];
	char buf[2048];
	struct rw_plan *p;

	(void)state;
	ops[0] = rwt_copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_B + 64, BUF_C, 64, STREAM_A);
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) chain(1<-0) | linear_dtod(0,0) linear_dtod(1,1) within(0,1) disjoint(0,0) "
				 "misses(0,1)");
	rwt_ptrs(ops, 2, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	/* linear memory: the address alone, as cuMemcpyDtoDAsync would take it */
	assert_int_equal(out.u.memcpy.d.srcDevice, BUF_A + 64);
	assert_int_equal(out.u.memcpy.d.srcXInBytes, 0);
	assert_int_equal(out.u.memcpy.src_first, BUF_A + 64);
	assert_int_equal(out.u.memcpy.dst_first, BUF_C);
	assert_int_equal(out.u.memcpy.bytes, 64);
	/* the last 64 bytes of B still lie inside it */
	rwt_move_src(&ops[1], BUF_B + NB - 64);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	assert_int_equal(out.u.memcpy.src_first, BUF_A + NB - 64);
	/* one byte further does not */
	rwt_move_src(&ops[1], BUF_B + NB - 63);
	assert_false(rw_plan_guards_hold(p, ptr, NULL));
	rw_plan_destroy(p);
}

/* A kernel between that reads and writes neither A nor B does not stop it. */
static void test_chain_kernel_between(void **state)
{
	struct cap_op ops[3];
	const struct cap_op *ptr[3];
	unsigned char pb[32];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = rwt_scale_op(&scale_func, pb, BUF_E, BUF_E + 0x1000, 2.0f, 16, STREAM_A);
	ops[2] = rwt_copy_op(BUF_B, BUF_C, NB, STREAM_A);
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) op(1) chain(2<-0) | linear_dtod(0,0) linear_dtod(2,2) within(0,2) "
				 "disjoint(0,0) misses(0,2) unwritten(0,1)");
	rwt_ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* the kernel's output moves onto A */
	{
		uint64_t o = BUF_A + 4;

		memcpy(pb + rwt_scale_off[0], &o, 8);
	}
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_UNWRITTEN);
	rw_plan_destroy(p);
}

/* With dead-write: B is overwritten before anyone else reads it, so A -> B goes and the pair
 * costs one copy. */
static void test_chain_then_dead(void **state)
{
	struct cap_op ops[3], out;
	const struct cap_op *ptr[3];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_B, BUF_C, NB, STREAM_A);
	ops[2] = rwt_memset_op(BUF_B, NB, STREAM_A);
	/* alone, copy-chain keeps the first copy: whether B is live is dead-write's call */
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) chain(1<-0) op(2) | linear_dtod(0,0) linear_dtod(1,1) within(0,1) "
				 "disjoint(0,0) misses(0,1)");
	rw_plan_destroy(p);
	p = run_rules(ops, 3, true, buf, sizeof(buf));
	assert_string_equal(buf, "chain(1<-0) op(2) | linear_dtod(0,0) linear_dtod(1,1) within(0,1) disjoint(0,0) "
				 "misses(0,1) covers(0,2) unread(0,chain(1<-0)) unread(0,2)");
	assert_int_equal(p->nstats, 2);
	assert_int_equal(p->nsnaps, 1);
	rwt_ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.u.memcpy.src_first, BUF_A);
	assert_int_equal(out.u.memcpy.dst_first, BUF_C);
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_MEMSET);
	/* the memset shrinks: B's last byte would keep A's */
	ops[2].u.memset.width = NB - 1;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_COVERS);
	rw_plan_destroy(p);
	/* B read by a kernel before the memset: the first copy stays */
	{
		struct cap_op ops4[4];
		unsigned char pb[32];

		ops4[0] = ops[0];
		ops4[1] = ops[1];
		ops4[2] = rwt_scale_op(&scale_func, pb, BUF_E, BUF_B + NB - 4, 2.0f, 1, STREAM_A);
		ops4[3] = rwt_memset_op(BUF_B, NB, STREAM_A);
		p = run_rules(ops4, 4, true, buf, sizeof(buf));
		assert_string_equal(buf, "op(0) chain(1<-0) op(2) op(3) | linear_dtod(0,0) linear_dtod(1,1) within(0,1) "
					 "disjoint(0,0) misses(0,1)");
		rw_plan_destroy(p);
	}
}

/* Two copies read B before it is overwritten: both read A instead, and A -> B goes. */
static void test_two_readers_then_dead(void **state)
{
	struct cap_op ops[4], out;
	const struct cap_op *ptr[4];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_B, BUF_C, NB, STREAM_A);
	ops[2] = rwt_copy_op(BUF_B + 8, BUF_E, 1, STREAM_A);
	ops[3] = rwt_memset_op(BUF_B, NB, STREAM_A);
	p = run_rules(ops, 4, true, buf, sizeof(buf));
	assert_string_equal(buf, "chain(1<-0) chain(2<-0) op(3) | linear_dtod(0,0) linear_dtod(1,1) within(0,1) "
				 "disjoint(0,0) misses(0,1) linear_dtod(2,2) within(0,2) misses(0,2) "
				 "unwritten(0,chain(1<-0)) covers(0,3) unread(0,chain(1<-0)) unread(0,chain(2<-0)) "
				 "unread(0,3)");
	assert_int_equal(p->nsnaps, 2);
	rwt_ptrs(ops, 4, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	assert_int_equal(out.u.memcpy.src_first, BUF_A + 8);
	assert_int_equal(out.u.memcpy.dst_first, BUF_E);
	assert_int_equal(out.u.memcpy.bytes, 1);
	/* C moves onto A: the first chain would change what the second reads */
	rwt_move_dst(&ops[1], BUF_A);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_MISSES);
	rw_plan_destroy(p);
}

/* Registered at level 1. */
static void test_registered(void **state)
{
	struct rw_config cfg0 = { 0, NULL, NULL, NULL }, cfg1 = { 1, NULL, NULL, NULL }, off = { 1, "-copy-chain", NULL, NULL };

	(void)state;
	assert_string_equal(rw_rule_copy_chain.name, "copy-chain");
	assert_int_equal(rw_rule_copy_chain.level, 1);
	assert_true(rw_rule_is_enabled(&rw_rule_copy_chain, &cfg1));
	assert_false(rw_rule_is_enabled(&rw_rule_copy_chain, &cfg0));
	assert_false(rw_rule_is_enabled(&rw_rule_copy_chain, &off));
}

/* ------------------------------------------------------------------ negative */

/* A written between: C2' would read the new bytes, C2 the old ones. */
static void test_a_written_between(void **state)
{
	struct cap_op ops[3];
	unsigned char pb[32];

	(void)state;
	ops[0] = rwt_copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = rwt_memset_op(BUF_A + NB - 1, 1, STREAM_A);
	ops[2] = rwt_copy_op(BUF_B, BUF_C, NB, STREAM_A);
	rwt_expect_identity(run, ops, 3);
	ops[1] = rwt_scale_op(&scale_func, pb, BUF_A, BUF_E, 2.0f, 4, STREAM_A);
	rwt_expect_identity(run, ops, 3);
}

/* B written between: C2 reads the new bytes, C2' would read A's. */
static void test_b_written_between(void **state)
{
	struct cap_op ops[3];

	(void)state;
	ops[0] = rwt_copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_E, BUF_B + 16, 16, STREAM_A);
	ops[2] = rwt_copy_op(BUF_B, BUF_C, NB, STREAM_A);
	rwt_expect_identity(run, ops, 3);
}

/* A kernel without a card or an event record between. */
static void test_unknown_between(void **state)
{
	struct cap_op ops[3];
	unsigned char pb[32];

	(void)state;
	ops[0] = rwt_copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = rwt_mystery_op(&mystery_func, pb, BUF_E, 16, STREAM_A);
	ops[2] = rwt_copy_op(BUF_B, BUF_C, NB, STREAM_A);
	rwt_expect_identity(run, ops, 3);
	memset(&ops[1], 0, sizeof(ops[1]));
	ops[1].kind = CAP_OP_EVENT_RECORD;
	ops[1].api = DRV_ID_cuEventRecord;
	ops[1].stream = STREAM_A;
	ops[1].stream_kind = CAP_STREAM_BLOCKING;
	cap_op_hash(&ops[1]);
	rwt_expect_identity(run, ops, 3);
}

/* C overlaps A: C2' would change A while reading it. C overlaps B (C2 overlaps itself): what
 * C2 reads of B is not A's any more once C2 writes it. */
static void test_c_overlaps(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = rwt_copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_B, BUF_A + 128, NB, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	ops[1] = rwt_copy_op(BUF_B, BUF_A - NB + 1, NB, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	ops[1] = rwt_copy_op(BUF_B, BUF_B + 32, 64, STREAM_A);
	rwt_expect_identity(run, ops, 2);
}

/* A overlaps B: after C1, A no longer holds what it copied. */
static void test_a_overlaps_b(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = rwt_copy_op(BUF_A, BUF_A + 128, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_A + 128, BUF_C, NB, STREAM_A);
	rwt_expect_identity(run, ops, 2);
}

/* The second copy reads outside B (past its end, before its start). */
static void test_reads_outside_b(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = rwt_copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_B + 128, BUF_C, NB, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	ops[1] = rwt_copy_op(BUF_B - 1, BUF_C, 16, STREAM_A);
	rwt_expect_identity(run, ops, 2);
}

/* The second copy is on another stream, or synchronous. */
static void test_other_stream_or_sync(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = rwt_copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_B, BUF_C, NB, STREAM_B);
	rwt_expect_identity(run, ops, 2);
	ops[1] = rwt_copy_op(BUF_B, BUF_C, NB, STREAM_A);
	ops[1].api = DRV_ID_cuMemcpyDtoD_v2;
	rwt_expect_identity(run, ops, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain),              cmocka_unit_test(test_chain_subrange),
		cmocka_unit_test(test_chain_kernel_between), cmocka_unit_test(test_chain_then_dead),
		cmocka_unit_test(test_two_readers_then_dead),
		cmocka_unit_test(test_registered),         cmocka_unit_test(test_a_written_between),
		cmocka_unit_test(test_b_written_between),  cmocka_unit_test(test_unknown_between),
		cmocka_unit_test(test_c_overlaps),         cmocka_unit_test(test_a_overlaps_b),
		cmocka_unit_test(test_reads_outside_b),    cmocka_unit_test(test_other_stream_or_sync),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
