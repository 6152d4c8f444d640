/* rpl_loop.c - iteration-shaped driver-API programs for replay's tests, one per mode: each runs
 * a loop of windows (work, then the host reads a result) and prints a checksum of everything it
 * computed. They know nothing of cufold; with and without it the output must be identical.
 * usage: rpl_loop MODE [steps]   tests layer.
 *
 * Modes:
 *   train      forward, backward, optimizer per step; the loss copied to the host
 *   noparams   train, with a kernel that has no parameters after each parameter's update
 *              (kernelParams NULL and an empty list, in turn)
 *   alternate  two iteration shapes taking turns (train step / eval step)
 *   allocstep  every step allocates fresh buffers (pointers move every iteration)
 *   mismatch   a conditional extra kernel in the middle of some steps (and at the end of others)
 *   twostream  two streams joined by events inside each window, an event timed
 *   sidestream a side stream forked at the start of each step gets host-to-device transfers
 *              first, then the main stream its kernels; they run side by side until the join
 *   defstreams the legacy and the per-thread default streams
 *   owncapture the program captures its own graph of part of each step and launches it
 *   barrier    a barrier (nccl*) kernel in the middle of each window
 *   free       a buffer the loop references is freed and replaced mid-run
 *   pageable   host-to-device copies from pageable memory inside the window
 *   threads    four host threads, each its own stream and a shared one (under a lock)
 *   fork       forks in the middle of windows (the child leaves at once); the parent goes on
 *   exit       trains, then leaves with a step's work submitted and never synchronized
 *   churn      every call's arguments change every step (patching cannot pay for itself)
 *   capjoin    each step captures s1, and s2 joins the capture by waiting on an event recorded
 *              in it; the capture state of s2 is printed; unrelated work on s3 in between
 *   launches   every way to launch: kernelParams, an extra buffer, cuLaunchKernelEx with and
 *              without attributes, a CUkernel handle from a library, cooperative, 2-D copies
 *              and memsets, synchronous device-to-device copies and memsets
 *   poll       a second thread polls an event recorded halfway through each step, all the
 *              time; on even steps the issuing thread stops until that thread has seen the event
 *              complete (only a query can let it go on), on odd steps it polls its own stream
 *   pollown    CuPy's pinned copies: each step records an event after its first half, queries it
 *              once on the same thread (the answer only counted) and goes on with the step; on
 *              every third step it then spins on the event until complete */
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "app_time.h" /* APP_US=N: N us of host time before every enqueue */

#define N 1024
#define NP 8

static CUfunction f_fill, f_axpy, f_relu, f_scale, f_add, f_mul, f_reduce, f_nccl;
static CUfunction f_nop; /* noparams: a kernel with no parameters, else NULL */
static uint64_t h64 = TL_HASH_INIT;

static unsigned int blocks(int n)
{
	return (unsigned int)((n + 255) / 256);
}

static void launch(CUfunction f, int n, CUstream s, void **args)
{
	CHECK(cuLaunchKernel(f, blocks(n), 1, 1, 256, 1, 1, 0, s, args, NULL));
}

static void k_fill(CUdeviceptr x, float v, int n, CUstream s)
{
	void *a[] = {&x, &v, &n};

	launch(f_fill, n, s, a);
}

static void k_axpy(CUdeviceptr y, CUdeviceptr x, float al, int n, CUstream s)
{
	void *a[] = {&y, &x, &al, &n};

	launch(f_axpy, n, s, a);
}

static void k_scale(CUdeviceptr o, CUdeviceptr i, float sc, int n, CUstream s)
{
	void *a[] = {&o, &i, &sc, &n};

	launch(f_scale, n, s, a);
}

static void k_add(CUdeviceptr o, CUdeviceptr x, CUdeviceptr y, int n, CUstream s)
{
	void *a[] = {&o, &x, &y, &n};

	launch(f_add, n, s, a);
}

static void k_mul(CUdeviceptr o, CUdeviceptr x, CUdeviceptr y, int n, CUstream s)
{
	void *a[] = {&o, &x, &y, &n};

	launch(f_mul, n, s, a);
}

