/* ptx.c - the software device's PTX reader: entry names and the byte layout of their
 * parameters, as cuFuncGetParamInfo reports them. tests/simcuda layer.
 *
 * Only what a launch needs is read: `.version`, `.target`, and every top-level `.entry` with
 * its `.param` list. Bodies are skipped by brace matching (they hold `.param` declarations of
 * their own, for calls). Each parameter's offset is the running offset rounded up to its
 * alignment: `.align N` when given before the type, else the size of its type. An `.align`
 * after `.ptr` describes the pointee and does not change the layout. */
#include "sim_module_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PTX_MAX_PARAM_BYTES (1u << 20) /* far above the driver's 32764: a garbage guard */

struct ptx_reader {
	char *buf;                   /* the text with comments and strings blanked */
	const char *p;               /* read position in buf */
	struct sim_ptx *out;         /* result being built */
	unsigned int cap;            /* allocated slots of out->entries */
	char *err;                   /* caller's message buffer, or NULL */
	size_t errlen;               /* its size */
	bool failed;                 /* a message has been written */
};

static int line_of(const struct ptx_reader *r, const char *at)
{
	int line = 1;

	for (const char *q = r->buf; q < at && *q; q++)
		line += *q == '\n';
	return line;
}

static CUresult fail_at(struct ptx_reader *r, const char *at, const char *fmt, const char *arg)
{
	char msg[160];

	if (!r->failed && r->err && r->errlen) {
		snprintf(msg, sizeof(msg), fmt, arg ? arg : "");
		snprintf(r->err, r->errlen, "line %d: %s", line_of(r, at), msg);
	}
	r->failed = true;
	return CUDA_ERROR_INVALID_PTX;
}

/* Copy text, blanking comments and string literals (keeping newlines for line numbers), so
 * later passes see only directives, names and punctuation. */
static CUresult blank_comments(struct ptx_reader *r, const char *text)
{
	size_t n = strlen(text);
	char *d;

	r->buf = malloc(n + 1);
	if (!r->buf)
		return CUDA_ERROR_OUT_OF_MEMORY;
	d = r->buf;
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)text[i];

		if (c == '/' && text[i + 1] == '/') {
			while (i < n && text[i] != '\n')
				d[i++] = ' ';
		} else if (c == '/' && text[i + 1] == '*') {
			const char *end = strstr(text + i + 2, "*/");

			if (!end) {
				memcpy(d + i, text + i, n - i + 1);
				return fail_at(r, d + i, "unterminated /* comment%s", NULL);
			}
			for (size_t stop = (size_t)(end - text) + 2; i < stop; i++)
				d[i] = text[i] == '\n' ? '\n' : ' ';
		} else if (c == '"') {
			d[i++] = ' ';
			while (i < n && text[i] != '"' && text[i] != '\n') {
				if (text[i] == '\\' && i + 1 < n && text[i + 1] != '\n')
					d[i++] = ' ';
				d[i++] = ' ';
			}
			if (i >= n || text[i] != '"') {
				d[i] = 0;
				return fail_at(r, d + i, "unterminated string%s", NULL);
			}
			d[i++] = ' ';
		} else if (c < 0x20 && c != '\n' && c != '\t' && c != '\r' && c != '\f' && c != '\v') {
			d[i] = 0;
			return fail_at(r, d + i, "control byte in text: not PTX%s", NULL);
		} else {
			d[i] = text[i];
			i++;
		}
	}
	d[n] = 0;
	return CUDA_SUCCESS;
}

static void skip_ws(struct ptx_reader *r)
{
	while (*r->p && isspace((unsigned char)*r->p))
		r->p++;
}

static bool is_ident_start(char c)
{
	return isalpha((unsigned char)c) || c == '_' || c == '$' || c == '%';
}

static bool is_ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$';
}

/* Read a word made of identifier characters at r->p into w (truncated to n-1 bytes). */
static size_t read_word(struct ptx_reader *r, char *w, size_t n)
{
	size_t len = 0;

	while (is_ident_char(*r->p) || (len == 0 && is_ident_start(*r->p))) {
		if (len + 1 < n)
			w[len] = *r->p;
		len++;
		r->p++;
	}
	w[len < n ? len : n - 1] = 0;
	return len;
}

/* A directive at r->p (which is '.'): its name including the dot, in w. */
static size_t read_directive(struct ptx_reader *r, char *w, size_t n)
{
	size_t len;

	r->p++;
	w[0] = '.';
	len = read_word(r, w + 1, n - 1);
	return len + 1;
}

static bool read_uint(struct ptx_reader *r, unsigned long *v)
{
	char *end;

	skip_ws(r);
	if (!isdigit((unsigned char)*r->p))
		return false;
	*v = strtoul(r->p, &end, 10);
	r->p = end;
	return true;
}

