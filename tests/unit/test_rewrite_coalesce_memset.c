/* test_rewrite_coalesce_memset.c - golden and negative tests of the memset half of the coalesce rule on
 * small hand-made windows: abutting memsets of one value become one (one-line form, derived
 * width), guards failing when bindings move, and the near misses it must leave alone. tests
 * layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <string.h>

#include "common/errors.h"
#include "rw_test.h"

extern const struct rw_rule rw_rule_coalesce;

#define BUF_D 0x7f0001000000ull /* a destination buffer */

/* Rewrite ops[0..n) with coalesce alone; the plan's one-line form into buf. */
static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	const struct rw_rule *rules[1] = { &rw_rule_coalesce };

	return rwt_run(ops, n, rules, 1, buf, cap);
}

/* ------------------------------------------------------------------ golden */

static void test_two_memsets(void **state)
{
	struct cap_op ops[2] = { rwt_memset_elems_op(BUF_D, 64, 1, 7, STREAM_A),
				 rwt_memset_elems_op(BUF_D + 64, 32, 1, 7, STREAM_A) };
	const struct cap_op *ptr[2];
	struct cap_op out;
	char buf[512];
	struct rw_plan *p = run(ops, 2, buf, sizeof(buf));
	uint32_t failed = 999;

	(void)state;
	assert_string_equal(buf, "set(0,1) | set_1d(0,0) set_1d(1,1) same_stream(0,1) set_abuts(0,1)");
	assert_int_equal(p->nodes[0].kind, RW_NODE_SET);
	assert_string_equal(p->nodes[0].rule, "coalesce");
	assert_int_equal(p->nstats, 1);
	assert_int_equal(p->stats[0].count, 1);
	rwt_ptrs(ops, 2, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_MEMSET);
	assert_int_equal(out.api, DRV_ID_cuMemsetD8Async);
	assert_ptr_equal(out.stream, STREAM_A);
	assert_int_equal(out.u.memset.dst, BUF_D);
	assert_int_equal(out.u.memset.width, 96);
	assert_int_equal(out.u.memset.pitch, 96);
	assert_int_equal(out.u.memset.height, 1);
	assert_int_equal(out.u.memset.elem_size, 1);
	assert_int_equal(out.u.memset.value, 7);
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), -CF_EINVAL);

	/* both move together and grow: still abutting, the width follows */
	ops[0] = rwt_memset_elems_op(BUF_D + 0x1000, 100, 1, 7, STREAM_A);
	ops[1] = rwt_memset_elems_op(BUF_D + 0x1000 + 100, 28, 1, 7, STREAM_A);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.u.memset.dst, BUF_D + 0x1000);
	assert_int_equal(out.u.memset.width, 128);

	/* a gap */
	ops[1].u.memset.dst += 1;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_SET_ABUTS);
	ops[1].u.memset.dst -= 1;
	/* another value */
	ops[1].u.memset.value = 8;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_SET_ABUTS);
	ops[1].u.memset.value = 7;
	/* another stream */
	ops[1].stream = STREAM_B;
	ops[1].stream_slot = 1;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_SAME_STREAM);
	ops[1].stream = STREAM_A;
	ops[1].stream_slot = 0;
	/* synchronous */
	ops[0].api = DRV_ID_cuMemsetD8_v2;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_SET_1D);
	assert_int_equal(p->guards[failed].a, 0);
	rw_plan_destroy(p);
}

