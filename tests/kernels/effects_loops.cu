/* effects_loops.cu - kernels written for the effects analysis (rewrite/derive_card.c) and its
 * oracle test (tests/unit/test_derive_card.c): the index shapes it must bound - grid-stride
 * loops, 2-D row * cols + c, 64-bit index math, counted loops - with no twin (the oracle runs
 * them in the interpreter). tests layer (compiled to PTX by nvcc in the build). */

/* y[i] = 2 * x[i] over a grid-stride loop: every i < n, whatever the grid */
extern "C" __global__ void fx_grid_stride(float *y, const float *x, int n)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		y[i] = 2.0f * x[i];
}

/* out[r * cols + c] = in[r * cols + c] + 1 over a 2-D grid */
extern "C" __global__ void fx_rows_cols(float *out, const float *in, int rows, int cols)
{
	int r = blockIdx.y * blockDim.y + threadIdx.y;
	int c = blockIdx.x * blockDim.x + threadIdx.x;

	if (r < rows && c < cols)
		out[r * cols + c] = in[r * cols + c] + 1.0f;
}

/* 64-bit indices: size_t count and stride */
extern "C" __global__ void fx_index64(double *out, const double *in, unsigned long long n)
{
	unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = in[i] * 0.5;
}

/* out[r] = sum of the k values of row r: a counted loop over a row */
extern "C" __global__ void fx_row_sum(float *out, const float *in, int rows, int k)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	float s = 0.0f;

	if (r >= rows)
		return;
	for (int j = 0; j < k; j++)
		s += in[r * k + j];
	out[r] = s;
}

/* a strided copy: dst[i] = src[i * stride], i < n */
extern "C" __global__ void fx_strided(float *dst, const float *src, int n, int stride)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		dst[i] = src[i * stride];
}

/* x[i + 1] - x[i] into d[i], i < n - 1: an offset past the guarded index */
extern "C" __global__ void fx_diff(float *d, const float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n - 1)
		d[i] = x[i + 1] - x[i];
}

/* out[i] = in of the next thread of the block, through shared memory: every global access is
 * element i, but the kernel is not elementwise (splitting its launch regroups the threads) */
extern "C" __global__ void fx_shared_neighbor(float *out, const float *in, int n)
{
	extern __shared__ float tile[];
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	tile[threadIdx.x] = i < n ? in[i] : 0.0f;
	__syncthreads();
	if (i < n)
		out[i] = tile[(threadIdx.x + 1) % blockDim.x];
}
