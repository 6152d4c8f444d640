/* derive_bound.c - the values of the PTX-derived card: interned polynomials over atoms,
 * constraint sets, and the upper bounds of offsets in launch symbols (see derive_int.h).
 * rewrite layer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "rewrite/derive_int.h"

#define DV_MAX_DEPTH 12 /* nested bounds (atoms bounded through atoms) before giving up */

/* ------------------------------------------------------------------ pools */

static uint32_t hash_bytes(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static int pool_grow(struct dv_pool *p)
{
	uint32_t ncap = p->tabcap ? p->tabcap * 2 : 256;
	uint32_t *tab = calloc(ncap, sizeof(*tab));
	unsigned char *data = realloc(p->data, (size_t)(ncap / 2) * p->recsz);

	if (!tab || !data) {
		free(tab);
		if (data)
			p->data = data;
		return -CF_ENOMEM;
	}
	p->data = data;
	p->cap = ncap / 2;
	for (uint32_t id = 0; id < p->n; id++) {
		uint32_t h = hash_bytes(p->data + (size_t)id * p->recsz, p->recsz) & (ncap - 1);

		while (tab[h])
			h = (h + 1) & (ncap - 1);
		tab[h] = id + 1;
	}
	free(p->tab);
	p->tab = tab;
	p->tabcap = ncap;
	return 0;
}

uint32_t dv_pool_intern(struct dv_pool *p, const void *rec)
{
	uint32_t h;

	if (p->n >= p->cap && pool_grow(p) < 0)
		return UINT32_MAX;
	h = hash_bytes(rec, p->recsz) & (p->tabcap - 1);
	while (p->tab[h]) {
		uint32_t id = p->tab[h] - 1;

		if (memcmp(p->data + (size_t)id * p->recsz, rec, p->recsz) == 0)
			return id;
		h = (h + 1) & (p->tabcap - 1);
	}
	memcpy(p->data + (size_t)p->n * p->recsz, rec, p->recsz);
	p->tab[h] = ++p->n;
	return p->n - 1;
}

/* ------------------------------------------------------------------ polynomials */

static int term_cmp(const struct dv_term *a, const struct dv_term *b)
{
	if (a->deg != b->deg)
		return a->deg < b->deg ? -1 : 1;
	for (unsigned i = 0; i < a->deg; i++)
		if (a->a[i] != b->a[i])
			return a->a[i] < b->a[i] ? -1 : 1;
	return 0;
}

static bool is_absorbing(uint32_t a)
{
	return a == DV_A_ANY || a == DV_A_LOADED || a == DV_A_LOCAL;
}

/* A monomial holding an absorbing atom becomes that atom alone (LOADED wins over LOCAL over
 * ANY: a pointer made of loaded data is indirect whatever else went in). */
static void term_absorb(struct dv_term *t)
{
	uint16_t best = 0;

	for (unsigned i = 0; i < t->deg; i++)
		if (is_absorbing(t->a[i]) && (best == 0 || t->a[i] == DV_A_LOADED ||
					      (t->a[i] == DV_A_LOCAL && best == DV_A_ANY)))
			best = t->a[i];
	if (!best)
		return;
	memset(t, 0, sizeof(*t));
	t->c = 1;
	t->deg = 1;
	t->a[0] = best;
}

/* Adds term t into sorted p (merging equal monomials). false when p is full. */
static bool poly_add_term(struct dv_poly *p, struct dv_term t)
{
	unsigned i;

	term_absorb(&t);
	for (i = 0; i < p->n; i++) {
		int c = term_cmp(&t, &p->t[i]);

		if (c == 0) {
			if (t.deg == 1 && is_absorbing(t.a[0]))
				p->t[i].c = 1;
			else if (__builtin_add_overflow(p->t[i].c, t.c, &p->t[i].c))
				return false; /* the caller makes the value unknown */
			if (p->t[i].c == 0) {
				memmove(&p->t[i], &p->t[i + 1], (p->n - i - 1) * sizeof(p->t[0]));
				p->n--;
				memset(&p->t[p->n], 0, sizeof(p->t[0]));
			}
			return true;
		}
		if (c < 0)
			break;
	}
	if (p->n == DV_MAX_TERMS)
		return false;
	memmove(&p->t[i + 1], &p->t[i], (p->n - i) * sizeof(p->t[0]));
	p->t[i] = t;
	p->n++;
	return true;
}

static bool term_mul(const struct dv_term *a, const struct dv_term *b, struct dv_term *out)
{
	unsigned i = 0, j = 0, k = 0;

	if (a->deg + b->deg > DV_MAX_DEG)
		return false;
	memset(out, 0, sizeof(*out));
	if (__builtin_mul_overflow(a->c, b->c, &out->c))
		return false;
	while (i < a->deg || j < b->deg)
		out->a[k++] = (j >= b->deg || (i < a->deg && a->a[i] <= b->a[j])) ? a->a[i++] : b->a[j++];
	out->deg = (uint8_t)k;
	return true;
}

static uint32_t intern_poly(struct dv_ctx *x, const struct dv_poly *p)
{
	uint32_t id = dv_pool_intern(&x->polys, p);

	if (id == UINT32_MAX) {
		x->oom = true;
		return x->v_any;
	}
	return id;
}

uint32_t dv_const(struct dv_ctx *x, int64_t c)
{
	struct dv_poly p;

	memset(&p, 0, sizeof(p));
	if (c) {
		p.n = 1;
		p.t[0].c = c;
	}
	return intern_poly(x, &p);
}

uint32_t dv_atom_val(struct dv_ctx *x, uint32_t atom)
{
	struct dv_poly p;

	memset(&p, 0, sizeof(p));
	p.n = 1;
	p.t[0].c = 1;
	p.t[0].deg = 1;
	p.t[0].a[0] = (uint16_t)atom;
	return intern_poly(x, &p);
}

static uint32_t add_scaled(struct dv_ctx *x, uint32_t a, uint32_t b, int64_t sb)
{
	struct dv_poly p = *dv_poly_get(x, a);
	const struct dv_poly *q = dv_poly_get(x, b);

	for (unsigned i = 0; i < q->n; i++) {
		struct dv_term t = q->t[i];

		if (__builtin_mul_overflow(t.c, sb, &t.c) || !poly_add_term(&p, t)) {
			uint32_t ops[2] = { a, b };

			return dv_unknown_of(x, ops, 2);
		}
	}
	return intern_poly(x, &p);
}

uint32_t dv_add(struct dv_ctx *x, uint32_t a, uint32_t b)
{
	return add_scaled(x, a, b, 1);
}

uint32_t dv_sub(struct dv_ctx *x, uint32_t a, uint32_t b)
{
	return add_scaled(x, a, b, -1);
}

uint32_t dv_mul(struct dv_ctx *x, uint32_t a, uint32_t b)
{
	const struct dv_poly *p = dv_poly_get(x, a), *q = dv_poly_get(x, b);
	struct dv_poly r;

	memset(&r, 0, sizeof(r));
	for (unsigned i = 0; i < p->n; i++)
		for (unsigned j = 0; j < q->n; j++) {
			struct dv_term t;

			if (!term_mul(&p->t[i], &q->t[j], &t) || !poly_add_term(&r, t)) {
				uint32_t ops[2] = { a, b };

				return dv_unknown_of(x, ops, 2);
			}
		}
	return intern_poly(x, &r);
}

bool dv_is_const(const struct dv_ctx *x, uint32_t v)
{
	const struct dv_poly *p = dv_poly_get(x, v);

	return p->n == 0 || (p->n == 1 && p->t[0].deg == 0);
}

bool dv_has_atom(const struct dv_ctx *x, uint32_t v, uint32_t a)
{
	const struct dv_poly *p = dv_poly_get(x, v);

	for (unsigned i = 0; i < p->n; i++)
		for (unsigned k = 0; k < p->t[i].deg; k++)
			if (p->t[i].a[k] == a)
				return true;
	return false;
}

static bool is_ptr_param(const struct dv_ctx *x, uint32_t a)
{
	if (x->atoms[a].kind == DV_K_FIELD)
		return (x->atoms[a].key2 & 15) == 8;

	return x->atoms[a].kind == DV_K_PARAM && x->f->params[a - DV_A_PARAM0].size == 8;
}

int dv_base_param(const struct dv_ctx *x, uint32_t v)
{
	const struct dv_poly *p = dv_poly_get(x, v);
	int base = -1;

	for (unsigned i = 0; i < p->n; i++) {
		const struct dv_term *t = &p->t[i];

		if (t->deg == 1 && t->c == 1 && is_ptr_param(x, t->a[0])) {
			if (base >= 0)
				return -2;
			base = t->a[0] - DV_A_PARAM0;
		}
	}
	if (base < 0)
		return -1;
	/* the base must not also appear inside another monomial (p0 * i is no address) */
	for (unsigned i = 0; i < p->n; i++) {
		if (p->t[i].deg == 1 && p->t[i].a[0] == (uint32_t)base + DV_A_PARAM0)
			continue;
		for (unsigned k = 0; k < p->t[i].deg; k++)
			if (p->t[i].a[k] == (uint32_t)base + DV_A_PARAM0)
				return -2;
	}
	return base;
}

uint32_t dv_unknown_of(struct dv_ctx *x, const uint32_t *ops, unsigned n)
{
	int base = -1;
	bool loaded = false;

	for (unsigned i = 0; i < n; i++) {
		int b = dv_base_param(x, ops[i]);

		if (b >= 0)
			base = (base == -1 || base == b) ? b : -2;
		loaded |= dv_has_atom(x, ops[i], DV_A_LOADED);
	}
	if (base >= 0) /* still an address into that parameter's allocation */
		return dv_add(x, dv_atom_val(x, DV_A_PARAM0 + (uint32_t)base), loaded ? x->v_loaded : x->v_any);
	return loaded ? x->v_loaded : x->v_any;
}

/* ------------------------------------------------------------------ atoms and constraints */

bool dv_is_launch_value(const struct dv_ctx *x, uint32_t v)
{
	const struct dv_poly *p = dv_poly_get(x, v);

	for (unsigned i = 0; i < p->n; i++)
		for (unsigned k = 0; k < p->t[i].deg; k++)
			if (!dv_is_launch_atom(x, p->t[i].a[k]))
				return false;
	return true;
}

uint32_t dv_atom_find(const struct dv_ctx *x, enum dv_atom_kind kind, uint32_t key1, uint32_t key2)
{
	for (uint32_t a = DV_A_PARAM0 + x->f->nparams; a < x->natoms; a++)
		if (x->atoms[a].kind == kind && x->atoms[a].key1 == key1 && x->atoms[a].key2 == key2)
			return a;
	return UINT32_MAX;
}

uint32_t dv_atom_get(struct dv_ctx *x, enum dv_atom_kind kind, uint32_t key1, uint32_t key2)
{
	for (uint32_t a = DV_A_PARAM0 + x->f->nparams; a < x->natoms; a++)
		if (x->atoms[a].kind == kind && x->atoms[a].key1 == key1 && x->atoms[a].key2 == key2)
			return a;
	if (x->natoms >= 65535)
		return UINT32_MAX;
	if (x->natoms == x->capatoms) {
		uint32_t ncap = x->capatoms ? x->capatoms * 2 : 64;
		struct dv_atom *na = realloc(x->atoms, ncap * sizeof(*na));

		if (!na)
			return UINT32_MAX;
		x->atoms = na;
		x->capatoms = ncap;
	}
	memset(&x->atoms[x->natoms], 0, sizeof(x->atoms[0]));
	x->atoms[x->natoms].kind = (uint8_t)kind;
	x->atoms[x->natoms].key1 = key1;
	x->atoms[x->natoms].key2 = key2;
	x->atoms[x->natoms].nonneg = -1;
	return x->natoms++;
}

uint32_t dv_cset_add(struct dv_ctx *x, uint32_t cs, uint32_t xv, uint32_t nv)
{
	struct dv_cset s = *dv_cset_get(x, cs);
	uint32_t id;

	for (unsigned i = 0; i < s.n; i++)
		if (s.c[i].x == xv && s.c[i].n == nv)
			return cs;
	if (s.n == DV_MAX_CONS) {
		memmove(&s.c[0], &s.c[1], (DV_MAX_CONS - 1) * sizeof(s.c[0]));
		s.n--;
	}
	s.c[s.n].x = xv;
	s.c[s.n].n = nv;
	s.n++;
	id = dv_pool_intern(&x->csets, &s);
	if (id == UINT32_MAX) {
		x->oom = true;
		return cs;
	}
	return id;
}

uint32_t dv_cset_meet(struct dv_ctx *x, uint32_t a, uint32_t b)
{
	const struct dv_cset *sa = dv_cset_get(x, a), *sb = dv_cset_get(x, b);
	struct dv_cset s;
	uint32_t id;

	if (a == b)
		return a;
	memset(&s, 0, sizeof(s));
	for (unsigned i = 0; i < sa->n; i++)
		for (unsigned j = 0; j < sb->n; j++)
			if (sa->c[i].x == sb->c[j].x && sa->c[i].n == sb->c[j].n) {
				s.c[s.n++] = sa->c[i];
				break;
			}
	id = dv_pool_intern(&x->csets, &s);
	if (id == UINT32_MAX) {
		x->oom = true;
		return 0; /* the empty set: fewer constraints, still sound */
	}
	return id;
}

/* ------------------------------------------------------------------ sign */

#define DV_Z_NONNEG 0x80000000u /* in a Z atom's key1: its X was proved >= 0 on the path */

static bool atom_nonneg(struct dv_ctx *x, uint32_t a);

/* Every monomial has a positive coefficient and atoms that are not negative. */
bool dv_nonneg(struct dv_ctx *x, uint32_t v)
{
	const struct dv_poly *p = dv_poly_get(x, v);

	for (unsigned i = 0; i < p->n; i++) {
		struct dv_term t = p->t[i]; /* a copy: atom_nonneg may grow the pool */

		if (t.c < 0)
			return false;
		for (unsigned k = 0; k < t.deg; k++)
			if (!atom_nonneg(x, t.a[k]))
				return false;
	}
	return true;
}

static bool in_nonneg(struct dv_ctx *x, uint32_t a, const struct dv_in *in)
{
	if (!in->back)
		return dv_nonneg(x, in->v);
	/* a step: A + s with s >= 0 never goes below A's smallest forward value */
	return !dv_has_atom(x, dv_sub(x, in->v, dv_atom_val(x, a)), a) &&
	       dv_nonneg(x, dv_sub(x, in->v, dv_atom_val(x, a)));
}

static bool atom_nonneg_uncached(struct dv_ctx *x, uint32_t a)
{
	struct dv_atom at = x->atoms[a];

	switch (at.kind) {
	case DV_K_FIXED:
		return a <= PTX_SR_NCTAID_Z;
	case DV_K_PARAM:
	case DV_K_FIELD:
		return true; /* the stated assumption (derive_int.h) */
	case DV_K_PHI:
	case DV_K_SEL:
		for (unsigned i = 0; i < at.nin; i++)
			if (!in_nonneg(x, a, &at.in[i]))
				return false;
		return at.nin > 0;
	case DV_K_MIN:
		return dv_nonneg(x, at.a) && dv_nonneg(x, at.b);
	case DV_K_REM:
	case DV_K_DIV:
		return dv_nonneg(x, at.a);
	case DV_K_SIGN:
		return true;
	case DV_K_Z:
		return (at.key1 & DV_Z_NONNEG) || dv_nonneg(x, at.a);
	}
	return false;
}

static bool atom_nonneg(struct dv_ctx *x, uint32_t a)
{
	bool r;

	if (x->atoms[a].nonneg >= 0)
		return x->atoms[a].nonneg;
	if (x->atoms[a].busy)
		return true; /* a cycle through a phi: its other incoming values decide */
	x->atoms[a].busy = 1;
	r = atom_nonneg_uncached(x, a);
	x->atoms[a].busy = 0;
	x->atoms[a].nonneg = r;
	return r;
}

static bool atom_lower(struct dv_ctx *x, uint32_t a, int64_t *low)
{
	struct dv_atom at = x->atoms[a];
	bool ok = true, any = false;
	int64_t m = INT64_MAX, l;

	if (at.kind == DV_K_PARAM || at.kind == DV_K_FIELD || a <= PTX_SR_TID_Z || (a >= PTX_SR_CTAID_X && a <= PTX_SR_CTAID_Z)) {
		*low = 0;
		return true;
	}
	if (a <= PTX_SR_NCTAID_Z) { /* block and grid sizes */
		*low = 1;
		return true;
	}
	if (x->atoms[a].busy)
		return false;
	x->atoms[a].busy = 1;
	switch (at.kind) {
	case DV_K_PHI:
	case DV_K_SEL:
		for (unsigned i = 0; i < at.nin && ok; i++) {
			if (at.in[i].back) {
				ok = in_nonneg(x, a, &at.in[i]); /* a step that only grows */
				continue;
			}
			ok = dv_lower(x, at.in[i].v, &l);
			if (ok && l < m)
				m = l;
			any = true;
		}
		ok = ok && any;
		break;
	case DV_K_MIN:
		ok = dv_lower(x, at.a, &m) && dv_lower(x, at.b, &l);
		if (ok && l < m)
			m = l;
		break;
	case DV_K_Z:
		ok = dv_lower(x, at.a, &m);
		break;
	case DV_K_REM:
	case DV_K_SIGN:
	case DV_K_DIV:
		m = 0;
		ok = atom_nonneg(x, a);
		break;
	default:
		ok = false;
	}
	x->atoms[a].busy = 0;
	*low = m;
	return ok;
}

bool dv_lower(struct dv_ctx *x, uint32_t v, int64_t *low)
{
	const struct dv_poly p = *dv_poly_get(x, v);
	int64_t sum = 0;

	for (unsigned i = 0; i < p.n; i++) {
		int64_t prod = p.t[i].c, l;

		if (p.t[i].c < 0 && p.t[i].deg > 0)
			return false;
		for (unsigned k = 0; k < p.t[i].deg; k++)
			if (!atom_lower(x, p.t[i].a[k], &l) || l < 0 || __builtin_mul_overflow(prod, l, &prod))
				return false;
		if (__builtin_add_overflow(sum, prod, &sum))
			return false;
	}
	*low = sum;
	return true;
}

uint32_t dv_subst(struct dv_ctx *x, uint32_t v, uint32_t a, uint32_t r)
{
	const struct dv_poly p = *dv_poly_get(x, v);
	uint32_t sum = x->v_zero;

	if (!dv_has_atom(x, v, a))
		return v;
	for (unsigned i = 0; i < p.n; i++) {
		uint32_t prod = dv_const(x, p.t[i].c);

		for (unsigned k = 0; k < p.t[i].deg; k++)
			prod = dv_mul(x, prod, p.t[i].a[k] == a ? r : dv_atom_val(x, p.t[i].a[k]));
		sum = dv_add(x, sum, prod);
	}
	return sum;
}

/* The monomial of p with t's atoms, or -1. */
static int find_monomial(const struct dv_poly *p, const struct dv_term *t)
{
	for (unsigned i = 0; i < p->n; i++)
		if (p->t[i].deg == t->deg && !memcmp(p->t[i].a, t->a, sizeof(t->a)))
			return (int)i;
	return -1;
}

bool dv_nonneg_under(struct dv_ctx *x, uint32_t v, uint32_t cs)
{
	const struct dv_cset s = *dv_cset_get(x, cs);
	int64_t low;

	if (dv_nonneg(x, v) || (dv_lower(x, v, &low) && low >= 0))
		return true;
	for (unsigned i = s.n; i-- > 0;) {
		uint32_t gap;
		struct dv_poly vp, gp;

		if (s.c[i].n == DV_NONZERO)
			continue;
		gap = dv_sub(x, dv_sub(x, s.c[i].n, s.c[i].x), dv_const(x, 1)); /* N - X - 1 >= 0 */
		vp = *dv_poly_get(x, v);
		gp = *dv_poly_get(x, gap);
		/* k from a negative monomial of v that the gap has with a negative coefficient too */
		for (unsigned t = 0; t < vp.n; t++) {
			int g = vp.t[t].c < 0 ? find_monomial(&gp, &vp.t[t]) : -1;
			int64_t k;

			if (g < 0 || gp.t[g].c >= 0 || vp.t[t].c % gp.t[g].c)
				continue;
			k = vp.t[t].c / gp.t[g].c;
			if (dv_nonneg(x, dv_sub(x, v, dv_mul(x, dv_const(x, k), gap))))
				return true;
		}
	}
	return false;
}

/* ------------------------------------------------------------------ max-sets */

static bool nonneg_rem(struct dv_ctx *x, uint32_t v);

/* b - a provably >= 0 (a launch remainder X % c counting as at most X) */
static bool dominates(struct dv_ctx *x, uint32_t b, uint32_t a)
{
	return nonneg_rem(x, dv_sub(x, b, a));
}

int dv_mset_join(struct dv_ctx *x, struct dv_mset *out, uint32_t v)
{
	unsigned k = 0;

	for (unsigned i = 0; i < out->n; i++)
		if (out->v[i] == v || dominates(x, out->v[i], v))
			return 0;
	for (unsigned i = 0; i < out->n; i++)
		if (!dominates(x, v, out->v[i]))
			out->v[k++] = out->v[i];
	out->n = k;
	if (out->n == DV_MSET)
		return -1;
	out->v[out->n++] = v;
	return 0;
}

/* v >= 0, where a launch remainder X % c taken away counts as X (X % c <= X for X >= 0): what
 * shows X - X % c, or m*X - m*(X % c), not negative. Monomial by monomial: in a negative one
 * whose atoms are all >= 0, each such remainder becomes its X, which makes it no larger. */
static bool nonneg_rem(struct dv_ctx *x, uint32_t v)
{
	const struct dv_poly p = *dv_poly_get(x, v);
	uint32_t w = x->v_zero;
	bool changed = false;

	if (dv_nonneg(x, v))
		return true;
	for (unsigned i = 0; i < p.n; i++) {
		struct dv_term t = p.t[i];
		struct dv_poly one;
		uint32_t tv;
		bool all_nonneg = t.c < 0;

		for (unsigned k = 0; k < t.deg && all_nonneg; k++)
			all_nonneg = atom_nonneg(x, t.a[k]);
		memset(&one, 0, sizeof(one));
		one.n = 1;
		one.t[0] = t;
		tv = intern_poly(x, &one);
		for (unsigned k = 0; k < t.deg && all_nonneg; k++) {
			const struct dv_atom *r = &x->atoms[t.a[k]];

			if (r->kind == DV_K_REM && r->launch && dv_nonneg(x, r->a)) {
				tv = dv_subst(x, tv, t.a[k], r->a);
				changed = true;
			}
		}
		w = dv_add(x, w, tv);
	}
	return changed && dv_nonneg(x, w);
}

uint32_t dv_weaken_div(struct dv_ctx *x, uint32_t v)
{
	const struct dv_poly p = *dv_poly_get(x, v);
	uint32_t out = x->v_zero;

	for (unsigned i = 0; i < p.n; i++) {
		struct dv_poly one;
		struct dv_term t = p.t[i];
		uint32_t tv, by = UINT32_MAX;

		for (unsigned k = 0; k < t.deg && by == UINT32_MAX && t.c > 0; k++) {
			const struct dv_atom *d = &x->atoms[t.a[k]];
			const struct dv_poly *b = d->kind == DV_K_DIV && d->launch ? dv_poly_get(x, d->b) : NULL;

			if (b && b->n == 1 && b->t[0].deg == 0 && b->t[0].c > 0 && t.c % b->t[0].c == 0 &&
			    nonneg_rem(x, d->a)) {
				/* c*m * (X / c) <= m * X: drop the atom, scale by X / c */
				by = d->a;
				t.c /= b->t[0].c;
				memmove(&t.a[k], &t.a[k + 1], (size_t)(t.deg - k - 1) * sizeof(t.a[0]));
				t.a[--t.deg] = 0;
			}
		}
		memset(&one, 0, sizeof(one));
		one.n = 1;
		one.t[0] = t;
		tv = intern_poly(x, &one);
		out = dv_add(x, out, by == UINT32_MAX ? tv : dv_mul(x, tv, by));
	}
	return out;
}

uint32_t dv_mset_collapse(struct dv_ctx *x, const struct dv_mset *set)
{
	struct dv_poly r;
	uint8_t seen[DV_MAX_TERMS] = { 0 };

	memset(&r, 0, sizeof(r));
	for (unsigned i = 0; i < set->n; i++) {
		const struct dv_poly p = *dv_poly_get(x, set->v[i]);

		for (unsigned k = 0; k < p.n; k++) {
			struct dv_term t = p.t[k];
			unsigned j;

			for (unsigned a = 0; a < t.deg; a++)
				if (!atom_nonneg(x, t.a[a]))
					return UINT32_MAX;
			for (j = 0; j < r.n && term_cmp(&r.t[j], &t); j++)
				;
			if (j < r.n) {
				if (t.c > r.t[j].c)
					r.t[j].c = t.c;
				seen[j]++;
			} else if (i == 0) {
				/* the first value's monomials, negative ones too: kept when every value
				 * has them */
				if (!poly_add_term(&r, t))
					return UINT32_MAX;
				for (j = 0; j < r.n && term_cmp(&r.t[j], &t); j++)
					;
				memmove(&seen[j + 1], &seen[j], (size_t)(r.n - 1 - j));
				seen[j] = 1;
			} else if (t.c > 0) {
				if (!poly_add_term(&r, t))
					return UINT32_MAX;
				for (j = 0; j < r.n && term_cmp(&r.t[j], &t); j++)
					;
				memmove(&seen[j + 1], &seen[j], (size_t)(r.n - 1 - j));
				seen[j] = 1;
			}
		}
	}
	/* a monomial some value lacks counts 0 there: a negative maximum is kept only when every
	 * value has the monomial */
	for (unsigned j = 0; j < r.n;) {
		if (r.t[j].c == 0 || (r.t[j].c < 0 && seen[j] != set->n)) {
			memmove(&seen[j], &seen[j + 1], (size_t)(r.n - j - 1));
			memmove(&r.t[j], &r.t[j + 1], (r.n - j - 1) * sizeof(r.t[0]));
			memset(&r.t[--r.n], 0, sizeof(r.t[0]));
		} else {
			j++;
		}
	}
	return intern_poly(x, &r);
}

/* out = {a + b : a in p, b in q} (op 0) or {a * b} (op 1) */
static int mset_combine(struct dv_ctx *x, const struct dv_mset *p, const struct dv_mset *q, int op,
			struct dv_mset *out)
{
	struct dv_mset r = { 0 };

	for (unsigned i = 0; i < p->n; i++)
		for (unsigned j = 0; j < q->n; j++) {
			uint32_t v = op ? dv_mul(x, p->v[i], q->v[j]) : dv_add(x, p->v[i], q->v[j]);

			if (dv_has_atom(x, v, DV_A_ANY) || dv_mset_join(x, &r, v) < 0)
				return -1;
		}
	*out = r;
	return 0;
}

/* ------------------------------------------------------------------ upper bounds */

static int upper(struct dv_ctx *x, uint32_t v, uint32_t cs, int depth, struct dv_mset *out);

static int in_upper(struct dv_ctx *x, uint32_t a, const struct dv_in *in, int depth,
		    struct dv_mset *out)
{
	const struct dv_cset *s = dv_cset_get(x, in->cs);

	if (in->back) {
		/* the back edge is taken only under its own guard: v < N there */
		for (unsigned i = s->n; i-- > 0;)
			if (s->c[i].x == in->v && s->c[i].n != DV_NONZERO)
				return upper(x, dv_sub(x, s->c[i].n, dv_const(x, 1)), in->cs, depth, out);
	}
	(void)a;
	return upper(x, in->v, in->cs, depth, out);
}

/* The constant c with v = base + c, or false. */
static bool const_step(struct dv_ctx *x, uint32_t v, uint32_t base, int64_t *c)
{
	const struct dv_poly *p = dv_poly_get(x, dv_sub(x, v, base));

	if (p->n > 1 || (p->n == 1 && p->t[0].deg != 0))
		return false;
	*c = p->n ? p->t[0].c : 0;
	return *c != 0;
}

/* The one back incoming of phi a and its constant step, or -1. */
static int phi_back(struct dv_ctx *x, uint32_t a, int64_t *step)
{
	const struct dv_atom *at = &x->atoms[a];
	int back = -1;

	if (at->kind != DV_K_PHI)
		return -1;
	for (unsigned i = 0; i < at->nin; i++)
		if (at->in[i].back) {
			if (back >= 0)
				return -1;
			back = (int)i;
		}
	if (back < 0 || !const_step(x, at->in[back].v, dv_atom_val(x, a), step))
		return -1;
	return back;
}

/* v is a multiple of c: every coefficient is, once each x - REM(x, c) in it is taken out. */
static bool is_multiple(struct dv_ctx *x, uint32_t v, int64_t c)
{
	const struct dv_poly p = *dv_poly_get(x, v);
	const struct dv_poly *q;

	if (c == 1)
		return true;
	for (unsigned i = 0; i < p.n; i++) {
		const struct dv_atom *r = &x->atoms[p.t[i].a[0]];

		if (p.t[i].deg == 1 && r->kind == DV_K_REM && dv_poly_get(x, r->b)->n == 1 &&
		    dv_poly_get(x, r->b)->t[0].deg == 0 && dv_poly_get(x, r->b)->t[0].c == c)
			v = dv_add(x, v, dv_mul(x, dv_const(x, p.t[i].c),
						dv_sub(x, r->a, dv_atom_val(x, p.t[i].a[0]))));
	}
	q = dv_poly_get(x, v);
	for (unsigned i = 0; i < q->n; i++)
		if (q->t[i].c % c)
			return false;
	return true;
}

/* ub / c for a launch value ub: itself when c is 1, else a DIV atom (C's truncation). */
static uint32_t launch_div(struct dv_ctx *x, uint32_t ub, int64_t c)
{
	uint32_t d;

	if (c == 1)
		return ub;
	if (c <= 0 || c > UINT32_MAX)
		return x->v_any; /* no bound: the span becomes unknown */
	d = dv_atom_get(x, DV_K_DIV, ub, (uint32_t)c);
	if (d == UINT32_MAX) {
		x->oom = true;
		return x->v_any;
	}
	x->atoms[d].a = ub;
	x->atoms[d].b = dv_const(x, c);
	x->atoms[d].launch = 1;
	return dv_atom_val(x, d);
}

/* The most iterations - 1 of the loop whose header holds phi a, from a counter phi of the same
 * header: one counting up by s > 0 from a constant while its next value < N (t <= (N-1-init)/s),
 * or one counting down by s < 0 to exactly 0 (t <= init/|s| - 1, init a multiple of |s|). */
static int trip_upper(struct dv_ctx *x, uint32_t a, uint32_t back_cs, int depth, struct dv_mset *out)
{
	const struct dv_cset s = *dv_cset_get(x, back_cs);

	for (uint32_t c = DV_A_PARAM0 + x->f->nparams; c < x->natoms; c++) {
		struct dv_atom cat = x->atoms[c];
		struct dv_mset r = { 0 }, one;
		int64_t step;
		int b;
		bool ok = true;

		if (cat.kind != DV_K_PHI || cat.key1 != x->atoms[a].key1 || (b = phi_back(x, c, &step)) < 0)
			continue;
		for (unsigned i = 0; i < s.n && ok; i++) {
			int64_t kend = 0; /* a down counter ends at kend: the fact is back - kend != 0 */

			if (s.c[i].x != cat.in[b].v &&
			    !(s.c[i].n == DV_NONZERO && const_step(x, cat.in[b].v, s.c[i].x, &kend)))
				continue;
			for (unsigned k = 0; k < cat.nin && ok; k++) {
				const struct dv_poly *iv = dv_poly_get(x, cat.in[k].v);
				int64_t init = iv->n ? iv->t[0].c : 0, next;

				if (cat.in[k].back)
					continue;
				if (step > 0 && s.c[i].n != DV_NONZERO && dv_is_const(x, cat.in[k].v) &&
				    !__builtin_add_overflow(init, 1, &next))
					ok = upper(x, dv_sub(x, s.c[i].n, dv_const(x, next)), back_cs, depth,
						   &one) == 0;
				else if (step < 0 && s.c[i].n == DV_NONZERO &&
					 is_multiple(x, dv_sub(x, cat.in[k].v, dv_const(x, kend)), -step))
					ok = upper(x, dv_sub(x, cat.in[k].v, dv_const(x, kend)), cat.in[k].cs, depth,
						   &one) == 0;
				else
					ok = false;
				for (unsigned m = 0; ok && m < one.n; m++) {
					uint32_t t = step > 0 ? launch_div(x, one.v[m], step) :
						dv_sub(x, launch_div(x, one.v[m], -step), dv_const(x, 1));

					ok = dv_mset_join(x, &r, t) == 0;
				}
			}
			if (ok && r.n) {
				*out = r;
				return 0;
			}
		}
	}
	return -1;
}

static bool poly_div_exact(struct dv_ctx *x, uint32_t n, uint32_t b, uint32_t *m);

/* A loop's phi a that steps by a constant: its forward values plus step times the most
 * iterations a counter of the same loop allows. */
static int phi_trip_upper(struct dv_ctx *x, uint32_t a, uint32_t cs, int depth, struct dv_mset *out)
{
	struct dv_atom at = x->atoms[a];
	struct dv_mset fwd = { 0 }, trips, one, stepped;
	uint32_t step = PTX_NONE;
	int b = -1;

	(void)cs;
	/* the one back value must be a + step, step made of launch symbols and not negative (a
	 * pointer walking a column steps by 4*n) */
	for (unsigned i = 0; i < at.nin; i++)
		if (at.in[i].back) {
			if (b >= 0)
				return -1;
			b = (int)i;
		}
	if (b >= 0)
		step = dv_sub(x, at.in[b].v, dv_atom_val(x, a));
	if (b < 0 || dv_has_atom(x, step, a) || !dv_is_launch_value(x, step) || !dv_nonneg(x, step) ||
	    trip_upper(x, a, at.in[b].cs, depth, &trips) < 0)
		return -1;
	for (unsigned i = 0; i < at.nin; i++) {
		if (at.in[i].back)
			continue;
		if (upper(x, at.in[i].v, at.in[i].cs, depth, &one) < 0)
			return -1;
		for (unsigned k = 0; k < one.n; k++)
			if (dv_mset_join(x, &fwd, one.v[k]) < 0)
				return -1;
	}
	for (unsigned k = 0; k < trips.n; k++)
		trips.v[k] = dv_mul(x, trips.v[k], step);
	if (mset_combine(x, &fwd, &trips, 0, &stepped) < 0)
		return -1;
	for (unsigned k = 0; k < stepped.n; k++)
		if (dv_mset_join(x, &fwd, stepped.v[k]) < 0)
			return -1;
	*out = fwd;
	return 0;
}

/* A loop's phi a stepping by s >= 0 (launch symbols) beside a counter c of the same header that
 * steps down by a constant d < 0 until its next value is exactly kend: both cross the one back
 * edge together, so a - b*c stays what it was on entry (b = s / -d). Inside the loop c >= kend -
 * d (its last value before the exit), so a <= a0 + b*(c0 - kend + d) for the entry edge's values
 * a0 and c0: the value of the last iteration, with no trip count divided out and no "the loop
 * ran once" case (a counter that starts at kend would wrap, which the analysis assumes away, as
 * trip_upper does). The exit value of the unrolled part of nvcc's loops, k - k%4, comes out
 * exactly so. */
static int phi_pair_upper(struct dv_ctx *x, uint32_t a, int depth, struct dv_mset *out)
{
	struct dv_atom at = x->atoms[a];
	struct dv_cset s;
	uint32_t step, beta;
	int b = -1;

	for (unsigned i = 0; i < at.nin; i++)
		if (at.in[i].back) {
			if (b >= 0)
				return -1;
			b = (int)i;
		}
	if (b < 0)
		return -1;
	step = dv_sub(x, at.in[b].v, dv_atom_val(x, a));
	if (dv_has_atom(x, step, a) || !dv_is_launch_value(x, step) || !dv_nonneg(x, step))
		return -1;
	s = *dv_cset_get(x, at.in[b].cs);
	for (uint32_t c = DV_A_PARAM0 + x->f->nparams; c < x->natoms; c++) {
		struct dv_atom cat = x->atoms[c];
		struct dv_mset r = { 0 }, one;
		int64_t d, kend = 0;
		bool found = false, ok = true;

		if (c == a || cat.kind != DV_K_PHI || cat.key1 != at.key1 || cat.nin != at.nin ||
		    phi_back(x, c, &d) != b || d >= 0 || !poly_div_exact(x, step, dv_const(x, -d), &beta))
			continue;
		/* the back edge is taken only while the counter's next value is not kend */
		for (unsigned i = 0; i < s.n && !found; i++)
			found = s.c[i].n == DV_NONZERO &&
				(s.c[i].x == cat.in[b].v || const_step(x, cat.in[b].v, s.c[i].x, &kend));
		if (!found)
			continue;
		for (unsigned e = 0; e < at.nin && ok; e++) {
			uint32_t c0;

			if (e == (unsigned)b)
				continue;
			c0 = dv_sub(x, cat.in[e].v, dv_const(x, kend));
			ok = is_multiple(x, c0, -d) &&
			     upper(x, dv_add(x, at.in[e].v, dv_mul(x, beta, dv_add(x, c0, dv_const(x, d)))),
				   at.in[e].cs, depth, &one) == 0;
			for (unsigned k = 0; ok && k < one.n; k++)
				ok = dv_mset_join(x, &r, one.v[k]) == 0;
		}
		if (ok && r.n) {
			*out = r;
			return 0;
		}
	}
	return -1;
}

static bool term_div(const struct dv_term *t, const struct dv_term *l, struct dv_term *m);

/* m with n = b * m exactly, by long division checked by multiplying back; false when none. */
static bool poly_div_exact(struct dv_ctx *x, uint32_t n, uint32_t b, uint32_t *m)
{
	const struct dv_poly bp = *dv_poly_get(x, b);
	uint32_t r = n, q = x->v_zero;
	unsigned lb = 0;

	if (bp.n == 0)
		return false;
	for (unsigned i = 1; i < bp.n; i++)
		if (bp.t[i].deg > bp.t[lb].deg)
			lb = i;
	for (unsigned round = 0; round < DV_MAX_TERMS && dv_poly_get(x, r)->n; round++) {
		const struct dv_poly rp = *dv_poly_get(x, r);
		struct dv_poly tp;
		unsigned lr = 0;

		for (unsigned i = 1; i < rp.n; i++)
			if (rp.t[i].deg > rp.t[lr].deg)
				lr = i;
		memset(&tp, 0, sizeof(tp));
		tp.n = 1;
		if (!term_div(&rp.t[lr], &bp.t[lb], &tp.t[0]))
			return false;
		q = dv_add(x, q, intern_poly(x, &tp));
		r = dv_sub(x, n, dv_mul(x, b, q));
	}
	*m = q;
	return dv_mul(x, b, q) == n;
}

/* ------------------------------------------------------------------ induction variables */

/* Phi a of a loop header with one back incoming a + step, step a launch value not 0 (it does
 * not change inside the kernel): its back incoming's index in *back, the step in *step. */
static bool phi_step(struct dv_ctx *x, uint32_t a, int *back, uint32_t *step)
{
	int b = -1;

	if (x->atoms[a].kind != DV_K_PHI || x->atoms[a].nin < 2)
		return false;
	for (unsigned i = 0; i < x->atoms[a].nin; i++)
		if (x->atoms[a].in[i].back) {
			if (b >= 0)
				return false;
			b = (int)i;
		}
	if (b < 0)
		return false;
	*back = b;
	*step = dv_sub(x, x->atoms[a].in[b].v, dv_atom_val(x, a));
	return *step != x->v_zero && !dv_has_atom(x, *step, a) && dv_is_launch_value(x, *step);
}

/* Whether phi a is c times another phi q of its loop (*q, *c): both step by launch values with
 * step(a) = c * step(q), c a launch value, and on every edge entering the loop a = c * q. Then
 * a = c * q on every iteration, by induction: nvcc's strength reduction keeps `i * stride`
 * (CuPy's offsets, a pointer walking a row) as a phi of its own beside the counter i, and only
 * the counter is bounded by the loop's guard. */
static bool phi_multiple(struct dv_ctx *x, uint32_t a, uint32_t *q, uint32_t *c)
{
	uint32_t sa, sq;
	int ba, bq;

	if (!phi_step(x, a, &ba, &sa))
		return false;
	for (uint32_t k = DV_A_PARAM0 + x->f->nparams; k < x->natoms; k++) {
		bool ok = true;

		if (k == a || x->atoms[k].kind != DV_K_PHI || x->atoms[k].key1 != x->atoms[a].key1 ||
		    x->atoms[k].nin != x->atoms[a].nin || !phi_step(x, k, &bq, &sq) || bq != ba ||
		    !poly_div_exact(x, sa, sq, c) || !dv_is_launch_value(x, *c))
			continue;
		/* two phis that are each other's multiple by 1 (or -1): only the later one is
		 * replaced, so a substitution never cycles */
		if (dv_is_const(x, *c) && k > a)
			continue;
		for (unsigned i = 0; i < x->atoms[a].nin && ok; i++)
			ok = (int)i == ba || x->atoms[a].in[i].v == dv_mul(x, *c, x->atoms[k].in[i].v);
		if (ok) {
			*q = k;
			return true;
		}
	}
	return false;
}

uint32_t dv_linearize(struct dv_ctx *x, uint32_t v)
{
	for (unsigned round = 0; round < DV_MAX_TERMS; round++) {
		const struct dv_poly p = *dv_poly_get(x, v);
		uint32_t q, c, a = UINT32_MAX;

		for (unsigned i = 0; i < p.n && a == UINT32_MAX; i++)
			for (unsigned k = 0; k < p.t[i].deg && a == UINT32_MAX; k++)
				if (phi_multiple(x, p.t[i].a[k], &q, &c))
					a = p.t[i].a[k];
		if (a == UINT32_MAX)
			break;
		v = dv_subst(x, v, a, dv_mul(x, c, dv_atom_val(x, q)));
	}
	return v;
}

uint32_t dv_div_pow2_exact(struct dv_ctx *x, uint32_t v, unsigned k)
{
	struct dv_poly p = *dv_poly_get(x, v);
	int64_t m;

	if (k == 0 || k > 62)
		return UINT32_MAX;
	m = (int64_t)1 << k;
	for (unsigned i = 0; i < p.n; i++) {
		if (p.t[i].c % m)
			return UINT32_MAX;
		p.t[i].c /= m;
	}
	return intern_poly(x, &p);
}

/* a / b (b >= 1: a DIV atom is made only then): below N / b when the path has a < N with N a
 * multiple of b (i < rows * w gives i / w < rows), else at most a itself, or a's bound / b for
 * a constant b. */
static int div_upper(struct dv_ctx *x, const struct dv_atom *at, uint32_t cs, int depth, struct dv_mset *out)
{
	const struct dv_cset s = *dv_cset_get(x, cs);
	const struct dv_poly *bp = dv_poly_get(x, at->b);
	struct dv_mset ua;
	uint32_t m;

	for (unsigned i = s.n; i-- > 0;)
		if (s.c[i].n != DV_NONZERO && s.c[i].x == at->a && poly_div_exact(x, s.c[i].n, at->b, &m) &&
		    upper(x, dv_sub(x, m, dv_const(x, 1)), cs, depth, out) == 0)
			return 0;
	if (upper(x, at->a, cs, depth, &ua) < 0)
		return -1;
	if (bp->n == 1 && bp->t[0].deg == 0)
		for (unsigned i = 0; i < ua.n; i++)
			ua.v[i] = launch_div(x, ua.v[i], bp->t[0].c);
	*out = ua;
	return 0;
}

static int atom_upper_uncached(struct dv_ctx *x, uint32_t a, uint32_t cs, int depth, struct dv_mset *out)
{
	struct dv_atom at = x->atoms[a];
	struct dv_mset r = { 0 }, one;

	if (a <= PTX_SR_TID_Z) /* PTX_SR_TID_X is 0 */
		return upper(x, dv_sub(x, dv_atom_val(x, a + PTX_SR_NTID_X), dv_const(x, 1)), cs, depth, out);
	if (a >= PTX_SR_CTAID_X && a <= PTX_SR_CTAID_Z)
		return upper(x, dv_sub(x, dv_atom_val(x, a + 3), dv_const(x, 1)), cs, depth, out);
	switch (at.kind) {
	case DV_K_PHI:
	case DV_K_SEL:
		for (unsigned i = 0; i < at.nin; i++) {
			if (in_upper(x, a, &at.in[i], depth, &one) < 0) {
				if (at.kind != DV_K_PHI)
					return -1;
				if (phi_pair_upper(x, a, depth, out) == 0)
					return 0;
				return phi_trip_upper(x, a, cs, depth, out);
			}
			for (unsigned k = 0; k < one.n; k++)
				if (dv_mset_join(x, &r, one.v[k]) < 0)
					return -1;
		}
		*out = r;
		return at.nin ? 0 : -1;
	case DV_K_MIN:
		if (upper(x, at.b, cs, depth, out) == 0)
			return 0;
		return upper(x, at.a, cs, depth, out);
	case DV_K_REM:
	case DV_K_Z:
		return upper(x, dv_sub(x, at.b, dv_const(x, 1)), cs, depth, out);
	case DV_K_SIGN:
		return upper(x, dv_const(x, 1), cs, depth, out);
	case DV_K_DIV:
		return div_upper(x, &at, cs, depth, out);
	}
	return -1;
}

static int atom_upper(struct dv_ctx *x, uint32_t a, uint32_t cs, int depth, struct dv_mset *out)
{
	int rc;

	if (x->atoms[a].busy || !atom_nonneg(x, a))
		return -1;
	x->atoms[a].busy = 1;
	rc = atom_upper_uncached(x, a, cs, depth, out);
	x->atoms[a].busy = 0;
	return rc;
}

/* The monomial of x with most index atoms (the one to find in an offset), or -1. */
static int leading_term(const struct dv_ctx *x, const struct dv_poly *p)
{
	int best = -1;
	unsigned bestn = 0;

	for (unsigned i = 0; i < p->n; i++) {
		unsigned n = 0;

		for (unsigned k = 0; k < p->t[i].deg; k++)
			n += !dv_is_launch_atom(x, p->t[i].a[k]) && !is_absorbing(p->t[i].a[k]);
		if (n > bestn) {
			best = (int)i;
			bestn = n;
		}
	}
	return best;
}

/* t = L * m: m's atoms (t's minus L's, as multisets) into *m; false when L does not divide t. */
static bool term_div(const struct dv_term *t, const struct dv_term *l, struct dv_term *m)
{
	unsigned i = 0, j = 0;

	if (l->c == 0 || (l->c == -1 && t->c == INT64_MIN) || t->c % l->c != 0)
		return false;
	memset(m, 0, sizeof(*m));
	m->c = t->c / l->c;
	while (i < t->deg) {
		if (j < l->deg && t->a[i] == l->a[j]) {
			i++;
			j++;
		} else if (j < l->deg && l->a[j] < t->a[i]) {
			return false;
		} else {
			m->a[m->deg++] = t->a[i++];
		}
	}
	return j == l->deg;
}

/* Rewrites v = X*m + rest as Z*m + rest for each constraint X < N of cs (newest first), Z an
 * atom bounded by N - 1: the guard i < n then bounds 4*i + 8 by 4*(n-1) + 8. Exact algebra, so
 * any rewrite is sound; it only helps when the offset is built from the guarded value. */
static uint32_t factor(struct dv_ctx *x, uint32_t v, uint32_t cs)
{
	const struct dv_cset s = *dv_cset_get(x, cs);

	for (unsigned i = s.n; i-- > 0;) {
		struct dv_poly xp;
		int lt;
		uint32_t z;
		bool nn;

		if (s.c[i].n == DV_NONZERO)
			continue;
		xp = *dv_poly_get(x, s.c[i].x);
		lt = leading_term(x, &xp);
		if (lt < 0)
			continue;
		/* X >= 0 from the path's other constraints (at = i - len0 after i >= len0) makes Z
		 * a different atom: one not negative whatever the path */
		nn = !dv_nonneg(x, s.c[i].x) && dv_nonneg_under(x, s.c[i].x, cs);
		z = dv_atom_get(x, DV_K_Z, s.c[i].x | (nn ? DV_Z_NONNEG : 0), s.c[i].n);
		if (z == UINT32_MAX)
			return v;
		x->atoms[z].a = s.c[i].x;
		x->atoms[z].b = s.c[i].n;
		for (int round = 0; round < DV_MAX_TERMS; round++) {
			const struct dv_poly *p = dv_poly_get(x, v);
			struct dv_term m;
			struct dv_poly mp;
			unsigned k;

			for (k = 0; k < p->n; k++)
				if (term_div(&p->t[k], &xp.t[lt], &m))
					break;
			if (k == p->n)
				break;
			memset(&mp, 0, sizeof(mp));
			mp.n = 1;
			mp.t[0] = m;
			{
				uint32_t mv = intern_poly(x, &mp);

				v = dv_add(x, dv_sub(x, v, dv_mul(x, s.c[i].x, mv)),
					   dv_mul(x, dv_atom_val(x, z), mv));
			}
		}
	}
	return v;
}

static int upper(struct dv_ctx *x, uint32_t v, uint32_t cs, int depth, struct dv_mset *out)
{
	struct dv_mset sum = { 1, { x->v_zero } };
	struct dv_poly p;

	if (depth > DV_MAX_DEPTH || x->oom)
		return -1;
	p = *dv_poly_get(x, factor(x, v, cs));
	for (unsigned i = 0; i < p.n; i++) {
		struct dv_term t = p.t[i], launch = t;
		struct dv_poly lp;
		struct dv_mset prod;
		bool indexed = false;

		launch.deg = 0;
		memset(launch.a, 0, sizeof(launch.a));
		for (unsigned k = 0; k < t.deg; k++) {
			if (is_absorbing(t.a[k]) || x->atoms[t.a[k]].kind == DV_K_OPAQUE)
				return -1; /* (an opaque symbol may be negative: no bound drops it) */
			if (dv_is_launch_atom(x, t.a[k]))
				launch.a[launch.deg++] = t.a[k];
			else
				indexed = true;
		}
		if (indexed && t.c < 0) {
			/* c * (index atoms >= 0) * (launch symbols >= 0) <= 0: drop it */
			for (unsigned k = 0; k < t.deg; k++)
				if (!dv_is_launch_atom(x, t.a[k]) && !atom_nonneg(x, t.a[k]))
					return -1;
			continue;
		}
		memset(&lp, 0, sizeof(lp));
		lp.n = 1;
		lp.t[0] = launch;
		prod.n = 1;
		prod.v[0] = intern_poly(x, &lp);
		for (unsigned k = 0; k < t.deg; k++) {
			struct dv_mset ua;

			if (dv_is_launch_atom(x, t.a[k]))
				continue;
			if (atom_upper(x, t.a[k], cs, depth + 1, &ua) < 0 ||
			    mset_combine(x, &prod, &ua, 1, &prod) < 0)
				return -1;
		}
		if (mset_combine(x, &sum, &prod, 0, &sum) < 0)
			return -1;
	}
	*out = sum;
	return 0;
}

int dv_upper(struct dv_ctx *x, uint32_t v, uint32_t cs, struct dv_mset *out)
{
	return upper(x, v, cs, 0, out);
}

/* ------------------------------------------------------------------ text */

static const char *atom_name(const struct dv_ctx *x, uint32_t a, char *buf, size_t len)
{
	static const char *const dims[] = { [PTX_SR_NTID_X] = "bx", [PTX_SR_NTID_Y] = "by",
					    [PTX_SR_NTID_Z] = "bz", [PTX_SR_NCTAID_X] = "gx",
					    [PTX_SR_NCTAID_Y] = "gy", [PTX_SR_NCTAID_Z] = "gz" };

	if (x->atoms[a].kind == DV_K_PARAM) {
		snprintf(buf, len, "p%u", a - DV_A_PARAM0);
		return buf;
	}
	if (x->atoms[a].kind == DV_K_FIELD) {
		uint32_t k2 = x->atoms[a].key2;

		snprintf(buf, len, "p%u@%u:%c%u", x->atoms[a].key1, k2 / 32, k2 & 16 ? 'i' : 'u', (k2 & 15) * 8);
		return buf;
	}
	return a <= PTX_SR_NCTAID_Z && dims[a] ? dims[a] : NULL;
}

int dv_format(const struct dv_ctx *x, uint32_t v, char *buf, size_t len)
{
	const struct dv_poly *p = dv_poly_get(x, v);
	size_t at = 0;

	if (len)
		buf[0] = '\0';
	if (p->n == 0)
		return snprintf(buf, len, "0") < (int)len ? 0 : -CF_ERANGE;
	for (unsigned i = 0; i < p->n; i++) {
		const struct dv_term *t = &p->t[i];
		int n;

		if (t->c == INT64_MIN)
			return -CF_ERANGE;
		n = snprintf(buf + at, len - at, "%s%lld", i == 0 ? (t->c < 0 ? "-" : "") :
				 (t->c < 0 ? " - " : " + "), (long long)(t->c < 0 ? -t->c : t->c));

		if (n < 0 || (size_t)n >= len - at)
			return -CF_ERANGE;
		at += (size_t)n;
		for (unsigned k = 0; k < t->deg; k++) {
			char nb[256];
			const char *name = atom_name(x, t->a[k], nb, sizeof(nb));
			const struct dv_atom *am = &x->atoms[t->a[k]];

			if (!name && (am->kind == DV_K_DIV || am->kind == DV_K_REM) && am->launch) {
				char inner[224];

				if (dv_format(x, am->a, inner, sizeof(inner)) < 0)
					return -CF_ERANGE;
				snprintf(nb, sizeof(nb), "((%s)%c%lld)", inner, am->kind == DV_K_DIV ? '/' : '%',
					 (long long)dv_poly_get(x, am->b)->t[0].c);
				name = nb;
			}
			if (!name)
				return -CF_EINVAL;
			n = snprintf(buf + at, len - at, "*%s", name);
			if (n < 0 || (size_t)n >= len - at)
				return -CF_ERANGE;
			at += (size_t)n;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ context */

int dv_ctx_init(struct dv_ctx *x, const struct ptx_module *m, const struct ptx_func *f)
{
	memset(x, 0, sizeof(*x));
	x->m = m;
	x->f = f;
	x->polys.recsz = sizeof(struct dv_poly);
	x->csets.recsz = sizeof(struct dv_cset);
	x->preds.recsz = 16;
	for (uint32_t a = 0; a < DV_A_PARAM0 + f->nparams; a++) {
		uint32_t id = dv_atom_get(x, a < DV_A_PARAM0 ? DV_K_FIXED : DV_K_PARAM, a, 0);

		if (id != a)
			return -CF_ENOMEM;
		x->atoms[a].launch = a >= DV_A_PARAM0;
	}
	{
		struct dv_cset empty;

		memset(&empty, 0, sizeof(empty));
		if (dv_pool_intern(&x->csets, &empty) != 0)
			return -CF_ENOMEM;
	}
	x->v_any = 0; /* provisional, for intern_poly's fallback */
	x->v_zero = dv_const(x, 0);
	x->v_any = dv_atom_val(x, DV_A_ANY);
	x->v_loaded = dv_atom_val(x, DV_A_LOADED);
	x->v_local = dv_atom_val(x, DV_A_LOCAL);
	return x->oom ? -CF_ENOMEM : 0;
}

void dv_ctx_fini(struct dv_ctx *x)
{
	free(x->polys.data);
	free(x->polys.tab);
	free(x->csets.data);
	free(x->csets.tab);
	free(x->preds.data);
	free(x->preds.tab);
	free(x->atoms);
}
