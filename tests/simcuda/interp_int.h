/* interp_int.h - the PTX interpreter's decoded form, shared by its decoder (interp_decode.c)
 * and its executor (interp_exec.c, interp_ops.c). tests/simcuda layer.
 *
 * Decoded form: every operand is a SLOT of the function's register file, one 64-bit value per
 * lane of a warp (regs[slot * 32 + lane]). Declared registers, immediates (broadcast into
 * constant slots when a warp starts), special registers (%tid.x ...) and symbol addresses all
 * become slots, so an instruction handler never asks what kind of operand it has.
 *
 * Invariants:
 *  1. A register slot holds its value zero-extended from the register's declared width
 *     (predicates are 0 or 1, f32 is its bits in the low word); every handler keeps this.
 *  2. An address is base[space][lane] + slot value + off: global and generic have base 0
 *     (device pointers are host addresses), shared/local/param/call-param have the block's,
 *     thread's or frame's buffer, so cvta between a space and generic is an add/subtract.
 *  3. A warp executes one instruction for the lanes of its active group (same pc) in lockstep;
 *     diverged lanes wait at their own pc and the lowest waiting pc runs first, which
 *     reconverges them where nvcc's layout joins (sched in interp_exec.c). */
#ifndef SIM_INTERP_INT_H
#define SIM_INTERP_INT_H

#include "interp.h"

#include <stdint.h>

#define II_LANES 32
#define II_FULL 0xffffffffu
#define II_NONE 0xffffffffu          /* "no pc" / "no slot" */
#define II_DYN_SHARED_BASE (256u * 1024) /* shared offset of the dynamic (extern) part */

enum ii_space {
	II_SP_GENERIC,               /* base 0: host address */
	II_SP_GLOBAL,                /* base 0 as well */
	II_SP_SHARED,                /* the block's shared buffer */
	II_SP_LOCAL,                 /* the thread's local area */
	II_SP_PARAM,                 /* kernel: the launch's parameters; .func: the frame's formals */
	II_SP_CPARAM,                /* .param declared in a call block: the frame's call area */
	II_SP_CONST,                 /* module constants (not supported yet: no slot resolves here) */
	II_NSPACE
};

/* Fixed slots, then constants, then declared registers. */
enum ii_fixed_slot {
	II_S_ZERO,                   /* constant 0: the base of [sym] and [imm] addresses */
	II_S_TID_X, II_S_TID_Y, II_S_TID_Z,
	II_S_NTID_X, II_S_NTID_Y, II_S_NTID_Z,
	II_S_CTAID_X, II_S_CTAID_Y, II_S_CTAID_Z,
	II_S_NCTAID_X, II_S_NCTAID_Y, II_S_NCTAID_Z,
	II_S_LANEID, II_S_WARPID, II_S_NWARPID,
	II_S_LANEMASK_EQ, II_S_LANEMASK_LT, II_S_LANEMASK_LE, II_S_LANEMASK_GT, II_S_LANEMASK_GE,
	II_S_DYNSMEM,                /* %dynamic_smem_size */
	II_S_NFIXED
};

enum ii_kind {
	II_K_OP,                     /* call fn for the active lanes, then pc + 1 */
	II_K_BRA,                    /* to target for the lanes whose guard holds */
	II_K_EXIT,                   /* lanes end (ret in a kernel, exit) */
	II_K_RET,                    /* lanes return from a .func */
	II_K_BAR,                    /* bar.sync 0: wait for every live thread of the block */
	II_K_CALL,                   /* call a .func (aux = callee index in the module) */
};

struct ii_warp;
struct ii_insn;
typedef void (*ii_fn)(struct ii_warp *w, const struct ii_insn *in, uint32_t m);

struct ii_insn {
	ii_fn fn;                    /* handler (II_K_OP) */
	uint32_t d[4];               /* destination slots (vector elements; d[1] = setp's |q) */
	uint32_t s[5];               /* source slots (a, b, c, d; st: address, then its values) */
	int64_t off;                 /* address offset (ld/st/atom), immediate extras */
	uint64_t wm;                 /* mask of the operation's width (integer ops) */
	uint32_t guard;              /* predicate slot, II_NONE when unguarded */
	uint32_t target;             /* branch target pc, II_NONE otherwise */
	uint32_t aux;                /* op-specific: compare code, callee, shuffle mode ... */
	uint16_t line;               /* source line (low 16 bits), for messages */
	uint8_t kind;                /* enum ii_kind */
	uint8_t gneg;                /* guard is @!p */
	uint8_t space;               /* enum ii_space of the address */
	uint8_t size;                /* bytes per element (ld/st/atom), or bits (integer ops) */
	uint8_t nvec;                /* elements of a vector ld/st (1, 2, 4) */
	uint8_t sgn;                 /* signed operation / sign-extending load */
	uint8_t rnd;                 /* 0 = round to nearest, else an FE_* mode + 1 (see exec) */
	uint8_t ftz;                 /* flush subnormal f32 inputs and results to zero */
	uint8_t sat;                 /* clamp a float result to [0, 1] / saturating cvt */
	uint8_t aux2;                /* op-specific second code (cvt source type ...) */
};

