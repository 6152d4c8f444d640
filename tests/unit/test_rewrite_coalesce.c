/* test_rewrite_coalesce.c - golden and negative tests of the coalesce rule on small hand-made
 * windows: what it changes (nodes and guards in the plan's one-line form, derived bytes), the
 * counters it bumps, guards failing when bindings move, and the near misses it must leave
 * alone. tests layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <string.h>

#include "common/errors.h"
#include "rw_test.h"

extern const struct rw_rule rw_rule_coalesce;

#define BUF_S 0x7f0000000000ull /* a source buffer */
#define BUF_D 0x7f0001000000ull /* a destination buffer */

/* Rewrite ops[0..n) with coalesce alone; the plan's one-line form into buf. */
static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	const struct rw_rule *rules[1] = { &rw_rule_coalesce };

	return rwt_run(ops, n, rules, 1, buf, cap);
}

/* ------------------------------------------------------------------ golden */

static void test_two_pieces(void **state)
{
	struct cap_op ops[2] = { rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 64, BUF_D + 64, 32, STREAM_A) };
	const struct cap_op *ptr[2];
	struct cap_op out;
	char buf[512];
	struct rw_plan *p = run(ops, 2, buf, sizeof(buf));

	(void)state;
	assert_string_equal(buf, "copy(0,1) | linear_dtod(0,0) linear_dtod(1,1) same_stream(0,1) src_abuts(0,1) "
				 "dst_abuts(0,1) disjoint(0,1)");
	assert_int_equal(p->nstats, 1);
	assert_string_equal(p->stats[0].rule, "coalesce");
	assert_int_equal(p->stats[0].count, 1);
	assert_string_equal(p->nodes[0].rule, "coalesce");
	rwt_ptrs(ops, 2, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_MEMCPY);
	assert_int_equal(out.u.memcpy.bytes, 96);
	assert_int_equal(out.u.memcpy.d.WidthInBytes, 96);
	assert_int_equal(out.u.memcpy.d.srcDevice, BUF_S);
	assert_int_equal(out.u.memcpy.d.dstDevice, BUF_D);
	assert_int_equal(out.api, DRV_ID_cuMemcpyDtoDAsync_v2);
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), -CF_EINVAL);
	assert_false(rw_plan_is_identity(p));
	rw_plan_destroy(p);
}

/* Eight abutting slices (the e2e program's pattern) fold into one node; an op after them stays. */
static void test_eight_slices(void **state)
{
	struct cap_op ops[9];
	const struct cap_op *ptr[9];
	struct cap_op out;
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 99;

	(void)state;
	for (uint32_t i = 0; i < 8; i++)
		ops[i] = rwt_copy_op(BUF_S + 128 * i, BUF_D + 128 * i, 128, STREAM_A);
	ops[8] = rwt_memset_op(BUF_S, 16, STREAM_A);
	p = run(ops, 9, buf, sizeof(buf));
	assert_int_equal(p->nnodes, 2);
	assert_int_equal(p->nodes[0].kind, RW_NODE_COPY);
	assert_int_equal(p->nodes[0].norig, 8);
	for (uint32_t i = 0; i < 8; i++)
		assert_int_equal(p->nodes[0].orig[i], i);
	assert_int_equal(p->nodes[1].kind, RW_NODE_OP);
	assert_int_equal(p->nodes[1].orig[0], 8);
	assert_int_equal(p->stats[0].count, 7);
	assert_true(strncmp(buf, "copy(0,1,2,3,4,5,6,7) op(8) | ", 30) == 0);
	/* each step's abutment is guarded between neighbours, disjointness over the whole union */
	assert_non_null(strstr(buf, " src_abuts(6,7) dst_abuts(6,7) disjoint(0,7)"));
	assert_non_null(strstr(buf, " src_abuts(0,1) "));
	rwt_ptrs(ops, 9, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.u.memcpy.bytes, 1024);
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_MEMSET);

	/* the same shape with other bindings that still abut: guards hold, bytes derive afresh */
	for (uint32_t i = 0; i < 8; i++)
		ops[i] = rwt_copy_op(BUF_D + 256 * i, BUF_S + 256 * i, 256, STREAM_A);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.u.memcpy.bytes, 2048);
	assert_int_equal(out.u.memcpy.src_first, BUF_D);

	/* piece 5 moves: the abutment guard naming it fails */
	ops[5].u.memcpy.src_first += 8;
	ops[5].u.memcpy.d.srcDevice += 8;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_true(failed < p->nguards);
	assert_true(p->guards[failed].a == 4 || p->guards[failed].b == 5 || p->guards[failed].a == 5);
	ops[5].u.memcpy.src_first -= 8;
	assert_true(rw_plan_guards_hold(p, ptr, NULL));

	/* the pieces now overlap their destinations: disjoint fails */
	for (uint32_t i = 0; i < 8; i++)
		ops[i] = rwt_copy_op(BUF_S + 128 * i, BUF_S + 512 + 128 * i, 128, STREAM_A);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_DISJOINT);
	rw_plan_destroy(p);
}

