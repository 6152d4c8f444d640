/* log.c - the logger (see log.h): one write(2) per line from a stack buffer, never allocating,
 * never recursing. common layer. */
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/errors.h"
#include "common/file.h"

/* Lines longer than this are cut and end in "..." (a line is one write, so it must fit). */
#define CF_LOG_LINE_MAX 1024

int cf__log_threshold = CF_LOG_WARN;
static int log_fd = -1;        /* where lines go; -1 means stderr */
static int log_owned_fd = -1;  /* descriptor the logger opened itself (closed on reopen) */
static int stderr_fd = 2;      /* where configuration errors go */
static __thread int log_busy __attribute__((tls_model("initial-exec"))); /* recursion guard */

static const char level_letter[] = { 'E', 'W', 'I', 'D' };
static const char *const level_names[] = { "err", "warn", "info", "debug" };

static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		buf += n;
		len -= (size_t)n;
	}
}

static void vwrite_line(int fd, enum cf_log_level level, const char *file, int line, const char *fmt,
			va_list ap)
{
	char buf[CF_LOG_LINE_MAX];
	const char *base = strrchr(file, '/');
	int saved_errno = errno;
	size_t len, cap = sizeof(buf) - 1; /* keep one byte for the newline */
	int n;

	if (log_busy)
		return;
	log_busy = 1;
	if ((unsigned)level > CF_LOG_DEBUG)
		level = CF_LOG_DEBUG;
	n = snprintf(buf, cap, "cufold[%d:%d] %c %s:%d: ", (int)getpid(), (int)gettid(), level_letter[level],
		     base ? base + 1 : file, line);
	len = n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
	n = vsnprintf(buf + len, cap - len, fmt, ap);
	if (n >= 0 && (size_t)n >= cap - len) {
		/* cut: the message did not fit */
		len = cap;
		memcpy(buf + len - 3, "...", 3);
	} else if (n > 0) {
		len += (size_t)n;
	}
	while (len > 0 && buf[len - 1] == '\n')
		len--;
	buf[len++] = '\n';
	write_all(fd, buf, len);
	log_busy = 0;
	errno = saved_errno;
}

void cf_log_write(enum cf_log_level level, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwrite_line(cf_log_get_fd(), level, file, line, fmt, ap);
	va_end(ap);
}

void cf_log_write_fd(int fd, enum cf_log_level level, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwrite_line(fd, level, file, line, fmt, ap);
	va_end(ap);
}

void cf_log_set_level(enum cf_log_level level)
{
	if ((unsigned)level > CF_LOG_DEBUG)
		level = CF_LOG_DEBUG;
	__atomic_store_n(&cf__log_threshold, (int)level, __ATOMIC_RELAXED);
}

enum cf_log_level cf_log_get_level(void)
{
	return (enum cf_log_level)__atomic_load_n(&cf__log_threshold, __ATOMIC_RELAXED);
}

void cf_log_set_fd(int fd)
{
	__atomic_store_n(&log_fd, fd, __ATOMIC_RELAXED);
}

int cf_log_get_fd(void)
{
	int fd = __atomic_load_n(&log_fd, __ATOMIC_RELAXED);

	return fd < 0 ? 2 : fd;
}

int cf_log_open_file(const char *path, char *why, size_t cap)
{
	char expanded[4096];
	int fd, old;

	if (!path || !*path) {
		if (why && cap)
			snprintf(why, cap, "an empty path");
		return -CF_EINVAL;
	}
	/* "%p": one file per process of a multi-process job */
	if (!cf_path_expand(path, expanded, sizeof(expanded))) {
		if (why && cap)
			snprintf(why, cap, "too long once %%p is expanded");
		return -CF_EINVAL;
	}
	/* an output: never through a planted link, never into a FIFO or a device */
	fd = cf_file_open_regular(expanded, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0644, why, cap);
	if (fd < 0)
		return fd;
	__atomic_store_n(&log_fd, fd, __ATOMIC_RELAXED);
	old = __atomic_exchange_n(&log_owned_fd, fd, __ATOMIC_RELAXED);
	if (old >= 0)
		close(old);
	return 0;
}

void cf_log_set_stderr_fd(int fd)
{
	__atomic_store_n(&stderr_fd, fd < 0 ? 2 : fd, __ATOMIC_RELAXED);
}

int cf_log_get_stderr_fd(void)
{
	return __atomic_load_n(&stderr_fd, __ATOMIC_RELAXED);
}

int cf_log_level_parse(const char *s, enum cf_log_level *out)
{
	for (int i = 0; i <= CF_LOG_DEBUG; i++) {
		if (s && strcmp(s, level_names[i]) == 0) {
			*out = (enum cf_log_level)i;
			return 0;
		}
	}
	return -CF_EINVAL;
}

const char *cf_log_level_name(enum cf_log_level level)
{
	return (unsigned)level <= CF_LOG_DEBUG ? level_names[level] : "?";
}

char *cf_log_printable(char *out, size_t cap, const char *text, size_t max)
{
	size_t n = 0, i = 0;

	if (!cap)
		return out;
	for (; text && text[i] && i < max; i++) {
		unsigned char c = (unsigned char)text[i];
		bool plain = c >= 0x20 && c < 0x7f;

		if (n + (plain ? 1 : 4) + 4 > cap)
			break;
		if (plain)
			out[n++] = (char)c;
		else
			n += (size_t)snprintf(out + n, cap - n, "\\x%02x", c);
	}
	if (text && text[i] && n + 4 <= cap) {
		memcpy(out + n, "...", 3);
		n += 3;
	}
	out[n] = 0;
	return out;
}
