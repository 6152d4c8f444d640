/* test_capture_window.c - windows, the trie of shapes and the trace graph (capture/record.c,
 * trie.c, graph.c) on synthetic calls: alternating iteration shapes get a shape each, shared
 * prefixes, pointer stability, least-recently-used eviction, failed and empty windows, long and
 * full windows, which copies and memsets end a window, stream/event/legacy edges and memory
 * dependencies. tests layer (cmocka, libcufold.a; no driver: only calls capture answers alone). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "capture/capture_int.h"

static struct cap_engine *ce; /* the engine part under test */

#define CTX ((CUcontext)0x7000)
#define S1 ((CUstream)0x5001)
#define S2 ((CUstream)0x5002)
#define S3 ((CUstream)0x5003)
#define E1 ((CUevent)0x6001)
#define E2 ((CUevent)0x6002)

static uint64_t clock_ns;

static int start(unsigned int max_templates, uint32_t window_max_ops)
{
	struct cap_config cfg = { .max_templates = max_templates, .window_max_ops = window_max_ops };

	ce = cap_engine_create(&cfg);
	if (!ce)
		return -1;
	/* created streams with known flags: capture never asks the (absent) driver */
	cap_stream_created(ce, S1, CU_STREAM_NON_BLOCKING);
	cap_stream_created(ce, S2, CU_STREAM_NON_BLOCKING);
	cap_stream_created(ce, S3, CU_STREAM_DEFAULT);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	return start(16, 0);
}

static int teardown(void **state)
{
	(void)state;
	cap_engine_destroy(ce);
	return 0;
}

static struct cap_who who(void)
{
	return (struct cap_who){ .ctx = CTX, .tid = 1, .t_ns = ++clock_ns };
}

static struct cap_rec memset_on(enum drv_api_id api, CUstream s, CUdeviceptr dst, size_t w)
{
	struct cap_call c;
	struct cap_who wh = who();
	struct cap_rec rec;

	memset(&c, 0, sizeof(c));
	c.kind = CAP_OP_MEMSET;
	c.api = (uint16_t)api;
	c.stream = s;
	c.u.memset = (struct cap_memset){ .dst = dst, .pitch = w * 4, .elem_size = 4, .value = 7, .width = w,
					  .height = 1 };
	assert_int_equal(cap_record(ce, &c, &wh, &rec), 0);
	assert_int_equal(rec.result, CAP_REC_RECORDED);
	return rec;
}

static struct cap_rec memset_async(CUstream s, CUdeviceptr dst, size_t w)
{
	return memset_on(DRV_ID_cuMemsetD32Async, s, dst, w);
}

static struct cap_rec copy(enum drv_api_id api, CUstream s, CUmemorytype dt, uint64_t dst, CUmemorytype st,
			   uint64_t src, size_t n)
{
	struct cap_call c;
	struct cap_who wh = who();
	struct cap_rec rec;

	memset(&c, 0, sizeof(c));
	c.kind = CAP_OP_MEMCPY;
	c.api = (uint16_t)api;
	c.stream = s;
	cap_call_copy_1d(&c, dt, dst, st, src, n);
	assert_int_equal(cap_record(ce, &c, &wh, &rec), 0);
	return rec;
}

static void event(enum cap_op_kind kind, CUstream s, CUevent e)
{
	struct cap_call c;
	struct cap_who wh = who();
	struct cap_rec rec;

	memset(&c, 0, sizeof(c));
	c.kind = (uint8_t)kind;
	c.api = kind == CAP_OP_EVENT_RECORD ? DRV_ID_cuEventRecord : DRV_ID_cuStreamWaitEvent;
	c.stream = s;
	c.u.event.event = e;
	assert_int_equal(cap_record(ce, &c, &wh, &rec), 0);
}

static struct cap_shape *find_shape(uint64_t id)
{
	for (struct cap_shape *s = cap_shape_first(ce); s; s = cap_shape_next(s))
		if (cap_shape_id(s) == id)
			return s;
	return NULL;
}

/* One shape seen again and again as its prediction: its sightings compare the bindings from the
 * first op recorded with new ones (record.c: binds_new_from), and still count exactly which ops
 * moved: here the third of five moves in the first six iterations, the last in the next three,
 * and then nothing, so the shape is stable from there. */
