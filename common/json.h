/* json.h - the one JSON writer of cufold's outputs (report, trace header, replay's and deferred
 * errors' parts): objects, arrays, keys, numbers and strings with ONE escaper, written to a
 * FILE or to a fixed buffer. common layer (a leaf: libc only).
 *
 * The writer places commas itself: a value after a key, or an element of an array, is written
 * as such; callers never write separators. Layout is the caller's choice: cf_json_nl makes the
 * next element (or the closing bracket) start on a new line with the given indent; otherwise
 * elements follow ", " on the same line. Errors (a full buffer, a failed write) are sticky:
 * cf_json_failed says so at the end, and a FILE keeps its own error flag. Nesting deeper than
 * CF_JSON_DEPTH is a caller's bug: such values are still written, with commas possibly wrong,
 * and the writer reports failure. */
#ifndef CF_JSON_H
#define CF_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CF_JSON_DEPTH 16

struct cf_json {
	FILE *f;                     /* destination, or NULL: buf */
	char *buf;                   /* buffer destination (NUL-terminated as far as it goes) */
	size_t cap, len;             /* its size and bytes used */
	unsigned depth;              /* open objects and arrays */
	bool has[CF_JSON_DEPTH + 1]; /* an element was written at this depth */
	bool after_key;              /* a key was written: its value comes next, no comma */
	int nl;                      /* indent of a pending new line, or -1 */
	bool failed;                 /* a write failed, the buffer filled, or nesting overflowed */
};

void cf_json_init_file(struct cf_json *j, FILE *f);
/* Into buf (cap bytes, cap > 0): text that does not fit is dropped, and the writer fails. */
void cf_json_init_buf(struct cf_json *j, char *buf, size_t cap);
bool cf_json_failed(const struct cf_json *j);

void cf_json_obj_begin(struct cf_json *j);
void cf_json_obj_end(struct cf_json *j);
void cf_json_arr_begin(struct cf_json *j);
void cf_json_arr_end(struct cf_json *j);
/* The next element (or closing bracket) on a new line, indented by indent spaces. */
void cf_json_nl(struct cf_json *j, int indent);

/* A member's key (escaped); its value is the next thing written. */
void cf_json_key(struct cf_json *j, const char *key);
/* Values. A NULL string is null; a double that is not finite is null; decimals is the number
 * of digits after the point. */
void cf_json_str(struct cf_json *j, const char *s);
void cf_json_u64(struct cf_json *j, uint64_t v);
void cf_json_i64(struct cf_json *j, int64_t v);
void cf_json_f64(struct cf_json *j, double v, int decimals);
void cf_json_bool(struct cf_json *j, bool v);
void cf_json_null(struct cf_json *j);
/* A value that is already JSON text (a number formatted elsewhere, a fragment built by the
 * same writer into a buffer); written as is. */
void cf_json_raw(struct cf_json *j, const char *text, size_t len);

/* Shorthands for a member: key and value. */
void cf_json_kstr(struct cf_json *j, const char *key, const char *s);
void cf_json_ku64(struct cf_json *j, const char *key, uint64_t v);
void cf_json_kbool(struct cf_json *j, const char *key, bool v);

/* THE escaper: s (NULL is "") as the inside of a JSON string, without quotes, into out (cap
 * bytes, NUL-terminated, cut at a whole escape): '"' and '\\' backslashed, bytes below 0x20 and
 * from 0x7f up as \u00XX (names are ASCII; anything else is shown byte by byte, never raw).
 * Returns the length the whole text would need (as snprintf). */
size_t cf_json_escape(char *out, size_t cap, const char *s);

#endif
