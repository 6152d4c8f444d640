/* twins_train.c - host twins of the training kernels in tests/kernels/train.cu (used by the
 * workloads), exported as sim_twin_<entry> so twins.c finds them by name. tests/simcuda layer.
 *
 * Each twin computes what its kernel computes for the whole launch, in the order the kernel's
 * threads use. One rounded float operation per C expression statement (-std=c11: GCC does not
 * contract into fused multiply-adds), matching the kernels' __fmul_rn / __fadd_rn; expf and
 * log1pf come from the C library (deterministic, not GPU-exact). 1-D kernels cover
 * i < min(n, gridDim.x*blockDim.x), like on a GPU. */
#include "sim_int.h"

#include <math.h>
#include <string.h>

void sim_twin_bias_add(const struct sim_launch *l);
void sim_twin_bias_grad(const struct sim_launch *l);
void sim_twin_relu_backward(const struct sim_launch *l);
void sim_twin_tanh_backward(const struct sim_launch *l);
void sim_twin_gemm_ex(const struct sim_launch *l);
void sim_twin_embedding_bag_backward(const struct sim_launch *l);
void sim_twin_dot_interaction(const struct sim_launch *l);
void sim_twin_dot_interaction_backward(const struct sim_launch *l);
void sim_twin_concat2_rows(const struct sim_launch *l);
void sim_twin_split2_rows(const struct sim_launch *l);
void sim_twin_layernorm_backward_row(const struct sim_launch *l);
void sim_twin_layernorm_param_grad(const struct sim_launch *l);
void sim_twin_softmax_backward_row(const struct sim_launch *l);
void sim_twin_bce_logits(const struct sim_launch *l);
void sim_twin_mse_loss(const struct sim_launch *l);

/* Whether the launch has the parameter sizes the twin expects (sig: p = pointer, i = int,
 * f = float), so a program's own kernel that shares a name is not run with the wrong layout. */
static bool signature_ok(const struct sim_launch *l, const char *sig)
{
	size_t n = strlen(sig);

	if (l->param_count == n) {
		size_t i;

		for (i = 0; i < n; i++)
			if (l->param_sizes[i] != (sig[i] == 'p' ? sizeof(void *) : 4))
				break;
		if (i == n)
			return true;
	}
	sim_log("kernel %s: its parameters do not match the twin of the training kernel (%s); "
		"not run", l->name, sig);
	return false;
}

static void *ptr_at(const struct sim_launch *l, unsigned int i)
{
	void *p;

	memcpy(&p, l->params[i], sizeof(p));
	return p;
}

static int int_at(const struct sim_launch *l, unsigned int i)
{
	return SIM_PARAM(l, i, int);
}

static float float_at(const struct sim_launch *l, unsigned int i)
{
	return SIM_PARAM(l, i, float);
}

/* Threads of a 1-D kernel with an `i < n` guard that do work: min(n, gridDim.x*blockDim.x). */
static size_t span_1d(const struct sim_launch *l, long long n)
{
	size_t threads = (size_t)l->grid.x * l->block.x;

	if (n <= 0)
		return 0;
	return (size_t)n < threads ? (size_t)n : threads;
}

void sim_twin_bias_add(const struct sim_launch *l)
{
	float *out;
	const float *bias;
	int rows, cols;
	size_t n;

	if (!signature_ok(l, "ppii"))
		return;
	out = ptr_at(l, 0);
	bias = ptr_at(l, 1);
	rows = int_at(l, 2);
	cols = int_at(l, 3);
	if (cols <= 0)
		return;
	n = span_1d(l, (long long)rows * cols);
	for (size_t i = 0; i < n; i++)
		out[i] = out[i] + bias[i % (size_t)cols];
}

void sim_twin_bias_grad(const struct sim_launch *l)
{
	float *db;
	const float *dy;
	int rows, cols;
	size_t n;

	if (!signature_ok(l, "ppii"))
		return;
	db = ptr_at(l, 0);
	dy = ptr_at(l, 1);
	rows = int_at(l, 2);
	cols = int_at(l, 3);
	n = span_1d(l, cols);
	for (size_t c = 0; c < n; c++) {
		float s = 0.0f;

		for (int r = 0; r < rows; r++)
			s = s + dy[(size_t)r * cols + c];
		db[c] = db[c] + s;
	}
}