/* Three 32-bit memsets (widths in elements): one of 10 + 20 + 30 elements. */
static void test_three_memsets(void **state)
{
	struct cap_op ops[4] = { rwt_memset_elems_op(BUF_D, 10, 4, 0x3f800000, STREAM_A),
				 rwt_memset_elems_op(BUF_D + 40, 20, 4, 0x3f800000, STREAM_A),
				 rwt_memset_elems_op(BUF_D + 120, 30, 4, 0x3f800000, STREAM_A),
				 rwt_memset_elems_op(BUF_D + 240, 4, 4, 0, STREAM_A) };
	const struct cap_op *ptr[4];
	struct cap_op out;
	char buf[512];
	struct rw_plan *p = run(ops, 4, buf, sizeof(buf));
	uint32_t failed = 999;

	(void)state;
	/* the chain folds pairwise: abutment between neighbours, the first op's kind once */
	assert_string_equal(buf, "set(0,1,2) op(3) | set_1d(0,0) set_1d(1,1) same_stream(0,1) set_abuts(0,1) "
				 "set_1d(2,2) same_stream(0,2) set_abuts(1,2)");
	assert_int_equal(p->stats[0].count, 2);
	rwt_ptrs(ops, 4, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.api, DRV_ID_cuMemsetD32Async);
	assert_int_equal(out.u.memset.dst, BUF_D);
	assert_int_equal(out.u.memset.width, 60);
	assert_int_equal(out.u.memset.pitch, 240);
	assert_int_equal(out.u.memset.elem_size, 4);
	assert_int_equal(out.u.memset.value, 0x3f800000);
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	assert_int_equal(out.u.memset.dst, BUF_D + 240);
	assert_int_equal(out.u.memset.width, 4);
	/* the middle one shrinks by one element: the last no longer abuts */
	ops[1].u.memset.width = 19;
	ops[1].u.memset.pitch = 76;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_SET_ABUTS);
	assert_int_equal(p->guards[failed].a, 1);
	assert_int_equal(p->guards[failed].b, 2);
	rw_plan_destroy(p);
}

/* ------------------------------------------------------------------ negative */

static void test_other_value(void **state)
{
	struct cap_op ops[2] = { rwt_memset_elems_op(BUF_D, 64, 1, 7, STREAM_A),
				 rwt_memset_elems_op(BUF_D + 64, 32, 1, 8, STREAM_A) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
}

static void test_other_elem_size(void **state)
{
	/* 64 bytes of 0 then 16 words of 0: abutting bytes, one value, but not one memset */
	struct cap_op ops[2] = { rwt_memset_elems_op(BUF_D, 64, 1, 0, STREAM_A),
				 rwt_memset_elems_op(BUF_D + 64, 16, 4, 0, STREAM_A) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
	ops[0] = rwt_memset_elems_op(BUF_D, 32, 2, 0, STREAM_A);
	rwt_expect_identity(run, ops, 2);
}

static void test_gap(void **state)
{
	struct cap_op ops[2] = { rwt_memset_elems_op(BUF_D, 16, 4, 1, STREAM_A),
				 rwt_memset_elems_op(BUF_D + 68, 16, 4, 1, STREAM_A) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
	/* the width counted in bytes rather than elements: the second starts inside the first */
	ops[1].u.memset.dst = BUF_D + 16;
	rwt_expect_identity(run, ops, 2);
	/* the second before the first */
	ops[1].u.memset.dst = BUF_D - 64;
	rwt_expect_identity(run, ops, 2);
}

static void test_other_stream(void **state)
{
	struct cap_op ops[2] = { rwt_memset_elems_op(BUF_D, 64, 1, 7, STREAM_A),
				 rwt_memset_elems_op(BUF_D + 64, 32, 1, 7, STREAM_B) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
}

static void test_not_1d_async(void **state)
{
	struct cap_op ops[3] = { rwt_memset_elems_op(BUF_D, 64, 1, 7, STREAM_A),
				 rwt_memset_elems_op(BUF_D + 64, 32, 1, 7, STREAM_A),
				 rwt_memset_elems_op(BUF_D + 0x1000, 8, 1, 7, STREAM_A) };

	(void)state;
	ops[1].api = DRV_ID_cuMemsetD8_v2; /* synchronous */
	rwt_expect_identity(run, ops, 2);
	ops[1].api = DRV_ID_cuMemsetD8Async;
	ops[0].u.memset.height = 2; /* 2-D (pitch 64): the rows end where the second starts */
	ops[1].u.memset.dst = BUF_D + 128;
	rwt_expect_identity(run, ops, 2);
	ops[0].u.memset.height = 1;
	ops[1].u.memset.dst = BUF_D + 64;
	/* an unrelated memset between them */
	ops[2] = ops[1];
	ops[1] = rwt_memset_elems_op(BUF_D + 0x1000, 8, 1, 7, STREAM_A);
	rwt_expect_identity(run, ops, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_memsets),     cmocka_unit_test(test_three_memsets),
		cmocka_unit_test(test_other_value),     cmocka_unit_test(test_other_elem_size),
		cmocka_unit_test(test_gap),             cmocka_unit_test(test_other_stream),
		cmocka_unit_test(test_not_1d_async),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
