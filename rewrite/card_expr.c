/* card_expr.c - the compiler of kernel card expressions: infix text (integers, a card's
 * integer parameters, integers inside its struct parameters (NAME@OFF:TYPE), the grid
 * variables gx..bz, unary -, + - * / %, min, max and fits32) into the
 * reverse-Polish ops rewrite/card_eval.c runs, with the stack depth tracked as ops are
 * emitted. A recursive-descent parser, one function per precedence level. rewrite layer; the
 * card statements around expressions are card_parse.c's. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/compiler.h"
#include "common/errors.h"
#include "rewrite/cards_int.h"

const char *const rw__grid_names[RW_GRID_VARS] = { "gx", "gy", "gz", "bx", "by", "bz" };

/* Resolves a name to a variable index for the compiler. */
struct names {
	struct rw_card *card;               /* its integer parameters, then grid names, then the
					     * struct fields named (added to card->fvars); or NULL */
	const char *const *list;            /* or a plain list of names (tests) */
	unsigned nlist;                     /* entries of list */
};

struct expr_parser {
	const char *s;                      /* the text */
	size_t at;                          /* next character */
	const struct names *names;          /* how to resolve identifiers */
	struct rw_op *ops;                  /* output */
	unsigned nops;                      /* ops written */
	unsigned cap;                       /* room in ops */
	int depth;                          /* values on the stack after the ops so far */
	int max_depth;                      /* the most seen */
	int nest;                           /* parentheses and calls open */
	char *err;                          /* reason, on error */
	size_t errsize;
	bool failed;                        /* an error was recorded */
};