void sim_twin_relu_backward(const struct sim_launch *l)
{
	float *dx;
	const float *dy, *y;
	size_t n;

	if (!signature_ok(l, "pppi"))
		return;
	dx = ptr_at(l, 0);
	dy = ptr_at(l, 1);
	y = ptr_at(l, 2);
	n = span_1d(l, int_at(l, 3));
	for (size_t i = 0; i < n; i++)
		dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

void sim_twin_tanh_backward(const struct sim_launch *l)
{
	float *dx;
	const float *dy, *y;
	size_t n;

	if (!signature_ok(l, "pppi"))
		return;
	dx = ptr_at(l, 0);
	dy = ptr_at(l, 1);
	y = ptr_at(l, 2);
	n = span_1d(l, int_at(l, 3));
	for (size_t i = 0; i < n; i++) {
		float t = y[i] * y[i];

		t = 1.0f - t;
		dx[i] = dy[i] * t;
	}
}

void sim_twin_gemm_ex(const struct sim_launch *l)
{
	float *C;
	const float *A, *B;
	int m, n, k, ta, tb, sa, sb, sc;
	float alpha, beta;
	size_t rows, cols;

	if (!signature_ok(l, "pppiiiiiffiii"))
		return;
	C = ptr_at(l, 0);
	A = ptr_at(l, 1);
	B = ptr_at(l, 2);
	m = int_at(l, 3);
	n = int_at(l, 4);
	k = int_at(l, 5);
	ta = int_at(l, 6);
	tb = int_at(l, 7);
	alpha = float_at(l, 8);
	beta = float_at(l, 9);
	sa = int_at(l, 10);
	sb = int_at(l, 11);
	sc = int_at(l, 12);
	if (m <= 0 || n <= 0)
		return;
	rows = (size_t)l->grid.y * l->block.y;
	cols = (size_t)l->grid.x * l->block.x;
	rows = (size_t)m < rows ? (size_t)m : rows;
	cols = (size_t)n < cols ? (size_t)n : cols;
	for (size_t z = 0; z < l->grid.z; z++) {
		const float *a = A + z * (size_t)(long long)sa;
		const float *b = B + z * (size_t)(long long)sb;
		float *c = C + z * (size_t)(long long)sc;

		for (size_t r = 0; r < rows; r++)
			for (size_t col = 0; col < cols; col++) {
				float acc = 0.0f;

				for (int p = 0; p < k; p++) {
					float x = ta ? a[(size_t)p * m + r] : a[r * (size_t)k + p];
					float y = tb ? b[col * (size_t)k + p] : b[(size_t)p * n + col];
					float t = x * y;

					acc = acc + t;
				}
				if (alpha != 1.0f)
					acc = alpha * acc;
				if (beta != 0.0f) {
					float t = beta * c[r * (size_t)n + col];

					acc = acc + t;
				}
				c[r * (size_t)n + col] = acc;
			}
	}
}

void sim_twin_embedding_bag_backward(const struct sim_launch *l)
{
	float *gtable;
	const int *indices, *offsets;
	int nbags, dim;
	const float *dout;
	size_t cols;

	if (!signature_ok(l, "pppiip"))
		return;
	gtable = ptr_at(l, 0);
	indices = ptr_at(l, 1);
	offsets = ptr_at(l, 2);
	nbags = int_at(l, 3);
	dim = int_at(l, 4);
	dout = ptr_at(l, 5);
	cols = span_1d(l, dim);
	/* columns are independent, so walking them inside the bag loop keeps each column's order */
	for (int b = 0; b < nbags; b++)
		for (int j = offsets[b]; j < offsets[b + 1]; j++)
			for (size_t d = 0; d < cols; d++) {
				float *g = &gtable[(size_t)indices[j] * dim + d];

				*g = *g + dout[(size_t)b * dim + d];
			}
}

void sim_twin_dot_interaction(const struct sim_launch *l)
{
	float *out;
	const float *T;
	int nf, nb, dim, npairs;
	size_t n;

	if (!signature_ok(l, "ppiii"))
		return;
	out = ptr_at(l, 0);
	T = ptr_at(l, 1);
	nf = int_at(l, 2);
	nb = int_at(l, 3);
	dim = int_at(l, 4);
	npairs = nf * (nf - 1) / 2;
	if (npairs <= 0)
		return;
	n = span_1d(l, (long long)nb * npairs);
	for (size_t t = 0; t < n; t++) {
		int b = (int)(t / (size_t)npairs), p = (int)(t % (size_t)npairs), i, j;
		float acc = 0.0f;

		for (i = 1; (i + 1) * i / 2 <= p; i++)
			;
		j = p - i * (i - 1) / 2;
		for (int k = 0; k < dim; k++) {
			float x = T[((size_t)i * nb + b) * dim + k] * T[((size_t)j * nb + b) * dim + k];

			acc = acc + x;
		}
		out[t] = acc;
	}
}

void sim_twin_dot_interaction_backward(const struct sim_launch *l)
{
	float *dT;
	const float *dZ, *T;
	int nf, nb, dim, npairs;
	size_t n;

	if (!signature_ok(l, "pppiii"))
		return;
	dT = ptr_at(l, 0);
	dZ = ptr_at(l, 1);
	T = ptr_at(l, 2);
	nf = int_at(l, 3);
	nb = int_at(l, 4);
	dim = int_at(l, 5);
	npairs = nf * (nf - 1) / 2;
	if (dim <= 0 || nb <= 0)
		return;
	n = span_1d(l, (long long)nf * nb * dim);
	for (size_t t = 0; t < n; t++) {
		int f = (int)(t / ((size_t)nb * dim)), b = (int)((t / (size_t)dim) % (size_t)nb);
		int k = (int)(t % (size_t)dim);
		float acc = 0.0f;

		for (int g = 0; g < nf; g++) {
			int p;
			float x;

			if (g == f)
				continue;
			p = f > g ? f * (f - 1) / 2 + g : g * (g - 1) / 2 + f;
			x = dZ[(size_t)b * npairs + p] * T[((size_t)g * nb + b) * dim + k];
			acc = acc + x;
		}
		dT[t] = acc;
	}
}

void sim_twin_concat2_rows(const struct sim_launch *l)
{
	float *out;
	const float *a, *b;
	int acols, bcols, rows, w;
	size_t n;

	if (!signature_ok(l, "ppipii"))
		return;
	out = ptr_at(l, 0);
	a = ptr_at(l, 1);
	acols = int_at(l, 2);
	b = ptr_at(l, 3);
	bcols = int_at(l, 4);
	rows = int_at(l, 5);
	w = acols + bcols;
	if (w <= 0)
		return;
	n = span_1d(l, (long long)rows * w);
	for (size_t i = 0; i < n; i++) {
		size_t r = i / (size_t)w;
		int c = (int)(i % (size_t)w);

		out[i] = c < acols ? a[r * acols + c] : b[r * bcols + (c - acols)];
	}
}

void sim_twin_split2_rows(const struct sim_launch *l)
{
	float *a, *b;
	const float *src;
	int acols, bcols, rows, w;
	size_t n;

	if (!signature_ok(l, "pipipi"))
		return;
	a = ptr_at(l, 0);
	acols = int_at(l, 1);
	b = ptr_at(l, 2);
	bcols = int_at(l, 3);
	src = ptr_at(l, 4);
	rows = int_at(l, 5);
	w = acols + bcols;
	if (w <= 0)
		return;
	n = span_1d(l, (long long)rows * w);
	for (size_t i = 0; i < n; i++) {
		size_t r = i / (size_t)w;
		int c = (int)(i % (size_t)w);

		if (c < acols)
			a[r * acols + c] = src[i];
		else
			b[r * bcols + (c - acols)] = src[i];
	}
}

void sim_twin_layernorm_backward_row(const struct sim_launch *l)
{
	float *dx, *xhat;
	const float *dy, *in, *gamma;
	int cols;
	float eps;

	if (!signature_ok(l, "pppppif"))
		return;
	dx = ptr_at(l, 0);
	xhat = ptr_at(l, 1);
	dy = ptr_at(l, 2);
	in = ptr_at(l, 3);
	gamma = ptr_at(l, 4);
	cols = int_at(l, 5);
	eps = float_at(l, 6);
	for (size_t row = 0; row < l->grid.x; row++) {
		const float *x = in + row * (size_t)cols, *g = dy + row * (size_t)cols;
		float *xh = xhat + row * (size_t)cols, *y = dx + row * (size_t)cols;
		float s = 0.0f, v = 0.0f, mean, rstd, s1 = 0.0f, s2 = 0.0f, t, m1, m2;

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
			float h = x[j] - mean, gg;

			h = h * rstd;
			gg = g[j] * gamma[j];
			xh[j] = h;
			s1 = s1 + gg;
			t = gg * h;
			s2 = s2 + t;
		}
		m1 = s1 / (float)cols;
		m2 = s2 / (float)cols;
		for (int j = 0; j < cols; j++) {
			float gg = g[j] * gamma[j], u;

			t = gg - m1;
			u = xh[j] * m2;
			t = t - u;
			y[j] = rstd * t;
		}
	}
}

