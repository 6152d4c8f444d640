/* twins_builtin.c - host twins of the test kernels (the .cu files of tests/kernels), exported as
 * sim_twin_<entry> so twins.c finds them by name. tests/simcuda layer.
 *
 * Each twin computes what its kernel computes for the whole launch, in the kernel's order of
 * operations. Float arithmetic is one rounded operation per C expression statement (the device
 * is compiled with -std=c11, where GCC does not contract a*b+c into a fused multiply-add), so
 * it gives the same bits as the kernels' __fmul_rn / __fadd_rn; tanhf and expf come from the C
 * library (deterministic, not GPU-exact). 1-D kernels cover i < min(n, gridDim.x*blockDim.x):
 * like on a GPU, a grid too small for n leaves the tail untouched. */
#include "sim_int.h"

#include <math.h>
#include <string.h>

#define CAT_MAX 8

/* Must match tests/kernels/copy.cu: 104 bytes, 8-aligned. */
struct cat_args {
	const float *src[CAT_MAX];   /* input pointers, in output order */
	int len[CAT_MAX];            /* floats taken from each input */
	int count;                   /* inputs used */
};

struct split_args {
	float *dst[CAT_MAX];         /* output pointers, in source order */
	int len[CAT_MAX];            /* floats written to each output */
	int count;                   /* outputs used */
};

void sim_twin_fill(const struct sim_launch *l);
void sim_twin_copy(const struct sim_launch *l);
void sim_twin_axpy(const struct sim_launch *l);
void sim_twin_add(const struct sim_launch *l);
void sim_twin_mul(const struct sim_launch *l);
void sim_twin_scale(const struct sim_launch *l);
void sim_twin_relu(const struct sim_launch *l);
void sim_twin_tanh_kernel(const struct sim_launch *l);
void sim_twin_gemm(const struct sim_launch *l);
void sim_twin_reduce_sum(const struct sim_launch *l);
void sim_twin_embedding_bag_sum(const struct sim_launch *l);
void sim_twin_layernorm_row(const struct sim_launch *l);
void sim_twin_softmax_row(const struct sim_launch *l);
void sim_twin_cat(const struct sim_launch *l);
void sim_twin_split_copy(const struct sim_launch *l);
void sim_twin_ncclDevKernel_AllReduce_Sum_f32_RING_LL(const struct sim_launch *l);

/* Whether the entry has the parameter sizes the twin was written for (sig: one letter per
 * parameter, p = pointer, i = int, f = float, s = a 104-byte table). A program's own kernel
 * that happens to share a test kernel's name is not run with the wrong layout. */
static bool has_signature(const struct sim_launch *l, const char *sig)
{
	size_t n = strlen(sig);

	if (l->param_count == n) {
		size_t i;

		for (i = 0; i < n; i++) {
			size_t want = sig[i] == 'p' ? sizeof(void *) : sig[i] == 's' ? 104 : 4;

			if (l->param_sizes[i] != want)
				break;
		}
		if (i == n)
			return true;
	}
	sim_log("kernel %s: its parameters do not match the built-in twin of the test kernel "
		"(%s); not run", l->name, sig);
	return false;
}

static void *ptr_param(const struct sim_launch *l, unsigned int i)
{
	void *p;

	memcpy(&p, l->params[i], sizeof(p));
	return p;
}

/* Elements a 1-D kernel with an `i < n` guard touches. */
static size_t elems_1d(const struct sim_launch *l, int n)
{
	size_t threads = (size_t)l->grid.x * l->block.x;

	if (n <= 0)
		return 0;
	return (size_t)n < threads ? (size_t)n : threads;
}

/* ------------------------------------------------------------------ elementwise.cu */

void sim_twin_fill(const struct sim_launch *l)
{
	float *x;
	float v;
	size_t n;

	if (!has_signature(l, "pfi"))
		return;
	x = ptr_param(l, 0);
	v = SIM_PARAM(l, 1, float);
	n = elems_1d(l, SIM_PARAM(l, 2, int));
	for (size_t i = 0; i < n; i++)
		x[i] = v;
}

void sim_twin_copy(const struct sim_launch *l)
{
	size_t n;

	if (!has_signature(l, "ppi"))
		return;
	n = elems_1d(l, SIM_PARAM(l, 2, int));
	/* bytes, not float loads and stores: NaN payloads move unchanged, as on the GPU */
	memmove(ptr_param(l, 0), ptr_param(l, 1), n * sizeof(float));
}

void sim_twin_axpy(const struct sim_launch *l)
{
	float *y;
	const float *x;
	float a;
	size_t n;

	if (!has_signature(l, "ppfi"))
		return;
	y = ptr_param(l, 0);
	x = ptr_param(l, 1);
	a = SIM_PARAM(l, 2, float);
	n = elems_1d(l, SIM_PARAM(l, 3, int));
	for (size_t i = 0; i < n; i++) {
		float t = a * x[i];

		y[i] = t + y[i];
	}
}

