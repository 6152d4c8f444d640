/* json.c - the JSON writer (see json.h). common layer. */
#include "common/json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

size_t cf_json_escape(char *out, size_t cap, const char *s)
{
	size_t n = 0;
	bool full = cap == 0;

	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		char e[8];
		size_t w;

		if (c == '"' || c == '\\')
			w = (size_t)snprintf(e, sizeof(e), "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			w = (size_t)snprintf(e, sizeof(e), "\\u%04x", c);
		else
			w = (size_t)snprintf(e, sizeof(e), "%c", c);
		if (!full && n + w < cap) {
			memcpy(out + n, e, w);
		} else if (!full) {
			out[n] = 0; /* cut at a whole escape */
			full = true;
		}
		n += w;
	}
	if (!full)
		out[n] = 0;
	return n;
}

static void put(struct cf_json *j, const char *text, size_t n)
{
	if (j->f) {
		if (fwrite(text, 1, n, j->f) != n)
			j->failed = true;
		return;
	}
	if (j->len + n >= j->cap) {
		j->failed = true;
		n = j->len + 1 < j->cap ? j->cap - j->len - 1 : 0;
	}
	memcpy(j->buf + j->len, text, n);
	j->len += n;
	j->buf[j->len] = 0;
}

static void puts_(struct cf_json *j, const char *text)
{
	put(j, text, strlen(text));
}

/* A pending new line and indent. */
static void newline(struct cf_json *j)
{
	static const char spaces[] = "                ";

	if (j->nl < 0)
		return;
	put(j, "\n", 1);
	for (int i = j->nl; i > 0; i -= 16)
		put(j, spaces, (size_t)(i < 16 ? i : 16));
	j->nl = -1;
}

/* Before any element: the comma and spacing its place asks for. */
static void element(struct cf_json *j)
{
	bool *has = &j->has[j->depth <= CF_JSON_DEPTH ? j->depth : CF_JSON_DEPTH];

	if (j->after_key) {
		j->after_key = false;
		return;
	}
	if (*has)
		put(j, j->nl >= 0 ? "," : ", ", j->nl >= 0 ? 1 : 2);
	newline(j);
	*has = true;
}

static void open_(struct cf_json *j, char c)
{
	element(j);
	put(j, &c, 1);
	if (j->depth >= CF_JSON_DEPTH)
		j->failed = true;
	else
		j->has[j->depth + 1] = false;
	j->depth++;
}

static void close_(struct cf_json *j, char c)
{
	newline(j);
	put(j, &c, 1);
	if (j->depth)
		j->depth--;
}

void cf_json_init_file(struct cf_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->nl = -1;
}

void cf_json_init_buf(struct cf_json *j, char *buf, size_t cap)
{
	memset(j, 0, sizeof(*j));
	j->buf = buf;
	j->cap = cap;
	j->nl = -1;
	if (cap)
		buf[0] = 0;
	else
		j->failed = true;
}

bool cf_json_failed(const struct cf_json *j)
{
	return j->failed || (j->f && ferror(j->f));
}

void cf_json_obj_begin(struct cf_json *j)
{
	open_(j, '{');
}

void cf_json_obj_end(struct cf_json *j)
{
	close_(j, '}');
}

void cf_json_arr_begin(struct cf_json *j)
{
	open_(j, '[');
}

void cf_json_arr_end(struct cf_json *j)
{
	close_(j, ']');
}

void cf_json_nl(struct cf_json *j, int indent)
{
	j->nl = indent < 0 ? 0 : indent;
}

/* A quoted, escaped string. */
static void quoted(struct cf_json *j, const char *s)
{
	char stack[256];
	size_t n = cf_json_escape(stack, sizeof(stack), s);

	put(j, "\"", 1);
	if (n < sizeof(stack)) {
		put(j, stack, n);
	} else {
		/* long: escape piece by piece (an escape never spans two bytes of s) */
		char one[2] = { 0, 0 }, e[8];

		for (; *s; s++) {
			one[0] = *s;
			put(j, e, cf_json_escape(e, sizeof(e), one));
		}
	}
	put(j, "\"", 1);
}

void cf_json_key(struct cf_json *j, const char *key)
{
	element(j);
	quoted(j, key);
	put(j, ": ", 2);
	j->after_key = true;
}

void cf_json_str(struct cf_json *j, const char *s)
{
	element(j);
	if (s)
		quoted(j, s);
	else
		puts_(j, "null");
}

void cf_json_u64(struct cf_json *j, uint64_t v)
{
	char t[24];

	element(j);
	put(j, t, (size_t)snprintf(t, sizeof(t), "%" PRIu64, v));
}

void cf_json_i64(struct cf_json *j, int64_t v)
{
	char t[24];

	element(j);
	put(j, t, (size_t)snprintf(t, sizeof(t), "%" PRId64, v));
}

void cf_json_f64(struct cf_json *j, double v, int decimals)
{
	char t[64];
	int n;

	element(j);
	if (!isfinite(v)) {
		puts_(j, "null");
		return;
	}
	n = snprintf(t, sizeof(t), "%.*f", decimals < 0 ? 0 : decimals > 17 ? 17 : decimals, v);
	if (n < 0 || (size_t)n >= sizeof(t)) /* beyond 1e45: JSON takes the exponent form */
		n = snprintf(t, sizeof(t), "%.17g", v);
	put(j, t, (size_t)n);
}

void cf_json_bool(struct cf_json *j, bool v)
{
	element(j);
	puts_(j, v ? "true" : "false");
}

void cf_json_null(struct cf_json *j)
{
	element(j);
	puts_(j, "null");
}

void cf_json_raw(struct cf_json *j, const char *text, size_t len)
{
	element(j);
	put(j, text, len);
}

void cf_json_kstr(struct cf_json *j, const char *key, const char *s)
{
	cf_json_key(j, key);
	cf_json_str(j, s);
}

void cf_json_ku64(struct cf_json *j, const char *key, uint64_t v)
{
	cf_json_key(j, key);
	cf_json_u64(j, v);
}

void cf_json_kbool(struct cf_json *j, const char *key, bool v)
{
	cf_json_key(j, key);
	cf_json_bool(j, v);
}
