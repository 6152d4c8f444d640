/* twin_plugin.c - a driver-API program launching plugin_square, a kernel whose twin only the
 * example plugin (SIMCUDA_TWINS=.../extra_twins.so) provides. Prints out[i] = in[i]^2 for
 * in[i] = i/2 - 3, one per line; on a failed launch it tries once more (the device must log
 * only once), prints the error name on stderr and exits 2. tests layer. */
#include <cuda.h>
#include <stdio.h>

#include "testlib.h"

#define N 16

int main(void)
{
	CUmodule m;
	CUfunction f;
	CUdeviceptr din, dout;
	float in[N], out[N];
	int n = N;
	void *args[] = { &dout, &din, &n };
	const char *name = "?";
	CUresult rc;

	tl_init();
	m = tl_load_module("plugin");
	f = tl_func(m, "plugin_square");
	for (int i = 0; i < N; i++)
		in[i] = (float)i / 2.0f - 3.0f;
	CHECK(cuMemAlloc(&din, sizeof(in)));
	CHECK(cuMemAlloc(&dout, sizeof(out)));
	CHECK(cuMemcpyHtoD(din, in, sizeof(in)));
	rc = cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
	if (rc != CUDA_SUCCESS) {
		(void)cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
		cuGetErrorName(rc, &name);
		fprintf(stderr, "twin_plugin: cuLaunchKernel: %s\n", name);
		return 2;
	}
	CHECK(cuMemcpyDtoH(out, dout, sizeof(out)));
	for (int i = 0; i < N; i++)
		printf("%.6g\n", (double)out[i]);
	CHECK(cuMemFree(din));
	CHECK(cuMemFree(dout));
	CHECK(cuModuleUnload(m));
	return 0;
}
