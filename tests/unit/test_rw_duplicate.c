/* test_rw_duplicate.c - golden and negative tests of the duplicate rule on small hand-made
 * windows: the plan it makes, guards failing when bindings move, and the near misses (an impure
 * kernel, an input or output written between, other arguments, another stream) it must leave
 * alone. tests layer (cmocka, libcufold.a). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/errors.h"
#include "rewrite/plan.h"
#include "rewrite/rewriter.h"
#include "shim/api.h"

extern const struct rw_rule rw_rule_duplicate;

#define STREAM_A ((CUstream)0x1000)
#define STREAM_B ((CUstream)0x2000)
#define BUF_S 0x7f0000000000ull /* a copy's source */
#define BUF_D 0x7f0001000000ull /* a copy's or memset's destination */
#define BUF_E 0x7f0002000000ull /* unrelated memory */
#define BUF_I 0x7f0003000000ull /* a kernel's input */
#define BUF_O 0x7f0004000000ull /* a kernel's output */
#define NB 256                  /* bytes of copies and memsets */
#define NE 64                   /* elements of kernels (NE * 4 bytes) */

/* Parameter layouts as cuFuncGetParamInfo reports them for the built-in cards' kernels. */
static uint32_t fill_off[] = { 0, 8, 12 }, fill_size[] = { 8, 4, 4 };
static uint32_t scale_off[] = { 0, 8, 16, 20 }, scale_size[] = { 8, 8, 4, 4 };
static uint32_t mystery_off[] = { 0, 8 }, mystery_size[] = { 8, 4 };
static const struct cap_func fill_func = { .func = (CUfunction)0x5001, .id = 1, .nparams = 3, .param_bytes = 16,
					   .layout_known = true, .name = "fill", .offset = fill_off,
					   .size = fill_size };
static const struct cap_func scale_func = { .func = (CUfunction)0x5002, .id = 2, .nparams = 4, .param_bytes = 24,
					    .layout_known = true, .name = "scale", .offset = scale_off,
					    .size = scale_size };
/* axpy has scale's layout: y, x, a, n */
static const struct cap_func axpy_func = { .func = (CUfunction)0x5003, .id = 3, .nparams = 4, .param_bytes = 24,
					   .layout_known = true, .name = "axpy", .offset = scale_off,
					   .size = scale_size };
/* a kernel no card describes: it may read and write anything */
static const struct cap_func mystery_func = { .func = (CUfunction)0x5004, .id = 4, .nparams = 2, .param_bytes = 12,
					      .layout_known = true, .name = "mystery", .offset = mystery_off,
					      .size = mystery_size };

static uint16_t slot_of(CUstream s)
{
	return s == STREAM_A ? 0 : 1;
}

/* An asynchronous 1-D device-to-device copy as capture records it. */
static struct cap_op copy_op(uint64_t src, uint64_t dst, uint64_t bytes, CUstream s)
{
	struct cap_op op;

	memset(&op, 0, sizeof(op));
	op.kind = CAP_OP_MEMCPY;
	op.api = SHIM_ID_cuMemcpyDtoDAsync_v2;
	op.stream = s;
	op.stream_slot = slot_of(s);
	op.stream_kind = CAP_STREAM_BLOCKING;
	op.u.memcpy.d.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	op.u.memcpy.d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	op.u.memcpy.d.srcDevice = src;
	op.u.memcpy.d.dstDevice = dst;
	op.u.memcpy.d.WidthInBytes = bytes;
	op.u.memcpy.d.Height = 1;
	op.u.memcpy.d.Depth = 1;
	op.u.memcpy.bytes = bytes;
	op.u.memcpy.dir = CAP_DIR_DTOD;
	op.u.memcpy.src_first = src;
	op.u.memcpy.dst_first = dst;
	op.u.memcpy.src_span = bytes;
	op.u.memcpy.dst_span = bytes;
	cap_op_hash(&op);
	return op;
}

/* An asynchronous cuMemsetD8Async of bytes bytes. */
static struct cap_op memset_op(uint64_t dst, uint64_t bytes, CUstream s)
{
	struct cap_op op;

