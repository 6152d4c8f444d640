/* funcs.c - the cache of kernel functions (name and parameter layout from the driver, asked once
 * per function) and of CUkernel handles, and the kernel-name globs. capture layer.
 *
 * A launch may name a CUfunction or a CUkernel cast to one, and the two cannot be told apart by
 * value: capture learns CUkernel handles from cuLibraryGetKernel and cuLibraryEnumerateKernels
 * (and keeps them: a stale one that a later CUfunction happens to reuse fails to resolve, which
 * makes that launch a boundary, never a wrong record); those resolve to the per-context function with cuKernelGetFunction in the
 * current context. Parameter layouts come from cuFuncGetParamInfo, asked for index 0, 1, ...
 * until it answers CUDA_ERROR_INVALID_VALUE. Records are never freed before cap_fini (ops of
 * stored windows point at them); a module unload only drops them from the lookup, because the
 * driver may hand the same handle to a different function afterwards. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_int.h"
#include "common/compiler.h"
#include "common/errors.h"
#include "common/hash.h"
#include "common/log.h"

#define PARAM_INFO_MAX 8192 /* more parameters than any kernel can take */

struct kernel_fn {
	CUkernel kernel;             /* the library's kernel */
	CUcontext ctx;               /* context it was resolved in */
	CUfunction func;             /* cuKernelGetFunction's answer */
};

static struct cf_map by_func;    /* CUfunction -> struct cap_func */
static struct cf_map kernels;    /* set of CUkernel handles (value: a marker) */
static struct cf_map kernel_fns; /* hash(CUkernel, CUcontext) -> struct kernel_fn */
static struct cap_func *all;     /* every record, newest first */
static uint32_t next_id = 1;     /* id of the next record */
static size_t nbytes;            /* bytes of records (statistics) */

static const char kernel_marker; /* the value of every entry of kernels */

bool cap__name_matches(const char *patterns, const char *name)
{
	char pat[256];
	const char *p = patterns;

	if (!patterns || !name)
		return false;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);

		if (n && n < sizeof(pat)) {
			memcpy(pat, p, n);
			pat[n] = 0;
			if (fnmatch(pat, name, 0) == 0)
				return true;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	return false;
}

static void layout(struct cap_func *f)
{
	uint32_t cap = 0, n = 0, end = 0;
	uint32_t *off = NULL, *size = NULL;

	for (;;) {
		size_t o = 0, s = 0;
		CUresult rc;

		if (n >= PARAM_INFO_MAX)
			goto out_unknown;
		cap__own_call(SHIM_ID_cuFuncGetParamInfo);
		rc = SHIM_REAL(cuFuncGetParamInfo)(f->func, n, &o, &s);
		if (rc == CUDA_ERROR_INVALID_VALUE)
			break;
		if (rc != CUDA_SUCCESS || o + s > CAP_MAX_PARAM_BYTES)
			goto out_unknown;
		if (n == cap) {
			uint32_t ncap = cap ? 2 * cap : 8;
			uint32_t *no = realloc(off, ncap * sizeof(*no)), *ns;

			if (!no)
				goto out_unknown;
			off = no;
			ns = realloc(size, ncap * sizeof(*ns));
			if (!ns)
				goto out_unknown;
			size = ns;
			cap = ncap;
		}
		off[n] = (uint32_t)o;
		size[n] = (uint32_t)s;
		if (o + s > end)
			end = (uint32_t)(o + s);
		n++;
	}
	f->nparams = n;
	f->param_bytes = end;
	f->offset = off;
	f->size = size;
	f->layout_known = true;
	nbytes += 2 * cap * sizeof(uint32_t);
	return;
out_unknown:
	free(off);
	free(size);
	f->layout_known = false;
}

static struct cap_func *func_new(CUfunction func)
{
	struct cap_func *f = calloc(1, sizeof(*f));
	const char *name = NULL;

	if (!f)
		return NULL;
	f->func = func;
	f->id = next_id++;
	cap__own_call(SHIM_ID_cuFuncGetName);
	if (SHIM_REAL(cuFuncGetName)(&name, func) == CUDA_SUCCESS && name)
		f->name = strdup(name);
	if (!f->name)
		f->name = strdup("?");
	if (!f->name) {
		free(f);
		return NULL;
	}
	layout(f);
	f->barrier = cap__name_matches(cap__s.cfg.barrier_kernels, f->name);
	if (cf_map_put(&by_func, (uint64_t)(uintptr_t)func, f) != 0) {
		free((char *)f->name);
		free(f->offset);
		free(f->size);
		free(f);
		return NULL;
	}
	f->next = all;
	all = f;
	nbytes += sizeof(*f) + strlen(f->name) + 1;
	return f;
}

struct cap_func *cap__func_get(CUfunction handle, CUcontext ctx, CUfunction *func)
{
	CUfunction fn = handle;
	struct cap_func *f;

	if (cf_unlikely(kernels.n) && cf_map_get(&kernels, (uint64_t)(uintptr_t)handle)) {
		uint64_t k = cf_hash_combine((uint64_t)(uintptr_t)handle, (uint64_t)(uintptr_t)ctx);
		struct kernel_fn *kf = cf_map_get(&kernel_fns, k);

		if (!kf || kf->kernel != (CUkernel)handle || kf->ctx != ctx) {
			CUfunction resolved = NULL;

			cap__own_call(SHIM_ID_cuKernelGetFunction);
			if (SHIM_REAL(cuKernelGetFunction)(&resolved, (CUkernel)handle) != CUDA_SUCCESS || !resolved)
				return NULL;
			if (!kf) {
				kf = malloc(sizeof(*kf));
				if (!kf)
					return NULL;
				if (cf_map_put(&kernel_fns, k, kf) != 0) {
					free(kf);
					return NULL;
				}
				nbytes += sizeof(*kf);
			}
			kf->kernel = (CUkernel)handle;
			kf->ctx = ctx;
			kf->func = resolved;
		}
		fn = kf->func;
	}
	f = cf_map_get(&by_func, (uint64_t)(uintptr_t)fn);
	if (!f)
		f = func_new(fn);
	if (f && func)
		*func = fn;
	return f;
}

void cap_kernel_handle_add(CUkernel k)
{
	if (k)
		cf_map_put(&kernels, (uint64_t)(uintptr_t)k, (void *)&kernel_marker);
}

static void drop_kernel_fns(void)
{
	void *v;

	for (size_t i = 0; !cap__leaking && cf_map_next(&kernel_fns, &i, NULL, &v);)
		free(v);
	cap__map_drop(&kernel_fns);
}

void cap_funcs_forget(void)
{
	/* records stay on `all` (ops point at them); only the lookups forget */
	cap__map_drop(&by_func);
	drop_kernel_fns();
}

struct cap_func *cap__funcs_all(void)
{
	return all;
}

void cap__funcs_fini(void)
{
	struct cap_func *f, *next;

	cap_funcs_forget();
	cap__map_drop(&kernels);
	for (f = cap__leaking ? NULL : all; f; f = next) {
		next = f->next;
		free((char *)f->name);
		free(f->offset);
		free(f->size);
		free(f);
	}
	all = NULL;
	next_id = 1;
	nbytes = 0;
}

size_t cap__funcs_bytes(void)
{
	return nbytes + cf_map_bytes(&by_func) + cf_map_bytes(&kernels) + cf_map_bytes(&kernel_fns);
}
