/* cost.c - the software device's cost model: a modeled host clock and device durations, so a
 * program's step time with and without cufold can be compared without a GPU. tests/simcuda layer.
 *
 * The model is deliberately simple and every constant has a public source
 * (../shared/reference/costs.md gathers them; section numbers below refer to it):
 *
 *  constant               value   source
 *  host_call_ns            300    cuStreamSynchronize on an idle stream 0.30 us (CUDA.jl profiler, s1)
 *  host_submit_ns         2300    + host_call = 2.6 us per async enqueue (2.6-2.8 us, ocannl#488, s1;
 *                                 bare cuLaunchKernel 1.3 us, 4.86 us on V100: the middle of the range)
 *  host_graph_launch_ns   2200    + host_call = 2.5 us per cuGraphLaunch (CUDA 12.6 constant-time
 *                                 launch of straight-line graphs, NVIDIA blog 2024, s3)
 *  host_graph_node_ns        1    ~1 ns per node in that launch (same source)
 *  host_exec_update_ns     200    + host_call = 0.5 us per update of one node of an instantiated graph
 *                                 (cuGraphExec*NodeSetParams/SetEvent, cuGraphExecNodeSetParams): the
 *                                 reference's estimate (s9; NVIDIA calls it "minimal cost", and on B200
 *                                 SetParams + cuGraphLaunch beat one cuLaunchKernel, s3); no per-call
 *                                 figure is published (s11). SIMCUDA_EXEC_UPDATE_NS=N replaces it (tests
 *                                 of a device where patching costs more than eager submission)
 *  host_graph_update_node_ns 100   per node of the graph in a cuGraphExecUpdate: 36 us over ~350-node
 *                                 graphs, V100 (lablup/mlxcel#1545, s3/s9); cufold does not use it:
 *                                 the source graph's moved nodes must be set first, a call each
 *  dev_kernel_eager_ns    2100    tiny kernel per launch on a stream, H100 (Hazy Research 2025, s2)
 *  dev_kernel_graph_ns    1300    the same kernel as a graph node, H100 (same source, s2)
 *  dev_threads_per_ns      270    132 SMs x 2048 resident threads turned over about once per us
 *                                 (H200 spec, s5): a kernel's time grows past the floor with its grid
 *  dev_copy_ns            1400    small device-to-device copy on Hopper, 1.43 us (vllm#6317, s4)
 *  dev_d2d_bytes_per_ns   3300    H200 copy bandwidth 3.3 TB/s for large working sets (gpu-benches, s5)
 *  dev_h2d_ns             2000    small device-to-host copy 1.99 us (vllm#6317, s4)
 *  dev_h2d_bytes_per_ns     50    PCIe Gen5 x16, about 50 GB/s usable (spec, s5)
 *  dev_memset_ns           800    small memset 0.79 us (vllm#6317, s4)
 *  dev_memset_bytes_per_ns 3900   write-only bandwidth 3.90 TB/s on H200 (gpu-benches, s5)
 *  dev_graph_node_gap_ns   560    an empty / event node in a graph, 0.56 us (NVIDIA blog 2024, s3)
 *
 * Host: one host clock. Every entry point advances it by host_call_ns; a call that enqueues
 * stream work adds host_submit_ns; a graph launch adds host_graph_launch_ns plus per-node cost;
 * an update of one node of an instantiated graph adds host_exec_update_ns, a whole-graph update
 * host_graph_update_node_ns per node of the graph.
 * The program's own host time between its calls (framework code, Python: PyTorch eager spends
 * 5-15 us per op) is charged by the program itself through simcuda_host_work (simcuda.h; the
 * workloads' --app-us, the test programs' APP_US), before each call that enqueues work, so the
 * charge stands whether or not a preloaded library defers the call. A synchronization moves
 * the host clock to the end of the work it waited for. cufold's own CPU time is not modeled
 * here: scripts/bench adds it from cufold's report.
 *
 * Device: a work item is ready when it has been submitted and its dependencies have ended. Its
 * time has two parts:
 *  - a latency floor (a kernel's launch floor, a copy's or memset's fixed cost, an event or
 *    empty graph node), which overlaps freely with anything else running: independent streams
 *    and independent graph branches overlap their floors;
 *  - a throughput part, served after the floor by one of three shared resources, one item at a
 *    time. A resource is work-conserving: an item takes its idle time from the end of the floor
 *    on, split over idle gaps if need be. The resources:
 *      SM    kernels: grid threads / dev_threads_per_ns, plus SIMCUDA_KERNEL_NS=N (N ns more
 *            for every kernel of the program; cufold's own kernels, named cufold_*, excepted)
 *      copy  copies within device memory (bytes / dev_d2d_bytes_per_ns) and memsets
 *            (bytes / dev_memset_bytes_per_ns)
 *      link  copies to or from host memory (bytes / dev_h2d_bytes_per_ns)
 *    So overlap is bounded by the device's throughput: two streams of big kernels take about the
 *    sum of their throughput parts, not the larger one. A lone item takes floor + throughput.
 * Eager stream work pays the stream launch floor; graph nodes the graph floor. A graph launch's
 * nodes are dispatched one per dev_graph_node_gap_ns in topological order (an assumption: the
 * front end issues nodes serially, each no faster than an empty node runs), so independent
 * branches of a graph overlap only as fast as their nodes can be handed out.
 * A program's modeled time is the host clock at exit, after all work has finished.
 *
 * Order: intervals are computed by sched.c's timing pass, which times all queued work at every
 * synchronization (any drain), in order of ready time and then of submission, handing the
 * resources out in that order. Modeled times are thus a function of the program's calls alone:
 * the same under every SIMCUDA_SEED and SIMCUDA_SCHEDULE, although the work runs in random order.
 *
 * Assumptions and limits:
 *  - one SM pool: a kernel's throughput part is the whole device's for its duration, even when
 *    its grid would fill only part of it, so concurrent kernels gain by overlapping only their
 *    floors (pessimistic for concurrent mid-size kernels; close for tiny kernels, whose floors
 *    dominate, and for kernels that fill the device);
 *  - SIMCUDA_KERNEL_NS stands for kernels doing more work, so it is throughput (SM) time, and it
 *    is per launch: a launch that cufold merges from several launches of one kernel over
 *    abutting ranges (batch-elementwise, CUFOLD_OPT=2) is charged once (flattering when the
 *    extra work grows with the range); a multi-instance variant (cufold's batch-kernel, issue 24)
 *    is charged once per instance, since it does the work of the k launches it stands for;
 *  - work queued before a synchronization is timed at it: work submitted afterwards may still
 *    take the idle time a resource has left before already-timed work, but never time already
 *    given (the hardware would have let it in between only if it became ready first);
 *  - kernels, copies and the host link do not slow each other down (separate engines), and a
 *    kernel's floor does not occupy the SMs. */
