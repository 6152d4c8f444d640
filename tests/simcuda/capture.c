/* capture.c - the program's own stream capture on the software device: work submitted to a
 * capturing stream becomes nodes of a graph instead of running. tests/simcuda layer.
 *
 * A capture starts on one stream (the origin) and spreads to every stream that waits on an
 * event recorded inside it. Each capturing stream has a dependency set: the nodes its next
 * captured work depends on (at first empty, then the node it last added). An event recorded on
 * a capturing stream remembers that stream's set (ev->capture_nodes, a block the event code
 * frees with free()); a stream that waits on it adds the set to its own. EndCapture on the
 * origin hands out the graph once every other stream's work has been joined back into it.
 *
 * States of a capture:
 *
 *   BeginCapture --> active --(unsafe sync: check_sync)--> invalidated
 *        active --EndCapture--> ended (graph returned, or UNJOINED: graph freed)
 *   invalidated --EndCapture--> ended (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, graph freed)
 *
 * An event's record block names its capture by id, never by pointer: it may outlive the
 * capture, and is then recognised as stale and ignored. */
#include "sim_graph_int.h"

#include <stdlib.h>
#include <string.h>

struct cap_stream {
	struct sim_stream *s;           /* stream taking part in the capture */
	struct sim_gnode **deps;        /* its dependency set (nodes of the capture's graph) */
	unsigned int ndeps, capdeps;    /* used and allocated slots of deps */
	CUgraphNode *deps_out;          /* the set as handles, for cuStreamGetCaptureInfo */
	CUgraphEdgeData *edges_out;     /* zeroed edge data returned with them */
	struct cap_stream *next;        /* next stream of the capture */
};

struct sim_capture {
	uint64_t id;                    /* unique id (cuStreamGetCaptureInfo) */
	struct sim_ctx *ctx;            /* context of the origin stream */
	CUstreamCaptureMode mode;       /* mode given to BeginCapture */
	pthread_t thread;               /* thread that began it */
	struct sim_graph *graph;        /* graph being built */
	bool owns_graph;                /* false for cuStreamBeginCaptureToGraph's graph */
	struct sim_stream *origin;      /* stream the capture began on */
	bool invalidated;               /* an unsafe call broke it: EndCapture fails */
	struct cap_stream *streams;     /* every stream taking part, origin included */
	struct sim_capture *next;       /* next active capture */
};

/* What ev->capture_nodes points at: one malloc'd block. */
struct cap_record {
	uint64_t capture_id;            /* capture the record was made in */
	unsigned int n;                 /* nodes in the set */
	struct sim_gnode *nodes[];      /* the recording stream's dependency set */
};

static struct sim_capture *active;   /* captures in progress, under the device lock */
static uint64_t next_capture_id = 1;
static _Thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