void sim_twin_layernorm_param_grad(const struct sim_launch *l)
{
	float *dgamma, *dbeta;
	const float *dy, *xhat;
	int rows, cols;
	size_t n;

	if (!signature_ok(l, "ppppii"))
		return;
	dgamma = ptr_at(l, 0);
	dbeta = ptr_at(l, 1);
	dy = ptr_at(l, 2);
	xhat = ptr_at(l, 3);
	rows = int_at(l, 4);
	cols = int_at(l, 5);
	n = span_1d(l, cols);
	for (size_t c = 0; c < n; c++) {
		float sg = 0.0f, sb = 0.0f;

		for (int r = 0; r < rows; r++) {
			float t = dy[(size_t)r * cols + c] * xhat[(size_t)r * cols + c];

			sg = sg + t;
			sb = sb + dy[(size_t)r * cols + c];
		}
		dgamma[c] = dgamma[c] + sg;
		dbeta[c] = dbeta[c] + sb;
	}
}

void sim_twin_softmax_backward_row(const struct sim_launch *l)
{
	float *dx;
	const float *dy, *out;
	int cols;

	if (!signature_ok(l, "pppi"))
		return;
	dx = ptr_at(l, 0);
	dy = ptr_at(l, 1);
	out = ptr_at(l, 2);
	cols = int_at(l, 3);
	for (size_t row = 0; row < l->grid.x; row++) {
		const float *g = dy + row * (size_t)cols, *y = out + row * (size_t)cols;
		float *d = dx + row * (size_t)cols;
		float s = 0.0f;

		for (int j = 0; j < cols; j++) {
			float t = g[j] * y[j];

			s = s + t;
		}
		for (int j = 0; j < cols; j++) {
			float t = g[j] - s;

			d[j] = y[j] * t;
		}
	}
}

