/* wl.h - scaffolding shared by the workloads (tests/workloads/<name>.c): flags, kernel handles,
 * launch helpers, parameters with their gradients and optimizers, step timing and the output
 * line. tests layer; header-only because the build makes one program per workload source.
 *
 * A workload is a plain driver-API program that knows nothing of cufold. It prints one line
 *   <name> steps=N scale=S params=P loss=L checksum=<FNV of the per-step losses and the final
 *   parameters or outputs>
 * and, with --census, a line saying how many of its per-step operations belong to the patterns
 * cufold's rules target (for scripts/bench), and with --time a line with the mean step time
 * (host wall clock and CUDA events; meaningful on a real GPU, scripts/gpu-check).
 * --app-us N charges N microseconds of the program's own host time (the framework code between
 * its driver calls) before every call that enqueues work (app_time.h), on the software device's
 * modeled clock; scripts/bench --grid sweeps it. */
#ifndef WL_H
#define WL_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testlib.h"
#include "app_time.h"

#define WL_BLOCK 256 /* threads per block of 1-D launches */
#define WL_TILE 16   /* gemm tile edge: 16 x 16 threads per block */
#define WL_ROW_THREADS 32 /* threads per block of one-block-per-row kernels */

struct wl_opts {
	int steps;                   /* training (or inference) steps; 0 runs the set-up only */
	int scale;                   /* size multiplier (batch, sequence), >= 1 */
	bool time;                   /* --time: report the mean step time */
	bool census;                 /* --census: print the per-step pattern census */
	bool drop_wait;              /* --drop-wait (tests only): omit the joins of a second stream,
				      * a deliberate race the software device's seeds must expose */
	double app_us;               /* --app-us: the program's own host time per enqueued op */
};

static inline void wl_usage(const char *prog, int default_steps)
{
	fprintf(stderr, "usage: %s [--steps N (default %d)] [--scale S (default 1)] [--time] "
			"[--census] [--drop-wait] [--app-us N (default APP_US, else 0)]\n", prog,
		default_steps);
	exit(2);
}

static inline void wl_parse(int argc, char **argv, struct wl_opts *o, int default_steps)
{
	o->steps = default_steps;
	o->scale = 1;
	o->time = false;
	o->census = false;
	o->drop_wait = false;
	o->app_us = -1.0;
	for (int i = 1; i < argc; i++) {
		char *end = NULL;

		if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
			o->steps = (int)strtol(argv[++i], &end, 10);
			if (*end || o->steps < 0)
				wl_usage(argv[0], default_steps);
		} else if (!strcmp(argv[i], "--scale") && i + 1 < argc) {
			o->scale = (int)strtol(argv[++i], &end, 10);
			if (*end || o->scale < 1 || o->scale > 1024)
				wl_usage(argv[0], default_steps);
		} else if (!strcmp(argv[i], "--time")) {
			o->time = true;
		} else if (!strcmp(argv[i], "--census")) {
			o->census = true;
		} else if (!strcmp(argv[i], "--drop-wait")) {
			o->drop_wait = true;
		} else if (!strcmp(argv[i], "--app-us") && i + 1 < argc) {
			o->app_us = strtod(argv[++i], &end);
			if (*end || !(o->app_us >= 0.0 && o->app_us <= 1e6))
				wl_usage(argv[0], default_steps);
		} else {
			wl_usage(argv[0], default_steps);
		}
	}
	if (o->app_us >= 0.0)
		tl_app_set_us(o->app_us);
}

/* ------------------------------------------------------------------ kernels */

struct wl_kernels {
	CUfunction fill, copy, axpy, add, mul, scale, relu, tanh_k;     /* elementwise.cu */
	CUfunction gemm, reduce_sum;                                     /* linalg.cu */
	CUfunction embedding_bag_sum, layernorm_row, softmax_row;        /* nn.cu */
	CUfunction cat, split_copy;                                      /* copy.cu */
	CUfunction bias_add, bias_grad, relu_backward, tanh_backward;    /* train.cu */
	CUfunction gemm_ex, embedding_bag_backward, dot_interaction;
	CUfunction dot_interaction_backward, concat2_rows, split2_rows;
	CUfunction layernorm_backward_row, layernorm_param_grad, softmax_backward_row;
	CUfunction bce_logits, mse_loss;
};