static void test_moved_from_prediction(void **state)
{
	struct cap_shape *a = NULL, *s;

	(void)state;
	for (int i = 0; i < 12; i++) {
		for (int k = 0; k < 5; k++) {
			uint64_t dst = 0x10000 + (uint64_t)k * 0x1000;

			if ((k == 2 && i < 6) || (k == 4 && i >= 6 && i < 9))
				dst += (uint64_t)i * 0x100; /* moves */
			memset_async(S1, dst, 10 + (size_t)k);
		}
		s = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
		assert_non_null(s);
		if (a)
			assert_ptr_equal(s, a);
		a = s;
	}
	assert_int_equal(cap_shape_count(ce), 1);
	assert_int_equal(cap_shape_sightings(a), 12);
	assert_int_equal(cap_shape_moved(a, 0), 0);
	assert_int_equal(cap_shape_moved(a, 1), 0);
	assert_int_equal(cap_shape_moved(a, 2), 6); /* iterations 1..5, and back at 6 */
	assert_int_equal(cap_shape_moved(a, 3), 0);
	assert_int_equal(cap_shape_moved(a, 4), 4); /* 6..8, and back at 9 */
	assert_int_equal(cap_shape_stable(a), 2);   /* iterations 10 and 11 */
	assert_true(cap_shape_last_stable(a));
}

/* Two iteration shapes alternating: each gets its own shape, seen every other time, and the
 * binding comparison is per shape (one moves its pointer every time, the other never does). */
static void test_alternating_shapes(void **state)
{
	struct cap_shape *a = NULL, *b = NULL, *s;

	(void)state;
	for (int i = 0; i < 10; i++) {
		if (i % 2 == 0) {
			memset_async(S1, 0x10000 + (uint64_t)i * 0x1000, 10);
			memset_async(S1, 0x90000, 20);
		} else {
			memset_async(S1, 0xa0000, 30);
		}
		s = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
		assert_non_null(s);
		if (i % 2 == 0) {
			if (a)
				assert_ptr_equal(s, a);
			a = s;
		} else {
			if (b)
				assert_ptr_equal(s, b);
			b = s;
		}
	}
	assert_ptr_not_equal(a, b);
	assert_int_equal(cap_shape_count(ce), 2);
	assert_int_equal(cap_shape_sightings(a), 5);
	assert_int_equal(cap_shape_sightings(b), 5);
	assert_int_equal(cap_window_nops(cap_shape_last(a)), 2);
	assert_int_equal(cap_window_nops(cap_shape_last(b)), 1);
	/* a: its first memset moved every time, its second never */
	assert_int_equal(cap_shape_stable(a), 0);
	assert_false(cap_shape_last_stable(a));
	assert_int_equal(cap_shape_moved(a, 0), 4);
	assert_int_equal(cap_shape_moved(a, 1), 0);
	assert_int_equal(cap_shape_stable(b), 4);
	assert_true(cap_shape_last_stable(b));
	/* a matcher can walk the trie op by op */
	{
		const struct cap_window *w = cap_shape_last(a);
		const struct cap_trie_node *n = cap_trie_root(ce);

		n = cap_trie_child(ce, n, cap_window_op(w, 0)->key);
		assert_non_null(n);
		assert_null(cap_trie_shape(n));
		n = cap_trie_child(ce, n, cap_window_op(w, 1)->key);
		assert_ptr_equal(cap_trie_shape(n), a);
		assert_null(cap_trie_child(ce, n, 12345));
	}
	{
		struct cap_totals t;

		cap_get_totals(ce, &t);
		assert_int_equal(t.windows, 10);
		assert_int_equal(t.windows_by[CAP_BOUNDARY_SYNC], 10);
		assert_int_equal(t.ops[CAP_OP_MEMSET], 15);
	}
}

