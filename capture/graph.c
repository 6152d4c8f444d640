/* graph.c - the trace graph of a window (nodes = ops; edges = stream order with the legacy
 * default stream's implicit synchronization, and event record -> wait) and, as a separate
 * query, its memory dependencies. capture layer.
 *
 * Stream order: each op follows the previous op on its stream. Legacy semantics (CUDA's
 * "default stream" rules, per context): an op on the legacy stream follows the last op of every
 * blocking stream (created without CU_STREAM_NON_BLOCKING, and per-thread default streams), and
 * an op on a blocking stream follows the last op on the legacy stream. A wait follows the most
 * recent record of its event in the window at the time of the wait call. A wait whose record
 * lies in an earlier window gets no edge here, but that record is NOT necessarily complete:
 * only a SYNC boundary (or a host-visible copy's implied wait) orders the device; QUERY, FULL,
 * UNMODELED, OPAQUE, FREE and the others end a window without waiting for anything. So this
 * graph is not a complete ordering of such a wait: whoever executes a window (replay) must keep
 * every wait on an event recorded outside the window as a real wait (an event-wait node or the
 * call itself). Edges to the last op suffice: the rest follows by transitivity. Everything
 * lives in the graph's own arena. */
#include <stdlib.h>
#include <string.h>

#include "capture/capture_int.h"
#include "common/errors.h"
#include "common/map.h"

struct cap_graph {
	struct cf_arena arena;       /* every array below */
	uint32_t n;                  /* nodes (ops of the window) */
	uint32_t *npred;             /* per node: predecessors */
	uint32_t **pred;             /* per node: predecessor indices, ascending */
	size_t nedges;               /* edges in pred */
	uint32_t *nmem;              /* per node: memory dependencies (after cap_graph_add_memdeps) */
	uint32_t **mem;              /* per node: nodes it must follow for memory, ascending */
	size_t nmemedges;            /* edges in mem */
};

#define NONE UINT32_MAX

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Append v to a small set (no duplicates). */
static void set_add(uint32_t *set, uint32_t *n, uint32_t v)
{
	if (v == NONE)
		return;
	for (uint32_t i = 0; i < *n; i++)
		if (set[i] == v)
			return;
	set[(*n)++] = v;
}

static bool blocking(uint8_t kind)
{
	return kind == CAP_STREAM_BLOCKING || kind == CAP_STREAM_PER_THREAD;
}

struct cap_graph *cap_graph_build(const struct cap_window *w)
{
	struct cap_graph *g = calloc(1, sizeof(*g));
	uint32_t *last_on = NULL, *last_rec = NULL, *tmp = NULL;
	uint32_t ns = w->nstreams, ne = w->nevents;

	if (!g)
		return NULL;
	cf_arena_init(&g->arena, 0);
	g->n = w->nops;
	g->npred = cf_arena_alloc(&g->arena, (g->n + 1) * sizeof(*g->npred));
	g->pred = cf_arena_alloc(&g->arena, (g->n + 1) * sizeof(*g->pred));
	last_on = malloc((ns + 1) * sizeof(*last_on));
	last_rec = malloc((ne + 1) * sizeof(*last_rec));
	tmp = malloc((ns + 2) * sizeof(*tmp));
	if (!g->npred || !g->pred || !last_on || !last_rec || !tmp)
		goto out_fail;
	for (uint32_t s = 0; s < ns; s++)
		last_on[s] = NONE;
	for (uint32_t e = 0; e < ne; e++)
		last_rec[e] = NONE;
	for (uint32_t i = 0; i < g->n; i++) {
		const struct cap_op *op = &w->ops[i];
		uint32_t s = op->stream_slot, np = 0;
		const struct cap_wstream *ws = &w->streams[s];

		set_add(tmp, &np, last_on[s]);
		if (ws->kind == CAP_STREAM_LEGACY) {
			for (uint32_t t = 0; t < ns; t++)
				if (t != s && blocking(w->streams[t].kind) && w->streams[t].ctx == ws->ctx)
					set_add(tmp, &np, last_on[t]);
		} else if (blocking(ws->kind)) {
			for (uint32_t t = 0; t < ns; t++)
				if (w->streams[t].kind == CAP_STREAM_LEGACY && w->streams[t].ctx == ws->ctx)
					set_add(tmp, &np, last_on[t]);
		}
		if (op->kind == CAP_OP_EVENT_WAIT && op->u.event.slot < ne)
			set_add(tmp, &np, last_rec[op->u.event.slot]);
		if (op->kind == CAP_OP_EVENT_RECORD && op->u.event.slot < ne)
			last_rec[op->u.event.slot] = i;
		last_on[s] = i;
		qsort(tmp, np, sizeof(*tmp), cmp_u32);
		g->npred[i] = np;
		g->pred[i] = cf_arena_dup(&g->arena, tmp, np * sizeof(*tmp));
		if (!g->pred[i])
			goto out_fail;
		g->nedges += np;
	}
	free(last_on);
	free(last_rec);
	free(tmp);
	return g;
out_fail:
	free(last_on);
	free(last_rec);
	free(tmp);
	cap_graph_destroy(g);
	return NULL;
}

