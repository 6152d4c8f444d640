/* graph.c - the software device's CUDA graphs: building graphs node by node, instantiating them
 * into execs, patching and updating execs, and launching them as work items. tests/simcuda layer.
 *
 * A launch turns each exec node into its own work item with the node's graph edges as
 * dependencies, between an entry item (submitted to the stream like any work, so it carries the
 * stream's ordering) and a join item that depends on every node and becomes the stream's last
 * work; the entry also waits for the exec's previous launch, which CUDA orders before it even
 * on another stream. The scheduler then runs the nodes in a random order allowed by the edges, interleaved
 * with other streams' work: a graph with a missing edge gives a wrong result under some seed.
 *
 * Ownership: a graph owns its nodes and their payload templates; an exec owns a deep copy of the
 * node set (later graph edits do not reach it, as in CUDA); a launch clones each payload into
 * its work item, so pending work never points into an exec. Host memory named by a memcpy node
 * is read when the node runs, never staged at build time. */
#include "sim_graph_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ handles */

/* Graphs, nodes and execs are in the device's handle registry (sim_handle_add), so a handle is
 * checked without reading memory that may have been freed (a destroyed exec launched again must
 * fail, also under AddressSanitizer). */

struct sim_graph *sim_graph_from(CUgraph h)
{
	struct sim_graph *g = (struct sim_graph *)h;

	return sim_handle_is_live(g, SIM_MAGIC_GRAPH) ? g : NULL;
}

struct sim_gnode *sim_gnode_from(CUgraphNode h)
{
	struct sim_gnode *n = (struct sim_gnode *)h;

	return sim_handle_is_live(n, SIM_MAGIC_GNODE) ? n : NULL;
}

struct sim_gexec *sim_gexec_from(CUgraphExec h)
{
	struct sim_gexec *x = (struct sim_gexec *)h;

	return sim_handle_is_live(x, SIM_MAGIC_GEXEC) ? x : NULL;
}

static CUresult need_init(void)
{
	return sim_is_initialized() ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

/* ------------------------------------------------------------------ node bodies */

/* Payloads of these kinds are plain structs: a kind without its own clone/free is copied and
 * freed bytewise. Kernel payloads hold a parameter buffer and need their kind's clone. */
static size_t plain_payload_size(const struct sim_work_ops *ops)
{
	if (ops == &sim_memset_ops)
		return sizeof(struct sim_memset);
	if (ops == &sim_host_fn_ops)
		return sizeof(struct sim_host_fn);
	return 0;
}

static void *payload_clone(const struct sim_work_ops *ops, const void *p)
{
	size_t n;
	void *c;

	if (ops->clone)
		return ops->clone(p);
	n = plain_payload_size(ops);
	if (!n)
		return NULL;
	c = malloc(n);
	if (c)
		memcpy(c, p, n);
	return c;
}

static void payload_free(const struct sim_work_ops *ops, void *p)
{
	if (!p)
		return;
	if (ops->free)
		ops->free(p);
	else if (plain_payload_size(ops))
		free(p);
}

CUgraphNodeType sim_node_type_of(const struct sim_work_ops *ops)
{
	if (ops == &sim_kernel_ops)
		return CU_GRAPH_NODE_TYPE_KERNEL;
	if (ops == &sim_copy_ops)
		return CU_GRAPH_NODE_TYPE_MEMCPY;
	if (ops == &sim_memset_ops)
		return CU_GRAPH_NODE_TYPE_MEMSET;
	if (ops == &sim_host_fn_ops)
		return CU_GRAPH_NODE_TYPE_HOST;
	if (ops == &sim_event_record_ops)
		return CU_GRAPH_NODE_TYPE_EVENT_RECORD;
	return CU_GRAPH_NODE_TYPE_EMPTY;
}

/* The name a node type is counted under in the graph_nodes group. */
static const char *node_type_name(CUgraphNodeType type)
{
	switch (type) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		return "kernel";
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		return "memcpy";
	case CU_GRAPH_NODE_TYPE_MEMSET:
		return "memset";
	case CU_GRAPH_NODE_TYPE_HOST:
		return "host";
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		return "event_record";
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		return "event_wait";
	default:
		return "empty";
	}
}

