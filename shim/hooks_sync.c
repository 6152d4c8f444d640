/* hooks_sync.c - hand-written hooks of the calls that may end a window without being stream
 * work: synchronizes and queries, the program's own stream captures, context switches, and the
 * creation and destruction of streams and events. shim layer.
 *
 * A boundary closes the open window before the call reaches the driver (replay will flush its
 * deferred work there). A synchronize is one only when what it names could include work of the
 * open window, a query never (shim_engine_observe says why). cuCtxSetCurrent is a boundary only
 * when it changes the context; stream creation is not a boundary (capture learns the new
 * stream's flags from it). */
#include "shim/engine.h"

/* A synchronize or query of what `target` names (a struct cap_target initializer). */
#define OBSERVE_HOOK(symbol, kind, decls, args, target) \
	SHIM_HOOK(symbol) decls \
	{ \
		struct cap_target t_ = target; \
		struct shim_obs o_; \
		if (shim_is_inside()) \
			return drv_real.p_##symbol args; \
		shim_engine_observe(CAP_BOUNDARY_##kind, DRV_ID_##symbol, &t_, &o_); \
		if (o_.answered) \
			return o_.answer; \
		return shim_engine_observed(&o_, drv_real.p_##symbol args); \
	}

#define STREAM(s, pt_) { .kind = CAP_TARGET_STREAM, .pt = (pt_), .stream = (s) }
#define EVENT(e) { .kind = CAP_TARGET_EVENT, .event = (e) }
#define CONTEXT { .kind = CAP_TARGET_CONTEXT }

OBSERVE_HOOK(cuStreamSynchronize, SYNC, (CUstream s), (s), STREAM(s, DRV_PT_NONE))
OBSERVE_HOOK(cuStreamSynchronize_ptsz, SYNC, (CUstream s), (s), STREAM(s, DRV_PT_PTSZ))
OBSERVE_HOOK(cuEventSynchronize, SYNC, (CUevent e), (e), EVENT(e))
OBSERVE_HOOK(cuCtxSynchronize, SYNC, (void), (), CONTEXT)
OBSERVE_HOOK(cuCtxSynchronize_v2, SYNC, (CUcontext ctx), (ctx), CONTEXT)
OBSERVE_HOOK(cuStreamQuery, QUERY, (CUstream s), (s), STREAM(s, DRV_PT_NONE))
OBSERVE_HOOK(cuStreamQuery_ptsz, QUERY, (CUstream s), (s), STREAM(s, DRV_PT_PTSZ))
OBSERVE_HOOK(cuEventQuery, QUERY, (CUevent e), (e), EVENT(e))

/* ------------------------------------------------------------------ the program's captures */

#define CAPTURE_HOOK(symbol, begin, decls, args) \
	SHIM_HOOK(symbol) decls \
	{ \
		CUresult rc; \
		if (shim_is_inside()) \
			return drv_real.p_##symbol args; \
		shim_engine_capture_begin(DRV_ID_##symbol); \
		rc = drv_real.p_##symbol args; \
		shim_engine_capture_done(begin, rc); \
		return rc; \
	}

#define TOGRAPH_DECLS \
	(CUstream s, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode)
#define TOGRAPH_ARGS (s, g, deps, data, n, mode)

/* cuda.h defines cuStreamBeginCapture as a macro (for cuStreamBeginCapture_v2): passed through
 * CAPTURE_HOOK it would expand, so the old one-argument form is written out. */
SHIM_HOOK(cuStreamBeginCapture)(CUstream s)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuStreamBeginCapture(s);
	shim_engine_capture_begin(DRV_ID_cuStreamBeginCapture);
	rc = drv_real.p_cuStreamBeginCapture(s);
	shim_engine_capture_done(true, rc);
	return rc;
}

CAPTURE_HOOK(cuStreamBeginCapture_ptsz, true, (CUstream s), (s))
CAPTURE_HOOK(cuStreamBeginCapture_v2, true, (CUstream s, CUstreamCaptureMode mode), (s, mode))
CAPTURE_HOOK(cuStreamBeginCapture_v2_ptsz, true, (CUstream s, CUstreamCaptureMode mode), (s, mode))
CAPTURE_HOOK(cuStreamBeginCaptureToGraph, true, TOGRAPH_DECLS, TOGRAPH_ARGS)
CAPTURE_HOOK(cuStreamBeginCaptureToGraph_ptsz, true, TOGRAPH_DECLS, TOGRAPH_ARGS)
CAPTURE_HOOK(cuStreamEndCapture, false, (CUstream s, CUgraph *g), (s, g))
CAPTURE_HOOK(cuStreamEndCapture_ptsz, false, (CUstream s, CUgraph *g), (s, g))

/* ------------------------------------------------------------------ contexts */

SHIM_HOOK(cuCtxSetCurrent)(CUcontext ctx)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuCtxSetCurrent(ctx);
	shim_engine_ctx_set(DRV_ID_cuCtxSetCurrent, ctx);
	rc = drv_real.p_cuCtxSetCurrent(ctx);
	shim_engine_ctx_done(rc, true, ctx);
	return rc;
}

SHIM_HOOK(cuCtxPushCurrent_v2)(CUcontext ctx)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuCtxPushCurrent_v2(ctx);
	shim_engine_ctx_switch(DRV_ID_cuCtxPushCurrent_v2);
	rc = drv_real.p_cuCtxPushCurrent_v2(ctx);
	shim_engine_ctx_done(rc, true, ctx);
	return rc;
}

