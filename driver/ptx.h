/* ptx.h - one reading of PTX: a module's text parsed into functions, their parameters,
 * declarations and instructions with every operand resolved. driver layer (the images the
 * driver loads). libc only: the software device's interpreter (tests/simcuda) is built on it,
 * cufold's effects analysis (rewrite/) and its fused variants read it.
 *
 * What is parsed: what nvcc 13, NVVM (numba) and NVRTC emit for compute_90 and below -
 * `.version`, `.target`, `.address_size`; module-scope `.global`/`.const`/`.shared` variables
 * (with `.align`, arrays, initialisers); `.entry` and `.func` (with return parameters, `.extern`
 * and `.weak` declarations, performance directives `.maxntid` `.reqntid` `.minnctapersm`
 * `.maxnreg` `.pragma`); bodies: `.reg` (families `%r<N>` and single registers), `.local`,
 * `.shared`, `.param` (call blocks), labels and `.callprototype` labels, nested `{ }` blocks,
 * instructions with a guard (`@p`, `@!p`), an opcode with its dot-modifiers, and operands
 * (registers, `p|q`, `!p`, special registers, integer and float immediates, symbols, `[base+N]`
 * addresses, `{ }` vectors, `( )` call lists, labels, `_`). Debug directives (`.file`, `.loc`,
 * `.section`) are skipped. Not parsed (the parse fails): vector registers (`.reg .v4`),
 * `.reg` parameters, `.shared::cluster`, `.branchtargets`/`.calltargets`, texture/surface
 * references, `.alias`. Anything else unknown fails the parse with a message naming the line:
 * a construct is never guessed at. Hostile text is refused, never followed: nesting and sizes
 * are bounded, and no recursion deepens with the input.
 *
 * Invariants of a parsed module:
 *  1. Every name an operand uses is resolved at parse time (registers to a flat register id,
 *     symbols to a (scope, index) pair, labels to an instruction index, callees to a function
 *     index), honouring nested-block scoping; a consumer never compares operand names.
 *  2. Registers of a function are numbered 0 .. nregs-1 in declaration order; a family
 *     `%r<N>` takes N consecutive ids (%r0 .. %r<N-1>).
 *  3. Parameter offsets are computed as the driver lays them out: each rounded up to its
 *     alignment (`.align N` before the type, else the type's size); call-block `.param`
 *     variables get offsets in their block's call area, which starts at 0 in every block
 *     directly inside the body (a block nested in one, as inline asm, continues its area).
 *  4. The module owns all memory (one arena); strings are NUL-terminated and live as long as
 *     the module. ptx_module_free frees everything.
 *  5. A module-scope name is one symbol: an `.extern` or `.weak`/`.common` repeat of a variable
 *     or a declaration repeating a function is the same entry; a definition completes an earlier
 *     declaration in place (indexes taken before stay valid). Only internal (no linkage said)
 *     variables and .func may be defined again, as PTX files linked by concatenation do: the
 *     later one shadows the earlier for what follows. A second .entry or .visible definition
 *     fails.
 */
#ifndef CF_DRIVER_PTX_H
#define CF_DRIVER_PTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PTX_NONE 0xffffffffu      /* "no register / symbol / label / function" */
#define PTX_MAX_MODS 12           /* dot-modifiers of one opcode */
#define PTX_MAX_OPERANDS 8        /* operands of one instruction */

/* State spaces. */
enum ptx_space {
	PTX_SPACE_NONE,               /* no space modifier (generic addressing for ld/st) */
	PTX_SPACE_GENERIC = PTX_SPACE_NONE,
	PTX_SPACE_GLOBAL,
	PTX_SPACE_SHARED,             /* incl. .shared::cta; .shared::cluster is refused */
	PTX_SPACE_LOCAL,
	PTX_SPACE_PARAM,              /* a function's own parameters (kernel or .func formals) */
	PTX_SPACE_CONST,
	PTX_SPACE_REG,                /* register declarations */
};

/* Fundamental types (the last type modifier of an instruction; a declaration's type). */
enum ptx_type {
	PTX_T_NONE,
	PTX_T_PRED,
	PTX_T_B8, PTX_T_B16, PTX_T_B32, PTX_T_B64, PTX_T_B128,
	PTX_T_U8, PTX_T_U16, PTX_T_U32, PTX_T_U64,
	PTX_T_S8, PTX_T_S16, PTX_T_S32, PTX_T_S64,
	PTX_T_F16, PTX_T_F16X2, PTX_T_BF16, PTX_T_BF16X2, PTX_T_F32, PTX_T_F64,
};

