/* test_rewrite_batch_elementwise.c - golden and negative tests of the batch-elementwise rule (level 2)
 * on small hand-made windows of `scale`, `axpy`, `fill` and `gemm` launches: the merged launch
 * (one-line form, summed count, grid from the count), guards failing when bindings move, and the
 * near misses it must leave alone. tests layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <string.h>

#include "common/errors.h"
#include "rw_test.h"

extern const struct rw_rule rw_rule_batch_elementwise;

#define BUF_O 0x7f0000000000ull /* outputs */
#define BUF_I 0x7f0001000000ull /* inputs */
#define MAX_OPS 8
#define MAX_PARAMS 40

/* Builtin cards: scale (out ptr w n*4, in ptr r n*4, s f32, n i32), axpy (y ptr rw, x ptr r,
 * a f32, n i32) and fill (x ptr w n*4, v f32, n i32) are elementwise; gemm (C rw, A r, B r,
 * m n k i32, beta f32) is not. "my_scale" has scale's layout and no card. */
static const struct cap_func scale_info = RWT_FUNC(0x5ca1e, 1, "scale", RWT_LAYOUT_SCALE);
static const struct cap_func axpy_info = RWT_FUNC(0xa8b, 2, "axpy", RWT_LAYOUT_SCALE);
static const struct cap_func mystery_info = RWT_FUNC(0x3e5, 3, "my_scale", RWT_LAYOUT_SCALE);
static const struct cap_func fill_info = RWT_FUNC(0xf111, 4, "fill", RWT_LAYOUT_FILL);
static uint32_t gemm_offset[7] = { 0, 8, 16, 24, 28, 32, 36 };
static uint32_t gemm_size[7] = { 8, 8, 8, 4, 4, 4, 4 };
static const struct cap_func gemm_info = RWT_FUNC(0x6e33, 5, "gemm", 7, 40, gemm_offset, gemm_size);

/* Parameter bytes of the ops of one window, by position. */
static unsigned char params[MAX_OPS][MAX_PARAMS];

/* A 1-D launch of info's kernel at window position slot on STREAM_A; the parameters are set by
 * the caller. */
static struct cap_op launch_op(const struct cap_func *info, uint32_t slot, unsigned grid, unsigned block)
{
	memset(params[slot], 0, MAX_PARAMS);
	return rwt_kernel_op(info, params[slot], grid, block, STREAM_A);
}

/* scale (or axpy, or an unknown kernel of that layout): p0, p1 pointers, s, n; grid from n. */
static struct cap_op pf_op(const struct cap_func *info, uint32_t slot, uint64_t p0, uint64_t p1, float s, int32_t n,
			   unsigned block)
{
	struct cap_op op = launch_op(info, slot, rwt_grid((uint32_t)n, block), block);

	rwt_pack_scale(info, params[slot], p0, p1, s, n);
	return op;
}

static struct cap_op fill_op(uint32_t slot, uint64_t x, float v, int32_t n, unsigned block)
{
	struct cap_op op = launch_op(&fill_info, slot, rwt_grid((uint32_t)n, block), block);

	rwt_pack_fill(&fill_info, params[slot], x, v, n);
	return op;
}

/* gemm over m x n (k = 1, beta 0), its grid as if it were elementwise over m*n. */
static struct cap_op gemm_op(uint32_t slot, uint64_t c, uint64_t a, uint64_t b, int32_t m, int32_t n)
{
	struct cap_op op = launch_op(&gemm_info, slot, rwt_grid((uint32_t)(m * n), 256), 256);

	rwt_put_u64(params[slot], 0, c);
	rwt_put_u64(params[slot], 8, a);
	rwt_put_u64(params[slot], 16, b);
	rwt_put_i32(params[slot], 24, m);
	rwt_put_i32(params[slot], 28, n);
	rwt_put_i32(params[slot], 32, 1);
	rwt_put_f32(params[slot], 36, 0.0f);
	return op;
}

/* Rewrite ops[0..n) with batch-elementwise alone; the plan's one-line form into buf. */
static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	const struct rw_rule *rules[1] = { &rw_rule_batch_elementwise };

	return rwt_run(ops, n, rules, 1, buf, cap);
}

/* ------------------------------------------------------------------ golden */

