/* sim_capture.c - unit tests of stream capture on the software device: a captured sequence
 * replayed as a graph equals the eager run, invalidation by unsafe calls, fork/join across two
 * streams, the capture queries and their errors. tests layer; runs against the software
 * device's libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define N 512
#define ROUNDS 30

static CUmodule mod;
static CUfunction f_scale, f_axpy, f_add;
static CUstream s1, s2;
static CUdeviceptr da, db, dc, dd;

static int setup(void **state)
{
	(void)state;
	tl_init();
	mod = tl_load_module("elementwise");
	f_scale = tl_func(mod, "scale");
	f_axpy = tl_func(mod, "axpy");
	f_add = tl_func(mod, "add");
	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&da, N * sizeof(float)));
	CHECK(cuMemAlloc(&db, N * sizeof(float)));
	CHECK(cuMemAlloc(&dc, N * sizeof(float)));
	CHECK(cuMemAlloc(&dd, N * sizeof(float)));
	return 0;
}

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static void launch_scale(CUstream s, CUdeviceptr out, CUdeviceptr in, float k)
{
	int n = N;
	void *args[] = {&out, &in, &k, &n};

	CHECK(cuLaunchKernel(f_scale, N / 128, 1, 1, 128, 1, 1, 0, s, args, NULL));
}

static void launch_axpy(CUstream s, CUdeviceptr y, CUdeviceptr x, float a)
{
	int n = N;
	void *args[] = {&y, &x, &a, &n};

	CHECK(cuLaunchKernel(f_axpy, N / 128, 1, 1, 128, 1, 1, 0, s, args, NULL));
}

static void launch_add(CUstream s, CUdeviceptr out, CUdeviceptr a, CUdeviceptr b)
{
	int n = N;
	void *args[] = {&out, &a, &b, &n};

	CHECK(cuLaunchKernel(f_add, N / 128, 1, 1, 128, 1, 1, 0, s, args, NULL));
}

static void reset(void)
{
	CHECK(cuMemsetD32Async(da, 0, N, s1));
	CHECK(cuMemsetD32Async(db, 0, N, s1));
	CHECK(cuMemsetD32Async(dc, 0, N, s1));
	CHECK(cuMemsetD32Async(dd, 0, N, s1));
	CHECK(cuStreamSynchronize(s1));
}

/* The work captured in test_single_stream, also run eagerly: a = 1.5 everywhere, x[i] = i
 * from the host, b = 2a, b += 0.5 x, then b to the host. */
static void sequence(CUstream s, const float *x, float *out)
{
	CHECK(cuMemsetD32Async(da, bits(1.5f), N, s));
	CHECK(cuMemcpyHtoDAsync(dc, x, N * sizeof(float), s));
	launch_scale(s, db, da, 2.0f);
	launch_axpy(s, db, dc, 0.5f);
	CHECK(cuMemcpyDtoHAsync(out, db, N * sizeof(float), s));
}

