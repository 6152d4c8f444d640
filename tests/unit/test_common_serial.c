/* test_common_serial.c - the record of who holds the recording lock (common/serial.c) and capture's
 * check that it is called with it held: only the holder's thread passes once a holder has
 * entered; a capture entry point called without the lock aborts a debug build. In a release
 * build the checks are compiled out and the tests skip. tests layer (cmocka, libcufold.a; no
 * driver). */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "common/serial.h"

static struct cap_engine *ce __attribute__((unused)); /* the engine part under test (debug builds) */

#ifdef CF_DEBUG
static void *held_elsewhere(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)cf_serial_is_held();
}

/* Whether another thread than the caller passes cf_serial_is_held now. */
static bool held_on_other_thread(void)
{
	pthread_t t;
	void *held = NULL;

	assert_int_equal(pthread_create(&t, NULL, held_elsewhere, NULL), 0);
	assert_int_equal(pthread_join(t, &held), 0);
	return held != NULL;
}

/* Run fn in a forked child; returns the signal that ended it, or 0 when it exited. */
static int child_signal(void (*fn)(void))
{
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

/* A capture entry point called on a thread that does not hold the lock another thread holds. */
static void *boundary_elsewhere(void *arg)
{
	(void)arg;
	cap_note_passthrough(ce, DRV_ID_cuStreamSynchronize);
	return NULL;
}

static void capture_without_lock(void)
{
	struct cap_config cfg = { .max_templates = 4 };
	pthread_t t;

	if (!(ce = cap_engine_create(&cfg)))
		_exit(2);
	cf_serial_enter();
	pthread_create(&t, NULL, boundary_elsewhere, NULL);
	pthread_join(t, NULL);
}

static void capture_with_lock(void)
{
	struct cap_config cfg = { .max_templates = 4 };

	if (!(ce = cap_engine_create(&cfg)))
		_exit(2);
	cf_serial_enter();
	cap_note_passthrough(ce, DRV_ID_cuStreamSynchronize);
	cf_serial_leave();
}
#endif

static void test_holder(void **state)
{
	(void)state;
#ifdef CF_DEBUG
	/* before any holder: no lock is known, everyone passes (unit tests of capture alone) */
	assert_true(cf_serial_is_held());
	assert_false(cf_serial_is_mine());
	cf_serial_enter();
	assert_true(cf_serial_is_held());
	assert_true(cf_serial_is_mine());
	assert_false(held_on_other_thread());
	cf_serial_leave();
	assert_false(cf_serial_is_held());
	assert_false(held_on_other_thread());
	/* a forked child's copy of the holder's thread holds nothing once the lock is re-made */
	cf_serial_enter();
	cf_serial_forget();
	assert_false(cf_serial_is_mine());
#else
	skip();
#endif
}

static void test_capture_checks(void **state)
{
	(void)state;
#ifdef CF_DEBUG
	assert_int_equal(child_signal(capture_with_lock), 0);
	assert_int_equal(child_signal(capture_without_lock), SIGABRT);
#else
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_holder),
		cmocka_unit_test(test_capture_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
