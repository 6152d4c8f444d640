/* hooks.c - the exported driver entry points: one generated hook per symbol of
 * driver/cuda_api.def (except the hand-written ones of shim/modeled.def), trampolines for the
 * untyped symbols, and the table of every hook. shim layer.
 *
 * A generated hook is two halves. The exported half is three instructions of assembly, the
 * same for every prototype: if shim__passthrough is set (mode off, after initialization) jump
 * to the driver's function through the real table, else jump to the slow half. Both are tail
 * jumps, so the arguments, on registers and on the stack, reach the target untouched. (A C
 * wrapper cannot do this: for an 11-argument call like cuLaunchKernel GCC re-stores the stack
 * arguments around the branch, about 20 instructions.) The slow half is C with the exact
 * prototype: it tells the engine that a call cufold does not model is about to happen
 * (shim_note_unmodeled, which also initializes on first use) and forwards.
 *
 * The exported name and a hidden name (shim_gen_<symbol>) label the same stub; cufold's own
 * references (the hook table) use the hidden one, so they never bind to another object's
 * definition of the driver's name. */
#include <stddef.h>
#include <string.h>

#include "common/compiler.h"
#include "shim/shim_int.h"

#if !defined(__x86_64__)
#error "shim/hooks.c has hook stubs for x86-64 only"
#endif

/* shim_off_<symbol>: the offset of the symbol's pointer in drv_real, as an assembler symbol
 * the stubs can add to drv_real (the preprocessor cannot compute offsetof). */