/* Three scale launches over abutting chunks, one s: one launch over n = 3300, grid 13. */
static void test_three_scales(void **state)
{
	struct cap_op ops[3] = { pf_op(&scale_info, 0, BUF_O, BUF_I, 2.0f, 1000, 256),
				 pf_op(&scale_info, 1, BUF_O + 4000, BUF_I + 4000, 2.0f, 300, 256),
				 pf_op(&scale_info, 2, BUF_O + 5200, BUF_I + 5200, 2.0f, 2000, 256) };
	const struct cap_op *ptr[3];
	struct cap_op out;
	char buf[1024];
	struct rw_plan *p = run(ops, 3, buf, sizeof(buf));
	uint32_t failed = 999;

	(void)state;
	assert_string_equal(buf, "elementwise(0,1,2) | elem_abuts(0,1) elem_safe(0,1) elem_abuts(1,2) elem_safe(0,2)");
	assert_int_equal(p->nnodes, 1);
	assert_int_equal(p->nodes[0].kind, RW_NODE_ELEMENTWISE);
	assert_string_equal(p->nodes[0].rule, "batch-elementwise");
	assert_int_equal(p->nstats, 1);
	assert_string_equal(p->stats[0].rule, "batch-elementwise");
	assert_int_equal(p->stats[0].count, 2);
	rwt_ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_KERNEL);
	assert_int_equal(out.api, DRV_ID_cuLaunchKernel);
	assert_ptr_equal(out.u.kernel.func, scale_info.func);
	assert_ptr_equal(out.u.kernel.info, &scale_info);
	assert_ptr_equal(out.stream, STREAM_A);
	assert_int_equal(out.u.kernel.grid[0], 13);
	assert_int_equal(out.u.kernel.grid[1], 1);
	assert_int_equal(out.u.kernel.block[0], 256);
	assert_int_equal(out.u.kernel.param_size, 24);
	assert_ptr_not_equal(out.u.kernel.params, params[0]); /* the plan's scratch, not the op's */
	assert_int_equal(rwt_param_u64(&out, 0), BUF_O);
	assert_int_equal(rwt_param_u64(&out, 8), BUF_I);
	assert_true(rwt_param_f32(&out, 16) == 2.0f);
	assert_int_equal(rwt_param_i32(&out, 20), 3300);
	assert_int_equal(rwt_param_i32(&ops[0], 20), 1000); /* the original is untouched */

	/* the window shifted as a whole: still one launch, derived afresh */
	for (uint32_t i = 0; i < 3; i++) {
		rwt_set_param_u64(&ops[i], 0, rwt_param_u64(&ops[i], 0) + 0x100);
		rwt_set_param_u64(&ops[i], 8, rwt_param_u64(&ops[i], 8) + 0x100);
	}
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(rwt_param_u64(&out, 0), BUF_O + 0x100);
	assert_int_equal(rwt_param_u64(&out, 8), BUF_I + 0x100);

	/* launch 1 reads one float further on: its input no longer abuts */
	rwt_set_param_u64(&ops[1], 8, rwt_param_u64(&ops[1], 8) + 4);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_ELEM_ABUTS);
	assert_int_equal(p->guards[failed].a, 0);
	assert_int_equal(p->guards[failed].b, 1);
	rwt_set_param_u64(&ops[1], 8, rwt_param_u64(&ops[1], 8) - 4);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* launch 2 scales by another s */
	{
		float s = 3.0f;

		memcpy(params[2] + 16, &s, 4);
	}
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_ELEM_ABUTS);
	assert_int_equal(p->guards[failed].a, 1);
	assert_int_equal(p->guards[failed].b, 2);
	rw_plan_destroy(p);
}

/* The outputs land on the inputs shifted by a whole launch (out = in + 3300 floats, everything
 * abutting): each launch alone is fine, but the union of writes meets the union of reads. */
