/* derive_card.c - a kernel card derived from PTX (see derive_card.h): the refusal screen, then
 * an abstract interpretation of the kernel body over its basic blocks with values as
 * polynomials (derive_bound.c), guards as constraints, and loops joined into phi atoms iterated
 * to a fixpoint; every global access is recorded as pointer parameter + offset and the offset
 * bounded in launch terms. rewrite layer. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "rewrite/cards.h"
#include "rewrite/derive_card.h"
#include "rewrite/derive_int.h"

#define DC_MAX_ROUNDS 8 /* rounds over the blocks before the loop fixpoint is given up */
#define DC_MAX_CALL_DEPTH 8 /* nested device functions the purity screen follows */
#define DC_MAX_PATTERN 255 /* longest kernel pattern of a card (card_parse.c) */
#define DC_R 1u         /* a pointer is read */
#define DC_W 2u         /* a pointer is written */

static int refuse(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return -CF_ENOSYS;
}

static const struct ptx_func *find_entry(const struct ptx_module *m, const char *kernel)
{
	for (uint32_t i = 0; i < m->nfuncs; i++)
		if (m->funcs[i].is_entry && !m->funcs[i].is_decl && strcmp(m->funcs[i].name, kernel) == 0)
			return &m->funcs[i];
	return NULL;
}

/* ------------------------------------------------------------------ the refusal screen */

/* Opcodes whose effects no card can say: calls (device functions, device-side launch and grid
 * sync are all calls in PTX), textures and surfaces, indirect branches. */
static const char *refused_opcode(const char *op)
{
	static const char *const images[] = { "tex", "tld4", "txq", "suld", "sust", "sured", "suq",
					      NULL };

	if (strcmp(op, "brx") == 0)
		return "branches through a table (brx.idx)";
	for (unsigned i = 0; images[i]; i++)
		if (strcmp(op, images[i]) == 0)
			return "uses a texture or surface";
	return NULL;
}

/* A module-scope .global variable named by an operand is a hidden input or output no launch
 * argument shows (the oracle found such a miss once). */
static bool names_module_global(const struct ptx_module *m, const struct ptx_operand *o)
{
	if ((o->kind != PTX_OP_SYM && o->kind != PTX_OP_ADDR) || o->scope != PTX_SCOPE_GLOBAL ||
	    o->index == PTX_NONE || o->index >= m->nvars)
		return false;
	return m->vars[o->index].space == PTX_SPACE_GLOBAL;
}

/* The .func a call instruction names directly, or PTX_NONE (through a register). */
static uint32_t callee_of(const struct ptx_insn *in)
{
	for (unsigned k = 0; k < in->nops; k++)
		if (in->ops[k].kind == PTX_OP_SYM && in->ops[k].scope == PTX_SCOPE_FUNC)
			return in->ops[k].index;
	return PTX_NONE;
}

/* A device function with no effect a card must say: a body (not an extern declaration such as
 * vprintf, cudaLaunchDevice or the grid-sync intrinsics), no global or generic memory access, no
 * module .global variable, no texture, and callees like it. Its results are unknown values. */
static bool callee_is_pure(const struct ptx_module *m, uint32_t fi, const uint32_t *path, int depth)
{
	const struct ptx_func *f = fi < m->nfuncs ? &m->funcs[fi] : NULL;
	uint32_t here[DC_MAX_CALL_DEPTH];

	for (int k = 0; k < depth; k++)
		if (path[k] == fi)
			return true; /* recursion: pure if the rest of the body is */
	if (!f || f->is_decl || f->is_entry || depth >= DC_MAX_CALL_DEPTH)
		return false;
	if (depth > 0)
		memcpy(here, path, (size_t)depth * sizeof(*path));
	here[depth] = fi;
	for (uint32_t i = 0; i < f->ninsns; i++) {
		const struct ptx_insn *in = &f->insns[i];

		if (refused_opcode(in->opcode))
			return false;
		if (!strcmp(in->opcode, "call") && !callee_is_pure(m, callee_of(in), here, depth + 1))
			return false;
		for (unsigned k = 0; k < in->nops; k++) {
			if (names_module_global(m, &in->ops[k]))
				return false;
			if (in->ops[k].kind == PTX_OP_ADDR &&
			    (in->space == PTX_SPACE_GLOBAL || in->space == PTX_SPACE_GENERIC))
				return false;
		}
	}
	return true;
}

static int screen_body(const struct ptx_module *m, const struct ptx_func *f, char *why,
		       size_t whylen)
{
	for (uint32_t i = 0; i < f->ninsns; i++) {
		const struct ptx_insn *in = &f->insns[i];
		const char *r = refused_opcode(in->opcode);

		if (r)
			return refuse(why, whylen, "line %u: %s", in->line, r);
		if (!strcmp(in->opcode, "call") && !callee_is_pure(m, callee_of(in), NULL, 0))
			return refuse(why, whylen, "line %u: calls a function with effects or no body (a "
				      "device function touching memory, device-side launch, grid sync, printf)",
				      in->line);
		for (unsigned k = 0; k < in->nops; k++)
			if (names_module_global(m, &in->ops[k]))
				return refuse(why, whylen, "line %u: uses module variable %s",
					      in->line, m->vars[in->ops[k].index].name);
	}
	return 0;
}

/* ------------------------------------------------------------------ predicates */

enum { PR_UNK, PR_CMP, PR_AND, PR_OR, PR_NOT };
enum { CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_EQ, CMP_NE };

struct dv_pred {
	uint8_t kind;                 /* PR_* */
	uint8_t op;                   /* PR_CMP: CMP_* */
	uint8_t width;                /* PR_CMP: bytes compared, | 0x80 when signed (a whole
				       * line needs its count's type to match its loop's test) */
	uint8_t pad;
	uint32_t a, b;                /* CMP: values; AND/OR/NOT: predicates */
	uint32_t pad2;
};

/* ------------------------------------------------------------------ the interpreter */

struct dc_block {
	uint32_t first, end;          /* instructions [first, end) */
	uint32_t succ[2];             /* [0] fall-through (or the only successor), [1] taken */
	uint8_t nsucc;
	uint8_t cond;                 /* ends in a guarded branch / ret: succ[0] is "guard false" */
};

struct dc_param {
	uint8_t acc;                  /* RW_ACC_READ / WRITE seen */
	bool atomic;                  /* updated atomically */
	bool unknown;                 /* some access has no bound */
	char note[120];               /* why unknown, for the card's note */
	struct dv_mset span;          /* max-set of (bound + size) */
};

struct dc {
	struct dv_ctx x;
	const struct ptx_func *f;
	struct dc_block *b;
	uint32_t nb;
	uint32_t *blk_of;             /* instruction -> block */
	uint32_t *out_regs;           /* per block and edge slot: nregs values */
	uint32_t *out_cs;             /* per block and edge slot: constraint set */
	uint8_t *out_reached;
	uint32_t *cur;                /* the registers while a block runs */
	uint32_t cs;                  /* the path's constraints while a block runs */
	bool record;                  /* the final pass: accesses are recorded */
	bool changed;                 /* an edge state changed this round */
	struct dc_param *pe;          /* per parameter */
	struct dc_param fe[RW_CARD_MAX_FIELDS]; /* per pointer field of a struct parameter */
	uint32_t fe_atom[RW_CARD_MAX_FIELDS];   /* its DV_K_FIELD atom */
	unsigned nfe;
	int rc;                       /* a refusal met on the way */
	char *why;
	size_t whylen;
	bool has_phi;                 /* a join made an atom (a loop or a branchy value) */
	bool impure;                  /* clocks, atomics, ids a rerun may change */
	bool fits32;                  /* an offset went through (w << 32) >> 32 taken as w: the
				       * spans hold only while they fit in 32 bits (fits32) */
	int ew;                       /* elementwise so far: 1 yes, 0 no */
	int ew_count;                 /* parameter of the elementwise guard, -1 none yet */
	uint32_t g;                   /* value ctaid.x * ntid.x + tid.x */
	char span[4096];              /* a span's text while the card is written */
	uint32_t *bpred;              /* per block: its closing guard's predicate (record pass) */
	struct dc_whole {             /* a store that may write its pointer's span whole */
		uint32_t insn, blk;   /* the st and its block */
		uint32_t atom;        /* the loop counter phi k (offset = stride * k) */
		uint32_t stride;      /* value: bytes between two k */
		uint32_t unit;        /* bytes stored */
		int base;             /* dv_base_param of the address */
	} wc[RW_CARD_MAX_WHOLE];
	unsigned nwc;
	bool tid0;                    /* the pass of thread 0 of block 0 (first_whole): tid and
				       * ctaid are 0, and accesses are only screened for fc */
	struct dc_first {             /* an unguarded plain store at offset 0 of its base (tid0) */
		uint32_t blk;         /* its block */
		int base;             /* dv_base_param of the address */
		uint32_t unit;        /* bytes stored */
	} fc[RW_CARD_MAX_WHOLE];
	unsigned nfc;
	char first[RW_CARD_MAX_WHOLE][320]; /* `whole` lines first_whole proved */
	unsigned nfirst;
	unsigned facts;               /* DC_F_*: what a rewrite must respect, said in a note */
};

enum {
	DC_F_NCTAID = 1u << 0,        /* reads %nctaid: results may depend on the grid's size */
	DC_F_CLOCK = 1u << 1,         /* reads a clock, timer, %smid, %warpid or %gridid */
	DC_F_BARRIER = 1u << 2,       /* bar / barrier */
	DC_F_SHARED = 1u << 3,        /* shared memory (static or dynamic) */
	DC_F_ATOMIC = 1u << 4,        /* atomics on global memory */
	DC_F_TRAP = 1u << 5,          /* trap */
	DC_F_CALL = 1u << 6,          /* calls device functions (without effects) */
	DC_F_CROSS = 1u << 7,         /* shuffles, votes: threads exchange values */
};

static bool is_pred_reg(const struct dc *d, uint32_t r)
{
	return d->f->regs[r].type == PTX_T_PRED;
}

/* The predicate register r holds; 0 (says nothing) for a register that is not a predicate. */
static uint32_t pred_of(const struct dc *d, uint32_t r)
{
	return r < d->f->nregs && is_pred_reg(d, r) ? d->cur[r] : 0;
}

static uint32_t pred_make(struct dc *d, uint8_t kind, uint8_t op, uint32_t a, uint32_t b, uint8_t width)
{
	struct dv_pred p;
	uint32_t id;

	memset(&p, 0, sizeof(p));
	p.kind = kind;
	p.op = op;
	p.width = width;
	p.a = a;
	p.b = b;
	if (kind == PR_NOT && a == 0)
		return 0;
	id = dv_pool_intern(&d->x.preds, &p);
	if (id == UINT32_MAX) {
		d->x.oom = true;
		return 0;
	}
	return id;
}

static const struct dv_pred *pred_get(const struct dc *d, uint32_t id)
{
	return dv_pool_get(&d->x.preds, id);
}

static uint32_t dc_const(struct dc *d, int64_t c)
{
	return dv_const(&d->x, c);
}

static bool value_is_plain(const struct dc *d, uint32_t v)
{
	return !dv_has_atom(&d->x, v, DV_A_ANY) && !dv_has_atom(&d->x, v, DV_A_LOADED) &&
	       !dv_has_atom(&d->x, v, DV_A_LOCAL);
}

