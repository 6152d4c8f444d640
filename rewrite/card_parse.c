/* card_parse.c - the kernel card parser: text lines into struct rw_card (expressions are
 * compiled by card_expr.c). rewrite layer. The format is documented at the top of
 * rewrite/cards.h.
 *
 * A card is collected statement by statement and checked as a whole at `end`, so a span may
 * name a parameter declared below it. The first error in a card rejects it with one warning
 * (file, line of the offending statement, reason); the parser then skips to the card's `end`
 * and carries on with the next card. Stray statements outside any card are reported once per
 * run of them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "common/log.h"
#include "rewrite/cards_int.h"

#define LINE_MAX_ 1024  /* longest line accepted, NUL included */
#define WORDS_MAX 40    /* words on one line */
#define ERR_MAX 192     /* reason text */
#define STRUCT_MAX 32764 /* the largest kernel parameter block the driver accepts */

/* ------------------------------------------------------------------ types */

unsigned rw__type_size(enum rw_type t)
{
	switch (t) {
	case RW_T_I32:
	case RW_T_U32:
	case RW_T_F32:
		return 4;
	case RW_T_I64:
	case RW_T_U64:
	case RW_T_F64:
	case RW_T_PTR:
		return 8;
	case RW_T_STRUCT:
		break;
	}
	return 0;
}

bool rw__type_is_int(enum rw_type t)
{
	return t == RW_T_I32 || t == RW_T_U32 || t == RW_T_I64 || t == RW_T_U64;
}

static const struct {
	const char *name;                   /* as written on a card */
	enum rw_type type;
} type_names[] = {
	{ "i32", RW_T_I32 }, { "u32", RW_T_U32 }, { "i64", RW_T_I64 }, { "u64", RW_T_U64 },
	{ "f32", RW_T_F32 }, { "f64", RW_T_F64 }, { "ptr", RW_T_PTR }, { "struct", RW_T_STRUCT },
};

static int type_parse(const char *s, enum rw_type *out)
{
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
		if (!strcmp(s, type_names[i].name)) {
			*out = type_names[i].type;
			return 0;
		}
	}
	return -CF_EINVAL;
}

/* ------------------------------------------------------------------ the card parser */

/* A statement kept until `end`, when names can be resolved. */
struct pending_span {
	unsigned line;                      /* where it was written */
	char *text;                         /* expression text, malloc'd */
};

struct pending_table {
	unsigned line;                      /* where it was written */
	char param[RW_CARD_NAME_MAX];       /* the struct parameter's name */
	enum { TBL_PLAIN, TBL_CAT, TBL_SPLIT } role; /* table, cat or split */
	struct rw_card_table t;             /* everything but t.param */
};

struct parser {
	struct rw_cards *set;               /* where good cards go */
	const char *file;                   /* for warnings */
	unsigned line;                      /* current line */
	int rejected;                       /* cards (and runs of stray lines) rejected */
	bool nomem;                         /* out of memory: stop */
	bool stray;                         /* in a run of statements outside any card */
	/* the card being collected */
	struct rw_card *card;               /* NULL outside a card */
	bool bad;                           /* already rejected; skipping to `end` */
	struct pending_span spans[RW_CARD_MAX_PARAMS]; /* per parameter */
	struct pending_span count;          /* `count` */
	struct pending_span field_spans[RW_CARD_MAX_FIELDS]; /* per field line */
	char field_params[RW_CARD_MAX_FIELDS][RW_CARD_NAME_MAX]; /* its struct parameter */
	struct pending_table tables[RW_CARD_MAX_TABLES]; /* table/cat/split lines */
	struct pending_span whole_count[RW_CARD_MAX_WHOLE]; /* per whole line: its count */
	struct pending_span whole_stride[RW_CARD_MAX_WHOLE]; /* and its stride */
	char whole_target[RW_CARD_MAX_WHOLE][RW_CARD_NAME_MAX + 12]; /* NAME or NAME@OFF */
	unsigned ntables;                   /* used entries of tables */
	unsigned elementwise_line;          /* line of `elementwise` (0: none) */
};

