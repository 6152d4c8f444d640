/* callback.c - cuStreamAddCallback: a host callback queued on a stream, as
 * cudaStreamAddCallback reaches it. tests/simcuda layer.
 *
 * Like cuLaunchHostFunc (stream.c) the callback is stream work that runs when everything before
 * it on the stream has run, and work after it waits for it; it also receives the stream and a
 * status (always CUDA_SUCCESS: the software device has no sticky errors). The driver does not
 * let a capturing stream take one (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED), so callbacks are
 * never cloned into graphs. */
#include "sim_int.h"

#include <stdlib.h>

struct sim_callback {
	CUstreamCallback fn;         /* program's callback */
	CUstream stream;             /* the handle it was queued with, passed back */
	void *data;                  /* its argument */
};

static void callback_run(struct sim_work *w, void *payload)
{
	struct sim_callback *c = payload;

	(void)w;
	c->fn(c->stream, CUDA_SUCCESS, c->data);
}

static void callback_cost(const void *payload, bool in_graph, struct sim_cost_parts *out)
{
	(void)payload;
	(void)in_graph;
	out->floor_ns = sim_cost.dev_copy_ns; /* as a host function */
}

static const struct sim_work_ops callback_ops = {
	.kind = "host_fn",
	.run = callback_run,
	.free = free,
	.cost = callback_cost,
};

static CUresult add_callback(CUstream h, CUstreamCallback fn, void *data, unsigned int flags, enum sim_pt pt)
{
	struct sim_stream *s;
	struct sim_callback *c = NULL;
	struct sim_work *w;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	if (!fn || flags) /* flags are reserved: 0 */
		goto out;
	rc = sim_stream_resolve(h, pt, &s);
	if (rc != CUDA_SUCCESS)
		goto out;
	if (s->capture) {
		rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		goto out;
	}
	c = malloc(sizeof(*c));
	if (!c) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	c->fn = fn;
	c->stream = h;
	c->data = data;
	w = sim_work_new(&callback_ops, c, s->ctx);
	if (!w) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	c = NULL; /* the work item owns it */
	rc = sim_stream_submit(s, w);
out:
	free(c);
	return rc;
}

CUresult sim_api_cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags)
{
	return add_callback(hStream, callback, userData, flags, SIM_PT_LEGACY);
}

CUresult sim_api_cuStreamAddCallback_ptsz(CUstream hStream, CUstreamCallback callback, void *userData,
					  unsigned int flags)
{
	return add_callback(hStream, callback, userData, flags, SIM_PT_PER_THREAD);
}
