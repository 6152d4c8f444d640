/* test_rewrite_dead_write.c - golden and negative tests of the dead-write rule on small hand-made
 * windows: the plan it makes, guards failing when bindings move, and the near misses (a read,
 * an unknown kernel, another stream, an event, a partial overwrite) it must leave alone. tests
 * layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <string.h>

#include "common/errors.h"
#define RWT_HASH_OPS /* ops carry capture's hashes, as the rewriter sees them */
#include "rw_test.h"

extern const struct rw_rule rw_rule_dead_write;

#define BUF_S 0x7f0000000000ull /* a source nobody writes */
#define BUF_D 0x7f0001000000ull /* the buffer written twice */
#define BUF_E 0x7f0002000000ull /* unrelated memory */
#define BUF_F 0x7f0003000000ull /* unrelated memory */
#define NB 256                  /* bytes of the dead write */

static const struct cap_func scale_func = RWT_FUNC(0x5001, 1, "scale", RWT_LAYOUT_SCALE);
/* a kernel no card describes: it may read and write anything */
static const struct cap_func mystery_func = RWT_FUNC(0x5002, 2, "mystery", RWT_LAYOUT_MYSTERY);

/* Rewrite ops[0..n) with dead-write alone; the plan's one-line form into buf. */
static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	const struct rw_rule *rules[1] = { &rw_rule_dead_write };

	return rwt_run(ops, n, rules, 1, buf, cap);
}

/* ------------------------------------------------------------------ golden */

/* copy S -> D, then a memset of all of D: the copy is never seen. */
static void test_copy_then_memset(void **state)
{
	struct cap_op ops[2], out;
	const struct cap_op *ptr[2];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = rwt_memset_op(BUF_D, NB, STREAM_A);
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "op(1) | linear_dtod(0,0) covers(0,1) unread(0,1)");
	assert_int_equal(p->nstats, 1);
	assert_string_equal(p->stats[0].rule, "dead-write");
	assert_int_equal(p->stats[0].count, 1);
	rwt_ptrs(ops, 2, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_MEMSET);
	assert_int_equal(out.u.memset.dst, BUF_D);
	assert_int_equal(out.u.memset.width, NB);
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), -CF_EINVAL);
	/* the memset moves by 8 bytes: the copy's first 8 bytes would survive */
	ops[1].u.memset.dst = BUF_D + 8;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_COVERS);
	/* it shrinks instead */
	ops[1].u.memset.dst = BUF_D;
	ops[1].u.memset.width = NB - 1;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_COVERS);
	/* the copy becomes synchronous: it is no longer just a write */
	ops[1].u.memset.width = NB;
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	ops[0].api = DRV_ID_cuMemcpyDtoD_v2;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_LINEAR_DTOD);
	rw_plan_destroy(p);
}

/* memset D, then a copy over a larger range holding D: the memset is never seen. */
static void test_memset_then_copy(void **state)
{
	struct cap_op ops[2], out;
	const struct cap_op *ptr[2];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_memset_op(BUF_D + 16, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_S, BUF_D, NB + 64, STREAM_A);
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "op(1) | set_1d(0,0) covers(0,1) unread(0,1)");
	rwt_ptrs(ops, 2, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_MEMCPY);
	assert_int_equal(out.u.memcpy.src_first, BUF_S);
	assert_int_equal(out.u.memcpy.dst_first, BUF_D);
	assert_int_equal(out.u.memcpy.bytes, NB + 64);
	/* the copy's source moves onto the memset's bytes: it reads them */
	ops[1].u.memcpy.src_first = BUF_D + 64;
	ops[1].u.memcpy.d.srcDevice = BUF_D + 64;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_UNREAD);
	rw_plan_destroy(p);
}

/* memset D, copy S -> D, memset D: both earlier writes are dead (the second overwrite covers
 * the first through the middle one). */
static void test_chain_of_dead_writes(void **state)
{
	struct cap_op ops[3];
	const struct cap_op *ptr[3];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_memset_op(BUF_D, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[2] = rwt_memset_op(BUF_D, NB, STREAM_A);
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(2) | set_1d(0,0) covers(0,1) unread(0,1) linear_dtod(1,1) covers(1,2) "
				 "unread(1,2)");
	assert_int_equal(p->nstats, 1);
	assert_int_equal(p->stats[0].count, 2);
	rwt_ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* the last memset moves off: the copy's bytes would be seen */
	ops[2].u.memset.dst = BUF_D + NB;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_COVERS);
	assert_int_equal(p->guards[failed].a, 1);
	assert_int_equal(p->guards[failed].b, 2);
	rw_plan_destroy(p);
}

/* A kernel with a card between, reading and writing other memory, does not stop it. */
static void test_kernel_between(void **state)
{
	struct cap_op ops[3], out;
	const struct cap_op *ptr[3];
	unsigned char pb[32];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = rwt_scale_op(&scale_func, pb, BUF_E, BUF_F, 2.0f, NB / 4, STREAM_A);
	ops[2] = rwt_memset_op(BUF_D, NB, STREAM_A);
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(1) op(2) | linear_dtod(0,0) covers(0,2) unread(0,1) unread(0,2)");
	rwt_ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_KERNEL);
	assert_ptr_equal(out.u.kernel.params, pb);
	/* the kernel's input moves onto the last bytes of D: it reads the copy's bytes */
	{
		uint64_t in = BUF_D + NB - 4;

		memcpy(pb + rwt_scale_off[1], &in, 8);
	}
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_UNREAD);
	assert_int_equal(p->guards[failed].b, 1);
	rw_plan_destroy(p);
}

