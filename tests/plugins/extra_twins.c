/* extra_twins.c - an example twin plugin: how a program brings its own kernels to the software
 * device. Built to $B/plugins/extra_twins.so; named in SIMCUDA_TWINS it supplies the twin of
 * plugin_square (tests/kernels/plugin.cu), which the device has no built-in twin for.
 * tests layer: includes only the public twin ABI, sim_twin.h. */
#include <string.h>

#include "sim_twin.h"

void sim_twin_plugin_square(const struct sim_launch *l);

/* out[i] = in[i] * in[i] for i < min(n, gridDim.x * blockDim.x), like the kernel. */
void sim_twin_plugin_square(const struct sim_launch *l)
{
	float *out;
	const float *in;
	size_t n, threads = (size_t)l->grid.x * l->block.x;
	int nn;

	/* A kernel of the same name with another signature is not ours to run. */
	if (l->param_count != 3 || l->param_sizes[0] != sizeof(void *) ||
	    l->param_sizes[1] != sizeof(void *) || l->param_sizes[2] != sizeof(int))
		return;
	memcpy(&out, l->params[0], sizeof(out));
	memcpy(&in, l->params[1], sizeof(in));
	nn = SIM_PARAM(l, 2, int);
	n = nn > 0 ? (size_t)nn : 0;
	if (n > threads)
		n = threads;
	for (size_t i = 0; i < n; i++)
		out[i] = in[i] * in[i];
}