/* Two separate runs in one window give two merged copies. */
static void test_two_runs(void **state)
{
	struct cap_op ops[5] = {
		rwt_copy_op(BUF_S, BUF_D, 16, STREAM_A),        rwt_copy_op(BUF_S + 16, BUF_D + 16, 16, STREAM_A),
		rwt_copy_op(BUF_S + 4096, BUF_D, 16, STREAM_A), rwt_copy_op(BUF_S + 4112, BUF_D + 16, 16, STREAM_A),
		rwt_copy_op(BUF_S + 4128, BUF_D + 64, 16, STREAM_A),
	};
	char buf[1024];
	struct rw_plan *p = run(ops, 5, buf, sizeof(buf));

	(void)state;
	assert_true(strncmp(buf, "copy(0,1) copy(2,3) op(4) |", 27) == 0);
	assert_int_equal(p->stats[0].count, 2);
	rw_plan_destroy(p);
}

/* A run's ops at buffers moved by shift (the same layout: the guards hold wherever it is). */
static void layout_at(struct cap_op ops[4], uint64_t shift)
{
	ops[0] = rwt_memset_op(BUF_D + 8192 + shift, 8, STREAM_A);
	for (uint32_t i = 0; i < 3; i++)
		ops[1 + i] = rwt_copy_op(BUF_S + shift + 64 * i, BUF_D + shift + 64 * i, 64, STREAM_A);
}

/* A run remembers the bindings of its last RW_RUN_SEEN passes: the same bindings again give the
 * same generation (replay keeps its nodes), other bindings a new one, a failed check forgets
 * nothing, and the pass remembered longest ago makes room for a new one. */
static void test_run_remembers(void **state)
{
	struct cap_op ops[4];
	const struct cap_op *ptr[4];
	struct rw_config on = { 1, NULL, NULL, NULL };
	uint64_t g[RW_RUN_SEEN + 1];
	struct rw_run *r;

	(void)state;
	layout_at(ops, 0);
	rwt_ptrs(ops, 4, ptr);
	r = rw_run_create(ptr, 4, &on);
	assert_non_null(r);
	for (uint32_t k = 0; k <= RW_RUN_SEEN; k++) {
		layout_at(ops, 0x100000 * k);
		assert_true(rw_run_guards_hold(r, ops));
		g[k] = rw_run_bindings_gen(r);
		assert_true(g[k] != 0);
		for (uint32_t j = 0; j < k; j++)
			assert_true(g[k] != g[j]);
	}
	/* the last RW_RUN_SEEN are remembered, each with its own generation */
	for (uint32_t k = 1; k <= RW_RUN_SEEN; k++) {
		layout_at(ops, 0x100000 * k);
		assert_true(rw_run_guards_hold(r, ops));
		assert_int_equal(rw_run_bindings_gen(r), g[k]);
	}
	/* a launch whose guards fail: no generation, and the passes stay */
	layout_at(ops, 0x100000 * 2);
	ops[3].u.memcpy.dst_first += 64;
	assert_false(rw_run_guards_hold(r, ops));
	assert_int_equal(rw_run_bindings_gen(r), 0);
	layout_at(ops, 0x100000 * 2);
	assert_true(rw_run_guards_hold(r, ops));
	assert_int_equal(rw_run_bindings_gen(r), g[2]);
	/* the first was replaced: checked again, a new generation */
	layout_at(ops, 0);
	assert_true(rw_run_guards_hold(r, ops));
	assert_true(rw_run_bindings_gen(r) != g[0]);
	/* one byte of one op differs: not the same bindings */
	layout_at(ops, 0x100000 * 3);
	ops[0].u.memset.value ^= 1;
	assert_true(rw_run_guards_hold(r, ops));
	assert_true(rw_run_bindings_gen(r) != g[3]);
	rw_run_destroy(r);
}

/* A caller that says its ops have the value identities of the run's own (exact) is not compared
 * op by op after an exact pass: the same generation. Only both being exact skips the compare: a
 * pass after a remembered one that was not exact, or one not said exact, is compared, and other
 * bindings get a generation of their own. */
