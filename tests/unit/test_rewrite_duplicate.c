/* test_rewrite_duplicate.c - golden and negative tests of the duplicate rule on small hand-made
 * windows: the plan it makes, guards failing when bindings move, and the near misses (an impure
 * kernel, an input or output written between, other arguments, another stream) it must leave
 * alone. tests layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <string.h>

#include "common/errors.h"
#define RWT_HASH_OPS /* ops carry capture's hashes: the rule compares ops by them */
#include "rw_test.h"

extern const struct rw_rule rw_rule_duplicate;

#define BUF_S 0x7f0000000000ull /* a copy's source */
#define BUF_D 0x7f0001000000ull /* a copy's or memset's destination */
#define BUF_E 0x7f0002000000ull /* unrelated memory */
#define BUF_I 0x7f0003000000ull /* a kernel's input */
#define BUF_O 0x7f0004000000ull /* a kernel's output */
#define NB 256                  /* bytes of copies and memsets */
#define NE 64                   /* elements of kernels (NE * 4 bytes) */

static const struct cap_func fill_func = RWT_FUNC(0x5001, 1, "fill", RWT_LAYOUT_FILL);
static const struct cap_func scale_func = RWT_FUNC(0x5002, 2, "scale", RWT_LAYOUT_SCALE);
/* axpy has scale's layout: y, x, a, n */
static const struct cap_func axpy_func = RWT_FUNC(0x5003, 3, "axpy", RWT_LAYOUT_SCALE);
/* a kernel no card describes: it may read and write anything */
static const struct cap_func mystery_func = RWT_FUNC(0x5004, 4, "mystery", RWT_LAYOUT_MYSTERY);

/* Rewrite ops[0..n) with duplicate alone; the plan's one-line form into buf. */
static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	const struct rw_rule *rules[1] = { &rw_rule_duplicate };

	return rwt_run(ops, n, rules, 1, buf, cap);
}

/* ------------------------------------------------------------------ golden */

/* The same memset twice: the second changes no byte. */
static void test_same_memset(void **state)
{
	struct cap_op ops[2], out;
	const struct cap_op *ptr[2];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_memset_op(BUF_D, NB, STREAM_A);
	ops[1] = rwt_memset_op(BUF_D, NB, STREAM_A);
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) | pure(0,0) same_op(0,1)");
	assert_int_equal(p->nstats, 1);
	assert_string_equal(p->stats[0].rule, "duplicate");
	assert_int_equal(p->stats[0].count, 1);
	rwt_ptrs(ops, 2, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_MEMSET);
	assert_int_equal(out.u.memset.dst, BUF_D);
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), -CF_EINVAL);
	/* the second sets another value, then another range */
	ops[1].u.memset.value = 7;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_SAME_OP);
	ops[1].u.memset.value = 0;
	ops[1].u.memset.dst = BUF_D + 4;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_SAME_OP);
	rw_plan_destroy(p);
}

/* Three times: both repeats go, each guarded against the first. */
static void test_memset_thrice(void **state)
{
	struct cap_op ops[3];
	const struct cap_op *ptr[3];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	for (uint32_t i = 0; i < 3; i++)
		ops[i] = rwt_memset_op(BUF_D, NB, STREAM_A);
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) | pure(0,0) same_op(0,1) same_op(0,2)");
	assert_int_equal(p->stats[0].count, 2);
	rwt_ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	ops[2].u.memset.width = NB / 2;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_SAME_OP);
	assert_int_equal(p->guards[failed].b, 2);
	rw_plan_destroy(p);
}

/* The same fill twice with an unrelated copy between. */
static void test_same_fill(void **state)
{
	struct cap_op ops[3], out;
	const struct cap_op *ptr[3];
	unsigned char pb[2][32];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_fill_op(&fill_func, pb[0], BUF_O, 1.5f, NE, STREAM_A);
	ops[1] = rwt_copy_op(BUF_S, BUF_E, NB, STREAM_A);
	ops[2] = rwt_fill_op(&fill_func, pb[1], BUF_O, 1.5f, NE, STREAM_A);
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) op(1) | pure(0,0) same_op(0,2) unwritten(0,1)");
	rwt_ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_KERNEL);
	assert_ptr_equal(out.u.kernel.params, pb[0]);
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_MEMCPY);
	/* the copy moves onto the fill's last element: the repeat would restore it */
	ops[1].u.memcpy.dst_first = BUF_O + NE * 4 - 4;
	ops[1].u.memcpy.d.dstDevice = BUF_O + NE * 4 - 4;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_UNWRITTEN);
	ops[1].u.memcpy.dst_first = BUF_E;
	ops[1].u.memcpy.d.dstDevice = BUF_E;
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* the repeat fills with another value */
	{
		float v = 2.5f;

		memcpy(pb[1] + rwt_fill_off[1], &v, 4);
	}
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_SAME_OP);
	rw_plan_destroy(p);
}

