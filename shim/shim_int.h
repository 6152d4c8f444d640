/* shim_int.h - private to shim/: hand-written hook prototypes, the hook table, routing of
 * driver pointers to hooks, and the dlsym entry. shim layer. */
#ifndef SHIM_SHIM_INT_H
#define SHIM_SHIM_INT_H

#include <stdint.h>

#include "driver/api.h"
#include "driver/real.h"
#include "shim/shim.h"

/* Membership test in modeled.def by name, at preprocessing time:
 * SHIM_IF_MODELED(SHIM_MODELED_##symbol, yes, no) expands to yes when modeled.def defines
 * SHIM_MODELED_<symbol> (as SHIM_YES, which expands to "~, 1"), else to no. The probe works
 * because a defined name turns into two arguments and shifts the 1 into second place.
 * modeled.def is cufold's policy (which hooks are hand-written), not a description of the
 * driver, so it stays here rather than in driver/. */
#define SHIM_YES ~, 1
#define SHIM_SECOND_(a, b, ...) b
#define SHIM_IS_(...) SHIM_SECOND_(__VA_ARGS__, 0, ~)
#define SHIM_CAT_(a, b) a##b
#define SHIM_CAT(a, b) SHIM_CAT_(a, b)
#define SHIM_SEL_0(yes, no) no
#define SHIM_SEL_1(yes, no) yes
#define SHIM_IF_MODELED(probe, yes, no) SHIM_CAT(SHIM_SEL_, SHIM_IS_(probe))(yes, no)

#include "shim/modeled.def"

/* shim_hand_<symbol>: the prototype every hand-written hook must have (declared for every
 * symbol; defined only for those in modeled.def). */
#define CF_API(symbol, base, version, pt, ret, decls, args) ret CUDAAPI shim_hand_##symbol decls;
#define CF_API_UNTYPED(symbol)
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED

/* Export a hand-written hook under the driver's name; place it after the definition. */
#define SHIM_EXPORT_HOOK(symbol) \
	extern __typeof__(shim_hand_##symbol) shim_export_##symbol __asm__(#symbol) \
		__attribute__((alias("shim_hand_" #symbol), visibility("default")))

/* The exported half of every typed hook, generated (hooks.c) or hand-written (SHIM_HOOK,
 * engine.h), as the text of a top-level __asm__: the exported name and a hidden name label the
 * same three instructions: if shim__passthrough is set (mode off) tail-jump to the driver's
 * function through drv_real at the offset `off` (an assembler symbol set to offsetof), else
 * tail-jump to the C function `slow`, which has the exact prototype. Both are jumps, so the
 * arguments on registers and stack reach the target untouched. Every parameter is a string
 * (name: "cuMemcpyHtoD" must not become the cuda.h macro's cuMemcpyHtoD_v2). x86-64 only. */
#define SHIM_STUB_ASM(name, hidden, off, slow)                                                             \
	".pushsection .text\n"                                                                            \
	".p2align 4\n"                                                                                    \
	".globl " hidden "\n"                                                                             \
	".hidden " hidden "\n"                                                                            \
	".type " hidden ", @function\n"                                                                   \
	".globl " name "\n"                                                                               \
	".type " name ", @function\n"                                                                     \
	hidden ":\n" name ":\n"                                                                          \
	"\t.cfi_startproc\n"                                                                             \
	"\tcmpb $0, shim__passthrough(%rip)\n"                                                           \
	"\tje " slow "\n"                                                                                \
	"\tjmp *drv_real+" off "(%rip)\n"                                                               \
	"\t.cfi_endproc\n"                                                                               \
	".size " hidden ", .-" hidden "\n"                                                                \
	".size " name ", .-" name "\n"                                                                    \
	".popsection\n"

/* cufold's hook for a symbol (what dlsym and cuGetProcAddress hand out). */
void *shim_hook_addr(enum drv_api_id id);
/* The id whose hook is at p, or -1. */
int shim_hook_find(const void *p);
/* Whether a symbol's hook is hand-written (listed in shim/modeled.def). */
bool shim_is_modeled(enum drv_api_id id);

/* ------------------------------------------------------------------ routing (route.c) */

#define SHIM_PTRMAP_SLOTS 2048 /* power of two, at least twice DRV_API_COUNT */
_Static_assert(DRV_API_COUNT * 2 <= SHIM_PTRMAP_SLOTS, "pointer map load stays under one half");

/* Address -> ids, built from a table of addresses (the real driver's, or a test's). */
struct shim_ptrmap {
	const void *key[SHIM_PTRMAP_SLOTS]; /* address; NULL marks an empty slot */
	int16_t id[SHIM_PTRMAP_SLOTS];      /* first id (lowest) found at that address */
	int16_t next[DRV_API_COUNT];       /* next id with the same address, or -1 */
};

void shim__ptrmap_build(struct shim_ptrmap *m, void *const addr[DRV_API_COUNT]);
/* First id at address p, or -1. */
int shim__ptrmap_find(const struct shim_ptrmap *m, const void *p);
/* Among the ids sharing first's address, the one a lookup meant: the exact name, else the
 * same base with the stream variant flags ask for and the newest version not above the
 * requested one, else first. name/base may be NULL; version <= 0 means any. */
int shim__ptrmap_pick(const struct shim_ptrmap *m, int first, const char *name, const char *base, int version,
		      unsigned long long flags);

/* Build the process's map from the published real table (initialization). */
void shim__route_build(void);
/* cufold's hook for a pointer the driver's cuGetProcAddress returned for (base, version,
 * flags), or p itself when p is not one of the driver's exported symbols. */
void *shim_route_procaddr(void *p, const char *base, int version, unsigned long long flags);
/* The same for a pointer dlsym found for name. */
void *shim_route_dlsym(void *p, const char *name);

/* ------------------------------------------------------------------ dlsym (dlsym.c) */

/* Called by the exported dlsym stub with the caller's return address. Returns 1 with *answer
 * set when cufold answers, 0 when the stub must tail-jump to glibc's dlsym (so RTLD_NEXT and
 * RTLD_DEFAULT resolve relative to the real caller). */
int shim__dlsym_decide(void *handle, const char *name, void *caller, void **answer);

/* ------------------------------------------------------------------ untyped symbols (hooks.c) */

/* The trampoline of an untyped symbol asks where to jump: counts the call and returns the
 * driver's address (or a stub answering CUDA_ERROR_NOT_FOUND). */
void *shim__untyped_enter(int id);

#endif