static struct sim_capture *capture_by_id(uint64_t id)
{
	for (struct sim_capture *c = active; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static struct cap_stream *cap_stream_of(struct sim_capture *c, const struct sim_stream *s)
{
	for (struct cap_stream *cs = c->streams; cs; cs = cs->next)
		if (cs->s == s)
			return cs;
	return NULL;
}

static struct cap_stream *cap_stream_add(struct sim_capture *c, struct sim_stream *s)
{
	struct cap_stream *cs = calloc(1, sizeof(*cs));

	if (!cs)
		return NULL;
	cs->s = s;
	cs->next = c->streams;
	c->streams = cs;
	s->capture = c;
	return cs;
}

static bool deps_has(const struct cap_stream *cs, const struct sim_gnode *n)
{
	for (unsigned int i = 0; i < cs->ndeps; i++)
		if (cs->deps[i] == n)
			return true;
	return false;
}

static CUresult deps_add(struct cap_stream *cs, struct sim_gnode *n)
{
	if (deps_has(cs, n))
		return CUDA_SUCCESS;
	if (cs->ndeps == cs->capdeps) {
		unsigned int cap = cs->capdeps ? cs->capdeps * 2 : 4;
		struct sim_gnode **p = realloc(cs->deps, cap * sizeof(*p));

		if (!p)
			return CUDA_ERROR_OUT_OF_MEMORY;
		cs->deps = p;
		cs->capdeps = cap;
	}
	cs->deps[cs->ndeps++] = n;
	return CUDA_SUCCESS;
}

static void capture_end(struct sim_capture *c)
{
	struct cap_stream *cs, *next;

	for (struct sim_capture **pp = &active; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	for (cs = c->streams; cs; cs = next) {
		next = cs->next;
		if (cs->s->capture == c)
			cs->s->capture = NULL;
		free(cs->deps);
		free(cs->deps_out);
		free(cs->edges_out);
		free(cs);
	}
	free(c);
}

/* Every other stream's dependency set must lie in the past of the origin's: otherwise work
 * forked from the origin never joined back. */
static bool capture_is_joined(const struct sim_capture *c)
{
	const struct cap_stream *origin = cap_stream_of((struct sim_capture *)c, c->origin);
	unsigned int n = c->graph->n, top = 0;
	bool *seen = calloc(n ? n : 1, sizeof(*seen));
	struct sim_gnode **stack = calloc(n ? n : 1, sizeof(*stack));
	bool joined = true;

	if (!seen || !stack) {
		joined = false;
		goto out;
	}
	for (unsigned int i = 0; origin && i < origin->ndeps; i++)
		if (!seen[origin->deps[i]->index]) {
			seen[origin->deps[i]->index] = true;
			stack[top++] = origin->deps[i];
		}
	while (top) {
		struct sim_gnode *m = stack[--top];

		for (unsigned int j = 0; j < m->ndeps; j++)
			if (!seen[m->deps[j]->index]) {
				seen[m->deps[j]->index] = true;
				stack[top++] = m->deps[j];
			}
	}
	for (const struct cap_stream *cs = c->streams; cs && joined; cs = cs->next)
		for (unsigned int i = 0; cs->s != c->origin && i < cs->ndeps; i++)
			if (!seen[cs->deps[i]->index])
				joined = false;
out:
	free(seen);
	free(stack);
	return joined;
}

/* ------------------------------------------------------------------ hooks (sim_int.h) */

CUresult sim__capture_submit(struct sim_stream *s, struct sim_work *w)
{
	struct sim_capture *c = s->capture;
	struct cap_stream *cs = cap_stream_of(c, s);
	const struct sim_work_ops *ops = w->ops;
	void *payload = w->payload;
	struct sim_node_body b;
	struct sim_gnode *n;
	CUresult rc;

	/* the item is only a shell around the payload: it is never queued */
	w->payload = NULL;
	sim_work_unref(w);
	sim_node_body_from_work(&b, ops, payload);
	if (!cs)
		cs = cap_stream_add(c, s);
	if (c->invalidated || !cs) {
		sim_node_body_fini(&b);
		return cs ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_ERROR_OUT_OF_MEMORY;
	}
	rc = sim_graph_add(c->graph, &b, cs->deps, cs->ndeps, &n);
	if (rc != CUDA_SUCCESS)
		return rc;
	cs->ndeps = 0;
	return deps_add(cs, n);
}

CUresult sim__capture_event_record(struct sim_stream *s, struct sim_event *ev)
{
	struct sim_capture *c = s->capture;
	struct cap_stream *cs = cap_stream_of(c, s);
	unsigned int n = cs ? cs->ndeps : 0;
	struct cap_record *r;

	if (c->invalidated)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	r = malloc(sizeof(*r) + n * sizeof(r->nodes[0]));
	if (!r)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r->capture_id = c->id;
	r->n = n;
	if (n)
		memcpy(r->nodes, cs->deps, n * sizeof(r->nodes[0]));
	free(ev->capture_nodes);
	ev->capture_nodes = r;
	return CUDA_SUCCESS;
}

int sim__capture_wait_event(struct sim_stream *s, struct sim_event *ev)
{
	struct cap_record *r = ev->capture_nodes;
	struct sim_capture *c = r ? capture_by_id(r->capture_id) : NULL;
	struct cap_stream *cs;

	if (!c) {
		/* not recorded in a capture, or in one that has ended */
		free(r);
		ev->capture_nodes = NULL;
		return 1;
	}
	if (s->capture && s->capture != c)
		return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
	if (s->is_legacy)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (c->invalidated)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	cs = cap_stream_of(c, s);
	if (!cs)
		cs = cap_stream_add(c, s);
	if (!cs)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (unsigned int i = 0; i < r->n; i++)
		if (deps_add(cs, r->nodes[i]) != CUDA_SUCCESS)
			return CUDA_ERROR_OUT_OF_MEMORY;
	return CUDA_SUCCESS;
}

/* Whether an unsafe call by this thread is prohibited by capture c (CUDA's rules for
 * cuThreadExchangeStreamCaptureMode). */
static bool prohibits(const struct sim_capture *c)
{
	bool mine = pthread_equal(c->thread, pthread_self());

	if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
		return false;
	if (mine)
		return c->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
	return thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
}

CUresult sim__capture_check_sync(struct sim_ctx *ctx, struct sim_stream *s)
{
	CUresult rc = CUDA_SUCCESS;

	if (!active)
		return CUDA_SUCCESS;
	if (s && s->capture) {
		s->capture->invalidated = true;
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	if (s && !s->is_legacy)
		return CUDA_SUCCESS; /* waiting for an unrelated stream is safe */
	for (struct sim_capture *c = active; c; c = c->next)
		if ((!ctx || c->ctx == ctx) && prohibits(c)) {
			c->invalidated = true;
			rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		}
	return rc;
}

bool sim__capture_owns_graph(const struct sim_graph *g)
{
	for (const struct sim_capture *c = active; c; c = c->next)
		if (c->graph == g)
			return true;
	return false;
}

/* cuGraphLaunch into a capturing stream: the exec's nodes are copied into the capture's graph
 * (CUDA adds one child-graph node; a flat copy orders the work the same way). */
CUresult sim__capture_graph_exec(struct sim_stream *s, const struct sim_gexec *x)
{
	struct sim_capture *c = s->capture;
	struct cap_stream *cs = cap_stream_of(c, s);
	struct sim_gnode **made = NULL, **deps = NULL;
	bool *has_dependent = NULL;
	CUresult rc = CUDA_SUCCESS;

	if (c->invalidated)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	if (!cs && !(cs = cap_stream_add(c, s)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!x->n)
		return CUDA_SUCCESS;
	made = calloc(x->n, sizeof(*made));
	has_dependent = calloc(x->n, sizeof(*has_dependent));
	deps = calloc(x->n + cs->ndeps, sizeof(*deps));
	if (!made || !has_dependent || !deps) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	for (unsigned int k = 0; k < x->n && rc == CUDA_SUCCESS; k++) {
		const struct sim_xnode *xn = &x->nodes[k];
		struct sim_node_body b;
		size_t nd = 0;

		if (xn->enabled)
			rc = sim_node_body_copy(&b, &xn->body);
		else
			sim_node_body_empty(&b);
		if (rc != CUDA_SUCCESS)
			break;
		if (!xn->ndeps)
			for (unsigned int j = 0; j < cs->ndeps; j++)
				deps[nd++] = cs->deps[j];
		for (unsigned int j = 0; j < xn->ndeps; j++) {
			deps[nd++] = made[xn->deps[j]];
			has_dependent[xn->deps[j]] = true;
		}
		rc = sim_graph_add(c->graph, &b, deps, nd, &made[k]);
	}
	if (rc != CUDA_SUCCESS) {
		c->invalidated = true; /* a partial copy is in the graph */
		goto out;
	}
	cs->ndeps = 0;
	for (unsigned int k = 0; k < x->n && rc == CUDA_SUCCESS; k++)
		if (!has_dependent[k])
			rc = deps_add(cs, made[k]);
out:
	free(made);
	free(has_dependent);
	free(deps);
	return rc;
}

/* ------------------------------------------------------------------ entry points */

static CUresult begin_capture(CUstream h, enum sim_pt pt, CUstreamCaptureMode mode, struct sim_graph *into,
			      const CUgraphNode *deps, size_t ndeps)
{
	struct sim_stream *s;
	struct sim_capture *c;
	struct cap_stream *cs;
	CUresult rc = sim_stream_resolve(h, pt, &s);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
	    mode != CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	if (s->is_legacy)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (s->capture)
		return CUDA_ERROR_ILLEGAL_STATE;
	if (ndeps && (!into || !deps))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < ndeps; i++) {
		struct sim_gnode *n = sim_gnode_from(deps[i]);

		if (!n || n->graph != into)
			return CUDA_ERROR_INVALID_VALUE;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->graph = into ? into : sim_graph_new();
	c->owns_graph = !into;
	cs = c->graph ? cap_stream_add(c, s) : NULL;
	for (size_t i = 0; cs && i < ndeps && rc == CUDA_SUCCESS; i++)
		rc = deps_add(cs, sim_gnode_from(deps[i]));
	if (!cs || rc != CUDA_SUCCESS) {
		if (c->owns_graph)
			sim_graph_free(c->graph);
		capture_end(c);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	c->id = next_capture_id++;
	c->ctx = s->ctx;
	c->mode = mode;
	c->thread = pthread_self();
	c->origin = s;
	c->next = active;
	active = c;
	return CUDA_SUCCESS;
}

CUresult sim_api_cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
	return begin_capture(hStream, SIM_PT_LEGACY, mode, NULL, NULL, 0);
}

CUresult sim_api_cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
	return begin_capture(hStream, SIM_PT_PER_THREAD, mode, NULL, NULL, 0);
}

/* CUDA 10.0's names, without a mode: they capture in global mode. */
CUresult sim_api_cuStreamBeginCapture(CUstream hStream)
{
	return begin_capture(hStream, SIM_PT_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL, NULL, NULL, 0);
}

CUresult sim_api_cuStreamBeginCapture_ptsz(CUstream hStream)
{
	return begin_capture(hStream, SIM_PT_PER_THREAD, CU_STREAM_CAPTURE_MODE_GLOBAL, NULL, NULL, 0);
}

static CUresult begin_capture_to_graph(CUstream h, enum sim_pt pt, CUgraph hGraph, const CUgraphNode *deps,
				       const CUgraphEdgeData *edges, size_t ndeps, CUstreamCaptureMode mode)
{
	struct sim_graph *g = sim_graph_from(hGraph);

	if (!g)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; edges && i < ndeps; i++)
		if (edges[i].from_port || edges[i].to_port || edges[i].type)
			return CUDA_ERROR_NOT_SUPPORTED;
	return begin_capture(h, pt, mode, g, deps, ndeps);
}

CUresult sim_api_cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
					     const CUgraphEdgeData *dependencyData, size_t numDependencies,
					     CUstreamCaptureMode mode)
{
	return begin_capture_to_graph(hStream, SIM_PT_LEGACY, hGraph, dependencies, dependencyData,
				      numDependencies, mode);
}

CUresult sim_api_cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
						  const CUgraphEdgeData *dependencyData, size_t numDependencies,
						  CUstreamCaptureMode mode)
{
	return begin_capture_to_graph(hStream, SIM_PT_PER_THREAD, hGraph, dependencies, dependencyData,
				      numDependencies, mode);
}

static CUresult end_capture(CUstream h, enum sim_pt pt, CUgraph *phGraph)
{
	struct sim_stream *s;
	struct sim_capture *c;
	struct sim_graph *g;
	CUresult rc = sim_stream_resolve(h, pt, &s);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!phGraph)
		return CUDA_ERROR_INVALID_VALUE;
	c = s->capture;
	if (!c)
		return CUDA_ERROR_ILLEGAL_STATE;
	if (s != c->origin)
		return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
	if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(c->thread, pthread_self()))
		return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
	if (c->invalidated)
		rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	else if (!capture_is_joined(c))
		rc = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
	g = c->graph;
	if (rc != CUDA_SUCCESS && c->owns_graph)
		sim_graph_free(g);
	*phGraph = rc == CUDA_SUCCESS ? (CUgraph)(void *)g : NULL;
	capture_end(c);
	return rc;
}

