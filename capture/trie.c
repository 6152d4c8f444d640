/* trie.c - window shapes: a trie keyed by op keys, each node at which a window ended holding its
 * shape (sightings, binding stability, the last sighting's ops), bounded by
 * CUFOLD_MAX_TEMPLATES with least-recently-seen eviction. capture layer.
 *
 * The edges of all nodes live in one hash map keyed by hash(parent, op key) and are checked
 * against the child's stored parent and key, so inserting a window of n ops is n lookups, O(n),
 * and a program whose iterations share a prefix (train step, and the train step with logging)
 * shares the prefix's nodes. A 64-bit collision of two different edges is detected and that
 * window is simply not tracked. Nodes with neither children nor a shape are removed as soon as
 * the shape below them goes. */
#include <stdlib.h>
#include <string.h>

#include "capture/capture_int.h"
#include "common/compiler.h"
#include "common/errors.h"
#include "common/hash.h"
#include "common/log.h"

static struct cap_trie_node root;    /* the empty prefix */
static struct cf_map edges;          /* hash(parent, key) -> child */
static size_t nnodes;                /* nodes besides the root */
static struct cap_shape *mru, *lru;  /* recency list ends */
static size_t nshapes;               /* shapes alive */
static uint64_t next_shape_id = 1;   /* id of the next new shape */

static uint64_t edge_key(const struct cap_trie_node *parent, uint64_t key)
{
	return cf_hash_combine((uint64_t)(uintptr_t)parent, key);
}

const struct cap_trie_node *cap_trie_root(void)
{
	return &root;
}

const struct cap_trie_node *cap_trie_child(const struct cap_trie_node *n, uint64_t key)
{
	struct cap_trie_node *c = cf_map_get(&edges, edge_key(n, key));

	return c && c->parent == n && c->key == key ? c : NULL;
}

struct cap_shape *cap_trie_shape(const struct cap_trie_node *n)
{
	return n ? n->shape : NULL;
}

/* The child of n for key, made if missing; NULL when out of memory or on a collision. */
static struct cap_trie_node *child_make(struct cap_trie_node *n, uint64_t key)
{
	uint64_t ek = edge_key(n, key);
	struct cap_trie_node *c = cf_map_get(&edges, ek);

	if (c)
		return c->parent == n && c->key == key ? c : NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->parent = n;
	c->key = key;
	c->depth = n->depth + 1;
	if (cf_map_put(&edges, ek, c) != 0) {
		free(c);
		return NULL;
	}
	n->nchildren++;
	nnodes++;
	return c;
}

/* Remove n and its ancestors while they hold nothing. */
static void prune(struct cap_trie_node *n)
{
	while (n && n != &root && n->nchildren == 0 && !n->shape) {
		struct cap_trie_node *p = n->parent;

		cf_assert(p && p->nchildren > 0 && n->depth == p->depth + 1);
		cf_map_del(&edges, edge_key(p, n->key));
		p->nchildren--;
		nnodes--;
		free(n);
		n = p;
	}
}

static void lru_unlink(struct cap_shape *s)
{
	cf_assert(s->prev ? s->prev->next == s : mru == s);
	cf_assert(s->next ? s->next->prev == s : lru == s);
	if (s->prev)
		s->prev->next = s->next;
	else
		mru = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		lru = s->prev;
	s->prev = s->next = NULL;
}

static void lru_push(struct cap_shape *s)
{
	s->prev = NULL;
	s->next = mru;
	if (mru)
		mru->prev = s;
	mru = s;
	if (!lru)
		lru = s;
}

static void shape_free(struct cap_shape *s)
{
	cap__window_free(s->last);
	free(s->moved);
	free(s->marks);
	free(s);
}

static void evict(struct cap_shape *s)
{
	struct cap_trie_node *end = s->end;

	if (cap__s.cfg.shape_evicted)
		cap__s.cfg.shape_evicted(s);
	lru_unlink(s);
	end->shape = NULL;
	prune(end);
	shape_free(s);
	nshapes--;
	cap__s.totals.shapes_evicted++;
}

struct cap_window *cap__trie_retract(struct cap_shape *s)
{
	struct cap_window *w = s->last;
	struct cap_trie_node *end = s->end;

	if (cap__s.cfg.shape_evicted)
		cap__s.cfg.shape_evicted(s);
	lru_unlink(s);
	end->shape = NULL;
	prune(end);
	s->last = NULL;
	shape_free(s);
	nshapes--;
	return w;
}

struct cap_shape *cap__trie_insert(struct cap_window *w, struct cap_window **spare)
{
	struct cap_trie_node *n = &root;
	struct cap_shape *s;
	uint64_t bind = CF_HASH_SEED;

