/* cxx_once.c - a C program (no libgcc_s of its own) that dlopens a C++ library and has it throw
 * and catch an exception inside std::call_once (tests/plugins/cxx_once.cpp), before, between
 * and after driver work. With cufold preloaded this must still exit 0: cufold must not bring
 * an unwinder of its own into the process's global scope. tests layer.
 *
 *   cxx_once [LIBRARY]   LIBRARY defaults to the build's plugins/cxx_once.so
 * Prints one line per caught exception and the work's hashes. */
#include <dlfcn.h>

#define CU(fn) fn
#include "icpt_work.h"

#define ROUNDS 4 /* rounds of driver work, enough windows for replay to begin replaying */

static int (*cxx_once_throw)(int n);

static void throw_and_catch(int n)
{
	if (cxx_once_throw(n) != 1) {
		fprintf(stderr, "call_once %d returned without the exception\n", n);
		exit(1);
	}
	printf("caught %d\n", n);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char path[4096];
	void *h, *sym;

	if (argc > 1)
		snprintf(path, sizeof(path), "%s", argv[1]);
	else
		snprintf(path, sizeof(path), "%s/../plugins/cxx_once.so", TEST_PTX_DIR);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	sym = dlsym(h, "cxx_once_throw");
	if (!sym) {
		fprintf(stderr, "cxx_once_throw not found in %s\n", path);
		return 1;
	}
	memcpy(&cxx_once_throw, &sym, sizeof(cxx_once_throw));

	throw_and_catch(0); /* before any driver call */
	icpt_init();
	for (int i = 1; i <= ROUNDS; i++) {
		icpt_work("work", (unsigned)i);
		throw_and_catch(i); /* after hooks ran (and, with call sites, after unwinding) */
	}
	printf("done\n");
	return 0;
}
