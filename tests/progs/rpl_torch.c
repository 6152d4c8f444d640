/* rpl_torch.c - PyTorch's habits of calling the driver, in plain driver-API C, so that what keeps
 * its steps from replaying is tested without installing PyTorch (issue 25; tests/e2e/
 * replay_torch_habits.sh). Each mode is one habit measured on tests/clients/torch_*.py in
 * machine-code mode; the program prints a checksum of everything it computed, which must be the
 * same with and without cufold. usage: rpl_torch MODE [steps]   tests layer.
 *
 * Modes:
 *   tocopy   each step moves its batch to the device as PyTorch's x.to("cuda") of a pageable
 *            tensor does: one cuMemcpyHtoDAsync and one cuStreamSynchronize per tensor (8
 *            tensors), then the step's kernels, then loss.item() (copy to host, synchronize).
 *            cufold's report on torch_nogemm.py shows these one-copy windows ended by SYNC as
 *            eager work (32 at set-up there; every step in a loop that moves its batch per step).
 *   steady   the same step with the batch already on the device (torch_nogemm.py's steady state:
 *            every step replayed), the reference for tocopy.
 *   asyncfree the same step as steady with every activation taken from and given back to a
 *            stream-ordered pool (cuMemAllocAsync / cuMemFreeAsync on the step's stream), as
 *            PyTorch's PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync allocator does: measured on
 *            torch_nogemm.py, every cuMemFreeAsync ended cufold's window (FREE), 0.5 % of ops
 *            replayed, 412 host submissions a step with and without cufold. Each temporary is
 *            read by a kernel replay defers, then freed, then the next layer's is allocated:
 *            the checksum is wrong if the free reaches the driver before that kernel.
 *   sidefree the same as asyncfree with each temporary's last use on a side stream (joined by
 *            events, as PyTorch's record_stream does), where it is freed: the free on the side
 *            stream must follow that stream's deferred kernel, not only the main stream's.
 *   ptfree   asyncfree on the per-thread default stream (CU_STREAM_PER_THREAD): its ops and
 *            frees are issued in place, never held (no other thread may name that stream).
 *   setattr  steady with each layer's two kernels launched with 60 KiB of dynamic shared memory,
 *            each preceded by setting the kernel's MAX_DYNAMIC_SHARED_SIZE_BYTES to 64 KiB, as the
 *            CUDA runtime inside PyTorch does (cudaFuncSetAttribute before every launch of such a
 *            kernel): mul as a CUfunction (cuFuncSetAttribute), relu as a CUkernel of a library
 *            (cuKernelSetAttribute, launched through the handle). Measured on
 *            torch_transformer.py: every cuKernelSetAttribute ended cufold's window, one
 *            in the middle of each step. One step in the middle sets 80 KiB instead (a real
 *            change, which must still end the window); the step after sets 64 KiB again.
 *   manyfree steady with sixteen stream-ordered temporaries allocated and freed after every launch
 *            (cuMemAllocAsync / cuMemFreeAsync on the step's stream): PyTorch with cudaMallocAsync
 *            frees about 1.1 tensors per op, and cufold held at most 64 frees behind a segment,
 *            so a 64-op segment filled the buffer every step and ended replay's window there
 *            (torch_nogemm.py: 24 % of ops replayed). The frees are held behind deferred work
 *            and must still follow it (the checksum).
 *   getkernel steady with every launch through a library's CUkernel handle asked for twice with
 *            cuLibraryGetKernel right before it, as PyTorch's CUDA runtime does (torch_nogemm.py:
 *            4 asks a launch): each ask is a call into cufold between two launches, which must
 *            neither forget the function lookups nor keep replay's armed lane off. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define N 1024
#define NT 8 /* tensors in a batch */
#define NL 6 /* layers of the step */

static CUfunction f_axpy, f_relu, f_mul, f_scale;
static CUkernel k_relu;    /* setattr: relu as a library's kernel */
static int setattr_bytes;  /* setattr: the value set before each launch, 0 when not that mode */
static bool manyfree;      /* manyfree: sixteen pool temporaries freed after every launch */
static CUlibrary klib;     /* getkernel: every launch through this library's kernel handles */
static CUstream side;      /* sidefree: the stream of each temporary's last use and free */
static CUevent ev_in, ev_out; /* sidefree: main -> side and side -> main */
static uint64_t h64 = TL_HASH_INIT;

