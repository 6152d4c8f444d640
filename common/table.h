/* table.h - an intrusive hash table keyed by byte strings (names, signatures): uthash behind a
 * function interface, so this header and table.c are the only places that know uthash. common
 * layer.
 *
 * For tables keyed by what a record is (a kernel's name and layout, a call site, a name's card),
 * looked up when something is first seen; the per-call caches keyed by driver handles use
 * cf_map (map.h), which is faster there. An entry embeds a struct cf_table_link and owns its key:
 * the table keeps a pointer to the key bytes, which must not change or move while the entry is
 * in the table. Keys are compared byte for byte (the hash only picks the bucket). Not
 * thread-safe: the owner serializes. */
#ifndef CF_TABLE_H
#define CF_TABLE_H

#include <stddef.h>

/* What an entry embeds: the room of uthash's UT_hash_handle (table.c checks size and
 * alignment), opaque here. */
struct cf_table_link {
	void *opaque_p[6];           /* uthash's pointers */
	unsigned opaque_u[2];        /* uthash's key length and hash */
};

struct cf_table {
	struct cf_table_link *head;  /* the first entry in insertion order, or NULL when empty */
	void *tbl;                   /* uthash's table (buckets, count), NULL when empty: what
				      * cf_table_fini frees without reading an entry */
};

#define CF_TABLE_INIT { NULL, NULL }

/* The entry of type that holds link at member (link may be NULL: then NULL). */
#define CF_TABLE_ENTRY(link, type, member) \
	((link) ? (type *)(void *)((char *)(link) - offsetof(type, member)) : (type *)NULL)

/* An empty table; forgets (never frees) whatever t held (a forked child drops tables this way). */
void cf_table_init(struct cf_table *t);
/* Free the table's own memory; it reads no entry, so the owner frees its entries before or after
 * (walking them with cf_table_next, next taken before each free). */
void cf_table_fini(struct cf_table *t);
/* The link whose key is the len bytes at key, or NULL. */
struct cf_table_link *cf_table_find(const struct cf_table *t, const void *key, size_t len);
/* Shorthand: the key is the NUL-terminated string s (its bytes without the NUL). */
struct cf_table_link *cf_table_find_str(const struct cf_table *t, const char *s);
/* Add link under the len bytes at key (which must stay put while link is in t; the caller makes
 * sure the key is not in t yet). 0, or -CF_ENOMEM (t is unchanged). */
int cf_table_add(struct cf_table *t, struct cf_table_link *link, const void *key, size_t len);
/* Remove link (which is in t). */
void cf_table_del(struct cf_table *t, struct cf_table_link *link);
/* Entries in t. */
size_t cf_table_count(const struct cf_table *t);
/* Bytes of the table's own memory (buckets), entries excluded. */
size_t cf_table_bytes(const struct cf_table *t);
/* Iterate in insertion order: for (l = t->head; l; l = next) { next = cf_table_next(l); ... }
 * (taking next first allows deleting l or freeing its entry after cf_table_del). */
struct cf_table_link *cf_table_next(const struct cf_table_link *link);

#endif