CUresult sim_api_cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	return end_capture(hStream, SIM_PT_LEGACY, phGraph);
}

CUresult sim_api_cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
	return end_capture(hStream, SIM_PT_PER_THREAD, phGraph);
}

static CUstreamCaptureStatus status_of(const struct sim_stream *s)
{
	if (!s->capture)
		return CU_STREAM_CAPTURE_STATUS_NONE;
	return s->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

static CUresult is_capturing(CUstream h, enum sim_pt pt, CUstreamCaptureStatus *status)
{
	struct sim_stream *s;
	CUresult rc;

	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	rc = sim_stream_resolve(h, pt, &s);
	if (rc == CUDA_SUCCESS)
		*status = status_of(s);
	return rc;
}

CUresult sim_api_cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	return is_capturing(hStream, SIM_PT_LEGACY, captureStatus);
}

CUresult sim_api_cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	return is_capturing(hStream, SIM_PT_PER_THREAD, captureStatus);
}

/* Every cuStreamGetCaptureInfo version; the arrays returned stay valid until the next call for
 * the stream or the end of the capture. */
static CUresult capture_info(CUstream h, enum sim_pt pt, CUstreamCaptureStatus *status, cuuint64_t *id,
			     CUgraph *graph, const CUgraphNode **deps, const CUgraphEdgeData **edges,
			     size_t *ndeps)
{
	struct sim_stream *s;
	struct cap_stream *cs;
	CUresult rc;

	if (!status || (edges && !deps))
		return CUDA_ERROR_INVALID_VALUE;
	rc = sim_stream_resolve(h, pt, &s);
	if (rc != CUDA_SUCCESS)
		return rc;
	*status = status_of(s);
	if (graph)
		*graph = NULL;
	if (deps)
		*deps = NULL;
	if (edges)
		*edges = NULL;
	if (ndeps)
		*ndeps = 0;
	if (!s->capture)
		return CUDA_SUCCESS;
	if (id)
		*id = s->capture->id;
	if (graph)
		*graph = (CUgraph)(void *)s->capture->graph;
	cs = cap_stream_of(s->capture, s);
	if (!cs || !cs->ndeps)
		return CUDA_SUCCESS;
	if (deps || edges) {
		CUgraphNode *d = realloc(cs->deps_out, cs->ndeps * sizeof(*d));
		CUgraphEdgeData *e;

		if (!d)
			return CUDA_ERROR_OUT_OF_MEMORY;
		cs->deps_out = d;
		e = realloc(cs->edges_out, cs->ndeps * sizeof(*e));
		if (!e)
			return CUDA_ERROR_OUT_OF_MEMORY;
		cs->edges_out = e;
		memset(e, 0, cs->ndeps * sizeof(*e));
		for (unsigned int i = 0; i < cs->ndeps; i++)
			d[i] = (CUgraphNode)(void *)cs->deps[i];
		if (deps)
			*deps = d;
		if (edges)
			*edges = e;
	}
	if (ndeps)
		*ndeps = cs->ndeps;
	return CUDA_SUCCESS;
}

