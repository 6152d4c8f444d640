/* test_rewrite_rename.c - writing elsewhere (output renaming, rewrite/rename.c) on small
 * hand-made windows of a tower's shape: a pool hands feature 1's temporary A to feature 2's launch
 * of the same kernel, with a reader between. The plan made through rw_run (what replay uses):
 * which launch writes a buffer of cufold's own, which readers are patched, where the copy back
 * stands and when it is dropped, the check failing when the bindings move, the budget, a failed
 * allocation, and the refusals (a true dependence; a reader whose span is unknown keeps the copy
 * back). The variant and the allocator are stood in for (rw__set_multi_hooks,
 * rw__set_rename_hooks). tests layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <string.h>

#include "common/errors.h"
#define RWT_HASH_OPS /* rw_run's last-launch cache reads capture's hashes */
#include "rw_test.h"
#include "rewrite/effects.h"

extern const struct rw_rule rw_rule_batch_kernel; /* links the rule in: renaming serves it */
extern const struct rw_rule rw_rule_copy_chain;   /* and one that rewrites what a copy reads */

#define BUF 0x7f0000000000ull /* the program's buffers of 64 KB each: BUF + b * 0x10000 */
#define AT(b) (BUF + (uint64_t)(b) * 0x10000)
#define OWN 0x7e0000000000ull /* cufold's buffers the stand-in allocator hands out */
#define MAX_OPS 16
#define MAX_PARAMS 48

static const struct cap_func scale_info = RWT_FUNC(0x5ca1e, 1, "scale", RWT_LAYOUT_SCALE);
static const struct cap_func consume_info = RWT_FUNC(0xc0c, 5, "consume", RWT_LAYOUT_SCALE);
static const struct cap_func consume_any_info = RWT_FUNC(0xc0d, 6, "consume_any", RWT_LAYOUT_SCALE);
/* gather2: a cat of two ranges named by a table in its struct parameter (CuPy's concatenate
 * reads its inputs so): a table entry no pointer patch follows */
static uint32_t gather_off[2] = { 0, 32 };
static uint32_t gather_size[2] = { 32, 8 };
static const struct cap_func gather_info = RWT_FUNC(0x6a7, 7, "gather2", 2, 40, gather_off, gather_size);

static unsigned char params[MAX_OPS][MAX_PARAMS];

/* the stand-in allocator: what it handed out and took back */
static uint32_t allocs, frees;
static bool alloc_fails;

static int fake_alloc(CUcontext ctx, uint64_t bytes, uint64_t *out)
{
	(void)ctx;
	(void)bytes;
	if (alloc_fails)
		return -CF_ENOMEM;
	*out = OWN + (uint64_t)allocs++ * 0x10000;
	return 0;
}

static void fake_free(CUcontext ctx, uint64_t buf)
{
	(void)ctx;
	assert_true(buf >= OWN && buf < OWN + (uint64_t)allocs * 0x10000);
	frees++;
}

static const struct rw_rename_hooks rename_hooks = { fake_alloc, fake_free, false };

static const struct rw_multi_hooks multi_hooks = { rwt_multi_possible, rwt_multi_launch };

static struct cap_op scale_op(uint32_t slot, uint64_t out, uint64_t in, int32_t n)
{
	return rwt_scale_op(&scale_info, params[slot], out, in, 2.0f, n, STREAM_A);
}

static struct cap_op consume_op(const struct cap_func *f, uint32_t slot, uint64_t out, uint64_t in, int32_t n)
{
	return rwt_scale_op(f, params[slot], out, in, 1.0f, n, STREAM_A);
}

/* A pointer parameter of a kernel op (scale's layout: out at 0, in at 8). */
static uint64_t ptr_at(const struct cap_op *op, uint32_t off)
{
	uint64_t v;

	memcpy(&v, (const unsigned char *)op->u.kernel.params + off, 8);
	return v;
}

/* Pointer parameter at off of instance i of a stand-in multi-instance launch. */
static uint64_t inst_ptr(const struct cap_op *multi, uint32_t i, uint32_t off)
{
	uint64_t v;

	assert_ptr_equal(multi->u.kernel.func, FAKE_MULTI);
	memcpy(&v, (const unsigned char *)multi->u.kernel.params + 4 + i * (4 + 24) + 4 + off, 8);
	return v;
}

