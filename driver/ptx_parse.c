/* ptx_parse.c - the PTX front end's parser: tokens (ptx_lex.c) into the module of ptx.h, every
 * name resolved. driver layer, libc only.
 *
 * One pass over the tokens. Arrays grow in malloc'ed vectors while a function or the module is
 * read and are copied into the module's arena when it is complete, so everything the caller sees
 * is freed with the arena. Names are resolved as they are read (PTX declares before use), except
 * branch targets, which may come later in the body: those are fixed up when the body ends.
 *
 * Scoping: a register or variable declared in a { } block is visible until the block closes;
 * lookups go from the newest declaration to the oldest, skipping closed blocks, so an inline
 * asm block's `.reg .pred p` hides an outer `p` and is gone after its brace. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/ptx.h"
#include "driver/ptx_int.h"

#define MAX_BLOCK_DEPTH 64            /* nested { } in a body */
#define MAX_INIT_DEPTH 16             /* nested { } in an initialiser */
#define MAX_REGS (1u << 20)           /* registers of one function: a garbage guard */
#define MAX_INIT_BYTES (64u << 20)    /* initialised bytes of one variable: a garbage guard */
#define MAX_VAR_BYTES (1ull << 40)    /* declared bytes of one variable: a garbage guard */

/* An opcode or modifier, kept once per module with what it means as a modifier. */
struct word {
	uint8_t space;                /* enum ptx_space it names, NONE if none */
	uint8_t type;                 /* enum ptx_type it names, NONE if none */
	uint8_t vec;                  /* 2/4/8 for v2/v4/v8, else 0 */
	bool refused;                 /* shared::cluster */
	char s[];                     /* the text, NUL-terminated */
};

/* A growing array (malloc'ed until copied into the arena). */
struct vec {
	void *v;                      /* elements */
	uint32_t n;                   /* used */
	uint32_t cap;                 /* allocated */
};

/* A register family `%r<N>` or a single register, as declared. */
struct fam {
	const char *name;             /* the prefix ("%r") or the single register's name (source text) */
	uint32_t len;                 /* bytes of name */
	uint32_t base;                /* first register id */
	uint32_t count;               /* registers */
	uint32_t block;               /* block it was declared in */
	bool single;                  /* declared without <N> */
};

struct label {
	const char *name;             /* source text */
	uint32_t len;
	uint32_t insn;                /* instruction it precedes */
	bool proto;                   /* a .callprototype, not a branch target */
	uint32_t proto_index;         /* its order among the function's prototypes */
};

/* An operand naming a label not seen yet: fixed when the body ends. */
struct fix {
	const struct ptx__tok *name;  /* the label's token */
	uint32_t insn;                /* instruction holding the operand */
	uint32_t op;                  /* its operand index */
};

/* The function being read. */
struct fstate {
	struct vec params, rets;      /* struct ptx_var */
	struct vec regs;              /* struct ptx_reg */
	struct vec vars;              /* struct ptx_var (body) */
	struct vec insns;             /* struct ptx_insn */
	struct vec fams;              /* struct fam */
	struct vec labels;            /* struct label */
	struct vec fixes;             /* struct fix */
	struct vec open;              /* bool per block: still open */
	uint32_t stack[MAX_BLOCK_DEPTH]; /* open blocks, innermost last */
	uint32_t depth;               /* of stack */
	uint32_t nprotos;             /* .callprototype labels */
	uint64_t cparam;              /* next free byte of the current call block */
};

/* Linkage of a module-scope name, which decides what a second definition of it means. */
enum linkage {
	LINK_INTERNAL,                /* none said: the file's own (a later file's one shadows it) */
	LINK_VISIBLE,                 /* .visible: one definition in the program */
	LINK_EXTERN,                  /* .extern: declared here, defined elsewhere */
	LINK_WEAK,                    /* .weak / .common: the first definition wins */
};

struct parser {
	const struct ptx__tok *t;     /* current token */
	const char *src;              /* the caller's text (tokens point into it) */
	struct ptx_module *m;         /* being built */
	struct ptx__arena *a;         /* m's arena */
	struct vec funcs;             /* struct ptx_func */
	struct vec vars;              /* struct ptx_var (module scope) */
	struct vec var_link;          /* uint8_t enum linkage, per module variable */
	struct vec operands;          /* struct ptx_operand (the pool) */
	struct word **intern;         /* open-addressed table of opcode and modifier strings */
	uint32_t intern_cap, intern_n;
	bool have_version;            /* .version seen */
	struct fstate f;              /* the function being read */
	char *err;                    /* message buffer */
	size_t errlen;
	bool failed;                  /* a message is written */
};

static int fail(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parser *p, const char *fmt, ...)
{
	char msg[240];
	va_list ap;

	if (p->failed)
		return -1;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->err && p->errlen)
		snprintf(p->err, p->errlen, "line %u: %s", p->t->line, msg);
	p->failed = true;
	return -1;
}

static int oom(struct parser *p)
{
	return fail(p, "out of memory");
}

/* A new zeroed element at the end of v; NULL when out of memory (with a message). */
static void *vec_push(struct parser *p, struct vec *v, size_t elem)
{
	void *e;

	if (v->n == v->cap) {
		uint32_t cap = v->cap ? v->cap * 2 : 16;
		void *nv = cap > v->cap ? realloc(v->v, (size_t)cap * elem) : NULL;

		if (!nv) {
			oom(p);
			return NULL;
		}
		v->v = nv;
		v->cap = cap;
	}
	e = (char *)v->v + (size_t)v->n++ * elem;
	memset(e, 0, elem);
	return e;
}

static void vec_free(struct vec *v)
{
	free(v->v);
	memset(v, 0, sizeof(*v));
}

/* The vector's elements copied into the arena (NULL when empty); -1 out of memory. */
static int vec_freeze(struct parser *p, struct vec *v, size_t elem, void *out)
{
	void *d = NULL;

	if (v->n) {
		d = ptx__dup(p->a, v->v, (size_t)v->n * elem);
		if (!d)
			return oom(p);
	}
	memcpy(out, &d, sizeof(d));
	return 0;
}

/* ------------------------------------------------------------------ tokens */

static const struct ptx__tok *next(struct parser *p)
{
	const struct ptx__tok *t = p->t;

	if (t->kind != PTX__T_EOF)
		p->t++;
	return t;
}

static bool at_punct(const struct parser *p, char c)
{
	return ptx__is_punct(p->t, c);
}

static bool at_dir(const struct parser *p, const char *d)
{
	return ptx__tok_is(p->t, PTX__T_DIR, d);
}

static bool tok_eq(const struct ptx__tok *t, const char *s, uint32_t len)
{
	return t->len == len && memcmp(t->s, s, len) == 0;
}

/* The token is the NUL-terminated name (no strlen: names run to thousands of bytes). */
static bool tok_is_name(const struct ptx__tok *t, const char *name)
{
	return strncmp(name, t->s, t->len) == 0 && name[t->len] == 0;
}

/* A short form of the current token for messages. */
static const char *tok_text(const struct parser *p, char *buf, size_t n)
{
	const struct ptx__tok *t = p->t;

	if (t->kind == PTX__T_EOF)
		return "end of text";
	snprintf(buf, n, "%s%.*s", t->kind == PTX__T_DIR ? "." : "", (int)(t->len > 60 ? 60 : t->len), t->s);
	return buf;
}

static int expect_punct(struct parser *p, char c, const char *what)
{
	char b[80];

	if (!at_punct(p, c))
		return fail(p, "expected '%c' %s, got %s", c, what, tok_text(p, b, sizeof(b)));
	next(p);
	return 0;
}

