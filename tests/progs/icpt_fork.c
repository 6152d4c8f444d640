/* icpt_fork.c - a process that has used the driver forks; the child keeps launching (the
 * software device, unlike a GPU, lets it), then the parent does. Prints the child's results
 * (it finishes first) and then the parent's. tests layer. */
#include <sys/wait.h>
#include <unistd.h>

#define CU(fn) fn
#include "icpt_work.h"

static struct icpt_kernels k;

/* fill + axpy rounds on a new stream; returns the hash of the result. */
static uint64_t launch_rounds(float base, int rounds)
{
	CUstream s;
	CUdeviceptr x, y;
	int n = 1024;
	float out[1024], a = 1.5f;

	ICPT_CHECK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
	ICPT_CHECK(cuMemAlloc(&x, sizeof(out)));
	ICPT_CHECK(cuMemAlloc(&y, sizeof(out)));
	ICPT_CHECK(cuMemsetD32Async(y, icpt_bits(1.0f), (size_t)n, s));
	for (int i = 0; i < rounds; i++) {
		float v = base + (float)i;
		void *fill_args[] = { &x, &v, &n };
		void *axpy_args[] = { &y, &x, &a, &n };

		ICPT_CHECK(cuLaunchKernel(k.fill, 4, 1, 1, 256, 1, 1, 0, s, fill_args, NULL));
		ICPT_CHECK(cuLaunchKernel(k.axpy, 4, 1, 1, 256, 1, 1, 0, s, axpy_args, NULL));
	}
	ICPT_CHECK(cuMemcpyDtoHAsync(out, y, sizeof(out), s));
	ICPT_CHECK(cuStreamSynchronize(s));
	ICPT_CHECK(cuMemFree(x));
	ICPT_CHECK(cuMemFree(y));
	ICPT_CHECK(cuStreamDestroy(s));
	return tl_hash(out, sizeof(out), TL_HASH_INIT);
}

int main(void)
{
	pid_t pid;
	int status;

	icpt_init();
	icpt_load_kernels(&k);
	printf("before fork %016llx\n", (unsigned long long)launch_rounds(1.0f, 10));
	fflush(stdout);

	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		printf("child %016llx\n", (unsigned long long)launch_rounds(2.0f, 20));
		printf("child again %016llx\n", (unsigned long long)launch_rounds(3.0f, 5));
		exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "child failed (status %d)\n", status);
		return 1;
	}
	printf("parent %016llx\n", (unsigned long long)launch_rounds(4.0f, 20));
	ICPT_CHECK(cuModuleUnload(k.mod));
	printf("done\n");
	return 0;
}