void cap_graph_destroy(struct cap_graph *g)
{
	if (!g)
		return;
	cf_arena_fini(&g->arena);
	free(g);
}

uint32_t cap_graph_nnodes(const struct cap_graph *g)
{
	return g->n;
}

uint32_t cap_graph_npred(const struct cap_graph *g, uint32_t i)
{
	return i < g->n ? g->npred[i] : 0;
}

const uint32_t *cap_graph_pred(const struct cap_graph *g, uint32_t i)
{
	return i < g->n ? g->pred[i] : NULL;
}

size_t cap_graph_nedges(const struct cap_graph *g)
{
	return g->nedges;
}

bool cap_graph_has_edge(const struct cap_graph *g, uint32_t a, uint32_t b)
{
	if (b >= g->n)
		return false;
	for (uint32_t i = 0; i < g->npred[b]; i++)
		if (g->pred[b][i] == a)
			return true;
	return false;
}

/* ------------------------------------------------------------------ memory */

static void access_add(struct cap_access *out, uint32_t max, uint32_t *n, uint64_t alloc, uint64_t addr,
		       uint64_t len, bool write)
{
	/* one entry per (allocation, direction) for kernels: skip repeats */
	for (uint32_t i = 0; i < *n && i < max; i++)
		if (alloc && out[i].alloc == alloc && out[i].write == write && out[i].addr == addr)
			return;
	if (*n < max)
		out[*n] = (struct cap_access){ .alloc = alloc, .addr = addr, .len = len, .write = write };
	(*n)++;
}

uint32_t cap_op_accesses(struct cap_engine *ce, const struct cap_op *op, struct cap_access *out, uint32_t max)
{
	const struct cap_alloc *a;
	uint32_t n = 0;

	switch (op->kind) {
	case CAP_OP_MEMCPY: {
		const struct cap_memcpy *c = &op->u.memcpy;

		if (!c->bytes)
			break;
		a = cap_alloc_find(ce, c->src_first);
		access_add(out, max, &n, a ? a->id : 0, c->src_first, c->src_span, false);
		a = cap_alloc_find(ce, c->dst_first);
		access_add(out, max, &n, a ? a->id : 0, c->dst_first, c->dst_span, true);
		break;
	}
	case CAP_OP_MEMSET: {
		const struct cap_memset *m = &op->u.memset;
		uint64_t len = cap_op_bytes(op);

		if (!len)
			break;
		if (m->height > 1)
			len = (uint64_t)(m->height - 1) * m->pitch + (uint64_t)m->width * m->elem_size;
		a = cap_alloc_find(ce, m->dst);
		access_add(out, max, &n, a ? a->id : 0, m->dst, len, true);
		break;
	}
	case CAP_OP_KERNEL: {
		const struct cap_kernel *k = &op->u.kernel;

		/* no kernel cards yet: every allocation a pointer-sized word points into is read
		 * and written, as a whole */
		for (uint32_t off = 0; off + 8 <= k->param_size; off += 8) {
			uint64_t word;

			memcpy(&word, (const char *)k->params + off, sizeof(word));
			a = word ? cap_alloc_find(ce, word) : NULL;
			if (!a)
				continue;
			access_add(out, max, &n, a->id, a->base, a->size, false);
			access_add(out, max, &n, a->id, a->base, a->size, true);
		}
		break;
	}
	default:
		break;
	}
	return n;
}

