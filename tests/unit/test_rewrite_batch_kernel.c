/* test_rewrite_batch_kernel.c - golden and negative tests of the batch-kernel rule (level 1,
 * horizontal fusion) on small hand-made windows of `scale` and `fill` launches over separate
 * buffers, interleaved as a tower's per-feature work is: which launches become one multi-instance
 * launch (also past ops between them), the guards that fail when bindings move so that members
 * meet, the layout replay uses (rw_run), and the near misses it must leave alone. The variant is
 * stood in for by a table this file defines and reads back (rw__set_multi_hooks): what is tested
 * is the rule and the plan, not the JIT. tests layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <string.h>

#include "common/errors.h"
#define RWT_HASH_OPS /* rw_run's last-launch cache reads capture's hashes */
#include "rw_test.h"
#include "rewrite/effects.h"
#include "rewrite/variant.h"

extern const struct rw_rule rw_rule_batch_kernel;
extern const struct rw_rule rw_rule_parallel;

#define BUF 0x7f0000000000ull /* buffers of 64 KB each: BUF + b * 0x10000 */
#define AT(b) (BUF + (uint64_t)(b) * 0x10000)
#define MAX_OPS 16
#define MAX_PARAMS 48

/* scale (out w n*4, in r n*4, s, n) and fill (x w n*4, v, n) have cards; my_scale has none. */
static const struct cap_func scale_info = RWT_FUNC(0x5ca1e, 1, "scale", RWT_LAYOUT_SCALE);
static const struct cap_func fill_info = RWT_FUNC(0xf111, 2, "fill", RWT_LAYOUT_FILL);
static const struct cap_func mystery_info = RWT_FUNC(0x3e5, 3, "my_scale", RWT_LAYOUT_SCALE);

static unsigned char params[MAX_OPS][MAX_PARAMS];

static struct cap_op scale_op(uint32_t slot, uint64_t out, uint64_t in, int32_t n)
{
	return rwt_scale_op(&scale_info, params[slot], out, in, 2.0f, n, STREAM_A);
}

static struct cap_op fill_op(uint32_t slot, uint64_t x, int32_t n)
{
	return rwt_fill_op(&fill_info, params[slot], x, 1.0f, n, STREAM_A);
}

/* An event record / wait of event slot ev on stream s. */
static struct cap_op record_op(CUstream s, uint16_t ev)
{
	struct cap_op op = rwt_op(CAP_OP_EVENT_RECORD, DRV_ID_cuEventRecord, s);

	op.u.event.event = (CUevent)(uintptr_t)(0x3000 + ev);
	op.u.event.slot = ev;
	return rwt_finish(op);
}

static struct cap_op wait_op(CUstream s, uint16_t ev)
{
	struct cap_op op = rwt_op(CAP_OP_EVENT_WAIT, DRV_ID_cuStreamWaitEvent, s);

	op.u.event.event = (CUevent)(uintptr_t)(0x3000 + ev);
	op.u.event.slot = ev;
	return rwt_finish(op);
}

static struct cap_op scale_on(uint32_t slot, uint64_t out, uint64_t in, int32_t n, CUstream s)
{
	return rwt_scale_op(&scale_info, params[slot], out, in, 2.0f, n, s);
}

/* ------------------------------------------------------------------ the stand-in variant */


static bool possible_no(const struct cap_op *op)
{
	(void)op;
	return false;
}

static const struct rw_multi_hooks hooks_yes = { rwt_multi_possible, rwt_multi_launch };
static const struct rw_multi_hooks hooks_no = { possible_no, rwt_multi_launch };

static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	const struct rw_rule *rules[1] = { &rw_rule_batch_kernel };

	return rwt_run(ops, n, rules, 1, buf, cap);
}

static int setup(void **state)
{
	(void)state;
	rw__set_multi_hooks(&hooks_yes);
	return 0;
}

/* Instance i of a derived launch: its grid x and its parameter bytes. */
static const unsigned char *instance(const struct cap_op *out, uint32_t i, uint32_t *gx)
{
	const unsigned char *t = out->u.kernel.params;
	uint32_t k, stride = 4 + out->u.kernel.info->param_bytes;

	memcpy(&k, t, 4);
	assert_true(i < k);
	t += 4 + i * stride;
	memcpy(gx, t, 4);
	return t + 4;
}

/* ------------------------------------------------------------------ golden */

/* Three features, each scale then fill on its own buffers: the scales become one launch, the
 * fills another, each standing where its first member stood. */
