/* test_common_lock.c - the engine's lock (common/lock.h, lock.c): mutual exclusion under heavy
 * contention (threads that find it taken sleep on the futex and are woken: a lost wake-up hangs
 * this test, a broken exclusion loses increments), trylock's answers, and the bounded wait a
 * signal's last report uses. tests layer (cmocka, libcufold.a; no driver). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "common/lock.h"

#define THREADS 8
#define ROUNDS 200000

static cf_lock_t lock;
static volatile uint64_t counter; /* changed only under lock, non-atomically on purpose */
static int inside;                /* holders now: never more than one */
static int overlaps;              /* times a holder found another inside */

static void *hammer(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		cf_lock(&lock);
		if (__atomic_fetch_add(&inside, 1, __ATOMIC_RELAXED) != 0)
			__atomic_fetch_add(&overlaps, 1, __ATOMIC_RELAXED);
		for (int spin = 0; spin < 20; spin++)
			counter = counter + 1; /* a wider critical section: overlaps lose increments */
		counter = counter - 19;
		__atomic_fetch_sub(&inside, 1, __ATOMIC_RELAXED);
		if ((i & 1023) == 0)
			sched_yield(); /* hold it a while now and then: others must sleep and be woken */
		cf_unlock(&lock);
	}
	return NULL;
}

static void test_exclusion(void **state)
{
	pthread_t t[THREADS];

	(void)state;
	cf_lock_init(&lock);
	counter = 0;
	inside = overlaps = 0;
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, NULL), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(overlaps, 0);
	assert_int_equal(counter, (uint64_t)THREADS * ROUNDS);
	assert_true(cf_trylock(&lock)); /* every holder dropped it */
	cf_unlock(&lock);
}

static void *try_elsewhere(void *arg)
{
	return (void *)(intptr_t)cf_trylock(arg);
}

static void test_try_and_within(void **state)
{
	struct timespec t0, t1;
	pthread_t t;
	void *got;

	(void)state;
	cf_lock_init(&lock);
	assert_true(cf_trylock(&lock));
	assert_false(cf_trylock(&lock)); /* not recursive */
	assert_int_equal(pthread_create(&t, NULL, try_elsewhere, &lock), 0);
	pthread_join(t, &got);
	assert_false((intptr_t)got);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_false(cf_lock_within(&lock, 20)); /* held: gives up after about 20 ms */
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_true((t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) >= 20000000L);
	cf_unlock(&lock);
	assert_true(cf_lock_within(&lock, 20));
	cf_unlock(&lock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exclusion),
		cmocka_unit_test(test_try_and_within),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