void sim_twin_add(const struct sim_launch *l)
{
	float *out;
	const float *a, *b;
	size_t n;

	if (!has_signature(l, "pppi"))
		return;
	out = ptr_param(l, 0);
	a = ptr_param(l, 1);
	b = ptr_param(l, 2);
	n = elems_1d(l, SIM_PARAM(l, 3, int));
	for (size_t i = 0; i < n; i++)
		out[i] = a[i] + b[i];
}

void sim_twin_mul(const struct sim_launch *l)
{
	float *out;
	const float *a, *b;
	size_t n;

	if (!has_signature(l, "pppi"))
		return;
	out = ptr_param(l, 0);
	a = ptr_param(l, 1);
	b = ptr_param(l, 2);
	n = elems_1d(l, SIM_PARAM(l, 3, int));
	for (size_t i = 0; i < n; i++)
		out[i] = a[i] * b[i];
}

void sim_twin_scale(const struct sim_launch *l)
{
	float *out;
	const float *in;
	float s;
	size_t n;

	if (!has_signature(l, "ppfi"))
		return;
	out = ptr_param(l, 0);
	in = ptr_param(l, 1);
	s = SIM_PARAM(l, 2, float);
	n = elems_1d(l, SIM_PARAM(l, 3, int));
	for (size_t i = 0; i < n; i++)
		out[i] = s * in[i];
}

void sim_twin_relu(const struct sim_launch *l)
{
	float *out;
	const float *in;
	size_t n;

	if (!has_signature(l, "ppi"))
		return;
	out = ptr_param(l, 0);
	in = ptr_param(l, 1);
	n = elems_1d(l, SIM_PARAM(l, 2, int));
	for (size_t i = 0; i < n; i++) {
		float v = in[i];

		out[i] = v > 0.0f ? v : 0.0f;
	}
}

void sim_twin_tanh_kernel(const struct sim_launch *l)
{
	float *out;
	const float *in;
	size_t n;

	if (!has_signature(l, "ppi"))
		return;
	out = ptr_param(l, 0);
	in = ptr_param(l, 1);
	n = elems_1d(l, SIM_PARAM(l, 2, int));
	for (size_t i = 0; i < n; i++)
		out[i] = tanhf(in[i]);
}

/* ------------------------------------------------------------------ linalg.cu */

void sim_twin_gemm(const struct sim_launch *l)
{
	float *C;
	const float *A, *B;
	int m, n, k;
	float beta;
	size_t rows, cols;

	if (!has_signature(l, "pppiiif"))
		return;
	C = ptr_param(l, 0);
	A = ptr_param(l, 1);
	B = ptr_param(l, 2);
	m = SIM_PARAM(l, 3, int);
	n = SIM_PARAM(l, 4, int);
	k = SIM_PARAM(l, 5, int);
	beta = SIM_PARAM(l, 6, float);
	if (m <= 0 || n <= 0)
		return;
	rows = (size_t)l->grid.y * l->block.y;
	cols = (size_t)l->grid.x * l->block.x;
	rows = (size_t)m < rows ? (size_t)m : rows;
	cols = (size_t)n < cols ? (size_t)n : cols;
	for (size_t r = 0; r < rows; r++) {
		for (size_t c = 0; c < cols; c++) {
			float acc = 0.0f;

			for (int p = 0; p < k; p++) {
				float t = A[r * (size_t)k + (size_t)p] * B[(size_t)p * n + c];

				acc = acc + t;
			}
			if (beta != 0.0f) {
				float t = beta * C[r * (size_t)n + c];

				acc = acc + t;
			}
			C[r * (size_t)n + c] = acc;
		}
	}
}

void sim_twin_reduce_sum(const struct sim_launch *l)
{
	float *out;
	const float *in;
	int n;
	float s = 0.0f;

	if (!has_signature(l, "ppi"))
		return;
	out = ptr_param(l, 0);
	in = ptr_param(l, 1);
	n = SIM_PARAM(l, 2, int);
	/* part[t] is summed into s as soon as it is known: the same order as the kernel's. */
	for (unsigned int t = 0; t < l->block.x; t++) {
		float acc = 0.0f;

		for (long long i = t; i < n; i += l->block.x)
			acc = acc + in[i];
		s = s + acc;
	}
	*out = s;
}

/* ------------------------------------------------------------------ nn.cu */

void sim_twin_embedding_bag_sum(const struct sim_launch *l)
{
	const float *table;
	const int *indices, *offsets;
	int nbags, dim;
	float *out;
	size_t count;

	if (!has_signature(l, "pppiip"))
		return;
	table = ptr_param(l, 0);
	indices = ptr_param(l, 1);
	offsets = ptr_param(l, 2);
	nbags = SIM_PARAM(l, 3, int);
	dim = SIM_PARAM(l, 4, int);
	out = ptr_param(l, 5);
	if (dim <= 0 || nbags <= 0)
		return;
	count = elems_1d(l, nbags * dim);
	for (size_t t = 0; t < count; t++) {
		size_t b = t / (size_t)dim, d = t % (size_t)dim;
		float acc = 0.0f;

		for (int j = offsets[b]; j < offsets[b + 1]; j++)
			acc = acc + table[(size_t)indices[j] * dim + d];
		out[t] = acc;
	}
}