static void test_tower(void **state)
{
	struct cap_op ops[6] = { scale_op(0, AT(0), AT(1), 1000), fill_op(1, AT(2), 100),
				 scale_op(2, AT(3), AT(4), 300),  fill_op(3, AT(5), 200),
				 scale_op(4, AT(6), AT(7), 2000), fill_op(5, AT(8), 300) };
	const struct cap_op *ptr[6];
	struct cap_op out;
	uint32_t gx;
	char buf[2048];
	struct rw_plan *p = run(ops, 6, buf, sizeof(buf));

	(void)state;
	assert_string_equal(buf, "batch_kernel(0,2,4) batch_kernel(1,3,5) | independent(0,2) independent(1,2) "
				 "independent(0,4) independent(1,4) independent(2,4) independent(3,4) "
				 "independent(1,3) independent(1,5) independent(3,5)");
	assert_int_equal(p->nnodes, 2);
	assert_string_equal(p->nodes[0].rule, "batch-kernel");
	assert_int_equal(p->stats[0].count, 2);
	rwt_ptrs(ops, 6, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(rw_plan_node_op(p, 0, ptr, &out), 0);
	assert_ptr_equal(out.u.kernel.func, FAKE_MULTI);
	assert_int_equal(out.u.kernel.grid[0], rwt_grid(1000, RWT_BLOCK) + rwt_grid(300, RWT_BLOCK) +
							rwt_grid(2000, RWT_BLOCK));
	assert_int_equal(memcmp(instance(&out, 2, &gx), params[4], 24), 0);
	assert_int_equal(gx, rwt_grid(2000, RWT_BLOCK));
	assert_int_equal(memcmp(instance(&out, 1, &gx), params[2], 24), 0);
	rw_plan_destroy(p);
}

/* Guards: the third scale's output moves onto what the second fill writes: it may no longer
 * pass that fill, nor run beside the other scales if it meets them. */
static void test_guards_move(void **state)
{
	struct cap_op ops[4] = { scale_op(0, AT(0), AT(1), 1000), fill_op(1, AT(2), 100),
				 scale_op(2, AT(3), AT(4), 300), fill_op(3, AT(5), 200) };
	const struct cap_op *ptr[4];
	uint32_t failed = 999;
	char buf[2048];
	struct rw_plan *p = run(ops, 4, buf, sizeof(buf));

	(void)state;
	assert_string_equal(buf, "batch_kernel(0,2) batch_kernel(1,3) | independent(0,2) independent(1,2) "
				 "independent(1,3)");
	rwt_ptrs(ops, 4, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* scale 2 now reads what fill 1 writes: hoisting it over the fill would read stale bytes */
	rwt_set_param_u64(&ops[2], 8, AT(2));
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 1);
	assert_int_equal(p->guards[failed].b, 2);
	rwt_set_param_u64(&ops[2], 8, AT(4));
	/* scale 2 writes where scale 0 reads */
	rwt_set_param_u64(&ops[2], 0, AT(1));
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].a, 0);
	assert_int_equal(p->guards[failed].b, 2);
	rw_plan_destroy(p);
}

/* A member that depends on the op it would pass stays where it is; a later one that does not is
 * still gathered (it passes the one left behind, which it must be independent of too). */
static void test_skips_dependent(void **state)
{
	struct cap_op ops[5] = { scale_op(0, AT(0), AT(1), 1000), fill_op(1, AT(2), 100),
				 scale_op(2, AT(3), AT(2), 100), /* reads what fill 1 wrote */
				 scale_op(3, AT(4), AT(5), 100), fill_op(4, AT(6), 100) };
	char buf[2048];
	struct rw_plan *p = run(ops, 5, buf, sizeof(buf));

	(void)state;
	/* 0 and 3 fuse (3 passes 1 and 2, independent of both); 2 stays; fills 1 and 4 fuse (4 now
	 * passes only 2: 3 already runs with 0, ahead of them) */
	assert_string_equal(buf, "batch_kernel(0,3) batch_kernel(1,4) op(2) | independent(0,3) independent(1,3) "
				 "independent(2,3) independent(1,4) independent(2,4)");
	rw_plan_destroy(p);
}

/* The layout replay uses: the plan is accepted although its nodes are not runs, members after
 * the first are folded, the ops between keep their positions. */