static void test_run_exact(void **state)
{
	struct cap_op ops[4];
	const struct cap_op *ptr[4];
	struct rw_config on = { 1, NULL, NULL, NULL };
	struct rw_run *r;
	uint64_t g0, g1;

	(void)state;
	layout_at(ops, 0);
	rwt_ptrs(ops, 4, ptr);
	r = rw_run_create(ptr, 4, &on);
	assert_non_null(r);
	assert_true(rw_run_guards_hold_exact(r, ops, true));
	g0 = rw_run_bindings_gen(r);
	assert_true(g0 != 0);
	assert_true(rw_run_guards_hold_exact(r, ops, true));
	assert_int_equal(rw_run_bindings_gen(r), g0);
	/* not said exact, other bindings: compared, a new generation */
	layout_at(ops, 0x100000);
	assert_true(rw_run_guards_hold_exact(r, ops, false));
	g1 = rw_run_bindings_gen(r);
	assert_true(g1 != g0);
	/* said exact after a pass that was not: compared (one value differs), a new generation */
	ops[0].u.memset.value ^= 1;
	assert_true(rw_run_guards_hold_exact(r, ops, true));
	assert_true(rw_run_bindings_gen(r) != g1);
	assert_true(rw_run_bindings_gen(r) != g0);
	/* after that exact pass, one not said exact with other bindings: compared again */
	g1 = rw_run_bindings_gen(r);
	layout_at(ops, 0x200000);
	assert_true(rw_run_guards_hold_exact(r, ops, false));
	assert_true(rw_run_bindings_gen(r) != g1);
	rw_run_destroy(r);
}

/* rw_run_op derives from the ops it is given, also where the guards took a remembered pass and
 * looked at no op: a launch from another array (replay's deferred ops at another offset) with the
 * same bindings as the last, while the first array now holds other ops. */
static void test_run_op_follows_def(void **state)
{
	struct cap_op a[4] = { rwt_memset_op(BUF_D + 8192, 8, STREAM_A), rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A),
			       rwt_copy_op(BUF_S + 64, BUF_D + 64, 64, STREAM_A),
			       rwt_copy_op(BUF_S + 128, BUF_D + 128, 64, STREAM_A) };
	struct cap_op b[4];
	const struct cap_op *ptr[4];
	struct rw_config on = { 1, NULL, NULL, NULL };
	struct rw_run *r;
	struct cap_op tmp;
	const struct cap_op *op;

	(void)state;
	rwt_ptrs(a, 4, ptr);
	r = rw_run_create(ptr, 4, &on);
	assert_non_null(r);
	memcpy(b, a, sizeof(b));
	assert_true(rw_run_guards_hold(r, a));
	op = rw_run_op(r, 1, a, &tmp);
	assert_non_null(op);
	assert_int_equal(op->u.memcpy.src_first, BUF_S);
	/* a's slots are reused for other ops; b has a's bindings: the remembered pass holds */
	for (uint32_t i = 1; i < 4; i++)
		rwt_copy_move(&a[i], BUF_S + 4096 + 64 * (i - 1), BUF_D + 4096 + 64 * (i - 1));
	assert_true(rw_run_guards_hold(r, b));
	op = rw_run_op(r, 1, b, &tmp);
	assert_non_null(op);
	assert_int_equal(op->u.memcpy.src_first, BUF_S);
	assert_int_equal(op->u.memcpy.dst_first, BUF_D);
	assert_int_equal(op->u.memcpy.bytes, 192);
	rw_run_destroy(r);
}

