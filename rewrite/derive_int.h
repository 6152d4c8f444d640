/* derive_int.h - internals of the PTX-derived card (derive_card.c interprets a kernel,
 * derive_bound.c holds the values it computes with and bounds them). rewrite layer; private to
 * those two files and their unit test.
 *
 * A value is a polynomial with integer coefficients over atoms, interned in a pool so that two
 * equal values have one id (the interpretation compares states by id to find its fixpoint).
 * Atoms are either launch symbols (integer parameters p0..pN, the block and grid dimensions: a
 * derived span is written in them) or index atoms (thread and block indices, loop variables,
 * remainders, selections, constraint substitutes: bounded away before a span is written), or
 * one of three absorbing atoms: ANY (an unknown value), LOADED (a value read from memory: a
 * pointer made of it is "indirect"), LOCAL (an address into shared, local or parameter space).
 * A monomial holding an absorbing atom collapses to that atom, so p0 + 4*LOADED keeps its base
 * pointer p0 and an unknown offset.
 *
 * A constraint X < N (both values) holds on a path once a guard proved it; a constraint set is
 * interned like a value. Bounds are max-sets: the maximum of up to DV_MSET values over launch
 * symbols, what a card writes as max(a, max(b, ...)).
 *
 * Assumptions (written in every derived card as a note): integer parameters that scale or bound
 * an index are not negative (the PTX types most are declared with, .u32 / .u64, make the card
 * read them so), and index arithmetic does not wrap. */
#ifndef RW_DERIVE_INT_H
#define RW_DERIVE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "driver/ptx.h"

#define DV_MAX_TERMS 16 /* monomials of one value */
#define DV_MAX_DEG 4    /* atoms of one monomial */
#define DV_MAX_CONS 12  /* constraints of one path (the oldest are dropped: weaker, still sound) */
#define DV_MSET 8       /* values of one max-set */
#define DV_MAX_IN 8     /* incoming values of a join atom */

/* Fixed atoms: the special registers by enum ptx_special (tid, ntid, ctaid, nctaid), then: */
enum {
	DV_A_ANY = 12,    /* an unknown value */
	DV_A_LOADED,      /* a value loaded from memory */
	DV_A_LOCAL,       /* an address into shared / local / param space */
	DV_A_PARAM0,      /* parameter k is atom DV_A_PARAM0 + k; dynamic atoms follow */
};

enum dv_atom_kind {
	DV_K_FIXED,       /* a special register or an absorbing atom */
	DV_K_PARAM,       /* an integer parameter (launch symbol) */
	DV_K_PHI,         /* a register that differs between the edges entering a block */
	DV_K_SEL,         /* selp / max / a guarded write: one of its incoming values */
	DV_K_MIN,         /* min(a, b) */
	DV_K_REM,         /* a % b with a >= 0 */
	DV_K_Z,           /* X of a constraint X < N, factored out of an offset */
	DV_K_DIV,         /* a / c (C's truncation), c a constant > 0: a launch symbol when a is
	                   * made of launch symbols, else an index atom that needs a >= 0 */
	DV_K_SIGN,        /* a's sign bit (0 or 1), of nvcc's signed-division idiom */
	DV_K_OPAQUE,      /* an operation cufold does not model (popc, clz, bfind, brev) of launch
	                   * symbols: the same in every thread, of unknown value and sign; a launch
	                   * symbol no span may name, and no bound is made of */
	DV_K_FIELD,       /* the bytes of a by-value struct parameter at a fixed offset: key1 the
	                   * parameter, key2 offset * 32 + 16 if signed + bytes. A launch symbol (a
	                   * span names it NAME@OFF:T); an 8-byte field is also a pointer base like
	                   * a pointer parameter */
};

struct dv_term {
	int64_t c;                    /* coefficient, never 0 */
	uint16_t a[DV_MAX_DEG];       /* atoms, ascending; unused slots 0 */
	uint8_t deg;                  /* atoms used */
	uint8_t pad[7];               /* zero, so values intern by their bytes */
};

struct dv_poly {
	uint32_t n;                   /* monomials, sorted (dv_term_cmp) */
	uint32_t pad;
	struct dv_term t[DV_MAX_TERMS];
};

#define DV_NONZERO UINT32_MAX /* a constraint's n for "x != 0" */