static int expect_uint(struct parser *p, uint64_t max, uint64_t *v, const char *what)
{
	if (p->t->kind != PTX__T_INT || p->t->u > max)
		return fail(p, "bad %s", what);
	*v = next(p)->u;
	return 0;
}

/* ------------------------------------------------------------------ types and declarations */

/* The type a directive token names, PTX_T_NONE when it is not one. */
static enum ptx_type tok_type(const struct ptx__tok *t)
{
	char b[16];

	if (t->kind != PTX__T_DIR || t->len >= sizeof(b))
		return PTX_T_NONE;
	memcpy(b, t->s, t->len);
	b[t->len] = 0;
	return ptx_type_from_name(b);
}

static enum ptx_space space_named(const char *s, uint32_t len, bool *refused)
{
	static const struct {
		const char *name;     /* modifier */
		enum ptx_space space; /* what it names */
	} spaces[] = {
		{ "global", PTX_SPACE_GLOBAL }, { "shared", PTX_SPACE_SHARED },
		{ "shared::cta", PTX_SPACE_SHARED }, { "local", PTX_SPACE_LOCAL },
		{ "param", PTX_SPACE_PARAM }, { "param::entry", PTX_SPACE_PARAM },
		{ "param::func", PTX_SPACE_PARAM }, { "const", PTX_SPACE_CONST },
	};

	*refused = len == 15 && memcmp(s, "shared::cluster", 15) == 0;
	for (size_t i = 0; i < sizeof(spaces) / sizeof(spaces[0]); i++)
		if (strlen(spaces[i].name) == len && memcmp(spaces[i].name, s, len) == 0)
			return spaces[i].space;
	return PTX_SPACE_NONE;
}

static uint32_t fnv(const char *s, uint32_t len)
{
	uint32_t h = 2166136261u;

	for (uint32_t k = 0; k < len; k++)
		h = (h ^ (unsigned char)s[k]) * 16777619u;
	return h;
}

/* A new word: its text in the arena, classified once (an instruction has a dozen modifiers at
 * most, a module thousands of instructions, and a few dozen distinct words). */
static struct word *new_word(struct parser *p, const char *s, uint32_t len)
{
	struct word *w = ptx__alloc(p->a, sizeof(*w) + len + 1);

	if (!w)
		return NULL;
	memcpy(w->s, s, len);
	w->s[len] = 0;
	w->space = (uint8_t)space_named(s, len, &w->refused);
	w->type = (uint8_t)ptx_type_from_name(w->s);
	if (len == 2 && s[0] == 'v' && (s[1] == '2' || s[1] == '4' || s[1] == '8'))
		w->vec = (uint8_t)(s[1] - '0');
	return w;
}

/* An opcode or modifier, interned (consumers strcmp the text; one copy of each). */
static const struct word *intern(struct parser *p, const char *s, uint32_t len)
{
	uint32_t i;

	if (p->intern_n * 2 >= p->intern_cap) {
		uint32_t cap = p->intern_cap ? p->intern_cap * 2 : 256;
		struct word **nt = calloc(cap, sizeof(*nt));

		if (!nt)
			return NULL;
		for (uint32_t k = 0; k < p->intern_cap; k++) {
			struct word *e = p->intern[k];

			if (!e)
				continue;
			for (i = fnv(e->s, (uint32_t)strlen(e->s)) & (cap - 1); nt[i]; i = (i + 1) & (cap - 1))
				;
			nt[i] = e;
		}
		free(p->intern);
		p->intern = nt;
		p->intern_cap = cap;
	}
	for (i = fnv(s, len) & (p->intern_cap - 1); p->intern[i]; i = (i + 1) & (p->intern_cap - 1))
		if (strncmp(p->intern[i]->s, s, len) == 0 && p->intern[i]->s[len] == 0)
			return p->intern[i];
	p->intern[i] = new_word(p, s, len);
	if (p->intern[i])
		p->intern_n++;
	return p->intern[i];
}

/* What a variable declaration says between its space and its name. */
struct decl {
	uint32_t align;               /* .align N, 0 when unsaid */
	uint32_t vec;                 /* .v2/.v4: 2/4, else 1 */
	enum ptx_type type;           /* element type */
	bool is_ptr;                  /* .ptr (kernel parameters) */
	enum ptx_space ptr_space;     /* .ptr's space */
	const struct ptx__tok *name;  /* its name */
	uint64_t count;               /* elements in all dimensions */
	bool unsized;                 /* name[]: size from the initialiser (or extern) */
};

static bool is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* [.align N] [.ptr [.space] [.align N]] [.vN] .type name[dims]: the part of a declaration after
 * its space. An .align after .ptr is the pointee's and does not change the layout. */
static int parse_decl(struct parser *p, struct decl *d, bool param)
{
	char b[80];
	bool refused;

	memset(d, 0, sizeof(*d));
	d->vec = 1;
	d->count = 1;
	while (p->t->kind == PTX__T_DIR) {
		const struct ptx__tok *t = next(p);
		enum ptx_type ty = tok_type(t);
		uint64_t v = 0;

		if (tok_eq(t, "align", 5)) {
			if (expect_uint(p, 1u << 16, &v, ".align value") || !is_pow2(v))
				return fail(p, "bad .align value");
			if (!d->is_ptr)
				d->align = (uint32_t)v;
		} else if (tok_eq(t, "ptr", 3) && param) {
			d->is_ptr = true;
		} else if (d->is_ptr && space_named(t->s, t->len, &refused) != PTX_SPACE_NONE) {
			d->ptr_space = space_named(t->s, t->len, &refused);
		} else if (tok_eq(t, "v2", 2) || tok_eq(t, "v4", 2) || tok_eq(t, "v8", 2)) {
			d->vec = (uint32_t)(t->s[1] - '0');
		} else if (ty != PTX_T_NONE && ty != PTX_T_PRED) {
			if (d->type)
				return fail(p, "second type .%.*s in one declaration", (int)t->len, t->s);
			d->type = ty;
		} else {
			p->t = t;
			return fail(p, "unknown attribute %s in a declaration", tok_text(p, b, sizeof(b)));
		}
	}
	if (!d->type)
		return fail(p, "declaration without a type");
	if (p->t->kind != PTX__T_IDENT)
		return fail(p, "declaration without a name, got %s", tok_text(p, b, sizeof(b)));
	d->name = next(p);
	while (at_punct(p, '[')) {
		next(p);
		if (at_punct(p, ']')) {
			if (d->unsized)
				return fail(p, "two unsized dimensions");
			d->unsized = true;
		} else {
			uint64_t v = 0;

			if (expect_uint(p, MAX_VAR_BYTES, &v, "array size") || v == 0)
				return fail(p, "bad array size of %.*s", (int)d->name->len, d->name->s);
			d->count *= v;
			if (d->count > MAX_VAR_BYTES)
				return fail(p, "%.*s is too large", (int)d->name->len, d->name->s);
		}
		if (expect_punct(p, ']', "after an array size"))
			return -1;
	}
	return 0;
}

static uint64_t decl_elem_bytes(const struct decl *d)
{
	return (uint64_t)ptx_type_bytes(d->type) * d->vec;
}

/* A ptx_var from a declaration; offset and block are the caller's. */
static int make_var(struct parser *p, struct ptx_var *v, const struct decl *d, enum ptx_space space)
{
	uint64_t elem = decl_elem_bytes(d);

	v->name = ptx__strndup(p->a, d->name->s, d->name->len);
	if (!v->name)
		return oom(p);
	v->space = (uint8_t)space;
	v->type = (uint8_t)d->type;
	v->is_ptr = d->is_ptr;
	v->ptr_space = (uint8_t)d->ptr_space;
	v->align = d->align ? d->align : (uint32_t)elem;
	v->size = d->unsized ? 0 : elem * d->count;
	if (v->size > MAX_VAR_BYTES)
		return fail(p, "%s is too large", v->name);
	return 0;
}