static inline void wl_load_kernels(struct wl_kernels *k)
{
	CUmodule el = tl_load_module("elementwise"), li = tl_load_module("linalg");
	CUmodule nn = tl_load_module("nn"), cp = tl_load_module("copy");
	CUmodule tr = tl_load_module("train");

	k->fill = tl_func(el, "fill");
	k->copy = tl_func(el, "copy");
	k->axpy = tl_func(el, "axpy");
	k->add = tl_func(el, "add");
	k->mul = tl_func(el, "mul");
	k->scale = tl_func(el, "scale");
	k->relu = tl_func(el, "relu");
	k->tanh_k = tl_func(el, "tanh_kernel");
	k->gemm = tl_func(li, "gemm");
	k->reduce_sum = tl_func(li, "reduce_sum");
	k->embedding_bag_sum = tl_func(nn, "embedding_bag_sum");
	k->layernorm_row = tl_func(nn, "layernorm_row");
	k->softmax_row = tl_func(nn, "softmax_row");
	k->cat = tl_func(cp, "cat");
	k->split_copy = tl_func(cp, "split_copy");
	k->bias_add = tl_func(tr, "bias_add");
	k->bias_grad = tl_func(tr, "bias_grad");
	k->relu_backward = tl_func(tr, "relu_backward");
	k->tanh_backward = tl_func(tr, "tanh_backward");
	k->gemm_ex = tl_func(tr, "gemm_ex");
	k->embedding_bag_backward = tl_func(tr, "embedding_bag_backward");
	k->dot_interaction = tl_func(tr, "dot_interaction");
	k->dot_interaction_backward = tl_func(tr, "dot_interaction_backward");
	k->concat2_rows = tl_func(tr, "concat2_rows");
	k->split2_rows = tl_func(tr, "split2_rows");
	k->layernorm_backward_row = tl_func(tr, "layernorm_backward_row");
	k->layernorm_param_grad = tl_func(tr, "layernorm_param_grad");
	k->softmax_backward_row = tl_func(tr, "softmax_backward_row");
	k->bce_logits = tl_func(tr, "bce_logits");
	k->mse_loss = tl_func(tr, "mse_loss");
}

/* A 1-D launch covering n threads (n >= 1) in blocks of WL_BLOCK. */
static inline void wl_1d(CUfunction f, int n, CUstream s, void **args)
{
	unsigned int blocks = (unsigned int)((n + WL_BLOCK - 1) / WL_BLOCK);

	CHECK(cuLaunchKernel(f, blocks ? blocks : 1, 1, 1, WL_BLOCK, 1, 1, 0, s, args, NULL));
}

/* One block per row. */
static inline void wl_rows(CUfunction f, int rows, CUstream s, void **args)
{
	CHECK(cuLaunchKernel(f, (unsigned int)rows, 1, 1, WL_ROW_THREADS, 1, 1, 0, s, args, NULL));
}

/* The starter gemm: C[m,n] = A[m,k] B[k,n] + beta*C. */
static inline void wl_gemm(const struct wl_kernels *k, CUdeviceptr C, CUdeviceptr A, CUdeviceptr B,
			   int m, int n, int kk, float beta, CUstream s)
{
	void *a[] = {&C, &A, &B, &m, &n, &kk, &beta};

	CHECK(cuLaunchKernel(k->gemm, (unsigned int)((n + WL_TILE - 1) / WL_TILE),
			     (unsigned int)((m + WL_TILE - 1) / WL_TILE), 1, WL_TILE, WL_TILE, 1, 0, s,
			     a, NULL));
}

/* gemm_ex (train.cu): batched, optionally transposed operands, alpha and beta. */
static inline void wl_gemm_ex(const struct wl_kernels *k, CUdeviceptr C, CUdeviceptr A,
			      CUdeviceptr B, int m, int n, int kk, int ta, int tb, float alpha,
			      float beta, int batch, int sa, int sb, int sc, CUstream s)
{
	void *a[] = {&C, &A, &B, &m, &n, &kk, &ta, &tb, &alpha, &beta, &sa, &sb, &sc};

	CHECK(cuLaunchKernel(k->gemm_ex, (unsigned int)((n + WL_TILE - 1) / WL_TILE),
			     (unsigned int)((m + WL_TILE - 1) / WL_TILE), (unsigned int)batch,
			     WL_TILE, WL_TILE, 1, 0, s, a, NULL));
}

/* A linear layer's three backward products, as an autograd engine issues them:
 * gW[in,out] += X^T dY, gb[out] += column sums of dY, and (when dX) dX[rows,in] = dY W^T. */
