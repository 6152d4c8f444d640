/* refs.c - whether a template references memory the program frees (rpl__template_references),
 * answered from an index of the values its graphs' nodes hold instead of a scan of every node of
 * every graph at each free (issue 22: dataparallel's allocator frees a buffer every step, and the
 * scan cost ~28 k instructions a free, 184 an op). replay layer.
 *
 * What is referenced (unchanged from the scan, rpl__template_references_scan): per segment, the
 * values held by whichever graph launched its ops last (the segment's own or a buddy block's;
 * none when its ops last went eagerly), where a value is any 8-byte-aligned word of a kernel
 * node's parameters, a copy node's device addresses (of a side that is not host memory) and
 * host addresses, or a memset node's target.
 *
 * The index: every such value of every node of every graph (segments and blocks alike), sorted,
 * with the graph and node holding it; made at the first free that asks, O(n log n). A node whose
 * values change afterwards (launch.c's patch: rpl__refs_touch) is marked dirty and read again at
 * each question instead of its entries; past RPL_REFS_DIRTY_SHARE of the nodes dirty, the index
 * is made again at the next question. A question is a binary search for the first value at or
 * above the freed range's base, then for each value inside the range (and each dirty node that
 * holds one) whether its graph is the one its segment launched last: O(log n + hits + dirty).
 * Values of 0 are not indexed: a freed range never starts at 0. Making the index costs about as
 * much as sixteen scans (dataparallel: ~450 k instructions against ~28 k), so a template's first
 * RPL_REFS_SCANS questions are answered by the scan: a program that frees now and then never
 * pays for an index, one that frees every step pays for it once. */
#include <stdlib.h>
#include <string.h>

#include "replay/replay_int.h"

#define RPL_REFS_DIRTY_SHARE 8 /* a template's nodes over this many: dirty nodes before a remake */
#define RPL_REFS_DIRTY_MIN 64  /* dirty nodes allowed however few the nodes */
#define RPL_REFS_SCANS 8       /* a template's questions answered by the scan before an index */

struct rpl_ref {
	uint64_t v;                  /* a value a node holds */
	uint32_t graph;              /* its graph: segments 0..nsegs-1, then blocks */
	uint32_t node;               /* its node in that graph */
};

struct rpl_refs {
	struct rpl_ref *e;           /* sorted by v */
	uint32_t n;                  /* entries */
	uint32_t ngraphs;            /* t->nsegs + t->nblocks when made */
	uint32_t *first_id;          /* per graph, the id of its node 0 (ngraphs + 1 entries) */
	uint64_t *dirty_bit;         /* per node id: dirty since the index was made */
	uint32_t *dirty;             /* the dirty ids, in the order they were marked */
	uint32_t ndirty, dirty_cap;  /* used and allowed */
	bool remake;                 /* too many dirty: made again at the next question */
};

static struct rpl_seg *graph_at(const struct rpl_template *t, uint32_t k)
{
	return k < t->nsegs ? &t->segs[k] : &t->blocks[k - t->nsegs];
}

static bool in_range(uint64_t p, uint64_t base, uint64_t size)
{
	return p >= base && p - base < size;
}

/* The values node n holds that a free may hit, into out (at most node_nvalues(n)). */
static uint32_t node_nvalues(const struct rpl_node *n)
{
	switch (n->kind) {
	case CAP_OP_KERNEL:
		return n->param_size / 8;
	case CAP_OP_MEMCPY:
		return 4;
	case CAP_OP_MEMSET:
		return 1;
	default:
		return 0;
	}
}

static uint32_t node_values(const struct rpl_node *n, uint64_t *out)
{
	uint32_t k = 0;

	switch (n->kind) {
	case CAP_OP_KERNEL:
		/* any 8-byte-aligned parameter word may be a pointer */
		for (uint32_t off = 0; n->params && off + 8 <= n->param_size; off += 8)
			memcpy(&out[k++], (const char *)n->params + off, 8);
		break;
	case CAP_OP_MEMCPY:
		if (n->copy.srcMemoryType != CU_MEMORYTYPE_HOST)
			out[k++] = n->copy.srcDevice;
		if (n->copy.dstMemoryType != CU_MEMORYTYPE_HOST)
			out[k++] = n->copy.dstDevice;
		out[k++] = (uint64_t)(uintptr_t)n->copy.srcHost;
		out[k++] = (uint64_t)(uintptr_t)n->copy.dstHost;
		break;
	case CAP_OP_MEMSET:
		out[k++] = n->set.dst;
		break;
	default:
		break;
	}
	return k;
}

