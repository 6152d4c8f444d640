/* context.c - primary and created contexts and each thread's context stack. tests/simcuda layer.
 *
 * A context owns its legacy default stream and the list of its streams (the legacy-stream rules
 * need it). A destroyed context's object is kept with its magic cleared: other threads may still
 * name it, and they must get an error, not a crash. */
#include "sim_int.h"

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

CUresult cuCtxCreate(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);

	if (rc != CUDA_SUCCESS)
		return rc;
	(void)params; /* execution affinity and CIG parameters do not change a CPU device */
	rc = ctx_create(pctx, flags, dev);
	return sim_leave(rc);
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);

	if (rc != CUDA_SUCCESS)
		return rc;
	rc = ctx_create(pctx, flags, dev);
	return sim_leave(rc);
}

CUresult cuCtxDestroy(CUcontext ctx)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c;

	if (rc != CUDA_SUCCESS)
		return rc;
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
	return sim_leave(rc);
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c;

	if (rc != CUDA_SUCCESS)
		return rc;
	c = sim_ctx_from(ctx);
	if (!c)
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (ctx_depth == CTX_STACK_MAX)
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	else
		ctx_stack[ctx_depth++] = c;
	return sim_leave(rc);
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (ctx_depth == 0) {
		rc = CUDA_ERROR_INVALID_CONTEXT;
	} else {
		ctx_depth--;
		if (pctx)
			*pctx = (CUcontext)ctx_stack[ctx_depth];
	}
	return sim_leave(rc);
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c = NULL;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (ctx && !(c = sim_ctx_from(ctx)))
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else
		set_current(c);
	return sim_leave(rc);
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pctx)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!sim_is_initialized())
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else
		*pctx = (CUcontext)sim_ctx_current();
	return sim_leave(rc);
}

/* The CUDA 2.0 form: the device of the current context. */
CUresult cuCtxGetDevice(CUdevice *device);
CUresult cuCtxGetDevice(CUdevice *device)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!device)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = sim_ctx_require(&c)) == CUDA_SUCCESS)
		*device = c->device;
	return sim_leave(rc);
}

/* The CUDA 13.0 form: the device of ctx, or of the current context when ctx is NULL. */
CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c = NULL;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!device)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (ctx && !(c = sim_ctx_from(ctx)))
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (!ctx)
		rc = sim_ctx_require(&c);
	if (rc == CUDA_SUCCESS)
		*device = c->device;
	return sim_leave(rc);
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

CUresult cuCtxSynchronize(void);
CUresult cuCtxSynchronize(void)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c;

	if (rc != CUDA_SUCCESS)
		return rc;
	if ((rc = sim_ctx_require(&c)) == CUDA_SUCCESS)
		rc = ctx_sync(c);
	return sim_leave(rc);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c = NULL;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (ctx && !(c = sim_ctx_from(ctx)))
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (!ctx)
		rc = sim_ctx_require(&c);
	if (rc == CUDA_SUCCESS)
		rc = ctx_sync(c);
	return sim_leave(rc);
}

CUresult cuCtxGetFlags(unsigned int *flags)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!flags)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = sim_ctx_require(&c)) == CUDA_SUCCESS)
		*flags = c->flags;
	return sim_leave(rc);
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c = NULL;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!ctxId)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (ctx && !(c = sim_ctx_from(ctx)))
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (!ctx)
		rc = sim_ctx_require(&c);
	if (rc == CUDA_SUCCESS)
		*ctxId = c->id;
	return sim_leave(rc);
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c = NULL;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!version)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (ctx && !(c = sim_ctx_from(ctx)))
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (!ctx)
		rc = sim_ctx_require(&c);
	if (rc == CUDA_SUCCESS)
		*version = 13000;
	return sim_leave(rc);
}

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = -5;
	return sim_leave(rc);
}

CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pvalue || limit >= CU_LIMIT_MAX)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = sim_ctx_require(&c)) == CUDA_SUCCESS)
		*pvalue = limit == CU_LIMIT_STACK_SIZE ? 1024 : limit == CU_LIMIT_MALLOC_HEAP_SIZE ? 8 << 20 : 0;
	return sim_leave(rc);
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c;

	if (rc != CUDA_SUCCESS)
		return rc;
	(void)value;
	if (limit >= CU_LIMIT_MAX)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = sim_ctx_require(&c);
	return sim_leave(rc);
}

CUresult cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pconfig)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = sim_ctx_require(&c)) == CUDA_SUCCESS)
		*pconfig = CU_FUNC_CACHE_PREFER_NONE;
	return sim_leave(rc);
}

CUresult cuCtxSetCacheConfig(CUfunc_cache config)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c;

	if (rc != CUDA_SUCCESS)
		return rc;
	(void)config;
	rc = sim_ctx_require(&c);
	return sim_leave(rc);
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

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);
	struct sim_ctx *c;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pctx)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = check_device(dev)) == CUDA_SUCCESS && (rc = primary_retain(dev, &c)) == CUDA_SUCCESS)
		*pctx = (CUcontext)c;
	return sim_leave(rc);
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
CUresult sim_primary_release_v1(CUdevice dev) __asm__("cuDevicePrimaryCtxRelease");
CUresult sim_primary_release_v1(CUdevice dev)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, "cuDevicePrimaryCtxRelease");

	if (rc != CUDA_SUCCESS)
		return rc;
	rc = primary_release(dev);
	return sim_leave(rc);
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);

	if (rc != CUDA_SUCCESS)
		return rc;
	rc = primary_release(dev);
	return sim_leave(rc);
}

/* The CUDA 7.0 ABI, exported as plain cuDevicePrimaryCtxSetFlags. */
CUresult sim_primary_set_flags_v1(CUdevice dev, unsigned int flags) __asm__("cuDevicePrimaryCtxSetFlags");
CUresult sim_primary_set_flags_v1(CUdevice dev, unsigned int flags)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, "cuDevicePrimaryCtxSetFlags");

	if (rc != CUDA_SUCCESS)
		return rc;
	if ((rc = check_device(dev)) == CUDA_SUCCESS)
		devices[dev].primary_flags = flags;
	return sim_leave(rc);
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);

	if (rc != CUDA_SUCCESS)
		return rc;
	if ((rc = check_device(dev)) == CUDA_SUCCESS) {
		devices[dev].primary_flags = flags;
		if (devices[dev].primary)
			devices[dev].primary->flags = flags;
	}
	return sim_leave(rc);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!flags || !active)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = check_device(dev)) == CUDA_SUCCESS) {
		*flags = devices[dev].primary_flags;
		*active = devices[dev].primary_refs > 0;
	}
	return sim_leave(rc);
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
CUresult sim_primary_reset_v1(CUdevice dev) __asm__("cuDevicePrimaryCtxReset");
CUresult sim_primary_reset_v1(CUdevice dev)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, "cuDevicePrimaryCtxReset");

	if (rc != CUDA_SUCCESS)
		return rc;
	rc = primary_reset(dev);
	return sim_leave(rc);
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, __func__);

	if (rc != CUDA_SUCCESS)
		return rc;
	rc = primary_reset(dev);
	return sim_leave(rc);
}
