/* train.cu - the training kernels the workloads (tests/workloads) need beyond the starter set:
 * bias add and its gradient, activation backwards, a strided/transposed/batched gemm, embedding
 * bag backward, the DLRM dot interaction and its backward, two-way row concat/split, layer norm
 * and softmax backwards, and losses. Twins in tests/simcuda/twins_train.c. tests layer.
 *
 * Same rules as the other test kernels: every product and sum is a separately rounded
 * __fmul_rn / __fadd_rn / __fsub_rn / __fdiv_rn, so nvcc cannot contract them into a fused
 * multiply-add and the twin's C arithmetic gives the same bits; every reduction runs in one
 * thread in a fixed order (deterministic, no atomics). 1-D kernels use i = blockIdx.x *
 * blockDim.x + threadIdx.x with an `i < n` guard; row kernels use one block per row and let
 * thread 0 compute the row statistics. expf and log1pf are the exception to bit-exactness with
 * the twins (the twins use the C library's), as in nn.cu. */

/* out[i] += bias[i % cols] over rows*cols elements (bias broadcast along rows). */
extern "C" __global__ void bias_add(float *out, const float *bias, int rows, int cols)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (cols > 0 && i < rows * cols)
		out[i] = __fadd_rn(out[i], bias[i % cols]);
}

/* db[c] += sum over r = 0..rows-1 (in order) of dy[r, c]; one thread per column. */
extern "C" __global__ void bias_grad(float *db, const float *dy, int rows, int cols)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	float s = 0.0f;

	if (c >= cols)
		return;
	for (int r = 0; r < rows; r++)
		s = __fadd_rn(s, dy[r * cols + c]);
	db[c] = __fadd_rn(db[c], s);
}

/* dx[i] = y[i] > 0 ? dy[i] : 0, where y is the relu's output. */
extern "C" __global__ void relu_backward(float *dx, const float *dy, const float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

/* dx[i] = dy[i] * (1 - y[i]*y[i]), where y is the tanh's output. */
extern "C" __global__ void tanh_backward(float *dx, const float *dy, const float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		float t = __fmul_rn(y[i], y[i]);

		t = __fsub_rn(1.0f, t);
		dx[i] = __fmul_rn(dy[i], t);
	}
}

/* Batched C[m,n] = alpha * op(A)[m,k] op(B)[k,n] (+ beta * C when beta != 0), row-major.
 * op(A)(r,p) = ta ? A[p*m + r] : A[r*k + p];  op(B)(p,c) = tb ? B[c*k + p] : B[p*n + c].
 * Batch z = blockIdx.z offsets A, B, C by z*sa, z*sb, z*sc floats. One thread per output:
 * column = x index, row = y index; elements outside the grid are not computed. The dot
 * product runs p = 0..k-1 in order; alpha is applied only when it is not 1. */
extern "C" __global__ void gemm_ex(float *C, const float *A, const float *B, int m, int n, int k,
				   int ta, int tb, float alpha, float beta, int sa, int sb, int sc)
{
	int col = blockIdx.x * blockDim.x + threadIdx.x;
	int row = blockIdx.y * blockDim.y + threadIdx.y;
	const float *a = A + (size_t)blockIdx.z * sa;
	const float *b = B + (size_t)blockIdx.z * sb;
	float *c = C + (size_t)blockIdx.z * sc;
	float acc = 0.0f;

	if (row >= m || col >= n)
		return;
	for (int p = 0; p < k; p++) {
		float x = ta ? a[p * m + row] : a[row * k + p];
		float y = tb ? b[col * k + p] : b[p * n + col];

		acc = __fadd_rn(acc, __fmul_rn(x, y));
	}
	if (alpha != 1.0f)
		acc = __fmul_rn(alpha, acc);
	if (beta != 0.0f)
		acc = __fadd_rn(acc, __fmul_rn(beta, c[row * n + col]));
	c[row * n + col] = acc;
}

/* Backward of embedding_bag_sum into a dense table gradient:
 * gtable[indices[j], d] += dout[b, d] for every bag b and j in [offsets[b], offsets[b+1]).
 * One thread per column d walks every bag and index in order, so repeated indices accumulate
 * deterministically without atomics. */
