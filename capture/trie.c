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

static uint64_t edge_key(const struct cap_trie_node *parent, uint64_t key)
{
	return cf_hash_combine((uint64_t)(uintptr_t)parent, key);
}

const struct cap_trie_node *cap_trie_root(struct cap_engine *ce)
{
	return &ce->trie.root;
}

const struct cap_trie_node *cap_trie_child(struct cap_engine *ce, const struct cap_trie_node *n, uint64_t key)
{
	struct cap_trie_node *c = cf_map_get(&ce->trie.edges, edge_key(n, key));

	return c && c->parent == n && c->key == key ? c : NULL;
}

struct cap_shape *cap_trie_shape(const struct cap_trie_node *n)
{
	return n ? n->shape : NULL;
}

/* The child of n for key, made if missing; NULL when out of memory or on a collision. */
static struct cap_trie_node *child_make(struct cap_engine *ce, struct cap_trie_node *n, uint64_t key)
{
	struct cap_trie_node *c = n->last_child;
	uint64_t ek;

	/* a program repeats its windows: the edge taken last time is nearly always the one wanted,
	 * and the map's probe cost a third of filing a window (issue 22) */
	if (c && c->key == key)
		return c;
	ek = edge_key(n, key);
	c = cf_map_get(&ce->trie.edges, ek);
	if (c) {
		if (c->parent != n || c->key != key)
			return NULL;
		n->last_child = c;
		return c;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->parent = n;
	c->key = key;
	c->depth = n->depth + 1;
	if (cf_map_put(&ce->trie.edges, ek, c) != 0) {
		free(c);
		return NULL;
	}
	n->nchildren++;
	ce->trie.nnodes++;
	n->last_child = c;
	return c;
}

/* Remove n and its ancestors while they hold nothing. */
static void prune(struct cap_engine *ce, struct cap_trie_node *n)
{
	while (n && n != &ce->trie.root && n->nchildren == 0 && !n->shape) {
		struct cap_trie_node *p = n->parent;

		cf_assert(p && p->nchildren > 0 && n->depth == p->depth + 1);
		cf_map_del(&ce->trie.edges, edge_key(p, n->key));
		if (p->last_child == n)
			p->last_child = NULL;
		p->nchildren--;
		ce->trie.nnodes--;
		free(n);
		n = p;
	}
}

static void lru_unlink(struct cap_engine *ce, struct cap_shape *s)
{
	cf_assert(s->prev ? s->prev->next == s : ce->trie.mru == s);
	cf_assert(s->next ? s->next->prev == s : ce->trie.lru == s);
	if (s->prev)
		s->prev->next = s->next;
	else
		ce->trie.mru = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		ce->trie.lru = s->prev;
	s->prev = s->next = NULL;
}

static void lru_push(struct cap_engine *ce, struct cap_shape *s)
{
	s->prev = NULL;
	s->next = ce->trie.mru;
	if (ce->trie.mru)
		ce->trie.mru->prev = s;
	ce->trie.mru = s;
	if (!ce->trie.lru)
		ce->trie.lru = s;
}

static void shape_free(struct cap_engine *ce, struct cap_shape *s)
{
	cap__shape_gone(ce, s);
	cap__window_drop(ce, s->last);
	free(s->moved);
	free(s->marks);
	free(s);
}

static void evict(struct cap_engine *ce, struct cap_shape *s)
{
	struct cap_trie_node *end = s->end;

	if (ce->cfg.shape_evicted)
		ce->cfg.shape_evicted(ce->cfg.arg, s);
	lru_unlink(ce, s);
	end->shape = NULL;
	prune(ce, end);
	shape_free(ce, s);
	ce->trie.nshapes--;
	ce->totals.shapes_evicted++;
}

struct cap_window *cap__trie_retract(struct cap_engine *ce, struct cap_shape *s)
{
	struct cap_window *w = s->last;
	struct cap_trie_node *end = s->end;