/* A window that is a prefix of another is a shape of its own. */
static void test_prefix(void **state)
{
	struct cap_shape *shorter, *longer;

	(void)state;
	memset_async(S1, 0x1000, 8);
	memset_async(S1, 0x2000, 8);
	shorter = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
	memset_async(S1, 0x1000, 8);
	memset_async(S1, 0x2000, 8);
	memset_async(S1, 0x3000, 8);
	longer = cap_boundary(ce, CAP_BOUNDARY_QUERY, DRV_ID_cuStreamQuery);
	assert_non_null(shorter);
	assert_non_null(longer);
	assert_ptr_not_equal(shorter, longer);
	assert_int_equal(cap_window_closed_by(cap_shape_last(longer)), CAP_BOUNDARY_QUERY);
	memset_async(S1, 0x1000, 8);
	memset_async(S1, 0x2000, 8);
	assert_ptr_equal(cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize), shorter);
	assert_int_equal(cap_shape_sightings(shorter), 2);
	assert_int_equal(cap_shape_stable(shorter), 1);
}

/* A stream handle destroyed and made again with other flags: the op on it has the new kind,
 * not what capture's remembered lookup answered for the old record (streams.c frees the old
 * record; the test takes its memory and fills it, so a stale answer reads garbage). */
static void test_stream_recreated(void **state)
{
	const struct cap_window *w;
	void *taken;

	(void)state;
	memset_async(S1, 0x1000, 8);
	w = cap_window_current(ce);
	assert_int_equal(cap_window_op(w, 0)->stream_kind, CAP_STREAM_NON_BLOCKING);
	cap_stream_forget(ce, S1);
	taken = malloc(sizeof(struct cap_stream)); /* where the old record was, most likely */
	assert_non_null(taken);
	memset(taken, 0xff, sizeof(struct cap_stream));
	cap_stream_created(ce, S1, CU_STREAM_DEFAULT);
	memset_async(S1, 0x1000, 8);
	assert_int_equal(cap_window_op(w, 1)->stream_kind, CAP_STREAM_BLOCKING);
	cap_stream_created(ce, S1, CU_STREAM_NON_BLOCKING); /* a reused handle: replaced */
	memset_async(S1, 0x1000, 8);
	assert_int_equal(cap_window_op(w, 2)->stream_kind, CAP_STREAM_NON_BLOCKING);
	free(taken);
}

/* A shape's path is pruned when it is evicted; the same window later walks the trie through
 * the edge map again, never through the freed node the parent walked to last (trie.c's
 * last_child): its shape ends at the node the map holds. */
static void test_pruned_path(void **state)
{
	const struct cap_trie_node *n;
	struct cap_shape *s;
	uint64_t k[2];

	(void)state;
	cap_engine_destroy(ce);
	assert_int_equal(start(1, 0), 0);
	memset_async(S1, 0x1000, 8);
	memset_async(S1, 0x2000, 16);
	s = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
	assert_non_null(s);
	k[0] = cap_window_op(cap_shape_last(s), 0)->key;
	k[1] = cap_window_op(cap_shape_last(s), 1)->key;
	memset_async(S1, 0x1000, 8); /* the prefix alone: the longer shape is evicted, its leaf pruned */
	assert_non_null(cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize));
	n = cap_trie_child(ce, cap_trie_root(ce), k[0]);
	assert_non_null(n);
	assert_null(cap_trie_child(ce, n, k[1]));
	memset_async(S1, 0x1000, 8);
	memset_async(S1, 0x2000, 16);
	s = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
	assert_non_null(s);
	assert_int_equal(cap_shape_sightings(s), 1);
	assert_ptr_equal(cap_trie_child(ce, n, k[1]), s->end);
	assert_ptr_equal(s->end->parent, n);
}

/* A copy that repeats the predicted window's copy takes its resolution (record.c), but only
 * while the allocation map is as it was: the pinned source unregistered in between makes the
 * same call a pageable copy again (a copy resolved as pinned would be deferred unstaged). */
