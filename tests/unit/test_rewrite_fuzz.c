/* test_rewrite_fuzz.c - randomized differential test of the whole rewriter: random windows biased towards
 * the rules' patterns and their near misses are rewritten with every registered rule at
 * CUFOLD_OPT=2; a byte-level interpreter runs the original ops and the plan's derived nodes on two
 * copies of one small arena, which must end byte for byte equal (in every order the plan's
 * dependency lists allow), and bindings moved so that the guards still hold must keep that
 * promise. tests layer (cmocka, libcufold.a).
 *
 * The interpreter is the reference: copies and memsets as the driver's entry points do them (read
 * from the descriptor, not from the fields the rules reason about, so a derived op whose fields
 * disagree is caught), the test kernels (tests/kernels/elementwise.cu, copy.cu; their cards in
 * tests/kernels/test-kernels.cards, which rw_test.h loads through CUFOLD_CARDS) with their grid
 * convention, cufold's batch kernels from their tables (rewrite/kernels/batch.h), and a
 * multi-instance launch (batch-kernel) as its instances, each run as its own launch, at once
 * (the table is this file's stand-in for the variant's: FUZZ_MULTI). An op
 * whose result would depend on how the device schedules it (a copy reading what it writes, two
 * threads or ranges touching one byte) is "racy": the generator never makes one, and a plan node
 * that is one is a bug even where this interpreter's one schedule happens to agree. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "rewrite/effects.h"
#define RWT_HASH_OPS /* duplicate compares ops by capture's hashes */
#include "rw_test.h"

/* The rules under test are the registered ones: the Makefile links every object of
 * rewrite/rules/ into this binary (not only those it names, as libcufold.a would), so a new rule
 * file is registered here as soon as it exists. The rules whose patterns (and near misses)
 * gen_window makes are listed by name: a registered rule missing here fails the test until the
 * generator learns its pattern and it is added. */
static const char *const fuzzed_rules[] = {
	"coalesce",   "slice-glue",   "dead-write",        "duplicate", "copy-chain",
	"batch-copy", "identity-cat", "batch-elementwise", "parallel",  "batch-kernel",
};
#define NFUZZED (sizeof(fuzzed_rules) / sizeof(fuzzed_rules[0]))
#define MAXRULES 64 /* room in the tally */

static const struct rw_rule *const *all_rules; /* rw_rules_registered() */
static size_t nrules;

/* ------------------------------------------------------------------ the arena */

#define BASE 0x7f0000000000ull /* four buffers of BUFSZ bytes, end to end */
#define NBUF 4u
#define BUFSZ 1024u
#define ARENA (NBUF * BUFSZ)
#define OWNSZ 4096u /* after the arena: cufold's buffers of writing elsewhere (rw__set_rename_hooks) */
#define MEMSZ (ARENA + OWNSZ)
#define A (BASE + 0 * BUFSZ)
#define B (BASE + 1 * BUFSZ)
#define C (BASE + 2 * BUFSZ)
#define D (BASE + 3 * BUFSZ)
#define BUF(b) (BASE + (uint64_t)(b) * BUFSZ)

#define MAXW 40  /* ops of a window at most (most have 2..24; a few are longer, for the batch limits) */
#define PB 128   /* parameter bytes kept per op (cat's are 112) */

enum xres {
	X_OK = 0,
	X_BAD,  /* malformed: an entry point, kernel or layout the driver would not run as the op says */
	X_OOB,  /* touches a byte outside the arena */
	X_RACE, /* its result depends on the device's schedule */
};

static const char *const xres_name[] = { "ok", "malformed", "out of bounds", "racy" };

/* ------------------------------------------------------------------ the test kernels */

enum kid { K_FILL, K_COPY, K_SCALE, K_AXPY, K_ADD, K_MUL, K_RELU, K_TANH, K_CAT, K_MYSTERY, K_COUNT };

#define ACC_R 1u
#define ACC_W 2u

/* A test kernel as its card (tests/kernels/test-kernels.cards) describes it: pointers first (8 bytes each), then an f32 scalar
 * when it has one, then the i32 count; cat is (struct cat_args 104, out ptr). mystery has no
 * card: the rewriter must treat it as touching anything (here it does p[i] = p[i] / 2 + 1). */
struct kdesc {
	const char *name;            /* entry name (the card's pattern) */
	const char *id;              /* what the regression builders call it */
	uint32_t nptr;               /* pointer parameters */
	uint8_t acc[3];              /* each pointer's access */
	bool scalar;                 /* an f32 parameter after the pointers */
};

static const struct kdesc kdesc[K_COUNT] = {
	[K_FILL] = { "fill", "K_FILL", 1, { ACC_W }, true },
	[K_COPY] = { "copy", "K_COPY", 2, { ACC_W, ACC_R }, false },
	[K_SCALE] = { "scale", "K_SCALE", 2, { ACC_W, ACC_R }, true },
	[K_AXPY] = { "axpy", "K_AXPY", 2, { ACC_R | ACC_W, ACC_R }, true },
	[K_ADD] = { "add", "K_ADD", 3, { ACC_W, ACC_R, ACC_R }, false },
	[K_MUL] = { "mul", "K_MUL", 3, { ACC_W, ACC_R, ACC_R }, false },
	[K_RELU] = { "relu", "K_RELU", 2, { ACC_W, ACC_R }, false },
	[K_TANH] = { "tanh_kernel", "K_TANH", 2, { ACC_W, ACC_R }, false },
	[K_CAT] = { "cat", "K_CAT", 0, { 0 }, false },
	[K_MYSTERY] = { "mystery", "K_MYSTERY", 1, { ACC_R | ACC_W }, false },
};

#define FUNC_HANDLE(k) ((CUfunction)(uintptr_t)(0xf0000u + (unsigned)(k)))
#define CAT_MAX 8 /* struct cat_args (104 bytes): 8 pointers at 0, 8 lengths at 64, the count at 96 */

static struct cap_func funcs[K_COUNT];
static uint32_t func_off[K_COUNT][5], func_size[K_COUNT][5];

/* Parameter offset of the count and of the scalar of an elementwise kernel. */
static uint32_t scalar_off(enum kid k)
{
	return 8 * kdesc[k].nptr;
}

static uint32_t count_off(enum kid k)
{
	return 8 * kdesc[k].nptr + (kdesc[k].scalar ? 4 : 0);
}

/* The cap_func records, as capture makes them from cuFuncGetParamInfo. */
static void funcs_init(void)
{
	for (unsigned k = 0; k < K_COUNT; k++) {
		struct cap_func *f = &funcs[k];
		uint32_t np = 0;

		if (k == K_CAT) {
			func_off[k][0] = 0;
			func_size[k][0] = 104;
			func_off[k][1] = 104;
			func_size[k][1] = 8;
			np = 2;
		} else {
			for (uint32_t j = 0; j < kdesc[k].nptr; j++) {
				func_off[k][np] = 8 * j;
				func_size[k][np++] = 8;
			}
			if (kdesc[k].scalar) {
				func_off[k][np] = scalar_off(k);
				func_size[k][np++] = 4;
			}
			func_off[k][np] = count_off(k);
			func_size[k][np++] = 4;
		}
		memset(f, 0, sizeof(*f));
		f->func = FUNC_HANDLE(k);
		f->id = k + 1;
		f->nparams = np;
		f->param_bytes = func_off[k][np - 1] + func_size[k][np - 1];
		f->layout_known = true;
		f->name = kdesc[k].name;
		f->offset = func_off[k];
		f->size = func_size[k];
	}
}

/* ------------------------------------------------------------------ windows */

/* The kernel of a test-kernel launch, or -1. */
static int op_kid(const struct cap_op *op)
{
	if (op->kind != CAP_OP_KERNEL || op->u.kernel.info < funcs || op->u.kernel.info >= funcs + K_COUNT)
		return -1;
	return (int)(op->u.kernel.info - funcs);
}


struct win {
	uint32_t n;                  /* ops */
	struct cap_op ops[MAXW];     /* as capture records them */
	unsigned char params[MAXW][PB]; /* kernel parameter bytes of op i */
};

static void win_fix(struct win *w)
{
	for (uint32_t i = 0; i < w->n; i++)
		if (w->ops[i].kind == CAP_OP_KERNEL)
			w->ops[i].u.kernel.params = w->params[i];
}

static void win_copy(struct win *d, const struct win *s)
{
	memcpy(d, s, sizeof(*d));
	win_fix(d);
}

static void win_remove(struct win *w, uint32_t i)
{
	memmove(&w->ops[i], &w->ops[i + 1], (w->n - i - 1) * sizeof(w->ops[0]));
	memmove(w->params[i], w->params[i + 1], (w->n - i - 1) * sizeof(w->params[0]));
	w->n--;
	win_fix(w);
}

static void win_ptrs(const struct win *w, const struct cap_op **ptr)
{
	for (uint32_t i = 0; i < w->n; i++)
		ptr[i] = &w->ops[i];
}

/* ------------------------------------------------------------------ decoding ops */

static bool in_arena(uint64_t a, uint64_t len)
{
	return a >= BASE && a - BASE <= ARENA && len <= ARENA - (a - BASE);
}

/* Writing elsewhere's buffers: ops rw_run derives may touch them (own_ok: while a run's ops are
 * checked), the program's never. */
static bool own_ok;
static uint64_t own_next; /* the stand-in allocator's next buffer */
static uint64_t renames_made, renamed_launches, copies_back, readers_kept; /* coverage (report) */

static bool in_own(uint64_t a, uint64_t len)
{
	return own_ok && a >= BASE + ARENA && a - BASE - ARENA <= OWNSZ && len <= OWNSZ - (a - BASE - ARENA);
}

static int own_alloc(CUcontext ctx, uint64_t bytes, uint64_t *out)
{
	(void)ctx;
	if (own_next - BASE - ARENA + bytes > OWNSZ)
		return -CF_ENOMEM; /* the fallback: that launch stays as it was */
	*out = own_next;
	own_next += bytes;
	return 0;
}

static void own_free(CUcontext ctx, uint64_t buf)
{
	(void)ctx;
	assert_true(buf >= BASE + ARENA && buf < own_next);
}

static const struct rw_rename_hooks fuzz_rename = { own_alloc, own_free, true };

static bool linear_type(CUmemorytype t)
{
	return t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_UNIFIED;
}

/* A copy as the driver runs it: height rows of width bytes, pitch apart on each side. */
struct xcopy {
	uint64_t src, dst;           /* first bytes read and written */
	uint64_t width, height;      /* bytes per row, rows */
	uint64_t spitch, dpitch;     /* from a row to the next (width for one row) */
};

static int decode_copy(const struct cap_op *op, struct xcopy *c, const char **why)
{
	const struct cap_memcpy *m = &op->u.memcpy;
	const CUDA_MEMCPY3D *d = &m->d;
	bool one_d;

	switch (op->api) {
	case DRV_ID_cuMemcpyDtoDAsync_v2:
	case DRV_ID_cuMemcpyAsync:
		one_d = true;
		break;
	case DRV_ID_cuMemcpy2DAsync_v2:
		one_d = false;
		break;
	default:
		*why = "copy through an entry point the interpreter does not model";
		return X_BAD;
	}
	if (m->dir != CAP_DIR_DTOD || !linear_type(d->srcMemoryType) || !linear_type(d->dstMemoryType) ||
	    (op->flags & CAP_OPF_STAGED) || m->src_ctx || m->dst_ctx) {
		*why = "copy not between linear device memory";
		return X_BAD;
	}
	if (d->Depth != 1 || d->srcZ || d->dstZ || !d->WidthInBytes || !d->Height) {
		*why = "copy of no bytes or of layers";
		return X_BAD;
	}
	if (one_d && (d->Height != 1 || d->srcXInBytes || d->srcY || d->dstXInBytes || d->dstY)) {
		*why = "1-D entry point with offsets or rows (the driver call would drop them)";
		return X_BAD;
	}
	if (d->Height > 1 && (d->srcPitch < d->WidthInBytes || d->dstPitch < d->WidthInBytes)) {
		*why = "2-D copy with a pitch below its width";
		return X_BAD;
	}
	c->width = d->WidthInBytes;
	c->height = d->Height;
	c->spitch = d->Height > 1 ? d->srcPitch : d->WidthInBytes;
	c->dpitch = d->Height > 1 ? d->dstPitch : d->WidthInBytes;
	c->src = d->srcDevice + d->srcXInBytes + d->srcY * d->srcPitch;
	c->dst = d->dstDevice + d->dstXInBytes + d->dstY * d->dstPitch;
	if (m->src_first != c->src || m->dst_first != c->dst) {
		*why = "src_first/dst_first disagree with the descriptor the driver runs";
		return X_BAD;
	}
	if (m->bytes != c->width * c->height || m->src_span != (c->height - 1) * c->spitch + c->width ||
	    m->dst_span != (c->height - 1) * c->dpitch + c->width) {
		*why = "bytes or spans disagree with the descriptor";
		return X_BAD;
	}
	return X_OK;
}

struct xset {
	uint64_t dst;                /* first byte */
	uint64_t pitch;              /* from a row to the next */
	uint64_t width, height;      /* elements per row, rows */
	unsigned es, value;          /* element size, element value */
};

static int decode_set(const struct cap_op *op, struct xset *s, const char **why)
{
	const struct cap_memset *m = &op->u.memset;
	unsigned es;
	bool two_d = false;

	switch (op->api) {
	case DRV_ID_cuMemsetD8Async: es = 1; break;
	case DRV_ID_cuMemsetD16Async: es = 2; break;
	case DRV_ID_cuMemsetD32Async: es = 4; break;
	case DRV_ID_cuMemsetD2D8Async: es = 1; two_d = true; break;
	case DRV_ID_cuMemsetD2D16Async: es = 2; two_d = true; break;
	case DRV_ID_cuMemsetD2D32Async: es = 4; two_d = true; break;
	default:
		*why = "memset through an entry point the interpreter does not model";
		return X_BAD;
	}
	/* one row of a 2-D form: the pitch is never used (simcuda accepts any) */
	if (m->elem_size != es || !m->width || !m->height || (!two_d && m->height != 1) ||
	    (two_d && m->height > 1 && (m->pitch < m->width * es || m->pitch % es)) || m->dst % es ||
	    (es < 4 && m->value >> (8 * es))) {
		*why = "memset whose element size, value, extent or alignment the entry point refuses";
		return X_BAD;
	}
	s->dst = m->dst;
	s->es = es;
	s->value = m->value;
	s->width = m->width;
	s->height = m->height;
	s->pitch = two_d && m->height > 1 ? m->pitch : m->width * es;
	return X_OK;
}

/* A kernel launch as the device runs it. */
struct xkern {
	int k;                       /* enum kid, or 100 + enum rw_kernel for cufold's kernels */
	uint64_t p[3];               /* elementwise: the pointers */
	float s;                     /* elementwise: the scalar */
	int64_t m;                   /* elementwise: elements computed (min of count and threads) */
	uint64_t threads;            /* gridDim.x * blockDim.x */
	uint64_t cin[CAT_MAX];       /* cat: inputs */
	int32_t clen[CAT_MAX];       /* cat: their lengths in floats */
	int32_t ccount;              /* cat: inputs used (clamped to 0 .. CAT_MAX) */
	uint64_t cout;               /* cat: output */
	int64_t clim;                /* cat: threads that can write (the others find no input) */
	const unsigned char *table;  /* batch kernels: the table */
};

#define KB_COPY (100 + RW_K_BATCH_COPY)
#define KB_SET (100 + RW_K_BATCH_MEMSET)
#define KB_COPY2D (100 + RW_K_BATCH_COPY2D)
#define K_MULTI 200 /* a multi-instance launch */

/* ------------------------------------------------------------------ the stand-in variant */