static void expr_fail(struct expr_parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void expr_fail(struct expr_parser *p, const char *fmt, ...)
{
	va_list ap;

	if (p->failed)
		return;
	p->failed = true;
	if (p->err && p->errsize) {
		va_start(ap, fmt);
		vsnprintf(p->err, p->errsize, fmt, ap);
		va_end(ap);
	}
}

static void skip_blanks(struct expr_parser *p)
{
	while (p->s[p->at] == ' ' || p->s[p->at] == '\t')
		p->at++;
}

static void emit(struct expr_parser *p, enum rw_op_kind kind, int64_t v)
{
	if (p->failed)
		return;
	if (p->nops == p->cap) {
		expr_fail(p, "expression too long (more than %d operations)", RW_EXPR_MAX_OPS);
		return;
	}
	p->ops[p->nops].kind = (uint8_t)kind;
	p->ops[p->nops].v = v;
	p->nops++;
	if (kind == RW_OP_CONST || kind == RW_OP_VAR)
		p->depth++;
	else if (kind != RW_OP_NEG && kind != RW_OP_FITS32)
		p->depth--;
	cf_assert(p->depth >= 1); /* the grammar emits every operator after its operands */
	if (p->depth > p->max_depth)
		p->max_depth = p->depth;
	if (p->max_depth > RW_EXPR_MAX_DEPTH)
		expr_fail(p, "expression nested too deeply");
}

bool rw__is_ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool rw__is_ident_char(char c)
{
	return rw__is_ident_start(c) || (c >= '0' && c <= '9');
}

size_t rw__parse_number(const char *s, uint64_t *out)
{
	size_t i = 0;
	uint64_t v = 0;
	int base = 10;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	}
	size_t start = i;

	for (;; i++) {
		char c = s[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			break;
		if (v > (UINT64_MAX - d) / (unsigned)base)
			return 0; /* too large */
		v = v * (unsigned)base + d;
	}
	if (i == start)
		return 0;
	*out = v;
	return i;
}

/* The variable index of a name, or -1 with a reason recorded. */
static int64_t resolve(struct expr_parser *p, const char *name, size_t len)
{
	const struct names *n = p->names;

	if (n->card) {
		const struct rw_card *c = n->card;

		for (unsigned i = 0; i < c->nparams; i++) {
			if (strlen(c->params[i].name) == len && !memcmp(c->params[i].name, name, len)) {
				if (!rw__type_is_int((enum rw_type)c->params[i].type)) {
					expr_fail(p, "parameter '%.*s' is not an integer", (int)len, name);
					return -1;
				}
				return (int64_t)i;
			}
		}
		for (unsigned g = 0; g < RW_GRID_VARS; g++)
			if (strlen(rw__grid_names[g]) == len && !memcmp(rw__grid_names[g], name, len))
				return (int64_t)(c->nparams + g);
	} else {
		for (unsigned i = 0; i < n->nlist; i++)
			if (strlen(n->list[i]) == len && !memcmp(n->list[i], name, len))
				return (int64_t)i;
	}
	expr_fail(p, "unknown name '%.*s'", (int)len, name);
	return -1;
}

/* NAME@OFF[:TYPE] at '@' (NAME, len bytes, read): an integer (i32 unless TYPE says u32, i64 or
 * u64) at byte OFF of by-value struct parameter NAME. Without a card (a list of names, for
 * tests and the derivation's check of its own text) it is NAME's value. */
static void parse_field(struct expr_parser *p, const char *name, size_t len)
{
	static const struct { const char *n; enum rw_type t; } types[] = {
		{ "i32", RW_T_I32 }, { "u32", RW_T_U32 }, { "i64", RW_T_I64 }, { "u64", RW_T_U64 },
	};
	enum rw_type type = RW_T_I32;
	struct rw_card *c = p->names->card;
	uint64_t off;
	size_t used = rw__parse_number(p->s + ++p->at, &off);
	int param = -1;

	if (!used || off > 32764) {
		expr_fail(p, "bad field offset at column %zu", p->at + 1);
		return;
	}
	p->at += used;
	if (p->s[p->at] == ':') {
		size_t i;

		for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			if (!strncmp(p->s + p->at + 1, types[i].n, 3) && !rw__is_ident_char(p->s[p->at + 4]))
				break;
		if (i == sizeof(types) / sizeof(types[0])) {
			expr_fail(p, "a field's type is i32, u32, i64 or u64 (column %zu)", p->at + 2);
			return;
		}
		type = types[i].t;
		p->at += 4;
	}
	if (!c) {
		int64_t v = resolve(p, name, len);

		if (v >= 0)
			emit(p, RW_OP_VAR, v);
		return;
	}
	for (unsigned i = 0; i < c->nparams; i++)
		if (strlen(c->params[i].name) == len && !memcmp(c->params[i].name, name, len))
			param = (int)i;
	if (param < 0 || c->params[param].type != RW_T_STRUCT) {
		expr_fail(p, "'%.*s' is not a struct parameter", (int)len, name);
		return;
	}
	if (off + rw__type_size(type) > c->params[param].size) {
		expr_fail(p, "field %.*s@%llu reaches past the struct", (int)len, name, (unsigned long long)off);
		return;
	}
	for (unsigned i = 0; i < c->nfvars; i++)
		if (c->fvars[i].param == param && c->fvars[i].off == off && c->fvars[i].type == type) {
			emit(p, RW_OP_VAR, (int64_t)(c->nparams + RW_GRID_VARS + i));
			return;
		}
	if (c->nfvars == RW_CARD_MAX_FVARS) {
		expr_fail(p, "more than %d struct fields named", RW_CARD_MAX_FVARS);
		return;
	}
	c->fvars[c->nfvars] = (struct rw_card_fvar){ (uint8_t)param, (uint8_t)type, (uint32_t)off };
	emit(p, RW_OP_VAR, (int64_t)(c->nparams + RW_GRID_VARS + c->nfvars++));
}

static void parse_sum(struct expr_parser *p);

/* min(a, b), max(a, b) or fits32(a), at its '(' (the name is read). */
static void parse_call(struct expr_parser *p, enum rw_op_kind kind, const char *name)
{
	if (++p->nest > RW_EXPR_MAX_DEPTH) {
		expr_fail(p, "expression nested too deeply");
		return;
	}
	p->at++;
	parse_sum(p);
	skip_blanks(p);
	if (kind != RW_OP_FITS32) {
		if (p->s[p->at] != ',') {
			expr_fail(p, "%s() takes two arguments", name);
			return;
		}
		p->at++;
		parse_sum(p);
		skip_blanks(p);
	}
	if (p->s[p->at] != ')') {
		expr_fail(p, "missing ')' at column %zu", p->at + 1);
		return;
	}
	p->at++;
	p->nest--;
	emit(p, kind, 0);
}

static void parse_primary(struct expr_parser *p)
{
	const char *s;

	skip_blanks(p);
	s = p->s + p->at;
	if (p->failed)
		return;
	if (*s == '(') {
		if (++p->nest > RW_EXPR_MAX_DEPTH) {
			expr_fail(p, "expression nested too deeply");
			return;
		}
		p->at++;
		parse_sum(p);
		skip_blanks(p);
		if (p->s[p->at] != ')') {
			expr_fail(p, "missing ')' at column %zu", p->at + 1);
			return;
		}
		p->at++;
		p->nest--;
	} else if (*s >= '0' && *s <= '9') {
		uint64_t v;
		size_t used = rw__parse_number(s, &v);

		if (!used || v > INT64_MAX) {
			expr_fail(p, "bad number at column %zu", p->at + 1);
			return;
		}
		if (rw__is_ident_char(s[used])) {
			expr_fail(p, "bad number at column %zu", p->at + 1);
			return;
		}
		p->at += used;
		emit(p, RW_OP_CONST, (int64_t)v);
	} else if (rw__is_ident_start(*s)) {
		size_t len = 0;

		while (rw__is_ident_char(s[len]))
			len++;
		p->at += len;
		if (p->s[p->at] == '@') {
			parse_field(p, s, len);
			return;
		}
		skip_blanks(p);
		if (p->s[p->at] == '(' && len == 3 && (!memcmp(s, "min", 3) || !memcmp(s, "max", 3))) {
			parse_call(p, s[1] == 'i' ? RW_OP_MIN : RW_OP_MAX, s[1] == 'i' ? "min" : "max");
		} else if (p->s[p->at] == '(' && len == 6 && !memcmp(s, "fits32", 6)) {
			parse_call(p, RW_OP_FITS32, "fits32");
		} else {
			int64_t v = resolve(p, s, len);

			if (v >= 0)
				emit(p, RW_OP_VAR, v);
		}
	} else if (*s == 0) {
		expr_fail(p, "expression ends early");
	} else {
		expr_fail(p, "unexpected '%c' at column %zu", *s, p->at + 1);
	}
}

static void parse_unary(struct expr_parser *p)
{
	skip_blanks(p);
	if (p->s[p->at] == '-') {
		p->at++;
		if (++p->nest > RW_EXPR_MAX_DEPTH) {
			expr_fail(p, "expression nested too deeply");
			return;
		}
		parse_unary(p);
		p->nest--;
		emit(p, RW_OP_NEG, 0);
	} else if (p->s[p->at] == '+') {
		p->at++;
		parse_unary(p);
	} else {
		parse_primary(p);
	}
}

static void parse_product(struct expr_parser *p)
{
	parse_unary(p);
	for (;;) {
		char c;

		skip_blanks(p);
		c = p->s[p->at];
		if (p->failed || (c != '*' && c != '/' && c != '%'))
			return;
		p->at++;
		parse_unary(p);
		emit(p, c == '*' ? RW_OP_MUL : c == '/' ? RW_OP_DIV : RW_OP_MOD, 0);
	}
}

static void parse_sum(struct expr_parser *p)
{
	parse_product(p);
	for (;;) {
		char c;

		skip_blanks(p);
		c = p->s[p->at];
		if (p->failed || (c != '+' && c != '-'))
			return;
		p->at++;
		parse_product(p);
		emit(p, c == '+' ? RW_OP_ADD : RW_OP_SUB, 0);
	}
}

/* Compile s into ops[0..cap); returns the ops written, or -1 with a reason in err. */
static int expr_compile(const char *s, const struct names *names, struct rw_op *ops, unsigned cap,
			char *err, size_t errsize)
{
	struct expr_parser p = {
		.s = s, .names = names, .ops = ops, .cap = cap, .err = err, .errsize = errsize,
	};

	parse_sum(&p);
	skip_blanks(&p);
	if (!p.failed && p.s[p.at])
		expr_fail(&p, "unexpected '%c' at column %zu", p.s[p.at], p.at + 1);
	if (!p.failed && p.nops == 0)
		expr_fail(&p, "empty expression");
	return p.failed ? -1 : (int)p.nops;
}

int rw__expr_compile(struct rw_card *card, const char *text, struct rw_expr *out, char *err,
		     size_t errsize)
{
	struct names names = { .card = card };
	struct rw_op tmp[RW_EXPR_MAX_OPS];
	struct rw_op *ops;
	int n = expr_compile(text, &names, tmp, RW_EXPR_MAX_OPS, err, errsize);

	if (n < 0)
		return -CF_EINVAL;
	if (card->nops + (unsigned)n > UINT16_MAX) {
		snprintf(err, errsize, "card too large");
		return -CF_EINVAL;
	}
	ops = realloc(card->ops, (card->nops + (unsigned)n) * sizeof(*ops));
	if (!ops) {
		snprintf(err, errsize, "out of memory");
		return -CF_ENOMEM;
	}
	memcpy(ops + card->nops, tmp, (size_t)n * sizeof(*ops));
	card->ops = ops;
	out->first = (uint16_t)card->nops;
	out->n = (uint16_t)n;
	card->nops += (unsigned)n;
	return 0;
}

int rw_expr_eval_text(const char *text, const char *const *names, const int64_t *values,
		      unsigned n, int64_t *out, char *err, size_t errsize)
{
	struct names nm = { .list = names, .nlist = n };
	struct rw_op ops[RW_EXPR_MAX_OPS];
	int nops = expr_compile(text, &nm, ops, RW_EXPR_MAX_OPS, err, errsize);

	if (nops < 0)
		return -CF_EINVAL;
	return rw__expr_eval(ops, (struct rw_expr){ .first = 0, .n = (uint16_t)nops }, values, 0, out);
}
