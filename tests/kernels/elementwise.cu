/* elementwise.cu - 1-D elementwise test kernels; their host twins are in
 * tests/simcuda/twins_builtin.c. tests layer (compiled to PTX by nvcc in the build).
 *
 * Every kernel here uses the same grid convention: i = blockIdx.x*blockDim.x + threadIdx.x and
 * `if (i < n)`, so a grid smaller than n processes only the first gridDim.x*blockDim.x
 * elements, and the twin does exactly the same. Products and sums are written with __fmul_rn /
 * __fadd_rn so nvcc cannot contract them into a fused multiply-add: the twin's separately
 * rounded C arithmetic then gives the same bits. */

/* x[i] = v */
extern "C" __global__ void fill(float *x, float v, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = v;
}

/* dst[i] = src[i] */
extern "C" __global__ void copy(float *dst, const float *src, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		dst[i] = src[i];
}

/* y[i] = a*x[i] + y[i], rounded after the product and after the sum */
extern "C" __global__ void axpy(float *y, const float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = __fadd_rn(__fmul_rn(a, x[i]), y[i]);
}

/* out[i] = a[i] + b[i] */
extern "C" __global__ void add(float *out, const float *a, const float *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = __fadd_rn(a[i], b[i]);
}

/* out[i] = a[i] * b[i] */
extern "C" __global__ void mul(float *out, const float *a, const float *b, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = __fmul_rn(a[i], b[i]);
}

/* out[i] = s * in[i] */
extern "C" __global__ void scale(float *out, const float *in, float s, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = __fmul_rn(s, in[i]);
}

/* out[i] = in[i] > 0 ? in[i] : 0 (NaN and -0 give +0, as the comparison says) */
extern "C" __global__ void relu(float *out, const float *in, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		float v = in[i];

		out[i] = v > 0.0f ? v : 0.0f;
	}
}

/* out[i] = tanhf(in[i]); the twin uses the C library's tanhf (deterministic, not GPU-exact) */
extern "C" __global__ void tanh_kernel(float *out, const float *in, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = tanhf(in[i]);
}
