/* stats.c - the software device's counters and SIMCUDA_STATS, the JSON a test or benchmark
 * reads to know what a program made the "GPU" do. tests/simcuda layer.
 *
 * Groups written (each an object name -> count):
 *   calls        every exported entry point called, by exported name (failed calls included)
 *   launches     kernel launches submitted eagerly, by function name
 *   kernels      kernels executed (eager or graph nodes), by function name
 *   submissions  stream work enqueued by the host, by kind (kernel, memcpy, memset, ...,
 *                graph_launch); one graph launch is one submission
 *   executed     stream work executed, by kind (graph nodes included, joins excluded)
 *   graph_nodes  graph nodes executed, by node type
 * and totals: bytes copied and set, graph launches, the peak of device memory in use (device,
 * managed and mapped VMM allocations, by their aligned spans), device_cpu_ns, and the modeled
 * time (cost.c): the host clock at exit (total_ns), the end of the last work on the device, the
 * program's own host time (app_host_ns, from simcuda_host_work), SIMCUDA_KERNEL_NS as applied,
 * and how much throughput work each shared resource served (busy_ns).
 *
 * device_cpu_ns is the time all threads spent inside the device's entry points, summed over
 * threads (core.c: monotonic ns from a call's entry to its exit, its counting, the lock wait and a
 * clock read's cost included): what a tool timing its own CPU time takes out (scripts/bench-overhead
 * --own-check). Monotonic, not CPU time: a preemption inside a call counts, and so does a wait on
 * the lock, so on a loaded machine or with threads contending it can exceed the process's CPU
 * time. */
#include "sim_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sim_counter {
	const char *group;           /* group name (static string) */
	char *name;                  /* counted name (owned) */
	_Atomic uint64_t value;      /* the count */
	struct sim_counter *next;    /* hash chain */
};

#define NBUCKETS 1024

static struct sim_counter *buckets[NBUCKETS];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t bytes_copied, bytes_set, graph_launches;
static uint64_t device_end_ns;   /* latest end of any timed work (under the device lock) */