static void test_run_layout(void **state)
{
	struct cap_op ops[4] = { scale_op(0, AT(0), AT(1), 1000), fill_op(1, AT(2), 100),
				 scale_op(2, AT(3), AT(4), 300), fill_op(3, AT(5), 200) };
	const struct cap_op *ptr[4];
	struct rw_config cfg = { .opt = 1 };
	struct cap_op tmp;
	struct rw_run *r;

	(void)state;
	rwt_ptrs(ops, 4, ptr);
	r = rw_run_create(ptr, 4, &cfg);
	assert_non_null(r);
	assert_false(rw_run_is_folded(r, 0));
	assert_false(rw_run_is_folded(r, 1));
	assert_true(rw_run_is_folded(r, 2));
	assert_true(rw_run_is_folded(r, 3));
	assert_true(rw_run_guards_hold(r, ops));
	assert_ptr_equal(rw_run_op(r, 0, ops, &tmp)->u.kernel.func, FAKE_MULTI);
	assert_null(rw_run_op(r, 2, ops, &tmp));
	rw_run_destroy(r);
}

/* Across events and streams: the first member on stream A; between it and the last an event
 * record of A, a record of B, a scale on B after that record and a wait of A for it. The scale on
 * B joins: it passes what its stream did before the first member (the fill on B). The last scale
 * passes what the wait brings in (the fill again: its guard names an op before the first member,
 * the ancestry reaches below it) and the scale on B between. */
static void test_across_events(void **state)
{
	struct cap_op ops[7] = { rwt_fill_op(&fill_info, params[0], AT(2), 1.0f, 100, STREAM_B),
				 scale_op(1, AT(0), AT(1), 1000), record_op(STREAM_A, 1), record_op(STREAM_B, 2),
				 scale_on(4, AT(8), AT(9), 100, STREAM_B), wait_op(STREAM_A, 2),
				 scale_op(6, AT(3), AT(4), 300) };
	const struct cap_op *ptr[7];
	struct cap_op tmp;
	struct rw_config cfg = { .opt = 1 };
	struct rw_run *r;
	char buf[2048];
	struct rw_plan *p = run(ops, 7, buf, sizeof(buf));

	(void)state;
	/* the scale on B is a member too: it passes what its own stream did before (the fill) */
	assert_string_equal(buf, "op(0) batch_kernel(1,4,6) op(2) op(3) op(5) | independent(1,4) independent(0,4) "
				 "independent(1,6) independent(0,6) independent(4,6)");
	rw_plan_destroy(p);
	/* the second scale reads what the fill wrote: it waited for it, it stays */
	rwt_set_param_u64(&ops[6], 8, AT(2));
	p = run(ops, 7, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) batch_kernel(1,4) op(2) op(3) op(5) op(6) | independent(1,4) independent(0,4)");
	rw_plan_destroy(p);
	rwt_set_param_u64(&ops[6], 8, AT(4));
	/* the layout: the second scale has no node of its own, the event ops keep theirs */
	rwt_ptrs(ops, 7, ptr);
	r = rw_run_create(ptr, 7, &cfg);
	assert_non_null(r);
	assert_true(rw_run_is_folded(r, 6));
	assert_true(rw_run_is_folded(r, 4));
	assert_false(rw_run_is_folded(r, 5));
	assert_ptr_equal(rw_run_op(r, 1, ops, &tmp)->u.kernel.func, FAKE_MULTI);
	rw_run_destroy(r);
}

/* On a third stream: op with its stream handle and slot 2. */
static struct cap_op on_c(struct cap_op op)
{
	op.stream = (CUstream)0x4000;
	op.stream_slot = 2;
	return rwt_finish(op);
}

/* Members on two streams: the scales, then the fills, one launch each. The fill on B follows the
 * scales' node in B's order (it holds B's scale), but so does the first fill in A's: nothing
 * more to pass. */
static void test_two_streams(void **state)
{
	struct cap_op ops[4] = { scale_op(0, AT(0), AT(1), 100), scale_on(1, AT(2), AT(3), 100, STREAM_B),
				 fill_op(2, AT(4), 100),
				 rwt_fill_op(&fill_info, params[3], AT(5), 1.0f, 100, STREAM_B) };
	char buf[2048];
	struct rw_plan *p = run(ops, 4, buf, sizeof(buf));

	(void)state;
	assert_string_equal(buf, "batch_kernel(0,1) batch_kernel(2,3) | independent(0,1) independent(2,3)");
	rw_plan_destroy(p);
	/* the first fill on a third stream: the scales' node is in the second fill's ancestry (A's
	 * order), not in the first's: the second fill passes it (a guard on its effects, the union
	 * of its instances'); when it reads what the scale on A wrote, it stays */
	ops[2] = on_c(fill_op(2, AT(4), 100));
	ops[3] = fill_op(3, AT(5), 100);
	p = run(ops, 4, buf, sizeof(buf));
	assert_string_equal(buf, "batch_kernel(0,1) batch_kernel(2,3) | independent(0,1) independent(2,3) "
				 "independent(batch_kernel(0,1),3)");
	rw_plan_destroy(p);
	ops[3] = fill_op(3, AT(0) + 64, 100);
	p = run(ops, 4, buf, sizeof(buf));
	assert_string_equal(buf, "batch_kernel(0,1) op(2) op(3) | independent(0,1)");
	rw_plan_destroy(p);
}

