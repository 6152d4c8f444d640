/* sim_cost.c - unit tests of the software device's cost model (tests/simcuda/cost.c): the
 * program's own host time (simcuda_host_work) moves the modeled host clock, SIMCUDA_KERNEL_NS
 * adds device time to every kernel but cufold's own, and concurrent kernels share the SMs, so
 * two streams of big kernels take the sum of their throughput parts, not the larger one; an
 * update of one node of an instantiated graph costs the host 0.5 us (host_exec_update_ns), a
 * whole-graph update 0.1 us per node.
 * Intervals are read with events (an event's time is its record's modeled end).
 * tests layer; runs against the software device's libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdlib.h>

#include "simcuda.h"
#include "testlib.h"

#define EXTRA_NS 50000u              /* SIMCUDA_KERNEL_NS of this process (set in main) */
#define CALL_NS 300u                 /* cost.c: host_call_ns */
#define SUBMIT_NS 2300u              /* cost.c: host_submit_ns */
#define FLOOR_NS 2100u               /* cost.c: dev_kernel_eager_ns */
#define THREADS_PER_NS 270u          /* cost.c: dev_threads_per_ns */
#define UPDATE_NS 200u               /* cost.c: host_exec_update_ns */
#define GRAPH_UPDATE_NODE_NS 100u    /* cost.c: host_graph_update_node_ns */
#define BIG_BLOCKS 105469u           /* x 256 threads = 100 us of SM throughput */
#define BIG_WORK_NS (BIG_BLOCKS * 256u / THREADS_PER_NS)

/* A kernel named like cufold's own (the device's twin of it does nothing for count 0). */
static const char cufold_ptx[] =
	".version 8.4\n.target sm_90\n.address_size 64\n"
	".visible .entry cufold_batch_copy_buf(.param .u64 ranges, .param .u32 count)\n{\n\tret;\n}\n";

static CUfunction f_fill, f_cufold;
static CUdeviceptr buf;

static int setup(void **state)
{
	CUmodule m;

	(void)state;
	tl_init();
	f_fill = tl_func(tl_load_module("elementwise"), "fill");
	CHECK(cuModuleLoadData(&m, cufold_ptx));
	CHECK(cuModuleGetFunction(&f_cufold, m, "cufold_batch_copy_buf"));
	CHECK(cuMemAlloc(&buf, (size_t)BIG_BLOCKS * 256 * sizeof(float)));
	return 0;
}

static CUevent event(void)
{
	CUevent e;

	CHECK(cuEventCreate(&e, CU_EVENT_DEFAULT));
	return e;
}

/* Modeled ns from a's record to b's (both synchronized first). */
static double elapsed_ns(CUevent a, CUevent b)
{
	float ms = 0.0f;

	CHECK(cuEventSynchronize(b));
	CHECK(cuEventSynchronize(a));
	CHECK(cuEventElapsedTime(&ms, a, b));
	return (double)ms * 1e6;
}

static void fill(CUstream s, unsigned int blocks)
{
	float v = 1.0f;
	int n = (int)(blocks * 256);
	void *a[] = {&buf, &v, &n};

	CHECK(cuLaunchKernel(f_fill, blocks, 1, 1, 256, 1, 1, 0, s, a, NULL));
}

/* Between two records on an idle stream only host time passes: the second record's call and
 * submission, and whatever the program says it spent in between. */
static void test_host_work_moves_the_clock(void **state)
{
	CUstream s;
	CUevent a = event(), b = event();

	(void)state;
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventRecord(a, s));
	CHECK(cuEventRecord(b, s));
	assert_true(abs((int)(elapsed_ns(a, b) - (CALL_NS + SUBMIT_NS))) <= 1);
	CHECK(cuEventRecord(a, s));
	simcuda_host_work(1000000);
	simcuda_host_work(0);
	CHECK(cuEventRecord(b, s));
	assert_true(abs((int)(elapsed_ns(a, b) - (1000000 + CALL_NS + SUBMIT_NS))) <= 1);
	CHECK(cuStreamDestroy(s));
}

/* A kernel lasts its floor, its grid's throughput and SIMCUDA_KERNEL_NS; cufold's own kernels
 * get no extra time. (Big grids, so that the kernel, not the next record's submission, ends
 * the interval.) */
static void test_kernel_extra_time(void **state)
{
	CUstream s;
	CUevent a = event(), b = event();
	CUdeviceptr none = 0;
	unsigned int zero = 0;
	void *args[] = {&none, &zero};
	double t;

	(void)state;
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventRecord(a, s));
	fill(s, BIG_BLOCKS);
	CHECK(cuEventRecord(b, s));
	t = elapsed_ns(a, b);
	/* the launch is submitted a call and a submission after a; b waits for its end */
	assert_true(abs((int)(t - (CALL_NS + SUBMIT_NS + FLOOR_NS + BIG_WORK_NS + EXTRA_NS))) <= 1);
	CHECK(cuEventRecord(a, s));
	CHECK(cuLaunchKernel(f_cufold, BIG_BLOCKS, 1, 1, 256, 1, 1, 0, s, args, NULL));
	CHECK(cuEventRecord(b, s));
	t = elapsed_ns(a, b);
	assert_true(abs((int)(t - (CALL_NS + SUBMIT_NS + FLOOR_NS + BIG_WORK_NS))) <= 1);
	CHECK(cuStreamDestroy(s));
}