static void test_single_stream(void **state)
{
	float *x, *eager, *out;
	CUgraph g;
	CUgraphExec ex;
	CUstreamCaptureStatus st;
	size_t n = 0;
	CUgraphNode nodes[8];
	CUgraphNodeType t;

	(void)state;
	CHECK(cuMemAllocHost((void **)&x, N * sizeof(float)));
	CHECK(cuMemAllocHost((void **)&eager, N * sizeof(float)));
	CHECK(cuMemAllocHost((void **)&out, N * sizeof(float)));
	for (int i = 0; i < N; i++)
		x[i] = (float)i;
	reset();
	sequence(s1, x, eager);
	CHECK(cuStreamSynchronize(s1));
	assert_true(eager[3] == 3.0f + 1.5f);

	reset();
	memset(out, 0, N * sizeof(float));
	CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(cuStreamIsCapturing(s1, &st));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
	sequence(s1, x, out);
	CHECK(cuStreamEndCapture(s1, &g));
	CHECK(cuStreamIsCapturing(s1, &st));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
	CHECK(cuCtxSynchronize());
	assert_true(out[3] == 0.0f); /* nothing ran while capturing */

	CHECK(cuGraphGetNodes(g, NULL, &n));
	assert_int_equal(n, 5);
	n = 8;
	CHECK(cuGraphGetNodes(g, nodes, &n));
	CHECK(cuGraphNodeGetType(nodes[0], &t));
	assert_int_equal(t, CU_GRAPH_NODE_TYPE_MEMSET);
	CHECK(cuGraphNodeGetType(nodes[2], &t));
	assert_int_equal(t, CU_GRAPH_NODE_TYPE_KERNEL);
	CHECK(cuGraphNodeGetType(nodes[4], &t));
	assert_int_equal(t, CU_GRAPH_NODE_TYPE_MEMCPY);
	n = 8;
	CHECK(cuGraphGetRootNodes(g, nodes, &n));
	assert_int_equal(n, 1); /* a chain: stream order became edges */

	CHECK(cuGraphInstantiate(&ex, g, 0));
	for (int r = 0; r < ROUNDS; r++) {
		reset();
		memset(out, 0, N * sizeof(float));
		/* the host source is read when the graph runs, as in CUDA */
		x[7] = (float)r;
		eager[7] = 0.5f * (float)r + 3.0f;
		CHECK(cuGraphLaunch(ex, s1));
		CHECK(cuStreamSynchronize(s1));
		assert_memory_equal(out, eager, N * sizeof(float));
	}
	CHECK(cuGraphExecDestroy(ex));
	CHECK(cuGraphDestroy(g));
	CHECK(cuMemFreeHost(x));
	CHECK(cuMemFreeHost(eager));
	CHECK(cuMemFreeHost(out));
}