/* A dependent chain across streams: the first scale writes AT(0); B waits for it, a scale on B
 * reads it and writes AT(5); A waits for that and the second scale on A reads AT(5). The second
 * depends on the first through the events: never fused, though the two touch nothing in common
 * directly. */
static void test_chain_across_streams(void **state)
{
	struct cap_op ops[6] = { scale_op(0, AT(0), AT(1), 100), record_op(STREAM_A, 0), wait_op(STREAM_B, 0),
				 scale_on(3, AT(5), AT(0), 100, STREAM_B), record_op(STREAM_B, 1),
				 wait_op(STREAM_A, 1) };
	struct cap_op chain[7];
	char buf[2048];
	struct rw_plan *p;

	(void)state;
	memcpy(chain, ops, sizeof(ops));
	chain[6] = scale_op(6, AT(6), AT(5), 100);
	rwt_expect_identity(run, chain, 7);
	/* the same second scale reading a buffer nothing writes: fused past the chain */
	chain[6] = scale_op(6, AT(6), AT(7), 100);
	p = run(chain, 7, buf, sizeof(buf));
	assert_string_equal(buf, "batch_kernel(0,6) op(1) op(2) op(3) op(4) op(5) | independent(0,6) "
				 "independent(3,6)");
	rw_plan_destroy(p);
}

/* Waits nested across three streams: A waits for B, whose record came after B waited for C,
 * whose record came after a fill on C issued before the first member. The second scale's
 * ancestry reaches the fill through both waits: it passes it, and when it reads what the fill
 * wrote it stays. */
static void test_nested_waits(void **state)
{
	struct cap_op ops[8] = { on_c(fill_op(0, AT(2), 100)), scale_op(1, AT(0), AT(1), 1000),
				 on_c(record_op(STREAM_A, 3)), wait_op(STREAM_B, 3), record_op(STREAM_B, 4),
				 wait_op(STREAM_A, 4), scale_op(6, AT(3), AT(4), 300), scale_op(7, AT(5), AT(6), 300) };
	char buf[2048];
	struct rw_plan *p;

	(void)state;
	p = run(ops, 8, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) batch_kernel(1,6,7) op(2) op(3) op(4) op(5) | independent(1,6) "
				 "independent(0,6) independent(1,7) independent(0,7) independent(6,7)");
	rw_plan_destroy(p);
	/* the second scale reads what the fill on C wrote: it stays; the third passes it */
	rwt_set_param_u64(&ops[6], 8, AT(2));
	p = run(ops, 8, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) batch_kernel(1,7) op(2) op(3) op(4) op(5) op(6) | independent(1,7) "
				 "independent(0,7) independent(6,7)");
	rw_plan_destroy(p);
}

/* A batch node's effects are the union of its instances' (the variant's own kernel has no card):
 * the parallel rule, which runs after it, finds a fill of other memory independent of it, and
 * one that writes what an instance reads not; checked again on every launch's bindings. */
static void test_batch_effects(void **state)
{
	const struct rw_rule *rules[2] = { &rw_rule_batch_kernel, &rw_rule_parallel };
	struct cap_op ops[3] = { scale_op(0, AT(0), AT(1), 1000), scale_op(1, AT(2), AT(3), 300),
				 fill_op(2, AT(4), 100) };
	const struct cap_op *ptr[3];
	uint32_t failed = 999;
	char buf[2048];
	struct rw_plan *p;

	(void)state;
	p = rwt_run(ops, 3, rules, 2, buf, sizeof(buf));
	assert_string_equal(buf, "batch_kernel(0,1) op(2) | independent(0,1) independent(batch_kernel(0,1),2)");
	rwt_ptrs(ops, 3, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* the fill moves onto what the second instance reads: the guard on the batch node fails */
	rwt_set_param_u64(&ops[2], 0, AT(3));
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].b, 2);
	assert_true(p->guards[failed].na >= 0);
	rw_plan_destroy(p);
	p = rwt_run(ops, 3, rules, 2, buf, sizeof(buf));
	assert_string_equal(buf, "batch_kernel(0,1) op(2) | independent(0,1)");
	rw_plan_destroy(p);
}