/* Special registers (read-only operands). */
enum ptx_special {
	PTX_SR_TID_X, PTX_SR_TID_Y, PTX_SR_TID_Z,
	PTX_SR_NTID_X, PTX_SR_NTID_Y, PTX_SR_NTID_Z,
	PTX_SR_CTAID_X, PTX_SR_CTAID_Y, PTX_SR_CTAID_Z,
	PTX_SR_NCTAID_X, PTX_SR_NCTAID_Y, PTX_SR_NCTAID_Z,
	PTX_SR_LANEID, PTX_SR_WARPID, PTX_SR_NWARPID, PTX_SR_SMID, PTX_SR_NSMID, PTX_SR_GRIDID,
	PTX_SR_LANEMASK_EQ, PTX_SR_LANEMASK_LT, PTX_SR_LANEMASK_LE, PTX_SR_LANEMASK_GT,
	PTX_SR_LANEMASK_GE,
	PTX_SR_CLOCK, PTX_SR_CLOCK64, PTX_SR_GLOBALTIMER, PTX_SR_GLOBALTIMER_LO,
	PTX_SR_GLOBALTIMER_HI,
	PTX_SR_DYNAMIC_SMEM_SIZE, PTX_SR_TOTAL_SMEM_SIZE,
	PTX_SR_ENVREG,                /* %envreg0..31: operand.imm holds the number */
	PTX_SR_COUNT
};

/* Where a symbol operand's name resolved. */
enum ptx_scope {
	PTX_SCOPE_PARAM,              /* the function's own parameter: func->params[index] */
	PTX_SCOPE_RET,                /* a .func's return parameter: func->rets[index] */
	PTX_SCOPE_VAR,                /* a variable declared in the body: func->vars[index] */
	PTX_SCOPE_GLOBAL,             /* a module-scope variable: module->vars[index] */
	PTX_SCOPE_FUNC,               /* a function (call target, or its address): module->funcs[index] */
};

enum ptx_operand_kind {
	PTX_OP_REG,                   /* reg */
	PTX_OP_SPECIAL,               /* special (enum ptx_special) */
	PTX_OP_IMM,                   /* imm: integer value, or float bits (is_float says which) */
	PTX_OP_SYM,                   /* scope, index: a variable's or function's address (mov %rd, sym) */
	PTX_OP_ADDR,                  /* [base + imm]: base is reg, or symbol (scope, index), or neither ([imm]) */
	PTX_OP_VEC,                   /* { a, b, ... }: nelem operands from module->operands[first] */
	PTX_OP_LIST,                  /* ( a, b, ... ) of a call: nelem operands from module->operands[first] */
	PTX_OP_LABEL,                 /* label: the instruction index it precedes (bra target) */
	PTX_OP_SINK,                  /* _ (a discarded destination) */
	PTX_OP_PAIR,                  /* p|q: setp's two predicate destinations, reg = p, index = q */
	PTX_OP_PROTO,                 /* a .callprototype label (the last operand of an indirect call):
	                               * index = the order of its declaration in the function */
};

struct ptx_operand {
	uint8_t kind;                 /* enum ptx_operand_kind */
	uint8_t scope;                /* enum ptx_scope (SYM, ADDR with a symbol base) */
	uint8_t neg;                  /* '!' before a predicate operand (setp's |q, selp's, ...) */
	uint8_t is_float;             /* IMM is float bits: 1 f32 (0f..., in the low word), 2 f64 (0d... or
	                               * a decimal with '.'/'e'); 0 an integer */
	uint32_t reg;                 /* REG; ADDR's base register or PTX_NONE */
	uint32_t index;               /* SYM / ADDR symbol index in its scope, or PTX_NONE;
	                               * SPECIAL: enum ptx_special; LABEL: instruction index */
	uint32_t first;               /* VEC / LIST: first element in module->operands */
	uint32_t nelem;               /* VEC / LIST: elements */
	int64_t imm;                  /* IMM value/bits; ADDR byte offset; ENVREG number */
};

struct ptx_insn {
	const char *opcode;           /* "ld", "mad", "setp", ... */
	const char *mods[PTX_MAX_MODS]; /* its dot-modifiers in order, without the dot ("global", "u32") */
	uint8_t nmods;
	uint8_t nops;                 /* operands */
	uint8_t space;                /* enum ptx_space of the first space modifier (ld/st/atom/red/cvta/...; cp.async
	                               * has two: the first, its destination), else NONE */
	uint8_t type;                 /* enum ptx_type: the last type modifier, PTX_T_NONE if none */
	uint8_t vec;                  /* 1, or 2/4 for .v2/.v4 */
	uint8_t guard_neg;            /* guard is @!p */
	uint32_t guard;               /* predicate register of the guard, PTX_NONE when unguarded */
	uint32_t line;                /* source line (1-based), for messages */
	uint32_t block;               /* innermost { } block it sits in (0 = the body) */
	struct ptx_operand ops[PTX_MAX_OPERANDS];
};

struct ptx_reg {
	const char *name;             /* "%r12", "%p3", "%f1", "%rd4"; single registers as declared */
	uint8_t type;                 /* enum ptx_type declared */
};

/* A word of a module variable's initialiser that holds an address, `sym`, `generic(sym)` or
 * either `+ N`: the loader fills it in, so init holds zeros there. */
