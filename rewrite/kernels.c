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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "common/errors.h"
#include "common/log.h"
#include "driver/ptx.h"
#include "driver/real.h"
#include "rewrite/kernels.h"
#include "rewrite/variant.h"

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

/* A program's kernel's multi-instance variant in one context (rewrite/variant.h), or why there
 * is none. Keyed by the image it came from (cap_image ids are never reused), its name and the
 * context: a handle or a function record can be reused after an unload, these cannot. */
struct variant_entry {
	CUcontext ctx;
	uint64_t image;              /* cap_image id of the kernel's code */
	char *entry;                 /* the kernel's name (owned) */
	bool ok;                     /* loaded; else refused (said once at info level) */
	uint32_t param_bytes;        /* the kernel's parameter block, as its PTX lays it out */
	CUfunction fn;               /* the variant in ctx */
	struct cap_func info;        /* the variant's record: its name, one table parameter */
	uint32_t off0, size0;        /* info's layout */
	char *name;                  /* entry RW_VARIANT_SUFFIX (owned) */
};

#define VARIANT_MAX 512          /* variants (and refusals) kept; beyond, no more are made */

struct rw_kernels {
	pthread_mutex_t lock;        /* guards v and variants */
	struct ctx_entry v[CTX_MAX]; /* loaded contexts */
	struct variant_entry **variants; /* nvariants made so far, each allocated apart: derived ops
					  * point at an entry's info, which must not move */
	uint32_t nvariants;
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
	for (uint32_t i = 0; i < kc->nvariants; i++) {
		free(kc->variants[i]->entry);
		free(kc->variants[i]->name);
		free(kc->variants[i]);
	}
	free(kc->variants);
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

/* Load PTX text as a module into ctx, making ctx current for the call if it is not. */
static CUresult load_text(CUcontext ctx, const char *text, CUmodule *mod)
{
	bool pushed;
	CUresult rc = drv_ctx_enter(ctx, &pushed), rc2;

	if (rc != CUDA_SUCCESS)
		return rc;
	rc = DRV_REAL(cuModuleLoadData)(mod, text);
	rc2 = drv_ctx_leave(pushed);
	return rc == CUDA_SUCCESS ? rc2 : rc;
}

/* The batch module into ctx. */
static CUresult load(CUcontext ctx, CUmodule *mod)
{
	CUresult rc = load_text(ctx, rw_kernels_ptx(), mod);

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
	/* the context's variants died with it: their entries no longer match (a new context
	 * that reuses the handle makes its own) */
	for (uint32_t i = 0; i < cache->nvariants; i++)
		if (!ctx || cache->variants[i]->ctx == ctx)
			cache->variants[i]->ctx = NULL;
	pthread_mutex_unlock(&cache->lock);
}

void rw_op_standing_for(struct cap_op *out, const struct cap_op *first, uint8_t kind, uint16_t api)
{
	memset(out, 0, sizeof(*out));
	out->kind = kind;
	out->api = api;
	out->stream_kind = first->stream_kind;
	out->stream_slot = first->stream_slot;
	out->tid = first->tid;
	out->stream = first->stream;
	out->ctx = first->ctx;
	out->seq = first->seq;
	out->callsite = first->callsite;
}

void rw_kernels_launch_op(const struct cap_op *first, CUfunction fn, const struct cap_func *info, struct cap_op *out)
{
	rw_op_standing_for(out, first, CAP_OP_KERNEL, DRV_ID_cuLaunchKernel);
	out->u.kernel.handle = fn;
	out->u.kernel.func = fn;
	out->u.kernel.info = info;
}

/* ------------------------------------------------------------------ multi-instance variants */

static struct variant_entry *variant_find(struct rw_kernels *kc, CUcontext ctx, uint64_t image, const char *entry)
{
	for (uint32_t i = 0; i < kc->nvariants; i++) {
		struct variant_entry *v = kc->variants[i];

		if (v->ctx == ctx && v->image == image && !strcmp(v->entry, entry))
			return v;
	}
	return NULL;
}

/* Make the variant of f in ctx from its PTX (v is filled: ok, or refused). */
static void variant_make(CUcontext ctx, const struct cap_func *f, struct variant_entry *v)
{
	char why[256] = "", err[256];
	const struct ptx_func *pf;
	const struct ptx_module *m = cap_func_module(f, err, sizeof(err)); /* parsed once per image */
	size_t tlen;
	char *text = NULL;
	CUmodule mod;
	CUresult rc;

	if (!m) {
		snprintf(why, sizeof(why), "%s", err);
		goto out;
	}
	pf = ptx_find_func(m, f->name);
	v->param_bytes = pf ? (uint32_t)pf->param_bytes : 0;
	if (rw_variant_ptx(m, f->name, &text, &tlen, why, sizeof(why)) != 0) {
		if (!why[0])
			snprintf(why, sizeof(why), "no variant could be written");
		goto out;
	}
	v->name = malloc(strlen(f->name) + sizeof(RW_VARIANT_SUFFIX));
	if (!v->name) {
		snprintf(why, sizeof(why), "out of memory");
		goto out;
	}
	strcpy(v->name, f->name);
	strcat(v->name, RW_VARIANT_SUFFIX);
	rc = load_text(ctx, text, &mod);
	if (rc == CUDA_SUCCESS)
		rc = DRV_REAL(cuModuleGetFunction)(&v->fn, mod, v->name);
	if (rc != CUDA_SUCCESS) {
		snprintf(why, sizeof(why), "the driver did not load it (error %d)", (int)rc);
		goto out;
	}
	v->off0 = 0;
	v->size0 = RW_MULTI_TABLE_BYTES;
	v->info = (struct cap_func){ .func = v->fn, .nparams = 1, .param_bytes = RW_MULTI_TABLE_BYTES,
				     .layout_known = true, .name = v->name, .offset = &v->off0, .size = &v->size0 };
	v->ok = true;
out:
	if (!v->ok)
		cf_log_info("kernel %s: no multi-instance variant: %s", f->name, why);
	free(text);
}

/* The variant entry of op's kernel in op's context, made on first use; NULL when none can be
 * kept (no image known, too many). */
static struct variant_entry *variant_get(struct rw_kernels *kc, const struct cap_op *op)
{
	const struct cap_func *f = op->kind == CAP_OP_KERNEL ? op->u.kernel.info : NULL;
	struct variant_entry *v = NULL, **grown;

