/* sim_graph.c - unit tests of the software device's graph API: building and querying graphs,
 * instantiating and launching them in the random schedule, exec parameter changes and update,
 * event nodes across streams. tests layer; runs against the software device's libcuda.so.1.
 *
 * The schedule is random within one process too (the generator runs on across drains), so a
 * test that launches a graph many times sees many interleavings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define N 256          /* floats per buffer */
#define ROUNDS 40      /* launches of a graph whose order is checked */

static CUmodule mod;
static CUfunction f_scale, f_fill;
static CUstream s1, s2;
static CUdeviceptr da, db, dc;

static float host_pinned_val(const float *p)
{
	return p[0];
}

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static int setup(void **state)
{
	(void)state;
	tl_init();
	mod = tl_load_module("elementwise");
	f_scale = tl_func(mod, "scale");
	f_fill = tl_func(mod, "fill");
	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&da, N * sizeof(float)));
	CHECK(cuMemAlloc(&db, N * sizeof(float)));
	CHECK(cuMemAlloc(&dc, N * sizeof(float)));
	return 0;
}

/* ------------------------------------------------------------------ node helpers */

static CUDA_MEMSET_NODE_PARAMS memset32(CUdeviceptr dst, float v)
{
	CUDA_MEMSET_NODE_PARAMS p;

	memset(&p, 0, sizeof(p));
	p.dst = dst;
	p.value = bits(v);
	p.elementSize = 4;
	p.width = N;
	p.height = 1;
	return p;
}

static CUDA_MEMCPY3D copy_d2d(CUdeviceptr dst, CUdeviceptr src)
{
	CUDA_MEMCPY3D p;

	memset(&p, 0, sizeof(p));
	p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	p.srcDevice = src;
	p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	p.dstDevice = dst;
	p.WidthInBytes = N * sizeof(float);
	p.Height = 1;
	p.Depth = 1;
	return p;
}

static CUDA_MEMCPY3D copy_d2h(void *dst, CUdeviceptr src)
{
	CUDA_MEMCPY3D p = copy_d2d(0, src);

	p.dstMemoryType = CU_MEMORYTYPE_HOST;
	p.dstHost = dst;
	return p;
}

static CUDA_MEMCPY3D copy_h2d(CUdeviceptr dst, const void *src)
{
	CUDA_MEMCPY3D p = copy_d2d(dst, 0);

	p.srcMemoryType = CU_MEMORYTYPE_HOST;
	p.srcHost = src;
	return p;
}

/* Kernel parameters live in a struct so a node's params array stays valid while it is used. */
struct scale_args {
	CUdeviceptr out, in;
	float s;
	int n;
	void *ptrs[4];
};

static CUDA_KERNEL_NODE_PARAMS scale_node(struct scale_args *a, CUdeviceptr out, CUdeviceptr in, float s)
{
	CUDA_KERNEL_NODE_PARAMS p;

	a->out = out;
	a->in = in;
	a->s = s;
	a->n = N;
	a->ptrs[0] = &a->out;
	a->ptrs[1] = &a->in;
	a->ptrs[2] = &a->s;
	a->ptrs[3] = &a->n;
	memset(&p, 0, sizeof(p));
	p.func = f_scale;
	p.gridDimX = N / 64;
	p.gridDimY = p.gridDimZ = 1;
	p.blockDimX = 64;
	p.blockDimY = p.blockDimZ = 1;
	p.kernelParams = a->ptrs;
	return p;
}

static void all_equal(const float *p, float v)
{
	for (int i = 0; i < N; i++)
		if (p[i] != v) {
			fail_msg("element %d is %g, expected %g", i, (double)p[i], (double)v);
			return;
		}
}

static void zero_buffers(CUstream s)
{
	CHECK(cuMemsetD32Async(da, 0, N, s));
	CHECK(cuMemsetD32Async(db, 0, N, s));
	CHECK(cuMemsetD32Async(dc, 0, N, s));
}

/* ------------------------------------------------------------------ tests */

static int host_calls;

static void CUDA_CB count_call(void *arg)
{
	(void)arg;
	host_calls++;
}

