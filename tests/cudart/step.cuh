/* step.cuh - the kernels of one step of the runtime-API test programs (train.cu, graph.cu) and
 * their checked-call macro; their twins are in tests/simcuda/twins_cudart.c. tests layer. */
#ifndef STEP_CUH
#define STEP_CUH

#include <cstdio>
#include <cstdlib>

/* x[i] = x[i] * a + 0.5 */
extern "C" __global__ void rt_prep(float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = __fadd_rn(__fmul_rn(x[i], a), 0.5f);
}

/* y[i] = w[i] * x[i] */
extern "C" __global__ void rt_forward(float *y, const float *w, const float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = __fmul_rn(w[i], x[i]);
}

/* loss[0] = sum over i in order of (y[i] - t[i])^2, by one thread so the sum is exact to
 * reproduce */
extern "C" __global__ void rt_loss(float *loss, const float *y, const float *t, int n)
{
	if (blockIdx.x == 0 && threadIdx.x == 0) {
		float s = 0.0f;

		for (int i = 0; i < n; i++) {
			float d = __fsub_rn(y[i], t[i]);

			s = __fadd_rn(s, __fmul_rn(d, d));
		}
		loss[0] = s;
	}
}

/* w[i] -= lr * 2 (y[i] - t[i]) x[i] */
extern "C" __global__ void rt_update(float *w, const float *x, const float *y, const float *t, float lr, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		float g = __fmul_rn(__fmul_rn(2.0f, __fsub_rn(y[i], t[i])), x[i]);

		w[i] = __fsub_rn(w[i], __fmul_rn(lr, g));
	}
}

static void check(cudaError_t e, const char *what, const char *file, int line)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "%s:%d: %s: %s\n", file, line, what, cudaGetErrorString(e));
		exit(1);
	}
}
#define CK(call) check((call), #call, __FILE__, __LINE__)

#endif
