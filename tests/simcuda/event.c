/* event.c - events: record, wait (in stream.c), synchronize, query, elapsed time. tests/simcuda
 * layer. An event is a reference to the work item of its latest record; the item's modeled end
 * is the event's timestamp. */
#include "sim_int.h"

#include <stdlib.h>

struct sim_event *sim_event_from(CUevent h)
{
	struct sim_event *e = (struct sim_event *)h;

	return sim_handle_is_live(e, SIM_MAGIC_EVENT) ? e : NULL;
}

static void record_cost(const void *payload, bool in_graph, struct sim_cost_parts *out)
{
	(void)payload;
	out->floor_ns = in_graph ? sim_cost.dev_graph_node_gap_ns : 0;
}

static void record_run(struct sim_work *w, void *payload)
{
	(void)w;
	(void)payload;
}

static void *record_clone(const void *payload)
{
	return (void *)payload; /* the event is not owned */
}

const struct sim_work_ops sim_event_record_ops = {
	.kind = "event_record",
	.run = record_run,
	.clone = record_clone,
	.cost = record_cost,
};

CUresult sim_api_cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_ctx *ctx;
	struct sim_event *e;
	const unsigned int known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;

	if (!phEvent || (Flags & ~known) ||
	    ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if ((rc = sim_ctx_require(&ctx)) != CUDA_SUCCESS)
		goto out;
	e = calloc(1, sizeof(*e));
	if (!e) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	e->magic = SIM_MAGIC_EVENT;
	e->ctx = ctx;
	e->flags = Flags;
	sim_handle_add(e);
	*phEvent = (CUevent)e;
out:
	return rc;
}

/* Records made inside a capture are the capture's business; a destroyed event that a pending
 * record item still names is harmless, since the item never dereferences it. */
CUresult sim_api_cuEventDestroy_v2(CUevent hEvent)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_event *e;

	e = sim_event_from(hEvent);
	if (!e) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	sim_work_unref(e->rec);
	sim_handle_remove(e);
	e->magic = 0;
	free(e->capture_nodes);
	free(e);
out:
	return rc;
}

static CUresult record(CUevent hev, CUstream h, enum sim_pt pt)
{
	struct sim_event *e = sim_event_from(hev);
	struct sim_stream *s;
	struct sim_work *w;
	CUresult rc;

	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	rc = sim_stream_resolve(h, pt, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (s->ctx != e->ctx)
		return CUDA_ERROR_INVALID_HANDLE;
	if (s->capture)
		return sim__capture_event_record(s, e);
	free(e->capture_nodes);
	e->capture_nodes = NULL;
	w = sim_work_new(&sim_event_record_ops, e, s->ctx);
	if (!w)
		return CUDA_ERROR_OUT_OF_MEMORY;
	sim_work_ref(w);
	sim_work_unref(e->rec);
	e->rec = w;
	return sim_stream_submit(s, w);
}

CUresult sim_api_cuEventRecord(CUevent hEvent, CUstream hStream)
{
	return record(hEvent, hStream, SIM_PT_LEGACY);
}

CUresult sim_api_cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
	return record(hEvent, hStream, SIM_PT_PER_THREAD);
}

CUresult sim_api_cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
	return flags & ~(unsigned int)CU_EVENT_RECORD_EXTERNAL ? CUDA_ERROR_INVALID_VALUE
								 : record(hEvent, hStream, SIM_PT_LEGACY);
}

CUresult sim_api_cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream, unsigned int flags)
{
	return flags & ~(unsigned int)CU_EVENT_RECORD_EXTERNAL ? CUDA_ERROR_INVALID_VALUE
								 : record(hEvent, hStream, SIM_PT_PER_THREAD);
}

static CUresult event_wait_done(struct sim_event *e)
{
	CUresult rc = sim__capture_check_sync(e->ctx, NULL);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (e->rec) {
		sim_sched_drain(e->rec);
		sim_host_wait_until(e->rec->end_ns);
	}
	return CUDA_SUCCESS;
}

CUresult sim_api_cuEventSynchronize(CUevent hEvent)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_event *e;

	e = sim_event_from(hEvent);
	rc = e ? event_wait_done(e) : CUDA_ERROR_INVALID_HANDLE;
	return rc;
}

/* As for streams, a query runs the work it asks about (so a program that polls always makes
 * progress) but does not wait for it: NOT_READY while its modeled end is past the host clock,
 * which each call advances. A library that asks whether the device is idle (cufold's launch
 * policy) thus sees the modeled device's answer, and pays a call, not a synchronization. */
CUresult sim_api_cuEventQuery(CUevent hEvent)
{
	struct sim_event *e = sim_event_from(hEvent);
	CUresult rc;

	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	rc = sim__capture_check_sync(e->ctx, NULL);
	if (rc != CUDA_SUCCESS || !e->rec)
		return rc;
	sim_sched_drain(e->rec);
	return e->rec->end_ns > sim_host_now() ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

static CUresult elapsed(float *ms, CUevent hstart, CUevent hend)
{
	struct sim_event *a = sim_event_from(hstart);
	struct sim_event *b = sim_event_from(hend);

	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	if (!a || !b || (a->flags & CU_EVENT_DISABLE_TIMING) || (b->flags & CU_EVENT_DISABLE_TIMING))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!a->rec || !b->rec)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!a->rec->done || !b->rec->done)
		return CUDA_ERROR_NOT_READY;
	*ms = (float)(((double)b->rec->end_ns - (double)a->rec->end_ns) / 1e6);
	return CUDA_SUCCESS;
}

/* Both the CUDA 2.0 and the 12.8 ABI have the same arguments. */
CUresult sim_api_cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	return elapsed(pMilliseconds, hStart, hEnd);
}

CUresult sim_api_cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	return elapsed(pMilliseconds, hStart, hEnd);
}