static void test_build_and_query(void **state)
{
	CUgraph g, g2, clone;
	CUgraphNode a, b, c, h, other, nodes[8], from[8], to[8], found;
	CUDA_MEMSET_NODE_PARAMS ms = memset32(da, 1.0f), ms_out;
	CUDA_HOST_NODE_PARAMS hp = {count_call, NULL};
	CUgraphNodeType type;
	size_t n;

	(void)state;
	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddMemsetNode(&a, g, NULL, 0, &ms, NULL));
	CHECK(cuGraphAddEmptyNode(&b, g, &a, 1));
	CHECK(cuGraphAddEmptyNode(&c, g, &a, 1));
	{
		CUgraphNode bc[2] = {b, c};

		CHECK(cuGraphAddHostNode(&h, g, bc, 2, &hp));
	}
	n = 0;
	CHECK(cuGraphGetNodes(g, NULL, &n));
	assert_int_equal(n, 4);
	n = 8;
	CHECK(cuGraphGetNodes(g, nodes, &n));
	assert_int_equal(n, 4);
	assert_ptr_equal(nodes[0], a);
	assert_ptr_equal(nodes[3], h);
	assert_null(nodes[4]);
	n = 8;
	CHECK(cuGraphGetRootNodes(g, nodes, &n));
	assert_int_equal(n, 1);
	assert_ptr_equal(nodes[0], a);
	n = 8;
	CHECK(cuGraphGetEdges(g, from, to, NULL, &n));
	assert_int_equal(n, 4);
	n = 8;
	CHECK(cuGraphNodeGetDependencies(h, nodes, NULL, &n));
	assert_int_equal(n, 2);
	n = 8;
	CHECK(cuGraphNodeGetDependentNodes(a, nodes, NULL, &n));
	assert_int_equal(n, 2);
	CHECK(cuGraphNodeGetType(h, &type));
	assert_int_equal(type, CU_GRAPH_NODE_TYPE_HOST);
	CHECK(cuGraphNodeGetType(a, &type));
	assert_int_equal(type, CU_GRAPH_NODE_TYPE_MEMSET);
	CHECK(cuGraphMemsetNodeGetParams(a, &ms_out));
	assert_int_equal(ms_out.value, ms.value);
	assert_int_equal(ms_out.width, N);

	/* bad arguments */
	assert_int_equal(cuGraphAddEmptyNode(&other, NULL, NULL, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGraphAddEmptyNode(&other, g, NULL, 1), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuGraphCreate(&g2, 0));
	CHECK(cuGraphAddEmptyNode(&other, g2, NULL, 0));
	assert_int_equal(cuGraphAddEmptyNode(&found, g, &other, 1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGraphAddDependencies(g, &a, &b, NULL, 1), CUDA_ERROR_INVALID_VALUE); /* exists */
	assert_int_equal(cuGraphAddDependencies(g, &a, &a, NULL, 1), CUDA_ERROR_INVALID_VALUE);
	ms.elementSize = 3;
	assert_int_equal(cuGraphAddMemsetNode(&found, g, NULL, 0, &ms, NULL), CUDA_ERROR_INVALID_VALUE);
	hp.fn = NULL;
	assert_int_equal(cuGraphAddHostNode(&found, g, NULL, 0, &hp), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGraphNodeGetType(NULL, &type), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuGraphDestroy(g2));
	assert_int_equal(cuGraphDestroy(g2), CUDA_ERROR_INVALID_VALUE);

	/* clone, then removing a node and an edge in the original leaves the clone alone */
	CHECK(cuGraphClone(&clone, g));
	CHECK(cuGraphNodeFindInClone(&found, b, clone));
	assert_ptr_not_equal(found, b);
	CHECK(cuGraphNodeGetType(found, &type));
	assert_int_equal(type, CU_GRAPH_NODE_TYPE_EMPTY);
	CHECK(cuGraphDestroyNode(b));
	CHECK(cuGraphRemoveDependencies(g, &a, &c, NULL, 1));
	n = 8;
	CHECK(cuGraphGetNodes(g, nodes, &n));
	assert_int_equal(n, 3);
	n = 8;
	CHECK(cuGraphGetEdges(g, from, to, NULL, &n));
	assert_int_equal(n, 1); /* c -> h */
	n = 0;
	CHECK(cuGraphGetEdges(clone, NULL, NULL, NULL, &n));
	assert_int_equal(n, 4);
	CHECK(cuGraphDestroy(clone));
	CHECK(cuGraphDestroy(g));
}

/* memset -> memcpy -> kernel -> memcpy to the host, with edges: right in every launch. */
static void test_chain_with_edges(void **state)
{
	CUgraph g;
	CUgraphExec x;
	CUgraphNode n1, n2, n3, n4;
	CUDA_MEMSET_NODE_PARAMS ms = memset32(da, 1.5f);
	CUDA_MEMCPY3D cp = copy_d2d(db, da);
	struct scale_args args;
	CUDA_KERNEL_NODE_PARAMS kp = scale_node(&args, dc, db, 3.0f);
	float *out;
	CUDA_MEMCPY3D back;

	(void)state;
	CHECK(cuMemAllocHost((void **)&out, N * sizeof(float)));
	back = copy_d2h(out, dc);
	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddMemsetNode(&n1, g, NULL, 0, &ms, NULL));
	CHECK(cuGraphAddMemcpyNode(&n2, g, &n1, 1, &cp, NULL));
	CHECK(cuGraphAddKernelNode(&n3, g, &n2, 1, &kp));
	args.s = -1.0f; /* parameters were copied when the node was added */
	CHECK(cuGraphAddMemcpyNode(&n4, g, &n3, 1, &back, NULL));
	CHECK(cuGraphInstantiate(&x, g, 0));
	for (int r = 0; r < ROUNDS; r++) {
		memset(out, 0, N * sizeof(float));
		zero_buffers(s1);
		CHECK(cuGraphLaunch(x, s1));
		/* other streams' work interleaves with the graph's nodes */
		CHECK(cuMemsetD32Async(dc + N * sizeof(float) / 2, 0, 1, s2));
		CHECK(cuStreamSynchronize(s1));
		CHECK(cuStreamSynchronize(s2));
		assert_true(host_pinned_val(out) == 4.5f);
		all_equal(out, 4.5f);
	}
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
	CHECK(cuMemFreeHost(out));
}