CUresult sim_api_cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
					cuuint64_t *id_out)
{
	return capture_info(hStream, SIM_PT_LEGACY, captureStatus_out, id_out, NULL, NULL, NULL, NULL);
}

CUresult sim_api_cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
					     cuuint64_t *id_out)
{
	return capture_info(hStream, SIM_PT_PER_THREAD, captureStatus_out, id_out, NULL, NULL, NULL, NULL);
}

CUresult sim_api_cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
					   cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out,
					   size_t *numDependencies_out)
{
	return capture_info(hStream, SIM_PT_LEGACY, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
			    numDependencies_out);
}

CUresult sim_api_cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
						cuuint64_t *id_out, CUgraph *graph_out,
						const CUgraphNode **dependencies_out, size_t *numDependencies_out)
{
	return capture_info(hStream, SIM_PT_PER_THREAD, captureStatus_out, id_out, graph_out, dependencies_out,
			    NULL, numDependencies_out);
}

CUresult sim_api_cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
					   cuuint64_t *id_out, CUgraph *graph_out, const CUgraphNode **dependencies_out,
					   const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
	return capture_info(hStream, SIM_PT_LEGACY, captureStatus_out, id_out, graph_out, dependencies_out,
			    edgeData_out, numDependencies_out);
}

CUresult sim_api_cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
						cuuint64_t *id_out, CUgraph *graph_out,
						const CUgraphNode **dependencies_out,
						const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
	return capture_info(hStream, SIM_PT_PER_THREAD, captureStatus_out, id_out, graph_out, dependencies_out,
			    edgeData_out, numDependencies_out);
}