/* The multi-instance launches batch-kernel makes run this stand-in of a variant: its table is
 * the kernel, the count, then per instance its grid x and its parameter bytes. */
#define FUZZ_MULTI ((CUfunction)(uintptr_t)0xb47c4u)
#define MULTI_HEAD 8u            /* kernel (u32), count (u32) */
#define MULTI_INST(psize) (8u + (psize)) /* grid x (u32), pad, the parameters */

static struct cap_func multi_info = { .func = FUZZ_MULTI, .name = "fuzz_multi" }; /* no card, no layout */

static int op_kid(const struct cap_op *op);

static bool multi_possible(const struct cap_op *op)
{
	return op_kid(op) >= 0;
}

static int multi_launch(const struct cap_op *const *members, uint32_t k, void *table, uint32_t cap,
			struct cap_op *out)
{
	unsigned char *t = table;
	uint32_t psize = members[0]->u.kernel.param_size, kid = (uint32_t)op_kid(members[0]), gx = 0, at = MULTI_HEAD;

	if (MULTI_HEAD + k * MULTI_INST(psize) > cap)
		return -CF_EINVAL;
	memset(t, 0, MULTI_HEAD + k * MULTI_INST(psize));
	memcpy(t, &kid, 4);
	memcpy(t + 4, &k, 4);
	for (uint32_t i = 0; i < k; i++, at += MULTI_INST(psize)) {
		memcpy(t + at, &members[i]->u.kernel.grid[0], 4);
		memcpy(t + at + 8, members[i]->u.kernel.params, psize);
		gx += members[i]->u.kernel.grid[0];
	}
	*out = *members[0];
	out->u.kernel.func = out->u.kernel.handle = FUZZ_MULTI;
	out->u.kernel.info = &multi_info;
	out->u.kernel.grid[0] = gx;
	out->u.kernel.params = table;
	out->u.kernel.param_size = at;
	return 0;
}

static const struct rw_multi_hooks fuzz_multi = { multi_possible, multi_launch };

