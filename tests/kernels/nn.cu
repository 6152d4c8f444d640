/* nn.cu - neural-network style test kernels: embedding bag, layer norm, softmax.
 * Twins in tests/simcuda/twins_builtin.c. tests layer.
 *
 * Row statistics are computed by thread 0 of the row's block in a sequential loop, so the
 * arithmetic order is fixed and the twin (same order, same separately rounded operations)
 * gives the same bits; expf is the exception: the twin uses the C library's. */

/* out[b, d] = sum over j in [offsets[b], offsets[b+1]) of table[indices[j], d].
 * offsets has nbags + 1 entries. One thread per output element t = b*dim + d over a 1-D grid;
 * elements beyond the grid are not computed. Sums run j in order. */
extern "C" __global__ void embedding_bag_sum(const float *table, const int *indices,
					     const int *offsets, int nbags, int dim, float *out)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	int b, d;
	float acc = 0.0f;

	if (dim <= 0 || t >= nbags * dim)
		return;
	b = t / dim;
	d = t % dim;
	for (int j = offsets[b]; j < offsets[b + 1]; j++)
		acc = __fadd_rn(acc, table[indices[j] * dim + d]);
	out[t] = acc;
}

/* One block per row (row = blockIdx.x, gridDim.x rows of cols floats):
 * mean = sum(x)/cols, var = sum((x-mean)^2)/cols, both summed in order by thread 0;
 * rstd = 1/sqrt(var + eps); out = ((x - mean) * rstd) * gamma + beta, threads striding x. */
extern "C" __global__ void layernorm_row(float *out, const float *in, const float *gamma,
					 const float *beta, int cols, float eps)
{
	__shared__ float stats[2];
	const float *x = in + (size_t)blockIdx.x * cols;
	float *y = out + (size_t)blockIdx.x * cols;

	if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
		float s = 0.0f, v = 0.0f, mean;

		for (int j = 0; j < cols; j++)
			s = __fadd_rn(s, x[j]);
		mean = __fdiv_rn(s, (float)cols);
		for (int j = 0; j < cols; j++) {
			float d = __fsub_rn(x[j], mean);

			v = __fadd_rn(v, __fmul_rn(d, d));
		}
		v = __fdiv_rn(v, (float)cols);
		stats[0] = mean;
		stats[1] = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(v, eps)));
	}
	__syncthreads();
	for (int j = threadIdx.x; j < cols; j += blockDim.x) {
		float d = __fmul_rn(__fsub_rn(x[j], stats[0]), stats[1]);

		y[j] = __fadd_rn(__fmul_rn(d, gamma[j]), beta[j]);
	}
}

/* One block per row: mx = max(x) and s = sum(expf(x - mx)) by thread 0 in order;
 * out = expf(x - mx) / s, threads striding the row. */
extern "C" __global__ void softmax_row(float *out, const float *in, int cols)
{
	__shared__ float stats[2];
	const float *x = in + (size_t)blockIdx.x * cols;
	float *y = out + (size_t)blockIdx.x * cols;

	if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
		float mx = cols > 0 ? x[0] : 0.0f, s = 0.0f;

		for (int j = 1; j < cols; j++)
			mx = fmaxf(mx, x[j]);
		for (int j = 0; j < cols; j++)
			s = __fadd_rn(s, expf(__fsub_rn(x[j], mx)));
		stats[0] = mx;
		stats[1] = s;
	}
	__syncthreads();
	for (int j = threadIdx.x; j < cols; j += blockDim.x)
		y[j] = __fdiv_rn(expf(__fsub_rn(x[j], stats[0])), stats[1]);
}
