/* context.c - primary and created contexts and each thread's context stack. tests/simcuda layer.
 *
 * A context owns its legacy default stream and the list of its streams (the legacy-stream rules
 * need it). A destroyed context's object is kept with its magic cleared: other threads may still
 * name it, and they must get an error, not a crash. */
#include "sim_module_int.h"

#include <stdlib.h>
#include <string.h>

#define CTX_STACK_MAX 32

int sim__device_count(void);
struct sim_stream *sim__stream_create_legacy(struct sim_ctx *ctx);

static __thread struct sim_ctx *ctx_stack[CTX_STACK_MAX];
static __thread int ctx_depth;
static struct sim_device devices[SIM_MAX_DEVICES];
static uint64_t next_ctx_id = 1;

struct sim_ctx *sim_ctx_from(CUcontext h)
{
	struct sim_ctx *c = (struct sim_ctx *)h;

	return sim_handle_is_live(c, SIM_MAGIC_CTX) ? c : NULL;
}

struct sim_ctx *sim_ctx_current(void)
{
	struct sim_ctx *c = ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;

	return c && c->magic == SIM_MAGIC_CTX ? c : NULL;
}

CUresult sim_ctx_require(struct sim_ctx **out)
{
	if (!sim_is_initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	*out = sim_ctx_current();
	return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static struct sim_ctx *ctx_new(int dev, unsigned int flags, bool primary)
{
	struct sim_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->magic = SIM_MAGIC_CTX;
	c->device = dev;
	c->flags = flags;
	c->is_primary = primary;
	c->id = next_ctx_id++;
	c->legacy = sim__stream_create_legacy(c);
	if (!c->legacy) {
		free(c);
		return NULL;
	}
	sim_handle_add(c);
	return c;
}

static CUresult check_device(CUdevice dev)
{
	if (!sim_is_initialized())
		return CUDA_ERROR_NOT_INITIALIZED;
	return dev >= 0 && dev < sim__device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static void set_current(struct sim_ctx *c)
{
	if (ctx_depth == 0) {
		if (c)
			ctx_stack[ctx_depth++] = c;
	} else if (c) {
		ctx_stack[ctx_depth - 1] = c;
	} else {
		ctx_depth--;
	}
}

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	struct sim_ctx *c;
	CUresult rc = check_device(dev);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (ctx_depth == CTX_STACK_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c = ctx_new(dev, flags, false);
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx_stack[ctx_depth++] = c;
	*pctx = (CUcontext)c;
	return CUDA_SUCCESS;
}

CUresult sim_api_cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;

	(void)params; /* execution affinity and CIG parameters do not change a CPU device */
	rc = ctx_create(pctx, flags, dev);
	return rc;
}

CUresult sim_api_cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return ctx_create(pctx, flags, dev);
}

CUresult sim_api_cuCtxDestroy_v2(CUcontext ctx)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c;

	c = sim_ctx_from(ctx);
	if (!c || c->is_primary) {
		rc = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	sim_sched_drain_ctx(c);
	for (int i = 0; i < ctx_depth; i++)
		if (ctx_stack[i] == c) {
			memmove(&ctx_stack[i], &ctx_stack[i + 1], (size_t)(ctx_depth - i - 1) * sizeof(*ctx_stack));
			ctx_depth--;
			i--;
		}
	sim_handle_remove(c);
	c->magic = 0;
out:
	return rc;
}

CUresult sim_api_cuCtxPushCurrent_v2(CUcontext ctx)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c;

	c = sim_ctx_from(ctx);
	if (!c)
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (ctx_depth == CTX_STACK_MAX)
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	else
		ctx_stack[ctx_depth++] = c;
	return rc;
}

CUresult sim_api_cuCtxPopCurrent_v2(CUcontext *pctx)
{
	CUresult rc = CUDA_SUCCESS;

	if (ctx_depth == 0) {
		rc = CUDA_ERROR_INVALID_CONTEXT;
	} else {
		ctx_depth--;
		if (pctx)
			*pctx = (CUcontext)ctx_stack[ctx_depth];
	}
	return rc;
}

CUresult sim_api_cuCtxSetCurrent(CUcontext ctx)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c = NULL;

	if (ctx && !(c = sim_ctx_from(ctx)))
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else
		set_current(c);
	return rc;
}

CUresult sim_api_cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult rc = CUDA_SUCCESS;

	if (!pctx)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!sim_is_initialized())
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else
		*pctx = (CUcontext)sim_ctx_current();
	return rc;
}

/* The CUDA 2.0 form: the device of the current context. */
CUresult sim_api_cuCtxGetDevice(CUdevice *device)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c;

	if (!device)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = sim_ctx_require(&c)) == CUDA_SUCCESS)
		*device = c->device;
	return rc;
}

/* The CUDA 13.0 form: the device of ctx, or of the current context when ctx is NULL. */
CUresult sim_api_cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c = NULL;

	if (!device)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (ctx && !(c = sim_ctx_from(ctx)))
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (!ctx)
		rc = sim_ctx_require(&c);
	if (rc == CUDA_SUCCESS)
		*device = c->device;
	return rc;
}

static CUresult ctx_sync(struct sim_ctx *c)
{
	CUresult rc = sim__capture_check_sync(c, NULL);

	if (rc != CUDA_SUCCESS)
		return rc;
	sim_sched_drain_ctx(c);
	sim_host_wait_until(sim__sched_latest_end());
	return CUDA_SUCCESS;
}

CUresult sim_api_cuCtxSynchronize(void)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c;

	if ((rc = sim_ctx_require(&c)) == CUDA_SUCCESS)
		rc = ctx_sync(c);
	return rc;
}

