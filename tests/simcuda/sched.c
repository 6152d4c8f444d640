/* sched.c - work items and the scheduler that runs them in a seeded random order allowed by
 * their dependencies. tests/simcuda layer.
 *
 * State of a work item:
 *
 *   new --sim_sched_add--> queued --(nwait == 0)--> ready --picked--> done
 *
 * A queued item with unfinished dependencies waits; when its last dependency runs it becomes
 * ready. A drain repeatedly picks one ready item - uniformly at random (SIMCUDA_SCHEDULE=random,
 * the default, seeded by SIMCUDA_SEED) or the oldest (inorder) - and runs it, until the target
 * has run. Nothing but dependencies orders work: that is the point of the device.
 *
 * Modeled time is kept apart from that order. Every drain starts with a timing pass over all
 * queued work not yet timed: items are taken in order of ready time (submission and the ends of
 * their dependencies), ties in submission order, and each gets its interval from the cost model
 * (cost.c: a floor that overlaps anything, then its throughput part served by a shared
 * resource). Drains happen where the program synchronizes, so what is timed together, and in
 * which order, follows from the program's calls alone: modeled times are the same under every
 * seed and schedule. An item is always timed before it runs (sim_work_dep reads the end of a
 * dependency that has run).
 *
 * References: the creator's reference passes to the scheduler on sim_sched_add; a dependency
 * edge holds a reference on both ends until the earlier item runs; streams and events hold
 * references to their latest item. */
#include "sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sim__stats_device_end(uint64_t end_ns);
uint64_t sim__sched_latest_end(void);
static uint64_t latest_end_ns;

static struct sim_work **ready;  /* items whose dependencies have all run */
static size_t nready, capready;
static uint64_t next_seq;
static uint64_t rng_state;
static int sched_inorder = -1;   /* -1 until the environment is read */
static uint64_t npending;        /* queued items not yet run */
static struct sim_work **untimed; /* queued items not timed yet (the scheduler's references) */
static size_t nuntimed, capuntimed;
static struct sim_work **heap;    /* timing pass: items whose dependencies are timed */
static size_t nheap, capheap;

static void read_env(void)
{
	const char *mode = getenv("SIMCUDA_SCHEDULE");
	const char *seed = getenv("SIMCUDA_SEED");

	sched_inorder = mode && !strcmp(mode, "inorder");
	if (mode && *mode && strcmp(mode, "inorder") && strcmp(mode, "random"))
		sim_log("SIMCUDA_SCHEDULE=%s is not inorder or random; using random", mode);
	rng_state = (seed && *seed ? strtoull(seed, NULL, 10) : 1) * 0x9E3779B97F4A7C15ull + 0x1234567ull;
	if (!rng_state)
		rng_state = 1;
}

static uint64_t rng_next(void)
{
	uint64_t x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545F4914F6CDD1Dull;
}

static void *grow(void *arr, unsigned int *cap, size_t elem)
{
	unsigned int ncap = *cap ? *cap * 2 : 4;
	void *p = realloc(arr, ncap * elem);

	if (!p) {
		sim_log("out of host memory in the scheduler");
		abort();
	}
	*cap = ncap;
	return p;
}

struct sim_work *sim_work_new(const struct sim_work_ops *ops, void *payload, struct sim_ctx *ctx)
{
	struct sim_work *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->refs = 1;
	w->ops = ops;
	w->payload = payload;
	w->ctx = ctx;
	w->submit_ns = sim_host_now();
	return w;
}

void sim_work_ref(struct sim_work *w)
{
	w->refs++;
}

void sim_work_unref(struct sim_work *w)
{
	if (!w || --w->refs)
		return;
	for (unsigned int i = 0; i < w->ndeps; i++)
		sim_work_unref(w->deps[i]);
	for (unsigned int i = 0; i < w->ndependents; i++)
		sim_work_unref(w->dependents[i]);
	free(w->deps);
	free(w->dependents);
	if (w->payload && w->ops && w->ops->free)
		w->ops->free(w->payload);
	free(w);
}

void sim_work_dep(struct sim_work *w, struct sim_work *dep)
{
	if (!dep || dep == w)
		return;
	if (dep->done) {
		if (dep->end_ns > w->min_start_ns)
			w->min_start_ns = dep->end_ns;
		return;
	}
	for (unsigned int i = 0; i < w->ndeps; i++)
		if (w->deps[i] == dep)
			return;
	if (w->ndeps == w->capdeps)
		w->deps = grow(w->deps, &w->capdeps, sizeof(*w->deps));
	w->deps[w->ndeps++] = dep;
	sim_work_ref(dep);
	if (dep->ndependents == dep->capdependents)
		dep->dependents = grow(dep->dependents, &dep->capdependents, sizeof(*dep->dependents));
	dep->dependents[dep->ndependents++] = w;
	sim_work_ref(w);
	w->nwait++;
}

/* Append w to a growable array of items. */
static void push_item(struct sim_work ***arr, size_t *n, size_t *cap, struct sim_work *w)
{
	if (*n == *cap) {
		unsigned int c = (unsigned int)*cap;

		*arr = grow(*arr, &c, sizeof(**arr));
		*cap = c;
	}
	(*arr)[(*n)++] = w;
}

static void make_ready(struct sim_work *w)
{
	push_item(&ready, &nready, &capready, w);
}

void sim_sched_add(struct sim_work *w)
{
	if (sched_inorder < 0)
		read_env();
	w->queued = true;
	w->seq = next_seq++;
	npending++;
	push_item(&untimed, &nuntimed, &capuntimed, w);
	if (w->nwait == 0)
		make_ready(w);
	/* the scheduler now owns the caller's reference until the item runs */
}

