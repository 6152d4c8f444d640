/* icpt_threads.c - 8 threads at once: their first driver calls race (the process has made none
 * before, so they race through cufold's initialization too); then each, with its own stream
 * and buffers, launches kernels, memsets and copies in a loop, and the main thread prints every
 * thread's result in order. tests layer. */
#include <pthread.h>

#define CU(fn) fn
#include "icpt_work.h"

#define THREADS 8
#define ITERS 40
#define N 2048

static CUcontext ctx;
static struct icpt_kernels kernels;
static pthread_barrier_t start; /* THREADS workers and main */

struct worker {
	int index;           /* 0..THREADS-1 */
	uint64_t hash;       /* of the thread's final buffer */
	CUresult rc;         /* first failure, or CUDA_SUCCESS */
};

#define TRY(call) \
	do { \
		if ((w->rc = (call)) != CUDA_SUCCESS) \
			goto out; \
	} while (0)

static void *work(void *arg)
{
	struct worker *w = arg;
	CUstream s = NULL;
	CUdeviceptr x = 0, y = 0;
	float out[N];
	int n = N, version = 0;

	/* all at once: the process's first driver calls */
	pthread_barrier_wait(&start);
	w->rc = cuInit(0);
	if (w->rc == CUDA_SUCCESS)
		w->rc = cuDriverGetVersion(&version);
	pthread_barrier_wait(&start);
	/* main makes the context and loads the kernels, then all launch at once */
	pthread_barrier_wait(&start);
	if (w->rc != CUDA_SUCCESS)
		goto out;
	TRY(cuCtxSetCurrent(ctx));
	TRY(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	TRY(cuMemAlloc(&x, sizeof(out)));
	TRY(cuMemAlloc(&y, sizeof(out)));
	TRY(cuMemsetD32Async(y, icpt_bits(0.0f), N, s));
	for (int i = 0; i < ITERS; i++) {
		float v = (float)(w->index + 1) * 0.5f + (float)i, a = 0.25f;
		void *fill_args[] = { &x, &v, &n };
		void *axpy_args[] = { &y, &x, &a, &n };

		TRY(cuLaunchKernel(kernels.fill, N / 256, 1, 1, 256, 1, 1, 0, s, fill_args, NULL));
		TRY(cuLaunchKernel(kernels.axpy, N / 256, 1, 1, 256, 1, 1, 0, s, axpy_args, NULL));
		if (i % 8 == 7)
			TRY(cuMemcpyDtoDAsync(x, y, sizeof(out), s));
	}
	TRY(cuMemcpyDtoHAsync(out, y, sizeof(out), s));
	TRY(cuStreamSynchronize(s));
	w->hash = tl_hash(out, sizeof(out), TL_HASH_INIT);
out:
	if (x)
		cuMemFree(x);
	if (y)
		cuMemFree(y);
	if (s)
		cuStreamDestroy(s);
	return NULL;
}

int main(void)
{
	pthread_t tid[THREADS];
	struct worker w[THREADS];
	int failed = 0;

	pthread_barrier_init(&start, NULL, THREADS + 1);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .index = i, .rc = CUDA_SUCCESS };
		if (pthread_create(&tid[i], NULL, work, &w[i]) != 0)
			return 1;
	}
	pthread_barrier_wait(&start); /* the workers' first calls */
	pthread_barrier_wait(&start);
	ctx = icpt_init();
	icpt_load_kernels(&kernels);
	pthread_barrier_wait(&start); /* the workers launch */
	for (int i = 0; i < THREADS; i++) {
		pthread_join(tid[i], NULL);
		printf("thread %d rc %d hash %016llx\n", i, (int)w[i].rc, (unsigned long long)w[i].hash);
		failed |= w[i].rc != CUDA_SUCCESS;
	}
	ICPT_CHECK(cuModuleUnload(kernels.mod));
	printf("done\n");
	return failed;
}
