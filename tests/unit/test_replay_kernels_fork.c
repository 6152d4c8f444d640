/* test_replay_kernels_fork.c - cufold's kernel cache (rewrite/kernels.c, replay's part of the
 * engine owns one: replay's builds load modules through it) in a forked child: a thread of the
 * parent is inside a load through the parent engine's cache, holding that cache's lock, when the
 * process forks (the software device's SIMCUDA_DELAY keeps it in cuModuleLoadData); the child,
 * which makes a new engine as the engine's fork handler does (a new replay part, so a new cache),
 * loads cufold's kernels itself instead of waiting forever on a lock no thread of its own holds.
 * tests layer (cmocka, libcufold.a, the software device). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "driver/real.h"
#include "replay/replay_int.h"
#include "rewrite/kernels.h"
#include "shim/shim.h"

static CUcontext ctx;
static struct rpl_engine *parent; /* the parent's replay part (its cache) */
static const struct rpl_config cfg = { .warmup = 1, .segment = 64 };
static int loading;             /* the loader thread is about to load (atomic) */

static void *loader(void *arg)
{
	CUmodule m;

	(void)arg;
	DRV_REAL(cuCtxSetCurrent)(ctx);
	__atomic_store_n(&loading, 1, __ATOMIC_RELEASE);
	(void)rw_kernels_load(parent->kernels, ctx, &m); /* holds the cache's lock through the slow load */
	return NULL;
}

static void test_child_loads(void **state)
{
	struct timespec ts = { 0, 200000000 }; /* 200 ms: the loader is inside the slow load */
	pthread_t th;
	int status = 0;
	pid_t pid;

	(void)state;
	assert_int_equal(pthread_create(&th, NULL, loader, NULL), 0);
	while (!__atomic_load_n(&loading, __ATOMIC_ACQUIRE))
		;
	nanosleep(&ts, NULL);
	pid = fork();
	if (pid == 0) {
		struct rpl_engine *child;
		CUmodule m = NULL;

		alarm(5); /* a child stuck on the parent's lock is killed: the test fails */
		child = rpl_engine_create(NULL, &cfg); /* the child's new engine (never the parent's) */
		if (!child)
			_exit(4);
		_exit(rw_kernels_load(child->kernels, ctx, &m) == CUDA_SUCCESS && m ? 0 : 3);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	pthread_join(th, NULL);
}

/* A context's destruction (rpl_context_gone, outside the engine's lock) makes the replay part's
 * cache forget its module: the next load is a new one; no replay part, nothing to forget. */
static void test_context_gone_forgets(void **state)
{
	CUmodule m1 = NULL, m2 = NULL, m3 = NULL;

	(void)state;
	assert_int_equal(rw_kernels_load(parent->kernels, ctx, &m1), CUDA_SUCCESS);
	assert_int_equal(rw_kernels_load(parent->kernels, ctx, &m2), CUDA_SUCCESS);
	assert_ptr_equal(m1, m2);
	rpl_context_gone(parent, ctx);
	rpl_context_gone(NULL, ctx);
	assert_int_equal(rw_kernels_load(parent->kernels, ctx, &m3), CUDA_SUCCESS);
	assert_ptr_not_equal(m3, m1);
}

static int setup(void **state)
{
	CUdevice dev;

	(void)state;
	setenv("SIMCUDA_DELAY", "cuModuleLoadData:1000", 1);
	if (shim_init() != 0 || DRV_REAL(cuInit)(0) != CUDA_SUCCESS || DRV_REAL(cuDeviceGet)(&dev, 0) != CUDA_SUCCESS ||
	    DRV_REAL(cuDevicePrimaryCtxRetain)(&ctx, dev) != CUDA_SUCCESS || DRV_REAL(cuCtxSetCurrent)(ctx) != CUDA_SUCCESS)
		return -1;
	parent = rpl_engine_create(NULL, &cfg);
	return parent ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_child_loads),
		cmocka_unit_test(test_context_gone_forgets),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