static void test_guard_safe_moves(void **state)
{
	struct cap_op ops[2] = { pf_op(&scale_info, 0, BUF_O, BUF_I, 2.0f, 1000, 256),
				 pf_op(&scale_info, 1, BUF_O + 4000, BUF_I + 4000, 2.0f, 1000, 256) };
	const struct cap_op *ptr[2];
	char buf[1024];
	struct rw_plan *p = run(ops, 2, buf, sizeof(buf));
	uint32_t failed = 999;

	(void)state;
	assert_string_equal(buf, "elementwise(0,1) | elem_abuts(0,1) elem_safe(0,1)");
	rwt_ptrs(ops, 2, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* in = out + 4000 bytes: launch 1 reads [O+8000, ..), launch 0 writes [O, O+4000), but
	 * launch 0 reads [O+4000, O+8000), which launch 1 writes */
	rwt_set_param_u64(&ops[0], 8, BUF_O + 4000);
	rwt_set_param_u64(&ops[1], 8, BUF_O + 8000);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_ELEM_SAFE);
	rw_plan_destroy(p);
}

/* axpy: y is read and written, the same pointer chunk per launch: merges. */
static void test_axpy(void **state)
{
	struct cap_op ops[3] = { pf_op(&axpy_info, 0, BUF_O, BUF_I, 0.5f, 512, 128),
				 pf_op(&axpy_info, 1, BUF_O + 2048, BUF_I + 2048, 0.5f, 100, 128),
				 pf_op(&axpy_info, 2, BUF_O + 2448, BUF_I + 2448, 0.5f, 1, 128) };
	const struct cap_op *ptr[3];
	struct cap_op out;
	char buf[1024];
	struct rw_plan *p = run(ops, 3, buf, sizeof(buf));

	(void)state;
	assert_string_equal(buf, "elementwise(0,1,2) | elem_abuts(0,1) elem_safe(0,1) elem_abuts(1,2) elem_safe(0,2)");
	assert_int_equal(p->nnodes, 1);
	rwt_ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_ptr_equal(out.u.kernel.info, &axpy_info);
	assert_int_equal(rwt_param_i32(&out, 20), 613);
	assert_int_equal(out.u.kernel.grid[0], 5); /* ceil(613 / 128) */
	assert_int_equal(out.u.kernel.block[0], 128);
	assert_int_equal(rwt_param_u64(&out, 0), BUF_O);
	assert_int_equal(rwt_param_u64(&out, 8), BUF_I);
	rw_plan_destroy(p);
}