CUresult sim_node_body_copy(struct sim_node_body *dst, const struct sim_node_body *src)
{
	*dst = *src;
	dst->payload = NULL;
	if (!src->payload)
		return CUDA_SUCCESS;
	dst->payload = payload_clone(src->ops, src->payload);
	return dst->payload ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

void sim_node_body_fini(struct sim_node_body *b)
{
	if (b->payload)
		payload_free(b->ops, b->payload);
	b->payload = NULL;
}

/* The descriptors GetParams answers with, for a node captured from a stream (made from a
 * payload, not from the program's descriptor). */
void sim_node_body_from_work(struct sim_node_body *b, const struct sim_work_ops *ops, void *payload)
{
	memset(b, 0, sizeof(*b));
	b->type = sim_node_type_of(ops);
	b->ops = ops;
	b->payload = payload;
	if (b->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD) {
		/* the record kind's payload is the event itself, not owned */
		b->event = payload;
		b->payload = NULL;
	} else if (b->type == CU_GRAPH_NODE_TYPE_KERNEL) {
		const struct sim_kernel_call *k = payload;

		b->func = (CUfunction)(void *)k->fn;
	} else if (b->type == CU_GRAPH_NODE_TYPE_MEMCPY) {
		const struct sim_copy *c = payload;

		b->copy.srcMemoryType = c->src_type == CU_MEMORYTYPE_HOST ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		b->copy.srcHost = c->src;
		b->copy.srcDevice = (CUdeviceptr)(uintptr_t)c->src;
		b->copy.srcPitch = c->src_pitch;
		b->copy.srcHeight = c->src_height;
		b->copy.dstMemoryType = c->dst_type == CU_MEMORYTYPE_HOST ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		b->copy.dstHost = c->dst;
		b->copy.dstDevice = (CUdeviceptr)(uintptr_t)c->dst;
		b->copy.dstPitch = c->dst_pitch;
		b->copy.dstHeight = c->dst_height;
		b->copy.WidthInBytes = c->width;
		b->copy.Height = c->height;
		b->copy.Depth = c->depth;
	} else if (b->type == CU_GRAPH_NODE_TYPE_MEMSET) {
		const struct sim_memset *m = payload;

		b->memset.dst = (CUdeviceptr)(uintptr_t)m->dst;
		b->memset.pitch = m->pitch;
		b->memset.value = m->value;
		b->memset.elementSize = m->elem_size;
		b->memset.width = m->width;
		b->memset.height = m->height;
	} else if (b->type == CU_GRAPH_NODE_TYPE_EMPTY && payload && !ops->clone) {
		/* an unknown kind whose payload cannot be copied per launch: nothing to run */
		payload_free(ops, payload);
		b->payload = NULL;
		b->ops = &sim_nop_ops;
	}
}

static CUresult kernel_body(struct sim_node_body *b, CUfunction func, CUkernel kern, unsigned int gx,
			    unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, unsigned int bz,
			    unsigned int shared, void **params, void **extra)
{
	CUfunction f = func ? func : (CUfunction)(void *)kern;
	struct sim_dim3 grid = {gx, gy, gz}, block = {bx, by, bz};
	struct sim_kernel_call *call = NULL;
	CUresult rc;

	memset(b, 0, sizeof(*b));
	if (!f || !gx || !gy || !gz || !bx || !by || !bz)
		return CUDA_ERROR_INVALID_VALUE;
	rc = sim_kernel_call_new(f, grid, block, shared, params, extra, &call);
	if (rc != CUDA_SUCCESS)
		return rc;
	b->type = CU_GRAPH_NODE_TYPE_KERNEL;
	b->ops = &sim_kernel_ops;
	b->payload = call;
	b->func = func;
	b->kern = func ? NULL : kern;
	return CUDA_SUCCESS;
}

static CUresult kernel_body_v2(struct sim_node_body *b, const CUDA_KERNEL_NODE_PARAMS *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	return kernel_body(b, p->func, p->kern, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX,
			   p->blockDimY, p->blockDimZ, p->sharedMemBytes, p->kernelParams, p->extra);
}

static CUresult kernel_body_v1(struct sim_node_body *b, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	return kernel_body(b, p->func, NULL, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX,
			   p->blockDimY, p->blockDimZ, p->sharedMemBytes, p->kernelParams, p->extra);
}

static CUresult check_ctx_arg(CUcontext ctx)
{
	return !ctx || sim_ctx_from(ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static CUresult copy_body(struct sim_node_body *b, const CUDA_MEMCPY3D *p)
{
	struct sim_copy *c = NULL;
	CUresult rc;

	memset(b, 0, sizeof(*b));
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	rc = sim_copy_from_3d(p, &c);
	if (rc != CUDA_SUCCESS)
		return rc;
	b->type = CU_GRAPH_NODE_TYPE_MEMCPY;
	b->ops = &sim_copy_ops;
	b->payload = c;
	b->copy = *p;
	return CUDA_SUCCESS;
}

static CUresult memset_body(struct sim_node_body *b, const CUDA_MEMSET_NODE_PARAMS *p)
{
	struct sim_memset *m;
	size_t row, span;

	memset(b, 0, sizeof(*b));
	if (!p || (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) || !p->width ||
	    !p->height)
		return CUDA_ERROR_INVALID_VALUE;
	row = p->width * p->elementSize;
	if (p->height > 1 && p->pitch < row)
		return CUDA_ERROR_INVALID_VALUE;
	span = (p->height - 1) * p->pitch + row;
	if (!sim_mem_is_device((uintptr_t)p->dst, span))
		return CUDA_ERROR_INVALID_VALUE;
	m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->dst = (char *)(uintptr_t)p->dst;
	m->pitch = p->height > 1 ? p->pitch : row;
	m->elem_size = p->elementSize;
	m->value = p->elementSize == 4 ? p->value : p->value & ((1u << (8 * p->elementSize)) - 1);
	m->width = p->width;
	m->height = p->height;
	b->type = CU_GRAPH_NODE_TYPE_MEMSET;
	b->ops = &sim_memset_ops;
	b->payload = m;
	b->memset = *p;
	return CUDA_SUCCESS;
}

static CUresult host_body(struct sim_node_body *b, const CUDA_HOST_NODE_PARAMS *p)
{
	struct sim_host_fn *h;

	memset(b, 0, sizeof(*b));
	if (!p || !p->fn)
		return CUDA_ERROR_INVALID_VALUE;
	h = calloc(1, sizeof(*h));
	if (!h)
		return CUDA_ERROR_OUT_OF_MEMORY;
	h->fn = p->fn;
	h->data = p->userData;
	b->type = CU_GRAPH_NODE_TYPE_HOST;
	b->ops = &sim_host_fn_ops;
	b->payload = h;
	return CUDA_SUCCESS;
}

static CUresult event_body(struct sim_node_body *b, CUgraphNodeType type, CUevent ev)
{
	memset(b, 0, sizeof(*b));
	b->event = sim_event_from(ev);
	if (!b->event)
		return ev ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
	b->type = type;
	b->ops = type == CU_GRAPH_NODE_TYPE_EVENT_RECORD ? &sim_event_record_ops : &sim_nop_ops;
	return CUDA_SUCCESS;
}

void sim_node_body_empty(struct sim_node_body *b)
{
	memset(b, 0, sizeof(*b));
	b->type = CU_GRAPH_NODE_TYPE_EMPTY;
	b->ops = &sim_nop_ops;
}

/* ------------------------------------------------------------------ graphs */

struct sim_graph *sim_graph_new(void)
{
	struct sim_graph *g = calloc(1, sizeof(*g));

	if (g) {
		g->magic = SIM_MAGIC_GRAPH;
		sim_handle_add(g);
	}
	return g;
}

static void gnode_free(struct sim_gnode *n)
{
	sim_handle_remove(n);
	n->magic = 0;
	sim_node_body_fini(&n->body);
	free(n->deps);
	free(n);
}

void sim_graph_free(struct sim_graph *g)
{
	if (!g)
		return;
	for (unsigned int i = 0; i < g->n; i++)
		gnode_free(g->nodes[i]);
	free(g->nodes);
	sim_handle_remove(g);
	g->magic = 0;
	free(g);
}

static bool has_dep(const struct sim_gnode *n, const struct sim_gnode *d)
{
	for (unsigned int i = 0; i < n->ndeps; i++)
		if (n->deps[i] == d)
			return true;
	return false;
}

static CUresult add_dep(struct sim_gnode *n, struct sim_gnode *d)
{
	if (n->ndeps == n->capdeps) {
		unsigned int cap = n->capdeps ? n->capdeps * 2 : 4;
		struct sim_gnode **p = realloc(n->deps, cap * sizeof(*p));

		if (!p)
			return CUDA_ERROR_OUT_OF_MEMORY;
		n->deps = p;
		n->capdeps = cap;
	}
	n->deps[n->ndeps++] = d;
	return CUDA_SUCCESS;
}

CUresult sim_graph_add(struct sim_graph *g, struct sim_node_body *b, struct sim_gnode *const *deps,
		       size_t ndeps, struct sim_gnode **out)
{
	struct sim_gnode *n = NULL;
	CUresult rc = CUDA_SUCCESS;

	for (size_t i = 0; i < ndeps; i++)
		if (!deps[i] || deps[i]->graph != g) {
			rc = CUDA_ERROR_INVALID_VALUE;
			goto out_body;
		}
	if (g->n == g->cap) {
		unsigned int cap = g->cap ? g->cap * 2 : 16;
		struct sim_gnode **p = realloc(g->nodes, cap * sizeof(*p));

		if (!p) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out_body;
		}
		g->nodes = p;
		g->cap = cap;
	}
	n = calloc(1, sizeof(*n));
	if (n)
		sim_handle_add(n);
	if (!n) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_body;
	}
	n->magic = SIM_MAGIC_GNODE;
	n->graph = g;
	n->body = *b;
	for (size_t i = 0; i < ndeps && rc == CUDA_SUCCESS; i++)
		if (!has_dep(n, deps[i]))
			rc = add_dep(n, deps[i]);
	if (rc != CUDA_SUCCESS) {
		gnode_free(n);
		return rc;
	}
	n->index = g->n;
	g->nodes[g->n++] = n;
	*out = n;
	return CUDA_SUCCESS;

out_body:
	sim_node_body_fini(b);
	return rc;
}

/* Resolve a dependency array of node handles of graph g into a malloc'd array of nodes. */
static CUresult resolve_deps(struct sim_graph *g, const CUgraphNode *deps, size_t ndeps,
			     struct sim_gnode ***out)
{
	struct sim_gnode **r;

	*out = NULL;
	if (ndeps && !deps)
		return CUDA_ERROR_INVALID_VALUE;
	if (!ndeps)
		return CUDA_SUCCESS;
	r = calloc(ndeps, sizeof(*r));
	if (!r)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (size_t i = 0; i < ndeps; i++) {
		r[i] = sim_gnode_from(deps[i]);
		if (!r[i] || r[i]->graph != g) {
			free(r);
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	*out = r;
	return CUDA_SUCCESS;
}

/* The common tail of every cuGraphAdd*Node: the body b is consumed. */
static CUresult add_node(CUgraphNode *ph, CUgraph hg, const CUgraphNode *deps, size_t ndeps,
			 struct sim_node_body *b)
{
	struct sim_graph *g = sim_graph_from(hg);
	struct sim_gnode **d = NULL;
	struct sim_gnode *n;
	CUresult rc;

	if (!g || !ph) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out_body;
	}
	rc = resolve_deps(g, deps, ndeps, &d);
	if (rc != CUDA_SUCCESS)
		goto out_body;
	rc = sim_graph_add(g, b, d, ndeps, &n);
	free(d);
	if (rc == CUDA_SUCCESS)
		*ph = (CUgraphNode)(void *)n;
	return rc;

out_body:
	sim_node_body_fini(b);
	return rc;
}

static void remove_node(struct sim_graph *g, struct sim_gnode *n)
{
	for (unsigned int i = 0; i < g->n; i++) {
		struct sim_gnode *m = g->nodes[i];
		unsigned int k = 0;

		for (unsigned int j = 0; j < m->ndeps; j++)
			if (m->deps[j] != n)
				m->deps[k++] = m->deps[j];
		m->ndeps = k;
	}
	for (unsigned int i = n->index; i + 1 < g->n; i++) {
		g->nodes[i] = g->nodes[i + 1];
		g->nodes[i]->index = i;
	}
	g->n--;
	gnode_free(n);
}

static CUresult graph_clone(const struct sim_graph *g, struct sim_graph **out)
{
	struct sim_graph *c = sim_graph_new();
	CUresult rc = c ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;

	for (unsigned int i = 0; rc == CUDA_SUCCESS && i < g->n; i++) {
		const struct sim_gnode *n = g->nodes[i];
		struct sim_node_body b;
		struct sim_gnode *m = NULL;

		rc = sim_node_body_copy(&b, &n->body);
		if (rc == CUDA_SUCCESS)
			rc = sim_graph_add(c, &b, NULL, 0, &m);
		for (unsigned int j = 0; rc == CUDA_SUCCESS && j < n->ndeps; j++)
			rc = add_dep(m, c->nodes[n->deps[j]->index]);
		if (rc == CUDA_SUCCESS)
			m->clone_of = n;
	}
	if (rc != CUDA_SUCCESS) {
		sim_graph_free(c);
		c = NULL;
	}
	*out = c;
	return rc;
}

/* Copy up to *count node handles out; CUDA's convention: with a NULL array only the count is
 * returned, otherwise unused slots are NULL and *count becomes the number written. */
static void return_nodes(struct sim_gnode *const *src, size_t n, CUgraphNode *dst, size_t *count)
{
	size_t k;

	if (!dst) {
		*count = n;
		return;
	}
	k = n < *count ? n : *count;
	for (size_t i = 0; i < *count; i++)
		dst[i] = i < k ? (CUgraphNode)(void *)src[i] : NULL;
	*count = k;
}

/* Topological order of g's nodes (Kahn, ties by creation order); CUDA_ERROR_INVALID_VALUE and
 * a node on a cycle when there is one. order has g->n slots. */
static CUresult topo_order(const struct sim_graph *g, unsigned int *order, struct sim_gnode **err)
{
	unsigned int n = g->n, head = 0, tail = 0;
	unsigned int *nwait = calloc(n ? n : 1, sizeof(*nwait));
	unsigned int *start = calloc(n + 1, sizeof(*start));
	unsigned int *succ = NULL, total = 0;
	CUresult rc = CUDA_SUCCESS;

	if (!nwait || !start) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	/* successor lists in one array, indexed by start[] */
	for (unsigned int i = 0; i < n; i++) {
		nwait[i] = g->nodes[i]->ndeps;
		total += g->nodes[i]->ndeps;
		for (unsigned int j = 0; j < g->nodes[i]->ndeps; j++)
			start[g->nodes[i]->deps[j]->index + 1]++;
	}
	for (unsigned int i = 0; i < n; i++)
		start[i + 1] += start[i];
	succ = calloc(total ? total : 1, sizeof(*succ));
	if (!succ) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	{
		unsigned int *fill = calloc(n ? n : 1, sizeof(*fill));

		if (!fill) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
		for (unsigned int i = 0; i < n; i++)
			for (unsigned int j = 0; j < g->nodes[i]->ndeps; j++) {
				unsigned int d = g->nodes[i]->deps[j]->index;

				succ[start[d] + fill[d]++] = i;
			}
		free(fill);
	}
	for (unsigned int i = 0; i < n; i++)
		if (!nwait[i])
			order[tail++] = i;
	while (head < tail) {
		unsigned int i = order[head++];

		for (unsigned int k = start[i]; k < start[i + 1]; k++)
			if (--nwait[succ[k]] == 0)
				order[tail++] = succ[k];
	}
	if (tail < n) {
		rc = CUDA_ERROR_INVALID_VALUE;
		for (unsigned int i = 0; i < n; i++)
			if (nwait[i]) {
				if (err)
					*err = g->nodes[i];
				break;
			}
	}
out:
	free(nwait);
	free(start);
	free(succ);
	return rc;
}

/* ------------------------------------------------------------------ execs */

static void gexec_free(struct sim_gexec *x)
{
	for (unsigned int i = 0; i < x->n; i++) {
		sim_node_body_fini(&x->nodes[i].body);
		free(x->nodes[i].deps);
	}
	free(x->nodes);
	sim_work_unref(x->last_join);
	sim_handle_remove(x);
	x->magic = 0;
	free(x);
}

static CUresult gexec_create(struct sim_graph *g, cuuint64_t flags, struct sim_gexec **out,
			     struct sim_gnode **err, CUgraphInstantiateResult *result)
{
	unsigned int *order = calloc(g->n ? g->n : 1, sizeof(*order));
	unsigned int *pos = calloc(g->n ? g->n : 1, sizeof(*pos));
	struct sim_gexec *x = calloc(1, sizeof(*x));
	CUresult rc = CUDA_SUCCESS;

	*result = CUDA_GRAPH_INSTANTIATE_ERROR;
	if (!order || !pos || !x || (g->n && !(x->nodes = calloc(g->n, sizeof(*x->nodes))))) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	sim_handle_add(x);
	x->magic = SIM_MAGIC_GEXEC;
	x->flags = flags;
	rc = topo_order(g, order, err);
	if (rc != CUDA_SUCCESS) {
		if (rc == CUDA_ERROR_INVALID_VALUE)
			*result = CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE;
		goto out;
	}
	for (unsigned int k = 0; k < g->n; k++)
		pos[order[k]] = k;
	for (unsigned int k = 0; k < g->n && rc == CUDA_SUCCESS; k++) {
		const struct sim_gnode *n = g->nodes[order[k]];
		struct sim_xnode *xn = &x->nodes[k];

		rc = sim_node_body_copy(&xn->body, &n->body);
		if (rc != CUDA_SUCCESS)
			break;
		x->n = k + 1; /* from here on gexec_free releases it */
		xn->orig = n;
		xn->orig_index = n->index;
		xn->enabled = true;
		if (n->ndeps && !(xn->deps = calloc(n->ndeps, sizeof(*xn->deps)))) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		for (unsigned int j = 0; j < n->ndeps; j++)
			xn->deps[j] = pos[n->deps[j]->index];
		xn->ndeps = n->ndeps;
	}
	if (rc == CUDA_SUCCESS) {
		x->n = g->n;
		*result = CUDA_GRAPH_INSTANTIATE_SUCCESS;
	}
out:
	free(order);
	free(pos);
	if (rc != CUDA_SUCCESS && x) {
		if (x->magic) {
			gexec_free(x);
		} else {
			free(x->nodes);
			free(x);
		}
		x = NULL;
	}
	*out = x;
	return rc;
}

/* The exec's copy of graph node h (of the instantiated graph or of the last update's). Pointers
 * are only compared: the program may have destroyed the graph since. */
static struct sim_xnode *find_xnode(struct sim_gexec *x, CUgraphNode h)
{
	const struct sim_gnode *n = (const struct sim_gnode *)h;

	if (!n)
		return NULL;
	for (unsigned int i = 0; i < x->n; i++)
		if (x->nodes[i].orig == n || x->nodes[i].alias == n)
			return &x->nodes[i];
	return NULL;
}

/* Replace an exec node's body by b (consumed) when the node type matches. */
static CUresult xnode_replace(struct sim_xnode *xn, struct sim_node_body *b)
{
	if (xn->body.type != b->type) {
		sim_node_body_fini(b);
		return CUDA_ERROR_INVALID_VALUE;
	}
	sim_node_body_fini(&xn->body);
	xn->body = *b;
	return CUDA_SUCCESS;
}

static CUresult launch(struct sim_gexec *x, struct sim_stream *s)
{
	struct sim_ctx *ctx = s->ctx;
	struct sim_work **items = NULL;
	struct sim_work *entry = NULL, *join = NULL;
	unsigned int created = 0;
	CUresult rc = CUDA_SUCCESS;

	if (s->capture)
		return sim__capture_graph_exec(s, x);
	for (unsigned int k = 0; k < x->n; k++) {
		const struct sim_node_body *b = &x->nodes[k].body;

		if ((b->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD || b->type == CU_GRAPH_NODE_TYPE_WAIT_EVENT) &&
		    !sim_event_from((CUevent)(void *)b->event))
			return CUDA_ERROR_INVALID_HANDLE; /* the event was destroyed */
	}
	items = calloc(x->n ? x->n : 1, sizeof(*items));
	entry = sim_work_new(&sim_nop_ops, NULL, ctx);
	join = sim_work_new(&sim_nop_ops, NULL, ctx);
	if (!items || !entry || !join) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_unref;
	}
	/* every item before anything is submitted, so a failure leaves the stream untouched */
	for (created = 0; created < x->n; created++) {
		const struct sim_xnode *xn = &x->nodes[created];
		const struct sim_node_body *b = &xn->body;
		const struct sim_work_ops *ops = &sim_nop_ops;
		void *payload = NULL;

		if (xn->enabled && b->type == CU_GRAPH_NODE_TYPE_EVENT_RECORD) {
			ops = &sim_event_record_ops;
			payload = b->event;
		} else if (xn->enabled && b->payload) {
			ops = b->ops;
			payload = payload_clone(b->ops, b->payload);
			if (!payload) {
				rc = CUDA_ERROR_OUT_OF_MEMORY;
				goto out_unref;
			}
		}
		items[created] = sim_work_new(ops, payload, ctx);
		if (!items[created]) {
			payload_free(ops, ops == &sim_event_record_ops ? NULL : payload);
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out_unref;
		}
		items[created]->in_graph = true;
	}
	sim_work_ref(entry);
	sim_work_dep(entry, x->last_join);
	rc = sim_stream_submit(s, entry);
	if (rc != CUDA_SUCCESS)
		goto out_unref;
	for (unsigned int k = 0; k < x->n; k++) {
		const struct sim_xnode *xn = &x->nodes[k];
		struct sim_event *ev = xn->body.event;

		if (!xn->ndeps)
			sim_work_dep(items[k], entry);
		for (unsigned int j = 0; j < xn->ndeps; j++)
			sim_work_dep(items[k], items[xn->deps[j]]);
		/* event nodes act at launch time, in topological order, like the driver's */
		if (xn->enabled && xn->body.type == CU_GRAPH_NODE_TYPE_WAIT_EVENT)
			sim_work_dep(items[k], ev->rec);
		if (xn->enabled && xn->body.type == CU_GRAPH_NODE_TYPE_EVENT_RECORD) {
			sim_work_ref(items[k]);
			sim_work_unref(ev->rec);
			ev->rec = items[k];
			free(ev->capture_nodes); /* this record supersedes one made in a capture */
			ev->capture_nodes = NULL;
		}
		sim_work_dep(join, items[k]);
		sim_stats_count("graph_nodes", xn->enabled ? node_type_name(xn->body.type) : "empty", 1);
	}
	/* the device's front end hands a graph's nodes out one at a time (in topological order),
	 * each taking what an empty node takes: independent branches overlap, but no faster than
	 * the nodes can be dispatched (cost.c, dev_graph_node_gap_ns) */
	for (unsigned int k = 0; k < x->n; k++) {
		items[k]->submit_ns = entry->submit_ns + (uint64_t)k * sim_cost.dev_graph_node_gap_ns;
		sim_sched_add(items[k]);
	}
	created = 0;
	sim_work_unref(x->last_join);
	sim_work_ref(join);
	x->last_join = join;
	rc = sim_stream_submit(s, join);
	join = NULL;
	x->launches++;
	sim_stats_graph_launch(x->n);
	sim_host_charge(sim_cost.host_graph_launch_ns + (uint64_t)x->n * sim_cost.host_graph_node_ns);
	sim_work_unref(entry);
	entry = NULL;

out_unref:
	for (unsigned int k = 0; k < created; k++)
		sim_work_unref(items[k]);
	sim_work_unref(join);
	sim_work_unref(entry);
	free(items);
	return rc;
}

/* ------------------------------------------------------------------ update */

/* Whether exec x can take g's parameters: same nodes (by creation position), same types, same
 * edges, kernel nodes the same function. Fills info on failure. */
static bool update_matches(const struct sim_gexec *x, const struct sim_graph *g, unsigned int *map,
			   CUgraphExecUpdateResultInfo *info)
{
	info->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
	info->errorNode = NULL;
	info->errorFromNode = NULL;
	if (x->n != g->n) {
		info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
		return false;
	}
	for (unsigned int k = 0; k < x->n; k++)
		map[x->nodes[k].orig_index] = k;
	for (unsigned int i = 0; i < g->n; i++) {
		const struct sim_gnode *n = g->nodes[i];
		const struct sim_xnode *xn = &x->nodes[map[i]];

		info->errorNode = (CUgraphNode)(void *)n;
		if (n->body.type != xn->body.type) {
			info->result = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
			return false;
		}
		if (n->ndeps != xn->ndeps) {
			info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
			return false;
		}
		for (unsigned int j = 0; j < n->ndeps; j++) {
			bool found = false;

			for (unsigned int m = 0; m < xn->ndeps && !found; m++)
				found = x->nodes[xn->deps[m]].orig_index == n->deps[j]->index;
			if (!found) {
				info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
				info->errorFromNode = (CUgraphNode)(void *)n->deps[j];
				return false;
			}
		}
		if (n->body.type == CU_GRAPH_NODE_TYPE_KERNEL &&
		    ((const struct sim_kernel_call *)n->body.payload)->fn !=
			    ((const struct sim_kernel_call *)xn->body.payload)->fn) {
			info->result = CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE;
			return false;
		}
	}
	info->errorNode = NULL;
	return true;
}

static CUresult exec_update(struct sim_gexec *x, struct sim_graph *g, CUgraphExecUpdateResultInfo *info)
{
	unsigned int *map = calloc(g->n ? g->n : 1, sizeof(*map));
	struct sim_node_body *bodies = calloc(g->n ? g->n : 1, sizeof(*bodies));
	unsigned int copied = 0;
	CUresult rc = CUDA_SUCCESS;

	if (!map || !bodies) {
		info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	sim_cost_graph_exec_update(g->n); /* the driver compares every node, updated or not */
	if (!update_matches(x, g, map, info)) {
		rc = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
		goto out;
	}
	for (copied = 0; copied < g->n; copied++) {
		rc = sim_node_body_copy(&bodies[copied], &g->nodes[copied]->body);
		if (rc != CUDA_SUCCESS) {
			info->result = CU_GRAPH_EXEC_UPDATE_ERROR;
			goto out;
		}
	}
	for (unsigned int i = 0; i < g->n; i++) {
		struct sim_xnode *xn = &x->nodes[map[i]];

		sim_node_body_fini(&xn->body);
		xn->body = bodies[i];
		xn->alias = g->nodes[i];
	}
	copied = 0;
out:
	for (unsigned int i = 0; i < copied; i++)
		sim_node_body_fini(&bodies[i]);
	free(bodies);
	free(map);
	return rc;
}

/* ------------------------------------------------------------------ entry points: graphs */

CUresult sim_api_cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	struct sim_graph *g;
	CUresult rc;

	rc = need_init();
	if (rc == CUDA_SUCCESS && (!phGraph || flags))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS) {
		g = sim_graph_new();
		if (g)
			*phGraph = (CUgraph)(void *)g;
		else
			rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	return rc;
}

CUresult sim_api_cuGraphDestroy(CUgraph hGraph)
{
	struct sim_graph *g;
	CUresult rc = CUDA_SUCCESS;

	g = sim_graph_from(hGraph);
	if (!g)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (sim__capture_owns_graph(g))
		rc = CUDA_ERROR_ILLEGAL_STATE;
	else
		sim_graph_free(g);
	return rc;
}

CUresult sim_api_cuGraphClone(CUgraph *phGraphClone, CUgraph originalGraph)
{
	struct sim_graph *g, *c = NULL;
	CUresult rc = CUDA_SUCCESS;

	g = sim_graph_from(originalGraph);
	if (!g || !phGraphClone)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = graph_clone(g, &c);
	if (rc == CUDA_SUCCESS)
		*phGraphClone = (CUgraph)(void *)c;
	return rc;
}

CUresult sim_api_cuGraphNodeFindInClone(CUgraphNode *phNode, CUgraphNode hOriginalNode, CUgraph hClonedGraph)
{
	struct sim_graph *c;
	CUresult rc = CUDA_SUCCESS;

	c = sim_graph_from(hClonedGraph);
	rc = CUDA_ERROR_INVALID_VALUE;
	if (c && phNode && hOriginalNode)
		for (unsigned int i = 0; i < c->n; i++)
			if (c->nodes[i]->clone_of == (const struct sim_gnode *)hOriginalNode) {
				*phNode = (CUgraphNode)(void *)c->nodes[i];
				rc = CUDA_SUCCESS;
				break;
			}
	return rc;
}

CUresult sim_api_cuGraphDestroyNode(CUgraphNode hNode)
{
	struct sim_gnode *n;
	CUresult rc = CUDA_SUCCESS;

	n = sim_gnode_from(hNode);
	if (!n)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (sim__capture_owns_graph(n->graph))
		rc = CUDA_ERROR_ILLEGAL_STATE;
	else
		remove_node(n->graph, n);
	return rc;
}

/* ------------------------------------------------------------------ entry points: adding nodes */

CUresult sim_api_cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
					 size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct sim_node_body b;
	CUresult rc;

	rc = sim_graph_from(hGraph) ? kernel_body_v2(&b, nodeParams) : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = add_node(phGraphNode, hGraph, dependencies, numDependencies, &b);
	return rc;
}

