/* ptx_int.h - private interface of the PTX front end (ptx_lex.c, ptx_parse.c): the tokens, the
 * lexer and the module's arena. driver layer, libc only. */
#ifndef CF_DRIVER_PTX_INT_H
#define CF_DRIVER_PTX_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ arena */

/* Chunks of memory freed at once: everything a parsed module hands out. */
struct ptx__arena {
	struct ptx__chunk *head;      /* newest chunk first */
	size_t used;                  /* bytes handed out of head */
	size_t cap;                   /* bytes head holds */
};

/* size bytes, zeroed, aligned to 16; NULL when out of memory. */
void *ptx__alloc(struct ptx__arena *a, size_t size);
/* A copy of n bytes (NUL-terminated when str); NULL when out of memory. */
void *ptx__dup(struct ptx__arena *a, const void *p, size_t n);
char *ptx__strndup(struct ptx__arena *a, const char *s, size_t n);
void ptx__arena_free(struct ptx__arena *a);

/* ------------------------------------------------------------------ tokens */

enum ptx__tok_kind {
	PTX__T_EOF,
	PTX__T_IDENT,                 /* name, %name, $name (a register, symbol, label or opcode) */
	PTX__T_DIR,                   /* .word (s, len without the dot; "shared::cta" stays one) */
	PTX__T_INT,                   /* integer literal: value in u */
	PTX__T_FLOAT,                 /* 0f/0d bits or a decimal float: bits in u, f64 unless is_f32 */
	PTX__T_STRING,                /* "..." (s, len without the quotes) */
	PTX__T_PUNCT,                 /* one of { } ( ) [ ] , ; : + - | ! @ < > = */
};

struct ptx__tok {
	const char *s;                /* its text in the source */
	uint32_t len;                 /* bytes of it */
	uint32_t line;                /* 1-based */
	uint8_t kind;                 /* enum ptx__tok_kind */
	char punct;                   /* PUNCT: the character */
	bool adj;                     /* no white space before it (dot-modifiers of an opcode) */
	bool is_f32;                  /* FLOAT: 0f bits (f32), else f64 bits */
	bool decimal;                 /* FLOAT: written as a decimal (converted to f64 bits) */
	uint64_t u;                   /* INT value, FLOAT bits */
};

struct ptx__toks {
	struct ptx__tok *v;           /* tokens, the last one EOF */
	size_t n;
};

/* Split text (len bytes; comments dropped) into tokens. 0, or -1 with "line N: ..." in err. */
int ptx__lex(const char *text, size_t len, struct ptx__toks *out, char *err, size_t errlen);
void ptx__toks_free(struct ptx__toks *t);

/* Whether the token is the identifier / directive / punctuation given. */
bool ptx__tok_is(const struct ptx__tok *t, int kind, const char *s);
static inline bool ptx__is_punct(const struct ptx__tok *t, char c)
{
	return t->kind == PTX__T_PUNCT && t->punct == c;
}

#endif
