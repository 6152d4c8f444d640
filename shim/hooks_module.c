/* hooks_module.c - hand-written hooks of module and library calls whose results capture caches:
 * unloading (a boundary: the module's function handles may be reused afterwards, so capture
 * forgets them, and only them) and
 * the lookups that hand out CUkernel handles (launches of those resolve through
 * cuKernelGetFunction). shim layer. */
#include "shim/engine.h"

SHIM_HOOK(cuModuleUnload)(CUmodule m)
{
	if (!shim_is_inside()) {
		/* which module: read by capture under the engine's lock, on this thread */
		cap_funcs_unloading(m, NULL);
		shim_engine_module_unload(DRV_ID_cuModuleUnload);
		cap_funcs_unloading(NULL, NULL);
	}
	return drv_real.p_cuModuleUnload(m);
}

SHIM_HOOK(cuLibraryUnload)(CUlibrary lib)
{
	if (!shim_is_inside()) {
		cap_funcs_unloading(NULL, lib);
		shim_engine_module_unload(DRV_ID_cuLibraryUnload);
		cap_funcs_unloading(NULL, NULL);
	}
	return drv_real.p_cuLibraryUnload(lib);
}

SHIM_HOOK(cuLibraryGetKernel)(CUkernel *k, CUlibrary lib, const char *name)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuLibraryGetKernel(k, lib, name);
	shim_engine_neutral(DRV_ID_cuLibraryGetKernel);
	rc = drv_real.p_cuLibraryGetKernel(k, lib, name);
	if (rc == CUDA_SUCCESS && k)
		shim_engine_kernels(DRV_ID_cuLibraryGetKernel, k, 1, false);
	return rc;
}

SHIM_HOOK(cuLibraryEnumerateKernels)(CUkernel *k, unsigned int n, CUlibrary lib)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuLibraryEnumerateKernels(k, n, lib);
	shim_engine_neutral(DRV_ID_cuLibraryEnumerateKernels);
	rc = drv_real.p_cuLibraryEnumerateKernels(k, n, lib);
	if (rc == CUDA_SUCCESS && k) {
		unsigned int count = 0;

		/* the driver fills only as many entries as the library has: the rest of the
		 * program's array is whatever was there */
		if (drv_real.p_cuLibraryGetKernelCount) {
			shim_note_call(DRV_ID_cuLibraryGetKernelCount); /* counted like all we send */
			shim_inside_enter();
			if (drv_real.p_cuLibraryGetKernelCount(&count, lib) != CUDA_SUCCESS)
				count = 0;
			shim_inside_leave();
		}
		if (count < n)
			n = count;
		shim_engine_kernels(DRV_ID_cuLibraryEnumerateKernels, k, n, false);
	}
	return rc;
}
