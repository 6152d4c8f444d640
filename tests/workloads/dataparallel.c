/* dataparallel.c - a data-parallel training step shaped like PyTorch DDP on NCCL (the
 * `dataparallel` workload): a compute stream and a communication stream joined by events, a
 * caching allocator that queries events before reusing a block and frees blocks it no longer
 * needs, a watchdog thread polling the newest communication event, and the loss read back every
 * step. tests layer; knows nothing of cufold.
 *
 * Per step (about 140 submissions): the batch copied in; zero_grad (a memset per gradient); a
 * 6-layer MLP forward and an MSE loss; the backward from the last layer to the first, each
 * layer's gradients copied into its own bucket on the compute stream, an event recorded, and
 * the communication stream waiting for it and "all-reducing" the bucket (an ordinary kernel,
 * `scale` by 1/world: the average of a sum over one rank), then recording a communication event;
 * the compute stream waits for each bucket's event, copies the bucket back into the gradients
 * and runs a for-loop SGD; the loss is read back after a stream synchronize.
 *
 * The allocator, once per step before any work is issued (as a framework's allocator calls
 * happen between the previous step's synchronize and the next launch):
 *   - cached blocks (the buckets) are reused only after cuEventQuery says the event recorded on
 *     the communication stream when they were last released has completed (record_stream);
 *     a block whose event is not ready stays cached and a new one is allocated;
 *   - uncached blocks (each step's batch gets a fresh one, as a loader that hands over new
 *     tensors does) are released with an event and given back with cuMemFree once they were
 *     last used two or more steps ago and their event has completed.
 * Neither changes a result: which block a step gets is not part of the output.
 *
 * --watchdog-us N starts a thread that every N microseconds queries the newest communication
 * event with cuEventQuery, as NCCL's watchdog polls its collectives' events (0, the default: no
 * thread). It is stopped and joined before the final checksum and never changes the output.
 * --rank R, --world W (W > 1): one rank of a multi-process job (tests/workloads/launcher.c):
 * its own data, buckets scaled by 1/W, and one barrier kernel per step (NCCL's all-reduce of the
 * loss on the communication stream, a kernel named ncclDevKernel_*), which cufold runs eagerly.
 * Without them there is no nccl-named kernel, so every step is replayable as a whole.
 *
 * Shape: batch 16*scale, MLP 32-64-64-64-64-32-8 (relu between), 12 parameters.
 * usage: dataparallel [--steps N] [--scale S] [--time] [--census] [--watchdog-us N]
 *                     [--rank R --world W] */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "wl.h"

#define NL 6
#define MAX_BLOCKS 32                /* allocator blocks alive at once (buckets + batches) */

static const int dims[NL + 1] = {32, 64, 64, 64, 64, 32, 8};

/* ------------------------------------------------------------------ caching allocator */

struct block {
	CUdeviceptr p;               /* the allocation, 0 when the slot is empty */
	size_t bytes;                /* its size */
	CUevent ev;                  /* recorded at release on the stream of its last use (kept
				      * with the slot, reused by the next block in it) */
	int last_step;               /* step of its last release */
	bool busy;                   /* handed out and not released */
	bool cached;                 /* reused after release; else freed two steps later */
};

struct pool {
	struct block b[MAX_BLOCKS];  /* slots */
	int allocs, frees, reuses, not_ready; /* what it did (not printed: schedule-dependent) */
};

/* A block of `bytes`: a released cached block whose event has completed, newest first, or a new
 * allocation. */
static struct block *pool_get(struct pool *pl, size_t bytes, bool cached)
{
	struct block *best = NULL, *empty = NULL;

	for (int i = 0; i < MAX_BLOCKS; i++) {
		struct block *b = &pl->b[i];

		if (!b->p) {
			if (!empty)
				empty = b;
			continue;
		}
		if (!cached || !b->cached || b->busy || b->bytes != bytes)
			continue;
		if (best && best->last_step >= b->last_step)
			continue;
		if (cuEventQuery(b->ev) == CUDA_ERROR_NOT_READY) {
			pl->not_ready++;
			continue;
		}
		best = b;
	}
	if (best) {
		pl->reuses++;
		goto out;
	}
	if (!empty) {
		fprintf(stderr, "dataparallel: allocator out of slots\n");
		exit(1);
	}
	best = empty;
	CHECK(cuMemAlloc(&best->p, bytes));
	if (!best->ev)
		CHECK(cuEventCreate(&best->ev, CU_EVENT_DISABLE_TIMING));
	best->bytes = bytes;
	best->cached = cached;
	pl->allocs++;
out:
	best->busy = true;
	return best;
}

