/* notwin.cu - test kernels with NO host twin: the software device runs them only through its
 * PTX interpreter. Each exercises what ordinary kernels use (grid-stride loops with 64-bit
 * indices, shared memory with barriers, static and dynamic, atomics on shared and global
 * memory, warp shuffles and votes, float4 vector loads, a non-inlined device function) and
 * tests/unit/sim_interp.c checks every output against a host reference. tests layer. */
#include <cuda_fp16.h>
#include <cstdio>

/* A non-inlined function (a .func with the call ABI): x*x*... k times, then + k, rounded per step. */
extern "C" __device__ __noinline__ float nt_power_plus(float x, int k)
{
	float r = 1.0f;

	for (int i = 0; i < k; i++)
		r = __fmul_rn(r, x);
	return __fadd_rn(r, (float)k);
}

/* out[i] = nt_power_plus(in[i], i % 4) over a grid-stride loop with a 64-bit index. */
extern "C" __global__ void nt_powers(float *out, const float *in, long long n)
{
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (long long)gridDim.x * blockDim.x)
		out[i] = nt_power_plus(in[i], (int)(i % 4));
}

/* hist[v % nbins] += 1 for every v of in: per-block histogram in dynamic shared memory
 * (atomics on shared), merged into the global one with global atomics. */
extern "C" __global__ void nt_histogram(unsigned int *hist, const unsigned int *in, long long n,
					int nbins)
{
	extern __shared__ unsigned int local_hist[];

	for (int b = threadIdx.x; b < nbins; b += blockDim.x)
		local_hist[b] = 0;
	__syncthreads();
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (long long)gridDim.x * blockDim.x)
		atomicAdd(&local_hist[in[i] % nbins], 1u);
	__syncthreads();
	for (int b = threadIdx.x; b < nbins; b += blockDim.x)
		if (local_hist[b])
			atomicAdd(&hist[b], local_hist[b]);
}

/* Sum of n4 float4s (values are small integers, so every order gives the same sum): float4
 * loads, a warp shuffle tree, warp sums in static shared memory, then one atomicAdd per block
 * into *total; *blocks_done counts blocks with atomicInc. */
extern "C" __global__ void nt_sum4(float *total, unsigned int *blocks_done, const float4 *in, int n4)
{
	__shared__ float warp_sums[32];
	float s = 0.0f;
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += gridDim.x * blockDim.x) {
		float4 v = in[i];

		s += (v.x + v.y) + (v.z + v.w);
	}
	for (int off = 16; off > 0; off /= 2)
		s += __shfl_down_sync(0xffffffffu, s, off);
	if (lane == 0)
		warp_sums[warp] = s;
	__syncthreads();
	if (warp == 0) {
		int nwarps = (blockDim.x + 31) / 32;

		s = lane < nwarps ? warp_sums[lane] : 0.0f;
		for (int off = 16; off > 0; off /= 2)
			s += __shfl_xor_sync(0xffffffffu, s, off);
		if (lane == 0) {
			atomicAdd(total, s);
			atomicInc(blocks_done, 0xffffffffu);
		}
	}
}

/* Per warp: votes and ballots on x[i] > 0, with divergence inside the warp, and a warp barrier.
 * out[i] =
 * popc(ballot) * 1000 + (all ? 100 : 0) + (any ? 10 : 0) + lanes active in the taken branch. */
extern "C" __global__ void nt_votes(int *out, const float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	bool p = i < n && x[i] > 0.0f;
	unsigned int ballot = __ballot_sync(0xffffffffu, p);
	int all = __all_sync(0xffffffffu, p), any = __any_sync(0xffffffffu, p);
	int active = 0;

	if (p)
		active = __popc(__activemask());
	__syncwarp(); /* bar.warp.sync -1, as CuPy's scan kernels have it */
	if (i < n)
		out[i] = __popc(ballot) * 1000 + (all ? 100 : 0) + (any ? 10 : 0) + active;
}

/* Integer bit operations on every element: clz, brev, bfe-like shifts and masks, 64-bit
 * multiply-high, signed division and remainder, min/max; out[i] is their xor. */
extern "C" __global__ void nt_bits(unsigned long long *out, const int *a, const int *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		int x = a[i], y = b[i];
		unsigned long long r = 0;

		r ^= (unsigned long long)__clz(x);
		r ^= (unsigned long long)__brev((unsigned int)x) << 3;
		r ^= (unsigned long long)(((unsigned int)x >> (y & 31)) & 0xffu) << 11;
		r ^= __umul64hi((unsigned long long)x * 2654435761ull, (unsigned long long)y | 1ull);
		r ^= (unsigned long long)(long long)(y != 0 ? x / y : 0) << 7;
		r ^= (unsigned long long)(long long)(y != 0 ? x % y : 0) << 17;
		r ^= (unsigned long long)(unsigned int)min(x, y) << 29;
		r ^= (unsigned long long)(unsigned int)max(x, y) << 31;
		r ^= (unsigned long long)__popc(x ^ y) << 50;
		r ^= (unsigned long long)(x < y) << 60;
		r ^= (unsigned long long)(x >= -5) << 61;
		r ^= (unsigned long long)((long long)x * y > -1000ll) << 62;
		out[i] = r;
	}
}

