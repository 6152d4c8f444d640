/* rpl_buildside.c - a training loop on one thread while a second thread keeps launching into
 * its own stream whenever the first is inside a synchronize: with cufold replaying, one of those
 * synchronizes is where a template is built (rewrite, graph build, cuGraphInstantiate, upload),
 * and the second thread's calls must go on and complete meanwhile (issue 26: builds run outside
 * the engine's lock). It knows nothing of cufold.
 *
 * stdout: a checksum of everything computed (the same with and without cufold).
 * stderr: "buildside: longest synchronize N ms, side calls completed during it K", for
 * tests/e2e/replay_build_offlock.sh. usage: rpl_buildside [steps]   tests layer. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "testlib.h"

#define N 4096

static CUfunction f_fill, f_axpy, f_scale;
static CUcontext ctx;
static int in_sync;             /* the main thread is inside cuStreamSynchronize (atomic) */
static int quit;                /* the main loop is done (atomic) */
static long side_calls;         /* side launches completed while in_sync (atomic) */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void launch(CUfunction f, CUstream s, void **args)
{
	CHECK(cuLaunchKernel(f, (N + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

static void k_fill(CUdeviceptr x, float v, CUstream s)
{
	int n = N;
	void *a[] = {&x, &v, &n};

	launch(f_fill, s, a);
}

static void k_axpy(CUdeviceptr y, CUdeviceptr x, float al, CUstream s)
{
	int n = N;
	void *a[] = {&y, &x, &al, &n};

	launch(f_axpy, s, a);
}

static void k_scale(CUdeviceptr o, CUdeviceptr i, float sc, CUstream s)
{
	int n = N;
	void *a[] = {&o, &i, &sc, &n};

	launch(f_scale, s, a);
}

/* The side thread: whenever the main thread is inside a synchronize, let it get there (the
 * window closes and a build may start), then launch into its own stream until it comes out.
 * Its kernel only fills: the result does not depend on how many calls it made. */
static void *side_main(void *arg)
{
	CUdeviceptr buf = *(CUdeviceptr *)arg;
	CUstream s2;

	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	while (!__atomic_load_n(&quit, __ATOMIC_ACQUIRE)) {
		if (!__atomic_load_n(&in_sync, __ATOMIC_ACQUIRE)) {
			struct timespec ts = { 0, 200000 };

			nanosleep(&ts, NULL);
			continue;
		}
		{
			struct timespec ts = { 0, 100000000 }; /* 100 ms: the main thread is in */

			nanosleep(&ts, NULL);
		}
		while (__atomic_load_n(&in_sync, __ATOMIC_ACQUIRE)) {
			struct timespec ts = { 0, 1000000 }; /* 1 ms: a few hundred calls per second */

			k_fill(buf, 3.0f, s2);
			if (__atomic_load_n(&in_sync, __ATOMIC_ACQUIRE))
				__atomic_fetch_add(&side_calls, 1, __ATOMIC_RELAXED);
			nanosleep(&ts, NULL);
		}
	}
	k_fill(buf, 3.0f, s2);
	CHECK(cuStreamSynchronize(s2));
	CHECK(cuStreamDestroy(s2));
	return NULL;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 6;
	CUdeviceptr x, y, z, side;
	uint64_t h = TL_HASH_INIT, longest = 0;
	long during_longest = 0;
	CUmodule elem;
	pthread_t th;
	CUstream s1;

	ctx = tl_init();
	elem = tl_load_module("elementwise");
	f_fill = tl_func(elem, "fill");
	f_axpy = tl_func(elem, "axpy");
	f_scale = tl_func(elem, "scale");
	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&x, N * sizeof(float)));
	CHECK(cuMemAlloc(&y, N * sizeof(float)));
	CHECK(cuMemAlloc(&z, N * sizeof(float)));
	CHECK(cuMemAlloc(&side, N * sizeof(float)));
	k_fill(x, 1.0f, s1);
	k_fill(y, 0.5f, s1);
	CHECK(cuStreamSynchronize(s1));
	pthread_create(&th, NULL, side_main, &side);
	for (int i = 0; i < steps; i++) {
		uint64_t t0, dt;
		long before;

		k_axpy(y, x, 0.25f, s1);
		k_scale(z, y, 0.5f, s1);
		k_axpy(x, z, -0.125f, s1);
		k_scale(y, x, 1.5f, s1);
		before = __atomic_load_n(&side_calls, __ATOMIC_RELAXED);
		__atomic_store_n(&in_sync, 1, __ATOMIC_RELEASE);
		t0 = now_ms();
		CHECK(cuStreamSynchronize(s1));
		dt = now_ms() - t0;
		__atomic_store_n(&in_sync, 0, __ATOMIC_RELEASE);
		if (dt >= longest) {
			longest = dt;
			during_longest = __atomic_load_n(&side_calls, __ATOMIC_RELAXED) - before;
		}
	}
	__atomic_store_n(&quit, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	h = tl_hash_device(x, N * sizeof(float), h);
	h = tl_hash_device(y, N * sizeof(float), h);
	h = tl_hash_device(side, N * sizeof(float), h);
	fprintf(stderr, "buildside: longest synchronize %llu ms, side calls completed during it %ld\n",
		(unsigned long long)longest, during_longest);
	printf("rpl_buildside steps=%d checksum=%016llx\n", steps, (unsigned long long)h);
	return 0;
}