static unsigned int hash(const char *group, const char *name)
{
	uint32_t h = 2166136261u;

	for (const char *p = group; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (const char *p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h % NBUCKETS;
}

struct sim_counter *sim_stats_counter(const char *group, const char *name)
{
	unsigned int b = hash(group, name);
	struct sim_counter *c;

	pthread_mutex_lock(&table_lock);
	for (c = buckets[b]; c; c = c->next)
		if (!strcmp(c->group, group) && !strcmp(c->name, name))
			goto out;
	c = calloc(1, sizeof(*c));
	if (!c)
		goto out;
	c->group = group;
	c->name = strdup(name);
	if (!c->name) {
		free(c);
		c = NULL;
		goto out;
	}
	c->next = buckets[b];
	buckets[b] = c;
out:
	pthread_mutex_unlock(&table_lock);
	return c;
}

uint64_t sim_counter_add(struct sim_counter *c, uint64_t n)
{
	return c ? atomic_fetch_add(&c->value, n) + n : 0;
}

void sim_stats_count(const char *group, const char *name, uint64_t n)
{
	sim_counter_add(sim_stats_counter(group, name ? name : "?"), n);
}

void sim_stats_add_bytes_copied(uint64_t n)
{
	atomic_fetch_add(&bytes_copied, n);
}

void sim_stats_add_bytes_set(uint64_t n)
{
	atomic_fetch_add(&bytes_set, n);
}

void sim_stats_graph_launch(unsigned int nodes)
{
	(void)nodes;
	atomic_fetch_add(&graph_launches, 1);
	sim_stats_count("submissions", "graph_launch", 1);
}

void sim__stats_device_end(uint64_t end_ns);
void sim__stats_device_end(uint64_t end_ns)
{
	if (end_ns > device_end_ns)
		device_end_ns = end_ns;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static int cmp_counters(const void *a, const void *b)
{
	const struct sim_counter *x = *(const struct sim_counter *const *)a;
	const struct sim_counter *y = *(const struct sim_counter *const *)b;

	return strcmp(x->name, y->name);
}

static uint64_t write_group(FILE *f, const char *group, bool comma)
{
	struct sim_counter **all = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;

	for (int b = 0; b < NBUCKETS; b++)
		for (struct sim_counter *c = buckets[b]; c; c = c->next) {
			if (strcmp(c->group, group))
				continue;
			if (n == cap) {
				struct sim_counter **grown = realloc(all, (cap = cap ? 2 * cap : 64) * sizeof(*all));

				if (!grown)
					break;
				all = grown;
			}
			all[n++] = c;
		}
	if (n)
		qsort(all, n, sizeof(*all), cmp_counters);
	fprintf(f, "  \"%s\": {", group);
	for (size_t i = 0; i < n; i++) {
		uint64_t v = atomic_load(&all[i]->value);

		fprintf(f, "%s\n    ", i ? "," : "");
		json_string(f, all[i]->name);
		fprintf(f, ": %llu", (unsigned long long)v);
		total += v;
	}
	fprintf(f, "%s}%s\n", n ? "\n  " : "", comma ? "," : "");
	free(all);
	return total;
}

static uint64_t group_value(const char *group, const char *name)
{
	uint64_t v = 0;

	pthread_mutex_lock(&table_lock);
	for (struct sim_counter *c = buckets[hash(group, name)]; c; c = c->next)
		if (!strcmp(c->group, group) && !strcmp(c->name, name))
			v = atomic_load(&c->value);
	pthread_mutex_unlock(&table_lock);
	return v;
}

uint64_t sim__device_cpu_total_ns(void); /* core.c */

/* Called with the device lock held, after all work has run. */
void sim__stats_write_at_exit(void);
void sim__stats_write_at_exit(void)
{
	const char *path = getenv("SIMCUDA_STATS");
	const char *sched = getenv("SIMCUDA_SCHEDULE");
	const char *seed = getenv("SIMCUDA_SEED");
	uint64_t calls, launches, kernels, subs, execd, nodes;
	FILE *f;

	if (!path || !*path)
		return;
	sim_host_wait_until(device_end_ns);
	f = fopen(path, "w");
	if (!f) {
		sim_log("SIMCUDA_STATS: cannot write %s", path);
		return;
	}
	pthread_mutex_lock(&table_lock);
	fprintf(f, "{\n  \"device\": \"simcuda\",\n  \"schedule\": ");
	json_string(f, sched && *sched ? sched : "random");
	fprintf(f, ",\n  \"seed\": %lu,\n", seed && *seed ? strtoul(seed, NULL, 10) : 1ul);
	calls = write_group(f, "calls", true);
	launches = write_group(f, "launches", true);
	kernels = write_group(f, "kernels", true);
	subs = write_group(f, "submissions", true);
	execd = write_group(f, "executed", true);
	nodes = write_group(f, "graph_nodes", true);
	pthread_mutex_unlock(&table_lock);
	fprintf(f, "  \"totals\": {\n");
	fprintf(f, "    \"calls\": %llu,\n", (unsigned long long)calls);
	fprintf(f, "    \"kernel_launches\": %llu,\n", (unsigned long long)launches);
	fprintf(f, "    \"kernels_executed\": %llu,\n", (unsigned long long)kernels);
	fprintf(f, "    \"host_submissions\": %llu,\n", (unsigned long long)subs);
	fprintf(f, "    \"work_executed\": %llu,\n", (unsigned long long)execd);
	fprintf(f, "    \"copies_executed\": %llu,\n", (unsigned long long)group_value("executed", "memcpy"));
	fprintf(f, "    \"memsets_executed\": %llu,\n", (unsigned long long)group_value("executed", "memset"));
	fprintf(f, "    \"graph_launches\": %llu,\n", (unsigned long long)atomic_load(&graph_launches));
	fprintf(f, "    \"graph_nodes_executed\": %llu,\n", (unsigned long long)nodes);
	fprintf(f, "    \"bytes_copied\": %llu,\n", (unsigned long long)atomic_load(&bytes_copied));
	fprintf(f, "    \"bytes_set\": %llu,\n", (unsigned long long)atomic_load(&bytes_set));
	fprintf(f, "    \"device_memory_peak_bytes\": %llu,\n", (unsigned long long)sim_mem_peak());
	fprintf(f, "    \"device_cpu_ns\": %llu\n  },\n", (unsigned long long)sim__device_cpu_total_ns());
	fprintf(f, "  \"modeled\": {\n    \"host_ns\": %llu,\n    \"device_end_ns\": %llu,\n"
		   "    \"total_ns\": %llu,\n    \"app_host_ns\": %llu,\n    \"kernel_extra_ns\": %llu,\n"
		   "    \"busy_ns\": {\"sm\": %llu, \"copy\": %llu, \"link\": %llu}\n  }\n}\n",
		(unsigned long long)sim_host_now(), (unsigned long long)device_end_ns,
		(unsigned long long)sim_host_now(), (unsigned long long)sim_host_app_ns(),
		(unsigned long long)sim_cost_kernel_extra_ns(),
		(unsigned long long)sim_res_busy_ns(SIM_RES_SM), (unsigned long long)sim_res_busy_ns(SIM_RES_COPY),
		(unsigned long long)sim_res_busy_ns(SIM_RES_LINK));
	if (fclose(f) != 0)
		sim_log("SIMCUDA_STATS: error writing %s", path);
}