/* cs plus what predicate p being `truth` proves (nothing for what it cannot say: sound). */
static uint32_t cons_of(struct dc *d, uint32_t cs, uint32_t p, bool truth)
{
	struct dv_pred pr = *pred_get(d, p);
	static const uint8_t negate[] = { [CMP_LT] = CMP_GE, [CMP_LE] = CMP_GT, [CMP_GT] = CMP_LE,
					  [CMP_GE] = CMP_LT, [CMP_EQ] = CMP_NE, [CMP_NE] = CMP_EQ };
	uint32_t one, a, b;
	uint8_t op;

	switch (pr.kind) {
	case PR_NOT:
		return cons_of(d, cs, pr.a, !truth);
	case PR_AND:
	case PR_OR:
		if ((pr.kind == PR_AND) == truth)
			return cons_of(d, cons_of(d, cs, pr.a, truth), pr.b, truth);
		return cs;
	case PR_CMP:
		break;
	default:
		return cs;
	}
	op = truth ? pr.op : negate[pr.op];
	a = pr.a;
	b = pr.b;
	if (!value_is_plain(d, a) || !value_is_plain(d, b))
		return cs;
	one = dc_const(d, 1);
	switch (op) {
	case CMP_LT:
		return dv_cset_add(&d->x, cs, a, b);
	case CMP_LE:
		return dv_cset_add(&d->x, cs, a, dv_add(&d->x, b, one));
	case CMP_GT:
		return dv_cset_add(&d->x, cs, b, a);
	case CMP_GE:
		return dv_cset_add(&d->x, cs, b, dv_add(&d->x, a, one));
	case CMP_EQ:
		cs = dv_cset_add(&d->x, cs, a, dv_add(&d->x, b, one));
		return dv_cset_add(&d->x, cs, b, dv_add(&d->x, a, one));
	case CMP_NE: /* x != K, kept as x - K != 0: what ends a down-counting loop */
		if (dv_is_const(&d->x, b))
			return dv_cset_add(&d->x, cs, dv_sub(&d->x, a, b), DV_NONZERO);
		if (dv_is_const(&d->x, a))
			return dv_cset_add(&d->x, cs, dv_sub(&d->x, b, a), DV_NONZERO);
		return cs;
	}
	return cs;
}

static uint32_t guard_cons(struct dc *d, const struct ptx_insn *in, uint32_t cs)
{
	if (in->guard == PTX_NONE)
		return cs;
	return cons_of(d, cs, pred_of(d, in->guard), !in->guard_neg);
}

static uint32_t opval(struct dc *d, const struct ptx_operand *o)
{
	switch (o->kind) {
	case PTX_OP_REG:
		return is_pred_reg(d, o->reg) ? d->x.v_any : d->cur[o->reg];
	case PTX_OP_IMM:
		return o->is_float ? d->x.v_any : dc_const(d, o->imm);
	case PTX_OP_SPECIAL:
		if (d->tid0 && (o->index <= PTX_SR_TID_Z || (o->index >= PTX_SR_CTAID_X && o->index <= PTX_SR_CTAID_Z)))
			return d->x.v_zero;
		if (o->index <= PTX_SR_NCTAID_Z)
			return dv_atom_val(&d->x, o->index);
		if (o->index == PTX_SR_WARPID ||
		    (o->index >= PTX_SR_SMID && o->index != PTX_SR_NSMID && o->index < PTX_SR_DYNAMIC_SMEM_SIZE)) {
			d->impure = true; /* %warpid, %smid, %gridid, clocks, timers */
			d->facts |= DC_F_CLOCK;
		}
		return d->x.v_any;
	case PTX_OP_SYM:
		return o->scope == PTX_SCOPE_FUNC ? d->x.v_any : d->x.v_local;
	}
	return d->x.v_any;
}

/* A SEL atom for instruction i joining values v0 (under cs0) and v1 (under cs1). */
static uint32_t sel_of(struct dc *d, uint32_t i, uint32_t v0, uint32_t cs0, uint32_t v1, uint32_t cs1)
{
	uint32_t a, ops[2] = { v0, v1 };

	if (v0 == v1)
		return v0;
	if (!value_is_plain(d, v0) || !value_is_plain(d, v1))
		return dv_unknown_of(&d->x, ops, 2);
	a = dv_atom_get(&d->x, DV_K_SEL, i, 0);
	if (a == UINT32_MAX) {
		d->x.oom = true;
		return d->x.v_any;
	}
	d->x.atoms[a].nin = 2;
	d->x.atoms[a].in[0] = (struct dv_in){ .v = v0, .cs = cs0 };
	d->x.atoms[a].in[1] = (struct dv_in){ .v = v1, .cs = cs1 };
	d->x.atoms[a].nonneg = -1;
	return dv_atom_val(&d->x, a);
}

static void set_dest(struct dc *d, const struct ptx_insn *in, uint32_t i, uint32_t v)
{
	const struct ptx_operand *o = &in->ops[0];

	if (o->kind == PTX_OP_VEC) {
		for (uint32_t k = 0; k < o->nelem; k++) {
			const struct ptx_operand *e = ptx_elem(d->x.m, o, k);

			if (e->kind == PTX_OP_REG)
				d->cur[e->reg] = is_pred_reg(d, e->reg) ? 0 : v;
		}
		return;
	}
	if (o->kind != PTX_OP_REG)
		return;
	if (is_pred_reg(d, o->reg)) {
		d->cur[o->reg] = 0;
		return;
	}
	if (in->guard != PTX_NONE)
		v = sel_of(d, i, d->cur[o->reg], cons_of(d, d->cs, pred_of(d, in->guard), in->guard_neg),
			   v, guard_cons(d, in, d->cs));
	d->cur[o->reg] = v;
}

/* ------------------------------------------------------------------ accesses */

static void param_unknown(struct dc_param *pe, const struct ptx_insn *in, const char *what)
{
	if (pe->unknown)
		return;
	pe->unknown = true;
	snprintf(pe->note, sizeof(pe->note), "line %u: %s", in->line, what);
}

static void check_elementwise(struct dc *d, uint32_t off, uint32_t bytes, uint32_t cs)
{
	const struct dv_cset *s;
	int count = -1;

	if (!d->ew)
		return;
	if (off != dv_mul(&d->x, d->g, dc_const(d, bytes))) {
		d->ew = 0;
		return;
	}
	s = dv_cset_get(&d->x, cs);
	for (unsigned i = 0; i < s->n; i++) {
		const struct dv_poly *n;

		if (s->c[i].n == DV_NONZERO)
			continue;
		n = dv_poly_get(&d->x, s->c[i].n);
		if (s->c[i].x == d->g && n->n == 1 && n->t[0].c == 1 && n->t[0].deg == 1 &&
		    d->x.atoms[n->t[0].a[0]].kind == DV_K_PARAM)
			count = n->t[0].a[0] - DV_A_PARAM0;
	}
	if (count < 0 || (d->ew_count >= 0 && d->ew_count != count))
		d->ew = 0;
	else
		d->ew_count = count;
}

/* The record of pointer base k (dv_base_param): a parameter's, or a struct field's (made on
 * first use); NULL when the card would need more fields than it may hold. */
static struct dc_param *base_entry(struct dc *d, int k)
{
	uint32_t atom = DV_A_PARAM0 + (uint32_t)k;

	if ((uint32_t)k < d->f->nparams)
		return &d->pe[k];
	for (unsigned i = 0; i < d->nfe; i++)
		if (d->fe_atom[i] == atom)
			return &d->fe[i];
	if (d->nfe == RW_CARD_MAX_FIELDS)
		return NULL;
	d->fe_atom[d->nfe] = atom;
	memset(&d->fe[d->nfe], 0, sizeof(d->fe[0]));
	return &d->fe[d->nfe++];
}

static void access_value(struct dc *d, const struct ptx_insn *in, uint32_t v, uint32_t cs, uint32_t bytes,
			 uint8_t acc, bool atomic, int depth);
static void whole_candidate(struct dc *d, const struct ptx_insn *in, int k, uint32_t off, uint32_t bytes);

/* An address that is a join of pointers with different bases (cat's `src[s]` unrolled, or
 * `c < acols ? a[..] : b[..]`): v holds a phi or select atom whose incoming values each have a
 * base. Each incoming edge is an access of its own, with the phis of that block (the offset's
 * too) taken on that edge, bounded under that edge's constraints. false when v is not that. */
static bool access_split(struct dc *d, const struct ptx_insn *in, uint32_t v, uint32_t bytes, uint8_t acc,
			 bool atomic, int depth)
{
	const struct dv_poly p = *dv_poly_get(&d->x, v);
	const struct dv_atom *j0 = NULL;
	uint32_t a0 = 0, nin;

	for (unsigned t = 0; t < p.n && !j0; t++) {
		const struct dv_atom *at = &d->x.atoms[p.t[t].a[0]];

		if (p.t[t].deg == 1 && p.t[t].c == 1 && (at->kind == DV_K_PHI || at->kind == DV_K_SEL) && at->nin)
			j0 = at, a0 = p.t[t].a[0];
	}
	if (!j0 || depth > 1)
		return false;
	nin = j0->nin;
	for (unsigned e = 0; e < nin; e++)
		if (j0->in[e].back)
			return false; /* a pointer that changes around a loop */
	for (unsigned e = 0; e < nin && !d->rc; e++) {
		const struct dv_atom *j = &d->x.atoms[a0]; /* re-read: access_value may grow the atoms */
		uint32_t ve = v, cs = j->in[e].cs;

		for (unsigned t = 0; t < p.n; t++)
			for (unsigned k = 0; k < p.t[t].deg; k++) {
				uint32_t b = p.t[t].a[k];
				const struct dv_atom *bt = &d->x.atoms[b];

				if (b == a0 || (j->kind == DV_K_PHI && bt->kind == DV_K_PHI && bt->key1 == j->key1 &&
						bt->nin == j->nin && !bt->in[e].back))
					ve = dv_subst(&d->x, ve, b, d->x.atoms[b].in[e].v);
			}
		d->ew = 0;
		access_value(d, in, ve, guard_cons(d, in, cs), bytes, acc, atomic, depth + 1);
	}
	return true;
}

/* The tid0 pass: an unguarded plain store at offset 0 of a pointer (thread 0 of block 0's
 * address) is a candidate for first_whole. */
static void first_candidate(struct dc *d, const struct ptx_insn *in, const struct ptx_operand *o, uint8_t acc,
			    bool atomic, uint32_t bytes)
{
	uint32_t v;
	int k;

	if (acc != DC_W || atomic || in->guard != PTX_NONE || o->kind != PTX_OP_ADDR || o->reg == PTX_NONE ||
	    is_pred_reg(d, o->reg) || d->nfc == RW_CARD_MAX_WHOLE)
		return;
	v = dv_add(&d->x, d->cur[o->reg], dc_const(d, o->imm));
	k = dv_base_param(&d->x, v);
	if (k < 0 || dv_sub(&d->x, v, dv_atom_val(&d->x, DV_A_PARAM0 + (uint32_t)k)) != d->x.v_zero)
		return;
	d->fc[d->nfc++] = (struct dc_first){ .blk = d->blk_of[in - d->f->insns], .base = k, .unit = bytes };
}

/* One global access of `bytes` at address operand o (acc: RW_ACC_*). */
static void access(struct dc *d, const struct ptx_insn *in, const struct ptx_operand *o, uint32_t bytes,
		   uint8_t acc, bool atomic)
{
	uint32_t v;

	if (!d->record || d->rc)
		return;
	if (d->tid0) {
		first_candidate(d, in, o, acc, atomic, bytes);
		return;
	}
	if (o->kind != PTX_OP_ADDR || o->reg == PTX_NONE) {
		if (o->kind == PTX_OP_ADDR && o->index != PTX_NONE)
			return; /* a named shared / local / const variable (module .global is refused) */
		d->rc = refuse(d->why, d->whylen, "line %u: an absolute address", in->line);
		return;
	}
	v = dv_add(&d->x, is_pred_reg(d, o->reg) ? d->x.v_any : d->cur[o->reg], dc_const(d, o->imm));
	access_value(d, in, v, guard_cons(d, in, d->cs), bytes, acc, atomic, 0);
}

/* A max-set grown too large: its bounds (and v) with divisions by constants weakened, which
 * lets more of them dominate others (n%4 + 4*(n/4 ...)); -1 when still too many. */
static int span_weaken_join(struct dc *d, struct dv_mset *span, uint32_t v)
{
	struct dv_mset w = { 0 };

	for (unsigned i = 0; i < span->n; i++)
		if (dv_mset_join(&d->x, &w, dv_weaken_div(&d->x, span->v[i])) < 0)
			return -1;
	if (dv_mset_join(&d->x, &w, dv_weaken_div(&d->x, v)) < 0)
		return -1;
	*span = w;
	return 0;
}