/* The same graph without the memset -> memcpy edge: the random schedule must expose it. */
static void test_missing_edge_shows(void **state)
{
	CUgraph g;
	CUgraphExec x;
	CUgraphNode n1, n2;
	CUDA_MEMSET_NODE_PARAMS ms = memset32(da, 2.0f);
	CUDA_MEMCPY3D cp = copy_d2d(db, da);
	float *out;
	int right = 0, wrong = 0;
	const char *sched = getenv("SIMCUDA_SCHEDULE");

	(void)state;
	if (sched && !strcmp(sched, "inorder"))
		skip(); /* submission order hides a missing edge by design */
	out = malloc(N * sizeof(float));
	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddMemsetNode(&n1, g, NULL, 0, &ms, NULL));
	CHECK(cuGraphAddMemcpyNode(&n2, g, NULL, 0, &cp, NULL));
	CHECK(cuGraphInstantiate(&x, g, 0));
	for (int r = 0; r < ROUNDS; r++) {
		zero_buffers(s1);
		CHECK(cuGraphLaunch(x, s1));
		CHECK(cuMemcpyDtoHAsync(out, db, N * sizeof(float), s1));
		CHECK(cuStreamSynchronize(s1));
		if (out[0] == 2.0f)
			right++;
		else if (out[0] == 0.0f)
			wrong++;
	}
	assert_int_equal(right + wrong, ROUNDS);
	assert_true(right > 0);
	assert_true(wrong > 0);
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
	free(out);
}

