/* notwin_train.c - a training-loop-shaped driver-API program whose kernels have NO twins
 * (tests/kernels/notwin.cu), so the software device runs them only through its PTX
 * interpreter: per step an input copy, a forward map through a non-inlined device function
 * (nt_powers), a histogram of the inputs in shared memory with atomics (nt_histogram), a
 * float4 reduction with warp shuffles and atomics (nt_sum4) whose "loss" the host reads back,
 * and an update of the input from it. Each step's loss is checked against a host reference
 * computed with the same rounded operations; the program prints a checksum of every loss and
 * histogram. usage: notwin_train [steps]   tests layer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define N 4096                   /* floats per step (a multiple of 4: nt_sum4 reads float4s) */
#define BINS 29

/* nt_power_plus of notwin.cu */
static float power_plus(float x, int k)
{
	float r = 1.0f;

	for (int i = 0; i < k; i++)
		r = r * x;
	return r + (float)k;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 10, nbins = BINS, n4 = N / 4, bad = 0;
	long long n = N;
	CUmodule mod;
	CUfunction f_pow, f_hist, f_sum;
	CUstream s;
	CUdeviceptr in, mapped, hist, total, done;
	static float host_in[N];
	static unsigned int host_keys[N];
	unsigned int host_hist[BINS];
	uint64_t h = TL_HASH_INIT;
	void *pow_args[] = { &mapped, &in, &n };
	void *hist_args[] = { &hist, &in, &n, &nbins };
	void *sum_args[] = { &total, &done, &mapped, &n4 };

	tl_init();
	mod = tl_load_module("notwin");
	f_pow = tl_func(mod, "nt_powers");
	f_hist = tl_func(mod, "nt_histogram");
	f_sum = tl_func(mod, "nt_sum4");
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&in, N * sizeof(float)));
	CHECK(cuMemAlloc(&mapped, N * sizeof(float)));
	CHECK(cuMemAlloc(&hist, BINS * sizeof(unsigned int)));
	CHECK(cuMemAlloc(&total, sizeof(float)));
	CHECK(cuMemAlloc(&done, sizeof(unsigned int)));
	for (int step = 0; step < steps; step++) {
		float loss = 0.0f, want = 0.0f;
		unsigned int want_hist[BINS] = { 0 };

		/* small integers and halves: the reduction is exact in any order */
		for (int i = 0; i < N; i++) {
			host_in[i] = (float)((i * 7 + step * 13) % 9 - 4) * 0.5f;
			memcpy(&host_keys[i], &host_in[i], sizeof(float));
			want_hist[host_keys[i] % BINS]++;
			want += power_plus(host_in[i], i % 4);
		}
		CHECK(cuMemcpyHtoDAsync(in, host_in, sizeof(host_in), s));
		CHECK(cuMemsetD32Async(hist, 0, BINS, s));
		CHECK(cuMemsetD32Async(total, 0, 1, s));
		CHECK(cuMemsetD32Async(done, 0, 1, s));
		CHECK(cuLaunchKernel(f_pow, 8, 1, 1, 128, 1, 1, 0, s, pow_args, NULL));
		CHECK(cuLaunchKernel(f_hist, 4, 1, 1, 256, 1, 1, BINS * sizeof(unsigned int), s, hist_args, NULL));
		CHECK(cuLaunchKernel(f_sum, 3, 1, 1, 256, 1, 1, 0, s, sum_args, NULL));
		CHECK(cuMemcpyDtoHAsync(&loss, total, sizeof(loss), s));
		CHECK(cuMemcpyDtoHAsync(host_hist, hist, sizeof(host_hist), s));
		CHECK(cuStreamSynchronize(s));
		if (loss != want || memcmp(host_hist, want_hist, sizeof(host_hist))) {
			fprintf(stderr, "step %d: loss %g (want %g)%s\n", step, (double)loss, (double)want,
				memcmp(host_hist, want_hist, sizeof(host_hist)) ? ", histogram differs" : "");
			bad++;
		}
		h = tl_hash(&loss, sizeof(loss), h);
		h = tl_hash(host_hist, sizeof(host_hist), h);
	}
	printf("notwin_train: %d steps, checksum %016llx\n", steps, (unsigned long long)h);
	CHECK(cuStreamDestroy(s));
	CHECK(cuModuleUnload(mod));
	return bad ? 1 : 0;
}
