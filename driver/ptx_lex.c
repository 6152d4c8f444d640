/* ptx_lex.c - the PTX front end's lexer and arena: text into tokens with their lines, comments
 * dropped, numbers read once. driver layer, libc only.
 *
 * A token keeps a pointer into the caller's text; the parser copies what it keeps into the
 * module's arena. Whether white space came before a token is kept (adj), because that is what
 * tells `ld.global` (an opcode and its modifier) from `.reg .b32` (two directives). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/ptx_int.h"

/* ------------------------------------------------------------------ arena */

struct ptx__chunk {
	struct ptx__chunk *next;      /* older chunk */
	size_t pad;                   /* keeps data 16-aligned */
	unsigned char data[];         /* the bytes handed out */
};

#define ARENA_CHUNK (64 * 1024)

void *ptx__alloc(struct ptx__arena *a, size_t size)
{
	struct ptx__chunk *c;
	size_t want = (size + 15) & ~(size_t)15;
	void *p;

	if (want < size)
		return NULL;
	if (!a->head || a->cap - a->used < want) {
		size_t cap = want > ARENA_CHUNK / 4 ? want : ARENA_CHUNK;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		if (a->head && want > ARENA_CHUNK / 4) {
			/* a big block gets its own chunk behind the current one, which stays open */
			c->next = a->head->next;
			a->head->next = c;
			memset(c->data, 0, want);
			return c->data;
		}
		c->next = a->head;
		a->head = c;
		a->used = 0;
		a->cap = cap;
	}
	p = a->head->data + a->used;
	a->used += want;
	memset(p, 0, want);
	return p;
}

void *ptx__dup(struct ptx__arena *a, const void *p, size_t n)
{
	void *d = ptx__alloc(a, n ? n : 1);

	if (d && n)
		memcpy(d, p, n);
	return d;
}

char *ptx__strndup(struct ptx__arena *a, const char *s, size_t n)
{
	char *d = ptx__alloc(a, n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = 0;
	}
	return d;
}

void ptx__arena_free(struct ptx__arena *a)
{
	struct ptx__chunk *c = a->head, *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
	memset(a, 0, sizeof(*a));
}

/* ------------------------------------------------------------------ lexer */

struct lexer {
	const char *p, *end;          /* read position, end of text */
	uint32_t line;                /* line of p */
	struct ptx__toks *out;        /* tokens so far */
	size_t cap;                   /* slots of out->v */
	bool ws;                      /* white space (or a comment) since the last token */
	char *err;                    /* message buffer */
	size_t errlen;
};

