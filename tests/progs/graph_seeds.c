/* graph_seeds.c - a driver-API program that builds and launches graphs, for checks over the
 * software device's seeds (tests/e2e/sim_graph_seeds.sh). tests layer.
 *
 *   graph_seeds chain     memset -> memcpy -> kernel -> memcpy to the host, with edges
 *   graph_seeds noedge    the same without the memset -> memcpy edge (a missing dependency)
 *   graph_seeds capture   a two-stream fork/join sequence run eagerly, then captured and
 *                         launched as a graph; prints both results
 * Each prints "<name> <FNV hash of the result> <first element>" lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define N 1024

static CUfunction f_scale, f_add;
static CUdeviceptr da, db, dc, dd;

static void print_result(const char *name, const float *p)
{
	printf("%s %016llx %g\n", name, (unsigned long long)tl_hash(p, N * sizeof(float), TL_HASH_INIT),
	       (double)p[0]);
}

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static void chain(CUstream s, int with_edge)
{
	CUgraph g;
	CUgraphExec x;
	CUgraphNode n1, n2, n3, n4;
	CUDA_MEMSET_NODE_PARAMS ms;
	CUDA_MEMCPY3D cp, back;
	CUDA_KERNEL_NODE_PARAMS kp;
	float k = 3.0f, *out;
	int n = N;
	void *args[] = {&dc, &db, &k, &n};

	CHECK(cuMemAllocHost((void **)&out, N * sizeof(float)));
	memset(&ms, 0, sizeof(ms));
	ms.dst = da;
	ms.value = bits(1.5f);
	ms.elementSize = 4;
	ms.width = N;
	ms.height = 1;
	memset(&cp, 0, sizeof(cp));
	cp.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	cp.srcDevice = da;
	cp.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	cp.dstDevice = db;
	cp.WidthInBytes = N * sizeof(float);
	cp.Height = 1;
	cp.Depth = 1;
	back = cp;
	back.srcDevice = dc;
	back.dstMemoryType = CU_MEMORYTYPE_HOST;
	back.dstHost = out;
	memset(&kp, 0, sizeof(kp));
	kp.func = f_scale;
	kp.gridDimX = N / 256;
	kp.gridDimY = kp.gridDimZ = 1;
	kp.blockDimX = 256;
	kp.blockDimY = kp.blockDimZ = 1;
	kp.kernelParams = args;

	CHECK(cuGraphCreate(&g, 0));
	CHECK(cuGraphAddMemsetNode(&n1, g, NULL, 0, &ms, NULL));
	CHECK(cuGraphAddMemcpyNode(&n2, g, with_edge ? &n1 : NULL, with_edge ? 1 : 0, &cp, NULL));
	CHECK(cuGraphAddKernelNode(&n3, g, &n2, 1, &kp));
	CHECK(cuGraphAddMemcpyNode(&n4, g, &n3, 1, &back, NULL));
	{
		CUgraphNode tail[2] = {n1, n4};
		CUgraphNode sink;

		/* the memset must still finish inside the graph */
		CHECK(cuGraphAddEmptyNode(&sink, g, tail, 2));
	}
	CHECK(cuGraphInstantiate(&x, g, 0));
	CHECK(cuMemsetD32Async(da, 0, N, s));
	CHECK(cuMemsetD32Async(db, 0, N, s));
	CHECK(cuGraphLaunch(x, s));
	CHECK(cuStreamSynchronize(s));
	print_result(with_edge ? "chain" : "noedge", out);
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
	CHECK(cuMemFreeHost(out));
}

static void launch2(CUfunction f, CUstream s, CUdeviceptr out, CUdeviceptr in, void *third)
{
	int n = N;
	void *args[] = {&out, &in, third, &n};

	CHECK(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

/* s1: a = 2, fork; s2: b = 3a; s1: c = a + a; join; s1: d = b + c, then d to the host. */
static void fork_join(CUstream s1, CUstream s2, CUevent fork, CUevent join, float *out)
{
	float k = 3.0f;

	CHECK(cuMemsetD32Async(da, bits(2.0f), N, s1));
	CHECK(cuEventRecord(fork, s1));
	CHECK(cuStreamWaitEvent(s2, fork, 0));
	launch2(f_scale, s2, db, da, &k);
	CHECK(cuEventRecord(join, s2));
	launch2(f_add, s1, dc, da, &da);
	CHECK(cuStreamWaitEvent(s1, join, 0));
	launch2(f_add, s1, dd, db, &dc);
	CHECK(cuMemcpyDtoHAsync(out, dd, N * sizeof(float), s1));
}

static void capture(CUstream s1, CUstream s2)
{
	CUevent fork, join;
	CUgraph g;
	CUgraphExec x;
	float *out;

	CHECK(cuMemAllocHost((void **)&out, N * sizeof(float)));
	CHECK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
	CHECK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
	fork_join(s1, s2, fork, join, out);
	CHECK(cuStreamSynchronize(s1));
	print_result("eager", out);

	memset(out, 0, N * sizeof(float));
	CHECK(cuMemsetD32Async(dd, 0, N, s1));
	CHECK(cuStreamSynchronize(s1));
	CHECK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
	fork_join(s1, s2, fork, join, out);
	CHECK(cuStreamEndCapture(s1, &g));
	CHECK(cuGraphInstantiate(&x, g, 0));
	CHECK(cuGraphLaunch(x, s1));
	CHECK(cuStreamSynchronize(s1));
	print_result("captured", out);
	CHECK(cuGraphExecDestroy(x));
	CHECK(cuGraphDestroy(g));
	CHECK(cuEventDestroy(fork));
	CHECK(cuEventDestroy(join));
	CHECK(cuMemFreeHost(out));
}

int main(int argc, char **argv)
{
	CUmodule mod;
	CUstream s1, s2;

	if (argc != 2 || (strcmp(argv[1], "chain") && strcmp(argv[1], "noedge") && strcmp(argv[1], "capture"))) {
		fprintf(stderr, "usage: %s chain|noedge|capture\n", argv[0]);
		return 2;
	}
	tl_init();
	mod = tl_load_module("elementwise");
	f_scale = tl_func(mod, "scale");
	f_add = tl_func(mod, "add");
	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&da, N * sizeof(float)));
	CHECK(cuMemAlloc(&db, N * sizeof(float)));
	CHECK(cuMemAlloc(&dc, N * sizeof(float)));
	CHECK(cuMemAlloc(&dd, N * sizeof(float)));
	if (!strcmp(argv[1], "capture"))
		capture(s1, s2);
	else
		chain(s1, !strcmp(argv[1], "chain"));
	CHECK(cuMemFree(da));
	CHECK(cuMemFree(db));
	CHECK(cuMemFree(dc));
	CHECK(cuMemFree(dd));
	CHECK(cuModuleUnload(mod));
	return 0;
}