/* Exec parameter changes reach later launches only; graph edits do not reach the exec. */
static void test_exec_set_params(void **state)
{
	CUgraph g;
	CUgraphExec x;
	CUgraphNode n1, n2, n3;
	CUDA_MEMSET_NODE_PARAMS ms = memset32(da, 1.0f);
	struct scale_args args, args2, args3;
	CUDA_KERNEL_NODE_PARAMS kp = scale_node(&args, db, da, 2.0f), kp2, kp3;
	float *out1, *out2;
	CUDA_MEMCPY3D back;

	(void)state;
	CHECK(cuMemAllocHost((void **)&out1, N * sizeof(float)));
	CHECK(cuMemAllocHost((void **)&out2, N * sizeof(float)));
	back = copy_d2h(out1, db);
	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddMemsetNode(&n1, g, NULL, 0, &ms, NULL));
	CHECK(cuGraphAddKernelNode(&n2, g, &n1, 1, &kp));
	CHECK(cuGraphAddMemcpyNode(&n3, g, &n2, 1, &back, NULL));
	CHECK(cuGraphInstantiate(&x, g, 0));

	/* editing the graph after instantiation leaves the exec as it was */
	kp3 = scale_node(&args3, db, da, 100.0f);
	CHECK(cuGraphKernelNodeSetParams(n2, &kp3));

	/* first launch still pending when the exec is changed: it keeps the old parameters */
	CHECK(cuGraphLaunch(x, s1));
	ms = memset32(da, 3.0f);
	kp2 = scale_node(&args2, db, da, 5.0f);
	back = copy_d2h(out2, db);
	CHECK(cuGraphExecMemsetNodeSetParams(x, n1, &ms, NULL));
	CHECK(cuGraphExecKernelNodeSetParams(x, n2, &kp2));
	CHECK(cuGraphExecMemcpyNodeSetParams(x, n3, &back, NULL));
	CHECK(cuStreamSynchronize(s1));
	all_equal(out1, 2.0f);
	CHECK(cuGraphLaunch(x, s1));
	CHECK(cuStreamSynchronize(s1));
	all_equal(out2, 15.0f);
	all_equal(out1, 2.0f);

	/* wrong node type, unknown node */
	assert_int_equal(cuGraphExecKernelNodeSetParams(x, n1, &kp2), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGraphExecMemsetNodeSetParams(x, NULL, &ms, NULL), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
	CHECK(cuMemFreeHost(out1));
	CHECK(cuMemFreeHost(out2));
}

static CUgraph build_two(float v, CUfunction f, bool extra, bool memset_second)
{
	CUgraph g;
	CUgraphNode n1, n2, n3;
	CUDA_MEMSET_NODE_PARAMS ms = memset32(da, v);
	struct scale_args args;
	CUDA_KERNEL_NODE_PARAMS kp = scale_node(&args, db, da, 2.0f);
	void *fill_args[3];
	CUdeviceptr out = db;
	float fv = 9.0f;
	int n = N;

	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddMemsetNode(&n1, g, NULL, 0, &ms, NULL));
	if (memset_second) {
		CHECK(cuGraphAddMemsetNode(&n2, g, &n1, 1, &ms, NULL));
	} else if (f == f_fill) {
		fill_args[0] = &out;
		fill_args[1] = &fv;
		fill_args[2] = &n;
		kp.func = f_fill;
		kp.kernelParams = fill_args;
		CHECK(cuGraphAddKernelNode(&n2, g, &n1, 1, &kp));
	} else {
		CHECK(cuGraphAddKernelNode(&n2, g, &n1, 1, &kp));
	}
	if (extra)
		CHECK(cuGraphAddEmptyNode(&n3, g, &n2, 1));
	return g;
}