/* Released after its last use on stream s (the event makes a later reuse wait for it). */
static void pool_put(struct block *b, CUstream s, int step)
{
	CHECK(cuEventRecord(b->ev, s));
	b->last_step = step;
	b->busy = false;
}

/* Give back uncached blocks last used two or more steps ago whose event has completed. */
static void pool_trim(struct pool *pl, int step)
{
	for (int i = 0; i < MAX_BLOCKS; i++) {
		struct block *b = &pl->b[i];

		if (!b->p || b->busy || b->cached || b->last_step > step - 2)
			continue;
		if (cuEventQuery(b->ev) == CUDA_ERROR_NOT_READY) {
			pl->not_ready++;
			continue;
		}
		CHECK(cuMemFree(b->p));
		b->p = 0;
		pl->frees++;
	}
}

/* ------------------------------------------------------------------ watchdog */

struct watchdog {
	pthread_t thread;            /* the polling thread */
	CUcontext ctx;               /* made current in the thread, as NCCL's watchdog does */
	long period_us;              /* poll period */
	_Atomic(CUevent) newest;     /* the newest recorded communication event, NULL before one */
	atomic_bool stop;            /* set by main to end the thread */
	atomic_long polls;           /* queries made (not printed: timing-dependent) */
	atomic_int errors;           /* queries that returned neither success nor not-ready */
};

static void *watchdog_main(void *arg)
{
	struct watchdog *w = arg;
	CHECK(cuCtxSetCurrent(w->ctx));
	while (!atomic_load(&w->stop)) {
		struct timespec ts = {w->period_us / 1000000, (w->period_us % 1000000) * 1000};
		CUevent e = atomic_load(&w->newest);

		if (e) {
			CUresult rc = cuEventQuery(e);

			if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_READY)
				atomic_fetch_add(&w->errors, 1);
			atomic_fetch_add(&w->polls, 1);
		}
		while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
			;
	}
	return NULL;
}

/* ------------------------------------------------------------------ flags */

struct dp_opts {
	long watchdog_us;            /* --watchdog-us: poll period, 0 = no watchdog thread */
	int rank, world;             /* --rank, --world: this process's place in a job */
};

static void dp_usage(const char *prog)
{
	fprintf(stderr, "usage: %s [--steps N (default 20)] [--scale S] [--time] [--census] "
			"[--watchdog-us N (default 0)] [--rank R --world W]\n", prog);
	exit(2);
}

/* Take this workload's own flags out of argv; the rest go to wl_parse. Returns the new argc. */
static int dp_parse(int argc, char **argv, struct dp_opts *d)
{
	int n = 1;

	d->watchdog_us = 0;
	d->rank = 0;
	d->world = 1;
	for (int i = 1; i < argc; i++) {
		char *end = NULL;
		long v;

		if ((!strcmp(argv[i], "--watchdog-us") || !strcmp(argv[i], "--rank") ||
		     !strcmp(argv[i], "--world")) && i + 1 < argc) {
			v = strtol(argv[i + 1], &end, 10);
			if (*end || v < 0 || v > 10000000)
				dp_usage(argv[0]);
			if (!strcmp(argv[i], "--watchdog-us"))
				d->watchdog_us = v;
			else if (!strcmp(argv[i], "--rank"))
				d->rank = (int)v;
			else
				d->world = (int)v;
			i++;
		} else if (!strcmp(argv[i], "--help")) {
			dp_usage(argv[0]);
		} else {
			argv[n++] = argv[i];
		}
	}
	if (d->world < 1 || d->rank >= d->world)
		dp_usage(argv[0]);
	argv[n] = NULL;
	return n;
}

/* ------------------------------------------------------------------ the step */