static int setup(void **state)
{
	static const char card[] = "kernel consume\n  param out ptr w n*4\n  param in ptr r n*4\n  param s f32\n"
				   "  param n i32\nend\nkernel consume_any\n  param out ptr w n*4\n"
				   "  param in ptr r unknown\n  param s f32\n  param n i32\nend\n"
				   "kernel gather2\n  param t struct 32\n  param out ptr w table\n"
				   "  cat t ptr=0+8i len=16+4i count=24 max=2\nend\n";

	(void)state;
	assert_string_equal(rw_rule_batch_kernel.name, "batch-kernel");
	assert_string_equal(rw_rule_copy_chain.name, "copy-chain");
	rw__set_multi_hooks(&multi_hooks);
	rw__set_rename_hooks(&rename_hooks);
	assert_int_equal(rw_cards_parse(rw_cards_global(), "test", card, strlen(card)), 0);
	return 0;
}

/* The run over ops with a budget of max bytes; the plan's one-line form into buf. */
static struct rw_run *run_with(struct cap_op *ops, uint32_t n, struct rw_rename_budget *b, uint64_t max, char *buf,
			       size_t cap)
{
	const struct cap_op *ptr[MAX_OPS];
	struct rw_config cfg = { .opt = 1, .rename = b };
	struct rw_run *r;

	memset(b, 0, sizeof(*b));
	b->max = max;
	allocs = frees = 0;
	rwt_ptrs(ops, n, ptr);
	r = rw_run_create(ptr, n, &cfg);
	buf[0] = 0;
	if (r)
		assert_true((size_t)rw_plan_format(r->plan, buf, cap) < cap);
	return r;
}

/* feature 1: A = scale(X1), H1 = consume(A); feature 2: A = scale(X2) (the pool's A again),
 * H2 = consume(A). The second scale writes OWN instead and joins the first; H2 reads OWN; the
 * program reads A after the window, so A gets a copy back at the second scale's position. */
static void test_tower(void **state)
{
	struct cap_op ops[4] = { scale_op(0, AT(0), AT(1), 100), consume_op(&consume_info, 1, AT(2), AT(0), 100),
				 scale_op(2, AT(0), AT(3), 100), consume_op(&consume_info, 3, AT(4), AT(0), 100) };
	struct rw_rename_budget b;
	struct cap_op tmp;
	const struct cap_op *o;
	char buf[1024];
	struct rw_run *r;

	(void)state;
	r = run_with(ops, 4, &b, 1 << 20, buf, sizeof(buf));
	assert_non_null(r);
	/* the readers fuse too: the second reads OWN, nothing the first touches */
	assert_string_equal(buf, "batch_kernel(0,2) batch_kernel(1,3) rename_back(2) | independent(0,2) "
				 "independent(1,2) independent(1,3)");
	assert_int_equal(r->plan->nren, 1);
	assert_int_equal(allocs, 1);
	assert_int_equal(b.used, 512); /* 400 bytes, rounded up to 256 */
	assert_true(rw_run_guards_hold(r, ops));
	/* the batch: its second instance writes OWN */
	o = rw_run_op(r, 0, ops, &tmp);
	assert_int_equal(inst_ptr(o, 0, 0), AT(0));
	assert_int_equal(inst_ptr(o, 1, 0), OWN);
	assert_int_equal(ptr_at(&ops[2], 0), AT(0)); /* the program's op untouched */
	/* the copy back at the second scale's position: OWN -> A, 400 bytes, on its stream */
	o = rw_run_op(r, 2, ops, &tmp);
	assert_non_null(o);
	assert_int_equal(o->kind, CAP_OP_MEMCPY);
	assert_int_equal(o->u.memcpy.src_first, OWN);
	assert_int_equal(o->u.memcpy.dst_first, AT(0));
	assert_int_equal(o->u.memcpy.bytes, 400);
	assert_ptr_equal(o->stream, STREAM_A);
	/* the reader after it reads OWN; the one before it, A */
	o = rw_run_op(r, 1, ops, &tmp);
	assert_int_equal(inst_ptr(o, 0, 8), AT(0));
	assert_int_equal(inst_ptr(o, 1, 8), OWN);
	/* the pool moves: feature 2 gets B, its reader follows at an offset: patched at the offset */
	ops[2] = scale_op(2, AT(5), AT(3), 100);
	ops[3] = consume_op(&consume_info, 3, AT(4), AT(5) + 40, 90);
	assert_true(rw_run_guards_hold(r, ops));
	o = rw_run_op(r, 1, ops, &tmp);
	assert_int_equal(inst_ptr(o, 1, 8), OWN + 40);
	o = rw_run_op(r, 2, ops, &tmp);
	assert_int_equal(o->u.memcpy.dst_first, AT(5));
	/* the reader no longer reads what the scale wrote: the patch would be wrong, the check fails */
	ops[3] = consume_op(&consume_info, 3, AT(4), AT(6), 100);
	assert_false(rw_run_guards_hold(r, ops));
	/* the scale writes more than the buffer holds */
	ops[2] = scale_op(2, AT(0), AT(3), 200);
	ops[3] = consume_op(&consume_info, 3, AT(4), AT(0), 100);
	assert_false(rw_run_guards_hold(r, ops));
	rw_run_destroy(r);
	assert_int_equal(frees, 1);
	assert_int_equal(b.used, 0);
	assert_int_equal(b.peak, 512);
}