/* `( .param ... name, ... )`: a parameter list into out, laid out from offset 0. */
static int parse_params(struct parser *p, struct vec *out, uint64_t *bytes)
{
	uint64_t off = 0;

	if (expect_punct(p, '(', "before parameters"))
		return -1;
	while (!at_punct(p, ')')) {
		struct ptx_var *v;
		struct decl d;

		if (at_dir(p, "reg"))
			return fail(p, "register parameters (.reg in a parameter list) are not supported");
		if (!at_dir(p, "param"))
			return fail(p, "expected .param in a parameter list");
		next(p);
		if (parse_decl(p, &d, true))
			return -1;
		if (d.unsized)
			return fail(p, "parameter %.*s without a size", (int)d.name->len, d.name->s);
		v = vec_push(p, out, sizeof(*v));
		if (!v || make_var(p, v, &d, PTX_SPACE_PARAM))
			return -1;
		off = (off + v->align - 1) & ~((uint64_t)v->align - 1);
		v->offset = off;
		off += v->size;
		if (off > MAX_VAR_BYTES)
			return fail(p, "parameters are too large");
		if (at_punct(p, ',')) {
			next(p);
			if (at_punct(p, ')'))
				return fail(p, "trailing comma in a parameter list");
		} else if (!at_punct(p, ')')) {
			return fail(p, "unterminated parameter list");
		}
	}
	next(p);
	*bytes = off;
	return 0;
}

/* ------------------------------------------------------------------ names */

static bool block_is_open(const struct parser *p, uint32_t block)
{
	return ((const bool *)p->f.open.v)[block];
}

/* A register by name in the open blocks; PTX_NONE when there is none. */
static uint32_t find_reg(const struct parser *p, const struct ptx__tok *t)
{
	const struct fam *fams = p->f.fams.v;

	for (uint32_t i = p->f.fams.n; i-- > 0;) {
		const struct fam *fm = &fams[i];
		uint64_t k = 0;

		if (!block_is_open(p, fm->block))
			continue;
		if (fm->single) {
			if (tok_eq(t, fm->name, fm->len))
				return fm->base;
			continue;
		}
		if (t->len <= fm->len || memcmp(t->s, fm->name, fm->len) != 0)
			continue;
		for (uint32_t c = fm->len; c < t->len && k < fm->count; c++) {
			if (t->s[c] < '0' || t->s[c] > '9') {
				k = fm->count;
				break;
			}
			k = k * 10 + (uint64_t)(t->s[c] - '0');
		}
		/* %r007 is not %r7: PTX names are text */
		if (k < fm->count && !(t->s[fm->len] == '0' && t->len > fm->len + 1))
			return fm->base + (uint32_t)k;
	}
	return PTX_NONE;
}

/* A symbol: body variable (open blocks), parameter, return parameter, module variable or
 * function, in that order. */
static bool find_sym(const struct parser *p, const struct ptx__tok *t, bool in_func, uint8_t *scope, uint32_t *index)
{
	const struct ptx_var *vars = p->f.vars.v, *params = p->f.params.v, *rets = p->f.rets.v, *mv = p->vars.v;
	const struct ptx_func *fn = p->funcs.v;

	for (uint32_t i = in_func ? p->f.vars.n : 0; i-- > 0;)
		if (block_is_open(p, vars[i].block) && tok_is_name(t, vars[i].name)) {
			*scope = PTX_SCOPE_VAR;
			*index = i;
			return true;
		}
	for (uint32_t i = 0; in_func && i < p->f.params.n; i++)
		if (tok_is_name(t, params[i].name)) {
			*scope = PTX_SCOPE_PARAM;
			*index = i;
			return true;
		}
	for (uint32_t i = 0; in_func && i < p->f.rets.n; i++)
		if (tok_is_name(t, rets[i].name)) {
			*scope = PTX_SCOPE_RET;
			*index = i;
			return true;
		}
	/* newest first: in PTX linked by concatenation, a file's own internal names shadow an
	 * earlier file's */
	for (uint32_t i = p->vars.n; i-- > 0;)
		if (tok_is_name(t, mv[i].name)) {
			*scope = PTX_SCOPE_GLOBAL;
			*index = i;
			return true;
		}
	for (uint32_t i = p->funcs.n; i-- > 0;)
		if (tok_is_name(t, fn[i].name)) {
			*scope = PTX_SCOPE_FUNC;
			*index = i;
			return true;
		}
	return false;
}

static int find_special(const struct ptx__tok *t, const struct ptx__tok *after, enum ptx_special *sp,
			int64_t *envreg, bool *takes_next)
{
	char name[40];
	size_t n;

	*takes_next = false;
	if (t->len + 3 >= sizeof(name))
		return -1;
	memcpy(name, t->s, t->len);
	n = t->len;
	/* %tid.x: the lexer reads ".x" as a modifier glued to %tid */
	if (after->kind == PTX__T_DIR && after->adj && after->len == 1 &&
	    (after->s[0] == 'x' || after->s[0] == 'y' || after->s[0] == 'z')) {
		name[n++] = '.';
		name[n++] = after->s[0];
		*takes_next = true;
	}
	name[n] = 0;
	for (unsigned s = 0; s < PTX_SR_COUNT; s++)
		if (s != PTX_SR_ENVREG && strcmp(ptx_special_name((enum ptx_special)s), name) == 0) {
			*sp = (enum ptx_special)s;
			return 0;
		}
	*takes_next = false;
	if (t->len > 7 && t->len <= 9 && memcmp(t->s, "%envreg", 7) == 0) {
		int64_t k = 0;

		for (uint32_t c = 7; c < t->len; c++) {
			if (t->s[c] < '0' || t->s[c] > '9')
				return -1;
			k = k * 10 + (t->s[c] - '0');
		}
		if (k > 31)
			return -1;
		*sp = PTX_SR_ENVREG;
		*envreg = k;
		return 0;
	}
	return -1;
}

/* ------------------------------------------------------------------ operands */

static int parse_operand(struct parser *p, struct ptx_operand *o, uint32_t insn, uint32_t opi, bool nested);

/* { a, b } or ( a, b ): elements appended to the pool (never nested). */
static int parse_group(struct parser *p, struct ptx_operand *o, char close, uint32_t insn)
{
	struct ptx_operand el;

	o->kind = close == '}' ? PTX_OP_VEC : PTX_OP_LIST;
	o->first = p->operands.n;
	o->reg = PTX_NONE;
	o->index = PTX_NONE;
	next(p);
	while (!at_punct(p, close)) {
		struct ptx_operand *slot;

		if (o->nelem && expect_punct(p, ',', "between elements"))
			return -1;
		if (parse_operand(p, &el, insn, PTX_NONE, true))
			return -1;
		slot = vec_push(p, &p->operands, sizeof(*slot));
		if (!slot)
			return -1;
		*slot = el;
		o->nelem++;
	}
	next(p);
	return 0;
}