static void test_invalidation(void **state)
{
	CUgraph g = (CUgraph)1;
	CUstreamCaptureStatus st;
	CUstreamCaptureMode mode;

	(void)state;
	/* synchronizing the capturing stream */
	CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	launch_scale(s1, db, da, 2.0f);
	assert_int_equal(cuStreamSynchronize(s1), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CHECK(cuStreamIsCapturing(s1, &st));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
	assert_int_equal(cuMemsetD32Async(da, 0, N, s1), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	assert_int_equal(cuStreamEndCapture(s1, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	assert_null(g);
	CHECK(cuStreamIsCapturing(s1, &st));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
	CHECK(cuStreamSynchronize(s1)); /* usable again */

	/* a context-wide synchronization under a global-mode capture */
	CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	assert_int_equal(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	assert_int_equal(cuStreamEndCapture(s1, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

	/* ... allowed under a relaxed capture, and for a thread in relaxed mode */
	CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_RELAXED));
	launch_scale(s1, db, da, 2.0f);
	CHECK(cuCtxSynchronize());
	CHECK(cuStreamSynchronize(s2)); /* another stream is always fine */
	CHECK(cuStreamEndCapture(s1, &g));
	CHECK(cuGraphDestroy(g));
	CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	mode = CU_STREAM_CAPTURE_MODE_RELAXED;
	CHECK(cuThreadExchangeStreamCaptureMode(&mode));
	assert_int_equal(mode, CU_STREAM_CAPTURE_MODE_GLOBAL);
	CHECK(cuCtxSynchronize());
	CHECK(cuThreadExchangeStreamCaptureMode(&mode));
	assert_int_equal(mode, CU_STREAM_CAPTURE_MODE_RELAXED);
	CHECK(cuStreamEndCapture(s1, &g));
	CHECK(cuGraphDestroy(g));
}

/* s1: a = 2; fork to s2: b = 3a; s1: c = 1.5 (concurrently); join: d = b + c. */
static void fork_join(CUevent fork, CUevent join)
{
	CHECK(cuMemsetD32Async(da, bits(2.0f), N, s1));
	CHECK(cuEventRecord(fork, s1));
	CHECK(cuStreamWaitEvent(s2, fork, 0));
	launch_scale(s2, db, da, 3.0f);
	CHECK(cuEventRecord(join, s2));
	CHECK(cuMemsetD32Async(dc, bits(1.5f), N, s1));
	CHECK(cuStreamWaitEvent(s1, join, 0));
	launch_add(s1, dd, db, dc);
}

static void test_fork_join(void **state)
{
	CUevent fork, join;
	CUgraph g;
	CUgraphExec ex;
	CUstreamCaptureStatus st;
	cuuint64_t id1 = 0, id2 = 0;
	CUgraph g2 = NULL;
	const CUgraphNode *deps = NULL;
	size_t ndeps = 0, n;
	CUgraphNode roots[4];
	float out[N];

	(void)state;
	CHECK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
	reset();
	CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	fork_join(fork, join);
	/* s2 joined the capture */
	CHECK(cuStreamGetCaptureInfo(s1, &st, &id1, NULL, NULL, NULL, NULL));
	CHECK(cuStreamGetCaptureInfo(s2, &st, &id2, &g2, &deps, NULL, &ndeps));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
	assert_true(id1 == id2);
	assert_non_null(g2);
	assert_int_equal(ndeps, 1);
	assert_non_null(deps);
	/* only the origin ends it */
	assert_int_equal(cuStreamEndCapture(s2, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
	CHECK(cuStreamEndCapture(s1, &g));
	assert_ptr_equal(g, g2);
	CHECK(cuStreamIsCapturing(s2, &st));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
	n = 0;
	CHECK(cuGraphGetNodes(g, NULL, &n));
	assert_int_equal(n, 4);
	n = 4;
	CHECK(cuGraphGetRootNodes(g, roots, &n));
	assert_int_equal(n, 1);
	n = 0;
	CHECK(cuGraphGetEdges(g, NULL, NULL, NULL, &n));
	assert_int_equal(n, 4); /* a->b, a->c, b->d, c->d */

	CHECK(cuGraphInstantiate(&ex, g, 0));
	for (int r = 0; r < ROUNDS; r++) {
		reset();
		CHECK(cuGraphLaunch(ex, s1));
		CHECK(cuMemcpyDtoHAsync(out, dd, sizeof(out), s1));
		CHECK(cuStreamSynchronize(s1));
		for (int i = 0; i < N; i++)
			assert_true(out[i] == 7.5f);
	}
	CHECK(cuGraphExecDestroy(ex));
	CHECK(cuGraphDestroy(g));

	/* the events were recorded in a capture that has ended: an ordinary wait now */
	CHECK(cuStreamWaitEvent(s2, fork, 0));
	CHECK(cuStreamSynchronize(s2));

	/* forked work that never joins back */
	CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(cuEventRecord(fork, s1));
	CHECK(cuStreamWaitEvent(s2, fork, 0));
	launch_scale(s2, db, da, 3.0f);
	assert_int_equal(cuStreamEndCapture(s1, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
	CHECK(cuStreamIsCapturing(s2, &st));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
	CHECK(cuEventDestroy(fork));
	CHECK(cuEventDestroy(join));
}

static void test_errors_and_info(void **state)
{
	CUgraph g;
	CUstreamCaptureStatus st;
	const CUgraphNode *deps = NULL;
	const CUgraphEdgeData *edges = NULL;
	size_t ndeps = 9;
	cuuint64_t id = 0;
	CUgraphNode first;

	(void)state;
	assert_int_equal(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	assert_int_equal(cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL),
			 CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	assert_int_equal(cuStreamEndCapture(s1, &g), CUDA_ERROR_ILLEGAL_STATE);
	CHECK(cuStreamGetCaptureInfo(s1, &st, &id, NULL, &deps, NULL, &ndeps));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
	assert_int_equal(ndeps, 0);

	CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	assert_int_equal(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
	CHECK(cuStreamGetCaptureInfo(s1, &st, &id, NULL, &deps, &edges, &ndeps));
	assert_int_equal(ndeps, 0);
	launch_scale(s1, db, da, 2.0f);
	CHECK(cuStreamGetCaptureInfo(s1, &st, &id, NULL, &deps, &edges, &ndeps));
	assert_int_equal(ndeps, 1);
	assert_non_null(edges);
	first = deps[0];
	{
		CUgraph live = NULL;

		/* the graph being captured into can be looked at, not destroyed */
		CHECK(cuStreamGetCaptureInfo(s1, &st, NULL, &live, NULL, NULL, NULL));
		assert_int_equal(cuGraphDestroy(live), CUDA_ERROR_ILLEGAL_STATE);
		assert_int_equal(cuGraphDestroyNode(first), CUDA_ERROR_ILLEGAL_STATE);
	}
	launch_scale(s1, dc, db, 2.0f);
	/* back to depending on the first kernel only: the two later kernels are siblings */
	CHECK(cuStreamUpdateCaptureDependencies(s1, &first, NULL, 1, CU_STREAM_SET_CAPTURE_DEPENDENCIES));
	launch_scale(s1, dd, db, 2.0f);
	CHECK(cuStreamEndCapture(s1, &g));
	{
		size_t n = 0;

		CHECK(cuGraphGetEdges(g, NULL, NULL, NULL, &n));
		assert_int_equal(n, 2);
	}
	CHECK(cuGraphDestroy(g));
}

/* A graph launched into a capturing stream becomes part of the captured graph; capture into
 * an existing graph after a given node. */
static void test_graph_in_capture_and_capture_to_graph(void **state)
{
	CUgraph inner, g, target;
	CUgraphExec ix, ex;
	CUgraphNode m, first;
	CUDA_MEMSET_NODE_PARAMS ms;
	float out[N];
	size_t n = 0;

	(void)state;
	memset(&ms, 0, sizeof(ms));
	ms.dst = da;
	ms.value = bits(4.0f);
	ms.elementSize = 4;
	ms.width = N;
	ms.height = 1;
	CHECK(cuGraphCreate(&inner, 0));
	CHECK(cuGraphAddMemsetNode(&m, inner, NULL, 0, &ms, NULL));
	CHECK(cuGraphInstantiate(&ix, inner, 0));

	reset();
	CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(cuGraphLaunch(ix, s1));
	launch_scale(s1, db, da, 0.5f);
	CHECK(cuStreamEndCapture(s1, &g));
	CHECK(cuGraphGetNodes(g, NULL, &n));
	assert_int_equal(n, 2);
	CHECK(cuGraphInstantiate(&ex, g, 0));
	for (int r = 0; r < ROUNDS; r++) {
		reset();
		CHECK(cuGraphLaunch(ex, s1));
		CHECK(cuMemcpyDtoHAsync(out, db, sizeof(out), s1));
		CHECK(cuStreamSynchronize(s1));
		for (int i = 0; i < N; i++)
			assert_true(out[i] == 2.0f);
	}
	CHECK(cuGraphExecDestroy(ex));
	CHECK(cuGraphDestroy(g));

	CHECK(cuGraphCreate(&target, 0));
	CHECK(cuGraphAddMemsetNode(&first, target, NULL, 0, &ms, NULL));
	CHECK(cuStreamBeginCaptureToGraph(s1, target, &first, NULL, 1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	launch_scale(s1, db, da, 0.25f);
	CHECK(cuStreamEndCapture(s1, &g));
	assert_ptr_equal(g, target);
	n = 0;
	CHECK(cuGraphGetEdges(g, NULL, NULL, NULL, &n));
	assert_int_equal(n, 1);
	CHECK(cuGraphInstantiate(&ex, g, 0));
	reset();
	CHECK(cuGraphLaunch(ex, s1));
	CHECK(cuMemcpyDtoHAsync(out, db, sizeof(out), s1));
	CHECK(cuStreamSynchronize(s1));
	assert_true(out[0] == 1.0f && out[N - 1] == 1.0f);
	CHECK(cuGraphExecDestroy(ex));
	CHECK(cuGraphDestroy(g));
	CHECK(cuGraphExecDestroy(ix));
	CHECK(cuGraphDestroy(inner));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_stream),
		cmocka_unit_test(test_invalidation),
		cmocka_unit_test(test_fork_join),
		cmocka_unit_test(test_errors_and_info),
		cmocka_unit_test(test_graph_in_capture_and_capture_to_graph),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
