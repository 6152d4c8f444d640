/* icpt_check.h - where a driver pointer a test program obtained really lives. tests layer;
 * header only.
 *
 * ICPT_EXPECT=cufold (set by the end-to-end scripts when cufold is preloaded) makes
 * icpt_expect() fail the program unless every pointer it is given lies in libcufold.so;
 * ICPT_EXPECT=driver unless it lies in the driver (libcuda.so.1: cufold in mode off hands out
 * the driver's own pointers). Unset, nothing is checked, so the program's stdout is the same
 * with and without cufold. */
#ifndef ICPT_CHECK_H
#define ICPT_CHECK_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void icpt_expect(const void *p, const char *what)
{
	const char *want = getenv("ICPT_EXPECT");
	const char *lib;
	Dl_info info;

	if (!want || !*want || !p)
		return;
	lib = strcmp(want, "cufold") == 0 ? "libcufold.so" : "libcuda.so.1";
	if (!dladdr(p, &info) || !info.dli_fname || !strstr(info.dli_fname, lib)) {
		fprintf(stderr, "icpt_expect: %s = %p lies in %s, not in %s\n", what, p,
			info.dli_fname ? info.dli_fname : "?", lib);
		exit(3);
	}
}

#endif