/* [reg], [reg+N], [reg+-N], [reg-N], [sym], [sym+N], [N] */
static int parse_address(struct parser *p, struct ptx_operand *o)
{
	char b[80];

	next(p);
	o->kind = PTX_OP_ADDR;
	o->reg = PTX_NONE;
	o->index = PTX_NONE;
	if (p->t->kind == PTX__T_IDENT) {
		const struct ptx__tok *t = next(p);

		o->reg = find_reg(p, t);
		if (o->reg == PTX_NONE && !find_sym(p, t, true, &o->scope, &o->index))
			return fail(p, "unknown name %.*s in an address", (int)t->len, t->s);
		if (o->reg == PTX_NONE && o->scope == PTX_SCOPE_FUNC)
			return fail(p, "function %.*s used as an address", (int)t->len, t->s);
	} else if (p->t->kind == PTX__T_INT) {
		o->imm = (int64_t)next(p)->u;
		return expect_punct(p, ']', "after an address");
	} else {
		return fail(p, "bad address at %s", tok_text(p, b, sizeof(b)));
	}
	if (at_punct(p, '+') || at_punct(p, '-')) {
		bool neg = next(p)->punct == '-';

		if (at_punct(p, '-')) {
			neg = !neg;
			next(p);
		}
		if (p->t->kind != PTX__T_INT)
			return fail(p, "bad address offset at %s", tok_text(p, b, sizeof(b)));
		o->imm = (int64_t)next(p)->u;
		if (neg)
			o->imm = -o->imm;
	}
	return expect_punct(p, ']', "after an address");
}

static int parse_number(struct parser *p, struct ptx_operand *o)
{
	bool neg = false;

	memset(o, 0, sizeof(*o));
	if (at_punct(p, '-')) {
		neg = true;
		next(p);
	}
	o->kind = PTX_OP_IMM;
	o->reg = PTX_NONE;
	o->index = PTX_NONE;
	if (p->t->kind == PTX__T_INT) {
		o->imm = (int64_t)next(p)->u;
		if (neg)
			o->imm = (int64_t)(0 - (uint64_t)o->imm);
		return 0;
	}
	if (p->t->kind != PTX__T_FLOAT)
		return fail(p, "expected a number after '-'");
	o->is_float = p->t->is_f32 ? 1 : 2;
	o->imm = (int64_t)p->t->u;
	if (neg)
		o->imm = (int64_t)((uint64_t)o->imm ^ (p->t->is_f32 ? 1ull << 31 : 1ull << 63));
	next(p);
	return 0;
}

/* A name operand: special register, register (or p|q), symbol, prototype, or a label (fixed up
 * when the body ends). */
static int parse_name(struct parser *p, struct ptx_operand *o, uint32_t insn, uint32_t opi)
{
	const struct ptx__tok *t = next(p);
	const struct label *lb = p->f.labels.v;
	enum ptx_special sp;
	bool two;

	o->reg = PTX_NONE;
	o->index = PTX_NONE;
	if (tok_eq(t, "_", 1)) {
		o->kind = PTX_OP_SINK;
		return 0;
	}
	o->reg = find_reg(p, t);
	if (o->reg == PTX_NONE && t->s[0] == '%' && find_special(t, p->t, &sp, &o->imm, &two) == 0) {
		if (two)
			next(p);
		o->kind = PTX_OP_SPECIAL;
		o->index = sp;
		return 0;
	}
	if (o->reg != PTX_NONE) {
		o->kind = PTX_OP_REG;
		if (at_punct(p, '|')) {
			next(p);
			if (p->t->kind != PTX__T_IDENT || (o->index = find_reg(p, p->t)) == PTX_NONE)
				return fail(p, "bad second destination after '|'");
			next(p);
			o->kind = PTX_OP_PAIR;
		}
		return 0;
	}
	if (find_sym(p, t, true, &o->scope, &o->index)) {
		o->kind = PTX_OP_SYM;
		return 0;
	}
	for (uint32_t i = 0; i < p->f.labels.n; i++)
		if (tok_eq(t, lb[i].name, lb[i].len)) {
			o->kind = lb[i].proto ? PTX_OP_PROTO : PTX_OP_LABEL;
			o->index = lb[i].proto ? lb[i].proto_index : lb[i].insn;
			return 0;
		}
	if (t->s[0] == '%' || opi == PTX_NONE)
		return fail(p, "unknown %s %.*s", t->s[0] == '%' ? "register" : "name", (int)t->len, t->s);
	/* a label further down: the body's end resolves it */
	{
		struct fix *fx = vec_push(p, &p->f.fixes, sizeof(*fx));

		if (!fx)
			return -1;
		fx->name = t;
		fx->insn = insn;
		fx->op = opi;
	}
	o->kind = PTX_OP_LABEL;
	return 0;
}

/* One operand. opi: its index in the instruction (PTX_NONE inside a group, where a forward
 * label cannot be fixed up). */
static int parse_operand(struct parser *p, struct ptx_operand *o, uint32_t insn, uint32_t opi, bool nested)
{
	char b[80];

	memset(o, 0, sizeof(*o));
	if (at_punct(p, '!')) {
		next(p);
		if (p->t->kind != PTX__T_IDENT || parse_name(p, o, insn, opi) || o->kind != PTX_OP_REG)
			return fail(p, "'!' before an operand that is not a predicate register");
		o->neg = 1;
		return 0;
	}
	if ((at_punct(p, '{') || at_punct(p, '(')) && !nested)
		return parse_group(p, o, at_punct(p, '{') ? '}' : ')', insn);
	if (at_punct(p, '['))
		return parse_address(p, o);
	if (p->t->kind == PTX__T_INT || p->t->kind == PTX__T_FLOAT || at_punct(p, '-'))
		return parse_number(p, o);
	if (p->t->kind == PTX__T_IDENT)
		return parse_name(p, o, insn, opi);
	return fail(p, "bad operand %s", tok_text(p, b, sizeof(b)));
}

/* ------------------------------------------------------------------ instructions */

/* A modifier's meaning for its instruction: space (the first), type (the last), vector width. */
static int add_mod(struct parser *p, struct ptx_insn *in, const struct word *w)
{
	if (in->nmods == PTX_MAX_MODS)
		return fail(p, "more than %d modifiers on %s", PTX_MAX_MODS, in->opcode);
	if (w->refused)
		return fail(p, "%s.%s: .shared::cluster is not supported", in->opcode, w->s);
	in->mods[in->nmods++] = w->s;
	if (w->space != PTX_SPACE_NONE && in->space == PTX_SPACE_NONE)
		in->space = w->space;
	if (w->type != PTX_T_NONE)
		in->type = w->type;
	if (w->vec)
		in->vec = w->vec;
	return 0;
}

static int parse_insn(struct parser *p, uint32_t block)
{
	struct ptx_insn *in = vec_push(p, &p->f.insns, sizeof(*in));
	uint32_t idx = p->f.insns.n - 1;
	const struct ptx__tok *op;
	const struct word *w;
	char b[80];

	if (!in)
		return -1;
	in->guard = PTX_NONE;
	in->vec = 1;
	in->line = p->t->line;
	in->block = block;
	if (at_punct(p, '@')) {
		next(p);
		if (at_punct(p, '!')) {
			next(p);
			in->guard_neg = 1;
		}
		if (p->t->kind != PTX__T_IDENT || (in->guard = find_reg(p, p->t)) == PTX_NONE)
			return fail(p, "bad guard %s", tok_text(p, b, sizeof(b)));
		next(p);
	}
	if (p->t->kind != PTX__T_IDENT)
		return fail(p, "expected an instruction, got %s", tok_text(p, b, sizeof(b)));
	op = next(p);
	w = intern(p, op->s, op->len);
	if (!w)
		return oom(p);
	in->opcode = w->s;
	while (p->t->kind == PTX__T_DIR && p->t->adj) {
		const struct ptx__tok *m = next(p);

		w = intern(p, m->s, m->len);
		if (!w)
			return oom(p);
		if (add_mod(p, in, w))
			return -1;
	}
	while (!at_punct(p, ';')) {
		struct ptx_operand o;

		if (in->nops && expect_punct(p, ',', "between operands"))
			return -1;
		if (in->nops == PTX_MAX_OPERANDS)
			return fail(p, "more than %d operands", PTX_MAX_OPERANDS);
		if (parse_operand(p, &o, idx, in->nops, false))
			return -1;
		in->ops[in->nops++] = o;
	}
	next(p);
	return 0;
}

