/* plugin.cu - a kernel with NO built-in twin: its twin comes from the example plugin
 * tests/plugins/extra_twins.c through SIMCUDA_TWINS. tests layer. */

/* out[i] = in[i] * in[i] */
extern "C" __global__ void plugin_square(float *out, const float *in, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = __fmul_rn(in[i], in[i]);
}