static void test_exec_update(void **state)
{
	CUgraph g1, g2, g3, g4, g5;
	CUgraphExec x;
	CUgraphExecUpdateResultInfo info;
	float out[N];

	(void)state;
	g1 = build_two(1.0f, f_scale, false, false);
	CHECK(cuGraphInstantiate(&x, g1, 0));
	CHECK(cuGraphLaunch(x, s1));
	CHECK(cuMemcpyDtoHAsync(out, db, sizeof(out), s1));
	CHECK(cuStreamSynchronize(s1));
	all_equal(out, 2.0f);

	g2 = build_two(4.0f, f_scale, false, false);
	CHECK(cuGraphExecUpdate(x, g2, &info));
	assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
	CHECK(cuGraphLaunch(x, s1));
	CHECK(cuMemcpyDtoHAsync(out, db, sizeof(out), s1));
	CHECK(cuStreamSynchronize(s1));
	all_equal(out, 8.0f);

	g3 = build_two(4.0f, f_scale, true, false);
	assert_int_equal(cuGraphExecUpdate(x, g3, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
	assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
	g4 = build_two(4.0f, f_scale, false, true);
	assert_int_equal(cuGraphExecUpdate(x, g4, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
	assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED);
	assert_non_null(info.errorNode);
	g5 = build_two(4.0f, f_fill, false, false);
	assert_int_equal(cuGraphExecUpdate(x, g5, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
	assert_int_equal(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE);

	/* a failed update leaves the exec as the last good one */
	CHECK(cuMemsetD32Async(db, 0, N, s1));
	CHECK(cuGraphLaunch(x, s1));
	CHECK(cuMemcpyDtoHAsync(out, db, sizeof(out), s1));
	CHECK(cuStreamSynchronize(s1));
	all_equal(out, 8.0f);

	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g1));
	CHECK(cuGraphDestroy(g2));
	CHECK(cuGraphDestroy(g3));
	CHECK(cuGraphDestroy(g4));
	CHECK(cuGraphDestroy(g5));
}

/* A record node in a graph on s1 orders eager work on s2; a wait node in a graph on s2 waits
 * for an eager record on s1. */
static void test_event_nodes_across_streams(void **state)
{
	CUgraph g1, g2;
	CUgraphExec x1, x2;
	CUgraphNode m, rec, wait, cp;
	CUevent ev1, ev2;
	CUDA_MEMSET_NODE_PARAMS ms = memset32(da, 6.0f);
	CUDA_MEMCPY3D c = copy_d2d(dc, db);
	float out[N];

	(void)state;
	CHECK(cuEventCreate(&ev1, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&ev2, CU_EVENT_DISABLE_TIMING));
	CHECK(cuGraphCreate(&g1, 0));
	CHECK(cuGraphAddMemsetNode(&m, g1, NULL, 0, &ms, NULL));
	CHECK(cuGraphAddEventRecordNode(&rec, g1, &m, 1, ev1));
	CHECK(cuGraphInstantiate(&x1, g1, 0));
	CHECK(cuGraphCreate(&g2, 0));
	CHECK(cuGraphAddEventWaitNode(&wait, g2, NULL, 0, ev2));
	CHECK(cuGraphAddMemcpyNode(&cp, g2, &wait, 1, &c, NULL));
	CHECK(cuGraphInstantiate(&x2, g2, 0));
	{
		CUevent got;
		CUgraphNodeType t;

		CHECK(cuGraphEventRecordNodeGetEvent(rec, &got));
		assert_ptr_equal(got, ev1);
		CHECK(cuGraphNodeGetType(wait, &t));
		assert_int_equal(t, CU_GRAPH_NODE_TYPE_WAIT_EVENT);
	}
	for (int r = 0; r < ROUNDS; r++) {
		zero_buffers(s1);
		CHECK(cuStreamSynchronize(s1));
		CHECK(cuGraphLaunch(x1, s1));                 /* da = 6, then record ev1 */
		CHECK(cuStreamWaitEvent(s2, ev1, 0));
		CHECK(cuMemcpyDtoDAsync(db, da, N * sizeof(float), s2)); /* db = da */
		CHECK(cuEventRecord(ev2, s2));
		CHECK(cuGraphLaunch(x2, s1));                 /* wait ev2, dc = db */
		CHECK(cuMemcpyDtoHAsync(out, dc, sizeof(out), s1));
		CHECK(cuStreamSynchronize(s1));
		all_equal(out, 6.0f);
	}
	/* the exec's wait node can be pointed at another event */
	CHECK(cuGraphExecEventWaitNodeSetEvent(x2, wait, ev1));
	CHECK(cuGraphExecEventRecordNodeSetEvent(x1, rec, ev2));
	assert_int_equal(cuGraphExecEventWaitNodeSetEvent(x2, cp, ev1), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuGraphExecDestroy(x1));
	CHECK(cuGraphExecDestroy(x2));
	CHECK(cuGraphDestroy(g1));
	CHECK(cuGraphDestroy(g2));
	CHECK(cuEventDestroy(ev1));
	CHECK(cuEventDestroy(ev2));
}

/* Host memory named by a memcpy node is read when the node runs. */
static void test_memcpy_node_reads_host_at_run(void **state)
{
	CUgraph g;
	CUgraphExec x;
	CUgraphNode n1, n2;
	float *in = calloc(N, sizeof(float)), out[N];
	CUDA_MEMCPY3D up = copy_h2d(da, in), down = copy_d2h(out, da);

	(void)state;
	for (int i = 0; i < N; i++)
		in[i] = 1.0f;
	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddMemcpyNode(&n1, g, NULL, 0, &up, NULL));
	CHECK(cuGraphAddMemcpyNode(&n2, g, &n1, 1, &down, NULL));
	CHECK(cuGraphInstantiate(&x, g, 0));
	for (int i = 0; i < N; i++)
		in[i] = 7.0f;
	CHECK(cuGraphLaunch(x, s1));
	CHECK(cuStreamSynchronize(s1));
	all_equal(out, 7.0f);
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
	free(in);
}

static char journal[2 * ROUNDS + 1];
static int journal_len;

static void CUDA_CB note(void *tag)
{
	if (journal_len < (int)sizeof(journal) - 1)
		journal[journal_len++] = (char)(uintptr_t)tag;
}

/* Launches of one exec are ordered even on two unrelated streams. */
static void test_launches_of_one_exec_are_ordered(void **state)
{
	CUgraph g;
	CUgraphExec x;
	CUgraphNode h;
	CUDA_HOST_NODE_PARAMS hp = {note, (void *)(uintptr_t)'a'};

	(void)state;
	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddHostNode(&h, g, NULL, 0, &hp));
	CHECK(cuGraphInstantiate(&x, g, 0));
	journal_len = 0;
	for (int r = 0; r < ROUNDS; r++) {
		hp.userData = (void *)(uintptr_t)'a';
		CHECK(cuGraphExecHostNodeSetParams(x, h, &hp));
		CHECK(cuGraphLaunch(x, s1));
		hp.userData = (void *)(uintptr_t)'b';
		CHECK(cuGraphExecHostNodeSetParams(x, h, &hp));
		CHECK(cuGraphLaunch(x, s2));
		CHECK(cuCtxSynchronize());
	}
	journal[journal_len] = 0;
	assert_int_equal(journal_len, 2 * ROUNDS);
	for (int r = 0; r < ROUNDS; r++) {
		assert_int_equal(journal[2 * r], 'a');
		assert_int_equal(journal[2 * r + 1], 'b');
	}
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
}

/* Destroying the exec and graph right after launching is safe: the launch has its own copy. */
static void test_destroy_after_launch_and_errors(void **state)
{
	CUgraph g;
	CUgraphExec x;
	CUgraphNode n1, n2, n3;
	CUDA_MEMSET_NODE_PARAMS ms = memset32(da, 8.0f);
	CUDA_MEMCPY3D cp = copy_d2d(db, da);
	CUDA_HOST_NODE_PARAMS hp = {count_call, NULL};
	CUDA_GRAPH_INSTANTIATE_PARAMS ip;
	float out[N];
	unsigned int enabled = 9;

	(void)state;
	zero_buffers(s1);
	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddMemsetNode(&n1, g, NULL, 0, &ms, NULL));
	CHECK(cuGraphAddMemcpyNode(&n2, g, &n1, 1, &cp, NULL));
	CHECK(cuGraphAddHostNode(&n3, g, &n2, 1, &hp));
	memset(&ip, 0, sizeof(ip));
	ip.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
	ip.hUploadStream = s1;
	CHECK(cuGraphInstantiateWithParams(&x, g, &ip));
	assert_int_equal(ip.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
	CHECK(cuGraphUpload(x, s1));
	host_calls = 0;
	CHECK(cuGraphLaunch(x, s1));
	CHECK(cuGraphLaunch(x, s1)); /* a second launch while the first is pending */
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
	CHECK(cuMemcpyDtoHAsync(out, db, sizeof(out), s1));
	CHECK(cuStreamSynchronize(s1));
	all_equal(out, 8.0f);
	assert_int_equal(host_calls, 2);
	assert_int_equal(cuGraphLaunch(x, s1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGraphExecDestroy(x), CUDA_ERROR_INVALID_VALUE);

	/* a cycle fails instantiation */
	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddEmptyNode(&n1, g, NULL, 0));
	CHECK(cuGraphAddEmptyNode(&n2, g, &n1, 1));
	CHECK(cuGraphAddDependencies(g, &n2, &n1, NULL, 1));
	memset(&ip, 0, sizeof(ip));
	assert_int_equal(cuGraphInstantiateWithParams(&x, g, &ip), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(ip.result_out, CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE);
	assert_non_null(ip.hErrNode_out);
	CHECK(cuGraphRemoveDependencies(g, &n2, &n1, NULL, 1));

	/* a disabled node does nothing */
	CHECK(cuGraphAddHostNode(&n3, g, &n2, 1, &hp));
	CHECK(cuGraphInstantiate(&x, g, 0));
	CHECK(cuGraphNodeSetEnabled(x, n3, 0));
	CHECK(cuGraphNodeGetEnabled(x, n3, &enabled));
	assert_int_equal(enabled, 0);
	host_calls = 0;
	CHECK(cuGraphLaunch(x, s1));
	CHECK(cuStreamSynchronize(s1));
	assert_int_equal(host_calls, 0);
	CHECK(cuGraphNodeSetEnabled(x, n3, 1));
	CHECK(cuGraphLaunch(x, 0)); /* the legacy stream */
	CHECK(cuCtxSynchronize());
	assert_int_equal(host_calls, 1);
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
}

/* A kernel node's getters answer with what was set; the generic node API builds the same. */
static void test_kernel_node_params_and_generic_api(void **state)
{
	CUgraph g;
	CUgraphExec x;
	CUgraphNode k, m;
	struct scale_args args;
	CUDA_KERNEL_NODE_PARAMS kp = scale_node(&args, db, da, 0.5f), got;
	CUgraphNodeParams np;
	float out[N];

	(void)state;
	CHECK(cuGraphCreate(&g, 0));
	memset(&np, 0, sizeof(np));
	np.type = CU_GRAPH_NODE_TYPE_MEMSET;
	np.memset.dst = da;
	np.memset.value = bits(10.0f);
	np.memset.elementSize = 4;
	np.memset.width = N;
	np.memset.height = 1;
	CHECK(cuGraphAddNode(&m, g, NULL, NULL, 0, &np));
	CHECK(cuGraphAddKernelNode(&k, g, &m, 1, &kp));
	CHECK(cuGraphKernelNodeGetParams(k, &got));
	assert_ptr_equal(got.func, f_scale);
	assert_int_equal(got.gridDimX, N / 64);
	assert_int_equal(got.blockDimX, 64);
	CHECK(cuGraphInstantiate(&x, g, 0));
	CHECK(cuGraphLaunch(x, s1));
	CHECK(cuMemcpyDtoHAsync(out, db, sizeof(out), s1));
	CHECK(cuStreamSynchronize(s1));
	all_equal(out, 5.0f);
	np.memset.value = bits(20.0f);
	CHECK(cuGraphExecNodeSetParams(x, m, &np));
	CHECK(cuGraphLaunch(x, s1));
	CHECK(cuMemcpyDtoHAsync(out, db, sizeof(out), s1));
	CHECK(cuStreamSynchronize(s1));
	all_equal(out, 10.0f);
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_and_query),
		cmocka_unit_test(test_chain_with_edges),
		cmocka_unit_test(test_missing_edge_shows),
		cmocka_unit_test(test_exec_set_params),
		cmocka_unit_test(test_exec_update),
		cmocka_unit_test(test_event_nodes_across_streams),
		cmocka_unit_test(test_memcpy_node_reads_host_at_run),
		cmocka_unit_test(test_launches_of_one_exec_are_ordered),
		cmocka_unit_test(test_destroy_after_launch_and_errors),
		cmocka_unit_test(test_kernel_node_params_and_generic_api),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