static void test_copy_resolution_follows_map(void **state)
{
	const struct cap_window *w;

	(void)state;
	assert_int_equal(cap_alloc_add(ce, 0x200000, 0x10000, CAP_ALLOC_DEVICE), 0);
	assert_int_equal(cap_alloc_add(ce, 0x900000, 0x1000, CAP_ALLOC_HOST_PINNED), 0);
	for (int i = 0; i < 3; i++) { /* the shape is seen, then predicted */
		copy(DRV_ID_cuMemcpyHtoDAsync_v2, S1, CU_MEMORYTYPE_DEVICE, 0x200000, CU_MEMORYTYPE_HOST, 0x900000, 64);
		w = cap_window_current(ce);
		assert_int_equal(cap_window_op(w, 0)->u.memcpy.dir, CAP_DIR_HTOD);
		assert_false(cap_window_op(w, 0)->u.memcpy.src_pageable);
		assert_non_null(cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize));
	}
	assert_int_equal(cap_alloc_remove(ce, 0x900000, NULL), 0); /* unregistered */
	copy(DRV_ID_cuMemcpyHtoDAsync_v2, S1, CU_MEMORYTYPE_DEVICE, 0x200000, CU_MEMORYTYPE_HOST, 0x900000, 64);
	w = cap_window_current(ce);
	assert_true(cap_window_op(w, 0)->u.memcpy.src_pageable);
	assert_non_null(cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize));
	/* registered again: pinned again, though the window before resolved it pageable */
	assert_int_equal(cap_alloc_add(ce, 0x900000, 0x1000, CAP_ALLOC_HOST_REGISTERED), 0);
	copy(DRV_ID_cuMemcpyHtoDAsync_v2, S1, CU_MEMORYTYPE_DEVICE, 0x200000, CU_MEMORYTYPE_HOST, 0x900000, 64);
	assert_false(cap_window_op(cap_window_current(ce), 0)->u.memcpy.src_pageable);
}

/* At most max_templates shapes; the least recently seen goes. */
static void test_lru_eviction(void **state)
{
	struct cap_totals t;
	struct cap_shape *s;
	size_t widths[] = { 1, 2, 1, 3, 4 };

	(void)state;
	cap_engine_destroy(ce);
	assert_int_equal(start(2, 0), 0);
	for (size_t i = 0; i < 5; i++) {
		memset_async(S1, 0x1000, widths[i]);
		s = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
		assert_non_null(s);
	}
	/* seen: w1 (shape 1), w2 (2), w1 again, w3 (3: evicts 2), w4 (4: evicts 1) */
	assert_int_equal(cap_shape_count(ce), 2);
	assert_null(find_shape(1));
	assert_null(find_shape(2));
	assert_non_null(find_shape(3));
	assert_non_null(find_shape(4));
	cap_get_totals(ce, &t);
	assert_int_equal(t.shapes_evicted, 2);
	/* w2 again is a new shape */
	memset_async(S1, 0x1000, 2);
	s = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
	assert_int_equal(cap_shape_id(s), 5);
	assert_int_equal(cap_shape_sightings(s), 1);
}

/* Empty windows are not shapes; ops the driver refused are dropped at close. */
static void test_empty_and_failed(void **state)
{
	struct cap_rec r1, r2;
	struct cap_totals t;
	struct cap_shape *s;

	(void)state;
	assert_null(cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize));
	r1 = memset_async(S1, 0x1000, 4);
	cap_op_done(ce, &r1, true);
	assert_null(cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize));
	assert_int_equal(cap_shape_count(ce), 0);
	r1 = memset_async(S1, 0x1000, 4);
	r2 = memset_async(S1, 0x2000, 5);
	cap_op_done(ce, &r1, false);
	cap_op_done(ce, &r2, true);
	s = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
	assert_non_null(s);
	assert_int_equal(cap_window_nops(cap_shape_last(s)), 1);
	assert_int_equal(cap_window_op(cap_shape_last(s), 0)->u.memset.width, 4);
	cap_get_totals(ce, &t);
	assert_int_equal(t.boundaries[CAP_BOUNDARY_SYNC], 3);
	assert_int_equal(t.windows, 1);
	assert_int_equal(t.memsets, 1);
	assert_int_equal(t.bytes_set, 16);
}

/* An op refused after its window closed (it ended the window itself, or another thread's
 * boundary came between its call and its answer) is taken out of the shape: the window is filed
 * again without it, joining the shape of the same work without the refused call. */
