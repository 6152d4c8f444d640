/* test_rewrite_parallel.c - golden and negative tests of the parallel rule (level 2) on small hand-made
 * windows: the independent guards it records, the plan's dependency lists (exact, transitively
 * reduced, indexing the final node list when other rules ran first), guards failing when
 * bindings move, and the windows it must leave in stream order. tests layer (cmocka, libcufold.a). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#define RWT_HASH_OPS /* ops carry capture's hashes, as the rewriter sees them */
#include "rw_test.h"

extern const struct rw_rule rw_rule_parallel;
extern const struct rw_rule rw_rule_dead_write;
extern const struct rw_rule rw_rule_coalesce;

#define BUF_A 0x7f0000000000ull /* separate buffers, 16 MiB apart: nothing overlaps unless a */
#define BUF_B 0x7f0001000000ull /* test moves a binding onto another buffer */
#define BUF_C 0x7f0002000000ull
#define BUF_D 0x7f0003000000ull
#define BUF_E 0x7f0004000000ull
#define BUF_F 0x7f0005000000ull
#define BUF_G 0x7f0006000000ull
#define BUF_S 0x7f0007000000ull
#define NB 256                  /* bytes each op touches (64 floats) */
#define NF (NB / 4)             /* floats */
#define MAX_OPS 16
#define MAX_PARAMS 32

/* Every rule but parallel (and the two it is combined with below), for runs made from cfg. */
#define OTHERS_OFF "-batch-copy,-batch-elementwise,-copy-chain,-duplicate,-identity-cat,-slice-glue"

/* Kernels of the built-in cards: scale and fill (their layouts in rw_test.h), add (out w, a r,
 * b r, n i32); "mystery" has no card (it may touch anything). */
static uint32_t add_off[] = { 0, 8, 16, 24 }, add_size[] = { 8, 8, 8, 4 };
static const struct cap_func scale_func = RWT_FUNC(0x5001, 1, "scale", RWT_LAYOUT_SCALE);
static const struct cap_func fill_func = RWT_FUNC(0x5002, 2, "fill", RWT_LAYOUT_FILL);
static const struct cap_func add_func = RWT_FUNC(0x5003, 3, "add", 4, 28, add_off, add_size);
static const struct cap_func mystery_func = RWT_FUNC(0x5004, 4, "mystery", RWT_LAYOUT_MYSTERY);

/* Parameter bytes of the kernels of one window, by window position. */
static unsigned char params[MAX_OPS][MAX_PARAMS];

static void put_ptr(uint32_t pos, uint32_t off, uint64_t v)
{
	rwt_put_u64(params[pos], off, v);
}

/* The parameter bytes of window position pos, cleared for a new launch. */
static unsigned char *fresh_params(uint32_t pos)
{
	memset(params[pos], 0, MAX_PARAMS);
	return params[pos];
}

/* scale at window position pos: out[i] = 2 * in[i], i < n. */
static struct cap_op scale_op(uint32_t pos, uint64_t out, uint64_t in, int32_t n, CUstream s)
{
	return rwt_scale_op(&scale_func, fresh_params(pos), out, in, 2.0f, n, s);
}

/* fill at window position pos: x[i] = 1, i < n. */
static struct cap_op fill_op(uint32_t pos, uint64_t x, int32_t n, CUstream s)
{
	return rwt_fill_op(&fill_func, fresh_params(pos), x, 1.0f, n, s);
}

/* add at window position pos: out[i] = a[i] + b[i], i < n. */
static struct cap_op add_op(uint32_t pos, uint64_t out, uint64_t a, uint64_t b, int32_t n, CUstream s)
{
	unsigned char *pb = fresh_params(pos);

	rwt_put_u64(pb, add_off[0], out);
	rwt_put_u64(pb, add_off[1], a);
	rwt_put_u64(pb, add_off[2], b);
	rwt_put_i32(pb, add_off[3], n);
	return rwt_kernel_n_op(&add_func, pb, (uint32_t)n, s);
}