static uint64_t get_u64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static int32_t get_i32(const unsigned char *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

static float get_f32(const unsigned char *p)
{
	float v;

	memcpy(&v, p, 4);
	return v;
}

static int decode_batch(const struct cap_op *op, int kk, struct xkern *x, const char **why)
{
	const struct cap_kernel *k = &op->u.kernel;
	const struct cap_func *f = k->info;

	if (!f || strcmp(f->name, rw_kernel_name((enum rw_kernel)kk)) != 0 || f->nparams != 1 || f->offset[0] != 0 ||
	    f->size[0] != RW_BATCH_TABLE_SIZE || k->param_size != RW_BATCH_TABLE_SIZE || !k->params || k->via_extra ||
	    k->nattrs || k->handle != k->func || !k->grid[0] || !k->grid[1] || !k->grid[2] || !k->block[0]) {
		*why = "batch launch whose function, layout or grid does not match cufold's kernel";
		return X_BAD;
	}
	x->k = 100 + kk;
	x->table = k->params;
	return X_OK;
}

static int decode_kernel(const struct cap_op *op, struct xkern *x, const char **why)
{
	const struct cap_kernel *k = &op->u.kernel;
	const unsigned char *pb = k->params;
	enum kid kid;

	memset(x, 0, sizeof(*x));
	if (k->func == FUZZ_MULTI) {
		uint32_t mk, cnt;

		memcpy(&mk, pb, 4);
		memcpy(&cnt, pb + 4, 4);
		if (k->info != &multi_info || mk >= K_COUNT || cnt < 2 || cnt > RW_MULTI_MAX ||
		    k->param_size != MULTI_HEAD + cnt * MULTI_INST(funcs[mk].param_bytes)) {
			*why = "multi-instance launch whose table does not match its kernel";
			return X_BAD;
		}
		x->k = K_MULTI;
		x->table = pb;
		return X_OK;
	}
	if (k->func == RWT_FAKE_FUNC(RW_K_BATCH_COPY))
		return decode_batch(op, RW_K_BATCH_COPY, x, why);
	if (k->func == RWT_FAKE_FUNC(RW_K_BATCH_MEMSET))
		return decode_batch(op, RW_K_BATCH_MEMSET, x, why);
	if (k->func == RWT_FAKE_FUNC(RW_K_BATCH_COPY2D))
		return decode_batch(op, RW_K_BATCH_COPY2D, x, why);
	for (kid = 0; kid < K_COUNT; kid++)
		if (k->func == funcs[kid].func)
			break;
	if (kid == K_COUNT || k->info != &funcs[kid] || k->handle != k->func) {
		*why = "launch of a function the interpreter does not know, or whose record is not its own";
		return X_BAD;
	}
	if (k->param_size != funcs[kid].param_bytes || !pb || k->via_extra || k->nattrs || k->shared_bytes ||
	    k->grid[1] != 1 || k->grid[2] != 1 || k->block[1] != 1 || k->block[2] != 1 || !k->grid[0] || !k->block[0] ||
	    k->block[0] > 1024) {
		*why = "test kernel launch not 1-D or with a parameter size that is not its layout's";
		return X_BAD;
	}
	x->k = (int)kid;
	x->threads = (uint64_t)k->grid[0] * k->block[0];
	if (kid == K_CAT) {
		int64_t at = 0, lim = 0;
		int32_t cnt = get_i32(pb + 96);

		x->ccount = cnt < 0 ? 0 : cnt > CAT_MAX ? CAT_MAX : cnt;
		x->cout = get_u64(pb + 104);
		for (int32_t s = 0; s < x->ccount; s++) {
			x->cin[s] = get_u64(pb + 8 * (uint32_t)s);
			x->clen[s] = get_i32(pb + 64 + 4 * (uint32_t)s);
			/* thread i finds input s when i - (lengths before s) < len[s] */
			at += x->clen[s];
			if (at > lim)
				lim = at;
		}
		x->clim = (uint64_t)lim < x->threads ? lim : (int64_t)x->threads;
		return X_OK;
	}
	for (uint32_t j = 0; j < kdesc[kid].nptr; j++)
		x->p[j] = get_u64(pb + 8 * j);
	x->s = kdesc[kid].scalar ? get_f32(pb + scalar_off(kid)) : 0.0f;
	x->m = get_i32(pb + count_off(kid));
	if (x->m < 0)
		x->m = 0;
	if ((uint64_t)x->m > x->threads)
		x->m = (int64_t)x->threads;
	for (uint32_t j = 0; j < kdesc[kid].nptr && x->m; j++) {
		if (x->p[j] % 4) {
			*why = "misaligned float pointer";
			return X_BAD;
		}
	}
	return X_OK;
}

/* ------------------------------------------------------------------ walking an op's accesses */

/* Told that unit `unit` (a byte of a copy, a thread of a kernel; with per_byte, byte j of the
 * span belongs to unit + j) reads or writes [addr, addr + len). false stops the walk. */
struct visit {
	bool (*fn)(struct visit *v, uint32_t unit, bool per_byte, bool write, uint64_t addr, uint64_t len);
	int err;                     /* enum xres the visitor found */
	bool writes;                 /* check: the pass over writes (else over reads) */
	uint32_t *owner;             /* check: unit + 1 writing each arena byte */
	uint32_t *epoch;             /* check: owner[b] counts only when epoch[b] is this check's */
	uint32_t now;                /* check: this check's epoch */
	bool strict;                 /* check: a copy: no byte it reads may be written, even by the
				      * same unit (the driver promises nothing for overlapping sides) */
	uint8_t *rbits, *wbits;      /* masks: bits of bytes read and written */
};

static bool walk_copy(const struct xcopy *c, struct visit *v)
{
	for (uint64_t r = 0; r < c->height; r++) {
		uint32_t unit = (uint32_t)(r * c->width);

		if (!v->fn(v, unit, true, false, c->src + r * c->spitch, c->width) ||
		    !v->fn(v, unit, true, true, c->dst + r * c->dpitch, c->width))
			return false;
	}
	return true;
}

static bool walk_set(const struct xset *s, struct visit *v)
{
	for (uint64_t r = 0; r < s->height; r++)
		if (!v->fn(v, (uint32_t)(r * s->width * s->es), true, true, s->dst + r * s->pitch, s->width * s->es))
			return false;
	return true;
}

/* cat's thread i: the input and element it reads, or false when it writes nothing. */
static bool cat_source(const struct xkern *x, int64_t i, int32_t *src, int64_t *elem)
{
	int64_t at = i;

	for (int32_t s = 0; s < x->ccount; s++) {
		if (at < x->clen[s]) {
			*src = s;
			*elem = at;
			return true;
		}
		at -= x->clen[s];
	}
	return false;
}

static bool walk_batch(const struct xkern *x, struct visit *v)
{
	const unsigned char *t = x->table;
	uint32_t count = (uint32_t)get_i32(t + RW_BATCH_COUNT_OFFSET), unit = 0;

	if (x->k == KB_COPY2D) {
		struct rw_batch_copy2d_table tb;

		memcpy(&tb, t, sizeof(tb));
		for (uint32_t r = 0; r < tb.count && r < RW_BATCH2D_MAX; r++) {
			struct xcopy c = { tb.r[r].src, tb.r[r].dst, tb.r[r].width, tb.r[r].height, tb.r[r].spitch,
					   tb.r[r].dpitch };

			for (uint64_t row = 0; row < c.height && c.width; row++) {
				if (!v->fn(v, unit, true, false, c.src + row * c.spitch, c.width) ||
				    !v->fn(v, unit, true, true, c.dst + row * c.dpitch, c.width))
					return false;
				unit += (uint32_t)c.width;
			}
		}
		return true;
	}
	if (count > RW_BATCH_MAX)
		count = RW_BATCH_MAX;
	for (uint32_t r = 0; r < count; r++) {
		const unsigned char *e = t + r * RW_BATCH_RANGE_SIZE;

		if (x->k == KB_COPY) {
			uint64_t bytes = get_u64(e + 16);

			if (bytes && (!v->fn(v, unit, true, false, get_u64(e + 8), bytes) ||
				      !v->fn(v, unit, true, true, get_u64(e), bytes)))
				return false;
			unit += (uint32_t)bytes;
		} else {
			uint64_t bytes = get_u64(e + 8);

			if (bytes && !v->fn(v, unit, true, true, get_u64(e), bytes))
				return false;
			unit += (uint32_t)bytes;
		}
	}
	return true;
}

/* Instance i of the multi-instance launch op (table t): the launch it stands for. */
static struct cap_op multi_instance(const struct cap_op *op, const unsigned char *t, uint32_t i)
{
	struct cap_op in = *op;
	uint32_t kid;

	memcpy(&kid, t, 4);
	in.u.kernel.func = in.u.kernel.handle = funcs[kid].func;
	in.u.kernel.info = &funcs[kid];
	in.u.kernel.param_size = funcs[kid].param_bytes;
	memcpy(&in.u.kernel.grid[0], t + MULTI_HEAD + i * MULTI_INST(funcs[kid].param_bytes), 4);
	in.u.kernel.params = (void *)(t + MULTI_HEAD + i * MULTI_INST(funcs[kid].param_bytes) + 8);
	return in;
}

/* A visitor that passes what it is told on with the unit moved by base: instance i's threads are
 * units after those of the instances before it. */
struct visit_off {
	struct visit v;              /* first: the walk sees this */
	struct visit *outer;
	uint32_t base;
};

static bool visit_offset(struct visit *v, uint32_t unit, bool per_byte, bool write, uint64_t addr, uint64_t len)
{
	struct visit_off *o = (struct visit_off *)v;
	bool go = o->outer->fn(o->outer, unit + o->base, per_byte, write, addr, len);

	v->err = o->outer->err;
	return go;
}

static bool walk_kernel(const struct xkern *x, struct visit *v);

static bool walk_multi(const struct xkern *x, struct visit *v, const struct cap_op *op)
{
	uint32_t cnt, base = 0;

	memcpy(&cnt, x->table + 4, 4);
	for (uint32_t i = 0; i < cnt; i++) {
		struct cap_op in = multi_instance(op, x->table, i);
		struct visit_off o = { .v = *v, .outer = v, .base = base };
		struct xkern xi;
		const char *why;

		o.v.fn = visit_offset;
		if (decode_kernel(&in, &xi, &why) != X_OK) {
			v->err = X_BAD;
			return false;
		}
		if (!walk_kernel(&xi, &o.v))
			return false;
		base += (uint32_t)xi.threads;
	}
	return true;
}

static bool walk_kernel(const struct xkern *x, struct visit *v)
{
	if (x->k >= 100)
		return walk_batch(x, v);
	if (x->k == K_CAT) {
		for (int64_t i = 0; i < x->clim; i++) {
			int32_t s;
			int64_t e;

			if (!cat_source(x, i, &s, &e))
				continue;
			if (x->cin[s] % 4 || x->cout % 4) {
				v->err = X_BAD;
				return false;
			}
			if (!v->fn(v, (uint32_t)i, false, false, x->cin[s] + 4 * (uint64_t)e, 4) ||
			    !v->fn(v, (uint32_t)i, false, true, x->cout + 4 * (uint64_t)i, 4))
				return false;
		}
		return true;
	}
	for (int64_t i = 0; i < x->m; i++) {
		for (uint32_t j = 0; j < kdesc[x->k].nptr; j++) {
			uint64_t a = x->p[j] + 4 * (uint64_t)i;

			if ((kdesc[x->k].acc[j] & ACC_R) && !v->fn(v, (uint32_t)i, false, false, a, 4))
				return false;
			if ((kdesc[x->k].acc[j] & ACC_W) && !v->fn(v, (uint32_t)i, false, true, a, 4))
				return false;
		}
	}
	return true;
}

/* Walk op's accesses with v: X_OK (v->err says what the visitor found) or X_BAD. */
static int op_walk(const struct cap_op *op, struct visit *v, const char **why)
{
	switch (op->kind) {
	case CAP_OP_MEMCPY: {
		struct xcopy c;
		int rc = decode_copy(op, &c, why);

		v->strict = true;
		if (rc == X_OK)
			walk_copy(&c, v);
		return rc;
	}
	case CAP_OP_MEMSET: {
		struct xset s;
		int rc = decode_set(op, &s, why);

		if (rc == X_OK)
			walk_set(&s, v);
		return rc;
	}
	case CAP_OP_KERNEL: {
		struct xkern x;
		int rc = decode_kernel(op, &x, why);

		v->strict = x.k == KB_COPY || x.k == KB_COPY2D;
		if (rc == X_OK && x.k == K_MULTI) {
			if (!walk_multi(&x, v, op) && v->err == X_BAD)
				*why = "an instance of a multi-instance launch the interpreter would not run";
			return rc;
		}
		if (rc == X_OK && !walk_kernel(&x, v) && v->err == X_BAD)
			*why = "misaligned cat pointer";
		return rc;
	}
	case CAP_OP_EVENT_RECORD:
	case CAP_OP_EVENT_WAIT:
		return X_OK;
	default:
		*why = "an op kind the interpreter does not model";
		return X_BAD;
	}
}

static bool visit_check(struct visit *v, uint32_t unit, bool per_byte, bool write, uint64_t addr, uint64_t len)
{
	if (!in_arena(addr, len) && !in_own(addr, len)) {
		v->err = X_OOB;
		return false;
	}
	if (write != v->writes)
		return true;
	for (uint64_t j = 0; j < len; j++) {
		uint32_t u = (per_byte ? unit + (uint32_t)j : unit) + 1, *o = &v->owner[addr - BASE + j];
		uint32_t *e = &v->epoch[addr - BASE + j];

		/* a byte written by two units, or read by one unit and written by another */
		if (*e == v->now && (*o != u || (v->strict && !write))) {
			v->err = X_RACE;
			return false;
		}
		if (write) {
			*o = u;
			*e = v->now;
		}
	}
	return true;
}

/* Whether the device would run op as this interpreter does: well-formed, inside the arena, and
 * with one result whatever the schedule. */
static int op_check(const struct cap_op *op, const char **why)
{
	static uint32_t owner[MEMSZ], epoch[MEMSZ], now;
	struct visit v = { .fn = visit_check, .owner = owner, .epoch = epoch, .now = ++now };
	int rc;

	*why = "";
	v.writes = true;
	rc = op_walk(op, &v, why);
	if (rc == X_OK && v.err == X_OK) {
		v.writes = false;
		rc = op_walk(op, &v, why);
	}
	if (rc == X_OK && v.err != X_OK && !**why)
		*why = xres_name[v.err];
	return rc != X_OK ? rc : v.err;
}

static bool visit_mask(struct visit *v, uint32_t unit, bool per_byte, bool write, uint64_t addr, uint64_t len)
{
	uint8_t *bits = write ? v->wbits : v->rbits;

	(void)unit;
	(void)per_byte;
	if (!in_arena(addr, len))
		return false;
	for (uint64_t j = 0; j < len; j++)
		bits[(addr - BASE + j) / 8] |= (uint8_t)(1u << ((addr - BASE + j) % 8));
	return true;
}

/* ------------------------------------------------------------------ executing an op */

static unsigned char *at(unsigned char *mem, uint64_t a)
{
	return mem + (a - BASE);
}

static float ld(unsigned char *mem, uint64_t a)
{
	float f;

	memcpy(&f, at(mem, a), 4);
	return f;
}

static void st(unsigned char *mem, uint64_t a, float f)
{
	memcpy(at(mem, a), &f, 4);
}

/* tanh_kernel's twin uses the C library's tanhf, which would need libm here; any deterministic
 * function serves, since only two runs of this interpreter are compared. */
static float tanh_standin(float x)
{
	float x2 = x * x;

	return x * (27.0f + x2) / (27.0f + 9.0f * x2);
}

static void exec_elementwise(unsigned char *mem, const struct xkern *x)
{
	for (int64_t i = 0; i < x->m; i++) {
		uint64_t o = 4 * (uint64_t)i;
		float r;

		switch (x->k) {
		case K_FILL: r = x->s; break;
		case K_COPY: r = ld(mem, x->p[1] + o); break;
		case K_SCALE: r = x->s * ld(mem, x->p[1] + o); break;
		case K_AXPY: {
			float prod = x->s * ld(mem, x->p[1] + o);

			r = prod + ld(mem, x->p[0] + o);
			break;
		}
		case K_ADD: r = ld(mem, x->p[1] + o) + ld(mem, x->p[2] + o); break;
		case K_MUL: r = ld(mem, x->p[1] + o) * ld(mem, x->p[2] + o); break;
		case K_RELU: {
			float in = ld(mem, x->p[1] + o);

			r = in > 0.0f ? in : 0.0f;
			break;
		}
		case K_TANH: r = tanh_standin(ld(mem, x->p[1] + o)); break;
		default: /* K_MYSTERY */ r = ld(mem, x->p[0] + o) * 0.5f + 1.0f; break;
		}
		st(mem, x->p[0] + o, r);
	}
}

static void exec_batch(unsigned char *mem, const struct xkern *x)
{
	const unsigned char *t = x->table;

	if (x->k == KB_COPY2D) {
		struct rw_batch_copy2d_table tb;

		memcpy(&tb, t, sizeof(tb));
		for (uint32_t r = 0; r < tb.count && r < RW_BATCH2D_MAX; r++)
			for (uint64_t row = 0; row < tb.r[r].height && tb.r[r].width; row++)
				memcpy(at(mem, tb.r[r].dst + row * tb.r[r].dpitch), at(mem, tb.r[r].src + row * tb.r[r].spitch),
				       tb.r[r].width);
		return;
	}
	for (uint32_t r = 0; r < (uint32_t)get_i32(t + RW_BATCH_COUNT_OFFSET) && r < RW_BATCH_MAX; r++) {
		const unsigned char *e = t + r * RW_BATCH_RANGE_SIZE;

		if (x->k == KB_COPY) {
			if (get_u64(e + 16))
				memcpy(at(mem, get_u64(e)), at(mem, get_u64(e + 8)), get_u64(e + 16));
		} else {
			uint32_t value = (uint32_t)get_i32(e + 16), es = (uint32_t)get_i32(e + 20);

			if (es != 2 && es != 4)
				es = 1;
			for (uint64_t o = 0; o < get_u64(e + 8); o++)
				*at(mem, get_u64(e) + o) = (unsigned char)(value >> (8 * (unsigned)(o % es)));
		}
	}
}

/* Run op (op_check said X_OK) on mem. */
static void op_exec(unsigned char *mem, const struct cap_op *op)
{
	const char *why;

	switch (op->kind) {
	case CAP_OP_MEMCPY: {
		struct xcopy c;

		if (decode_copy(op, &c, &why) == X_OK)
			for (uint64_t r = 0; r < c.height; r++)
				memcpy(at(mem, c.dst + r * c.dpitch), at(mem, c.src + r * c.spitch), c.width);
		return;
	}
	case CAP_OP_MEMSET: {
		struct xset s;

		if (decode_set(op, &s, &why) == X_OK)
			for (uint64_t r = 0; r < s.height; r++)
				for (uint64_t o = 0; o < s.width * s.es; o++)
					*at(mem, s.dst + r * s.pitch + o) = (unsigned char)(s.value >> (8 * (unsigned)(o % s.es)));
		return;
	}
	case CAP_OP_KERNEL: {
		struct xkern x;

		if (decode_kernel(op, &x, &why) != X_OK)
			return;
		if (x.k == K_MULTI) { /* the instances at once: op_check found no byte two of them share */
			uint32_t cnt;

			memcpy(&cnt, x.table + 4, 4);
			for (uint32_t i = 0; i < cnt; i++) {
				struct cap_op in = multi_instance(op, x.table, i);

				op_exec(mem, &in);
			}
		} else if (x.k >= 100) {
			exec_batch(mem, &x);
		} else if (x.k == K_CAT) {
			for (int64_t i = 0; i < x.clim; i++) {
				int32_t s;
				int64_t e;

				if (cat_source(&x, i, &s, &e))
					memcpy(at(mem, x.cout + 4 * (uint64_t)i), at(mem, x.cin[s] + 4 * (uint64_t)e), 4);
			}
		} else {
			exec_elementwise(mem, &x);
		}
		return;
	}
	default:
		return;
	}
}

/* ------------------------------------------------------------------ building ops into a window */

static CUstream stream_of(int s)
{
	return s ? STREAM_B : STREAM_A;
}

/* Append op when the interpreter can run it as a program's op (else the window is unchanged). */
static bool w_add(struct win *w, struct cap_op op)
{
	const char *why;

	if (w->n >= MAXW || op_check(&op, &why) != X_OK)
		return false;
	w->ops[w->n++] = op;
	win_fix(w);
	return true;
}

/* cuMemcpyDtoDAsync of bytes from src to dst on stream slot s. */
static bool w_copy(struct win *w, uint64_t src, uint64_t dst, uint64_t bytes, int s)
{
	return bytes && w_add(w, rwt_copy_op(src, dst, bytes, stream_of(s)));
}

/* cuMemcpyAsync (unified addressing) of bytes. */
static bool w_ucopy(struct win *w, uint64_t src, uint64_t dst, uint64_t bytes, int s)
{
	struct cap_op op = rwt_copy_op(src, dst, bytes, stream_of(s));

	op.api = DRV_ID_cuMemcpyAsync;
	op.u.memcpy.d.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
	op.u.memcpy.d.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
	cap_op_hash(&op);
	return bytes && w_add(w, op);
}

/* cuMemcpy2DAsync of height rows of width bytes. */
static bool w_copy2d(struct win *w, uint64_t src, uint64_t sp, uint64_t dst, uint64_t dp, uint64_t width,
		     uint64_t height, int s)
{
	return width && height && w_add(w, rwt_copy2d_op(src, sp, dst, dp, width, height, stream_of(s)));
}

/* cuMemcpy2DAsync of one row, the source and destination named as base + (x, y) with a pitch,
 * as a program passing offsets does (the first bytes are src and dst all the same). */
static bool w_copy_row(struct win *w, uint64_t src, uint64_t sx, uint64_t sy, uint64_t sp, uint64_t dst, uint64_t dx,
		       uint64_t dy, uint64_t dp, uint64_t bytes, int s)
{
	struct cap_op op = rwt_copy2d_op(src, sp, dst, dp, bytes, 1, stream_of(s));
	CUDA_MEMCPY3D *d = &op.u.memcpy.d;

	d->srcDevice = src - sx - sy * sp;
	d->srcXInBytes = sx;
	d->srcY = sy;
	d->dstDevice = dst - dx - dy * dp;
	d->dstXInBytes = dx;
	d->dstY = dy;
	cap_op_hash(&op);
	return bytes && w_add(w, op);
}

/* cuMemsetD{8,16,32}Async of width elements of es bytes. */
static bool w_set(struct win *w, uint64_t dst, uint64_t width, unsigned es, unsigned value, int s)
{
	return width && w_add(w, rwt_memset_elems_op(dst, width, es, value, stream_of(s)));
}

/* cuMemsetD2D{8,16,32}Async: height rows of width elements, pitch bytes apart. */
static bool w_set2d(struct win *w, uint64_t dst, uint64_t pitch, uint64_t width, uint64_t height, unsigned es,
		    unsigned value, int s)
{
	struct cap_op op = rwt_memset_elems_op(dst, width, es, value, stream_of(s));

	op.api = es == 4 ? DRV_ID_cuMemsetD2D32Async : es == 2 ? DRV_ID_cuMemsetD2D16Async : DRV_ID_cuMemsetD2D8Async;
	op.u.memset.pitch = pitch;
	op.u.memset.height = height;
	cap_op_hash(&op);
	return width && w_add(w, op);
}

/* A launch of elementwise test kernel k<<<grid, block>>>(pointers p0 p1 p2 as its layout has
 * them, scalar sc when it has one, n). */
static bool w_kern(struct win *w, enum kid k, uint64_t p0, uint64_t p1, uint64_t p2, float sc, int32_t n,
		   unsigned grid, unsigned block, int s)
{
	const uint64_t p[3] = { p0, p1, p2 };
	unsigned char *pb;

	if (w->n >= MAXW)
		return false;
	pb = w->params[w->n];
	memset(pb, 0, PB);
	for (uint32_t j = 0; j < kdesc[k].nptr; j++)
		rwt_put_u64(pb, 8 * j, p[j]);
	if (kdesc[k].scalar)
		rwt_put_f32(pb, scalar_off(k), sc);
	rwt_put_i32(pb, count_off(k), n);
	return w_add(w, rwt_kernel_op(&funcs[k], pb, grid, block, stream_of(s)));
}

/* A launch of cat<<<grid, block>>>(args {in[0..nin), len[0..nin), count}, out). */
static bool w_cat(struct win *w, uint64_t out, int32_t count, uint32_t nin, const uint64_t *in, const int32_t *len,
		  unsigned grid, unsigned block, int s)
{
	unsigned char *pb;

	if (w->n >= MAXW)
		return false;
	pb = w->params[w->n];
	memset(pb, 0, PB);
	for (uint32_t i = 0; i < nin && i < CAT_MAX; i++) {
		rwt_put_u64(pb, 8 * i, in[i]);
		rwt_put_i32(pb, 64 + 4 * i, len[i]);
	}
	rwt_put_i32(pb, 96, count);
	rwt_put_u64(pb, 104, out);
	return w_add(w, rwt_kernel_op(&funcs[K_CAT], pb, grid, block, stream_of(s)));
}

static bool w_event(struct win *w, int s)
{
	return w_add(w, rwt_event_record_op(stream_of(s)));
}

/* cuStreamWaitEvent on stream slot s for the event the records record. */
static bool w_wait(struct win *w, int s)
{
	struct cap_op op = rwt_op(CAP_OP_EVENT_WAIT, DRV_ID_cuStreamWaitEvent, stream_of(s));

	op.u.event.event = (CUevent)0x3000;
	cap_op_hash(&op);
	return w_add(w, op);
}

/* ------------------------------------------------------------------ describing ops (reports) */

/* An address as the regression builders spell it: "B + 0x40". */
static void addr_str(char *buf, size_t cap, uint64_t a)
{
	if (a >= BASE && a < BASE + ARENA)
		snprintf(buf, cap, "%c + 0x%llx", (char)('A' + (a - BASE) / BUFSZ), (unsigned long long)((a - BASE) % BUFSZ));
	else
		snprintf(buf, cap, "0x%llxull", (unsigned long long)a);
}

/* Op as the builder call that makes it (w_copy(w, A + 0x10, B + 0x0, 64, 0);). */
static void op_str(const struct cap_op *op, char *buf, size_t cap)
{
	char x[3][40];
	int s = op->stream_slot;

	switch (op->kind) {
	case CAP_OP_MEMCPY: {
		const struct cap_memcpy *m = &op->u.memcpy;

		addr_str(x[0], sizeof(x[0]), m->src_first);
		addr_str(x[1], sizeof(x[1]), m->dst_first);
		if (m->d.Height == 1 && op->api == DRV_ID_cuMemcpy2DAsync_v2)
			snprintf(buf, cap, "w_copy_row(w, %s, %zu, %zu, %zu, %s, %zu, %zu, %zu, %zu, %d);", x[0],
				 m->d.srcXInBytes, m->d.srcY, m->d.srcPitch, x[1], m->d.dstXInBytes, m->d.dstY, m->d.dstPitch,
				 m->d.WidthInBytes, s);
		else if (m->d.Height > 1 || op->api == DRV_ID_cuMemcpy2DAsync_v2)
			snprintf(buf, cap, "w_copy2d(w, %s, %zu, %s, %zu, %zu, %zu, %d);", x[0], m->d.srcPitch, x[1],
				 m->d.dstPitch, m->d.WidthInBytes, m->d.Height, s);
		else
			snprintf(buf, cap, "%s(w, %s, %s, %llu, %d);", op->api == DRV_ID_cuMemcpyAsync ? "w_ucopy" : "w_copy",
				 x[0], x[1], (unsigned long long)m->bytes, s);
		return;
	}
	case CAP_OP_MEMSET: {
		const struct cap_memset *m = &op->u.memset;

		addr_str(x[0], sizeof(x[0]), m->dst);
		if (m->height > 1 || op->api == DRV_ID_cuMemsetD2D8Async || op->api == DRV_ID_cuMemsetD2D16Async ||
		    op->api == DRV_ID_cuMemsetD2D32Async)
			snprintf(buf, cap, "w_set2d(w, %s, %zu, %zu, %zu, %u, 0x%x, %d);", x[0], m->pitch, m->width, m->height,
				 m->elem_size, m->value, s);
		else
			snprintf(buf, cap, "w_set(w, %s, %zu, %u, 0x%x, %d);", x[0], m->width, m->elem_size, m->value, s);
		return;
	}
	case CAP_OP_KERNEL: {
		const struct cap_kernel *k = &op->u.kernel;
		const unsigned char *pb = k->params;
		int kid = -1;

		for (int j = 0; j < K_COUNT; j++)
			if (k->info == &funcs[j])
				kid = j;
		if (kid == K_CAT) {
			size_t len = 0;

			addr_str(x[0], sizeof(x[0]), get_u64(pb + 104));
			len += (size_t)snprintf(buf + len, cap - len, "{ const uint64_t in[] = { ");
			for (uint32_t i = 0; i < CAT_MAX && len < cap; i++) {
				addr_str(x[1], sizeof(x[1]), get_u64(pb + 8 * i));
				len += (size_t)snprintf(buf + len, cap - len, "%s%s", i ? ", " : "", x[1]);
			}
			len += len < cap ? (size_t)snprintf(buf + len, cap - len, " }; const int32_t len[] = { ") : 0;
			for (uint32_t i = 0; i < CAT_MAX && len < cap; i++)
				len += (size_t)snprintf(buf + len, cap - len, "%s%d", i ? ", " : "", get_i32(pb + 64 + 4 * i));
			if (len < cap)
				snprintf(buf + len, cap - len, " }; w_cat(w, %s, %d, 8, in, len, %u, %u, %d); }", x[0],
					 get_i32(pb + 96), k->grid[0], k->block[0], s);
		} else if (kid >= 0) {
			for (uint32_t j = 0; j < 3; j++)
				snprintf(x[j], sizeof(x[j]), "0");
			for (uint32_t j = 0; j < kdesc[kid].nptr; j++)
				addr_str(x[j], sizeof(x[j]), get_u64(pb + 8 * j));
			snprintf(buf, cap, "w_kern(w, %s, %s, %s, %s, %.9gf, %d, %u, %u, %d);", kdesc[kid].id, x[0], x[1], x[2],
				 kdesc[kid].scalar ? (double)get_f32(pb + scalar_off((enum kid)kid)) : 0.0,
				 get_i32(pb + count_off((enum kid)kid)), k->grid[0], k->block[0], s);
		} else {
			snprintf(buf, cap, "/* launch of %s <<<%u,%u,%u>>> */", k->info ? k->info->name : "?", k->grid[0],
				 k->grid[1], k->block[0]);
		}
		return;
	}
	case CAP_OP_EVENT_RECORD:
		snprintf(buf, cap, "w_event(w, %d);", s);
		return;
	case CAP_OP_EVENT_WAIT:
		snprintf(buf, cap, "w_wait(w, %d);", s);
		return;
	default:
		snprintf(buf, cap, "/* op of kind %d */", op->kind);
		return;
	}
}

static void win_print(const char *title, const struct win *w)
{
	char buf[1024];

	printf("    %s (%u ops):\n", title, w->n);
	for (uint32_t i = 0; i < w->n; i++) {
		op_str(&w->ops[i], buf, sizeof(buf));
		printf("      /* %2u */ %s\n", i, buf);
	}
}

/* ------------------------------------------------------------------ the differential check */

enum fail_kind {
	F_NONE,
	F_NOPLAN,       /* rw_rewrite returned NULL */
	F_GUARDS,       /* the plan's guards fail on the very window it was made from */
	F_DERIVE,       /* a node cannot be derived from that window */
	F_NODE,         /* a derived node is malformed, out of bounds or racy */
	F_MEMORY,       /* memory after the plan differs from memory after the window */
	F_DEPS,         /* two nodes the dependency lists leave unordered touch one byte */
	F_P_NODE,       /* moved bindings, guards hold: a derived node is malformed, out of bounds or racy */
	F_P_MEMORY,     /* moved bindings, guards hold: memory differs */
	F_RUN,          /* rw_run (replay's view of the plan) refuses or differs on its own window */
	F_P_RUN,        /* rw_run's guards pass moved bindings (checked or cached) and it differs */
	F_MEMO,         /* the plan differs from the one made asking every rule at every node */
	F_KINDS
};

static const char *const fail_name[F_KINDS] = {
	"none", "no plan", "guards fail on their own window", "node not derivable", "bad derived node",
	"memory differs", "unordered nodes conflict", "moved bindings: bad derived node", "moved bindings: memory differs",
	"rw_run differs", "moved bindings: rw_run differs", "the driver's no-match memo changed the plan",
};

#define MASK_BYTES (ARENA / 8)

static unsigned char mem_orig[MEMSZ], mem_plan[MEMSZ];
static uint8_t node_r[MAXW][MASK_BYTES], node_w[MAXW][MASK_BYTES];

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static uint64_t rnd(uint64_t *s, uint64_t lo, uint64_t hi)
{
	return lo + rng_next(s) % (hi - lo + 1);
}

static bool chance(uint64_t *s, unsigned pct)
{
	return rnd(s, 0, 99) < pct;
}

/* The arena's content before a window: small floats, exact zeros and arbitrary bit patterns. */
static void mem_init(unsigned char *mem, uint64_t seed)
{
	for (uint32_t i = 0; i < ARENA; i += 4) {
		uint64_t r = rnd(&seed, 0, 99);
		float f;

		if (r < 80)
			f = (float)((int64_t)rnd(&seed, 0, 4000) - 2000) / 256.0f;
		else if (r < 88)
			f = r & 1 ? 0.0f : -0.0f;
		else
			f = 0.0f;
		memcpy(mem + i, &f, 4);
		if (r >= 88) {
			uint32_t bits = (uint32_t)rng_next(&seed);

			memcpy(mem + i, &bits, 4);
		}
	}
}

/* First differing byte, or -1. */
static int64_t mem_diff(const unsigned char *x, const unsigned char *y)
{
	for (uint32_t i = 0; i < ARENA; i++)
		if (x[i] != y[i])
			return i;
	return -1;
}

static bool bits_meet(const uint8_t *x, const uint8_t *y)
{
	for (uint32_t i = 0; i < MASK_BYTES; i++)
		if (x[i] & y[i])
			return true;
	return false;
}

/* A random order of the plan's nodes in which every node comes after the nodes it waits for. */
static void topo_order(const struct rw_plan *p, uint64_t *s, uint32_t *order)
{
	bool done[MAXW] = { false };

	for (uint32_t step = 0; step < p->nnodes; step++) {
		uint32_t ready[MAXW], nready = 0;

		for (uint32_t k = 0; k < p->nnodes; k++) {
			bool ok = !done[k];

			for (uint32_t d = p->dep_start[k]; ok && d < p->dep_start[k + 1]; d++)
				ok = done[p->dep_list[d]];
			if (ok)
				ready[nready++] = k;
		}
		if (!nready) { /* a cycle: cannot happen with deps < k; keep window order */
			for (uint32_t k = 0; k < p->nnodes; k++)
				order[k] = k;
			return;
		}
		order[step] = ready[rnd(s, 0, nready - 1)];
		done[order[step]] = true;
	}
}

static void say(char *msg, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *msg, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, cap, fmt, ap);
	va_end(ap);
}

