/* test_capture_op_hash.c - an op's key and bindings (capture/op.c, cap_op_hash) and the hash map
 * (common/map.c) after issue 22 made both cheaper: every field the key names changes the key and
 * not the bindings, every binding changes the bindings and not the key, and the map finds every
 * key it holds (pointers a page apart, keys differing only in their top bits) through growth and
 * deletions; cap_op_hash_like, answered from another op, always agrees with cap_op_hash, and gives
 * an op its predicted op's vid only when replay's guards would find the two the same
 * (rw_op_same); cap_op_take_like, the record path's compare of a call with its predicted op, takes
 * it only when every argument is the same. tests layer (cmocka, libcufold.a; no driver). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "common/map.h"
#include "rewrite/effects.h"

static struct cap_func fn_a = { .id = 1, .layout_known = true, .name = "a" }; /* a kernel */
static struct cap_func fn_b = { .id = 2, .layout_known = true, .name = "b" }; /* another */
static unsigned char params[24];                                              /* parameter bytes */
static unsigned char params2[24];                                             /* other bytes */

static struct cap_op base(enum cap_op_kind kind)
{
	struct cap_op op;

	memset(&op, 0, sizeof(op));
	op.kind = (uint8_t)kind;
	op.api = 7;
	op.stream_slot = 1;
	op.stream_kind = 1;
	op.stream = (CUstream)0x5001;
	op.ctx = (CUcontext)0x7000;
	switch (kind) {
	case CAP_OP_KERNEL:
		op.u.kernel.info = &fn_a;
		op.u.kernel.handle = op.u.kernel.func = (CUfunction)0x9000;
		op.u.kernel.grid[0] = op.u.kernel.block[0] = 32;
		op.u.kernel.grid[1] = op.u.kernel.grid[2] = op.u.kernel.block[1] = op.u.kernel.block[2] = 1;
		op.u.kernel.params = params;
		op.u.kernel.param_size = sizeof(params);
		break;
	case CAP_OP_MEMCPY:
		op.u.memcpy.d.srcMemoryType = op.u.memcpy.d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		op.u.memcpy.d.WidthInBytes = 4096;
		op.u.memcpy.d.Height = op.u.memcpy.d.Depth = 1;
		op.u.memcpy.src_first = 0x10000;
		op.u.memcpy.dst_first = 0x20000;
		break;
	case CAP_OP_MEMSET:
		op.u.memset.dst = 0x30000;
		op.u.memset.elem_size = 4;
		op.u.memset.width = 256;
		op.u.memset.height = 1;
		break;
	default:
		op.u.event.event = (CUevent)0x6001;
		break;
	}
	return op;
}

enum { BIND, KEY, BOTH }; /* what a change must change: the bindings alone, the key alone, both */

/* Hash b and x (b with one field changed): what changed must be what key_field says. */
static void check(struct cap_op b, struct cap_op x, int key_field, const char *what)
{
	struct cap_op same = b, like = x;

	cap_op_hash(&b);
	cap_op_hash(&x);
	/* answered from the other op (record.c's prediction): always what hashing gives, so the
	 * field-by-field compare misses no field the hashes read */
	assert_true(cap_op_hash_like(&same, &b));
	if (same.key != b.key || same.bind != b.bind)
		fail_msg("%s: an equal op answered from its twin hashes otherwise", what);
	cap_op_hash_like(&like, &b);
	if (like.key != x.key || like.bind != x.bind)
		fail_msg("%s: answered from the op before the change, the hashes are not cap_op_hash's", what);
	if (key_field == BOTH && (x.key == b.key || x.bind == b.bind))
		fail_msg("%s: must change the key and the bindings", what);
	if (key_field == KEY && (x.key == b.key || x.bind != b.bind))
		fail_msg("%s: a key field must change the key and only the key", what);
	if (key_field == BIND && (x.bind == b.bind || x.key != b.key))
		fail_msg("%s: a binding must change the bindings and only the bindings", what);
}