CUresult sim_api_cuCtxSynchronize_v2(CUcontext ctx)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c = NULL;

	if (ctx && !(c = sim_ctx_from(ctx)))
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (!ctx)
		rc = sim_ctx_require(&c);
	if (rc == CUDA_SUCCESS)
		rc = ctx_sync(c);
	return rc;
}

CUresult sim_api_cuCtxGetFlags(unsigned int *flags)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c;

	if (!flags)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = sim_ctx_require(&c)) == CUDA_SUCCESS)
		*flags = c->flags;
	return rc;
}

CUresult sim_api_cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c = NULL;

	if (!ctxId)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (ctx && !(c = sim_ctx_from(ctx)))
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (!ctx)
		rc = sim_ctx_require(&c);
	if (rc == CUDA_SUCCESS)
		*ctxId = c->id;
	return rc;
}

CUresult sim_api_cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c = NULL;

	if (!version)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (ctx && !(c = sim_ctx_from(ctx)))
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (!ctx)
		rc = sim_ctx_require(&c);
	if (rc == CUDA_SUCCESS)
		*version = 13000;
	return rc;
}

CUresult sim_api_cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	CUresult rc = CUDA_SUCCESS;

	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = -5;
	return rc;
}

/* A context's limits as the driver reports them by default (cuda.h's documented defaults; the
 * shared memory a context's kernels may use is the whole opt-in maximum outside a CIG context:
 * cuBLASLt reads it at start and finds no algorithm at all when it is 0). */
static size_t limit_default(CUlimit limit)
{
	switch (limit) {
	case CU_LIMIT_STACK_SIZE: return 1024;
	case CU_LIMIT_PRINTF_FIFO_SIZE: return 1 << 20;
	case CU_LIMIT_MALLOC_HEAP_SIZE: return 8 << 20;
	case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH: return 2;
	case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT: return 2048;
	case CU_LIMIT_SHMEM_SIZE: return SIM_SHARED_OPTIN_MAX;
	default: return 0;
	}
}

CUresult sim_api_cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c;

	if (!pvalue || limit >= CU_LIMIT_MAX)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = sim_ctx_require(&c)) == CUDA_SUCCESS)
		*pvalue = limit_default(limit);
	return rc;
}

CUresult sim_api_cuCtxSetLimit(CUlimit limit, size_t value)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c;

	(void)value;
	if (limit >= CU_LIMIT_MAX)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = sim_ctx_require(&c);
	return rc;
}

CUresult sim_api_cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c;

	if (!pconfig)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = sim_ctx_require(&c)) == CUDA_SUCCESS)
		*pconfig = CU_FUNC_CACHE_PREFER_NONE;
	return rc;
}

CUresult sim_api_cuCtxSetCacheConfig(CUfunc_cache config)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c;

	(void)config;
	rc = sim_ctx_require(&c);
	return rc;
}

/* ------------------------------------------------------------------ primary contexts */

static CUresult primary_retain(CUdevice dev, struct sim_ctx **out)
{
	struct sim_device *d = &devices[dev];

	if (!d->primary || !sim_handle_is_live(d->primary, SIM_MAGIC_CTX)) {
		d->primary = ctx_new(dev, d->primary_flags, true);
		if (!d->primary)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	d->primary_refs++;
	*out = d->primary;
	return CUDA_SUCCESS;
}

CUresult sim_api_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *c;

	if (!pctx)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = check_device(dev)) == CUDA_SUCCESS && (rc = primary_retain(dev, &c)) == CUDA_SUCCESS)
		*pctx = (CUcontext)c;
	return rc;
}

/* The primary context stays usable after its last release: the real driver would destroy it,
 * but a program that releases and retains again sees a fresh context either way. */
static CUresult primary_release(CUdevice dev)
{
	CUresult rc = check_device(dev);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (devices[dev].primary_refs == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (--devices[dev].primary_refs == 0 && devices[dev].primary)
		sim_sched_drain_ctx(devices[dev].primary);
	return CUDA_SUCCESS;
}

/* The CUDA 7.0 ABI, exported as plain cuDevicePrimaryCtxRelease (cuda.h maps the name to _v2). */
CUresult sim_api_cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return primary_release(dev);
}

CUresult sim_api_cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	return primary_release(dev);
}

/* The CUDA 7.0 ABI, exported as plain cuDevicePrimaryCtxSetFlags. */
CUresult sim_api_cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	CUresult rc = CUDA_SUCCESS;

	if ((rc = check_device(dev)) == CUDA_SUCCESS)
		devices[dev].primary_flags = flags;
	return rc;
}

CUresult sim_api_cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	CUresult rc = CUDA_SUCCESS;

	if ((rc = check_device(dev)) == CUDA_SUCCESS) {
		devices[dev].primary_flags = flags;
		if (devices[dev].primary)
			devices[dev].primary->flags = flags;
	}
	return rc;
}

CUresult sim_api_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	CUresult rc = CUDA_SUCCESS;

	if (!flags || !active)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = check_device(dev)) == CUDA_SUCCESS) {
		*flags = devices[dev].primary_flags;
		*active = devices[dev].primary_refs > 0;
	}
	return rc;
}

static CUresult primary_reset(CUdevice dev)
{
	CUresult rc = check_device(dev);

	if (rc == CUDA_SUCCESS && devices[dev].primary) {
		sim_sched_drain_ctx(devices[dev].primary);
		devices[dev].primary_refs = 0;
	}
	return rc;
}

/* The CUDA 7.0 ABI, exported as plain cuDevicePrimaryCtxReset: cudaDeviceReset looks it up at
 * version 7000. */
CUresult sim_api_cuDevicePrimaryCtxReset(CUdevice dev)
{
	return primary_reset(dev);
}

CUresult sim_api_cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	return primary_reset(dev);
}