/* ------------------------------------------------------------------ bodies */

/* `.reg .type a, b<N>, ...;` */
static int parse_reg_decl(struct parser *p, uint32_t block)
{
	enum ptx_type ty;
	char b[80];

	next(p);
	if (at_dir(p, "v2") || at_dir(p, "v4") || at_dir(p, "v8"))
		return fail(p, "vector registers (.reg .%.*s) are not supported", (int)p->t->len, p->t->s);
	ty = tok_type(p->t);
	if (ty == PTX_T_NONE)
		return fail(p, "bad register type %s", tok_text(p, b, sizeof(b)));
	next(p);
	for (;;) {
		const struct ptx__tok *n = p->t;
		struct fam *fm;
		uint64_t count = 1;

		if (n->kind != PTX__T_IDENT)
			return fail(p, "bad register name %s", tok_text(p, b, sizeof(b)));
		next(p);
		if (at_punct(p, '<')) {
			next(p);
			if (expect_uint(p, MAX_REGS, &count, "register count") ||
			    expect_punct(p, '>', "after a register count"))
				return -1;
		}
		if (p->f.regs.n + count > MAX_REGS)
			return fail(p, "too many registers");
		fm = vec_push(p, &p->f.fams, sizeof(*fm));
		if (!fm)
			return -1;
		fm->name = n->s;
		fm->len = n->len;
		fm->base = p->f.regs.n;
		fm->count = (uint32_t)count;
		fm->block = block;
		fm->single = !ptx__is_punct(n + 1, '<');
		for (uint64_t k = 0; k < count; k++) {
			struct ptx_reg *r = vec_push(p, &p->f.regs, sizeof(*r));
			char nb[64];

			if (!r)
				return -1;
			r->type = (uint8_t)ty;
			if (fm->single) {
				r->name = ptx__strndup(p->a, n->s, n->len);
			} else {
				int len = snprintf(nb, sizeof(nb), "%.*s%llu", (int)(n->len > 40 ? 40 : n->len), n->s,
						   (unsigned long long)k);
				r->name = ptx__strndup(p->a, nb, (size_t)len);
			}
			if (!r->name)
				return oom(p);
		}
		if (!at_punct(p, ','))
			break;
		next(p);
	}
	return expect_punct(p, ';', "after a register declaration");
}

/* `.local/.shared/.param [.align N] .type name[N];` in a body. Call-block .param variables get
 * offsets in their block's call area: a block directly in the body starts it afresh (nested
 * blocks, inline asm, continue it), as the interpreter lays out its call frames. */
static int parse_body_var(struct parser *p, uint32_t block)
{
	const struct ptx__tok *sp = next(p);
	bool is_extern = false, refused;
	enum ptx_space space;
	struct ptx_var *v;
	struct decl d;

	if (tok_eq(sp, "extern", 6)) {
		is_extern = true;
		sp = next(p);
	}
	space = space_named(sp->s, sp->len, &refused);
	if (sp->kind != PTX__T_DIR || (space != PTX_SPACE_LOCAL && space != PTX_SPACE_SHARED && space != PTX_SPACE_PARAM))
		return fail(p, "bad declaration in a body");
	if (parse_decl(p, &d, false))
		return -1;
	if (d.unsized && !is_extern)
		return fail(p, "%.*s without a size", (int)d.name->len, d.name->s);
	v = vec_push(p, &p->f.vars, sizeof(*v));
	if (!v || make_var(p, v, &d, space))
		return -1;
	v->is_extern = is_extern;
	v->block = block;
	if (space == PTX_SPACE_PARAM) {
		v->offset = (p->f.cparam + v->align - 1) & ~((uint64_t)v->align - 1);
		p->f.cparam = v->offset + v->size;
	}
	if (at_punct(p, '='))
		return fail(p, "initialised variable %s in a body", v->name);
	return expect_punct(p, ';', "after a declaration");
}

/* Debug directives have no ';': .loc and .file end with their line. */
static void skip_line(struct parser *p, uint32_t line)
{
	while (p->t->kind != PTX__T_EOF && p->t->line == line)
		next(p);
}

/* `name:` (a branch target) or `name: .callprototype ...;` */
static int parse_label(struct parser *p)
{
	const struct ptx__tok *t = next(p);
	struct label *lb, *all = p->f.labels.v;

	next(p); /* ':' */
	for (uint32_t i = 0; i < p->f.labels.n; i++)
		if (tok_eq(t, all[i].name, all[i].len))
			return fail(p, "label %.*s defined twice", (int)t->len, t->s);
	lb = vec_push(p, &p->f.labels, sizeof(*lb));
	if (!lb)
		return -1;
	lb->name = t->s;
	lb->len = t->len;
	lb->insn = p->f.insns.n;
	if (at_dir(p, "callprototype")) {
		lb->proto = true;
		lb->proto_index = p->f.nprotos++;
		while (!at_punct(p, ';') && p->t->kind != PTX__T_EOF)
			next(p);
		return expect_punct(p, ';', "after a .callprototype");
	}
	if (at_dir(p, "branchtargets") || at_dir(p, "calltargets"))
		return fail(p, ".%.*s is not supported", (int)p->t->len, p->t->s);
	return 0;
}

static int open_block(struct parser *p)
{
	bool *o;

	if (p->f.depth == MAX_BLOCK_DEPTH)
		return fail(p, "blocks nested too deeply");
	o = vec_push(p, &p->f.open, sizeof(*o));
	if (!o)
		return -1;
	*o = true;
	if (p->f.depth == 1)
		p->f.cparam = 0;
	p->f.stack[p->f.depth++] = p->f.open.n - 1;
	return 0;
}

static int parse_statement(struct parser *p)
{
	uint32_t block = p->f.stack[p->f.depth - 1];
	char b[80];

	if (at_dir(p, "reg"))
		return parse_reg_decl(p, block);
	if (at_dir(p, "local") || at_dir(p, "shared") || at_dir(p, "param") || at_dir(p, "extern"))
		return parse_body_var(p, block);
	if (at_dir(p, "pragma")) {
		next(p);
		if (p->t->kind != PTX__T_STRING)
			return fail(p, "bad .pragma");
		next(p);
		return expect_punct(p, ';', "after .pragma");
	}
	if (at_dir(p, "loc") || at_dir(p, "file")) {
		skip_line(p, p->t->line);
		return 0;
	}
	if (p->t->kind == PTX__T_DIR)
		return fail(p, "directive %s is not supported in a body", tok_text(p, b, sizeof(b)));
	if (p->t->kind == PTX__T_IDENT && ptx__is_punct(p->t + 1, ':'))
		return parse_label(p);
	return parse_insn(p, block);
}

/* Branch targets named before their label. */
static int fix_labels(struct parser *p)
{
	const struct fix *fx = p->f.fixes.v;
	const struct label *lb = p->f.labels.v;
	struct ptx_insn *insns = p->f.insns.v;

	for (uint32_t i = 0; i < p->f.fixes.n; i++) {
		struct ptx_operand *o = &insns[fx[i].insn].ops[fx[i].op];
		uint32_t k;

		for (k = 0; k < p->f.labels.n; k++)
			if (tok_eq(fx[i].name, lb[k].name, lb[k].len))
				break;
		if (k == p->f.labels.n) {
			p->t = fx[i].name;
			return fail(p, "unknown name %.*s", (int)fx[i].name->len, fx[i].name->s);
		}
		o->kind = lb[k].proto ? PTX_OP_PROTO : PTX_OP_LABEL;
		o->index = lb[k].proto ? lb[k].proto_index : lb[k].insn;
	}
	return 0;
}

