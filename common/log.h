/* log.h - cufold's only way to print: leveled, one write(2) per line from a stack buffer,
 * `cufold[pid:tid] W file.c:88: message`. common layer (a leaf: depends only on common/file.h).
 *
 * The level is checked before the arguments are evaluated, so a disabled cf_log_debug costs
 * one load and one branch. The logger never allocates and never recurses (a nested call on the
 * same thread is dropped). _once variants print at most once per call site: use them in hot
 * paths. Levels come from CUFOLD_LOG (err|warn|info|debug, default warn), the destination from
 * CUFOLD_LOG_FILE (default stderr); common/config.c applies both. */
#ifndef CF_LOG_H
#define CF_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum cf_log_level {
	CF_LOG_ERR = 0,   /* cufold cannot do what it should; the program still runs */
	CF_LOG_WARN = 1,  /* something the user should know (default threshold) */
	CF_LOG_INFO = 2,  /* one-off facts: configuration, summaries at exit */
	CF_LOG_DEBUG = 3, /* everything else */
};

/* The current threshold; hidden global read by the macros below. */
extern int cf__log_threshold __attribute__((visibility("hidden")));

static inline bool cf_log_enabled(enum cf_log_level level)
{
	return (int)level <= __atomic_load_n(&cf__log_threshold, __ATOMIC_RELAXED);
}

/* Format and write one line at level (no check of the threshold). file is __FILE__; only its
 * last component is printed. errno is preserved. */
void cf_log_write(enum cf_log_level level, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The same line on a given descriptor regardless of threshold (configuration errors, which
 * must reach stderr even when the log goes to a file or is set to err). */
void cf_log_write_fd(int fd, enum cf_log_level level, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

void cf_log_set_level(enum cf_log_level level);
enum cf_log_level cf_log_get_level(void);
/* Send the log to fd (not closed by the logger); -1 restores stderr. */
void cf_log_set_fd(int fd);
int cf_log_get_fd(void);
/* Open path ("%p" becomes the process id, "%%" a percent sign) for appending (created 0644 when
 * missing) and log there. Only a regular file is
 * taken and a final symbolic link is not followed (common/file.h): a FIFO, a device, a
 * directory or a link is refused. On failure the log stays where it was and a negative CF_E*
 * code is returned, with why (cap bytes; may be NULL) saying why. The previous file opened by
 * the logger is closed. */
int cf_log_open_file(const char *path, char *why, size_t cap);
/* The descriptor configuration errors go to: stderr (2) unless a test redirects it. */
void cf_log_set_stderr_fd(int fd);
int cf_log_get_stderr_fd(void);

/* A copy of text fit to print in a message: at most max of its bytes, each byte that is not
 * printable ASCII (controls, DEL, anything >= 0x80: terminal escapes, binary data) as \xNN,
 * and "..." when cut short; always NUL-terminated within cap bytes. Returns out. */
char *cf_log_printable(char *out, size_t cap, const char *text, size_t max);

/* Parse "err", "warn", "info", "debug"; returns 0 and sets *out, or -CF_EINVAL. */
int cf_log_level_parse(const char *s, enum cf_log_level *out);
const char *cf_log_level_name(enum cf_log_level level);

#define cf_log_at_(level, ...) \
	do { \
		if (cf_log_enabled(level)) \
			cf_log_write((level), __FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

#define cf_log_at_once_(level, ...) \
	do { \
		static int cf_log_once_; \
		if (cf_log_enabled(level) && !__atomic_exchange_n(&cf_log_once_, 1, __ATOMIC_RELAXED)) \
			cf_log_write((level), __FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

#define cf_log_err(...) cf_log_at_(CF_LOG_ERR, __VA_ARGS__)
#define cf_log_warn(...) cf_log_at_(CF_LOG_WARN, __VA_ARGS__)
#define cf_log_info(...) cf_log_at_(CF_LOG_INFO, __VA_ARGS__)
#define cf_log_debug(...) cf_log_at_(CF_LOG_DEBUG, __VA_ARGS__)
#define cf_log_err_once(...) cf_log_at_once_(CF_LOG_ERR, __VA_ARGS__)
#define cf_log_warn_once(...) cf_log_at_once_(CF_LOG_WARN, __VA_ARGS__)
#define cf_log_info_once(...) cf_log_at_once_(CF_LOG_INFO, __VA_ARGS__)
#define cf_log_debug_once(...) cf_log_at_once_(CF_LOG_DEBUG, __VA_ARGS__)

#endif
