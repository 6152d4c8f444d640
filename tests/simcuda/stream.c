/* stream.c - streams, the legacy and per-thread default streams, submission of stream work
 * with exactly the ordering CUDA guarantees, and host functions. tests/simcuda layer.
 *
 * Ordering rules applied at submission (nothing else orders work):
 *  - an item depends on the previous item of its stream;
 *  - on the legacy default stream it also depends on the latest item of every blocking stream
 *    of the context (created without CU_STREAM_NON_BLOCKING, per-thread default streams
 *    included);
 *  - on a blocking stream it also depends on the latest item of the legacy stream. */
#include "sim_int.h"

#include <stdlib.h>

#define PT_SLOTS 8

struct pt_slot {
	struct sim_ctx *ctx;         /* context the stream belongs to */
	struct sim_stream *stream;   /* this thread's per-thread default stream in it */
};

static __thread struct pt_slot pt_streams[PT_SLOTS];
static uint64_t next_stream_id = 1;

struct sim_stream *sim__stream_create_legacy(struct sim_ctx *ctx);

static struct sim_stream *stream_new(struct sim_ctx *ctx, unsigned int flags, int priority)
{
	struct sim_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->magic = SIM_MAGIC_STREAM;
	s->ctx = ctx;
	s->flags = flags;
	s->priority = priority;
	s->id = next_stream_id++;
	s->next = ctx->streams;
	ctx->streams = s;
	sim_handle_add(s);
	return s;
}

struct sim_stream *sim__stream_create_legacy(struct sim_ctx *ctx)
{
	struct sim_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->magic = SIM_MAGIC_STREAM;
	s->ctx = ctx;
	s->is_legacy = true;
	s->id = next_stream_id++;
	return s; /* not in ctx->streams: the list holds the streams the legacy stream waits for */
}

static struct sim_stream *per_thread_stream(struct sim_ctx *ctx)
{
	struct pt_slot *free_slot = NULL;

	for (int i = 0; i < PT_SLOTS; i++) {
		if (pt_streams[i].ctx == ctx && sim_handle_is_live(pt_streams[i].stream, SIM_MAGIC_STREAM))
			return pt_streams[i].stream;
		if (!free_slot && !sim_handle_is_live(pt_streams[i].ctx, SIM_MAGIC_CTX))
			free_slot = &pt_streams[i];
	}
	if (!free_slot)
		free_slot = &pt_streams[0];
	free_slot->ctx = ctx;
	free_slot->stream = stream_new(ctx, CU_STREAM_DEFAULT, 0);
	if (free_slot->stream)
		free_slot->stream->is_per_thread = true;
	return free_slot->stream;
}

CUresult sim_stream_resolve(CUstream h, enum sim_pt pt, struct sim_stream **out)
{
	struct sim_ctx *ctx;
	struct sim_stream *s;
	CUresult rc = sim_ctx_require(&ctx);

	if (h == CU_STREAM_LEGACY || (!h && pt == SIM_PT_LEGACY)) {
		if (rc != CUDA_SUCCESS)
			return rc;
		*out = ctx->legacy;
		return CUDA_SUCCESS;
	}
	if (h == CU_STREAM_PER_THREAD || !h) {
		if (rc != CUDA_SUCCESS)
			return rc;
		*out = per_thread_stream(ctx);
		return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	}
	s = (struct sim_stream *)h;
	if (!sim_handle_is_live(s, SIM_MAGIC_STREAM) || !sim_handle_is_live(s->ctx, SIM_MAGIC_CTX))
		return CUDA_ERROR_INVALID_HANDLE;
	*out = s;
	return CUDA_SUCCESS;
}

CUresult sim_stream_submit(struct sim_stream *s, struct sim_work *w)
{
	struct sim_ctx *ctx = s->ctx;

	if (s->capture)
		return sim__capture_submit(s, w);
	w->ctx = ctx;
	w->submit_ns = sim_host_now();
	sim_work_dep(w, s->last);
	if (s->is_legacy) {
		for (struct sim_stream *t = ctx->streams; t; t = t->next)
			if (!(t->flags & CU_STREAM_NON_BLOCKING))
				sim_work_dep(w, t->last);
	} else if (!(s->flags & CU_STREAM_NON_BLOCKING)) {
		sim_work_dep(w, ctx->legacy->last);
	}
	sim_work_ref(w);
	sim_work_unref(s->last);
	s->last = w;
	if (w->ops != &sim_nop_ops) {
		sim_host_charge(sim_cost.host_submit_ns);
		sim_stats_count("submissions", w->ops->kind, 1);
	}
	sim_sched_add(w);
	return CUDA_SUCCESS;
}

