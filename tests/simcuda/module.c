/* module.c - the software device's modules, libraries, functions and kernels: loading PTX,
 * looking up entries, parameter layouts and function attributes. tests/simcuda layer.
 *
 * A CUfunction points at a struct sim_func, a CUkernel at the sim_kernel_handle embedded in
 * one, so either resolves to the same function (sim_func_resolve). A library's code is one
 * context-independent module; its functions are its kernels. See sim_module_int.h for who
 * owns what and why unloading only frees what no queued work still refers to. */
#include "interp.h"
#include "sim_mem_int.h"
#include "sim_module_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIM_REGS_PER_THREAD 32 /* reported NUM_REGS: a plausible value for small kernels */

/* ------------------------------------------------------------------ handles */

struct sim_module *sim_module_from(CUmodule h)
{
	struct sim_module *m = (struct sim_module *)h;

	return sim_handle_is_live(m, SIM_MAGIC_MODULE) ? m : NULL;
}

struct sim_library *sim_library_from(CUlibrary h)
{
	struct sim_library *l = (struct sim_library *)h;

	return sim_handle_is_live(l, SIM_MAGIC_LIBRARY) ? l : NULL;
}

struct sim_func *sim_kernel_from(CUkernel h)
{
	struct sim_kernel_handle *k = (struct sim_kernel_handle *)h;

	return sim_handle_is_live(k, SIM_MAGIC_KERNEL) ? k->fn : NULL;
}

struct sim_func *sim_func_resolve(CUfunction f)
{
	if (!f)
		return NULL;
	if (sim_handle_is_live(f, SIM_MAGIC_FUNC))
		return (struct sim_func *)f;
	if (sim_handle_is_live(f, SIM_MAGIC_KERNEL))
		return ((struct sim_kernel_handle *)f)->fn;
	return NULL;
}

