/* inference.c - a short, latency-bound inference step on the driver API (the `inference`
 * workload): one input copy; the pooled features split per feature with pitched copies, each
 * through its own layer norm, tanh, scaling and residual add (the "split -> LayerNorm -> tanh ->
 * cat" shape of the ranking models Optimus was written for), glued back with pitched copies; a
 * three-layer MLP; the output copied to the host every step. About 240 submissions per step,
 * nearly all tiny. tests layer; knows nothing of cufold.
 *
 * Shape: 40 features of width 8, batch 16*scale, MLP 320-64-32-1.
 * usage: inference [--steps N] [--scale S] [--time] [--census] */
#include "wl.h"

#define NF 40
#define FD 8
#define WIDTH (NF * FD)
#define NL 3

static const int dims[NL + 1] = {WIDTH, 64, 32, 1};

/* dst[:, dcol:dcol+FD] = src[:, scol:scol+FD] for rows rows, as one pitched copy. */
static void copy_cols(CUdeviceptr dst, int dpitch, int dcol, CUdeviceptr src, int spitch, int scol,
		      int rows, CUstream s)
{
	CUDA_MEMCPY2D c;

	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = src + (size_t)scol * sizeof(float);
	c.srcPitch = (size_t)spitch * sizeof(float);
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = dst + (size_t)dcol * sizeof(float);
	c.dstPitch = (size_t)dpitch * sizeof(float);
	c.WidthInBytes = FD * sizeof(float);
	c.Height = (size_t)rows;
	CHECK(cuMemcpy2DAsync(&c, s));
}

int main(int argc, char **argv)
{
	struct wl_opts o;
	struct wl_kernels k;
	struct wl_params ps = {0};
	struct wl_timer tm;
	CUstream s;
	CUdeviceptr x, y, piece[NF], ln[NF], act[NL];
	int gam[NF], bet[NF], w[NL], b[NL];
	float *h_x, *h_out, eps = 1e-5f, gate = 0.5f;
	int batch, nfd, nout, dim = FD;
	uint64_t h = TL_HASH_INIT;

	wl_parse(argc, argv, &o, 50);
	batch = 16 * o.scale;
	nfd = batch * FD;
	tl_init();
	wl_load_kernels(&k);
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (int f = 0; f < NF; f++) {
		gam[f] = wl_param_new(&ps, FD, 0.0f, 1.0f + 0.01f * (float)f, 0);
		bet[f] = wl_param_new(&ps, FD, 0.1f, 0.0f, 10u + (uint32_t)f);
		piece[f] = wl_alloc((size_t)nfd);
		ln[f] = wl_alloc((size_t)nfd);
	}
	for (int l = 0; l < NL; l++) {
		w[l] = wl_param_new(&ps, dims[l] * dims[l + 1], 1.0f / sqrtf((float)dims[l]), 0.0f,
				    100u + (uint32_t)l);
		b[l] = wl_param_new(&ps, dims[l + 1], 0.01f, 0.0f, 110u + (uint32_t)l);
		act[l] = wl_alloc((size_t)batch * dims[l + 1]);
	}
	x = wl_alloc((size_t)batch * WIDTH);
	y = wl_alloc((size_t)batch * WIDTH);
	nout = batch * dims[NL];
	h_x = wl_alloc_host((size_t)batch * WIDTH * sizeof(float));
	h_out = wl_alloc_host((size_t)nout * sizeof(float));
	CHECK(cuCtxSynchronize());
	wl_timer_init(&tm, &o, s);

	for (int step = 0; step < o.steps; step++) {
		wl_timer_step(&tm, step);
		tl_fill_random(h_x, (size_t)batch * WIDTH, 9000u + (uint32_t)step);
		CHECK(cuMemcpyHtoDAsync(x, h_x, (size_t)batch * WIDTH * sizeof(float), s));
		for (int f = 0; f < NF; f++) {
			void *lnp[] = {&ln[f], &piece[f], &ps.p[gam[f]].w, &ps.p[bet[f]].w, &dim, &eps};
			void *th[] = {&ln[f], &ln[f], &nfd};
			void *sc[] = {&ln[f], &ln[f], &gate, &nfd};
			void *ad[] = {&ln[f], &ln[f], &piece[f], &nfd};

			copy_cols(piece[f], FD, 0, x, WIDTH, f * FD, batch, s);
			wl_rows(k.layernorm_row, batch, s, lnp);
			wl_1d(k.tanh_k, nfd, s, th);
			wl_1d(k.scale, nfd, s, sc);
			wl_1d(k.add, nfd, s, ad);
		}
		for (int f = 0; f < NF; f++)
			copy_cols(y, WIDTH, f * FD, ln[f], FD, 0, batch, s);
		for (int l = 0; l < NL; l++)
			wl_linear(&k, act[l], l ? act[l - 1] : y, ps.p[w[l]].w, ps.p[b[l]].w, batch, dims[l],
				  dims[l + 1], l < NL - 1, s);
		{
			void *th[] = {&act[NL - 1], &act[NL - 1], &nout};

			wl_1d(k.tanh_k, nout, s, th);
		}
		CHECK(cuMemcpyDtoHAsync(h_out, act[NL - 1], (size_t)nout * sizeof(float), s));
		CHECK(cuStreamSynchronize(s));
		h = tl_hash(h_out, (size_t)nout * sizeof(float), h);
	}
	wl_timer_report(&tm);
	h = wl_hash_params(&ps, h);
	wl_print("inference", &o, ps.count, o.steps ? h_out[0] : 0.0f, h);
	/* per feature: slice and glue copies; tanh, scale and add repeated with the same scalars */
	wl_print_census(&o, 2 * NF, 0, 3 * NF);
	return 0;
}