/* A plain store at offset off of base k: a candidate for a `whole` line when off is
 * stride * k for one phi k and a stride of launch symbols (whole_valid checks the loop). */
static void whole_candidate(struct dc *d, const struct ptx_insn *in, int k, uint32_t off, uint32_t bytes)
{
	const struct dv_poly *p = dv_poly_get(&d->x, dv_linearize(&d->x, off));
	const struct dv_term t = p->n == 1 ? p->t[0] : (struct dv_term){ 0 };
	uint32_t atom = UINT32_MAX, stride;

	if (in->guard != PTX_NONE || d->nwc == RW_CARD_MAX_WHOLE || p->n != 1)
		return;
	for (unsigned i = 0; i < t.deg; i++)
		if (d->x.atoms[t.a[i]].kind == DV_K_PHI) {
			if (atom != UINT32_MAX)
				return;
			atom = t.a[i];
		}
	if (atom == UINT32_MAX)
		return;
	stride = dc_const(d, t.c);
	for (unsigned i = 0; i < t.deg; i++)
		if (t.a[i] != atom)
			stride = dv_mul(&d->x, stride, dv_atom_val(&d->x, t.a[i]));
	if (!dv_is_launch_value(&d->x, stride))
		return;
	d->wc[d->nwc++] = (struct dc_whole){ .insn = (uint32_t)(in - d->f->insns), .blk = d->blk_of[in - d->f->insns],
					     .atom = atom, .stride = stride, .unit = bytes, .base = k };
}

/* The access at address value v on a path where cs holds. */
static void access_value(struct dc *d, const struct ptx_insn *in, uint32_t v, uint32_t cs, uint32_t bytes,
			 uint8_t acc, bool atomic, int depth)
{
	struct dc_param *pe;
	uint32_t off;
	struct dv_mset ub;
	int64_t low;
	int k = dv_base_param(&d->x, v);

	if (k == -1 && dv_has_atom(&d->x, v, DV_A_LOCAL)) {
		d->ew = 0; /* generic address into shared (or local) memory */
		return;
	}
	if (k == -1 && dv_has_atom(&d->x, v, DV_A_LOADED)) {
		d->rc = refuse(d->why, d->whylen, "indirect: line %u: an address loaded from memory", in->line);
		return;
	}
	if (k < 0 && access_split(d, in, v, bytes, acc, atomic, depth))
		return;
	if (k < 0) {
		d->rc = refuse(d->why, d->whylen, "line %u: an address the analysis cannot follow", in->line);
		return;
	}
	pe = base_entry(d, k);
	if (!pe) {
		d->rc = refuse(d->why, d->whylen, "line %u: more than %d pointers in struct parameters",
			       in->line, RW_CARD_MAX_FIELDS);
		return;
	}
	off = dv_sub(&d->x, v, dv_atom_val(&d->x, DV_A_PARAM0 + (uint32_t)k));
	pe->acc |= acc;
	pe->atomic |= atomic;
	if ((uint32_t)k >= d->f->nparams)
		d->ew = 0; /* the elementwise rules speak of pointer parameters only */
	check_elementwise(d, off, bytes, cs);
	if (acc == DC_W && !atomic && depth == 0)
		whole_candidate(d, in, k, off, bytes);
	if (pe->unknown)
		return;
	if (dv_has_atom(&d->x, off, DV_A_LOADED) || dv_has_atom(&d->x, off, DV_A_ANY) ||
	    dv_has_atom(&d->x, off, DV_A_LOCAL)) {
		param_unknown(pe, in, "the offset depends on data or on arithmetic not followed");
		return;
	}
	if (!dv_nonneg_under(&d->x, off, cs) && !(dv_lower(&d->x, off, &low) && low >= 0)) {
		param_unknown(pe, in, "the offset may be negative");
		return;
	}
	if (dv_upper(&d->x, off, cs, &ub) < 0) {
		param_unknown(pe, in, "no bound found for the offset");
		return;
	}
	for (unsigned i = 0; i < ub.n; i++)
		if (dv_mset_join(&d->x, &pe->span, dv_add(&d->x, ub.v[i], dc_const(d, bytes))) < 0 &&
		    span_weaken_join(d, &pe->span, dv_add(&d->x, ub.v[i], dc_const(d, bytes))) < 0) {
			param_unknown(pe, in, "too many alternative bounds");
			return;
		}
}

static uint32_t access_bytes(const struct ptx_insn *in)
{
	unsigned b = ptx_type_bytes(in->type);

	return (b ? b : 4) * (in->vec ? in->vec : 1);
}

static bool global_space(const struct ptx_insn *in)
{
	return in->space == PTX_SPACE_GLOBAL || in->space == PTX_SPACE_GENERIC;
}

static bool is_int_type(uint8_t t);
static bool is_signed_type(uint8_t t);

/* The value of `bytes` bytes at byte off of by-value struct parameter k: a field atom for an
 * integer or pointer of 4 or 8 bytes inside it, else ANY. */
static uint32_t field_value(struct dc *d, const struct ptx_insn *in, uint32_t k, int64_t off, unsigned bytes)
{
	uint32_t a;

	if ((bytes != 4 && bytes != 8) || off < 0 || (uint64_t)off + bytes > d->f->params[k].size ||
	    !is_int_type(in->type))
		return d->x.v_any;
	a = dv_atom_get(&d->x, DV_K_FIELD, k, (uint32_t)off * 32u + (is_signed_type(in->type) ? 16u : 0u) + bytes);
	if (a == UINT32_MAX) {
		d->x.oom = true;
		return d->x.v_any;
	}
	d->x.atoms[a].launch = 1; /* a span may name it: NAME@OFF */
	return dv_atom_val(&d->x, a);
}

/* ld.param [struct + off], scalar or vector: each destination gets its own field. */
static void load_fields(struct dc *d, const struct ptx_insn *in, uint32_t i, uint32_t k, int64_t off)
{
	const struct ptx_operand *o = &in->ops[0];
	unsigned eb = ptx_type_bytes(in->type);

	if (o->kind != PTX_OP_VEC) {
		set_dest(d, in, i, field_value(d, in, k, off, access_bytes(in)));
		return;
	}
	for (uint32_t e = 0; e < o->nelem; e++) {
		const struct ptx_operand *r = ptx_elem(d->x.m, o, e);

		if (r->kind == PTX_OP_REG && !is_pred_reg(d, r->reg))
			d->cur[r->reg] = in->guard == PTX_NONE ? field_value(d, in, k, off + (int64_t)e * eb, eb) :
								 d->x.v_any;
	}
}

static void exec_ld(struct dc *d, const struct ptx_insn *in, uint32_t i)
{
	const struct ptx_operand *a = &in->ops[1];
	uint32_t v = d->x.v_loaded;

	if (in->nops < 2)
		return;
	if (in->space == PTX_SPACE_PARAM) {
		if (a->kind == PTX_OP_ADDR && a->reg == PTX_NONE && a->scope == PTX_SCOPE_VAR)
			v = d->x.v_any; /* a pure callee's result (the screen let only those through) */
		else if (a->kind == PTX_OP_ADDR && a->reg == PTX_NONE && a->scope == PTX_SCOPE_PARAM &&
		    a->index != PTX_NONE && a->index < d->f->nparams) {
			const struct ptx_var *p = &d->f->params[a->index];

			if (a->imm == 0 && access_bytes(in) == p->size) {
				v = dv_atom_val(&d->x, DV_A_PARAM0 + a->index);
			} else if (!p->is_ptr && p->size > 8) {
				load_fields(d, in, i, a->index, a->imm);
				return;
			} else {
				v = d->x.v_any;
			}
		}
	} else if (global_space(in)) {
		access(d, in, a, access_bytes(in), DC_R, false);
	}
	set_dest(d, in, i, v);
}

static void exec_st(struct dc *d, const struct ptx_insn *in)
{
	if (in->nops >= 1 && global_space(in))
		access(d, in, &in->ops[0], access_bytes(in), DC_W, false);
}

static void exec_atom(struct dc *d, const struct ptx_insn *in, uint32_t i, bool red)
{
	const struct ptx_operand *a = &in->ops[red ? 0 : 1];

	if (global_space(in)) {
		d->impure = true;
		access(d, in, a, access_bytes(in), DC_R | DC_W, true);
	}
	if (!red)
		set_dest(d, in, i, d->x.v_loaded);
}

/* ------------------------------------------------------------------ arithmetic */

static uint32_t binary_atom(struct dc *d, enum dv_atom_kind kind, uint32_t i, uint32_t a, uint32_t b);
static uint32_t unknown_from(struct dc *d, const struct ptx_insn *in);

static bool is_int_type(uint8_t t)
{
	return t >= PTX_T_B8 && t <= PTX_T_S64;
}

static bool has_float_mod(const struct ptx_insn *in)
{
	for (unsigned k = 0; k < in->nmods; k++) {
		enum ptx_type t = ptx_type_from_name(in->mods[k]);

		if (t != PTX_T_NONE && !is_int_type(t))
			return true;
	}
	return false;
}

static bool is_signed_type(uint8_t t)
{
	return t >= PTX_T_S8 && t <= PTX_T_S64;
}

static uint32_t unknown_from(struct dc *d, const struct ptx_insn *in)
{
	uint32_t ops[PTX_MAX_OPERANDS];
	unsigned n = 0;

	for (unsigned k = 1; k < in->nops; k++)
		if (in->ops[k].kind == PTX_OP_REG || in->ops[k].kind == PTX_OP_SYM)
			ops[n++] = opval(d, &in->ops[k]);
	return dv_unknown_of(&d->x, ops, n);
}

/* min / rem: an atom of instruction i with operands a and b. A launch value divided by a
 * constant c > 0 (or its remainder) is one atom whatever instruction computes it, keyed (a, c)
 * as derive_bound.c's launch_div keys its own: n%4 from two instructions cancels. */
static uint32_t binary_atom(struct dc *d, enum dv_atom_kind kind, uint32_t i, uint32_t a, uint32_t b)
{
	uint32_t at, ops[2] = { a, b };
	const struct dv_poly *bp = dv_poly_get(&d->x, b);
	bool launch = (kind == DV_K_DIV || kind == DV_K_REM) && bp->n == 1 && bp->t[0].deg == 0 &&
		      bp->t[0].c > 0 && bp->t[0].c <= UINT32_MAX && dv_is_launch_value(&d->x, a);

	if (!value_is_plain(d, a) || !value_is_plain(d, b))
		return dv_unknown_of(&d->x, ops, 2);
	at = launch ? dv_atom_get(&d->x, kind, a, (uint32_t)bp->t[0].c) : dv_atom_get(&d->x, kind, i, 0);
	if (at == UINT32_MAX) {
		d->x.oom = true;
		return d->x.v_any;
	}
	d->x.atoms[at].a = a;
	d->x.atoms[at].b = b;
	d->x.atoms[at].nonneg = -1;
	/* a launch value divided by a constant, or its remainder: a span may say it (n/4, n%4) */
	d->x.atoms[at].launch = launch;
	return dv_atom_val(&d->x, at);
}

/* shr by a constant: x >> 31 (unsigned) is x's sign bit, and nvcc's signed x / 2 is
 * (x + sign(x)) >> 1; otherwise a shift of a value that is not negative is a division. */