struct dv_cons {
	uint32_t x, n;                /* value ids: x < n holds (n DV_NONZERO: x != 0) */
};

struct dv_cset {
	uint32_t n;                   /* constraints, newest last */
	struct dv_cons c[DV_MAX_CONS];
};

struct dv_in {
	uint32_t v;                   /* incoming value */
	uint32_t cs;                  /* constraint set where it comes from */
	uint8_t back;                 /* comes over a back edge (v is in terms of the atom itself) */
};

struct dv_atom {
	uint8_t kind;                 /* enum dv_atom_kind */
	uint8_t busy;                 /* being bounded (a cycle fails) */
	uint8_t launch;               /* a launch symbol: a parameter, or DIV of launch symbols */
	int8_t nonneg;                /* cached: 1 yes, 0 no, -1 not computed */
	uint32_t key1, key2;          /* identity: PHI (block, reg), SEL/MIN/REM/DIV (insn, 0), Z (x, n) */
	uint32_t a, b;                /* MIN: a, b; REM, DIV: dividend, divisor; Z: x, n */
	uint32_t nin;                 /* PHI / SEL incoming values */
	struct dv_in in[DV_MAX_IN];
};

/* A pool of fixed-size records, interned by their bytes. */
struct dv_pool {
	size_t recsz;                 /* bytes of a record */
	unsigned char *data;          /* records, by id */
	uint32_t n, cap;              /* records used, allocated */
	uint32_t *tab;                /* open-addressing table of id + 1 (0 = empty) */
	uint32_t tabcap;              /* slots, a power of two */
};

struct dv_mset {
	uint32_t n;                   /* values (each over launch symbols only) */
	uint32_t v[DV_MSET];
};

/* Everything one derivation computes with. */
struct dv_ctx {
	const struct ptx_module *m;
	const struct ptx_func *f;
	struct dv_pool polys;         /* struct dv_poly */
	struct dv_pool csets;         /* struct dv_cset */
	struct dv_pool preds;         /* struct dv_pred (derive_card.c) */
	struct dv_atom *atoms;        /* by id (fixed and parameter atoms included) */
	uint32_t natoms, capatoms;
	bool oom;                     /* an allocation failed: the derivation refuses */
	uint32_t v_zero, v_any, v_loaded, v_local; /* interned ids of 0, ANY, LOADED, LOCAL */
};

int dv_ctx_init(struct dv_ctx *x, const struct ptx_module *m, const struct ptx_func *f);
void dv_ctx_fini(struct dv_ctx *x);

/* Interning: the id of the record (copied when new); UINT32_MAX when out of memory. */
uint32_t dv_pool_intern(struct dv_pool *p, const void *rec);
static inline const void *dv_pool_get(const struct dv_pool *p, uint32_t id)
{
	return p->data + (size_t)id * p->recsz;
}
static inline const struct dv_poly *dv_poly_get(const struct dv_ctx *x, uint32_t id)
{
	return dv_pool_get(&x->polys, id);
}
static inline const struct dv_cset *dv_cset_get(const struct dv_ctx *x, uint32_t id)
{
	return dv_pool_get(&x->csets, id);
}

/* Values. Each returns an interned id; an overflow of terms or degree yields ANY (keeping the
 * base pointer when one operand had it: see dv_unknown_of). */
uint32_t dv_const(struct dv_ctx *x, int64_t c);
uint32_t dv_atom_val(struct dv_ctx *x, uint32_t atom);
uint32_t dv_add(struct dv_ctx *x, uint32_t a, uint32_t b);
uint32_t dv_sub(struct dv_ctx *x, uint32_t a, uint32_t b);
uint32_t dv_mul(struct dv_ctx *x, uint32_t a, uint32_t b);
/* The value of an operation cufold does not model, from its operands: base pointer + ANY when
 * exactly one operand holds a pointer parameter, LOADED when one holds LOADED, else ANY. */
uint32_t dv_unknown_of(struct dv_ctx *x, const uint32_t *ops, unsigned n);
/* Whether value v is a constant (no atom). */
bool dv_is_const(const struct dv_ctx *x, uint32_t v);
/* Whether value v holds atom a anywhere. */
bool dv_has_atom(const struct dv_ctx *x, uint32_t v, uint32_t a);
/* The pointer v is based on, as an atom id minus DV_A_PARAM0: the one 8-byte parameter or
 * 8-byte struct field (DV_K_FIELD) appearing as a monomial of its own with coefficient 1; a
 * result below f->nparams is that parameter. -1 when none, -2 when more than one or used
 * otherwise too. */