/* A kernel no card describes, given only a pointer into unrelated memory. */
static struct cap_op mystery_op(uint32_t pos, uint64_t p, int32_t n, CUstream s)
{
	return rwt_mystery_op(&mystery_func, fresh_params(pos), p, n, s);
}

/* Parallel alone. */
static struct rw_plan *run(struct cap_op *ops, uint32_t n, char *buf, size_t cap)
{
	const struct rw_rule *rules[1] = { &rw_rule_parallel };

	return rwt_run(ops, n, rules, 1, buf, cap);
}

/* The dependency lists as one string, "k:d,d k:d ..." ("-" for a node that waits for nothing),
 * so a failure shows the whole of them. */
static void format_deps(const struct rw_plan *p, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	assert_non_null(p->dep_start);
	assert_non_null(p->dep_list);
	for (uint32_t k = 0; k < p->nnodes; k++) {
		len += (size_t)snprintf(buf + len, cap - len, "%s%u:", k ? " " : "", (unsigned)k);
		if (p->dep_start[k] == p->dep_start[k + 1])
			len += (size_t)snprintf(buf + len, cap - len, "-");
		for (uint32_t d = p->dep_start[k]; d < p->dep_start[k + 1]; d++)
			len += (size_t)snprintf(buf + len, cap - len, "%s%u", d > p->dep_start[k] ? "," : "",
						(unsigned)p->dep_list[d]);
		assert_true(len < cap);
	}
}