/* More independent launches than one variant table holds (a kernel with 280 bytes of
 * parameters: 13 instances, rw_variant_capacity): groups as large as the table, never one
 * that fails to build (which left the whole window unrewritten). The stand-in variant refuses
 * what the real table cannot hold. */
static uint32_t big_off[4] = { 0, 8, 16, 272 }, big_size[4] = { 8, 8, 256, 4 };
static const struct cap_func big_info = RWT_FUNC(0xb16, 4, "big_scale", 4, 276, big_off, big_size);

static int big_launch(const struct cap_op *const *members, uint32_t k, void *table, uint32_t cap,
		      struct cap_op *out)
{
	if (k > rw_variant_capacity(members[0]->u.kernel.param_size))
		return -CF_EINVAL;
	return rwt_multi_launch(members, k, table, cap, out);
}

static void test_table_capacity(void **state)
{
	static const char card[] = "kernel big_scale\n  param out ptr w n*4\n  param in ptr r n*4\n"
				   "  param pad struct 256\n  param n i32\nend\n";
	static const struct rw_multi_hooks hooks_big = { rwt_multi_possible, big_launch };
	static unsigned char pb[15][276];
	struct cap_op ops[15];
	char buf[8192];
	struct rw_plan *p;

	(void)state;
	assert_int_equal(rw_cards_parse(rw_cards_global(), "test", card, strlen(card)), 0);
	assert_int_equal(rw_variant_capacity(276), 13);
	for (uint32_t i = 0; i < 15; i++) {
		memset(pb[i], 0, sizeof(pb[i]));
		rwt_put_u64(pb[i], 0, AT(2 * i));
		rwt_put_u64(pb[i], 8, AT(2 * i + 1));
		rwt_put_i32(pb[i], 272, 100);
		ops[i] = rwt_kernel_n_op(&big_info, pb[i], 100, STREAM_A);
	}
	rw__set_multi_hooks(&hooks_big);
	p = run(ops, 15, buf, sizeof(buf));
	rw__set_multi_hooks(&hooks_yes);
	assert_non_null(p);
	assert_int_equal(p->nnodes, 2);
	assert_int_equal(p->nodes[0].norig, 13);
	assert_int_equal(p->nodes[1].norig, 2);
	rw_plan_destroy(p);
}

/* Why a launch left alone was not fused (the report's kernels_apart): memory_reused when the
 * other launch writes a buffer an op between them reads or writes but depends on nothing they
 * wrote (a pool handing a freed temporary out again), ordered when it reads what they wrote. */
static void test_apart_reused(void **state)
{
	struct cap_op reused[3] = { scale_op(0, AT(0), AT(1), 100), scale_op(1, AT(2), AT(0), 100),
				    scale_op(2, AT(0), AT(3), 100) };
	struct cap_op chain[2] = { scale_op(3, AT(0), AT(1), 100), scale_op(4, AT(2), AT(0), 100) };
	struct cap_op alone[1] = { scale_op(5, AT(0), AT(1), 100) };
	const struct cap_op *p[3];

	(void)state;
	rwt_ptrs(reused, 3, p);
	/* the third writes A, which the second reads: it reads only D */
	assert_int_equal(rw_multi_apart(NULL, p, 3, 0), RW_APART_REUSED);
	assert_int_equal(rw_multi_apart(NULL, p, 3, 2), RW_APART_REUSED);
	rwt_ptrs(chain, 2, p);
	assert_int_equal(rw_multi_apart(NULL, p, 2, 0), RW_APART_ORDERED);
	assert_int_equal(rw_multi_apart(NULL, p, 2, 1), RW_APART_ORDERED);
	rwt_ptrs(alone, 1, p);
	assert_int_equal(rw_multi_apart(NULL, p, 1, 0), RW_APART_ALONE);
	assert_string_equal(rw_apart_name(RW_APART_REUSED), "memory_reused");
}

/* Writing elsewhere (rw_multi_renamable, an analysis): a tower's shape, a pool handing feature
 * 1's temporary A to feature 2's launch of the same kernel with a consumer between. Renaming the
 * second launch (it writes A' instead, the later consumer reads A') would let them fuse; it must
 * be refused for a true dependence and for a consumer whose span through A is unknown or that
 * reads past A. `consume` (exact spans) and `consume_any` (its input `unknown`) read one array. */
