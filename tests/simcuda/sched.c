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

static void make_ready(struct sim_work *w)
{
	if (nready == capready) {
		unsigned int cap = (unsigned int)capready;

		ready = grow(ready, &cap, sizeof(*ready));
		capready = cap;
	}
	ready[nready++] = w;
}

void sim_sched_add(struct sim_work *w)
{
	if (sched_inorder < 0)
		read_env();
	w->queued = true;
	w->seq = next_seq++;
	npending++;
	if (w->nwait == 0)
		make_ready(w);
	/* the scheduler now owns the caller's reference until the item runs */
}

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
	uint64_t start = w->submit_ns > w->min_start_ns ? w->submit_ns : w->min_start_ns;

	for (unsigned int i = 0; i < w->ndeps; i++)
		if (w->deps[i]->end_ns > start)
			start = w->deps[i]->end_ns;
	w->start_ns = start;
	w->end_ns = start + (w->ops->cost_ns ? w->ops->cost_ns(w->payload, w->in_graph) : 0);
	if (w->ops->run)
		w->ops->run(w, w->payload);
	if (w->ops != &sim_nop_ops)
		sim_stats_count("executed", w->ops->kind, 1);
	w->done = true;
	sim__stats_device_end(w->end_ns);
	if (w->end_ns > latest_end_ns)
		latest_end_ns = w->end_ns;
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
