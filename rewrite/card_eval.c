/* card_eval.c - a card applied to one launch: its expressions evaluated over the launch's
 * parameter bytes and grid, its tables decoded, the result an access set. rewrite layer; pure
 * computation (no driver call, no allocation, no lock), cheap enough for every recorded launch.
 *
 * Anything that cannot be computed exactly (an overflow, a division by zero, a u64 parameter
 * beyond int64, a negative table length) widens the access to "unknown span", never narrows
 * it: an unknown span stands for the whole allocation. */
#include <string.h>

#include "common/errors.h"
#include "rewrite/cards_int.h"

int rw__expr_eval(const struct rw_op *ops, struct rw_expr e, const int64_t *vars, uint64_t invalid,
		  int64_t *out)
{
	int64_t st[RW_EXPR_MAX_DEPTH];
	int sp = 0;

	for (unsigned i = 0; i < e.n; i++) {
		const struct rw_op *op = &ops[e.first + i];
		int64_t a, b, r = 0;

		switch ((enum rw_op_kind)op->kind) {
		case RW_OP_CONST:
			st[sp++] = op->v;
			continue;
		case RW_OP_VAR:
			if (op->v < 64 && (invalid >> op->v) & 1)
				return -CF_ERANGE;
			st[sp++] = vars[op->v];
			continue;
		case RW_OP_NEG:
			if (st[sp - 1] == INT64_MIN)
				return -CF_ERANGE;
			st[sp - 1] = -st[sp - 1];
			continue;
		case RW_OP_FITS32:
			if (st[sp - 1] < INT32_MIN || st[sp - 1] > INT32_MAX)
				return -CF_ERANGE;
			continue;
		default:
			break;
		}
		b = st[--sp];
		a = st[sp - 1];
		switch ((enum rw_op_kind)op->kind) {
		case RW_OP_ADD:
			if (__builtin_add_overflow(a, b, &r))
				return -CF_ERANGE;
			break;
		case RW_OP_SUB:
			if (__builtin_sub_overflow(a, b, &r))
				return -CF_ERANGE;
			break;
		case RW_OP_MUL:
			if (__builtin_mul_overflow(a, b, &r))
				return -CF_ERANGE;
			break;
		case RW_OP_DIV:
		case RW_OP_MOD:
			if (b == 0 || (a == INT64_MIN && b == -1))
				return -CF_ERANGE;
			r = op->kind == RW_OP_DIV ? a / b : a % b;
			break;
		case RW_OP_MIN:
			r = a < b ? a : b;
			break;
		case RW_OP_MAX:
			r = a > b ? a : b;
			break;
		default:
			return -CF_ERANGE; /* not reached: the compiler emits only the kinds above */
		}
		st[sp - 1] = r;
	}
	if (sp != 1)
		return -CF_ERANGE;
	*out = st[0];
	return 0;
}

/* An integer of the given type at p (unaligned); *big when a u64 exceeds int64. */
static int64_t read_int(const unsigned char *p, enum rw_type t, bool *big)
{
	int32_t i32;
	uint32_t u32;
	int64_t i64;
	uint64_t u64;

	*big = false;
	switch (t) {
	case RW_T_I32:
		memcpy(&i32, p, 4);
		return i32;
	case RW_T_U32:
		memcpy(&u32, p, 4);
		return u32;
	case RW_T_I64:
		memcpy(&i64, p, 8);
		return i64;
	case RW_T_U64:
	case RW_T_PTR:
		memcpy(&u64, p, 8);
		*big = u64 > INT64_MAX;
		return (int64_t)u64;
	default:
		return 0;
	}
}

static uint64_t read_u64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static bool launch_is_1d(const struct rw_launch_args *a)
{
	return a->grid[1] == 1 && a->grid[2] == 1 && a->block[1] == 1 && a->block[2] == 1;
}

/* Decode table t into set->acc; returns its total length in units, or -1 when a length is
 * negative or the sum overflows (the entries are then unknown spans). */
