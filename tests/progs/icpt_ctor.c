/* icpt_ctor.c - interception with the process's first driver call made from a shared library's
 * constructor (tests/plugins/icpt_ctor.c). tests layer.
 *
 *   icpt_ctor dlopen      dlopen the library now: its constructor runs inside dlopen
 *   icpt_ctor preloaded   the library was preloaded (LD_PRELOAD): its constructor ran before
 *                         main and before cufold's own constructors
 * Prints what the constructor saw, then does driver work of its own. */
#include <dlfcn.h>

#define CU(fn) fn
#include "icpt_work.h"

static const char *plugin_path(void)
{
	static char path[4096];
	const char *dir = getenv("ICPT_PLUGIN_DIR");

	if (dir && *dir)
		snprintf(path, sizeof(path), "%s/icpt_ctor.so", dir);
	else
		snprintf(path, sizeof(path), "%s/../plugins/icpt_ctor.so", TEST_PTX_DIR);
	return path;
}

int main(int argc, char **argv)
{
	int (*result)(int *, unsigned int *, int);
	void *h = RTLD_DEFAULT, *sym;
	unsigned int words[8];
	int version = 0, rc;

	if (argc < 2 || (strcmp(argv[1], "dlopen") != 0 && strcmp(argv[1], "preloaded") != 0)) {
		fprintf(stderr, "usage: icpt_ctor dlopen|preloaded\n");
		return 2;
	}
	if (strcmp(argv[1], "dlopen") == 0) {
		h = dlopen(plugin_path(), RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
	}
	sym = dlsym(h, "icpt_ctor_result");
	if (!sym) {
		fprintf(stderr, "icpt_ctor_result not found (is the library loaded?)\n");
		return 1;
	}
	memcpy(&result, &sym, sizeof(result));
	rc = result(&version, words, 8);
	printf("ctor rc %d version %d words %08x %08x %08x\n", rc, version, words[0], words[1], words[7]);
	if (rc != 0)
		return 1;

	/* the constructor made the primary context current on this thread */
	icpt_work("ctor", 5);
	printf("done\n");
	return 0;
}
