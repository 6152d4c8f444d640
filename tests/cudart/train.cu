/* train.cu - a training loop written as CUDA C++ programs are, with the runtime API only: a
 * linear model fitted by gradient steps, one loss read back every step. tests layer; built by
 * nvcc with shared and static cudart and with --default-stream per-thread (tests/e2e/sim_cudart_train.sh),
 * its kernels run on the software device by the twins in tests/simcuda/twins_cudart.c.
 *
 * Each step: a non-blocking "data" stream copies the step's inputs from pinned memory (double
 * buffered) and scales them; the "compute" stream (default flags) waits for it by event, copies
 * the targets from pageable memory, runs forward, loss and update with a scratch buffer from
 * cudaMallocAsync, and the default stream (legacy or per-thread, as built) waits for compute by
 * event and copies the loss back to pinned memory. At the end cudaDeviceReset, and one more
 * kernel on fresh memory. Every result is printed as bits, so a run with and without cufold
 * compares exactly.
 *
 * usage: train [steps]   (default 12) */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>

#define N 4096
#define THREADS 256

#include "step.cuh"

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/* Inputs of the run after cudaDeviceReset: 0, 1, 2, ... */
static const float *x_host_after_reset(void)
{
	static float v[N];

	for (int i = 0; i < N; i++)
		v[i] = (float)i;
	return v;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 12;
	const int blocks = (N + THREADS - 1) / THREADS;
	float *x_pinned[2], *loss_pinned, *t_pageable, *w_host;
	float *w, *x, *t, *loss, *y;
	cudaStream_t data, compute;
	cudaEvent_t data_done, compute_done;
	uint64_t h = 1469598103934665603ull;
	float h_after;

	CK(cudaStreamCreateWithFlags(&data, cudaStreamNonBlocking));
	CK(cudaStreamCreate(&compute));
	CK(cudaEventCreateWithFlags(&data_done, cudaEventDisableTiming));
	CK(cudaEventCreateWithFlags(&compute_done, cudaEventDisableTiming));
	CK(cudaMallocHost(&x_pinned[0], N * sizeof(float)));
	CK(cudaMallocHost(&x_pinned[1], N * sizeof(float)));
	CK(cudaMallocHost(&loss_pinned, sizeof(float)));
	t_pageable = (float *)malloc(N * sizeof(float));
	w_host = (float *)malloc(N * sizeof(float));
	CK(cudaMalloc(&w, N * sizeof(float)));
	CK(cudaMalloc(&x, N * sizeof(float)));
	CK(cudaMalloc(&t, N * sizeof(float)));
	CK(cudaMalloc(&loss, sizeof(float)));
	CK(cudaMemset(w, 0, N * sizeof(float)));
	for (int s = 0; s < steps; s++) {
		float *xp = x_pinned[s % 2];

		for (int i = 0; i < N; i++) {
			xp[i] = (float)((i * 7 + s * 3) % 31) / 31.0f;
			t_pageable[i] = (float)((i * 5 + s) % 17) / 17.0f;
		}
		CK(cudaMemcpyAsync(x, xp, N * sizeof(float), cudaMemcpyHostToDevice, data));
		rt_prep<<<blocks, THREADS, 0, data>>>(x, 0.75f, N);
		CK(cudaGetLastError());
		CK(cudaEventRecord(data_done, data));
		CK(cudaStreamWaitEvent(compute, data_done, 0));
		CK(cudaMemcpyAsync(t, t_pageable, N * sizeof(float), cudaMemcpyHostToDevice, compute));
		CK(cudaMallocAsync(&y, N * sizeof(float), compute));
		rt_forward<<<blocks, THREADS, 0, compute>>>(y, w, x, N);
		rt_loss<<<1, 1, 0, compute>>>(loss, y, t, N);
		rt_update<<<blocks, THREADS, 0, compute>>>(w, x, y, t, 0.05f, N);
		CK(cudaGetLastError());
		CK(cudaFreeAsync(y, compute));
		CK(cudaEventRecord(compute_done, compute));
		CK(cudaStreamWaitEvent(0, compute_done, 0));
		CK(cudaMemcpyAsync(loss_pinned, loss, sizeof(float), cudaMemcpyDeviceToHost, 0));
		CK(cudaStreamSynchronize(0));
		printf("step %d loss %08x\n", s, bits(*loss_pinned));
	}
	CK(cudaMemcpy(w_host, w, N * sizeof(float), cudaMemcpyDeviceToHost));
	for (int i = 0; i < N; i++) {
		h ^= bits(w_host[i]);
		h *= 1099511628211ull;
	}
	printf("weights %016llx\n", (unsigned long long)h);
	CK(cudaStreamDestroy(data));
	CK(cudaStreamDestroy(compute));
	CK(cudaEventDestroy(data_done));
	CK(cudaEventDestroy(compute_done));
	CK(cudaFreeHost(x_pinned[0]));
	CK(cudaFreeHost(x_pinned[1]));
	CK(cudaFreeHost(loss_pinned));
	CK(cudaFree(w));
	CK(cudaFree(x));
	CK(cudaFree(t));
	CK(cudaFree(loss));
	free(t_pageable);
	free(w_host);

	/* cudaDeviceReset tears the runtime's state down (through the driver's primary-context
	 * reset and context-local storage); the runtime must come up again for the next call. */
	CK(cudaDeviceReset());
	CK(cudaMalloc(&x, N * sizeof(float)));
	CK(cudaMemcpy(x, x_host_after_reset(), N * sizeof(float), cudaMemcpyHostToDevice));
	rt_prep<<<blocks, THREADS>>>(x, 2.0f, N);
	CK(cudaGetLastError());
	CK(cudaMemcpy(&h_after, x + N - 1, sizeof(float), cudaMemcpyDeviceToHost));
	printf("after reset %08x\n", bits(h_after));
	CK(cudaFree(x));
	return 0;
}