/* Registered at level 1. */
static void test_registered(void **state)
{
	struct rw_config cfg0 = { 0, NULL, NULL, NULL }, cfg1 = { 1, NULL, NULL, NULL }, off = { 1, "-dead-write", NULL, NULL };

	(void)state;
	assert_string_equal(rw_rule_dead_write.name, "dead-write");
	assert_int_equal(rw_rule_dead_write.level, 1);
	assert_true(rw_rule_is_enabled(&rw_rule_dead_write, &cfg1));
	assert_false(rw_rule_is_enabled(&rw_rule_dead_write, &cfg0));
	assert_false(rw_rule_is_enabled(&rw_rule_dead_write, &off));
}

/* ------------------------------------------------------------------ negative */

/* A copy between reads (part of) D. */
static void test_copy_reads_between(void **state)
{
	struct cap_op ops[3];

	(void)state;
	ops[0] = rwt_copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_D + NB - 1, BUF_E, 1, STREAM_A);
	ops[2] = rwt_memset_op(BUF_D, NB, STREAM_A);
	rwt_expect_identity(run, ops, 3);
}

/* A scale kernel between reads D through its input. */
static void test_kernel_reads_between(void **state)
{
	struct cap_op ops[3];
	unsigned char pb[32];

	(void)state;
	ops[0] = rwt_memset_op(BUF_D, NB, STREAM_A);
	ops[1] = rwt_scale_op(&scale_func, pb, BUF_E, BUF_D + 64, 2.0f, 4, STREAM_A);
	ops[2] = rwt_copy_op(BUF_S, BUF_D, NB, STREAM_A);
	rwt_expect_identity(run, ops, 3);
}

/* A kernel without a card between may read anything, even given only unrelated pointers. */
static void test_unknown_kernel_between(void **state)
{
	struct cap_op ops[3];
	unsigned char pb[32];

	(void)state;
	ops[0] = rwt_copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = rwt_mystery_op(&mystery_func, pb, BUF_E, 16, STREAM_A);
	ops[2] = rwt_memset_op(BUF_D, NB, STREAM_A);
	rwt_expect_identity(run, ops, 3);
}

/* The overwrite is on another stream: it may run before the write, or a reader on the first
 * stream may run between them. */
static void test_other_stream(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = rwt_copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = rwt_memset_op(BUF_D, NB, STREAM_B);
	rwt_expect_identity(run, ops, 2);
	/* the same stream handle in another slot is another stream of the shape */
	ops[1] = rwt_memset_op(BUF_D, NB, STREAM_A);
	ops[1].stream_slot = 1;
	rwt_expect_identity(run, ops, 2);
}

/* The overwrite covers only part of the write (short at either end). */
static void test_partial_cover(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = rwt_copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = rwt_memset_op(BUF_D, NB - 1, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	ops[1] = rwt_memset_op(BUF_D + 1, NB, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	ops[0] = rwt_memset_op(BUF_D, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_S, BUF_D + 8, NB, STREAM_A);
	rwt_expect_identity(run, ops, 2);
}

/* An event record between: a stream waiting on it could read D. */
static void test_event_between(void **state)
{
	struct cap_op ops[3];

	(void)state;
	ops[0] = rwt_copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = rwt_event_record_op(STREAM_A);
	ops[2] = rwt_memset_op(BUF_D, NB, STREAM_A);
	rwt_expect_identity(run, ops, 3);
}

/* The overwrite reads the bytes itself: a copy from D to D - 32 covers D's first NB bytes but
 * reads them first. */
static void test_overwrite_reads(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = rwt_memset_op(BUF_D, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_D, BUF_D - 32, NB + 64, STREAM_A);
	rwt_expect_identity(run, ops, 2);
}

/* The write is not one dead-write may drop: a synchronous copy, a 2-D memset. */
static void test_not_droppable(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = rwt_copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[0].api = DRV_ID_cuMemcpyDtoD_v2;
	ops[1] = rwt_memset_op(BUF_D, NB, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	ops[0] = rwt_memset_op(BUF_D, NB / 2, STREAM_A);
	ops[0].u.memset.height = 2;
	ops[0].u.memset.pitch = NB / 2;
	rwt_expect_identity(run, ops, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_then_memset),     cmocka_unit_test(test_memset_then_copy),
		cmocka_unit_test(test_chain_of_dead_writes), cmocka_unit_test(test_kernel_between),
		cmocka_unit_test(test_registered),           cmocka_unit_test(test_copy_reads_between),
		cmocka_unit_test(test_kernel_reads_between), cmocka_unit_test(test_unknown_kernel_between),
		cmocka_unit_test(test_other_stream),         cmocka_unit_test(test_partial_cover),
		cmocka_unit_test(test_event_between),        cmocka_unit_test(test_overwrite_reads),
		cmocka_unit_test(test_not_droppable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