/* Run the stream's work so far; the host then waits for its modeled end. */
static CUresult stream_sync(struct sim_stream *s)
{
	CUresult rc = sim__capture_check_sync(s->ctx, s);
	struct sim_work *last = s->last;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (s->is_legacy) {
		/* the legacy stream's last item already waits for every blocking stream */
	}
	if (last) {
		sim_work_ref(last);
		sim_sched_drain(last);
		sim_host_wait_until(last->end_ns);
		sim_work_unref(last);
	}
	return CUDA_SUCCESS;
}

static CUresult stream_create(CUstream *ph, unsigned int flags, int priority)
{
	struct sim_ctx *ctx;
	struct sim_stream *s;
	CUresult rc;

	if (!ph || (flags & ~(unsigned int)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	rc = sim_ctx_require(&ctx);
	if (rc != CUDA_SUCCESS)
		return rc;
	s = stream_new(ctx, flags, priority);
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*ph = (CUstream)s;
	return CUDA_SUCCESS;
}

CUresult sim_api_cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	return stream_create(phStream, Flags, 0);
}

CUresult sim_api_cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	return stream_create(phStream, flags, priority < -5 ? -5 : priority > 0 ? 0 : priority);
}

/* Work already submitted still runs (it does not refer to the stream object). */
CUresult sim_api_cuStreamDestroy_v2(CUstream hStream)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_stream *s;

	if (!hStream || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	rc = sim_stream_resolve(hStream, SIM_PT_LEGACY, &s);
	if (rc != CUDA_SUCCESS)
		goto out;
	if (s->capture) {
		rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		goto out;
	}
	/* The legacy stream must keep waiting for this stream's pending work: hand it over. */
	if (s->last && !(s->flags & CU_STREAM_NON_BLOCKING)) {
		struct sim_work *join = sim_work_new(&sim_nop_ops, NULL, s->ctx);

		if (join) {
			sim_work_dep(join, s->ctx->legacy->last);
			sim_work_dep(join, s->last);
			sim_work_ref(join);
			sim_work_unref(s->ctx->legacy->last);
			s->ctx->legacy->last = join;
			sim_sched_add(join);
		}
	}
	for (struct sim_stream **pp = &s->ctx->streams; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	sim_work_unref(s->last);
	sim_handle_remove(s);
	s->magic = 0;
	free(s);
out:
	return rc;
}

static CUresult sync_stream(CUstream h, enum sim_pt pt)
{
	struct sim_stream *s;
	CUresult rc = sim_stream_resolve(h, pt, &s);

	if (rc == CUDA_SUCCESS)
		rc = stream_sync(s);
	return rc;
}

CUresult sim_api_cuStreamSynchronize(CUstream hStream)
{
	return sync_stream(hStream, SIM_PT_LEGACY);
}

CUresult sim_api_cuStreamSynchronize_ptsz(CUstream hStream)
{
	return sync_stream(hStream, SIM_PT_PER_THREAD);
}

/* A query runs the stream's work (programs that poll always make progress) but does not wait:
 * NOT_READY while its modeled end is past the host clock, which every call advances. */
static CUresult query_stream(CUstream h, enum sim_pt pt)
{
	struct sim_stream *s;
	struct sim_work *last;
	CUresult rc = sim_stream_resolve(h, pt, &s);

	if (rc == CUDA_SUCCESS)
		rc = sim__capture_check_sync(s->ctx, s);
	if (rc != CUDA_SUCCESS || !(last = s->last))
		return rc;
	sim_work_ref(last);
	sim_sched_drain(last);
	rc = last->end_ns > sim_host_now() ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
	sim_work_unref(last);
	return rc;
}

CUresult sim_api_cuStreamQuery(CUstream hStream)
{
	return query_stream(hStream, SIM_PT_LEGACY);
}

CUresult sim_api_cuStreamQuery_ptsz(CUstream hStream)
{
	return query_stream(hStream, SIM_PT_PER_THREAD);
}

static CUresult wait_event(CUstream h, CUevent hev, unsigned int flags, enum sim_pt pt)
{
	struct sim_stream *s;
	struct sim_event *ev = sim_event_from(hev);
	struct sim_work *w;
	CUresult rc;

	if (!ev || (flags & ~(unsigned int)CU_EVENT_WAIT_EXTERNAL))
		return ev ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
	rc = sim_stream_resolve(h, pt, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (ev->capture_nodes || s->capture) {
		int r = sim__capture_wait_event(s, ev);

		if (r != 1)
			return (CUresult)r;
	}
	w = sim_work_new(&sim_nop_ops, NULL, s->ctx);
	if (!w)
		return CUDA_ERROR_OUT_OF_MEMORY;
	sim_work_dep(w, ev->rec);
	return sim_stream_submit(s, w);
}

CUresult sim_api_cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	return wait_event(hStream, hEvent, Flags, SIM_PT_LEGACY);
}

CUresult sim_api_cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	return wait_event(hStream, hEvent, Flags, SIM_PT_PER_THREAD);
}