/* Run window w (ops valid) and plan p derived from w's bindings from mem0; compare. moved: w's
 * bindings are not the ones p was made from (failures are the F_P_* kinds). */
static enum fail_kind check_plan(const struct rw_plan *p, const struct win *w, const unsigned char *mem0, bool moved,
				 char *msg, size_t cap)
{
	const struct cap_op *ptr[MAXW];
	struct cap_op nodes[MAXW];
	uint64_t os = 0x5eed0000u + w->n;
	int64_t at_byte;

	win_ptrs(w, ptr);
	for (uint32_t k = 0; k < p->nnodes; k++) {
		const char *why;
		int rc;

		if (rw_plan_node_op(p, k, ptr, &nodes[k]) != 0) {
			say(msg, cap, "node %u (%s) cannot be derived", k, rw_node_kind_name((enum rw_node_kind)p->nodes[k].kind));
			return F_DERIVE;
		}
		rc = op_check(&nodes[k], &why);
		if (rc != X_OK) {
			char buf[1024];

			op_str(&nodes[k], buf, sizeof(buf));
			say(msg, cap, "node %u (%s) is %s: %s; derived op: %s", k,
			    rw_node_kind_name((enum rw_node_kind)p->nodes[k].kind), xres_name[rc], why, buf);
			return moved ? F_P_NODE : F_NODE;
		}
	}
	memcpy(mem_orig, mem0, ARENA);
	for (uint32_t i = 0; i < w->n; i++)
		op_exec(mem_orig, &w->ops[i]);
	memcpy(mem_plan, mem0, ARENA);
	for (uint32_t k = 0; k < p->nnodes; k++)
		op_exec(mem_plan, &nodes[k]);
	at_byte = mem_diff(mem_orig, mem_plan);
	if (at_byte >= 0) {
		char a[40];

		addr_str(a, sizeof(a), BASE + (uint64_t)at_byte);
		say(msg, cap, "memory differs first at %s (window 0x%02x, plan 0x%02x), nodes in list order", a,
		    mem_orig[at_byte], mem_plan[at_byte]);
		return moved ? F_P_MEMORY : F_MEMORY;
	}
	if (!p->dep_start)
		return F_NONE;
	/* nodes the lists leave unordered may run at once: no byte one writes may be touched by the
	 * other (exact byte sets, not the rules' upper bounds) */
	{
		uint8_t reach[MAXW][MAXW];

		memset(reach, 0, sizeof(reach));
		for (uint32_t k = 0; k < p->nnodes; k++) {
			struct visit v = { .fn = visit_mask, .rbits = node_r[k], .wbits = node_w[k] };
			const char *why;

			memset(node_r[k], 0, MASK_BYTES);
			memset(node_w[k], 0, MASK_BYTES);
			op_walk(&nodes[k], &v, &why);
			for (uint32_t d = p->dep_start[k]; d < p->dep_start[k + 1]; d++) {
				uint32_t j = p->dep_list[d];

				if (j >= k) {
					say(msg, cap, "node %u waits for node %u, not an earlier one", k, j);
					return F_DEPS;
				}
				reach[k][j] = 1;
				for (uint32_t m = 0; m < j; m++)
					reach[k][m] |= reach[j][m];
			}
		}
		for (uint32_t k = 0; k < p->nnodes; k++) {
			for (uint32_t j = 0; j < k; j++) {
				if (reach[k][j])
					continue;
				if (bits_meet(node_w[j], node_w[k]) || bits_meet(node_w[j], node_r[k]) ||
				    bits_meet(node_r[j], node_w[k])) {
					say(msg, cap, "nodes %u and %u are left unordered but touch a common byte one writes", j, k);
					return moved ? F_P_MEMORY : F_DEPS;
				}
			}
		}
	}
	for (int round = 0; round < 3; round++) {
		uint32_t order[MAXW];

		topo_order(p, &os, order);
		memcpy(mem_plan, mem0, ARENA);
		for (uint32_t k = 0; k < p->nnodes; k++)
			op_exec(mem_plan, &nodes[order[k]]);
		at_byte = mem_diff(mem_orig, mem_plan);
		if (at_byte >= 0) {
			char a[40];

			addr_str(a, sizeof(a), BASE + (uint64_t)at_byte);
			say(msg, cap, "memory differs first at %s with the nodes in an order the dependency lists allow", a);
			return moved ? F_P_MEMORY : F_MEMORY;
		}
	}
	return F_NONE;
}

static struct rw_plan *rewrite(const struct win *w)
{
	const struct cap_op *ptr[MAXW];
	const struct rw_config cfg = { 2, NULL, NULL, NULL };

	win_ptrs(w, ptr);
	rw__set_kernel_resolver(rwt_fake_resolver);
	rw__set_multi_hooks(&fuzz_multi);
	rw__set_rename_hooks(&fuzz_rename);
	return rw_rewrite(ptr, w->n, NULL, &cfg, NULL, 0);
}

/* Append the plan's one-line form to a failure's message. */
static void say_plan(const struct rw_plan *p, char *msg, size_t cap)
{
	size_t len = strlen(msg);

	if (len + 16 < cap) {
		snprintf(msg + len, cap - len, "\n      plan: ");
		len = strlen(msg);
		rw_plan_format(p, msg + len, cap - len);
	}
}

/* The plan p made from window w: its guards hold on w, and it does what w does. */
static enum fail_kind check_orig(const struct rw_plan *p, const struct win *w, const unsigned char *mem0, char *msg,
				 size_t cap)
{
	const struct cap_op *ptr[MAXW];
	uint32_t failed = 0;
	enum fail_kind f;

	msg[0] = 0;
	win_ptrs(w, ptr);
	if (!rw_plan_guards_hold(p, ptr, &failed)) {
		say(msg, cap, "guard %u (%s) fails", failed,
		    failed < p->nguards ? rw_guard_name((enum rw_guard_kind)p->guards[failed].kind) : "?");
		f = F_GUARDS;
	} else {
		f = check_plan(p, w, mem0, false, msg, cap);
	}
	if (f != F_NONE)
		say_plan(p, msg, cap);
	return f;
}

/* Whether every node of p derives from pw's bindings into an op the device runs as it says,
 * and the nodes leave memory other than pw's ops do (for moved bindings whose guards fail:
 * how often the guards were needed). */
static bool plan_would_differ(const struct rw_plan *p, const struct win *pw, const unsigned char *mem0)
{
	const struct cap_op *ptr[MAXW];
	struct cap_op nodes[MAXW];
	const char *why;

	win_ptrs(pw, ptr);
	for (uint32_t k = 0; k < p->nnodes; k++)
		if (rw_plan_node_op(p, k, ptr, &nodes[k]) != 0 || op_check(&nodes[k], &why) != X_OK)
			return true; /* the plan cannot even be run on them */
	memcpy(mem_orig, mem0, ARENA);
	for (uint32_t i = 0; i < pw->n; i++)
		op_exec(mem_orig, &pw->ops[i]);
	memcpy(mem_plan, mem0, ARENA);
	for (uint32_t k = 0; k < p->nnodes; k++)
		op_exec(mem_plan, &nodes[k]);
	return mem_diff(mem_orig, mem_plan) >= 0;
}

/* The plan p made from a window, applied to pw (the window with moved bindings) as replay does:
 * only when the guards hold and every node derives (*held), and then it must do what pw does.
 * *needed (may be NULL): the guards failed and running the plan anyway would have been wrong. */
static enum fail_kind check_moved(const struct rw_plan *p, const struct win *pw, const unsigned char *mem0, bool *held,
				  bool *needed, char *msg, size_t cap)
{
	const struct cap_op *ptr[MAXW];
	enum fail_kind f;

	msg[0] = 0;
	*held = false;
	if (needed)
		*needed = false;
	win_ptrs(pw, ptr);
	if (!rw_plan_guards_hold(p, ptr, NULL)) {
		if (needed)
			*needed = plan_would_differ(p, pw, mem0);
		return F_NONE;
	}
	for (uint32_t k = 0; k < p->nnodes; k++) {
		struct cap_op tmp;

		/* replay's run_check: a node that cannot be derived means the original ops go */
		if (rw_plan_node_op(p, k, ptr, &tmp) != 0)
			return F_NONE;
	}
	*held = true;
	f = check_plan(p, pw, mem0, true, msg, cap);
	if (f != F_NONE)
		say_plan(p, msg, cap);
	return f;
}

static uint64_t runs_made, run_launches; /* rw_run coverage (report) */
static uint64_t run_part_checks, run_part_failed; /* of its checks, incremental ones (and failed) */

/* The full check of r's plan on w: every guard, every node derived (replay's run_check). */
static bool full_check(struct rw_run *r, const struct win *w)
{
	const struct cap_op *ptr[MAXW];

	win_ptrs(w, ptr);
	if (!rw_plan_guards_hold(r->plan, ptr, NULL))
		return false;
	for (uint32_t k = 0; k < r->plan->nnodes; k++) {
		struct cap_op tmp;

		if (r->plan->nodes[k].kind != RW_NODE_OP && rw_plan_node_op(r->plan, k, ptr, &tmp) != 0)
			return false;
	}
	return true;
}

/* One launch of run r with the ops of w, as replay submits it: the op at each position that heads
 * a node (folded positions are empty nodes). own: w is the window r was made from, whose guards
 * must hold. *held: they did. */