static void expect_deps(const struct rw_plan *p, const char *want)
{
	char buf[1024];

	format_deps(p, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

/* Whether node k waits for node j (j < k), directly or through other waits. */
static bool reaches(const struct rw_plan *p, uint32_t k, uint32_t j)
{
	for (uint32_t d = p->dep_start[k]; d < p->dep_start[k + 1]; d++) {
		uint32_t m = p->dep_list[d];

		if (m == j || (m > j && reaches(p, m, j)))
			return true;
	}
	return false;
}

/* Whether the plan has an independent guard on exactly nodes j and k. */
static bool has_independent(const struct rw_plan *p, uint32_t j, uint32_t k)
{
	for (uint32_t g = 0; g < p->nguards; g++)
		if (p->guards[g].kind == RW_G_INDEPENDENT && p->guards[g].a == p->nodes[j].orig[0] &&
		    p->guards[g].b == p->nodes[k].orig[0])
			return true;
	return false;
}

/* What replay relies on, for any plan with dependency lists: every list names earlier nodes,
 * every pair is either still ordered (through the lists) or guarded independent, and no wait
 * is implied by another wait of the same node (transitive reduction). */
static void check_deps_sound(const struct rw_plan *p)
{
	assert_int_equal(p->dep_start[0], 0);
	for (uint32_t k = 0; k < p->nnodes; k++) {
		assert_true(p->dep_start[k] <= p->dep_start[k + 1]);
		for (uint32_t d = p->dep_start[k]; d < p->dep_start[k + 1]; d++) {
			assert_true(p->dep_list[d] < k);
			for (uint32_t e = p->dep_start[k]; e < p->dep_start[k + 1]; e++)
				if (e != d && p->dep_list[e] > p->dep_list[d] && reaches(p, p->dep_list[e], p->dep_list[d]))
					fail_msg("node %u waits for %u directly and through %u", k, p->dep_list[d],
						 p->dep_list[e]);
		}
		for (uint32_t j = 0; j < k; j++)
			if (!reaches(p, k, j) && !has_independent(p, j, k))
				fail_msg("nodes %u and %u are neither ordered nor guarded independent", j, k);
	}
}

/* ------------------------------------------------------------------ golden */

/* X1 writes A, X2 writes B, X3 reads A, X4 reads B: two chains, X3 waits only for X1 and X4 only
 * for X2. */
static void test_two_chains(void **state)
{
	struct cap_op ops[4], out;
	const struct cap_op *ptr[4];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_memset_op(BUF_A, NB, STREAM_A);
	ops[1] = fill_op(1, BUF_B, NF, STREAM_A);
	ops[2] = rwt_copy_op(BUF_A, BUF_C, NB, STREAM_A);
	ops[3] = scale_op(3, BUF_D, BUF_B, NF, STREAM_A);
	p = run(ops, 4, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) op(1) op(2) op(3) | independent(0,1) independent(1,2) independent(0,3) "
				 "independent(2,3)");
	expect_deps(p, "0:- 1:- 2:0 3:1");
	{
		static const uint32_t start[5] = { 0, 0, 0, 1, 2 }, list[2] = { 0, 1 };

		assert_memory_equal(p->dep_start, start, sizeof(start));
		assert_memory_equal(p->dep_list, list, sizeof(list));
	}
	check_deps_sound(p);
	assert_int_equal(p->nstats, 1);
	assert_string_equal(p->stats[0].rule, "parallel");
	assert_int_equal(p->stats[0].count, 1);
	assert_non_null(p->erased_by);
	for (uint32_t i = 0; i < 4; i++) {
		assert_int_equal(p->nodes[i].kind, RW_NODE_OP);
		assert_null(p->erased_by[i]);
	}
	rwt_ptrs(ops, 4, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* the nodes are the original ops themselves */
	for (uint32_t k = 0; k < 4; k++) {
		assert_int_equal(rw_plan_node_op(p, k, ptr, &out), 0);
		assert_int_equal(out.kind, ops[k].kind);
	}
	assert_int_equal(rw_plan_node_op(p, 4, ptr, &out), -CF_EINVAL);

	/* X1 and X3 move to other buffers, still apart from the rest: the guards hold */
	ops[0].u.memset.dst = BUF_E;
	rwt_copy_move(&ops[2], BUF_E, BUF_G);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* an ordered pair becoming independent needs no guard (X3 no longer reads X1's bytes) */
	rwt_copy_move(&ops[2], BUF_S, BUF_G);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	rwt_copy_move(&ops[2], BUF_E, BUF_G);

	/* X2 fills into the tail of X1's bytes: two unordered writes meet */
	put_ptr(1, rwt_fill_off[0], BUF_E + NB - 4);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 0);
	assert_int_equal(p->guards[failed].b, 1);
	put_ptr(1, rwt_fill_off[0], BUF_B);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* X3 now reads one byte of what X2 writes (X3 would not wait for X2) */
	rwt_copy_move(&ops[2], BUF_B + NB - 1, BUF_G);
	ops[2].u.memcpy.bytes = ops[2].u.memcpy.src_span = ops[2].u.memcpy.dst_span = 1;
	ops[2].u.memcpy.d.WidthInBytes = 1;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 1);
	assert_int_equal(p->guards[failed].b, 2);
	ops[2] = rwt_copy_op(BUF_E, BUF_G, NB, STREAM_A);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* X4 writes where X3 writes (write after write, unordered) */
	put_ptr(3, rwt_scale_off[0], BUF_G + 8);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 2);
	assert_int_equal(p->guards[failed].b, 3);
	/* X4 writes what X1 wrote (X3 reads it): X1 and X4 are unordered */
	put_ptr(3, rwt_scale_off[0], BUF_E);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 0);
	assert_int_equal(p->guards[failed].b, 3);
	/* X4's output ends where X3's starts; one element more and they meet: the card's span
	 * follows the count */
	put_ptr(3, rwt_scale_off[0], BUF_G - NB);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	{
		int32_t n = NF + 1;

		memcpy(params[3] + rwt_scale_off[3], &n, 4);
	}
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 2);
	assert_int_equal(p->guards[failed].b, 3);
	rw_plan_destroy(p);
}

/* X1 writes A; X2 reads A, writes B; X3 reads A and B; X4 is apart from all. X3 conflicts with X1
 * and X2, but waits only for X2 (which waits for X1). */