#include "sim_module_int.h"

#include "rewrite/kernels/variant_table.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda.h"

const struct sim_cost_model sim_cost = {
	.host_call_ns = 300,
	.host_submit_ns = 2300,
	.host_graph_launch_ns = 2200,
	.host_graph_node_ns = 1,
	.host_exec_update_ns = 200,
	.host_graph_update_node_ns = 100,
	.dev_kernel_eager_ns = 2100,
	.dev_kernel_graph_ns = 1300,
	.dev_threads_per_ns = 270.0,
	.dev_copy_ns = 1400,
	.dev_d2d_bytes_per_ns = 3300.0,
	.dev_h2d_ns = 2000,
	.dev_h2d_bytes_per_ns = 50.0,
	.dev_memset_ns = 800,
	.dev_memset_bytes_per_ns = 3900.0,
	.dev_graph_node_gap_ns = 560,
};

static _Atomic uint64_t host_clock_ns;
static _Atomic uint64_t app_host_ns;   /* the program's own host time (simcuda_host_work) */

uint64_t sim_host_now(void)
{
	return atomic_load(&host_clock_ns);
}

void sim_host_charge(uint64_t ns)
{
	atomic_fetch_add(&host_clock_ns, ns);
}

void sim_host_wait_until(uint64_t device_ns)
{
	uint64_t now = atomic_load(&host_clock_ns);

	while (now < device_ns && !atomic_compare_exchange_weak(&host_clock_ns, &now, device_ns))
		;
}

/* Exported (simcuda.h): no device lock, no call counted; the program is not calling the driver. */
void simcuda_host_work(uint64_t ns)
{
	atomic_fetch_add(&app_host_ns, ns);
	sim_host_charge(ns);
}

uint64_t sim_host_app_ns(void)
{
	return atomic_load(&app_host_ns);
}

/* ------------------------------------------------------------------ shared resources */

struct busy {
	uint64_t s, e;               /* busy over [s, e) */
};

struct timeline {
	struct busy *iv;             /* disjoint busy intervals, sorted, never touching */
	size_t n, cap;               /* used and allocated entries */
	uint64_t served_ns;          /* work served so far (stats) */
};

static struct timeline timelines[SIM_RES_COUNT];

/* Index of the first interval ending after t (n when none). */
static size_t first_ending_after(const struct timeline *t, uint64_t at)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->iv[mid].e > at)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Mark [s, e) busy; it lies in the idle gap just before interval i. */
static void mark_busy(struct timeline *t, size_t i, uint64_t s, uint64_t e)
{
	bool joins_prev = i > 0 && t->iv[i - 1].e == s;
	bool joins_next = i < t->n && t->iv[i].s == e;

	if (joins_prev && joins_next) {
		t->iv[i - 1].e = t->iv[i].e;
		memmove(&t->iv[i], &t->iv[i + 1], (t->n - i - 1) * sizeof(*t->iv));
		t->n--;
	} else if (joins_prev) {
		t->iv[i - 1].e = e;
	} else if (joins_next) {
		t->iv[i].s = s;
	} else {
		if (t->n == t->cap) {
			size_t cap = t->cap ? 2 * t->cap : 256;
			struct busy *iv = realloc(t->iv, cap * sizeof(*iv));

			if (!iv) {
				sim_log("out of host memory in the cost model");
				abort();
			}
			t->iv = iv;
			t->cap = cap;
		}
		memmove(&t->iv[i + 1], &t->iv[i], (t->n - i) * sizeof(*t->iv));
		t->iv[i] = (struct busy){ s, e };
		t->n++;
	}
}