/* No gain: A = scale(X1), H1 = consume(A), A = scale(X2), nothing reading the second A in the
 * window. Renaming the second scale fuses the two scales but needs a copy back (the program reads
 * A later): 3 nodes, as many as without renaming, so the plan without it is kept and its buffer
 * freed; with the fuzzer's keep_all the renamed plan is kept (what decides is the count). */
static void test_no_gain(void **state)
{
	static const struct rw_rename_hooks keep = { fake_alloc, fake_free, true };
	struct cap_op ops[3] = { scale_op(0, AT(0), AT(1), 100), consume_op(&consume_info, 1, AT(2), AT(0), 100),
				 scale_op(2, AT(0), AT(3), 100) };
	struct rw_rename_budget b;
	char buf[1024];
	struct rw_run *r;

	(void)state;
	r = run_with(ops, 3, &b, 1 << 20, buf, sizeof(buf));
	assert_null(r); /* the identity plan: no run */
	assert_int_equal(b.used, 0);
	assert_int_equal(allocs, frees);
	rw__set_rename_hooks(&keep);
	r = run_with(ops, 3, &b, 1 << 20, buf, sizeof(buf));
	rw__set_rename_hooks(&rename_hooks);
	assert_non_null(r);
	assert_int_equal(r->plan->nren, 1);
	assert_string_equal(buf, "batch_kernel(0,2) op(1) rename_back(2) | independent(0,2) independent(1,2)");
	rw_run_destroy(r);
	assert_int_equal(b.used, 0);
}

/* Three features: the second's A is written whole again by the third scale, every reader between
 * patched: no copy back for it; the third's stays (the window's end). */
static void test_covered(void **state)
{
	struct cap_op ops[6] = { scale_op(0, AT(0), AT(1), 100), consume_op(&consume_info, 1, AT(2), AT(0), 100),
				 scale_op(2, AT(0), AT(3), 100), consume_op(&consume_info, 3, AT(4), AT(0), 100),
				 scale_op(4, AT(0), AT(5), 100), consume_op(&consume_info, 5, AT(6), AT(0), 100) };
	struct rw_rename_budget b;
	const struct cap_op *o;
	struct cap_op tmp;
	char buf[1024];
	struct rw_run *r;

	(void)state;
	r = run_with(ops, 6, &b, 1 << 20, buf, sizeof(buf));
	assert_non_null(r);
	assert_non_null(strstr(buf, "batch_kernel(0,2,4)"));
	assert_non_null(strstr(buf, "rename_back(4)"));
	assert_null(strstr(buf, "rename_back(2)"));
	assert_int_equal(r->plan->nren, 2);
	assert_true(rw_run_guards_hold(r, ops));
	assert_true(rw_run_is_folded(r, 2)); /* no node: its output lives in OWN until the next scale */
	o = rw_run_op(r, 1, ops, &tmp); /* the readers, one launch: A, OWN, the second buffer */
	assert_int_equal(inst_ptr(o, 0, 8), AT(0));
	assert_int_equal(inst_ptr(o, 1, 8), OWN);
	assert_int_equal(inst_ptr(o, 2, 8), OWN + 0x10000);
	/* the third scale writes only half of A now: the second's bytes past it would be lost */
	ops[4] = scale_op(4, AT(0), AT(5), 50);
	assert_false(rw_run_guards_hold(r, ops));
	rw_run_destroy(r);
	assert_int_equal(frees, allocs);
	assert_int_equal(b.used, 0);
}

