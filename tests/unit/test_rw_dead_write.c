/* test_rw_dead_write.c - golden and negative tests of the dead-write rule on small hand-made
 * windows: the plan it makes, guards failing when bindings move, and the near misses (a read,
 * an unknown kernel, another stream, an event, a partial overwrite) it must leave alone. tests
 * layer (cmocka, libcufold.a). */
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

extern const struct rw_rule rw_rule_dead_write;

#define STREAM_A ((CUstream)0x1000)
#define STREAM_B ((CUstream)0x2000)
#define BUF_S 0x7f0000000000ull /* a source nobody writes */
#define BUF_D 0x7f0001000000ull /* the buffer written twice */
#define BUF_E 0x7f0002000000ull /* unrelated memory */
#define BUF_F 0x7f0003000000ull /* unrelated memory */
#define NB 256                  /* bytes of the dead write */

/* Parameter layouts as cuFuncGetParamInfo reports them for the built-in cards' kernels. */
static uint32_t scale_off[] = { 0, 8, 16, 20 }, scale_size[] = { 8, 8, 4, 4 };
static uint32_t mystery_off[] = { 0, 8 }, mystery_size[] = { 8, 4 };
static const struct cap_func scale_func = { .func = (CUfunction)0x5001, .id = 1, .nparams = 4, .param_bytes = 24,
					    .layout_known = true, .name = "scale", .offset = scale_off,
					    .size = scale_size };
/* a kernel no card describes: it may read and write anything */
static const struct cap_func mystery_func = { .func = (CUfunction)0x5002, .id = 2, .nparams = 2, .param_bytes = 12,
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

/* scale: out[i] = s * in[i], i < n (reads in, writes out, n*4 bytes each). */
static struct cap_op scale_op(unsigned char *pb, uint64_t out, uint64_t in, float sc, int32_t n, CUstream s)
{
	memset(pb, 0, scale_func.param_bytes);
	memcpy(pb + scale_off[0], &out, 8);
	memcpy(pb + scale_off[1], &in, 8);
	memcpy(pb + scale_off[2], &sc, 4);
	memcpy(pb + scale_off[3], &n, 4);
	return kernel_op(&scale_func, pb, (uint32_t)n, s);
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

/* Rewrite ops[0..n) with dead-write alone; the plan's one-line form into buf. */
static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	const struct cap_op *ptr[16];
	const struct rw_rule *rules[1] = { &rw_rule_dead_write };
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

/* copy S -> D, then a memset of all of D: the copy is never seen. */
static void test_copy_then_memset(void **state)
{
	struct cap_op ops[2], out;
	const struct cap_op *ptr[2];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = memset_op(BUF_D, NB, STREAM_A);
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "op(1) | linear_dtod(0,0) covers(0,1) unread(0,1)");
	assert_int_equal(p->nstats, 1);
	assert_string_equal(p->stats[0].rule, "dead-write");
	assert_int_equal(p->stats[0].count, 1);
	ptrs(ops, 2, ptr);
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
	ops[0].api = SHIM_ID_cuMemcpyDtoD_v2;
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
	ops[0] = memset_op(BUF_D + 16, NB, STREAM_A);
	ops[1] = copy_op(BUF_S, BUF_D, NB + 64, STREAM_A);
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "op(1) | set_1d(0,0) covers(0,1) unread(0,1)");
	ptrs(ops, 2, ptr);
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
	ops[0] = memset_op(BUF_D, NB, STREAM_A);
	ops[1] = copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[2] = memset_op(BUF_D, NB, STREAM_A);
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(2) | set_1d(0,0) covers(0,1) unread(0,1) linear_dtod(1,1) covers(1,2) "
				 "unread(1,2)");
	assert_int_equal(p->nstats, 1);
	assert_int_equal(p->stats[0].count, 2);
	ptrs(ops, 3, ptr);
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
	ops[0] = copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = scale_op(pb, BUF_E, BUF_F, 2.0f, NB / 4, STREAM_A);
	ops[2] = memset_op(BUF_D, NB, STREAM_A);
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(1) op(2) | linear_dtod(0,0) covers(0,2) unread(0,1) unread(0,2)");
	ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_KERNEL);
	assert_ptr_equal(out.u.kernel.params, pb);
	/* the kernel's input moves onto the last bytes of D: it reads the copy's bytes */
	{
		uint64_t in = BUF_D + NB - 4;

		memcpy(pb + scale_off[1], &in, 8);
	}
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_UNREAD);
	assert_int_equal(p->guards[failed].b, 1);
	rw_plan_destroy(p);
}

