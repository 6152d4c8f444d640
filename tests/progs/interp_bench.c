/* interp_bench.c - the software device's PTX interpreter speed (make bench-interp): runs a loop
 * of simple integer instructions (notwin.cu's nt_spin) and a float gemm (linalg.cu, forced
 * through the interpreter), and prints interpreted thread-instructions per second on one core.
 * The goal (issue 14) is 50 million simple instructions per second. tests layer. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "testlib.h"

uint64_t simcuda_interp_instructions(void); /* exported by the software device */
void simcuda_interp_force(int on);

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Launch and wait; print the rate. The device runs the whole grid on this thread. */
static void measure(const char *what, CUfunction f, unsigned int gx, unsigned int gy, unsigned int bx,
		    unsigned int by, void **args)
{
	uint64_t i0 = simcuda_interp_instructions();
	double t0 = now(), dt;
	uint64_t n;

	CHECK(cuLaunchKernel(f, gx, gy, 1, bx, by, 1, 0, NULL, args, NULL));
	CHECK(cuCtxSynchronize());
	dt = now() - t0;
	n = simcuda_interp_instructions() - i0;
	printf("%-28s %12llu thread-instructions in %.3f s: %7.1f M/s\n", what, (unsigned long long)n, dt,
	       (double)n / dt / 1e6);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 1000;
	CUmodule nt, la;
	CUdeviceptr out, A, B, C;
	int m = 256, n = 256, k = 256;
	float beta = 0.0f;
	void *spin_args[] = { &out, &iters };
	void *gemm_args[] = { &C, &A, &B, &m, &n, &k, &beta };

	tl_init();
	nt = tl_load_module("notwin");
	la = tl_load_module("linalg");
	CHECK(cuMemAlloc(&out, 64 * 256 * sizeof(unsigned int)));
	CHECK(cuMemAlloc(&A, (size_t)m * k * sizeof(float)));
	CHECK(cuMemAlloc(&B, (size_t)k * n * sizeof(float)));
	CHECK(cuMemAlloc(&C, (size_t)m * n * sizeof(float)));
	CHECK(cuMemsetD32(A, 0x3f800000u, (size_t)m * k));
	CHECK(cuMemsetD32(B, 0x3f000000u, (size_t)k * n));
	measure("nt_spin (integer loop)", tl_func(nt, "nt_spin"), 64, 1, 256, 1, spin_args);
	simcuda_interp_force(1);
	measure("gemm 256^3 (loads, fma)", tl_func(la, "gemm"), n / 16, m / 16, 16, 16, gemm_args);
	simcuda_interp_force(0);
	return 0;
}
