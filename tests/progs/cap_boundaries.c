/* cap_boundaries.c - one step of GPU work before each kind of call that ends a capture window,
 * in a fixed order, so tests/e2e/capture_boundaries.sh can check from cufold's trace and report
 * that every window closed where it should, by what, and with how many ops. It knows nothing of
 * cufold; it prints a checksum of everything it computed.
 * usage: cap_boundaries [full]   (full: also 65536 memsets in one window)   tests layer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

#define N 1024

static CUfunction f_fill, f_nccl;
static CUstream s;
static CUdeviceptr buf, acc;
static int n = N;
static float step_value;

/* One op: buf[i] = step value (each step a different one, so a lost step changes the output). */
static void work(void)
{
	void *args[] = { &buf, &step_value, &n };

	step_value += 1.0f;
	CHECK(cuLaunchKernel(f_fill, N / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

/* Fold buf into acc on the stream: acc[0..3] += buf[0..3] by copies through a second buffer is
 * overkill; a device-to-device copy of buf's head into acc at a step-dependent offset will do. */
static void keep(int step)
{
	CHECK(cuMemcpyDtoDAsync(acc + (size_t)step * sizeof(float), buf, sizeof(float), s));
}

int main(int argc, char **argv)
{
	int full = argc > 1 && strcmp(argv[1], "full") == 0;
	CUmodule elem, nccl, extra_mod;
	CUcontext ctx, popped;
	CUstream tmp_stream, cap_stream;
	CUevent e;
	CUdeviceptr tmp, tmp2;
	CUgraph graph;
	CUgraphExec exec;
	float host[4], pinned_copy[4];
	uint64_t h = TL_HASH_INIT;
	int step = 0;
	pid_t pid;
	CUresult rc;

	ctx = tl_init();
	elem = tl_load_module("elementwise");
	nccl = tl_load_module("nccl");
	extra_mod = tl_load_module("linalg");
	f_fill = tl_func(elem, "fill");
	f_nccl = tl_func(nccl, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&tmp_stream, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&cap_stream, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&e, CU_EVENT_DEFAULT));
	CHECK(cuMemAlloc(&buf, N * sizeof(float)));
	CHECK(cuMemAlloc(&acc, 64 * sizeof(float)));
	CHECK(cuMemAlloc(&tmp, 64));
	CHECK(cuMemAlloc(&tmp2, 64));
	CHECK(cuMemsetD32(acc, 0, 64));

	/* SYNC x3: stream, event, context (setting the same context, and pure queries, are not
	 * boundaries) */
	work();
	CHECK(cuCtxSetCurrent(ctx));
	{
		CUcontext cur;
		unsigned int flags;
		int attr;
		CUstreamCaptureStatus st;
		CUdeviceptr base;
		size_t size, free_b, total_b;
		CUstream extra_stream;

		CHECK(cuCtxGetCurrent(&cur));
		CHECK(cuStreamGetFlags(s, &flags));
		CHECK(cuStreamIsCapturing(s, &st));
		CHECK(cuFuncGetAttribute(&attr, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f_fill));
		CHECK(cuDeviceGetAttribute(&attr, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
		CHECK(cuMemGetAddressRange(&base, &size, buf + 8));
		CHECK(cuMemGetInfo(&free_b, &total_b));
		CHECK(cuStreamCreate(&extra_stream, CU_STREAM_NON_BLOCKING));
		(void)extra_stream;
	}
	keep(step++);
	CHECK(cuStreamSynchronize(s));
	work();
	CHECK(cuEventRecord(e, s));
	CHECK(cuEventSynchronize(e));
	work();
	keep(step++);
	CHECK(cuCtxSynchronize());
	/* No boundary: a query never ends a window, nor does a synchronize of a stream or an event
	 * that has no work in it, nor a free of memory no op of the window names. Then a
	 * synchronize of the stream that has work ends it (SYNC with 1 op). */
	work();
	rc = cuStreamQuery(s);
	if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_READY)
		CHECK(rc);
	CHECK(cuStreamSynchronize(tmp_stream));
	CHECK(cuEventSynchronize(e));
	CHECK(cuMemFree(tmp));
	CHECK(cuStreamSynchronize(s));
	work();
	CHECK(cuEventRecord(e, s));
	while ((rc = cuEventQuery(e)) == CUDA_ERROR_NOT_READY)
		;
	CHECK(rc);
	/* HOST_COPY x2: an asynchronous copy into host memory, a synchronous one */
	work();
	CHECK(cuMemcpyDtoHAsync(host, buf, sizeof(host), s));
	CHECK(cuStreamSynchronize(s));
	h = tl_hash(host, sizeof(host), h);
	work();
	CHECK(cuMemcpyDtoH(pinned_copy, buf, sizeof(pinned_copy)));
	h = tl_hash(pinned_copy, sizeof(pinned_copy), h);
	/* FREE: of memory an op of the window names */
	work();
	keep(step++);
	CHECK(cuMemsetD32Async(tmp2, 7, 16, s));
	CHECK(cuMemFree(tmp2));
	/* MODULE_UNLOAD: of a module the window runs (unloading one it does not run ends no
	 * window: tests/e2e/shim_fw_habits.sh) */
	work();
	{
		CUfunction f_sum = tl_func(extra_mod, "reduce_sum");
		CUdeviceptr out = acc + 63 * sizeof(float);
		void *args[] = { &out, &buf, &n };

		CHECK(cuLaunchKernel(f_sum, 1, 1, 1, 256, 1, 1, 0, s, args, NULL));
	}
	CHECK(cuModuleUnload(extra_mod));
	/* CONTEXT x2: push, then pop */
	work();
	CHECK(cuCtxPushCurrent(ctx));
	work();
	CHECK(cuCtxPopCurrent(&popped));
	/* DESTROY */
	work();
	CHECK(cuStreamDestroy(tmp_stream));
	/* CAPTURE: the captured launch is the program's own graph, not recorded by cufold */
	work();
	keep(step++);
	CHECK(cuStreamBeginCapture(cap_stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	{
		float v = 100.0f;
		void *args[] = { &buf, &v, &n };

		CHECK(cuLaunchKernel(f_fill, N / 256, 1, 1, 256, 1, 1, 0, cap_stream, args, NULL));
	}
	CHECK(cuStreamEndCapture(cap_stream, &graph));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuGraphInstantiate(&exec, graph, 0));
	CHECK(cuGraphLaunch(exec, cap_stream));
	CHECK(cuStreamSynchronize(cap_stream));
	CHECK(cuMemcpyDtoD(acc + 60 * sizeof(float), buf, sizeof(float)));
	/* BARRIER: a collective-like kernel ends the window and runs eagerly */
	work();
	{
		void *args[] = { &buf, &n };

		CHECK(cuLaunchKernel(f_nccl, N / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
	}
	keep(step++);
	/* OPAQUE: a launch the driver refuses (kernelParams and extra together) */
	work();
	{
		void *args[] = { &buf, &step_value, &n };
		void *extra[] = { CU_LAUNCH_PARAM_END };

		rc = cuLaunchKernel(f_fill, 1, 1, 1, 32, 1, 1, 0, s, args, extra);
		printf("both kernelParams and extra: %s\n", rc == CUDA_ERROR_INVALID_VALUE ? "refused" : "accepted?");
	}
	/* UNMODELED */
	work();
	CHECK(cuFuncSetCacheConfig(f_fill, CU_FUNC_CACHE_PREFER_NONE));
	/* FULL: more ops than one window holds */
	if (full) {
		for (int i = 0; i < 65536; i++)
			CHECK(cuMemsetD32Async(acc + 63 * sizeof(float), (unsigned int)i, 1, s));
		CHECK(cuStreamSynchronize(s));
	}
	/* FORK: the child leaves at once */
	work();
	keep(step++);
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	/* the results */
	h = tl_hash_device(acc, 64 * sizeof(float), h);
	h = tl_hash_device(buf, N * sizeof(float), h);
	printf("cap_boundaries steps=%d full=%d checksum=%016llx\n", step, full, (unsigned long long)h);
	fflush(stdout);
	/* EXIT: work left in the last window */
	work();
	return 0;
}
