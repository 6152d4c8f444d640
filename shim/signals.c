/* signals.c - the outputs of a stopped job (see signals.h). shim layer.
 *
 * The handler is async-signal-safe: it writes one byte (the signal's number) to a pipe and waits
 * (poll, at most 10 s) for the watcher to end the process; the thread it interrupted does not
 * run on, as it would not under the default disposition (a program that raises a signal on
 * itself does not see raise return). A thread interrupted inside cufold (shim__thread.inside:
 * it may hold the engine's lock) is not held: it finishes its call, and the watcher, which waits for
 * the lock at most 2 s, ends the process after. When there is no watcher to read it (a forked child before
 * it re-armed, a failed start) it restores the default disposition and raises the signal again
 * at once. The watcher
 * thread, with every signal blocked, waits on the pipe (with CUFOLD_REPORT_EVERY, for at most
 * that period: then it only flags the report as due, and the next intercepted call rewrites it
 * under the engine's lock). On a byte it asks the engine for the final outputs, restores the
 * default disposition, unblocks the signal on itself and raises it: the process ends by that
 * signal, its exit status unchanged.
 *
 * Fork: the child has no watcher thread and must not write into the parent's pipe; its copy of
 * the pipe is closed by the atfork handler, so the handler falls back to the default effect until
 * the child's first intercepted call starts a watcher of its own (SHIM_SIGNALS_REARM). */
#include "shim/signals.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/errors.h"
#include "common/log.h"
#include "shim/engine.h"
#include "shim/shim.h"

#define HANDLER_WAIT_MS 10000 /* the longest a stopped thread waits for the watcher */

static const int stop_signals[] = { SIGTERM, SIGINT, SIGHUP };

unsigned shim__signals_pending;
static int pipe_rd = -1, pipe_wr = -1; /* handler -> watcher; -1 when there is no watcher */
static pid_t watcher_pid;             /* the process whose watcher reads the pipe */
static unsigned installed;            /* bit per signal number whose handler is ours */
static unsigned every;                /* CUFOLD_REPORT_EVERY, seconds (0: off) */
static int armed;                     /* shim_signals_arm ran in this process (atomic) */

static void to_default(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static void on_signal(int sig)
{
	int saved = errno, fd = __atomic_load_n(&pipe_wr, __ATOMIC_RELAXED);
	unsigned char b = (unsigned char)sig;

	/* This thread stops here, as the signal's default effect would stop it: the watcher writes
	 * the outputs and raises the signal again, which ends the process (a thread running
	 * cufold's own code goes on to the end of its call instead). Without a watcher (a forked
	 * child before its first call) the default effect comes at once. */
	if (fd >= 0 && getpid() == __atomic_load_n(&watcher_pid, __ATOMIC_RELAXED) && write(fd, &b, 1) == 1) {
		if (shim__thread.inside) {
			/* inside cufold, perhaps holding the engine's lock the watcher needs: let it
			 * finish its call; the watcher ends the process once the lock is free */
			errno = saved;
			return;
		}
		poll(NULL, 0, HANDLER_WAIT_MS);
		/* the watcher did not end the process in time (stuck behind something this
		 * thread holds, malloc's lock say): the default effect, without the outputs */
	}
	to_default(sig);
	raise(sig); /* blocked in this handler: delivered when it returns */
	errno = saved;
}

/* The program is being stopped by sig: outputs, then the signal's default effect. */
static void stop(int sig)
{
	sigset_t set;

	cf_log_info("stopped by signal %d (%s): writing the outputs", sig, strsignal(sig));
	shim_engine_write_outputs(true);
	to_default(sig);
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
}

static void *watch(void *arg)
{
	int rd = (int)(long)arg;

	for (;;) {
		struct pollfd p = { .fd = rd, .events = POLLIN };
		unsigned char b;
		int r = poll(&p, 1, every ? (int)(every * 1000) : -1);

		if (r == 0) {
			__atomic_fetch_or(&shim__signals_pending, SHIM_SIGNALS_REPORT, __ATOMIC_RELAXED);
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || read(rd, &b, 1) != 1)
			break;
		stop(b);
	}
	return NULL;
}

void shim_signals_atfork_child(void)
{
	int rd = __atomic_exchange_n(&pipe_rd, -1, __ATOMIC_RELAXED);
	int wr = __atomic_exchange_n(&pipe_wr, -1, __ATOMIC_RELAXED);

	if (rd >= 0)
		close(rd);
	if (wr >= 0)
		close(wr);
	if (__atomic_load_n(&armed, __ATOMIC_RELAXED))
		__atomic_store_n(&shim__signals_pending, SHIM_SIGNALS_REARM, __ATOMIC_RELAXED);
}

/* A pipe and a thread reading it, in this process. */
static int start_watcher(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;
	int fds[2], rc;

	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
		return -CF_EIO;
	/* the reading end blocks in poll, not in read; the writing end must never block a handler */
	fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) & ~O_NONBLOCK);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread starts with every signal blocked */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	rc = pthread_create(&th, &attr, watch, (void *)(long)fds[0]);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		close(fds[0]);
		close(fds[1]);
		return -CF_EIO;
	}
	pthread_setname_np(th, "cufold-signals");
	__atomic_store_n(&pipe_rd, fds[0], __ATOMIC_RELAXED);
	__atomic_store_n(&watcher_pid, getpid(), __ATOMIC_RELAXED);
	__atomic_store_n(&pipe_wr, fds[1], __ATOMIC_RELEASE);
	return 0;
}

void shim_signals_arm(void)
{
	const struct cf_config *cfg = cf_config_get();
	struct sigaction sa, cur;

	if (cfg->secure || !(cfg->report[0] || cfg->trace[0] || cfg->dot[0]))
		return; /* nothing to write */
	if (__atomic_exchange_n(&armed, 1, __ATOMIC_ACQ_REL))
		return;
	every = cfg->report[0] ? cfg->report_every : 0;
	if (start_watcher() != 0) {
		cf_log_warn("cannot start a thread to write the outputs when a signal stops the program: a "
			    "program stopped by SIGTERM, SIGINT or SIGHUP leaves none");
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++) {
		int sig = stop_signals[i];

		/* only where nothing was chosen: the program's handler, or its SIG_IGN, stays */
		if (sigaction(sig, NULL, &cur) != 0 || (cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL)
			continue;
		if (sigaction(sig, &sa, NULL) == 0)
			__atomic_fetch_or(&installed, 1u << sig, __ATOMIC_RELAXED);
	}
}

void shim_signals_poll(void)
{
	unsigned p = __atomic_load_n(&shim__signals_pending, __ATOMIC_RELAXED);

	/* a forked child's first call: its own watcher (the handlers were inherited); one thread
	 * takes the bit */
	if ((p & SHIM_SIGNALS_REARM) &&
	    (__atomic_fetch_and(&shim__signals_pending, ~SHIM_SIGNALS_REARM, __ATOMIC_RELAXED) & SHIM_SIGNALS_REARM) &&
	    (__atomic_load_n(&installed, __ATOMIC_RELAXED) || every))
		start_watcher();
	if ((p & SHIM_SIGNALS_REPORT) && shim_engine_write_outputs(false) != -CF_EBUSY)
		__atomic_fetch_and(&shim__signals_pending, ~SHIM_SIGNALS_REPORT, __ATOMIC_RELAXED);
}