static void k_relu(CUdeviceptr o, CUdeviceptr i, int n, CUstream s)
{
	void *a[] = {&o, &i, &n};

	launch(f_relu, n, s, a);
}

static void k_reduce(CUdeviceptr o, CUdeviceptr i, int n, CUstream s)
{
	void *a[] = {&o, &i, &n};

	CHECK(cuLaunchKernel(f_reduce, 1, 1, 1, 256, 1, 1, 0, s, a, NULL));
}

/* Read the loss into the hash (the window's end: the host observes the device). */
static void observe(CUdeviceptr loss, CUstream s)
{
	float host = 0;

	CHECK(cuMemcpyDtoHAsync(&host, loss, sizeof(host), s));
	CHECK(cuStreamSynchronize(s));
	h64 = tl_hash(&host, sizeof(host), h64);
}

struct model {
	CUdeviceptr x, h, act, loss, param[NP], grad[NP], mom[NP];
};

static void model_alloc(struct model *m, CUstream s)
{
	CHECK(cuMemAlloc(&m->x, N * sizeof(float)));
	CHECK(cuMemAlloc(&m->h, N * sizeof(float)));
	CHECK(cuMemAlloc(&m->act, N * sizeof(float)));
	CHECK(cuMemAlloc(&m->loss, sizeof(float)));
	for (int p = 0; p < NP; p++) {
		CHECK(cuMemAlloc(&m->param[p], N * sizeof(float)));
		CHECK(cuMemAlloc(&m->grad[p], N * sizeof(float)));
		CHECK(cuMemAlloc(&m->mom[p], N * sizeof(float)));
		k_fill(m->param[p], 0.01f * (float)(p + 1), N, s);
		k_fill(m->mom[p], 0.0f, N, s);
	}
	k_fill(m->x, 0.5f, N, s);
}

static void model_hash(const struct model *m)
{
	for (int p = 0; p < NP; p++) {
		h64 = tl_hash_device(m->param[p], N * sizeof(float), h64);
		h64 = tl_hash_device(m->mom[p], N * sizeof(float), h64);
	}
	h64 = tl_hash_device(m->act, N * sizeof(float), h64);
}

/* One training step's work (no host observation); extra_at >= 0 inserts a conditional kernel
 * before that parameter's update (a step of another shape, differing in the middle). */
static void train_work_x(struct model *m, int step, CUstream s, int extra_at)
{
	CHECK(cuMemsetD32Async(m->h, 0, N, s));
	k_axpy(m->h, m->x, 0.25f + 0.01f * (float)(step % 7), N, s);
	k_relu(m->act, m->h, N, s);
	k_reduce(m->loss, m->act, N, s);
	for (int p = 0; p < NP; p++) {
		if (p == extra_at)
			k_scale(m->act, m->act, 0.5f, N, s);
		CHECK(cuMemsetD32Async(m->grad[p], 0, N, s));
		k_mul(m->grad[p], m->param[p], m->act, N, s);
		k_scale(m->mom[p], m->mom[p], 0.9f, N, s);
		k_add(m->mom[p], m->mom[p], m->grad[p], N, s);
		k_axpy(m->param[p], m->mom[p], -0.001f, N, s);
		if (f_nop) {
			void *none[1] = { NULL };

			CHECK(cuLaunchKernel(f_nop, 1, 1, 1, 32, 1, 1, 0, s, p % 2 ? none : NULL, NULL));
		}
	}
	CHECK(cuMemcpyDtoDAsync(m->x, m->act, N * sizeof(float), s));
}

static void train_work(struct model *m, int step, CUstream s)
{
	train_work_x(m, step, s, -1);
}

/* An evaluation step: a different shape. */
static void eval_work(struct model *m, CUstream s)
{
	k_relu(m->act, m->x, N, s);
	for (int p = 0; p < NP; p++)
		k_mul(m->h, m->param[p], m->act, N, s);
	k_reduce(m->loss, m->h, N, s);
}