#define MUT(kind, stmt, key_field)                                                                           \
	do {                                                                                                   \
		struct cap_op b_ = base(kind), x_ = base(kind);                                                \
		struct cap_op *o = &x_;                                                                        \
		stmt;                                                                                          \
		check(b_, x_, key_field, #kind ": " #stmt);                                                    \
	} while (0)

static void test_common_fields(void **state)
{
	(void)state;
	for (int k = CAP_OP_KERNEL; k <= CAP_OP_MEMSET; k++) {
		MUT(k, o->api = 8, KEY);
		MUT(k, o->stream_slot = 2, KEY);
		MUT(k, o->stream_kind = 2, KEY);
		MUT(k, o->stream = (CUstream)0x5002, BIND);
		MUT(k, o->ctx = (CUcontext)0x7001, BIND);
	}
}

static void test_copy_fields(void **state)
{
	(void)state;
	MUT(CAP_OP_MEMCPY, o->u.memcpy.d.srcMemoryType = CU_MEMORYTYPE_UNIFIED, KEY);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.d.dstMemoryType = CU_MEMORYTYPE_UNIFIED, KEY);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.dir = 3, KEY);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.src_pageable = true, KEY);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.dst_pageable = true, KEY);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.d.WidthInBytes = 4097, KEY);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.d.Height = 2, KEY);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.d.Depth = 2, KEY);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.src_first += 8, BIND);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.dst_first += 8, BIND);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.d.srcPitch = 8192, BIND);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.d.dstPitch = 8192, BIND);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.d.srcHeight = 4, BIND);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.d.dstHeight = 4, BIND);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.src_ctx = (CUcontext)0x7001, BIND);
	MUT(CAP_OP_MEMCPY, o->u.memcpy.dst_ctx = (CUcontext)0x7001, BIND);
	/* the same values in two fields are not the same op */
	MUT(CAP_OP_MEMCPY, (o->u.memcpy.src_first = 0x20000, o->u.memcpy.dst_first = 0x10000), BIND);
}

/* cap_op_hash_copy_like (a copy whose descriptor and resolution are its predicted op's): a
 * change in any field left for it to compare gives cap_op_hash's hashes */
static void copy_like_check(struct cap_op b, struct cap_op x, const char *what)
{
	struct cap_op like = x;

	cap_op_hash(&b);
	cap_op_hash(&x);
	cap_op_hash_copy_like(&like, &b);
	if (like.key != x.key || like.bind != x.bind)
		fail_msg("%s: a resolved copy answered from its predicted op hashes otherwise", what);
}

