/* signals.h - the outputs of a stopped job: the report (and trace and pictures) written when
 * SIGTERM, SIGINT or SIGHUP stops the program, and rewritten periodically with
 * CUFOLD_REPORT_EVERY. shim layer.
 *
 * Nothing is written from inside a signal handler: the handler only writes the signal's number
 * to a pipe; a thread of cufold's, waiting on it, has the engine write the outputs (taking its
 * lock with a bounded wait), then restores the signal's default disposition and raises it
 * again, so the process still ends by that signal with the status it would have had. */
#ifndef SHIM_SIGNALS_H
#define SHIM_SIGNALS_H

#include <stdbool.h>

#include "common/compiler.h"

/* Work for the next intercepted call (shim_note_call): a periodic report is due, or a forked
 * child must start its own watcher thread. Read with one relaxed load per call. */
#define SHIM_SIGNALS_REPORT 1u /* CUFOLD_REPORT_EVERY's period passed */
#define SHIM_SIGNALS_REARM 2u  /* a forked child: the parent's thread does not exist here */
extern unsigned shim__signals_pending __attribute__((visibility("hidden")));

/* At the engine's start (after the driver loaded, mode not off): when an output is configured,
 * start the watcher thread and install the handler for each of SIGTERM, SIGINT and SIGHUP whose
 * disposition is still SIG_DFL (a program's own handler wins: its normal exit writes the
 * outputs; a handler the program installs later replaces ours). Once per process (and once in
 * each forked child, lazily). */
void shim_signals_arm(void);

/* In a forked child (from shim.c's one fork handler): the parent's pipe is closed and the
 * watcher is started again by the child's next intercepted call. */
void shim_signals_atfork_child(void);

/* From an intercepted call, when shim__signals_pending is set. */
void shim_signals_poll(void);

static inline void shim_signals_check(void)
{
	if (cf_unlikely(__atomic_load_n(&shim__signals_pending, __ATOMIC_RELAXED)))
		shim_signals_poll();
}

#endif
