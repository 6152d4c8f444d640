/* test_common_table.c - the string-keyed table (common/table.c, uthash behind it) and the tables built
 * on it: insert, find, keys that are prefixes of one another or hold NULs, many entries, delete
 * while iterating, bytes, and freeing entries before or after cf_table_fini; then the call-site
 * registry (capture/callsite.c) from two threads. tests layer (cmocka, libcufold.a; no driver). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture_int.h"
#include "common/table.h"

static struct cap_engine *ce; /* the engine whose call-site registry is under test */

#define MANY 20000

struct item {
	int n;                       /* a payload */
	struct cf_table_link link;   /* in the table (not first, so CF_TABLE_ENTRY has work to do) */
	char name[24];               /* the key */
};

static struct item *item_new(int n, const char *fmt)
{
	struct item *it = calloc(1, sizeof(*it));

	assert_non_null(it);
	it->n = n;
	snprintf(it->name, sizeof(it->name), fmt, n);
	return it;
}

static struct item *find(const struct cf_table *t, const char *name)
{
	return CF_TABLE_ENTRY(cf_table_find_str(t, name), struct item, link);
}

static void free_all(struct cf_table *t)
{
	struct cf_table_link *l, *next;

	for (l = t->head; l; l = next) {
		next = cf_table_next(l);
		free(CF_TABLE_ENTRY(l, struct item, link));
	}
}

static void test_empty(void **state)
{
	struct cf_table t = CF_TABLE_INIT;

	(void)state;
	assert_null(cf_table_find_str(&t, "x"));
	assert_null(cf_table_find(&t, "", 0));
	assert_int_equal(cf_table_count(&t), 0);
	assert_int_equal(cf_table_bytes(&t), 0);
	assert_null(cf_table_next(NULL));
	cf_table_fini(&t);
	cf_table_fini(&t); /* twice is fine */
	assert_null(t.head);
}

static void test_insert_find_delete(void **state)
{
	struct cf_table t = CF_TABLE_INIT;
	struct item *a = item_new(1, "ab"), *b = item_new(2, "abc"), *c = item_new(3, "b");

	(void)state;
	assert_int_equal(cf_table_add(&t, &a->link, a->name, strlen(a->name)), 0);
	assert_int_equal(cf_table_add(&t, &b->link, b->name, strlen(b->name)), 0);
	assert_int_equal(cf_table_add(&t, &c->link, c->name, strlen(c->name)), 0);
	assert_int_equal(cf_table_count(&t), 3);
	assert_true(cf_table_bytes(&t) > 0);
	assert_ptr_equal(find(&t, "ab"), a); /* a prefix of another key is its own key */
	assert_ptr_equal(find(&t, "abc"), b);
	assert_ptr_equal(find(&t, "b"), c);
	assert_null(find(&t, "a"));
	assert_null(find(&t, "abcd"));
	assert_null(cf_table_find(&t, "abc", 4)); /* the NUL is not part of the key */
	/* insertion order */
	assert_ptr_equal(t.head, &a->link);
	assert_ptr_equal(cf_table_next(&a->link), &b->link);
	assert_ptr_equal(cf_table_next(&b->link), &c->link);
	assert_null(cf_table_next(&c->link));
	/* delete the head, the middle, then the last one */
	cf_table_del(&t, &a->link);
	assert_null(find(&t, "ab"));
	assert_ptr_equal(find(&t, "abc"), b);
	assert_ptr_equal(t.head, &b->link);
	free(a);
	cf_table_del(&t, &c->link);
	free(c);
	assert_int_equal(cf_table_count(&t), 1);
	cf_table_del(&t, &b->link);
	free(b);
	assert_null(t.head);
	assert_int_equal(cf_table_count(&t), 0);
	assert_int_equal(cf_table_bytes(&t), 0);
	cf_table_fini(&t);
}

/* Binary keys: 8-byte words with NULs inside, told apart by every byte. */
static void test_binary_keys(void **state)
{
	struct cf_table t = CF_TABLE_INIT;
	struct {
		struct cf_table_link link;
		uint64_t key;
	} e[3];

	(void)state;
	e[0].key = 0;
	e[1].key = 1;
	e[2].key = 1ull << 56;
	for (int i = 0; i < 3; i++)
		assert_int_equal(cf_table_add(&t, &e[i].link, &e[i].key, sizeof(e[i].key)), 0);
	for (int i = 0; i < 3; i++) {
		uint64_t k = e[i].key;

		assert_ptr_equal(cf_table_find(&t, &k, sizeof(k)), &e[i].link);
	}
	{
		uint64_t k = 2;

		assert_null(cf_table_find(&t, &k, sizeof(k)));
		assert_null(cf_table_find(&t, &k, 4)); /* a shorter key is another key */
	}
	cf_table_fini(&t); /* the entries live on the stack: fini reads none of them */
}