	memset(&op, 0, sizeof(op));
	op.kind = CAP_OP_MEMSET;
	op.api = SHIM_ID_cuMemsetD8Async;
	op.stream = s;
	op.stream_slot = slot_of(s);
	op.stream_kind = CAP_STREAM_BLOCKING;
	op.u.memset.dst = dst;
	op.u.memset.elem_size = 1;
	op.u.memset.width = bytes;
	op.u.memset.pitch = bytes;
	op.u.memset.height = 1;
	cap_op_hash(&op);
	return op;
}

/* A cuLaunchKernel of f over n elements with the packed parameter bytes pb (caller's storage). */
static struct cap_op kernel_op(const struct cap_func *f, unsigned char *pb, uint32_t n, CUstream s)
{
	struct cap_op op;

	memset(&op, 0, sizeof(op));
	op.kind = CAP_OP_KERNEL;
	op.api = SHIM_ID_cuLaunchKernel;
	op.stream = s;
	op.stream_slot = slot_of(s);
	op.stream_kind = CAP_STREAM_BLOCKING;
	op.u.kernel.handle = f->func;
	op.u.kernel.func = f->func;
	op.u.kernel.info = f;
	op.u.kernel.grid[0] = (n + 127) / 128;
	op.u.kernel.grid[1] = op.u.kernel.grid[2] = 1;
	op.u.kernel.block[0] = 128;
	op.u.kernel.block[1] = op.u.kernel.block[2] = 1;
	op.u.kernel.param_size = f->param_bytes;
	op.u.kernel.params = pb;
	cap_op_hash(&op);
	return op;
}

/* fill: x[i] = v, i < n (writes x, n*4 bytes). */
static struct cap_op fill_op(unsigned char *pb, uint64_t x, float v, int32_t n, CUstream s)
{
	memset(pb, 0, fill_func.param_bytes);
	memcpy(pb + fill_off[0], &x, 8);
	memcpy(pb + fill_off[1], &v, 4);
	memcpy(pb + fill_off[2], &n, 4);
	return kernel_op(&fill_func, pb, (uint32_t)n, s);
}

/* f (scale or axpy): two pointers, a float and a count. */
static struct cap_op two_ptr_op(const struct cap_func *f, unsigned char *pb, uint64_t p0, uint64_t p1, float sc,
				int32_t n, CUstream s)
{
	memset(pb, 0, f->param_bytes);
	memcpy(pb + f->offset[0], &p0, 8);
	memcpy(pb + f->offset[1], &p1, 8);
	memcpy(pb + f->offset[2], &sc, 4);
	memcpy(pb + f->offset[3], &n, 4);
	return kernel_op(f, pb, (uint32_t)n, s);
}

/* scale: out[i] = s * in[i], i < n (pure unless out and in overlap). */
static struct cap_op scale_op(unsigned char *pb, uint64_t out, uint64_t in, float sc, int32_t n, CUstream s)
{
	return two_ptr_op(&scale_func, pb, out, in, sc, n, s);
}

static struct cap_op mystery_op(unsigned char *pb, uint64_t p, int32_t n, CUstream s)
{
	memset(pb, 0, mystery_func.param_bytes);
	memcpy(pb + mystery_off[0], &p, 8);
	memcpy(pb + mystery_off[1], &n, 4);
	return kernel_op(&mystery_func, pb, (uint32_t)n, s);
}

static struct cap_op event_record_op(CUstream s)
{
	struct cap_op op;

	memset(&op, 0, sizeof(op));
	op.kind = CAP_OP_EVENT_RECORD;
	op.api = SHIM_ID_cuEventRecord;
	op.stream = s;
	op.stream_slot = slot_of(s);
	op.stream_kind = CAP_STREAM_BLOCKING;
	op.u.event.event = (CUevent)0x3000;
	cap_op_hash(&op);
	return op;
}

static void ptrs(struct cap_op *ops, uint32_t n, const struct cap_op **ptr)
{
	for (uint32_t i = 0; i < n; i++)
		ptr[i] = &ops[i];
}

