/* kernels.c - the embedded PTX of cufold's own kernels and their per-context module. rewrite
 * layer; the driver is reached only through DRV_REAL, never through cufold's own hooks.
 *
 * The PTX is compiled from the .cu files of rewrite/kernels by nvcc at build time and embedded as bytes
 * (the Makefile generates rw_kernels_ptx.h). The cache (struct rw_kernels) is the engine's:
 * replay's part owns one (rpl_engine_create) and hands it to the rewriter in rw_config, so a
 * forked child's new engine has a new, empty cache. It is a small table under its own lock: a
 * process has few contexts, a load happens once per context, and it is reached both under the
 * engine's lock (builds) and outside it (a context's destruction, rpl_context_gone). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "common/errors.h"
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

struct rw_kernels {
	pthread_mutex_t lock;        /* guards v */
	struct ctx_entry v[CTX_MAX]; /* loaded contexts */
};

struct rw_kernels *rw_kernels_create(void)
{
	struct rw_kernels *kc = calloc(1, sizeof(*kc));

	if (kc && pthread_mutex_init(&kc->lock, NULL) != 0) {
		free(kc);
		kc = NULL;
	}
	return kc;
}

void rw_kernels_destroy(struct rw_kernels *kc)
{
	if (!kc)
		return;
	pthread_mutex_destroy(&kc->lock);
	free(kc);
}

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

static struct ctx_entry *find(struct rw_kernels *cache, CUcontext ctx)
{
	for (unsigned i = 0; i < CTX_MAX; i++)
		if (cache->v[i].ctx == ctx)
			return &cache->v[i];
	return NULL;
}

/* Load the module into ctx, making ctx current for the call if it is not. */
static CUresult load(CUcontext ctx, CUmodule *mod)
{
	CUcontext cur = NULL, popped;
	CUresult rc, rc2;
	bool pushed = false;

	rc = DRV_REAL(cuCtxGetCurrent)(&cur);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (cur != ctx) {
		rc = DRV_REAL(cuCtxPushCurrent_v2)(ctx);
		if (rc != CUDA_SUCCESS)
			return rc;
		pushed = true;
	}
	rc = DRV_REAL(cuModuleLoadData)(mod, rw_kernels_ptx());
	if (pushed) {
		rc2 = DRV_REAL(cuCtxPopCurrent_v2)(&popped);
		if (rc == CUDA_SUCCESS && rc2 != CUDA_SUCCESS)
			rc = rc2;
	}
	if (rc != CUDA_SUCCESS)
		cf_log_warn("cannot load cufold's kernels into context %p: error %d", (void *)ctx, (int)rc);
	return rc;
}

CUresult rw_kernels_load(struct rw_kernels *cache, CUcontext ctx, CUmodule *mod)
{
	struct ctx_entry *e;
	CUresult rc = CUDA_SUCCESS;

	if (!cache || !ctx || !mod)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&cache->lock);
	e = find(cache, ctx);
	if (e) {
		*mod = e->mod;
		goto out_unlock;
	}
	e = find(cache, NULL);
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
	pthread_mutex_unlock(&cache->lock);
	return rc;
}

CUresult rw_kernels_func(struct rw_kernels *cache, CUcontext ctx, enum rw_kernel k, CUfunction *fn)
{
	struct ctx_entry *e;
	CUmodule mod;
	CUresult rc;

	if ((unsigned)k >= RW_K_COUNT || !fn)
		return CUDA_ERROR_INVALID_VALUE;
	rc = rw_kernels_load(cache, ctx, &mod);
	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&cache->lock);
	e = find(cache, ctx);
	if (e && e->fn[k]) {
		*fn = e->fn[k];
		goto out_unlock;
	}
	rc = DRV_REAL(cuModuleGetFunction)(fn, mod, names[k]);
	if (rc == CUDA_SUCCESS && e && e->mod == mod)
		e->fn[k] = *fn;
out_unlock:
	pthread_mutex_unlock(&cache->lock);
	return rc;
}

void rw_kernels_forget(struct rw_kernels *cache, CUcontext ctx)
{
	struct ctx_entry *e;

	if (!cache)
		return;
	pthread_mutex_lock(&cache->lock);
	if (!ctx) {
		memset(cache->v, 0, sizeof(cache->v));
	} else {
		e = find(cache, ctx);
		if (e)
			memset(e, 0, sizeof(*e));
	}
	pthread_mutex_unlock(&cache->lock);
}

/* ------------------------------------------------------------------ multi-instance variants */

/* The variants of programs' kernels (rewrite/variant.c) need each kernel's PTX, which capture
 * keeps per loaded image: until both are here no kernel has one, and batch-kernel leaves every
 * launch as it is. */
bool rw_kernels_multi_possible(struct rw_kernels *kc, const struct cap_op *op)
{
	(void)kc;
	(void)op;
	return false;
}

int rw_kernels_multi_launch(struct rw_kernels *kc, const struct cap_op *const *members, uint32_t k, void *table,
			    uint32_t cap, struct cap_op *out)
{
	(void)kc;
	(void)members;
	(void)k;
	(void)table;
	(void)cap;
	(void)out;
	return -CF_ENOSYS;
}