/* The CUDA 10 names with the v1 parameter structs; cuda.h maps their C names to the _v2
 * symbols, so they are defined under private names exported with an asm label. */
CUresult sim_api_cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph,
				      const CUgraphNode *dependencies, size_t numDependencies,
				      const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	struct sim_node_body b;
	CUresult rc;

	rc = sim_graph_from(hGraph) ? kernel_body_v1(&b, nodeParams) : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = add_node(phGraphNode, hGraph, dependencies, numDependencies, &b);
	return rc;
}

CUresult sim_api_cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				      size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
	struct sim_node_body b;
	CUresult rc;

	rc = sim_graph_from(hGraph) ? check_ctx_arg(ctx) : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = copy_body(&b, copyParams);
	if (rc == CUDA_SUCCESS)
		rc = add_node(phGraphNode, hGraph, dependencies, numDependencies, &b);
	return rc;
}

CUresult sim_api_cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				      size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams,
				      CUcontext ctx)
{
	struct sim_node_body b;
	CUresult rc;

	rc = sim_graph_from(hGraph) ? check_ctx_arg(ctx) : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = memset_body(&b, memsetParams);
	if (rc == CUDA_SUCCESS)
		rc = add_node(phGraphNode, hGraph, dependencies, numDependencies, &b);
	return rc;
}