static size_t type_size(const char *t)
{
	static const struct {
		const char *name;    /* PTX fundamental type */
		size_t size;         /* its bytes */
	} types[] = {
		{ ".b8", 1 }, { ".u8", 1 }, { ".s8", 1 },
		{ ".b16", 2 }, { ".u16", 2 }, { ".s16", 2 }, { ".f16", 2 }, { ".bf16", 2 },
		{ ".b32", 4 }, { ".u32", 4 }, { ".s32", 4 }, { ".f32", 4 },
		{ ".f16x2", 4 }, { ".bf16x2", 4 },
		{ ".b64", 8 }, { ".u64", 8 }, { ".s64", 8 }, { ".f64", 8 },
		{ ".b128", 16 },
		{ ".texref", 8 }, { ".samplerref", 8 }, { ".surfref", 8 },
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(t, types[i].name))
			return types[i].size;
	return 0;
}

static bool is_pointee_space(const char *t)
{
	return !strcmp(t, ".global") || !strcmp(t, ".const") || !strcmp(t, ".local") ||
	       !strcmp(t, ".shared");
}

/* One `.param ... name[N]` of an entry's list; r->p is at ".param". */
static CUresult parse_param(struct ptx_reader *r, struct sim_param_info *pi)
{
	const char *start = r->p;
	char w[64];
	size_t elem = 0, count = 1;
	unsigned long align = 0, v;
	bool ptr = false, named = false;

	if (*r->p != '.')
		return fail_at(r, start, "expected .param in an entry's parameter list%s", NULL);
	read_directive(r, w, sizeof(w));
	if (strcmp(w, ".param"))
		return fail_at(r, start, "expected .param in an entry's parameter list, got %s", w);
	for (;;) {
		skip_ws(r);
		if (*r->p == ',' || *r->p == ')' || !*r->p)
			break;
		if (named)
			return fail_at(r, r->p, "unexpected text after a parameter name%s", NULL);
		if (*r->p == '.') {
			const char *at = r->p;

			read_directive(r, w, sizeof(w));
			if (!strcmp(w, ".align")) {
				if (!read_uint(r, &v) || v == 0 || v > 4096 || (v & (v - 1)))
					return fail_at(r, at, "bad .align value%s", NULL);
				if (!ptr)
					align = v;
			} else if (!strcmp(w, ".ptr")) {
				ptr = true;
			} else if (is_pointee_space(w)) {
				if (!ptr)
					return fail_at(r, at, "state space %s without .ptr", w);
			} else if (type_size(w)) {
				if (elem)
					return fail_at(r, at, "second type %s in one parameter", w);
				elem = type_size(w);
			} else {
				return fail_at(r, at, "unknown parameter attribute %s", w);
			}
		} else if (is_ident_start(*r->p)) {
			read_word(r, w, sizeof(w));
			named = true;
			for (skip_ws(r); *r->p == '['; skip_ws(r)) {
				r->p++;
				if (!read_uint(r, &v) || v == 0)
					return fail_at(r, r->p, "bad array size of parameter %s", w);
				skip_ws(r);
				if (*r->p != ']')
					return fail_at(r, r->p, "missing ] after array size of %s", w);
				r->p++;
				if (v > PTX_MAX_PARAM_BYTES || count * v > PTX_MAX_PARAM_BYTES)
					return fail_at(r, r->p, "parameter %s is too large", w);
				count *= v;
			}
		} else {
			return fail_at(r, r->p, "unexpected character in a parameter list%s", NULL);
		}
	}
	if (!elem)
		return fail_at(r, start, "parameter without a type%s", NULL);
	if (!named)
		return fail_at(r, start, "parameter without a name%s", NULL);
	pi->size = elem * count;
	pi->align = align ? align : elem;
	return CUDA_SUCCESS;
}

static CUresult add_entry(struct ptx_reader *r, const char *at, const char *name,
			  struct sim_param_info *params, unsigned int nparams)
{
	struct sim_ptx *x = r->out;
	struct sim_ptx_entry *e;
	size_t off = 0;

	for (unsigned int i = 0; i < x->nentries; i++)
		if (!strcmp(x->entries[i].name, name))
			return fail_at(r, at, "entry %s defined twice", name);
	for (unsigned int i = 0; i < nparams; i++) {
		off = (off + params[i].align - 1) & ~(params[i].align - 1);
		params[i].offset = off;
		off += params[i].size;
		if (off > PTX_MAX_PARAM_BYTES)
			return fail_at(r, at, "parameters of %s are too large", name);
	}
	if (x->nentries == r->cap) {
		unsigned int cap = r->cap ? r->cap * 2 : 16;
		struct sim_ptx_entry *n = realloc(x->entries, cap * sizeof(*n));

		if (!n)
			return CUDA_ERROR_OUT_OF_MEMORY;
		x->entries = n;
		r->cap = cap;
	}
	e = &x->entries[x->nentries];
	e->name = strdup(name);
	if (!e->name)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->nparams = nparams;
	e->params = params;
	e->param_bytes = off;
	x->nentries++;
	return CUDA_SUCCESS;
}