/* Rewrite ops[0..n) with duplicate alone; the plan's one-line form into buf. */
static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	const struct cap_op *ptr[16];
	const struct rw_rule *rules[1] = { &rw_rule_duplicate };
	struct rw_plan *p;

	assert_true(n <= 16);
	ptrs(ops, n, ptr);
	p = rw_rewrite(ptr, n, NULL, NULL, rules, 1);
	assert_non_null(p);
	rw_plan_format(p, buf, cap);
	return p;
}

static void expect_identity(struct cap_op *ops, uint32_t n)
{
	char buf[2048];
	struct rw_plan *p = run(ops, n, buf, sizeof(buf));

	assert_true(rw_plan_is_identity(p));
	assert_int_equal(p->nnodes, n);
	assert_int_equal(p->nguards, 0);
	assert_int_equal(p->nstats, 0);
	rw_plan_destroy(p);
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
	ops[0] = memset_op(BUF_D, NB, STREAM_A);
	ops[1] = memset_op(BUF_D, NB, STREAM_A);
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) | pure(0,0) same_op(0,1)");
	assert_int_equal(p->nstats, 1);
	assert_string_equal(p->stats[0].rule, "duplicate");
	assert_int_equal(p->stats[0].count, 1);
	ptrs(ops, 2, ptr);
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
		ops[i] = memset_op(BUF_D, NB, STREAM_A);
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) | pure(0,0) same_op(0,1) same_op(0,2)");
	assert_int_equal(p->stats[0].count, 2);
	ptrs(ops, 3, ptr);
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
	ops[0] = fill_op(pb[0], BUF_O, 1.5f, NE, STREAM_A);
	ops[1] = copy_op(BUF_S, BUF_E, NB, STREAM_A);
	ops[2] = fill_op(pb[1], BUF_O, 1.5f, NE, STREAM_A);
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) op(1) | pure(0,0) same_op(0,2) unwritten(0,1)");
	ptrs(ops, 3, ptr);
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

		memcpy(pb[1] + fill_off[1], &v, 4);
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
	ops[0] = scale_op(pb[0], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	ops[1] = memset_op(BUF_E, NB, STREAM_A);
	ops[2] = scale_op(pb[1], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) op(1) | pure(0,0) same_op(0,2) unwritten(0,1)");
	ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* the memset moves onto the input */
	ops[1].u.memset.dst = BUF_I + 8;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_UNWRITTEN);
	ops[1].u.memset.dst = BUF_E;
	/* both launches become in place (the same bindings, no longer pure) */
	{
		uint64_t out = BUF_I;

		memcpy(pb[0] + scale_off[0], &out, 8);
		memcpy(pb[1] + scale_off[0], &out, 8);
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
	ops[0] = copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = copy_op(BUF_D, BUF_E, NB, STREAM_A);
	ops[2] = copy_op(BUF_S, BUF_D, NB, STREAM_A);
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) op(1) | pure(0,0) same_op(0,2) unwritten(0,1)");
	ptrs(ops, 3, ptr);
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