static uint32_t shift_right(struct dc *d, const struct ptx_insn *in, uint32_t i, uint32_t a, int64_t k)
{
	unsigned bits = ptx_type_bytes(in->type) * 8;
	const struct dv_poly *p;

	/* (w << k) >> k is w: nvcc's `(int)(i * stride)` sign extension is shl 32 then shr.s64
	 * 32 (CuPy's 32-bit indexing), with the shifted value often kept as a phi of its own. For
	 * k = 32 that holds while w fits in 32 bits, which the card then checks (fits32); a
	 * smaller k is the no-wrap assumption every derived card states; a larger one only for a
	 * constant (0 >> 55 of nvcc's signed division by 512) */
	if (k > 0 && k < 63 && value_is_plain(d, a)) {
		uint32_t w = dv_div_pow2_exact(&d->x, dv_linearize(&d->x, a), (unsigned)k);

		if (w != UINT32_MAX && (k <= 32 || dv_is_const(&d->x, w)) &&
		    (is_signed_type(in->type) || dv_nonneg(&d->x, w))) {
			d->fits32 |= k == 32 && !dv_is_const(&d->x, w);
			return w;
		}
	}
	if (!is_signed_type(in->type) && bits && k == bits - 1 && value_is_plain(d, a)) {
		uint32_t s = binary_atom(d, DV_K_SIGN, i, a, d->x.v_zero);

		return s;
	}
	if (is_signed_type(in->type) && bits && k == bits - 1 && dv_nonneg(&d->x, a))
		return d->x.v_zero; /* the sign of a value that is not negative (numba's wraparound) */
	if (k < 0 || k >= 32)
		return unknown_from(d, in);
	p = dv_poly_get(&d->x, a);
	if (is_signed_type(in->type) && k == 1) {
		for (unsigned t = 0; t < p->n; t++) {
			uint32_t at = p->t[t].a[0];

			if (p->t[t].deg == 1 && p->t[t].c == 1 && d->x.atoms[at].kind == DV_K_SIGN &&
			    dv_add(&d->x, d->x.atoms[at].a, dv_atom_val(&d->x, at)) == a &&
			    (dv_is_launch_value(&d->x, d->x.atoms[at].a) || dv_nonneg(&d->x, d->x.atoms[at].a)))
				return binary_atom(d, DV_K_DIV, i, d->x.atoms[at].a, dc_const(d, 2));
		}
	}
	if (!is_signed_type(in->type) || dv_nonneg(&d->x, a))
		return binary_atom(d, DV_K_DIV, i, a, dc_const(d, (int64_t)1 << k));
	return unknown_from(d, in);
}

/* a - b, and a REM atom when that is a - (a / w) * w for a DIV atom a / w: the remainder,
 * in [0, w), which nvcc computes that way after a division by a value that is not constant. */
static uint32_t remainder_of(struct dc *d, uint32_t i, uint32_t a, uint32_t b)
{
	const struct dv_poly *p = dv_poly_get(&d->x, b);

	for (unsigned t = 0; t < p->n; t++)
		for (unsigned k = 0; k < p->t[t].deg; k++) {
			const struct dv_atom *q = &d->x.atoms[p->t[t].a[k]];

			if (q->kind == DV_K_DIV && !q->launch && q->a == a &&
			    b == dv_mul(&d->x, dv_atom_val(&d->x, p->t[t].a[k]), q->b))
				return binary_atom(d, DV_K_REM, i, a, q->b);
		}
	return dv_sub(&d->x, a, b);
}

/* A value of instruction i in [0, a] (a not negative) that cufold does not follow further: a
 * MIN atom of a with itself, bounded by a; a launch symbol (no span names it) when a and the
 * other operand o are launch values, so that a loop's step made of it still counts as one. */
static uint32_t below(struct dc *d, uint32_t i, uint32_t a, uint32_t o)
{
	uint32_t v = binary_atom(d, DV_K_MIN, i, a, a);
	const struct dv_poly *p = dv_poly_get(&d->x, v);

	if (p->n == 1 && p->t[0].deg == 1 && d->x.atoms[p->t[0].a[0]].kind == DV_K_MIN)
		d->x.atoms[p->t[0].a[0]].launch = dv_is_launch_value(&d->x, a) && value_is_plain(d, o) &&
						   dv_is_launch_value(&d->x, o);
	return v;
}

static uint32_t arith(struct dc *d, const struct ptx_insn *in, uint32_t i)
{
	const char *op = in->opcode;
	uint32_t a = in->nops > 1 ? opval(d, &in->ops[1]) : d->x.v_any;
	uint32_t b = in->nops > 2 ? opval(d, &in->ops[2]) : d->x.v_any;
	bool lo = ptx_insn_has_mod(in, "lo"), wide = ptx_insn_has_mod(in, "wide");

	if (!strcmp(op, "mov"))
		return a;
	if (!strcmp(op, "cvta"))
		return (in->space == PTX_SPACE_GLOBAL || !value_is_plain(d, a)) ? a : d->x.v_local;
	if (has_float_mod(in) || ptx_insn_has_mod(in, "cc") || ptx_insn_has_mod(in, "sat"))
		return unknown_from(d, in);
	if (!strcmp(op, "cvt"))
		return a;
	if (!strcmp(op, "add"))
		return dv_add(&d->x, a, b);
	if (!strcmp(op, "neg"))
		return dv_sub(&d->x, d->x.v_zero, a);
	if (!strcmp(op, "mul") && (lo || wide))
		return dv_mul(&d->x, a, b);
	if (!strcmp(op, "mad") && (lo || wide) && in->nops > 3)
		return dv_add(&d->x, dv_mul(&d->x, a, b), opval(d, &in->ops[3]));
	if (!strcmp(op, "shl") && in->ops[2].kind == PTX_OP_IMM && in->ops[2].imm >= 0 && in->ops[2].imm < 63)
		return dv_mul(&d->x, a, dc_const(d, (int64_t)1 << in->ops[2].imm));
	if (!strcmp(op, "div") && in->ops[2].kind == PTX_OP_IMM && !in->ops[2].is_float && in->ops[2].imm > 0 &&
	    (!is_signed_type(in->type) || dv_nonneg(&d->x, a) || dv_is_launch_value(&d->x, a)))
		return binary_atom(d, DV_K_DIV, i, a, b);
	if (!strcmp(op, "div") && in->ops[2].kind == PTX_OP_REG && (!is_signed_type(in->type) || dv_nonneg(&d->x, a)) &&
	    value_is_plain(d, b) && dv_nonneg_under(&d->x, dv_sub(&d->x, b, dc_const(d, 1)), d->cs))
		return binary_atom(d, DV_K_DIV, i, a, b); /* a divisor this path proves >= 1 */
	if (!strcmp(op, "sub"))
		return remainder_of(d, i, a, b);
	if (!strcmp(op, "shr") && in->ops[2].kind == PTX_OP_IMM)
		return shift_right(d, in, i, a, in->ops[2].imm);
	/* integers only (a pointer's bits masked keep their base: unknown_from) */
	if (dv_base_param(&d->x, a) == -1 && dv_base_param(&d->x, b) == -1) {
		if ((!strcmp(op, "shr") && a == d->x.v_zero) ||
		    (!strcmp(op, "and") && (a == d->x.v_zero || b == d->x.v_zero)))
			return d->x.v_zero; /* 0 >> n, 0 & n: thread 0's tid & (stride - 1) */
		if (!strcmp(op, "shr") && value_is_plain(d, a) && dv_nonneg(&d->x, a))
			return below(d, i, a, b); /* by a register: in [0, a] (CuPy's tid >> log2(stride)) */
		if (!strcmp(op, "and") && in->nops > 2 && in->ops[2].kind == PTX_OP_REG && value_is_plain(d, b) &&
		    dv_nonneg(&d->x, b))
			return below(d, i, b, a); /* in [0, b] whatever a is (CuPy's tid & (stride - 1)) */
		if (!strcmp(op, "and") && in->nops > 2 && in->ops[2].kind == PTX_OP_REG && value_is_plain(d, a) &&
		    dv_nonneg(&d->x, a))
			return below(d, i, a, b);
	}
	if ((!strcmp(op, "popc") || !strcmp(op, "clz") || !strcmp(op, "bfind") || !strcmp(op, "brev")) &&
	    value_is_plain(d, a) && dv_is_launch_value(&d->x, a)) {
		uint32_t at = dv_atom_get(&d->x, DV_K_OPAQUE, i, 0);

		if (at == UINT32_MAX) {
			d->x.oom = true;
			return d->x.v_any;
		}
		d->x.atoms[at].launch = 1;
		d->x.atoms[at].nonneg = 0;
		return dv_atom_val(&d->x, at);
	}
	if (!strcmp(op, "and") && (a == d->x.v_zero || b == d->x.v_zero))
		return d->x.v_zero;
	if (!strcmp(op, "and") && in->nops > 2 && in->ops[2].kind == PTX_OP_IMM && in->ops[2].imm > 0 &&
	    in->ops[2].imm < INT32_MAX && (in->ops[2].imm & (in->ops[2].imm + 1)) == 0)
		return binary_atom(d, DV_K_REM, i, a, dc_const(d, in->ops[2].imm + 1)); /* x & (2^m - 1) */
	if (!strcmp(op, "rem") && (!is_signed_type(in->type) || dv_nonneg(&d->x, a)))
		return binary_atom(d, DV_K_REM, i, a, b);
	if (!strcmp(op, "min"))
		return binary_atom(d, DV_K_MIN, i, a, b);
	if (!strcmp(op, "max"))
		return sel_of(d, i, a, d->cs, b, d->cs);
	if (!strcmp(op, "selp") && in->nops > 3 && in->ops[3].kind == PTX_OP_REG) {
		uint32_t p = pred_of(d, in->ops[3].reg);
		bool t = !in->ops[3].neg;

		return sel_of(d, i, a, cons_of(d, d->cs, p, t), b, cons_of(d, d->cs, p, !t));
	}
	return unknown_from(d, in);
}