/* Half-precision conversions and bit instructions nvcc emits for intrinsics: out[i*8 + j]. */
extern "C" __global__ void nt_misc(unsigned int *out, const float *f_in, const unsigned int *u_in, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	float f = f_in[i];
	unsigned int x = u_in[i], y = u_in[(i + 1) % n], s = u_in[(i + 2) % n];
	unsigned int *o = out + (size_t)i * 8;

	o[0] = __float_as_uint(__half2float(__float2half_rn(f)));
	o[1] = (unsigned int)__half_as_ushort(__float2half_rz(f));
	o[2] = __funnelshift_l(x, y, s);
	o[3] = __funnelshift_rc(x, y, s);
	o[4] = __byte_perm(x, y, s);
	o[5] = (unsigned int)__ffs((int)x) + ((x >> (s & 15)) & 0x3ffu) * 64u;
	o[6] = (x & y) ^ (~s | (x ^ y));
	o[7] = (unsigned int)__clzll(((unsigned long long)x << 32) | y) + (__brev(s) & 0xf0f0u);
}

/* Module variables: a __constant__ table, an initialized __device__ array and a zeroed
 * __device__ counter that persists between launches (nt_read_calls reads it). */
__constant__ float nt_coeffs[4] = { 0.5f, -1.25f, 2.0f, 0.125f };
__device__ int nt_table[5] = { 3, 1, 4, 1, 5 };
__device__ unsigned int nt_calls;

extern "C" __global__ void nt_globals(float *out, const float *in, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		out[i] = __fadd_rn(__fmul_rn(nt_coeffs[i % 4], in[i]), (float)nt_table[i % 5]);
		atomicAdd(&nt_calls, 1u);
	}
}

extern "C" __global__ void nt_read_calls(unsigned int *out)
{
	*out = nt_calls;
}

/* printf from a kernel (vprintf): the first two threads of each block, and the count it returns. */
extern "C" __global__ void nt_printf(int *ret, int n, float x, long long big)
{
	if (threadIdx.x < 2)
		ret[blockIdx.x * 2 + threadIdx.x] =
			printf("block %d thread %u: n=%5d x=%.3f big=%lld hex=%#x %s %c%%\n", blockIdx.x,
			       threadIdx.x, n, x, big, 255u + threadIdx.x, "ok", 'A' + (int)threadIdx.x);
}

/* The interpreter benchmark's loop (make bench-interp): simple integer operations only. */
extern "C" __global__ void nt_spin(unsigned int *out, int iters)
{
	unsigned int x = blockIdx.x * blockDim.x + threadIdx.x, y = 0;

	for (int i = 0; i < iters; i++) {
		x = x * 1664525u + 1013904223u;
		y ^= x >> 7;
		y += x & 0xffu;
	}
	out[blockIdx.x * blockDim.x + threadIdx.x] = y;
}

/* Rounding modes, conversions, f64 and local memory: out[i*20 + j] for j = 0..19, each a
 * float (integers stored as their bits) that sim_interp.c recomputes on the host with the
 * same rounding mode set (fesetround). */
extern "C" __global__ void nt_fmodes(float *out, const float *a_in, const float *b_in, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float tmp[8];

	if (i >= n)
		return;
	float a = a_in[i], b = b_in[i];
	float *o = out + (size_t)i * 20;

	for (int j = 0; j < 8; j++)
		tmp[j] = __fmul_rn(a, (float)j);
	o[0] = __fadd_rz(a, b);
	o[1] = __fadd_rd(a, b);
	o[2] = __fadd_ru(a, b);
	o[3] = __fmul_rz(a, b);
	o[4] = __fdiv_rn(a, b);
	o[5] = __fdiv_rz(a, b);
	o[6] = __fsqrt_rn(fabsf(a));
	o[7] = __fsqrt_ru(fabsf(a));
	o[8] = __frcp_rn(b);
	o[9] = __fmaf_rz(a, b, 0.3f);
	o[10] = __int_as_float(__float2int_rn(__fmul_rn(a, 1000.0f)));
	o[11] = __int_as_float(__float2int_rz(__fmul_rn(a, 3e9f)));
	o[12] = __uint_as_float(__float2uint_rd(__fmul_rn(a, 100.0f)));
	o[13] = __int2float_rz(__float_as_int(a));
	o[14] = __saturatef(a);
	o[15] = (float)__dadd_rn(__dmul_rn((double)a, (double)b), 1.0);
	o[16] = __double2float_rz(__ddiv_rn((double)a, 3.0));
	o[17] = tmp[(i * 3 + (int)(b > 0.0f)) % 8];
	o[18] = fminf(a, b);
	o[19] = fmaxf(a, b);
}

/* A name as long as numba's and CUB's mangled ones (over 200 characters): the interpreter finds
 * the function and its parameters by it (it kept only 160 once). */
extern "C" __global__ void nt_long_name_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx(int *out, int v)
{
	out[threadIdx.x] = v + (int)threadIdx.x;
}

/* The order blocks ran in (sim_block_order): thread 0 of each block takes the next slot and
 * writes its block's linear index there. */
extern "C" __global__ void nt_arrival(unsigned int *next, unsigned int *order)
{
	if (threadIdx.x == 0) {
		unsigned int slot = atomicAdd(next, 1u);

		order[slot] = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
	}
}
