/* test_rewrite_incremental.c - rw_run's incremental guard checks: a launch whose bindings match
 * no remembered pass is checked only on the guards with a side whose op moved relative to the
 * last pass (rewrite/plan.c run_moved). A move that breaks a guard is caught whether the op that
 * moved is the guard's side a or side b; a move next to a guard's ops leaves it unchecked but the
 * pass stands; when the allocation map moved since a pass that looked an extent up, the check is
 * made in full and catches a guard no op of which moved. The variant is the stand-in of
 * test_rewrite_batch_kernel.c. tests layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <string.h>

#include "common/errors.h"
#define RWT_HASH_OPS /* rw_run's remembered passes read capture's hashes */
#include "rw_test.h"
#include "rewrite/effects.h"

/* referenced, so that the rule's object is linked in from libcufold.a and registered */
extern const struct rw_rule rw_rule_batch_kernel;

#define BUF 0x7f0000000000ull /* buffers of 64 KB each: BUF + b * 0x10000 */
#define AT(b) (BUF + (uint64_t)(b) * 0x10000)
#define MAX_OPS 8
#define MAX_PARAMS 48

/* scale (out w n*4, in r n*4, s, n) and fill (x w n*4, v, n) have cards (test-kernels.cards) */
static const struct cap_func scale_info = RWT_FUNC(0x5ca1e, 1, "scale", RWT_LAYOUT_SCALE);
static const struct cap_func fill_info = RWT_FUNC(0xf111, 2, "fill", RWT_LAYOUT_FILL);
/* embedding_bag_sum: table and indices `unknown` (a gather), offsets, out nbags*dim*4 */
static uint32_t bag_off[6] = { 0, 8, 16, 24, 28, 32 };
static uint32_t bag_size[6] = { 8, 8, 8, 4, 4, 8 };
static const struct cap_func bag_info = RWT_FUNC(0xba9, 4, "embedding_bag_sum", 6, 40, bag_off, bag_size);

static unsigned char params[MAX_OPS][MAX_PARAMS];

static struct cap_op scale_op(uint32_t slot, uint64_t out, uint64_t in, int32_t n)
{
	return rwt_scale_op(&scale_info, params[slot], out, in, 2.0f, n, STREAM_A);
}

static struct cap_op fill_op(uint32_t slot, uint64_t x, int32_t n)
{
	return rwt_fill_op(&fill_info, params[slot], x, 1.0f, n, STREAM_A);
}

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

/* ------------------------------------------------------------------ the stand-in variant */


static const struct rw_multi_hooks hooks_yes = { rwt_multi_possible, rwt_multi_launch };

static int setup(void **state)
{
	(void)state;
	rw__set_multi_hooks(&hooks_yes);
	return 0;
}

/* ------------------------------------------------------------------ tests */

/* The plan the rule alone makes of ops (what rw_run_create's rewrite makes of them too). */
static void expect_plan(struct cap_op *ops, uint32_t n, const char *want)
{
	const struct rw_rule *rules[1] = { &rw_rule_batch_kernel };
	char buf[2048];
	struct rw_plan *p = rwt_run(ops, n, rules, 1, buf, sizeof(buf));

	assert_string_equal(buf, want);
	rw_plan_destroy(p);
}

/* Two features, scale then fill each: "batch_kernel(0,2) batch_kernel(1,3) | independent(0,2)
 * independent(1,2) independent(1,3)". */
static void tower(struct cap_op ops[4], uint64_t fill1, uint64_t scale2_in, uint64_t fill3)
{
	ops[0] = scale_op(0, AT(0), AT(1), 1000);
	ops[1] = fill_op(1, fill1, 100);
	ops[2] = scale_op(2, AT(3), scale2_in, 300);
	ops[3] = fill_op(3, fill3, 200);
}

/* A launch checked incrementally: *part went up by one, *full did not. */
static void expect_part(const struct rw_run *r, uint64_t *full, uint64_t *part)
{
	assert_int_equal(r->nfull, *full);
	assert_int_equal(r->npart, *part + 1);
	*part = r->npart;
}

/* The op that moved breaks a guard as its side a (fill 1 onto what scale 2 writes:
 * independent(1,2)) and as its side b (scale 2 reading what fill 1 writes: independent(1,2)
 * again, the other side); each is caught by an incremental check right after a pass. A move
 * that keeps every guard passes incrementally; a remembered pass is not checked at all. */