CUresult sim_api_cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				    size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	struct sim_node_body b;
	CUresult rc;

	rc = sim_graph_from(hGraph) ? host_body(&b, nodeParams) : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = add_node(phGraphNode, hGraph, dependencies, numDependencies, &b);
	return rc;
}

CUresult sim_api_cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					   const CUgraphNode *dependencies, size_t numDependencies, CUevent event)
{
	struct sim_node_body b;
	CUresult rc;

	rc = sim_graph_from(hGraph) ? event_body(&b, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event)
				    : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = add_node(phGraphNode, hGraph, dependencies, numDependencies, &b);
	return rc;
}

CUresult sim_api_cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
					 size_t numDependencies, CUevent event)
{
	struct sim_node_body b;
	CUresult rc;

	rc = sim_graph_from(hGraph) ? event_body(&b, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event)
				    : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = add_node(phGraphNode, hGraph, dependencies, numDependencies, &b);
	return rc;
}

CUresult sim_api_cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				     size_t numDependencies)
{
	struct sim_node_body b;
	CUresult rc = CUDA_SUCCESS;

	sim_node_body_empty(&b);
	rc = add_node(phGraphNode, hGraph, dependencies, numDependencies, &b);
	return rc;
}

/* A body from the generic CUgraphNodeParams (cuGraphAddNode, cuGraph*NodeSetParams). */
static CUresult generic_body(struct sim_node_body *b, const CUgraphNodeParams *p)
{
	CUDA_MEMSET_NODE_PARAMS ms;
	CUDA_HOST_NODE_PARAMS host;
	CUresult rc;

	memset(b, 0, sizeof(*b));
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	switch (p->type) {
	case CU_GRAPH_NODE_TYPE_KERNEL:
		return kernel_body(b, p->kernel.func, p->kernel.kern, p->kernel.gridDimX, p->kernel.gridDimY,
				   p->kernel.gridDimZ, p->kernel.blockDimX, p->kernel.blockDimY,
				   p->kernel.blockDimZ, p->kernel.sharedMemBytes, p->kernel.kernelParams,
				   p->kernel.extra);
	case CU_GRAPH_NODE_TYPE_MEMCPY:
		rc = check_ctx_arg(p->memcpy.copyCtx);
		return rc != CUDA_SUCCESS ? rc : copy_body(b, &p->memcpy.copyParams);
	case CU_GRAPH_NODE_TYPE_MEMSET:
		rc = check_ctx_arg(p->memset.ctx);
		if (rc != CUDA_SUCCESS)
			return rc;
		ms.dst = p->memset.dst;
		ms.pitch = p->memset.pitch;
		ms.value = p->memset.value;
		ms.elementSize = p->memset.elementSize;
		ms.width = p->memset.width;
		ms.height = p->memset.height;
		return memset_body(b, &ms);
	case CU_GRAPH_NODE_TYPE_HOST:
		host.fn = p->host.fn;
		host.userData = p->host.userData;
		return host_body(b, &host);
	case CU_GRAPH_NODE_TYPE_EMPTY:
		sim_node_body_empty(b);
		return CUDA_SUCCESS;
	case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
		return event_body(b, CU_GRAPH_NODE_TYPE_WAIT_EVENT, p->eventWait.event);
	case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
		return event_body(b, CU_GRAPH_NODE_TYPE_EVENT_RECORD, p->eventRecord.event);
	default:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
}

static bool edge_data_is_default(const CUgraphEdgeData *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++)
		if (e[i].from_port || e[i].to_port || e[i].type)
			return false;
	return true;
}

