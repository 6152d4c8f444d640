/* test_common_config.c - every CUFOLD_* variable: defaults, valid values, and bad values (reported
 * once on stderr with the variable, the value and what is accepted, then the default).
 * tests layer (cmocka, libcufold.a). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/config.h"

extern char **environ;

static char path[64];
static int fd = -1; /* stands in for stderr */

static void clear_env(void)
{
	for (int again = 1; again;) {
		again = 0;
		for (char **e = environ; e && *e; e++) {
			if (strncmp(*e, "CUFOLD_", 7) == 0) {
				char name[128];
				size_t n = strcspn(*e, "=");

				snprintf(name, sizeof(name), "%.*s", (int)n, *e);
				unsetenv(name);
				again = 1;
				break;
			}
		}
	}
}

static int setup(void **state)
{
	(void)state;
	clear_env();
	cf_config__reset_reports();
	snprintf(path, sizeof(path), "/tmp/cufold-test-config-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	cf_log_set_stderr_fd(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cf_log_set_stderr_fd(2);
	close(fd);
	unlink(path);
	clear_env();
	return 0;
}

static char messages[8192];

#define PRINTABLE " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"

/* What was reported so far; returns the number of lines. */
static int reported(void)
{
	ssize_t n = pread(fd, messages, sizeof(messages) - 1, 0);
	int lines = 0;

	assert_true(n >= 0);
	messages[n] = 0;
	for (char *p = messages; *p; p++)
		lines += *p == '\n';
	return lines;
}

static void test_defaults(void **state)
{
	struct cf_config c;

	(void)state;
	assert_int_equal(cf_config_parse(&c), 0);
	assert_int_equal(c.mode, CF_MODE_REPLAY);
	assert_int_equal(c.opt, 1);
	assert_string_equal(c.rules, "");
	assert_int_equal(c.warmup, 2);
	assert_int_equal(c.segment, 512);
	assert_int_equal(c.min_ops, 8);
	assert_int_equal(c.max_templates, 256);
	assert_int_equal(c.rename_max_bytes, 64u << 20);
	assert_string_equal(c.cards, "");
	assert_string_equal(c.barrier_kernels, "nccl*");
	assert_false(c.callsites);
	assert_true(c.gate);
	assert_true(c.churn);
	assert_false(c.strict);
	assert_true(c.derive);
	assert_int_equal(c.log_level, CF_LOG_WARN);
	assert_string_equal(c.log_file, "");
	assert_string_equal(c.report, "");
	assert_string_equal(c.trace, "");
	assert_string_equal(c.dot, "");
	assert_string_equal(c.libcuda, "libcuda.so.1");
	assert_int_equal(c.bad, 0);
	assert_int_equal(reported(), 0);
}

static void test_valid_values(void **state)
{
	struct cf_config c;

	(void)state;
	setenv("CUFOLD_MODE", "off", 1);
	setenv("CUFOLD_OPT", "2", 1);
	setenv("CUFOLD_RULES", "-dead-write,+parallel,copy-chain", 1);
	setenv("CUFOLD_WARMUP", "5", 1);
	setenv("CUFOLD_SEGMENT", "64", 1);
	setenv("CUFOLD_MIN_OPS", "0", 1);
	setenv("CUFOLD_MAX_TEMPLATES", "1000000", 1);
	setenv("CUFOLD_RENAME_MAX_BYTES", "0", 1);
	setenv("CUFOLD_CARDS", "/a/b.cards:rel/c.cards", 1);
	setenv("CUFOLD_BARRIER_KERNELS", "nccl*,my_allreduce?", 1);
	setenv("CUFOLD_CALLSITES", "1", 1);
	setenv("CUFOLD_GATE", "0", 1);
	setenv("CUFOLD_CHURN", "0", 1);
	setenv("CUFOLD_STRICT", "1", 1);
	setenv("CUFOLD_DERIVE", "0", 1);
	setenv("CUFOLD_LOG", "debug", 1);
	setenv("CUFOLD_LOG_FILE", "/tmp/x y.log", 1);
	setenv("CUFOLD_REPORT", "r.json", 1);
	setenv("CUFOLD_TRACE", "t.json", 1);
	setenv("CUFOLD_DOT", "dots", 1);
	setenv("CUFOLD_LIBCUDA", "/usr/lib/libcuda.so.1", 1);
	assert_int_equal(cf_config_parse(&c), 0);
	assert_int_equal(c.mode, CF_MODE_OFF);
	assert_int_equal(c.opt, 2);
	assert_string_equal(c.rules, "-dead-write,+parallel,copy-chain");
	assert_int_equal(c.warmup, 5);
	assert_int_equal(c.segment, 64);
	assert_int_equal(c.min_ops, 0);
	assert_int_equal(c.max_templates, 1000000);
	assert_int_equal(c.rename_max_bytes, 0);
	assert_string_equal(c.cards, "/a/b.cards:rel/c.cards");
	assert_string_equal(c.barrier_kernels, "nccl*,my_allreduce?");
	assert_true(c.callsites);
	assert_false(c.gate);
	assert_false(c.churn);
	assert_true(c.strict);
	assert_false(c.derive);
	assert_int_equal(c.log_level, CF_LOG_DEBUG);
	assert_string_equal(c.log_file, "/tmp/x y.log");
	assert_string_equal(c.report, "r.json");
	assert_string_equal(c.trace, "t.json");
	assert_string_equal(c.dot, "dots");
	assert_string_equal(c.libcuda, "/usr/lib/libcuda.so.1");
	assert_int_equal(reported(), 0);

	/* what "$CUFOLD_CARDS:mine.cards" gives when CUFOLD_CARDS is unset: mine.cards */
	setenv("CUFOLD_CARDS", ":mine.cards", 1);
	setenv("CUFOLD_RUN_ID", "job-42.rank_3", 1);
	setenv("CUFOLD_REPORT_EVERY", "30", 1);
	assert_int_equal(cf_config_parse(&c), 0);
	assert_string_equal(c.cards, ":mine.cards");
	assert_string_equal(c.run_id, "job-42.rank_3");
	assert_int_equal(c.report_every, 30);
	setenv("CUFOLD_REPORT_EVERY", "off", 1);
	assert_int_equal(cf_config_parse(&c), 0);
	assert_int_equal(c.report_every, 0);
	unsetenv("CUFOLD_RUN_ID");
	unsetenv("CUFOLD_REPORT_EVERY");

	setenv("CUFOLD_MODE", "trace", 1);
	setenv("CUFOLD_LOG", "err", 1);
	assert_int_equal(cf_config_parse(&c), 0);
	assert_int_equal(c.mode, CF_MODE_TRACE);
	assert_int_equal(c.log_level, CF_LOG_ERR);
}

/* One bad value: the default, one message naming variable, value and what is accepted. */
static void check_bad(const char *var, const char *value, const char *accepted, enum cf_config_var id)
{
	struct cf_config c, d;

	clear_env();
	cf_config__reset_reports();
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	setenv(var, value, 1);
	if (cf_config_parse(&c) != 1)
		fail_msg("%s=%s was accepted", var, value);
	assert_int_equal(c.bad, 1u << id);
	assert_int_equal(reported(), 1);
	assert_non_null(strstr(messages, "] W config.c:"));
	assert_non_null(strstr(messages, var));
	assert_non_null(strstr(messages, accepted));
	if (strlen(value) < 100 && strspn(value, PRINTABLE) == strlen(value))
		assert_non_null(strstr(messages, value));
	else
		assert_null(strpbrk(messages, "\t\x01\x7f")); /* shown sanitized, on one line */
	/* the default was used: the rest equals a parse without the variable */
	unsetenv(var);
	cf_config_parse(&d);
	c.bad = 0;
	assert_memory_equal(&c, &d, sizeof(c));
	/* reported once per process */
	setenv(var, value, 1);
	cf_config_parse(&c);
	assert_int_equal(reported(), 1);
}

static void test_bad_values(void **state)
{
	char long_path[CF_PATH_MAX + 10];

	(void)state;
	check_bad("CUFOLD_MODE", "fast", "off, trace, replay", CF_VAR_MODE);
	check_bad("CUFOLD_MODE", "OFF", "off, trace, replay", CF_VAR_MODE);
	check_bad("CUFOLD_OPT", "3", "0, 1, 2", CF_VAR_OPT);
	check_bad("CUFOLD_OPT", "-1", "0, 1, 2", CF_VAR_OPT);
	check_bad("CUFOLD_RULES", "dead write", "+rule or -rule", CF_VAR_RULES);
	check_bad("CUFOLD_RULES", "-a,", "+rule or -rule", CF_VAR_RULES);
	check_bad("CUFOLD_RULES", "+", "+rule or -rule", CF_VAR_RULES);
	check_bad("CUFOLD_WARMUP", "0", "an integer from 1 to 1000000", CF_VAR_WARMUP);
	check_bad("CUFOLD_WARMUP", "2x", "an integer from 1 to 1000000", CF_VAR_WARMUP);
	check_bad("CUFOLD_SEGMENT", "99999999999999999999", "an integer from 1 to 1000000", CF_VAR_SEGMENT);
	check_bad("CUFOLD_MIN_OPS", "eight", "an integer from 0 to 1000000", CF_VAR_MIN_OPS);
	check_bad("CUFOLD_MAX_TEMPLATES", " 5", "an integer from 1 to 1000000", CF_VAR_MAX_TEMPLATES);
	check_bad("CUFOLD_RENAME_MAX_BYTES", "4000000001", "an integer from 0 to 4000000000",
		  CF_VAR_RENAME_MAX_BYTES);
	check_bad("CUFOLD_CARDS", "::", "path[:path]", CF_VAR_CARDS);
	check_bad("CUFOLD_CARDS", "a b:c", "path[:path]", CF_VAR_CARDS);
	check_bad("CUFOLD_RUN_ID", "a/b", "letters, digits", CF_VAR_RUN_ID);
	check_bad("CUFOLD_RUN_ID", "x\x1b[31m", "letters, digits", CF_VAR_RUN_ID);
	check_bad("CUFOLD_RUN_ID", "12345678901234567890123456789012345678901234567890123456789012345",
		  "letters, digits", CF_VAR_RUN_ID);
	check_bad("CUFOLD_REPORT_EVERY", "5s", "seconds from 0", CF_VAR_REPORT_EVERY);
	check_bad("CUFOLD_REPORT_EVERY", "86401", "seconds from 0", CF_VAR_REPORT_EVERY);
	check_bad("CUFOLD_BARRIER_KERNELS", "nccl*,,x", "pattern[,pattern]", CF_VAR_BARRIER_KERNELS);
	check_bad("CUFOLD_CALLSITES", "yes", "0, 1", CF_VAR_CALLSITES);
	check_bad("CUFOLD_GATE", "off", "0, 1", CF_VAR_GATE);
	check_bad("CUFOLD_CHURN", "no", "0, 1", CF_VAR_CHURN);
	check_bad("CUFOLD_STRICT", "yes", "0, 1", CF_VAR_STRICT);
	check_bad("CUFOLD_LOG", "verbose", "err, warn, info, debug", CF_VAR_LOG);
	check_bad("CUFOLD_LOG_FILE", "a\tb", "a file path", CF_VAR_LOG_FILE);
	check_bad("CUFOLD_REPORT", "r\x01.json", "a file path", CF_VAR_REPORT);
	check_bad("CUFOLD_TRACE", "t\n", "a file path", CF_VAR_TRACE);
	check_bad("CUFOLD_DOT", "\x7f", "a directory path", CF_VAR_DOT);
	memset(long_path, 'p', sizeof(long_path) - 1);
	long_path[sizeof(long_path) - 1] = 0;
	check_bad("CUFOLD_LIBCUDA", long_path, "a library name or path", CF_VAR_LIBCUDA);
	/* the message shows a bounded, printable version of a long value */
	assert_true(strlen(messages) < 600);
}

static void test_several_bad_values_each_once(void **state)
{
	struct cf_config c;

	(void)state;
	setenv("CUFOLD_MODE", "x", 1);
	setenv("CUFOLD_OPT", "x", 1);
	setenv("CUFOLD_LOG", "x", 1);
	assert_int_equal(cf_config_parse(&c), 3);
	assert_int_equal(reported(), 3);
	assert_int_equal(c.mode, CF_MODE_REPLAY);
	assert_int_equal(c.opt, 1);
	assert_int_equal(c.log_level, CF_LOG_WARN);
	assert_int_equal(cf_config_parse(&c), 3);
	assert_int_equal(reported(), 3);
}

static void test_empty_is_unset(void **state)
{
	struct cf_config c;

	(void)state;
	setenv("CUFOLD_MODE", "", 1);
	setenv("CUFOLD_LIBCUDA", "", 1);
	assert_int_equal(cf_config_parse(&c), 0);
	assert_int_equal(c.mode, CF_MODE_REPLAY);
	assert_string_equal(c.libcuda, "libcuda.so.1");
	assert_int_equal(reported(), 0);
}

static void test_unknown_variable(void **state)
{
	struct cf_config c;

	(void)state;
	setenv("CUFOLD_MDOE", "off", 1);
	assert_int_equal(cf_config_parse(&c), 0);
	assert_int_equal(c.mode, CF_MODE_REPLAY);
	assert_int_equal(reported(), 1);
	assert_non_null(strstr(messages, "CUFOLD_MDOE is not a cufold variable"));
	cf_config_parse(&c);
	assert_int_equal(reported(), 1);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(cf_mode_name(CF_MODE_OFF), "off");
	assert_string_equal(cf_mode_name(CF_MODE_TRACE), "trace");
	assert_string_equal(cf_mode_name(CF_MODE_REPLAY), "replay");
	assert_string_equal(cf_config_var_name(CF_VAR_LIBCUDA), "CUFOLD_LIBCUDA");
	assert_string_equal(cf_config_var_name(CF_VAR_MODE), "CUFOLD_MODE");
	assert_string_equal(cf_config_var_name(CF_VAR_RUN_ID), "CUFOLD_RUN_ID");
	assert_string_equal(cf_config_var_name(CF_VAR_REPORT_EVERY), "CUFOLD_REPORT_EVERY");
	assert_string_equal(cf_config_var_name(CF_VAR_DERIVE), "CUFOLD_DERIVE");
	assert_string_equal(cf_config_var_name(CF_VAR_RENAME_MAX_BYTES), "CUFOLD_RENAME_MAX_BYTES");
	assert_string_equal(cf_config_var_name(CF_VAR_CHURN), "CUFOLD_CHURN");
	assert_int_equal(CF_VAR_COUNT, 23);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_valid_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_several_bad_values_each_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_is_unset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_variable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_names, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