static void reject(struct parser *p, unsigned line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void reject(struct parser *p, unsigned line, const char *fmt, ...)
{
	char why[ERR_MAX];
	va_list ap;

	char shown[ERR_MAX * 2], file[200];

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	/* the reason quotes the file's words: never its raw bytes (terminal escapes, binary) */
	cf_log_printable(shown, sizeof(shown), why, ERR_MAX);
	cf_log_printable(file, sizeof(file), p->file, 120);
	cf_log_warn("%s:%u: kernel card rejected: %s", file, line, shown);
	p->rejected++;
	p->bad = true;
}

static void pending_clear(struct parser *p)
{
	for (unsigned i = 0; i < RW_CARD_MAX_PARAMS; i++) {
		free(p->spans[i].text);
		p->spans[i].text = NULL;
	}
	free(p->count.text);
	p->count.text = NULL;
	for (unsigned i = 0; i < RW_CARD_MAX_FIELDS; i++) {
		free(p->field_spans[i].text);
		p->field_spans[i].text = NULL;
	}
	for (unsigned i = 0; i < RW_CARD_MAX_WHOLE; i++) {
		free(p->whole_count[i].text);
		free(p->whole_stride[i].text);
		p->whole_count[i].text = p->whole_stride[i].text = NULL;
	}
	p->ntables = 0;
	p->elementwise_line = 0;
}

static void card_drop(struct parser *p)
{
	if (p->card)
		rw__card_free(p->card);
	p->card = NULL;
	p->bad = false;
	pending_clear(p);
}

static char *dup_str(struct parser *p, const char *s)
{
	char *d = strdup(s);

	if (!d)
		p->nomem = true;
	return d;
}

/* Words of a line: each NUL-terminated in place; starts[] keeps where each began in the
 * untouched copy so the rest of a line can be taken verbatim. */
struct words {
	char *w[WORDS_MAX];                 /* the words */
	size_t start[WORDS_MAX];            /* offset of each in the line */
	unsigned n;                         /* how many */
	bool too_many;                      /* more than WORDS_MAX */
};

static void split_words(char *buf, struct words *ws)
{
	size_t i = 0;

	ws->n = 0;
	ws->too_many = false;
	for (;;) {
		while (buf[i] == ' ' || buf[i] == '\t')
			i++;
		if (!buf[i])
			return;
		if (ws->n == WORDS_MAX) {
			ws->too_many = true;
			return;
		}
		ws->w[ws->n] = buf + i;
		ws->start[ws->n] = i;
		ws->n++;
		while (buf[i] && buf[i] != ' ' && buf[i] != '\t')
			i++;
		if (!buf[i])
			return;
		buf[i++] = 0;
	}
}

static bool is_ident(const char *s)
{
	if (!rw__is_ident_start(*s))
		return false;
	for (s++; *s; s++)
		if (!rw__is_ident_char(*s))
			return false;
	return true;
}

/* Names an expression gives another meaning. (`unknown` and `table` are keywords only as a
 * whole span, so parameters may still be called that; "(table)" is then the parameter.) */
static bool is_reserved(const char *s)
{
	static const char *const words[] = { "min", "max" };

	for (unsigned g = 0; g < RW_GRID_VARS; g++)
		if (!strcmp(s, rw__grid_names[g]))
			return true;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(s, words[i]))
			return true;
	return false;
}

static int access_parse(const char *s, uint8_t *out)
{
	if (!strcmp(s, "r"))
		*out = RW_ACC_READ;
	else if (!strcmp(s, "w"))
		*out = RW_ACC_WRITE;
	else if (!strcmp(s, "rw"))
		*out = RW_ACC_READ | RW_ACC_WRITE;
	else if (!strcmp(s, "none"))
		*out = 0;
	else
		return -CF_EINVAL;
	return 0;
}

