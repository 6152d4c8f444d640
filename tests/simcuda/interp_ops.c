/* interp_ops.c - the PTX interpreter's instruction handlers, and the table that picks one for
 * an opcode, its modifiers and type. tests/simcuda layer.
 *
 * A handler runs one instruction for every lane of a mask (the whole warp in the common case,
 * where the lane loop has a constant trip count and the compiler vectorizes it). Integer
 * handlers serve every width: inputs are zero-extended (invariant 1 of interp_int.h), so
 * modular operations are computed in 64 bits and masked with in->wm; signed ones sign-extend
 * from in->size bits first. Float rounding other than to-nearest is set around the call by the
 * executor (fesetround), so the handlers are written for the current mode.
 *
 * Approximate instructions (documented error of the PTX ISA in brackets) are computed with
 * the C library, which is at least as accurate; results can differ from a GPU's in the last
 * bits: ex2.approx.f32 [2 ulp] as exp2f, lg2.approx.f32 [2^-22.6 abs] as log2f,
 * rcp/div/sqrt.approx [1-2 ulp] as the correctly rounded operation, rsqrt.approx as
 * 1/sqrtf, sin/cos.approx as sinf/cosf, tanh.approx as tanhf. NaN results keep the host's
 * bits (the GPU returns 0x7fffffff). */
#include "interp_int.h"
#include "oracle.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define W struct ii_warp *w, const struct ii_insn *in, uint32_t m
#define LANES(...)                                                                          \
	do {                                                                                \
		if (m == II_FULL) {                                                         \
			for (unsigned int l = 0; l < II_LANES; l++) {                       \
				__VA_ARGS__;                                                \
			}                                                                   \
		} else {                                                                    \
			for (uint32_t mm_ = m; mm_; mm_ &= mm_ - 1) {                       \
				unsigned int l = (unsigned int)__builtin_ctz(mm_);          \
				__VA_ARGS__;                                                \
			}                                                                   \
		}                                                                           \
	} while (0)
#define DST uint64_t *D = II_R(w, in->d[0])
#define SRC1 const uint64_t *A = II_R(w, in->s[0])
#define SRC2 SRC1, *B = II_R(w, in->s[1])
#define SRC3 SRC2, *C = II_R(w, in->s[2])

enum { CMP_EQ, CMP_NE, CMP_LT, CMP_LE, CMP_GT, CMP_GE, CMP_EQU, CMP_NEU, CMP_LTU, CMP_LEU, CMP_GTU,
       CMP_GEU, CMP_NUM, CMP_NAN };
enum { BOOL_NONE, BOOL_AND, BOOL_OR, BOOL_XOR };
enum { AT_ADD, AT_MIN, AT_MAX, AT_AND, AT_OR, AT_XOR, AT_EXCH, AT_CAS, AT_INC, AT_DEC };
enum { IRND_NONE, IRND_RNI, IRND_RZI, IRND_RMI, IRND_RPI };
enum { SHFL_UP, SHFL_DOWN, SHFL_BFLY, SHFL_IDX };
enum { VOTE_ALL, VOTE_ANY, VOTE_UNI, VOTE_BALLOT };

static inline int64_t sx(uint64_t v, unsigned int bits)
{
	return bits >= 64 ? (int64_t)v : (int64_t)(v << (64 - bits)) >> (64 - bits);
}

