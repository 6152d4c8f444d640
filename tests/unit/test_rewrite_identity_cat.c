/* test_rewrite_identity_cat.c - golden and negative tests of the identity-cat rule on small hand-made
 * windows: a `cat` launch whose inputs already abut in order becomes one copy (its one-line form,
 * the derived copy), guards failing when bindings move, and the near misses it must leave alone.
 * tests layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <string.h>

#include "common/errors.h"
#include "rewrite/effects.h"
#include "rw_test.h"

extern const struct rw_rule rw_rule_identity_cat;

#define BUF_A 0x7f0000000000ull /* the inputs */
#define BUF_O 0x7f0001000000ull /* the output */
#define CAT_FUNC ((CUfunction)0xca7)
#define CAT_PARAMS 112 /* struct cat_args (104) then the output pointer */

/* The builtin card `cat`: args struct 104 (8 pointers at 0, 8 element counts (4 bytes each) at
 * 64, the count at 96), then out ptr w. */
static uint32_t cat_offset[2] = { 0, 104 };
static uint32_t cat_size[2] = { 104, 8 };
static const struct cap_func cat_info = RWT_FUNC(CAT_FUNC, 1, "cat", 2, CAT_PARAMS, cat_offset, cat_size);
/* The same layout under a name no card matches. */
static const struct cap_func mystery_info = RWT_FUNC(CAT_FUNC, 2, "my_concat", 2, CAT_PARAMS, cat_offset, cat_size);

/* A launch of cat gathering in[0..count) (n[i] floats each) into out; params: its bytes. */
static struct cap_op cat_op(unsigned char *params, uint64_t out, const uint64_t *in, const int32_t *n, int32_t count)
{
	memset(params, 0, CAT_PARAMS);
	for (int32_t i = 0; i < count; i++) {
		rwt_put_u64(params, 8 * (uint32_t)i, in[i]);
		rwt_put_i32(params, 64 + 4 * (uint32_t)i, n[i]);
	}
	rwt_put_i32(params, 96, count);
	rwt_put_u64(params, 104, out);
	return rwt_kernel_op(&cat_info, params, 4, 256, STREAM_A);
}

/* Point input i (or the output, i = -1) of a launch made by cat_op elsewhere. */
static void cat_move(struct cap_op *op, int i, uint64_t addr)
{
	rwt_set_param_u64(op, i < 0 ? 104 : 8 * (uint32_t)i, addr);
}

/* Rewrite ops[0..n) with identity-cat alone; the plan's one-line form into buf. */
static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	const struct rw_rule *rules[1] = { &rw_rule_identity_cat };

	return rwt_run(ops, n, rules, 1, buf, cap);
}

/* The copy a cat_copy node derives: src -> dst, bytes, 1-D, asynchronous, on the cat's stream. */
static void check_copy(const struct cap_op *out, uint64_t src, uint64_t dst, uint64_t bytes)
{
	assert_int_equal(out->kind, CAP_OP_MEMCPY);
	assert_int_equal(out->api, DRV_ID_cuMemcpyDtoDAsync_v2);
	assert_ptr_equal(out->stream, STREAM_A);
	assert_int_equal(out->stream_kind, CAP_STREAM_BLOCKING);
	assert_int_equal(out->u.memcpy.dir, CAP_DIR_DTOD);
	assert_int_equal(out->u.memcpy.d.srcMemoryType, CU_MEMORYTYPE_DEVICE);
	assert_int_equal(out->u.memcpy.d.dstMemoryType, CU_MEMORYTYPE_DEVICE);
	assert_int_equal(out->u.memcpy.d.srcDevice, src);
	assert_int_equal(out->u.memcpy.src_first, src);
	assert_int_equal(out->u.memcpy.d.dstDevice, dst);
	assert_int_equal(out->u.memcpy.dst_first, dst);
	assert_int_equal(out->u.memcpy.bytes, bytes);
	assert_int_equal(out->u.memcpy.d.WidthInBytes, bytes);
	assert_int_equal(out->u.memcpy.src_span, bytes);
	assert_int_equal(out->u.memcpy.dst_span, bytes);
	assert_int_equal(out->u.memcpy.d.Height, 1);
	assert_int_equal(out->u.memcpy.d.Depth, 1);
	assert_true(rw_op_is_linear_dtod(out));
}