struct ii_const {
	uint32_t slot;               /* where the value is broadcast */
	uint64_t value;              /* its bits */
};

struct ii_pslot {
	uint32_t off;                /* byte offset in the frame's formals / call area */
	uint32_t size;               /* bytes */
};

struct sim_ifunc {
	char *name;                  /* as in the PTX */
	bool is_kernel;              /* .entry (else .func) */
	struct ii_insn *code;        /* ncode instructions; the last is an exit/ret */
	uint32_t ncode;
	uint32_t nslots;             /* register file slots per lane */
	struct ii_const *consts;     /* nconsts constant slots to fill */
	uint32_t nconsts;
	uint32_t shared_static;      /* bytes of shared memory below the dynamic base */
	uint32_t local_off;          /* this function's local depot offset in a thread's area */
	uint32_t local_bytes;        /* the thread's whole local area (kernel: with callees') */
	uint32_t param_bytes;        /* .func: formals + return value area per lane */
	uint32_t cparam_bytes;       /* call-block .param area per lane */
	struct ii_pslot *formals;    /* .func: nformals parameters, in order */
	uint32_t nformals;
	struct ii_pslot ret;         /* .func: the return value (size 0 when none) */
	bool has_bar;                /* uses bar.sync (a .func with one is refused) */
};

/* ii_call.callee of a call of vprintf (CUDA's printf), which the executor formats itself. */
#define II_CALL_VPRINTF 0xfffffffeu

/* A call site's arguments: caller call-area slots, matched with the callee's formals. */
struct ii_call {
	uint32_t callee;             /* index in the module's functions */
	uint32_t nargs;              /* arguments */
	struct ii_pslot args[16];    /* their places in the caller's call area */
	struct ii_pslot ret;         /* where the return value goes (size 0 when none) */
};

struct sim_imod {
	struct sim_ifunc **funcs;    /* decoded (or being decoded) functions, by index */
	uint32_t nfuncs, capfuncs;
	struct ii_call *calls;       /* call sites of every function (insn aux indexes here) */
	uint32_t ncalls, capcalls;
	uint32_t local_next;         /* next free byte of the thread's local area (all functions) */
};

/* Per-warp execution state the handlers see. */
struct ii_warp {
	uint64_t *r;                 /* current frame's register file (nslots * 32) */
	uintptr_t (*base)[II_LANES]; /* current frame's bases, [II_NSPACE][32] */
	uint64_t count;              /* thread-instructions executed (benchmark, stats) */
	uint32_t active;             /* lanes of the active group (for activemask/vote) */
	uint64_t lim[II_NSPACE];     /* bytes addressable in each space (~0: flat, unchecked) */
	uint64_t dyn_shared;         /* bytes of dynamic shared memory, from II_DYN_SHARED_BASE */
	uint32_t fault;              /* PTX line of an access out of its space (0: none): stop */
	uint64_t fault_off;          /* its offset */
	uint8_t fault_space;         /* and space */
};

/* An access of n bytes at offset off of a checked space (shared, local, param): in bounds?
 * Records the fault in w otherwise (the executor stops the kernel and says so). */
static inline bool ii_in_bounds(struct ii_warp *w, const struct ii_insn *in, uint64_t off, uint64_t n)
{
	uint64_t lim = w->lim[in->space];

	if (off <= lim && n <= lim - off)
		return true;
	if (in->space == II_SP_SHARED && off >= II_DYN_SHARED_BASE && off - II_DYN_SHARED_BASE <= w->dyn_shared &&
	    n <= w->dyn_shared - (off - II_DYN_SHARED_BASE))
		return true;
	if (!w->fault) {
		w->fault = in->line ? in->line : 1;
		w->fault_off = off;
		w->fault_space = in->space;
	}
	return false;
}

#define II_R(w, slot) ((w)->r + (size_t)(slot) * II_LANES)

/* Handlers by PTX opcode and type: interp_ops.c. Returns NULL and names the reason in why when
 * the combination is not supported. `mods` is the dot-separated modifier list after the opcode,
 * `in` the instruction being decoded (handlers read its fields at run time). */
struct ii_opinfo {
	const char *op;              /* base opcode ("add") */
	const char *const *mods;     /* modifiers ("rn", "f32"), nmods of them */
	unsigned int nmods;
};
int sim__interp_pick(const struct ii_opinfo *oi, struct ii_insn *in, const char **why);
/* Type code of the last type modifier: bits in the low byte, flags above. */
#define II_T_SIGNED 0x100
#define II_T_FLOAT 0x200
#define II_T_PRED 0x400
#define II_T_HALF 0x800                /* f16: only cvt (and untyped b16 moves) run */
#define II_T_BITS(t) ((t) & 0xff)
int sim__interp_type(const char *mod);

/* Executor entry for the decoder-independent part (interp_exec.c). */
uint64_t sim__interp_count(void);

#endif
