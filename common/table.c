/* table.c - the string-keyed table of table.h: uthash (HASH_*_KEYPTR, keys held by pointer)
 * with cufold's hash and no exit on out-of-memory. common layer; the only file that includes
 * uthash.h (DESIGN.md: uthash only through common/).
 *
 * uthash links entries through a UT_hash_handle inside each of them; here that handle is the
 * caller's struct cf_table_link, the first and only member of struct ent, so a link pointer is
 * an entry pointer to uthash. */
#include "common/table.h"

#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/errors.h"
#include "common/hash.h"

/* Out of memory is an error code, never uthash's exit(-1): uthash leaves the entry out and the
 * table as it was. oomed is a local of cf_table_add. */
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(obj) (oomed = true)
/* cufold's hash (common/hash.h); uthash takes the bucket from its low bits. */
#define HASH_FUNCTION(keyptr, keylen, hashv) ((hashv) = (unsigned)cf_hash_bytes((keyptr), (keylen), CF_HASH_SEED))

#include <uthash.h>

struct ent {
	UT_hash_handle hh;           /* lives in the caller's struct cf_table_link */
};

_Static_assert(sizeof(struct cf_table_link) == sizeof(UT_hash_handle), "cf_table_link is not a UT_hash_handle");
_Static_assert(alignof(struct cf_table_link) >= alignof(UT_hash_handle), "cf_table_link is misaligned");

void cf_table_init(struct cf_table *t)
{
	t->head = NULL;
	t->tbl = NULL;
}

/* What HASH_CLEAR frees (this table has no bloom filter), taken from t->tbl rather than from the
 * first entry, which the owner may have freed already. */
void cf_table_fini(struct cf_table *t)
{
	UT_hash_table *tbl = t->tbl;

	if (tbl) {
		uthash_free(tbl->buckets, tbl->num_buckets * sizeof(UT_hash_bucket));
		uthash_free(tbl, sizeof(UT_hash_table));
	}
	cf_table_init(t);
}

struct cf_table_link *cf_table_find(const struct cf_table *t, const void *key, size_t len)
{
	struct ent *head = (struct ent *)t->head, *e = NULL;

	if (head)
		HASH_FIND(hh, head, key, (unsigned)len, e);
	return (struct cf_table_link *)e;
}

struct cf_table_link *cf_table_find_str(const struct cf_table *t, const char *s)
{
	return cf_table_find(t, s, strlen(s));
}

int cf_table_add(struct cf_table *t, struct cf_table_link *link, const void *key, size_t len)
{
	struct ent *head = (struct ent *)t->head, *e = (struct ent *)link;
	bool oomed = false;

	if (len > UINT32_MAX)
		return -CF_EINVAL;
	memset(link, 0, sizeof(*link));
	HASH_ADD_KEYPTR(hh, head, key, (unsigned)len, e);
	/* on out of memory uthash has taken link out again (and may have freed the table) */
	t->head = (struct cf_table_link *)head;
	t->tbl = head ? head->hh.tbl : NULL;
	return oomed ? -CF_ENOMEM : 0;
}

void cf_table_del(struct cf_table *t, struct cf_table_link *link)
{
	struct ent *head = (struct ent *)t->head, *e = (struct ent *)link;

	HASH_DELETE(hh, head, e);
	t->head = (struct cf_table_link *)head;
	t->tbl = head ? head->hh.tbl : NULL; /* the last delete freed the table */
}

size_t cf_table_count(const struct cf_table *t)
{
	const UT_hash_table *tbl = t->tbl;

	return tbl ? tbl->num_items : 0;
}

size_t cf_table_bytes(const struct cf_table *t)
{
	const UT_hash_table *tbl = t->tbl;

	return tbl ? sizeof(UT_hash_table) + tbl->num_buckets * sizeof(UT_hash_bucket) : 0;
}

struct cf_table_link *cf_table_next(const struct cf_table_link *link)
{
	return link ? (struct cf_table_link *)((const struct ent *)link)->hh.next : NULL;
}