void sim_twin_bce_logits(const struct sim_launch *l)
{
	float *terms, *dz;
	const float *z, *y;
	float inv_n;
	size_t n;

	if (!signature_ok(l, "ppppif"))
		return;
	terms = ptr_at(l, 0);
	dz = ptr_at(l, 1);
	z = ptr_at(l, 2);
	y = ptr_at(l, 3);
	inv_n = float_at(l, 5);
	n = span_1d(l, int_at(l, 4));
	for (size_t i = 0; i < n; i++) {
		float zi = z[i], yi = y[i];
		float e = expf(-fabsf(zi));
		float den = 1.0f + e;
		float p = zi >= 0.0f ? 1.0f / den : e / den;
		float zy = zi * yi;
		float t = fmaxf(zi, 0.0f) - zy;
		float d;

		terms[i] = t + log1pf(e);
		d = p - yi;
		dz[i] = d * inv_n;
	}
}

void sim_twin_mse_loss(const struct sim_launch *l)
{
	float *terms, *dy;
	const float *y, *target;
	float inv_n;
	size_t n;

	if (!signature_ok(l, "ppppif"))
		return;
	terms = ptr_at(l, 0);
	dy = ptr_at(l, 1);
	y = ptr_at(l, 2);
	target = ptr_at(l, 3);
	inv_n = float_at(l, 5);
	n = span_1d(l, int_at(l, 4));
	for (size_t i = 0; i < n; i++) {
		float d = y[i] - target[i];
		float t = 2.0f * d;

		terms[i] = d * d;
		dy[i] = t * inv_n;
	}
}