static void test_chain_reduced(void **state)
{
	struct cap_op ops[4];
	const struct cap_op *ptr[4];
	char buf[2048];
	struct rw_plan *p;

	(void)state;
	ops[0] = rwt_memset_op(BUF_A, NB, STREAM_A);
	ops[1] = scale_op(1, BUF_B, BUF_A, NF, STREAM_A);
	ops[2] = add_op(2, BUF_C, BUF_A, BUF_B, NF, STREAM_A);
	ops[3] = rwt_memset_op(BUF_E, NB, STREAM_A);
	p = run(ops, 4, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) op(1) op(2) op(3) | independent(0,3) independent(1,3) independent(2,3)");
	expect_deps(p, "0:- 1:0 2:1 3:-");
	check_deps_sound(p);
	rwt_ptrs(ops, 4, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	rw_plan_destroy(p);

	/* the same chain of three without the fourth: nothing is left unordered */
	rwt_expect_identity(run, ops, 3);
}

/* A diamond: X1 writes A; X2 and X3 read A (write B, C); X4 writes A from B and C. X4 conflicts
 * with all three and waits for X3 and X2 (nearest first), not for X1. */
static void test_diamond(void **state)
{
	struct cap_op ops[5];
	const struct cap_op *ptr[5];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_memset_op(BUF_A, NB, STREAM_A);
	ops[1] = scale_op(1, BUF_B, BUF_A, NF, STREAM_A);
	ops[2] = scale_op(2, BUF_C, BUF_A, NF, STREAM_A);
	ops[3] = add_op(3, BUF_A, BUF_B, BUF_C, NF, STREAM_A);
	/* reads A after X4: waits for X4 only */
	ops[4] = rwt_copy_op(BUF_A, BUF_D, NB, STREAM_A);
	p = run(ops, 5, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) op(1) op(2) op(3) op(4) | independent(1,2) independent(1,4) independent(2,4)");
	expect_deps(p, "0:- 1:0 2:0 3:2,1 4:3");
	check_deps_sound(p);
	rwt_ptrs(ops, 5, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* X3 writes into B (X2's output): the two branches meet */
	put_ptr(2, rwt_scale_off[0], BUF_B + 64);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 1);
	assert_int_equal(p->guards[failed].b, 2);
	rw_plan_destroy(p);
}

/* A kernel with no card may touch anything: every op before it is ordered before it, every op
 * after it waits for it; only ops on one side of it are left unordered among themselves. */
static void test_unknown_kernel_barrier(void **state)
{
	struct cap_op ops[5];
	const struct cap_op *ptr[5];
	char buf[2048];
	struct rw_plan *p;

	(void)state;
	ops[0] = rwt_memset_op(BUF_A, NB, STREAM_A);
	ops[1] = rwt_memset_op(BUF_B, NB, STREAM_A);
	ops[2] = mystery_op(2, BUF_E, 16, STREAM_A);
	ops[3] = rwt_memset_op(BUF_C, NB, STREAM_A);
	ops[4] = fill_op(4, BUF_D, NF, STREAM_A);
	p = run(ops, 5, buf, sizeof(buf));
	assert_string_equal(buf, "op(0) op(1) op(2) op(3) op(4) | independent(0,1) independent(0,3) independent(1,3) "
				 "independent(0,4) independent(1,4) independent(3,4)");
	expect_deps(p, "0:- 1:- 2:1,0 3:2 4:2");
	check_deps_sound(p);
	for (uint32_t k = 3; k < 5; k++)
		for (uint32_t j = 0; j < 3; j++)
			assert_true(reaches(p, k, j));
	assert_false(reaches(p, 1, 0));
	assert_false(reaches(p, 4, 3));
	rwt_ptrs(ops, 5, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* whatever the unknown kernel is given, no guard names it: it stays a barrier */
	put_ptr(2, rwt_mystery_off[0], BUF_A);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	rw_plan_destroy(p);
}

/* ------------------------------------------------------------------ with other rules */

/* dead-write erases X0 first; parallel then works on the final list [1 2 3 4], and the lists
 * name positions in that list (plan nodes), not original ops. */
static void test_after_dead_write(void **state)
{
	const struct rw_rule *rules[2] = { &rw_rule_parallel, &rw_rule_dead_write };
	struct cap_op ops[5];
	const struct cap_op *ptr[5];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_memset_op(BUF_D, NB, STREAM_A);          /* dead: the copy overwrites it */
	ops[1] = rwt_memset_op(BUF_E, NB, STREAM_A);
	ops[2] = rwt_copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[3] = scale_op(3, BUF_F, BUF_D, NF, STREAM_A); /* reads the copy's bytes */
	ops[4] = scale_op(4, BUF_G, BUF_E, NF, STREAM_A); /* reads the second memset's */
	p = rwt_run(ops, 5, rules, 2, buf, sizeof(buf));
	assert_string_equal(buf, "op(1) op(2) op(3) op(4) | set_1d(0,0) covers(0,2) unread(0,1) unread(0,2) "
				 "independent(1,2) independent(1,3) independent(2,4) independent(3,4)");
	assert_int_equal(p->nnodes, 4);
	/* node 2 (op 3) waits for node 1 (op 2), node 3 (op 4) for node 0 (op 1) */
	expect_deps(p, "0:- 1:- 2:1 3:0");
	check_deps_sound(p);
	assert_int_equal(p->nstats, 2);
	assert_string_equal(p->stats[0].rule, "dead-write");
	assert_string_equal(p->stats[1].rule, "parallel");
	assert_string_equal(p->erased_by[0], "dead-write");
	rwt_ptrs(ops, 5, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* op 4 reads what the copy writes: the guard names original ops 2 and 4 */
	put_ptr(4, rwt_scale_off[1], BUF_D);
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_int_equal(p->guards[failed].a, 2);
	assert_int_equal(p->guards[failed].b, 4);
	put_ptr(4, rwt_scale_off[1], BUF_E);
	rw_plan_destroy(p);

	/* the same window as replay lays it out (rules from a config): op 0 is an empty node, and
	 * each node's waits are the positions of the plan nodes it names */
	{
		struct rw_config cfg = { 2, OTHERS_OFF ",-coalesce", NULL, NULL };
		struct rw_run *r = rw_run_create(ptr, 5, &cfg);
		const struct rw_plan *rp;
		static const int32_t node_of[5] = { -1, 0, 1, 2, 3 };
		uint32_t pos[4];

		assert_non_null(r);
		rp = r->plan;
		assert_memory_equal(r->node_of, node_of, sizeof(node_of));
		assert_true(rw_run_is_folded(r, 0));
		expect_deps(rp, "0:- 1:- 2:1 3:0");
		for (uint32_t k = 0; k < rp->nnodes; k++) {
			pos[k] = rp->nodes[k].orig[0];
			assert_int_equal(r->node_of[pos[k]], (int32_t)k);
		}
		/* position 3 (scale reading D) waits for position 2 (the copy), 4 for 1 */
		assert_int_equal(pos[rp->dep_list[rp->dep_start[2]]], 2);
		assert_int_equal(pos[rp->dep_list[rp->dep_start[3]]], 1);
		assert_true(rw_run_guards_hold(r, ops));
		rw_run_destroy(r);
	}
}

/* coalesce merges copies 0 and 1 first; parallel's guards name the merged node by its snapshot,
 * and the lists index [copy(0,1) op(2) op(3)]. */
static void test_after_coalesce(void **state)
{
	const struct rw_rule *rules[2] = { &rw_rule_coalesce, &rw_rule_parallel };
	struct cap_op ops[4];
	const struct cap_op *ptr[4];
	char buf[2048];
	struct rw_plan *p;
	uint32_t failed = 999;

	(void)state;
	ops[0] = rwt_copy_op(BUF_S, BUF_D, 64, STREAM_A);
	ops[1] = rwt_copy_op(BUF_S + 64, BUF_D + 64, 32, STREAM_A);
	ops[2] = scale_op(2, BUF_F, BUF_D, 24, STREAM_A); /* reads all 96 bytes the pair writes */
	ops[3] = rwt_memset_op(BUF_E, NB, STREAM_A);
	p = rwt_run(ops, 4, rules, 2, buf, sizeof(buf));
	assert_string_equal(buf, "copy(0,1) op(2) op(3) | linear_dtod(0,0) linear_dtod(1,1) same_stream(0,1) "
				 "src_abuts(0,1) dst_abuts(0,1) disjoint(0,1) independent(copy(0,1),3) "
				 "independent(2,3)");
	expect_deps(p, "0:- 1:0 2:-");
	check_deps_sound(p);
	rwt_ptrs(ops, 4, ptr);
	assert_true(rw_plan_guards_hold(p, ptr, NULL));
	/* the memset moves into the second copy's part: only the merged node's range shows it */
	ops[3].u.memset.dst = BUF_D + 80;
	assert_false(rw_plan_guards_hold(p, ptr, &failed));
	assert_int_equal(p->guards[failed].kind, RW_G_INDEPENDENT);
	assert_true(p->guards[failed].na >= 0);
	assert_int_equal(p->guards[failed].b, 3);
	ops[3].u.memset.dst = BUF_E;
	rw_plan_destroy(p);

	{
		struct rw_config cfg = { 2, OTHERS_OFF ",-dead-write", NULL, NULL };
		struct rw_run *r = rw_run_create(ptr, 4, &cfg);
		static const int32_t node_of[4] = { 0, -1, 1, 2 };

		assert_non_null(r);
		assert_memory_equal(r->node_of, node_of, sizeof(node_of));
		expect_deps(r->plan, "0:- 1:0 2:-");
		/* the scale's wait is the merged copy at position 0, not the empty node at 1 */
		assert_int_equal(r->plan->nodes[r->plan->dep_list[r->plan->dep_start[1]]].orig[0], 0);
		rw_run_destroy(r);
	}
}

/* Another rule fires but parallel finds nothing to unorder: the plan keeps the window's order
 * (no lists). */
static void test_no_lists_without_parallel(void **state)
{
	const struct rw_rule *rules[2] = { &rw_rule_parallel, &rw_rule_dead_write };
	struct cap_op ops[3];
	char buf[2048];
	struct rw_plan *p;

	(void)state;
	ops[0] = rwt_memset_op(BUF_D, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_S, BUF_D, NB, STREAM_A);
	ops[2] = scale_op(2, BUF_F, BUF_D, NF, STREAM_A);
	p = rwt_run(ops, 3, rules, 2, buf, sizeof(buf));
	assert_string_equal(buf, "op(1) op(2) | set_1d(0,0) covers(0,1) unread(0,1)");
	assert_int_equal(p->nstats, 1);
	assert_null(p->dep_start);
	assert_null(p->dep_list);
	rw_plan_destroy(p);
}

/* Registered at level 2, last (benefit 0). */
static void test_registered(void **state)
{
	struct rw_config cfg1 = { 1, NULL, NULL, NULL }, cfg2 = { 2, NULL, NULL, NULL }, off = { 2, "-parallel", NULL, NULL }, on1 = { 1, "+parallel", NULL, NULL };

	(void)state;
	assert_string_equal(rw_rule_parallel.name, "parallel");
	assert_int_equal(rw_rule_parallel.level, 2);
	assert_int_equal(rw_rule_parallel.benefit, 0);
	assert_true(rw_rule_is_enabled(&rw_rule_parallel, &cfg2));
	assert_false(rw_rule_is_enabled(&rw_rule_parallel, &cfg1));
	assert_false(rw_rule_is_enabled(&rw_rule_parallel, &off));
	assert_true(rw_rule_is_enabled(&rw_rule_parallel, &on1));
}

/* ------------------------------------------------------------------ negative */

/* Independent ops on two streams: the order between streams is not the rule's to drop. */
static void test_two_streams(void **state)
{
	struct cap_op ops[3];

	(void)state;
	ops[0] = rwt_memset_op(BUF_A, NB, STREAM_A);
	ops[1] = rwt_memset_op(BUF_B, NB, STREAM_B);
	rwt_expect_identity(run, ops, 2);
	/* the same handle in another slot is another stream of the shape */
	ops[1] = rwt_memset_op(BUF_B, NB, STREAM_A);
	ops[1].stream_slot = 1;
	rwt_expect_identity(run, ops, 2);
	/* two independent ops on A, a third on B */
	ops[1] = fill_op(1, BUF_B, NF, STREAM_A);
	ops[2] = rwt_memset_op(BUF_C, NB, STREAM_B);
	rwt_expect_identity(run, ops, 3);
	/* the odd one first */
	ops[0] = rwt_memset_op(BUF_C, NB, STREAM_B);
	ops[2] = rwt_memset_op(BUF_A, NB, STREAM_A);
	rwt_expect_identity(run, ops, 3);
}

/* An event record anywhere in the list: a stream waiting on it relies on the order. */
static void test_event(void **state)
{
	struct cap_op ops[4];

	(void)state;
	ops[0] = rwt_memset_op(BUF_A, NB, STREAM_A);
	ops[1] = rwt_memset_op(BUF_B, NB, STREAM_A);
	ops[2] = rwt_event_record_op(STREAM_A);
	ops[3] = rwt_memset_op(BUF_C, NB, STREAM_A);
	rwt_expect_identity(run, ops, 4);
	ops[2] = rwt_memset_op(BUF_C, NB, STREAM_A);
	ops[0] = rwt_event_record_op(STREAM_A);
	rwt_expect_identity(run, ops, 4);
	ops[0] = rwt_memset_op(BUF_A, NB, STREAM_A);
	ops[3] = rwt_event_record_op(STREAM_A);
	rwt_expect_identity(run, ops, 4);
}

/* Every pair conflicts: nothing to unorder. */
static void test_all_conflict(void **state)
{
	struct cap_op ops[4];

	(void)state;
	/* write after write on A throughout */
	ops[0] = rwt_memset_op(BUF_A, NB, STREAM_A);
	ops[1] = fill_op(1, BUF_A + NB - 4, 1, STREAM_A);
	ops[2] = rwt_copy_op(BUF_S, BUF_A + NB - 8, 8, STREAM_A);
	ops[3] = scale_op(3, BUF_A, BUF_A, NF, STREAM_A);
	rwt_expect_identity(run, ops, 4);
	/* read after write and write after read: A -> B -> A */
	ops[0] = rwt_memset_op(BUF_A, NB, STREAM_A);
	ops[1] = rwt_copy_op(BUF_A, BUF_B, NB, STREAM_A);
	ops[2] = scale_op(2, BUF_A, BUF_B, NF, STREAM_A);
	rwt_expect_identity(run, ops, 3);
	/* overlap by one byte only */
	ops[0] = rwt_memset_op(BUF_A, NB, STREAM_A);
	ops[1] = rwt_memset_op(BUF_A + NB - 1, NB, STREAM_A);
	rwt_expect_identity(run, ops, 2);
}

/* Unknown kernels conflict with everything; one op alone has no pair. */
static void test_unknown_and_single(void **state)
{
	struct cap_op ops[3];

	(void)state;
	ops[0] = mystery_op(0, BUF_A, 16, STREAM_A);
	ops[1] = mystery_op(1, BUF_B, 16, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	ops[1] = rwt_memset_op(BUF_B, NB, STREAM_A);
	rwt_expect_identity(run, ops, 2);
	rwt_expect_identity(run, ops, 1);
	/* two ops apart from each other on either side of an unknown kernel: left unordered by a
	 * guard, yet still ordered through the kernel */
	ops[0] = rwt_memset_op(BUF_A, NB, STREAM_A);
	ops[1] = mystery_op(1, BUF_C, 16, STREAM_A);
	ops[2] = rwt_memset_op(BUF_B, NB, STREAM_A);
	{
		char buf[1024];
		struct rw_plan *p = run(ops, 3, buf, sizeof(buf));

		assert_string_equal(buf, "op(0) op(1) op(2) | independent(0,2)");
		expect_deps(p, "0:- 1:0 2:1");
		assert_true(reaches(p, 2, 0));
		rw_plan_destroy(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_chains),
		cmocka_unit_test(test_chain_reduced),
		cmocka_unit_test(test_diamond),
		cmocka_unit_test(test_unknown_kernel_barrier),
		cmocka_unit_test(test_after_dead_write),
		cmocka_unit_test(test_after_coalesce),
		cmocka_unit_test(test_no_lists_without_parallel),
		cmocka_unit_test(test_registered),
		cmocka_unit_test(test_two_streams),
		cmocka_unit_test(test_event),
		cmocka_unit_test(test_all_conflict),
		cmocka_unit_test(test_unknown_and_single),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