	if (ce->cfg.shape_evicted)
		ce->cfg.shape_evicted(ce->cfg.arg, s);
	lru_unlink(ce, s);
	end->shape = NULL;
	prune(ce, end);
	s->last = NULL;
	shape_free(ce, s);
	ce->trie.nshapes--;
	return w;
}

/* w becomes its shape's last sighting in place of old, which becomes the spare: w's storage is
 * whatever the windows before it grew, and the longest window's arrays would otherwise end up
 * held by every short shape in turn (35 one-op shapes of recsys held 3 MiB). When old's ops array
 * is the smaller, w's ops move into it and w's larger array goes to the spare, where the next
 * long window reuses it (no growth, no malloc); likewise the arena when w put nothing in it. The
 * ops hold pointers into the arena and the streams', never into the ops array. A pinned old is
 * being read by a build: left alone. */
static void keep_small(struct cap_window *old, struct cap_window *w)
{
	cf_assert(!w->lender || !old->pinned); /* (record.c: lender_handed_over) */
	if (old->pinned)
		return;
	if (old->cap < w->cap && old->cap >= w->nops) {
		struct cap_op *ops = old->ops;
		uint32_t cap = old->cap, filled = old->filled;

		memcpy(ops, w->ops, w->nops * sizeof(*ops));
		old->ops = w->ops;
		old->cap = w->cap;
		/* what each array holds goes with it: w's ops up to w->filled, old's up to its own
		 * (below w's nops now w's); filled never passes cap (record.c reads the slots
		 * below it: the fast lanes and the held check) */
		old->filled = w->filled;
		w->ops = ops;
		w->cap = cap;
		w->filled = filled > w->nops ? filled : w->nops;
	}
	cf_assert(old->filled <= old->cap && w->filled <= w->cap);
	if (w->lender) {
		/* w's launches borrowed old's parameter bytes, and w put nothing in its own arena
		 * (record.c: lender_handed_over): w takes old's arena as it is, old w's empty one */
		struct cf_arena a = old->arena;

		cf_assert(w->lender == old && w->arena.used == 0);
		old->arena = w->arena;
		w->arena = a;
		cap__borrow_none(w);
	} else if (w->arena.used == 0 && old->arena.reserved < w->arena.reserved) {
		struct cf_arena a = old->arena;

		cf_arena_reset(&a);
		old->arena = w->arena;
		w->arena = a;
	}
}

/* The first sighting of a shape: w keeps no more storage than its ops need (it may be a long
 * window's recycled one); once per shape, so a realloc is cheap. */
static void fit(struct cap_window *w)
{
	uint32_t want = w->nops < 16 ? 16 : w->nops;

	if (w->cap > 2 * want) {
		struct cap_op *ops = realloc(w->ops, want * sizeof(*ops));

		if (ops) {
			w->ops = ops;
			w->cap = want;
			if (w->filled > want)
				w->filled = want; /* the slots kept are all it holds (keep_small) */
		}
	}
	if (w->arena.used == 0 && w->arena.reserved) {
		cf_arena_fini(&w->arena);
		cf_arena_init(&w->arena, 0);
	}
}

/* Shape s is seen again as window w (same path, so same length and keys): its bindings are
 * compared op by op and w becomes its last sighting (*spare: the one it replaces). predicted:
 * s->last is the window w's ops were predicted from (cap__trie_insert_known). */
static struct cap_shape *sighting(struct cap_engine *ce, struct cap_shape *s, struct cap_window *w,
				  struct cap_window **spare, bool predicted)
{
	const struct cap_op *a = s->last->ops, *b = w->ops;
	uint32_t i = 0, n = w->nops;
	bool same;