__attribute__((used)) static void real_table_offsets(void)
{
#define CF_API(symbol, base, version, pt, ret, decls, args) \
	__asm__(".set shim_off_" #symbol ", %c0" ::"i"(offsetof(struct drv_real_table, p_##symbol)));
#define CF_API_UNTYPED(symbol)
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED
}

#define CF_API(symbol, base, version, pt, ret, decls, args) \
	SHIM_IF_MODELED(SHIM_MODELED_##symbol, , \
		__attribute__((visibility("hidden"))) ret CUDAAPI shim_slow_##symbol decls; \
		ret CUDAAPI shim_slow_##symbol decls { \
			shim_note_unmodeled(DRV_ID_##symbol); \
			return drv_real.p_##symbol args; \
		} \
		void shim_gen_##symbol(void); \
		__asm__(SHIM_STUB_ASM(#symbol, "shim_gen_" #symbol, "shim_off_" #symbol, "shim_slow_" #symbol));)
#define CF_API_UNTYPED(symbol)
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED

/* ------------------------------------------------------------------ untyped symbols
 *
 * Exported names the toolkit declares no prototype for (cuProfilerStart, ...) cannot be
 * wrapped in C. Each gets a stub that loads its id and jumps to a common trampoline, which
 * saves every argument register, asks shim__untyped_enter where to go, restores them and
 * tail-jumps: the driver's function sees exactly the caller's arguments and return address. */
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".globl shim__untyped_common\n"
	".hidden shim__untyped_common\n"
	".type shim__untyped_common, @function\n"
	"shim__untyped_common:\n"
	"\t.cfi_startproc\n"
	"\tpushq %rdi\n\t.cfi_adjust_cfa_offset 8\n"
	"\tpushq %rsi\n\t.cfi_adjust_cfa_offset 8\n"
	"\tpushq %rdx\n\t.cfi_adjust_cfa_offset 8\n"
	"\tpushq %rcx\n\t.cfi_adjust_cfa_offset 8\n"
	"\tpushq %r8\n\t.cfi_adjust_cfa_offset 8\n"
	"\tpushq %r9\n\t.cfi_adjust_cfa_offset 8\n"
	"\tpushq %rax\n\t.cfi_adjust_cfa_offset 8\n"
	/* entry rsp was 8 mod 16; seven pushes make it 0, and 128 keeps it so for the call */
	"\tsubq $128, %rsp\n\t.cfi_adjust_cfa_offset 128\n"
	"\tmovdqu %xmm0, 0(%rsp)\n\tmovdqu %xmm1, 16(%rsp)\n\tmovdqu %xmm2, 32(%rsp)\n"
	"\tmovdqu %xmm3, 48(%rsp)\n\tmovdqu %xmm4, 64(%rsp)\n\tmovdqu %xmm5, 80(%rsp)\n"
	"\tmovdqu %xmm6, 96(%rsp)\n\tmovdqu %xmm7, 112(%rsp)\n"
	"\tmovl %r11d, %edi\n"
	"\tcall shim__untyped_enter\n"
	"\tmovq %rax, %r11\n"
	"\tmovdqu 0(%rsp), %xmm0\n\tmovdqu 16(%rsp), %xmm1\n\tmovdqu 32(%rsp), %xmm2\n"
	"\tmovdqu 48(%rsp), %xmm3\n\tmovdqu 64(%rsp), %xmm4\n\tmovdqu 80(%rsp), %xmm5\n"
	"\tmovdqu 96(%rsp), %xmm6\n\tmovdqu 112(%rsp), %xmm7\n"
	"\taddq $128, %rsp\n\t.cfi_adjust_cfa_offset -128\n"
	"\tpopq %rax\n\t.cfi_adjust_cfa_offset -8\n"
	"\tpopq %r9\n\t.cfi_adjust_cfa_offset -8\n"
	"\tpopq %r8\n\t.cfi_adjust_cfa_offset -8\n"
	"\tpopq %rcx\n\t.cfi_adjust_cfa_offset -8\n"
	"\tpopq %rdx\n\t.cfi_adjust_cfa_offset -8\n"
	"\tpopq %rsi\n\t.cfi_adjust_cfa_offset -8\n"
	"\tpopq %rdi\n\t.cfi_adjust_cfa_offset -8\n"
	"\tjmp *%r11\n"
	"\t.cfi_endproc\n"
	".size shim__untyped_common, .-shim__untyped_common\n"
	".popsection\n");

#define CF_API(symbol, base, version, pt, ret, decls, args)
#define CF_API_UNTYPED(symbol) \
	__attribute__((visibility("hidden"))) extern const int shim_untyped_id_##symbol; \
	const int shim_untyped_id_##symbol = DRV_ID_##symbol; \
	void shim_untyped_##symbol(void); \
	__asm__(".pushsection .text\n" \
		".p2align 4\n" \
		".globl shim_untyped_" #symbol "\n" \
		".hidden shim_untyped_" #symbol "\n" \
		".type shim_untyped_" #symbol ", @function\n" \
		".globl " #symbol "\n" \
		".type " #symbol ", @function\n" \
		"shim_untyped_" #symbol ":\n" \
		#symbol ":\n" \
		"\tmovl shim_untyped_id_" #symbol "(%rip), %r11d\n" \
		"\tjmp shim__untyped_common\n" \
		".size shim_untyped_" #symbol ", .-shim_untyped_" #symbol "\n" \
		".size " #symbol ", .-" #symbol "\n" \
		".popsection\n");
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED

static CUresult untyped_absent(void)
{
	return CUDA_ERROR_NOT_FOUND;
}

void *shim__untyped_enter(int id)
{
	void *p;

	if (!shim_is_passthrough())
		shim_note_unmodeled((enum drv_api_id)id);
	p = drv_real_addr((enum drv_api_id)id);
	if (!p) {
		drv_fn f = (drv_fn)untyped_absent;

		cf_log_warn_once("an untyped driver entry point was called but the driver lacks it");
		memcpy(&p, &f, sizeof(p));
	}
	return p;
}

/* ------------------------------------------------------------------ the hook table */

static const drv_fn hook_fn[DRV_API_COUNT] = {
#define CF_API(symbol, base, version, pt, ret, decls, args) \
	(drv_fn)SHIM_IF_MODELED(SHIM_MODELED_##symbol, shim_hand_##symbol, shim_gen_##symbol),
#define CF_API_UNTYPED(symbol) (drv_fn)shim_untyped_##symbol,
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED
};

static const bool hook_is_hand[DRV_API_COUNT] = {
#define CF_API(symbol, base, version, pt, ret, decls, args) SHIM_IF_MODELED(SHIM_MODELED_##symbol, true, false),
#define CF_API_UNTYPED(symbol) false,
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED
};

_Static_assert(sizeof(drv_fn) == sizeof(void *), "function and data pointers have one size");

bool shim_is_modeled(enum drv_api_id id)
{
	return (unsigned)id < DRV_API_COUNT && hook_is_hand[id];
}

void *shim_hook_addr(enum drv_api_id id)
{
	void *p = NULL;

	if ((unsigned)id < DRV_API_COUNT)
		memcpy(&p, &hook_fn[id], sizeof(p));
	return p;
}

int shim_hook_find(const void *p)
{
	for (int id = 0; id < DRV_API_COUNT; id++)
		if (shim_hook_addr((enum drv_api_id)id) == p)
			return id;
	return -1;
}