/* NULL handle: INVALID_VALUE (as the driver documents); a dead or foreign one: INVALID_HANDLE. */
static CUresult func_get(CUfunction f, struct sim_func **out)
{
	if (!f)
		return CUDA_ERROR_INVALID_VALUE;
	*out = sim_func_resolve(f);
	return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult kernel_get(CUkernel k, struct sim_func **out)
{
	if (!k)
		return CUDA_ERROR_INVALID_VALUE;
	*out = sim_kernel_from(k);
	return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* ------------------------------------------------------------------ life cycle */

/* Take a module's handles out of the registry (harmless for handles never added). */
static void module_forget_handles(struct sim_module *m)
{
	sim_handle_remove(m);
	for (unsigned int i = 0; i < m->nfuncs; i++) {
		sim_handle_remove(&m->funcs[i]);
		sim_handle_remove(&m->funcs[i].kernel);
	}
}

static void module_free(struct sim_module *m)
{
	module_forget_handles(m);
	for (unsigned int i = 0; i < m->nfuncs; i++) {
		m->funcs[i].magic = 0;
		m->funcs[i].kernel.magic = 0;
		free(m->funcs[i].param_sizes);
	}
	free(m->funcs);
	sim_interp_mod_free(m->interp);
	sim_ptx_fini(&m->ptx);
	m->magic = 0;
	free(m);
}

void sim_module_ref(struct sim_module *m)
{
	m->refs++;
}

void sim_module_unref(struct sim_module *m)
{
	if (--m->refs == 0)
		module_free(m);
}

/* Build a module from an image. The parse error, if any, goes to errlog (when given) and to
 * one sim_log line naming the calling entry point. */
static CUresult module_create(const char *who, const void *image, size_t limit, struct sim_ctx *ctx,
			      struct sim_library *lib, char *errlog, size_t errlen,
			      struct sim_module **out)
{
	char err[256], *ptx = NULL;
	struct sim_module *m;
	CUresult rc;

	m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = sim_image_ptx(who, image, limit, &ptx, &m->ptx, &m->machine_code, errlog, errlen);
	if (rc != CUDA_SUCCESS) {
		free(m);
		return rc;
	}
	if (!m->machine_code)
		rc = sim_ptx_parse(ptx ? ptx : image, &m->ptx, err, sizeof(err));
	/* As the driver loading lazily: an image without machine code for the device loads, and
	 * only a launch of one of its kernels fails (cuBLAS registers such an image, sm_75 only). */
	m->no_binary = m->machine_code && !sim_elf_arch_runs((unsigned int)m->ptx.target_sm);
	free(ptx);
	if (rc != CUDA_SUCCESS) {
		sim_log("%s: image is not valid PTX: %s", who, err);
		if (errlog && errlen)
			snprintf(errlog, errlen, "%s", err);
		goto out_free;
	}
	m->funcs = calloc(m->ptx.nentries ? m->ptx.nentries : 1, sizeof(*m->funcs));
	if (!m->funcs) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	m->nfuncs = m->ptx.nentries;
	for (unsigned int i = 0; i < m->nfuncs; i++) {
		struct sim_func *fn = &m->funcs[i];
		const struct sim_ptx_entry *e = &m->ptx.entries[i];

		fn->mod = m;
		fn->entry = e;
		fn->param_sizes = calloc(e->nparams ? e->nparams : 1, sizeof(size_t));
		if (!fn->param_sizes) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out_free;
		}
		for (unsigned int j = 0; j < e->nparams; j++)
			fn->param_sizes[j] = e->params[j].size;
		fn->max_dyn_shared = SIM_SHARED_DEFAULT;
		fn->carveout = -1;
		fn->cache_config = CU_FUNC_CACHE_PREFER_NONE;
		fn->kernel.fn = fn;
		fn->kernel.magic = lib ? SIM_MAGIC_KERNEL : 0;
		fn->magic = SIM_MAGIC_FUNC;
	}
	m->ctx = ctx;
	m->lib = lib;
	m->refs = 1;
	m->magic = SIM_MAGIC_MODULE;
	sim_handle_add(m);
	for (unsigned int i = 0; i < m->nfuncs; i++) {
		sim_handle_add(&m->funcs[i]);
		if (lib)
			sim_handle_add(&m->funcs[i].kernel);
	}
	*out = m;
	return CUDA_SUCCESS;
out_free:
	module_free(m);
	return rc;
}

/* The program gives up its handle: handles die now, memory when queued work is done with it. */
static void module_unload(struct sim_module *m)
{
	/* Unloading is a point where the driver waits for work using the module. */
	sim_sched_drain(NULL);
	module_forget_handles(m);
	m->magic = 0;
	for (unsigned int i = 0; i < m->nfuncs; i++) {
		m->funcs[i].magic = 0;
		m->funcs[i].kernel.magic = 0;
	}
	sim_module_unref(m);
}

/* Read a whole file into a NUL-terminated buffer of *len bytes (without the NUL). */
static CUresult read_file(const char *path, char **out, size_t *outlen)
{
	FILE *f;
	char *buf = NULL;
	size_t len = 0, cap = 0, n;
	CUresult rc = CUDA_SUCCESS;

	if (!path)
		return CUDA_ERROR_INVALID_VALUE;
	f = fopen(path, "rb");
	if (!f)
		return CUDA_ERROR_FILE_NOT_FOUND;
	do {
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap ? cap * 2 : 65536);

			if (!nb) {
				rc = CUDA_ERROR_OUT_OF_MEMORY;
				goto out_close;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	if (ferror(f)) {
		rc = CUDA_ERROR_FILE_NOT_FOUND;
		goto out_close;
	}
	buf[len] = 0;
	*out = buf;
	*outlen = len;
	buf = NULL;
out_close:
	free(buf);
	fclose(f);
	return rc;
}

/* JIT options: the only ones with an effect are the log buffers, which get the parse error
 * (error log) or nothing (info log); the "size" slots are in/out values stored in the array. */
static void jit_logs(unsigned int n, const CUjit_option *opts, void **vals, const char *err)
{
	char *info = NULL, *errbuf = NULL;
	int info_at = -1, err_at = -1;
	size_t info_len = 0, err_len = 0;

	if (!opts || !vals)
		return;
	for (unsigned int i = 0; i < n; i++) {
		switch (opts[i]) {
		case CU_JIT_INFO_LOG_BUFFER:
			info = vals[i];
			break;
		case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
			info_len = (size_t)(uintptr_t)vals[i];
			info_at = (int)i;
			break;
		case CU_JIT_ERROR_LOG_BUFFER:
			errbuf = vals[i];
			break;
		case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
			err_len = (size_t)(uintptr_t)vals[i];
			err_at = (int)i;
			break;
		default:
			break;
		}
	}
	if (info && info_len)
		info[0] = 0;
	if (info_at >= 0)
		vals[info_at] = (void *)(uintptr_t)0;
	if (errbuf && err_len) {
		snprintf(errbuf, err_len, "%s", err);
		if (err_at >= 0)
			vals[err_at] = (void *)(uintptr_t)(strlen(errbuf) + (err[0] ? 1 : 0));
	} else if (err_at >= 0) {
		vals[err_at] = (void *)(uintptr_t)0;
	}
}

static CUresult module_load(const char *who, CUmodule *module, const void *image, size_t limit,
			    char *errlog, size_t errlen)
{
	struct sim_ctx *ctx;
	struct sim_module *m;
	CUresult rc;

	if (!module || !image)
		return CUDA_ERROR_INVALID_VALUE;
	rc = sim_ctx_require(&ctx);
	if (rc != CUDA_SUCCESS)
		return rc;
	rc = module_create(who, image, limit, ctx, NULL, errlog, errlen, &m);
	if (rc == CUDA_SUCCESS)
		*module = (CUmodule)m;
	return rc;
}

/* ------------------------------------------------------------------ modules */

CUresult sim_api_cuModuleLoadData(CUmodule *module, const void *image)
{
	return module_load("cuModuleLoadData", module, image, SIZE_MAX, NULL, 0);
}

CUresult sim_api_cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
				    CUjit_option *options, void **optionValues)
{
	char err[256] = "";
	CUresult rc = CUDA_SUCCESS;

	if (numOptions && (!options || !optionValues)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	rc = module_load("cuModuleLoadDataEx", module, image, SIZE_MAX, err, sizeof(err));
	jit_logs(numOptions, options, optionValues, err);
out:
	return rc;
}

CUresult sim_api_cuModuleLoad(CUmodule *module, const char *fname)
{
	char *text = NULL;
	size_t len;
	CUresult rc = CUDA_SUCCESS;

	if (!module) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	rc = read_file(fname, &text, &len);
	if (rc != CUDA_SUCCESS)
		goto out;
	rc = module_load("cuModuleLoad", module, text, len, NULL, 0);
	free(text);
out:
	return rc;
}

/* A fatbin or a fatbin wrapper (module_create reads both, as it reads PTX text). */
CUresult sim_api_cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	return module_load("cuModuleLoadFatBinary", module, fatCubin, SIZE_MAX, NULL, 0);
}

CUresult sim_api_cuModuleUnload(CUmodule hmod)
{
	struct sim_module *m;
	CUresult rc = CUDA_SUCCESS;

	m = sim_module_from(hmod);
	/* A library's module belongs to the library: cuLibraryUnload releases it. */
	if (!m || m->lib) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	module_unload(m);
out:
	return rc;
}

struct sim_func *sim_module_find_func(struct sim_module *m, const char *name)
{
	for (unsigned int i = 0; i < m->nfuncs; i++)
		if (!strcmp(m->funcs[i].entry->name, name))
			return &m->funcs[i];
	return NULL;
}

CUresult sim_api_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	struct sim_module *m;
	struct sim_func *fn;
	CUresult rc = CUDA_SUCCESS;

	if (!hfunc || !name) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	m = sim_module_from(hmod);
	if (!m) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	fn = sim_module_find_func(m, name);
	if (!fn) {
		rc = CUDA_ERROR_NOT_FOUND;
		goto out;
	}
	*hfunc = (CUfunction)fn;
out:
	return rc;
}