CUresult sim_api_cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				   const CUgraphEdgeData *dependencyData, size_t numDependencies,
				   CUgraphNodeParams *nodeParams)
{
	struct sim_node_body b;
	CUresult rc;

	rc = sim_graph_from(hGraph) ? generic_body(&b, nodeParams) : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS && !edge_data_is_default(dependencyData, numDependencies)) {
		sim_node_body_fini(&b);
		rc = CUDA_ERROR_NOT_SUPPORTED;
	}
	if (rc == CUDA_SUCCESS)
		rc = add_node(phGraphNode, hGraph, dependencies, numDependencies, &b);
	return rc;
}

CUresult sim_api_cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
				size_t numDependencies, CUgraphNodeParams *nodeParams)
{
	struct sim_node_body b;
	CUresult rc;

	rc = sim_graph_from(hGraph) ? generic_body(&b, nodeParams) : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = add_node(phGraphNode, hGraph, dependencies, numDependencies, &b);
	return rc;
}

/* ------------------------------------------------------------------ entry points: edges */

static CUresult add_edges(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, size_t n)
{
	struct sim_graph *g = sim_graph_from(hGraph);
	CUresult rc = CUDA_SUCCESS;

	if (!g || (n && (!from || !to)))
		return CUDA_ERROR_INVALID_VALUE;
	/* check every edge first: CUDA adds all of them or none */
	for (size_t i = 0; i < n; i++) {
		struct sim_gnode *f = sim_gnode_from(from[i]), *t = sim_gnode_from(to[i]);

		if (!f || !t || f == t || f->graph != g || t->graph != g || has_dep(t, f))
			return CUDA_ERROR_INVALID_VALUE;
		for (size_t j = 0; j < i; j++)
			if (from[j] == from[i] && to[j] == to[i])
				return CUDA_ERROR_INVALID_VALUE;
	}
	for (size_t i = 0; i < n && rc == CUDA_SUCCESS; i++)
		rc = add_dep(sim_gnode_from(to[i]), sim_gnode_from(from[i]));
	return rc;
}