static void mode_train(int steps, int kind)
{
	struct model m;
	CUstream s;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	model_alloc(&m, s);
	for (int step = 0; step < steps; step++) {
		if (kind == 1 && step % 2)
			eval_work(&m, s);
		else if (kind == 2 && step >= 4 && step % 4 == 1)
			train_work_x(&m, step, s, 5); /* the conditional kernel mid-window */
		else
			train_work(&m, step, s);
		if (kind == 2 && step >= 4 && step % 3 == 0)
			k_scale(m.act, m.act, 0.5f, N, s); /* the conditional extra kernel */
		if (kind == 2 && step >= 4 && step % 3 == 0)
			train_work(&m, step + 1, s);
		if (kind == 3 && step % 5 == 2) {
			/* a barrier kernel in the middle of the window */
			void *a[] = {&m.act, &(int){N}};

			CHECK(cuLaunchKernel(f_nccl, blocks(N), 1, 1, 256, 1, 1, 0, s, a, NULL));
			train_work(&m, step, s);
		}
		observe(m.loss, s);
	}
	model_hash(&m);
}

static void mode_noparams(int steps)
{
	static const char ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
				  ".visible .entry rl_nop()\n{\n\tret;\n}\n";
	CUmodule m;

	CHECK(cuModuleLoadData(&m, ptx));
	CHECK(cuModuleGetFunction(&f_nop, m, "rl_nop"));
	mode_train(steps, 0);
}

static void mode_allocstep(int steps)
{
	struct model m;
	CUstream s;
	CUdeviceptr old[4] = {0};

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	model_alloc(&m, s);
	for (int step = 0; step < steps; step++) {
		CUdeviceptr tmp, tmp2;

		/* fresh scratch every step; the previous ones are freed two steps later */
		CHECK(cuMemAlloc(&tmp, N * sizeof(float)));
		CHECK(cuMemAlloc(&tmp2, N * sizeof(float)));
		CHECK(cuMemsetD32Async(tmp, 0, N, s));
		k_axpy(tmp, m.x, 1.0f + (float)step, N, s);
		k_mul(tmp2, tmp, m.x, N, s);
		for (int p = 0; p < NP; p++) {
			k_axpy(m.param[p], tmp2, 0.001f, N, s);
			k_scale(tmp2, tmp2, 0.5f, N, s);
		}
		k_reduce(m.loss, tmp2, N, s);
		observe(m.loss, s);
		if (old[step % 4]) {
			CHECK(cuMemFree(old[step % 4]));
			old[step % 4] = 0;
		}
		if (step % 2)
			CHECK(cuMemFree(tmp));
		else
			old[step % 4] = tmp;
		CHECK(cuMemFree(tmp2));
	}
	model_hash(&m);
}

static void mode_sidestream(int steps)
{
	const size_t chunk = 1 << 20; /* 20 us over the host link: as long as a +20 us kernel */
	struct model m;
	CUstream s1, s2;
	CUevent fork, join;
	CUdeviceptr stage;
	float *host;

	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
	CHECK(cuMemAllocHost((void **)&host, chunk));
	CHECK(cuMemAlloc(&stage, chunk));
	for (size_t i = 0; i < chunk / sizeof(float); i++)
		host[i] = (float)(i % 97) * 0.01f;
	model_alloc(&m, s1);
	for (int step = 0; step < steps; step++) {
		k_relu(m.h, m.x, N, s1);
		CHECK(cuEventRecord(fork, s1));
		CHECK(cuStreamWaitEvent(s2, fork, 0));
		/* the side stream's transfers are issued first (as a data-loading or communication
		 * stream's), then the main stream's kernels: in eager execution the host link and the
		 * SMs work side by side */
		for (int r = 0; r < 24; r++)
			CHECK(cuMemcpyHtoDAsync(stage, host, chunk, s2));
		k_mul(m.grad[1], m.h, stage, N, s2);
		for (int r = 0; r < 24; r++) {
			k_mul(m.grad[0], m.param[0], m.h, N, s1);
			k_axpy(m.param[0], m.grad[0], -0.001f, N, s1);
		}
		CHECK(cuEventRecord(join, s2));
		CHECK(cuStreamWaitEvent(s1, join, 0));
		k_axpy(m.param[1], m.grad[1], -0.001f, N, s1);
		k_add(m.act, m.param[0], m.param[1], N, s1);
		k_reduce(m.loss, m.act, N, s1);
		k_scale(m.x, m.act, 0.5f, N, s1);
		observe(m.loss, s1);
	}
	model_hash(&m);
	CHECK(cuMemFreeHost(host));
}