static CUresult get_stream(CUstream h, enum sim_pt pt, struct sim_stream **s)
{
	return sim_stream_resolve(h, pt, s);
}

CUresult sim_api_cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_stream *s;

	if (!flags)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = get_stream(hStream, SIM_PT_LEGACY, &s)) == CUDA_SUCCESS)
		*flags = s->flags;
	return rc;
}

CUresult sim_api_cuStreamGetPriority(CUstream hStream, int *priority)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_stream *s;

	if (!priority)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = get_stream(hStream, SIM_PT_LEGACY, &s)) == CUDA_SUCCESS)
		*priority = s->priority;
	return rc;
}

CUresult sim_api_cuStreamGetId(CUstream hStream, unsigned long long *streamId)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_stream *s;

	if (!streamId)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = get_stream(hStream, SIM_PT_LEGACY, &s)) == CUDA_SUCCESS)
		*streamId = s->id;
	return rc;
}

CUresult sim_api_cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
	CUresult rc = CUDA_SUCCESS;
	struct sim_stream *s;

	if (!pctx)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if ((rc = get_stream(hStream, SIM_PT_LEGACY, &s)) == CUDA_SUCCESS)
		*pctx = (CUcontext)s->ctx;
	return rc;
}

/* ------------------------------------------------------------------ host functions */

static void host_fn_run(struct sim_work *w, void *payload)
{
	struct sim_host_fn *h = payload;

	(void)w;
	h->fn(h->data);
}

static void *host_fn_clone(const void *payload)
{
	struct sim_host_fn *c = malloc(sizeof(*c));

	if (c)
		*c = *(const struct sim_host_fn *)payload;
	return c;
}

static void host_fn_cost(const void *payload, bool in_graph, struct sim_cost_parts *out)
{
	(void)payload;
	out->floor_ns = in_graph ? sim_cost.dev_graph_node_gap_ns : sim_cost.dev_copy_ns;
}

const struct sim_work_ops sim_host_fn_ops = {
	.kind = "host_fn",
	.run = host_fn_run,
	.free = free,
	.clone = host_fn_clone,
	.cost = host_fn_cost,
};

static CUresult launch_host_fn(CUstream h, CUhostFn fn, void *data, enum sim_pt pt)
{
	struct sim_stream *s;
	struct sim_host_fn *p;
	struct sim_work *w;
	CUresult rc;

	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	rc = sim_stream_resolve(h, pt, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	p = malloc(sizeof(*p));
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p->fn = fn;
	p->data = data;
	w = sim_work_new(&sim_host_fn_ops, p, s->ctx);
	if (!w) {
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return sim_stream_submit(s, w);
}

CUresult sim_api_cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	return launch_host_fn(hStream, fn, userData, SIM_PT_LEGACY);
}

CUresult sim_api_cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn, void *userData)
{
	return launch_host_fn(hStream, fn, userData, SIM_PT_PER_THREAD);
}
