/* fw_habits.c - what real frameworks (CuPy, numba, PyTorch) do around a training step that our
 * own workloads do not, in plain driver-API code, for tests/e2e/shim_fw_habits.sh and
 * tests/e2e/replay_fw_habits.sh. Every mode runs the same step (a chain of elementwise kernels
 * over a few arrays, a loss copied to the host at its end) and prints a checksum; it knows
 * nothing of cufold.
 * usage: fw_habits MODE STEPS
 *   lazy     kernels compiled on first use: a module is loaded in the middle of step 2 (and its
 *            kernel launched from then on), another loaded at the start is unloaded in the
 *            middle of step 4 without ever running; before every launch the queries CuPy and
 *            numba make (cuCtxGetDevice, cuPointerGetAttribute(s), cuStreamIsCapturing,
 *            cuDeviceGetAttribute, cuFuncGetAttribute, cuCtxGetCurrent)
 *   plain    the same step with none of that (the reference for lazy)
 *   events   every step creates an event, records it after its kernels, queries it until done
 *            and destroys it before the read-back (CuPy's float(x) / .item())
 *   evmid    every step hands work between two streams through events created in the middle of
 *            the step and destroyed right after the other stream waits on them, with work
 *            depending on the wait after the destroy (legal in CUDA: a destroyed event's record
 *            and waits still complete)
 *   pool     every step most arrays sit at other addresses of a pool, in an order with no short
 *            cycle (most pointer parameters move every step; the first two arrays, and so the
 *            kernels that use only them, stay), and one scalar is the step number
 * tests layer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define N 4096           /* elements of every array */
#define NARR 6           /* arrays a step uses */
#define LAYERS 4         /* times a step runs its chain of kernels */
#define POOL 13          /* pool slots (two fixed, 11 for the moving arrays: prime, so the order
			  * below has period 11 * 10) */

static CUfunction f_fill, f_axpy, f_mul, f_scale, f_tanh, f_extra;
static CUstream s;
static CUstream s2;              /* evmid: the second stream */
static int mode_lazy;
static CUmodule unused;          /* lazy: loaded at the start, never run, unloaded in step 4 */

/* The queries a framework makes before a launch; their answers are not used. */
static void framework_queries(CUfunction f, CUdeviceptr p)
{
	CUdevice dev;
	CUcontext ctx;
	int v;
	unsigned int mtype = 0;
	CUdeviceptr dp = 0;
	CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_POINTER };
	void *data[] = { &mtype, &dp };
	CUstreamCaptureStatus cs;

	if (!mode_lazy)
		return;
	CHECK(cuCtxGetDevice(&dev));
	CHECK(cuCtxGetCurrent(&ctx));
	CHECK(cuPointerGetAttribute(&mtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
	CHECK(cuPointerGetAttributes(2, attrs, data, p));
	CHECK(cuStreamIsCapturing(s, &cs));
	CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev));
	CHECK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
}