static void stmt_kernel(struct parser *p, struct words *ws)
{
	struct rw_card *c;

	if (ws->n < 2) {
		reject(p, p->line, "'kernel' needs at least one name pattern");
		p->card = NULL; /* a nameless card: skip its body */
		return;
	}
	if (ws->n - 1 > RW_CARD_MAX_PATTERNS) {
		reject(p, p->line, "more than %d patterns on one 'kernel' line", RW_CARD_MAX_PATTERNS);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		p->nomem = true;
		return;
	}
	c->line = p->line;
	c->count_param = -1;
	c->table_ptr = -1;
	p->card = c;
	c->file = dup_str(p, p->file);
	for (unsigned i = 1; i < ws->n && !p->nomem; i++) {
		if (strlen(ws->w[i]) > 255) {
			reject(p, p->line, "pattern longer than 255 characters");
			return;
		}
		c->patterns[c->npatterns] = dup_str(p, ws->w[i]);
		if (c->patterns[c->npatterns])
			c->npatterns++;
	}
}

/* The access and span of pointer parameter prm, the card's next (words 3 and on of its line).
 * false once rejected. */
static bool param_pointer(struct parser *p, const struct words *ws, const char *line, struct rw_card_param *prm)
{
	bool ok = false;

	if (ws->n < 4 || access_parse(ws->w[3], &prm->access) != 0) {
		reject(p, p->line, "a pointer needs an access: r, w, rw or none");
		goto out;
	}
	if (prm->access == 0) {
		if (ws->n != 4) {
			reject(p, p->line, "a pointer with access none has no span");
			goto out;
		}
	} else if (ws->n < 5) {
		reject(p, p->line, "pointer '%s' needs a span: an expression, unknown or table", prm->name);
		goto out;
	} else if (ws->n == 5 && !strcmp(ws->w[4], "unknown")) {
		prm->span = RW_SPAN_UNKNOWN;
	} else if (ws->n == 5 && !strcmp(ws->w[4], "table")) {
		prm->span = RW_SPAN_TABLE;
	} else {
		/* compiled at `end`, when every parameter it may name is known */
		prm->span = RW_SPAN_EXPR;
		p->spans[p->card->nparams].line = p->line;
		p->spans[p->card->nparams].text = dup_str(p, line + ws->start[4]);
	}
	ok = true;
out:
	return ok;
}

static void stmt_param(struct parser *p, struct words *ws, const char *line)
{
	struct rw_card *c = p->card;
	struct rw_card_param *prm;
	struct rw_card_param *grown;
	enum rw_type type;
	const char *name;

	if (ws->n < 3) {
		reject(p, p->line, "'param' needs a name and a type");
		return;
	}
	name = ws->w[1];
	if (!is_ident(name) || strlen(name) >= RW_CARD_NAME_MAX) {
		reject(p, p->line, "bad parameter name '%s'", name);
		return;
	}
	if (is_reserved(name)) {
		reject(p, p->line, "'%s' is a reserved word, not a parameter name", name);
		return;
	}
	for (unsigned i = 0; i < c->nparams; i++) {
		if (!strcmp(c->params[i].name, name)) {
			reject(p, p->line, "parameter '%s' declared twice", name);
			return;
		}
	}
	if (c->nparams == RW_CARD_MAX_PARAMS) {
		reject(p, p->line, "more than %d parameters", RW_CARD_MAX_PARAMS);
		return;
	}
	if (type_parse(ws->w[2], &type) != 0) {
		reject(p, p->line, "unknown type '%s' (i32 u32 i64 u64 f32 f64 ptr struct)", ws->w[2]);
		return;
	}
	grown = realloc(c->params, (c->nparams + 1) * sizeof(*grown));
	if (!grown) {
		p->nomem = true;
		return;
	}
	c->params = grown;
	prm = &c->params[c->nparams];
	memset(prm, 0, sizeof(*prm));
	snprintf(prm->name, sizeof(prm->name), "%s", name);
	prm->type = (uint8_t)type;
	prm->size = rw__type_size(type);
	prm->span = RW_SPAN_NONE;
	if (type == RW_T_STRUCT) {
		uint64_t size;

		if (ws->n != 4 || rw__parse_number(ws->w[3], &size) != strlen(ws->w[3]) || size == 0 ||
		    size > STRUCT_MAX) {
			reject(p, p->line, "'struct' needs one size in bytes, 1 to %d", STRUCT_MAX);
			return;
		}
		prm->size = (uint32_t)size;
	} else if (type == RW_T_PTR) {
		if (!param_pointer(p, ws, line, prm))
			return;
	} else if (ws->n != 3) {
		reject(p, p->line, "unexpected '%s' after the type of '%s'", ws->w[3], name);
		return;
	}
	c->nparams++;
}