static const struct cap_func consume_info = RWT_FUNC(0xc0c, 5, "consume", RWT_LAYOUT_SCALE);
static const struct cap_func consume_any_info = RWT_FUNC(0xc0d, 6, "consume_any", RWT_LAYOUT_SCALE);

static struct cap_op consume_op(const struct cap_func *f, uint32_t slot, uint64_t out, uint64_t in, int32_t n)
{
	return rwt_scale_op(f, params[slot], out, in, 1.0f, n, STREAM_A);
}

static void test_renamable(void **state)
{
	static const char card[] = "kernel consume\n  param out ptr w n*4\n  param in ptr r n*4\n  param s f32\n"
				   "  param n i32\nend\nkernel consume_any\n  param out ptr w n*4\n"
				   "  param in ptr r unknown\n  param s f32\n  param n i32\nend\n";
	/* feature 1: A = scale(X1), H1 = consume(A); feature 2: A = scale(X2) (the pool's A again),
	 * H2 = consume(A) */
	struct cap_op tower[4] = { scale_op(0, AT(0), AT(1), 100), consume_op(&consume_info, 1, AT(2), AT(0), 100),
				   scale_op(2, AT(0), AT(3), 100), consume_op(&consume_info, 3, AT(4), AT(0), 100) };
	struct cap_op raw[2] = { scale_op(4, AT(0), AT(1), 100), scale_op(5, AT(2), AT(0), 100) };
	struct cap_op unknown[4], straddle[4], copy_after[6];
	const struct cap_op *p[6];
	struct rw_rename rn;

	(void)state;
	assert_int_equal(rw_cards_parse(rw_cards_global(), "test", card, strlen(card)), 0);
	rwt_ptrs(tower, 4, p);
	assert_int_equal(rw_multi_apart(NULL, p, 4, 0), RW_APART_REUSED);
	assert_int_equal(rw_multi_apart(NULL, p, 4, 2), RW_APART_REUSED);
	for (uint32_t i = 0; i < 4; i += 2) {
		memset(&rn, 0xff, sizeof(rn));
		assert_true(rw_multi_renamable(p, 4, i, &rn));
		assert_int_equal(rn.renamed, 2); /* the later one writes elsewhere */
		assert_int_equal(rn.bytes, 400);
		assert_true(rn.whole);           /* scale is elementwise: it writes A whole */
	}
	/* a true dependence: the second reads what the first wrote (ordered, not renamable) */
	rwt_ptrs(raw, 2, p);
	assert_int_equal(rw_multi_apart(NULL, p, 2, 1), RW_APART_ORDERED);
	assert_false(rw_multi_renamable(p, 2, 1, &rn));
	/* the consumer after it reads A through an unknown span: no patch can follow it */
	memcpy(unknown, tower, sizeof(tower));
	unknown[3] = consume_op(&consume_any_info, 3, AT(4), AT(0), 100);
	rwt_ptrs(unknown, 4, p);
	assert_int_equal(rw_multi_apart(NULL, p, 4, 2), RW_APART_REUSED);
	assert_false(rw_multi_renamable(p, 4, 2, &rn));
	/* the consumer reads past A's end (A and the 4 bytes after it): the buffer holds A only */
	memcpy(straddle, tower, sizeof(tower));
	straddle[3] = consume_op(&consume_info, 3, AT(4), AT(0) + 4, 100);
	rwt_ptrs(straddle, 4, p);
	assert_false(rw_multi_renamable(p, 4, 2, &rn));
	/* a copy out of A after it (its source patchable), A written whole by a memset (its life
	 * ends), then a reader of A no patch could follow: it reads the program's A again */
	memcpy(copy_after, tower, 3 * sizeof(tower[0]));
	copy_after[3] = rwt_copy_op(AT(0), AT(5), 400, STREAM_A);
	copy_after[4] = rwt_memset_op(AT(0), 400, STREAM_A);
	copy_after[5] = consume_op(&consume_any_info, 3, AT(4), AT(0), 100);
	rwt_ptrs(copy_after, 6, p);
	assert_true(rw_multi_renamable(p, 6, 2, &rn));
	/* without the memset, that reader meets A' */
	copy_after[4] = copy_after[5];
	assert_false(rw_multi_renamable(p, 5, 2, &rn));
	/* a copy reading past A's end */
	copy_after[3] = rwt_copy_op(AT(0), AT(5), 404, STREAM_A);
	assert_false(rw_multi_renamable(p, 4, 2, &rn));
}

