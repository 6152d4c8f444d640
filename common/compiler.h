/* compiler.h - small compiler helpers every layer may use: branch hints, assertions, export
 * markers. common layer; header only. */
#ifndef CF_COMPILER_H
#define CF_COMPILER_H

#include <stdbool.h>
#include <stdlib.h>

#define cf_likely(x) __builtin_expect(!!(x), 1)
#define cf_unlikely(x) __builtin_expect(!!(x), 0)

/* Visible outside libcufold.so (everything else is hidden by -fvisibility=hidden); the version
 * script decides what finally leaves. */
#define CF_EXPORT __attribute__((visibility("default")))
#define CF_HIDDEN __attribute__((visibility("hidden")))

#define CF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

void cf__assert_fail(const char *expr, const char *file, int line) __attribute__((noreturn));
bool cf__never(const char *expr, const char *file, int line);

/* cf_assert: a proven invariant; checked only in debug builds (MODE=debug defines CF_DEBUG).
 * Release builds still compile the condition, unevaluated (sizeof), so it cannot name what no
 * longer exists or stop type-checking between the debug builds that run it. */
#ifdef CF_DEBUG
#define cf_assert(cond) ((cond) ? (void)0 : cf__assert_fail(#cond, __FILE__, __LINE__))
#else
#define cf_assert(cond) ((void)sizeof(!(cond)))
#endif

/* CF_NEVER(cond): a believed invariant. Evaluates to cond; when cond is true it logs an error
 * naming the condition (debug builds abort) and the caller must recover:
 *	if (CF_NEVER(n > cap)) { n = cap; } */
#define CF_NEVER(cond) (cf_unlikely(cond) ? cf__never(#cond, __FILE__, __LINE__) : false)

#endif