void sim_twin_layernorm_row(const struct sim_launch *l)
{
	float *out;
	const float *in, *gamma, *beta;
	int cols;
	float eps;

	if (!has_signature(l, "ppppif"))
		return;
	out = ptr_param(l, 0);
	in = ptr_param(l, 1);
	gamma = ptr_param(l, 2);
	beta = ptr_param(l, 3);
	cols = SIM_PARAM(l, 4, int);
	eps = SIM_PARAM(l, 5, float);
	for (size_t row = 0; row < l->grid.x; row++) {
		const float *x = in + row * (size_t)cols;
		float *y = out + row * (size_t)cols;
		float s = 0.0f, v = 0.0f, mean, rstd, t;

		for (int j = 0; j < cols; j++)
			s = s + x[j];
		mean = s / (float)cols;
		for (int j = 0; j < cols; j++) {
			float d = x[j] - mean;

			t = d * d;
			v = v + t;
		}
		v = v / (float)cols;
		t = v + eps;
		t = sqrtf(t);
		rstd = 1.0f / t;
		for (int j = 0; j < cols; j++) {
			float d = x[j] - mean;

			d = d * rstd;
			t = d * gamma[j];
			y[j] = t + beta[j];
		}
	}
}

void sim_twin_softmax_row(const struct sim_launch *l)
{
	float *out;
	const float *in;
	int cols;

	if (!has_signature(l, "ppi"))
		return;
	out = ptr_param(l, 0);
	in = ptr_param(l, 1);
	cols = SIM_PARAM(l, 2, int);
	for (size_t row = 0; row < l->grid.x; row++) {
		const float *x = in + row * (size_t)cols;
		float *y = out + row * (size_t)cols;
		float mx = cols > 0 ? x[0] : 0.0f, s = 0.0f;

		for (int j = 1; j < cols; j++)
			mx = fmaxf(mx, x[j]);
		for (int j = 0; j < cols; j++)
			s = s + expf(x[j] - mx);
		for (int j = 0; j < cols; j++)
			y[j] = expf(x[j] - mx) / s;
	}
}

/* ------------------------------------------------------------------ copy.cu */

/* Threads of a cat/split launch that find their segment: when no length is negative, exactly
 * the first min(threads, sum of lengths); otherwise every thread walks the table (the kernel's
 * loop, whatever the lengths say). */
static size_t table_bound(const int *len, int count, size_t threads)
{
	size_t sum = 0;

	for (int s = 0; s < count && s < CAT_MAX; s++) {
		if (len[s] < 0)
			return threads;
		sum += (size_t)len[s];
	}
	return sum < threads ? sum : threads;
}

/* Segment and offset of element i, following the kernel's walk; false when none. */
static bool table_find(const int *len, int count, long long i, int *seg, long long *at)
{
	long long a = i;

	for (int s = 0; s < count && s < CAT_MAX; s++) {
		if (a < len[s]) {
			*seg = s;
			*at = a;
			return true;
		}
		a -= len[s];
	}
	return false;
}

void sim_twin_cat(const struct sim_launch *l)
{
	struct cat_args a;
	float *out;
	size_t bound;

	if (!has_signature(l, "sp"))
		return;
	memcpy(&a, l->params[0], sizeof(a));
	out = ptr_param(l, 1);
	bound = table_bound(a.len, a.count, (size_t)l->grid.x * l->block.x);
	for (size_t i = 0; i < bound && i <= 0x7fffffff; i++) {
		int s;
		long long at;

		if (table_find(a.len, a.count, (long long)i, &s, &at))
			out[i] = a.src[s][at];
	}
}

void sim_twin_split_copy(const struct sim_launch *l)
{
	struct split_args a;
	const float *src;
	size_t bound;

	if (!has_signature(l, "ps"))
		return;
	src = ptr_param(l, 0);
	memcpy(&a, l->params[1], sizeof(a));
	bound = table_bound(a.len, a.count, (size_t)l->grid.x * l->block.x);
	for (size_t i = 0; i < bound && i <= 0x7fffffff; i++) {
		int s;
		long long at;

		if (table_find(a.len, a.count, (long long)i, &s, &at))
			a.dst[s][at] = src[i];
	}
}

/* ------------------------------------------------------------------ nccl.cu */

/* One rank: the all-reduce of a sum leaves buf as it is. */
void sim_twin_ncclDevKernel_AllReduce_Sum_f32_RING_LL(const struct sim_launch *l)
{
	(void)has_signature(l, "pi");
}