struct ptx_init_addr {
	uint64_t offset;              /* byte offset of the word in the variable */
	uint32_t index;               /* the symbol: module->vars[index] or module->funcs[index] */
	uint8_t scope;                /* PTX_SCOPE_GLOBAL or PTX_SCOPE_FUNC */
	uint8_t generic;              /* generic(sym): a generic address, else the symbol's own space */
	uint8_t bytes;                /* width of the word (4 or 8) */
	int64_t addend;               /* the + N */
};

/* A parameter, a return parameter, or a variable (body or module scope). */
struct ptx_var {
	const char *name;
	uint8_t space;                /* enum ptx_space */
	uint8_t type;                 /* element type (PTX_T_B8 for byte arrays / structs) */
	uint8_t is_ptr;               /* .param declared with .ptr (kernel parameter attribute) */
	uint8_t ptr_space;            /* .ptr.global / .ptr.shared ...: enum ptx_space, NONE if unsaid */
	uint8_t is_extern;            /* .extern (e.g. dynamic shared memory: extern .shared .b8 x[]) */
	uint32_t align;               /* bytes (declared, else the element size) */
	uint64_t size;                /* bytes in all (element size x elements; 0 for x[]) */
	uint64_t offset;              /* params: byte offset in the parameter block; call-block
	                               * params: offset in their block's call area; else 0 */
	uint32_t block;               /* block it is declared in (0 = the body / function scope) */
	const unsigned char *init;    /* initial bytes (size of them) of a module variable, or NULL;
	                               * the words init_addrs names hold 0 here */
	const struct ptx_init_addr *init_addrs; /* initialiser words that are symbol addresses */
	uint32_t ninit_addrs;
};

struct ptx_func {
	const char *name;             /* as in the PTX (mangled) */
	bool is_entry;                /* .entry (a kernel), else .func */
	bool is_decl;                 /* declared only (.extern, or no body) */
	bool is_visible;              /* .visible / .weak */
	struct ptx_var *params;       /* parameters in order (space PARAM) */
	uint32_t nparams;
	uint64_t param_bytes;         /* size of the parameter block as laid out */
	struct ptx_var *rets;         /* a .func's return parameters */
	uint32_t nrets;
	struct ptx_reg *regs;         /* registers, by id */
	uint32_t nregs;
	struct ptx_var *vars;         /* .local / .shared / call-block .param declared in the body */
	uint32_t nvars;
	struct ptx_insn *insns;       /* the body's instructions in order */
	uint32_t ninsns;
	uint32_t nblocks;             /* nested { } blocks (block 0 is the body) */
	uint32_t reqntid[3];          /* .reqntid, 0 when absent */
	uint32_t maxntid[3];          /* .maxntid, 0 when absent */
	uint32_t line;                /* line of its .entry/.func */
	const char *text;             /* its source text (from .entry/.func to the closing brace) */
	size_t text_len;
	size_t body_off;              /* offset of the body's '{' in module->text (0 for a declaration) */
};

struct ptx_module {
	uint32_t version_major, version_minor; /* .version */
	uint32_t sm;                  /* .target sm_NN (90 for sm_90 / sm_90a) */
	uint32_t address_size;        /* .address_size (64 unless said) */
	struct ptx_func *funcs;       /* .entry and .func in order of appearance */
	uint32_t nfuncs;
	struct ptx_var *vars;         /* module-scope variables */
	uint32_t nvars;
	struct ptx_operand *operands; /* the pool VEC / LIST operands point into */
	uint32_t noperands;
	const char *text;             /* the module's source text as given (NUL-terminated copy) */
	size_t text_len;
	void *arena;                  /* owns everything above */
};

/* Parse len bytes of PTX text (need not be NUL-terminated). Returns the module, or NULL with a
 * message "line N: reason" in err (errlen bytes) when the text is malformed or uses a construct
 * the parser does not know, or when out of memory. */
struct ptx_module *ptx_parse(const char *text, size_t len, char *err, size_t errlen);
void ptx_module_free(struct ptx_module *m);

/* Lookups (linear; callers cache). NULL / PTX_NONE when absent. */
const struct ptx_func *ptx_find_func(const struct ptx_module *m, const char *name);
uint32_t ptx_func_index(const struct ptx_module *m, const char *name);

/* Names for messages and for consumers that match opcodes. */
const char *ptx_type_name(enum ptx_type t);      /* "u32", ... */
unsigned ptx_type_bytes(enum ptx_type t);        /* 0 for NONE/PRED */
enum ptx_type ptx_type_from_name(const char *s); /* PTX_T_NONE when s is not a type */
const char *ptx_special_name(enum ptx_special s);/* "%tid.x", ... */
/* True when insn has modifier mod (without the dot). */
bool ptx_insn_has_mod(const struct ptx_insn *in, const char *mod);

/* An operand of a VEC/LIST operand. */
static inline const struct ptx_operand *ptx_elem(const struct ptx_module *m, const struct ptx_operand *o,
						   uint32_t i)
{
	return &m->operands[o->first + i];
}

#endif