static void test_many(void **state)
{
	struct cf_table t = CF_TABLE_INIT;
	struct cf_table_link *l, *next;
	size_t bytes_before;
	int n;

	(void)state;
	for (int i = 0; i < MANY; i++) {
		struct item *it = item_new(i, "kernel_%d");

		assert_int_equal(cf_table_add(&t, &it->link, it->name, strlen(it->name)), 0);
	}
	assert_int_equal(cf_table_count(&t), MANY);
	bytes_before = cf_table_bytes(&t);
	assert_true(bytes_before >= MANY / 10 * sizeof(void *)); /* the buckets grew */
	for (int i = 0; i < MANY; i++) {
		char name[24];
		struct item *it;

		snprintf(name, sizeof(name), "kernel_%d", i);
		it = find(&t, name);
		assert_non_null(it);
		assert_int_equal(it->n, i);
		snprintf(name, sizeof(name), "kernel_%d_", i);
		assert_null(find(&t, name));
	}
	/* delete the odd ones while iterating */
	for (l = t.head; l; l = next) {
		struct item *it = CF_TABLE_ENTRY(l, struct item, link);

		next = cf_table_next(l);
		if (it->n & 1) {
			cf_table_del(&t, l);
			free(it);
		}
	}
	assert_int_equal(cf_table_count(&t), MANY / 2);
	n = 0;
	for (l = t.head; l; l = cf_table_next(l)) {
		assert_int_equal(CF_TABLE_ENTRY(l, struct item, link)->n, 2 * n);
		n++;
	}
	assert_int_equal(n, MANY / 2);
	assert_null(find(&t, "kernel_1"));
	assert_non_null(find(&t, "kernel_2"));
	/* entries freed first, then the table (the order cufold's owners use) */
	free_all(&t);
	cf_table_fini(&t);
	assert_int_equal(cf_table_count(&t), 0);
	assert_null(t.head);
}

/* A forked child forgets a table without freeing: cf_table_init empties it in place. */
static void test_init_forgets(void **state)
{
	struct cf_table t = CF_TABLE_INIT, saved;
	struct item *it = item_new(7, "k%d");

	(void)state;
	assert_int_equal(cf_table_add(&t, &it->link, it->name, strlen(it->name)), 0);
	saved = t;
	cf_table_init(&t);
	assert_null(find(&t, "k7"));
	assert_int_equal(cf_table_count(&t), 0);
	/* (in this test the memory is still ours: free it) */
	free_all(&saved);
	cf_table_fini(&saved);
}

/* ------------------------------------------------------------------ the call-site registry */

/* Under ThreadSanitizer no call site is captured on a second thread: libunwind (not
 * instrumented) frees the per-thread cache of unw_backtrace in a thread-specific-data destructor
 * that locks a mutex after TSan has finished the thread, and the thread's exit segfaults inside
 * TSan's mutex interceptor (a sanitizer build's limit, not cufold's: release builds run it). */
#ifdef __SANITIZE_THREAD__
#define CALLSITE_THREAD 0
#else
#define CALLSITE_THREAD 1
#endif

static void *capture_thread(void *arg)
{
	*(uint64_t *)arg = cap_callsite_capture(ce);
	return NULL;
}

static void test_callsites(void **state)
{
	struct cap_site_count top[8];
	uint64_t main_site, thread_site = 0, again;
	pthread_t th;
	size_t n;

	(void)state;
	ce = cap_engine_create(&(struct cap_config){ .callsites = true }); /* the registry is an engine's */
	assert_non_null(ce);
	main_site = cap_callsite_capture(ce);
	if (!main_site)
		skip(); /* no libunwind.so.8 here: call sites are off */
	assert_non_null(cap_callsite_name(ce, main_site));
	assert_true(strlen(cap_callsite_name(ce, main_site)) > 0);
	again = cap_callsite_capture(ce); /* the same frames outside this program: the same site */
	assert_int_equal(again, main_site);
	/* a thread's stack starts elsewhere (libc's thread start): another site */
	if (CALLSITE_THREAD) {
		assert_int_equal(pthread_create(&th, NULL, capture_thread, &thread_site), 0);
		assert_int_equal(pthread_join(th, NULL), 0);
		assert_true(thread_site != 0);
		assert_true(thread_site != main_site);
		assert_non_null(cap_callsite_name(ce, thread_site));
	} else {
		(void)th;
		print_message("SKIP test_callsites' second thread under ThreadSanitizer: libunwind's per-thread "
			      "destructor runs after TSan finished the thread and crashes it\n");
	}
	assert_null(cap_callsite_name(ce, main_site ^ thread_site ^ 0x5a5a)); /* never captured */
	for (int i = 0; i < 3; i++)
		cap__callsite_count(ce, main_site);
	if (CALLSITE_THREAD)
		cap__callsite_count(ce, thread_site);
	cap__callsite_count(ce, 12345); /* unknown: ignored */
	assert_true(cap__callsite_bytes(ce) > 0);
	n = cap__callsite_top(ce, top, 8);
	assert_int_equal(n, CALLSITE_THREAD ? 2 : 1);
	assert_int_equal(top[0].hash, main_site);
	assert_int_equal(top[0].ops, 3);
	if (CALLSITE_THREAD) {
		assert_int_equal(top[1].hash, thread_site);
		assert_int_equal(top[1].ops, 1);
	}
	cap__callsite_fini(ce);
	assert_null(cap_callsite_name(ce, main_site));
	assert_int_equal(cap__callsite_top(ce, top, 8), 0);
	/* the registry fills again after fini */
	assert_int_equal(cap_callsite_capture(ce), main_site);
	assert_non_null(cap_callsite_name(ce, main_site));
	cap_engine_destroy(ce);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_insert_find_delete),
		cmocka_unit_test(test_binary_keys),
		cmocka_unit_test(test_many),
		cmocka_unit_test(test_init_forgets),
		cmocka_unit_test(test_callsites),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