	cf_assert(s->nops == w->nops && s->last);
	/* w's ops before binds_new_from took their predicted ops' bindings (record.c), which
	 * s->last holds: they did not move, and the compare starts there (the copy loop's moves
	 * in its last op: 7.6 instructions an op were the compare of the 157 before, issue 22) */
	if (predicted)
		i = w->binds_new_from < n ? w->binds_new_from : n;
	for (uint32_t k = 0; k < i; k++) /* (debug builds: what the shortcut says) */
		cf_assert(a[k].bind == b[k].bind);
	/* else a compare only, up to the first op that moved: in steady state nothing moves
	 * (issue 22: the hash over the binds this loop also took was read by nothing, 16
	 * instructions an op) */
	while (i < n && a[i].bind == b[i].bind)
		i++;
	same = i == n;
	for (; i < n; i++)
		if (a[i].bind != b[i].bind)
			s->moved[i]++;
	s->sightings++;
	s->stable += same;
	s->last_stable = same;
	s->last_window = w->seq;
	s->closed_by[w->closed_by]++;
	keep_small(s->last, w);
	*spare = s->last;
	s->last = w;
	lru_unlink(ce, s);
	lru_push(ce, s);
	return s;
}

struct cap_shape *cap__trie_insert_known(struct cap_engine *ce, struct cap_window *w, struct cap_shape *s,
					 struct cap_window **spare)
{
	cf_assert(w->nops > 0 && w->nfailed == 0 && s->nops == w->nops);
	*spare = NULL;
	return sighting(ce, s, w, spare, true);
}

struct cap_shape *cap__trie_insert(struct cap_engine *ce, struct cap_window *w, struct cap_window **spare)
{
	struct cap_trie_node *n = &ce->trie.root;
	struct cap_shape *s;

	cf_assert(w->nops > 0 && w->nfailed == 0); /* closed and compacted (record.c) */
	*spare = NULL;
	for (uint32_t i = 0; i < w->nops; i++) {
		struct cap_trie_node *c = child_make(ce, n, w->ops[i].key);

		if (!c) {
			cf_log_debug("window %llu not tracked: out of memory or key collision in the trie",
				     (unsigned long long)w->seq);
			prune(ce, n);
			*spare = w;
			return NULL;
		}
		n = c;
	}
	s = n->shape;
	if (s) {
		cf_assert(s->end == n);
		return sighting(ce, s, w, spare, false);
	}
	s = calloc(1, sizeof(*s));
	if (s)
		s->moved = calloc(w->nops, sizeof(*s->moved));
	if (!s || !s->moved) {
		free(s);
		prune(ce, n);
		*spare = w;
		return NULL;
	}
	fit(w);
	s->id = ce->trie.next_shape_id++;
	s->end = n;
	s->sightings = 1;
	s->first_window = s->last_window = w->seq;
	s->last = w;
	s->nops = w->nops;
	for (uint32_t i = 0; i < w->nops; i++)
		s->kinds[w->ops[i].kind]++;
	s->closed_by[w->closed_by]++;
	n->shape = s;
	lru_push(ce, s);
	ce->trie.nshapes++;
	while (ce->trie.nshapes > ce->cfg.max_templates && ce->trie.lru && ce->trie.lru != s)
		evict(ce, ce->trie.lru);
	cf_assert(ce->trie.mru == s && ce->trie.nshapes <= ce->cfg.max_templates); /* the bound, newest kept */
	return s;
}

void cap__trie_fini(struct cap_engine *ce)
{
	struct cap_trie_node *n;
	void *v;

	while (ce->trie.lru) {
		struct cap_shape *s = ce->trie.lru;

		lru_unlink(ce, s);
		s->end->shape = NULL;
		shape_free(ce, s);
	}
	for (size_t i = 0; cf_map_next(&ce->trie.edges, &i, NULL, &v);) {
		n = v;
		free(n);
	}
	cf_map_fini(&ce->trie.edges);
	memset(&ce->trie.root, 0, sizeof(ce->trie.root));
	ce->trie.nnodes = 0;
	ce->trie.nshapes = 0;
	ce->trie.next_shape_id = 1;
	ce->trie.mru = ce->trie.lru = NULL;
}

size_t cap__trie_bytes(struct cap_engine *ce)
{
	size_t n = ce->trie.nnodes * sizeof(struct cap_trie_node) + cf_map_bytes(&ce->trie.edges);

	for (const struct cap_shape *s = ce->trie.mru; s; s = s->next)
		n += sizeof(*s) + s->nops * sizeof(*s->moved) + cap__window_bytes(s->last);
	return n;
}

struct cap_shape *cap_shape_first(struct cap_engine *ce)
{
	return ce->trie.mru;
}

struct cap_shape *cap_shape_next(const struct cap_shape *s)
{
	return s->next;
}

size_t cap_shape_count(struct cap_engine *ce)
{
	return ce->trie.nshapes;
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