static int64_t decode_table(const struct rw_card *card, unsigned ti, const unsigned char *base, size_t base_off,
			    struct rw_access_set *set)
{
	const struct rw_card_table *t = &card->tables[ti];
	bool big;
	int64_t count = read_int(base + t->count_off, (enum rw_type)t->count_type, &big);
	int64_t total = 0;

	if (big || count < 0)
		count = big ? (int64_t)t->max : 0; /* a huge u64 count: every entry is read */
	if (count > (int64_t)t->max)
		count = t->max;
	set->tables[ti].first = (uint16_t)set->n;
	set->tables[ti].n = (uint16_t)count;
	for (int64_t e = 0; e < count; e++) {
		struct rw_access *a = &set->acc[set->n++];
		int64_t len = t->len_stride ? read_int(base + t->len_off + (size_t)t->len_stride * (size_t)e,
						       (enum rw_type)t->len_type, &big) : 0;
		int64_t bytes;

		a->addr = read_u64(base + t->ptr_off + (size_t)t->ptr_stride * (size_t)e);
		a->word = (uint32_t)(base_off + t->ptr_off + (size_t)t->ptr_stride * (size_t)e);
		a->param = t->param;
		a->entry = (int16_t)e;
		a->table = (uint8_t)ti;
		a->flags = t->access;
		if (!t->len_stride) { /* a table without lengths: each entry's whole allocation */
			a->bytes = 0;
			a->flags |= RW_ACC_UNKNOWN;
			total = -1;
			continue;
		}
		if (big || len < 0 || __builtin_mul_overflow(len, (int64_t)t->unit, &bytes)) {
			a->bytes = 0;
			a->flags |= RW_ACC_UNKNOWN;
			total = -1;
			continue;
		}
		a->bytes = (uint64_t)bytes;
		if (total >= 0 && __builtin_add_overflow(total, len, &total))
			total = -1;
	}
	return total;
}

/* The card's variables for one launch: its parameters read from the parameter bytes (a u64
 * beyond int64 sets its bit in *invalid), then the grid. -CF_EINVAL when the launch's
 * parameters are not laid out as the card says. */
static int launch_vars(const struct rw_card *card, const struct rw_launch_args *args, int64_t *vars,
		       uint64_t *invalid)
{
	const unsigned char *buf = args->buf;

	*invalid = 0;
	if (args->nparams != card->nparams || (card->nparams && (!buf || !args->params)))
		return -CF_EINVAL;
	for (unsigned i = 0; i < card->nparams; i++) {
		const struct rw_param_info *pi = &args->params[i];
		const struct rw_card_param *cp = &card->params[i];
		bool big = false;

		if (pi->size != cp->size || pi->offset > args->buf_size || args->buf_size - pi->offset < pi->size)
			return -CF_EINVAL;
		vars[i] = read_int(buf + pi->offset, (enum rw_type)cp->type, &big);
		if (big)
			*invalid |= 1ull << i;
	}
	for (unsigned g = 0; g < 3; g++) {
		vars[card->nparams + RW_GX + g] = args->grid[g];
		vars[card->nparams + RW_BX + g] = args->block[g];
	}
	for (unsigned f = 0; f < card->nfvars; f++) {
		const struct rw_card_fvar *fv = &card->fvars[f]; /* inside its struct: the parser checked */
		unsigned v = card->nparams + RW_GRID_VARS + f;
		bool big = false;

		vars[v] = read_int(buf + args->params[fv->param].offset + fv->off, (enum rw_type)fv->type, &big);
		if (big)
			*invalid |= 1ull << v;
	}
	return 0;
}