/* "OFF+STRIDEi" (stride != NULL) or "OFF", each optionally followed by ":TYPE" (type != NULL). */
static int field_parse(const char *s, uint32_t *off, uint32_t *stride, uint8_t *type)
{
	uint64_t v;
	size_t n = rw__parse_number(s, &v);

	if (!n || v > STRUCT_MAX)
		return -CF_EINVAL;
	*off = (uint32_t)v;
	s += n;
	if (stride) {
		if (*s != '+')
			return -CF_EINVAL;
		n = rw__parse_number(++s, &v);
		if (!n || v == 0 || v > STRUCT_MAX || s[n] != 'i')
			return -CF_EINVAL;
		*stride = (uint32_t)v;
		s += n + 1;
	}
	if (type) {
		enum rw_type t = RW_T_I32;

		if (*s == ':') {
			if (type_parse(s + 1, &t) != 0 || !rw__type_is_int(t))
				return -CF_EINVAL;
			s += strlen(s);
		}
		*type = (uint8_t)t;
	}
	return *s ? -CF_EINVAL : 0;
}

static void stmt_table(struct parser *p, struct words *ws, int role)
{
	struct pending_table *pt;
	unsigned first = role == TBL_PLAIN ? 3 : 2;
	bool have_ptr = false, have_len = false, have_count = false, have_max = false;

	if (p->ntables == RW_CARD_MAX_TABLES) {
		reject(p, p->line, "more than %d tables", RW_CARD_MAX_TABLES);
		return;
	}
	if (ws->n < first) {
		reject(p, p->line, "'%s' needs a struct parameter%s", ws->w[0],
		       role == TBL_PLAIN ? " and an access" : "");
		return;
	}
	pt = &p->tables[p->ntables];
	memset(pt, 0, sizeof(*pt));
	pt->line = p->line;
	pt->role = role;
	pt->t.unit = 1;
	snprintf(pt->param, sizeof(pt->param), "%s", ws->w[1]);
	if (role == TBL_PLAIN) {
		if (access_parse(ws->w[2], &pt->t.access) != 0 || pt->t.access == 0) {
			reject(p, p->line, "a table's access is r, w or rw, not '%s'", ws->w[2]);
			return;
		}
	} else {
		pt->t.access = role == TBL_CAT ? RW_ACC_READ : RW_ACC_WRITE;
	}
	for (unsigned i = first; i < ws->n; i++) {
		char *key = ws->w[i], *val = strchr(key, '=');
		uint64_t v;
		int rc = -CF_EINVAL;

		if (!val) {
			reject(p, p->line, "expected key=value, not '%s'", key);
			return;
		}
		*val++ = 0;
		if (!strcmp(key, "ptr")) {
			rc = field_parse(val, &pt->t.ptr_off, &pt->t.ptr_stride, NULL);
			have_ptr = true;
		} else if (!strcmp(key, "len")) {
			rc = field_parse(val, &pt->t.len_off, &pt->t.len_stride, &pt->t.len_type);
			have_len = true;
		} else if (!strcmp(key, "count")) {
			rc = field_parse(val, &pt->t.count_off, NULL, &pt->t.count_type);
			have_count = true;
		} else if (!strcmp(key, "max") || !strcmp(key, "unit")) {
			if (rw__parse_number(val, &v) == strlen(val) && v >= 1 &&
			    v <= (key[0] == 'm' ? RW_CARD_MAX_ENTRIES : 1u << 20)) {
				if (key[0] == 'm')
					pt->t.max = (uint32_t)v;
				else
					pt->t.unit = (uint32_t)v;
				rc = 0;
			}
			have_max |= key[0] == 'm';
		} else {
			reject(p, p->line, "unknown table key '%s' (ptr len count max unit)", key);
			return;
		}
		if (rc != 0) {
			reject(p, p->line, "bad value '%s' for table key '%s'", val, key);
			return;
		}
	}
	if (!have_ptr || !have_count || !have_max || (!have_len && role != TBL_PLAIN)) {
		reject(p, p->line, "a table needs ptr=, len=, count= and max= (a plain table may leave "
		       "out len=: its spans are then unknown)");
		return;
	}
	p->ntables++;
}