static CUresult remove_edges(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to, size_t n)
{
	struct sim_graph *g = sim_graph_from(hGraph);

	if (!g || (n && (!from || !to)))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < n; i++) {
		struct sim_gnode *f = sim_gnode_from(from[i]), *t = sim_gnode_from(to[i]);

		if (!f || !t || f->graph != g || t->graph != g || !has_dep(t, f))
			return CUDA_ERROR_INVALID_VALUE;
	}
	for (size_t i = 0; i < n; i++) {
		struct sim_gnode *f = sim_gnode_from(from[i]), *t = sim_gnode_from(to[i]);
		unsigned int k = 0;

		for (unsigned int j = 0; j < t->ndeps; j++)
			if (t->deps[j] != f)
				t->deps[k++] = t->deps[j];
		t->ndeps = k;
	}
	return CUDA_SUCCESS;
}

CUresult sim_api_cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
					   const CUgraphEdgeData *edgeData, size_t numDependencies)
{
	return edge_data_is_default(edgeData, numDependencies) ? add_edges(hGraph, from, to, numDependencies)
							       : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult sim_api_cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
					size_t numDependencies)
{
	return add_edges(hGraph, from, to, numDependencies);
}

CUresult sim_api_cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
					      const CUgraphEdgeData *edgeData, size_t numDependencies)
{
	return edge_data_is_default(edgeData, numDependencies) ? remove_edges(hGraph, from, to, numDependencies)
							       : CUDA_ERROR_INVALID_VALUE;
}

CUresult sim_api_cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
					   size_t numDependencies)
{
	return remove_edges(hGraph, from, to, numDependencies);
}

/* ------------------------------------------------------------------ entry points: queries */

CUresult sim_api_cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
	struct sim_graph *g;
	CUresult rc = CUDA_SUCCESS;

	g = sim_graph_from(hGraph);
	if (g && numNodes)
		return_nodes(g->nodes, g->n, nodes, numNodes);
	else
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

CUresult sim_api_cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes)
{
	struct sim_graph *g;
	struct sim_gnode **roots = NULL;
	size_t n = 0;
	CUresult rc = CUDA_SUCCESS;

	g = sim_graph_from(hGraph);
	if (!g || !numRootNodes) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	roots = calloc(g->n ? g->n : 1, sizeof(*roots));
	if (!roots) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	for (unsigned int i = 0; i < g->n; i++)
		if (!g->nodes[i]->ndeps)
			roots[n++] = g->nodes[i];
	return_nodes(roots, n, rootNodes, numRootNodes);
out:
	free(roots);
	return rc;
}

static CUresult get_edges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *edgeData,
			  size_t *numEdges)
{
	struct sim_graph *g = sim_graph_from(hGraph);
	size_t k = 0, cap;

	if (!g || !numEdges || (!from) != (!to) || (edgeData && !from))
		return CUDA_ERROR_INVALID_VALUE;
	cap = *numEdges;
	for (unsigned int i = 0; i < g->n; i++)
		for (unsigned int j = 0; j < g->nodes[i]->ndeps; j++, k++)
			if (from && k < cap) {
				from[k] = (CUgraphNode)(void *)g->nodes[i]->deps[j];
				to[k] = (CUgraphNode)(void *)g->nodes[i];
				if (edgeData)
					memset(&edgeData[k], 0, sizeof(edgeData[k]));
			}
	if (from)
		for (size_t i = k; i < cap; i++) {
			from[i] = NULL;
			to[i] = NULL;
		}
	*numEdges = from && k > cap ? cap : k;
	return CUDA_SUCCESS;
}

CUresult sim_api_cuGraphGetEdges_v2(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *edgeData,
				    size_t *numEdges)
{
	return get_edges(hGraph, from, to, edgeData, numEdges);
}

CUresult sim_api_cuGraphGetEdges(CUgraph hGraph, CUgraphNode *from, CUgraphNode *to, size_t *numEdges)
{
	return get_edges(hGraph, from, to, NULL, numEdges);
}

static CUresult node_deps(CUgraphNode hNode, bool dependents, CUgraphNode *out, CUgraphEdgeData *edgeData,
			  size_t *count)
{
	struct sim_gnode *n = sim_gnode_from(hNode);
	struct sim_gnode **list;
	size_t k = 0;

	if (!n || !count || (edgeData && !out))
		return CUDA_ERROR_INVALID_VALUE;
	list = calloc(n->graph->n ? n->graph->n : 1, sizeof(*list));
	if (!list)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (dependents) {
		for (unsigned int i = 0; i < n->graph->n; i++)
			if (has_dep(n->graph->nodes[i], n))
				list[k++] = n->graph->nodes[i];
	} else {
		for (unsigned int i = 0; i < n->ndeps; i++)
			list[k++] = n->deps[i];
	}
	if (edgeData)
		for (size_t i = 0; i < *count; i++)
			memset(&edgeData[i], 0, sizeof(edgeData[i]));
	return_nodes(list, k, out, count);
	free(list);
	return CUDA_SUCCESS;
}

CUresult sim_api_cuGraphNodeGetDependencies_v2(CUgraphNode hNode, CUgraphNode *dependencies, CUgraphEdgeData *edgeData,
					       size_t *numDependencies)
{
	return node_deps(hNode, false, dependencies, edgeData, numDependencies);
}

CUresult sim_api_cuGraphNodeGetDependencies(CUgraphNode hNode, CUgraphNode *dependencies,
					    size_t *numDependencies)
{
	return node_deps(hNode, false, dependencies, NULL, numDependencies);
}

CUresult sim_api_cuGraphNodeGetDependentNodes_v2(CUgraphNode hNode, CUgraphNode *dependentNodes,
						 CUgraphEdgeData *edgeData, size_t *numDependentNodes)
{
	return node_deps(hNode, true, dependentNodes, edgeData, numDependentNodes);
}

CUresult sim_api_cuGraphNodeGetDependentNodes(CUgraphNode hNode, CUgraphNode *dependentNodes,
					      size_t *numDependentNodes)
{
	return node_deps(hNode, true, dependentNodes, NULL, numDependentNodes);
}