static int cmp_op(const struct ptx_insn *in)
{
	static const char *const names[] = { "lt", "le", "gt", "ge", "eq", "ne", "lo", "ls", "hi", "hs" };
	static const uint8_t ops[] = { CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_EQ, CMP_NE,
				       CMP_LT, CMP_LE, CMP_GT, CMP_GE };

	if (in->nmods == 0)
		return -1;
	for (unsigned k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (!strcmp(in->mods[0], names[k]))
			return ops[k];
	return -1;
}

static void set_pred(struct dc *d, const struct ptx_insn *in, uint32_t p)
{
	const struct ptx_operand *o = &in->ops[0];

	if (in->guard != PTX_NONE)
		p = 0; /* a predicate written on one path only: say nothing */
	if (o->kind == PTX_OP_REG && is_pred_reg(d, o->reg)) {
		d->cur[o->reg] = p;
	} else if (o->kind == PTX_OP_PAIR && is_pred_reg(d, o->reg)) {
		d->cur[o->reg] = p;
		if (o->index != PTX_NONE && o->index < d->f->nregs && is_pred_reg(d, o->index))
			d->cur[o->index] = pred_make(d, PR_NOT, 0, p, 0, 0);
	}
}

static uint32_t pred_operand(struct dc *d, const struct ptx_operand *o)
{
	uint32_t p;

	if (o->kind != PTX_OP_REG || !is_pred_reg(d, o->reg))
		return 0;
	p = d->cur[o->reg];
	return o->neg ? pred_make(d, PR_NOT, 0, p, 0, 0) : p;
}

static void exec_setp(struct dc *d, const struct ptx_insn *in)
{
	int op = cmp_op(in);
	uint32_t p = 0;

	if (op >= 0 && !has_float_mod(in) && in->nops >= 3)
		p = pred_make(d, PR_CMP, (uint8_t)op, opval(d, &in->ops[1]), opval(d, &in->ops[2]),
			      (uint8_t)(ptx_type_bytes(in->type) | (is_signed_type(in->type) ? 0x80 : 0)));
	if (in->nops >= 4) { /* setp.cmp.and / .or with a fourth predicate operand */
		uint32_t c = pred_operand(d, &in->ops[3]);

		if (ptx_insn_has_mod(in, "and"))
			p = pred_make(d, PR_AND, 0, p, c, 0);
		else if (ptx_insn_has_mod(in, "or"))
			p = pred_make(d, PR_OR, 0, p, c, 0);
		else
			p = 0;
	}
	set_pred(d, in, p);
}

static void exec_pred_logic(struct dc *d, const struct ptx_insn *in)
{
	const char *op = in->opcode;
	uint32_t a = in->nops > 1 ? pred_operand(d, &in->ops[1]) : 0;
	uint32_t b = in->nops > 2 ? pred_operand(d, &in->ops[2]) : 0;

	if (!strcmp(op, "and"))
		set_pred(d, in, pred_make(d, PR_AND, 0, a, b, 0));
	else if (!strcmp(op, "or"))
		set_pred(d, in, pred_make(d, PR_OR, 0, a, b, 0));
	else if (!strcmp(op, "not"))
		set_pred(d, in, pred_make(d, PR_NOT, 0, a, 0, 0));
	else if (!strcmp(op, "mov"))
		set_pred(d, in, a);
	else
		set_pred(d, in, 0);
}

/* Opcodes with an address operand that touch no global memory a card must name. */
static bool harmless_with_address(const char *op)
{
	static const char *const ok[] = { "prefetch", "prefetchu", "applypriority", "discard",
					  "createpolicy", "isspacep", NULL };

	for (unsigned i = 0; ok[i]; i++)
		if (!strcmp(op, ok[i]))
			return true;
	return false;
}

static bool is_control(const char *op)
{
	return !strcmp(op, "bra") || !strcmp(op, "ret") || !strcmp(op, "exit") || !strcmp(op, "trap");
}

/* Instructions through which threads exchange data (shared memory, shuffles, votes, barriers):
 * a kernel using them is not elementwise even when every global access is element i, since
 * splitting or merging its launches regroups its threads. */
static bool cross_thread(const struct ptx_insn *in)
{
	static const char *const ops[] = { "shfl", "vote", "redux", "match", "bar", "barrier",
					   "activemask", "elect", NULL };

	for (unsigned i = 0; ops[i]; i++)
		if (!strcmp(in->opcode, ops[i]))
			return true;
	return in->space == PTX_SPACE_SHARED;
}

static void note_facts(struct dc *d, const struct ptx_insn *in)
{
	if (!strcmp(in->opcode, "bar") || !strcmp(in->opcode, "barrier"))
		d->facts |= DC_F_BARRIER;
	else if (in->space == PTX_SPACE_SHARED)
		d->facts |= DC_F_SHARED;
	else if (!strcmp(in->opcode, "call"))
		d->facts |= DC_F_CALL;
	else if (cross_thread(in))
		d->facts |= DC_F_CROSS;
	if ((!strcmp(in->opcode, "atom") || !strcmp(in->opcode, "red")) && in->space != PTX_SPACE_SHARED)
		d->facts |= DC_F_ATOMIC;
	for (unsigned k = 0; k < in->nops; k++)
		if (in->ops[k].kind == PTX_OP_SPECIAL && in->ops[k].index >= PTX_SR_NCTAID_X &&
		    in->ops[k].index <= PTX_SR_NCTAID_Z)
			d->facts |= DC_F_NCTAID;
}

static void exec_insn(struct dc *d, uint32_t i)
{
	const struct ptx_insn *in = &d->f->insns[i];
	const char *op = in->opcode;

	if (!strcmp(op, "trap"))
		d->facts |= DC_F_TRAP;
	if (is_control(op))
		return;
	if (cross_thread(in))
		d->ew = 0; /* thread i may compute element i from what other threads read */
	note_facts(d, in);
	if (!strcmp(op, "ld") || !strcmp(op, "ldu")) {
		exec_ld(d, in, i);
	} else if (!strcmp(op, "st")) {
		exec_st(d, in);
	} else if (!strcmp(op, "atom") || !strcmp(op, "red")) {
		exec_atom(d, in, i, op[0] == 'r');
	} else if (!strcmp(op, "setp")) {
		exec_setp(d, in);
	} else if (in->type == PTX_T_PRED) {
		exec_pred_logic(d, in);
	} else {
		for (unsigned k = 0; k < in->nops; k++)
			if (in->ops[k].kind == PTX_OP_ADDR && !harmless_with_address(op) && !d->rc) {
				if (in->space == PTX_SPACE_SHARED || in->space == PTX_SPACE_LOCAL)
					break;
				d->rc = refuse(d->why, d->whylen, "line %u: %s with an address is not "
					       "analysed", in->line, op);
			}
		if (in->nops > 0 && in->ops[0].kind == PTX_OP_REG && is_pred_reg(d, in->ops[0].reg))
			set_pred(d, in, 0);
		else if (in->nops > 0)
			set_dest(d, in, i, arith(d, in, i));
	}
}

/* ------------------------------------------------------------------ blocks */

static uint32_t label_target(const struct ptx_insn *in)
{
	for (unsigned k = 0; k < in->nops; k++)
		if (in->ops[k].kind == PTX_OP_LABEL)
			return in->ops[k].index;
	return PTX_NONE;
}

static int build_blocks(struct dc *d)
{
	const struct ptx_func *f = d->f;
	uint8_t *leader = calloc(f->ninsns + 1, 1);
	uint32_t nb = 0;

	d->blk_of = calloc(f->ninsns + 1, sizeof(*d->blk_of));
	d->b = calloc(f->ninsns + 1, sizeof(*d->b));
	if (!leader || !d->blk_of || !d->b) {
		free(leader);
		return -CF_ENOMEM;
	}
	leader[0] = 1;
	for (uint32_t i = 0; i < f->ninsns; i++) {
		uint32_t t = label_target(&f->insns[i]);

		if (t != PTX_NONE && t <= f->ninsns)
			leader[t] = 1;
		if (is_control(f->insns[i].opcode))
			leader[i + 1] = 1;
	}
	for (uint32_t i = 0; i < f->ninsns; i++) {
		if (leader[i]) {
			if (nb)
				d->b[nb - 1].end = i;
			d->b[nb++].first = i;
		}
		d->blk_of[i] = nb - 1;
	}
	if (nb)
		d->b[nb - 1].end = f->ninsns;
	d->blk_of[f->ninsns] = PTX_NONE; /* a branch to the end: leaves */
	d->nb = nb;
	for (uint32_t b = 0; b < nb; b++) {
		struct dc_block *bl = &d->b[b];
		const struct ptx_insn *last = &f->insns[bl->end - 1];
		uint32_t next = b + 1 < nb ? b + 1 : PTX_NONE;
		bool guarded = last->guard != PTX_NONE;

		bl->cond = guarded && is_control(last->opcode);
		if (!strcmp(last->opcode, "bra")) {
			uint32_t t = label_target(last);
			uint32_t tb = t <= f->ninsns ? d->blk_of[t] : PTX_NONE;

			bl->succ[0] = guarded ? next : tb;
			bl->succ[1] = guarded ? tb : PTX_NONE;
		} else if (is_control(last->opcode)) {
			bl->succ[0] = guarded ? next : PTX_NONE;
			bl->succ[1] = PTX_NONE;
		} else {
			bl->succ[0] = next;
			bl->succ[1] = PTX_NONE;
		}
	}
	free(leader);
	return 0;
}

/* ------------------------------------------------------------------ joins and rounds */

static uint32_t *edge_regs(struct dc *d, uint32_t b, unsigned slot)
{
	return d->out_regs + ((size_t)b * 2 + slot) * d->f->nregs;
}

/* The value of register r entering block b from the edges in[0 .. n). */
static uint32_t join_value(struct dc *d, uint32_t b, uint32_t r, const uint32_t *src, const uint32_t *cs,
			   const uint8_t *back, unsigned n)
{
	uint32_t a, base = PTX_NONE;
	bool same = true, plain = true;
	int k0 = -1;

	for (unsigned i = 1; i < n; i++)
		same &= src[i] == src[0];
	if (same)
		return src[0];
	if (is_pred_reg(d, r))
		return 0;
	{
		/* a value a loop does not change comes back over its back edge as the block's own
		 * phi (what the first round made of it): the other edges decide */
		uint32_t self = dv_atom_find(&d->x, DV_K_PHI, b, r), other = PTX_NONE;
		bool one = self != UINT32_MAX;

		for (unsigned i = 0; i < n && one; i++) {
			int k = dv_base_param(&d->x, src[i]);
			uint32_t sv = self != UINT32_MAX ? dv_atom_val(&d->x, self) : PTX_NONE;

			if (src[i] == sv ||
			    (k >= 0 && src[i] == dv_add(&d->x, dv_atom_val(&d->x, DV_A_PARAM0 + (uint32_t)k), sv)))
				continue;
			if (other != PTX_NONE && other != src[i])
				one = false;
			other = src[i];
		}
		if (one && other != PTX_NONE)
			return other;
	}
	for (unsigned i = 0; i < n; i++) {
		int k = dv_base_param(&d->x, src[i]);

		plain &= value_is_plain(d, src[i]);
		if (i == 0)
			k0 = k;
		else if (k != k0)
			k0 = -3;
	}
	if (!plain || n > DV_MAX_IN)
		return dv_unknown_of(&d->x, src, n);
	if (k0 >= 0)
		base = dv_atom_val(&d->x, DV_A_PARAM0 + (uint32_t)k0);
	a = dv_atom_get(&d->x, DV_K_PHI, b, r);
	if (a == UINT32_MAX) {
		d->x.oom = true;
		return d->x.v_any;
	}
	d->has_phi = true;
	d->x.atoms[a].nin = n;
	d->x.atoms[a].nonneg = -1;
	for (unsigned i = 0; i < n; i++) {
		uint32_t v = base == PTX_NONE ? src[i] : dv_sub(&d->x, src[i], base);

		d->x.atoms[a].in[i] = (struct dv_in){ .v = v, .cs = cs[i], .back = back[i] };
	}
	a = dv_atom_val(&d->x, a);
	return base == PTX_NONE ? a : dv_add(&d->x, base, a);
}

/* The state entering block b: false when no edge into it was reached yet. */
static bool join(struct dc *d, uint32_t b)
{
	uint32_t from[DV_MAX_IN + 1], slot[DV_MAX_IN + 1], cs[DV_MAX_IN + 1], src[DV_MAX_IN + 1];
	uint8_t back[DV_MAX_IN + 1];
	unsigned n = 0;
	bool many = false;

	for (uint32_t p = 0; p < d->nb; p++)
		for (unsigned s = 0; s < 2; s++)
			if (d->b[p].succ[s] == b && d->out_reached[p * 2 + s]) {
				if (n == DV_MAX_IN + 1) {
					many = true;
					continue;
				}
				from[n] = p;
				slot[n] = s;
				cs[n] = d->out_cs[p * 2 + s];
				back[n] = p >= b;
				n++;
			}
	if (n == 0)
		return false;
	d->cs = cs[0];
	for (unsigned i = 1; i < n; i++)
		d->cs = dv_cset_meet(&d->x, d->cs, cs[i]);
	for (uint32_t r = 0; r < d->f->nregs; r++) {
		for (unsigned i = 0; i < n; i++)
			src[i] = edge_regs(d, from[i], slot[i])[r];
		d->cur[r] = many ? (is_pred_reg(d, r) ? 0 : d->x.v_any) : join_value(d, b, r, src, cs, back, n);
	}
	return true;
}

static void store_edge(struct dc *d, uint32_t b, unsigned slot, uint32_t cs)
{
	uint32_t *regs = edge_regs(d, b, slot);
	size_t bytes = d->f->nregs * sizeof(*regs);

	if (d->b[b].succ[slot] == PTX_NONE)
		return;
	if (!d->out_reached[b * 2 + slot] || d->out_cs[b * 2 + slot] != cs || memcmp(regs, d->cur, bytes)) {
		d->changed = true;
		memcpy(regs, d->cur, bytes);
		d->out_cs[b * 2 + slot] = cs;
		d->out_reached[b * 2 + slot] = 1;
	}
}

static void run_block(struct dc *d, uint32_t b)
{
	const struct dc_block *bl = &d->b[b];
	const struct ptx_insn *last = &d->f->insns[bl->end - 1];

	if (b == 0) {
		for (uint32_t r = 0; r < d->f->nregs; r++)
			d->cur[r] = is_pred_reg(d, r) ? 0 : d->x.v_any;
		d->cs = 0;
	} else if (!join(d, b)) {
		return;
	}
	for (uint32_t i = bl->first; i < bl->end && !d->rc; i++)
		exec_insn(d, i);
	if (bl->cond) {
		uint32_t p = pred_of(d, last->guard);

		if (d->record)
			d->bpred[b] = p;
		store_edge(d, b, 0, cons_of(d, d->cs, p, last->guard_neg));
		store_edge(d, b, 1, cons_of(d, d->cs, p, !last->guard_neg));
	} else {
		store_edge(d, b, 0, d->cs);
	}
}

static int interpret(struct dc *d)
{
	int round;

	for (round = 0; round < DC_MAX_ROUNDS && !d->rc && !d->x.oom; round++) {
		d->changed = false;
		for (uint32_t b = 0; b < d->nb && !d->rc; b++)
			run_block(d, b);
		if (!d->changed)
			break;
	}
	if (d->rc)
		return d->rc;
	if (d->x.oom)
		return -CF_ENOMEM;
	if (round == DC_MAX_ROUNDS)
		return refuse(d->why, d->whylen, "the loops did not settle in %d rounds", DC_MAX_ROUNDS);
	d->record = true;
	for (uint32_t b = 0; b < d->nb && !d->rc; b++)
		run_block(d, b);
	return d->rc ? d->rc : (d->x.oom ? -CF_ENOMEM : 0);
}

/* ------------------------------------------------------------------ the card */

struct out {
	char *buf;
	size_t len, at;
	bool full;
};

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->at, o->len - o->at, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->at)
		o->full = true;
	else
		o->at += (size_t)n;
}