/* field PARAM OFF ACCESS SPAN: checked against PARAM and compiled at `end`. */
static void stmt_field(struct parser *p, struct words *ws, const char *line)
{
	struct rw_card *c = p->card;
	struct rw_card_field *fl;
	uint64_t off;

	if (c->nfields == RW_CARD_MAX_FIELDS) {
		reject(p, p->line, "more than %d fields", RW_CARD_MAX_FIELDS);
		return;
	}
	if (ws->n < 5) {
		reject(p, p->line, "'field' needs a struct parameter, an offset, an access and a span");
		return;
	}
	fl = &c->fields[c->nfields];
	memset(fl, 0, sizeof(*fl));
	if (rw__parse_number(ws->w[2], &off) != strlen(ws->w[2]) || off > STRUCT_MAX) {
		reject(p, p->line, "bad field offset '%s'", ws->w[2]);
		return;
	}
	if (access_parse(ws->w[3], &fl->access) != 0 || fl->access == 0) {
		reject(p, p->line, "a field's access is r, w or rw, not '%s'", ws->w[3]);
		return;
	}
	fl->off = (uint32_t)off;
	snprintf(p->field_params[c->nfields], RW_CARD_NAME_MAX, "%s", ws->w[1]);
	if (ws->n == 5 && !strcmp(ws->w[4], "unknown")) {
		fl->span = RW_SPAN_UNKNOWN;
	} else {
		fl->span = RW_SPAN_EXPR;
		p->field_spans[c->nfields].line = p->line;
		p->field_spans[c->nfields].text = dup_str(p, line + ws->start[4]);
	}
	c->nfields++;
}

/* At `end`: each field's struct parameter resolved, its pointer inside it, its span compiled. */
static bool fields_finish(struct parser *p)
{
	struct rw_card *c = p->card;
	char err[ERR_MAX];

	for (unsigned i = 0; i < c->nfields; i++) {
		struct rw_card_field *fl = &c->fields[i];
		int idx = rw_card_param_index(c, p->field_params[i]);
		unsigned line = p->field_spans[i].line ? p->field_spans[i].line : c->line;

		if (idx < 0 || c->params[idx].type != RW_T_STRUCT) {
			reject(p, line, "field parameter '%s' is not a declared struct", p->field_params[i]);
			return false;
		}
		if ((uint64_t)fl->off + 8 > c->params[idx].size) {
			reject(p, line, "field at %u reaches past the %u bytes of '%s'", fl->off,
			       c->params[idx].size, p->field_params[i]);
			return false;
		}
		fl->param = (uint8_t)idx;
		if (fl->span == RW_SPAN_EXPR &&
		    rw__expr_compile(c, p->field_spans[i].text, &fl->expr, err, sizeof(err)) != 0) {
			reject(p, line, "span of field %u of '%s': %s", fl->off, p->field_params[i], err);
			return false;
		}
	}
	return true;
}

