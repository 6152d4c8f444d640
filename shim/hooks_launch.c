/* hooks_launch.c - hand-written hooks of the stream-work entry points that are not copies or
 * memsets: kernel launches (plain, Ex, cooperative), host functions, event records and stream
 * waits, each in its legacy and _ptsz forms. shim layer.
 *
 * Each records an op (shim/engine.c) and then calls the driver with the program's own
 * arguments; the driver's answer is returned as is. */
#include <string.h>

#include "shim/engine.h"

static void fill_kernel(struct cap_call *c, CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared, CUstream s,
			void **params, void **extra)
{
	c->kind = CAP_OP_KERNEL;
	c->stream = s;
	c->u.kernel.f = f;
	c->u.kernel.grid[0] = gx;
	c->u.kernel.grid[1] = gy;
	c->u.kernel.grid[2] = gz;
	c->u.kernel.block[0] = bx;
	c->u.kernel.block[1] = by;
	c->u.kernel.block[2] = bz;
	c->u.kernel.shared_bytes = shared;
	c->u.kernel.params = params;
	c->u.kernel.extra = extra;
	c->u.kernel.attrs = NULL;
	c->u.kernel.nattrs = 0;
}

static void fill_kernel_ex(struct cap_call *c, const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
{
	fill_kernel(c, f, cfg->gridDimX, cfg->gridDimY, cfg->gridDimZ, cfg->blockDimX, cfg->blockDimY,
		    cfg->blockDimZ, cfg->sharedMemBytes, cfg->hStream, params, extra);
	c->u.kernel.attrs = cfg->attrs;
	c->u.kernel.nattrs = cfg->numAttrs;
}

static void fill_event(struct cap_call *c, enum cap_op_kind kind, CUevent e, CUstream s, unsigned int flags)
{
	c->kind = kind;
	c->stream = s;
	c->u.event.event = e;
	c->u.event.flags = flags;
	c->u.event.slot = 0;
}

static void fill_host_fn(struct cap_call *c, CUstream s, CUhostFn fn, void *data)
{
	c->kind = CAP_OP_HOST_FN;
	c->stream = s;
	c->u.host_fn.fn = fn;
	c->u.host_fn.data = data;
}

#define LAUNCH_DECLS \
	(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, \
	 unsigned int bz, unsigned int shared, CUstream s, void **params, void **extra)
#define LAUNCH_ARGS (f, gx, gy, gz, bx, by, bz, shared, s, params, extra)
#define COOP_DECLS \
	(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, \
	 unsigned int bz, unsigned int shared, CUstream s, void **params)
#define COOP_ARGS (f, gx, gy, gz, bx, by, bz, shared, s, params)

/* the same arguments, read back from what fill_kernel stored (SHIM_OP_HOOK_C) */
#define COOP_CARGS_ \
	c_.u.kernel.f, c_.u.kernel.grid[0], c_.u.kernel.grid[1], c_.u.kernel.grid[2], c_.u.kernel.block[0], \
	c_.u.kernel.block[1], c_.u.kernel.block[2], c_.u.kernel.shared_bytes, c_.stream, c_.u.kernel.params
#define LAUNCH_CARGS (COOP_CARGS_, c_.u.kernel.extra)
#define COOP_CARGS (COOP_CARGS_)

SHIM_OP_HOOK_C(cuLaunchKernel, LAUNCH_DECLS, LAUNCH_ARGS,
	       fill_kernel(&c_, f, gx, gy, gz, bx, by, bz, shared, s, params, extra), LAUNCH_CARGS)
SHIM_OP_HOOK_C(cuLaunchKernel_ptsz, LAUNCH_DECLS, LAUNCH_ARGS,
	       fill_kernel(&c_, f, gx, gy, gz, bx, by, bz, shared, s, params, extra), LAUNCH_CARGS)
SHIM_OP_HOOK_C(cuLaunchCooperativeKernel, COOP_DECLS, COOP_ARGS,
	       fill_kernel(&c_, f, gx, gy, gz, bx, by, bz, shared, s, params, NULL), COOP_CARGS)
SHIM_OP_HOOK_C(cuLaunchCooperativeKernel_ptsz, COOP_DECLS, COOP_ARGS,
	       fill_kernel(&c_, f, gx, gy, gz, bx, by, bz, shared, s, params, NULL), COOP_CARGS)

/* cuLaunchKernelEx: a NULL config is the driver's to refuse; nothing to record then. */
static CUresult launch_ex(enum drv_api_id id, drv_pfn_cuLaunchKernelEx real, const CUlaunchConfig *cfg,
			  CUfunction f, void **params, void **extra)
{
	struct cap_call c;
	struct shim_tok t;
	CUresult rc;

	if (shim_is_inside())
		return real(cfg, f, params, extra);
	if (!cfg) {
		shim_engine_neutral(id);
		return real(cfg, f, params, extra);
	}
	c.api = (uint16_t)id;
	fill_kernel_ex(&c, cfg, f, params, extra);
	if (!shim_engine_op_begin(&c, &t, &rc))
		return rc;
	rc = real(cfg, f, params, extra);
	shim_engine_op_end(&t, rc);
	return rc;
}

SHIM_HOOK(cuLaunchKernelEx)(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
	return launch_ex(DRV_ID_cuLaunchKernelEx, drv_real.p_cuLaunchKernelEx, config, f, kernelParams, extra);
}

SHIM_HOOK(cuLaunchKernelEx_ptsz)(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
	return launch_ex(DRV_ID_cuLaunchKernelEx_ptsz, drv_real.p_cuLaunchKernelEx_ptsz, config, f, kernelParams,
			 extra);
}

SHIM_OP_HOOK(cuLaunchHostFunc, (CUstream s, CUhostFn fn, void *data), (s, fn, data), fill_host_fn(&c_, s, fn, data))
SHIM_OP_HOOK(cuLaunchHostFunc_ptsz, (CUstream s, CUhostFn fn, void *data), (s, fn, data),
	     fill_host_fn(&c_, s, fn, data))

SHIM_OP_HOOK(cuEventRecord, (CUevent e, CUstream s), (e, s), fill_event(&c_, CAP_OP_EVENT_RECORD, e, s, 0))
SHIM_OP_HOOK(cuEventRecord_ptsz, (CUevent e, CUstream s), (e, s), fill_event(&c_, CAP_OP_EVENT_RECORD, e, s, 0))
SHIM_OP_HOOK(cuEventRecordWithFlags, (CUevent e, CUstream s, unsigned int flags), (e, s, flags),
	     fill_event(&c_, CAP_OP_EVENT_RECORD, e, s, flags))
SHIM_OP_HOOK(cuEventRecordWithFlags_ptsz, (CUevent e, CUstream s, unsigned int flags), (e, s, flags),
	     fill_event(&c_, CAP_OP_EVENT_RECORD, e, s, flags))
SHIM_OP_HOOK(cuStreamWaitEvent, (CUstream s, CUevent e, unsigned int flags), (s, e, flags),
	     fill_event(&c_, CAP_OP_EVENT_WAIT, e, s, flags))
SHIM_OP_HOOK(cuStreamWaitEvent_ptsz, (CUstream s, CUevent e, unsigned int flags), (s, e, flags),
	     fill_event(&c_, CAP_OP_EVENT_WAIT, e, s, flags))
