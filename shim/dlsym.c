/* dlsym.c - cufold's dlsym: a handle lookup ignores LD_PRELOAD, so this is how programs that
 * dlopen the driver (the CUDA runtime among them) reach cufold's hooks. shim layer.
 *
 * glibc resolves RTLD_NEXT (and the scope of RTLD_DEFAULT) relative to the object that called
 * dlsym, which it finds from the return address. A C function calling glibc's dlsym would
 * make every such lookup relative to libcufold. So the exported dlsym is a small assembly stub:
 * for a driver-like name on an explicit handle it asks shim__dlsym_decide, and it either
 * returns cufold's answer or tail-jumps to glibc's dlsym with the caller's return address still
 * on the stack (every other lookup goes straight there).
 *
 * cufold answers only a lookup that is all of: an explicit handle (not RTLD_NEXT or
 * RTLD_DEFAULT: those keep glibc's exact answer, which for a driver name is already cufold's
 * exported hook when it comes first in the search order), a name of the form cu[A-Z]... that
 * is one of the driver's exported symbols, a mode other than off, a caller that is neither
 * the driver itself (the driver looks up its own symbols) nor cufold, and not from inside
 * cufold's own initialization. The answer is glibc's answer, with a pointer to one of the
 * driver's exported symbols swapped for cufold's hook of that symbol. Everything else
 * (cudnn*, cublas*, ...) is glibc's answer untouched. */
#include <dlfcn.h>
#include <link.h>

#include "common/compiler.h"
#include "common/log.h"
#include "shim/shim_int.h"

#if !defined(__x86_64__)
#error "shim/dlsym.c has the dlsym entry stub for x86-64 only"
#endif

/* void *dlsym(void *handle, const char *name)
 *
 * The common case never leaves assembly: a lookup that is not an explicit handle with a name
 * of the form cu[A-Z]... jumps straight to glibc's dlsym. That also keeps dlsym usable before
 * any C runtime is ready: sanitizer runtimes look up libc functions with dlsym(RTLD_NEXT)
 * before their shadow memory exists, and instrumented C would fault there. */
__asm__(".pushsection .text\n"
	".p2align 4\n"
	".globl dlsym\n"
	".type dlsym, @function\n"
	"dlsym:\n"
	"\t.cfi_startproc\n"
	"\tcmpq $-1, %rdi\n" /* RTLD_NEXT */
	"\tje 2f\n"
	"\ttestq %rdi, %rdi\n" /* RTLD_DEFAULT */
	"\tje 2f\n"
	"\ttestq %rsi, %rsi\n"
	"\tje 2f\n"
	"\tcmpb $0x63, (%rsi)\n" /* 'c' */
	"\tjne 2f\n"
	"\tcmpb $0x75, 1(%rsi)\n" /* 'u' */
	"\tjne 2f\n"
	"\tmovzbl 2(%rsi), %eax\n"
	"\tsubl $0x41, %eax\n" /* 'A'..'Z' */
	"\tcmpl $25, %eax\n"
	"\tja 2f\n"
	/* a driver-like name on an explicit handle: ask shim__dlsym_decide */
	"\tpushq %rdi\n\t.cfi_adjust_cfa_offset 8\n"
	"\tpushq %rsi\n\t.cfi_adjust_cfa_offset 8\n"
	/* entry rsp was 8 mod 16: two pushes and 24 bytes (the answer slot) make it 0 */
	"\tsubq $24, %rsp\n\t.cfi_adjust_cfa_offset 24\n"
	"\tmovq 40(%rsp), %rdx\n" /* the caller's return address */
	"\tmovq %rsp, %rcx\n"     /* &answer */
	"\tcall shim__dlsym_decide\n"
	"\tmovq (%rsp), %rdx\n"
	"\taddq $24, %rsp\n\t.cfi_adjust_cfa_offset -24\n"
	"\tpopq %rsi\n\t.cfi_adjust_cfa_offset -8\n"
	"\tpopq %rdi\n\t.cfi_adjust_cfa_offset -8\n"
	"\ttestl %eax, %eax\n"
	"\tjz 2f\n"
	"\tmovq %rdx, %rax\n"
	"\tret\n"
	"2:\n"
	/* glibc's dlsym with the caller's return address on top of the stack */
	"\tmovq drv__dlsym_next(%rip), %rax\n"
	"\ttestq %rax, %rax\n"
	"\tjz 3f\n"
	"\tjmp *%rax\n"
	"3:\n"
	"\tpushq %rdi\n\t.cfi_adjust_cfa_offset 8\n"
	"\tpushq %rsi\n\t.cfi_adjust_cfa_offset 8\n"
	"\tsubq $8, %rsp\n\t.cfi_adjust_cfa_offset 8\n"
	"\tcall drv__dlsym_next_resolve\n"
	"\taddq $8, %rsp\n\t.cfi_adjust_cfa_offset -8\n"
	"\tpopq %rsi\n\t.cfi_adjust_cfa_offset -8\n"
	"\tpopq %rdi\n\t.cfi_adjust_cfa_offset -8\n"
	"\ttestq %rax, %rax\n"
	"\tjz 4f\n"
	"\tjmp *%rax\n"
	"4:\n" /* glibc's dlsym cannot be found: nothing to answer with */
	"\tret\n"
	"\t.cfi_endproc\n"
	".size dlsym, .-dlsym\n"
	".popsection\n");

static const char self_marker; /* an address inside libcufold */

/* The link map of the object containing addr, or NULL. */
static const void *object_of(const void *addr)
{
	Dl_info info;
	struct link_map *lm = NULL;

	if (!addr || !dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP))
		return NULL;
	return lm;
}

int shim__dlsym_decide(void *handle, const char *name, void *caller, void **answer)
{
	const void *from;
	void *p;

	*answer = NULL;
	if (cf_unlikely(!drv__dlsym_next_get()))
		return 1; /* glibc's dlsym cannot be found: nothing sensible to answer with */
	if (handle == RTLD_NEXT || handle == RTLD_DEFAULT || !drv_name_is_driver(name) || shim_is_inside())
		return 0;
	if (shim_mode() == CF_MODE_OFF || drv_api_find(name) < 0)
		return 0;
	if (shim_init() != 0)
		return 0;
	from = object_of(caller);
	if (from && (from == drv_real_link_map() || from == object_of(&self_marker)))
		return 0;
	p = drv_real_dlsym(handle, name);
	*answer = shim_route_dlsym(p, name);
	return 1;
}