extern "C" __global__ void embedding_bag_backward(float *gtable, const int *indices,
						  const int *offsets, int nbags, int dim,
						  const float *dout)
{
	int d = blockIdx.x * blockDim.x + threadIdx.x;

	if (d >= dim)
		return;
	for (int b = 0; b < nbags; b++)
		for (int j = offsets[b]; j < offsets[b + 1]; j++) {
			float *g = &gtable[indices[j] * dim + d];

			*g = __fadd_rn(*g, dout[b * dim + d]);
		}
}

/* DLRM dot interaction. T holds nf feature blocks, feature-major: T[(f*nb + b)*dim + k].
 * For each sample b and pair p = i*(i-1)/2 + j (i > j, pairs in that order, nf*(nf-1)/2 of them):
 * out[b*npairs + p] = sum over k in order of T[i][b][k] * T[j][b][k]. One thread per output. */
extern "C" __global__ void dot_interaction(float *out, const float *T, int nf, int nb, int dim)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	int npairs = nf * (nf - 1) / 2;
	int b, p, i, j;
	float acc = 0.0f;

	if (npairs <= 0 || t >= nb * npairs)
		return;
	b = t / npairs;
	p = t % npairs;
	for (i = 1; (i + 1) * i / 2 <= p; i++)
		;
	j = p - i * (i - 1) / 2;
	for (int k = 0; k < dim; k++)
		acc = __fadd_rn(acc, __fmul_rn(T[(i * nb + b) * dim + k], T[(j * nb + b) * dim + k]));
	out[t] = acc;
}

/* Backward of dot_interaction: dT[f][b][k] = sum over g = 0..nf-1, g != f, in order, of
 * dZ[b, pair(f, g)] * T[g][b][k]. One thread per element of dT (written, not accumulated). */
extern "C" __global__ void dot_interaction_backward(float *dT, const float *dZ, const float *T,
						    int nf, int nb, int dim)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	int npairs = nf * (nf - 1) / 2;
	int f, b, k;
	float acc = 0.0f;

	if (dim <= 0 || nb <= 0 || t >= nf * nb * dim)
		return;
	f = t / (nb * dim);
	b = (t / dim) % nb;
	k = t % dim;
	for (int g = 0; g < nf; g++) {
		int p;

		if (g == f)
			continue;
		p = f > g ? f * (f - 1) / 2 + g : g * (g - 1) / 2 + f;
		acc = __fadd_rn(acc, __fmul_rn(dZ[b * npairs + p], T[(g * nb + b) * dim + k]));
	}
	dT[t] = acc;
}

/* out[r] = a[r] ++ b[r] for every row r: out is rows x (acols + bcols). One thread per output. */
extern "C" __global__ void concat2_rows(float *out, const float *a, int acols, const float *b,
					int bcols, int rows)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int w = acols + bcols;
	int r, c;

	if (w <= 0 || i >= rows * w)
		return;
	r = i / w;
	c = i % w;
	out[i] = c < acols ? a[r * acols + c] : b[r * bcols + (c - acols)];
}

/* The inverse of concat2_rows: src rows of (acols + bcols) split into a and b. One thread per
 * source element. */
extern "C" __global__ void split2_rows(float *a, int acols, float *b, int bcols, const float *src,
				       int rows)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int w = acols + bcols;
	int r, c;

	if (w <= 0 || i >= rows * w)
		return;
	r = i / w;
	c = i % w;
	if (c < acols)
		a[r * acols + c] = src[i];
	else
		b[r * bcols + (c - acols)] = src[i];
}

/* Backward of layernorm_row (nn.cu), one block per row of cols floats. Thread 0 recomputes
 * mean and rstd exactly as the forward does, writes xhat = (x - mean) * rstd and sums
 * s1 = sum(dy*gamma), s2 = sum(dy*gamma*xhat) in order; then the threads stride the row:
 * dx = rstd * ((dy*gamma - s1/cols) - xhat * (s2/cols)). */
