/* effects_struct.cu - kernels written for the effects analysis and its oracle test: by-value
 * struct parameters, pointers loaded from memory (indirect), gathers and a module variable -
 * what a derived card must refuse or leave unknown. tests layer (compiled to PTX by nvcc). */

struct fx_pair {
	float *dst;
	const float *src;
};

struct fx_dims {
	int n;
	int scale;
};

/* pointers inside a by-value struct: refused as indirect */
extern "C" __global__ void fx_struct_ptrs(struct fx_pair p, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		p.dst[i] = p.src[i];
}

/* integers inside a by-value struct (8 bytes): no pointer fields */
extern "C" __global__ void fx_struct_ints(float *out, struct fx_dims d)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < d.n)
		out[i] = (float)(i * d.scale);
}

/* pointer chasing: the pointer is read from device memory */
extern "C" __global__ void fx_indirect(float *const *ptrs, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		ptrs[0][i] = 1.0f;
}

/* a gather: out[i] = table[idx[i]], the table span unknown */
extern "C" __global__ void fx_gather(float *out, const float *table, const int *idx, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = table[idx[i]];
}

/* a module variable: a hidden input no parameter names (refused) */
__device__ float fx_bias = 1.0f;

extern "C" __global__ void fx_module_var(float *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = fx_bias;
}