/* The card type of a non-pointer parameter, as its PTX declaration says. */
static const char *scalar_type(const struct ptx_var *p)
{
	switch (p->type) {
	case PTX_T_U32: case PTX_T_B32: return p->size == 4 ? "u32" : NULL;
	case PTX_T_S32: return p->size == 4 ? "i32" : NULL;
	case PTX_T_U64: case PTX_T_B64: return p->size == 8 ? "u64" : NULL;
	case PTX_T_S64: return p->size == 8 ? "i64" : NULL;
	case PTX_T_F32: return p->size == 4 ? "f32" : NULL;
	case PTX_T_F64: return p->size == 8 ? "f64" : NULL;
	default: return NULL;
	}
}

static const char *scalar_type(const struct ptx_var *p);

/* A max-set as a card expression into buf; false when it does not fit or the card's
 * expression compiler would refuse it (too many operations): the span is then unknown. */
static bool span_text(struct dc *d, const struct dv_mset *set, char *buf, size_t len)
{
	struct out o = { buf, len, 0, len == 0 };
	const char *names[RW_CARD_MAX_PARAMS + 6];
	int64_t vals[RW_CARD_MAX_PARAMS + 6], v;
	char e[512], pn[RW_CARD_MAX_PARAMS][8];
	unsigned n = 0;

	for (unsigned i = 0; i + 1 < set->n; i++)
		put(&o, "max(");
	for (unsigned i = 0; i < set->n; i++) {
		if (dv_format(&d->x, set->v[i], e, sizeof(e)) < 0)
			return false;
		put(&o, i == 0 ? "%s" : ", %s)", e);
	}
	if (o.full)
		return false;
	for (const char *g = "gx\0gy\0gz\0bx\0by\0bz\0"; *g; g += 3) {
		names[n] = g;
		vals[n++] = 1;
	}
	/* only the parameters the card declares as integers may appear in a span */
	for (uint32_t k = 0; k < d->f->nparams && k < RW_CARD_MAX_PARAMS; k++) {
		const char *t = scalar_type(&d->f->params[k]);
		bool is_struct = !d->f->params[k].is_ptr && d->f->params[k].size > 8;

		if (!is_struct && (d->pe[k].acc || !t || t[0] == 'f'))
			continue; /* a struct is named by its fields (p0@8) */
		snprintf(pn[k], sizeof(pn[k]), "p%u", k);
		names[n] = pn[k];
		vals[n++] = 1;
	}
	return rw_expr_eval_text(buf, names, vals, n, &v, NULL, 0) != -CF_EINVAL;
}

/* A pointer's access and span as card words ("r n*4"), after its notes (name: "p3", or
 * "p0+8" for a field). */
static void put_pointer(struct dc *d, struct out *o, const struct dc_param *pe, const char *name,
			const char *line)
{
	static const char *const acc[] = { "none", "r", "w", "rw" };
	char *span = d->span;
	bool known = !pe->unknown && pe->span.n && span_text(d, &pe->span, span, sizeof(d->span));

	if (!known && !pe->unknown && pe->span.n > 1) {
		/* too long as a max of bounds: divisions by constants weakened (the bounds then
		 * often dominate one another), else one wider bound, monomial by monomial */
		struct dv_mset weak = { 0 }, one;
		bool ok = true;

		for (unsigned i = 0; i < pe->span.n && ok; i++)
			ok = dv_mset_join(&d->x, &weak, dv_weaken_div(&d->x, pe->span.v[i])) == 0;
		known = ok && span_text(d, &weak, span, sizeof(d->span));
		if (!known) {
			one = (struct dv_mset){ 1, { dv_mset_collapse(&d->x, ok ? &weak : &pe->span) } };
			known = one.v[0] != UINT32_MAX && span_text(d, &one, span, sizeof(d->span));
		}
	}
	if (pe->unknown)
		put(o, "  # %s: span unknown: %s\n", name, pe->note);
	else if (!known)
		put(o, "  # %s: span unknown: its bound is too long for a card expression\n", name);
	if (pe->atomic)
		put(o, "  # %s: updated atomically\n", name);
	if (known && d->fits32) /* (int)(i * stride) is i * stride only below 2^31 */
		put(o, "  %s %s fits32(%s)\n", line, acc[pe->acc & 3], span);
	else
		put(o, "  %s %s %s\n", line, acc[pe->acc & 3], known ? span : "unknown");
}

static void put_param(struct dc *d, struct out *o, uint32_t k)
{
	const struct dc_param *pe = &d->pe[k];
	const struct ptx_var *p = &d->f->params[k];
	char name[16], line[40];

	if (pe->acc) {
		snprintf(name, sizeof(name), "p%u", k);
		snprintf(line, sizeof(line), "param p%u ptr", k);
		put_pointer(d, o, pe, name, line);
	} else if (scalar_type(p)) {
		put(o, "  param p%u %s\n", k, scalar_type(p));
	} else {
		put(o, "  param p%u struct %llu\n", k, (unsigned long long)p->size);
	}
}

/* The pointers read out of struct parameters at fixed offsets, as `field` lines. */
static void put_fields(struct dc *d, struct out *o)
{
	for (unsigned i = 0; i < d->nfe; i++) {
		const struct dv_atom *a = &d->x.atoms[d->fe_atom[i]];
		char name[32], line[64];

		if (!d->fe[i].acc)
			continue;
		snprintf(name, sizeof(name), "p%u+%u", a->key1, a->key2 / 32);
		snprintf(line, sizeof(line), "field p%u %u", a->key1, a->key2 / 32);
		put_pointer(d, o, &d->fe[i], name, line);
	}
}

/* What a rewrite must respect beyond the spans, as a note (the card language has no word for
 * it yet): grid-size dependence, clocks, barriers, shared memory, atomics, trap, calls. */
static void put_facts(struct dc *d, struct out *o)
{
	static const char *const names[] = { "reads %nctaid", "reads a clock or an SM/warp id",
					      "barriers", "shared memory", "global atomics", "trap",
					      "calls device functions", "shuffles or votes" };
	uint64_t shared = 0;
	bool dynamic = false;

	for (uint32_t v = 0; v < d->f->nvars; v++)
		if (d->f->vars[v].space == PTX_SPACE_SHARED) {
			shared += d->f->vars[v].size;
			dynamic |= d->f->vars[v].is_extern;
		}
	/* module-scope shared variables count for the kernels that name them */
	for (uint32_t v = 0; v < d->x.m->nvars; v++) {
		const struct ptx_var *mv = &d->x.m->vars[v];
		bool named = false;

		for (uint32_t i = 0; i < d->f->ninsns && !named && mv->space == PTX_SPACE_SHARED; i++)
			for (unsigned k = 0; k < d->f->insns[i].nops; k++) {
				const struct ptx_operand *op = &d->f->insns[i].ops[k];

				named |= (op->kind == PTX_OP_SYM || op->kind == PTX_OP_ADDR) &&
					 op->scope == PTX_SCOPE_GLOBAL && op->index == v;
			}
		if (named) {
			shared += mv->size;
			dynamic |= mv->is_extern;
		}
	}
	if (!d->facts && !shared && !dynamic)
		return;
	put(o, "# facts:");
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (d->facts & (1u << i))
			put(o, " %s;", names[i]);
	if (shared || dynamic)
		put(o, " %llu bytes of static shared memory%s;", (unsigned long long)shared,
		    dynamic ? ", dynamic shared memory" : "");
	put(o, "\n");
}

static bool pred_is_lt_any(struct dc *d, uint32_t p, bool truth, uint32_t x, uint32_t *n);

/* Whether predicate p being `truth` is exactly x < n (not merely implies it) for the count n
 * the card would read: n one integer parameter or struct field, compared as the card reads it
 * (8 bytes each, or signed both in the same width; an unsigned 4-byte count compared signed is
 * -1 to the kernel and 2^32 - 1 to the card). *n gets n. */
static bool pred_is_lt(struct dc *d, uint32_t p, bool truth, uint32_t x, uint32_t *n)
{
	uint32_t v;

	if (!pred_is_lt_any(d, p, truth, x, &v))
		return false;
	*n = v;
	return true;
}

static bool count_type_matches(struct dc *d, uint32_t n, uint8_t width)
{
	const struct dv_poly *p = dv_poly_get(&d->x, n);
	const struct dv_atom *a;
	unsigned bytes;
	bool sgn;

	if (p->n != 1 || p->t[0].c != 1 || p->t[0].deg != 1)
		return false;
	a = &d->x.atoms[p->t[0].a[0]];
	if (a->kind == DV_K_FIELD) {
		bytes = a->key2 & 15;
		sgn = a->key2 & 16;
	} else if (a->kind == DV_K_PARAM && (uint32_t)(p->t[0].a[0] - DV_A_PARAM0) < d->f->nparams) {
		const struct ptx_var *v = &d->f->params[p->t[0].a[0] - DV_A_PARAM0];

		bytes = v->size;
		sgn = is_signed_type(v->type);
	} else {
		return false;
	}
	if (bytes == 8 && (width & 0x7f) == 8)
		return true;
	return sgn && (width & 0x80) && bytes == (width & 0x7fu);
}

static bool pred_is_lt_any(struct dc *d, uint32_t p, bool truth, uint32_t x, uint32_t *n)
{
	static const uint8_t negate[] = { [CMP_LT] = CMP_GE, [CMP_LE] = CMP_GT, [CMP_GT] = CMP_LE,
					  [CMP_GE] = CMP_LT, [CMP_EQ] = CMP_NE, [CMP_NE] = CMP_EQ };
	struct dv_pred pr;
	uint8_t op;

	for (int depth = 0; p && depth < 8; depth++) {
		pr = *pred_get(d, p);
		if (pr.kind == PR_NOT) {
			p = pr.a;
			truth = !truth;
			continue;
		}
		if (pr.kind != PR_CMP)
			return false;
		op = truth ? pr.op : negate[pr.op];
		if (op == CMP_LT && pr.a == x)
			*n = pr.b;
		else if (op == CMP_GT && pr.b == x)
			*n = pr.a;
		else
			return false;
		return count_type_matches(d, *n, pr.width);
	}
	return false;
}

/* Whether candidate w stores element k of every k in [0, N) whatever the grid, N a launch value
 * (*count): its counter k is a phi of its block H entered at g = ctaid.x*ntid.x + tid.x and
 * stepped by ntid.x*nctaid.x; H is the whole loop (a guarded bra back to itself, taken exactly
 * while k + step < N), so every instruction of H, the unguarded store among them, runs on every
 * iteration; H is entered from one path out of the entry block that leaves only where g >= N
 * (one guard, exactly g < N) and holds no ret, exit or trap. A store under any other condition
 * (a guard, a branch inside the loop, a second exit) is not whole. */