/* whole TARGET UNIT COUNT STRIDE (COUNT and STRIDE one word each): resolved at `end`. */
static void stmt_whole(struct parser *p, struct words *ws)
{
	struct rw_card *c = p->card;
	struct rw_card_whole *wl;
	uint64_t unit;

	if (c->nwhole == RW_CARD_MAX_WHOLE) {
		reject(p, p->line, "more than %d whole lines", RW_CARD_MAX_WHOLE);
		return;
	}
	if (ws->n != 5) {
		reject(p, p->line, "'whole' needs a target, a unit, a count and a stride (one word each)");
		return;
	}
	if (strlen(ws->w[1]) >= sizeof(p->whole_target[0])) {
		reject(p, p->line, "whole: target name too long");
		return;
	}
	wl = &c->whole[c->nwhole];
	memset(wl, 0, sizeof(*wl));
	if (rw__parse_number(ws->w[2], &unit) != strlen(ws->w[2]) || unit == 0 || unit > STRUCT_MAX) {
		reject(p, p->line, "bad whole unit '%s'", ws->w[2]);
		return;
	}
	wl->unit = (uint32_t)unit;
	snprintf(p->whole_target[c->nwhole], sizeof(p->whole_target[0]), "%s", ws->w[1]);
	p->whole_count[c->nwhole].line = p->whole_stride[c->nwhole].line = p->line;
	p->whole_count[c->nwhole].text = dup_str(p, ws->w[3]);
	p->whole_stride[c->nwhole].text = dup_str(p, ws->w[4]);
	c->nwhole++;
}

/* At `end`: each whole line's target found (a written pointer parameter, or a written field
 * line PARAM@OFF), its count and stride compiled. After fields_finish. */
static bool whole_finish(struct parser *p)
{
	struct rw_card *c = p->card;
	char err[ERR_MAX];

	for (unsigned i = 0; i < c->nwhole; i++) {
		struct rw_card_whole *wl = &c->whole[i];
		const char *t = p->whole_target[i], *at = strchr(t, '@');
		unsigned line = p->whole_count[i].line;

		wl->param = wl->field = -1;
		if (!at) {
			int idx = rw_card_param_index(c, t);

			if (idx < 0 || c->params[idx].type != RW_T_PTR || !(c->params[idx].access & RW_ACC_WRITE)) {
				reject(p, line, "whole: '%s' is not a written pointer parameter", t);
				return false;
			}
			wl->param = (int16_t)idx;
		} else {
			char name[RW_CARD_NAME_MAX];
			uint64_t off;
			int idx;

			snprintf(name, sizeof(name), "%.*s", (int)(at - t), t);
			idx = rw_card_param_index(c, name);
			if (rw__parse_number(at + 1, &off) == strlen(at + 1) && idx >= 0)
				for (unsigned f = 0; f < c->nfields && wl->field < 0; f++)
					if (c->fields[f].param == idx && c->fields[f].off == off &&
					    (c->fields[f].access & RW_ACC_WRITE))
						wl->field = (int16_t)f;
			if (wl->field < 0) {
				reject(p, line, "whole: '%s' names no written field line", t);
				return false;
			}
		}
		if (rw__expr_compile(c, p->whole_count[i].text, &wl->count, err, sizeof(err)) != 0 ||
		    rw__expr_compile(c, p->whole_stride[i].text, &wl->stride, err, sizeof(err)) != 0) {
			reject(p, line, "whole %s: %s", t, err);
			return false;
		}
	}
	return true;
}

static void stmt_count(struct parser *p, struct words *ws, const char *line)
{
	if (ws->n < 2) {
		reject(p, p->line, "'count' needs an expression");
		return;
	}
	if (p->count.text) {
		reject(p, p->line, "'count' given twice");
		return;
	}
	p->count.line = p->line;
	p->count.text = dup_str(p, line + ws->start[1]);
}

static void stmt_flag(struct parser *p, struct words *ws)
{
	const char *w = ws->w[0];

	if (ws->n != 1) {
		reject(p, p->line, "'%s' takes no argument", w);
		return;
	}
	if (!strcmp(w, "pure")) {
		p->card->flags |= RW_CARD_PURE;
	} else if (!strcmp(w, "indirect")) {
		p->card->flags |= RW_CARD_INDIRECT;
	} else {
		p->card->flags |= RW_CARD_ELEMENTWISE;
		p->elementwise_line = p->line;
	}
}