int main(int argc, char **argv)
{
	struct wl_opts o;
	struct dp_opts d;
	struct wl_kernels k;
	struct wl_params ps = {0};
	struct wl_timer tm;
	struct pool pl = {0};
	struct watchdog wd = {0};
	CUcontext ctx;
	CUstream s, c;
	CUevent ev_grad[NL], ev_comm[NL], ev_loss;
	CUfunction nccl = NULL;
	CUdeviceptr y[NL], dy[NL], dh[NL], target, terms, dout, dloss;
	struct block *xb, *bucket[NL];
	int w[NL], b[NL], batch, nx, nt, one = 1;
	float *h_x, *h_t, loss = 0.0f, lr = 0.01f, wdecay = 1e-4f, inv_world, inv_n;
	uint64_t h = TL_HASH_INIT;

	argc = dp_parse(argc, argv, &d);
	wl_parse(argc, argv, &o, 20);
	batch = 16 * o.scale;
	nx = batch * dims[0];
	nt = batch * dims[NL];
	inv_n = 1.0f / (float)nt;
	inv_world = 1.0f / (float)d.world;
	ctx = tl_init();
	wl_load_kernels(&k);
	if (d.world > 1)
		nccl = tl_func(tl_load_module("nccl"), "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
	for (int l = 0; l < NL; l++) {
		w[l] = wl_param_new(&ps, dims[l] * dims[l + 1], 1.0f / sqrtf((float)dims[l]), 0.0f,
				    300u + (uint32_t)l);
		b[l] = wl_param_new(&ps, dims[l + 1], 0.01f, 0.0f, 310u + (uint32_t)l);
		y[l] = wl_alloc((size_t)batch * dims[l + 1]);
		dy[l] = wl_alloc((size_t)batch * dims[l + 1]);
		dh[l] = wl_alloc((size_t)batch * dims[l + 1]);
		CHECK(cuEventCreate(&ev_grad[l], CU_EVENT_DISABLE_TIMING));
		CHECK(cuEventCreate(&ev_comm[l], CU_EVENT_DISABLE_TIMING));
	}
	CHECK(cuEventCreate(&ev_loss, CU_EVENT_DISABLE_TIMING));
	target = wl_alloc((size_t)nt);
	terms = wl_alloc((size_t)nt);
	dout = wl_alloc((size_t)nt);
	dloss = wl_alloc(1);
	h_x = wl_alloc_host((size_t)nx * sizeof(float));
	h_t = wl_alloc_host((size_t)nt * sizeof(float));
	CHECK(cuCtxSynchronize());
	if (d.watchdog_us > 0) {
		wd.ctx = ctx;
		wd.period_us = d.watchdog_us;
		if (pthread_create(&wd.thread, NULL, watchdog_main, &wd) != 0) {
			fprintf(stderr, "dataparallel: cannot start the watchdog\n");
			return 1;
		}
	}
	wl_timer_init(&tm, &o, s);

	for (int step = 0; step < o.steps; step++) {
		uint32_t seed = 7000u + 1000u * (uint32_t)d.rank + (uint32_t)step;

		wl_timer_step(&tm, step);
		/* the allocator's work for this step, before anything is issued */
		pool_trim(&pl, step);
		xb = pool_get(&pl, (size_t)nx * sizeof(float), false);
		for (int l = 0; l < NL; l++)
			bucket[l] = pool_get(&pl, (size_t)(dims[l] + 1) * dims[l + 1] * sizeof(float), true);

		tl_fill_random(h_x, (size_t)nx, seed);
		tl_fill_random(h_t, (size_t)nt, seed + 500000u);
		CHECK(cuMemcpyHtoDAsync(xb->p, h_x, (size_t)nx * sizeof(float), s));
		CHECK(cuMemcpyHtoDAsync(target, h_t, (size_t)nt * sizeof(float), s));
		wl_zero_grads(&ps, s);

		/* forward and loss */
		for (int l = 0; l < NL; l++)
			wl_linear(&k, y[l], l ? y[l - 1] : xb->p, ps.p[w[l]].w, ps.p[b[l]].w, batch, dims[l],
				  dims[l + 1], l < NL - 1, s);
		{
			void *ml[] = {&terms, &dout, &y[NL - 1], &target, &nt, &inv_n};
			void *rs[] = {&dloss, &terms, &nt};

			wl_1d(k.mse_loss, nt, s, ml);
			CHECK(cuLaunchKernel(k.reduce_sum, 1, 1, 1, WL_BLOCK, 1, 1, 0, s, rs, NULL));
		}
		if (nccl) { /* the loss averaged over the ranks for logging: NCCL on the comm stream */
			void *a[] = {&dloss, &one};

			CHECK(cuEventRecord(ev_loss, s));
			CHECK(cuStreamWaitEvent(c, ev_loss, 0));
			CHECK(cuLaunchKernel(nccl, 1, 1, 1, WL_BLOCK, 1, 1, 0, c, a, NULL));
		}

		/* backward, last layer first; each layer's gradients go out as one bucket */
		for (int l = NL - 1; l >= 0; l--) {
			struct wl_param *pw = &ps.p[w[l]], *pb = &ps.p[b[l]];
			CUdeviceptr grad_out = l == NL - 1 ? dout : dh[l];
			CUdeviceptr bk = bucket[l]->p;
			int n = batch * dims[l + 1], nb = pw->n + pb->n;

			if (l < NL - 1) {
				void *a[] = {&dh[l], &dy[l], &y[l], &n};

				wl_1d(k.relu_backward, n, s, a);
			}
			wl_linear_backward(&k, pw->g, pb->g, l ? dy[l - 1] : 0, l ? y[l - 1] : xb->p, pw->w,
					   grad_out, batch, dims[l], dims[l + 1], s);
			CHECK(cuMemcpyDtoDAsync(bk, pw->g, (size_t)pw->n * sizeof(float), s));
			CHECK(cuMemcpyDtoDAsync(bk + (size_t)pw->n * sizeof(float), pb->g,
						(size_t)pb->n * sizeof(float), s));
			CHECK(cuEventRecord(ev_grad[l], s));
			CHECK(cuStreamWaitEvent(c, ev_grad[l], 0));
			{
				void *a[] = {&bk, &bk, &inv_world, &nb};

				wl_1d(k.scale, nb, c, a);
			}
			CHECK(cuEventRecord(ev_comm[l], c));
			atomic_store(&wd.newest, ev_comm[l]);
		}

		/* the optimizer, once every bucket is back */
		for (int l = NL - 1; l >= 0; l--) {
			struct wl_param *pw = &ps.p[w[l]], *pb = &ps.p[b[l]];
			CUdeviceptr bk = bucket[l]->p;

			CHECK(cuStreamWaitEvent(s, ev_comm[l], 0));
			CHECK(cuMemcpyDtoDAsync(pw->g, bk, (size_t)pw->n * sizeof(float), s));
			CHECK(cuMemcpyDtoDAsync(pb->g, bk + (size_t)pw->n * sizeof(float),
						(size_t)pb->n * sizeof(float), s));
		}
		wl_sgd(&k, &ps, lr, wdecay, s);

		/* blocks go back to the allocator with an event on the stream of their last use */
		for (int l = 0; l < NL; l++)
			pool_put(bucket[l], c, step);
		pool_put(xb, s, step);

		/* the loss, read back every step */
		CHECK(cuStreamSynchronize(s));
		CHECK(cuMemcpyDtoH(&loss, dloss, sizeof(loss)));
		h = tl_hash(&loss, sizeof(loss), h);
	}
	wl_timer_report(&tm);
	if (d.watchdog_us > 0) {
		atomic_store(&wd.stop, true);
		pthread_join(wd.thread, NULL);
		if (atomic_load(&wd.errors)) {
			fprintf(stderr, "dataparallel: %d watchdog queries failed\n", atomic_load(&wd.errors));
			return 1;
		}
	}
	h = wl_hash_params(&ps, h);
	wl_print("dataparallel", &o, ps.count, loss / (float)nt, h);
	/* bucket copies in and out (glue and slice), zero_grad memsets; the SGD's two axpys per
	 * parameter repeat with the same scalars */
	wl_print_census(&o, 4 * NL, ps.count, 2 * ps.count);
	return 0;
}
