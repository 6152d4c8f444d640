/* cub.cu - kernels built from CUB's block and warp primitives (the PTX real frameworks run:
 * shared-memory scans with barriers, shfl/redux warp reductions, a radix sort), with no twins:
 * the software device runs them through its PTX interpreter and tests/unit/sim_interp.c checks
 * them against host references. tests layer. */
#include <cub/cub.cuh>
extern "C" __global__ void k_block_reduce(const int *in, int *out)
{
	typedef cub::BlockReduce<int, 128> BR;
	__shared__ typename BR::TempStorage t;
	int v = in[blockIdx.x * 128 + threadIdx.x];
	int s = BR(t).Sum(v);
	if (threadIdx.x == 0) out[blockIdx.x] = s;
}
extern "C" __global__ void k_block_scan(const int *in, int *out)
{
	typedef cub::BlockScan<int, 128> BS;
	__shared__ typename BS::TempStorage t;
	int v = in[blockIdx.x * 128 + threadIdx.x], r;
	BS(t).ExclusiveSum(v, r);
	out[blockIdx.x * 128 + threadIdx.x] = r;
}
extern "C" __global__ void k_warp_max(const float *in, float *out)
{
	typedef cub::WarpReduce<float> WR;
	__shared__ typename WR::TempStorage t[4];
	float v = in[blockIdx.x * 128 + threadIdx.x];
	float m = WR(t[threadIdx.x / 32]).Reduce(v, ::cuda::maximum<>{});
	if (threadIdx.x % 32 == 0) out[blockIdx.x * 4 + threadIdx.x / 32] = m;
}
extern "C" __global__ void k_radix(const unsigned *in, unsigned *out)
{
	typedef cub::BlockRadixSort<unsigned, 128, 4> BRS;
	__shared__ typename BRS::TempStorage t;
	unsigned k[4];
	for (int i = 0; i < 4; i++) k[i] = in[blockIdx.x * 512 + threadIdx.x * 4 + i];
	BRS(t).Sort(k);
	for (int i = 0; i < 4; i++) out[blockIdx.x * 512 + threadIdx.x * 4 + i] = k[i];
}