static void mode_twostream(int steps)
{
	struct model m;
	CUstream s1, s2;
	CUevent e1, e2, t0, t1;

	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&e1, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&e2, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&t0, 0));
	CHECK(cuEventCreate(&t1, 0));
	model_alloc(&m, s1);
	for (int step = 0; step < steps; step++) {
		float ms = 0;

		CHECK(cuEventRecord(t0, s1));
		k_axpy(m.h, m.x, 0.5f, N, s1);
		k_relu(m.act, m.h, N, s1);
		CHECK(cuEventRecord(e1, s1));
		CHECK(cuStreamWaitEvent(s2, e1, 0));
		/* s2 works on half of the parameters while s1 does the rest */
		for (int p = 0; p < NP; p++) {
			CUstream s = p % 2 ? s2 : s1;

			k_mul(m.grad[p], m.param[p], m.act, N, s);
			k_axpy(m.param[p], m.grad[p], -0.001f, N, s);
		}
		CHECK(cuEventRecord(e2, s2));
		CHECK(cuStreamWaitEvent(s1, e2, 0));
		k_reduce(m.loss, m.act, N, s1);
		k_scale(m.x, m.act, 0.99f, N, s1);
		CHECK(cuEventRecord(t1, s1));
		observe(m.loss, s1);
		CHECK(cuEventSynchronize(t1));
		CHECK(cuEventElapsedTime(&ms, t0, t1));
		if (ms < 0)
			printf("negative elapsed time\n");
	}
	model_hash(&m);
}

static void mode_defstreams(int steps)
{
	struct model m;

	model_alloc(&m, CU_STREAM_LEGACY);
	for (int step = 0; step < steps; step++) {
		CUstream s = step % 3 == 2 ? CU_STREAM_PER_THREAD : 0;

		train_work(&m, step, s);
		k_scale(m.act, m.act, 1.01f, N, CU_STREAM_PER_THREAD);
		k_add(m.h, m.act, m.x, N, CU_STREAM_LEGACY);
		k_reduce(m.loss, m.h, N, 0);
		observe(m.loss, 0);
	}
	model_hash(&m);
}

static void mode_owncapture(int steps)
{
	struct model m;
	CUstream s, cs;
	CUgraph g;
	CUgraphExec ge;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
	model_alloc(&m, s);
	CHECK(cuStreamSynchronize(s));
	CHECK(cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_GLOBAL));
	for (int p = 0; p < NP; p++)
		k_scale(m.mom[p], m.mom[p], 0.5f, N, cs);
	CHECK(cuStreamEndCapture(cs, &g));
	CHECK(cuGraphInstantiate(&ge, g, 0));
	for (int step = 0; step < steps; step++) {
		train_work(&m, step, s);
		CHECK(cuStreamSynchronize(s));
		CHECK(cuGraphLaunch(ge, s));
		train_work(&m, step + 1, s);
		if (step % 4 == 1) {
			/* capture again mid-run, with work of the loop's shape inside */
			CUgraph g2;
			CUgraphExec ge2;

			CHECK(cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_GLOBAL));
			train_work(&m, step, cs);
			CHECK(cuStreamEndCapture(cs, &g2));
			CHECK(cuGraphInstantiate(&ge2, g2, 0));
			CHECK(cuGraphLaunch(ge2, s));
			CHECK(cuStreamSynchronize(s));
			CHECK(cuGraphExecDestroy(ge2));
			CHECK(cuGraphDestroy(g2));
		}
		observe(m.loss, s);
	}
	model_hash(&m);
}

