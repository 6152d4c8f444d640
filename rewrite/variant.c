/* variant.c - multi-instance variants of programs' kernels (variant.h says what one is). rewrite
 * layer.
 *
 * The variant is written from the kernel's own text: its body is copied token by token with
 * three kinds of token renamed (%ctaid.x, %nctaid.x, and each parameter's name, which becomes a
 * register holding the address of the instance's copy of it), and a prologue that finds the
 * block's instance goes before the body's first instruction. The parse (driver/ptx.h) decides
 * what is refused; the text keeps everything else exactly as the compiler wrote it. */
#include "rewrite/variant.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "driver/ptx.h"

/* ------------------------------------------------------------------ a growing text */

struct out {
	char *s;
	size_t len, cap;
	bool failed;
};

static void put_n(struct out *o, const char *p, size_t n)
{
	if (o->failed)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 4096;
		char *s;

		while (cap < o->len + n + 1)
			cap *= 2;
		s = realloc(o->s, cap);
		if (!s) {
			o->failed = true;
			return;
		}
		o->s = s;
		o->cap = cap;
	}
	memcpy(o->s + o->len, p, n);
	o->len += n;
	o->s[o->len] = 0;
}

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		o->failed = true;
	else
		put_n(o, buf, (size_t)n);
}

/* ------------------------------------------------------------------ what is refused */

