/* test_common_log.c - the logger: line format, levels checked before arguments are evaluated, _once,
 * cutting of long lines, errno kept, the log file (a regular file only, never through a
 * symbolic link). tests layer (cmocka, libcufold.a). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/errors.h"
#include "common/log.h"

static char path[64];
static int fd = -1;

static int setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "/tmp/cufold-test-log-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	cf_log_set_fd(fd);
	cf_log_set_level(CF_LOG_WARN);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	cf_log_set_fd(-1);
	close(fd);
	unlink(path);
	return 0;
}

/* Everything written so far, NUL-terminated, in buf. */
static size_t slurp(char *buf, size_t cap)
{
	ssize_t n = pread(fd, buf, cap - 1, 0);

	assert_true(n >= 0);
	buf[n] = 0;
	return (size_t)n;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void test_format(void **state)
{
	char buf[4096], want[256];
	int line;

	(void)state;
	line = __LINE__ + 1;
	cf_log_warn("hello %d %s", 42, "world");
	slurp(buf, sizeof(buf));
	snprintf(want, sizeof(want), "cufold[%d:%d] W test_common_log.c:%d: hello 42 world\n", (int)getpid(), (int)gettid(),
		 line);
	assert_string_equal(buf, want);
}

static void test_levels(void **state)
{
	char buf[4096];

	(void)state;
	cf_log_set_level(CF_LOG_WARN);
	cf_log_err("e");
	cf_log_warn("w");
	cf_log_info("i");
	cf_log_debug("d");
	slurp(buf, sizeof(buf));
	assert_int_equal(count_lines(buf), 2);
	assert_non_null(strstr(buf, "] E test_common_log.c:"));
	assert_non_null(strstr(buf, "] W test_common_log.c:"));
	assert_null(strstr(buf, "] I "));
	cf_log_set_level(CF_LOG_DEBUG);
	cf_log_debug("d2");
	slurp(buf, sizeof(buf));
	assert_non_null(strstr(buf, "] D test_common_log.c:"));
	assert_int_equal(count_lines(buf), 3);
}

static int evaluated;

static int side_effect(void)
{
	return ++evaluated;
}

static void test_arguments_not_evaluated_when_disabled(void **state)
{
	(void)state;
	evaluated = 0;
	cf_log_set_level(CF_LOG_WARN);
	cf_log_debug("%d", side_effect());
	cf_log_info("%d", side_effect());
	assert_int_equal(evaluated, 0);
	cf_log_warn("%d", side_effect());
	assert_int_equal(evaluated, 1);
}

static void test_once(void **state)
{
	char buf[4096];

	(void)state;
	for (int i = 0; i < 5; i++)
		cf_log_warn_once("once %d", i);
	slurp(buf, sizeof(buf));
	assert_int_equal(count_lines(buf), 1);
	assert_non_null(strstr(buf, "once 0\n"));
}

static void test_long_line_is_cut(void **state)
{
	char buf[8192], big[3000];

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	cf_log_err("%s", big);
	assert_int_equal(slurp(buf, sizeof(buf)), 1024);
	assert_int_equal(count_lines(buf), 1);
	assert_memory_equal(buf + 1024 - 4, "...\n", 4);
}

static void test_trailing_newline_and_errno(void **state)
{
	char buf[4096];

	(void)state;
	errno = EAGAIN;
	cf_log_warn("ends with a newline\n");
	assert_int_equal(errno, EAGAIN);
	slurp(buf, sizeof(buf));
	assert_int_equal(count_lines(buf), 1);
	assert_non_null(strstr(buf, "newline\n"));
}

static void test_level_names(void **state)
{
	enum cf_log_level l;

	(void)state;
	assert_int_equal(cf_log_level_parse("err", &l), 0);
	assert_int_equal(l, CF_LOG_ERR);
	assert_int_equal(cf_log_level_parse("debug", &l), 0);
	assert_int_equal(l, CF_LOG_DEBUG);
	assert_true(cf_log_level_parse("verbose", &l) < 0);
	assert_true(cf_log_level_parse("", &l) < 0);
	assert_string_equal(cf_log_level_name(CF_LOG_INFO), "info");
}

static void test_log_file(void **state)
{
	char file[64], buf[512];
	FILE *f;
	size_t n;

	(void)state;
	snprintf(file, sizeof(file), "/tmp/cufold-test-logfile-%d", (int)getpid());
	unlink(file);
	assert_int_equal(cf_log_open_file(file, NULL, 0), 0);
	cf_log_err("to the file");
	assert_true(cf_log_open_file("/nonexistent-dir/x.log", NULL, 0) < 0);
	cf_log_err("still the file");
	cf_log_set_fd(fd);
	f = fopen(file, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	unlink(file);
	assert_int_equal(count_lines(buf), 2);
	assert_non_null(strstr(buf, "to the file\n"));
	assert_non_null(strstr(buf, "still the file\n"));
}

/* The log file is an output: only a regular file, created when missing, takes it. A FIFO (an
 * open for writing would wait for a reader for ever: the alarm turns that into a failure), a
 * device, a directory and a symbolic link (even to a regular file) are refused with the reason,
 * and the log stays where it was. */
static void test_log_file_refused(void **state)
{
	char dir[] = "/tmp/cufold-test-logfile-XXXXXX", fifo[96], target[96], link[96], made[96], why[128];
	struct stat st;
	char buf[512];

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(target, sizeof(target), "%s/target.log", dir);
	snprintf(link, sizeof(link), "%s/link.log", dir);
	snprintf(made, sizeof(made), "%s/made.log", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(symlink(target, link), 0);
	alarm(20);
	assert_int_equal(cf_log_open_file(fifo, why, sizeof(why)), -CF_EINVAL);
	alarm(0);
	assert_string_equal(why, "it is a FIFO, not a regular file");
	assert_int_equal(cf_log_open_file("/dev/null", why, sizeof(why)), -CF_EINVAL);
	assert_string_equal(why, "it is a character device, not a regular file");
	assert_int_equal(cf_log_open_file(dir, why, sizeof(why)), -CF_EINVAL);
	assert_string_equal(why, "it is a directory, not a regular file");
	/* a dangling link is not created through, a link to a regular file not followed */
	assert_int_equal(cf_log_open_file(link, why, sizeof(why)), -CF_EINVAL);
	assert_non_null(strstr(why, "symbolic link"));
	assert_int_equal(lstat(target, &st), -1);
	close(open(target, O_WRONLY | O_CREAT, 0644));
	assert_int_equal(cf_log_open_file(link, why, sizeof(why)), -CF_EINVAL);
	assert_non_null(strstr(why, "symbolic link"));
	assert_true(cf_log_open_file("/nonexistent-dir/x.log", why, sizeof(why)) < 0);
	assert_string_equal(why, "No such file or directory");
	/* the log stayed on the test's descriptor */
	cf_log_err("still here");
	slurp(buf, sizeof(buf));
	assert_non_null(strstr(buf, "still here\n"));
	/* a missing regular file is created */
	assert_int_equal(cf_log_open_file(made, why, sizeof(why)), 0);
	cf_log_err("to the new file");
	cf_log_set_fd(fd);
	assert_int_equal(stat(made, &st), 0);
	assert_true(S_ISREG(st.st_mode) && st.st_size > 0);
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 0);
	unlink(made);
	unlink(target);
	unlink(link);
	unlink(fifo);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_format, setup, teardown),
		cmocka_unit_test_setup_teardown(test_levels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_arguments_not_evaluated_when_disabled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_line_is_cut, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trailing_newline_and_errno, setup, teardown),
		cmocka_unit_test_setup_teardown(test_level_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_log_file_refused, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