static enum fail_kind run_step(struct rw_run *r, const struct win *w, const unsigned char *mem0, bool own, bool *held,
			       char *msg, size_t cap)
{
	enum fail_kind f = own ? F_RUN : F_P_RUN;
	uint64_t part = r->npart;
	int64_t at_byte;

	*held = rw_run_guards_hold(r, w->ops);
	if (r->npart != part) {
		/* an incremental check (only the guards whose ops moved): it must say what the full
		 * check says (which leaves the run's effects cache to its next check in full) */
		bool full = full_check(r, w);

		run_part_checks++;
		run_part_failed += !*held;
		if (full != *held) {
			say(msg, cap, "rw_run's incremental check says %s, the full check %s", *held ? "yes" : "no",
			    full ? "yes" : "no");
			return F_P_RUN;
		}
	}
	if (!*held) {
		if (own)
			say(msg, cap, "rw_run's guards fail on the window it was made from");
		return own ? F_RUN : F_NONE;
	}
	memcpy(mem_orig, mem0, ARENA);
	for (uint32_t i = 0; i < w->n; i++)
		op_exec(mem_orig, &w->ops[i]);
	memcpy(mem_plan, mem0, ARENA);
	memset(mem_plan + ARENA, 0xa5, OWNSZ); /* what a buffer holds before its launch writes it */
	for (uint32_t i = 0; i < w->n; i++) {
		struct cap_op tmp;
		const struct cap_op *op;
		const char *why;
		int rc;

		if (rw_run_is_folded(r, i))
			continue;
		op = rw_run_op(r, i, w->ops, &tmp);
		if (!op) {
			say(msg, cap, "rw_run gives no op for position %u, which heads a node", i);
			return f;
		}
		own_ok = r->plan->nren != 0;
		rc = op_check(op, &why);
		own_ok = false;
		if (rc != X_OK) {
			say(msg, cap, "rw_run's op at position %u is %s: %s", i, xres_name[rc], why);
			return f;
		}
		op_exec(mem_plan, op);
	}
	at_byte = mem_diff(mem_orig, mem_plan);
	if (at_byte >= 0) {
		char a[40];

		addr_str(a, sizeof(a), BASE + (uint64_t)at_byte);
		say(msg, cap, "rw_run's ops leave memory different first at %s", a);
		return f;
	}
	run_launches++;
	return F_NONE;
}

/* rw_run over w with cfg and, when pw is given, launches with pw's bindings (twice: the second
 * through the last-launch cache) and w's again. */
static enum fail_kind check_run_with(const struct win *w, const struct win *pw, const unsigned char *mem0,
				     const struct rw_config *cfg, char *msg, size_t cap)
{
	const struct cap_op *ptr[MAXW];
	struct rw_run *r;
	enum fail_kind f;
	bool held;

	win_ptrs(w, ptr);
	rw__set_kernel_resolver(rwt_fake_resolver);
	own_next = BASE + ARENA;
	r = rw_run_create(ptr, w->n, cfg);
	if (!r)
		return F_NONE;
	runs_made++;
	if (r->plan->nren) {
		renames_made++;
		renamed_launches += r->plan->nren;
		for (uint32_t k = 0; k < r->plan->nren; k++) {
			copies_back += r->plan->ren[k].back;
			readers_kept += r->plan->ren[k].nkept;
		}
	}
	f = run_step(r, w, mem0, true, &held, msg, cap);
	for (int rep = 0; f == F_NONE && pw && rep < 2; rep++)
		f = run_step(r, pw, mem0, false, &held, msg, cap);
	if (f == F_NONE && pw)
		f = run_step(r, w, mem0, true, &held, msg, cap);
	if (f != F_NONE)
		say_plan(r->plan, msg, cap);
	rw_run_destroy(r);
	return f;
}

/* rw_run at level 2, and at level 1 with writing elsewhere (the parallel rule's plans rename
 * nothing): buffers from the stand-in allocator, after the arena. */
static enum fail_kind check_run(const struct win *w, const struct win *pw, const unsigned char *mem0, char *msg,
				size_t cap)
{
	struct rw_rename_budget b = { .max = OWNSZ };
	const struct rw_config two = { 2, NULL, NULL, NULL }, one = { 1, NULL, NULL, &b };
	enum fail_kind f = check_run_with(w, pw, mem0, &two, msg, cap);

	if (f == F_NONE) {
		f = check_run_with(w, pw, mem0, &one, msg, cap);
		assert_int_equal(b.used, 0); /* every buffer freed with its run */
	}
	return f;
}

/* The plan p made from w is the plan made with the driver asking every rule at every node after
 * each application (rw__set_memo(false)): remembering where rules said no changes nothing. */
static enum fail_kind check_memo(const struct rw_plan *p, const struct win *w, char *msg, size_t cap)
{
	static char a[8192], b[8192];
	struct rw_plan *q;

	rw__set_memo(false);
	q = rewrite(w);
	rw__set_memo(true);
	if (!q)
		return F_NOPLAN;
	rw_plan_format(p, a, sizeof(a));
	rw_plan_format(q, b, sizeof(b));
	rw_plan_destroy(q);
	if (strcmp(a, b) == 0)
		return F_NONE;
	say(msg, cap, "with the memo: %s\n      asking every time: %s", a, b);
	return F_MEMO;
}

/* The whole check of window w made afresh and, when pw is given, of the plan applied to pw. */
static enum fail_kind check_window(const struct win *w, const struct win *pw, const unsigned char *mem0, bool *held,
				   char *msg, size_t cap)
{
	struct rw_plan *p = rewrite(w);
	enum fail_kind f;
	bool h = false;

	msg[0] = 0;
	if (!p)
		return F_NOPLAN;
	f = check_memo(p, w, msg, cap);
	if (f == F_NONE)
		f = check_orig(p, w, mem0, msg, cap);
	if (f == F_NONE && pw)
		f = check_moved(p, pw, mem0, &h, NULL, msg, cap);
	if (f == F_NONE)
		f = check_run(w, pw, mem0, msg, cap);
	if (held)
		*held = h;
	rw_plan_destroy(p);
	return f;
}

/* ------------------------------------------------------------------ the generator */

#define POOL 64 /* addresses the window's ops already use */

struct gen {
	uint64_t s;                  /* random state */
	struct win *w;               /* the window being made */
	bool two_streams;            /* patterns may go to stream slot 1 */
	uint64_t pool[POOL];         /* addresses of the ops so far, so later patterns meet them */
	uint32_t npool;              /* entries used */
};

/* A random address in buffer b where len bytes fit, aligned to al; sometimes one the window
 * already uses (anywhere), so that patterns read, overwrite and feed each other. */
static uint64_t pos(struct gen *g, unsigned b, uint64_t len, unsigned al)
{
	uint64_t room = len < BUFSZ ? BUFSZ - len : 0;

	if (g->npool && len <= ARENA && chance(&g->s, 12)) {
		uint64_t a = g->pool[rnd(&g->s, 0, g->npool - 1)] + (chance(&g->s, 30) ? rnd(&g->s, 0, 16) : 0);

		if (a - BASE + len > ARENA)
			a = BASE + ARENA - len;
		return BASE + (a - BASE) / al * al;
	}
	return BUF(b) + rnd(&g->s, 0, room / al) * al;
}

static void pool_add(struct gen *g, uint64_t a)
{
	if (a >= BASE && a < BASE + ARENA)
		g->pool[g->npool < POOL ? g->npool++ : rnd(&g->s, 0, POOL - 1)] = a;
}

/* Remember the addresses of ops [from, n) of the window. */
static void pool_note(struct gen *g, uint32_t from)
{
	for (uint32_t i = from; i < g->w->n; i++) {
		const struct cap_op *op = &g->w->ops[i];
		int k = op_kid(op);

		if (op->kind == CAP_OP_MEMCPY) {
			pool_add(g, op->u.memcpy.src_first);
			pool_add(g, op->u.memcpy.dst_first);
		} else if (op->kind == CAP_OP_MEMSET) {
			pool_add(g, op->u.memset.dst);
		} else if (k == K_CAT) {
			pool_add(g, get_u64((const unsigned char *)op->u.kernel.params + 104));
			pool_add(g, get_u64((const unsigned char *)op->u.kernel.params));
		} else if (k >= 0) {
			for (uint32_t j = 0; j < kdesc[k].nptr; j++)
				pool_add(g, get_u64((const unsigned char *)op->u.kernel.params + 8 * j));
		}
	}
}

/* A 1-D copy as a program may issue it: cuMemcpyDtoDAsync mostly, sometimes cuMemcpyAsync or a
 * one-row cuMemcpy2DAsync naming its sides with offsets. */
static bool g_copy(struct gen *g, uint64_t src, uint64_t dst, uint64_t bytes, int s)
{
	uint64_t r = rnd(&g->s, 0, 99);

	if (r < 8)
		return w_ucopy(g->w, src, dst, bytes, s);
	if (r < 18) {
		uint64_t sp = bytes + rnd(&g->s, 0, 8), dp = bytes + rnd(&g->s, 0, 8);

		return w_copy_row(g->w, src, rnd(&g->s, 0, 8), rnd(&g->s, 0, 1), sp, dst, rnd(&g->s, 0, 8), rnd(&g->s, 0, 1),
				  dp, bytes, s);
	}
	return w_copy(g->w, src, dst, bytes, s);
}

static unsigned other_buf(struct gen *g, unsigned b)
{
	return (b + (unsigned)rnd(&g->s, 1, NBUF - 1)) % NBUF;
}

static int64_t small_delta(struct gen *g, unsigned al)
{
	int64_t d = (int64_t)rnd(&g->s, 1, 4) * al;

	return chance(&g->s, 50) ? d : -d;
}

static const float scalars[] = { 2.0f, 0.5f, -1.5f, 3.25f, 1.0f };

static float any_scalar(struct gen *g)
{
	return scalars[rnd(&g->s, 0, sizeof(scalars) / sizeof(scalars[0]) - 1)];
}

static unsigned any_block(struct gen *g)
{
	static const unsigned blocks[] = { 256, 256, 256, 128, 64, 32 };

	return blocks[rnd(&g->s, 0, sizeof(blocks) / sizeof(blocks[0]) - 1)];
}

static unsigned grid_for(uint64_t n, unsigned block)
{
	return n ? (unsigned)((n + block - 1) / block) : 1;
}

static const enum kid elem_kernels[] = { K_FILL, K_COPY, K_SCALE, K_AXPY, K_ADD, K_MUL, K_RELU, K_TANH };
#define NELEM (sizeof(elem_kernels) / sizeof(elem_kernels[0]))

/* One random op of any kind on stream slot s (unrelated, or a near miss of what is around it). */
static void random_op(struct gen *g, int s)
{
	struct win *w = g->w;
	unsigned b = (unsigned)rnd(&g->s, 0, NBUF - 1), b2 = other_buf(g, b);
	uint64_t r = rnd(&g->s, 0, 99);

	if (r < 22) {
		uint64_t n = chance(&g->s, 50) ? 4 * rnd(&g->s, 1, 24) : rnd(&g->s, 1, 96);

		w_copy(w, pos(g, b, n, 1), pos(g, chance(&g->s, 80) ? b2 : b, n, 1), n, s);
	} else if (r < 27) {
		uint64_t n = rnd(&g->s, 1, 64);

		w_ucopy(w, pos(g, b, n, 4), pos(g, b2, n, 4), n, s);
	} else if (r < 37) {
		uint64_t width = rnd(&g->s, 1, 24), h = rnd(&g->s, 2, 5), sp = width + rnd(&g->s, 0, 24),
			 dp = width + rnd(&g->s, 0, 24);

		w_copy2d(w, pos(g, b, sp * h, 1), sp, pos(g, b2, dp * h, 1), dp, width, h, s);
	} else if (r < 42) {
		uint64_t n = rnd(&g->s, 1, 64), sx = rnd(&g->s, 0, 3) * 4, sy = rnd(&g->s, 0, 2), dx = rnd(&g->s, 0, 8),
			 dy = rnd(&g->s, 0, 1), sp = n + rnd(&g->s, 0, 16), dp = n + rnd(&g->s, 0, 16);

		w_copy_row(w, pos(g, b, n, 1), sx, sy, sp, pos(g, b2, n, 1), dx, dy, dp, n, s);
	} else if (r < 52) {
		unsigned es = 1u << rnd(&g->s, 0, 2);
		uint64_t width = rnd(&g->s, 1, 48);

		w_set(w, pos(g, b, width * es, es), width, es, (unsigned)rnd(&g->s, 0, es == 4 ? 0xffffffffu : (1u << (8 * es)) - 1),
		      s);
	} else if (r < 56) {
		unsigned es = 1u << rnd(&g->s, 0, 2);
		uint64_t width = rnd(&g->s, 1, 12), h = rnd(&g->s, 1, 4), pitch = width * es + es * rnd(&g->s, 0, 8);

		if (h == 1 && chance(&g->s, 30))
			pitch = rnd(&g->s, 0, width * es);

		w_set2d(w, pos(g, b, pitch * h, es), pitch, width, h, es, (unsigned)rnd(&g->s, 0, 255), s);
	} else if (r < 82) {
		enum kid k = elem_kernels[rnd(&g->s, 0, NELEM - 1)];
		int32_t n = (int32_t)rnd(&g->s, 1, 96);
		unsigned block = any_block(g), grid = grid_for((uint64_t)n, block);
		uint64_t p[3];

		for (uint32_t j = 0; j < 3; j++)
			p[j] = pos(g, (unsigned)rnd(&g->s, 0, NBUF - 1), 4 * (uint64_t)n, 4);
		if (chance(&g->s, 15))
			grid += 1;
		else if (chance(&g->s, 10) && grid > 1)
			grid -= 1;
		w_kern(w, k, p[0], p[1], p[2], any_scalar(g), n, grid, block, s);
	} else if (r < 88) {
		uint64_t in[CAT_MAX];
		int32_t len[CAT_MAX], total = 0;
		uint32_t k = (uint32_t)rnd(&g->s, 1, 3);
		unsigned block = any_block(g);

		for (uint32_t i = 0; i < k; i++) {
			len[i] = (int32_t)rnd(&g->s, 1, 24);
			in[i] = pos(g, b, 4 * (uint64_t)len[i], 4);
			total += len[i];
		}
		w_cat(w, pos(g, b2, 4 * (uint64_t)total, 4), (int32_t)k, k, in, len, grid_for((uint64_t)total, block), block,
		      s);
	} else if (r < 94) {
		int32_t n = (int32_t)rnd(&g->s, 1, 64);

		w_kern(w, K_MYSTERY, pos(g, b, 4 * (uint64_t)n, 4), 0, 0, 0.0f, n, grid_for((uint64_t)n, 64), 64, s);
	} else if (r < 97) {
		w_event(w, s);
	} else {
		w_wait(w, s);
	}
}

/* Copies over abutting ranges (coalesce), sometimes with a gap, an overlap or a read between. */
static void pat_coalesce(struct gen *g, int s)
{
	uint32_t k = (uint32_t)rnd(&g->s, 2, 4);
	uint64_t sz[4], total = 0, o = 0;
	unsigned al = chance(&g->s, 70) ? 4 : 1, b = (unsigned)rnd(&g->s, 0, NBUF - 1);
	uint64_t S, Dd;

	for (uint32_t j = 0; j < k; j++) {
		sz[j] = al == 4 ? 4 * rnd(&g->s, 1, 16) : rnd(&g->s, 1, 48);
		total += sz[j];
	}
	S = pos(g, b, total, al);
	if (chance(&g->s, 15)) /* one buffer: the unions may overlap though no piece does */
		Dd = S + total / 2 + rnd(&g->s, 0, total);
	else
		Dd = pos(g, other_buf(g, b), total, al);
	for (uint32_t j = 0; j < k; j++) {
		uint64_t src = S + o, dst = Dd + o;

		if (chance(&g->s, 8))
			src += (uint64_t)small_delta(g, 1);
		if (chance(&g->s, 8))
			dst += (uint64_t)small_delta(g, 1);
		if (j && chance(&g->s, 5))
			random_op(g, s);
		g_copy(g, src, dst, sz[j], s);
		o += sz[j];
	}
}