/* Check a table against its struct parameter. */
static bool table_fits(struct parser *p, const struct pending_table *pt, struct rw_card_table *t)
{
	struct rw_card *c = p->card;
	int idx = rw_card_param_index(c, pt->param);
	const struct rw_card_param *prm;
	uint64_t last, size;

	if (idx < 0) {
		reject(p, pt->line, "table parameter '%s' is not declared", pt->param);
		return false;
	}
	prm = &c->params[idx];
	if (prm->type != RW_T_STRUCT) {
		reject(p, pt->line, "table parameter '%s' is not a struct", pt->param);
		return false;
	}
	*t = pt->t;
	t->param = (uint8_t)idx;
	size = prm->size;
	last = t->max - 1u;
	if ((uint64_t)t->ptr_off + t->ptr_stride * last + 8 > size ||
	    (t->len_stride && /* no len=: the entries' spans are unknown */
	     (uint64_t)t->len_off + t->len_stride * last + rw__type_size((enum rw_type)t->len_type) > size) ||
	    (uint64_t)t->count_off + rw__type_size((enum rw_type)t->count_type) > size) {
		reject(p, pt->line, "table fields reach past the %u bytes of '%s'", prm->size, pt->param);
		return false;
	}
	return true;
}

/* `end`: resolve names, compile expressions and check the card as a whole. */
static void card_finish(struct parser *p)
{
	struct rw_card *c = p->card;
	char err[ERR_MAX];
	unsigned entries = 0;
	int roles = 0;

	for (unsigned i = 0; i < c->nparams; i++) {
		struct rw_card_param *prm = &c->params[i];

		if (prm->span == RW_SPAN_EXPR &&
		    rw__expr_compile(c, p->spans[i].text, &prm->expr, err, sizeof(err)) != 0) {
			reject(p, p->spans[i].line, "span of '%s': %s", prm->name, err);
			return;
		}
		if (prm->span == RW_SPAN_TABLE) {
			if (c->table_ptr >= 0) {
				reject(p, c->line, "more than one pointer has span table");
				return;
			}
			c->table_ptr = (int)i;
		}
	}
	if (p->count.text) {
		if (rw__expr_compile(c, p->count.text, &c->count, err, sizeof(err)) != 0) {
			reject(p, p->count.line, "count: %s", err);
			return;
		}
		c->flags |= RW_CARD_COUNT;
		if (c->count.n == 1 && c->ops[c->count.first].kind == RW_OP_VAR &&
		    c->ops[c->count.first].v < (int64_t)c->nparams)
			c->count_param = (int)c->ops[c->count.first].v;
	}
	if ((c->flags & RW_CARD_ELEMENTWISE) && c->count_param < 0) {
		reject(p, p->elementwise_line, "elementwise needs 'count NAME' with an integer parameter");
		return;
	}
	if (!fields_finish(p) || !whole_finish(p))
		return;
	for (unsigned i = 0; i < p->ntables; i++) {
		if (!table_fits(p, &p->tables[i], &c->tables[i]))
			return;
		entries += c->tables[i].max;
		if (p->tables[i].role != TBL_PLAIN) {
			roles++;
			c->flags |= p->tables[i].role == TBL_CAT ? RW_CARD_CAT : RW_CARD_SPLIT;
		}
	}
	c->ntables = p->ntables;
	if (entries > RW_CARD_MAX_ENTRIES) {
		reject(p, p->tables[0].line, "tables hold more than %d entries together", RW_CARD_MAX_ENTRIES);
		return;
	}
	if (c->table_ptr >= 0 && c->ntables != 1) {
		reject(p, c->line, "span table needs exactly one table on the card");
		return;
	}
	if (roles) {
		const struct pending_table *pt = &p->tables[0];
		uint8_t want = pt->role == TBL_CAT ? RW_ACC_WRITE : RW_ACC_READ;

		if (c->ntables != 1) {
			reject(p, pt->line, "a cat or split card has exactly one table");
			return;
		}
		if (c->table_ptr < 0 || c->params[c->table_ptr].access != want) {
			reject(p, pt->line, "%s needs one pointer with access %s and span table",
			       pt->role == TBL_CAT ? "cat" : "split", pt->role == TBL_CAT ? "w" : "r");
			return;
		}
	}
	if (rw__cards_add(p->set, c) != 0)
		p->nomem = true;
	p->card = NULL; /* owned by the set now (or freed) */
}