/* ------------------------------------------------------------------ golden */

/* Three inputs end to end from A: one copy A -> out of (16 + 32 + 8) * 4 bytes. */
static void test_three_inputs(void **state)
{
	static unsigned char params[CAT_PARAMS];
	const uint64_t in[3] = { BUF_A, BUF_A + 16 * 4, BUF_A + (16 + 32) * 4 };
	const int32_t n[3] = { 16, 32, 8 };
	struct cap_op ops[1] = { cat_op(params, BUF_O, in, n, 3) };
	const struct cap_op *ptr[1];
	struct cap_op out;
	char buf[512];
	struct rw_plan *p = run(ops, 1, buf, sizeof(buf));
	uint32_t failed = 999;

	(void)state;
	assert_string_equal(buf, "cat_copy(0) | cat_identity(0,0)");
	assert_int_equal(p->nodes[0].kind, RW_NODE_CAT_COPY);
	assert_string_equal(p->nodes[0].rule, "identity-cat");
	assert_int_equal(p->nstats, 1);
	assert_string_equal(p->stats[0].rule, "identity-cat");
	rwt_ptrs(ops, 1, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	check_copy(&out, BUF_A, BUF_O, 224);

	/* the whole gather moved elsewhere, still abutting: holds, the copy follows */
	cat_move(&ops[0], 0, BUF_A + 0x1000);
	cat_move(&ops[0], 1, BUF_A + 0x1000 + 64);
	cat_move(&ops[0], 2, BUF_A + 0x1000 + 192);
	cat_move(&ops[0], -1, BUF_O + 0x2000);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	check_copy(&out, BUF_A + 0x1000, BUF_O + 0x2000, 224);

	/* input 1 moves by one float: a gap */
	cat_move(&ops[0], 1, BUF_A + 0x1000 + 68);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_CAT_IDENTITY);
	cat_move(&ops[0], 1, BUF_A + 0x1000 + 64);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* the output moves onto the last input */
	cat_move(&ops[0], -1, BUF_A + 0x1000 + 200);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_CAT_IDENTITY);
	rw_plan_destroy(p);
}

/* One input is a copy too; ops around the cat stay as they are. */
static void test_one_input_between(void **state)
{
	static unsigned char params[CAT_PARAMS];
	const uint64_t in[1] = { BUF_A + 0x100 };
	const int32_t n[1] = { 5 };
	struct cap_op ops[3] = { rwt_copy_op(BUF_A + 0x8000, BUF_A + 0x100, 20, STREAM_A),
				 cat_op(params, BUF_O, in, n, 1), rwt_copy_op(BUF_O, BUF_A + 0x9000, 20, STREAM_A) };
	const struct cap_op *ptr[3];
	struct cap_op out;
	char buf[512];
	struct rw_plan *p = run(ops, 3, buf, sizeof(buf));

	(void)state;
	assert_string_equal(buf, "op(0) cat_copy(1) op(2) | cat_identity(1,1)");
	rwt_ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	check_copy(&out, BUF_A + 0x100, BUF_O, 20);
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.u.memcpy.src_first, BUF_A + 0x8000);
	rw_plan_destroy(p);
}

/* ------------------------------------------------------------------ negative */

static void test_not_in_order(void **state)
{
	static unsigned char params[CAT_PARAMS];
	/* entry 1 ends where entry 0 starts: abutting, but the wrong way round */
	const uint64_t in[2] = { BUF_A + 32 * 4, BUF_A };
	const int32_t n[2] = { 16, 32 };
	struct cap_op ops[1] = { cat_op(params, BUF_O, in, n, 2) };

	(void)state;
	rwt_expect_identity(run, ops, 1);
}

static void test_gap(void **state)
{
	static unsigned char params[CAT_PARAMS];
	const uint64_t in[3] = { BUF_A, BUF_A + 16 * 4, BUF_A + (16 + 32) * 4 + 4 };
	const int32_t n[3] = { 16, 32, 8 };
	struct cap_op ops[1] = { cat_op(params, BUF_O, in, n, 3) };

	(void)state;
	rwt_expect_identity(run, ops, 1);
	/* overlapping inputs (entry 1 starts one float early) */
	cat_move(&ops[0], 2, BUF_A + (16 + 32) * 4);
	cat_move(&ops[0], 1, BUF_A + 16 * 4 - 4);
	rwt_expect_identity(run, ops, 1);
}