/* Memsets of one value over abutting ranges. */
static void pat_sets(struct gen *g, int s)
{
	uint32_t k = (uint32_t)rnd(&g->s, 2, 5);
	unsigned es = 1u << rnd(&g->s, 0, 2);
	unsigned value = (unsigned)rnd(&g->s, 0, es == 4 ? 0xffffffffu : (1u << (8 * es)) - 1);
	uint64_t d = pos(g, (unsigned)rnd(&g->s, 0, NBUF - 1), 64 * es * 4, es);

	if (chance(&g->s, 30))
		value = 0;
	for (uint32_t j = 0; j < k; j++) {
		uint64_t width = rnd(&g->s, 1, 40);
		unsigned v = chance(&g->s, 8) ? value ^ 1u : value, e = chance(&g->s, 5) && es == 4 ? 2 : es;

		if (chance(&g->s, 6))
			d += es;
		if (chance(&g->s, 4))
			random_op(g, s);
		w_set(g->w, d, e == es ? width : width * (es / e), e, e == es ? v : v & 0xffffu, s);
		d += width * es;
	}
}

/* Slices of one buffer into pieces, glued back in order (slice-glue), with near misses. */
static void pat_slice_glue(struct gen *g, int s)
{
	uint32_t k = (uint32_t)rnd(&g->s, 2, 4);
	uint64_t sz[4], total = 0, src, out, piece[4], at, o = 0;
	unsigned a = (unsigned)rnd(&g->s, 0, NBUF - 1), pb = other_buf(g, a), cb = other_buf(g, a);
	unsigned al = chance(&g->s, 70) ? 4 : 1;
	uint32_t order[4] = { 0, 1, 2, 3 };

	for (uint32_t j = 0; j < k; j++) {
		sz[j] = al == 4 ? 4 * rnd(&g->s, 1, 12) : rnd(&g->s, 1, 40);
		total += sz[j];
	}
	src = pos(g, a, total, al);
	out = pos(g, cb, total, al);
	if (chance(&g->s, 8))
		out = pos(g, a, total, al); /* the output may meet the source */
	at = pos(g, pb, total + 64, al) - (chance(&g->s, 10) ? (uint64_t)rnd(&g->s, 0, 8) : 0);
	for (uint32_t j = 0; j < k; j++) {
		if (chance(&g->s, 30))
			at += al * rnd(&g->s, 0, 4);
		piece[j] = at;
		at += sz[j];
	}
	if (chance(&g->s, 10)) { /* pieces in any order in the scratch buffer */
		uint32_t x = (uint32_t)rnd(&g->s, 0, k - 1), y = (uint32_t)rnd(&g->s, 0, k - 1);
		uint64_t t = piece[x];

		piece[x] = piece[y];
		piece[y] = t;
	}
	for (uint32_t j = 0; j < k; j++) {
		g_copy(g, src + o + (chance(&g->s, 4) ? 1 : 0), piece[j], sz[j], s);
		o += sz[j];
	}
	if (chance(&g->s, 10))
		random_op(g, s);
	if (chance(&g->s, 8)) { /* glued in another order */
		uint32_t x = (uint32_t)rnd(&g->s, 0, k - 1), y = (uint32_t)rnd(&g->s, 0, k - 1), t = order[x];

		order[x] = order[y];
		order[y] = t;
	}
	o = 0;
	for (uint32_t j = 0; j < k; j++) {
		uint32_t t = order[j];
		uint64_t e = 0;

		for (uint32_t i = 0; i < t; i++)
			e += sz[i];
		uint64_t n = sz[t];

		if (chance(&g->s, 6)) /* a glue of another size than its slice */
			n = chance(&g->s, 50) && n > 1 ? n - rnd(&g->s, 1, n - 1) : n + rnd(&g->s, 1, 8);
		g_copy(g, piece[t] + (chance(&g->s, 4) ? 1 : 0), out + e, n, s);
	}
}

/* A copy through a scratch buffer (copy-chain), sometimes overwritten after (dead-write). */
static void pat_chain(struct gen *g, int s)
{
	unsigned a = (unsigned)rnd(&g->s, 0, NBUF - 1), b = other_buf(g, a), c = other_buf(g, a);
	uint64_t n = chance(&g->s, 60) ? 4 * rnd(&g->s, 1, 40) : rnd(&g->s, 1, 120);
	uint64_t src = pos(g, a, n, 1), mid = pos(g, b, n, 1), q = rnd(&g->s, 0, n - 1), m = rnd(&g->s, 1, n - q);
	uint64_t n_fill = rnd(&g->s, 0, 2);

	g_copy(g, src, mid, n, s);
	for (uint64_t i = 0; i < n_fill; i++) {
		if (chance(&g->s, 20)) /* writes the source or the scratch: the chain must not read around it */
			w_set(g->w, (chance(&g->s, 50) ? src : mid) + rnd(&g->s, 0, n - 1), rnd(&g->s, 1, 8), 1, 0x5a, s);
		else
			random_op(g, s);
	}
	if (chance(&g->s, 10))
		g_copy(g, mid + q, src + (n > m ? rnd(&g->s, 0, n - m) : 0), m, s); /* back onto the source */
	else
		g_copy(g, mid + q, pos(g, c == b ? a : c, m, 1), m, s);
	if (chance(&g->s, 35)) /* the scratch overwritten: the first copy is dead */
		w_set(g->w, mid, n, 1, (unsigned)rnd(&g->s, 0, 255), s);
	else if (chance(&g->s, 15))
		g_copy(g, pos(g, c, n, 1), mid, n, s);
}

/* A copy or memset overwritten before anything reads it (dead-write), with reads between. */
static void pat_dead(struct gen *g, int s)
{
	unsigned b = (unsigned)rnd(&g->s, 0, NBUF - 1);
	uint64_t n = rnd(&g->s, 1, 96), d = pos(g, b, n + 16, 4) + 8;
	uint64_t n_fill = rnd(&g->s, 0, 2), lo = rnd(&g->s, 0, 8), hi = rnd(&g->s, 0, 8);

	if (chance(&g->s, 50))
		g_copy(g, pos(g, other_buf(g, b), n, 1), d, n, s);
	else
		w_set(g->w, d, n, 1, (unsigned)rnd(&g->s, 0, 255), s);
	for (uint64_t i = 0; i < n_fill; i++) {
		if (chance(&g->s, 20)) /* a read of the bytes: W is live */
			g_copy(g, d + rnd(&g->s, 0, n - 1), pos(g, other_buf(g, b), 8, 1), 1, s);
		else
			random_op(g, s);
	}
	if (chance(&g->s, 10) && n > 1) { /* covers all but one byte */
		hi = 0;
		n -= 1;
	}
	if (chance(&g->s, 50))
		g_copy(g, pos(g, other_buf(g, b), n + lo + hi, 1), d - lo, n + lo + hi, s);
	else
		w_set(g->w, d - lo, n + lo + hi, 1, (unsigned)rnd(&g->s, 0, 255), s);
}

/* The same pure op again (duplicate), with writes between as near misses. */
static void pat_dup(struct gen *g, int s)
{
	struct win *w = g->w;
	uint32_t first = w->n, n_fill = (uint32_t)rnd(&g->s, 0, 2);
	struct cap_op again;

	random_op(g, s);
	if (w->n == first || w->n >= MAXW)
		return;
	for (uint32_t i = 0; i < n_fill; i++)
		random_op(g, s);
	if (w->n >= MAXW)
		return;
	again = w->ops[first];
	if (again.kind == CAP_OP_KERNEL) {
		memcpy(w->params[w->n], w->params[first], PB);
		again.u.kernel.params = w->params[w->n];
		if (chance(&g->s, 10) && op_kid(&again) >= 0 && kdesc[op_kid(&again)].scalar) { /* another scalar */
			rwt_put_f32(w->params[w->n], scalar_off((enum kid)op_kid(&again)), any_scalar(g));
			cap_op_hash(&again);
		}
	}
	w_add(w, again);
}

/* Launches of one elementwise kernel over abutting chunks (batch-elementwise), with near misses:
 * another scalar, a gap, a grid not derived from the count, chunks that feed each other. */
static void pat_elem(struct gen *g, int s)
{
	enum kid k = elem_kernels[rnd(&g->s, 0, NELEM - 1)];
	uint32_t nk = (uint32_t)rnd(&g->s, 2, 4);
	unsigned block = any_block(g), perm = (unsigned)rnd(&g->s, 0, NBUF - 1);
	int32_t n[4], total = 0;
	uint64_t base[3], o = 0;
	float sc = any_scalar(g);

	for (uint32_t j = 0; j < nk; j++) {
		n[j] = (int32_t)(block < 256 && chance(&g->s, 40) ? rnd(&g->s, 1, 3) * block : rnd(&g->s, 1, 56));
		total += n[j];
	}
	for (uint32_t j = 0; j < 3; j++)
		base[j] = pos(g, (perm + j) % NBUF, 4 * (uint64_t)total, 4);
	if (kdesc[k].nptr >= 2 && k != K_AXPY && chance(&g->s, 15))
		base[0] = base[1]; /* in place */
	if (kdesc[k].nptr >= 2 && chance(&g->s, 8)) /* each launch's output is the next one's input */
		base[0] = base[1] + 4 * (uint64_t)n[0];
	if (kdesc[k].nptr == 3 && chance(&g->s, 15))
		base[2] = base[1]; /* the same input twice */
	for (uint32_t j = 0; j < nk; j++) {
		uint64_t p[3];
		unsigned grid = grid_for((uint64_t)n[j], block);
		float v = chance(&g->s, 6) ? sc * 2.0f : sc;

		for (uint32_t i = 0; i < 3; i++)
			p[i] = base[i] + o;
		if (chance(&g->s, 5))
			p[rnd(&g->s, 0, kdesc[k].nptr - 1)] += 4;
		if (chance(&g->s, 5))
			grid += 1;
		else if (chance(&g->s, 5) && grid > 1)
			grid -= 1; /* the launch leaves its last elements alone */
		if (j && chance(&g->s, 5))
			random_op(g, s);
		w_kern(g->w, k, p[0], p[1], p[2], v, n[j], grid, block, s);
		o += 4 * (uint64_t)n[j];
	}
}

/* A tower: launches of one kernel, each over its own buffers, with other work between them
 * (batch-kernel), near misses included: a launch reading what an earlier one (or an op between)
 * wrote, two launches writing one range, another block shape. Some launches write the range
 * the one before wrote (a pool handing it out again: writing elsewhere), and some outputs are
 * read where no pointer patch follows (a cat's table entry, a kernel of unknown effects, as
 * CuPy's concatenate reads): a rename keeps such a reader on the range after its copy back. */
static void pat_tower(struct gen *g, int s)
{
	enum kid k = chance(&g->s, 10) ? K_MYSTERY : elem_kernels[rnd(&g->s, 0, NELEM - 1)];
	uint32_t nk = (uint32_t)rnd(&g->s, 2, 5);
	unsigned block = any_block(g);
	float sc = any_scalar(g);
	uint64_t last_out = 0;

	for (uint32_t j = 0; j < nk; j++) {
		int32_t n = (int32_t)rnd(&g->s, 1, 40);
		uint64_t p[3];
		unsigned b = block;

		for (uint32_t i = 0; i < 3; i++)
			p[i] = pos(g, (unsigned)rnd(&g->s, 0, NBUF - 1), 4 * (uint64_t)n, 4);
		if (j && chance(&g->s, 10) && kdesc[k].nptr >= 2)
			p[1] = last_out; /* reads what the launch before wrote */
		if (chance(&g->s, 5))
			b = block == 256 ? 128 : 256;
		if (j && chance(&g->s, 40))
			random_op(g, s);
		if (j && last_out && chance(&g->s, 4) && p[1] != last_out)
			p[0] = last_out; /* the range the launch before wrote, handed out again */
		w_kern(g->w, k, p[0], p[1], p[2], sc, n, grid_for((uint64_t)n, b), b, s);
		last_out = p[0];
		if (chance(&g->s, 4)) {
			uint64_t in[1] = { p[0] };
			int32_t len[1] = { n };

			if (chance(&g->s, 3))
				w_kern(g->w, K_MYSTERY, p[0], 0, 0, 0.0f, n, grid_for((uint64_t)n, 64), 64, s);
			else
				(void)w_cat(g->w, pos(g, (unsigned)rnd(&g->s, 0, NBUF - 1), 4 * (uint64_t)n, 4), 1, 1, in,
					    len, grid_for((uint64_t)n, b), b, s);
		}
	}
}

/* cat over views that abut (identity-cat), or nearly. */
static void pat_cat(struct gen *g, int s)
{
	uint32_t k = (uint32_t)rnd(&g->s, 1, 4);
	unsigned a = (unsigned)rnd(&g->s, 0, NBUF - 1), block = any_block(g);
	uint64_t in[CAT_MAX], src, out;
	int32_t len[CAT_MAX], total = 0, count = (int32_t)k;
	unsigned grid;

	for (uint32_t i = 0; i < k; i++) {
		len[i] = (int32_t)rnd(&g->s, chance(&g->s, 5) ? 0 : 1, 40);
		total += len[i];
	}
	src = pos(g, a, 4 * (uint64_t)total + 16, 4);
	out = pos(g, other_buf(g, a), 4 * (uint64_t)total, 4);
	for (uint32_t i = 0, o = 0; i < k; i++) {
		in[i] = src + 4 * (uint64_t)o;
		if (chance(&g->s, 5))
			in[i] += 4;
		o += (uint32_t)len[i];
	}
	if (k > 1 && chance(&g->s, 5)) { /* inputs out of order */
		uint64_t t = in[0];

		in[0] = in[1];
		in[1] = t;
	}
	if (chance(&g->s, 5))
		count = (int32_t)k - 1;
	if (chance(&g->s, 5))
		out = in[0]; /* in place: thread i reads the element it writes (a no-op cat, not racy) */
	grid = grid_for((uint64_t)total, block);
	if (chance(&g->s, 10))
		grid += 1;
	else if (chance(&g->s, 8) && grid > 1)
		grid -= 1;
	w_cat(g->w, out, count, k, in, len, grid, block, s);
}

/* Small independent copies or memsets (batch-copy). */
static void pat_batch(struct gen *g, int s)
{
	uint32_t k = (uint32_t)rnd(&g->s, 2, 6);
	bool sets = chance(&g->s, 40);

	for (uint32_t j = 0; j < k; j++) {
		unsigned b = (unsigned)rnd(&g->s, 0, NBUF - 1);
		uint64_t n = rnd(&g->s, 1, 64);

		if (sets)
			w_set(g->w, pos(g, b, n, 1), n, 1, (unsigned)rnd(&g->s, 0, 255), s);
		else
			w_copy(g->w, pos(g, b, n, 1), pos(g, other_buf(g, b), n, 1), n, s);
	}
}

/* Per-head split or glue: column blocks of one pitch (batch-copy's 2-D form). */
static void pat_heads(struct gen *g, int s)
{
	uint32_t heads = (uint32_t)rnd(&g->s, 2, 4);
	uint64_t width = 4 * rnd(&g->s, 1, 4), rows = rnd(&g->s, 2, 5), pitch = heads * width + 4 * rnd(&g->s, 0, 2);
	unsigned a = (unsigned)rnd(&g->s, 0, NBUF - 1), b = other_buf(g, a);
	uint64_t rowsrc = pos(g, a, pitch * rows, 4), dense = pos(g, b, heads * width * rows + 64, 4);
	bool glue = chance(&g->s, 50);

	for (uint32_t h = 0; h < heads; h++) {
		uint64_t col = rowsrc + h * width, blk = dense + h * width * rows;

		if (chance(&g->s, 5))
			col += 2;
		if (glue)
			w_copy2d(g->w, blk, width, col, pitch, width, rows, s);
		else
			w_copy2d(g->w, col, pitch, blk, width, width, rows, s);
		if (chance(&g->s, 10))
			random_op(g, s);
	}
}