	if (!kc || !f || !f->image || !op->ctx || cap_func_code(f) != CAP_CODE_PTX)
		return NULL;
	pthread_mutex_lock(&kc->lock);
	v = variant_find(kc, op->ctx, f->image->id, f->name);
	if (v || kc->nvariants >= VARIANT_MAX)
		goto out;
	grown = realloc(kc->variants, (kc->nvariants + 1) * sizeof(*grown));
	if (!grown)
		goto out;
	kc->variants = grown;
	v = calloc(1, sizeof(*v));
	if (v)
		v->entry = strdup(f->name);
	if (!v || !v->entry) {
		free(v);
		v = NULL;
		goto out;
	}
	v->ctx = op->ctx;
	v->image = f->image->id;
	kc->variants[kc->nvariants++] = v;
	variant_make(op->ctx, f, v); /* under the lock: a JIT compile, once per kernel and context */
out:
	pthread_mutex_unlock(&kc->lock);
	return v;
}

bool rw_kernels_multi_possible(struct rw_kernels *kc, const struct cap_op *op)
{
	struct variant_entry *v = variant_get(kc, op);

	return v && v->ok && op->u.kernel.param_size == v->param_bytes && rw_variant_capacity(v->param_bytes) >= 2;
}

int rw_kernels_multi_launch(struct rw_kernels *kc, const struct cap_op *const *members, uint32_t k, void *table,
			    uint32_t cap, struct cap_op *out)
{
	const struct cap_op *first = members[0];
	const void *params[RW_MULTI_MAX];
	uint32_t grid[RW_MULTI_MAX], total = 0;
	struct variant_entry *v;
	int rc;

	if (k < 1 || k > RW_MULTI_MAX)
		return -CF_EINVAL;
	v = variant_get(kc, first);
	if (!v || !v->ok)
		return -CF_ENOSYS;
	for (uint32_t j = 0; j < k; j++) {
		if (members[j]->u.kernel.param_size != v->param_bytes)
			return -CF_EINVAL;
		grid[j] = members[j]->u.kernel.grid[0];
		params[j] = members[j]->u.kernel.params;
	}
	rc = rw_variant_table(k, grid, params, v->param_bytes, table, cap, &total);
	if (rc != 0)
		return rc;
	rw_kernels_launch_op(first, v->fn, &v->info, out);
	out->u.kernel.grid[0] = total;
	out->u.kernel.grid[1] = first->u.kernel.grid[1];
	out->u.kernel.grid[2] = first->u.kernel.grid[2];
	memcpy(out->u.kernel.block, first->u.kernel.block, sizeof(out->u.kernel.block));
	out->u.kernel.shared_bytes = first->u.kernel.shared_bytes;
	out->u.kernel.param_size = RW_MULTI_TABLE_BYTES;
	out->u.kernel.params = table;
	return 0;
}