/* `.entry name (params) performance-directives { body }`; r->p is just past ".entry". */
static CUresult parse_entry(struct ptx_reader *r)
{
	const char *at = r->p;
	/* Mangled C++ names run to thousands of characters (cuBLAS's, PyTorch's): one PTX line. */
	char name[8192];
	struct sim_param_info *params = NULL;
	unsigned int n = 0, cap = 0;
	CUresult rc;

	skip_ws(r);
	if (!is_ident_start(*r->p))
		return fail_at(r, at, ".entry without a name%s", NULL);
	if (read_word(r, name, sizeof(name)) >= sizeof(name))
		return fail_at(r, at, "entry name too long%s", NULL);
	skip_ws(r);
	if (*r->p == '(') {
		r->p++;
		skip_ws(r);
		while (*r->p != ')') {
			if (n == cap) {
				struct sim_param_info *np;

				cap = cap ? cap * 2 : 8;
				np = realloc(params, cap * sizeof(*np));
				if (!np) {
					rc = CUDA_ERROR_OUT_OF_MEMORY;
					goto out_free;
				}
				params = np;
			}
			rc = parse_param(r, &params[n]);
			if (rc != CUDA_SUCCESS)
				goto out_free;
			n++;
			skip_ws(r);
			if (*r->p == ',') {
				r->p++;
				skip_ws(r);
				if (*r->p == ')') {
					rc = fail_at(r, r->p, "trailing comma in the parameters of %s", name);
					goto out_free;
				}
			} else if (*r->p != ')') {
				rc = fail_at(r, r->p, "unterminated parameter list of %s", name);
				goto out_free;
			}
		}
		r->p++;
	}
	/* Performance directives (.maxntid 256, 1, 1 ...) may sit between the list and the body.
	 * A declaration without a body (ending in ';') defines nothing. */
	at = r->p + strcspn(r->p, "{;()");
	if (*at != '{' && *at != ';') {
		rc = fail_at(r, r->p, "entry %s has no body", name);
		goto out_free;
	}
	if (*at == ';') {
		rc = CUDA_SUCCESS;
		goto out_free;
	}
	rc = add_entry(r, at, name, params, n);
	if (rc == CUDA_SUCCESS)
		return rc;
out_free:
	free(params);
	return rc;
}

CUresult sim_ptx_parse(const char *text, struct sim_ptx *out, char *err, size_t errlen)
{
	struct ptx_reader r = { .out = out, .err = err, .errlen = errlen };
	const char *open_brace = NULL;
	unsigned long major, minor;
	int depth = 0;
	bool have_version = false;
	char w[64];
	CUresult rc;

	memset(out, 0, sizeof(*out));
	if (err && errlen)
		err[0] = 0;
	rc = blank_comments(&r, text);
	if (rc != CUDA_SUCCESS)
		goto out_fail;
	r.p = r.buf;
	for (;;) {
		skip_ws(&r);
		if (!*r.p)
			break;
		if (*r.p == '{') {
			if (depth++ == 0)
				open_brace = r.p;
			r.p++;
		} else if (*r.p == '}') {
			if (--depth < 0) {
				rc = fail_at(&r, r.p, "unbalanced }%s", NULL);
				goto out_fail;
			}
			r.p++;
		} else if (*r.p == '.' && depth == 0) {
			const char *at = r.p;

			read_directive(&r, w, sizeof(w));
			if (!strcmp(w, ".version")) {
				if (!read_uint(&r, &major) || *r.p != '.' || (r.p++, !read_uint(&r, &minor)) ||
				    major > 99 || minor > 9) {
					rc = fail_at(&r, at, "bad .version%s", NULL);
					goto out_fail;
				}
				out->version = (int)(major * 10 + minor);
				have_version = true;
			} else if (!strcmp(w, ".target")) {
				skip_ws(&r);
				if (!strncmp(r.p, "sm_", 3))
					out->target_sm = atoi(r.p + 3);
			} else if (!strcmp(w, ".entry")) {
				if (!have_version) {
					rc = fail_at(&r, at, ".entry before .version%s", NULL);
					goto out_fail;
				}
				rc = parse_entry(&r);
				if (rc != CUDA_SUCCESS)
					goto out_fail;
			}
		} else if (read_word(&r, w, sizeof(w)) == 0) {
			r.p++;
		}
	}
	if (depth != 0) {
		rc = fail_at(&r, open_brace ? open_brace : r.p, "unbalanced {%s", NULL);
		goto out_fail;
	}
	if (!have_version) {
		rc = fail_at(&r, r.buf, "no .version directive: not PTX text%s", NULL);
		goto out_fail;
	}
	/* Kept (comments blanked) for the interpreter, which decodes bodies at first launch. */
	out->text = r.buf;
	return CUDA_SUCCESS;
out_fail:
	if (!r.failed && rc == CUDA_ERROR_OUT_OF_MEMORY && err && errlen)
		snprintf(err, errlen, "out of memory");
	free(r.buf);
	sim_ptx_fini(out);
	return rc;
}

void sim_ptx_fini(struct sim_ptx *p)
{
	for (unsigned int i = 0; i < p->nentries; i++) {
		free(p->entries[i].name);
		free(p->entries[i].params);
	}
	free(p->entries);
	for (unsigned int i = 0; i < p->nglobals; i++) {
		free(p->globals[i].name);
		free(p->globals[i].init);
	}
	free(p->globals);
	free(p->text);
	memset(p, 0, sizeof(*p));
}
