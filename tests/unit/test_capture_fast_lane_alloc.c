/* test_capture_fast_lane_alloc.c - capture's fast lanes across changes of the allocation map
 * (record.c: resolves_now, alloc.c's change log; issue 22). A program that allocates and frees
 * between steps (dataparallel's allocator) keeps the lanes for every op whose addresses no change
 * touched; an op whose copy side was freed, or freed and allocated again as another kind, is
 * resolved again and says what the map says now. Each window is recorded by an engine with the
 * lanes and one without; every op must be the same in both and resolve as a fresh engine
 * resolves it. tests layer (cmocka, libcufold.a; no driver). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture.h"

#define CTX ((CUcontext)0x7001)
#define S1 ((CUstream)0x5001)
#define DEV 0x100000ull              /* the program's device buffers */
#define PIN 0x800000ull              /* its pinned staging buffer */
#define FAR 0x4000000ull             /* where the per-step allocations come and go */
#define NOPS 10

/* The i-th call of the step: async memsets and device copies on S1, and at 5 a copy in from
 * the pinned buffer. */
static void step_call(int i, struct cap_call *c, struct cap_who *who)
{
	memset(c, 0, sizeof(*c));
	*who = (struct cap_who){ .ctx = CTX, .tid = 1, .t_ns = 0 };
	c->stream = S1;
	if (i == 5) {
		c->kind = CAP_OP_MEMCPY;
		c->api = DRV_ID_cuMemcpyHtoDAsync_v2;
		cap_call_copy_1d(c, CU_MEMORYTYPE_DEVICE, DEV + 0x8000, CU_MEMORYTYPE_HOST, PIN + 0x100, 256);
	} else if (i % 2 == 0) {
		c->kind = CAP_OP_MEMSET;
		c->api = DRV_ID_cuMemsetD32Async;
		c->u.memset = (struct cap_memset){ .dst = DEV + 0x1000u * (unsigned)i, .pitch = 256, .elem_size = 4,
						   .value = 7u + (unsigned)i, .width = 64, .height = 1 };
	} else {
		c->kind = CAP_OP_MEMCPY;
		c->api = DRV_ID_cuMemcpyDtoDAsync_v2;
		cap_call_copy_1d(c, CU_MEMORYTYPE_DEVICE, DEV + 0x1000u * (unsigned)i, CU_MEMORYTYPE_DEVICE,
				 DEV + 0x40000 + 0x1000u * (unsigned)i, 512);
	}
}

static struct cap_engine *make(bool fast)
{
	struct cap_config cfg = { .max_templates = 8, .no_fast_lane = !fast };
	struct cap_engine *ce = cap_engine_create(&cfg);

	assert_non_null(ce);
	cap_stream_created(ce, S1, CU_STREAM_NON_BLOCKING);
	assert_int_equal(cap_alloc_add(ce, DEV, 0x100000, CAP_ALLOC_DEVICE), 0);
	assert_int_equal(cap_alloc_add(ce, PIN, 0x1000, CAP_ALLOC_HOST_PINNED), 0);
	return ce;
}

/* What happens to the map between two steps. */
typedef void (*between_fn)(struct cap_engine *ce, int step);

static void b_none(struct cap_engine *ce, int step) { (void)ce; (void)step; }
/* dataparallel's allocator: the batch of two steps ago freed, a new one allocated */
static void b_elsewhere(struct cap_engine *ce, int step)
{
	if (step >= 2)
		assert_int_equal(cap_alloc_remove(ce, FAR + (uint64_t)(step - 2) % 3 * 0x10000, NULL), 0);
	assert_int_equal(cap_alloc_add(ce, FAR + (uint64_t)step % 3 * 0x10000, 0x10000, CAP_ALLOC_DEVICE), 0);
}
/* the pinned buffer freed: its address is plain host memory from then on */
static void b_unpin(struct cap_engine *ce, int step)
{
	if (step == 3)
		assert_int_equal(cap_alloc_remove(ce, PIN, NULL), 0);
}
/* the pinned buffer freed and the address handed out again, pinned: the same answer */
static void b_repin(struct cap_engine *ce, int step)
{
	if (step == 3) {
		assert_int_equal(cap_alloc_remove(ce, PIN, NULL), 0);
		assert_int_equal(cap_alloc_add(ce, PIN, 0x1000, CAP_ALLOC_HOST_PINNED), 0);
	}
}

