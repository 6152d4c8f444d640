/* twins_cudart.c - host twins of the kernels of the runtime-API test programs
 * (the .cu files of tests/cudart, built by nvcc with cudart), exported as sim_twin_<entry>. tests/simcuda
 * layer.
 *
 * One rounded float operation per C statement (-std=c11: GCC does not contract into fused
 * multiply-adds), matching the kernels' __fmul_rn / __fadd_rn / __fsub_rn. 1-D kernels cover
 * i < min(n, gridDim.x*blockDim.x), like on a GPU. */
#include "sim_int.h"

#include <string.h>

void sim_twin_rt_prep(const struct sim_launch *l);
void sim_twin_rt_forward(const struct sim_launch *l);
void sim_twin_rt_loss(const struct sim_launch *l);
void sim_twin_rt_update(const struct sim_launch *l);

/* Parameter sizes as expected (p pointer, 4 for int and float), else one log line: a program's
 * own kernel of the same name is not run with the wrong layout. */
static bool shape_ok(const struct sim_launch *l, const char *sig)
{
	size_t n = strlen(sig), i = 0;

	if (l->param_count == n)
		for (i = 0; i < n; i++)
			if (l->param_sizes[i] != (sig[i] == 'p' ? sizeof(void *) : 4))
				break;
	if (i != n || l->param_count != n)
		sim_log("kernel %s: its parameters do not match the twin of the runtime test kernel (%s); "
			"not run", l->name, sig);
	return i == n && l->param_count == n;
}

static float *fptr(const struct sim_launch *l, unsigned int i)
{
	float *p;

	memcpy(&p, l->params[i], sizeof(p));
	return p;
}

static size_t span(const struct sim_launch *l, int n)
{
	size_t threads = sim_launch_threads(l);

	return n <= 0 ? 0 : (size_t)n < threads ? (size_t)n : threads;
}

void sim_twin_rt_prep(const struct sim_launch *l)
{
	float *x, a;
	size_t n;

	if (!shape_ok(l, "pfi"))
		return;
	x = fptr(l, 0);
	a = SIM_PARAM(l, 1, float);
	n = span(l, SIM_PARAM(l, 2, int));
	for (size_t i = 0; i < n; i++) {
		float v = x[i] * a;

		x[i] = v + 0.5f;
	}
}

void sim_twin_rt_forward(const struct sim_launch *l)
{
	float *y;
	const float *w, *x;
	size_t n;

	if (!shape_ok(l, "pppi"))
		return;
	y = fptr(l, 0);
	w = fptr(l, 1);
	x = fptr(l, 2);
	n = span(l, SIM_PARAM(l, 3, int));
	for (size_t i = 0; i < n; i++)
		y[i] = w[i] * x[i];
}

void sim_twin_rt_loss(const struct sim_launch *l)
{
	float *loss, s = 0.0f;
	const float *y, *t;
	int n;

	if (!shape_ok(l, "pppi") || sim_launch_threads(l) == 0)
		return;
	loss = fptr(l, 0);
	y = fptr(l, 1);
	t = fptr(l, 2);
	n = SIM_PARAM(l, 3, int);
	for (int i = 0; i < n; i++) {
		float d = y[i] - t[i];
		float sq = d * d;

		s = s + sq;
	}
	loss[0] = s;
}

void sim_twin_rt_update(const struct sim_launch *l)
{
	float *w, lr;
	const float *x, *y, *t;
	size_t n;

	if (!shape_ok(l, "ppppfi"))
		return;
	w = fptr(l, 0);
	x = fptr(l, 1);
	y = fptr(l, 2);
	t = fptr(l, 3);
	lr = SIM_PARAM(l, 4, float);
	n = span(l, SIM_PARAM(l, 5, int));
	for (size_t i = 0; i < n; i++) {
		float d = y[i] - t[i];
		float g2 = 2.0f * d;
		float g = g2 * x[i];
		float step = lr * g;

		w[i] = w[i] - step;
	}
}