static void test_refused_after_close(void **state)
{
	struct cap_rec r1, r2, rc;
	struct cap_totals t;
	struct cap_shape *s, *plain;
	char host[64];

	(void)state;
	/* the plain shape: one memset */
	memset_async(S1, 0x1000, 4);
	plain = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
	assert_non_null(plain);
	/* memset + a DtoH that closes its own window, then is refused */
	memset_async(S1, 0x1000, 4);
	rc = copy(DRV_ID_cuMemcpyDtoH_v2, 0, CU_MEMORYTYPE_HOST, (uint64_t)(uintptr_t)host, CU_MEMORYTYPE_DEVICE,
		  0x10, 64);
	assert_true(rc.ends_window);
	assert_non_null(rc.closed);
	assert_int_equal(cap_shape_count(ce), 2);
	cap_op_done(ce, &rc, true);
	/* the two-op shape is gone; its window joined the plain one */
	assert_int_equal(cap_shape_count(ce), 1);
	assert_ptr_equal(cap_shape_first(ce), plain);
	assert_int_equal(cap_shape_sightings(plain), 2);
	assert_int_equal(cap_window_nops(cap_shape_last(plain)), 1);
	/* another thread's boundary closes the window before the answer */
	r1 = memset_async(S1, 0x1000, 4);
	r2 = memset_async(S2, 0x2000, 8);
	s = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
	assert_ptr_not_equal(s, plain);
	cap_op_done(ce, &r1, false);
	cap_op_done(ce, &r2, true);
	assert_int_equal(cap_shape_count(ce), 1);
	assert_int_equal(cap_shape_sightings(plain), 3);
	/* a window whose only op is refused after the close leaves nothing behind */
	rc = copy(DRV_ID_cuMemcpyDtoH_v2, 0, CU_MEMORYTYPE_HOST, (uint64_t)(uintptr_t)host, CU_MEMORYTYPE_DEVICE,
		  0x10, 64);
	cap_op_done(ce, &rc, true);
	assert_int_equal(cap_shape_count(ce), 1);
	cap_get_totals(ce, &t);
	assert_int_equal(t.ops[CAP_OP_MEMCPY], 0);
	assert_int_equal(t.ops[CAP_OP_MEMSET], 3);
	assert_int_equal(t.windows, 3);
	/* the memset's window did close at the refused copy's call */
	assert_int_equal(t.windows_by[CAP_BOUNDARY_HOST_COPY], 1);
}

/* A window of thousands of ops inserts and matches in linear time. */
static void test_long_window(void **state)
{
	struct cap_shape *s1, *s2;
	struct timespec a, b;
	double ms[2];

	(void)state;
	for (int round = 0; round < 2; round++) {
		uint32_t n = round ? 20000 : 2000;

		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int rep = 0; rep < 2; rep++) {
			for (uint32_t i = 0; i < n; i++)
				memset_async(i % 3 ? S1 : S2, 0x100000 + i * 64, 1 + i % 7);
			s1 = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
			if (rep == 0)
				s2 = s1;
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		assert_ptr_equal(s1, s2);
		assert_int_equal(cap_shape_sightings(s1), 2);
		assert_int_equal(cap_window_nops(cap_shape_last(s1)), n);
		ms[round] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	}
	/* ten times the ops may not cost a hundred times the time (quadratic would) */
	assert_true(ms[1] < 40 * ms[0] + 50);
}

/* A shape's last window given the smaller ops array of the window it replaces (trie.c:
 * keep_small) keeps only the slots that array holds: filled never passes cap, else the next
 * recording in it (the fast lanes, the long path's held check) reads and writes past the array.
 * S is seen in a small array, T twice in large ones, then S again in T's first, larger array. */
static void test_small_array_keeps_filled(void **state)
{
	struct cap_shape *s = NULL, *t = NULL;
	const struct cap_window *w;

	(void)state;
	for (int round = 0; round < 4; round++) {
		bool long_one = round == 1 || round == 2;

		for (uint32_t i = 0; i < (long_one ? 40u : 12u); i++)
			memset_async(S1, 0x100000 + i * 64, long_one ? 2 : 1);
		if (long_one)
			t = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
		else
			s = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
	}
	assert_int_equal(cap_shape_sightings(s), 2);
	assert_int_equal(cap_shape_sightings(t), 2);
	w = cap_shape_last(s);
	assert_int_equal(w->nops, 12);
	assert_true(w->cap < 40); /* it was given the smaller array */
	if (w->filled > w->cap)
		fail_msg("the window kept filled %u past its array's %u slots", w->filled, w->cap);
	w = cap_shape_last(t);
	assert_true(w->filled <= w->cap);
	/* a new shape first seen in a long window's recycled array: its array is cut to fit
	 * (trie.c: fit), and filled with it */
	for (uint32_t i = 0; i < 12; i++)
		memset_async(S1, 0x100000 + i * 64, 3);
	w = cap_shape_last(cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize));
	assert_int_equal(w->nops, 12);
	if (w->filled > w->cap)
		fail_msg("the cut window kept filled %u past its array's %u slots", w->filled, w->cap);
	/* the windows of both arrays record on: a long window again, in every array */
	for (int round = 0; round < 4; round++) {
		for (uint32_t i = 0; i < 40; i++)
			memset_async(S1, 0x100000 + i * 64, 2);
		assert_ptr_equal(cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize), t);
		w = cap_shape_last(t);
		assert_true(w->filled <= w->cap);
	}
}

