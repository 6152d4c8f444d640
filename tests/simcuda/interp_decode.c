/* interp_decode.c - the PTX interpreter's decoder: one function of the parsed module (and the
 * .func bodies it calls) into the compact form of interp_int.h, once, at its first launch.
 * tests/simcuda layer.
 *
 * The PTX was read at load by the product's front end (driver/ptx.h, sim_ptx.parsed): every
 * operand is already resolved to a register id, a symbol, a label or an immediate, so decoding
 * is placing them: registers get slots (id + II_S_NFIXED), symbols their offsets in their state
 * space (module .global/.const variables: host storage made here, with their initialisers),
 * immediates constant slots, and each instruction's opcode and modifiers go to
 * sim__interp_pick for a handler. Anything not understood stops the decoding with a message
 * naming the instruction, which the launch reports (CUDA_ERROR_NOT_SUPPORTED): an unknown
 * construct is never guessed at. */
#include "interp_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEC_MAX_VEC 4                /* elements of a vector ld/st/mov operand */
#define DEC_MAX_ARGS 16              /* arguments of a call (struct ii_call) */

ii_fn sim__interp_pack_fn(bool unpack);

/* Where a symbol lives for the interpreter. */
struct dec_sym {
	uint8_t space;               /* enum ii_space */
	bool ok;                     /* modeled (else a use is refused) */
	uint64_t off;                /* offset in that space; .global/.const: host address */
};

/* Module-scope index, built on first use and kept in sim_imod's tail (see below). */
struct dec_index {
	struct dec_sym *vars;        /* per module variable (parsed->vars) */
	void **blocks;               /* storage of .global/.const variables, NULL for the others */
	uint32_t nvars;
	uint32_t shared_bytes;       /* module-scope .shared variables' total */
};

struct imod_full {
	struct sim_imod pub;         /* what interp_int.h shows */
	struct dec_index ix;         /* the module index */
	bool indexed;                /* ix built */
};

struct dec {
	struct sim_module *mod;      /* the module being read */
	const struct ptx_module *pm; /* its parsed PTX */
	const struct ptx_func *pf;   /* the function being decoded */
	const struct dec_index *ix;  /* module index */
	struct sim_imod *im;         /* its interpreter state */
	struct sim_ifunc *f;         /* function being built */
	struct dec_sym *params;      /* per pf->params */
	struct dec_sym *vars;        /* per pf->vars */
	uint8_t *reg_bits;           /* declared width per register id */
	uint32_t capcode, capconsts; /* allocated f->code, f->consts */
	uint32_t line;               /* line of the instruction being decoded */
	char *err;                   /* message buffer */
	size_t errlen;
};