/* gather2(out, {a, b}) of n bytes each, on blocks of block threads (launches of different
 * blocks never fuse). */
static struct cap_op gather_op(uint32_t slot, uint64_t out, uint64_t a, uint64_t b, uint32_t n, unsigned block)
{
	unsigned char *pb = params[slot];

	memset(pb, 0, 40);
	rwt_put_u64(pb, 0, a);
	rwt_put_u64(pb, 8, b);
	rwt_put_i32(pb, 16, (int32_t)n);
	rwt_put_i32(pb, 20, (int32_t)n);
	rwt_put_i32(pb, 24, 2);
	rwt_put_u64(pb, 32, out);
	return rwt_kernel_op(&gather_info, pb, 4, block, STREAM_A);
}

/* Three features, each A = scale(Xi), Hi = consume(A), Gi = gather2(A, Yi), the gathers with
 * blocks of `block[0..3)` threads. */
static void three_features(struct cap_op ops[9], const unsigned block[3])
{
	for (unsigned k = 0; k < 3; k++) {
		ops[3 * k] = scale_op(3 * k, AT(0), AT(1 + 3 * k), 100);
		ops[3 * k + 1] = consume_op(&consume_info, 3 * k + 1, AT(2 + 3 * k), AT(0), 100);
		ops[3 * k + 2] = gather_op(3 * k + 2, AT(3 + 3 * k), AT(0), AT(1 + 3 * k), 400, block[k]);
	}
}

/* Three features, each A = scale(Xi), Hi = consume(A), Gi = gather2(A, Yi): the gather reads A
 * through a table entry, which no patch follows. It is kept reading A; the second and third
 * scales write buffers of cufold's own all the same, each copied back at its position (before
 * its gather), and the scales and the consumes fuse: 7 nodes where there were 9. The gathers
 * fuse with nothing (their blocks differ): each stays a node of its own after its copy back.
 * The check finds the kept readers again, and fails when one no longer reads A. */
static void test_kept_reader(void **state)
{
	static const unsigned block[3] = { 64, 96, 128 };
	struct cap_op ops[9];
	struct rw_rename_budget b;
	const struct cap_op *o;
	struct cap_op tmp;
	char buf[1024];
	struct rw_run *r;

	(void)state;
	three_features(ops, block);
	r = run_with(ops, 9, &b, 1 << 20, buf, sizeof(buf));
	assert_non_null(r);
	assert_string_equal(buf, "batch_kernel(0,3,6) batch_kernel(1,4,7) op(2) op(5) op(8) rename_back(3) "
				 "rename_back(6) | independent(0,3) independent(1,3) independent(2,3) independent(0,6) "
				 "independent(1,6) independent(2,6) independent(3,6) independent(4,6) independent(5,6) "
				 "independent(1,4) independent(2,4) independent(1,7) independent(2,7) independent(4,7) "
				 "independent(5,7)");
	assert_int_equal(r->plan->nren, 2);
	for (uint32_t k = 0; k < 2; k++) {
		assert_true(r->plan->ren[k].back);
		assert_int_equal(r->plan->ren[k].nkept, 1);
		assert_int_equal(r->plan->ren[k].nuse, 2);
	}
	assert_true(rw_run_guards_hold(r, ops));
	/* the consumes read A, OWN and the second buffer; the gathers are the program's own */
	o = rw_run_op(r, 1, ops, &tmp);
	assert_int_equal(inst_ptr(o, 1, 8), OWN);
	assert_int_equal(inst_ptr(o, 2, 8), OWN + 0x10000);
	o = rw_run_op(r, 5, ops, &tmp);
	assert_ptr_equal(o, &ops[5]);
	o = rw_run_op(r, 3, ops, &tmp);
	assert_int_equal(o->kind, CAP_OP_MEMCPY);
	assert_int_equal(o->u.memcpy.src_first, OWN);
	assert_int_equal(o->u.memcpy.dst_first, AT(0));
	/* the second gather reads elsewhere now: not the reader the plan kept, the check fails */
	ops[5] = gather_op(5, AT(6), AT(10), AT(4), 400, 96);
	assert_false(rw_run_guards_hold(r, ops));
	ops[5] = gather_op(5, AT(6), AT(0), AT(4), 400, 96);
	assert_true(rw_run_guards_hold(r, ops));
	rw_run_destroy(r);
	assert_int_equal(frees, allocs);
	assert_int_equal(b.used, 0);
}

