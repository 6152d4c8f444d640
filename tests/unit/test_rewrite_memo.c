/* test_rewrite_memo.c - the rewriter's driver remembers where a rule said no (rules with a
 * reach, and for rules whose reads are tracked, by the furthest node the answer read) and its
 * scans stop by one sweep (rw_first_failing): on windows longer than any rule's reach, the plans
 * must be those made asking every rule at every node after each application.
 * tests layer (cmocka, libcufold.a). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "rw_test.h"

/* Every rule of the catalog (named, so each object is linked in). */
extern const struct rw_rule rw_rule_coalesce, rw_rule_slice_glue, rw_rule_dead_write, rw_rule_duplicate,
	rw_rule_copy_chain, rw_rule_batch_copy, rw_rule_identity_cat, rw_rule_batch_elementwise, rw_rule_parallel;
static const struct rw_rule *const all_rules[] = {
	&rw_rule_coalesce,   &rw_rule_slice_glue,   &rw_rule_dead_write,        &rw_rule_duplicate, &rw_rule_copy_chain,
	&rw_rule_batch_copy, &rw_rule_identity_cat, &rw_rule_batch_elementwise, &rw_rule_parallel,
};
#define NRULES (sizeof(all_rules) / sizeof(all_rules[0]))

#define LONG_N 220 /* ops of a random window: longer than every reach (slice-glue's, 128) */

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/* Window seed: 0 is the copy loop of scripts/bench-overhead (158 ops: 52 memsets of a's first
 * halves, 52 copies a -> b, 52 copies of b's first halves to the next a's second halves, a
 * memset); others mix memsets, copies and repeats over 24 buffers (overwrites, chains, runs that
 * coalesce or batch, duplicates). */
static uint32_t long_window(struct cap_op *w, uint64_t seed)
{
	const uint64_t base = 0x7f0000000000ull, buf = 1024;
	CUstream s = (CUstream)0x51;
	uint64_t r = seed;
	uint32_t n = 0;

	if (!seed) {
		for (uint64_t i = 0; i < 52; i++)
			w[n++] = rwt_memset_op(base + i * buf, buf / 2, s);
		for (uint64_t i = 0; i < 52; i++)
			w[n++] = rwt_copy_op(base + i * buf, base + (52 + i) * buf, buf, s);
		for (uint64_t i = 0; i < 52; i++)
			w[n++] = rwt_copy_op(base + (52 + i) * buf, base + ((i + 1) % 52) * buf + buf / 2, buf / 2, s);
		w[n++] = rwt_memset_op(base + 200 * buf, 4, s);
		return n;
	}
	while (n < LONG_N) {
		uint64_t a = lcg(&r) % 24, b = lcg(&r) % 24, off = (lcg(&r) % 4) * 256, len = 256 * (1 + lcg(&r) % 2);

		switch (lcg(&r) % 8) {
		case 6: /* two pieces of a copy with a memset between that a later one makes dead */
			if (n + 4 <= LONG_N && a != b) {
				w[n++] = rwt_copy_op(base + a * buf, base + b * buf, 256, s);
				w[n++] = rwt_memset_op(base + 30 * buf, 256, s);
				w[n++] = rwt_copy_op(base + a * buf + 256, base + b * buf + 256, 256, s);
				w[n++] = rwt_memset_op(base + 30 * buf, 256, s);
			}
			break;
		case 7: /* two pieces of a copy with a duplicate of an earlier copy between them */
			if (n + 4 <= LONG_N && a != b && a < 20 && b < 20) {
				w[n++] = rwt_copy_op(base + 28 * buf, base + 29 * buf, 256, s);
				w[n++] = rwt_copy_op(base + a * buf, base + b * buf, 256, s);
				w[n++] = rwt_copy_op(base + 28 * buf, base + 29 * buf, 256, s);
				w[n++] = rwt_copy_op(base + a * buf + 256, base + b * buf + 256, 256, s);
			}
			break;
		case 0:
			w[n++] = rwt_memset_op(base + a * buf + off, len, s);
			break;
		case 1: /* a repeat of a recent op */
			if (n) {
				w[n] = w[n - 1 - lcg(&r) % (n < 8 ? n : 8)];
				n++;
			}
			break;
		case 2: /* the next piece of the last copy (coalesce, batch) */
			if (n && w[n - 1].kind == CAP_OP_MEMCPY) {
				uint64_t src = w[n - 1].u.memcpy.src_first, dst = w[n - 1].u.memcpy.dst_first;
				uint64_t len0 = w[n - 1].u.memcpy.bytes;

				if ((dst + len0) % buf && (src + len0) % buf)
					w[n++] = rwt_copy_op(src + len0, dst + len0, 256, s);
			}
			break;
		default:
			if (a != b)
				w[n++] = rwt_copy_op(base + a * buf + off, base + b * buf + off, len, s);
			break;
		}
	}
	return n;
}