static void mode_free(int steps)
{
	struct model m;
	CUstream s;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	model_alloc(&m, s);
	for (int step = 0; step < steps; step++) {
		train_work(&m, step, s);
		observe(m.loss, s);
		if (step % 6 == 4) {
			/* replace a referenced buffer, keeping its contents */
			CUdeviceptr nb;

			CHECK(cuMemAlloc(&nb, N * sizeof(float)));
			CHECK(cuMemcpyDtoD(nb, m.mom[3], N * sizeof(float)));
			CHECK(cuCtxSynchronize());
			CHECK(cuMemFree(m.mom[3]));
			m.mom[3] = nb;
		}
	}
	model_hash(&m);
}

static void mode_pageable(int steps)
{
	struct model m;
	CUstream s;
	float *host = malloc(N * sizeof(float));

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	model_alloc(&m, s);
	for (int step = 0; step < steps; step++) {
		tl_fill_random(host, N, (uint32_t)step + 1);
		CHECK(cuMemcpyHtoDAsync(m.x, host, N * sizeof(float), s));
		/* the program reuses its buffer at once: the copy must have taken the old bytes */
		tl_fill_random(host, N, (uint32_t)step + 1000);
		train_work(&m, step, s);
		CHECK(cuMemcpyHtoDAsync(m.h, host, N * sizeof(float), s));
		memset(host, 0, N * sizeof(float));
		k_add(m.act, m.act, m.h, N, s);
		k_reduce(m.loss, m.act, N, s);
		observe(m.loss, s);
	}
	free(host);
	model_hash(&m);
}

static void mode_fork(int steps)
{
	struct model m;
	CUstream s;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	model_alloc(&m, s);
	for (int step = 0; step < steps; step++) {
		train_work(&m, step, s);
		if (step % 3 == 2) {
			/* work is in flight (or kept by an interposer) when the process forks */
			pid_t pid = fork();
			int status = 0;

			if (pid == 0)
				_exit(0);
			if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
				printf("fork failed\n");
		}
		observe(m.loss, s);
	}
	model_hash(&m);
}

/* Leaves without synchronizing: what it submitted must still run (SIMCUDA_STATS counts it). */
static void mode_exit(int steps)
{
	struct model m;
	CUstream s;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	model_alloc(&m, s);
	for (int step = 0; step < steps; step++) {
		train_work(&m, step, s);
		observe(m.loss, s);
	}
	model_hash(&m);
	train_work(&m, steps, s);
}

static void mode_churn(int steps)
{
	struct model m;
	CUstream s;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	model_alloc(&m, s);
	for (int step = 0; step < steps; step++) {
		for (int p = 0; p < NP; p++) {
			k_scale(m.grad[p], m.param[p], 1.0f + 0.001f * (float)step, N, s);
			k_axpy(m.param[p], m.grad[p], -0.0001f * (float)(step + p), N, s);
		}
		k_reduce(m.loss, m.param[step % NP], N, s);
		observe(m.loss, s);
	}
	model_hash(&m);
}

