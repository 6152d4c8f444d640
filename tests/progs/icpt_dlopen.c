/* icpt_dlopen.c - interception path 2: dlopen("libcuda.so.1") and dlsym every function by its
 * exported name (a handle lookup ignores LD_PRELOAD, so only cufold's dlsym can hand out
 * hooks). Also checks that names outside the driver's are left alone. tests layer. */
#include <dlfcn.h>

#include "icpt_check.h"

static struct icpt_api *api_p;
#define CU(fn) (api_p->fn)
#include "icpt_work.h"

static struct icpt_api api;

static void *lookup(void *h, const char *name)
{
	void *p = dlsym(h, name);

	if (!p) {
		fprintf(stderr, "dlsym(%s): %s\n", name, dlerror());
		exit(1);
	}
	icpt_expect(p, name);
	return p;
}

/* Fill a field from the exported symbol of its name: XSTR stringizes after cuda.h's renaming
 * macros, so the field cuMemAlloc is looked up as "cuMemAlloc_v2". */
#define STR_(x) #x
#define XSTR(x) STR_(x)
#define LOAD(fn) \
	{ \
		void *p_ = lookup(h, XSTR(fn)); \
		memcpy(&api.fn, &p_, sizeof(p_)); \
	}

int main(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	static const char *const foreign[] = {
		"cudnnCreate", "cublasCreate_v2", "cu", "cuda", "cuNoSuchEntryPoint", "sim_twin_fill", "dlsym",
	};

	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	api_p = &api;
	ICPT_API(LOAD);

	/* names cufold must leave to glibc: found or not exactly as without cufold */
	for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++) {
		void *p = dlsym(h, foreign[i]);

		printf("dlsym %s %s\n", foreign[i], p ? "found" : "missing");
	}
	/* the same handle asked twice gives the same pointer */
	{
		void *alloc;

		memcpy(&alloc, &api.cuMemAlloc, sizeof(alloc));
		printf("dlsym stable %d\n", dlsym(h, "cuMemAlloc_v2") == alloc);
	}
	/* the legacy and the current ABI of one function are different entry points */
	printf("dlsym variants differ %d\n", dlsym(h, "cuMemAlloc") != dlsym(h, "cuMemAlloc_v2"));

	icpt_init();
	icpt_work("dlopen", 3);
	printf("done\n");
	return 0;
}