/* One access per pointer parameter the card gives an access, in parameter order. */
static void pointer_accesses(const struct rw_card *card, const struct rw_launch_args *args, const int64_t *vars,
			     uint64_t invalid, struct rw_access_set *set)
{
	for (unsigned i = 0; i < card->nparams; i++) {
		const struct rw_card_param *cp = &card->params[i];
		struct rw_access *a;
		int64_t bytes;

		if (cp->type != RW_T_PTR || !cp->access)
			continue;
		a = &set->acc[set->n++];
		a->addr = (uint64_t)vars[i];
		a->word = (uint32_t)args->params[i].offset;
		a->bytes = 0;
		a->param = (uint16_t)i;
		a->entry = -1;
		a->table = 0;
		a->flags = cp->access;
		if (cp->span == RW_SPAN_UNKNOWN ||
		    (cp->span == RW_SPAN_EXPR && rw__expr_eval(card->ops, cp->expr, vars, invalid, &bytes) != 0))
			a->flags |= RW_ACC_UNKNOWN;
		else if (cp->span == RW_SPAN_EXPR)
			a->bytes = bytes > 0 ? (uint64_t)bytes : 0;
		if (cp->span == RW_SPAN_TABLE)
			set->cat_out = (int)(set->n - 1);
	}
}

/* The tables' accesses, in card order, and the size of a cat kernel's output from them.
 * Returns whether every table was decoded (and the output's size computed); *last_total is the
 * last table's total length. */
static bool table_accesses(const struct rw_card *card, const struct rw_launch_args *args,
			   struct rw_access_set *set, int64_t *last_total)
{
	bool ok = true;

	*last_total = -1;
	for (unsigned t = 0; t < card->ntables; t++) {
		const unsigned char *base = (const unsigned char *)args->buf + args->params[card->tables[t].param].offset;

		*last_total = decode_table(card, t, base, args->params[card->tables[t].param].offset, set);
		if (*last_total < 0)
			ok = false;
	}
	set->ntables = card->ntables;
	if (set->cat_out >= 0) {
		struct rw_access *out = &set->acc[set->cat_out];
		int64_t bytes;

		if (!ok || __builtin_mul_overflow(*last_total, (int64_t)card->tables[0].unit, &bytes)) {
			out->flags |= RW_ACC_UNKNOWN;
			ok = false;
		} else {
			out->bytes = (uint64_t)bytes;
		}
	}
	return ok;
}

/* One access per `field` line, after the tables: the pointer read out of the struct's bytes. */
static void field_accesses(const struct rw_card *card, const struct rw_launch_args *args, const int64_t *vars,
			   uint64_t invalid, struct rw_access_set *set)
{
	for (unsigned i = 0; i < card->nfields; i++) {
		const struct rw_card_field *fl = &card->fields[i];
		const unsigned char *base = (const unsigned char *)args->buf + args->params[fl->param].offset;
		struct rw_access *a = &set->acc[set->n++];
		int64_t bytes;

		a->addr = read_u64(base + fl->off); /* inside the struct: the card parser checked */
		a->word = (uint32_t)(args->params[fl->param].offset + fl->off);
		a->bytes = 0;
		a->param = fl->param;
		a->entry = (int16_t)i;
		a->table = RW_ACCESS_FIELD;
		a->flags = fl->access;
		if (fl->span == RW_SPAN_UNKNOWN || rw__expr_eval(card->ops, fl->expr, vars, invalid, &bytes) != 0)
			a->flags |= RW_ACC_UNKNOWN;
		else
			a->bytes = bytes > 0 ? (uint64_t)bytes : 0;
	}
}

/* RW_ACC_WHOLE on the accesses a `whole` line proves written whole for this launch. */
static void whole_accesses(const struct rw_card *card, const int64_t *vars, uint64_t invalid,
			   struct rw_access_set *set)
{
	for (unsigned i = 0; i < card->nwhole; i++) {
		const struct rw_card_whole *wl = &card->whole[i];
		int64_t count, stride, reach;

		if (rw__expr_eval(card->ops, wl->count, vars, invalid, &count) != 0 ||
		    rw__expr_eval(card->ops, wl->stride, vars, invalid, &stride) != 0 ||
		    count < 1 || stride < 1 || stride > (int64_t)wl->unit ||
		    __builtin_mul_overflow(count - 1, stride, &reach) ||
		    __builtin_add_overflow(reach, (int64_t)wl->unit, &reach))
			continue;
		for (unsigned k = 0; k < set->n; k++) {
			struct rw_access *a = &set->acc[k];
			bool target = wl->param >= 0 ? a->entry < 0 && a->param == (uint16_t)wl->param
						    : a->table == RW_ACCESS_FIELD && a->entry == wl->field;

			if (target && (a->flags & RW_ACC_WRITE) && !(a->flags & RW_ACC_UNKNOWN) &&
			    a->bytes <= (uint64_t)reach)
				a->flags |= RW_ACC_WHOLE;
		}
	}
}