static void launch(CUfunction f, CUstream s, void **args)
{
	if (klib) { /* getkernel: the module's function by name, as the library's kernel */
		const char *name = f == f_axpy ? "axpy" : f == f_relu ? "relu" : f == f_mul ? "mul" : "scale";
		CUkernel k;

		CHECK(cuLibraryGetKernel(&k, klib, name));
		CHECK(cuLibraryGetKernel(&k, klib, name));
		f = (CUfunction)k;
	}
	CHECK(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
	for (int i = 0; manyfree && i < 16; i++) {
		CUdeviceptr t;

		CHECK(cuMemAllocAsync(&t, 256, s));
		CHECK(cuMemFreeAsync(t, s));
	}
}

/* One training-shaped step on the batch x[0..NT): forward, backward-ish, update, loss. With
 * pool, each layer's product goes through a temporary of the stream-ordered pool, allocated and
 * freed on s around its two uses (a caching allocator's habit, done by the driver). */
static void step(CUdeviceptr *x, CUdeviceptr *w, CUdeviceptr act, CUdeviceptr loss, CUstream s, bool pool)
{
	int n = N;
	float lr = -0.01f, half = 0.5f, one = 1.0f;

	for (int l = 0; l < NL; l++) {
		CUdeviceptr t = act;
		void *a1[] = { &t, &x[l % NT], &w[l], &n };
		void *a2[] = { &act, &t, &n };

		if (pool)
			CHECK(cuMemAllocAsync(&t, N * sizeof(float), s));
		if (setattr_bytes) {
			unsigned int smem = 60 * 1024;

			CHECK(cuFuncSetAttribute(f_mul, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, setattr_bytes));
			CHECK(cuLaunchKernel(f_mul, N / 256, 1, 1, 256, 1, 1, smem, s, a1, NULL));
			CHECK(cuKernelSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, setattr_bytes, k_relu, 0));
			CHECK(cuLaunchKernel((CUfunction)k_relu, N / 256, 1, 1, 256, 1, 1, smem, s, a2, NULL));
			continue;
		}
		launch(f_mul, s, a1);
		launch(f_relu, s, a2);
		if (pool && side) {
			void *a3[] = { &act, &t, &one, &n };

			CHECK(cuEventRecord(ev_in, s));
			CHECK(cuStreamWaitEvent(side, ev_in, 0));
			launch(f_axpy, side, a3);
			CHECK(cuMemFreeAsync(t, side));
			CHECK(cuEventRecord(ev_out, side));
			CHECK(cuStreamWaitEvent(s, ev_out, 0));
		} else if (pool) {
			void *a3[] = { &act, &t, &one, &n };

			launch(f_axpy, s, a3);
			CHECK(cuMemFreeAsync(t, s));
		}
	}
	for (int l = NL - 1; l >= 0; l--) {
		void *a[] = { &w[l], &act, &lr, &n };

		launch(f_axpy, s, a);
	}
	{
		void *a[] = { &loss, &act, &half, &n };

		launch(f_scale, s, a);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "tocopy";
	int steps = argc > 2 ? atoi(argv[2]) : 12;
	bool tocopy = !strcmp(mode, "tocopy"), sidefree = !strcmp(mode, "sidefree");
	bool ptfree = !strcmp(mode, "ptfree"), pool = sidefree || ptfree || !strcmp(mode, "asyncfree");
	bool setattr = !strcmp(mode, "setattr"), getkernel = !strcmp(mode, "getkernel");
	CUdeviceptr x[NT], w[NL], act, loss;
	static float host[NT][N];
	CUmodule elem;
	CUstream s = NULL;

	manyfree = !strcmp(mode, "manyfree");
	if (!tocopy && !pool && !setattr && !manyfree && !getkernel && strcmp(mode, "steady")) {
		fprintf(stderr, "usage: rpl_torch tocopy|steady|asyncfree|sidefree|ptfree|setattr|manyfree|getkernel "
				"[steps]\n");
		return 2;
	}
	if (ptfree)
		s = CU_STREAM_PER_THREAD;
	tl_init();
	if (sidefree) {
		CHECK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
		CHECK(cuEventCreate(&ev_in, CU_EVENT_DISABLE_TIMING));
		CHECK(cuEventCreate(&ev_out, CU_EVENT_DISABLE_TIMING));
	}
	elem = tl_load_module("elementwise");
	f_axpy = tl_func(elem, "axpy");
	f_relu = tl_func(elem, "relu");
	f_mul = tl_func(elem, "mul");
	f_scale = tl_func(elem, "scale");
	if (setattr || getkernel) {
		char *ptx = tl_read_ptx("elementwise");
		CUlibrary lib;

		CHECK(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
		CHECK(cuLibraryGetKernel(&k_relu, lib, "relu"));
		free(ptx);
		if (getkernel)
			klib = lib;
	}
	CHECK(cuMemAlloc(&act, N * sizeof(float)));
	CHECK(cuMemAlloc(&loss, N * sizeof(float)));
	for (int l = 0; l < NL; l++) {
		CHECK(cuMemAlloc(&w[l], N * sizeof(float)));
		tl_fill_random(host[0], N, 100u + (uint32_t)l);
		CHECK(cuMemcpyHtoD(w[l], host[0], N * sizeof(float)));
	}
	for (int t = 0; t < NT; t++) {
		CHECK(cuMemAlloc(&x[t], N * sizeof(float)));
		tl_fill_random(host[t], N, 1u + (uint32_t)t);
		CHECK(cuMemcpyHtoD(x[t], host[t], N * sizeof(float)));
	}
	for (int i = 0; i < steps; i++) {
		float l0 = 0;

		if (setattr) /* one step in the middle changes the value, the next changes it back */
			setattr_bytes = (i == steps / 2 ? 80 : 64) * 1024;
		if (tocopy) {
			for (int t = 0; t < NT; t++) { /* x.to("cuda"), non_blocking=False, pageable */
				tl_fill_random(host[t], N, 1000u * (uint32_t)i + (uint32_t)t);
				CHECK(cuMemcpyHtoDAsync(x[t], host[t], N * sizeof(float), s));
				CHECK(cuStreamSynchronize(s));
			}
		}
		step(x, w, act, loss, s, pool);
		CHECK(cuMemcpyDtoHAsync(&l0, loss, sizeof(l0), s)); /* loss.item() */
		CHECK(cuStreamSynchronize(s));
		h64 = tl_hash(&l0, sizeof(l0), h64);
	}
	for (int l = 0; l < NL; l++)
		h64 = tl_hash_device(w[l], N * sizeof(float), h64);
	printf("rpl_torch %s steps=%d hash=%016llx\n", mode, steps, (unsigned long long)h64);
	return 0;
}