static inline void wl_linear_backward(const struct wl_kernels *k, CUdeviceptr gW, CUdeviceptr gb,
				      CUdeviceptr dX, CUdeviceptr X, CUdeviceptr W, CUdeviceptr dY,
				      int rows, int in, int out, CUstream s)
{
	wl_gemm_ex(k, gW, X, dY, in, out, rows, 1, 0, 1.0f, 1.0f, 1, 0, 0, 0, s);
	{
		void *a[] = {&gb, &dY, &rows, &out};

		wl_1d(k->bias_grad, out, s, a);
	}
	if (dX)
		wl_gemm_ex(k, dX, dY, W, rows, in, out, 0, 1, 1.0f, 0.0f, 1, 0, 0, 0, s);
}

/* out[rows, out] = X W + b, then relu in place when asked. */
static inline void wl_linear(const struct wl_kernels *k, CUdeviceptr Y, CUdeviceptr X, CUdeviceptr W,
			     CUdeviceptr b, int rows, int in, int out, bool relu, CUstream s)
{
	int n = rows * out;

	wl_gemm(k, Y, X, W, rows, out, in, 0.0f, s);
	{
		void *a[] = {&Y, &b, &rows, &out};

		wl_1d(k->bias_add, n, s, a);
	}
	if (relu) {
		void *a[] = {&Y, &Y, &n};

		wl_1d(k->relu, n, s, a);
	}
}

/* ------------------------------------------------------------------ memory */

static inline CUdeviceptr wl_alloc(size_t floats)
{
	CUdeviceptr p;

	CHECK(cuMemAlloc(&p, (floats ? floats : 1) * sizeof(float)));
	return p;
}

/* Host memory the program fills and copies from, pinned like a data loader's (pin_memory). */
static inline void *wl_alloc_host(size_t bytes)
{
	void *p;

	CHECK(cuMemAllocHost(&p, bytes ? bytes : 1));
	return p;
}

/* ------------------------------------------------------------------ parameters */

struct wl_param {
	CUdeviceptr w;               /* the parameter */
	CUdeviceptr g;               /* its gradient (zeroed each step, then accumulated) */
	CUdeviceptr m;               /* momentum buffer (momentum SGD only), else 0 */
	int n;                       /* floats */
};

struct wl_params {
	struct wl_param *p;          /* every parameter, each its own allocations */
	int count, cap;              /* used and allocated entries */
	bool momentum;               /* parameters get a momentum buffer */
};

/* A new parameter of n floats: uniform in [-amp, amp) from seed, or the constant cst when amp is
 * 0 (layer-norm gains). Returns its index. */
static inline int wl_param_new(struct wl_params *ps, int n, float amp, float cst, uint32_t seed)
{
	struct wl_param *p;
	float *h = malloc((size_t)n * sizeof(float));

	if (!h)
		exit(1);
	if (ps->count == ps->cap) {
		ps->cap = ps->cap ? 2 * ps->cap : 64;
		ps->p = realloc(ps->p, (size_t)ps->cap * sizeof(*ps->p));
		if (!ps->p)
			exit(1);
	}
	p = &ps->p[ps->count];
	p->n = n;
	p->w = wl_alloc((size_t)n);
	p->g = wl_alloc((size_t)n);
	p->m = 0;
	if (amp != 0.0f) {
		tl_fill_random(h, (size_t)n, seed);
		for (int i = 0; i < n; i++)
			h[i] *= amp;
	} else {
		for (int i = 0; i < n; i++)
			h[i] = cst;
	}
	CHECK(cuMemcpyHtoD(p->w, h, (size_t)n * sizeof(float)));
	if (ps->momentum) {
		p->m = wl_alloc((size_t)n);
		CHECK(cuMemsetD32(p->m, 0, (size_t)n));
	}
	free(h);
	return ps->count++;
}

/* optimizer.zero_grad() without set_to_none: one memset per gradient. */
static inline void wl_zero_grads(const struct wl_params *ps, CUstream s)
{
	for (int i = 0; i < ps->count; i++)
		CHECK(cuMemsetD32Async(ps->p[i].g, 0, (size_t)ps->p[i].n, s));
}

/* For-loop SGD with weight decay, one parameter at a time (PyTorch's foreach=False):
 * g += wd * w; w += -lr * g. */
static inline void wl_sgd(const struct wl_kernels *k, const struct wl_params *ps, float lr, float wd,
			  CUstream s)
{
	float neg_lr = -lr;

	for (int i = 0; i < ps->count; i++) {
		struct wl_param *p = &ps->p[i];
		void *d[] = {&p->g, &p->w, &wd, &p->n};
		void *u[] = {&p->w, &p->g, &neg_lr, &p->n};

		wl_1d(k->axpy, p->n, s, d);
		wl_1d(k->axpy, p->n, s, u);
	}
}