static void launch(CUfunction f, void **args, CUdeviceptr first)
{
	framework_queries(f, first);
	CHECK(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

/* evmid: `from` records an event, `to` waits on it, and the event is destroyed at once. */
static void handoff(CUstream from, CUstream to)
{
	CUevent e;

	CHECK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventRecord(e, from));
	CHECK(cuStreamWaitEvent(to, e, 0));
	CHECK(cuEventDestroy(e));
}

/* One step over arrays a[0..NARR-1]; returns the loss read back. */
static float step(CUdeviceptr *a, int stepno, const char *mode)
{
	int n = N;
	float one = 1.0f, half = 0.5f, lr = -0.01f;
	float k = 1.0f + (float)stepno / 64.0f; /* pool: a scalar that changes every step */
	float loss = 0.0f;
	void *fill_args[] = { &a[0], &one, &n };
	void *tanh_args[] = { &a[1], &a[0], &n };
	void *mul_args[] = { &a[2], &a[1], &a[1], &n };
	void *scale_args[] = { &a[3], &a[2], &half, &n };
	void *kscale_args[] = { &a[3], &a[3], &k, &n };
	void *axpy_args[] = { &a[4], &a[3], &lr, &n };
	void *extra_args[] = { &a[5], &a[4], &a[1], &n };
	CUevent e;

	launch(f_fill, fill_args, a[0]);
	for (int layer = 0; layer < LAYERS; layer++) {
		launch(f_tanh, tanh_args, a[1]);
		if (!strcmp(mode, "evmid")) {
			/* mul runs on s2 between two handoffs; a kernel that ignored either wait would
			 * read or write a[1], a[2] while s is still using them */
			handoff(s, s2);
			CHECK(cuLaunchKernel(f_mul, N / 256, 1, 1, 256, 1, 1, 0, s2, mul_args, NULL));
			handoff(s2, s);
		} else {
			launch(f_mul, mul_args, a[2]);
		}
		launch(f_scale, scale_args, a[3]);
		if (!strcmp(mode, "pool"))
			launch(f_scale, kscale_args, a[3]);
		if (mode_lazy && stepno == 2 && layer == 1) {
			/* compiled on first use, in the middle of the step */
			CUmodule m = tl_load_module("elementwise");

			f_extra = tl_func(m, "add");
		}
		if (mode_lazy && stepno == 4 && layer == 1) {
			CHECK(cuModuleUnload(unused)); /* in the middle of the step, with kernels in flight */
			unused = NULL;
		}
		launch(f_axpy, axpy_args, a[4]);
		if (f_extra && (stepno > 2 || (stepno == 2 && layer >= 1)))
			launch(f_extra, extra_args, a[5]);
		launch(f_axpy, axpy_args, a[4]);
	}
	if (!strcmp(mode, "events")) {
		CUresult rc;

		CHECK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
		CHECK(cuEventRecord(e, s));
		while ((rc = cuEventQuery(e)) == CUDA_ERROR_NOT_READY)
			;
		CHECK(rc);
		CHECK(cuEventDestroy(e));
	}
	CHECK(cuMemcpyDtoHAsync(&loss, a[4] + 4 * (stepno % N), sizeof(loss), s));
	CHECK(cuStreamSynchronize(s));
	return loss;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "plain";
	int steps = argc > 2 ? atoi(argv[2]) : 8;
	CUmodule m;
	CUdeviceptr pool[POOL], a[NARR];
	uint64_t h = TL_HASH_INIT;

	if (strcmp(mode, "lazy") && strcmp(mode, "plain") && strcmp(mode, "events") && strcmp(mode, "evmid") &&
	    strcmp(mode, "pool")) {
		fprintf(stderr, "usage: fw_habits lazy|plain|events|evmid|pool STEPS\n");
		return 2;
	}
	mode_lazy = !strcmp(mode, "lazy");
	tl_init();
	m = tl_load_module("elementwise");
	f_fill = tl_func(m, "fill");
	f_axpy = tl_func(m, "axpy");
	f_mul = tl_func(m, "mul");
	f_scale = tl_func(m, "scale");
	f_tanh = tl_func(m, "tanh_kernel");
	if (!mode_lazy)
		f_extra = tl_func(m, "add"); /* lazy loads it in step 2; every mode launches it from then on */
	if (mode_lazy)
		unused = tl_load_module("linalg");
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	if (!strcmp(mode, "evmid"))
		CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	for (int i = 0; i < POOL; i++) {
		CHECK(cuMemAlloc(&pool[i], N * sizeof(float)));
		CHECK(cuMemsetD32(pool[i], 0, N));
	}
	for (int st = 0; st < steps; st++) {
		float loss;

		for (int i = 0; i < NARR; i++) {
			/* pool: arrays 0 and 1 stay (a framework's parameters), the others move: slot
			 * 2 + (i * 5 + st * 7 + st / 11) mod 11, no two arrays on one slot and a different
			 * assignment every step for 11 * 10 steps; the other modes: fixed slots */
			int slot = i;

			if (!strcmp(mode, "pool") && i >= 2)
				slot = 2 + (i * 5 + st * 7 + st / (POOL - 2)) % (POOL - 2);

			a[i] = pool[slot];
		}
		loss = step(a, st, mode);
		h = tl_hash(&loss, sizeof(loss), h);
	}
	for (int i = 0; i < POOL; i++)
		h = tl_hash_device(pool[i], N * sizeof(float), h);
	printf("fw_habits %s steps=%d checksum=%016llx\n", mode, steps, (unsigned long long)h);
	return 0;
}