static void test_window_full(void **state)
{
	struct cap_totals t;

	(void)state;
	cap_engine_destroy(ce);
	assert_int_equal(start(16, 100), 0);
	for (int i = 0; i < 250; i++)
		memset_async(S1, 0x1000, 4);
	cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
	cap_get_totals(ce, &t);
	assert_int_equal(t.windows_by[CAP_BOUNDARY_FULL], 2);
	assert_int_equal(t.windows_by[CAP_BOUNDARY_SYNC], 1);
	assert_int_equal(cap_shape_count(ce), 2); /* 100 ops twice, then 50 */
}

/* Which copies and memsets end their own window. */
static void test_ends_window(void **state)
{
	struct cap_rec r;
	struct cap_totals t;
	char host[64];

	(void)state;
	assert_int_equal(cap_alloc_add(ce, 0x200000, 0x10000, CAP_ALLOC_DEVICE), 0);
	assert_int_equal(cap_alloc_add(ce, 0x300000, 0x10000, CAP_ALLOC_MANAGED), 0);
	/* async HtoD from pageable memory, async and sync DtoD: not host-visible */
	r = copy(DRV_ID_cuMemcpyHtoDAsync_v2, S1, CU_MEMORYTYPE_DEVICE, 0x200000, CU_MEMORYTYPE_HOST,
		 (uint64_t)(uintptr_t)host, 64);
	assert_false(r.ends_window);
	assert_true(cap_window_op(cap_window_current(ce), r.index)->u.memcpy.src_pageable);
	assert_int_equal(cap_window_op(cap_window_current(ce), r.index)->u.memcpy.dir, CAP_DIR_HTOD);
	r = copy(DRV_ID_cuMemcpyDtoD_v2, 0, CU_MEMORYTYPE_DEVICE, 0x200100, CU_MEMORYTYPE_DEVICE, 0x200000, 64);
	assert_false(r.ends_window);
	/* unified copy between device and managed memory: DtoD */
	r = copy(DRV_ID_cuMemcpyAsync, S1, CU_MEMORYTYPE_UNIFIED, 0x300000, CU_MEMORYTYPE_UNIFIED, 0x200000, 64);
	assert_false(r.ends_window);
	assert_int_equal(cap_window_op(cap_window_current(ce), r.index)->u.memcpy.dir, CAP_DIR_DTOD);
	/* sync memset of device memory: not host-visible */
	r = memset_on(DRV_ID_cuMemsetD32_v2, 0, 0x200000, 4);
	assert_false(r.ends_window);
	/* sync memset of managed memory blocks the host */
	r = memset_on(DRV_ID_cuMemsetD32_v2, 0, 0x300000, 4);
	assert_true(r.ends_window);
	assert_non_null(r.closed);
	assert_int_equal(cap_window_nops(cap_shape_last(r.closed)), 5);
	/* async DtoH ends the window (a copy into host memory) */
	memset_async(S1, 0x200000, 4);
	r = copy(DRV_ID_cuMemcpyDtoHAsync_v2, S1, CU_MEMORYTYPE_HOST, (uint64_t)(uintptr_t)host,
		 CU_MEMORYTYPE_DEVICE, 0x200000, 64);
	assert_true(r.ends_window);
	assert_int_equal(cap_window_op(cap_shape_last(r.closed), 1)->u.memcpy.dir, CAP_DIR_DTOH);
	/* sync HtoD waits for earlier work: ends it too */
	r = copy(DRV_ID_cuMemcpyHtoD_v2, 0, CU_MEMORYTYPE_DEVICE, 0x200000, CU_MEMORYTYPE_HOST,
		 (uint64_t)(uintptr_t)host, 64);
	assert_true(r.ends_window);
	cap_get_totals(ce, &t);
	assert_int_equal(t.windows_by[CAP_BOUNDARY_HOST_COPY], 3);
}