/* `{ ... }`, the current token being the '{'. */
static int parse_body(struct parser *p)
{
	if (open_block(p))
		return -1;
	next(p);
	while (p->f.depth > 0) {
		if (p->t->kind == PTX__T_EOF)
			return fail(p, "unterminated body (missing '}')");
		if (at_punct(p, '{')) {
			if (open_block(p))
				return -1;
			next(p);
		} else if (at_punct(p, '}')) {
			((bool *)p->f.open.v)[p->f.stack[--p->f.depth]] = false;
			if (p->f.depth)
				next(p);
		} else if (parse_statement(p)) {
			return -1;
		}
	}
	return fix_labels(p);
}

/* ------------------------------------------------------------------ functions */

static void fstate_free(struct fstate *f)
{
	vec_free(&f->params);
	vec_free(&f->rets);
	vec_free(&f->regs);
	vec_free(&f->vars);
	vec_free(&f->insns);
	vec_free(&f->fams);
	vec_free(&f->labels);
	vec_free(&f->fixes);
	vec_free(&f->open);
	memset(f, 0, sizeof(*f));
}

/* Performance directives between the parameters and the body. */
static int parse_perf(struct parser *p, struct ptx_func *fn)
{
	while (p->t->kind == PTX__T_DIR) {
		const struct ptx__tok *d = next(p);
		uint32_t *dims = tok_eq(d, "reqntid", 7) ? fn->reqntid : tok_eq(d, "maxntid", 7) ? fn->maxntid : NULL;
		uint32_t n = 0;

		if (tok_eq(d, "noreturn", 8) || tok_eq(d, "explicitcluster", 15))
			continue;
		if (tok_eq(d, "pragma", 6)) {
			if (p->t->kind != PTX__T_STRING)
				return fail(p, "bad .pragma");
			next(p);
			if (expect_punct(p, ';', "after .pragma"))
				return -1;
			continue;
		}
		if (!tok_eq(d, "minnctapersm", 12) && !tok_eq(d, "maxnctapersm", 12) && !tok_eq(d, "maxnreg", 7) &&
		    !tok_eq(d, "reqnctapercluster", 17) && !tok_eq(d, "maxclusterrank", 14) && !dims) {
			p->t = d;
			return fail(p, "unknown directive .%.*s in a function header", (int)d->len, d->s);
		}
		for (;;) {
			uint64_t v = 0;

			if (expect_uint(p, UINT32_MAX, &v, "performance directive value") || n == 3)
				return fail(p, "bad value of .%.*s", (int)d->len, d->s);
			if (dims)
				dims[n] = (uint32_t)v;
			n++;
			if (!at_punct(p, ','))
				break;
			next(p);
		}
	}
	return 0;
}

/* Freeze the function being read into fn (arena copies). */
static int finish_func(struct parser *p, struct ptx_func *fn)
{
	fn->nparams = p->f.params.n;
	fn->nrets = p->f.rets.n;
	fn->nregs = p->f.regs.n;
	fn->nvars = p->f.vars.n;
	fn->ninsns = p->f.insns.n;
	fn->nblocks = p->f.open.n;
	if (vec_freeze(p, &p->f.params, sizeof(struct ptx_var), &fn->params) ||
	    vec_freeze(p, &p->f.rets, sizeof(struct ptx_var), &fn->rets) ||
	    vec_freeze(p, &p->f.regs, sizeof(struct ptx_reg), &fn->regs) ||
	    vec_freeze(p, &p->f.vars, sizeof(struct ptx_var), &fn->vars) ||
	    vec_freeze(p, &p->f.insns, sizeof(struct ptx_insn), &fn->insns))
		return -1;
	return 0;
}

/* The index of function `name`: a new slot (marked a declaration until its body is read, so
 * the body may call it), or the earlier one a declaration repeats or a definition completes. A
 * second definition is an error, but for internal .func ones (two files' own helpers, linked by
 * concatenation), where the newer shadows the older. */
static uint32_t func_slot(struct parser *p, const struct ptx__tok *name, bool is_entry, bool visible, bool is_decl,
			  bool *existed)
{
	struct ptx_func *fns = p->funcs.v, *fn;

	*existed = false;
	for (uint32_t i = p->funcs.n; i-- > 0;) {
		if (!tok_is_name(name, fns[i].name))
			continue;
		if (fns[i].is_entry == is_entry && (is_decl || fns[i].is_decl)) {
			*existed = true;
			return i;
		}
		if (is_entry || fns[i].is_entry || visible || fns[i].is_visible) {
			fail(p, "%s %.*s defined twice", is_entry ? "entry" : "function", (int)name->len, name->s);
			return PTX_NONE;
		}
		break;
	}
	fn = vec_push(p, &p->funcs, sizeof(*fn));
	if (!fn)
		return PTX_NONE;
	fn->name = ptx__strndup(p->a, name->s, name->len);
	fn->is_entry = is_entry;
	fn->is_decl = true;
	if (!fn->name) {
		oom(p);
		return PTX_NONE;
	}
	return p->funcs.n - 1;
}

/* `.entry name (params) perf { body }` or `.func (rets) name (params) perf { body }`, or either
 * ending in ';' (a declaration). kw: the .entry/.func token; visible: .visible/.weak/.extern seen. */
static int parse_func(struct parser *p, const struct ptx__tok *kw, bool visible, bool is_extern)
{
	bool is_entry = tok_eq(kw, "entry", 5);
	struct ptx_func tmp = { .is_entry = is_entry, .is_visible = visible, .line = kw->line };
	const struct ptx__tok *name;
	struct ptx_func *fn;
	uint64_t bytes = 0, ret_bytes = 0;
	const char *start = kw->s - 1;
	uint32_t idx;
	bool existed;
	int rc = -1;

	fstate_free(&p->f);
	if (!is_entry && at_punct(p, '(') && parse_params(p, &p->f.rets, &ret_bytes))
		goto out;
	if (p->t->kind != PTX__T_IDENT) {
		fail(p, ".%s without a name", is_entry ? "entry" : "func");
		goto out;
	}
	name = next(p);
	if (at_punct(p, '(') && parse_params(p, &p->f.params, &bytes))
		goto out;
	tmp.param_bytes = bytes;
	if (parse_perf(p, &tmp))
		goto out;
	idx = func_slot(p, name, is_entry, visible, at_punct(p, ';'), &existed);
	if (idx == PTX_NONE)
		goto out;
	if (at_punct(p, ';')) {
		tmp.is_decl = true;
		tmp.text_len = (size_t)(p->t->s + 1 - start);
		next(p);
		if (existed) {
			rc = 0; /* a second declaration changes nothing */
			goto out;
		}
	} else if (at_punct(p, '{') && !is_extern) {
		tmp.body_off = (size_t)(p->t->s - p->src);
		if (parse_body(p))
			goto out;
		tmp.text_len = (size_t)(p->t->s + 1 - start);
		next(p);
	} else {
		fail(p, "%s %.*s has no body", is_entry ? "entry" : "function", (int)name->len, name->s);
		goto out;
	}
	fn = &((struct ptx_func *)p->funcs.v)[idx];
	tmp.name = fn->name;
	tmp.text = p->m->text + (start - p->src);
	*fn = tmp;
	rc = finish_func(p, fn);
out:
	fstate_free(&p->f);
	return rc;
}

/* ------------------------------------------------------------------ module variables */

