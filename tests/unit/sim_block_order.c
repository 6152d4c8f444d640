/* sim_block_order.c - the order the software device runs a grid's blocks in (issue 24 part 3):
 * index order when forced linear; otherwise a permutation of every block, another one for the
 * next launch, the same one for the same SIMCUDA_SEED and launch number (a forked child, whose
 * launch count is the parent's, draws what the parent draws). A kernel records the order its blocks arrived in (nt_arrival). tests layer; runs
 * against libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simcuda.h"
#include "testlib.h"

#define GX 16
#define GY 4
#define NB (GX * GY)

static CUfunction arrival;
static CUdeviceptr d_next, d_order;

/* One launch of GX x GY blocks; order[i] = the linear index of the i-th block to run. */
static void run(unsigned int order[NB])
{
	void *args[] = { &d_next, &d_order };

	CHECK(cuMemsetD32(d_next, 0, 1));
	CHECK(cuLaunchKernel(arrival, GX, GY, 1, 32, 1, 1, 0, NULL, args, NULL));
	CHECK(cuMemcpyDtoH(order, d_order, NB * sizeof(unsigned int)));
}

static bool is_permutation(const unsigned int order[NB])
{
	bool seen[NB] = { false };

	for (int i = 0; i < NB; i++) {
		if (order[i] >= NB || seen[order[i]])
			return false;
		seen[order[i]] = true;
	}
	return true;
}

static void test_linear(void **state)
{
	unsigned int order[NB];

	(void)state;
	simcuda_block_order_force(0);
	run(order);
	for (unsigned int i = 0; i < NB; i++)
		assert_int_equal(order[i], i);
	simcuda_block_order_force(-1);
}

static void test_shuffled(void **state)
{
	unsigned int a[NB], b[NB], lin[NB];

	(void)state;
	for (unsigned int i = 0; i < NB; i++)
		lin[i] = i;
	simcuda_block_order_force(1);
	run(a);
	run(b);
	simcuda_block_order_force(-1);
	assert_true(is_permutation(a));
	assert_true(is_permutation(b));
	assert_memory_not_equal(a, lin, sizeof(a)); /* 1 in 64! to be index order by chance */
	assert_memory_not_equal(a, b, sizeof(a));   /* each launch draws its own */
}

/* The same seed and launch number draw the same order: a forked child (the parent's launch
 * count, the parent's context inherited only as memory: it makes its own) draws what the parent
 * draws next. */
static void test_same_seed_same_order(void **state)
{
	unsigned int parent[NB];
	int fds[2], status = 0;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		unsigned int child[NB];

		simcuda_block_order_force(1);
		run(child);
		_exit(write(fds[1], child, sizeof(child)) == (ssize_t)sizeof(child) ? 0 : 1);
	}
	close(fds[1]);
	simcuda_block_order_force(1);
	run(parent);
	simcuda_block_order_force(-1);
	{
		unsigned int child[NB];

		assert_int_equal(read(fds[0], child, sizeof(child)), (ssize_t)sizeof(child));
		assert_memory_equal(parent, child, sizeof(parent));
	}
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linear),
		cmocka_unit_test(test_shuffled),
		cmocka_unit_test(test_same_seed_same_order),
	};
	CUmodule m;

	tl_init();
	m = tl_load_module("notwin");
	arrival = tl_func(m, "nt_arrival");
	CHECK(cuMemAlloc(&d_next, sizeof(unsigned int)));
	CHECK(cuMemAlloc(&d_order, NB * sizeof(unsigned int)));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