/* Per allocation: the last writer and the readers since. */
struct mem_state {
	uint32_t writer;             /* last op writing it, or NONE */
	uint32_t *readers;           /* ops reading it since (malloc'd) */
	uint32_t nreaders, capreaders; /* used and allocated */
};

/* The state of allocation alloc, made (no writer, no readers) when it has none yet; NULL when
 * out of memory. */
static struct mem_state *mem_state_get(struct cf_map *state, uint64_t alloc)
{
	struct mem_state *m = cf_map_get(state, alloc);

	if (!m) {
		m = calloc(1, sizeof(*m));
		if (m && cf_map_put(state, alloc, m) != 0) {
			free(m);
			m = NULL;
		}
		if (m)
			m->writer = NONE;
	}
	return m;
}

/* Op i reads the allocation of m. 0 or -CF_ENOMEM. */
static int reader_add(struct mem_state *m, uint32_t i)
{
	int rc = -CF_ENOMEM;

	if (m->nreaders == m->capreaders) {
		uint32_t ncap = m->capreaders ? 2 * m->capreaders : 4;
		uint32_t *nr = realloc(m->readers, ncap * sizeof(*nr));

		if (!nr)
			goto out;
		m->readers = nr;
		m->capreaders = ncap;
	}
	m->readers[m->nreaders++] = i;
	rc = 0;
out:
	return rc;
}

size_t cap_graph_add_memdeps(struct cap_engine *ce, struct cap_graph *g, const struct cap_window *w)
{
	struct cf_map state = CF_MAP_INIT;
	struct cap_access acc[64];
	uint32_t *deps = NULL, capdeps = 0;
	size_t added = 0;
	void *v;

	if (!g->nmem) {
		g->nmem = cf_arena_alloc(&g->arena, (g->n + 1) * sizeof(*g->nmem));
		g->mem = cf_arena_alloc(&g->arena, (g->n + 1) * sizeof(*g->mem));
		if (!g->nmem || !g->mem)
			goto out;
		memset(g->nmem, 0, (g->n + 1) * sizeof(*g->nmem));
		memset(g->mem, 0, (g->n + 1) * sizeof(*g->mem));
	}
	for (uint32_t i = 0; i < g->n && i < w->nops; i++) {
		uint32_t na = cap_op_accesses(ce, &w->ops[i], acc, 64), nd = 0;

		if (na > 64)
			na = 64; /* more than 64 distinct allocations: the rest are not tracked */
		for (uint32_t j = 0; j < na; j++) {
			struct mem_state *m;

			if (!acc[j].alloc)
				continue; /* host memory outside the map is not tracked */
			m = mem_state_get(&state, acc[j].alloc);
			if (!m)
				goto out;
			if (nd + m->nreaders + 1 > capdeps) {
				uint32_t ncap = (nd + m->nreaders + 1) * 2;
				uint32_t *nb = realloc(deps, ncap * sizeof(*nb));

				if (!nb)
					goto out;
				deps = nb;
				capdeps = ncap;
			}
			if (m->writer != i)
				set_add(deps, &nd, m->writer);
			if (acc[j].write) {
				for (uint32_t r = 0; r < m->nreaders; r++)
					if (m->readers[r] != i)
						set_add(deps, &nd, m->readers[r]);
				m->writer = i;
				m->nreaders = 0;
			} else if (reader_add(m, i) != 0) {
				goto out;
			}
		}
		if (nd) {
			qsort(deps, nd, sizeof(*deps), cmp_u32);
			g->mem[i] = cf_arena_dup(&g->arena, deps, nd * sizeof(*deps));
			if (!g->mem[i])
				goto out;
			g->nmem[i] = nd;
			added += nd;
		}
	}
out:
	for (size_t i = 0; cf_map_next(&state, &i, NULL, &v);) {
		struct mem_state *m = v;

		free(m->readers);
		free(m);
	}
	cf_map_fini(&state);
	free(deps);
	g->nmemedges += added;
	return added;
}

uint32_t cap_graph_nmemdep(const struct cap_graph *g, uint32_t i)
{
	return g->nmem && i < g->n ? g->nmem[i] : 0;
}

const uint32_t *cap_graph_memdep(const struct cap_graph *g, uint32_t i)
{
	return g->mem && i < g->n ? g->mem[i] : NULL;
}