/* Whether a value node n holds points into [base, base+size). */
static bool node_references(const struct rpl_node *n, uint64_t base, uint64_t size)
{
	switch (n->kind) {
	case CAP_OP_KERNEL:
		for (uint32_t off = 0; n->params && off + 8 <= n->param_size; off += 8) {
			uint64_t v;

			memcpy(&v, (const char *)n->params + off, 8);
			if (in_range(v, base, size))
				return true;
		}
		return false;
	case CAP_OP_MEMCPY:
		return (n->copy.srcMemoryType != CU_MEMORYTYPE_HOST && in_range(n->copy.srcDevice, base, size)) ||
		       (n->copy.dstMemoryType != CU_MEMORYTYPE_HOST && in_range(n->copy.dstDevice, base, size)) ||
		       in_range((uint64_t)(uintptr_t)n->copy.srcHost, base, size) ||
		       in_range((uint64_t)(uintptr_t)n->copy.dstHost, base, size);
	case CAP_OP_MEMSET:
		return in_range(n->set.dst, base, size);
	default:
		return false;
	}
}

/* The graph holding the bindings segment k's ops had last: the segment's own, or the block
 * over it launched after it (the other one's are older: a launch patches every node whose
 * binding differs from its op's first); NULL when its ops last went eagerly (no graph holds
 * what they named last: each is patched first). Counting stale ones retired templates for frees
 * of what an earlier step used (dataparallel, whose allocator frees the buffers of two steps
 * before: a second retirement by FREE, and 87 -> 155 us a step). */
static const struct rpl_seg *seg_holder(const struct rpl_template *t, uint32_t k)
{
	const struct rpl_seg *g = &t->segs[k];

	for (uint32_t b = 0; b < t->nblocks; b++) {
		const struct rpl_seg *x = &t->blocks[b];

		if (x->nseg && x->last_launch > g->last_launch && x->first <= t->segs[k].first &&
		    t->segs[k].first < x->first + x->n)
			g = x;
	}
	return g->went_eager ? NULL : g;
}

/* Whether node i of graph x holds bindings its op had last: the op lies in a segment whose
 * holder is x. */
static bool node_current(const struct rpl_template *t, const struct rpl_seg *x, uint32_t i)
{
	uint32_t op = x->first + i;
	int32_t k;

	if (op >= t->nops || (k = t->ops[op].seg) < 0 || (uint32_t)k >= t->nsegs)
		return false;
	if (op < t->segs[k].first || op - t->segs[k].first >= t->segs[k].n)
		return false;
	return seg_holder(t, (uint32_t)k) == x;
}

bool rpl__template_references_scan(const struct rpl_template *t, uint64_t base, uint64_t size)
{
	for (uint32_t k = 0; k < t->nsegs; k++) {
		const struct rpl_seg *g = seg_holder(t, k);
		uint32_t from;

		if (!g || !g->nodes)
			continue;
		from = t->segs[k].first - g->first;
		for (uint32_t i = from; i < from + t->segs[k].n; i++)
			if (node_references(&g->nodes[i], base, size))
				return true;
	}
	return false;
}

/* ------------------------------------------------------------------ the index */

void rpl__refs_free(struct rpl_template *t)
{
	struct rpl_refs *r = t->refs;

	if (!r)
		return;
	free(r->e);
	free(r->first_id);
	free(r->dirty_bit);
	free(r->dirty);
	free(r);
	t->refs = NULL;
}

size_t rpl__refs_bytes(const struct rpl_template *t)
{
	const struct rpl_refs *r = t->refs;

	if (!r)
		return 0;
	return sizeof(*r) + r->n * sizeof(*r->e) + (r->ngraphs + 1) * sizeof(*r->first_id) +
	       (r->first_id[r->ngraphs] / 64 + 1) * sizeof(*r->dirty_bit) + r->dirty_cap * sizeof(*r->dirty);
}

static int by_value(const void *a, const void *b)
{
	const struct rpl_ref *x = a, *y = b;

	return x->v < y->v ? -1 : x->v > y->v;
}

