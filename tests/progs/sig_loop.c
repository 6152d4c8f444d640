/* sig_loop.c - a training-shaped loop that runs until it is stopped: per step a copy in, three
 * kernels, a memset and the result copied back, then a 2 ms sleep. It prints "running" once
 * after its tenth step, for the test to send a signal. With "handler" it catches SIGTERM
 * itself and ends its loop normally (printing its checksum and exiting 0); with "forked" it
 * forks after the tenth step and the child runs the loop (the parent waits for it and exits
 * with its status). usage: sig_loop [handler|forked|plain] [max_steps]   tests layer. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

#define N 1024

static volatile sig_atomic_t stop_flag;

static void on_term(int sig)
{
	(void)sig;
	stop_flag = 1;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "plain";
	long max_steps = argc > 2 ? atol(argv[2]) : 100000;
	struct timespec nap = { 0, 2000000 };
	CUdeviceptr a, b;
	CUfunction f_fill, f_scale, f_add;
	CUmodule elem;
	CUstream s;
	float host[N], two = 2.0f;
	int n = N;
	uint64_t h = TL_HASH_INIT;
	long step;

	if (!strcmp(how, "handler"))
		signal(SIGTERM, on_term);
	tl_init();
	elem = tl_load_module("elementwise");
	f_fill = tl_func(elem, "fill");
	f_scale = tl_func(elem, "scale");
	f_add = tl_func(elem, "add");
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&a, N * sizeof(float)));
	CHECK(cuMemAlloc(&b, N * sizeof(float)));
	for (step = 0; step < max_steps && !stop_flag; step++) {
		float v = (float)(step % 7);
		void *fa[] = { &a, &v, &n }, *sa[] = { &b, &a, &two, &n }, *aa[] = { &b, &b, &a, &n };

		tl_fill_random(host, N, (uint32_t)step + 1);
		CHECK(cuMemcpyHtoDAsync(b, host, sizeof(host), s));
		CHECK(cuLaunchKernel(f_fill, N / 256, 1, 1, 256, 1, 1, 0, s, fa, NULL));
		CHECK(cuLaunchKernel(f_scale, N / 256, 1, 1, 256, 1, 1, 0, s, sa, NULL));
		CHECK(cuLaunchKernel(f_add, N / 256, 1, 1, 256, 1, 1, 0, s, aa, NULL));
		CHECK(cuMemsetD32Async(a, 0, N, s));
		CHECK(cuMemcpyDtoHAsync(host, b, sizeof(host), s));
		CHECK(cuStreamSynchronize(s));
		h = tl_hash(host, sizeof(host), h);
		if (step == 9) {
			if (!strcmp(how, "forked")) {
				pid_t pid = fork();
				int st;

				if (pid > 0) {
					printf("running\n");
					fflush(stdout);
					if (waitpid(pid, &st, 0) != pid)
						return 1;
					if (WIFSIGNALED(st))
						raise(WTERMSIG(st));
					return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
				}
			} else {
				printf("running\n");
				fflush(stdout);
			}
		}
		nanosleep(&nap, NULL);
	}
	printf("sig_loop steps=%ld checksum=%016llx\n", step, (unsigned long long)h);
	return 0;
}