/* Registered at level 1. */
static void test_registered(void **state)
{
	struct rw_config cfg0 = { 0, NULL }, cfg1 = { 1, NULL }, off = { 1, "-duplicate" };

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
	ops[0] = two_ptr_op(&axpy_func, pb[0], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	ops[1] = two_ptr_op(&axpy_func, pb[1], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	expect_identity(ops, 2);
}

/* Something between writes the kernel's input (its last element). */
static void test_input_written_between(void **state)
{
	struct cap_op ops[3];
	unsigned char pb[2][32];

	(void)state;
	ops[0] = scale_op(pb[0], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	ops[1] = memset_op(BUF_I + NE * 4 - 4, 4, STREAM_A);
	ops[2] = scale_op(pb[1], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	expect_identity(ops, 3);
}

/* Something between writes the kernel's output: the repeat would restore it. */
static void test_output_written_between(void **state)
{
	struct cap_op ops[3];
	unsigned char pb[2][32];

	(void)state;
	ops[0] = scale_op(pb[0], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	ops[1] = copy_op(BUF_S, BUF_O + 8, 4, STREAM_A);
	ops[2] = scale_op(pb[1], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	expect_identity(ops, 3);
	/* the same for a memset repeated around a copy into its range */
	ops[0] = memset_op(BUF_D, NB, STREAM_A);
	ops[1] = copy_op(BUF_S, BUF_D + NB - 1, 1, STREAM_A);
	ops[2] = memset_op(BUF_D, NB, STREAM_A);
	expect_identity(ops, 3);
}

/* The same kernel with another scalar is another op. */
static void test_other_scalar(void **state)
{
	struct cap_op ops[2];
	unsigned char pb[2][32];

	(void)state;
	ops[0] = scale_op(pb[0], BUF_O, BUF_I, 2.0f, NE, STREAM_A);
	ops[1] = scale_op(pb[1], BUF_O, BUF_I, 3.0f, NE, STREAM_A);
	expect_identity(ops, 2);
	/* and a memset of another value */
	ops[0] = memset_op(BUF_D, NB, STREAM_A);
	ops[1] = memset_op(BUF_D, NB, STREAM_A);
	ops[1].u.memset.value = 1;
	cap_op_hash(&ops[1]);
	expect_identity(ops, 2);
}

/* scale in place reads what it writes: not pure, whatever the card says. */
static void test_scale_in_place(void **state)
{
	struct cap_op ops[2];
	unsigned char pb[2][32];

	(void)state;
	ops[0] = scale_op(pb[0], BUF_I, BUF_I, 2.0f, NE, STREAM_A);
	ops[1] = scale_op(pb[1], BUF_I, BUF_I, 2.0f, NE, STREAM_A);
	expect_identity(ops, 2);
	/* nor when the ranges only partly overlap */
	ops[0] = scale_op(pb[0], BUF_I + 4, BUF_I, 2.0f, NE, STREAM_A);
	ops[1] = scale_op(pb[1], BUF_I + 4, BUF_I, 2.0f, NE, STREAM_A);
	expect_identity(ops, 2);
	/* nor a copy overlapping itself */
	ops[0] = copy_op(BUF_D, BUF_D + 16, NB, STREAM_A);
	ops[1] = copy_op(BUF_D, BUF_D + 16, NB, STREAM_A);
	expect_identity(ops, 2);
}

/* The repeat is on another stream. */
static void test_other_stream(void **state)
{
	struct cap_op ops[2];
	unsigned char pb[2][32];

	(void)state;
	ops[0] = fill_op(pb[0], BUF_O, 1.5f, NE, STREAM_A);
	ops[1] = fill_op(pb[1], BUF_O, 1.5f, NE, STREAM_B);
	expect_identity(ops, 2);
	ops[0] = memset_op(BUF_D, NB, STREAM_A);
	ops[1] = memset_op(BUF_D, NB, STREAM_B);
	expect_identity(ops, 2);
}

/* Between them, a kernel without a card (may write anything) or an event record. */
static void test_unknown_between(void **state)
{
	struct cap_op ops[3];
	unsigned char pb[3][32];

	(void)state;
	ops[0] = fill_op(pb[0], BUF_O, 1.5f, NE, STREAM_A);
	ops[1] = mystery_op(pb[1], BUF_E, 16, STREAM_A);
	ops[2] = fill_op(pb[2], BUF_O, 1.5f, NE, STREAM_A);
	expect_identity(ops, 3);
	ops[1] = event_record_op(STREAM_A);
	expect_identity(ops, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_memset),          cmocka_unit_test(test_memset_thrice),
		cmocka_unit_test(test_same_fill),            cmocka_unit_test(test_same_scale),
		cmocka_unit_test(test_same_copy),            cmocka_unit_test(test_registered),
		cmocka_unit_test(test_axpy_twice),           cmocka_unit_test(test_input_written_between),
		cmocka_unit_test(test_output_written_between), cmocka_unit_test(test_other_scalar),
		cmocka_unit_test(test_scale_in_place),       cmocka_unit_test(test_other_stream),
		cmocka_unit_test(test_unknown_between),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