/* One big kernel takes floor + throughput; two on two streams at once take about the sum of
 * their throughput parts (the SMs serve one at a time), not the larger one. */
static void test_contention_bounds_overlap(void **state)
{
	CUstream s1, s2;
	CUevent start = event(), end1 = event(), end2 = event();
	const double work = (double)BIG_WORK_NS + EXTRA_NS;
	double one, two;

	(void)state;
	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventRecord(start, s1));
	fill(s1, BIG_BLOCKS);
	CHECK(cuEventRecord(end1, s1));
	one = elapsed_ns(start, end1);
	assert_true(abs((int)(one - (CALL_NS + SUBMIT_NS + FLOOR_NS + work))) <= 1);

	CHECK(cuEventRecord(start, s1));
	CHECK(cuStreamWaitEvent(s2, start, 0));
	fill(s1, BIG_BLOCKS);
	fill(s2, BIG_BLOCKS);
	CHECK(cuEventRecord(end2, s2));
	CHECK(cuStreamWaitEvent(s1, end2, 0));
	CHECK(cuEventRecord(end1, s1));
	two = elapsed_ns(start, end1);
	print_message("one kernel %.0f ns, two on two streams %.0f ns, throughput part %.0f ns\n", one,
		      two, work);
	assert_true(two >= 2 * work);
	assert_true(two <= 2 * work + 20000);
	CHECK(cuStreamDestroy(s1));
	CHECK(cuStreamDestroy(s2));
}

/* Patching a kernel node of an instantiated graph costs a call plus host_exec_update_ns on the
 * modeled host clock (0.5 us, costs.md s9), an event node's event likewise; a failed update
 * (a node of the wrong type) only the call. */
static void test_exec_update_cost(void **state)
{
	CUgraph g;
	CUgraphExec x;
	CUgraphNode kn, en;
	CUevent e = event();
	float v = 2.0f;
	int n = 256;
	void *a[] = {&buf, &v, &n};
	CUDA_KERNEL_NODE_PARAMS p = {
		.func = f_fill, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
		.blockDimX = 256, .blockDimY = 1, .blockDimZ = 1, .kernelParams = a,
	};
	uint64_t t0;

	(void)state;
	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddKernelNode(&kn, g, NULL, 0, &p));
	CHECK(cuGraphAddEventRecordNode(&en, g, &kn, 1, e));
	CHECK(cuGraphInstantiate(&x, g, 0));
	v = 3.0f;
	t0 = simcuda_host_now_ns();
	CHECK(cuGraphExecKernelNodeSetParams(x, kn, &p));
	assert_int_equal(simcuda_host_now_ns() - t0, CALL_NS + UPDATE_NS);
	t0 = simcuda_host_now_ns();
	CHECK(cuGraphExecEventRecordNodeSetEvent(x, en, e));
	assert_int_equal(simcuda_host_now_ns() - t0, CALL_NS + UPDATE_NS);
	t0 = simcuda_host_now_ns();
	assert_int_not_equal(cuGraphExecEventRecordNodeSetEvent(x, kn, e), CUDA_SUCCESS);
	assert_int_equal(simcuda_host_now_ns() - t0, CALL_NS);
	t0 = simcuda_host_now_ns();
	{
		CUgraphExecUpdateResultInfo info;

		CHECK(cuGraphExecUpdate(x, g, &info)); /* the whole graph: 0.1 us per node */
	}
	assert_int_equal(simcuda_host_now_ns() - t0, CALL_NS + 2 * GRAPH_UPDATE_NODE_NS);
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
}

/* simcuda_device_cpu_ns: the calling thread's CPU time inside the device's calls grows over a
 * call that runs a kernel (a synchronize interprets it) and not between calls (what a tool
 * timing its own work subtracts, cufold's own_ns_per_op). */
static void test_device_cpu_time(void **state)
{
	float v = 1.0f;
	int n = 1 << 16;
	void *a[] = {&buf, &v, &n};
	uint64_t t0, t1;
	volatile uint64_t spin = 0;

	(void)state;
	t0 = simcuda_device_cpu_ns();
	CHECK(cuLaunchKernel(f_fill, 256, 1, 1, 256, 1, 1, 0, NULL, a, NULL));
	CHECK(cuCtxSynchronize());
	t1 = simcuda_device_cpu_ns();
	assert_true(t1 > t0);
	for (int i = 0; i < 1000000; i++)
		spin += (uint64_t)i;
	assert_int_equal(simcuda_device_cpu_ns(), t1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_work_moves_the_clock),
		cmocka_unit_test(test_kernel_extra_time),
		cmocka_unit_test(test_contention_bounds_overlap),
		cmocka_unit_test(test_exec_update_cost),
		cmocka_unit_test(test_device_cpu_time),
	};

	/* read once by the device, at the first kernel it times */
	setenv("SIMCUDA_KERNEL_NS", "50000", 1);
	return cmocka_run_group_tests(tests, setup, NULL);
}
