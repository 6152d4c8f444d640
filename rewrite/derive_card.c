/* derive_card.c - a kernel card derived from PTX (see derive_card.h). FIRST INCREMENT: the
 * refusal screen only. Every construct the contract refuses is found and named; a kernel that
 * passes the screen is still refused ("address analysis not implemented yet"), so the function
 * is conservative by construction until the polynomial interpretation lands. rewrite layer.
 *
 * Names are compared here rather than through ptx_find_func / ptx_insn_has_mod so this file
 * links before the parser (branch ptxparse) is merged; switch to those once it is. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/errors.h"
#include "rewrite/derive_card.h"

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

/* Opcodes whose effects no card can say: calls (device functions, device-side launch and grid
 * sync are all calls in PTX), textures and surfaces. */
static const char *refused_opcode(const char *op)
{
	static const char *const calls[] = { "call", NULL };
	static const char *const images[] = { "tex", "tld4", "txq", "suld", "sust", "sured", "suq",
					      NULL };

	for (unsigned i = 0; calls[i]; i++)
		if (strcmp(op, calls[i]) == 0)
			return "calls a function (device function, device-side launch or grid sync)";
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

static int screen_body(const struct ptx_module *m, const struct ptx_func *f, char *why,
		       size_t whylen)
{
	for (uint32_t i = 0; i < f->ninsns; i++) {
		const struct ptx_insn *in = &f->insns[i];
		const char *r = refused_opcode(in->opcode);

		if (r)
			return refuse(why, whylen, "line %u: %s", in->line, r);
		for (unsigned k = 0; k < in->nops; k++)
			if (names_module_global(m, &in->ops[k]))
				return refuse(why, whylen, "line %u: uses module variable %s",
					      in->line, m->vars[in->ops[k].index].name);
	}
	return 0;
}

/* A parameter wider than a pointer and not itself a pointer is a struct passed by value: its
 * pointer fields (if any) are addresses no card can name. */
static int screen_params(const struct ptx_func *f, char *why, size_t whylen)
{
	for (uint32_t i = 0; i < f->nparams; i++)
		if (!f->params[i].is_ptr && f->params[i].size > 8)
			return refuse(why, whylen, "indirect: p%u is a %llu-byte struct that may hold "
				      "pointers", i, (unsigned long long)f->params[i].size);
	return 0;
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
		rc = screen_params(f, why, whylen);
	if (rc == 0)
		rc = refuse(why, whylen, "address analysis not implemented yet");
	return rc;
}