CUresult sim_api_cuModuleGetFunctionCount(unsigned int *count, CUmodule hmod)
{
	struct sim_module *m;
	CUresult rc = CUDA_SUCCESS;

	m = sim_module_from(hmod);
	if (!count)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!m)
		rc = CUDA_ERROR_INVALID_HANDLE;
	else
		*count = m->nfuncs;
	return rc;
}

CUresult sim_api_cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions,
					    CUmodule mod)
{
	struct sim_module *m;
	CUresult rc = CUDA_SUCCESS;

	m = sim_module_from(mod);
	if (!functions && numFunctions) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (!m) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	for (unsigned int i = 0; i < numFunctions && i < m->nfuncs; i++)
		functions[i] = (CUfunction)&m->funcs[i];
out:
	return rc;
}

CUresult sim_api_cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
	CUresult rc = CUDA_SUCCESS;

	if (!mode)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		*mode = CU_MODULE_EAGER_LOADING;
	return rc;
}

/* ------------------------------------------------------------------ libraries */

static CUresult library_load(const char *who, CUlibrary *library, const void *code, size_t limit,
			     char *errlog, size_t errlen)
{
	struct sim_library *lib;
	CUresult rc;

	if (!library || !code)
		return CUDA_ERROR_INVALID_VALUE;
	if (!sim_is_initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	lib = calloc(1, sizeof(*lib));
	if (!lib)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = module_create(who, code, limit, NULL, lib, errlog, errlen, &lib->mod);
	if (rc != CUDA_SUCCESS) {
		free(lib);
		return rc;
	}
	lib->magic = SIM_MAGIC_LIBRARY;
	sim_handle_add(lib);
	*library = (CUlibrary)lib;
	return CUDA_SUCCESS;
}

CUresult sim_api_cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
				   void **jitOptionsValues, unsigned int numJitOptions,
				   CUlibraryOption *libraryOptions, void **libraryOptionValues,
				   unsigned int numLibraryOptions)
{
	char err[256] = "";
	CUresult rc;

	(void)libraryOptions;
	(void)libraryOptionValues;
	(void)numLibraryOptions;
	rc = library_load("cuLibraryLoadData", library, code, SIZE_MAX, err, sizeof(err));
	jit_logs(numJitOptions, jitOptions, jitOptionsValues, err);
	return rc;
}