/* The same scale twice with an unrelated memset between. */
static void test_same_scale(void **state)
{
	struct cap_op ops[3];
	const struct cap_op *ptr[3];
	unsigned char pb[2][32];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_scale_op(&scale_func, pb[0], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	ops[1] = rwt_memset_op(BUF_E, NB, STREAM_A);
	ops[2] = rwt_scale_op(&scale_func, pb[1], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) op(1) | pure(0,0) same_op(0,2) unwritten(0,1)");
	rwt_ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* the memset moves onto the input */
	ops[1].u.memset.dst = BUF_I + 8;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_UNWRITTEN);
	ops[1].u.memset.dst = BUF_E;
	/* both launches become in place (the same bindings, no longer pure) */
	{
		uint64_t out = BUF_I;

		memcpy(pb[0] + rwt_scale_off[0], &out, 8);
		memcpy(pb[1] + rwt_scale_off[0], &out, 8);
	}
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_PURE);
	rw_plan_destroy(p);
}

/* The same copy twice; a copy between that only reads the destination does not stop it. */
static void test_same_copy(void **state)
{
	struct cap_op ops[3];
	const struct cap_op *ptr[3];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_D, BUF_E, NB, STREAM_A);
	ops[2] = rwt_copy_op(BUF_S, BUF_D, NB, STREAM_A);
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) op(1) | pure(0,0) same_op(0,2) unwritten(0,1)");
	rwt_ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* the repeat reads one byte further on */
	ops[2].u.memcpy.src_first = BUF_S + 1;
	ops[2].u.memcpy.d.srcDevice = BUF_S + 1;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_SAME_OP);
	/* both copies read where they write */
	ops[0].u.memcpy.src_first = ops[2].u.memcpy.src_first = BUF_D + 16;
	ops[0].u.memcpy.d.srcDevice = ops[2].u.memcpy.d.srcDevice = BUF_D + 16;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_PURE);
	rw_plan_destroy(p);
}

/* The same copy into two CUDA arrays: capture records both array sides at the same offsets
 * from 0, so only the array handles tell the copies apart. */
static void test_copy_into_other_array(void **state)
{
	struct cap_op ops[2];
	const struct cap_op *ptr[2];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	for (int i = 0; i < 2; i++) {
		ops[i] = rwt_copy_op(BUF_S, 0, NB, STREAM_A);
		ops[i].u.memcpy.d.dstMemoryType = CU_MEMORYTYPE_ARRAY;
		ops[i].u.memcpy.d.dstArray = (CUarray)(uintptr_t)0xa000;
	}
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) | pure(0,0) same_op(0,1)");
	rwt_ptrs(ops, 2, ptr);
	ops[1].u.memcpy.d.dstArray = (CUarray)(uintptr_t)0xb000;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_SAME_OP);
	rw_plan_destroy(p);
}

/* Registered at level 1. */
static void test_registered(void **state)
{
	struct rw_config cfg0 = { 0, NULL, NULL, NULL }, cfg1 = { 1, NULL, NULL, NULL }, off = { 1, "-duplicate", NULL, NULL };

	(void)state;
	assert_string_equal(rw_rule_duplicate.name, "duplicate");
	assert_int_equal(rw_rule_duplicate.level, 1);
	assert_true(rw_rule_is_enabled(&rw_rule_duplicate, &cfg1));
	assert_false(rw_rule_is_enabled(&rw_rule_duplicate, &cfg0));
	assert_false(rw_rule_is_enabled(&rw_rule_duplicate, &off));
}

/* ------------------------------------------------------------------ negative */