static CUresult update_deps(CUstream h, enum sim_pt pt, CUgraphNode *deps, const CUgraphEdgeData *edges,
			    size_t n, unsigned int flags)
{
	struct sim_stream *s;
	struct cap_stream *cs;
	CUresult rc = sim_stream_resolve(h, pt, &s);

	if (rc != CUDA_SUCCESS)
		return rc;
	if ((n && !deps) ||
	    (flags != CU_STREAM_ADD_CAPTURE_DEPENDENCIES && flags != CU_STREAM_SET_CAPTURE_DEPENDENCIES))
		return CUDA_ERROR_INVALID_VALUE;
	if (!s->capture)
		return CUDA_ERROR_ILLEGAL_STATE;
	for (size_t i = 0; i < n; i++) {
		struct sim_gnode *g = sim_gnode_from(deps[i]);

		if (!g || g->graph != s->capture->graph)
			return CUDA_ERROR_INVALID_VALUE;
		if (edges && (edges[i].from_port || edges[i].to_port || edges[i].type))
			return CUDA_ERROR_NOT_SUPPORTED;
	}
	cs = cap_stream_of(s->capture, s);
	if (!cs)
		return CUDA_ERROR_ILLEGAL_STATE;
	if (flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES)
		cs->ndeps = 0;
	for (size_t i = 0; i < n && rc == CUDA_SUCCESS; i++)
		rc = deps_add(cs, sim_gnode_from(deps[i]));
	return rc;
}