CUresult sim_api_cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
				       CUjit_option *jitOptions, void **jitOptionsValues,
				       unsigned int numJitOptions, CUlibraryOption *libraryOptions,
				       void **libraryOptionValues, unsigned int numLibraryOptions)
{
	char err[256] = "", *text = NULL;
	size_t len;
	CUresult rc;

	(void)libraryOptions;
	(void)libraryOptionValues;
	(void)numLibraryOptions;
	rc = read_file(fileName, &text, &len);
	if (rc != CUDA_SUCCESS)
		goto out;
	rc = library_load("cuLibraryLoadFromFile", library, text, len, err, sizeof(err));
	jit_logs(numJitOptions, jitOptions, jitOptionsValues, err);
	free(text);
out:
	return rc;
}

CUresult sim_api_cuLibraryUnload(CUlibrary library)
{
	struct sim_library *lib;
	CUresult rc = CUDA_SUCCESS;

	lib = sim_library_from(library);
	if (!lib) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	sim_handle_remove(lib);
	lib->magic = 0;
	/* Queued work keeps the module (not the library) alive: clear the back pointer. */
	lib->mod->lib = NULL;
	module_unload(lib->mod);
	free(lib);
out:
	return rc;
}

CUresult sim_api_cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	struct sim_library *lib;
	struct sim_func *fn;
	CUresult rc = CUDA_SUCCESS;

	if (!pKernel || !name) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	lib = sim_library_from(library);
	if (!lib) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	fn = sim_module_find_func(lib->mod, name);
	if (!fn) {
		rc = CUDA_ERROR_NOT_FOUND;
		goto out;
	}
	*pKernel = (CUkernel)&fn->kernel;