static void test_memo_long_windows(void **state)
{
	static struct cap_op w[LONG_N + 4];
	static char with[1 << 17], without[1 << 17];
	const struct cap_op *wp[LONG_N + 4];
	unsigned fired = 0;

	(void)state;
	rw__set_kernel_resolver(rwt_fake_resolver);
	for (uint64_t seed = 0; seed < 60; seed++) {
		uint32_t n = long_window(w, seed);
		struct rw_plan *p, *q;

		rwt_ptrs(w, n, wp);
		p = rw_rewrite(wp, n, NULL, NULL, all_rules, NRULES);
		rw__set_memo(false);
		q = rw_rewrite(wp, n, NULL, NULL, all_rules, NRULES);
		rw__set_memo(true);
		assert_non_null(p);
		assert_non_null(q);
		rw_plan_format(p, with, sizeof(with));
		rw_plan_format(q, without, sizeof(without));
		if (strcmp(with, without) != 0)
			fail_msg("window %llu (%u ops): with the memo\n  %s\nasking every time\n  %s",
				 (unsigned long long)seed, n, with, without);
		fired += p->nstats;
		rw_plan_destroy(p);
		rw_plan_destroy(q);
	}
	assert_true(fired >= 60); /* the rules had work to do */
}

/* The node a scan stopped at is part of what its answer read. dead-write at 0 says no: node 1
 * reads A (its scan's stop). dead-write then erases node 1 (B is overwritten before anyone reads
 * it), and asked again, node 0 is dead too (A is overwritten by node 3 with nothing reading it
 * between). A memo that forgot the stop was read keeps the old "no". */
static void test_memo_stop_is_read(void **state)
{
	const uint64_t a = 0x7f0000000000ull, b = a + 4096;
	CUstream s = (CUstream)0x51;
	struct cap_op w[4] = {
		rwt_memset_op(a, 1024, s),
		rwt_copy_op(a, b, 1024, s),
		rwt_memset_op(b, 1024, s),
		rwt_memset_op(a, 1024, s),
	};
	const struct cap_op *wp[4];
	const struct rw_rule *dead_only = &rw_rule_dead_write;
	static char with[4096], without[4096];
	struct rw_plan *p, *q;
	uint32_t dead = 0;

	(void)state;
	rwt_ptrs(w, 4, wp);
	p = rw_rewrite(wp, 4, NULL, NULL, &dead_only, 1);
	rw__set_memo(false);
	q = rw_rewrite(wp, 4, NULL, NULL, &dead_only, 1);
	rw__set_memo(true);
	assert_non_null(p);
	assert_non_null(q);
	for (uint32_t k = 0; k < q->nstats; k++)
		if (strcmp(q->stats[k].rule, "dead-write") == 0)
			dead = q->stats[k].count;
	rw_plan_format(q, without, sizeof(without));
	if (dead != 2)
		fail_msg("not the case described: %s", without);
	rw_plan_format(p, with, sizeof(with));
	rw_plan_format(q, without, sizeof(without));
	assert_string_equal(with, without);
	rw_plan_destroy(p);
	rw_plan_destroy(q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memo_stop_is_read),
		cmocka_unit_test(test_memo_long_windows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