/* A window of 2..MAXW ops from fixed-seed state g->s. */
static void gen_window(struct gen *g)
{
	uint32_t target = (uint32_t)(chance(&g->s, 4) ? rnd(&g->s, 25, MAXW) : rnd(&g->s, 2, 24));
	int tries = 0;

	memset(g->w, 0, sizeof(*g->w));
	g->two_streams = chance(&g->s, 15);
	g->npool = 0;
	while (g->w->n < target && tries++ < 96) {
		int s = g->two_streams && chance(&g->s, 30) ? 1 : 0;
		uint64_t r = rnd(&g->s, 0, 99);
		uint32_t from = g->w->n;

		if (r < 10)
			pat_coalesce(g, s);
		else if (r < 18)
			pat_sets(g, s);
		else if (r < 30)
			pat_slice_glue(g, s);
		else if (r < 40)
			pat_chain(g, s);
		else if (r < 49)
			pat_dead(g, s);
		else if (r < 57)
			pat_dup(g, s);
		else if (r < 66)
			pat_elem(g, s);
		else if (r < 71)
			pat_tower(g, s);
		else if (r < 79)
			pat_cat(g, s);
		else if (r < 85)
			pat_batch(g, s);
		else if (r < 90)
			pat_heads(g, s);
		else if (r < 94)
			w_event(g->w, s);
		else
			random_op(g, s);
		pool_note(g, from);
	}
}

/* ------------------------------------------------------------------ moving bindings */

static uint64_t shift_addr(uint64_t a, int64_t d, int buf)
{
	if (buf >= 0 && !(a >= BUF(buf) && a < BUF(buf) + BUFSZ))
		return a;
	return a + (uint64_t)d;
}

/* Point a copy at new first bytes and pitches, keeping its descriptor's offsets (x, y). */
static void copy_rebind(struct cap_op *op, uint64_t src, uint64_t sp, uint64_t dst, uint64_t dp)
{
	CUDA_MEMCPY3D *d = &op->u.memcpy.d;
	uint64_t sx = d->srcXInBytes, sy = d->srcY, dx = d->dstXInBytes, dy = d->dstY;

	rwt_copy2d_set(op, src, sp, dst, dp, d->WidthInBytes, d->Height);
	d->srcDevice = src - sx - sy * sp;
	d->dstDevice = dst - dx - dy * dp;
}

/* Move every address of op inside buffer buf (every address when buf < 0) by d. */
static void shift_op(struct cap_op *op, int buf, int64_t d)
{
	int k = op_kid(op);

	if (op->kind == CAP_OP_MEMCPY) {
		struct cap_memcpy *m = &op->u.memcpy;

		copy_rebind(op, shift_addr(m->src_first, d, buf), m->d.srcPitch, shift_addr(m->dst_first, d, buf), m->d.dstPitch);
	} else if (op->kind == CAP_OP_MEMSET) {
		op->u.memset.dst = shift_addr(op->u.memset.dst, d, buf);
	} else if (k == K_CAT) {
		unsigned char *pb = op->u.kernel.params;

		for (uint32_t i = 0; i < CAT_MAX; i++)
			rwt_put_u64(pb, 8 * i, shift_addr(get_u64(pb + 8 * i), d, buf));
		rwt_put_u64(pb, 104, shift_addr(get_u64(pb + 104), d, buf));
	} else if (k >= 0) {
		for (uint32_t j = 0; j < kdesc[k].nptr; j++)
			rwt_put_u64(op->u.kernel.params, 8 * j,
				    shift_addr(get_u64((unsigned char *)op->u.kernel.params + 8 * j), d, buf));
	}
}

static int64_t any_delta(uint64_t *s, unsigned al)
{
	/* small moves, and moves onto the neighbouring buffers (which then alias) */
	static const int64_t ds[] = { 1, 2, 4, 8, 12, 16, 32, 64, 128, 512, BUFSZ - 64, BUFSZ, BUFSZ + 4 };
	int64_t d = ds[rnd(s, 0, sizeof(ds) / sizeof(ds[0]) - 1)];

	d = (d + al - 1) / al * al;
	return chance(s, 50) ? d : -d;
}

/* Change one binding of op (a pointer, a pitch, a scalar, a count, a value). */
static void nudge_op(uint64_t *s, struct cap_op *op)
{
	int k = op_kid(op);
	unsigned char *pb = op->kind == CAP_OP_KERNEL ? op->u.kernel.params : NULL;

	if (op->kind == CAP_OP_MEMCPY) {
		struct cap_memcpy *m = &op->u.memcpy;
		uint64_t src = m->src_first, dst = m->dst_first, sp = m->d.srcPitch, dp = m->d.dstPitch;
		uint64_t what = rnd(s, 0, m->d.Height > 1 || op->api == DRV_ID_cuMemcpy2DAsync_v2 ? 3 : 1);

		if (what == 0)
			src += (uint64_t)any_delta(s, 1);
		else if (what == 1)
			dst += (uint64_t)any_delta(s, 1);
		else if (what == 2)
			sp += rnd(s, 1, 8);
		else
			dp += rnd(s, 1, 8);
		copy_rebind(op, src, sp, dst, dp);
	} else if (op->kind == CAP_OP_MEMSET) {
		struct cap_memset *m = &op->u.memset;

		if (chance(s, 50))
			m->dst += (uint64_t)any_delta(s, m->elem_size);
		else
			m->value = (unsigned)rnd(s, 0, m->elem_size == 4 ? 0xffffffffu : (1u << (8 * m->elem_size)) - 1);
	} else if (k == K_CAT) {
		uint64_t what = rnd(s, 0, 3);
		uint32_t i = (uint32_t)rnd(s, 0, 3);

		if (what == 0)
			rwt_put_u64(pb, 8 * i, get_u64(pb + 8 * i) + (uint64_t)any_delta(s, 4));
		else if (what == 1)
			rwt_put_i32(pb, 64 + 4 * i, get_i32(pb + 64 + 4 * i) + (int32_t)any_delta(s, 1) / 4);
		else if (what == 2)
			rwt_put_i32(pb, 96, get_i32(pb + 96) + (chance(s, 50) ? 1 : -1));
		else
			rwt_put_u64(pb, 104, get_u64(pb + 104) + (uint64_t)any_delta(s, 4));
	} else if (k >= 0) {
		uint64_t what = rnd(s, 0, kdesc[k].nptr + 1);

		if (what < kdesc[k].nptr)
			rwt_put_u64(pb, 8 * (uint32_t)what, get_u64(pb + 8 * what) + (uint64_t)any_delta(s, 4));
		else if (what == kdesc[k].nptr && kdesc[k].scalar)
			rwt_put_f32(pb, scalar_off((enum kid)k), scalars[rnd(s, 0, sizeof(scalars) / sizeof(scalars[0]) - 1)]);
		else
			rwt_put_i32(pb, count_off((enum kid)k), get_i32(pb + count_off((enum kid)k)) + (int32_t)any_delta(s, 1));
	}
}

/* pw = w with some bindings moved, as a later launch of the same shape may have them. */
static void perturb(uint64_t *s, const struct win *w, struct win *pw)
{
	uint64_t mode = rnd(s, 0, 99);

	win_copy(pw, w);
	if (mode < 30) {
		/* one buffer moved whole: the pattern is intact, the guards should mostly hold */
		int buf = (int)rnd(s, 0, NBUF - 1);
		int64_t d = any_delta(s, chance(s, 70) ? 4 : 1);

		for (uint32_t i = 0; i < pw->n; i++)
			shift_op(&pw->ops[i], buf, d);
	} else if (mode < 40) {
		int64_t d = any_delta(s, 4);

		for (uint32_t i = 0; i < pw->n; i++)
			shift_op(&pw->ops[i], -1, d);
	} else {
		uint64_t changes = rnd(s, 1, 3);

		for (uint64_t c = 0; c < changes; c++)
			nudge_op(s, &pw->ops[rnd(s, 0, pw->n - 1)]);
	}
	for (uint32_t i = 0; i < pw->n; i++)
		cap_op_hash(&pw->ops[i]);
}

/* Whether every op of w is one the interpreter (and a program) can run. */
static bool win_valid(const struct win *w)
{
	const char *why;

	for (uint32_t i = 0; i < w->n; i++)
		if (op_check(&w->ops[i], &why) != X_OK)
			return false;
	return true;
}

/* ------------------------------------------------------------------ minimizing failures */

/* The smallest window (drop ops one at a time while the same kind of failure stays) and report
 * it with its plan. */
static void minimize_and_report(const struct win *w0, const struct win *pw0, const unsigned char *mem0,
				enum fail_kind kind, const char *first_msg)
{
	static struct win w, pw, tw, tpw;
	char msg[4096];
	bool progress = true;

	win_copy(&w, w0);
	if (pw0)
		win_copy(&pw, pw0);
	while (progress) {
		progress = false;
		for (uint32_t i = 0; i < w.n && w.n > 1; i++) {
			win_copy(&tw, &w);
			win_remove(&tw, i);
			if (pw0) {
				win_copy(&tpw, &pw);
				win_remove(&tpw, i);
			}
			if (check_window(&tw, pw0 ? &tpw : NULL, mem0, NULL, msg, sizeof(msg)) == kind) {
				win_copy(&w, &tw);
				if (pw0)
					win_copy(&pw, &tpw);
				progress = true;
				break;
			}
		}
	}
	check_window(&w, pw0 ? &pw : NULL, mem0, NULL, msg, sizeof(msg));
	printf("  BUG (%s)\n    first seen as: %s\n", fail_name[kind], first_msg);
	win_print("minimized window", &w);
	if (pw0)
		win_print("the same window with moved bindings (guards hold)", &pw);
	printf("    %s\n", msg);
}

/* ------------------------------------------------------------------ the fuzz test */

#define WINDOWS 8000 /* RW_FUZZ_WINDOWS=n runs another number (a longer hunt) */
#define PERTURB 5    /* moved-binding variants per window */

struct tally {
	uint64_t windows, ops;       /* windows checked, their ops */
	uint64_t non_identity;       /* plans some rule changed */
	uint64_t with_deps;          /* plans with dependency lists (parallel) */
	uint64_t perturbed;          /* windows with moved bindings */
	uint64_t perturbed_invalid;  /* of those, not runnable as a program's ops (skipped) */
	uint64_t perturbed_held;     /* of those, guards held: the plan was checked on them */
	uint64_t guards_needed;      /* of those, guards failed and the plan would have been wrong */
	uint64_t fails[F_KINDS];     /* failures by kind */
	uint64_t rule[MAXRULES];     /* applications of each registered rule (plan->stats) */
};

static void count_rules(struct tally *t, const struct rw_plan *p)
{
	if (!rw_plan_is_identity(p))
		t->non_identity++;
	if (p->dep_start)
		t->with_deps++;
	for (uint32_t i = 0; i < p->nstats; i++)
		for (uint32_t r = 0; r < nrules; r++)
			if (strcmp(p->stats[i].rule, all_rules[r]->name) == 0)
				t->rule[r] += p->stats[i].count;
}

static void test_fuzz(void **state)
{
	static struct win w, pw;
	static unsigned char mem0[ARENA];
	static struct tally t;
	const struct rw_config cfg = { 2, NULL, NULL, NULL };
	uint64_t total_fails = 0, seed = 0xf022u * 0x100000001ull;
	unsigned reported[F_KINDS] = { 0 };
	uint32_t windows = WINDOWS;
	const char *env = getenv("RW_FUZZ_WINDOWS");

	(void)state;
	/* every registered rule is one the generator knows, enabled at level 2, and every rule the
	 * generator knows is registered (names compared, so a new rule file cannot slip past) */
	all_rules = rw_rules_registered(&nrules);
	assert_true(nrules > 0 && nrules <= MAXRULES);
	for (size_t r = 0; r < nrules; r++) {
		bool known = false;

		for (size_t k = 0; k < NFUZZED; k++)
			known |= strcmp(all_rules[r]->name, fuzzed_rules[k]) == 0;
		if (!known)
			fail_msg("rule %s is registered but the fuzzer does not know it: teach gen_window its "
				 "pattern and its near misses, and add it to fuzzed_rules", all_rules[r]->name);
		assert_true(rw_rule_is_enabled(all_rules[r], &cfg));
	}
	for (size_t k = 0; k < NFUZZED; k++) {
		bool registered = false;

		for (size_t r = 0; r < nrules; r++)
			registered |= strcmp(all_rules[r]->name, fuzzed_rules[k]) == 0;
		if (!registered)
			fail_msg("fuzzed_rules names %s, which is not a registered rule", fuzzed_rules[k]);
	}
#ifdef __SANITIZE_THREAD__
	/* one thread of pure computation, which TSan slows most and checks nothing in: a quarter of
	 * the windows fits the runner's timeout (every threshold below is a share of them) */
	windows = WINDOWS / 4;
	print_message("ThreadSanitizer: %u windows, not %u\n", windows, WINDOWS);
#endif
	if (env && atoi(env) > 0)
		windows = (uint32_t)atoi(env);
	env = getenv("RW_FUZZ_SEED"); /* RW_FUZZ_SEED=n: another series of windows */
	if (env)
		seed += strtoull(env, NULL, 0) << 32;
	memset(&t, 0, sizeof(t));
	runs_made = run_launches = run_part_checks = run_part_failed = 0;
	renames_made = renamed_launches = copies_back = readers_kept = 0;
	for (uint32_t round = 0; round < windows; round++) {
		struct gen g = { .s = seed + round, .w = &w };
		uint64_t ps = g.s ^ 0xabcdefull;
		char msg[4096];
		enum fail_kind f;
		struct rw_plan *p;

		gen_window(&g);
		if (w.n < 2)
			continue;
		mem_init(mem0, g.s);
		t.windows++;
		t.ops += w.n;
		p = rewrite(&w);
		assert_non_null(p);
		count_rules(&t, p);
		f = check_orig(p, &w, mem0, msg, sizeof(msg));
		if (f != F_NONE) {
			t.fails[f]++;
			if (reported[f]++ < 2)
				minimize_and_report(&w, NULL, mem0, f, msg);
		}
		if (f == F_NONE) {
			f = check_run(&w, NULL, mem0, msg, sizeof(msg));
			if (f != F_NONE) {
				t.fails[f]++;
				if (reported[f]++ < 2)
					minimize_and_report(&w, NULL, mem0, f, msg);
			}
		}
		for (int k = 0; f == F_NONE && !rw_plan_is_identity(p) && k < PERTURB; k++) {
			bool held, needed;
			enum fail_kind fm;

			perturb(&ps, &w, &pw);
			t.perturbed++;
			if (!win_valid(&pw)) {
				t.perturbed_invalid++;
				continue;
			}
			fm = check_moved(p, &pw, mem0, &held, &needed, msg, sizeof(msg));
			t.perturbed_held += held;
			t.guards_needed += needed;
			/* also when they fail: rw_run's incremental check must fail too */
			if (fm == F_NONE)
				fm = check_run(&w, &pw, mem0, msg, sizeof(msg));
			if (fm != F_NONE) {
				t.fails[fm]++;
				if (reported[fm]++ < 2)
					minimize_and_report(&w, &pw, mem0, fm, msg);
			}
		}
		rw_plan_destroy(p);
	}
	printf("  windows %llu (ops %llu), plans not the identity %llu, with dependency lists %llu\n",
	       (unsigned long long)t.windows, (unsigned long long)t.ops, (unsigned long long)t.non_identity,
	       (unsigned long long)t.with_deps);
	printf("  moved bindings: %llu windows, %llu not runnable (skipped), %llu whose guards still held, "
	       "%llu whose guards failed where the plan would have been wrong\n",
	       (unsigned long long)t.perturbed, (unsigned long long)t.perturbed_invalid,
	       (unsigned long long)t.perturbed_held, (unsigned long long)t.guards_needed);
	printf("  rw_run: %llu runs made, %llu launches matched the window's memory, %llu checked incrementally "
	       "(%llu failed), each agreeing with the full check\n",
	       (unsigned long long)runs_made, (unsigned long long)run_launches, (unsigned long long)run_part_checks,
	       (unsigned long long)run_part_failed);
	printf("  writing elsewhere: %llu runs renamed %llu launches, %llu copied back, %llu readers kept on the range\n",
	       (unsigned long long)renames_made, (unsigned long long)renamed_launches, (unsigned long long)copies_back,
	       (unsigned long long)readers_kept);
	for (uint32_t r = 0; r < nrules; r++)
		printf("  rule %-18s fired %llu times\n", all_rules[r]->name, (unsigned long long)t.rule[r]);
	for (int f = 1; f < F_KINDS; f++) {
		if (t.fails[f])
			printf("  FAILURES %-40s %llu\n", fail_name[f], (unsigned long long)t.fails[f]);
		total_fails += t.fails[f];
	}
	/* the windows exercise every rule, moved bindings keep some plans valid and break others,
	 * replay's view (rw_run) is exercised: the test cannot pass by checking nothing (the floors
	 * are about a tenth of what the default seed gives, and scale with RW_FUZZ_WINDOWS) */
	for (uint32_t r = 0; r < nrules; r++)
		if (t.rule[r] < t.windows / 40)
			fail_msg("rule %s fired only %llu times", all_rules[r]->name, (unsigned long long)t.rule[r]);
	assert_true(t.non_identity > t.windows / 2);
	assert_true(t.with_deps > t.windows / 20);
	assert_true(t.perturbed_held > t.windows / 4);
	assert_true(t.guards_needed > t.windows / 6);
	assert_true(runs_made > t.windows / 2);
	assert_true(run_launches > runs_made + t.windows / 2);
	/* writing elsewhere is exercised, with and without its copy back */
	assert_true(renames_made > t.windows / 10 && renamed_launches > copies_back && copies_back > 0);
	assert_true(readers_kept > 0);
	assert_true(run_part_checks > t.windows / 4 && run_part_failed > t.windows / 20);
	if (total_fails)
		fail_msg("%llu windows where the plan does not do what the window did (minimized above)",
			 (unsigned long long)total_fails);
}

