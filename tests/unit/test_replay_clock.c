/* test_replay_clock.c - what replay's timed samples take out of their readings (issue 22): the
 * calibration of an empty pair of clock reads and rpl_own_time's subtraction, with fake clocks
 * that advance by a fixed step per read, so nothing here is timed. Until 2026-12-06 rpl_own_time
 * took twice a read's cost, and a sample's reading holds one: every sample lost a read's cost
 * and short ones read 0 (the fixed loop's report said 13-16 ns an op where cufold spends more).
 * tests layer (cmocka, libcufold.a). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "replay/replay_int.h"

static const struct rpl_config cfg = { .warmup = 1, .segment = 64 };

/* A fake clock: every read advances it by step, then reads it, as a real read costs its time
 * and reads an instant inside it. work() advances it as the timed code would. */
static uint64_t fake_now, fake_step, spike_every, spike_ns, reads;

static uint64_t fake_clock(void)
{
	reads++;
	fake_now += fake_step;
	if (spike_every && reads % spike_every == 0)
		fake_now += spike_ns; /* preempted */
	return fake_now;
}

static void fake_set(uint64_t step)
{
	fake_now = 1000000;
	fake_step = step;
	spike_every = spike_ns = reads = 0;
}

static void work(uint64_t ns)
{
	fake_now += ns;
}

static void test_pair_reads_one_step(void **state)
{
	(void)state;
	fake_set(23);
	assert_int_equal(rpl_clock_pair_ns(fake_clock), 23);
	fake_set(0);
	assert_int_equal(rpl_clock_pair_ns(fake_clock), 0);
}

/* a preempted pair would add ms to the mean: it is left out, as a preempted sample is */
static void test_preempted_pairs_left_out(void **state)
{
	(void)state;
	fake_set(22);
	spike_every = 37;
	spike_ns = 5000000;
	assert_int_equal(rpl_clock_pair_ns(fake_clock), 22);
}

/* The engine's timed sample, t0 = clock(); work; clock() - t0, reads work + one step: with the
 * pair calibrated on the same clock, rpl_own_time keeps the work exactly, short samples too. */
static void test_own_time_takes_one_pair(void **state)
{
	struct rpl_engine *re = rpl_engine_create(NULL, &cfg);
	const uint64_t work_ns[] = { 40, 5, 1, 300 };
	struct rpl_totals t;
	uint64_t sum = 0;

	(void)state;
	assert_non_null(re);
	fake_set(23);
	rpl_calibrate_clocks(re, fake_clock, fake_clock);
	assert_int_equal(re->st.own_clock_ns, 23);
	assert_int_equal(re->st.clock_ns, 23);
	for (size_t i = 0; i < sizeof(work_ns) / sizeof(work_ns[0]); i++) {
		uint64_t t0 = fake_clock();

		work(work_ns[i]);
		rpl_own_time(re, fake_clock() - t0);
		sum += work_ns[i];
	}
	rpl_get_totals(re, &t);
	/* the old subtraction (2 x 23) would have kept 17 + 0 + 0 + 277 */
	assert_int_equal(t.own_ns, sum);
	assert_int_equal(t.own_samples, 4);
	assert_true(rpl_own_ns_per_op(re) == (double)sum / 4.0);
	rpl_engine_destroy(re);
}

/* Each sample takes its own clock's pair: the own clock (monotonic less the device's CPU time,
 * an extra call) reads more than cf_now_ns alone; a reading under the pair (jitter) counts as 0
 * and a preempted one not at all. */
static void test_own_and_match_clocks_apart(void **state)
{
	struct rpl_engine *re = rpl_engine_create(NULL, &cfg);
	struct rpl_totals t;
	uint64_t t0;

	(void)state;
	assert_non_null(re);
	fake_set(20);
	re->st.clock_ns = rpl_clock_pair_ns(fake_clock);
	fake_set(31);
	re->st.own_clock_ns = rpl_clock_pair_ns(fake_clock);
	assert_int_equal(re->st.clock_ns, 20);
	assert_int_equal(re->st.own_clock_ns, 31);
	t0 = fake_clock();
	work(12);
	rpl_own_time(re, fake_clock() - t0);
	rpl_own_time(re, 25);       /* under the pair */
	rpl_own_time(re, 10000000); /* preempted */
	rpl_get_totals(re, &t);
	assert_int_equal(t.own_ns, 12);
	assert_int_equal(t.own_samples, 2);
	rpl_engine_destroy(re);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pair_reads_one_step),
		cmocka_unit_test(test_preempted_pairs_left_out),
		cmocka_unit_test(test_own_time_takes_one_pair),
		cmocka_unit_test(test_own_and_match_clocks_apart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