/* Stream order, event record -> wait, and the legacy stream's implicit synchronization. */
static void test_graph_edges(void **state)
{
	const struct cap_window *w;
	struct cap_graph *g;
	struct cap_shape *s;

	(void)state;
	memset_async(S1, 0x1000, 1); /* 0: S1 */
	event(CAP_OP_EVENT_RECORD, S1, E1); /* 1: S1 */
	memset_async(S2, 0x2000, 1); /* 2: S2 */
	event(CAP_OP_EVENT_WAIT, S2, E1); /* 3: S2 waits for 1 */
	memset_async(S2, 0x2000, 2); /* 4: S2 */
	memset_async(S1, 0x1000, 2); /* 5: S1 (not after 4) */
	event(CAP_OP_EVENT_RECORD, S2, E2); /* 6: S2 */
	event(CAP_OP_EVENT_WAIT, S1, E2); /* 7: S1 waits for 6 */
	memset_async(S3, 0x3000, 1); /* 8: S3, blocking */
	memset_async(0, 0x4000, 1); /* 9: legacy: after 8, not after non-blocking work */
	memset_async(S3, 0x3000, 2); /* 10: S3, after 9 */
	memset_async(S1, 0x1000, 3); /* 11: S1, after 7 only */
	s = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuCtxSynchronize);
	w = cap_shape_last(s);
	assert_int_equal(cap_window_nstreams(w), 4);
	assert_int_equal(cap_window_nevents(w), 2);
	assert_int_equal(cap_window_stream(w, 3)->kind, CAP_STREAM_LEGACY);
	g = cap_graph_build(w);
	assert_non_null(g);
	assert_int_equal(cap_graph_nnodes(g), 12);
	assert_true(cap_graph_has_edge(g, 0, 1));
	assert_int_equal(cap_graph_npred(g, 0), 0);
	assert_int_equal(cap_graph_npred(g, 2), 0);
	assert_true(cap_graph_has_edge(g, 2, 3));
	assert_true(cap_graph_has_edge(g, 1, 3));
	assert_int_equal(cap_graph_npred(g, 3), 2);
	assert_true(cap_graph_has_edge(g, 3, 4));
	assert_int_equal(cap_graph_npred(g, 5), 1);
	assert_true(cap_graph_has_edge(g, 1, 5));
	assert_true(cap_graph_has_edge(g, 6, 7));
	assert_true(cap_graph_has_edge(g, 5, 7));
	assert_int_equal(cap_graph_npred(g, 8), 0);
	assert_int_equal(cap_graph_npred(g, 9), 1);
	assert_true(cap_graph_has_edge(g, 8, 9));
	assert_int_equal(cap_graph_npred(g, 10), 2);
	assert_true(cap_graph_has_edge(g, 8, 10));
	assert_true(cap_graph_has_edge(g, 9, 10));
	assert_int_equal(cap_graph_npred(g, 11), 1);
	assert_true(cap_graph_has_edge(g, 7, 11));
	assert_int_equal(cap_graph_nedges(g), 12);
	cap_graph_destroy(g);
}