/* ------------------------------------------------------------------ timing pass */

/* Heap order: earlier ready time first (kept in start_ns until timed), then submission. */
static bool heap_before(const struct sim_work *a, const struct sim_work *b)
{
	return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->seq < b->seq;
}

static void heap_push(struct sim_work *w)
{
	size_t i;

	push_item(&heap, &nheap, &capheap, w);
	for (i = nheap - 1; i > 0 && heap_before(heap[i], heap[(i - 1) / 2]); i = (i - 1) / 2) {
		struct sim_work *t = heap[i];

		heap[i] = heap[(i - 1) / 2];
		heap[(i - 1) / 2] = t;
	}
}

static struct sim_work *heap_pop(void)
{
	struct sim_work *top = heap[0];
	size_t i = 0;

	heap[0] = heap[--nheap];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		struct sim_work *t;

		if (l < nheap && heap_before(heap[l], heap[m]))
			m = l;
		if (r < nheap && heap_before(heap[r], heap[m]))
			m = r;
		if (m == i)
			break;
		t = heap[i];
		heap[i] = heap[m];
		heap[m] = t;
		i = m;
	}
	return top;
}

/* All dependencies of w are timed: its ready time goes in start_ns, and it joins the heap. */
static void time_ready(struct sim_work *w)
{
	uint64_t at = w->submit_ns > w->min_start_ns ? w->submit_ns : w->min_start_ns;

	for (unsigned int i = 0; i < w->ndeps; i++)
		if (w->deps[i]->end_ns > at)
			at = w->deps[i]->end_ns;
	w->start_ns = at;
	heap_push(w);
}

static void time_one(struct sim_work *w)
{
	struct sim_cost_parts c = { 0, 0, SIM_RES_NONE };
	uint64_t floor_end;

	if (w->ops->cost)
		w->ops->cost(w->payload, w->in_graph, &c);
	floor_end = w->start_ns + c.floor_ns;
	w->end_ns = c.work_ns ? sim_res_serve(c.res, floor_end, c.work_ns) : floor_end;
	w->timed = true;
	sim__stats_device_end(w->end_ns);
	if (w->end_ns > latest_end_ns)
		latest_end_ns = w->end_ns;
	for (unsigned int i = 0; i < w->ndependents; i++) {
		struct sim_work *d = w->dependents[i];

		if (d->queued && !d->timed && --d->tneed == 0)
			time_ready(d);
	}
}

/* Give every queued item whose dependencies can all be timed its modeled interval. Items
 * waiting on work that was never queued stay untimed (and never run). */
static void time_pending(void)
{
	size_t keep = 0;

	for (size_t k = 0; k < nuntimed; k++) {
		struct sim_work *w = untimed[k];

		w->tneed = 0;
		for (unsigned int i = 0; i < w->ndeps; i++)
			if (!w->deps[i]->timed)
				w->tneed++;
	}
	for (size_t k = 0; k < nuntimed; k++)
		if (untimed[k]->tneed == 0)
			time_ready(untimed[k]);
	while (nheap)
		time_one(heap_pop());
	for (size_t k = 0; k < nuntimed; k++)
		if (!untimed[k]->timed)
			untimed[keep++] = untimed[k];
	nuntimed = keep;
	/* everything submitted from now on is submitted at or after the host's present */
	sim_res_forget_before(sim_host_now());
}

/* ------------------------------------------------------------------ running */

static struct sim_work *pick(void)
{
	size_t i = 0;
	struct sim_work *w;

	if (sched_inorder) {
		for (size_t j = 1; j < nready; j++)
			if (ready[j]->seq < ready[i]->seq)
				i = j;
	} else {
		i = (size_t)(rng_next() % nready);
	}
	w = ready[i];
	ready[i] = ready[--nready];
	return w;
}

static void run_one(struct sim_work *w)
{
	if (!w->timed)
		time_pending(); /* queued while this drain ran (a host function's doing) */
	if (w->ops->run)
		w->ops->run(w, w->payload);
	if (w->ops != &sim_nop_ops)
		sim_stats_count("executed", w->ops->kind, 1);
	w->done = true;
	npending--;
	for (unsigned int i = 0; i < w->ndeps; i++)
		sim_work_unref(w->deps[i]);
	w->ndeps = 0;
	for (unsigned int i = 0; i < w->ndependents; i++) {
		struct sim_work *d = w->dependents[i];

		if (--d->nwait == 0 && d->queued && !d->done)
			make_ready(d);
		sim_work_unref(d);
	}
	w->ndependents = 0;
	sim_work_unref(w); /* the scheduler's reference */
}

void sim_sched_drain(struct sim_work *target)
{
	if (target)
		sim_work_ref(target);
	time_pending();
	while (!target || !target->done) {
		if (nready == 0) {
			if (target && !target->done)
				sim_log("scheduler: work waits on work that was never submitted "
					"(an event wait on a capture?); skipping it");
			break;
		}
		run_one(pick());
	}
	if (target)
		sim_work_unref(target);
}

void sim_sched_drain_ctx(struct sim_ctx *ctx)
{
	/* Everything pending that belongs to ctx must run; with one device per context and few
	 * contexts, draining all pending work is the simple way to get there. */
	(void)ctx;
	sim_sched_drain(NULL);
}

static void nop_run(struct sim_work *w, void *payload)
{
	(void)w;
	(void)payload;
}

const struct sim_work_ops sim_nop_ops = {
	.kind = "nop",
	.run = nop_run,
};

uint64_t sim__sched_latest_end(void)
{
	return latest_end_ns;
}
