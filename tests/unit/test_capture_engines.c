/* test_capture_engines.c - two engines side by side (issue 26): capture parts made together
 * record independent windows, shapes, allocation maps, stream records and counters, and
 * destroying one leaves the other whole; replay parts over each keep their own totals. tests
 * layer (cmocka, libcufold.a; no driver). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "replay/replay.h"

#define CTX ((CUcontext)0x7001)
#define S1 ((CUstream)0x5001)
#define S2 ((CUstream)0x5002)

static void memset_into(struct cap_engine *ce, CUstream s, CUdeviceptr dst, size_t w)
{
	struct cap_call c;
	struct cap_who who = { .ctx = CTX, .tid = 1, .t_ns = 1 };
	struct cap_rec rec;

	memset(&c, 0, sizeof(c));
	c.kind = CAP_OP_MEMSET;
	c.api = DRV_ID_cuMemsetD32Async;
	c.stream = s;
	c.u.memset = (struct cap_memset){ .dst = dst, .pitch = w * 4, .elem_size = 4, .value = 7, .width = w,
					  .height = 1 };
	assert_int_equal(cap_record(ce, &c, &who, &rec), 0);
	assert_int_equal(rec.result, CAP_REC_RECORDED);
}

static struct cap_engine *make(void)
{
	struct cap_config cfg = { .max_templates = 8 };
	struct cap_engine *ce = cap_engine_create(&cfg);

	assert_non_null(ce);
	cap_stream_created(ce, S1, CU_STREAM_NON_BLOCKING);
	return ce;
}

/* Windows recorded into one engine are not in the other's open window, trie or counters. */
static void test_windows_apart(void **state)
{
	struct cap_engine *a = make(), *b = make();
	struct cap_totals ta, tb;
	struct cap_shape *sa, *sb;

	(void)state;
	/* interleaved: a's window has three ops on S1, b's one op on S2 */
	memset_into(a, S1, 0x10000, 16);
	cap_stream_created(b, S2, CU_STREAM_NON_BLOCKING);
	memset_into(b, S2, 0x20000, 32);
	memset_into(a, S1, 0x11000, 16);
	memset_into(a, S1, 0x12000, 16);
	assert_int_equal(cap_window_nops(cap_window_current(a)), 3);
	assert_int_equal(cap_window_nops(cap_window_current(b)), 1);
	/* b never saw S1 created: its window's only stream is S2 */
	assert_int_equal(cap_window_nstreams(cap_window_current(b)), 1);
	assert_ptr_equal(cap_window_stream(cap_window_current(b), 0)->handle, S2);

	sa = cap_boundary(a, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
	assert_non_null(sa);
	assert_int_equal(cap_shape_count(a), 1);
	assert_int_equal(cap_shape_count(b), 0); /* a's close filed nothing in b */
	assert_int_equal(cap_window_nops(cap_window_current(b)), 1);
	sb = cap_boundary(b, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize);
	assert_non_null(sb);
	assert_ptr_not_equal(sa, sb);
	assert_int_equal(cap_window_nops(cap_shape_last(sa)), 3);
	assert_int_equal(cap_window_nops(cap_shape_last(sb)), 1);
	/* both number their shapes and windows from 1: nothing is shared */
	assert_int_equal(cap_shape_id(sa), 1);
	assert_int_equal(cap_shape_id(sb), 1);
	assert_int_equal(cap_window_seq(cap_window_current(a)), 2);
	assert_int_equal(cap_window_seq(cap_window_current(b)), 2);

	cap_get_totals(a, &ta);
	cap_get_totals(b, &tb);
	assert_int_equal(ta.windows, 1);
	assert_int_equal(tb.windows, 1);
	assert_int_equal(ta.ops[CAP_OP_MEMSET], 3);
	assert_int_equal(tb.ops[CAP_OP_MEMSET], 1);
	assert_int_equal(ta.boundaries[CAP_BOUNDARY_SYNC], 1);
	assert_int_equal(tb.boundaries[CAP_BOUNDARY_SYNC], 1);

	/* destroying a leaves b whole: b keeps recording into its shape */
	cap_engine_destroy(a);
	memset_into(b, S2, 0x20000, 32);
	assert_ptr_equal(cap_boundary(b, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize), sb);
	assert_int_equal(cap_shape_sightings(sb), 2);
	cap_engine_destroy(b);
}

/* Each engine has its own allocation map. */
static void test_alloc_maps_apart(void **state)
{
	struct cap_engine *a = make(), *b = make();
	const struct cap_alloc *x;

	(void)state;
	assert_int_equal(cap_alloc_add(a, 0x100000, 0x1000, CAP_ALLOC_DEVICE), 0);
	assert_int_equal(cap_alloc_add(b, 0x200000, 0x2000, CAP_ALLOC_DEVICE), 0);
	assert_int_equal(cap_alloc_count(a), 1);
	assert_int_equal(cap_alloc_count(b), 1);
	assert_non_null(cap_alloc_find(a, 0x100010));
	assert_null(cap_alloc_find(a, 0x200010));
	assert_null(cap_alloc_find(b, 0x100010));
	x = cap_alloc_find(b, 0x200010);
	assert_non_null(x);
	assert_int_equal(x->id, 1); /* ids count per engine */
	assert_int_equal(cap_alloc_remove_range(a, 0, UINT64_MAX / 2), 1);
	assert_int_equal(cap_alloc_count(a), 0);
	assert_int_equal(cap_alloc_count(b), 1);
	cap_engine_destroy(a);
	cap_engine_destroy(b);
}

/* Replay parts over two capture parts keep their own state: deferred work and totals. */
static void test_replay_parts_apart(void **state)
{
	struct cap_engine *a = make(), *b = make();
	struct rpl_config rc = { .warmup = 2, .segment = 4, .min_ops = 2 };
	struct rpl_engine *ra = rpl_engine_create(a, &rc), *rb = rpl_engine_create(b, &rc);
	struct rpl_totals t;

	(void)state;
	assert_non_null(ra);
	assert_non_null(rb);
	assert_false(rpl_has_deferred(ra));
	assert_false(rpl_has_deferred(rb));
	rpl_get_totals(ra, &t);
	assert_int_equal(t.templates, 0);
	assert_int_equal(rpl_strict_events(ra), 0);
	assert_int_equal(rpl_strict_events(rb), 0);
	rpl_engine_destroy(ra);
	rpl_engine_destroy(rb);
	cap_engine_destroy(a);
	cap_engine_destroy(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_windows_apart),
		cmocka_unit_test(test_alloc_maps_apart),
		cmocka_unit_test(test_replay_parts_apart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