/* ------------------------------------------------------------------ the interpreter itself */

/* The interpreter is the reference: each kind of op does exactly what the kernel source or the
 * driver says, and the hazards it must flag are flagged. */
static void test_interpreter(void **state)
{
	static struct win w;
	static unsigned char mem[ARENA];
	const char *why;
	float f[4] = { 1.0f, -2.0f, 3.0f, 4.0f }, g4[4];
	struct cap_op op;

	(void)state;
	memset(&w, 0, sizeof(w));
	memset(mem, 0, sizeof(mem));
	memcpy(at(mem, A), f, sizeof(f));
	/* scale over 4 elements with a grid of 1 block of 2 threads: only 2 elements */
	assert_true(w_kern(&w, K_SCALE, B, A, 0, 2.0f, 4, 1, 2, 0));
	op_exec(mem, &w.ops[0]);
	memcpy(g4, at(mem, B), sizeof(g4));
	assert_true(g4[0] == 2.0f && g4[1] == -4.0f && g4[2] == 0.0f && g4[3] == 0.0f);
	/* relu in place, axpy y += a x */
	assert_true(w_kern(&w, K_RELU, A, A, 0, 0.0f, 4, 1, 256, 0));
	op_exec(mem, &w.ops[1]);
	assert_true(w_kern(&w, K_AXPY, A, A + 8, 0, 0.5f, 2, 1, 256, 0));
	op_exec(mem, &w.ops[2]);
	memcpy(g4, at(mem, A), sizeof(g4));
	assert_true(g4[0] == 2.5f && g4[1] == 2.0f && g4[2] == 3.0f && g4[3] == 4.0f);
	/* cat of A+4 (2 floats) and A (1 float) into C */
	{
		const uint64_t in[2] = { A + 4, A };
		const int32_t len[2] = { 2, 1 };

		assert_true(w_cat(&w, C, 2, 2, in, len, 1, 256, 0));
		op_exec(mem, &w.ops[3]);
		memcpy(g4, at(mem, C), sizeof(g4));
		assert_true(g4[0] == 2.0f && g4[1] == 3.0f && g4[2] == 2.5f && g4[3] == 0.0f);
	}
	/* memsets: 16-bit value bytes in little-endian order; 2-D rows with pitch gaps */
	assert_true(w_set(&w, D + 2, 2, 2, 0xbeef, 0));
	assert_true(w_set2d(&w, D + 16, 4, 1, 3, 1, 0x7, 0));
	op_exec(mem, &w.ops[4]);
	op_exec(mem, &w.ops[5]);
	assert_int_equal(*at(mem, D + 2), 0xef);
	assert_int_equal(*at(mem, D + 3), 0xbe);
	assert_int_equal(*at(mem, D + 5), 0xbe);
	assert_int_equal(*at(mem, D + 16), 7);
	assert_int_equal(*at(mem, D + 17), 0);
	assert_int_equal(*at(mem, D + 24), 7);
	/* a 2-D copy: rows of 2 bytes, source pitch 2, destination pitch 3 */
	assert_true(w_copy2d(&w, D + 2, 2, C + 100, 3, 2, 2, 0));
	op_exec(mem, &w.ops[6]);
	assert_int_equal(*at(mem, C + 100), 0xef);
	assert_int_equal(*at(mem, C + 103), 0xef);
	assert_int_equal(*at(mem, C + 104), 0xbe);
	/* hazards: a copy reading what it writes, a launch whose threads feed each other, bytes
	 * outside the arena, a misaligned float pointer; in place and shared inputs are fine */
	op = rwt_copy_op(A, A + 8, 16, STREAM_A);
	assert_int_equal(op_check(&op, &why), X_RACE);
	op = rwt_copy_op(A + 8, A, 8, STREAM_A);
	assert_int_equal(op_check(&op, &why), X_OK);
	op = rwt_copy_op(A, A, 8, STREAM_A); /* even onto itself: the driver promises nothing */
	assert_int_equal(op_check(&op, &why), X_RACE);
	op = rwt_copy_op(A, BASE + ARENA - 4, 8, STREAM_A);
	assert_int_equal(op_check(&op, &why), X_OOB);
	w.n = 0;
	assert_false(w_kern(&w, K_SCALE, A + 4, A, 0, 1.0f, 4, 1, 256, 0));
	assert_false(w_kern(&w, K_SCALE, A + 2, B, 0, 1.0f, 4, 1, 256, 0));
	assert_true(w_kern(&w, K_SCALE, A, A, 0, 1.0f, 4, 1, 256, 0));
	assert_true(w_kern(&w, K_ADD, C, A, A + 4, 0.0f, 4, 1, 256, 0));
	assert_false(w_kern(&w, K_ADD, A + 4, A, B, 0.0f, 4, 1, 256, 0));
	/* a batch table whose ranges meet is racy, disjoint ones are not */
	{
		struct rw_batch_copy_table tb;
		struct cap_func info = { .nparams = 1, .param_bytes = RW_BATCH_TABLE_SIZE, .layout_known = true,
					 .name = "cufold_batch_copy", .offset = (uint32_t[]){ 0 }, .size = (uint32_t[]){ RW_BATCH_TABLE_SIZE } };

		memset(&tb, 0, sizeof(tb));
		tb.r[0] = (struct rw_batch_copy_range){ B, A, 8 };
		tb.r[1] = (struct rw_batch_copy_range){ C, B + 4, 8 };
		tb.count = 2;
		op = rwt_kernel_op(&info, &tb, 1, 256, STREAM_A);
		op.u.kernel.func = op.u.kernel.handle = RWT_FAKE_FUNC(RW_K_BATCH_COPY);
		op.u.kernel.grid[1] = 2;
		assert_int_equal(op_check(&op, &why), X_RACE);
		tb.r[1].src = B + 8;
		assert_int_equal(op_check(&op, &why), X_OK);
		memset(mem, 0, sizeof(mem));
		*at(mem, A + 7) = 9;
		*at(mem, B + 8) = 5;
		op_exec(mem, &op);
		assert_int_equal(*at(mem, B + 7), 9);
		assert_int_equal(*at(mem, C), 5);
	}
}

/* ------------------------------------------------------------------ the checker itself */

/* A plan made broken by hand is caught: a merged copy that moves too few bytes, dependency lists
 * that let conflicting nodes run at once, a plan run on bindings its guards refuse, a batch
 * whose ranges meet. (Without this the fuzz test could pass by checking nothing.) */
static void test_catches_broken_plans(void **state)
{
	static struct win w, pw;
	static unsigned char mem0[ARENA];
	const struct cap_op *ptr[MAXW];
	char msg[4096], buf[1024];
	struct rw_plan *p;
	bool held, needed;

	(void)state;
	mem_init(mem0, 7);
	/* coalesce: copy(0,1); a node covering only the first copy leaves B+16.. unwritten */
	memset(&w, 0, sizeof(w));
	assert_true(w_copy(&w, A, B, 16, 0));
	assert_true(w_copy(&w, A + 16, B + 16, 16, 0));
	p = rewrite(&w);
	rw_plan_format(p, buf, sizeof(buf));
	assert_string_equal(buf, "copy(0,1) | linear_dtod(0,0) linear_dtod(1,1) same_stream(0,1) src_abuts(0,1) "
				 "dst_abuts(0,1) disjoint(0,1)");
	assert_int_equal(check_orig(p, &w, mem0, msg, sizeof(msg)), F_NONE);
	p->nodes[0].norig = 1;
	assert_int_equal(check_orig(p, &w, mem0, msg, sizeof(msg)), F_MEMORY);
	p->nodes[0].norig = 2;
	/* moved bindings the guards refuse: the second copy's source no longer abuts */
	win_copy(&pw, &w);
	copy_rebind(&pw.ops[1], A + 20, 0, B + 16, 0);
	cap_op_hash(&pw.ops[1]);
	assert_int_equal(check_moved(p, &pw, mem0, &held, &needed, msg, sizeof(msg)), F_NONE);
	assert_false(held);
	assert_true(needed);
	assert_int_equal(check_plan(p, &pw, mem0, true, msg, sizeof(msg)), F_P_MEMORY);
	rw_plan_destroy(p);

	/* parallel: the copy reads what the memset wrote; lists that drop that wait are caught */
	memset(&w, 0, sizeof(w));
	assert_true(w_set(&w, B, 16, 1, 7, 0));
	assert_true(w_copy(&w, B, C, 16, 0));
	assert_true(w_set(&w, D, 16, 1, 9, 0));
	p = rewrite(&w);
	assert_non_null(p->dep_start);
	assert_int_equal(p->nnodes, 3);
	assert_int_equal(p->dep_start[2] - p->dep_start[1], 1);
	assert_int_equal(check_orig(p, &w, mem0, msg, sizeof(msg)), F_NONE);
	p->dep_start[1] = p->dep_start[2] = p->dep_start[3] = 0;
	assert_int_equal(check_orig(p, &w, mem0, msg, sizeof(msg)), F_DEPS);
	rw_plan_destroy(p);

	/* batch-copy: two independent copies; bindings where the second writes the first's source
	 * make a racy table */
	memset(&w, 0, sizeof(w));
	assert_true(w_copy(&w, A, B, 8, 0));
	assert_true(w_copy(&w, C, D, 8, 0));
	p = rewrite(&w);
	assert_int_equal(p->nnodes, 1);
	assert_int_equal(p->nodes[0].kind, RW_NODE_BATCH_COPY);
	assert_int_equal(check_orig(p, &w, mem0, msg, sizeof(msg)), F_NONE);
	win_copy(&pw, &w);
	copy_rebind(&pw.ops[1], C, 0, A + 4, 0);
	cap_op_hash(&pw.ops[1]);
	win_ptrs(&pw, ptr);
	assert_false(rw_plan_guards_hold(p, ptr, NULL));
	assert_int_equal(check_plan(p, &pw, mem0, true, msg, sizeof(msg)), F_P_NODE);
	rw_plan_destroy(p);
}

/* ------------------------------------------------------------------ rule interplay */

/* Check window w (and w with moved bindings when pw is not NULL) end to end; the plan's one-line
 * form, when want is not NULL, is want. */
static void expect_same(const struct win *w, const struct win *pw, const char *want)
{
	static unsigned char mem0[ARENA];
	char msg[4096];
	bool held = false;
	enum fail_kind f;

	mem_init(mem0, 0x12345);
	assert_true(win_valid(w));
	if (want) {
		struct rw_plan *p = rewrite(w);
		char buf[4096];

		rw_plan_format(p, buf, sizeof(buf));
		rw_plan_destroy(p);
		assert_string_equal(buf, want);
	}
	f = check_window(w, pw, mem0, &held, msg, sizeof(msg));
	if (f != F_NONE)
		fail_msg("%s: %s", fail_name[f], msg);
	if (pw)
		assert_true(held);
}

/* An op between two abutting copies that duplicate erases no longer keeps them apart: the merged
 * copy writes B+16.. before the place where the erased copy read it, which is right because
 * the first read (op 0) already wrote what the second would have. */
static void test_erased_reader_then_coalesce(void **state)
{
	static struct win w, pw;

	(void)state;
	memset(&w, 0, sizeof(w));
	assert_true(w_copy(&w, B + 16, D, 16, 0));      /* R0 reads B+16.. */
	assert_true(w_copy(&w, A, B, 16, 0));           /* C1 */
	assert_true(w_copy(&w, B + 16, D, 16, 0));      /* R, R0 again */
	assert_true(w_copy(&w, A + 16, B + 16, 16, 0)); /* C2 abuts C1 */
	expect_same(&w, NULL,
		    "op(0) copy(1,3) | pure(0,0) same_op(0,2) unwritten(0,1) linear_dtod(1,1) linear_dtod(3,3) "
		    "same_stream(1,3) src_abuts(1,3) dst_abuts(1,3) disjoint(1,3)");
	/* all of it moved 64 bytes on: the guards hold and the plan still does what the ops do */
	win_copy(&pw, &w);
	for (uint32_t i = 0; i < pw.n; i++) {
		shift_op(&pw.ops[i], -1, 64);
		cap_op_hash(&pw.ops[i]);
	}
	expect_same(&w, &pw, NULL);
}

/* A memset read by a copy is live until dead-write drops the copy (its destination is
 * overwritten unread); then the memset is dead too: both go. */
static void test_dead_copy_unblocks_dead_set(void **state)
{
	static struct win w;

	(void)state;
	memset(&w, 0, sizeof(w));
	assert_true(w_set(&w, C, 32, 1, 0x11, 0));  /* W: read by W2 only */
	assert_true(w_copy(&w, C, D, 32, 0));       /* W2: D overwritten by Y2 */
	assert_true(w_set(&w, D, 32, 1, 0x22, 0));  /* Y2 */
	assert_true(w_set(&w, C, 32, 1, 0x33, 0));  /* Y */
	expect_same(&w, NULL, NULL);
	{
		struct rw_plan *p = rewrite(&w);

		assert_non_null(p->erased_by);
		assert_string_equal(p->erased_by[0], "dead-write");
		assert_string_equal(p->erased_by[1], "dead-write");
		assert_int_equal(p->nnodes, 1);
		rw_plan_destroy(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interpreter),
		cmocka_unit_test(test_catches_broken_plans),
		cmocka_unit_test(test_erased_reader_then_coalesce),
		cmocka_unit_test(test_dead_copy_unblocks_dead_set),
		cmocka_unit_test(test_fuzz),
	};

	funcs_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