static void mode_launches(int steps)
{
	struct model m;
	CUstream s;
	CUlibrary lib;
	CUkernel kk;
	char *ptx = tl_read_ptx("elementwise");
	CUdeviceptr pitched;
	size_t pitch = 0;

	/* a blocking stream: the synchronous copy and memset on the legacy stream below are
	 * ordered with its work (on a non-blocking stream they would race with it) */
	CHECK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
	model_alloc(&m, s);
	CHECK(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
	free(ptx);
	CHECK(cuLibraryGetKernel(&kk, lib, "scale"));
	CHECK(cuMemAllocPitch(&pitched, &pitch, 64 * sizeof(float), 16, 4));
	for (int step = 0; step < steps; step++) {
		int n = N;
		float al = 0.001f * (float)(step % 3), sc = 0.99f;
		struct {
			CUdeviceptr y, x;
			float a;
			int n;
		} buf = {m.param[0], m.param[1], al, n};
		size_t bsize = sizeof(buf);
		void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bsize,
				 CU_LAUNCH_PARAM_END};
		void *ax[] = {&m.param[2], &m.param[3], &al, &n};
		void *scl[] = {&m.param[4], &m.param[4], &sc, &n};
		CUlaunchConfig cfg;
		CUlaunchAttribute attr;
		CUDA_MEMCPY2D c2;

		train_work(&m, step, s);
		CHECK(cuLaunchKernel(f_axpy, blocks(N), 1, 1, 256, 1, 1, 0, s, NULL, extra));
		memset(&cfg, 0, sizeof(cfg));
		cfg.gridDimX = blocks(N);
		cfg.gridDimY = cfg.gridDimZ = 1;
		cfg.blockDimX = 256;
		cfg.blockDimY = cfg.blockDimZ = 1;
		cfg.hStream = s;
		CHECK(cuLaunchKernelEx(&cfg, f_axpy, ax, NULL));
		memset(&attr, 0, sizeof(attr));
		attr.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
		attr.value.priority = 0;
		cfg.attrs = &attr;
		cfg.numAttrs = 1;
		CHECK(cuLaunchKernelEx(&cfg, f_axpy, ax, NULL));
		CHECK(cuLaunchKernel((CUfunction)kk, blocks(N), 1, 1, 256, 1, 1, 0, s, scl, NULL));
		CHECK(cuLaunchCooperativeKernel(f_scale, blocks(N), 1, 1, 256, 1, 1, 0, s, scl));
		CHECK(cuMemsetD2D32Async(pitched, pitch, (unsigned int)step, 64, 16, s));
		memset(&c2, 0, sizeof(c2));
		c2.srcMemoryType = CU_MEMORYTYPE_DEVICE;
		c2.srcDevice = pitched;
		c2.srcPitch = pitch;
		c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		c2.dstDevice = m.grad[5];
		c2.dstPitch = 64 * sizeof(float);
		c2.WidthInBytes = 16 * sizeof(float);
		c2.Height = 16;
		CHECK(cuMemcpy2DAsync(&c2, s));
		CHECK(cuMemcpyDtoD(m.grad[6], m.param[6], N * sizeof(float)));
		CHECK(cuMemsetD32(m.grad[7], 0x3f800000u, N));
		k_add(m.param[7], m.param[7], m.grad[7], N, s);
		k_add(m.param[5], m.param[5], m.grad[5], N, s);
		observe(m.loss, s);
	}
	CHECK(cuCtxSynchronize());
	h64 = tl_hash_device(m.grad[5], N * sizeof(float), h64);
	h64 = tl_hash_device(m.grad[6], N * sizeof(float), h64);
	model_hash(&m);
}

/* ------------------------------------------------------------------ captures joined by waits */

static void mode_capjoin(int steps)
{
	CUstream s1, s2, s3;
	CUevent e, e2;
	CUdeviceptr a, b;

	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&e2, CU_EVENT_DISABLE_TIMING));
	CHECK(cuMemAlloc(&a, N * sizeof(float)));
	CHECK(cuMemAlloc(&b, N * sizeof(float)));
	for (int step = 0; step < steps; step++) {
		CUgraph g;
		CUgraphExec x;
		CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
		float out[4];

		CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_RELAXED));
		k_fill(a, (float)step, N, s1);
		CHECK(cuEventRecord(e, s1));
		CHECK(cuStreamWaitEvent(s2, e, 0)); /* s2 joins the capture, now */
		CHECK(cuStreamIsCapturing(s2, &cs));
		printf("step %d: s2 capture status %d\n", step, (int)cs);
		for (int k = 0; k < 8; k++)         /* unrelated work, a window of its own shape */
			k_fill(b, (float)(step + k), N, s3);
		k_scale(a, a, 2.0f, N, s2);         /* captured into the graph through s2 */
		CHECK(cuEventRecord(e2, s2));
		CHECK(cuStreamWaitEvent(s1, e2, 0)); /* join back */
		CHECK(cuStreamEndCapture(s1, &g));
		CHECK(cuGraphInstantiate(&x, g, 0));
		CHECK(cuGraphLaunch(x, s1));
		CHECK(cuStreamSynchronize(s1));
		CHECK(cuStreamSynchronize(s3));
		CHECK(cuMemcpyDtoH(out, a, sizeof(out)));
		h64 = tl_hash(out, sizeof(out), h64);
		CHECK(cuGraphExecDestroy(x));
		CHECK(cuGraphDestroy(g));
	}
	h64 = tl_hash_device(b, N * sizeof(float), h64);
}

