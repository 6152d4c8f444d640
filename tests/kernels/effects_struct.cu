/* effects_struct.cu - kernels written for the effects analysis and its oracle test: by-value
 * struct parameters (pointers inside them become the card's `field` lines, integers inside
 * them bounds), pointers loaded from memory (indirect), gathers and a module variable - what a
 * derived card must refuse or leave unknown. tests layer (compiled to PTX by nvcc). */

struct fx_pair {
	float *dst;
	const float *src;
};

struct fx_dims {
	int n;
	int scale;
};

/* pointers inside a by-value struct at fixed offsets: field p0 0 w 4*p1, field p0 8 r 4*p1 */
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

/* a CuPy-like array: pointer and size in one struct, a grid-stride loop bounded by the size
 * field (a span naming p0@8) */
struct fx_array {
	float *data;
	int size;
	int stride;                /* in floats, >= 1 */
};

extern "C" __global__ void fx_struct_array(struct fx_array a, float v)
{
	for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < a.size; i += blockDim.x * gridDim.x)
		a.data[i] = v;
}

/* a pointer chosen between two fields (a select, or a branch): each field its own access */
struct fx_two {
	float *a;
	float *b;
	int na;
	int nb;
};

extern "C" __global__ void fx_struct_select(struct fx_two t, int which)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	float *p = which ? t.a : t.b;
	int n = which ? t.na : t.nb;

	if (i < n)
		p[i] = 2.0f;
}

/* a table of pointers indexed by a loop variable (a small cat), each entry's length in the
 * struct */
struct fx_table {
	const float *src[4];
	int len[4];
	int count;
};

extern "C" __global__ void fx_struct_table(struct fx_table t, float *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int at = i;

	if (i < 0)
		return;
	for (int s = 0; s < t.count && s < 4; s++) {
		if (at < t.len[s]) {
			out[i] = t.src[s][at];
			return;
		}
		at -= t.len[s];
	}
}

/* an element picked by a parameter, in a table inside the struct: an offset into parameter
 * space that is not constant (nvcc copies the struct to local memory or indexes it): indirect
 * or bounded, never narrower than the truth */
extern "C" __global__ void fx_struct_pick(struct fx_table t, int pick, float *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (pick >= 0 && pick < 4 && i < t.len[pick])
		out[i] = t.src[pick][i];
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