#define COPY_LIKE(stmt)                                                                                      \
	do {                                                                                                   \
		struct cap_op b_ = base(CAP_OP_MEMCPY), x_ = base(CAP_OP_MEMCPY);                              \
		struct cap_op *o = &x_;                                                                        \
		stmt;                                                                                          \
		copy_like_check(b_, x_, #stmt);                                                                \
	} while (0)

static void test_copy_like(void **state)
{
	(void)state;
	COPY_LIKE((void)o);
	COPY_LIKE(o->api = 8);
	COPY_LIKE(o->stream_slot = 2);
	COPY_LIKE(o->stream_kind = 2);
	COPY_LIKE(o->stream = (CUstream)0x5002);
	COPY_LIKE(o->ctx = (CUcontext)0x7001);
	COPY_LIKE(o->u.memcpy.src_ctx = (CUcontext)0x7001);
	COPY_LIKE(o->u.memcpy.dst_ctx = (CUcontext)0x7001);
}

/* The vid an op gets answered from b (capture.h): b's only when rw_op_same(op, b), which replay's
 * guards then skip (rewrite/plan.c, run_same_as). Returns whether it took b's. */
static bool vid_check(struct cap_op b, struct cap_op x, bool copy_like, const char *what)
{
	cap_op_hash(&b);
	b.vid = 77;
	x.vid = 5; /* whatever the slot held: the answer overwrites it */
	if (copy_like)
		cap_op_hash_copy_like(&x, &b);
	else
		cap_op_hash_like(&x, &b);
	if (x.vid != 77 && x.vid != 0)
		fail_msg("%s: an op's vid is b's or 0 (the recorder's own seq), not %llu", what, (unsigned long long)x.vid);
	if (x.vid == 77 && !rw_op_same(&x, &b))
		fail_msg("%s: took its predicted op's vid, but replay's guards would compare it otherwise", what);
	return x.vid == 77;
}

#define VID(kind, copy_like, stmt)                                                                           \
	do {                                                                                                   \
		struct cap_op b_ = base(kind), x_ = base(kind);                                                \
		struct cap_op *o = &x_, *ob = &b_;                                                             \
		(void)ob;                                                                                      \
		stmt;                                                                                          \
		vid_check(b_, x_, copy_like, #kind ": " #stmt);                                               \
	} while (0)

static void test_vid(void **state)
{
	static CUlaunchAttribute attrs[1]; /* a launch attribute (never compared: never the same) */

	(void)state;
	/* equal ops take it (the guards' shortcut is taken at all) */
	for (int k = CAP_OP_KERNEL; k <= CAP_OP_EVENT_WAIT; k++)
		assert_true(vid_check(base(k), base(k), false, "an equal op"));
	assert_true(vid_check(base(CAP_OP_MEMCPY), base(CAP_OP_MEMCPY), true, "an equal copy, resolved alike"));
	for (int k = CAP_OP_KERNEL; k <= CAP_OP_EVENT_WAIT; k++) {
		VID(k, false, o->api = 8);
		VID(k, false, o->stream = (CUstream)0x5002);
		VID(k, false, o->ctx = (CUcontext)0x7001);
	}
	/* every field rw_op_same compares, each kind */
	VID(CAP_OP_KERNEL, false, o->u.kernel.func = (CUfunction)0x9001);
	VID(CAP_OP_KERNEL, false, o->u.kernel.handle = (CUfunction)0x9001);
	VID(CAP_OP_KERNEL, false, (o->u.kernel.attrs = attrs, o->u.kernel.nattrs = 1));
	VID(CAP_OP_KERNEL, false, (o->u.kernel.attrs = ob->u.kernel.attrs = attrs, o->u.kernel.nattrs = ob->u.kernel.nattrs = 1));
	for (int i = 0; i < 3; i++) {
		VID(CAP_OP_KERNEL, false, o->u.kernel.grid[i] = 64);
		VID(CAP_OP_KERNEL, false, o->u.kernel.block[i] = 64);
	}
	VID(CAP_OP_KERNEL, false, o->u.kernel.shared_bytes = 128);
	VID(CAP_OP_KERNEL, false, o->u.kernel.param_size = 16);
	VID(CAP_OP_KERNEL, false, o->u.kernel.via_extra = true);
	for (size_t i = 0; i < sizeof(params); i++) {
		memset(params2, 0, sizeof(params2));
		params2[i] = 1;
		VID(CAP_OP_KERNEL, false, o->u.kernel.params = params2);
	}
	for (int copy_like = 0; copy_like < 2; copy_like++) {
		/* what resolving compared (record.c's resolves_same) is left out of the copy-like
		 * compare: only the fields it still reads change here for it */
		if (!copy_like) {
			VID(CAP_OP_MEMCPY, false, o->u.memcpy.dir = 3);
			VID(CAP_OP_MEMCPY, false, o->u.memcpy.src_first += 8);
			VID(CAP_OP_MEMCPY, false, o->u.memcpy.dst_first += 8);
			VID(CAP_OP_MEMCPY, false, (o->u.memcpy.d.WidthInBytes = 4097, o->u.memcpy.bytes = 4097));
			VID(CAP_OP_MEMCPY, false, o->u.memcpy.d.Height = 2);
			VID(CAP_OP_MEMCPY, false, o->u.memcpy.d.Depth = 2);
			VID(CAP_OP_MEMCPY, false, o->u.memcpy.d.srcPitch = 8192);
			VID(CAP_OP_MEMCPY, false, o->u.memcpy.d.dstPitch = 8192);
			VID(CAP_OP_MEMCPY, false, o->u.memcpy.d.srcHeight = 4);
			VID(CAP_OP_MEMCPY, false, o->u.memcpy.d.dstHeight = 4);
			VID(CAP_OP_MEMCPY, false, o->u.memcpy.d.srcMemoryType = CU_MEMORYTYPE_UNIFIED);
			VID(CAP_OP_MEMCPY, false, o->u.memcpy.d.dstMemoryType = CU_MEMORYTYPE_UNIFIED);
		}
		VID(CAP_OP_MEMCPY, copy_like, o->api = 8);
		VID(CAP_OP_MEMCPY, copy_like, o->stream = (CUstream)0x5002);
		VID(CAP_OP_MEMCPY, copy_like, o->ctx = (CUcontext)0x7001);
		VID(CAP_OP_MEMCPY, copy_like, o->u.memcpy.src_ctx = (CUcontext)0x7001);
		VID(CAP_OP_MEMCPY, copy_like, o->u.memcpy.dst_ctx = (CUcontext)0x7001);
		/* arrays resolve from address 0 alike: only the handle tells them apart */
		VID(CAP_OP_MEMCPY, copy_like, o->u.memcpy.d.srcArray = (CUarray)0x8001);
		VID(CAP_OP_MEMCPY, copy_like, o->u.memcpy.d.dstArray = (CUarray)0x8001);
		/* a pageable source is read at each call: never the same op, however equal */
		VID(CAP_OP_MEMCPY, copy_like, (o->u.memcpy.src_pageable = true, ob->u.memcpy.src_pageable = true));
	}
	VID(CAP_OP_MEMSET, false, o->u.memset.dst += 4);
	VID(CAP_OP_MEMSET, false, o->u.memset.pitch = 2048);
	VID(CAP_OP_MEMSET, false, o->u.memset.elem_size = 2);
	VID(CAP_OP_MEMSET, false, o->u.memset.value = 1);
	VID(CAP_OP_MEMSET, false, o->u.memset.width = 257);
	VID(CAP_OP_MEMSET, false, o->u.memset.height = 2);
	for (int k = CAP_OP_EVENT_RECORD; k <= CAP_OP_EVENT_WAIT; k++) {
		VID(k, false, o->u.event.event = (CUevent)0x6002);
		VID(k, false, o->u.event.flags = 1);
		VID(k, false, o->u.event.slot = 1);
	}
	/* a host function is never the same op to the guards */
	assert_false(vid_check(base(CAP_OP_HOST_FN), base(CAP_OP_HOST_FN), false, "a host function"));
}

/* cap_op_take_like (record.c's fast path): a call compared from its arguments with the predicted
 * op p. The same call takes p's key, bindings and vid and p's kind part; a call that differs
 * from p in any argument, or an op whose common part differs, never does (then nothing of op
 * changed). Every argument of a 1-D copy and of a memset is changed here once. */
enum { TL_DST = 0x20000, TL_SRC = 0x10000, TL_BYTES = 4096 };

static struct cap_call take_copy_call(void)
{
	struct cap_call c;

	memset(&c, 0xa5, sizeof(c)); /* whatever the hook's stack held: the builder sets it all */
	c.kind = CAP_OP_MEMCPY;
	c.api = 7;
	c.stream = (CUstream)0x5001;
	cap_call_copy_1d(&c, CU_MEMORYTYPE_DEVICE, TL_DST, CU_MEMORYTYPE_DEVICE, TL_SRC, TL_BYTES);
	return c;
}

static struct cap_call take_set_call(void)
{
	struct cap_call c;

	memset(&c, 0, sizeof(c));
	c.kind = CAP_OP_MEMSET;
	c.api = 7;
	c.stream = (CUstream)0x5001;
	c.u.memset = base(CAP_OP_MEMSET).u.memset;
	return c;
}

/* The predicted op recorded from c (resolved as capture would: device memory both sides). */
static struct cap_op take_pred(const struct cap_call *c)
{
	struct cap_op p = base((enum cap_op_kind)c->kind);

	if (c->kind == CAP_OP_MEMCPY) {
		p.u.memcpy = c->u.memcpy;
		/* as capture completes a 1-D call's descriptor when it builds the op */
		memset(&p.u.memcpy.d, 0, sizeof(p.u.memcpy.d));
		p.u.memcpy.d.srcMemoryType = c->u.memcpy.d.srcMemoryType;
		p.u.memcpy.d.dstMemoryType = c->u.memcpy.d.dstMemoryType;
		p.u.memcpy.d.srcHost = c->u.memcpy.d.srcHost;
		p.u.memcpy.d.dstHost = c->u.memcpy.d.dstHost;
		p.u.memcpy.d.srcDevice = c->u.memcpy.d.srcDevice;
		p.u.memcpy.d.dstDevice = c->u.memcpy.d.dstDevice;
		p.u.memcpy.d.WidthInBytes = c->u.memcpy.d.WidthInBytes;
		p.u.memcpy.d.Height = p.u.memcpy.d.Depth = 1;
		p.u.memcpy.bytes = TL_BYTES;
		p.u.memcpy.dir = CAP_DIR_DTOD;
		p.u.memcpy.src_first = TL_SRC;
		p.u.memcpy.dst_first = TL_DST;
		p.u.memcpy.src_span = p.u.memcpy.dst_span = TL_BYTES;
		p.u.memcpy.src_pageable = p.u.memcpy.dst_pageable = false;
		p.u.memcpy.staged = NULL;
	} else {
		p.u.memset = c->u.memset;
	}
	cap_op_hash(&p);
	p.vid = 77;
	return p;
}

/* op's common part as cap_record fills it before the fast path: p's unless a test changes it */
static struct cap_op take_slot(const struct cap_op *p)
{
	struct cap_op op;

	memset(&op, 0, sizeof(op));
	op.kind = p->kind;
	op.api = p->api;
	op.stream = p->stream;
	op.ctx = p->ctx;
	op.stream_slot = p->stream_slot;
	op.stream_kind = p->stream_kind;
	return op;
}

static void take_refused(struct cap_op op, const struct cap_call *c, const struct cap_op *p, const char *what)
{
	for (int held = 0; held < 2; held++) {
		struct cap_op before = op;

		if (cap_op_take_like(&op, c, p, held))
			fail_msg("%s: taken as the predicted op, but it differs from it", what);
		if (memcmp(&op, &before, sizeof(op)) != 0)
			fail_msg("%s: refused, but op was changed", what);
	}
}

#define TAKE_CALL(mk, stmt)                                                                                  \
	do {                                                                                                   \
		struct cap_call c_ = mk(), *c = &c_;                                                           \
		struct cap_call pc_ = mk();                                                                    \
		struct cap_op p_ = take_pred(&pc_);                                                            \
		stmt;                                                                                          \
		take_refused(take_slot(&p_), c, &p_, #mk ": " #stmt);                                          \
	} while (0)

/* a call of another entry point (api 8): its slot names it */
#define TAKE_CALL_API(mk, stmt)                                                                              \
	do {                                                                                                   \
		struct cap_call c_ = mk(), *c = &c_;                                                           \
		struct cap_call pc_ = mk();                                                                    \
		struct cap_op p_ = take_pred(&pc_), o_;                                                        \
		stmt;                                                                                          \
		c->api = 8;                                                                                    \
		o_ = take_slot(&p_);                                                                           \
		o_.api = c->api;                                                                               \
		take_refused(o_, c, &p_, #mk ": " #stmt);                                                      \
	} while (0)

#define TAKE_OP(mk, stmt)                                                                                    \
	do {                                                                                                   \
		struct cap_call c_ = mk();                                                                     \
		struct cap_op p_ = take_pred(&c_), o_ = take_slot(&p_), *o = &o_, *p = &p_;                    \
		(void)o;                                                                                       \
		(void)p;                                                                                       \
		stmt;                                                                                          \
		take_refused(o_, &c_, &p_, #mk ": " #stmt);                                                    \
	} while (0)

static void test_take_like(void **state)
{
	(void)state;
	/* the same call: p's op, hashes and vid, as building and hashing it would give */
	for (int k = 0; k < 2; k++) {
		struct cap_call c = k ? take_set_call() : take_copy_call();
		struct cap_op p = take_pred(&c), op = take_slot(&p), built = p;

		assert_true(cap_op_take_like(&op, &c, &p, false));
		cap_op_hash(&built);
		assert_int_equal(op.key, built.key);
		assert_int_equal(op.bind, built.bind);
		assert_int_equal(op.vid, 77);
		if (k) {
			assert_memory_equal(&op.u.memset, &p.u.memset, sizeof(op.u.memset));
		} else {
			assert_int_equal(op.u.memcpy.src_first, TL_SRC);
			assert_int_equal(op.u.memcpy.dst_first, TL_DST);
			assert_int_equal(op.u.memcpy.d.WidthInBytes, TL_BYTES);
			assert_int_equal(op.u.memcpy.bytes, TL_BYTES);
			assert_true(op.u.memcpy.oned);
			assert_null(op.u.memcpy.staged);
		}
	}
	/* every argument of a 1-D copy */
	TAKE_CALL(take_copy_call, cap_call_copy_1d(c, CU_MEMORYTYPE_DEVICE, TL_DST + 8, CU_MEMORYTYPE_DEVICE, TL_SRC, TL_BYTES));
	TAKE_CALL(take_copy_call, cap_call_copy_1d(c, CU_MEMORYTYPE_DEVICE, TL_DST, CU_MEMORYTYPE_DEVICE, TL_SRC + 8, TL_BYTES));
	TAKE_CALL(take_copy_call, cap_call_copy_1d(c, CU_MEMORYTYPE_DEVICE, TL_DST, CU_MEMORYTYPE_DEVICE, TL_SRC, TL_BYTES - 8));
	/* the memory types are the entry point's (shim/hooks_copy.c passes constants): a copy of
	 * other types is another entry point's, and its slot names that one (cap_record fills the
	 * common part from the call), which is compared before the arguments */
	TAKE_CALL_API(take_copy_call, cap_call_copy_1d(c, CU_MEMORYTYPE_HOST, TL_DST, CU_MEMORYTYPE_DEVICE, TL_SRC, TL_BYTES));
	TAKE_CALL_API(take_copy_call, cap_call_copy_1d(c, CU_MEMORYTYPE_DEVICE, TL_DST, CU_MEMORYTYPE_HOST, TL_SRC, TL_BYTES));
	TAKE_CALL_API(take_copy_call, cap_call_copy_1d(c, CU_MEMORYTYPE_UNIFIED, TL_DST, CU_MEMORYTYPE_DEVICE, TL_SRC, TL_BYTES));
	TAKE_CALL_API(take_copy_call, cap_call_copy_1d(c, CU_MEMORYTYPE_DEVICE, TL_DST, CU_MEMORYTYPE_UNIFIED, TL_SRC, TL_BYTES));
	TAKE_CALL(take_copy_call, c->u.memcpy.dst_ctx = (CUcontext)0x7001);
	TAKE_CALL(take_copy_call, c->u.memcpy.src_ctx = (CUcontext)0x7001);
	/* the same extent as a 2-D or 3-D descriptor: any field may differ, so never the shortcut */
	TAKE_CALL(take_copy_call, c->u.memcpy.oned = false);
	TAKE_CALL(take_copy_call, (c->u.memcpy.oned = false, c->u.memcpy.d.srcXInBytes = 8));
	/* what p was: resolved with the driver's help, or from pageable memory (staged per call) */
	TAKE_OP(take_copy_call, p->flags |= CAP_OPF_NO_DEFER);
	TAKE_OP(take_copy_call, p->u.memcpy.src_pageable = true);
	TAKE_OP(take_copy_call, p->u.memcpy.oned = false);
	/* every argument of a memset */
	TAKE_CALL(take_set_call, c->u.memset.dst += 4);
	TAKE_CALL(take_set_call, c->u.memset.pitch = 2048);
	TAKE_CALL(take_set_call, c->u.memset.elem_size = 2);
	TAKE_CALL(take_set_call, c->u.memset.value = 1);
	TAKE_CALL(take_set_call, c->u.memset.width = 257);
	TAKE_CALL(take_set_call, c->u.memset.height = 2);
	/* the common part, both kinds; and an op with no identity */
	TAKE_OP(take_copy_call, o->api = 8);
	TAKE_OP(take_copy_call, o->stream = (CUstream)0x5002);
	TAKE_OP(take_copy_call, o->ctx = (CUcontext)0x7001);
	TAKE_OP(take_copy_call, o->stream_slot = 2);
	TAKE_OP(take_copy_call, o->stream_kind = 2);
	TAKE_OP(take_copy_call, o->kind = CAP_OP_MEMSET);
	TAKE_OP(take_copy_call, p->vid = 0);
	TAKE_OP(take_set_call, o->api = 8);
	TAKE_OP(take_set_call, o->stream = (CUstream)0x5002);
	TAKE_OP(take_set_call, o->ctx = (CUcontext)0x7001);
	TAKE_OP(take_set_call, o->stream_slot = 2);
	TAKE_OP(take_set_call, o->stream_kind = 2);
	TAKE_OP(take_set_call, p->vid = 0);
}

static void test_memset_event_fields(void **state)
{
	(void)state;
	MUT(CAP_OP_MEMSET, o->u.memset.elem_size = 2, KEY);
	MUT(CAP_OP_MEMSET, o->u.memset.width = 257, KEY);
	MUT(CAP_OP_MEMSET, o->u.memset.height = 2, KEY);
	MUT(CAP_OP_MEMSET, o->u.memset.dst += 4, BIND);
	MUT(CAP_OP_MEMSET, o->u.memset.pitch = 2048, BIND);
	MUT(CAP_OP_MEMSET, o->u.memset.value = 1, BIND);
	MUT(CAP_OP_EVENT_RECORD, o->u.event.slot = 1, KEY);
	MUT(CAP_OP_EVENT_RECORD, o->u.event.flags = 1, KEY);
	MUT(CAP_OP_EVENT_RECORD, o->u.event.event = (CUevent)0x6002, BIND);
}

static void test_kernel_fields(void **state)
{
	(void)state;
	MUT(CAP_OP_KERNEL, o->u.kernel.info = &fn_b, KEY);
	for (int i = 0; i < 3; i++) {
		MUT(CAP_OP_KERNEL, o->u.kernel.grid[i] = 64, KEY);
		MUT(CAP_OP_KERNEL, o->u.kernel.block[i] = 64, KEY);
	}
	MUT(CAP_OP_KERNEL, o->u.kernel.shared_bytes = 128, KEY);
	MUT(CAP_OP_KERNEL, o->u.kernel.param_size = 16, BOTH); /* fewer bytes hashed too */
	MUT(CAP_OP_KERNEL, o->u.kernel.via_extra = true, KEY);
	MUT(CAP_OP_KERNEL, o->u.kernel.handle = (CUfunction)0x9001, BIND);
	MUT(CAP_OP_KERNEL, o->u.kernel.func = (CUfunction)0x9001, BIND);
	/* every parameter byte, the tail past the last full word included */
	for (size_t i = 0; i < sizeof(params); i++) {
		memset(params2, 0, sizeof(params2));
		params2[i] = 1;
		MUT(CAP_OP_KERNEL, o->u.kernel.params = params2, BIND);
	}
	MUT(CAP_OP_KERNEL, (o->u.kernel.param_size = 20, o->u.kernel.params = params2), BOTH);
}

/* lp with byte i's top bit flipped, and byte i + gap's too where gap is not 0, must hash to
 * other bindings than lp (size bytes of each). */
static void flips_bind(unsigned char *lp, unsigned char *lp2, uint32_t size, uint32_t i, uint32_t gap)
{
	memcpy(lp2, lp, size);
	lp2[i] ^= 0x80;
	if (gap)
		lp2[i + gap] ^= 0x80;
	MUT(CAP_OP_KERNEL,
	    (o->u.kernel.params = lp2, o->u.kernel.param_size = size, b_.u.kernel.params = lp, b_.u.kernel.param_size = size),
	    BIND);
}

/* Parameter blocks past 32 bytes (hash_params' four streams, then its words and tail): every
 * byte is a binding, and so is every pair of equal changes 8 bytes apart (two streams' words) or
 * 32 bytes apart (one stream's two words: the top bit's change would cancel without the
 * stream step's rotation). */
static void test_kernel_params_long(void **state)
{
	static unsigned char lp[100], lp2[100];
	const uint32_t sizes[] = { 32, 40, 64, 100 };

	(void)state;
	for (size_t j = 0; j < sizeof(lp); j++)
		lp[j] = (unsigned char)(j * 37 + 11);
	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		for (uint32_t i = 0; i < sizes[z]; i++)
			flips_bind(lp, lp2, sizes[z], i, 0);
		for (uint32_t i = 0; i + 8 < sizes[z]; i++)
			flips_bind(lp, lp2, sizes[z], i, 8);
		for (uint32_t i = 0; i + 32 < sizes[z]; i++)
			flips_bind(lp, lp2, sizes[z], i, 32);
	}
}

/* The map through growth and deletion, with keys that share all but a few bits. */
static void test_map(void **state)
{
	struct cf_map m;
	enum { N = 3000 };

	(void)state;
	cf_map_init(&m);
	for (int pass = 0; pass < 3; pass++) {
		uint64_t key[N];

		for (uint64_t i = 0; i < N; i++) {
			key[i] = pass == 0 ? 0x7f0000000000ull + (i << 12) : /* pointers a page apart */
					 pass == 1 ? i << 52 :                /* only the top bits differ */
						     i;                       /* small integers */
			assert_int_equal(cf_map_put(&m, key[i], (void *)(uintptr_t)(i + 1)), 0);
		}
		for (uint64_t i = 0; i < N; i++)
			assert_ptr_equal(cf_map_get(&m, key[i]), (void *)(uintptr_t)(i + 1));
		for (uint64_t i = 0; i < N; i += 2)
			assert_ptr_equal(cf_map_del(&m, key[i]), (void *)(uintptr_t)(i + 1));
		for (uint64_t i = 0; i < N; i++)
			assert_ptr_equal(cf_map_get(&m, key[i]), i % 2 ? (void *)(uintptr_t)(i + 1) : NULL);
		for (uint64_t i = 1; i < N; i += 2)
			assert_ptr_equal(cf_map_del(&m, key[i]), (void *)(uintptr_t)(i + 1));
		assert_int_equal(m.n, 0);
	}
	cf_map_fini(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_common_fields),       cmocka_unit_test(test_copy_fields),
		cmocka_unit_test(test_copy_like),           cmocka_unit_test(test_vid),
		cmocka_unit_test(test_memset_event_fields), cmocka_unit_test(test_kernel_fields),
		cmocka_unit_test(test_map),                 cmocka_unit_test(test_take_like),
		cmocka_unit_test(test_kernel_params_long),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