out:
	return rc;
}

/* A variable of a machine-code module: its device memory, made (with its initial bytes) at the
 * first lookup in the current context. Never freed: a library outlives contexts, and memory a
 * destroyed context gave back may belong to another allocation by then. The PTX interpreter
 * keeps PTX modules' variables in host storage of its own, not looked up by name yet. */
static CUresult module_global(struct sim_module *m, const char *name, CUdeviceptr *dptr, size_t *bytes)
{
	struct sim_mc_global *g = NULL;
	struct sim_ctx *ctx;
	CUresult rc = CUDA_SUCCESS;

	if (!m->machine_code) {
		rc = CUDA_ERROR_NOT_SUPPORTED;
		goto out;
	}
	if (!name) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	for (unsigned int i = 0; i < m->ptx.nglobals && !g; i++)
		if (!strcmp(m->ptx.globals[i].name, name))
			g = &m->ptx.globals[i];
	if (!g) {
		rc = CUDA_ERROR_NOT_FOUND;
		goto out;
	}
	if (!g->dptr) {
		rc = sim_ctx_require(&ctx);
		if (rc == CUDA_SUCCESS)
			rc = sim_mem_alloc(ctx, g->size, SIM_MEM_DEVICE, NULL, &g->dptr);
		if (rc != CUDA_SUCCESS)
			goto out;
		if (g->init)
			memcpy((void *)(uintptr_t)g->dptr, g->init, g->size);
		else
			memset((void *)(uintptr_t)g->dptr, 0, g->size);
	}
	if (dptr)
		*dptr = g->dptr;
	if (bytes)
		*bytes = g->size;
out:
	return rc;
}

CUresult sim_api_cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
	struct sim_library *l = sim_library_from(library);

	return l ? module_global(l->mod, name, dptr, bytes) : CUDA_ERROR_INVALID_HANDLE;
}

CUresult sim_api_cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
	struct sim_module *m = sim_module_from(hmod);

	return m ? module_global(m, name, dptr, bytes) : CUDA_ERROR_INVALID_HANDLE;
}

CUresult sim_api_cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	struct sim_library *lib;
	CUresult rc = CUDA_SUCCESS;

	lib = sim_library_from(library);
	if (!pMod)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!lib)
		rc = CUDA_ERROR_INVALID_HANDLE;
	else
		*pMod = (CUmodule)lib->mod;
	return rc;
}

CUresult sim_api_cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
	struct sim_library *l;
	CUresult rc = CUDA_SUCCESS;

	l = sim_library_from(lib);
	if (!count)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!l)
		rc = CUDA_ERROR_INVALID_HANDLE;
	else
		*count = l->mod->nfuncs;
	return rc;
}

CUresult sim_api_cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels, CUlibrary lib)
{
	struct sim_library *l;
	CUresult rc = CUDA_SUCCESS;

	l = sim_library_from(lib);
	if (!kernels && numKernels) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (!l) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	for (unsigned int i = 0; i < numKernels && i < l->mod->nfuncs; i++)
		kernels[i] = (CUkernel)&l->mod->funcs[i].kernel;
out:
	return rc;
}

/* ------------------------------------------------------------------ kernels */

