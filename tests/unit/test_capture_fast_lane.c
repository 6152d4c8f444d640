/* test_capture_fast_lane.c - capture's fast lane (record.c: repeat, issue 22): a copy or memset
 * that repeats the predicted op is recorded without building or hashing it. Two engines side by
 * side, one with the fast lane and one without, record the same calls; every op and answer must
 * be the same in both, and every op's key and bindings what hashing its fields gives, its vid
 * the predicted op's only where replay's guards would call them equal. Each field a call can
 * change is changed in turn, at one op of a window that repeats the two before it. tests layer
 * (cmocka, libcufold.a; no driver). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "rewrite/effects.h"

#define CTX ((CUcontext)0x7001)
#define CTX2 ((CUcontext)0x7002)
#define S1 ((CUstream)0x5001)
#define S2 ((CUstream)0x5002)
#define BASE 0x100000ull
#define NOPS 12 /* ops a window: async memsets and copies on S1, S2 and the legacy stream */

/* The i-th call of the step, unchanged. */
static void step_call(int i, struct cap_call *c, struct cap_who *who)
{
	memset(c, 0, sizeof(*c));
	*who = (struct cap_who){ .ctx = CTX, .tid = 1, .t_ns = 0 };
	c->stream = i % 3 == 0 ? S1 : i % 3 == 1 ? S2 : 0;
	if (i % 2 == 0) {
		c->kind = CAP_OP_MEMSET;
		c->api = DRV_ID_cuMemsetD32Async;
		c->u.memset = (struct cap_memset){ .dst = BASE + 0x1000u * (unsigned)i, .pitch = 256, .elem_size = 4,
						   .value = 7u + (unsigned)i, .width = 64, .height = 1 };
	} else {
		c->kind = CAP_OP_MEMCPY;
		c->api = DRV_ID_cuMemcpyDtoDAsync_v2;
		cap_call_copy_1d(c, CU_MEMORYTYPE_DEVICE, BASE + 0x1000u * (unsigned)i, CU_MEMORYTYPE_DEVICE,
				 BASE + 0x40000 + 0x1000u * (unsigned)i, 512);
	}
}

/* One change to a call (the variant under test), applied to op `at` of the third window. */
typedef void (*change_fn)(struct cap_call *c, struct cap_who *who);

static struct cap_engine *make(bool fast)
{
	struct cap_config cfg = { .max_templates = 8, .no_fast_lane = !fast };
	struct cap_engine *ce = cap_engine_create(&cfg);

	assert_non_null(ce);
	cap_stream_created(ce, S1, CU_STREAM_NON_BLOCKING);
	cap_stream_created(ce, S2, CU_STREAM_NON_BLOCKING);
	assert_int_equal(cap_alloc_add(ce, BASE, 0x100000, CAP_ALLOC_DEVICE), 0);
	return ce;
}

/* Every field the two recordings could differ in (not t_ns: both engines get the call's). */
static void same_op(const struct cap_op *a, const struct cap_op *b, const char *what)
{
	if (a->kind != b->kind || a->flags != b->flags || a->stream_kind != b->stream_kind || a->api != b->api ||
	    a->stream_slot != b->stream_slot || a->tid != b->tid || a->stream != b->stream || a->ctx != b->ctx ||
	    a->key != b->key || a->bind != b->bind || a->callsite != b->callsite || a->seq != b->seq ||
	    a->vid != b->vid || a->t_ns != b->t_ns)
		fail_msg("%s: the fast lane's op differs from the long path's in its header", what);
	if (a->kind == CAP_OP_MEMSET && memcmp(&a->u.memset, &b->u.memset, sizeof(a->u.memset)) != 0)
		fail_msg("%s: the fast lane's memset differs", what);
	if (a->kind == CAP_OP_MEMCPY) {
		const struct cap_memcpy *x = &a->u.memcpy, *y = &b->u.memcpy;

		if (x->d.srcDevice != y->d.srcDevice || x->d.dstDevice != y->d.dstDevice ||
		    x->d.WidthInBytes != y->d.WidthInBytes || x->d.Height != y->d.Height || x->d.Depth != y->d.Depth ||
		    x->d.srcMemoryType != y->d.srcMemoryType || x->d.dstMemoryType != y->d.dstMemoryType ||
		    x->bytes != y->bytes || x->dir != y->dir || x->src_first != y->src_first ||
		    x->dst_first != y->dst_first || x->src_span != y->src_span || x->dst_span != y->dst_span ||
		    x->oned != y->oned || x->staged != y->staged || x->src_ctx != y->src_ctx || x->dst_ctx != y->dst_ctx)
			fail_msg("%s: the fast lane's copy differs", what);
	}
}

