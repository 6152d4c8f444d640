/* map.c - the open-addressing hash map of map.h. common layer. */
#include "common/map.h"

#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "common/errors.h"
#include "common/hash.h"

#define MAP_MIN_CAP 16

void cf_map_init(struct cf_map *m)
{
	memset(m, 0, sizeof(*m));
}

void cf_map_fini(struct cf_map *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* Fibonacci hashing: the top bits of key times 2^64/phi, log2(cap) of them. Three instructions
 * where a full finalizer took ten, on every lookup (issue 22); handles and keys that differ in
 * any bit still spread over the top bits. */
static size_t home(const struct cf_map *m, uint64_t key)
{
	return (size_t)((key * CF_HASH_SEED) >> (__builtin_clzll((unsigned long long)m->cap) + 1));
}

void *cf_map_get(const struct cf_map *m, uint64_t key)
{
	size_t i;

	if (!m->cap)
		return NULL;
	/* a power of two (home() masks) with a free slot, where every probe stops */
	cf_assert((m->cap & (m->cap - 1)) == 0 && m->n < m->cap);
	for (i = home(m, key);; i = (i + 1) & (m->cap - 1)) {
		const struct cf_map_slot *s = &m->slots[i];

		if (!s->val)
			return NULL;
		if (s->key == key)
			return s->val;
	}
}

static int grow(struct cf_map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : MAP_MIN_CAP;
	struct cf_map_slot *old = m->slots, *ns;
	size_t ocap = m->cap;

	if (ncap < m->cap || ncap > SIZE_MAX / sizeof(*ns))
		return -CF_ENOMEM;
	ns = calloc(ncap, sizeof(*ns));
	if (!ns)
		return -CF_ENOMEM;
	m->slots = ns;
	m->cap = ncap;
	for (size_t j = 0; j < ocap; j++) {
		size_t i;

		if (!old[j].val)
			continue;
		for (i = home(m, old[j].key); ns[i].val; i = (i + 1) & (ncap - 1))
			;
		ns[i] = old[j];
	}
	free(old);
	return 0;
}

int cf_map_put(struct cf_map *m, uint64_t key, void *val)
{
	size_t i;

	if (!val)
		return -CF_EINVAL;
	if ((m->n + 1) * 4 > m->cap * 3) {
		int rc = grow(m);

		if (rc)
			return rc;
	}
	for (i = home(m, key);; i = (i + 1) & (m->cap - 1)) {
		struct cf_map_slot *s = &m->slots[i];

		if (!s->val) {
			s->key = key;
			s->val = val;
			m->n++;
			cf_assert(m->n * 4 <= m->cap * 3); /* the load bound grow() keeps */
			return 0;
		}
		if (s->key == key) {
			s->val = val;
			return 0;
		}
	}
}

void *cf_map_del(struct cf_map *m, uint64_t key)
{
	size_t i, j, mask = m->cap - 1;
	void *val;

	if (!m->cap)
		return NULL;
	for (i = home(m, key);; i = (i + 1) & mask) {
		if (!m->slots[i].val)
			return NULL;
		if (m->slots[i].key == key)
			break;
	}
	val = m->slots[i].val;
	/* backward shift: move later entries of the run into the hole when their home allows */
	for (j = (i + 1) & mask; m->slots[j].val; j = (j + 1) & mask) {
		size_t h = home(m, m->slots[j].key);

		/* the entry at j may move to i when i lies cyclically in [h, j) */
		if (((j - h) & mask) >= ((j - i) & mask)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].val = NULL;
	m->slots[i].key = 0;
	m->n--;
	return val;
}

size_t cf_map_bytes(const struct cf_map *m)
{
	return m->cap * sizeof(*m->slots);
}

int cf_map_next(const struct cf_map *m, size_t *i, uint64_t *key, void **val)
{
	for (; *i < m->cap; (*i)++) {
		if (m->slots[*i].val) {
			if (key)
				*key = m->slots[*i].key;
			if (val)
				*val = m->slots[*i].val;
			(*i)++;
			return 1;
		}
	}
	return 0;
}
