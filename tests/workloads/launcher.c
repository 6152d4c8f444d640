/* launcher.c - a multi-process training job in the way torchrun starts one (the `launcher`
 * workload): fork and exec one rank program per rank, each inheriting the environment (so
 * LD_PRELOAD and a CUFOLD_REPORT with %p reach every rank, one report per process), wait for
 * all, and print every rank's result line and one combined line. tests layer; makes no driver
 * call and knows nothing of cufold.
 *
 * The rank program is `dataparallel` next to this binary, run as
 *   dataparallel ARGS... --rank R --world N
 * with RANK, LOCAL_RANK and WORLD_SIZE also in its environment. On the software device the ranks
 * are independent processes (no communication); each step's barrier kernel (NCCL's all-reduce,
 * see dataparallel.c) is what matters to cufold. Output, in rank order:
 *   rank R: <the rank's result line>
 *   launcher ranks=N failed=F checksum=<FNV of the rank lines>
 * and with --pids, on stderr, one "launcher: rank R pid P" line per rank (tests find the %p
 * reports by it). Exit status: 0, or 1 when any rank fails (non-zero exit, a signal, or no
 * result line).
 * usage: launcher [--ranks N (default 4)] [--pids] [rank program arguments...] */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

#define MAX_RANKS 16
#define LINE_MAX_LEN 512

struct rank {
	pid_t pid;                   /* the rank's process */
	int out;                     /* read end of its stdout pipe */
	char line[LINE_MAX_LEN];     /* its result line (the first line of its output) */
};

static bool show_pids;           /* --pids: name each rank's process id on stderr */

/* Path of the rank program: `dataparallel` in the directory of this executable. */
static int rank_program(char *path, size_t size)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0)
		return -1;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return snprintf(path, size, "%s/dataparallel", self) < (int)size ? 0 : -1;
}

/* Start rank r of world: stdout to a pipe, everything else inherited. */
static int start_rank(struct rank *rk, int r, int world, const char *prog, int nargs, char **args)
{
	int fd[2];
	pid_t pid;

	if (pipe(fd) != 0)
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (pid == 0) {
		char rs[16], ws[16];
		char **argv = calloc((size_t)nargs + 6, sizeof(*argv));
		int n = 0;

		if (!argv)
			_exit(127);
		snprintf(rs, sizeof(rs), "%d", r);
		snprintf(ws, sizeof(ws), "%d", world);
		setenv("RANK", rs, 1);
		setenv("LOCAL_RANK", rs, 1);
		setenv("WORLD_SIZE", ws, 1);
		dup2(fd[1], STDOUT_FILENO);
		close(fd[0]);
		close(fd[1]);
		argv[n++] = (char *)prog;
		for (int i = 0; i < nargs; i++)
			argv[n++] = args[i];
		argv[n++] = "--rank";
		argv[n++] = rs;
		argv[n++] = "--world";
		argv[n++] = ws;
		argv[n] = NULL;
		execv(prog, argv);
		fprintf(stderr, "launcher: cannot run %s: %s\n", prog, strerror(errno));
		_exit(127);
	}
	close(fd[1]);
	rk->pid = pid;
	rk->out = fd[0];
	if (show_pids)
		fprintf(stderr, "launcher: rank %d pid %d\n", r, (int)pid);
	return 0;
}

/* Read the rank's whole output; keep its first line. */
static void read_rank(struct rank *rk)
{
	char buf[4096];
	size_t len = 0;
	ssize_t n;
	bool done = false;

	rk->line[0] = '\0';
	while ((n = read(rk->out, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (ssize_t i = 0; i < n && !done; i++) {
			if (buf[i] == '\n' || len + 1 == sizeof(rk->line))
				done = true;
			else
				rk->line[len++] = buf[i];
		}
		rk->line[len] = '\0';
	}
	close(rk->out);
}

int main(int argc, char **argv)
{
	struct rank rk[MAX_RANKS];
	char prog[PATH_MAX];
	int world = 4, failed = 0, first = 1;
	uint64_t h = TL_HASH_INIT;

	for (; first < argc; first++) {
		char *end = NULL;

		if (!strcmp(argv[first], "--pids")) {
			show_pids = true;
		} else if (!strcmp(argv[first], "--ranks") && first + 1 < argc) {
			world = (int)strtol(argv[++first], &end, 10);
			if (*end || world < 1 || world > MAX_RANKS) {
				fprintf(stderr, "usage: %s [--ranks N (1..%d, default 4)] [--pids] "
						"[rank program arguments...]\n", argv[0], MAX_RANKS);
				return 2;
			}
		} else {
			break;
		}
	}
	if (rank_program(prog, sizeof(prog)) != 0) {
		fprintf(stderr, "launcher: cannot find the rank program next to %s\n", argv[0]);
		return 1;
	}
	for (int r = 0; r < world; r++) {
		if (start_rank(&rk[r], r, world, prog, argc - first, argv + first) != 0) {
			fprintf(stderr, "launcher: cannot start rank %d: %s\n", r, strerror(errno));
			world = r; /* wait for the ones started */
			failed++;
			break;
		}
	}
	for (int r = 0; r < world; r++)
		read_rank(&rk[r]);
	for (int r = 0; r < world; r++) {
		int status = 0;
		pid_t got;

		while ((got = waitpid(rk[r].pid, &status, 0)) < 0 && errno == EINTR)
			;
		if (got < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 || !rk[r].line[0]) {
			fprintf(stderr, "launcher: rank %d (pid %d) failed: %s %d\n", r, (int)rk[r].pid,
				WIFEXITED(status) ? "exit" : "signal",
				WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			failed++;
		}
		printf("rank %d: %s\n", r, rk[r].line);
		h = tl_hash(rk[r].line, strlen(rk[r].line), h);
	}
	printf("launcher ranks=%d failed=%d checksum=%016llx\n", world, failed, (unsigned long long)h);
	return failed ? 1 : 0;
}