static void test_moved_side_a_and_b(void **state)
{
	struct cap_op ops[4];
	const struct cap_op *ptr[4];
	struct rw_config cfg = { .opt = 1 };
	uint64_t full, part;
	struct rw_run *r;

	(void)state;
	tower(ops, AT(2), AT(4), AT(5));
	expect_plan(ops, 4, "batch_kernel(0,2) batch_kernel(1,3) | independent(0,2) independent(1,2) independent(1,3)");
	rwt_ptrs(ops, 4, ptr);
	r = rw_run_create(ptr, 4, &cfg);
	assert_non_null(r);
	assert_int_equal(r->plan->nguards, 3);
	assert_true(rw_run_guards_hold(r, ops)); /* nothing remembered: in full */
	full = r->nfull;
	part = r->npart;
	assert_int_equal(part, 0);

	/* fill 3 moves to a buffer of its own: only independent(1,3) is checked, and holds */
	tower(ops, AT(2), AT(4), AT(6));
	assert_true(rw_run_guards_hold(r, ops));
	expect_part(r, &full, &part);

	/* side a: fill 1 now writes what scale 2 writes (buffer 3) */
	tower(ops, AT(3), AT(4), AT(6));
	assert_false(rw_run_guards_hold(r, ops));
	expect_part(r, &full, &part);

	/* a pass again (after a failure the check is in full: the effects cache is not the base's) */
	tower(ops, AT(2), AT(4), AT(7));
	assert_true(rw_run_guards_hold(r, ops));
	assert_int_equal(r->nfull, full + 1);
	full = r->nfull;

	/* side b: scale 2 now reads what fill 1 writes (buffer 2) */
	tower(ops, AT(2), AT(2), AT(7));
	assert_false(rw_run_guards_hold(r, ops));
	expect_part(r, &full, &part);

	/* a remembered pass comes back: not checked at all */
	tower(ops, AT(2), AT(4), AT(7));
	assert_true(rw_run_guards_hold(r, ops));
	assert_int_equal(r->nfull, full);
	assert_int_equal(r->npart, part);

	/* side b moves and still holds; then side a moves onto what the moved b reads */
	tower(ops, AT(2), AT(8), AT(7));
	assert_true(rw_run_guards_hold(r, ops));
	assert_int_equal(r->nfull, full + 1); /* the failure before gave the cache up */
	full = r->nfull;
	tower(ops, AT(8), AT(8), AT(7));
	assert_false(rw_run_guards_hold(r, ops));
	expect_part(r, &full, &part);
	rw_run_destroy(r);
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

/* A gather whose table's extent its passes looked up sits between two scales: "batch_kernel(0,2)
 * op(1) | independent(0,2) independent(1,2)". With the map as it was, a launch that moves only
 * scale 0's input is checked incrementally (independent(0,2) alone). Then the table is
 * allocated again over scale 2's output and scale 0's input moves once more: the gather and
 * scale 2 did not move, but the map did, so the check is made in full and independent(1,2)
 * fails. */
static void test_map_moved_full_check(void **state)
{
	struct cap_op ops[3] = { scale_op(0, AT(0), AT(1), 1000), bag_op(1, AT(2), AT(13)),
				 scale_op(2, AT(3), AT(4), 300) };
	const struct cap_op *ptr[3];
	struct rw_config cfg = { .opt = 1 };
	struct rw_alloc_view v, *was;
	uint64_t full, part;
	struct rw_run *r;

	(void)state;
	rwt_ptrs(ops, 3, ptr);
	was = rw_alloc_view_use(view_of_map(&v, 0x10000, 1));
	expect_plan(ops, 3, "batch_kernel(0,2) op(1) | independent(0,2) independent(1,2)");
	r = rw_run_create(ptr, 3, &cfg);
	assert_non_null(r);
	assert_int_equal(r->plan->nguards, 2);
	assert_true(rw_run_guards_hold(r, ops));
	full = r->nfull;
	part = r->npart;

	ops[0] = scale_op(0, AT(0), AT(5), 1000);
	assert_true(rw_run_guards_hold(r, ops));
	expect_part(r, &full, &part);

	view_of_map(&v, 0x20000, 2); /* buffer 2 again, twice the size: over buffer 3 */
	ops[0] = scale_op(0, AT(0), AT(6), 1000);
	assert_false(rw_run_guards_hold(r, ops));
	assert_int_equal(r->nfull, full + 1);
	assert_int_equal(r->npart, part);

	view_of_map(&v, 0x10000, 3); /* back to its size: holds again, in full (the pass failed) */
	assert_true(rw_run_guards_hold(r, ops));
	assert_int_equal(r->nfull, full + 2);
	rw_alloc_view_use(was);
	rw_run_destroy(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_moved_side_a_and_b),
		cmocka_unit_test(test_map_moved_full_check),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