/* The run of ops[0..n) renames nothing, its plan holds no `absent`, and no buffer is left. */
static void expect_not_renamed(struct cap_op *ops, uint32_t n, const char *absent)
{
	struct rw_rename_budget b;
	char buf[1024];
	struct rw_run *r;

	r = run_with(ops, n, &b, 1 << 20, buf, sizeof(buf));
	assert_true(!r || r->plan->nren == 0);
	assert_null(strstr(buf, absent));
	rw_run_destroy(r);
	assert_int_equal(frees, allocs);
	assert_int_equal(b.used, 0);
}

/* Still refused: the same three features with gathers that fuse (one block shape). Over the
 * window as patched the gathers all read A's first bytes, so batch-kernel would run them as one
 * launch at the first one's position: the second and third would read feature 1's A. A kept
 * reader must stay a node of its own; the renames are dropped and nothing is renamed. */
static void test_kept_reader_merged(void **state)
{
	static const unsigned block[3] = { 64, 64, 64 };
	struct cap_op ops[9];

	(void)state;
	three_features(ops, block);
	expect_not_renamed(ops, 9, "batch_kernel(2,5");
}

/* Still refused: a kept reader a rule rewrote. A 1-D copy C1 writes S into A and past it, the
 * second scale writes A again (renamed: OWN), and a copy C2 reads across A's end (no patch
 * follows a read straddling the range: kept). Over the window as patched nothing writes A
 * between C1 and C2, so copy-chain would make C2 read from S: no read of A is left to watch,
 * yet eager's C2 reads the second scale's bytes. A kept reader must stay the op it was: the
 * rename is dropped. */
static void test_kept_reader_chained(void **state)
{
	struct cap_op ops[6] = { scale_op(0, AT(0), AT(1), 100), consume_op(&consume_info, 1, AT(2), AT(0), 100),
				 rwt_copy_op(AT(3), AT(0), 800, STREAM_A), scale_op(3, AT(0), AT(4), 100),
				 rwt_copy_op(AT(0) + 200, AT(6), 400, STREAM_A),
				 consume_op(&consume_info, 5, AT(5), AT(0), 100) };

	(void)state;
	expect_not_renamed(ops, 6, "chain");
}

/* Refused: a true dependence (the second scale reads what the first wrote) is no reuse: nothing
 * renamed, no buffer. A reader of A whose span is unknown, with no allocation map to bound it,
 * may read and write anything: it is kept reading A after a copy back, which leaves the plan no
 * fewer nodes (4): the launch is not renamed, its buffer freed. */