/* The op as a fresh engine with the map as it stands records it (every field resolving sets). */
static void resolves_fresh(const struct cap_op *op, bool pinned, const char *what)
{
	if (op->kind != CAP_OP_MEMCPY)
		return;
	if (op->u.memcpy.d.srcMemoryType == CU_MEMORYTYPE_HOST) {
		if (op->u.memcpy.src_pageable == pinned)
			fail_msg("%s: the copy from the staging buffer says pageable %d, the map says %d", what,
				 (int)op->u.memcpy.src_pageable, (int)!pinned);
		if (op->u.memcpy.dir != CAP_DIR_HTOD)
			fail_msg("%s: the copy from the staging buffer is not host to device", what);
	} else if (op->u.memcpy.src_pageable || op->u.memcpy.dst_pageable || op->u.memcpy.dir != CAP_DIR_DTOD) {
		fail_msg("%s: a device copy resolved otherwise", what);
	}
}

static void same_op(const struct cap_op *a, const struct cap_op *b, const char *what)
{
	if (a->kind != b->kind || a->flags != b->flags || a->key != b->key || a->bind != b->bind || a->seq != b->seq ||
	    a->vid != b->vid)
		fail_msg("%s: the lane's op differs from the long path's", what);
	if (a->kind == CAP_OP_MEMCPY &&
	    (a->u.memcpy.src_pageable != b->u.memcpy.src_pageable || a->u.memcpy.dst_pageable != b->u.memcpy.dst_pageable ||
	     a->u.memcpy.dir != b->u.memcpy.dir || a->u.memcpy.src_first != b->u.memcpy.src_first ||
	     a->u.memcpy.dst_first != b->u.memcpy.dst_first || a->u.memcpy.src_span != b->u.memcpy.src_span))
		fail_msg("%s: the lane's copy differs from the long path's", what);
}

/* Six steps, each a window closed by a synchronize, `between` applied before each. Returns the
 * ops the lanes took. */
static uint64_t run(between_fn between, const char *what)
{
	struct cap_engine *e[2] = { make(true), make(false) };
	struct cap_totals t;

	for (int step = 0; step < 6; step++) {
		for (int k = 0; k < 2; k++)
			between(e[k], step);
		for (int i = 0; i < NOPS; i++) {
			struct cap_rec r[2];
			struct cap_call c;
			struct cap_who who;

			step_call(i, &c, &who);
			for (int k = 0; k < 2; k++) {
				assert_int_equal(cap_record(e[k], &c, &who, &r[k]), 0);
				assert_int_equal(r[k].result, CAP_REC_RECORDED);
			}
			same_op(r[0].op, r[1].op, what);
			for (int k = 0; k < 2; k++)
				resolves_fresh(r[k].op, cap_alloc_find(e[k], PIN + 0x100) != NULL, what);
		}
		for (int k = 0; k < 2; k++)
			assert_non_null(cap_boundary(e[k], CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize));
	}
	cap_get_totals(e[0], &t);
	cap_engine_destroy(e[0]);
	cap_engine_destroy(e[1]);
	return t.ops_fast;
}

/* Allocations and frees elsewhere between the steps leave every lane as it is without them. */
static void test_elsewhere(void **state)
{
	uint64_t still = run(b_none, "no change"), moving = run(b_elsewhere, "allocations elsewhere");

	(void)state;
	print_message("fast lane: %llu ops with the map still, %llu with allocations elsewhere every step\n",
		      (unsigned long long)still, (unsigned long long)moving);
	assert_true(still > 0);
	assert_int_equal(moving, still);
}

/* The staging buffer unpinned: the copy from it is pageable from that step on, in both engines. */
static void test_unpinned(void **state)
{
	(void)state;
	run(b_unpin, "staging buffer unpinned");
}

/* Freed and pinned again at the same address: the copy resolves as before. */
static void test_repinned(void **state)
{
	(void)state;
	run(b_repin, "staging buffer pinned again");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elsewhere),
		cmocka_unit_test(test_unpinned),
		cmocka_unit_test(test_repinned),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
