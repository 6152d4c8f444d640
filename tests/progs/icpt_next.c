/* icpt_next.c - dlsym(RTLD_NEXT) keeps resolving relative to the real caller with cufold's dlsym
 * in the way. tests layer.
 *
 *   icpt_next preloaded   icpt_next_a.so and icpt_next_b.so were preloaded (after cufold):
 *                         RTLD_NEXT from a finds b's definition (a cufold that called glibc's
 *                         dlsym from its own code would find a's own definition, after cufold)
 *   icpt_next dlopen      the program dlopens a alone: nothing after a defines the name
 * Also RTLD_NEXT from the program itself, and a driver entry point found with RTLD_NEXT. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "testlib.h"

static const char *plugin_dir(void)
{
	static char path[4096];
	const char *dir = getenv("ICPT_PLUGIN_DIR");

	if (dir && *dir)
		snprintf(path, sizeof(path), "%s", dir);
	else
		snprintf(path, sizeof(path), "%s/../plugins", TEST_PTX_DIR);
	return path;
}

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);

	if (!p) {
		fprintf(stderr, "%s not found: %s\n", name, dlerror());
		exit(1);
	}
	return p;
}

int main(int argc, char **argv)
{
	const char *(*probe)(void), *(*who)(void);
	int (*driver_version)(void);
	void *h = RTLD_DEFAULT, *p;
	char path[4200];

	if (argc < 2 || (strcmp(argv[1], "dlopen") != 0 && strcmp(argv[1], "preloaded") != 0)) {
		fprintf(stderr, "usage: icpt_next dlopen|preloaded\n");
		return 2;
	}
	if (strcmp(argv[1], "dlopen") == 0) {
		snprintf(path, sizeof(path), "%s/icpt_next_a.so", plugin_dir());
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
	}
	p = sym(h, "icpt_next_probe");
	memcpy(&probe, &p, sizeof(p));
	p = sym(h, "icpt_next_driver_version");
	memcpy(&driver_version, &p, sizeof(p));
	printf("next after a: %s\n", probe());
	printf("driver version through RTLD_NEXT from a: %d\n", driver_version());

	/* from the program: the first definition after the executable */
	p = dlsym(RTLD_NEXT, "icpt_next_who");
	if (p) {
		memcpy(&who, &p, sizeof(p));
		printf("next after the program: %s\n", who());
	} else {
		printf("next after the program: none\n");
	}
	printf("next cuInit after the program: %s\n", dlsym(RTLD_NEXT, "cuInit") ? "found" : "none");
	printf("default cuInit: %s\n", dlsym(RTLD_DEFAULT, "cuInit") ? "found" : "none");
	return 0;
}