static int refuse(char *why, size_t whylen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
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

static bool names_module_var(const struct ptx_module *m, const struct ptx_operand *o, uint32_t *index)
{
	if ((o->kind == PTX_OP_SYM || o->kind == PTX_OP_ADDR) && o->scope == PTX_SCOPE_GLOBAL && o->index != PTX_NONE &&
	    o->index < m->nvars) {
		*index = o->index;
		return true;
	}
	return false;
}

/* What the body does that a variant cannot keep; marks the module's .shared variables it names
 * (their declarations go into the variant's module). */
static int screen(const struct ptx_module *m, const struct ptx_func *f, bool *shared_used, char *why, size_t whylen)
{
	for (uint32_t i = 0; i < f->ninsns; i++) {
		const struct ptx_insn *in = &f->insns[i];

		if (!strcmp(in->opcode, "call"))
			return refuse(why, whylen, "calls a function (line %u)", in->line);
		for (uint32_t k = 0; k < in->nops; k++) {
			const struct ptx_operand *o = &in->ops[k];
			uint32_t v;

			if (o->kind == PTX_OP_VEC || o->kind == PTX_OP_LIST) {
				for (uint32_t e = 0; e < o->nelem; e++)
					if (names_module_var(m, ptx_elem(m, o, e), &v) && m->vars[v].space != PTX_SPACE_SHARED)
						return refuse(why, whylen, "uses module variable %s (line %u)",
							      m->vars[v].name, in->line);
				continue;
			}
			if (!names_module_var(m, o, &v))
				continue;
			if (m->vars[v].space != PTX_SPACE_SHARED)
				return refuse(why, whylen, "uses module variable %s (line %u)", m->vars[v].name, in->line);
			shared_used[v] = true;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ the text */

static bool is_tok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
	       c == '%' || c == '.';
}

/* The parameter whose name is tok[0..n), or -1. */
static int param_named(const struct ptx_func *f, const char *tok, size_t n)
{
	for (uint32_t i = 0; i < f->nparams; i++)
		if (strlen(f->params[i].name) == n && !memcmp(f->params[i].name, tok, n))
			return (int)i;
	return -1;
}

/* Copy body[0..n) into o with the renames; -CF_ENOSYS for a token the variant cannot rename. */
static int copy_renamed(struct out *o, const struct ptx_func *f, const char *body, size_t n, char *why, size_t whylen)
{
	size_t i = 0;

	while (i < n) {
		size_t j = i;
		int p;

		if (body[i] == '/' && i + 1 < n && body[i + 1] == '/') { /* a comment, to the line's end */
			while (j < n && body[j] != '\n')
				j++;
			put_n(o, body + i, j - i);
			i = j;
			continue;
		}
		if (body[i] == '/' && i + 1 < n && body[i + 1] == '*') {
			for (j = i + 2; j + 1 < n && !(body[j] == '*' && body[j + 1] == '/'); j++)
				;
			j = j + 2 <= n ? j + 2 : n;
			put_n(o, body + i, j - i);
			i = j;
			continue;
		}
		if (!is_tok(body[i])) {
			put_n(o, body + i, 1);
			i++;
			continue;
		}
		while (j < n && is_tok(body[j]))
			j++;
		if (j - i == 8 && !memcmp(body + i, "%ctaid.x", 8))
			put(o, "%%cf_ctaid");
		else if (j - i == 9 && !memcmp(body + i, "%nctaid.x", 9))
			put(o, "%%cf_nctaid");
		else if ((j - i == 6 && !memcmp(body + i, "%ctaid", 6)) || (j - i == 7 && !memcmp(body + i, "%nctaid", 7)))
			return refuse(why, whylen, "reads %.*s as a vector", (int)(j - i), body + i);
		else if ((p = param_named(f, body + i, j - i)) >= 0)
			put(o, "%%cf_a%d", p);
		else
			put_n(o, body + i, j - i);
		i = j;
	}
	return 0;
}

/* Where the prologue goes: after the declarations that open the body (its first line that is
 * not blank and does not start with '.'), as an offset into body. */
static size_t first_statement(const char *body, size_t n)
{
	size_t i = 1; /* past '{' */

	while (i < n) {
		size_t line = i, k;

		while (i < n && body[i] != '\n')
			i++;
		for (k = line; k < i && (body[k] == ' ' || body[k] == '\t' || body[k] == '\r'); k++)
			;
		if (k < i && body[k] != '.' && !(body[k] == '/' && k + 1 < i && body[k + 1] == '/'))
			return line;
		if (i < n)
			i++;
	}
	return n;
}

/* Find the block's instance j and set %cf_ctaid, %cf_nctaid and %cf_a<i> (variant.h). */
static void prologue(struct out *o, const struct ptx_func *f)
{
	put(o, "\t.reg .u32 %%cf_ctaid, %%cf_nctaid, %%cf_k, %%cf_x, %%cf_j, %%cf_t, %%cf_f, %%cf_g, %%cf_s;\n");
	put(o, "\t.reg .u64 %%cf_b, %%cf_o;\n\t.reg .pred %%cf_p;\n");
	if (f->nparams)
		put(o, "\t.reg .u64 %%cf_a<%u>;\n", f->nparams);
	put(o, "\tmov.u64 %%cf_b, cf_tab;\n");
	put(o, "\tld.param.u32 %%cf_k, [%%cf_b];\n");
	put(o, "\tmov.u32 %%cf_x, %%ctaid.x;\n");
	put(o, "\tmov.u32 %%cf_j, 0;\n");
	put(o, "$cf_scan:\n");
	put(o, "\tadd.u32 %%cf_t, %%cf_j, 1;\n");
	put(o, "\tsetp.ge.u32 %%cf_p, %%cf_t, %%cf_k;\n");
	put(o, "\t@%%cf_p bra.uni $cf_found;\n");
	put(o, "\tmul.wide.u32 %%cf_o, %%cf_t, 4;\n");
	put(o, "\tadd.u64 %%cf_o, %%cf_o, %%cf_b;\n");
	put(o, "\tld.param.u32 %%cf_f, [%%cf_o+8];\n");
	put(o, "\tsetp.lt.u32 %%cf_p, %%cf_x, %%cf_f;\n");
	put(o, "\t@%%cf_p bra.uni $cf_found;\n");
	put(o, "\tmov.u32 %%cf_j, %%cf_t;\n");
	put(o, "\tbra.uni $cf_scan;\n");
	put(o, "$cf_found:\n");
	put(o, "\tmul.wide.u32 %%cf_o, %%cf_j, 4;\n");
	put(o, "\tadd.u64 %%cf_o, %%cf_o, %%cf_b;\n");
	put(o, "\tld.param.u32 %%cf_f, [%%cf_o+8];\n");
	put(o, "\tld.param.u32 %%cf_g, [%%cf_o+12];\n");
	put(o, "\tsub.u32 %%cf_ctaid, %%cf_x, %%cf_f;\n");
	put(o, "\tsub.u32 %%cf_nctaid, %%cf_g, %%cf_f;\n");
	put(o, "\tld.param.u32 %%cf_s, [%%cf_b+4];\n");
	put(o, "\tmul.wide.u32 %%cf_o, %%cf_j, %%cf_s;\n");
	put(o, "\tadd.u64 %%cf_o, %%cf_o, %%cf_b;\n");
	for (uint32_t i = 0; i < f->nparams; i++)
		put(o, "\tadd.u64 %%cf_a%u, %%cf_o, %llu;\n", i,
		    (unsigned long long)(RW_VARIANT_HEADER + f->params[i].offset));
}

static void module_header(struct out *o, const struct ptx_module *m, const bool *shared_used)
{
	put(o, ".version %u.%u\n.target sm_%u\n.address_size %u\n\n", m->version_major, m->version_minor, m->sm,
	    m->address_size ? m->address_size : 64);
	for (uint32_t v = 0; v < m->nvars; v++) {
		const struct ptx_var *x = &m->vars[v];

		if (!shared_used[v])
			continue;
		if (x->is_extern || !x->size)
			put(o, ".extern .shared .align %u .b8 %s[];\n", x->align ? x->align : 1, x->name);
		else
			put(o, ".shared .align %u .b8 %s[%llu];\n", x->align ? x->align : 1, x->name,
			    (unsigned long long)x->size);
	}
}

/* The entry's directives between its parameter list and its body (.maxntid, .reqntid, ...):
 * the text from the list's closing parenthesis to the body's '{'. */
static void directives(struct out *o, const struct ptx_module *m, const struct ptx_func *f)
{
	const char *body = m->text + f->body_off, *p = body;

	while (p > f->text && *p != ')')
		p--;
	if (*p == ')')
		put_n(o, p + 1, (size_t)(body - p - 1));
	else
		put(o, "\n");
}

uint32_t rw_variant_capacity(uint64_t param_bytes)
{
	uint64_t stride = (param_bytes + 15) & ~(uint64_t)15;
	uint64_t k;

	if (!stride)
		return RW_MULTI_MAX;
	k = (RW_MULTI_TABLE_BYTES - RW_VARIANT_HEADER) / stride;
	return k > RW_MULTI_MAX ? RW_MULTI_MAX : (uint32_t)k;
}

int rw_variant_ptx(const struct ptx_module *m, const char *entry, char **text, size_t *len, char *why,
		   size_t whylen)
{
	const struct ptx_func *f = m ? ptx_find_func(m, entry) : NULL;
	struct out o = { 0 };
	bool *shared_used;
	const char *body;
	size_t body_len, at;
	int rc;

	*text = NULL;
	*len = 0;
	if (!f || !f->is_entry)
		return -CF_ENOENT;
	if (f->is_decl || !f->body_off)
		return refuse(why, whylen, "%s is declared only", entry);
	if (rw_variant_capacity(f->param_bytes) < 2)
		return refuse(why, whylen, "its %llu parameter bytes leave no room for two instances",
			      (unsigned long long)f->param_bytes);
	shared_used = calloc(m->nvars ? m->nvars : 1, sizeof(*shared_used));
	if (!shared_used)
		return -CF_ENOMEM;
	rc = screen(m, f, shared_used, why, whylen);
	if (rc == 0) {
		body = m->text + f->body_off;
		body_len = f->text_len - (size_t)(body - f->text);
		at = first_statement(body, body_len);
		module_header(&o, m, shared_used);
		put(&o, "\n.visible .entry %s%s(\n\t.param .align 16 .b8 cf_tab[%u]\n)", entry, RW_VARIANT_SUFFIX,
		    RW_MULTI_TABLE_BYTES);
		directives(&o, m, f);
		rc = copy_renamed(&o, f, body, at, why, whylen);
		if (rc == 0) {
			prologue(&o, f);
			rc = copy_renamed(&o, f, body + at, body_len - at, why, whylen);
		}
		/* the kernel itself beside it, as it was */
		put(&o, "\n\n%s", f->is_visible && strncmp(f->text, ".visible", 8) ? ".visible " : "");
		put_n(&o, f->text, f->text_len);
		put(&o, "\n");
	}
	free(shared_used);
	if (rc == 0 && o.failed)
		rc = -CF_ENOMEM;
	if (rc != 0) {
		free(o.s);
		return rc;
	}
	*text = o.s;
	*len = o.len;
	return 0;
}

int rw_variant_table(uint32_t k, const uint32_t *grid_x, const void *const *params, uint32_t param_bytes,
		     void *table, uint32_t cap, uint32_t *grid_x_total)
{
	uint32_t stride = (param_bytes + 15) & ~15u, first = 0;
	unsigned char *t = table;

	if (k < 1 || k > RW_MULTI_MAX || cap < RW_MULTI_TABLE_BYTES)
		return -CF_EINVAL;
	if (k > rw_variant_capacity(param_bytes))
		return -CF_ERANGE;
	memset(t, 0, RW_VARIANT_HEADER + (size_t)k * stride);
	memcpy(t, &k, 4);
	memcpy(t + 4, &stride, 4);
	for (uint32_t j = 0; j < k; j++) {
		if (!grid_x[j] || grid_x[j] > 0x7fffffffu - first)
			return -CF_EINVAL;
		memcpy(t + 8 + 4 * j, &first, 4);
		first += grid_x[j];
		if (param_bytes)
			memcpy(t + RW_VARIANT_HEADER + (size_t)j * stride, params[j], param_bytes);
	}
	memcpy(t + 8 + 4 * k, &first, 4);
	*grid_x_total = first;
	return 0;
}