/* Whether w may be quoted in a message as the statement it was meant to be: a short word of
 * letters, digits and '_' (the first word of some other kind of file, "root:x:0:0:...", is not). */
static bool is_word(const char *w)
{
	size_t n = strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");

	return n > 0 && n <= 32 && !w[n];
}

static void statement(struct parser *p, char *buf, const char *line)
{
	struct words ws;
	const char *w;

	split_words(buf, &ws);
	if (ws.n == 0)
		return;
	w = ws.w[0];
	if (!strcmp(w, "kernel")) {
		if (p->card && !p->bad)
			reject(p, p->card->line, "no 'end' before the next 'kernel' at line %u", p->line);
		card_drop(p);
		p->stray = false;
		p->bad = false;
		stmt_kernel(p, &ws);
		if (!p->card)
			p->bad = true; /* skip the body of a card that could not be opened */
		return;
	}
	if (!p->card && !p->bad) {
		if (!p->stray) {
			if (is_word(w))
				reject(p, p->line, "'%s' outside a card (cards start with 'kernel')", w);
			else
				reject(p, p->line, "a line that is not a card statement (cards start with 'kernel')");
			p->bad = false;
			p->stray = true;
		}
		return;
	}
	if (!strcmp(w, "end")) {
		if (!p->bad && ws.n != 1)
			reject(p, p->line, "'end' takes no argument");
		if (!p->bad)
			card_finish(p);
		card_drop(p);
		return;
	}
	if (p->bad)
		return;
	if (ws.too_many)
		reject(p, p->line, "more than %d words on a line", WORDS_MAX);
	else if (!strcmp(w, "param"))
		stmt_param(p, &ws, line);
	else if (!strcmp(w, "count"))
		stmt_count(p, &ws, line);
	else if (!strcmp(w, "elementwise") || !strcmp(w, "pure") || !strcmp(w, "indirect"))
		stmt_flag(p, &ws);
	else if (!strcmp(w, "table"))
		stmt_table(p, &ws, TBL_PLAIN);
	else if (!strcmp(w, "field"))
		stmt_field(p, &ws, line);
	else if (!strcmp(w, "whole"))
		stmt_whole(p, &ws);
	else if (!strcmp(w, "cat"))
		stmt_table(p, &ws, TBL_CAT);
	else if (!strcmp(w, "split"))
		stmt_table(p, &ws, TBL_SPLIT);
	else
		reject(p, p->line, is_word(w) ? "unknown statement '%s'" : "unknown statement%s", is_word(w) ? w : "");
}

int rw_cards_parse(struct rw_cards *set, const char *file, const char *text, size_t len)
{
	struct parser p = { .set = set, .file = file ? file : "(cards)" };
	size_t at = 0;
	int rc;

	if (memchr(text, 0, len)) {
		/* a binary file (a library, an image): one line, not a warning per line of noise */
		reject(&p, 1, "not a text file (it holds NUL bytes); nothing read from it");
		return p.rejected;
	}
	while (at < len && !p.nomem) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t end = nl ? (size_t)(nl - text) : len, n = end - at;
		char buf[LINE_MAX_], line[LINE_MAX_];
		char *hash;

		p.line++;
		if (n >= sizeof(buf)) {
			if (p.card && !p.bad) {
				reject(&p, p.line, "line longer than %d characters", LINE_MAX_ - 1);
			} else if (!p.card && !p.bad && !p.stray) {
				reject(&p, p.line, "line longer than %d characters", LINE_MAX_ - 1);
				p.bad = false;
				p.stray = true;
			}
			at = end + 1;
			continue;
		}
		memcpy(line, text + at, n);
		line[n] = 0;
		at = end + 1;
		line[strcspn(line, "\r")] = 0;
		hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		memcpy(buf, line, sizeof(buf));
		statement(&p, buf, line);
	}
	if (!p.nomem && p.card && !p.bad)
		reject(&p, p.card->line, "no 'end' before the end of the file");
	card_drop(&p);
	rc = p.nomem ? -CF_ENOMEM : p.rejected;
	return rc;
}
