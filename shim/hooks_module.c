/* hooks_module.c - hand-written hooks of module and library calls whose results capture caches:
 * loading (every loader; the CUDA runtime registers its fat binaries through them: capture
 * keeps the PTX of each image, capture/images.c; JIT linking, whose PTX inputs stand for the
 * machine code a GPU's linker outputs), the lookups that hand out function and
 * CUkernel handles (their function records learn which image they came from; launches of a
 * CUkernel resolve through cuKernelGetFunction), and unloading (a boundary: the module's
 * function handles may be reused afterwards, so capture forgets them, and only them). Loads and
 * lookups are neutral: counted, never boundaries (frameworks load lazily in the middle of a
 * step). Each tells the engine after the driver succeeded, never on the launch path. shim
 * layer. */
#include "shim/engine.h"

/* A loader: forward, then hand the loaded image (bytes, or a file) to capture. */
#define LOAD_HOOK(symbol, decls, args, library, handle, image, path) \
	SHIM_HOOK(symbol) decls \
	{ \
		CUresult rc; \
\
		if (shim_is_inside()) \
			return drv_real.p_##symbol args; \
		shim_engine_neutral(DRV_ID_##symbol); \
		rc = drv_real.p_##symbol args; \
		if (rc == CUDA_SUCCESS && (handle)) \
			shim_engine_image_loaded(library, *(handle), image, path); \
		return rc; \
	}

LOAD_HOOK(cuModuleLoad, (CUmodule *m, const char *fname), (m, fname), false, m, NULL, fname)
LOAD_HOOK(cuModuleLoadData, (CUmodule *m, const void *image), (m, image), false, m, image, NULL)
LOAD_HOOK(cuModuleLoadDataEx,
	  (CUmodule *m, const void *image, unsigned int n, CUjit_option *opts, void **vals),
	  (m, image, n, opts, vals), false, m, image, NULL)
LOAD_HOOK(cuModuleLoadFatBinary, (CUmodule *m, const void *fatbin), (m, fatbin), false, m, fatbin, NULL)
LOAD_HOOK(cuLibraryLoadData,
	  (CUlibrary *lib, const void *code, CUjit_option *jo, void **jv, unsigned int nj,
	   CUlibraryOption *lo, void **lv, unsigned int nl),
	  (lib, code, jo, jv, nj, lo, lv, nl), true, lib, code, NULL)
LOAD_HOOK(cuLibraryLoadFromFile,
	  (CUlibrary *lib, const char *fname, CUjit_option *jo, void **jv, unsigned int nj,
	   CUlibraryOption *lo, void **lv, unsigned int nl),
	  (lib, fname, jo, jv, nj, lo, lv, nl), true, lib, NULL, fname)

/* JIT linking: the PTX inputs are kept for the module the program loads from the output. */
SHIM_HOOK(cuLinkAddData_v2)(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
			    unsigned int n, CUjit_option *opts, void **vals)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuLinkAddData_v2(state, type, data, size, name, n, opts, vals);
	shim_engine_neutral(DRV_ID_cuLinkAddData_v2);
	rc = drv_real.p_cuLinkAddData_v2(state, type, data, size, name, n, opts, vals);
	if (rc == CUDA_SUCCESS)
		shim_engine_link_input(state, type, data, size, NULL);
	return rc;
}

SHIM_HOOK(cuLinkAddFile_v2)(CUlinkState state, CUjitInputType type, const char *path, unsigned int n,
			    CUjit_option *opts, void **vals)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuLinkAddFile_v2(state, type, path, n, opts, vals);
	shim_engine_neutral(DRV_ID_cuLinkAddFile_v2);
	rc = drv_real.p_cuLinkAddFile_v2(state, type, path, n, opts, vals);
	if (rc == CUDA_SUCCESS)
		shim_engine_link_input(state, type, NULL, 0, path);
	return rc;
}

SHIM_HOOK(cuLinkComplete)(CUlinkState state, void **out, size_t *size)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuLinkComplete(state, out, size);
	shim_engine_neutral(DRV_ID_cuLinkComplete);
	rc = drv_real.p_cuLinkComplete(state, out, size);
	if (rc == CUDA_SUCCESS && out)
		shim_engine_link_complete(state, *out);
	return rc;
}

SHIM_HOOK(cuLinkDestroy)(CUlinkState state)
{
	if (!shim_is_inside()) {
		shim_engine_neutral(DRV_ID_cuLinkDestroy);
		shim_engine_link_destroy(state); /* before: the handle may be reused right after */
	}
	return drv_real.p_cuLinkDestroy(state);
}

SHIM_HOOK(cuModuleGetFunction)(CUfunction *f, CUmodule m, const char *name)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuModuleGetFunction(f, m, name);
	shim_engine_neutral(DRV_ID_cuModuleGetFunction);
	rc = drv_real.p_cuModuleGetFunction(f, m, name);
	if (rc == CUDA_SUCCESS && f)
		shim_engine_image_link(CAP_LINK_MODULE_FUNCTION, *f, m);
	return rc;
}

SHIM_HOOK(cuLibraryGetModule)(CUmodule *m, CUlibrary lib)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuLibraryGetModule(m, lib);
	shim_engine_neutral(DRV_ID_cuLibraryGetModule);
	rc = drv_real.p_cuLibraryGetModule(m, lib);
	if (rc == CUDA_SUCCESS && m)
		shim_engine_image_link(CAP_LINK_LIBRARY_MODULE, *m, lib);
	return rc;
}

SHIM_HOOK(cuKernelGetFunction)(CUfunction *f, CUkernel k)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuKernelGetFunction(f, k);
	shim_engine_neutral(DRV_ID_cuKernelGetFunction);
	rc = drv_real.p_cuKernelGetFunction(f, k);
	if (rc == CUDA_SUCCESS && f)
		shim_engine_image_link(CAP_LINK_KERNEL_FUNCTION, *f, k);
	return rc;
}

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
		shim_engine_kernels(DRV_ID_cuLibraryGetKernel, k, 1, false, lib);
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
		shim_engine_kernels(DRV_ID_cuLibraryEnumerateKernels, k, n, false, lib);
	}
	return rc;
}