/* ------------------------------------------------------------------ near misses */

static void test_no_variant(void **state)
{
	struct cap_op ops[2] = { scale_op(0, AT(0), AT(1), 100), scale_op(1, AT(2), AT(3), 100) };

	(void)state;
	rw__set_multi_hooks(&hooks_no);
	rwt_expect_identity(run, ops, 2);
	rw__set_multi_hooks(&hooks_yes);
}

static void test_near_misses(void **state)
{
	(void)state;
	{ /* a chain: the second reads what the first writes */
		struct cap_op ops[2] = { scale_op(0, AT(0), AT(1), 100), scale_op(1, AT(2), AT(0), 100) };

		rwt_expect_identity(run, ops, 2);
	}
	{ /* both write one buffer */
		struct cap_op ops[2] = { fill_op(0, AT(0), 100), fill_op(1, AT(0) + 200, 100) };

		rwt_expect_identity(run, ops, 2);
	}
	{ /* no card: effects unknown */
		struct cap_op ops[2] = { rwt_scale_op(&mystery_info, params[0], AT(0), AT(1), 1.0f, 100, STREAM_A),
					 rwt_scale_op(&mystery_info, params[1], AT(2), AT(3), 1.0f, 100, STREAM_A) };

		rwt_expect_identity(run, ops, 2);
	}
	{ /* another block shape */
		struct cap_op ops[2] = { scale_op(0, AT(0), AT(1), 100), scale_op(1, AT(2), AT(3), 100) };

		ops[1].u.kernel.block[0] = 64;
		ops[1] = rwt_finish(ops[1]);
		rwt_expect_identity(run, ops, 2);
	}
	{ /* a wait whose record is not in the window: what it orders after is not known */
		struct cap_op ops[3] = { scale_op(0, AT(0), AT(1), 100), wait_op(STREAM_A, 1),
					 scale_op(2, AT(2), AT(3), 100) };

		rwt_expect_identity(run, ops, 3);
	}
	{ /* the legacy stream in the window: only a plain run of the members' stream is read */
		struct cap_op ops[3] = { scale_op(0, AT(0), AT(1), 100), record_op(STREAM_A, 1),
					 scale_op(2, AT(2), AT(3), 100) };

		ops[1].stream_kind = CAP_STREAM_LEGACY;
		rwt_expect_identity(run, ops, 3);
	}
	{ /* an op of the members' stream that is not a kernel, copy, memset or event op */
		struct cap_op ops[3] = { scale_op(0, AT(0), AT(1), 100),
					 rwt_op(CAP_OP_HOST_FN, DRV_ID_cuLaunchHostFunc, STREAM_A),
					 scale_op(2, AT(2), AT(3), 100) };

		rwt_expect_identity(run, ops, 3);
	}
	{ /* the other launch on another stream reads what an op of its stream wrote before the
	   * first member */
		struct cap_op ops[3] = { rwt_fill_op(&fill_info, params[0], AT(3), 1.0f, 100, STREAM_B),
					 scale_op(1, AT(0), AT(1), 100), scale_on(2, AT(2), AT(3), 100, STREAM_B) };

		rwt_expect_identity(run, ops, 3);
	}
}

/* ------------------------------------------------------------------ unknown spans */

/* embedding_bag_sum (test-kernels.cards): table and indices `unknown` (a gather), offsets
 * (nbags+1)*4, out nbags*dim*4. */
static uint32_t bag_off[6] = { 0, 8, 16, 24, 28, 32 };
static uint32_t bag_size[6] = { 8, 8, 8, 4, 4, 8 };
static const struct cap_func bag_info = RWT_FUNC(0xba9, 4, "embedding_bag_sum", 6, 40, bag_off, bag_size);

static struct cap_op bag_op(uint32_t slot, uint64_t table, uint64_t out)
{
	unsigned char *pb = params[slot];

	rwt_put_u64(pb, 0, table);
	rwt_put_u64(pb, 8, AT(11));
	rwt_put_u64(pb, 16, AT(12));
	rwt_put_i32(pb, 24, 4);
	rwt_put_i32(pb, 28, 8);
	rwt_put_u64(pb, 32, out);
	return rwt_kernel_n_op(&bag_info, pb, 32, STREAM_A);
}

