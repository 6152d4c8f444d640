/* test_rw_copy_chain.c - golden and negative tests of the copy-chain rule on small hand-made
 * windows: the chain node and the copy it derives, with dead-write the scratch copy dropped,
 * guards failing when bindings move, and the near misses (a source or middle buffer written
 * between, overlaps, a read outside the middle buffer) it must leave alone. tests layer
 * (cmocka, libcufold.a). */
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

extern const struct rw_rule rw_rule_copy_chain;
extern const struct rw_rule rw_rule_dead_write;

#define STREAM_A ((CUstream)0x1000)
#define STREAM_B ((CUstream)0x2000)
#define BUF_A 0x7f0000000000ull /* the original */
#define BUF_B 0x7f0001000000ull /* the middle (scratch) buffer */
#define BUF_C 0x7f0002000000ull /* the final destination */
#define BUF_E 0x7f0003000000ull /* unrelated memory */
#define NB 256                  /* bytes of the first copy */

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

/* Move a copy's source (descriptor and resolved address together, as capture records it). */
static void move_src(struct cap_op *op, uint64_t src)
{
	op->u.memcpy.d.srcDevice = src;
	op->u.memcpy.src_first = src;
}

static void move_dst(struct cap_op *op, uint64_t dst)
{
	op->u.memcpy.d.dstDevice = dst;
	op->u.memcpy.dst_first = dst;
}

static void ptrs(struct cap_op *ops, uint32_t n, const struct cap_op **ptr)
{
	for (uint32_t i = 0; i < n; i++)
		ptr[i] = &ops[i];
}

/* Rewrite ops[0..n) with copy-chain alone, or with dead-write too; the plan's one-line form
 * into buf. */
static struct rw_plan *run_rules(struct cap_op *ops, uint32_t n, bool with_dead, char *buf, size_t cap)
{
	const struct cap_op *ptr[16];
	const struct rw_rule *rules[2] = { &rw_rule_copy_chain, &rw_rule_dead_write };
	struct rw_plan *p;

	assert_true(n <= 16);
	ptrs(ops, n, ptr);
	p = rw_rewrite(ptr, n, NULL, NULL, rules, with_dead ? 2 : 1);
	assert_non_null(p);
	rw_plan_format(p, buf, cap);
	return p;
}

static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	return run_rules(ops, n, false, buf, cap);
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

/* A -> B, then B -> C: the second copy reads A. */
static void test_chain(void **state)
{
	struct cap_op ops[2], out;
	const struct cap_op *ptr[2];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = copy_op(BUF_B, BUF_C, NB, STREAM_A);
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) chain(1<-0) | linear_dtod(0,0) linear_dtod(1,1) within(0,1) disjoint(0,0) "
				 "misses(0,1)");
	assert_int_equal(p->nstats, 1);
	assert_string_equal(p->stats[0].rule, "copy-chain");
	assert_int_equal(p->nodes[1].kind, RW_NODE_CHAIN);
	assert_int_equal(p->nodes[1].from, 0);
	assert_string_equal(p->nodes[1].rule, "copy-chain");
	ptrs(ops, 2, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_int_equal(out.u.memcpy.src_first, BUF_A);
	assert_int_equal(out.u.memcpy.dst_first, BUF_B);
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	assert_int_equal(out.kind, CAP_OP_MEMCPY);
	assert_int_equal(out.api, SHIM_ID_cuMemcpyDtoDAsync_v2);
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
	move_src(&ops[0], BUF_E);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	assert_int_equal(out.u.memcpy.src_first, BUF_E);
	move_src(&ops[0], BUF_A);
	/* the second copy reads 8 bytes past B's end */
	move_src(&ops[1], BUF_B + 8);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_WITHIN);
	move_src(&ops[1], BUF_B);
	/* C moves onto A's end */
	move_dst(&ops[1], BUF_A + NB - 1);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_MISSES);
	move_dst(&ops[1], BUF_C);
	/* A moves onto B: the first copy overlaps itself */
	move_src(&ops[0], BUF_B + 16);
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
	ops[0] = copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = copy_op(BUF_B + 64, BUF_C, 64, STREAM_A);
	p = run(ops, 2, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) chain(1<-0) | linear_dtod(0,0) linear_dtod(1,1) within(0,1) disjoint(0,0) "
				 "misses(0,1)");
	ptrs(ops, 2, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	/* linear memory: the address alone, as cuMemcpyDtoDAsync would take it */
	assert_int_equal(out.u.memcpy.d.srcDevice, BUF_A + 64);
	assert_int_equal(out.u.memcpy.d.srcXInBytes, 0);
	assert_int_equal(out.u.memcpy.src_first, BUF_A + 64);
	assert_int_equal(out.u.memcpy.dst_first, BUF_C);
	assert_int_equal(out.u.memcpy.bytes, 64);
	/* the last 64 bytes of B still lie inside it */
	move_src(&ops[1], BUF_B + NB - 64);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	assert_int_equal(out.u.memcpy.src_first, BUF_A + NB - 64);
	/* one byte further does not */
	move_src(&ops[1], BUF_B + NB - 63);
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
	ops[0] = copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = scale_op(pb, BUF_E, BUF_E + 0x1000, 2.0f, 16, STREAM_A);
	ops[2] = copy_op(BUF_B, BUF_C, NB, STREAM_A);
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) op(1) chain(2<-0) | linear_dtod(0,0) linear_dtod(2,2) within(0,2) "
				 "disjoint(0,0) misses(0,2) unwritten(0,1)");
	ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* the kernel's output moves onto A */
	{
		uint64_t o = BUF_A + 4;

		memcpy(pb + scale_off[0], &o, 8);
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
	ops[0] = copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = copy_op(BUF_B, BUF_C, NB, STREAM_A);
	ops[2] = memset_op(BUF_B, NB, STREAM_A);
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
	ptrs(ops, 3, ptr);
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
		ops4[2] = scale_op(pb, BUF_E, BUF_B + NB - 4, 2.0f, 1, STREAM_A);
		ops4[3] = memset_op(BUF_B, NB, STREAM_A);
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
	ops[0] = copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = copy_op(BUF_B, BUF_C, NB, STREAM_A);
	ops[2] = copy_op(BUF_B + 8, BUF_E, 1, STREAM_A);
	ops[3] = memset_op(BUF_B, NB, STREAM_A);
	p = run_rules(ops, 4, true, buf, sizeof(buf));
	assert_string_equal(buf, "chain(1<-0) chain(2<-0) op(3) | linear_dtod(0,0) linear_dtod(1,1) within(0,1) "
				 "disjoint(0,0) misses(0,1) linear_dtod(2,2) within(0,2) misses(0,2) "
				 "unwritten(0,chain(1<-0)) covers(0,3) unread(0,chain(1<-0)) unread(0,chain(2<-0)) "
				 "unread(0,3)");
	assert_int_equal(p->nsnaps, 2);
	ptrs(ops, 4, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 1, ptr, &out), 0);
	assert_int_equal(out.u.memcpy.src_first, BUF_A + 8);
	assert_int_equal(out.u.memcpy.dst_first, BUF_E);
	assert_int_equal(out.u.memcpy.bytes, 1);
	/* C moves onto A: the first chain would change what the second reads */
	move_dst(&ops[1], BUF_A);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_MISSES);
	rw_plan_destroy(p);
}