SHIM_HOOK(cuCtxPopCurrent_v2)(CUcontext *pctx)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuCtxPopCurrent_v2(pctx);
	shim_engine_ctx_switch(DRV_ID_cuCtxPopCurrent_v2);
	rc = drv_real.p_cuCtxPopCurrent_v2(pctx);
	shim_engine_ctx_done(rc, false, NULL);
	return rc;
}

SHIM_HOOK(cuCtxDestroy_v2)(CUcontext ctx)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuCtxDestroy_v2(ctx);
	shim_engine_ctx_switch(DRV_ID_cuCtxDestroy_v2);
	rc = drv_real.p_cuCtxDestroy_v2(ctx);
	shim_engine_ctx_done(rc, false, NULL);
	if (rc == CUDA_SUCCESS)
		shim_engine_ctx_destroyed(ctx);
	return rc;
}

/* ------------------------------------------------------------------ streams and events */

SHIM_HOOK(cuStreamCreate)(CUstream *ph, unsigned int flags)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuStreamCreate(ph, flags);
	shim_engine_neutral(DRV_ID_cuStreamCreate);
	rc = drv_real.p_cuStreamCreate(ph, flags);
	if (rc == CUDA_SUCCESS && ph)
		shim_engine_stream_created(*ph, flags);
	return rc;
}

SHIM_HOOK(cuStreamCreateWithPriority)(CUstream *ph, unsigned int flags, int priority)
{
	CUresult rc;

	if (shim_is_inside())
		return drv_real.p_cuStreamCreateWithPriority(ph, flags, priority);
	shim_engine_neutral(DRV_ID_cuStreamCreateWithPriority);
	rc = drv_real.p_cuStreamCreateWithPriority(ph, flags, priority);
	if (rc == CUDA_SUCCESS && ph)
		shim_engine_stream_created(*ph, flags);
	return rc;
}

SHIM_HOOK(cuStreamDestroy_v2)(CUstream s)
{
	if (!shim_is_inside())
		shim_engine_stream_destroy(DRV_ID_cuStreamDestroy_v2, s);
	return drv_real.p_cuStreamDestroy_v2(s);
}

SHIM_HOOK(cuEventDestroy_v2)(CUevent e)
{
	if (!shim_is_inside() && shim_engine_event_destroy(DRV_ID_cuEventDestroy_v2, e))
		return CUDA_SUCCESS; /* held back behind deferred ops naming it; made after them */
	return drv_real.p_cuEventDestroy_v2(e);
}