CUresult sim_api_cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *dependencies,
						   size_t numDependencies, unsigned int flags)
{
	return update_deps(hStream, SIM_PT_LEGACY, dependencies, NULL, numDependencies, flags);
}

CUresult sim_api_cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream, CUgraphNode *dependencies,
							size_t numDependencies, unsigned int flags)
{
	return update_deps(hStream, SIM_PT_PER_THREAD, dependencies, NULL, numDependencies, flags);
}

CUresult sim_api_cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode *dependencies,
						      const CUgraphEdgeData *dependencyData, size_t numDependencies,
						      unsigned int flags)
{
	return update_deps(hStream, SIM_PT_LEGACY, dependencies, dependencyData, numDependencies, flags);
}

CUresult sim_api_cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream hStream, CUgraphNode *dependencies,
							   const CUgraphEdgeData *dependencyData,
							   size_t numDependencies, unsigned int flags)
{
	return update_deps(hStream, SIM_PT_PER_THREAD, dependencies, dependencyData, numDependencies, flags);
}

CUresult sim_api_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	CUstreamCaptureMode old;
	CUresult rc = CUDA_SUCCESS;

	if (!mode || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
		      *mode != CU_STREAM_CAPTURE_MODE_RELAXED)) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		old = thread_mode;
		thread_mode = *mode;
		*mode = old;
	}
	return rc;
}