/* One initialiser value at byte off of v (elem bytes each): a number, or a symbol's address. */
static int init_value(struct parser *p, struct ptx_var *v, unsigned char *init, uint64_t off, struct vec *addrs)
{
	unsigned elem = ptx_type_bytes((enum ptx_type)v->type);
	bool is_float_type = v->type == PTX_T_F32 || v->type == PTX_T_F64;
	struct ptx_operand o;
	uint64_t bits;

	if (off + elem > v->size && v->size)
		return fail(p, "too many initial values for %s", v->name);
	if (p->t->kind == PTX__T_IDENT) {
		bool generic = tok_eq(p->t, "generic", 7) && ptx__is_punct(p->t + 1, '(');
		struct ptx_init_addr *ia;
		const struct ptx__tok *t;

		if (generic) {
			next(p);
			next(p);
		}
		t = next(p);
		if (elem != 4 && elem != 8)
			return fail(p, "address %.*s in a %u-byte initial value", (int)t->len, t->s, elem);
		ia = vec_push(p, addrs, sizeof(*ia));
		if (!ia)
			return -1;
		if (!find_sym(p, t, false, &ia->scope, &ia->index))
			return fail(p, "unknown symbol %.*s in an initialiser", (int)t->len, t->s);
		ia->offset = off;
		ia->generic = generic;
		ia->bytes = (uint8_t)elem;
		if (generic && expect_punct(p, ')', "after generic(name"))
			return -1;
		if (at_punct(p, '+')) {
			next(p);
			if (p->t->kind != PTX__T_INT)
				return fail(p, "bad offset after a symbol");
			ia->addend = (int64_t)next(p)->u;
		}
		return 0;
	}
	if (p->t->kind != PTX__T_INT && p->t->kind != PTX__T_FLOAT && !at_punct(p, '-'))
		return fail(p, "bad initial value of %s", v->name);
	if (parse_number(p, &o))
		return -1;
	bits = (uint64_t)o.imm;
	if (o.is_float && v->type == PTX_T_F32 && o.is_float == 2) {
		double dv;
		float fv;
		uint32_t u;

		memcpy(&dv, &bits, 8);
		fv = (float)dv;
		memcpy(&u, &fv, 4);
		bits = u;
	} else if (o.is_float == 1 && v->type == PTX_T_F64) {
		uint32_t u = (uint32_t)bits;
		float fv;
		double dv;

		memcpy(&fv, &u, 4);
		dv = fv;
		memcpy(&bits, &dv, 8);
	} else if (o.is_float && !is_float_type && !(o.is_float == 1 && elem == 4) && !(o.is_float == 2 && elem == 8)) {
		return fail(p, "float initial value of integer variable %s", v->name);
	} else if (!o.is_float && is_float_type) {
		double dv = (double)o.imm;
		float fv = (float)dv;
		uint32_t u;

		if (v->type == PTX_T_F32) {
			memcpy(&u, &fv, 4);
			bits = u;
		} else {
			memcpy(&bits, &dv, 8);
		}
	}
	for (unsigned k = 0; k < elem; k++) /* little-endian, as the device */
		init[off + k] = (unsigned char)(bits >> (8 * k));
	return 0;
}

/* `= value` or `= { ... }` (nested for arrays, depth levels deep so far), into init. */
static int init_values(struct parser *p, struct ptx_var *v, unsigned char *init, uint64_t *off, struct vec *addrs,
		       unsigned depth)
{
	unsigned elem = ptx_type_bytes((enum ptx_type)v->type);

	if (depth > MAX_INIT_DEPTH)
		return fail(p, "initialiser of %s nested too deeply", v->name);
	if (!at_punct(p, '{')) {
		if (init_value(p, v, init, *off, addrs))
			return -1;
		*off += elem;
		return 0;
	}
	next(p);
	while (!at_punct(p, '}')) {
		if (init_values(p, v, init, off, addrs, depth + 1))
			return -1;
		if (at_punct(p, ','))
			next(p);
		else if (!at_punct(p, '}'))
			return fail(p, "expected ',' or '}' in the initialiser of %s", v->name);
	}
	next(p);
	return 0;
}

/* How many scalars an initialiser holds (for `name[] = {...}`), read ahead without moving: a
 * number or a name starts one, except the offset of `sym + N` and the `generic` of generic(sym). */
static uint64_t count_values(const struct ptx__tok *t)
{
	uint64_t n = 0;
	bool after_plus = false;

	for (; t->kind != PTX__T_EOF && !ptx__is_punct(t, ';'); t++) {
		bool value = t->kind == PTX__T_INT || t->kind == PTX__T_FLOAT ||
			     (t->kind == PTX__T_IDENT && !tok_eq(t, "generic", 7));

		n += value && !after_plus;
		after_plus = ptx__is_punct(t, '+');
	}
	return n;
}

static int parse_init(struct parser *p, struct ptx_var *v)
{
	unsigned elem = ptx_type_bytes((enum ptx_type)v->type);
	struct vec addrs = { 0 };
	unsigned char *init;
	uint64_t off = 0;
	int rc = -1;

	next(p); /* '=' */
	if (!v->size) {
		if (v->is_extern)
			return fail(p, "initialised .extern %s", v->name);
		v->size = count_values(p->t) * elem;
	}
	if (!v->size || v->size > MAX_INIT_BYTES)
		return fail(p, "initialiser of %s: %llu bytes", v->name, (unsigned long long)v->size);
	init = ptx__alloc(p->a, v->size);
	if (!init)
		return oom(p);
	if (init_values(p, v, init, &off, &addrs, 0))
		goto out;
	v->init = init;
	v->ninit_addrs = addrs.n;
	rc = vec_freeze(p, &addrs, sizeof(struct ptx_init_addr), &v->init_addrs);
out:
	vec_free(&addrs);
	return rc;
}

/* A module variable just read (the last one) that has the name of an earlier one: an .extern
 * or .weak/.common repeat is dropped, a definition completes an earlier .extern or .weak one,
 * an internal one shadows an earlier internal one; anything else is defined twice. */
static int merge_module_var(struct parser *p, enum linkage link)
{
	struct ptx_var *vars = p->vars.v, *v = &vars[p->vars.n - 1];
	uint8_t *links = p->var_link.v;
	uint32_t j;

	for (j = p->vars.n - 1; j-- > 0;)
		if (!strcmp(vars[j].name, v->name))
			break;
	if (j == UINT32_MAX)
		return 0;
	if (link == LINK_EXTERN || (link == LINK_WEAK && links[j] != LINK_EXTERN)) {
		p->vars.n--; /* a repeat: nothing refers to it yet */
	} else if (links[j] == LINK_EXTERN || links[j] == LINK_WEAK) {
		vars[j] = *v; /* earlier references keep their index */
		links[j] = (uint8_t)link;
		p->vars.n--;
	} else if (!(link == LINK_INTERNAL && links[j] == LINK_INTERNAL)) {
		return fail(p, "variable %s defined twice", v->name);
	}
	p->var_link.n = p->vars.n;
	return 0;
}

/* `.global/.const/.shared [.align N] .type name[N] [= init];` at module scope. */
static int parse_module_var(struct parser *p, const struct ptx__tok *sp, enum linkage link)
{
	struct ptx_var *v;
	uint8_t *l;
	struct decl d;
	bool refused, is_extern = link == LINK_EXTERN;

	if (parse_decl(p, &d, false))
		return -1;
	v = vec_push(p, &p->vars, sizeof(*v));
	if (!v || make_var(p, v, &d, space_named(sp->s, sp->len, &refused)))
		return -1;
	v->is_extern = is_extern;
	if (at_punct(p, '=')) {
		if (v->space == PTX_SPACE_SHARED)
			return fail(p, "initialised .shared variable %s", v->name);
		if (parse_init(p, v))
			return -1;
	} else if (d.unsized && !is_extern) {
		return fail(p, "%s without a size", v->name);
	}
	l = vec_push(p, &p->var_link, sizeof(*l));
	if (!l)
		return -1;
	*l = (uint8_t)link;
	if (merge_module_var(p, link))
		return -1;
	return expect_punct(p, ';', "after a variable");
}