static bool whole_valid(struct dc *d, const struct dc_whole *w, uint32_t *count)
{
	const struct dv_atom *c = &d->x.atoms[w->atom];
	const struct dc_block *hb = &d->b[w->blk];
	const struct ptx_insn *last = &d->f->insns[hb->end - 1];
	uint32_t h = w->blk, step, n = 0, ng = 0, pre = PTX_NONE, b = 0, into = 0;
	bool guarded = false;
	int back = -1;

	if ((d->facts & DC_F_TRAP) || c->kind != DV_K_PHI || c->key1 != h || c->nin != 2)
		return false;
	for (unsigned i = 0; i < 2; i++)
		if (c->in[i].back)
			back = back < 0 ? (int)i : 2;
	if (back < 0 || back > 1)
		return false;
	step = dv_mul(&d->x, dv_atom_val(&d->x, PTX_SR_NTID_X), dv_atom_val(&d->x, PTX_SR_NCTAID_X));
	if (c->in[back].v != dv_add(&d->x, dv_atom_val(&d->x, w->atom), step) || c->in[1 - back].v != d->g)
		return false;
	if (!hb->cond || strcmp(last->opcode, "bra") || hb->succ[1] != h || hb->succ[0] == h ||
	    !pred_is_lt(d, d->bpred[h], !last->guard_neg, c->in[back].v, &n) || !dv_is_launch_value(&d->x, n))
		return false;
	for (uint32_t q = 0; q < d->nb; q++)
		for (unsigned s = 0; s < 2; s++)
			if (d->b[q].succ[s] == h) {
				into++;
				if (q != h)
					pre = q;
			}
	if (into != 2 || pre == PTX_NONE)
		return false;
	for (uint32_t steps = 0; b != h; steps++) {
		const struct dc_block *bl = &d->b[b];
		const struct ptx_insn *l = &d->f->insns[bl->end - 1];
		uint32_t next = bl->succ[0];

		if (steps > d->nb)
			return false;
		if (bl->cond) {
			/* the fall-through runs where the guard's predicate equals guard_neg */
			if (guarded)
				return false;
			if (pred_is_lt(d, d->bpred[b], l->guard_neg, d->g, &ng))
				next = bl->succ[0];
			else if (pred_is_lt(d, d->bpred[b], !l->guard_neg, d->g, &ng))
				next = bl->succ[1];
			else
				return false;
			if (ng != n)
				return false;
			guarded = true;
		}
		if (next == PTX_NONE || (next == h && b != pre))
			return false;
		b = next;
	}
	if (!guarded)
		return false;
	*count = n;
	return true;
}

/* The `whole` lines: one per store whole_valid proves (its target: "p3", or "p2@0" for a field). */
static void put_whole(struct dc *d, struct out *o)
{
	for (unsigned i = 0; i < d->nfirst; i++)
		put(o, "  whole %s\n", d->first[i]);
	for (unsigned i = 0; i < d->nwc && i + d->nfirst < RW_CARD_MAX_WHOLE; i++) {
		const struct dc_whole *w = &d->wc[i];
		char target[32], cnt[256], str[256];
		struct dv_mset mc = { 1, { 0 } }, ms = { 1, { w->stride } };
		uint32_t n;

		if (!whole_valid(d, w, &n))
			continue;
		mc.v[0] = n;
		if ((uint32_t)w->base < d->f->nparams) {
			snprintf(target, sizeof(target), "p%d", w->base);
		} else {
			const struct dv_atom *a = &d->x.atoms[DV_A_PARAM0 + (uint32_t)w->base];

			snprintf(target, sizeof(target), "p%u@%u", a->key1, a->key2 / 32);
		}
		if (!span_text(d, &mc, cnt, sizeof(cnt)) || !span_text(d, &ms, str, sizeof(str)))
			continue;
		for (char *s = cnt, *t = cnt; ; s++)  /* one word each: blanks dropped */
			if (*s != ' ' && !(*t++ = *s))
				break;
		for (char *s = str, *t = str; ; s++)
			if (*s != ' ' && !(*t++ = *s))
				break;
		put(o, "  whole %s %u %s %s\n", target, w->unit, cnt, str);
	}
}

/* ------------------------------------------------------------------ whole by thread 0 */

#define DC_MAX_FACTORS 8 /* conditions of one first_whole count */

struct dc_path {
	const uint8_t *in;            /* per block: S is reachable from it by forward edges */
	uint32_t s;                   /* the store's block S */
	char fac[DC_MAX_FACTORS][160]; /* the count's factors, each min(E,1) */
	bool neg[DC_MAX_FACTORS];     /* E may be negative */
	unsigned nf;
};

/* v as it is the first time S runs, when every block before it ran on a path inside the
 * region: each phi of a block h replaced by the one value all its edges from the region bring
 * (the entering value of a loop that holds S: its back edge leaves from S or after it). The
 * value must then be made of launch symbols; UINT32_MAX when it is not or a phi has two values. */
static uint32_t first_value(struct dc *t, const struct dc_path *pa, uint32_t v)
{
	for (unsigned round = 0; round < 16; round++) {
		const struct dv_poly *p = dv_poly_get(&t->x, v);
		uint32_t at = UINT32_MAX, u = UINT32_MAX, e = 0;
		const struct dv_atom *j;

		for (unsigned i = 0; i < p->n && at == UINT32_MAX; i++)
			for (unsigned k = 0; k < p->t[i].deg; k++)
				if (t->x.atoms[p->t[i].a[k]].kind == DV_K_PHI) {
					at = p->t[i].a[k];
					break;
				}
		if (at == UINT32_MAX)
			break;
		j = &t->x.atoms[at];
		for (uint32_t q = 0; q < t->nb; q++) /* the edges in join()'s order */
			for (unsigned s = 0; s < 2; s++) {
				if (t->b[q].succ[s] != j->key1 || !t->out_reached[q * 2 + s])
					continue;
				if (e >= j->nin)
					return UINT32_MAX;
				if (q < pa->s && pa->in[q]) {
					if (u != UINT32_MAX && u != j->in[e].v)
						return UINT32_MAX;
					u = j->in[e].v;
				}
				e++;
			}
		if (e != j->nin || u == UINT32_MAX)
			return UINT32_MAX;
		v = dv_subst(&t->x, v, at, u);
	}
	if (!value_is_plain(t, v) || !dv_is_launch_value(&t->x, v) || dv_has_atom(&t->x, v, DV_A_ANY))
		return UINT32_MAX;
	for (unsigned i = 0; i < dv_poly_get(&t->x, v)->n; i++)
		for (unsigned k = 0; k < dv_poly_get(&t->x, v)->t[i].deg; k++)
			if (t->x.atoms[dv_poly_get(&t->x, v)->t[i].a[k]].kind == DV_K_PHI)
				return UINT32_MAX;
	return v;
}

static bool cmp_holds(uint8_t op, int64_t a, int64_t b, uint8_t width)
{
	unsigned w = width & 0x7fu;
	bool sgn = width & 0x80;
	int c;

	if (w < 8) {
		uint64_t m = ((uint64_t)1 << (8 * w)) - 1, ua = (uint64_t)a & m, ub = (uint64_t)b & m;

		if (sgn) {
			uint64_t top = (uint64_t)1 << (8 * w - 1);

			a = (int64_t)((ua ^ top) - top);
			b = (int64_t)((ub ^ top) - top);
		} else {
			a = (int64_t)ua;
			b = (int64_t)ub;
		}
		c = a < b ? -1 : a > b;
	} else if (sgn) {
		c = a < b ? -1 : a > b;
	} else {
		c = (uint64_t)a < (uint64_t)b ? -1 : (uint64_t)a > (uint64_t)b;
	}
	switch (op) {
	case CMP_LT: return c < 0;
	case CMP_LE: return c <= 0;
	case CMP_GT: return c > 0;
	case CMP_GE: return c >= 0;
	case CMP_EQ: return c == 0;
	default: return c != 0;
	}
}

static bool const_of(const struct dc *t, uint32_t v, int64_t *c)
{
	const struct dv_poly *p = dv_poly_get(&t->x, v);

	if (p->n == 0) {
		*c = 0;
		return true;
	}
	if (p->n != 1 || p->t[0].deg != 0)
		return false;
	*c = p->t[0].c;
	return true;
}

/* Compared with `want`, comparison pr holds at thread 0 of block 0: true when it surely does,
 * or when it does exactly while "parameter op constant" does (that condition is added to pa as
 * a factor min(E,1), E >= 1 exactly when it holds, the parameter read as the comparison reads
 * it); false when it cannot say. */
static bool cmp_factor(struct dc *t, struct dc_path *pa, const struct dv_pred *pr, bool want)
{
	static const uint8_t negate[] = { [CMP_LT] = CMP_GE, [CMP_LE] = CMP_GT, [CMP_GT] = CMP_LE,
					  [CMP_GE] = CMP_LT, [CMP_EQ] = CMP_NE, [CMP_NE] = CMP_EQ };
	static const uint8_t swap[] = { [CMP_LT] = CMP_GT, [CMP_LE] = CMP_GE, [CMP_GT] = CMP_LT,
					[CMP_GE] = CMP_LE, [CMP_EQ] = CMP_EQ, [CMP_NE] = CMP_NE };
	uint8_t op = want ? pr->op : negate[pr->op];
	unsigned w = pr->width & 0x7fu;
	bool sgn = pr->width & 0x80, rsgn;
	uint32_t a = first_value(t, pa, pr->a), b = first_value(t, pa, pr->b), x, xa;
	int64_t ka, kb, k, c;
	const struct dv_poly *p;
	const struct dv_atom *at;
	char name[96], e[128];
	int sign;

	if (a == UINT32_MAX || b == UINT32_MAX || (w != 1 && w != 2 && w != 4 && w != 8))
		return false;
	if (const_of(t, a, &ka) && const_of(t, b, &kb))
		return cmp_holds(op, ka, kb, pr->width);
	if (w != 4 && w != 8)
		return false; /* what a card can read: i32 u32 i64 u64 */
	if (const_of(t, b, &k)) {
		x = a;
	} else if (const_of(t, a, &k)) {
		x = b;
		op = swap[op];
	} else {
		return false;
	}
	p = dv_poly_get(&t->x, x);
	if (p->n != 1 || p->t[0].c != 1 || p->t[0].deg != 1 || k < -((int64_t)1 << 40) || k > ((int64_t)1 << 40))
		return false;
	xa = p->t[0].a[0];
	at = &t->x.atoms[xa];
	if (at->kind == DV_K_FIELD) {
		if ((at->key2 & 15) != w)
			return false;
		xa = dv_atom_get(&t->x, DV_K_FIELD, at->key1, (at->key2 & ~16u) | (sgn ? 16u : 0u));
		if (xa == UINT32_MAX)
			return false;
		t->x.atoms[xa].launch = 1;
		rsgn = sgn; /* the card reads the field as the comparison does */
	} else if (at->kind == DV_K_PARAM && xa - DV_A_PARAM0 < t->f->nparams &&
		   ptx_type_bytes(t->f->params[xa - DV_A_PARAM0].type) != t->f->params[xa - DV_A_PARAM0].size) {
		/* a by-value struct read whole (CuPy's 0-d CIndexer): its bytes at 0, read as compared */
		if (t->f->params[xa - DV_A_PARAM0].size != w)
			return false;
		xa = dv_atom_get(&t->x, DV_K_FIELD, xa - DV_A_PARAM0, (sgn ? 16u : 0u) + w);
		if (xa == UINT32_MAX)
			return false;
		t->x.atoms[xa].launch = 1;
		rsgn = sgn;
	} else if (at->kind == DV_K_PARAM && xa - DV_A_PARAM0 < t->f->nparams) {
		const struct ptx_var *v = &t->f->params[xa - DV_A_PARAM0];

		rsgn = is_signed_type(v->type);
		if (v->size != w || v->is_ptr || !scalar_type(v) || scalar_type(v)[0] == 'f' || rsgn != sgn)
			return false; /* the card reads it as declared: that must be how it is compared */
	} else {
		return false;
	}
	if (w < 8 && (sgn ? (k < -((int64_t)1 << (8 * w - 1)) || k >= ((int64_t)1 << (8 * w - 1))) :
			    (k < 0 || k >= ((int64_t)1 << (8 * w)))))
		return false;
	if (!sgn && k < 0)
		return false;
	switch (op) { /* E = sign * X + c */
	case CMP_GT: sign = 1; c = -k; break;
	case CMP_GE: sign = 1; c = 1 - k; break;
	case CMP_LT: sign = -1; c = k; break;
	case CMP_LE: sign = -1; c = k + 1; break;
	case CMP_NE:
		if (sgn || k != 0)
			return false;
		sign = 1;
		c = 0;
		break;
	default:
		return false;
	}
	if (dv_format(&t->x, dv_atom_val(&t->x, xa), name, sizeof(name)) < 0 || strncmp(name, "1*", 2))
		return false;
	if (sign > 0 && c == 0)
		snprintf(e, sizeof(e), "%s", name + 2);
	else if (sign > 0)
		snprintf(e, sizeof(e), "%s%+lld", name + 2, (long long)c);
	else
		snprintf(e, sizeof(e), "%lld-%s", (long long)c, name + 2);
	for (unsigned i = 0; i < pa->nf; i++)
		if (!strncmp(pa->fac[i] + 4, e, strlen(e)) && !strcmp(pa->fac[i] + 4 + strlen(e), ",1)"))
			return true;
	if (pa->nf == DC_MAX_FACTORS)
		return false;
	snprintf(pa->fac[pa->nf], sizeof(pa->fac[0]), "min(%s,1)", e);
	pa->neg[pa->nf++] = !(sign > 0 && c >= 0 && !rsgn);
	return true;
}