/* axpy reads what it writes: running it again adds a*x again. */
static void test_axpy_twice(void **state)
{
	struct cap_op ops[2];
	unsigned char pb[2][32];

	(void)state;
	ops[0] = rwt_scale_op(&axpy_func, pb[0], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	ops[1] = rwt_scale_op(&axpy_func, pb[1], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	rwt_expect_identity(run, ops, 2);
}

/* Something between writes the kernel's input (its last element). */
static void test_input_written_between(void **state)
{
	struct cap_op ops[3];
	unsigned char pb[2][32];

	(void)state;
	ops[0] = rwt_scale_op(&scale_func, pb[0], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	ops[1] = rwt_memset_op(BUF_I + NE * 4 - 4, 4, STREAM_A);
	ops[2] = rwt_scale_op(&scale_func, pb[1], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	rwt_expect_identity(run, ops, 3);
}

/* Something between writes the kernel's output: the repeat would restore it. */
static void test_output_written_between(void **state)
{
	struct cap_op ops[3];
	unsigned char pb[2][32];

	(void)state;
	ops[0] = rwt_scale_op(&scale_func, pb[0], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	ops[1] = rwt_copy_op(BUF_S, BUF_O + 8, 4, STREAM_A);
	ops[2] = rwt_scale_op(&scale_func, pb[1], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	rwt_expect_identity(run, ops, 3);
	/* the same for a memset repeated around a copy into its range */
	ops[0] = rwt_memset_op(BUF_D, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_S, BUF_D + NB - 1, 1, STREAM_A);
	ops[2] = rwt_memset_op(BUF_D, NB, STREAM_A);
	rwt_expect_identity(run, ops, 3);
}

/* The same kernel with another scalar is another op. */
static void test_other_scalar(void **state)
{
	struct cap_op ops[2];
	unsigned char pb[2][32];

	(void)state;
	ops[0] = rwt_scale_op(&scale_func, pb[0], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	ops[1] = rwt_scale_op(&scale_func, pb[1], BUF_O, BUF_I, 3.0f, NE, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	/* and a memset of another value */
	ops[0] = rwt_memset_op(BUF_D, NB, STREAM_A);
	ops[1] = rwt_memset_op(BUF_D, NB, STREAM_A);
	ops[1].u.memset.value = 1;
	cap_op_hash(&ops[1]);
	rwt_expect_identity(run, ops, 2);
}

/* scale in place reads what it writes: not pure, whatever the card says. */
static void test_scale_in_place(void **state)
{
	struct cap_op ops[2];
	unsigned char pb[2][32];

	(void)state;
	ops[0] = rwt_scale_op(&scale_func, pb[0], BUF_I, BUF_I, 2.0f, NE, STREAM_A);
	ops[1] = rwt_scale_op(&scale_func, pb[1], BUF_I, BUF_I, 2.0f, NE, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	/* nor when the ranges only partly overlap */
	ops[0] = rwt_scale_op(&scale_func, pb[0], BUF_I + 4, BUF_I, 2.0f, NE, STREAM_A);
	ops[1] = rwt_scale_op(&scale_func, pb[1], BUF_I + 4, BUF_I, 2.0f, NE, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	/* nor a copy overlapping itself */
	ops[0] = rwt_copy_op(BUF_D, BUF_D + 16, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_D, BUF_D + 16, NB, STREAM_A);
	rwt_expect_identity(run, ops, 2);
}

/* The repeat is on another stream. */
static void test_other_stream(void **state)
{
	struct cap_op ops[2];
	unsigned char pb[2][32];

	(void)state;
	ops[0] = rwt_fill_op(&fill_func, pb[0], BUF_O, 1.5f, NE, STREAM_A);
	ops[1] = rwt_fill_op(&fill_func, pb[1], BUF_O, 1.5f, NE, STREAM_B);
	rwt_expect_identity(run, ops, 2);
	ops[0] = rwt_memset_op(BUF_D, NB, STREAM_A);
	ops[1] = rwt_memset_op(BUF_D, NB, STREAM_B);
	rwt_expect_identity(run, ops, 2);
}

/* Between them, a kernel without a card (may write anything) or an event record. */
static void test_unknown_between(void **state)
{
	struct cap_op ops[3];
	unsigned char pb[3][32];

	(void)state;
	ops[0] = rwt_fill_op(&fill_func, pb[0], BUF_O, 1.5f, NE, STREAM_A);
	ops[1] = rwt_mystery_op(&mystery_func, pb[1], BUF_E, 16, STREAM_A);
	ops[2] = rwt_fill_op(&fill_func, pb[2], BUF_O, 1.5f, NE, STREAM_A);
	rwt_expect_identity(run, ops, 3);
	ops[1] = rwt_event_record_op(STREAM_A);
	rwt_expect_identity(run, ops, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_memset),          cmocka_unit_test(test_memset_thrice),
		cmocka_unit_test(test_same_fill),            cmocka_unit_test(test_same_scale),
		cmocka_unit_test(test_same_copy),
		cmocka_unit_test(test_copy_into_other_array),            cmocka_unit_test(test_registered),
		cmocka_unit_test(test_axpy_twice),           cmocka_unit_test(test_input_written_between),
		cmocka_unit_test(test_output_written_between), cmocka_unit_test(test_other_scalar),
		cmocka_unit_test(test_scale_in_place),       cmocka_unit_test(test_other_stream),
		cmocka_unit_test(test_unknown_between),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