CUresult sim_api_cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct sim_ctx *ctx;
	struct sim_func *fn = NULL;
	CUresult rc = CUDA_SUCCESS;

	if (!pFunc) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	rc = kernel_get(kernel, &fn);
	if (rc != CUDA_SUCCESS)
		goto out;
	/* The function of a kernel is "in the current context": there must be one. */
	rc = sim_ctx_require(&ctx);
	if (rc != CUDA_SUCCESS)
		goto out;
	*pFunc = (CUfunction)fn;
out:
	return rc;
}

CUresult sim_api_cuKernelGetName(const char **name, CUkernel hfunc)
{
	struct sim_func *fn = NULL;
	CUresult rc = CUDA_SUCCESS;

	if (!name)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = kernel_get(hfunc, &fn);
	if (rc == CUDA_SUCCESS)
		*name = fn->entry->name;
	return rc;
}

CUresult sim_api_cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
	struct sim_func *fn = NULL;
	CUresult rc = CUDA_SUCCESS;

	if (!pLib)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = kernel_get(kernel, &fn);
	if (rc == CUDA_SUCCESS)
		*pLib = (CUlibrary)fn->mod->lib;
	return rc;
}

static CUresult param_info(struct sim_func *fn, size_t index, size_t *offset, size_t *size)
{
	if (!offset || index >= fn->entry->nparams)
		return CUDA_ERROR_INVALID_VALUE;
	*offset = fn->entry->params[index].offset;
	if (size)
		*size = fn->entry->params[index].size;
	return CUDA_SUCCESS;
}

CUresult sim_api_cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
				      size_t *paramSize)
{
	struct sim_func *fn = NULL;
	CUresult rc;

	rc = kernel_get(kernel, &fn);
	if (rc == CUDA_SUCCESS)
		rc = param_info(fn, paramIndex, paramOffset, paramSize);
	return rc;
}

/* ------------------------------------------------------------------ attributes */

static CUresult attr_get(struct sim_func *fn, CUfunction_attribute attrib, int *pi)
{
	const struct sim_ptx *ptx = &fn->mod->ptx;

	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		*pi = SIM_MAX_BLOCK_THREADS;
		break;
	case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
	case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
	case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
	case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
		*pi = 0;
		break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS:
		*pi = SIM_REGS_PER_THREAD;
		break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION:
		*pi = ptx->target_sm ? ptx->target_sm : sim_device_cc();
		break;
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
		*pi = sim_device_cc(); /* the device's own architecture (SIMCUDA_CC) */
		break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		*pi = fn->max_dyn_shared;
		break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		*pi = fn->carveout;
		break;
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		*pi = fn->cluster_attr[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH];
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

static CUresult attr_set(struct sim_func *fn, CUfunction_attribute attrib, int value)
{
	switch (attrib) {
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		if (value < 0 || value > SIM_SHARED_OPTIN_MAX)
			return CUDA_ERROR_INVALID_VALUE;
		fn->max_dyn_shared = value;
		return CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		if (value < -1 || value > 100)
			return CUDA_ERROR_INVALID_VALUE;
		fn->carveout = value;
		return CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		if (value < 0)
			return CUDA_ERROR_INVALID_VALUE;
		fn->cluster_attr[attrib - CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH] = value;
		return CUDA_SUCCESS;
	default:
		/* the rest are read-only */
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult sim_api_cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
	struct sim_func *fn = NULL;
	CUresult rc;

	rc = func_get(hfunc, &fn);
	if (rc == CUDA_SUCCESS)
		rc = attr_get(fn, attrib, pi);
	return rc;
}

CUresult sim_api_cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
	struct sim_func *fn = NULL;
	CUresult rc;

	rc = func_get(hfunc, &fn);
	if (rc == CUDA_SUCCESS)
		rc = attr_set(fn, attrib, value);
	return rc;
}

CUresult sim_api_cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel,
				      CUdevice dev)
{
	struct sim_func *fn = NULL;
	CUresult rc;

	rc = kernel_get(kernel, &fn);
	if (rc == CUDA_SUCCESS && (dev < 0 || dev >= SIM_MAX_DEVICES))
		rc = CUDA_ERROR_INVALID_DEVICE;
	if (rc == CUDA_SUCCESS)
		rc = attr_get(fn, attrib, pi);
	return rc;
}