static void test_refused(void **state)
{
	struct cap_op raw[4] = { scale_op(0, AT(0), AT(1), 100), consume_op(&consume_info, 1, AT(2), AT(0), 100),
				 scale_op(2, AT(3), AT(0), 100), consume_op(&consume_info, 3, AT(4), AT(3), 100) };
	struct cap_op unknown[4] = { scale_op(4, AT(0), AT(1), 100),
				     consume_op(&consume_info, 5, AT(2), AT(0), 100), scale_op(6, AT(0), AT(3), 100),
				     consume_op(&consume_any_info, 7, AT(4), AT(0), 100) };
	const struct cap_op *ptr[4];
	struct rw_rename_budget b;
	struct rw_rename_scan sc;
	struct rw_range rr;
	uint32_t op, word;
	char buf[1024];
	struct rw_run *r;

	(void)state;
	rwt_ptrs(raw, 4, ptr);
	for (uint32_t i = 0; i < 4; i++)
		assert_false(rw__rename_target(ptr, 4, i, &op, &word));
	r = run_with(raw, 4, &b, 1 << 20, buf, sizeof(buf));
	assert_true(!r || r->plan->nren == 0);
	assert_int_equal(allocs, 0);
	rw_run_destroy(r);

	rwt_ptrs(unknown, 4, ptr);
	assert_true(rw__rename_target(ptr, 4, 2, &op, &word));
	assert_int_equal(op, 2);
	assert_int_equal(word, 0);
	assert_int_equal(rw__rename_access(ptr[2], word, &rr), 0);
	rw__rename_scan(ptr, 4, 2, &rr, &sc);
	assert_false(sc.refused); /* kept reading A, taken for a write that covers nothing */
	assert_int_equal(sc.nkept, 1);
	assert_int_equal(sc.end, 3);
	assert_true(sc.back);
	r = run_with(unknown, 4, &b, 1 << 20, buf, sizeof(buf));
	assert_true(!r || r->plan->nren == 0);
	assert_int_equal(b.used, 0);
	assert_int_equal(frees, allocs);
	rw_run_destroy(r);
}

/* The budget: 0 renames nothing; one smaller than the buffer refuses it (counted); a failed
 * allocation likewise. The plan is then made as without renaming: the scales stay apart. */
static void test_budget(void **state)
{
	struct cap_op ops[4] = { scale_op(0, AT(0), AT(1), 100), consume_op(&consume_info, 1, AT(2), AT(0), 100),
				 scale_op(2, AT(0), AT(3), 100), consume_op(&consume_info, 3, AT(4), AT(0), 100) };
	struct rw_rename_budget b;
	char buf[1024];
	struct rw_run *r;

	(void)state;
	r = run_with(ops, 4, &b, 0, buf, sizeof(buf));
	assert_null(r); /* nothing fires */
	assert_int_equal(allocs, 0);
	r = run_with(ops, 4, &b, 511, buf, sizeof(buf));
	assert_null(r);
	assert_int_equal(b.refused, 1);
	assert_int_equal(b.used, 0);
	alloc_fails = true;
	r = run_with(ops, 4, &b, 1 << 20, buf, sizeof(buf));
	alloc_fails = false;
	assert_null(r);
	assert_int_equal(b.refused, 1);
	assert_int_equal(b.used, 0);
	r = run_with(ops, 4, &b, 512, buf, sizeof(buf));
	assert_non_null(r);
	assert_int_equal(b.used, 512);
	rw_run_destroy(r);
	assert_int_equal(b.used, 0);
}

/* What renaming exposed in batch-kernel (tests/e2e/replay_torch_habits.sh, setattr: launches with
 * 60 KiB of dynamic shared memory, renamed, fused, and the variant launch refused): instances
 * share one dynamic shared size, at most what a function has without the attribute. */
static void test_multi_shared(void **state)
{
	struct cap_op a = scale_op(0, AT(0), AT(1), 100), b = scale_op(1, AT(2), AT(3), 100);

	(void)state;
	assert_true(rw_multi_fits(&a, &b));
	b.u.kernel.shared_bytes = 256;
	assert_false(rw_multi_fits(&a, &b));
	a.u.kernel.shared_bytes = 256;
	assert_true(rw_multi_fits(&a, &b));
	a.u.kernel.shared_bytes = b.u.kernel.shared_bytes = 60 * 1024;
	assert_false(rw_multi_fits(&a, &b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tower),
		cmocka_unit_test(test_no_gain),
		cmocka_unit_test(test_covered),
		cmocka_unit_test(test_kept_reader),
		cmocka_unit_test(test_kept_reader_merged),
		cmocka_unit_test(test_kept_reader_chained),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_multi_shared),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