static inline float f32(uint64_t v)
{
	uint32_t u = (uint32_t)v;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static inline uint64_t b32(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline double f64(uint64_t v)
{
	double d;

	memcpy(&d, &v, sizeof(d));
	return d;
}

static inline uint64_t b64(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

static inline uint64_t mask_bits(unsigned int n)
{
	return n >= 64 ? ~0ull : (1ull << n) - 1;
}

/* .ftz: a subnormal becomes a zero of the same sign. */
static inline float ftz(float x)
{
	return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x;
}

static inline float fin(const struct ii_insn *in, float x)
{
	return in->ftz ? ftz(x) : x;
}

static inline float fout(const struct ii_insn *in, float x)
{
	if (in->ftz)
		x = ftz(x);
	if (in->sat)
		x = isnan(x) ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x;
	return x;
}

static inline double dout(const struct ii_insn *in, double x)
{
	if (in->sat)
		x = isnan(x) ? 0.0 : x < 0.0 ? 0.0 : x > 1.0 ? 1.0 : x;
	return x;
}

/* ------------------------------------------------------------------ integer */

#define IOP2(name, expr)                                                                    \
	static void name(W)                                                                 \
	{                                                                                   \
		DST;                                                                        \
		SRC2;                                                                       \
		const uint64_t wm = in->wm;                                                 \
		const unsigned int bits = in->size;                                         \
		(void)bits;                                                                 \
		LANES({                                                                     \
			uint64_t a = A[l], b = B[l];                                        \
			D[l] = (expr) & wm;                                                 \
		});                                                                         \
	}
#define IOP1(name, expr)                                                                    \
	static void name(W)                                                                 \
	{                                                                                   \
		DST;                                                                        \
		SRC1;                                                                       \
		const uint64_t wm = in->wm;                                                 \
		const unsigned int bits = in->size;                                         \
		(void)bits;                                                                 \
		LANES({                                                                     \
			uint64_t a = A[l];                                                  \
			D[l] = (expr) & wm;                                                 \
		});                                                                         \
	}
#define IOP3(name, expr)                                                                    \
	static void name(W)                                                                 \
	{                                                                                   \
		DST;                                                                        \
		SRC3;                                                                       \
		const uint64_t wm = in->wm;                                                 \
		const unsigned int bits = in->size;                                         \
		(void)bits;                                                                 \
		LANES({                                                                     \
			uint64_t a = A[l], b = B[l], c = C[l];                              \
			D[l] = (expr) & wm;                                                 \
		});                                                                         \
	}

__extension__ typedef unsigned __int128 ii_u128;
__extension__ typedef __int128 ii_s128;

static inline uint64_t hi_u(uint64_t a, uint64_t b, unsigned int bits)
{
	return bits >= 64 ? (uint64_t)(((ii_u128)a * b) >> 64) : (a * b) >> bits;
}

static inline uint64_t hi_s(uint64_t a, uint64_t b, unsigned int bits)
{
	if (bits >= 64)
		return (uint64_t)(((ii_s128)(int64_t)a * (int64_t)b) >> 64);
	return (uint64_t)((sx(a, bits) * sx(b, bits)) >> bits);
}

static inline uint64_t div_s(uint64_t a, uint64_t b, unsigned int bits)
{
	int64_t x = sx(a, bits), y = sx(b, bits);

	if (y == 0)
		return ~0ull;
	if (y == -1)
		return (uint64_t)0 - (uint64_t)x;
	return (uint64_t)(x / y);
}

static inline uint64_t rem_s(uint64_t a, uint64_t b, unsigned int bits)
{
	int64_t x = sx(a, bits), y = sx(b, bits);

	if (y == 0)
		return a;
	if (y == -1)
		return 0;
	return (uint64_t)(x % y);
}

static inline uint64_t shr_s(uint64_t a, uint64_t b, unsigned int bits)
{
	return (uint64_t)(sx(a, bits) >> (b >= bits ? bits - 1 : b));
}

static inline uint64_t brev(uint64_t a, unsigned int bits)
{
	uint64_t r = 0;

	for (unsigned int i = 0; i < bits; i++)
		r |= ((a >> i) & 1) << (bits - 1 - i);
	return r;
}

static inline uint64_t bfe(uint64_t a, uint64_t b, uint64_t c, unsigned int bits, bool sgn)
{
	unsigned int pos = (unsigned int)(b & 0xff), len = (unsigned int)(c & 0xff), keep;
	uint64_t field, sbit = 0;

	if (len == 0)
		return 0;
	keep = pos >= bits ? 0 : (len < bits - pos ? len : bits - pos);
	field = pos >= bits ? 0 : (a >> pos) & mask_bits(keep);
	if (sgn) {
		unsigned int top = pos + len - 1 < bits - 1 ? pos + len - 1 : bits - 1;

		sbit = (a >> top) & 1;
	}
	if (sbit)
		field |= ~mask_bits(keep);
	return field;
}

static inline uint64_t bfi(uint64_t f, uint64_t b, uint64_t c, uint64_t d, unsigned int bits)
{
	unsigned int pos = (unsigned int)(c & 0xff), len = (unsigned int)(d & 0xff);
	uint64_t mk;

	if (len == 0 || pos >= bits)
		return b;
	mk = mask_bits(len) << pos;
	return (b & ~mk) | ((f << pos) & mk);
}

static inline uint64_t prmt(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t t = (a & 0xffffffffu) | (b << 32), r = 0;

	for (unsigned int i = 0; i < 4; i++) {
		unsigned int sel = (unsigned int)(c >> (4 * i)) & 0xf;
		uint64_t byte = (t >> (8 * (sel & 7))) & 0xff;

		if (sel & 8)
			byte = (byte & 0x80) ? 0xff : 0;
		r |= byte << (8 * i);
	}
	return r;
}

static inline uint64_t lop3(uint64_t a, uint64_t b, uint64_t c, unsigned int lut)
{
	uint64_t r = 0;

	for (unsigned int i = 0; i < 8; i++)
		if ((lut >> i) & 1)
			r |= ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
	return r;
}

IOP2(h_add, a + b)
IOP2(h_sub, a - b)
IOP2(h_mul_lo, a * b)
IOP2(h_mul_hi_u, hi_u(a, b, bits))
IOP2(h_mul_hi_s, hi_s(a, b, bits))
IOP2(h_mul_wide_u, a * b)
IOP2(h_mul_wide_s, (uint64_t)(sx(a, bits) * sx(b, bits)))
IOP3(h_mad_lo, a * b + c)
IOP3(h_mad_hi_u, hi_u(a, b, bits) + c)
IOP3(h_mad_hi_s, hi_s(a, b, bits) + c)
IOP3(h_mad_wide_u, a * b + c)
IOP3(h_mad_wide_s, (uint64_t)(sx(a, bits) * sx(b, bits)) + c)
IOP2(h_div_u, b ? a / b : ~0ull)
IOP2(h_div_s, div_s(a, b, bits))
IOP2(h_rem_u, b ? a % b : a)
IOP2(h_rem_s, rem_s(a, b, bits))
IOP2(h_min_u, a < b ? a : b)
IOP2(h_max_u, a > b ? a : b)
IOP2(h_min_s, sx(a, bits) < sx(b, bits) ? a : b)
IOP2(h_max_s, sx(a, bits) > sx(b, bits) ? a : b)
IOP2(h_and, a & b)
IOP2(h_or, a | b)
IOP2(h_xor, a ^ b)
IOP2(h_shl, b >= bits ? 0 : a << b)
IOP2(h_shr_u, b >= bits ? 0 : a >> b)
IOP2(h_shr_s, shr_s(a, b, bits))
IOP1(h_not, ~a)
IOP1(h_cnot, a == 0)
IOP1(h_neg, (uint64_t)0 - a)
IOP1(h_abs_s, sx(a, bits) < 0 ? (uint64_t)0 - a : a)
IOP1(h_popc, (uint64_t)__builtin_popcountll(a))
IOP1(h_clz, a ? (uint64_t)(__builtin_clzll(a) - (64 - bits)) : bits)
IOP1(h_brev, brev(a, bits))
IOP1(h_mov, a)
IOP3(h_bfe_u, bfe(a, b, c, bits, false))
IOP3(h_bfe_s, bfe(a, b, c, bits, true))
IOP3(h_prmt, prmt(a, b, c))
IOP3(h_lop3, lop3(a, b, c, (unsigned int)in->off))
IOP3(h_selp, c ? a : b)

/* shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: funnel shift of b:a by c (aux: 1 = right, off: 1 =
 * clamp). */
static inline uint64_t shf(uint64_t a, uint64_t b, uint64_t c, bool right, bool clamp)
{
	uint64_t both = (b << 32) | (a & 0xffffffffu);
	unsigned int n = clamp ? (c > 32 ? 32 : (unsigned int)c) : (unsigned int)c & 31;

	return right ? both >> n : (both << n) >> 32;
}

IOP3(h_shf, shf(a, b, c, in->aux, in->off))

/* bfind: position of the most significant non-sign bit, 0xffffffff when none; .shiftamt gives
 * 31 - position instead (aux). */
static inline uint64_t bfind(uint64_t a, unsigned int bits, bool sgn, bool shiftamt)
{
	uint64_t v = a & mask_bits(bits);
	int pos = -1;

	if (sgn && ((v >> (bits - 1)) & 1))
		v = ~v & mask_bits(bits);
	for (int i = (int)bits - 1; i >= 0; i--)
		if ((v >> i) & 1) {
			pos = i;
			break;
		}
	if (pos < 0)
		return 0xffffffffu;
	return shiftamt ? (uint64_t)(bits - 1 - (unsigned int)pos) : (uint64_t)pos;
}

static void h_bfind(W)
{
	DST;
	SRC1;
	LANES(D[l] = bfind(A[l], in->size, in->sgn, in->aux));
}

static void h_bfi(W)
{
	DST;
	SRC3;
	const uint64_t *E = II_R(w, in->s[3]), wm = in->wm;

	LANES(D[l] = bfi(A[l], B[l], C[l], E[l], in->size) & wm);
}

/* mov.bN d, {a, b(, c, d)}: pack elements of size bits; and the reverse. */
static void h_pack(W)
{
	DST;
	unsigned int eb = in->size;

	LANES({
		uint64_t v = 0;

		for (unsigned int i = 0; i < in->nvec; i++)
			v |= (II_R(w, in->s[i])[l] & mask_bits(eb)) << (eb * i);
		D[l] = v;
	});
}

static void h_unpack(W)
{
	SRC1;
	unsigned int eb = in->size;

	LANES({
		uint64_t v = A[l];

		for (unsigned int i = 0; i < in->nvec; i++)
			if (in->d[i] != II_NONE)
				II_R(w, in->d[i])[l] = (v >> (eb * i)) & mask_bits(eb);
	});
}

/* ------------------------------------------------------------------ compare */

static inline bool cmp_i(unsigned int op, int64_t a, int64_t b)
{
	switch (op) {
	case CMP_EQ: return a == b;
	case CMP_NE: return a != b;
	case CMP_LT: return a < b;
	case CMP_LE: return a <= b;
	case CMP_GT: return a > b;
	default: return a >= b;
	}
}

static inline bool cmp_u(unsigned int op, uint64_t a, uint64_t b)
{
	switch (op) {
	case CMP_EQ: return a == b;
	case CMP_NE: return a != b;
	case CMP_LT: return a < b;
	case CMP_LE: return a <= b;
	case CMP_GT: return a > b;
	default: return a >= b;
	}
}

static inline bool cmp_f(unsigned int op, double a, double b)
{
	bool un = isnan(a) || isnan(b);

	switch (op) {
	case CMP_EQ: return !un && a == b;
	case CMP_NE: return !un && a != b;
	case CMP_LT: return !un && a < b;
	case CMP_LE: return !un && a <= b;
	case CMP_GT: return !un && a > b;
	case CMP_GE: return !un && a >= b;
	case CMP_EQU: return un || a == b;
	case CMP_NEU: return un || a != b;
	case CMP_LTU: return un || a < b;
	case CMP_LEU: return un || a <= b;
	case CMP_GTU: return un || a > b;
	case CMP_GEU: return un || a >= b;
	case CMP_NUM: return !un;
	default: return un;
	}
}

static inline bool bool_op(unsigned int op, bool t, bool c)
{
	switch (op) {
	case BOOL_AND: return t && c;
	case BOOL_OR: return t || c;
	case BOOL_XOR: return t != c;
	default: return t;
	}
}

/* setp: aux = compare, aux2 = bool op with c (s[2]), d[1] = |q or II_NONE. The common
 * 32-bit signed/unsigned forms without a bool op have their own loops. */
static void setp_finish(struct ii_warp *w, const struct ii_insn *in, uint32_t m, uint32_t tm)
{
	DST;

	if (in->aux2 == BOOL_NONE && in->d[1] == II_NONE) {
		LANES(D[l] = (tm >> l) & 1);
	} else {
		const uint64_t *C = in->aux2 ? II_R(w, in->s[2]) : NULL;
		uint64_t *Q = in->d[1] != II_NONE ? II_R(w, in->d[1]) : NULL;

		LANES({
			bool t = (tm >> l) & 1, c = C ? C[l] != 0 : false;

			D[l] = bool_op(in->aux2, t, c);
			if (Q)
				Q[l] = bool_op(in->aux2, !t, c);
		});
	}
}

static void h_setp_s(W)
{
	SRC2;
	uint32_t tm = 0;
	const unsigned int bits = in->size, op = in->aux;

	if (bits == 32 && op == CMP_LT)
		LANES(tm |= (uint32_t)((int32_t)A[l] < (int32_t)B[l]) << l);
	else
		LANES(tm |= (uint32_t)cmp_i(op, sx(A[l], bits), sx(B[l], bits)) << l);
	setp_finish(w, in, m, tm);
}

static void h_setp_u(W)
{
	SRC2;
	uint32_t tm = 0;
	const unsigned int op = in->aux;

	LANES(tm |= (uint32_t)cmp_u(op, A[l], B[l]) << l);
	setp_finish(w, in, m, tm);
}

static void h_setp_f32(W)
{
	SRC2;
	uint32_t tm = 0;
	const unsigned int op = in->aux;

	LANES(tm |= (uint32_t)cmp_f(op, fin(in, f32(A[l])), fin(in, f32(B[l]))) << l);
	setp_finish(w, in, m, tm);
}

static void h_setp_f64(W)
{
	SRC2;
	uint32_t tm = 0;
	const unsigned int op = in->aux;

	LANES(tm |= (uint32_t)cmp_f(op, f64(A[l]), f64(B[l])) << l);
	setp_finish(w, in, m, tm);
}

/* ------------------------------------------------------------------ float */

#define F32OP2(name, expr)                                                                  \
	static void name(W)                                                                 \
	{                                                                                   \
		DST;                                                                        \
		SRC2;                                                                       \
		if (!in->ftz && !in->sat) {                                                 \
			LANES({                                                             \
				float a = f32(A[l]), b = f32(B[l]);                         \
				D[l] = b32(expr);                                           \
			});                                                                 \
		} else {                                                                    \
			LANES({                                                             \
				float a = fin(in, f32(A[l])), b = fin(in, f32(B[l]));       \
				D[l] = b32(fout(in, expr));                                 \
			});                                                                 \
		}                                                                           \
	}
#define F32OP1(name, expr)                                                                  \
	static void name(W)                                                                 \
	{                                                                                   \
		DST;                                                                        \
		SRC1;                                                                       \
		LANES({                                                                     \
			float a = fin(in, f32(A[l]));                                       \
			D[l] = b32(fout(in, expr));                                         \
		});                                                                         \
	}
#define F64OP2(name, expr)                                                                  \
	static void name(W)                                                                 \
	{                                                                                   \
		DST;                                                                        \
		SRC2;                                                                       \
		LANES({                                                                     \
			double a = f64(A[l]), b = f64(B[l]);                                \
			D[l] = b64(dout(in, expr));                                         \
		});                                                                         \
	}
#define F64OP1(name, expr)                                                                  \
	static void name(W)                                                                 \
	{                                                                                   \
		DST;                                                                        \
		SRC1;                                                                       \
		LANES({                                                                     \
			double a = f64(A[l]);                                               \
			D[l] = b64(dout(in, expr));                                         \
		});                                                                         \
	}

/* PTX min/max: a NaN operand yields the other one; both NaN, a NaN. */
static inline float fmin32(float a, float b)
{
	return fminf(a, b);
}

static inline float fmax32(float a, float b)
{
	return fmaxf(a, b);
}

F32OP2(h_fadd, a + b)
F32OP2(h_fsub, a - b)
F32OP2(h_fmul, a * b)
F32OP2(h_fdiv, a / b)
F32OP2(h_fmin, fmin32(a, b))
F32OP2(h_fmax, fmax32(a, b))
F32OP2(h_fcopysign, copysignf(b, a))
F32OP1(h_fsqrt, sqrtf(a))
F32OP1(h_frcp, 1.0f / a)
F32OP1(h_frsqrt, 1.0f / sqrtf(a))
F32OP1(h_fex2, exp2f(a))
F32OP1(h_flg2, log2f(a))
F32OP1(h_fsin, sinf(a))
F32OP1(h_fcos, cosf(a))
F32OP1(h_ftanh, tanhf(a))
F32OP1(h_fabs, fabsf(a))
F32OP1(h_fneg, -a)

static void h_ffma(W)
{
	DST;
	SRC3;

	if (!in->ftz && !in->sat)
		LANES(D[l] = b32(fmaf(f32(A[l]), f32(B[l]), f32(C[l]))));
	else
		LANES(D[l] = b32(fout(in, fmaf(fin(in, f32(A[l])), fin(in, f32(B[l])),
					      fin(in, f32(C[l]))))));
}

F64OP2(h_dadd, a + b)
F64OP2(h_dsub, a - b)
F64OP2(h_dmul, a * b)
F64OP2(h_ddiv, a / b)
F64OP2(h_dmin, fmin(a, b))
F64OP2(h_dmax, fmax(a, b))
F64OP2(h_dcopysign, copysign(b, a))
F64OP1(h_dsqrt, sqrt(a))
F64OP1(h_drcp, 1.0 / a)
F64OP1(h_drsqrt, 1.0 / sqrt(a))
F64OP1(h_dabs, fabs(a))
F64OP1(h_dneg, -a)

static void h_dfma(W)
{
	DST;
	SRC3;

	LANES(D[l] = b64(dout(in, fma(f64(A[l]), f64(B[l]), f64(C[l])))));
}

/* ------------------------------------------------------------------ conversions */

static inline double round_int(unsigned int irnd, double x)
{
	switch (irnd) {
	case IRND_RNI: return nearbyint(x); /* the executor runs cvt in round-to-nearest */
	case IRND_RZI: return trunc(x);
	case IRND_RMI: return floor(x);
	case IRND_RPI: return ceil(x);
	default: return x;
	}
}

/* Float to integer: round, then saturate into the type's range; NaN becomes 0. */
static inline uint64_t f_to_i(double x, int t)
{
	unsigned int bits = II_T_BITS(t);

	if (isnan(x))
		return 0;
	if (t & II_T_SIGNED) {
		double lo = -ldexp(1.0, (int)bits - 1), hi = ldexp(1.0, (int)bits - 1);

		if (x <= lo)
			return (uint64_t)(bits >= 64 ? INT64_MIN : (int64_t)lo) & mask_bits(bits);
		if (x >= hi)
			return mask_bits(bits - 1);
		return (uint64_t)(int64_t)x & mask_bits(bits);
	}
	if (x <= 0)
		return 0;
	if (x >= ldexp(1.0, (int)bits))
		return mask_bits(bits);
	return (uint64_t)x;
}

__extension__ typedef _Float16 ii_half;

static inline float half_to_f32(uint64_t v)
{
	uint16_t u = (uint16_t)v;
	ii_half h;

	memcpy(&h, &u, sizeof(h));
	return (float)h;
}

/* To f16 in the instruction's rounding mode, from a double holding the exact source value.
 * Done by hand: the C library's conversions (libgcc soft-fp on x86) ignore fesetround. */
static inline uint64_t to_half(const struct ii_insn *in, double x)
{
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	double a = fabs(x), q, n, r;
	int e;

	if (in->sat)
		x = isnan(x) ? 0.0 : x < 0.0 ? 0.0 : x > 1.0 ? 1.0 : x;
	if (isnan(x))
		return 0x7fff;
	sign = signbit(x) ? 0x8000 : 0;
	a = fabs(x);
	if (isinf(a))
		return sign | 0x7c00;
	if (a == 0.0)
		return sign;
	frexp(a, &e); /* a = m * 2^e, m in [0.5, 1): 11 significant bits have ulp 2^(e-11) */
	q = ldexp(1.0, (e - 1 < -14 ? -14 : e - 1) - 10);
	n = a / q;
	switch (in->rnd) {
	case 1: r = trunc(n); break;                       /* rz */
	case 2: r = sign ? ceil(n) : floor(n); break;     /* rm: toward -inf */
	case 3: r = sign ? floor(n) : ceil(n); break;     /* rp: toward +inf */
	default:
		r = floor(n);
		if (n - r > 0.5 || (n - r == 0.5 && fmod(r, 2.0) != 0.0))
			r += 1.0;
		break;
	}
	r *= q;
	if (r > 65504.0) { /* overflow: infinity unless the mode rounds toward the finite side */
		bool to_max = in->rnd == 1 || (in->rnd == 2 && !sign) || (in->rnd == 3 && sign);

		return sign | (to_max ? 0x7bff : 0x7c00);
	}
	if (r < ldexp(1.0, -14))
		return sign | (uint16_t)(r / ldexp(1.0, -24));
	frexp(r, &e);
	return sign | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((r / ldexp(1.0, e - 1) - 1.0) * 1024.0);
}

static uint64_t cvt_one(const struct ii_insn *in, uint64_t v);

/* cvt with an f16 side: the value goes through double (exact for f16, f32, f64 and integers
 * up to 2^53), then one rounding to the destination. */
static uint64_t cvt_half(const struct ii_insn *in, uint64_t v, int dt, int st)
{
	double x;

	if (st & II_T_HALF)
		x = (double)half_to_f32(v);
	else if (st & II_T_FLOAT)
		x = II_T_BITS(st) == 32 ? (double)fin(in, f32(v)) : f64(v);
	else
		x = (st & II_T_SIGNED) ? (double)sx(v, II_T_BITS(st)) : (double)(v & mask_bits(II_T_BITS(st)));
	if (dt & II_T_HALF)
		return to_half(in, in->aux2 ? round_int(in->aux2, x) : x);
	{
		/* f16 to another type: as if from the f32 of the same value (exact) */
		struct ii_insn c = *in;

		c.off = 32 | II_T_FLOAT;
		c.ftz = 0;
		return cvt_one(&c, b32((float)x));
	}
}

/* cvt: aux = destination type, off = source type, aux2 = integer rounding. */
static uint64_t cvt_one(const struct ii_insn *in, uint64_t v)
{
	int dt = (int)in->aux, st = (int)in->off;
	unsigned int db = II_T_BITS(dt), sb = II_T_BITS(st);

	if ((dt | st) & II_T_HALF)
		return cvt_half(in, v, dt, st);

	if (!(st & II_T_FLOAT) && !(dt & II_T_FLOAT)) {
		uint64_t x = (st & II_T_SIGNED) ? (uint64_t)sx(v, sb) : v & mask_bits(sb);

		if (in->sat) {
			/* clamp to the destination's range */
			if (st & II_T_SIGNED) {
				int64_t s = (int64_t)x;
				int64_t lo = (dt & II_T_SIGNED) ? -(int64_t)(mask_bits(db - 1)) - 1 : 0;
				int64_t hi = (dt & II_T_SIGNED) ? (int64_t)mask_bits(db - 1)
								: (db >= 63 ? INT64_MAX : (int64_t)mask_bits(db));

				x = (uint64_t)(s < lo ? lo : s > hi ? hi : s);
			} else {
				uint64_t hi = (dt & II_T_SIGNED) ? mask_bits(db - 1) : mask_bits(db);

				x = x > hi ? hi : x;
			}
		}
		return x & mask_bits(db);
	}
	if (!(st & II_T_FLOAT)) {
		if (db == 32) {
			float f = (st & II_T_SIGNED) ? (float)sx(v, sb) : (float)(v & mask_bits(sb));

			return b32(fout(in, f));
		}
		return b64(dout(in, (st & II_T_SIGNED) ? (double)sx(v, sb) : (double)(v & mask_bits(sb))));
	}
	if (!(dt & II_T_FLOAT)) {
		double x = sb == 32 ? (double)fin(in, f32(v)) : f64(v);

		return f_to_i(round_int(in->aux2, x), dt);
	}
	if (sb == 32 && db == 32) {
		float f = fin(in, f32(v));

		if (in->aux2)
			f = (float)round_int(in->aux2, f);
		return b32(fout(in, f));
	}
	if (sb == 32 && db == 64)
		return b64(dout(in, (double)fin(in, f32(v))));
	if (sb == 64 && db == 32)
		return b32(fout(in, (float)f64(v)));
	return b64(dout(in, in->aux2 ? round_int(in->aux2, f64(v)) : f64(v)));
}

static void h_cvt(W)
{
	DST;
	SRC1;
	LANES(D[l] = cvt_one(in, A[l]));
}

static void h_cvt_zx(W) /* widening unsigned, narrowing either: a mask */
{
	DST;
	SRC1;
	const uint64_t wm = in->wm;

	LANES(D[l] = A[l] & wm);
}

static void h_cvt_sx(W) /* widening signed: sign-extend from size bits, mask to the dest */
{
	DST;
	SRC1;
	const uint64_t wm = in->wm;
	const unsigned int bits = in->size;

	LANES(D[l] = (uint64_t)sx(A[l], bits) & wm);
}

/* cvta.space: generic = base + a; cvta.to.space: a - base. */
static void h_cvta(W)
{
	DST;
	SRC1;
	const uintptr_t *Bs = w->base[in->space];
	const uint64_t wm = in->wm;

	LANES(D[l] = (A[l] + Bs[l]) & wm);
}

static void h_cvta_to(W)
{
	DST;
	SRC1;
	const uintptr_t *Bs = w->base[in->space];
	const uint64_t wm = in->wm;

	LANES(D[l] = (A[l] - Bs[l]) & wm);
}

/* ------------------------------------------------------------------ memory */

static inline uint64_t load(const char *p, unsigned int size)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (size) {
	case 1: memcpy(&u8, p, 1); return u8;
	case 2: memcpy(&u16, p, 2); return u16;
	case 4: memcpy(&u32, p, 4); return u32;
	default: memcpy(&u64, p, 8); return u64;
	}
}

static inline void store(char *p, unsigned int size, uint64_t v)
{
	uint8_t u8 = (uint8_t)v;
	uint16_t u16 = (uint16_t)v;
	uint32_t u32 = (uint32_t)v;

	switch (size) {
	case 1: memcpy(p, &u8, 1); break;
	case 2: memcpy(p, &u16, 2); break;
	case 4: memcpy(p, &u32, 4); break;
	default: memcpy(p, &v, 8); break;
	}
}

/* SIMCUDA_ORACLE: the bytes each lane's access touches (global and generic addresses; the
 * oracle leaves out the run's own shared and local buffers). */
static void oracle_lanes(W, uint64_t bytes, int kind)
{
	SRC1;
	const uintptr_t *Bs = w->base[in->space];

	if (in->space != II_SP_GLOBAL && in->space != II_SP_GENERIC)
		return;
	LANES(sim_oracle_note(Bs[l] + A[l] + (uint64_t)in->off, bytes, kind));
}

static void h_ld32(W) /* ld of one 32-bit value, unsigned or float: the hot load */
{
	DST;
	SRC1;
	const uintptr_t *Bs = w->base[in->space];
	const int64_t off = in->off;

	if (sim_oracle_recording)
		oracle_lanes(w, in, m, 4, SIM_ORACLE_READ);

	LANES({
		uint32_t v;

		memcpy(&v, (const char *)(Bs[l] + A[l] + (uint64_t)off), 4);
		D[l] = v;
	});
}

static void h_ld(W)
{
	SRC1;
	const uintptr_t *Bs = w->base[in->space];
	const unsigned int size = in->size;
	const bool checked = w->lim[in->space] != ~0ull;

	if (sim_oracle_recording)
		oracle_lanes(w, in, m, (uint64_t)size * in->nvec, SIM_ORACLE_READ);
	LANES({
		const char *p = (const char *)(Bs[l] + A[l] + (uint64_t)in->off);

		if (checked && !ii_in_bounds(w, in, A[l] + (uint64_t)in->off, (uint64_t)size * in->nvec))
			continue;

		for (unsigned int i = 0; i < in->nvec; i++) {
			uint64_t v = load(p + i * size, size);

			if (in->sgn)
				v = (uint64_t)sx(v, size * 8);
			if (in->d[i] != II_NONE)
				II_R(w, in->d[i])[l] = v & in->wm;
		}
	});
}

static void h_st(W)
{
	SRC1;
	const uintptr_t *Bs = w->base[in->space];
	const unsigned int size = in->size;

	const bool checked = w->lim[in->space] != ~0ull;

	if (sim_oracle_recording)
		oracle_lanes(w, in, m, (uint64_t)size * in->nvec, SIM_ORACLE_WRITE);
	/* s[0] is the address; the values are s[1..nvec] */
	LANES({
		char *p = (char *)(Bs[l] + A[l] + (uint64_t)in->off);

		if (checked && !ii_in_bounds(w, in, A[l] + (uint64_t)in->off, (uint64_t)size * in->nvec))
			continue;

		for (unsigned int i = 0; i < in->nvec; i++)
			store(p + i * size, size, II_R(w, in->s[1 + i])[l]);
	});
}

/* atom/red: aux = operation, size = bytes, aux2 = type flags >> 8 (signed, float);
 * s[0] address, s[1] b, s[2] c (cas). Lanes go in lane order; the host's atomics make it safe
 * with kernels of other streams running on other threads. */
static uint64_t atom_one(const struct ii_insn *in, char *p, uint64_t b, uint64_t c)
{
	bool fl = in->aux2 & (II_T_FLOAT >> 8), sg = in->aux2 & (II_T_SIGNED >> 8);
	unsigned int size = in->size;
	uint64_t old, nv;

	if (size == 4) {
		uint32_t *q = (uint32_t *)(void *)p, o = __atomic_load_n(q, __ATOMIC_RELAXED), n;

		do {
			switch (in->aux) {
			case AT_ADD: n = fl ? (uint32_t)b32(f32(o) + f32(b)) : o + (uint32_t)b; break;
			case AT_MIN: n = fl ? (uint32_t)b32(fminf(f32(o), f32(b)))
				     : sg ? ((int32_t)o < (int32_t)b ? o : (uint32_t)b)
					  : (o < (uint32_t)b ? o : (uint32_t)b); break;
			case AT_MAX: n = fl ? (uint32_t)b32(fmaxf(f32(o), f32(b)))
				     : sg ? ((int32_t)o > (int32_t)b ? o : (uint32_t)b)
					  : (o > (uint32_t)b ? o : (uint32_t)b); break;
			case AT_AND: n = o & (uint32_t)b; break;
			case AT_OR: n = o | (uint32_t)b; break;
			case AT_XOR: n = o ^ (uint32_t)b; break;
			case AT_EXCH: n = (uint32_t)b; break;
			case AT_CAS: n = o == (uint32_t)b ? (uint32_t)c : o; break;
			case AT_INC: n = o >= (uint32_t)b ? 0 : o + 1; break;
			default: n = (o == 0 || o > (uint32_t)b) ? (uint32_t)b : o - 1; break;
			}
		} while (!__atomic_compare_exchange_n(q, &o, n, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
		return o;
	}
	{
		uint64_t *q = (uint64_t *)(void *)p;

		old = __atomic_load_n(q, __ATOMIC_RELAXED);
		do {
			switch (in->aux) {
			case AT_ADD: nv = fl ? b64(f64(old) + f64(b)) : old + b; break;
			case AT_MIN: nv = fl ? b64(fmin(f64(old), f64(b)))
				     : sg ? ((int64_t)old < (int64_t)b ? old : b) : (old < b ? old : b); break;
			case AT_MAX: nv = fl ? b64(fmax(f64(old), f64(b)))
				     : sg ? ((int64_t)old > (int64_t)b ? old : b) : (old > b ? old : b); break;
			case AT_AND: nv = old & b; break;
			case AT_OR: nv = old | b; break;
			case AT_XOR: nv = old ^ b; break;
			case AT_EXCH: nv = b; break;
			case AT_CAS: nv = old == b ? c : old; break;
			default: nv = old; break;
			}
		} while (!__atomic_compare_exchange_n(q, &old, nv, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
		return old;
	}
}

static void h_atom(W)
{
	SRC3;
	const uintptr_t *Bs = w->base[in->space];
	uint64_t *D = in->d[0] != II_NONE ? II_R(w, in->d[0]) : NULL;
	const bool checked = w->lim[in->space] != ~0ull;

	if (sim_oracle_recording)
		oracle_lanes(w, in, m, in->size, SIM_ORACLE_ATOMIC);
	LANES({
		uint64_t old;

		if (checked && !ii_in_bounds(w, in, A[l] + (uint64_t)in->off, in->size))
			continue;
		old = atom_one(in, (char *)(Bs[l] + A[l] + (uint64_t)in->off), B[l], C[l]);

		if (D)
			D[l] = old;
	});
}

/* ------------------------------------------------------------------ warp */

/* shfl.sync.mode.b32 d[|p], a, b, c, membermask (PTX ISA pseudocode). */
static void h_shfl(W)
{
	SRC3;
	uint64_t *D = II_R(w, in->d[0]), *P = in->d[1] != II_NONE ? II_R(w, in->d[1]) : NULL;
	uint64_t src[II_LANES];

	memcpy(src, A, sizeof(src));
	LANES({
		unsigned int lane = l, bv = (unsigned int)B[l] & 31, cv = (unsigned int)C[l] & 31;
		unsigned int seg = (unsigned int)(C[l] >> 8) & 31;
		unsigned int maxl = (lane & seg) | (cv & ~seg), minl = lane & seg, j;
		bool ok;

		switch (in->aux) {
		case SHFL_UP: j = lane - bv; ok = (int)j >= (int)maxl; break;
		case SHFL_DOWN: j = lane + bv; ok = j <= maxl; break;
		case SHFL_BFLY: j = lane ^ bv; ok = j <= maxl; break;
		default: j = minl | (bv & ~seg); ok = j <= maxl; break;
		}
		if (!ok || j >= II_LANES)
			j = lane;
		D[l] = src[j] & 0xffffffffu;
		if (P)
			P[l] = ok;
	});
}

static void h_vote(W)
{
	SRC1;
	DST;
	uint32_t ballot = 0;

	LANES(ballot |= (uint32_t)((A[l] != 0) ^ in->sgn) << l);
	LANES({
		switch (in->aux) {
		case VOTE_ALL: D[l] = ballot == m; break;
		case VOTE_ANY: D[l] = ballot != 0; break;
		case VOTE_UNI: D[l] = ballot == 0 || ballot == m; break;
		default: D[l] = ballot; break;
		}
	});
}

/* redux.sync.op d, a, membermask: the operation over the executing lanes (aux: AT_ADD, AT_MIN,
 * AT_MAX, AT_AND, AT_OR, AT_XOR; sgn for signed min/max). */
static void h_redux(W)
{
	SRC1;
	DST;
	uint64_t acc = in->aux == AT_AND ? 0xffffffffu : 0;
	bool first = true;

	LANES({
		uint64_t v = A[l] & 0xffffffffu;

		switch (in->aux) {
		case AT_ADD: acc = (acc + v) & 0xffffffffu; break;
		case AT_AND: acc &= v; break;
		case AT_OR: acc |= v; break;
		case AT_XOR: acc ^= v; break;
		case AT_MIN:
			if (first || (in->sgn ? (int32_t)v < (int32_t)acc : v < acc))
				acc = v;
			break;
		default:
			if (first || (in->sgn ? (int32_t)v > (int32_t)acc : v > acc))
				acc = v;
			break;
		}
		first = false;
	});
	LANES(D[l] = acc);
}

/* bmsk.{clamp,wrap}.b32 d, a, b: b bits set from bit a (off: 1 = clamp). */
static inline uint64_t bmsk(uint64_t a, uint64_t b, bool clamp)
{
	uint64_t pos = clamp ? (a > 32 ? 32 : a) : a & 31, w = clamp ? (b > 32 ? 32 : b) : b & 31;

	return pos >= 32 ? 0 : ((((1ull << w) - 1) << pos) & 0xffffffffu);
}

IOP2(h_bmsk, bmsk(a, b, in->off))

static void h_activemask(W)
{
	DST;
	LANES(D[l] = m);
}

static void h_nop(W)
{
	(void)w;
	(void)in;
	(void)m;
}

/* ------------------------------------------------------------------ picking */

int sim__interp_type(const char *mod)
{
	static const struct {
		const char *name;
		int code;
	} types[] = {
		{ "s8", 8 | II_T_SIGNED }, { "s16", 16 | II_T_SIGNED }, { "s32", 32 | II_T_SIGNED },
		{ "s64", 64 | II_T_SIGNED }, { "u8", 8 }, { "u16", 16 }, { "u32", 32 }, { "u64", 64 },
		{ "b8", 8 }, { "b16", 16 }, { "b32", 32 }, { "b64", 64 }, { "f32", 32 | II_T_FLOAT },
		{ "f64", 64 | II_T_FLOAT }, { "pred", 1 | II_T_PRED },
		{ "f16", 16 | II_T_FLOAT | II_T_HALF }, { "f16x2", -1 }, { "bf16", -1 },
		{ "bf16x2", -1 }, { "b128", -1 },
		{ "tf32", -1 }, { "e4m3", -1 }, { "e5m2", -1 },
	};

	for (unsigned int i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(mod, types[i].name))
			return types[i].code;
	return 0;
}

static bool has(const struct ii_opinfo *oi, const char *mod)
{
	for (unsigned int i = 0; i < oi->nmods; i++)
		if (!strcmp(oi->mods[i], mod))
			return true;
	return false;
}

/* The last type modifier (0 when none, -1 for a type the interpreter does not model). */
static int last_type(const struct ii_opinfo *oi, unsigned int skip)
{
	for (unsigned int i = oi->nmods; i-- > 0;) {
		int t = sim__interp_type(oi->mods[i]);

		if (t && skip-- == 0)
			return t;
	}
	return 0;
}

static int cmp_code(const struct ii_opinfo *oi, bool *unsigned_cmp)
{
	static const char *const names[] = { "eq",  "ne",  "lt",  "le",  "gt",  "ge",  "equ",
					     "neu", "ltu", "leu", "gtu", "geu", "num", "nan" };

	*unsigned_cmp = false;
	for (unsigned int i = 0; i < oi->nmods; i++) {
		for (unsigned int c = 0; c < sizeof(names) / sizeof(names[0]); c++)
			if (!strcmp(oi->mods[i], names[c]))
				return (int)c;
		if (!strcmp(oi->mods[i], "lo") || !strcmp(oi->mods[i], "ls") ||
		    !strcmp(oi->mods[i], "hi") || !strcmp(oi->mods[i], "hs")) {
			*unsigned_cmp = true;
			if (oi->mods[i][1] == 'o') /* lo */
				return CMP_LT;
			if (oi->mods[i][1] == 's') /* ls, hs */
				return oi->mods[i][0] == 'l' ? CMP_LE : CMP_GE;
			return CMP_GT; /* hi */
		}
	}
	return -1;
}

/* The float rounding mode as the executor wants it (0 = nearest). */
static int float_rnd(const struct ii_opinfo *oi)
{
	if (has(oi, "rz"))
		return 1;
	if (has(oi, "rm"))
		return 2;
	if (has(oi, "rp"))
		return 3;
	return 0;
}

static int int_rnd(const struct ii_opinfo *oi)
{
	if (has(oi, "rni"))
		return IRND_RNI;
	if (has(oi, "rzi"))
		return IRND_RZI;
	if (has(oi, "rmi"))
		return IRND_RMI;
	if (has(oi, "rpi"))
		return IRND_RPI;
	return IRND_NONE;
}

static const struct {
	const char *op;
	ii_fn i_u, i_s;              /* integer, unsigned/bit and signed */
	ii_fn f32, f64;              /* float */
} arith[] = {
	{ "add", h_add, h_add, h_fadd, h_dadd },
	{ "sub", h_sub, h_sub, h_fsub, h_dsub },
	{ "min", h_min_u, h_min_s, h_fmin, h_dmin },
	{ "max", h_max_u, h_max_s, h_fmax, h_dmax },
	{ "div", h_div_u, h_div_s, h_fdiv, h_ddiv },
	{ "rem", h_rem_u, h_rem_s, NULL, NULL },
	{ "and", h_and, h_and, NULL, NULL },
	{ "or", h_or, h_or, NULL, NULL },
	{ "xor", h_xor, h_xor, NULL, NULL },
	{ "not", h_not, h_not, NULL, NULL },
	{ "cnot", h_cnot, h_cnot, NULL, NULL },
	{ "shl", h_shl, h_shl, NULL, NULL },
	{ "shr", h_shr_u, h_shr_s, NULL, NULL },
	{ "neg", h_neg, h_neg, h_fneg, h_dneg },
	{ "abs", NULL, h_abs_s, h_fabs, h_dabs },
	{ "popc", h_popc, h_popc, NULL, NULL },
	{ "clz", h_clz, h_clz, NULL, NULL },
	{ "brev", h_brev, h_brev, NULL, NULL },
	{ "bfe", h_bfe_u, h_bfe_s, NULL, NULL },
	{ "bfi", h_bfi, h_bfi, NULL, NULL },
	{ "prmt", h_prmt, h_prmt, NULL, NULL },
	{ "lop3", h_lop3, h_lop3, NULL, NULL },
	{ "selp", h_selp, h_selp, h_selp, h_selp },
	{ "mov", h_mov, h_mov, h_mov, h_mov },
	{ "copysign", NULL, NULL, h_fcopysign, h_dcopysign },
	{ "sqrt", NULL, NULL, h_fsqrt, h_dsqrt },
	{ "rcp", NULL, NULL, h_frcp, h_drcp },
	{ "rsqrt", NULL, NULL, h_frsqrt, h_drsqrt },
	{ "ex2", NULL, NULL, h_fex2, NULL },
	{ "lg2", NULL, NULL, h_flg2, NULL },
	{ "sin", NULL, NULL, h_fsin, NULL },
	{ "cos", NULL, NULL, h_fcos, NULL },
	{ "tanh", NULL, NULL, h_ftanh, NULL },
	{ "fma", NULL, NULL, h_ffma, h_dfma },
};

static int pick_arith(const struct ii_opinfo *oi, struct ii_insn *in, int t, const char **why)
{
	for (unsigned int i = 0; i < sizeof(arith) / sizeof(arith[0]); i++) {
		ii_fn f;

		if (strcmp(oi->op, arith[i].op))
			continue;
		if (t & II_T_FLOAT)
			f = II_T_BITS(t) == 32 ? arith[i].f32 : arith[i].f64;
		else
			f = (t & II_T_SIGNED) ? arith[i].i_s : arith[i].i_u;
		if (!f) {
			*why = "type";
			return -1;
		}
		in->fn = f;
		return 0;
	}
	*why = "opcode";
	return -1;
}

static int pick_mul_mad(const struct ii_opinfo *oi, struct ii_insn *in, int t, const char **why)
{
	bool mad = !strcmp(oi->op, "mad"), sg = t & II_T_SIGNED;
	unsigned int bits = II_T_BITS(t);

	if (t & II_T_FLOAT) {
		in->fn = mad ? (bits == 32 ? h_ffma : h_dfma) : (bits == 32 ? h_fmul : h_dmul);
		return 0;
	}
	if (has(oi, "lo")) {
		in->fn = mad ? h_mad_lo : h_mul_lo;
	} else if (has(oi, "hi")) {
		in->fn = mad ? (sg ? h_mad_hi_s : h_mad_hi_u) : (sg ? h_mul_hi_s : h_mul_hi_u);
	} else if (has(oi, "wide")) {
		if (bits > 32) {
			*why = "64-bit .wide";
			return -1;
		}
		in->fn = mad ? (sg ? h_mad_wide_s : h_mad_wide_u) : (sg ? h_mul_wide_s : h_mul_wide_u);
		in->wm = mask_bits(2 * bits);
	} else {
		*why = "modifier";
		return -1;
	}
	return 0;
}

static int pick_cvt(const struct ii_opinfo *oi, struct ii_insn *in, const char **why)
{
	int dt = last_type(oi, 1), st = last_type(oi, 0);

	if (dt <= 0 || st <= 0 || (dt & II_T_PRED) || (st & II_T_PRED)) {
		*why = "type";
		return -1;
	}
	in->aux = (uint32_t)dt;
	in->off = st;
	in->aux2 = (uint8_t)int_rnd(oi);
	in->sat = has(oi, "sat");
	in->ftz = has(oi, "ftz");
	in->wm = mask_bits(II_T_BITS(dt));
	in->fn = h_cvt;
	if (!(dt & II_T_FLOAT) && !(st & II_T_FLOAT) && !in->sat) {
		if ((st & II_T_SIGNED) && II_T_BITS(dt) > II_T_BITS(st)) {
			in->fn = h_cvt_sx;
			in->size = (uint8_t)II_T_BITS(st);
		} else {
			in->fn = h_cvt_zx;
			if (II_T_BITS(st) < II_T_BITS(dt))
				in->wm = mask_bits(II_T_BITS(st));
		}
	}
	return 0;
}

static int pick_setp(const struct ii_opinfo *oi, struct ii_insn *in, int t, const char **why)
{
	bool uc;
	int c = cmp_code(oi, &uc);

	if (c < 0) {
		*why = "compare";
		return -1;
	}
	in->aux = (uint32_t)c;
	in->aux2 = has(oi, "and") ? BOOL_AND : has(oi, "or") ? BOOL_OR : has(oi, "xor") ? BOOL_XOR : BOOL_NONE;
	in->ftz = has(oi, "ftz");
	if (t & II_T_FLOAT)
		in->fn = II_T_BITS(t) == 32 ? h_setp_f32 : h_setp_f64;
	else if (c > CMP_GE)
		return *why = "compare", -1;
	else
		in->fn = ((t & II_T_SIGNED) && !uc) ? h_setp_s : h_setp_u;
	return 0;
}

static int pick_atom(const struct ii_opinfo *oi, struct ii_insn *in, int t, const char **why)
{
	static const char *const ops[] = { "add", "min", "max", "and", "or", "xor", "exch", "cas", "inc", "dec" };
	int op = -1;

	for (unsigned int i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (has(oi, ops[i]))
			op = (int)i;
	if (has(oi, "v2") || has(oi, "v4")) {
		*why = "vector atomic";
		return -1;
	}
	if (op < 0 || (II_T_BITS(t) != 32 && II_T_BITS(t) != 64) ||
	    ((op == AT_INC || op == AT_DEC) && II_T_BITS(t) != 32)) {
		*why = "operation or type";
		return -1;
	}
	in->aux = (uint32_t)op;
	in->size = (uint8_t)(II_T_BITS(t) / 8);
	in->aux2 = (uint8_t)(t >> 8);
	in->fn = h_atom;
	return 0;
}

/* Modifiers the handlers honour or that change nothing on one host thread (memory order,
 * scope, cache hints). Anything else (.cc, .NaN, .relu, prmt's modes, vector atomics ...)
 * refuses the instruction rather than run it wrong. */
static bool mod_known(const char *m)
{
	static const char *const known[] = {
		"rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "ftz", "sat", "approx", "full",
		"lo", "hi", "wide", "uni", "sync", "aligned", "to", "global", "shared", "local",
		"param", "const", "v2", "v4", "volatile", "relaxed", "acquire", "release", "acq_rel",
		"weak", "gpu", "sys", "cta", "nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt",
		"eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num",
		"nan", "ls", "hs", "and", "or", "xor", "add", "min", "max", "exch", "cas", "inc", "dec",
		"up", "down", "bfly", "idx", "all", "any", "ballot", "warp", "sc", "wrap", "clamp",
		"l", "r", "shiftamt",
	};

	if (sim__interp_type(m) > 0 || !strncmp(m, "L1::", 4) || !strncmp(m, "L2::", 4) ||
	    !strcmp(m, "shared::cta"))
		return true;
	for (unsigned int i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(m, known[i]))
			return true;
	return false;
}

int sim__interp_pick(const struct ii_opinfo *oi, struct ii_insn *in, const char **why)
{
	const char *op = oi->op;
	int t = last_type(oi, 0);
	int rc = -1;

	*why = "opcode";
	if (t < 0) {
		*why = "type";
		goto out;
	}
	for (unsigned int i = 0; i < oi->nmods; i++)
		if (!mod_known(oi->mods[i])) {
			*why = "modifier";
			goto out;
		}
	if ((t & II_T_HALF) && strcmp(op, "cvt")) {
		*why = "f16 arithmetic";
		goto out;
	}
	if (has(oi, "sat") && !(t & II_T_FLOAT) && strcmp(op, "cvt")) {
		*why = "integer .sat";
		goto out;
	}
	in->rnd = (uint8_t)float_rnd(oi);
	in->ftz = has(oi, "ftz");
	in->sat = has(oi, "sat");
	if (!strcmp(op, "ld") || !strcmp(op, "ldu") || !strcmp(op, "st")) {
		if (t <= 0 || (t & II_T_PRED))
			goto out_type;
		in->size = (uint8_t)(II_T_BITS(t) / 8);
		in->sgn = (t & II_T_SIGNED) != 0;
		in->nvec = has(oi, "v4") ? 4 : has(oi, "v2") ? 2 : 1;
		if (op[0] == 's')
			in->fn = h_st;
		else if (in->size == 4 && in->nvec == 1 && !in->sgn && in->d[0] != II_NONE &&
			 (in->space == II_SP_GENERIC || in->space == II_SP_GLOBAL))
			in->fn = h_ld32; /* unchecked: flat spaces only */
		else
			in->fn = h_ld;
		rc = 0;
	} else if (!strcmp(op, "atom") || !strcmp(op, "red")) {
		rc = pick_atom(oi, in, t, why);
	} else if (!strcmp(op, "cvt")) {
		rc = pick_cvt(oi, in, why);
	} else if (!strcmp(op, "cvta")) {
		in->fn = has(oi, "to") ? h_cvta_to : h_cvta;
		in->wm = mask_bits(II_T_BITS(t));
		rc = 0;
	} else if (!strcmp(op, "setp")) {
		in->size = (uint8_t)II_T_BITS(t); /* signed compares sign-extend from it */
		rc = pick_setp(oi, in, t, why);
	} else if (!strcmp(op, "mul") || !strcmp(op, "mad")) {
		if (t <= 0)
			goto out_type;
		in->wm = mask_bits(II_T_BITS(t));
		in->size = (uint8_t)II_T_BITS(t);
		rc = pick_mul_mad(oi, in, t, why);
	} else if (!strcmp(op, "shfl")) {
		in->aux = has(oi, "up")	    ? SHFL_UP
			  : has(oi, "down") ? SHFL_DOWN
			  : has(oi, "bfly") ? SHFL_BFLY
					    : SHFL_IDX;
		if (!has(oi, "sync") || (!has(oi, "idx") && in->aux == SHFL_IDX))
			*why = "non-sync form";
		else
			in->fn = h_shfl, rc = 0;
	} else if (!strcmp(op, "vote")) {
		in->aux = has(oi, "all")   ? VOTE_ALL
			  : has(oi, "any") ? VOTE_ANY
			  : has(oi, "uni") ? VOTE_UNI
					   : VOTE_BALLOT;
		if (!has(oi, "sync") || (in->aux == VOTE_BALLOT && !has(oi, "ballot")))
			*why = "non-sync form";
		else
			in->fn = h_vote, rc = 0;
	} else if (!strcmp(op, "shf")) {
		in->aux = has(oi, "r");
		in->off = has(oi, "clamp");
		in->wm = 0xffffffffu;
		if (II_T_BITS(t) != 32 || (!has(oi, "wrap") && !has(oi, "clamp")))
			*why = "form";
		else
			in->fn = h_shf, rc = 0;
	} else if (!strcmp(op, "bmsk")) {
		in->off = has(oi, "clamp");
		in->wm = 0xffffffffu;
		in->size = 32;
		if (!has(oi, "wrap") && !has(oi, "clamp"))
			*why = "form";
		else
			in->fn = h_bmsk, rc = 0;
	} else if (!strcmp(op, "redux")) {
		static const char *const rops[] = { "add", "min", "max", "and", "or", "xor" };
		static const int codes[] = { AT_ADD, AT_MIN, AT_MAX, AT_AND, AT_OR, AT_XOR };

		in->aux = II_NONE;
		for (unsigned int i = 0; i < 6; i++)
			if (has(oi, rops[i]))
				in->aux = (uint32_t)codes[i];
		in->sgn = (t & II_T_SIGNED) != 0;
		if (!has(oi, "sync") || in->aux == II_NONE || II_T_BITS(t) != 32 || (t & II_T_FLOAT))
			*why = "form";
		else
			in->fn = h_redux, rc = 0;
	} else if (!strcmp(op, "bfind")) {
		in->size = (uint8_t)II_T_BITS(t);
		in->sgn = (t & II_T_SIGNED) != 0;
		in->aux = has(oi, "shiftamt");
		in->fn = h_bfind, rc = 0;
	} else if (!strcmp(op, "activemask")) {
		in->fn = h_activemask, rc = 0;
	} else if (!strcmp(op, "membar") || !strcmp(op, "fence") || !strcmp(op, "prefetch") ||
		   (!strcmp(op, "bar") && has(oi, "warp")) || !strcmp(op, "nanosleep")) {
		/* one host thread runs a block: memory is always coherent for it */
		in->fn = h_nop, rc = 0;
	} else {
		if (t == 0)
			goto out_type;
		in->wm = mask_bits(II_T_BITS(t));
		in->size = (uint8_t)II_T_BITS(t);
		rc = pick_arith(oi, in, t, why);
		if (rc == 0 && (t & II_T_FLOAT) && (!strcmp(op, "mov") || !strcmp(op, "selp")))
			in->wm = mask_bits(II_T_BITS(t));
	}
	goto out;
out_type:
	*why = "type";
	rc = -1;
out:
	return rc;
}

/* Used by the decoder for mov with a vector operand. */
ii_fn sim__interp_pack_fn(bool unpack);
ii_fn sim__interp_pack_fn(bool unpack)
{
	return unpack ? h_unpack : h_pack;
}