extern "C" __global__ void layernorm_backward_row(float *dx, float *xhat, const float *dy,
						  const float *in, const float *gamma, int cols,
						  float eps)
{
	__shared__ float stats[3];
	const float *x = in + (size_t)blockIdx.x * cols;
	const float *g = dy + (size_t)blockIdx.x * cols;
	float *xh = xhat + (size_t)blockIdx.x * cols;
	float *y = dx + (size_t)blockIdx.x * cols;

	if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
		float s = 0.0f, v = 0.0f, mean, rstd, s1 = 0.0f, s2 = 0.0f;

		for (int j = 0; j < cols; j++)
			s = __fadd_rn(s, x[j]);
		mean = __fdiv_rn(s, (float)cols);
		for (int j = 0; j < cols; j++) {
			float d = __fsub_rn(x[j], mean);

			v = __fadd_rn(v, __fmul_rn(d, d));
		}
		v = __fdiv_rn(v, (float)cols);
		rstd = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(v, eps)));
		for (int j = 0; j < cols; j++) {
			float h = __fmul_rn(__fsub_rn(x[j], mean), rstd);
			float gg = __fmul_rn(g[j], gamma[j]);

			xh[j] = h;
			s1 = __fadd_rn(s1, gg);
			s2 = __fadd_rn(s2, __fmul_rn(gg, h));
		}
		stats[0] = rstd;
		stats[1] = __fdiv_rn(s1, (float)cols);
		stats[2] = __fdiv_rn(s2, (float)cols);
	}
	__syncthreads();
	for (int j = threadIdx.x; j < cols; j += blockDim.x) {
		float gg = __fmul_rn(g[j], gamma[j]);
		float t = __fsub_rn(gg, stats[1]);

		t = __fsub_rn(t, __fmul_rn(xh[j], stats[2]));
		y[j] = __fmul_rn(stats[0], t);
	}
}

/* dgamma[c] += sum_r dy[r,c]*xhat[r,c], dbeta[c] += sum_r dy[r,c], rows in order; one thread
 * per column. */
extern "C" __global__ void layernorm_param_grad(float *dgamma, float *dbeta, const float *dy,
						const float *xhat, int rows, int cols)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	float sg = 0.0f, sb = 0.0f;

	if (c >= cols)
		return;
	for (int r = 0; r < rows; r++) {
		sg = __fadd_rn(sg, __fmul_rn(dy[r * cols + c], xhat[r * cols + c]));
		sb = __fadd_rn(sb, dy[r * cols + c]);
	}
	dgamma[c] = __fadd_rn(dgamma[c], sg);
	dbeta[c] = __fadd_rn(dbeta[c], sb);
}

/* Backward of softmax_row, one block per row: s = sum(dy*y) by thread 0 in order, then
 * dx = y * (dy - s). */
extern "C" __global__ void softmax_backward_row(float *dx, const float *dy, const float *out,
						int cols)
{
	__shared__ float stat;
	const float *g = dy + (size_t)blockIdx.x * cols;
	const float *y = out + (size_t)blockIdx.x * cols;
	float *d = dx + (size_t)blockIdx.x * cols;

	if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
		float s = 0.0f;

		for (int j = 0; j < cols; j++)
			s = __fadd_rn(s, __fmul_rn(g[j], y[j]));
		stat = s;
	}
	__syncthreads();
	for (int j = threadIdx.x; j < cols; j += blockDim.x)
		d[j] = __fmul_rn(y[j], __fsub_rn(g[j], stat));
}

/* Binary cross-entropy with logits, per element: terms[i] = max(z,0) - z*y + log1p(exp(-|z|)),
 * dz[i] = (sigmoid(z) - y) * inv_n (the gradient of the mean). */
extern "C" __global__ void bce_logits(float *terms, float *dz, const float *z, const float *y,
				      int n, float inv_n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		float zi = z[i], yi = y[i];
		float e = expf(-fabsf(zi));
		float den = __fadd_rn(1.0f, e);
		float p = zi >= 0.0f ? __fdiv_rn(1.0f, den) : __fdiv_rn(e, den);
		float t = __fsub_rn(fmaxf(zi, 0.0f), __fmul_rn(zi, yi));

		terms[i] = __fadd_rn(t, log1pf(e));
		dz[i] = __fmul_rn(__fsub_rn(p, yi), inv_n);
	}
}

/* Squared error, per element: d = y - target, terms[i] = d*d, dy[i] = (2*d) * inv_n. */
extern "C" __global__ void mse_loss(float *terms, float *dy, const float *y, const float *target,
				    int n, float inv_n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n) {
		float d = __fsub_rn(y[i], target[i]);

		terms[i] = __fmul_rn(d, d);
		dy[i] = __fmul_rn(__fmul_rn(2.0f, d), inv_n);
	}
}