/* The layout replay uses: one position per op, folded ops empty, the plan node at the first. */
static void test_run_layout(void **state)
{
	struct cap_op ops[4] = { rwt_memset_op(BUF_D + 8192, 8, STREAM_A), rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 64, BUF_D + 64, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 128, BUF_D + 128, 64, STREAM_A) };
	const struct cap_op *ptr[4];
	struct rw_config on = { 1, NULL, NULL, NULL }, off = { 1, "-coalesce", NULL, NULL };
	struct rw_config zero = { 0, NULL, NULL, NULL }, zero_on = { 0, "+coalesce", NULL, NULL }, none = { -1, "+coalesce", NULL, NULL };
	struct rw_run *r, *r0;
	struct cap_op tmp;
	const struct cap_op *op;

	(void)state;
	rwt_ptrs(ops, 4, ptr);
	assert_null(rw_run_create(ptr, 4, &off)); /* nothing fires: no run */
	r = rw_run_create(ptr, 4, &on);
	assert_non_null(r);
	assert_false(rw_run_is_folded(r, 0));
	assert_false(rw_run_is_folded(r, 1));
	assert_true(rw_run_is_folded(r, 2));
	assert_true(rw_run_is_folded(r, 3));
	assert_true(rw_run_guards_hold(r, ops));
	assert_ptr_equal(rw_run_op(r, 0, ops, &tmp), &ops[0]);
	op = rw_run_op(r, 1, ops, &tmp);
	assert_ptr_equal(op, &tmp);
	assert_int_equal(op->u.memcpy.bytes, 192);
	assert_null(rw_run_op(r, 2, ops, &tmp));
	/* CUFOLD_OPT=0 rewrites nothing, but a rule CUFOLD_RULES switches on runs at level 0 too;
	 * a shape replayed unrewritten (negative level) runs no rule, whatever the switches */
	assert_null(rw_run_create(ptr, 4, &zero));
	assert_null(rw_run_create(ptr, 4, &none));
	r0 = rw_run_create(ptr, 4, &zero_on);
	assert_non_null(r0);
	assert_true(rw_run_is_folded(r0, 2));
	assert_true(rw_run_is_folded(r0, 3));
	assert_int_equal(rw_run_op(r0, 1, ops, &tmp)->u.memcpy.bytes, 192);
	rw_run_destroy(r0);
	/* a launch whose last piece moved: the guards fail */
	ops[3].u.memcpy.dst_first += 64;
	assert_false(rw_run_guards_hold(r, ops));
	rw_run_destroy(r);
}

/* ------------------------------------------------------------------ negative */

static void test_src_not_abutting(void **state)
{
	struct cap_op ops[2] = { rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 72, BUF_D + 64, 32, STREAM_A) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
}

static void test_dst_not_abutting(void **state)
{
	struct cap_op ops[2] = { rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 64, BUF_D + 128, 32, STREAM_A) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
}

static void test_backwards(void **state)
{
	/* the second piece lies before the first: abutting the other way round is not this rule */
	struct cap_op ops[2] = { rwt_copy_op(BUF_S + 64, BUF_D + 64, 64, STREAM_A),
				 rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
}

static void test_other_stream(void **state)
{
	struct cap_op ops[2] = { rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 64, BUF_D + 64, 32, STREAM_B) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
}

static void test_op_between(void **state)
{
	struct cap_op ops[3] = { rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A), rwt_memset_op(BUF_D + 4096, 8, STREAM_A),
				 rwt_copy_op(BUF_S + 64, BUF_D + 64, 32, STREAM_A) };

	(void)state;
	rwt_expect_identity(run, ops, 3);
}

static void test_overlap(void **state)
{
	/* src [S, S+128) and dst [S+64, S+192): the first piece writes what the second reads */
	struct cap_op ops[2] = { rwt_copy_op(BUF_S, BUF_S + 64, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 64, BUF_S + 128, 64, STREAM_A) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
}

static void test_not_dtod_async(void **state)
{
	struct cap_op ops[2] = { rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A),
				 rwt_copy_op(BUF_S + 64, BUF_D + 64, 32, STREAM_A) };

	(void)state;
	ops[1].api = DRV_ID_cuMemcpyDtoD_v2; /* synchronous: replay issues it in place */
	rwt_expect_identity(run, ops, 2);
	ops[1].api = DRV_ID_cuMemcpyDtoDAsync_v2;
	ops[1].u.memcpy.dir = CAP_DIR_HTOD;
	rwt_expect_identity(run, ops, 2);
	ops[1].u.memcpy.dir = CAP_DIR_DTOD;
	ops[1].u.memcpy.d.Height = 2; /* 2-D */
	rwt_expect_identity(run, ops, 2);
	ops[1].u.memcpy.d.Height = 1;
	ops[0].flags = CAP_OPF_NO_DEFER;
	rwt_expect_identity(run, ops, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_pieces),       cmocka_unit_test(test_eight_slices),
		cmocka_unit_test(test_two_runs),         cmocka_unit_test(test_run_layout),
		cmocka_unit_test(test_run_op_follows_def),
		cmocka_unit_test(test_run_remembers),
		cmocka_unit_test(test_run_exact),
		cmocka_unit_test(test_src_not_abutting),
		cmocka_unit_test(test_dst_not_abutting), cmocka_unit_test(test_backwards),
		cmocka_unit_test(test_other_stream),     cmocka_unit_test(test_op_between),
		cmocka_unit_test(test_overlap),          cmocka_unit_test(test_not_dtod_async),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
