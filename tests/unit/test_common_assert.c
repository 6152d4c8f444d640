/* test_common_assert.c - cf_assert (common/compiler.h): debug builds evaluate the condition and
 * abort when it is false; release builds compile it (it must type-check) but never evaluate it.
 * tests layer (cmocka, libcufold.a). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/compiler.h"

#ifdef CF_DEBUG
#define EVALUATED 1
#else
#define EVALUATED 0
#endif

static int calls;

static int count(void)
{
	return ++calls;
}

static void test_evaluated_in_debug_only(void **state)
{
	int n = 0;

	(void)state;
	calls = 0;
	cf_assert(++n == 1);
	cf_assert(count() > 0);
	assert_int_equal(n, EVALUATED);
	assert_int_equal(calls, EVALUATED);
}

/* A false condition aborts a debug build (after its log line) and does nothing in release. */
static void test_false_condition(void **state)
{
	pid_t pid;
	int st = 0;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int two = 2;

		cf_assert(two == 3);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (EVALUATED)
		assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT);
	else
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evaluated_in_debug_only),
		cmocka_unit_test(test_false_condition),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