/* The op as recorded says what the call said, and its hashes are its fields'. */
static void op_is_call(const struct cap_op *op, const struct cap_call *c, const struct cap_who *who, const char *what)
{
	struct cap_op h = *op;

	if (op->api != c->api || op->stream != c->stream || op->ctx != who->ctx || op->tid != who->tid)
		fail_msg("%s: the op's header is not the call's", what);
	if (c->kind == CAP_OP_MEMSET &&
	    (op->u.memset.dst != c->u.memset.dst || op->u.memset.value != c->u.memset.value ||
	     op->u.memset.width != c->u.memset.width || op->u.memset.height != c->u.memset.height ||
	     op->u.memset.pitch != c->u.memset.pitch || op->u.memset.elem_size != c->u.memset.elem_size))
		fail_msg("%s: the op's memset is not the call's", what);
	if (c->kind == CAP_OP_MEMCPY &&
	    (op->u.memcpy.d.srcDevice != c->u.memcpy.d.srcDevice || op->u.memcpy.d.dstDevice != c->u.memcpy.d.dstDevice ||
	     op->u.memcpy.d.WidthInBytes != c->u.memcpy.d.WidthInBytes ||
	     op->u.memcpy.d.srcMemoryType != c->u.memcpy.d.srcMemoryType ||
	     op->u.memcpy.d.dstMemoryType != c->u.memcpy.d.dstMemoryType || op->u.memcpy.dst_ctx != c->u.memcpy.dst_ctx ||
	     op->u.memcpy.src_ctx != c->u.memcpy.src_ctx))
		fail_msg("%s: the op's copy is not the call's", what);
	cap_op_hash(&h);
	if (h.key != op->key || h.bind != op->bind)
		fail_msg("%s: the op's key or bindings are not its fields' hashes", what);
}

/* Three windows of the step into both engines, the third with change applied to op `at`.
 * Returns the ops the fast lane recorded. */
static uint64_t run(change_fn change, int at, bool differs, const char *what)
{
	struct cap_engine *e[2] = { make(true), make(false) };
	const struct cap_op *prev[NOPS] = { 0 }; /* the second window's ops, in the fast engine */
	struct cap_totals t;

	for (int win = 0; win < 3; win++) {
		for (int i = 0; i < NOPS; i++) {
			struct cap_rec r[2];
			struct cap_call c;
			struct cap_who who;

			step_call(i, &c, &who);
			if (win == 2 && i == at)
				change(&c, &who);
			for (int k = 0; k < 2; k++) {
				assert_int_equal(cap_record(e[k], &c, &who, &r[k]), 0);
				assert_int_equal(r[k].result, CAP_REC_RECORDED);
			}
			if (r[0].kind != r[1].kind || r[0].ends_window != r[1].ends_window || r[0].index != r[1].index ||
			    r[0].window != r[1].window || r[0].seq != r[1].seq || r[0].bytes != r[1].bytes ||
			    r[0].func != r[1].func || (r[0].closed == NULL) != (r[1].closed == NULL))
				fail_msg("%s: window %d op %d: the fast lane's answer differs", what, win, i);
			same_op(r[0].op, r[1].op, what);
			op_is_call(r[0].op, &c, &who, what);
			if (win == 2 && prev[i] && r[0].op->vid == prev[i]->vid && !rw_op_same(r[0].op, prev[i]))
				fail_msg("%s: op %d took the predicted op's vid but is not the same op", what, i);
			if (win == 2 && i == at && differs && prev[i] && r[0].op->vid == prev[i]->vid)
				fail_msg("%s: op %d was changed but kept the predicted op's vid", what, i);
		}
		if (win == 1) /* the ops stay in the shape's last window while the third records */
			for (int i = 0; i < NOPS; i++)
				prev[i] = cap_window_op(cap_window_current(e[0]), (uint32_t)i);
		for (int k = 0; k < 2; k++)
			assert_non_null(cap_boundary(e[k], CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize));
	}
	cap_get_totals(e[0], &t);
	cap_engine_destroy(e[0]);
	cap_engine_destroy(e[1]);
	return t.ops_fast;
}