/* Registered at level 1. */
static void test_registered(void **state)
{
	struct rw_config cfg0 = { 0, NULL }, cfg1 = { 1, NULL }, off = { 1, "-copy-chain" };

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
	ops[0] = copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = memset_op(BUF_A + NB - 1, 1, STREAM_A);
	ops[2] = copy_op(BUF_B, BUF_C, NB, STREAM_A);
	expect_identity(ops, 3);
	ops[1] = scale_op(pb, BUF_A, BUF_E, 2.0f, 4, STREAM_A);
	expect_identity(ops, 3);
}

/* B written between: C2 reads the new bytes, C2' would read A's. */
static void test_b_written_between(void **state)
{
	struct cap_op ops[3];

	(void)state;
	ops[0] = copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = copy_op(BUF_E, BUF_B + 16, 16, STREAM_A);
	ops[2] = copy_op(BUF_B, BUF_C, NB, STREAM_A);
	expect_identity(ops, 3);
}

/* A kernel without a card or an event record between. */
static void test_unknown_between(void **state)
{
	struct cap_op ops[3];
	unsigned char pb[32];

	(void)state;
	ops[0] = copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = mystery_op(pb, BUF_E, 16, STREAM_A);
	ops[2] = copy_op(BUF_B, BUF_C, NB, STREAM_A);
	expect_identity(ops, 3);
	memset(&ops[1], 0, sizeof(ops[1]));
	ops[1].kind = CAP_OP_EVENT_RECORD;
	ops[1].api = SHIM_ID_cuEventRecord;
	ops[1].stream = STREAM_A;
	ops[1].stream_kind = CAP_STREAM_BLOCKING;
	cap_op_hash(&ops[1]);
	expect_identity(ops, 3);
}

/* C overlaps A: C2' would change A while reading it. C overlaps B (C2 overlaps itself): what
 * C2 reads of B is not A's any more once C2 writes it. */
static void test_c_overlaps(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = copy_op(BUF_B, BUF_A + 128, NB, STREAM_A);
	expect_identity(ops, 2);
	ops[1] = copy_op(BUF_B, BUF_A - NB + 1, NB, STREAM_A);
	expect_identity(ops, 2);
	ops[1] = copy_op(BUF_B, BUF_B + 32, 64, STREAM_A);
	expect_identity(ops, 2);
}

/* A overlaps B: after C1, A no longer holds what it copied. */
static void test_a_overlaps_b(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = copy_op(BUF_A, BUF_A + 128, NB, STREAM_A);
	ops[1] = copy_op(BUF_A + 128, BUF_C, NB, STREAM_A);
	expect_identity(ops, 2);
}

/* The second copy reads outside B (past its end, before its start). */
static void test_reads_outside_b(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = copy_op(BUF_B + 128, BUF_C, NB, STREAM_A);
	expect_identity(ops, 2);
	ops[1] = copy_op(BUF_B - 1, BUF_C, 16, STREAM_A);
	expect_identity(ops, 2);
}

/* The second copy is on another stream, or synchronous. */
static void test_other_stream_or_sync(void **state)
{
	struct cap_op ops[2];

	(void)state;
	ops[0] = copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[1] = copy_op(BUF_B, BUF_C, NB, STREAM_B);
	expect_identity(ops, 2);
	ops[1] = copy_op(BUF_B, BUF_C, NB, STREAM_A);
	ops[1].api = SHIM_ID_cuMemcpyDtoD_v2;
	expect_identity(ops, 2);
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