/* The allocation map as a snapshot: buffers 0..15 of 64 KB, but buffer 2 is `big2` bytes (buffer
 * 3, inside it when it is bigger, is then gone from the map). gen: the map's generation. */
static struct cap_alloc allocs[16];

static struct rw_alloc_view *view_of_map(struct rw_alloc_view *v, uint64_t big2, uint64_t gen)
{
	size_t n = 0;

	for (uint32_t b = 0; b < 16; b++) {
		if (b == 3 && big2 > 0x10000)
			continue;
		allocs[n++] = (struct cap_alloc){ .base = AT(b), .size = b == 2 ? big2 : 0x10000, .id = gen * 100 + b };
	}
	*v = (struct rw_alloc_view){ .snap = allocs, .nsnap = n, .gen = gen };
	return v;
}

/* A gather of unknown span sits between two scales over other buffers. With the allocation map
 * at hand the span is its allocations (table, indices): the scales pass it and fuse. Without a
 * map it is everything, as it is when the table is the second scale's output: nothing fuses. */
static void test_unknown_span_is_allocation(void **state)
{
	struct cap_op ops[3] = { scale_op(0, AT(0), AT(1), 1000), bag_op(1, AT(10) + 0x100, AT(13)),
				 scale_op(2, AT(3), AT(4), 300) };
	struct rw_alloc_view v, *was;
	char buf[2048];
	struct rw_plan *p;

	(void)state;
	rwt_expect_identity(run, ops, 3); /* no view: the gather may touch anything */
	was = rw_alloc_view_use(view_of_map(&v, 0x10000, 1));
	p = run(ops, 3, buf, sizeof(buf));
	assert_string_equal(buf, "batch_kernel(0,2) op(1) | independent(0,2) independent(1,2)");
	assert_true(v.asked);
	rw_plan_destroy(p);
	/* the table is the allocation the second scale writes (its pointer inside it): apart */
	ops[1] = bag_op(1, AT(3) + 0x80, AT(13));
	rwt_expect_identity(run, ops, 3);
	/* a table outside every allocation the map knows: everything again */
	ops[1] = bag_op(1, AT(40), AT(13));
	rwt_expect_identity(run, ops, 3);
	rw_alloc_view_use(was);
}

/* A launch's check relied on the table's extent; then the table is freed and allocated again at
 * the same address with a size that reaches the second scale's output. The bindings are the
 * very same, but the map's generation moved: the check runs again and fails. */
static void test_unknown_span_realloc(void **state)
{
	struct cap_op ops[3] = { scale_op(0, AT(0), AT(1), 1000), bag_op(1, AT(2), AT(13)),
				 scale_op(2, AT(3), AT(4), 300) };
	const struct cap_op *ptr[3];
	struct rw_config cfg = { .opt = 1 };
	struct rw_alloc_view v, *was;
	struct rw_run *r;

	(void)state;
	rwt_ptrs(ops, 3, ptr);
	was = rw_alloc_view_use(view_of_map(&v, 0x10000, 1));
	r = rw_run_create(ptr, 3, &cfg);
	assert_non_null(r);
	assert_true(rw_run_is_folded(r, 2));
	assert_true(rw_run_guards_hold(r, ops));
	assert_true(rw_run_guards_hold(r, ops)); /* remembered */
	view_of_map(&v, 0x20000, 2);             /* buffer 2 again, twice the size: over buffer 3 */
	assert_false(rw_run_guards_hold(r, ops));
	view_of_map(&v, 0x10000, 3); /* and back to its size: holds again */
	assert_true(rw_run_guards_hold(r, ops));
	rw_alloc_view_use(NULL); /* no view at all: nothing to resolve with, the pass is not kept */
	assert_false(rw_run_guards_hold(r, ops));
	rw_alloc_view_use(was);
	rw_run_destroy(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tower),         cmocka_unit_test(test_guards_move),
		cmocka_unit_test(test_skips_dependent), cmocka_unit_test(test_run_layout),
		cmocka_unit_test(test_no_variant),    cmocka_unit_test(test_near_misses),
		cmocka_unit_test(test_across_events), cmocka_unit_test(test_chain_across_streams),
		cmocka_unit_test(test_batch_effects), cmocka_unit_test(test_nested_waits),
		cmocka_unit_test(test_two_streams), cmocka_unit_test(test_table_capacity),
		cmocka_unit_test(test_apart_reused), cmocka_unit_test(test_renamable),
		cmocka_unit_test(test_unknown_span_is_allocation), cmocka_unit_test(test_unknown_span_realloc),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