/* ------------------------------------------------------------------ threads */

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext ctx;
static CUstream shared;
static CUdeviceptr shared_acc;
static int thread_steps;

struct worker {
	int id;
	struct model m;
	CUstream s;
	uint64_t hash;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	CHECK(cuCtxSetCurrent(ctx));
	for (int step = 0; step < thread_steps; step++) {
		float host = 0;

		train_work(&w->m, step + w->id, w->s);
		CHECK(cuMemcpyDtoHAsync(&host, w->m.loss, sizeof(host), w->s));
		CHECK(cuStreamSynchronize(w->s));
		w->hash = tl_hash(&host, sizeof(host), w->hash);
		/* the shared stream: calls from all threads, ordered by the program's lock */
		pthread_mutex_lock(&shared_lock);
		k_add(shared_acc, shared_acc, w->m.act, N, shared);
		k_scale(shared_acc, shared_acc, 0.5f, N, shared);
		CHECK(cuStreamSynchronize(shared));
		pthread_mutex_unlock(&shared_lock);
	}
	return NULL;
}

static void mode_threads(int steps)
{
	struct worker w[4];
	pthread_t th[4];

	CHECK(cuCtxGetCurrent(&ctx));
	CHECK(cuStreamCreate(&shared, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&shared_acc, N * sizeof(float)));
	CHECK(cuMemsetD32(shared_acc, 0, N));
	thread_steps = steps;
	for (int i = 0; i < 4; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].id = i;
		w[i].hash = TL_HASH_INIT;
		CHECK(cuStreamCreate(&w[i].s, CU_STREAM_NON_BLOCKING));
		model_alloc(&w[i].m, w[i].s);
		CHECK(cuStreamSynchronize(w[i].s));
	}
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 4; i++) {
		h64 = tl_hash(&w[i].hash, sizeof(w[i].hash), h64);
		model_hash(&w[i].m);
	}
	/* the shared accumulator depends on the threads' order: print only that it is finite */
}

static CUevent poll_ev;         /* recorded halfway through each step */
static CUcontext poll_ctx;      /* the poller's context */
static int poll_state;          /* 0 idle, 1 the issuer waits for poll_ev, 2 seen complete, 3 quit */

static void *poller_main(void *arg)
{
	(void)arg;
	CHECK(cuCtxSetCurrent(poll_ctx));
	for (;;) {
		int st = __atomic_load_n(&poll_state, __ATOMIC_ACQUIRE);
		CUresult rc;

		if (st == 3)
			break;
		rc = cuEventQuery(poll_ev); /* as a watchdog: whatever the issuer is doing */
		if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_READY)
			CHECK(rc);
		if (st == 1 && rc == CUDA_SUCCESS)
			__atomic_store_n(&poll_state, 2, __ATOMIC_RELEASE);
		usleep(2);
	}
	return NULL;
}

static void mode_poll(int steps)
{
	struct model m;
	pthread_t th;
	CUstream s;
	CUresult rc;

	CHECK(cuCtxGetCurrent(&poll_ctx));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&poll_ev, CU_EVENT_DISABLE_TIMING));
	model_alloc(&m, s);
	CHECK(cuEventRecord(poll_ev, s));
	CHECK(cuStreamSynchronize(s));
	pthread_create(&th, NULL, poller_main, NULL);
	for (int step = 0; step < steps; step++) {
		train_work(&m, step, s);
		CHECK(cuEventRecord(poll_ev, s));
		if (step % 2) {
			while ((rc = cuStreamQuery(s)) == CUDA_ERROR_NOT_READY)
				;
			CHECK(rc);
		} else {
			__atomic_store_n(&poll_state, 1, __ATOMIC_RELEASE);
			while (__atomic_load_n(&poll_state, __ATOMIC_ACQUIRE) != 2)
				usleep(2);
			__atomic_store_n(&poll_state, 0, __ATOMIC_RELEASE);
		}
		k_scale(m.act, m.act, 0.5f, N, s); /* the step goes on after the wait */
		observe(m.loss, s);
	}
	__atomic_store_n(&poll_state, 3, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	model_hash(&m);
}