CUresult sim_api_cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
				      CUdevice dev)
{
	struct sim_func *fn = NULL;
	CUresult rc;

	rc = kernel_get(kernel, &fn);
	if (rc == CUDA_SUCCESS && (dev < 0 || dev >= SIM_MAX_DEVICES))
		rc = CUDA_ERROR_INVALID_DEVICE;
	if (rc == CUDA_SUCCESS)
		rc = attr_set(fn, attrib, val);
	return rc;
}

static bool cache_config_is_valid(CUfunc_cache config)
{
	return config == CU_FUNC_CACHE_PREFER_NONE || config == CU_FUNC_CACHE_PREFER_SHARED ||
	       config == CU_FUNC_CACHE_PREFER_L1 || config == CU_FUNC_CACHE_PREFER_EQUAL;
}

CUresult sim_api_cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
	struct sim_func *fn = NULL;
	CUresult rc;

	rc = kernel_get(kernel, &fn);
	if (rc == CUDA_SUCCESS && (dev < 0 || dev >= SIM_MAX_DEVICES))
		rc = CUDA_ERROR_INVALID_DEVICE;
	if (rc == CUDA_SUCCESS && !cache_config_is_valid(config))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		fn->cache_config = config;
	return rc;
}

/* ------------------------------------------------------------------ functions */

CUresult sim_api_cuFuncGetName(const char **name, CUfunction hfunc)
{
	struct sim_func *fn = NULL;
	CUresult rc = CUDA_SUCCESS;

	if (!name)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = func_get(hfunc, &fn);
	if (rc == CUDA_SUCCESS)
		*name = fn->entry->name;
	return rc;
}

CUresult sim_api_cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
				    size_t *paramSize)
{
	struct sim_func *fn = NULL;
	CUresult rc;

	rc = func_get(func, &fn);
	if (rc == CUDA_SUCCESS)
		rc = param_info(fn, paramIndex, paramOffset, paramSize);
	return rc;
}

CUresult sim_api_cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
	struct sim_func *fn = NULL;
	CUresult rc;

	rc = func_get(hfunc, &fn);
	if (rc == CUDA_SUCCESS && !cache_config_is_valid(config))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		fn->cache_config = config;
	return rc;
}

CUresult sim_api_cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config)
{
	struct sim_func *fn = NULL;
	CUresult rc = CUDA_SUCCESS;

	/* Deprecated and without effect since Hopper; validated and ignored. */
	rc = func_get(hfunc, &fn);
	if (rc == CUDA_SUCCESS && config != CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE &&
	    config != CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE &&
	    config != CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE)
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

CUresult sim_api_cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
	struct sim_func *fn = NULL;
	CUresult rc = CUDA_SUCCESS;

	if (!hmod)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = func_get(hfunc, &fn);
	if (rc == CUDA_SUCCESS)
		*hmod = (CUmodule)fn->mod;
	return rc;
}

CUresult sim_api_cuFuncIsLoaded(CUfunctionLoadingState *state, CUfunction hfunc)
{
	struct sim_func *fn = NULL;
	CUresult rc = CUDA_SUCCESS;

	if (!state)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = func_get(hfunc, &fn);
	if (rc == CUDA_SUCCESS)
		*state = CU_FUNCTION_LOADING_STATE_LOADED; /* loading is eager */
	return rc;
}

CUresult sim_api_cuFuncLoad(CUfunction hfunc)
{
	struct sim_func *fn = NULL;
	CUresult rc;

	rc = func_get(hfunc, &fn);
	return rc;
}