uint64_t sim_res_serve(enum sim_res r, uint64_t at, uint64_t work_ns)
{
	struct timeline *t;
	uint64_t cur = at;

	if (r <= SIM_RES_NONE || r >= SIM_RES_COUNT)
		return at + work_ns;
	t = &timelines[r];
	t->served_ns += work_ns;
	while (work_ns) {
		size_t i = first_ending_after(t, cur);
		uint64_t gap_end, take;

		if (i < t->n && t->iv[i].s <= cur) {
			cur = t->iv[i].e; /* busy at cur: wait for the end of that stretch */
			continue;
		}
		gap_end = i < t->n ? t->iv[i].s : UINT64_MAX;
		take = gap_end - cur < work_ns ? gap_end - cur : work_ns;
		mark_busy(t, i, cur, cur + take);
		cur += take;
		work_ns -= take;
	}
	return cur;
}

void sim_res_forget_before(uint64_t before)
{
	for (int r = SIM_RES_NONE + 1; r < SIM_RES_COUNT; r++) {
		struct timeline *t = &timelines[r];
		size_t k = first_ending_after(t, before);

		if (k) {
			memmove(t->iv, &t->iv[k], (t->n - k) * sizeof(*t->iv));
			t->n -= k;
		}
	}
}

uint64_t sim_res_busy_ns(enum sim_res r)
{
	return r > SIM_RES_NONE && r < SIM_RES_COUNT ? timelines[r].served_ns : 0;
}

/* ------------------------------------------------------------------ exec node updates */

static pthread_once_t update_once = PTHREAD_ONCE_INIT;
static uint64_t exec_update_ns; /* sim_cost.host_exec_update_ns, or SIMCUDA_EXEC_UPDATE_NS */

static void read_exec_update(void)
{
	const char *v = getenv("SIMCUDA_EXEC_UPDATE_NS");
	char *end = NULL;

	exec_update_ns = sim_cost.host_exec_update_ns;
	if (!v || !*v)
		return;
	exec_update_ns = strtoull(v, &end, 10);
	if (*end || *v == '-') {
		sim_log("SIMCUDA_EXEC_UPDATE_NS=%s is not a number of ns; using %llu", v,
			(unsigned long long)sim_cost.host_exec_update_ns);
		exec_update_ns = sim_cost.host_exec_update_ns;
	}
}

void sim_cost_exec_update(void)
{
	pthread_once(&update_once, read_exec_update);
	sim_host_charge(exec_update_ns);
}

void sim_cost_graph_exec_update(uint64_t nodes)
{
	sim_host_charge(nodes * sim_cost.host_graph_update_node_ns);
}

/* ------------------------------------------------------------------ kernels */

static pthread_once_t extra_once = PTHREAD_ONCE_INIT;
static uint64_t kernel_extra_ns; /* SIMCUDA_KERNEL_NS */

static void read_kernel_extra(void)
{
	const char *v = getenv("SIMCUDA_KERNEL_NS");
	char *end = NULL;

	if (!v || !*v)
		return;
	kernel_extra_ns = strtoull(v, &end, 10);
	if (*end || *v == '-') {
		sim_log("SIMCUDA_KERNEL_NS=%s is not a number of ns; using 0", v);
		kernel_extra_ns = 0;
	}
}

uint64_t sim_cost_kernel_extra_ns(void)
{
	pthread_once(&extra_once, read_kernel_extra);
	return kernel_extra_ns;
}

/* The launches a kernel call does the work of: k for a cufold multi-instance variant
 * (rewrite/kernels/variant_table.h: its table's first word), else 1. */
static uint32_t instances(const struct sim_kernel_call *k)
{
	const char *name = k->fn->entry->name;
	size_t n = strlen(name), sl = strlen(CF_VARIANT_SUFFIX);
	uint32_t c;

	if (n <= sl || strcmp(name + n - sl, CF_VARIANT_SUFFIX) || k->fn->entry->param_bytes != CF_VARIANT_TABLE_BYTES)
		return 1;
	memcpy(&c, k->param_buf, sizeof(c));
	return c >= 1 && c <= CF_VARIANT_MAX ? c : 1;
}

void sim_cost_kernel(const struct sim_kernel_call *k, bool in_graph, struct sim_cost_parts *out)
{
	double threads = (double)k->grid.x * k->grid.y * k->grid.z * k->block.x * k->block.y * k->block.z;
	const char *name = k->fn->entry->name;

	out->floor_ns = in_graph ? sim_cost.dev_kernel_graph_ns : sim_cost.dev_kernel_eager_ns;
	out->work_ns = (uint64_t)(threads / sim_cost.dev_threads_per_ns);
	if (strncmp(name, "cufold_", 7) != 0)
		out->work_ns += sim_cost_kernel_extra_ns() * instances(k);
	out->res = SIM_RES_SM;
}