/* Predicate p equals `want` at thread 0 of block 0 (first_value), under the factors it adds. */
static bool need(struct dc *t, struct dc_path *pa, uint32_t p, bool want, int depth)
{
	const struct dv_pred pr = *pred_get(t, p);

	if (!p || depth > 8)
		return false;
	switch (pr.kind) {
	case PR_NOT:
		return need(t, pa, pr.a, !want, depth + 1);
	case PR_AND:
	case PR_OR:
		if ((pr.kind == PR_AND) != want)
			return false; /* a disjunction: not said */
		return need(t, pa, pr.a, want, depth + 1) && need(t, pa, pr.b, want, depth + 1);
	case PR_CMP:
		return cmp_factor(t, pa, &pr, want);
	}
	return false;
}

/* The count of a `whole` line for store candidate w of the tid0 pass t: thread 0 of block 0
 * surely runs it when no edge leaves the region R (the blocks from which S is reachable by
 * forward edges) before S: each edge out of R is a guarded branch whose predicate, at thread 0
 * of block 0 on the first iteration of the loops that hold S, is decided or is a parameter
 * compared with a constant (a factor of the count). false when any edge cannot be said. */
static bool first_count(struct dc *t, const struct dc_first *w, char *cnt, size_t len)
{
	uint8_t *in = calloc(t->nb ? t->nb : 1, 1);
	struct dc_path pa;
	bool ok = in != NULL;
	size_t at = 0;
	int nneg = 0;

	memset(&pa, 0, sizeof(pa));
	pa.in = in;
	pa.s = w->blk;
	for (uint32_t b = w->blk; ok && b-- > 0;)
		for (unsigned s = 0; s < 2; s++) {
			uint32_t q = t->b[b].succ[s];

			if (q != PTX_NONE && q > b && (q == w->blk || in[q]))
				in[b] = 1;
		}
	if (ok && w->blk != 0 && !in[0])
		ok = false;
	for (uint32_t b = 0; ok && b < w->blk; b++) {
		const struct dc_block *bl = &t->b[b];
		const struct ptx_insn *last = &t->f->insns[bl->end - 1];

		if (!in[b])
			continue;
		for (unsigned s = 0; ok && s < (bl->cond ? 2u : 1u); s++) {
			uint32_t q = bl->succ[s];

			if (q != PTX_NONE && (q == w->blk || in[q]))
				continue;
			/* edge s leaves R: it is taken where the guard's predicate is (s == 1) != guard_neg */
			ok = bl->cond && need(t, &pa, t->bpred[b], (s == 1) == last->guard_neg, 0);
		}
	}
	free(in);
	if (!ok)
		return false;
	if (pa.nf == 0)
		return snprintf(cnt, len, "1") < (int)len;
	for (unsigned i = 0; i < pa.nf; i++) {
		/* each factor is at most 1: a product of them is >= 1 only when all are 1 if at most
		 * one may be negative (the others are clamped to 0 from below) */
		bool clamp = pa.neg[i] && nneg++ > 0;
		int n = snprintf(cnt + at, len - at, clamp ? "%smax(%s,0)" : "%s%s", i ? "*" : "", pa.fac[i]);

		if (n < 0 || (size_t)n >= len - at)
			return false;
		at += (size_t)n;
	}
	return true;
}

static int dc_open(struct dc *d, const struct ptx_module *m, const struct ptx_func *f, char *why, size_t whylen);
static void dc_close(struct dc *d);

/* `whole` lines for the stores thread 0 of block 0 surely reaches at offset 0 of a pointer the
 * card writes (a reduction's one-element output): a second interpretation with tid and ctaid 0
 * (a separate context: its phis must not overwrite d's), one line per target. */
static void first_whole(struct dc *d, const struct ptx_module *m, const struct ptx_func *f)
{
	struct dc *tp = malloc(sizeof(*tp));

	if (!tp || (d->facts & (DC_F_TRAP | DC_F_CALL))) { /* (a callee may exit) */
		free(tp);
		return;
	}
	if (dc_open(tp, m, f, NULL, 0) == 0) {
		tp->tid0 = true;
		if (interpret(tp) == 0)
			for (unsigned i = 0; i < tp->nfc && d->nfirst < RW_CARD_MAX_WHOLE; i++) {
				const struct dc_first *w = &tp->fc[i];
				char target[32], cnt[256];
				bool written = false, dup = false;

				if ((uint32_t)w->base < f->nparams) {
					snprintf(target, sizeof(target), "p%d", w->base);
					written = d->pe[w->base].acc & DC_W;
				} else {
					const struct dv_atom *a = &tp->x.atoms[DV_A_PARAM0 + (uint32_t)w->base];

					snprintf(target, sizeof(target), "p%u@%u", a->key1, a->key2 / 32);
					for (unsigned k = 0; k < d->nfe; k++)
						if (d->x.atoms[d->fe_atom[k]].key1 == a->key1 &&
						    d->x.atoms[d->fe_atom[k]].key2 == a->key2)
							written = d->fe[k].acc & DC_W;
				}
				for (unsigned k = 0; k < d->nfirst; k++)
					dup |= !strncmp(d->first[k], target, strlen(target)) &&
					       d->first[k][strlen(target)] == ' ';
				if (!written || dup || !first_count(tp, w, cnt, sizeof(cnt)))
					continue;
				snprintf(d->first[d->nfirst++], sizeof(d->first[0]), "%s %u %s %u", target, w->unit,
					 cnt, w->unit);
			}
	}
	dc_close(tp);
	free(tp);
}

static int write_card(struct dc *d, const char *kernel, char *card, size_t cardlen)
{
	struct out o = { card, cardlen, 0, cardlen == 0 };
	bool pure = !d->impure, elementwise = d->ew && d->ew_count >= 0 && !d->has_phi;
	const char *ct = elementwise ? scalar_type(&d->f->params[d->ew_count]) : NULL;

	if (elementwise && (!ct || ct[0] == 'f' || d->pe[d->ew_count].acc))
		elementwise = false; /* the count must be an integer parameter of the card */

	for (uint32_t k = 0; k < d->f->nparams; k++)
		pure &= d->pe[k].acc != (DC_R | DC_W);
	for (unsigned i = 0; i < d->nfe; i++)
		pure &= d->fe[i].acc != (DC_R | DC_W);
	put(&o, "# derived from PTX (rw_card_derive): spans assume that integer parameters (and struct "
		"fields) bounding or scaling an index are not negative and that index arithmetic does not wrap\n");
	if (strlen(kernel) > DC_MAX_PATTERN) {
		/* the card language's patterns are shorter: a prefix glob names the kernel */
		put(&o, "# the name is longer than a card pattern may be: its first %d characters\n",
		    DC_MAX_PATTERN - 1);
		put(&o, "kernel %.*s*\n", DC_MAX_PATTERN - 1, kernel);
	} else {
		put(&o, "kernel %s\n", kernel);
	}
	put_facts(d, &o);
	for (uint32_t k = 0; k < d->f->nparams; k++)
		put_param(d, &o, k);
	put_fields(d, &o);
	put_whole(d, &o);
	if (elementwise) {
		put(&o, "  count p%d\n", d->ew_count);
		put(&o, "  elementwise\n");
	}
	if (pure)
		put(&o, "  pure\n");
	put(&o, "end\n");
	return o.full ? -CF_ERANGE : 0;
}

/* d set up for kernel f (blocks built, state allocated); dc_close frees it whatever this
 * returns. */
static int dc_open(struct dc *d, const struct ptx_module *m, const struct ptx_func *f, char *why, size_t whylen)
{
	int rc;

	memset(d, 0, sizeof(*d));
	d->f = f;
	d->why = why;
	d->whylen = whylen;
	d->ew = 1;
	d->ew_count = -1;
	rc = dv_ctx_init(&d->x, m, f);
	if (rc == 0) {
		struct dv_pred unk;

		memset(&unk, 0, sizeof(unk)); /* predicate 0: says nothing */
		if (dv_pool_intern(&d->x.preds, &unk) != 0)
			rc = -CF_ENOMEM;
	}
	if (rc == 0)
		rc = build_blocks(d);
	if (rc == 0 && d->nb == 0)
		rc = refuse(why, whylen, "an empty body");
	if (rc == 0) {
		size_t regs = (size_t)(d->nb ? d->nb : 1) * 2 * (f->nregs ? f->nregs : 1);

		d->out_regs = calloc(regs, sizeof(*d->out_regs));
		d->out_cs = calloc((size_t)d->nb * 2, sizeof(*d->out_cs));
		d->out_reached = calloc((size_t)d->nb * 2, 1);
		d->cur = calloc(f->nregs ? f->nregs : 1, sizeof(*d->cur));
		d->pe = calloc(f->nparams ? f->nparams : 1, sizeof(*d->pe));
		d->bpred = calloc(d->nb, sizeof(*d->bpred));
		if (!d->bpred || !d->out_regs || !d->out_cs || !d->out_reached || !d->cur || !d->pe)
			rc = -CF_ENOMEM;
	}
	if (rc == 0)
		d->g = dv_add(&d->x, dv_mul(&d->x, dv_atom_val(&d->x, PTX_SR_CTAID_X), dv_atom_val(&d->x, PTX_SR_NTID_X)),
			      dv_atom_val(&d->x, PTX_SR_TID_X));
	return rc;
}

static void dc_close(struct dc *d)
{
	free(d->out_regs);
	free(d->out_cs);
	free(d->out_reached);
	free(d->cur);
	free(d->pe);
	free(d->bpred);
	free(d->blk_of);
	free(d->b);
	dv_ctx_fini(&d->x);
}

static int derive(const struct ptx_module *m, const struct ptx_func *f, char *card, size_t cardlen,
		  char *why, size_t whylen)
{
	struct dc *d = malloc(sizeof(*d));
	int rc;

	if (!d)
		return -CF_ENOMEM;
	rc = dc_open(d, m, f, why, whylen);
	if (rc == 0)
		rc = interpret(d);
	if (rc == 0)
		first_whole(d, m, f);
	if (rc == 0)
		rc = write_card(d, f->name, card, cardlen);
	dc_close(d);
	free(d);
	return rc;
}

int rw_card_derive(const struct ptx_module *m, const char *kernel, char *card, size_t cardlen,
		   char *why, size_t whylen)
{
	const struct ptx_func *f;
	int rc;

	if (!m || !kernel || !card || (!why && whylen))
		return -CF_EINVAL;
	if (cardlen)
		card[0] = '\0';
	if (why && whylen)
		why[0] = '\0';
	f = find_entry(m, kernel);
	if (!f)
		return -CF_ENOENT;
	rc = screen_body(m, f, why, whylen);
	if (rc == 0)
		rc = derive(m, f, card, cardlen, why, whylen);
	if (rc == -CF_ENOMEM)
		rc = refuse(why, whylen, "out of memory");
	if (rc < 0 && rc != -CF_ENOSYS && rc != -CF_ERANGE && cardlen)
		card[0] = '\0';
	return rc;
}