static void test_overlaps_output(void **state)
{
	static unsigned char params[CAT_PARAMS];
	const uint64_t in[3] = { BUF_A, BUF_A + 16 * 4, BUF_A + (16 + 32) * 4 };
	const int32_t n[3] = { 16, 32, 8 };
	struct cap_op ops[1] = { cat_op(params, BUF_A + 64, in, n, 3) }; /* out starts at input 1 */

	(void)state;
	rwt_expect_identity(run, ops, 1);
	cat_move(&ops[0], -1, BUF_A - 220); /* out's last float is input 0's first */
	rwt_expect_identity(run, ops, 1);
	cat_move(&ops[0], -1, BUF_A - 224); /* out ends where the inputs start: fires */
	{
		char buf[256];
		struct rw_plan *p = run(ops, 1, buf, sizeof(buf));

		assert_string_equal(buf, "cat_copy(0) | cat_identity(0,0)");
		rw_plan_destroy(p);
	}
}

/* The cat kernel writes out[i] only for the threads it has (i < gridDim.x * blockDim.x): a grid
 * smaller than the total writes part of the output, which the copy would overwrite whole
 * (cards.h: a cat's written span is what it surely writes only with RW_SET_COVERS). */
static void test_grid_short(void **state)
{
	static unsigned char params[CAT_PARAMS];
	const uint64_t in[3] = { BUF_A, BUF_A + 16 * 4, BUF_A + (16 + 32) * 4 };
	const int32_t n[3] = { 16, 32, 8 };
	struct cap_op ops[1] = { cat_op(params, BUF_O, in, n, 3) };

	(void)state;
	ops[0].u.kernel.grid[0] = 1;
	ops[0].u.kernel.block[0] = 32; /* 32 threads for 56 floats */
	rwt_expect_identity(run, ops, 1);
}

static void test_unknown_kernel(void **state)
{
	static unsigned char params[CAT_PARAMS];
	const uint64_t in[2] = { BUF_A, BUF_A + 16 * 4 };
	const int32_t n[2] = { 16, 32 };
	struct cap_op ops[1] = { cat_op(params, BUF_O, in, n, 2) };

	(void)state;
	ops[0].u.kernel.info = &mystery_info; /* no card */
	rwt_expect_identity(run, ops, 1);
}

static void test_not_decodable(void **state)
{
	static unsigned char params[CAT_PARAMS];
	const uint64_t in[2] = { BUF_A, BUF_A + 16 * 4 };
	const int32_t n[2] = { 16, 32 };
	struct cap_op ops[1] = { cat_op(params, BUF_O, in, n, 2) };
	static uint32_t short_size[2] = { 96, 8 };
	static const struct cap_func short_info = { .func = CAT_FUNC, .id = 3, .nparams = 2, .param_bytes = 104,
						    .layout_known = true, .name = "cat", .offset = cat_offset,
						    .size = short_size };
	int32_t zero = 0, neg = -1;

	(void)state;
	memcpy(params + 96, &zero, 4); /* no inputs: nothing to copy */
	rwt_expect_identity(run, ops, 1);
	memcpy(params + 68, &neg, 4); /* a negative length: an unknown span */
	memcpy(params + 96, &(int32_t){ 2 }, 4);
	rwt_expect_identity(run, ops, 1);
	memcpy(params + 68, &n[1], 4);
	ops[0].u.kernel.info = &short_info; /* a layout the card does not fit */
	rwt_expect_identity(run, ops, 1);
	ops[0].u.kernel.info = &cat_info;
	{
		char buf[256];
		struct rw_plan *p = run(ops, 1, buf, sizeof(buf));

		assert_string_equal(buf, "cat_copy(0) | cat_identity(0,0)"); /* restored: fires again */
		rw_plan_destroy(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_three_inputs),    cmocka_unit_test(test_one_input_between),
		cmocka_unit_test(test_not_in_order),    cmocka_unit_test(test_gap),
		cmocka_unit_test(test_overlaps_output), cmocka_unit_test(test_grid_short),
		cmocka_unit_test(test_unknown_kernel),  cmocka_unit_test(test_not_decodable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