static int fail(struct dec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct dec *d, const char *fmt, ...)
{
	va_list ap;

	if (d->err[0] == 0) {
		va_start(ap, fmt);
		vsnprintf(d->err, d->errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Grow an array of n used elements to hold one more. */
static int grow(void **arr, uint32_t n, uint32_t *cap, size_t elem)
{
	void *p;
	uint32_t nc;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : 16;
	p = realloc(*arr, (size_t)nc * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

static uint32_t align_up(uint32_t v, uint32_t a)
{
	return a > 1 ? (v + a - 1) & ~(a - 1) : v;
}

/* ------------------------------------------------------------------ module index */

/* Host storage for a module .global/.const variable, with its numeric initial bytes; the
 * address words are filled once every variable has storage (fill_addresses). */
static int global_storage(struct dec_index *ix, uint32_t i, const struct ptx_var *v)
{
	size_t align = v->align < 16 ? 16 : v->align, size = v->size ? v->size : 1;
	void *block = aligned_alloc(align, (size + align - 1) / align * align);

	if (!block)
		return -1;
	memset(block, 0, size);
	if (v->init)
		memcpy(block, v->init, v->size);
	ix->blocks[i] = block;
	ix->vars[i].space = v->space == PTX_SPACE_CONST ? II_SP_CONST : II_SP_GLOBAL;
	ix->vars[i].off = (uint64_t)(uintptr_t)block;
	ix->vars[i].ok = true;
	return 0;
}

/* generic(sym) and sym+N initialisers: the host address of another variable's storage. One
 * naming a function or a variable without storage leaves its variable unmodeled. */
static void fill_addresses(const struct ptx_module *pm, struct dec_index *ix)
{
	for (uint32_t i = 0; i < pm->nvars; i++) {
		const struct ptx_var *v = &pm->vars[i];

		for (uint32_t k = 0; ix->blocks[i] && k < v->ninit_addrs; k++) {
			const struct ptx_init_addr *a = &v->init_addrs[k];
			uint64_t addr;

			if (a->scope != PTX_SCOPE_GLOBAL || !ix->blocks[a->index]) {
				ix->vars[i].ok = false;
				break;
			}
			addr = ix->vars[a->index].off + (uint64_t)a->addend;
			memcpy((char *)ix->blocks[i] + a->offset, &addr, a->bytes); /* little-endian host */
		}
	}
}

static int index_module(const struct ptx_module *pm, struct dec_index *ix)
{
	ix->nvars = pm->nvars;
	ix->vars = calloc(pm->nvars ? pm->nvars : 1, sizeof(*ix->vars));
	ix->blocks = calloc(pm->nvars ? pm->nvars : 1, sizeof(*ix->blocks));
	if (!ix->vars || !ix->blocks)
		return -1;
	for (uint32_t i = 0; i < pm->nvars; i++) {
		const struct ptx_var *v = &pm->vars[i];
		struct dec_sym *s = &ix->vars[i];

		if (v->space == PTX_SPACE_SHARED) {
			s->space = II_SP_SHARED;
			s->ok = true;
			if (v->is_extern) {
				s->off = II_DYN_SHARED_BASE;
			} else {
				ix->shared_bytes = align_up(ix->shared_bytes, v->align);
				s->off = ix->shared_bytes;
				ix->shared_bytes += (uint32_t)v->size;
			}
		} else if (!v->is_extern && global_storage(ix, i, v)) {
			return -1;
		}
	}
	fill_addresses(pm, ix);
	return 0;
}

static struct dec_index *mod_index(struct sim_module *m, struct sim_imod *im, char *err, size_t errlen)
{
	struct imod_full *full = (struct imod_full *)im;

	if (full->indexed)
		return &full->ix;
	if (index_module(m->ptx.parsed, &full->ix)) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	full->indexed = true;
	return &full->ix;
}

/* ------------------------------------------------------------------ slots */

static int new_const(struct dec *d, uint64_t v, uint32_t *slot)
{
	struct sim_ifunc *f = d->f;

	for (uint32_t i = 0; i < f->nconsts; i++)
		if (f->consts[i].value == v) {
			*slot = f->consts[i].slot;
			return 0;
		}
	if (grow((void **)&f->consts, f->nconsts, &d->capconsts, sizeof(*f->consts)))
		return fail(d, "out of memory");
	f->consts[f->nconsts].value = v;
	f->consts[f->nconsts].slot = f->nslots;
	*slot = f->nslots++;
	f->nconsts++;
	return 0;
}

static int special_slot(struct dec *d, uint32_t sp, uint32_t *slot)
{
	static const uint32_t slots[PTX_SR_COUNT] = {
		[PTX_SR_TID_X] = II_S_TID_X, [PTX_SR_TID_Y] = II_S_TID_Y, [PTX_SR_TID_Z] = II_S_TID_Z,
		[PTX_SR_NTID_X] = II_S_NTID_X, [PTX_SR_NTID_Y] = II_S_NTID_Y, [PTX_SR_NTID_Z] = II_S_NTID_Z,
		[PTX_SR_CTAID_X] = II_S_CTAID_X, [PTX_SR_CTAID_Y] = II_S_CTAID_Y,
		[PTX_SR_CTAID_Z] = II_S_CTAID_Z, [PTX_SR_NCTAID_X] = II_S_NCTAID_X,
		[PTX_SR_NCTAID_Y] = II_S_NCTAID_Y, [PTX_SR_NCTAID_Z] = II_S_NCTAID_Z,
		[PTX_SR_LANEID] = II_S_LANEID, [PTX_SR_WARPID] = II_S_WARPID,
		[PTX_SR_NWARPID] = II_S_NWARPID, [PTX_SR_LANEMASK_EQ] = II_S_LANEMASK_EQ,
		[PTX_SR_LANEMASK_LT] = II_S_LANEMASK_LT, [PTX_SR_LANEMASK_LE] = II_S_LANEMASK_LE,
		[PTX_SR_LANEMASK_GT] = II_S_LANEMASK_GT, [PTX_SR_LANEMASK_GE] = II_S_LANEMASK_GE,
		[PTX_SR_DYNAMIC_SMEM_SIZE] = II_S_DYNSMEM,
	};

	/* II_S_ZERO (0) is no special register's slot: 0 means "not modeled" */
	if (sp >= PTX_SR_COUNT || slots[sp] == 0)
		return fail(d, "unknown or unsupported register %s", ptx_special_name((enum ptx_special)sp));
	*slot = slots[sp];
	return 0;
}

static uint32_t reg_slot(uint32_t reg)
{
	return II_S_NFIXED + reg;
}

/* A resolved symbol's place; NULL (with a message) when it is not modeled. */
static const struct dec_sym *sym_of(struct dec *d, const struct ptx_operand *o)
{
	static const struct dec_sym ret = { II_SP_PARAM, true, 0 };
	const struct dec_sym *s = NULL;
	const char *name = "?";

	switch (o->scope) {
	case PTX_SCOPE_PARAM:
		s = &d->params[o->index];
		name = d->pf->params[o->index].name;
		break;
	case PTX_SCOPE_RET:
		s = &ret;
		break;
	case PTX_SCOPE_VAR:
		s = &d->vars[o->index];
		name = d->pf->vars[o->index].name;
		break;
	case PTX_SCOPE_GLOBAL:
		s = &d->ix->vars[o->index];
		name = d->pm->vars[o->index].name;
		if (!s->ok) {
			fail(d, "module-scope .global/.const variable %s (not modeled)", name);
			return NULL;
		}
		break;
	default:
		fail(d, "unknown operand %s", d->pm->funcs[o->index].name);
		return NULL;
	}
	if (!s->ok) {
		fail(d, "symbol %s (not modeled)", name);
		return NULL;
	}
	return s;
}

static uint64_t width_mask(int type)
{
	unsigned int b = type > 0 ? II_T_BITS(type) : 64;

	return b >= 64 ? ~0ull : (1ull << b) - 1;
}

/* An immediate's bits for an operation of this type: f64 bits (0d or a decimal) become f32
 * bits for a 32-bit float operation; integers are masked to the width. */
static uint64_t imm_bits(const struct ptx_operand *o, int type)
{
	uint64_t v = (uint64_t)o->imm;

	if (o->is_float == 2 && type > 0 && (type & II_T_FLOAT) && II_T_BITS(type) == 32) {
		double x;
		float f;
		uint32_t u;

		memcpy(&x, &v, 8);
		f = (float)x;
		memcpy(&u, &f, 4);
		v = u;
	}
	return v & width_mask(type);
}

/* A source operand into a slot: register, special register, immediate (masked to the
 * instruction's width) or the address of a symbol. */
static int src_slot(struct dec *d, const struct ptx_operand *o, int type, uint32_t *slot)
{
	const struct dec_sym *sym;

	switch (o->kind) {
	case PTX_OP_REG:
		*slot = reg_slot(o->reg);
		return 0;
	case PTX_OP_SPECIAL:
		return special_slot(d, o->index, slot);
	case PTX_OP_IMM:
		return new_const(d, imm_bits(o, type), slot);
	case PTX_OP_SYM:
		sym = sym_of(d, o);
		/* an offset in its space; for .global/.const the host address */
		return sym ? new_const(d, sym->off, slot) : -1;
	default:
		return fail(d, "bad source operand");
	}
}

static int dst_slot(struct dec *d, const struct ptx_operand *o, uint32_t *slot, unsigned int *bits)
{
	if (o->kind == PTX_OP_SINK) {
		*slot = II_NONE;
		*bits = 64;
		return 0;
	}
	if (o->kind != PTX_OP_REG)
		return fail(d, "bad destination operand");
	*slot = reg_slot(o->reg);
	*bits = d->reg_bits[o->reg];
	return 0;
}

/* [reg], [reg+imm], [sym], [sym+imm], [imm]: slot, offset and, for a symbol, its space
 * (II_NSPACE when the address is a register or an absolute value). */
static int addr_operand(struct dec *d, const struct ptx_operand *o, uint32_t *slot, int64_t *off, unsigned int *space)
{
	const struct dec_sym *sym;

	*space = II_NSPACE;
	*off = o->imm;
	if (o->kind != PTX_OP_ADDR)
		return fail(d, "bad address operand");
	if (o->reg != PTX_NONE) {
		*slot = reg_slot(o->reg);
		return 0;
	}
	*slot = II_S_ZERO;
	if (o->index == PTX_NONE)
		return 0;
	sym = sym_of(d, o);
	if (!sym)
		return -1;
	*off += (int64_t)sym->off;
	*space = sym->space;
	return 0;
}

/* ------------------------------------------------------------------ declarations */

/* Register widths, parameter offsets (a .func's formals follow its return value in its frame;
 * a kernel's are the launch's layout), and the body's variables: .shared after the module's,
 * .local in the thread's area shared by all functions, call-block .param in the call area. */
static int place_decls(struct dec *d)
{
	const struct ptx_func *pf = d->pf;
	struct sim_ifunc *f = d->f;
	uint32_t off = 0;

	d->reg_bits = calloc(pf->nregs ? pf->nregs : 1, 1);
	d->params = calloc(pf->nparams ? pf->nparams : 1, sizeof(*d->params));
	d->vars = calloc(pf->nvars ? pf->nvars : 1, sizeof(*d->vars));
	f->formals = pf->is_entry ? NULL : calloc(pf->nparams ? pf->nparams : 1, sizeof(*f->formals));
	if (!d->reg_bits || !d->params || !d->vars || (!pf->is_entry && !f->formals))
		return fail(d, "out of memory");
	for (uint32_t i = 0; i < pf->nregs; i++) {
		int tc = sim__interp_type(ptx_type_name((enum ptx_type)pf->regs[i].type));

		if (tc <= 0)
			return fail(d, "register type .%s", ptx_type_name((enum ptx_type)pf->regs[i].type));
		d->reg_bits[i] = (uint8_t)II_T_BITS(tc);
	}
	f->nslots = II_S_NFIXED + pf->nregs;
	if (pf->nrets > 1)
		return fail(d, "more than one return parameter");
	if (pf->nrets) {
		f->ret.size = (uint32_t)pf->rets[0].size;
		off = f->ret.size;
	}
	for (uint32_t i = 0; i < pf->nparams; i++) {
		const struct ptx_var *v = &pf->params[i];
		uint32_t at = pf->is_entry ? (uint32_t)v->offset : align_up(off, v->align);

		if (!pf->is_entry) {
			off = at + (uint32_t)v->size;
			f->formals[i].off = at;
			f->formals[i].size = (uint32_t)v->size;
		}
		d->params[i] = (struct dec_sym){ II_SP_PARAM, true, at };
	}
	f->nformals = pf->is_entry ? 0 : pf->nparams;
	f->param_bytes = (off + 7) & ~7u;
	for (uint32_t i = 0; i < pf->nvars; i++) {
		const struct ptx_var *v = &pf->vars[i];
		struct dec_sym *s = &d->vars[i];

		s->ok = true;
		if (v->space == PTX_SPACE_SHARED) {
			s->space = II_SP_SHARED;
			if (v->is_extern) {
				s->off = II_DYN_SHARED_BASE;
				continue;
			}
			s->off = align_up(f->shared_static, v->align);
			f->shared_static = (uint32_t)s->off + (uint32_t)v->size;
		} else if (v->space == PTX_SPACE_LOCAL) {
			s->space = II_SP_LOCAL;
			s->off = align_up(d->im->local_next, v->align);
			d->im->local_next = (uint32_t)s->off + (uint32_t)v->size;
		} else {
			if (v->block == 0)
				return fail(d, ".param %s outside a call block", v->name);
			s->space = II_SP_CPARAM;
			s->off = v->offset;
			if (v->offset + v->size > f->cparam_bytes)
				f->cparam_bytes = (uint32_t)(v->offset + v->size);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ instructions */

static struct ii_insn *emit(struct dec *d)
{
	struct ii_insn *in;

	if (grow((void **)&d->f->code, d->f->ncode, &d->capcode, sizeof(*d->f->code))) {
		fail(d, "out of memory");
		return NULL;
	}
	in = &d->f->code[d->f->ncode++];
	memset(in, 0, sizeof(*in));
	for (int i = 0; i < 4; i++)
		in->d[i] = II_NONE;
	for (int i = 0; i < 5; i++)
		in->s[i] = II_NONE;
	in->guard = II_NONE;
	in->target = II_NONE;
	in->nvec = 1;
	in->line = (uint16_t)d->line;
	return in;
}

/* Spaces whose addresses are host addresses (base 0): one symbol serves all three. */
static bool is_flat(unsigned int space)
{
	return space == II_SP_GENERIC || space == II_SP_GLOBAL || space == II_SP_CONST;
}

static uint8_t space_of(const struct ptx_insn *pi)
{
	switch (pi->space) {
	case PTX_SPACE_GLOBAL: return II_SP_GLOBAL;
	case PTX_SPACE_SHARED: return II_SP_SHARED;
	case PTX_SPACE_LOCAL: return II_SP_LOCAL;
	case PTX_SPACE_PARAM: return II_SP_PARAM;
	case PTX_SPACE_CONST: return II_SP_CONST;
	default: return II_SP_GENERIC;
	}
}

/* The elements of a vector operand (or the operand itself) and their count. */
static int vec_elems(struct dec *d, const struct ptx_operand *o, const struct ptx_operand **el)
{
	if (o->kind != PTX_OP_VEC) {
		el[0] = o;
		return 1;
	}
	if (o->nelem < 1 || o->nelem > DEC_MAX_VEC)
		return fail(d, "vector operand");
	for (uint32_t i = 0; i < o->nelem; i++)
		el[i] = ptx_elem(d->pm, o, i);
	return (int)o->nelem;
}

static int decode_func(struct dec_index *ix, struct sim_module *m, uint32_t pidx, uint32_t *index, char *err,
		       size_t errlen);

/* A call block's parameter (a call's return or argument): its place in the call area. */
static int cparam_of(struct dec *d, const struct ptx_operand *o, uint32_t size, struct ii_pslot *out)
{
	const struct dec_sym *s;

	if (o->kind != PTX_OP_SYM || o->scope != PTX_SCOPE_VAR || !(s = sym_of(d, o)) || s->space != II_SP_CPARAM)
		return -1;
	out->off = (uint32_t)s->off;
	out->size = size;
	return 0;
}

/* call(.uni) (ret), name, (args): the callee is decoded now (recursion is refused). */
static int decode_call(struct dec *d, struct dec_index *ix, struct ii_insn *in, const struct ptx_insn *pi)
{
	static struct ii_pslot vp_formals[2] = { { 0, 8 }, { 8, 8 } };
	static const struct sim_ifunc vp = { .formals = vp_formals, .nformals = 2, .ret = { 0, 4 } };
	const struct ptx_operand *ret = NULL, *args = NULL, *callee;
	const struct sim_ifunc *cf;
	const struct ptx_func *target;
	struct ii_call *c;
	uint32_t idx, i = 0;

	if (pi->nops >= 1 && pi->ops[0].kind == PTX_OP_LIST)
		ret = &pi->ops[i++];
	if (i >= pi->nops)
		return fail(d, "call without a target");
	callee = &pi->ops[i++];
	if (i < pi->nops && pi->ops[i].kind == PTX_OP_LIST)
		args = &pi->ops[i++];
	if (i != pi->nops || callee->kind != PTX_OP_SYM || callee->scope != PTX_SCOPE_FUNC)
		return fail(d, "indirect call or call with a prototype");
	target = &d->pm->funcs[callee->index];
	if (!strcmp(target->name, "vprintf") && target->is_decl) {
		/* printf: (format, argument buffer) -> int, formatted by the executor */
		cf = &vp;
		idx = II_CALL_VPRINTF;
	} else {
		if (decode_func(ix, d->mod, callee->index, &idx, d->err, d->errlen))
			return -1;
		cf = d->im->funcs[idx];
	}
	if (cf->has_bar)
		return fail(d, "call of %s, which uses bar.sync", target->name);
	if (grow((void **)&d->im->calls, d->im->ncalls, &d->im->capcalls, sizeof(*d->im->calls)))
		return fail(d, "out of memory");
	c = &d->im->calls[d->im->ncalls];
	memset(c, 0, sizeof(*c));
	c->callee = idx;
	if (ret && (ret->nelem != 1 || cparam_of(d, ptx_elem(d->pm, ret, 0), cf->ret.size, &c->ret)))
		return fail(d, "call return of %s", target->name);
	if ((args ? args->nelem : 0) != cf->nformals || cf->nformals > DEC_MAX_ARGS)
		return fail(d, "call arguments of %s", target->name);
	for (uint32_t k = 0; args && k < args->nelem; k++)
		if (cparam_of(d, ptx_elem(d->pm, args, k), cf->formals[k].size, &c->args[k]))
			return fail(d, "call argument %u of %s", k, target->name);
	c->nargs = cf->nformals;
	in->kind = II_K_CALL;
	in->aux = d->im->ncalls++;
	return 0;
}

/* ld, ldu, st: [address], and one value or a vector of them. */
static int decode_ldst(struct dec *d, struct ii_insn *in, const struct ptx_insn *pi, const struct ii_opinfo *oi,
		       int type, const char **why)
{
	bool st = pi->opcode[0] == 's';
	const struct ptx_operand *el[DEC_MAX_VEC];
	unsigned int space, bits = 0;
	uint8_t ispace;
	int64_t off;
	uint32_t slot;
	int ne;

	if (pi->nops != 2)
		return fail(d, "operands");
	if (addr_operand(d, &pi->ops[st ? 0 : 1], &slot, &off, &space))
		return -1;
	ispace = space_of(pi);
	if (space != II_NSPACE) {
		if (space == II_SP_CPARAM && ispace == II_SP_PARAM)
			ispace = II_SP_CPARAM;
		else if (space == II_SP_PARAM && ispace == II_SP_GENERIC)
			return fail(d, "generic access to a parameter symbol");
		else if (space != ispace && !(is_flat(space) && is_flat(ispace)))
			return fail(d, "symbol of another state space");
	}
	in->space = ispace;
	in->s[0] = slot;
	in->off = off;
	ne = vec_elems(d, &pi->ops[st ? 1 : 0], el);
	if (ne < 0)
		return -1;
	in->wm = ~0ull;
	for (int i = 0; i < ne; i++) {
		if (st) {
			if (src_slot(d, el[i], type, &in->s[1 + i]))
				return -1;
		} else {
			if (dst_slot(d, el[i], &in->d[i], &bits))
				return -1;
			in->wm = bits >= 64 ? ~0ull : (1ull << bits) - 1;
		}
	}
	if (sim__interp_pick(oi, in, why))
		return 1;
	if (in->nvec != ne)
		return fail(d, "vector width");
	return 0;
}

static int decode_atom(struct dec *d, struct ii_insn *in, const struct ptx_insn *pi, const struct ii_opinfo *oi,
		       int type, const char **why)
{
	bool red = pi->opcode[0] == 'r';
	unsigned int a = red ? 0 : 1, space, bits;
	uint8_t ispace;
	int64_t off;
	uint32_t slot;

	if (pi->nops < a + 2 || pi->nops > a + 3)
		return fail(d, "operands");
	if (!red && dst_slot(d, &pi->ops[0], &in->d[0], &bits))
		return -1;
	if (addr_operand(d, &pi->ops[a], &slot, &off, &space))
		return -1;
	ispace = space_of(pi);
	if (ispace != II_SP_GLOBAL && ispace != II_SP_SHARED && ispace != II_SP_GENERIC)
		return fail(d, "atomic state space");
	if (space != II_NSPACE && space != ispace && !(is_flat(space) && is_flat(ispace)))
		return fail(d, "symbol of another state space");
	in->space = ispace;
	in->s[0] = slot;
	in->off = off;
	if (src_slot(d, &pi->ops[a + 1], type, &in->s[1]))
		return -1;
	in->s[2] = II_S_ZERO;
	if (pi->nops == a + 3 && src_slot(d, &pi->ops[a + 2], type, &in->s[2]))
		return -1;
	return sim__interp_pick(oi, in, why) ? 1 : 0;
}

/* mov.bN {a, b}, x (unpack) or mov.bN x, {a, b} (pack). */
static int decode_pack(struct dec *d, struct ii_insn *in, const struct ptx_insn *pi, int type)
{
	bool unpack = pi->ops[0].kind == PTX_OP_VEC;
	const struct ptx_operand *el[DEC_MAX_VEC];
	int ne = vec_elems(d, &pi->ops[unpack ? 0 : 1], el);
	unsigned int eb = 0, bits = 0;

	if (ne < 2)
		return fail(d, "vector operand");
	for (int i = 0; i < ne; i++) {
		if (unpack) {
			if (dst_slot(d, el[i], &in->d[i], &bits))
				return -1;
		} else {
			if (el[i]->kind != PTX_OP_REG)
				return fail(d, "pack of an operand that is not a register");
			in->s[i] = reg_slot(el[i]->reg);
			bits = d->reg_bits[el[i]->reg];
		}
		if (el[i]->kind != PTX_OP_SINK)
			eb = bits;
	}
	if (unpack) {
		if (src_slot(d, &pi->ops[1], type, &in->s[0]))
			return -1;
	} else if (dst_slot(d, &pi->ops[0], &in->d[0], &bits)) {
		return -1;
	}
	if (!eb || eb * (unsigned int)ne != (unsigned int)II_T_BITS(type))
		return fail(d, "pack/unpack widths");
	in->size = (uint8_t)eb;
	in->nvec = (uint8_t)ne;
	in->fn = sim__interp_pack_fn(unpack);
	return 0;
}

static bool is_op(const struct ptx_insn *pi, const char *op)
{
	return !strcmp(pi->opcode, op);
}

/* Everything else: d[|q], then up to four sources. */
static int decode_plain(struct dec *d, struct ii_insn *in, const struct ptx_insn *pi, const struct ii_opinfo *oi,
			int type, const char **why)
{
	bool nodst = is_op(pi, "membar") || is_op(pi, "fence") || is_op(pi, "prefetch") || is_op(pi, "bar") ||
		     is_op(pi, "nanosleep");
	unsigned int first = nodst ? 0 : 1, bits;
	int nops = pi->nops;

	if (!nodst) {
		const struct ptx_operand *o = &pi->ops[0];

		if (nops < 1)
			return fail(d, "operands");
		if (o->kind == PTX_OP_PAIR) {
			struct ptx_operand q = { .kind = PTX_OP_REG, .reg = o->index };
			struct ptx_operand p0 = { .kind = PTX_OP_REG, .reg = o->reg };

			if (dst_slot(d, &q, &in->d[1], &bits) || dst_slot(d, &p0, &in->d[0], &bits))
				return -1;
		} else if (dst_slot(d, o, &in->d[0], &bits)) {
			return -1;
		}
		if (in->d[0] == II_NONE)
			return fail(d, "sink destination");
	}
	if (nops - (int)first > 4)
		return fail(d, "operands");
	for (int i = (int)first; i < nops && !nodst; i++) {
		const struct ptx_operand *o = &pi->ops[i];
		int st = type;

		if (o->neg) {
			if (!(is_op(pi, "vote") && i == (int)first))
				return fail(d, "negated operand");
			in->sgn = 1;
		}
		/* selp's c and setp's bool operand are predicates; vote's source too */
		if ((is_op(pi, "selp") || is_op(pi, "setp")) && i == 3)
			st = 1 | II_T_PRED;
		if (is_op(pi, "lop3") && i == 4) {
			if (o->kind != PTX_OP_IMM || o->is_float)
				return fail(d, "lop3 table");
			in->off = o->imm;
			continue;
		}
		if (src_slot(d, o, st, &in->s[i - (int)first]))
			return -1;
	}
	if (is_op(pi, "lop3") && nops != 5)
		return fail(d, "lop3 operands");
	if (sim__interp_pick(oi, in, why))
		return 1;
	if (is_op(pi, "shfl") && nops != 5)
		return fail(d, "shfl operands");
	if (is_op(pi, "setp") && in->aux2 && nops != 4)
		return fail(d, "setp bool operand");
	for (int i = 0; !nodst && i < 4 && i < nops - (int)first; i++) /* bar.warp.sync's mask: unread */
		if (in->s[i] == II_NONE)
			return fail(d, "missing operand");
	if (!nodst && nops - (int)first < 1 && !is_op(pi, "activemask"))
		return fail(d, "operands");
	return 0;
}

/* The name of an instruction for messages: opcode.mod.mod */
static const char *insn_name(const struct ptx_insn *pi, char *buf, size_t n)
{
	size_t len = (size_t)snprintf(buf, n, "%s", pi->opcode);

	for (unsigned int i = 0; i < pi->nmods && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, ".%s", pi->mods[i]);
	return buf;
}

static int decode_insn(struct dec *d, struct dec_index *ix, const struct ptx_insn *pi)
{
	struct ii_opinfo oi = { .op = pi->opcode, .mods = pi->mods, .nmods = pi->nmods };
	const char *why = NULL;
	struct ii_insn *in;
	char name[96];
	int type = 0, rc;

	d->line = pi->line;
	in = emit(d);
	if (!in)
		return -1;
	if (pi->guard != PTX_NONE) {
		in->guard = reg_slot(pi->guard);
		in->gneg = pi->guard_neg;
	}
	for (unsigned int i = pi->nmods; i-- > 0;)
		if ((type = sim__interp_type(pi->mods[i])) != 0)
			break;
	if (is_op(pi, "bra")) {
		if (pi->nops != 1 || pi->ops[0].kind != PTX_OP_LABEL)
			return fail(d, "bra operands");
		in->kind = II_K_BRA;
		in->target = pi->ops[0].index;
		return 0;
	}
	if (is_op(pi, "ret") || is_op(pi, "exit")) {
		if (!d->f->is_kernel && pi->opcode[0] == 'e')
			return fail(d, "exit in a .func");
		in->kind = d->f->is_kernel ? II_K_EXIT : II_K_RET;
		return 0;
	}
	if ((is_op(pi, "bar") || is_op(pi, "barrier")) && (pi->nmods == 0 || !strcmp(pi->mods[0], "sync"))) {
		if (pi->nops != 1 || pi->ops[0].kind != PTX_OP_IMM || pi->ops[0].imm != 0)
			return fail(d, "barrier other than bar.sync 0");
		in->kind = II_K_BAR;
		d->f->has_bar = true;
		return 0;
	}
	if (is_op(pi, "call"))
		return decode_call(d, ix, in, pi);
	if (is_op(pi, "ld") || is_op(pi, "ldu") || is_op(pi, "st"))
		rc = decode_ldst(d, in, pi, &oi, type, &why);
	else if (is_op(pi, "atom") || is_op(pi, "red"))
		rc = decode_atom(d, in, pi, &oi, type, &why);
	else if (is_op(pi, "mov") && pi->nops == 2 && (pi->ops[0].kind == PTX_OP_VEC || pi->ops[1].kind == PTX_OP_VEC))
		rc = decode_pack(d, in, pi, type);
	else if (is_op(pi, "cvta")) {
		unsigned int bits;
		uint8_t ispace = space_of(pi);

		if (ispace == II_SP_GENERIC)
			return fail(d, "cvta state space");
		if (pi->nops != 2 || dst_slot(d, &pi->ops[0], &in->d[0], &bits) ||
		    src_slot(d, &pi->ops[1], type, &in->s[0]))
			return fail(d, "operands");
		in->space = is_flat(ispace) ? II_SP_GENERIC : ispace;
		rc = sim__interp_pick(&oi, in, &why) ? 1 : 0;
	} else {
		rc = decode_plain(d, in, pi, &oi, type, &why);
	}
	if (rc > 0)
		return fail(d, "unsupported %s (%s)", insn_name(pi, name, sizeof(name)), why ? why : "?");
	return rc;
}

/* ------------------------------------------------------------------ bodies */

static int decode_body(struct dec *d, struct dec_index *ix)
{
	struct ii_insn *in;

	for (uint32_t i = 0; i < d->pf->ninsns; i++)
		if (decode_insn(d, ix, &d->pf->insns[i]))
			return -1;
	/* falling off the end returns; a label after the last instruction targets this one */
	in = emit(d);
	if (!in)
		return -1;
	in->kind = d->f->is_kernel ? II_K_EXIT : II_K_RET;
	return 0;
}

static void ifunc_free(struct sim_ifunc *f)
{
	if (!f)
		return;
	free(f->name);
	free(f->code);
	free(f->consts);
	free(f->formals);
	free(f);
}

/* Decode function pidx of the parsed module (or find it decoded); its index in im->funcs. */
static int decode_func(struct dec_index *ix, struct sim_module *m, uint32_t pidx, uint32_t *index, char *err,
		       size_t errlen)
{
	const struct ptx_func *pf = &m->ptx.parsed->funcs[pidx];
	struct sim_imod *im = m->interp;
	struct dec d = { .mod = m, .pm = m->ptx.parsed, .pf = pf, .ix = ix, .im = im, .err = err, .errlen = errlen,
			 .line = pf->line };
	struct sim_ifunc *f;
	uint32_t idx;
	int rc = -1;

	for (uint32_t i = 0; i < im->nfuncs; i++)
		if (!strcmp(im->funcs[i]->name, pf->name)) {
			if (!im->funcs[i]->code) /* still being decoded: a recursive call */
				return fail(&d, "recursive call of %s", pf->name);
			*index = i;
			return 0;
		}
	if (pf->is_decl)
		return fail(&d, "function %s has no body in this module", pf->name);
	f = calloc(1, sizeof(*f));
	if (!f || grow((void **)&im->funcs, im->nfuncs, &im->capfuncs, sizeof(*im->funcs))) {
		free(f);
		return fail(&d, "out of memory");
	}
	f->name = strdup(pf->name);
	f->is_kernel = pf->is_entry;
	f->shared_static = ix->shared_bytes;
	f->local_off = im->local_next;
	idx = im->nfuncs;
	im->funcs[im->nfuncs++] = f;
	d.f = f;
	if (!f->name) {
		fail(&d, "out of memory");
		goto out;
	}
	if (place_decls(&d) || decode_body(&d, ix))
		goto out;
	if (f->shared_static > II_DYN_SHARED_BASE) {
		fail(&d, "static shared memory of %u bytes", f->shared_static);
		goto out;
	}
	f->local_bytes = (im->local_next + 15) & ~15u;
	*index = idx;
	rc = 0;
out:
	if (rc && d.err[0]) {
		char msg[256];

		snprintf(msg, sizeof(msg), "%s", d.err);
		snprintf(err, errlen, "%s line %u: %s", pf->name, d.line, msg);
	}
	if (rc) {
		/* keep the slot (a name without code) only while decoding; drop it on failure */
		if (im->nfuncs == idx + 1) {
			im->nfuncs--;
			ifunc_free(f);
		} else {
			free(f->code);
			f->code = NULL;
			f->ncode = 0;
		}
	}
	free(d.reg_bits);
	free(d.params);
	free(d.vars);
	return rc;
}

void sim_interp_mod_free(struct sim_imod *im)
{
	struct imod_full *full = (struct imod_full *)im;

	if (!im)
		return;
	for (uint32_t i = 0; i < im->nfuncs; i++)
		ifunc_free(im->funcs[i]);
	free(im->funcs);
	free(im->calls);
	for (uint32_t i = 0; full->ix.blocks && i < full->ix.nvars; i++)
		free(full->ix.blocks[i]);
	free(full->ix.blocks);
	free(full->ix.vars);
	free(full);
}

CUresult sim_interp_prepare(struct sim_func *fn)
{
	struct sim_module *m = fn->mod;
	struct dec_index *ix;
	char err[320] = "";
	uint32_t idx, pidx;

	if (fn->interp_tried)
		return (CUresult)fn->interp_rc;
	fn->interp_tried = true;
	fn->interp_rc = CUDA_ERROR_NOT_SUPPORTED;
	if (!m->ptx.parsed) {
		sim_log("kernel %s: no PTX kept; the interpreter cannot run it", fn->entry->name);
		goto out;
	}
	if (!m->interp) {
		m->interp = calloc(1, sizeof(struct imod_full));
		if (!m->interp) {
			fn->interp_rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
	}
	pidx = ptx_func_index(m->ptx.parsed, fn->entry->name);
	ix = mod_index(m, m->interp, err, sizeof(err));
	if (!ix || pidx == PTX_NONE || decode_func(ix, m, pidx, &idx, err, sizeof(err))) {
		sim_log("kernel %s: the PTX interpreter cannot run it: %s", fn->entry->name, err);
		goto out;
	}
	fn->interp = m->interp->funcs[idx];
	fn->interp_rc = CUDA_SUCCESS;
out:
	return (CUresult)fn->interp_rc;
}