/* Registered at level 1. */
static void test_registered(void **state)
{
	struct rw_config cfg0 = { 0, NULL }, cfg1 = { 1, NULL }, off = { 1, "-dead-write" };

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
	ops[0] = copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = copy_op(BUF_D + NB - 1, BUF_E, 1, STREAM_A);
	ops[2] = memset_op(BUF_D, NB, STREAM_A);
	expect_identity(ops, 3);
}

/* A scale kernel between reads D through its input. */
static void test_kernel_reads_between(void **state)
{
	struct cap_op ops[3];
	unsigned char pb[32];

	(void)state;
	ops[0] = memset_op(BUF_D, NB, STREAM_A);
	ops[1] = scale_op(pb, BUF_E, BUF_D + 64, 2.0f, 4, STREAM_A);
	ops[2] = copy_op(BUF_S, BUF_D, NB, STREAM_A);
	expect_identity(ops, 3);
}

/* A kernel without a card between may read anything, even given only unrelated pointers. */
static void test_unknown_kernel_between(void **state)
{
	struct cap_op ops[3];
	unsigned char pb[32];

	(void)state;
	ops[0] = copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = mystery_op(pb, BUF_E, 16, STREAM_A);
	ops[2] = memset_op(BUF_D, NB, STREAM_A);
	expect_identity(ops, 3);
}

/* The overwrite is on another stream: it may run before the write, or a reader on the first
 * stream may run between them. */
static void test_other_stream(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = memset_op(BUF_D, NB, STREAM_B);
	expect_identity(ops, 2);
	/* the same stream handle in another slot is another stream of the shape */
	ops[1] = memset_op(BUF_D, NB, STREAM_A);
	ops[1].stream_slot = 1;
	expect_identity(ops, 2);
}

/* The overwrite covers only part of the write (short at either end). */
static void test_partial_cover(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = memset_op(BUF_D, NB - 1, STREAM_A);
	expect_identity(ops, 2);
	ops[1] = memset_op(BUF_D + 1, NB, STREAM_A);
	expect_identity(ops, 2);
	ops[0] = memset_op(BUF_D, NB, STREAM_A);
	ops[1] = copy_op(BUF_S, BUF_D + 8, NB, STREAM_A);
	expect_identity(ops, 2);
}

/* An event record between: a stream waiting on it could read D. */
static void test_event_between(void **state)
{
	struct cap_op ops[3];

	(void)state;
	ops[0] = copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[1] = event_record_op(STREAM_A);
	ops[2] = memset_op(BUF_D, NB, STREAM_A);
	expect_identity(ops, 3);
}

/* The overwrite reads the bytes itself: a copy from D to D - 32 covers D's first NB bytes but
 * reads them first. */
static void test_overwrite_reads(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = memset_op(BUF_D, NB, STREAM_A);
	ops[1] = copy_op(BUF_D, BUF_D - 32, NB + 64, STREAM_A);
	expect_identity(ops, 2);
}

/* The write is not one dead-write may drop: a synchronous copy, a 2-D memset. */
static void test_not_droppable(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[0].api = SHIM_ID_cuMemcpyDtoD_v2;
	ops[1] = memset_op(BUF_D, NB, STREAM_A);
	expect_identity(ops, 2);
	ops[0] = memset_op(BUF_D, NB / 2, STREAM_A);
	ops[0].u.memset.height = 2;
	ops[0].u.memset.pitch = NB / 2;
	expect_identity(ops, 2);
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