	cf_assert(w->nops > 0 && w->nfailed == 0); /* closed and compacted (record.c) */
	*spare = NULL;
	for (uint32_t i = 0; i < w->nops; i++) {
		struct cap_trie_node *c = child_make(n, w->ops[i].key);

		if (!c) {
			cf_log_debug("window %llu not tracked: out of memory or key collision in the trie",
				     (unsigned long long)w->seq);
			prune(n);
			*spare = w;
			return NULL;
		}
		n = c;
		bind = cf_hash_combine(bind, w->ops[i].bind);
	}
	s = n->shape;
	if (s) {
		bool same = true;

		cf_assert(s->nops == w->nops && s->last && s->end == n);
		/* same path, so same length and keys: compare bindings op by op */
		for (uint32_t i = 0; i < w->nops; i++) {
			if (s->last->ops[i].bind != w->ops[i].bind) {
				s->moved[i]++;
				same = false;
			}
		}
		s->sightings++;
		s->stable += same;
		s->last_stable = same;
		s->bind_hash = bind;
		s->last_window = w->seq;
		s->closed_by[w->closed_by]++;
		*spare = s->last;
		s->last = w;
		lru_unlink(s);
		lru_push(s);
		return s;
	}
	s = calloc(1, sizeof(*s));
	if (s)
		s->moved = calloc(w->nops, sizeof(*s->moved));
	if (!s || !s->moved) {
		free(s);
		prune(n);
		*spare = w;
		return NULL;
	}
	s->id = next_shape_id++;
	s->end = n;
	s->sightings = 1;
	s->bind_hash = bind;
	s->first_window = s->last_window = w->seq;
	s->last = w;
	s->nops = w->nops;
	s->closed_by[w->closed_by]++;
	n->shape = s;
	lru_push(s);
	nshapes++;
	while (nshapes > cap__s.cfg.max_templates && lru && lru != s)
		evict(lru);
	cf_assert(mru == s && nshapes <= cap__s.cfg.max_templates); /* the bound, newest kept */
	return s;
}

void cap__trie_fini(void)
{
	struct cap_trie_node *n;
	void *v;

	while (lru && !cap__leaking) {
		struct cap_shape *s = lru;

		lru_unlink(s);
		s->end->shape = NULL;
		shape_free(s);
	}
	for (size_t i = 0; !cap__leaking && cf_map_next(&edges, &i, NULL, &v);) {
		n = v;
		free(n);
	}
	cap__map_drop(&edges);
	memset(&root, 0, sizeof(root));
	nnodes = 0;
	nshapes = 0;
	next_shape_id = 1;
	mru = lru = NULL;
}

size_t cap__trie_bytes(void)
{
	size_t n = nnodes * sizeof(struct cap_trie_node) + cf_map_bytes(&edges);

	for (const struct cap_shape *s = mru; s; s = s->next)
		n += sizeof(*s) + s->nops * sizeof(*s->moved) + cap__window_bytes(s->last);
	return n;
}

struct cap_shape *cap_shape_first(void)
{
	return mru;
}

struct cap_shape *cap_shape_next(const struct cap_shape *s)
{
	return s->next;
}

size_t cap_shape_count(void)
{
	return nshapes;
}

uint64_t cap_shape_id(const struct cap_shape *s)
{
	return s->id;
}

uint64_t cap_shape_sightings(const struct cap_shape *s)
{
	return s->sightings;
}

uint64_t cap_shape_stable(const struct cap_shape *s)
{
	return s->stable;
}

bool cap_shape_last_stable(const struct cap_shape *s)
{
	return s->last_stable;
}

const struct cap_window *cap_shape_last(const struct cap_shape *s)
{
	return s->last;
}

uint32_t cap_shape_moved(const struct cap_shape *s, uint32_t i)
{
	return i < s->nops ? s->moved[i] : 0;
}

void *cap_shape_user(const struct cap_shape *s)
{
	return s->user;
}

void cap_shape_set_user(struct cap_shape *s, void *user)
{
	s->user = user;
}

int cap_shape_mark(struct cap_shape *s, uint32_t i, enum cap_mark_kind kind, uint32_t into, const char *rule)
{
	if (i >= s->nops)
		return -CF_EINVAL;
	if (!s->marks) {
		s->marks = calloc(s->nops, sizeof(*s->marks));
		if (!s->marks)
			return -CF_ENOMEM;
	}
	s->marks[i] = (struct cap_mark){ (uint8_t)kind, into, rule };
	return 0;
}

void cap_shape_unmark(struct cap_shape *s)
{
	free(s->marks);
	s->marks = NULL;
}