/* ------------------------------------------------------------------ module */

/* `.section name { ... }` (debug sections): skipped, braces balanced. */
static int skip_section(struct parser *p)
{
	int depth = 0;

	while (p->t->kind != PTX__T_EOF && !at_punct(p, '{'))
		next(p);
	do {
		if (p->t->kind == PTX__T_EOF)
			return fail(p, "unterminated .section");
		if (at_punct(p, '{'))
			depth++;
		else if (at_punct(p, '}'))
			depth--;
		next(p);
	} while (depth > 0);
	return 0;
}

static int parse_version(struct parser *p)
{
	const struct ptx__tok *t = p->t;
	unsigned major = 0, minor = 0;
	uint32_t i = 0;

	if (t->kind != PTX__T_FLOAT || !t->decimal)
		return fail(p, "bad .version");
	for (; i < t->len && t->s[i] >= '0' && t->s[i] <= '9' && major < 100; i++)
		major = major * 10 + (unsigned)(t->s[i] - '0');
	if (i == 0 || i >= t->len || t->s[i] != '.' || i + 1 >= t->len)
		return fail(p, "bad .version");
	for (i++; i < t->len && t->s[i] >= '0' && t->s[i] <= '9' && minor < 100; i++)
		minor = minor * 10 + (unsigned)(t->s[i] - '0');
	if (i != t->len || major > 99 || minor > 9)
		return fail(p, "bad .version");
	p->m->version_major = major;
	p->m->version_minor = minor;
	p->have_version = true;
	next(p);
	return 0;
}

/* `.target sm_90a, texmode_independent, debug` */
static int parse_target(struct parser *p)
{
	for (;;) {
		const struct ptx__tok *t = p->t;

		if (t->kind != PTX__T_IDENT)
			return fail(p, "bad .target");
		if (t->len > 3 && memcmp(t->s, "sm_", 3) == 0) {
			uint32_t sm = 0;

			for (uint32_t i = 3; i < t->len && t->s[i] >= '0' && t->s[i] <= '9' && sm < 100000; i++)
				sm = sm * 10 + (uint32_t)(t->s[i] - '0');
			p->m->sm = sm;
		}
		next(p);
		if (!at_punct(p, ','))
			return 0;
		next(p);
	}
}

/* One top-level statement. */
static int parse_top(struct parser *p)
{
	const struct ptx__tok *d = p->t;
	enum linkage link = LINK_INTERNAL;
	char b[80];
	uint64_t v = 0;

	if (d->kind != PTX__T_DIR)
		return fail(p, "expected a directive, got %s", tok_text(p, b, sizeof(b)));
	next(p);
	if (tok_eq(d, "version", 7))
		return parse_version(p);
	if (tok_eq(d, "target", 6))
		return parse_target(p);
	if (tok_eq(d, "address_size", 12)) {
		if (expect_uint(p, 64, &v, ".address_size") || (v != 32 && v != 64))
			return fail(p, "bad .address_size");
		p->m->address_size = (uint32_t)v;
		return 0;
	}
	if (tok_eq(d, "file", 4) || tok_eq(d, "loc", 3)) {
		skip_line(p, d->line);
		return 0;
	}
	if (tok_eq(d, "section", 7))
		return skip_section(p);
	if (tok_eq(d, "pragma", 6)) {
		if (p->t->kind != PTX__T_STRING)
			return fail(p, "bad .pragma");
		next(p);
		return expect_punct(p, ';', "after .pragma");
	}
	/* linkage, then what it qualifies */
	for (;;) {
		if (tok_eq(d, "visible", 7)) {
			link = LINK_VISIBLE;
		} else if (tok_eq(d, "weak", 4) || tok_eq(d, "common", 6)) {
			link = LINK_WEAK;
		} else if (tok_eq(d, "extern", 6)) {
			link = LINK_EXTERN;
		} else {
			break;
		}
		if (p->t->kind != PTX__T_DIR)
			return fail(p, "expected a directive after linkage, got %s", tok_text(p, b, sizeof(b)));
		d = next(p);
	}
	if (!p->have_version) {
		p->t = d;
		return fail(p, ".%.*s before .version", (int)d->len, d->s);
	}
	if (tok_eq(d, "entry", 5) || tok_eq(d, "func", 4))
		return parse_func(p, d, link == LINK_VISIBLE || link == LINK_WEAK, link == LINK_EXTERN);
	if (tok_eq(d, "global", 6) || tok_eq(d, "const", 5) || tok_eq(d, "shared", 6))
		return parse_module_var(p, d, link);
	p->t = d;
	return fail(p, "directive .%.*s is not supported at module scope", (int)d->len, d->s);
}

static int parse_module(struct parser *p)
{
	while (p->t->kind != PTX__T_EOF)
		if (parse_top(p))
			return -1;
	if (!p->have_version)
		return fail(p, "no .version directive: not PTX text");
	p->m->nfuncs = p->funcs.n;
	p->m->nvars = p->vars.n;
	p->m->noperands = p->operands.n;
	if (vec_freeze(p, &p->funcs, sizeof(struct ptx_func), &p->m->funcs) ||
	    vec_freeze(p, &p->vars, sizeof(struct ptx_var), &p->m->vars) ||
	    vec_freeze(p, &p->operands, sizeof(struct ptx_operand), &p->m->operands))
		return -1;
	return 0;
}

struct ptx_module *ptx_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct ptx__arena arena = { 0 };
	struct ptx__toks toks = { 0 };
	struct parser p = { .err = err, .errlen = errlen, .src = text };
	struct ptx_module *m = NULL;
	char *copy;

	if (err && errlen)
		err[0] = 0;
	if (memchr(text, 0, len)) {
		/* a C string's NUL is not text; anything after it is */
		size_t n = strlen(text);

		for (size_t i = n; i < len; i++)
			if (text[i]) {
				if (err && errlen)
					snprintf(err, errlen, "NUL byte in text: not PTX");
				return NULL;
			}
		len = n;
	}
	m = ptx__alloc(&arena, sizeof(*m));
	copy = m ? ptx__strndup(&arena, text, len) : NULL;
	if (!copy) {
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		goto out_fail;
	}
	m->text = copy;
	m->text_len = len;
	m->address_size = 64;
	if (ptx__lex(text, len, &toks, err, errlen))
		goto out_fail;
	p.m = m;
	p.a = &arena;
	p.t = toks.v;
	if (parse_module(&p))
		goto out_fail;
	m->arena = ptx__dup(&arena, &arena, sizeof(arena));
	if (!m->arena) {
		oom(&p);
		goto out_fail;
	}
	/* the arena now describes itself: its record lives in its own chunk */
	*(struct ptx__arena *)m->arena = arena;
	goto out;
out_fail:
	ptx__arena_free(&arena);
	m = NULL;
out:
	fstate_free(&p.f);
	vec_free(&p.funcs);
	vec_free(&p.vars);
	vec_free(&p.var_link);
	vec_free(&p.operands);
	free(p.intern);
	ptx__toks_free(&toks);
	return m;
}

void ptx_module_free(struct ptx_module *m)
{
	struct ptx__arena a;

	if (!m)
		return;
	a = *(struct ptx__arena *)m->arena;
	ptx__arena_free(&a);
}
