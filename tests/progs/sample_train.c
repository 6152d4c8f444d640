/* sample_train.c - a small training-loop-shaped driver-API program: per step an input copy,
 * forward (gemm, relu), a feature split into slices and glued back with copies, backward-like
 * elementwise work, a memset of every gradient, per-parameter SGD updates and the loss copied
 * to the host. It knows nothing of cufold; it prints a checksum of its final parameters.
 * usage: sample_train [steps] [params]   tests layer. */
#include <stdio.h>
#include <stdlib.h>

#include "testlib.h"

#define BATCH 32
#define FEAT 64
#define HID 64
#define SLICES 8

static unsigned int blocks(int n)
{
	return (unsigned int)((n + 255) / 256);
}

static void launch(CUfunction f, int n, CUstream s, void **args)
{
	CHECK(cuLaunchKernel(f, blocks(n), 1, 1, 256, 1, 1, 0, s, args, NULL));
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 10;
	int nparams = argc > 2 ? atoi(argv[2]) : 16;
	int plen = 256;
	CUmodule elem, lin;
	CUfunction f_fill, f_axpy, f_relu, f_scale, f_gemm, f_reduce, f_add;
	CUstream s;
	CUdeviceptr x, dense, glued, w, h, act, loss, *param, *grad;
	float host_in[BATCH * FEAT], host_w[FEAT * HID], host_loss = 0, lr = -0.01f, beta = 0.0f, half = 0.5f;
	int n_in = BATCH * FEAT, n_h = BATCH * HID, m = BATCH, nn = HID, k = FEAT;
	uint64_t h64 = TL_HASH_INIT;

	tl_init();
	elem = tl_load_module("elementwise");
	lin = tl_load_module("linalg");
	f_fill = tl_func(elem, "fill");
	f_axpy = tl_func(elem, "axpy");
	f_relu = tl_func(elem, "relu");
	f_scale = tl_func(elem, "scale");
	f_add = tl_func(elem, "add");
	f_gemm = tl_func(lin, "gemm");
	f_reduce = tl_func(lin, "reduce_sum");
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&x, n_in * sizeof(float)));
	CHECK(cuMemAlloc(&dense, n_in * sizeof(float)));
	CHECK(cuMemAlloc(&glued, n_in * sizeof(float)));
	CHECK(cuMemAlloc(&w, FEAT * HID * sizeof(float)));
	CHECK(cuMemAlloc(&h, n_h * sizeof(float)));
	CHECK(cuMemAlloc(&act, n_h * sizeof(float)));
	CHECK(cuMemAlloc(&loss, sizeof(float)));
	param = calloc((size_t)nparams, sizeof(*param));
	grad = calloc((size_t)nparams, sizeof(*grad));
	tl_fill_random(host_w, (size_t)FEAT * HID, 7);
	CHECK(cuMemcpyHtoD(w, host_w, sizeof(host_w)));
	for (int p = 0; p < nparams; p++) {
		float v = 0.01f * (float)(p + 1);
		void *a[] = {&param[p], &v, &plen};

		CHECK(cuMemAlloc(&param[p], plen * sizeof(float)));
		CHECK(cuMemAlloc(&grad[p], plen * sizeof(float)));
		launch(f_fill, plen, s, a);
	}
	for (int step = 0; step < steps; step++) {
		size_t slice = n_in / SLICES * sizeof(float);

		tl_fill_random(host_in, (size_t)n_in, (uint32_t)step + 1);
		CHECK(cuMemcpyHtoDAsync(x, host_in, n_in * sizeof(float), s));
		/* dense features: split into per-feature slices, then glued straight back */
		for (int i = 0; i < SLICES; i++)
			CHECK(cuMemcpyDtoDAsync(dense + i * slice, x + i * slice, slice, s));
		for (int i = 0; i < SLICES; i++)
			CHECK(cuMemcpyDtoDAsync(glued + i * slice, dense + i * slice, slice, s));
		{
			void *a[] = {&h, &glued, &w, &m, &nn, &k, &beta};

			CHECK(cuLaunchKernel(f_gemm, blocks(n_h), 1, 1, 256, 1, 1, 0, s, a, NULL));
		}
		{
			void *a[] = {&act, &h, &n_h};

			launch(f_relu, n_h, s, a);
		}
		{
			void *a[] = {&loss, &act, &n_h};

			CHECK(cuLaunchKernel(f_reduce, 1, 1, 1, 256, 1, 1, 0, s, a, NULL));
		}
		for (int p = 0; p < nparams; p++) {
			void *sc[] = {&grad[p], &param[p], &half, &plen};
			void *ad[] = {&grad[p], &grad[p], &param[p], &plen};
			void *up[] = {&param[p], &grad[p], &lr, &plen};

			CHECK(cuMemsetD32Async(grad[p], 0, (size_t)plen, s));
			launch(f_scale, plen, s, sc);
			launch(f_add, plen, s, ad);
			launch(f_axpy, plen, s, up);
		}
		CHECK(cuMemcpyDtoHAsync(&host_loss, loss, sizeof(float), s));
		CHECK(cuStreamSynchronize(s));
		h64 = tl_hash(&host_loss, sizeof(host_loss), h64);
	}
	for (int p = 0; p < nparams; p++)
		h64 = tl_hash_device(param[p], plen * sizeof(float), h64);
	h64 = tl_hash_device(glued, n_in * sizeof(float), h64);
	printf("sample_train steps=%d params=%d loss=%.6f checksum=%016llx\n", steps, nparams,
	       (double)host_loss, (unsigned long long)h64);
	return 0;
}