CUresult sim_api_cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType *type)
{
	struct sim_gnode *n;
	CUresult rc = CUDA_SUCCESS;

	n = sim_gnode_from(hNode);
	if (n && type)
		*type = n->body.type;
	else
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

/* ------------------------------------------------------------------ entry points: node parameters */

/* The node of the given type behind a handle, or NULL. */
static struct sim_gnode *typed_node(CUgraphNode h, CUgraphNodeType type)
{
	struct sim_gnode *n = sim_gnode_from(h);

	return n && n->body.type == type ? n : NULL;
}

/* Replace a graph node's body by b (consumed). */
static void gnode_replace(struct sim_gnode *n, struct sim_node_body *b)
{
	sim_node_body_fini(&n->body);
	n->body = *b;
}

/* What the kernel-node getters answer. The parameter values themselves are not returned:
 * kernelParams and extra are NULL, as the payload keeps only the packed parameter bytes. */
static void kernel_params_out(const struct sim_gnode *n, CUDA_KERNEL_NODE_PARAMS *p)
{
	const struct sim_kernel_call *k = n->body.payload;

	memset(p, 0, sizeof(*p));
	p->func = n->body.func;
	p->kern = n->body.kern;
	if (!p->func && !p->kern)
		p->func = (CUfunction)(void *)k->fn;
	p->gridDimX = k->grid.x;
	p->gridDimY = k->grid.y;
	p->gridDimZ = k->grid.z;
	p->blockDimX = k->block.x;
	p->blockDimY = k->block.y;
	p->blockDimZ = k->block.z;
	p->sharedMemBytes = k->shared_bytes;
}

CUresult sim_api_cuGraphKernelNodeGetParams_v2(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct sim_gnode *n;
	CUresult rc = CUDA_SUCCESS;

	n = typed_node(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
	if (n && nodeParams)
		kernel_params_out(n, nodeParams);
	else
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

CUresult sim_api_cuGraphKernelNodeGetParams(CUgraphNode hNode, CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	struct sim_gnode *n;
	CUDA_KERNEL_NODE_PARAMS p;
	CUresult rc = CUDA_SUCCESS;

	n = typed_node(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
	if (n && nodeParams) {
		kernel_params_out(n, &p);
		/* the v1 struct is the v2 struct without its last two fields */
		memcpy(nodeParams, &p, sizeof(*nodeParams));
		if (!p.func)
			nodeParams->func = (CUfunction)(void *)p.kern;
	} else {
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	return rc;
}

CUresult sim_api_cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct sim_gnode *n;
	struct sim_node_body b;
	CUresult rc = CUDA_SUCCESS;

	n = typed_node(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
	rc = n ? kernel_body_v2(&b, nodeParams) : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		gnode_replace(n, &b);
	return rc;
}

CUresult sim_api_cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	struct sim_gnode *n;
	struct sim_node_body b;
	CUresult rc = CUDA_SUCCESS;

	n = typed_node(hNode, CU_GRAPH_NODE_TYPE_KERNEL);
	rc = n ? kernel_body_v1(&b, nodeParams) : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		gnode_replace(n, &b);
	return rc;
}

CUresult sim_api_cuGraphMemcpyNodeGetParams(CUgraphNode hNode, CUDA_MEMCPY3D *nodeParams)
{
	struct sim_gnode *n;
	CUresult rc = CUDA_SUCCESS;

	n = typed_node(hNode, CU_GRAPH_NODE_TYPE_MEMCPY);
	if (n && nodeParams)
		*nodeParams = n->body.copy;
	else
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

CUresult sim_api_cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams)
{
	struct sim_gnode *n;
	struct sim_node_body b;
	CUresult rc = CUDA_SUCCESS;

	n = typed_node(hNode, CU_GRAPH_NODE_TYPE_MEMCPY);
	rc = n ? copy_body(&b, nodeParams) : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		gnode_replace(n, &b);
	return rc;
}

CUresult sim_api_cuGraphMemsetNodeGetParams(CUgraphNode hNode, CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
	struct sim_gnode *n;
	CUresult rc = CUDA_SUCCESS;

	n = typed_node(hNode, CU_GRAPH_NODE_TYPE_MEMSET);
	if (n && nodeParams)
		*nodeParams = n->body.memset;
	else
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

CUresult sim_api_cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
	struct sim_gnode *n;
	struct sim_node_body b;
	CUresult rc = CUDA_SUCCESS;

	n = typed_node(hNode, CU_GRAPH_NODE_TYPE_MEMSET);
	rc = n ? memset_body(&b, nodeParams) : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		gnode_replace(n, &b);
	return rc;
}

CUresult sim_api_cuGraphHostNodeGetParams(CUgraphNode hNode, CUDA_HOST_NODE_PARAMS *nodeParams)
{
	struct sim_gnode *n;
	CUresult rc = CUDA_SUCCESS;

	n = typed_node(hNode, CU_GRAPH_NODE_TYPE_HOST);
	if (n && nodeParams) {
		const struct sim_host_fn *h = n->body.payload;

		nodeParams->fn = h->fn;
		nodeParams->userData = h->data;
	} else {
		rc = CUDA_ERROR_INVALID_VALUE;
	}
	return rc;
}

CUresult sim_api_cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	struct sim_gnode *n;
	struct sim_node_body b;
	CUresult rc = CUDA_SUCCESS;

	n = typed_node(hNode, CU_GRAPH_NODE_TYPE_HOST);
	rc = n ? host_body(&b, nodeParams) : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		gnode_replace(n, &b);
	return rc;
}

static CUresult event_node_get(CUgraphNode hNode, CUgraphNodeType type, CUevent *out)
{
	struct sim_gnode *n = typed_node(hNode, type);

	if (!n || !out)
		return CUDA_ERROR_INVALID_VALUE;
	*out = (CUevent)(void *)n->body.event;
	return CUDA_SUCCESS;
}

static CUresult event_node_set(CUgraphNode hNode, CUgraphNodeType type, CUevent ev)
{
	struct sim_gnode *n = typed_node(hNode, type);
	struct sim_node_body b;
	CUresult rc = n ? event_body(&b, type, ev) : CUDA_ERROR_INVALID_VALUE;

	if (rc == CUDA_SUCCESS)
		gnode_replace(n, &b);
	return rc;
}

CUresult sim_api_cuGraphEventRecordNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
	return event_node_get(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event_out);
}

CUresult sim_api_cuGraphEventRecordNodeSetEvent(CUgraphNode hNode, CUevent event)
{
	return event_node_set(hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event);
}

CUresult sim_api_cuGraphEventWaitNodeGetEvent(CUgraphNode hNode, CUevent *event_out)
{
	return event_node_get(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event_out);
}

CUresult sim_api_cuGraphEventWaitNodeSetEvent(CUgraphNode hNode, CUevent event)
{
	return event_node_set(hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event);
}

CUresult sim_api_cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams *nodeParams)
{
	struct sim_gnode *n;
	struct sim_node_body b;
	CUresult rc = CUDA_SUCCESS;

	n = sim_gnode_from(hNode);
	rc = n && nodeParams && nodeParams->type == n->body.type ? generic_body(&b, nodeParams)
								 : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		gnode_replace(n, &b);
	return rc;
}

/* ------------------------------------------------------------------ entry points: execs */

static CUresult instantiate(CUgraphExec *phGraphExec, CUgraph hGraph, cuuint64_t flags,
			    struct sim_gnode **err, CUgraphInstantiateResult *result)
{
	struct sim_graph *g = sim_graph_from(hGraph);
	struct sim_gexec *x = NULL;
	CUresult rc = need_init();

	*result = CUDA_GRAPH_INSTANTIATE_ERROR;
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!g || !phGraphExec)
		return CUDA_ERROR_INVALID_VALUE;
	rc = gexec_create(g, flags, &x, err, result);
	if (rc == CUDA_SUCCESS)
		*phGraphExec = (CUgraphExec)(void *)x;
	return rc;
}

CUresult sim_api_cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
	CUgraphInstantiateResult result;
	CUresult rc;

	rc = instantiate(phGraphExec, hGraph, flags, NULL, &result);
	return rc;
}

static CUresult instantiate_with_params(CUgraphExec *phGraphExec, CUgraph hGraph,
					CUDA_GRAPH_INSTANTIATE_PARAMS *p, enum sim_pt pt)
{
	struct sim_gnode *err = NULL;
	struct sim_stream *s;
	CUgraphInstantiateResult result;
	CUresult rc;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) {
		rc = sim_stream_resolve(p->hUploadStream, pt, &s);
		if (rc != CUDA_SUCCESS)
			return rc;
	}
	rc = instantiate(phGraphExec, hGraph, p->flags, &err, &result);
	p->result_out = result;
	p->hErrNode_out = (CUgraphNode)(void *)err;
	return rc;
}

CUresult sim_api_cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
					      CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	return instantiate_with_params(phGraphExec, hGraph, instantiateParams, SIM_PT_LEGACY);
}

CUresult sim_api_cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
						   CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
	return instantiate_with_params(phGraphExec, hGraph, instantiateParams, SIM_PT_PER_THREAD);
}

/* cuGraphInstantiate before CUDA 12: an error node and a log buffer instead of flags. */
static CUresult instantiate_v1(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
			       char *logBuffer, size_t bufferSize)
{
	struct sim_gnode *err = NULL;
	CUgraphInstantiateResult result;
	CUresult rc = instantiate(phGraphExec, hGraph, 0, &err, &result);

	if (phErrorNode)
		*phErrorNode = (CUgraphNode)(void *)err;
	if (logBuffer && bufferSize)
		snprintf(logBuffer, bufferSize, "%s",
			 result == CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE ? "graph has a cycle" : "");
	return rc;
}