/* fill: one written pointer only; and two separate runs. */
static void test_fill_runs(void **state)
{
	struct cap_op ops[4] = { fill_op(0, BUF_O, 1.0f, 64, 64), fill_op(1, BUF_O + 256, 1.0f, 64, 64),
				 fill_op(2, BUF_O + 0x1000, 1.0f, 64, 64), fill_op(3, BUF_O + 0x1100, 1.0f, 10, 64) };
	const struct cap_op *ptr[4];
	struct cap_op out;
	char buf[1024];
	struct rw_plan *p = run(ops, 4, buf, sizeof(buf));

	(void)state;
	assert_string_equal(buf, "elementwise(0,1) elementwise(2,3) | elem_abuts(0,1) elem_safe(0,1) elem_abuts(2,3) "
				 "elem_safe(2,3)");
	rwt_ptrs(ops, 4, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(rwt_param_i32(&out, 12), 128);
	assert_int_equal(out.u.kernel.grid[0], 2);
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	assert_int_equal(rwt_param_u64(&out, 0), BUF_O + 0x1000);
	assert_int_equal(rwt_param_i32(&out, 12), 74);
	assert_int_equal(out.u.kernel.grid[0], 2);
	rw_plan_destroy(p);
}

static void test_level(void **state)
{
	struct rw_config one = { 1, NULL, NULL, NULL }, two = { 2, NULL, NULL, NULL }, forced = { 1, "+batch-elementwise", NULL, NULL };

	(void)state;
	assert_int_equal(rw_rule_batch_elementwise.level, 2);
	assert_false(rw_rule_is_enabled(&rw_rule_batch_elementwise, &one));
	assert_true(rw_rule_is_enabled(&rw_rule_batch_elementwise, &two));
	assert_true(rw_rule_is_enabled(&rw_rule_batch_elementwise, &forced));
}

/* ------------------------------------------------------------------ negative */

static void test_other_scalar(void **state)
{
	struct cap_op ops[2] = { pf_op(&scale_info, 0, BUF_O, BUF_I, 2.0f, 1000, 256),
				 pf_op(&scale_info, 1, BUF_O + 4000, BUF_I + 4000, 2.5f, 300, 256) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
}

static void test_gap(void **state)
{
	struct cap_op ops[2] = { pf_op(&scale_info, 0, BUF_O, BUF_I, 2.0f, 1000, 256),
				 pf_op(&scale_info, 1, BUF_O + 4004, BUF_I + 4000, 2.0f, 300, 256) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
	/* the second chunk before the first */
	ops[1] = pf_op(&scale_info, 1, BUF_O - 1200, BUF_I - 1200, 2.0f, 300, 256);
	rwt_expect_identity(run, ops, 2);
}

static void test_grid_not_derived(void **state)
{
	struct cap_op ops[2] = { pf_op(&scale_info, 0, BUF_O, BUF_I, 2.0f, 1000, 256),
				 pf_op(&scale_info, 1, BUF_O + 4000, BUF_I + 4000, 2.0f, 300, 256) };

	(void)state;
	ops[1].u.kernel.grid[0]++; /* one block too many */
	rwt_expect_identity(run, ops, 2);
	ops[1].u.kernel.grid[0] -= 2; /* too few: does not cover n */
	rwt_expect_identity(run, ops, 2);
	ops[1].u.kernel.grid[0]++;
	ops[1].u.kernel.grid[1] = 2; /* 2-D */
	rwt_expect_identity(run, ops, 2);
}

/* out chunk k is in chunk k+1: launch 1 reads what launch 0 wrote. */
static void test_shifted(void **state)
{
	struct cap_op ops[2] = { pf_op(&scale_info, 0, BUF_O, BUF_O - 4000, 2.0f, 1000, 256),
				 pf_op(&scale_info, 1, BUF_O + 4000, BUF_O, 2.0f, 1000, 256) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
	/* the other way: launch 1 writes what launch 0 read */
	ops[0] = pf_op(&scale_info, 0, BUF_O, BUF_O + 4000, 2.0f, 1000, 256);
	ops[1] = pf_op(&scale_info, 1, BUF_O + 4000, BUF_O + 8000, 2.0f, 1000, 256);
	rwt_expect_identity(run, ops, 2);
}

static void test_other_block(void **state)
{
	struct cap_op ops[2] = { pf_op(&scale_info, 0, BUF_O, BUF_I, 2.0f, 1024, 256),
				 pf_op(&scale_info, 1, BUF_O + 4096, BUF_I + 4096, 2.0f, 1024, 128) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
}

static void test_other_stream_or_kernel(void **state)
{
	struct cap_op ops[2] = { pf_op(&scale_info, 0, BUF_O, BUF_I, 2.0f, 1000, 256),
				 pf_op(&scale_info, 1, BUF_O + 4000, BUF_I + 4000, 2.0f, 300, 256) };

	(void)state;
	ops[1].stream = STREAM_B;
	ops[1].stream_slot = 1;
	rwt_expect_identity(run, ops, 2);
	/* same layout, same scalars, the other kernel */
	ops[1] = pf_op(&axpy_info, 1, BUF_O + 4000, BUF_I + 4000, 2.0f, 300, 256);
	rwt_expect_identity(run, ops, 2);
}

static void test_not_elementwise(void **state)
{
	struct cap_op ops[2] = { gemm_op(0, BUF_O, BUF_I, BUF_I + 0x10000, 16, 16),
				 gemm_op(1, BUF_O + 1024, BUF_I + 64, BUF_I + 0x10000 + 64, 16, 16) };

	(void)state;
	rwt_expect_identity(run, ops, 2);
	ops[0] = pf_op(&mystery_info, 0, BUF_O, BUF_I, 2.0f, 1000, 256); /* no card */
	ops[1] = pf_op(&mystery_info, 1, BUF_O + 4000, BUF_I + 4000, 2.0f, 300, 256);
	rwt_expect_identity(run, ops, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_three_scales),     cmocka_unit_test(test_guard_safe_moves),
		cmocka_unit_test(test_axpy),             cmocka_unit_test(test_fill_runs),
		cmocka_unit_test(test_level),            cmocka_unit_test(test_other_scalar),
		cmocka_unit_test(test_gap),              cmocka_unit_test(test_grid_not_derived),
		cmocka_unit_test(test_shifted),          cmocka_unit_test(test_other_block),
		cmocka_unit_test(test_other_stream_or_kernel), cmocka_unit_test(test_not_elementwise),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