int dv_base_param(const struct dv_ctx *x, uint32_t v);
/* v with atom a replaced by value r everywhere (ANY when a product grows too large). */
uint32_t dv_subst(struct dv_ctx *x, uint32_t v, uint32_t a, uint32_t r);
/* v >= 0 on every path where constraint set cs holds: dv_nonneg, or v = k*(N - X - 1) + w with
 * X < N one of cs's constraints, k > 0 and w provably not negative. */
bool dv_nonneg_under(struct dv_ctx *x, uint32_t v, uint32_t cs);
/* The dynamic atom of that identity, UINT32_MAX when none was made. */
uint32_t dv_atom_find(const struct dv_ctx *x, enum dv_atom_kind kind, uint32_t key1, uint32_t key2);
/* Atom ids for dynamic atoms (found or made). UINT32_MAX when out of memory. */
uint32_t dv_atom_get(struct dv_ctx *x, enum dv_atom_kind kind, uint32_t key1, uint32_t key2);
static inline bool dv_is_launch_atom(const struct dv_ctx *x, uint32_t a)
{
	return x->atoms[a].launch ||
	       (a <= PTX_SR_NCTAID_Z && ((a >= PTX_SR_NTID_X && a <= PTX_SR_NTID_Z) || a >= PTX_SR_NCTAID_X));
}

/* v with each loop phi that is a launch-value multiple c of a counter phi of the same loop
 * (the same steps times c, the same values times c entering the loop) replaced by c * counter:
 * exact algebra. */
uint32_t dv_linearize(struct dv_ctx *x, uint32_t v);
/* v / 2^k (0 < k <= 62) when every coefficient of v is a multiple of 2^k, else UINT32_MAX: a
 * right shift of (w << k) is w, given that w << k does not wrap. */
uint32_t dv_div_pow2_exact(struct dv_ctx *x, uint32_t v, unsigned k);
/* Whether v is made of launch symbols only (a span may name it). */
bool dv_is_launch_value(const struct dv_ctx *x, uint32_t v);

/* Constraint sets. */
uint32_t dv_cset_add(struct dv_ctx *x, uint32_t cs, uint32_t xv, uint32_t nv);
uint32_t dv_cset_meet(struct dv_ctx *x, uint32_t a, uint32_t b); /* the constraints both hold */

/* Bounds. dv_upper: a max-set of values over launch symbols that bounds v from above on every
 * path where cs holds; 0 or -1 when it cannot. dv_nonneg: v >= 0 provable. */
int dv_upper(struct dv_ctx *x, uint32_t v, uint32_t cs, struct dv_mset *out);
bool dv_nonneg(struct dv_ctx *x, uint32_t v);
/* A constant lower bound of v (parameters taken as >= 0, block and grid sizes as >= 1, loop
 * variables from their first value when they only grow); false when none is found. */
bool dv_lower(struct dv_ctx *x, uint32_t v, int64_t *low);
/* out |= {v}, keeping only values no other value of the set provably dominates; -1 when
 * more than DV_MSET remain. */
int dv_mset_join(struct dv_ctx *x, struct dv_mset *out, uint32_t v);

/* v with each monomial c*m*(X/c) of a launch division by a constant (c > 0, X >= 0) written as
 * m*X, which is not smaller: a bound a card can say in fewer words, and compare with others
 * (16*(k/4) <= 4*k). */
uint32_t dv_weaken_div(struct dv_ctx *x, uint32_t v);

/* One value >= every value of set: each monomial with the largest coefficient any value gives
 * it (0 where a value lacks it), when every monomial is provably >= 0; UINT32_MAX otherwise. A
 * shorter, wider bound for a card expression that would be too long. */
uint32_t dv_mset_collapse(struct dv_ctx *x, const struct dv_mset *set);

/* Writes value v (over launch symbols) as a card expression. */
int dv_format(const struct dv_ctx *x, uint32_t v, char *buf, size_t len);

#endif