static void ch_none(struct cap_call *c, struct cap_who *who) { (void)c; (void)who; }
static void ch_api(struct cap_call *c, struct cap_who *who)
{
	(void)who;
	c->api = c->kind == CAP_OP_MEMSET ? DRV_ID_cuMemsetD32Async_ptsz : DRV_ID_cuMemcpyDtoDAsync_v2_ptsz;
}
static void ch_stream(struct cap_call *c, struct cap_who *who) { (void)who; c->stream = c->stream == S1 ? S2 : S1; }
/* the legacy stream named the other way: the same stream record and slot, another op */
static void ch_legacy(struct cap_call *c, struct cap_who *who)
{
	(void)who;
	c->stream = c->stream ? 0 : CU_STREAM_LEGACY;
}
static void ch_ctx(struct cap_call *c, struct cap_who *who) { (void)c; who->ctx = CTX2; }
static void ch_tid(struct cap_call *c, struct cap_who *who) { (void)c; who->tid = 2; }
static void ch_ms_dst(struct cap_call *c, struct cap_who *who) { (void)who; c->u.memset.dst += 4; }
static void ch_ms_pitch(struct cap_call *c, struct cap_who *who) { (void)who; c->u.memset.pitch += 4; }
static void ch_ms_elem(struct cap_call *c, struct cap_who *who) { (void)who; c->u.memset.elem_size = 2; }
static void ch_ms_value(struct cap_call *c, struct cap_who *who) { (void)who; c->u.memset.value++; }
static void ch_ms_width(struct cap_call *c, struct cap_who *who) { (void)who; c->u.memset.width++; }
static void ch_ms_height(struct cap_call *c, struct cap_who *who) { (void)who; c->u.memset.height = 2; }
static void ch_cp_src(struct cap_call *c, struct cap_who *who) { (void)who; c->u.memcpy.d.srcDevice += 8; }
static void ch_cp_dst(struct cap_call *c, struct cap_who *who) { (void)who; c->u.memcpy.d.dstDevice += 8; }
static void ch_cp_width(struct cap_call *c, struct cap_who *who) { (void)who; c->u.memcpy.d.WidthInBytes += 8; }
static void ch_cp_dst_ctx(struct cap_call *c, struct cap_who *who) { (void)who; c->u.memcpy.dst_ctx = CTX; }
static void ch_cp_src_ctx(struct cap_call *c, struct cap_who *who) { (void)who; c->u.memcpy.src_ctx = CTX; }

/* A step repeated: the third window and most of the second go by the fast lane, and the answers
 * are the long path's. */
static void test_repeat_is_long_path(void **state)
{
	uint64_t fast;

	(void)state;
	fast = run(ch_none, -1, false, "no change");
	print_message("fast lane: %llu of %d ops\n", (unsigned long long)fast, 3 * NOPS);
	/* only the third window's slots hold ops (the first window's, recycled) and each stream's
	 * first op in a window numbers its slot the long way */
	assert_int_equal(fast, NOPS - 3);
}

/* Each field a call can change, changed at a memset (even index) and at a copy (odd): the
 * op is the call's, and never the predicted op's identity. */