static int lex_fail(struct lexer *lx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int lex_fail(struct lexer *lx, const char *fmt, ...)
{
	char msg[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (lx->err && lx->errlen)
		snprintf(lx->err, lx->errlen, "line %u: %s", lx->line, msg);
	return -1;
}

static bool is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static bool is_ident_char(int c)
{
	return is_alpha(c) || is_digit(c) || c == '_' || c == '$';
}

static int hex_value(int c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static struct ptx__tok *push(struct lexer *lx, int kind, const char *s, size_t len)
{
	struct ptx__tok *t;

	if (len > UINT32_MAX) {
		lex_fail(lx, "token too long");
		return NULL;
	}
	if (lx->out->n == lx->cap) {
		size_t cap = lx->cap ? lx->cap * 2 : 1024;
		struct ptx__tok *v = realloc(lx->out->v, cap * sizeof(*v));

		if (!v) {
			lex_fail(lx, "out of memory");
			return NULL;
		}
		lx->out->v = v;
		lx->cap = cap;
	}
	t = &lx->out->v[lx->out->n++];
	memset(t, 0, sizeof(*t));
	t->kind = (uint8_t)kind;
	t->s = s;
	t->len = (uint32_t)len;
	t->line = lx->line;
	t->adj = !lx->ws;
	lx->ws = false;
	return t;
}

/* White space and comments; -1 on an unterminated comment or a control byte. */
static int skip_space(struct lexer *lx)
{
	while (lx->p < lx->end) {
		unsigned char c = (unsigned char)*lx->p;

		if (c == '\n') {
			lx->line++;
			lx->p++;
		} else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			lx->p++;
		} else if (c == '/' && lx->p + 1 < lx->end && lx->p[1] == '/') {
			while (lx->p < lx->end && *lx->p != '\n')
				lx->p++;
		} else if (c == '/' && lx->p + 1 < lx->end && lx->p[1] == '*') {
			const char *q = lx->p + 2;
			uint32_t start = lx->line;

			for (; q + 1 < lx->end && !(q[0] == '*' && q[1] == '/'); q++)
				lx->line += *q == '\n';
			if (q + 1 >= lx->end) {
				lx->line = start; /* the message names where it opens */
				return lex_fail(lx, "unterminated /* comment");
			}
			lx->p = q + 2;
		} else {
			break;
		}
		lx->ws = true;
	}
	return 0;
}

/* 0f/0F + 8 hex digits (f32 bits), 0d/0D + 16 (f64 bits). */
static int lex_float_bits(struct lexer *lx, const char *s)
{
	bool f32 = s[1] == 'f' || s[1] == 'F';
	unsigned want = f32 ? 8 : 16, n = 0;
	uint64_t v = 0;
	const char *q = s + 2;
	struct ptx__tok *t;

	for (; q < lx->end && hex_value((unsigned char)*q) >= 0; q++, n++)
		v = v << 4 | (uint64_t)hex_value((unsigned char)*q);
	if (n != want || (q < lx->end && is_ident_char((unsigned char)*q)))
		return lex_fail(lx, "bad float literal %.*s", (int)(q - s), s);
	t = push(lx, PTX__T_FLOAT, s, (size_t)(q - s));
	if (!t)
		return -1;
	t->u = v;
	t->is_f32 = f32;
	lx->p = q;
	return 0;
}

static int lex_number(struct lexer *lx)
{
	const char *s = lx->p, *q = s;
	char buf[80], *endp;
	struct ptx__tok *t;
	bool is_float = false;

	if (*s == '0' && s + 1 < lx->end && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D'))
		return lex_float_bits(lx, s);
	while (q < lx->end && (is_ident_char((unsigned char)*q) || *q == '.' ||
			       ((*q == '+' || *q == '-') && (q[-1] == 'e' || q[-1] == 'E') &&
				!(s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))))) {
		if (*q == '.' || ((*q == 'e' || *q == 'E') && !(s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))))
			is_float = true;
		q++;
	}
	if ((size_t)(q - s) >= sizeof(buf))
		return lex_fail(lx, "number too long");
	memcpy(buf, s, (size_t)(q - s));
	buf[q - s] = 0;
	errno = 0;
	if (is_float) {
		double d = strtod(buf, &endp);

		if (*endp || errno)
			return lex_fail(lx, "bad number %s", buf);
		t = push(lx, PTX__T_FLOAT, s, (size_t)(q - s));
		if (!t)
			return -1;
		memcpy(&t->u, &d, sizeof(d));
		t->decimal = true;
	} else {
		unsigned long long v;

		if (buf[0] == '0' && (buf[1] == 'b' || buf[1] == 'B'))
			v = strtoull(buf + 2, &endp, 2);
		else
			v = strtoull(buf, &endp, 0);
		if (*endp == 'U' || *endp == 'u')
			endp++;
		if (*endp || errno || endp == buf)
			return lex_fail(lx, "bad number %s", buf);
		t = push(lx, PTX__T_INT, s, (size_t)(q - s));
		if (!t)
			return -1;
		t->u = v;
	}
	lx->p = q;
	return 0;
}

static int lex_string(struct lexer *lx)
{
	const char *s = lx->p + 1, *q = s;

	while (q < lx->end && *q != '"' && *q != '\n') {
		if (*q == '\\' && q + 1 < lx->end && q[1] != '\n')
			q++;
		q++;
	}
	if (q >= lx->end || *q != '"')
		return lex_fail(lx, "unterminated string");
	if (!push(lx, PTX__T_STRING, s, (size_t)(q - s)))
		return -1;
	lx->p = q + 1;
	return 0;
}

/* .word, with `::word` parts kept in it (.shared::cta, .L2::evict_last). */
static int lex_dir(struct lexer *lx)
{
	const char *s = lx->p + 1, *q = s;

	while (q < lx->end) {
		if (is_ident_char((unsigned char)*q))
			q++;
		else if (q + 2 < lx->end && q[0] == ':' && q[1] == ':' && is_ident_char((unsigned char)q[2]) && q > s)
			q += 2;
		else
			break;
	}
	if (q == s)
		return lex_fail(lx, "'.' without a name");
	if (!push(lx, PTX__T_DIR, s, (size_t)(q - s)))
		return -1;
	lx->p = q;
	return 0;
}

static int lex_one(struct lexer *lx)
{
	unsigned char c = (unsigned char)*lx->p;

	if (is_alpha(c) || c == '_' || c == '$' || c == '%') {
		const char *q = lx->p + 1;

		while (q < lx->end && is_ident_char((unsigned char)*q))
			q++;
		if (c == '%' && q == lx->p + 1)
			return lex_fail(lx, "'%%' without a name");
		if (!push(lx, PTX__T_IDENT, lx->p, (size_t)(q - lx->p)))
			return -1;
		lx->p = q;
		return 0;
	}
	if (is_digit(c))
		return lex_number(lx);
	if (c == '.')
		return lex_dir(lx);
	if (c == '"')
		return lex_string(lx);
	if (strchr("{}()[],;:+-|!@<>=", c) && c) {
		struct ptx__tok *t = push(lx, PTX__T_PUNCT, lx->p, 1);

		if (!t)
			return -1;
		t->punct = (char)c;
		lx->p++;
		return 0;
	}
	if (c < 0x20 || c >= 0x7f)
		return lex_fail(lx, "byte 0x%02x in text: not PTX", c);
	return lex_fail(lx, "unexpected character '%c'", c);
}

int ptx__lex(const char *text, size_t len, struct ptx__toks *out, char *err, size_t errlen)
{
	struct lexer lx = { .p = text, .end = text + len, .line = 1, .out = out, .ws = true, .err = err,
			    .errlen = errlen };

	memset(out, 0, sizeof(*out));
	for (;;) {
		if (skip_space(&lx))
			goto out_fail;
		if (lx.p >= lx.end)
			break;
		if (lex_one(&lx))
			goto out_fail;
	}
	if (!push(&lx, PTX__T_EOF, lx.p, 0))
		goto out_fail;
	return 0;
out_fail:
	ptx__toks_free(out);
	return -1;
}

void ptx__toks_free(struct ptx__toks *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}

bool ptx__tok_is(const struct ptx__tok *t, int kind, const char *s)
{
	size_t n = strlen(s);

	return t->kind == kind && t->len == n && memcmp(t->s, s, n) == 0;
}