/* Copies read their source and write their destination; memsets write. */
static void test_memdeps(void **state)
{
	const struct cap_window *w;
	struct cap_graph *g;
	struct cap_shape *s;
	struct cap_access acc[4];
	uint64_t a_id;

	(void)state;
	assert_int_equal(cap_alloc_add(ce, 0xa0000, 0x1000, CAP_ALLOC_DEVICE), 0);
	assert_int_equal(cap_alloc_add(ce, 0xb0000, 0x1000, CAP_ALLOC_DEVICE), 0);
	assert_int_equal(cap_alloc_add(ce, 0xc0000, 0x1000, CAP_ALLOC_DEVICE), 0);
	a_id = cap_alloc_find(ce, 0xa0000)->id;
	copy(DRV_ID_cuMemcpyDtoDAsync_v2, S1, CU_MEMORYTYPE_DEVICE, 0xb0000, CU_MEMORYTYPE_DEVICE, 0xa0000, 256);
	memset_async(S2, 0xb0040, 4);                                    /* 1: writes B after 0 */
	copy(DRV_ID_cuMemcpyDtoDAsync_v2, S1, CU_MEMORYTYPE_DEVICE, 0xc0000, CU_MEMORYTYPE_DEVICE, 0xb0000, 256);
	memset_async(S2, 0xa0000, 4);                                    /* 3: writes A, read by 0 */
	copy(DRV_ID_cuMemcpyDtoDAsync_v2, S1, CU_MEMORYTYPE_DEVICE, 0xa0800, CU_MEMORYTYPE_DEVICE, 0xc0000, 16);
	s = cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuCtxSynchronize);
	w = cap_shape_last(s);
	assert_int_equal(cap_op_accesses(ce, cap_window_op(w, 0), acc, 4), 2);
	assert_int_equal(acc[0].alloc, a_id);
	assert_false(acc[0].write);
	assert_int_equal(acc[0].len, 256);
	assert_true(acc[1].write);
	g = cap_graph_build(w);
	assert_non_null(g);
	assert_int_equal(cap_graph_add_memdeps(ce, g, w), 5);
	assert_int_equal(cap_graph_nmemdep(g, 0), 0);
	assert_int_equal(cap_graph_nmemdep(g, 1), 1); /* WAW on B */
	assert_int_equal(cap_graph_memdep(g, 1)[0], 0);
	assert_int_equal(cap_graph_nmemdep(g, 2), 1); /* RAW on B */
	assert_int_equal(cap_graph_memdep(g, 2)[0], 1);
	assert_int_equal(cap_graph_nmemdep(g, 3), 1); /* WAR on A */
	assert_int_equal(cap_graph_memdep(g, 3)[0], 0);
	assert_int_equal(cap_graph_nmemdep(g, 4), 2); /* RAW on C (2), WAW on A (3) */
	assert_int_equal(cap_graph_memdep(g, 4)[0], 2);
	assert_int_equal(cap_graph_memdep(g, 4)[1], 3);
	cap_graph_destroy(g);
}

/* Keys and bindings: what changes the shape and what only the bindings. */
static void test_key_and_bindings(void **state)
{
	struct cap_rec r;
	const struct cap_op *a, *b, *c, *d;

	(void)state;
	memset_async(S1, 0x1000, 8);
	memset_async(S1, 0x2000, 8); /* other address: same key, other bindings */
	memset_async(S1, 0x1000, 9); /* other width: other key */
	r = memset_async(S2, 0x1000, 8); /* other stream slot: other key */
	a = cap_window_op(cap_window_current(ce), 0);
	b = cap_window_op(cap_window_current(ce), 1);
	c = cap_window_op(cap_window_current(ce), 2);
	d = cap_window_op(cap_window_current(ce), r.index);
	assert_int_equal(a->key, b->key);
	assert_int_not_equal(a->bind, b->bind);
	assert_int_not_equal(a->key, c->key);
	assert_int_not_equal(a->key, d->key);
	assert_int_equal(d->stream_slot, 1);
	assert_int_equal(a->stream_kind, CAP_STREAM_NON_BLOCKING);
	assert_string_equal(cap_op_name(a), "cuMemsetD32Async");
	assert_int_equal(cap_op_bytes(c), 36);
}

/* A stream handle created again (a reused handle, or a record made before its create was seen)
 * replaces its record without growing cufold's own memory figure. */
static void test_stream_recreated_bytes(void **state)
{
	size_t before;

	(void)state;
	before = cap__streams_bytes(ce);
	for (int i = 0; i < 5; i++)
		cap_stream_created(ce, S1, i % 2 ? CU_STREAM_DEFAULT : CU_STREAM_NON_BLOCKING);
	assert_int_equal(cap__streams_bytes(ce), before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_alternating_shapes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_moved_from_prediction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_recreated_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prefix, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lru_eviction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stream_recreated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pruned_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_copy_resolution_follows_map, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_and_failed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_after_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_small_array_keeps_filled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ends_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_graph_edges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memdeps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_and_bindings, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