static void mode_pollown(int steps)
{
	struct model m;
	CUstream s;
	CUevent ev;
	CUresult rc;

	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
	model_alloc(&m, s);
	for (int step = 0; step < steps; step++) {
		train_work(&m, step, s);
		CHECK(cuEventRecord(ev, s));
		/* as CuPy's pinned memory pool: is the staging buffer free yet? (the answer depends
		 * on timing: not in the output) */
		rc = cuEventQuery(ev);
		if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_READY)
			CHECK(rc);
		if (step % 3 == 2) {
			while ((rc = cuEventQuery(ev)) == CUDA_ERROR_NOT_READY)
				;
			CHECK(rc);
		}
		k_relu(m.act, m.h, N, s); /* the step goes on after the query */
		k_scale(m.act, m.act, 0.5f, N, s);
		k_reduce(m.loss, m.act, N, s);
		observe(m.loss, s);
	}
	CHECK(cuEventDestroy(ev));
	model_hash(&m);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "train";
	int steps = argc > 2 ? atoi(argv[2]) : 12;
	CUmodule elem, lin, nccl;

	tl_init();
	elem = tl_load_module("elementwise");
	lin = tl_load_module("linalg");
	nccl = tl_load_module("nccl");
	f_fill = tl_func(elem, "fill");
	f_axpy = tl_func(elem, "axpy");
	f_relu = tl_func(elem, "relu");
	f_scale = tl_func(elem, "scale");
	f_add = tl_func(elem, "add");
	f_mul = tl_func(elem, "mul");
	f_reduce = tl_func(lin, "reduce_sum");
	f_nccl = tl_func(nccl, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
	if (!strcmp(mode, "train"))
		mode_train(steps, 0);
	else if (!strcmp(mode, "noparams"))
		mode_noparams(steps);
	else if (!strcmp(mode, "alternate"))
		mode_train(steps, 1);
	else if (!strcmp(mode, "mismatch"))
		mode_train(steps, 2);
	else if (!strcmp(mode, "barrier"))
		mode_train(steps, 3);
	else if (!strcmp(mode, "allocstep"))
		mode_allocstep(steps);
	else if (!strcmp(mode, "twostream"))
		mode_twostream(steps);
	else if (!strcmp(mode, "sidestream"))
		mode_sidestream(steps);
	else if (!strcmp(mode, "defstreams"))
		mode_defstreams(steps);
	else if (!strcmp(mode, "owncapture"))
		mode_owncapture(steps);
	else if (!strcmp(mode, "free"))
		mode_free(steps);
	else if (!strcmp(mode, "pageable"))
		mode_pageable(steps);
	else if (!strcmp(mode, "threads"))
		mode_threads(steps);
	else if (!strcmp(mode, "fork"))
		mode_fork(steps);
	else if (!strcmp(mode, "exit"))
		mode_exit(steps);
	else if (!strcmp(mode, "churn"))
		mode_churn(steps);
	else if (!strcmp(mode, "launches"))
		mode_launches(steps);
	else if (!strcmp(mode, "capjoin"))
		mode_capjoin(steps);
	else if (!strcmp(mode, "poll"))
		mode_poll(steps);
	else if (!strcmp(mode, "pollown"))
		mode_pollown(steps);
	else {
		fprintf(stderr, "rpl_loop: unknown mode %s\n", mode);
		return 2;
	}
	printf("rpl_loop %s steps=%d checksum=%016llx\n", mode, steps, (unsigned long long)h64);
	return 0;
}
