/* kernels.c - the embedded PTX of cufold's own kernels and their per-context module. rewrite
 * layer; the driver is reached only through SHIM_REAL, never through cufold's own hooks.
 *
 * The PTX is compiled from the .cu files of rewrite/kernels by nvcc at build time and embedded as bytes
 * (the Makefile generates rw_kernels_ptx.h). The cache is a small table under one lock: a
 * process has few contexts, and a load happens once per context. It is per process, not part of
 * the engine (a template build reaches it through rewrite's derivations, which take no engine);
 * the engine's one fork handler resets it in the child (rw_kernels_atfork_child). */
#include <pthread.h>
#include <string.h>

#include "common/log.h"
#include "driver/real.h"
#include "rewrite/kernels.h"

#include "rw_kernels_ptx.h"

#define CTX_MAX 64               /* contexts cached; beyond, cufold's kernels are not used */

static const char *const names[RW_K_COUNT] = {
	[RW_K_BATCH_COPY] = "cufold_batch_copy",
	[RW_K_BATCH_MEMSET] = "cufold_batch_memset",
	[RW_K_BATCH_COPY_BUF] = "cufold_batch_copy_buf",
	[RW_K_BATCH_MEMSET_BUF] = "cufold_batch_memset_buf",
	[RW_K_BATCH_COPY2D] = "cufold_batch_copy2d",
};

struct ctx_entry {
	CUcontext ctx;               /* the context, NULL: free */
	CUmodule mod;                /* the batch module loaded in it */
	CUfunction fn[RW_K_COUNT];   /* its kernels, NULL until asked for */
};

static struct {
	pthread_mutex_t lock;        /* guards v */
	struct ctx_entry v[CTX_MAX]; /* loaded contexts */
} cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

const char *rw_kernel_name(enum rw_kernel k)
{
	return (unsigned)k < RW_K_COUNT ? names[k] : "?";
}

const char *rw_kernels_ptx_named(const char *name)
{
	for (size_t i = 0; i < sizeof(rw_ptx_files) / sizeof(rw_ptx_files[0]); i++)
		if (!strcmp(rw_ptx_files[i].name, name))
			return (const char *)rw_ptx_files[i].text;
	return NULL;
}

const char *rw_kernels_ptx(void)
{
	return rw_kernels_ptx_named("batch");
}

static struct ctx_entry *find(CUcontext ctx)
{
	for (unsigned i = 0; i < CTX_MAX; i++)
		if (cache.v[i].ctx == ctx)
			return &cache.v[i];
	return NULL;
}

/* Load the module into ctx, making ctx current for the call if it is not. */
static CUresult load(CUcontext ctx, CUmodule *mod)
{
	CUcontext cur = NULL, popped;
	CUresult rc, rc2;
	bool pushed = false;

	rc = SHIM_REAL(cuCtxGetCurrent)(&cur);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (cur != ctx) {
		rc = SHIM_REAL(cuCtxPushCurrent_v2)(ctx);
		if (rc != CUDA_SUCCESS)
			return rc;
		pushed = true;
	}
	rc = SHIM_REAL(cuModuleLoadData)(mod, rw_kernels_ptx());
	if (pushed) {
		rc2 = SHIM_REAL(cuCtxPopCurrent_v2)(&popped);
		if (rc == CUDA_SUCCESS && rc2 != CUDA_SUCCESS)
			rc = rc2;
	}
	if (rc != CUDA_SUCCESS)
		cf_log_warn("cannot load cufold's kernels into context %p: error %d", (void *)ctx, (int)rc);
	return rc;
}

CUresult rw_kernels_load(CUcontext ctx, CUmodule *mod)
{
	struct ctx_entry *e;
	CUresult rc = CUDA_SUCCESS;

	if (!ctx || !mod)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&cache.lock);
	e = find(ctx);
	if (e) {
		*mod = e->mod;
		goto out_unlock;
	}
	e = find(NULL);
	if (!e) {
		/* loading per use would leak a module per launch: no batch kernels in this context */
		cf_log_warn_once("more than %d contexts: cufold's own kernels are not used in the others", CTX_MAX);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_unlock;
	}
	rc = load(ctx, mod);
	if (rc != CUDA_SUCCESS)
		goto out_unlock;
	memset(e, 0, sizeof(*e));
	e->ctx = ctx;
	e->mod = *mod;
out_unlock:
	pthread_mutex_unlock(&cache.lock);
	return rc;
}

CUresult rw_kernels_func(CUcontext ctx, enum rw_kernel k, CUfunction *fn)
{
	struct ctx_entry *e;
	CUmodule mod;
	CUresult rc;

	if ((unsigned)k >= RW_K_COUNT || !fn)
		return CUDA_ERROR_INVALID_VALUE;
	rc = rw_kernels_load(ctx, &mod);
	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&cache.lock);
	e = find(ctx);
	if (e && e->fn[k]) {
		*fn = e->fn[k];
		goto out_unlock;
	}
	rc = SHIM_REAL(cuModuleGetFunction)(fn, mod, names[k]);
	if (rc == CUDA_SUCCESS && e && e->mod == mod)
		e->fn[k] = *fn;
out_unlock:
	pthread_mutex_unlock(&cache.lock);
	return rc;
}

void rw_kernels_forget(CUcontext ctx)
{
	struct ctx_entry *e;

	pthread_mutex_lock(&cache.lock);
	if (!ctx) {
		memset(cache.v, 0, sizeof(cache.v));
	} else {
		e = find(ctx);
		if (e)
			memset(e, 0, sizeof(*e));
	}
	pthread_mutex_unlock(&cache.lock);
}

void rw_kernels_atfork_child(void)
{
	/* the forking thread is the child's only one: a lock another thread of the parent held is
	 * made anew, and the parent's modules are forgotten (the child loads its own) */
	pthread_mutex_init(&cache.lock, NULL);
	memset(cache.v, 0, sizeof(cache.v));
}