/* The set's count and flags: what the card claims, where the launch lets it be computed. */
static void set_flags(const struct rw_card *card, const struct rw_launch_args *args, const int64_t *vars,
		      uint64_t invalid, bool tables_ok, int64_t table_total, struct rw_access_set *set)
{
	if (card->flags & RW_CARD_COUNT) {
		if (rw__expr_eval(card->ops, card->count, vars, invalid, &set->count) == 0)
			set->flags |= RW_SET_COUNT;
	} else if ((card->flags & (RW_CARD_CAT | RW_CARD_SPLIT)) && tables_ok) {
		set->count = table_total;
		set->flags |= RW_SET_COUNT;
	}
	if (card->flags & RW_CARD_PURE)
		set->flags |= RW_SET_PURE;
	if (card->flags & RW_CARD_INDIRECT)
		set->flags |= RW_SET_INDIRECT;
	if ((card->flags & RW_CARD_CAT) && tables_ok)
		set->flags |= RW_SET_CAT;
	if ((card->flags & RW_CARD_SPLIT) && tables_ok)
		set->flags |= RW_SET_SPLIT;
	if (launch_is_1d(args) && (set->flags & RW_SET_COUNT)) {
		if (card->flags & RW_CARD_ELEMENTWISE)
			set->flags |= RW_SET_ELEMENTWISE;
		if ((uint64_t)args->grid[0] * args->block[0] >= (uint64_t)(set->count > 0 ? set->count : 0))
			set->flags |= RW_SET_COVERS;
	}
	for (unsigned i = 0; i < set->n; i++)
		if (set->acc[i].flags & RW_ACC_UNKNOWN)
			set->flags |= RW_SET_UNKNOWN_SPAN;
}

int rw_card_access(const struct rw_card *card, const struct rw_launch_args *args,
		   struct rw_access_set *set)
{
	int64_t vars[RW_CARD_MAX_PARAMS + RW_GRID_VARS + RW_CARD_MAX_FVARS];
	uint64_t invalid;
	int64_t table_total;
	bool tables_ok;
	int rc;

	set->flags = 0;
	set->n = 0;
	set->ntables = 0;
	set->count = 0;
	set->count_param = card->count_param;
	set->cat_out = -1;
	rc = launch_vars(card, args, vars, &invalid);
	if (rc != 0)
		goto out;
	pointer_accesses(card, args, vars, invalid, set);
	tables_ok = table_accesses(card, args, set, &table_total);
	field_accesses(card, args, vars, invalid, set);
	whole_accesses(card, vars, invalid, set);
	set_flags(card, args, vars, invalid, tables_ok, table_total, set);
out:
	return rc;
}

static bool ranges_overlap(const struct rw_access *a, const struct rw_access *b)
{
	if ((a->flags | b->flags) & RW_ACC_UNKNOWN)
		return true;
	if (!a->bytes || !b->bytes)
		return false;
	return a->addr < b->addr + b->bytes && b->addr < a->addr + a->bytes;
}

bool rw_access_set_self_overlaps(const struct rw_access_set *set)
{
	for (unsigned w = 0; w < set->n; w++) {
		if (!(set->acc[w].flags & RW_ACC_WRITE))
			continue;
		for (unsigned r = 0; r < set->n; r++)
			if ((set->acc[r].flags & RW_ACC_READ) && ranges_overlap(&set->acc[w], &set->acc[r]))
				return true;
	}
	return false;
}
