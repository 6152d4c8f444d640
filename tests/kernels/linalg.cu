/* linalg.cu - small dense linear algebra test kernels: gemm and a deterministic sum.
 * Twins in tests/simcuda/twins_builtin.c. tests layer.
 *
 * Both accumulate in a fixed order with separately rounded operations, so a twin that
 * follows the same order gives the same bits. */

/* C[m,n] = A[m,k] * B[k,n] (+ beta * C when beta != 0), all row-major.
 * One thread per output element: column = x index, row = y index, over a 2-D grid; elements
 * outside the grid are not computed. The dot product runs p = 0..k-1 in order. */
extern "C" __global__ void gemm(float *C, const float *A, const float *B, int m, int n, int k,
				float beta)
{
	int col = blockIdx.x * blockDim.x + threadIdx.x;
	int row = blockIdx.y * blockDim.y + threadIdx.y;
	float acc = 0.0f;

	if (row >= m || col >= n)
		return;
	for (int p = 0; p < k; p++)
		acc = __fadd_rn(acc, __fmul_rn(A[row * k + p], B[p * n + col]));
	if (beta != 0.0f)
		acc = __fadd_rn(acc, __fmul_rn(beta, C[row * n + col]));
	C[row * n + col] = acc;
}

/* *out = sum of in[0..n-1], computed by block 0 only (other blocks return):
 * thread t sums in[t], in[t + blockDim.x], ... in order into part[t]; then thread 0 sums
 * part[0..blockDim.x-1] in order. blockDim.x <= 1024. */
extern "C" __global__ void reduce_sum(float *out, const float *in, int n)
{
	__shared__ float part[1024];
	unsigned int t = threadIdx.x;
	float acc = 0.0f;

	if (blockIdx.x != 0 || blockIdx.y != 0 || blockIdx.z != 0)
		return;
	for (int i = (int)t; i < n; i += blockDim.x)
		acc = __fadd_rn(acc, in[i]);
	if (threadIdx.y == 0 && threadIdx.z == 0)
		part[t] = acc;
	__syncthreads();
	if (t == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
		float s = 0.0f;

		for (unsigned int j = 0; j < blockDim.x; j++)
			s = __fadd_rn(s, part[j]);
		*out = s;
	}
}