static void test_each_field(void **state)
{
	static const struct {
		change_fn fn;
		int kind; /* CAP_OP_MEMSET, CAP_OP_MEMCPY, or -1: both */
		const char *name;
	} ch[] = {
		{ ch_api, -1, "api" },           { ch_stream, -1, "stream" },     { ch_legacy, -1, "legacy stream" },     { ch_ctx, -1, "context" },
		{ ch_ms_dst, CAP_OP_MEMSET, "memset dst" },   { ch_ms_pitch, CAP_OP_MEMSET, "memset pitch" },
		{ ch_ms_elem, CAP_OP_MEMSET, "memset elem" }, { ch_ms_value, CAP_OP_MEMSET, "memset value" },
		{ ch_ms_width, CAP_OP_MEMSET, "memset width" }, { ch_ms_height, CAP_OP_MEMSET, "memset height" },
		{ ch_cp_src, CAP_OP_MEMCPY, "copy src" },     { ch_cp_dst, CAP_OP_MEMCPY, "copy dst" },
		{ ch_cp_width, CAP_OP_MEMCPY, "copy width" }, { ch_cp_dst_ctx, CAP_OP_MEMCPY, "copy dst ctx" },
		{ ch_cp_src_ctx, CAP_OP_MEMCPY, "copy src ctx" },
	};

	(void)state;
	for (size_t k = 0; k < sizeof(ch) / sizeof(ch[0]); k++)
		for (int at = 3; at < 7; at++) { /* memsets at 4 and 6, copies at 3 and 5, each stream */
			int kind = at % 2 == 0 ? CAP_OP_MEMSET : CAP_OP_MEMCPY;

			if (ch[k].kind >= 0 && ch[k].kind != kind)
				continue;
			run(ch[k].fn, at, true, ch[k].name);
		}
}

/* Another thread's call at a repeated position: recorded with its thread, by either path. */
static void test_thread(void **state)
{
	(void)state;
	for (int at = 3; at < 7; at++)
		run(ch_tid, at, false, "thread"); /* the thread is no part of an op's identity */
}

/* Memsets on the per-thread default stream from two threads in turn: each thread's stream is a
 * record (and a slot of the window) of its own, however the stream cache remembered the one
 * asked before (streams.c, cap__stream_get: the entry that answered last is asked first). */
static void test_per_thread_streams(void **state)
{
	struct cap_engine *ce = make(true);
	uint16_t slot[6];

	(void)state;
	for (int win = 0; win < 3; win++) {
		for (int i = 0; i < 6; i++) {
			struct cap_who who = { .ctx = CTX, .tid = 1u + (uint32_t)(i % 2), .t_ns = 0 };
			struct cap_call c;
			struct cap_rec r;

			memset(&c, 0, sizeof(c));
			c.kind = CAP_OP_MEMSET;
			c.api = DRV_ID_cuMemsetD32Async_ptsz;
			c.stream = i < 3 ? CU_STREAM_PER_THREAD : 0; /* named both ways */
			c.u.memset = (struct cap_memset){ .dst = BASE + 0x1000u * (unsigned)i, .pitch = 256,
							  .elem_size = 4, .value = 7u, .width = 64, .height = 1 };
			assert_int_equal(cap_record(ce, &c, &who, &r), 0);
			assert_int_equal(r.result, CAP_REC_RECORDED);
			slot[i] = r.op->stream_slot;
		}
		for (int i = 2; i < 6; i++)
			if (slot[i] != slot[i % 2])
				fail_msg("window %d op %d: thread %d's per-thread stream took slot %u, not %u", win, i,
					 1 + i % 2, slot[i], slot[i % 2]);
		if (slot[0] == slot[1])
			fail_msg("window %d: two threads' per-thread streams share slot %u", win, slot[0]);
		assert_non_null(cap_boundary(ce, CAP_BOUNDARY_SYNC, DRV_ID_cuStreamSynchronize));
	}
	cap_engine_destroy(ce);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_repeat_is_long_path),
		cmocka_unit_test(test_each_field),
		cmocka_unit_test(test_thread),
		cmocka_unit_test(test_per_thread_streams),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
