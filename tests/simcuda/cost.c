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
 * Host: every entry point advances one host clock by host_call_ns; a call that enqueues stream
 * work adds host_submit_ns; a graph launch adds host_graph_launch_ns plus per-node cost. A
 * synchronization moves the host clock to the end of the work it waited for.
 * Device: a work item starts when its dependencies have ended and it was submitted; streams run
 * concurrently without contention (an optimistic simplification that favours neither eager nor
 * graph execution). Eager stream work pays the stream launch floor; graph nodes the graph floor.
 * A graph launch's nodes are dispatched one per dev_graph_node_gap_ns in topological order (an
 * assumption: the front end issues nodes serially, each no faster than an empty node runs), so
 * independent branches of a graph overlap only as fast as their nodes can be handed out.
 * A program's modeled time is the host clock at exit, after all work has finished. */
#include "sim_int.h"

#include <stdatomic.h>

const struct sim_cost_model sim_cost = {
	.host_call_ns = 300,
	.host_submit_ns = 2300,
	.host_graph_launch_ns = 2200,
	.host_graph_node_ns = 1,
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

uint64_t sim_cost_kernel(const struct sim_kernel_call *k, bool in_graph)
{
	double threads = (double)k->grid.x * k->grid.y * k->grid.z * k->block.x * k->block.y * k->block.z;
	uint64_t floor = in_graph ? sim_cost.dev_kernel_graph_ns : sim_cost.dev_kernel_eager_ns;

	return floor + (uint64_t)(threads / sim_cost.dev_threads_per_ns);
}