/* Make t's index from the values its nodes hold now. false: out of memory (t->refs NULL). */
static bool refs_make(struct rpl_template *t)
{
	uint32_t ngraphs = t->nsegs + t->nblocks, nodes = 0;
	uint64_t nvalues = 0;
	struct rpl_refs *r;

	rpl__refs_free(t);
	for (uint32_t k = 0; k < ngraphs; k++) {
		const struct rpl_seg *g = graph_at(t, k);

		for (uint32_t i = 0; g->nodes && i < g->n; i++)
			nvalues += node_nvalues(&g->nodes[i]);
		nodes += g->n;
	}
	if (nvalues > UINT32_MAX)
		return false;
	r = calloc(1, sizeof(*r));
	if (!r)
		return false;
	r->ngraphs = ngraphs;
	r->first_id = malloc((ngraphs + 1) * sizeof(*r->first_id));
	r->dirty_bit = calloc(nodes / 64 + 1, sizeof(*r->dirty_bit));
	r->dirty_cap = nodes / RPL_REFS_DIRTY_SHARE > RPL_REFS_DIRTY_MIN ? nodes / RPL_REFS_DIRTY_SHARE : RPL_REFS_DIRTY_MIN;
	r->dirty = malloc(r->dirty_cap * sizeof(*r->dirty));
	r->e = malloc((nvalues ? nvalues : 1) * sizeof(*r->e));
	if (!r->first_id || !r->dirty_bit || !r->dirty || !r->e) {
		t->refs = r;
		rpl__refs_free(t);
		return false;
	}
	nodes = 0;
	for (uint32_t k = 0; k < ngraphs; k++) {
		const struct rpl_seg *g = graph_at(t, k);

		r->first_id[k] = nodes;
		nodes += g->n;
		for (uint32_t i = 0; g->nodes && i < g->n; i++) {
			uint64_t v[4], *vp = v, *big = NULL;
			uint32_t nv = node_nvalues(&g->nodes[i]);

			if (nv > 4 && !(vp = big = malloc(nv * sizeof(*vp)))) {
				t->refs = r;
				rpl__refs_free(t);
				return false;
			}
			nv = node_values(&g->nodes[i], vp);
			for (uint32_t j = 0; j < nv; j++)
				if (vp[j])
					r->e[r->n++] = (struct rpl_ref){ .v = vp[j], .graph = k, .node = i };
			free(big);
		}
	}
	r->first_id[ngraphs] = nodes;
	qsort(r->e, r->n, sizeof(*r->e), by_value);
	t->refs = r;
	return true;
}

void rpl__refs_touch(struct rpl_template *t, const struct rpl_seg *g, uint32_t i)
{
	struct rpl_refs *r = t->refs;
	uint32_t k, id;

	if (!r || r->remake)
		return; /* no index yet, or one made again before it is asked: nothing to note */
	k = g >= t->segs && g < t->segs + t->nsegs ? (uint32_t)(g - t->segs) : t->nsegs + (uint32_t)(g - t->blocks);
	if (k >= r->ngraphs || i >= r->first_id[k + 1] - r->first_id[k]) {
		r->remake = true; /* not a graph the index knows: it goes */
		return;
	}
	id = r->first_id[k] + i;
	if (r->dirty_bit[id / 64] & (1ull << (id % 64)))
		return;
	if (r->ndirty == r->dirty_cap) {
		r->remake = true;
		return;
	}
	r->dirty_bit[id / 64] |= 1ull << (id % 64);
	r->dirty[r->ndirty++] = id;
}

/* The graph (index) of node id. */
static uint32_t graph_of(const struct rpl_refs *r, uint32_t id)
{
	uint32_t lo = 0, hi = r->ngraphs; /* the last graph whose first id is <= id */

	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->first_id[mid] <= id)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

bool rpl__template_references(struct rpl_template *t, uint64_t base, uint64_t size)
{
	const struct rpl_refs *r;
	uint64_t last;
	uint32_t lo, hi;

	if (!size)
		return false;
	if (t->refs_asked < RPL_REFS_SCANS) {
		t->refs_asked++;
		return rpl__template_references_scan(t, base, size);
	}
	if ((!t->refs || t->refs->remake || t->refs->ngraphs != t->nsegs + t->nblocks) && !refs_make(t))
		return rpl__template_references_scan(t, base, size); /* out of memory: the scan */
	r = t->refs;
	last = base + (size - 1) < base ? UINT64_MAX : base + (size - 1);
	for (lo = 0, hi = r->n; lo < hi;) { /* the first value >= base */
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->e[mid].v < base)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (uint32_t j = lo; j < r->n && r->e[j].v <= last; j++) {
		const struct rpl_ref *e = &r->e[j];
		uint32_t id = r->first_id[e->graph] + e->node;

		if (r->dirty_bit[id / 64] & (1ull << (id % 64)))
			continue; /* its values changed since: read below */
		if (node_current(t, graph_at(t, e->graph), e->node))
			return true;
	}
	for (uint32_t d = 0; d < r->ndirty; d++) {
		uint32_t id = r->dirty[d], k = graph_of(r, id), i = id - r->first_id[k];
		const struct rpl_seg *g = graph_at(t, k);

		if (g->nodes && i < g->n && node_references(&g->nodes[i], base, size) && node_current(t, g, i))
			return true;
	}
	return false;
}