/* For-loop momentum SGD: m = mu * m; m = m + g; w += -lr * m (three launches per parameter). */
static inline void wl_sgd_momentum(const struct wl_kernels *k, const struct wl_params *ps, float lr,
				   float mu, CUstream s)
{
	float neg_lr = -lr;

	for (int i = 0; i < ps->count; i++) {
		struct wl_param *p = &ps->p[i];
		void *sc[] = {&p->m, &p->m, &mu, &p->n};
		void *ad[] = {&p->m, &p->m, &p->g, &p->n};
		void *up[] = {&p->w, &p->m, &neg_lr, &p->n};

		wl_1d(k->scale, p->n, s, sc);
		wl_1d(k->add, p->n, s, ad);
		wl_1d(k->axpy, p->n, s, up);
	}
}

static inline uint64_t wl_hash_params(const struct wl_params *ps, uint64_t h)
{
	for (int i = 0; i < ps->count; i++)
		h = tl_hash_device(ps->p[i].w, (size_t)ps->p[i].n * sizeof(float), h);
	return h;
}

/* ------------------------------------------------------------------ step timing (--time) */

struct wl_timer {
	bool on;                     /* --time given */
	int first;                   /* first timed step (the earlier ones warm up) */
	int timed;                   /* steps timed so far */
	CUevent start, stop;         /* recorded on the main stream around the timed steps */
	CUstream s;                  /* the main stream */
	struct timespec t0;          /* host clock at the first timed step */
	double wall_us;              /* host time of the timed steps */
};

static inline void wl_timer_init(struct wl_timer *t, const struct wl_opts *o, CUstream s)
{
	memset(t, 0, sizeof(*t));
	t->on = o->time;
	t->s = s;
	t->first = o->steps >= 8 ? o->steps / 4 : 0;
	if (t->on) {
		CHECK(cuEventCreate(&t->start, CU_EVENT_DEFAULT));
		CHECK(cuEventCreate(&t->stop, CU_EVENT_DEFAULT));
	}
}

static inline double wl_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Call at the start of every step. */
static inline void wl_timer_step(struct wl_timer *t, int step)
{
	if (t->on && step == t->first) {
		t->wall_us = -wl_now_us();
		CHECK(cuEventRecord(t->start, t->s));
	}
	if (t->on && step >= t->first)
		t->timed++;
}

/* Call after the last step (every step ends with a synchronization, so the host clock covers
 * the device work of the timed steps). */
static inline void wl_timer_report(struct wl_timer *t)
{
	float ms = 0.0f;
	size_t free_b = 0, total_b = 0;

	if (!t->on || t->timed == 0)
		return;
	CHECK(cuEventRecord(t->stop, t->s));
	CHECK(cuEventSynchronize(t->stop));
	t->wall_us += wl_now_us();
	CHECK(cuEventElapsedTime(&ms, t->start, t->stop));
	/* device memory in use now, everyone's (the driver's view): under cufold its graph execs and
	 * modules are alive at this point, so the difference to an eager run is cufold's own device
	 * memory (scripts/gpu-check prints both) */
	CHECK(cuMemGetInfo(&free_b, &total_b));
	printf("time: timed_steps=%d step_us_wall=%.1f step_us_event=%.1f device_used_kib=%zu\n", t->timed,
	       t->wall_us / t->timed, (double)ms * 1000.0 / t->timed, (total_b - free_b) / 1024);
}

/* ------------------------------------------------------------------ output */

static inline void wl_print(const char *name, const struct wl_opts *o, int params, float loss,
			    uint64_t h)
{
	printf("%s steps=%d scale=%d params=%d loss=%.6f checksum=%016llx\n", name, o->steps,
	       o->scale, params, (double)loss, (unsigned long long)h);
}

/* Per-step operations in the patterns cufold targets, as the program itself issues them:
 * copies that slice a buffer into pieces and glue pieces back (slice/glue, copy chains),
 * gradient memsets, and launches of one elementwise kernel repeated with the same scalars. */
static inline void wl_print_census(const struct wl_opts *o, int slice_glue, int memsets,
				   int repeated)
{
	if (o->census)
		printf("census: slice_glue_copies=%d memsets=%d repeated_elementwise=%d\n", slice_glue,
		       memsets, repeated);
}

#endif
