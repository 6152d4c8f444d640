/* icpt_next_a.c - an interposer-style library: it defines icpt_next_who and asks glibc for the
 * NEXT definition with dlsym(RTLD_NEXT, ...), which must be resolved relative to this library,
 * not to cufold's dlsym (tests/progs/icpt_next.c, tests/e2e/shim_next.sh). tests layer. */
#include <cuda.h>
#include <dlfcn.h>
#include <string.h>

const char *icpt_next_who(void);
const char *icpt_next_probe(void);
int icpt_next_driver_version(void);

const char *icpt_next_who(void)
{
	return "a";
}

/* Who defines icpt_next_who after this library: "b" when icpt_next_b.so follows it in the
 * search order, "none" when nothing does. */
const char *icpt_next_probe(void)
{
	void *p = dlsym(RTLD_NEXT, "icpt_next_who");
	const char *(*who)(void);

	if (!p)
		return "none";
	memcpy(&who, &p, sizeof(who));
	return who();
}

/* A driver entry point found with RTLD_NEXT from here, called: the driver's version, or -1 when
 * nothing after this library defines it. */
int icpt_next_driver_version(void)
{
	void *p = dlsym(RTLD_NEXT, "cuDriverGetVersion");
	CUresult (*get)(int *);
	int v = -1;

	if (!p)
		return -1;
	memcpy(&get, &p, sizeof(get));
	if (get(&v) != CUDA_SUCCESS)
		return -2;
	return v;
}