CUresult sim_api_cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
				    char *logBuffer, size_t bufferSize)
{
	return instantiate_v1(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

CUresult sim_api_cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
				       char *logBuffer, size_t bufferSize)
{
	return instantiate_v1(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}

CUresult sim_api_cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	struct sim_gexec *x;
	CUresult rc = CUDA_SUCCESS;

	x = sim_gexec_from(hGraphExec);
	if (x)
		gexec_free(x); /* launched work holds its own copies */
	else
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

CUresult sim_api_cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t *flags)
{
	struct sim_gexec *x;
	CUresult rc = CUDA_SUCCESS;

	x = sim_gexec_from(hGraphExec);
	if (x && flags)
		*flags = x->flags;
	else
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

static CUresult upload(CUgraphExec hGraphExec, CUstream hStream, enum sim_pt pt)
{
	struct sim_stream *s;
	CUresult rc;

	if (!sim_gexec_from(hGraphExec))
		return CUDA_ERROR_INVALID_VALUE;
	rc = sim_stream_resolve(hStream, pt, &s);
	/* nothing to move: the software device's "device memory" is already where it runs */
	return rc;
}

CUresult sim_api_cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	return upload(hGraphExec, hStream, SIM_PT_LEGACY);
}

CUresult sim_api_cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return upload(hGraphExec, hStream, SIM_PT_PER_THREAD);
}

static CUresult launch_entry(CUgraphExec hGraphExec, CUstream hStream, enum sim_pt pt)
{
	struct sim_gexec *x = sim_gexec_from(hGraphExec);
	struct sim_stream *s;
	CUresult rc;

	if (!x)
		return CUDA_ERROR_INVALID_VALUE;
	rc = sim_stream_resolve(hStream, pt, &s);
	if (rc == CUDA_SUCCESS)
		rc = launch(x, s);
	return rc;
}

CUresult sim_api_cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	return launch_entry(hGraphExec, hStream, SIM_PT_LEGACY);
}

CUresult sim_api_cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return launch_entry(hGraphExec, hStream, SIM_PT_PER_THREAD);
}

/* ------------------------------------------------------------------ entry points: exec parameters */

/* Resolve (exec, node) and check the exec node's type. */
static CUresult exec_node(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeType type,
			  struct sim_xnode **out)
{
	struct sim_gexec *x = sim_gexec_from(hGraphExec);
	struct sim_xnode *xn;

	if (!x || !hNode)
		return CUDA_ERROR_INVALID_VALUE;
	xn = find_xnode(x, hNode);
	if (!xn || xn->body.type != type)
		return CUDA_ERROR_INVALID_VALUE;
	*out = xn;
	sim_cost_exec_update(); /* every per-node exec update comes through here */
	return CUDA_SUCCESS;
}

CUresult sim_api_cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
						   const CUDA_KERNEL_NODE_PARAMS *nodeParams)
{
	struct sim_xnode *xn;
	struct sim_node_body b;
	CUresult rc;

	rc = exec_node(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_KERNEL, &xn);
	if (rc == CUDA_SUCCESS)
		rc = kernel_body_v2(&b, nodeParams);
	if (rc == CUDA_SUCCESS)
		rc = xnode_replace(xn, &b);
	return rc;
}

CUresult sim_api_cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
	struct sim_xnode *xn;
	struct sim_node_body b;
	CUresult rc;

	rc = exec_node(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_KERNEL, &xn);
	if (rc == CUDA_SUCCESS)
		rc = kernel_body_v1(&b, nodeParams);
	if (rc == CUDA_SUCCESS)
		rc = xnode_replace(xn, &b);
	return rc;
}

CUresult sim_api_cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
	struct sim_xnode *xn;
	struct sim_node_body b;
	CUresult rc;

	rc = exec_node(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_MEMCPY, &xn);
	if (rc == CUDA_SUCCESS)
		rc = check_ctx_arg(ctx);
	if (rc == CUDA_SUCCESS)
		rc = copy_body(&b, copyParams);
	if (rc == CUDA_SUCCESS)
		rc = xnode_replace(xn, &b);
	return rc;
}

CUresult sim_api_cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
						const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
	struct sim_xnode *xn;
	struct sim_node_body b;
	CUresult rc;

	rc = exec_node(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_MEMSET, &xn);
	if (rc == CUDA_SUCCESS)
		rc = check_ctx_arg(ctx);
	if (rc == CUDA_SUCCESS)
		rc = memset_body(&b, memsetParams);
	if (rc == CUDA_SUCCESS)
		rc = xnode_replace(xn, &b);
	return rc;
}

CUresult sim_api_cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
					      const CUDA_HOST_NODE_PARAMS *nodeParams)
{
	struct sim_xnode *xn;
	struct sim_node_body b;
	CUresult rc;

	rc = exec_node(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_HOST, &xn);
	if (rc == CUDA_SUCCESS)
		rc = host_body(&b, nodeParams);
	if (rc == CUDA_SUCCESS)
		rc = xnode_replace(xn, &b);
	return rc;
}

static CUresult exec_event_set(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeType type, CUevent ev)
{
	struct sim_xnode *xn;
	struct sim_node_body b;
	CUresult rc = exec_node(hGraphExec, hNode, type, &xn);

	if (rc == CUDA_SUCCESS)
		rc = event_body(&b, type, ev);
	if (rc == CUDA_SUCCESS)
		rc = xnode_replace(xn, &b);
	return rc;
}

CUresult sim_api_cuGraphExecEventRecordNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event)
{
	return exec_event_set(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_EVENT_RECORD, event);
}

CUresult sim_api_cuGraphExecEventWaitNodeSetEvent(CUgraphExec hGraphExec, CUgraphNode hNode, CUevent event)
{
	return exec_event_set(hGraphExec, hNode, CU_GRAPH_NODE_TYPE_WAIT_EVENT, event);
}

CUresult sim_api_cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams *nodeParams)
{
	struct sim_xnode *xn;
	struct sim_node_body b;
	CUresult rc;

	rc = nodeParams ? exec_node(hGraphExec, hNode, nodeParams->type, &xn) : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = generic_body(&b, nodeParams);
	if (rc == CUDA_SUCCESS)
		rc = xnode_replace(xn, &b);
	return rc;
}

CUresult sim_api_cuGraphNodeSetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int isEnabled)
{
	struct sim_gexec *x;
	struct sim_xnode *xn = NULL;
	CUresult rc = CUDA_SUCCESS;

	x = sim_gexec_from(hGraphExec);
	if (x)
		xn = find_xnode(x, hNode);
	if (xn)
		xn->enabled = isEnabled != 0;
	else
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

CUresult sim_api_cuGraphNodeGetEnabled(CUgraphExec hGraphExec, CUgraphNode hNode, unsigned int *isEnabled)
{
	struct sim_gexec *x;
	struct sim_xnode *xn = NULL;
	CUresult rc = CUDA_SUCCESS;

	x = sim_gexec_from(hGraphExec);
	if (x)
		xn = find_xnode(x, hNode);
	if (xn && isEnabled)
		*isEnabled = xn->enabled;
	else
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

CUresult sim_api_cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo)
{
	struct sim_gexec *x;
	struct sim_graph *g;
	CUresult rc = CUDA_SUCCESS;

	x = sim_gexec_from(hGraphExec);
	g = sim_graph_from(hGraph);
	if (!x || !g || !resultInfo) {
		if (resultInfo) {
			resultInfo->result = CU_GRAPH_EXEC_UPDATE_ERROR;
			resultInfo->errorNode = NULL;
			resultInfo->errorFromNode = NULL;
		}
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		rc = exec_update(x, g, resultInfo);
	}
	return rc;
}

CUresult sim_api_cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
				   CUgraphExecUpdateResult *updateResult_out)
{
	struct sim_gexec *x;
	struct sim_graph *g;
	CUgraphExecUpdateResultInfo info = {CU_GRAPH_EXEC_UPDATE_ERROR, NULL, NULL};
	CUresult rc = CUDA_SUCCESS;

	x = sim_gexec_from(hGraphExec);
	g = sim_graph_from(hGraph);
	if (!x || !g || !hErrorNode_out || !updateResult_out)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = exec_update(x, g, &info);
	if (updateResult_out)
		*updateResult_out = info.result;
	if (hErrorNode_out)
		*hErrorNode_out = info.errorNode;
	return rc;
}
