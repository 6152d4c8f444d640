/* graph.cu - a runtime-API program that captures its own training step into a CUDA graph with
 * cudaStreamBeginCapture and launches the instantiated graph every step, reading the loss back
 * from pinned memory each time; a cudaStreamAddCallback after each launch records the step.
 * tests layer; built by nvcc like train.cu (the same kernels, run by the twins in
 * tests/simcuda/twins_cudart.c), run by tests/e2e/sim_cudart_train.sh.
 *
 * usage: graph [steps]   (default 8) */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>

#define N 2048
#define THREADS 128

#include "step.cuh"

/* cudaStreamAddCallback's callback: records, in order, which steps' graphs have completed. */
static int done_steps[64], ndone;

static void CUDART_CB step_done(cudaStream_t stream, cudaError_t status, void *arg)
{
	(void)stream;
	if (status == cudaSuccess && ndone < 64)
		done_steps[ndone++] = (int)(intptr_t)arg;
}

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 8;
	const int blocks = (N + THREADS - 1) / THREADS;
	float *x_pinned, *t_pinned, *loss_pinned, *w, *x, *t, *y, *loss;
	cudaStream_t s;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	cudaStreamCaptureStatus status;

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMallocHost(&x_pinned, N * sizeof(float)));
	CK(cudaMallocHost(&t_pinned, N * sizeof(float)));
	CK(cudaMallocHost(&loss_pinned, sizeof(float)));
	CK(cudaMalloc(&w, N * sizeof(float)));
	CK(cudaMalloc(&x, N * sizeof(float)));
	CK(cudaMalloc(&t, N * sizeof(float)));
	CK(cudaMalloc(&y, N * sizeof(float)));
	CK(cudaMalloc(&loss, sizeof(float)));
	CK(cudaMemsetAsync(w, 0, N * sizeof(float), s));

	CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	CK(cudaStreamIsCapturing(s, &status));
	if (status != cudaStreamCaptureStatusActive) {
		fprintf(stderr, "graph.cu: stream is not capturing\n");
		return 1;
	}
	CK(cudaMemcpyAsync(x, x_pinned, N * sizeof(float), cudaMemcpyHostToDevice, s));
	CK(cudaMemcpyAsync(t, t_pinned, N * sizeof(float), cudaMemcpyHostToDevice, s));
	rt_prep<<<blocks, THREADS, 0, s>>>(x, 0.75f, N);
	rt_forward<<<blocks, THREADS, 0, s>>>(y, w, x, N);
	rt_loss<<<1, 1, 0, s>>>(loss, y, t, N);
	rt_update<<<blocks, THREADS, 0, s>>>(w, x, y, t, 0.05f, N);
	CK(cudaMemcpyAsync(loss_pinned, loss, sizeof(float), cudaMemcpyDeviceToHost, s));
	CK(cudaStreamEndCapture(s, &graph));
	CK(cudaGraphInstantiate(&exec, graph, 0));

	for (int step = 0; step < steps; step++) {
		for (int i = 0; i < N; i++) {
			x_pinned[i] = (float)((i * 7 + step * 3) % 31) / 31.0f;
			t_pinned[i] = (float)((i * 5 + step) % 17) / 17.0f;
		}
		CK(cudaGraphLaunch(exec, s));
		CK(cudaStreamAddCallback(s, step_done, (void *)(intptr_t)step, 0));
		CK(cudaStreamSynchronize(s));
		printf("step %d loss %08x\n", step, bits(*loss_pinned));
	}
	printf("callbacks");
	for (int i = 0; i < ndone; i++)
		printf(" %d", done_steps[i]);
	printf("\n");
	CK(cudaGraphExecDestroy(exec));
	CK(cudaGraphDestroy(graph));
	CK(cudaStreamDestroy(s));
	CK(cudaFreeHost(x_pinned));
	CK(cudaFreeHost(t_pinned));
	CK(cudaFreeHost(loss_pinned));
	CK(cudaFree(w));
	CK(cudaFree(x));
	CK(cudaFree(t));
	CK(cudaFree(y));
	CK(cudaFree(loss));
	return 0;
}
