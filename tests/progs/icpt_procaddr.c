/* icpt_procaddr.c - interception path 4: cuGetProcAddress called with explicit versions and
 * flags, as libraries (NCCL, PyTorch) do, for every exported symbol of driver/cuda_api.def.
 * tests layer.
 *
 * For each symbol it asks for its base name at the version that introduced it, one version
 * below and at 13000, with flags 0, 1 (legacy stream) and 2 (per-thread), through
 * cuGetProcAddress_v2 (by name) and, at the symbol's own version, through the 11.3 four-argument
 * cuGetProcAddress (found with dlsym). Each answer is printed as the exported symbol whose
 * dlsym pointer it equals. Preloaded, cufold must hand out its hook of exactly that symbol
 * (dlsym hands out the same hook), so the output is the same; a routing by name instead of by
 * identity would print another variant somewhere. */
#include <dlfcn.h>

#include "icpt_check.h"
#include "testlib.h"

#include <stdio.h>
#include <string.h>

struct sym {
	const char *name; /* exported symbol */
	const char *base; /* name cuGetProcAddress knows */
	int version;      /* version that introduced it */
};

static const struct sym syms[] = {
#define CF_API(symbol, base, version, pt, ret, decls, args) { #symbol, #base, version },
#define CF_API_UNTYPED(symbol) { #symbol, #symbol, 0 },
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED
};
#define NSYMS (sizeof(syms) / sizeof(syms[0]))

static void *addr[NSYMS]; /* dlsym(driver, name) */

static const char *identify(const void *p)
{
	if (!p)
		return "null";
	for (size_t i = 0; i < NSYMS; i++)
		if (addr[i] == p)
			return syms[i].name;
	return "unknown";
}

int main(void)
{
	typedef CUresult (*gpa4_fn)(const char *, void **, int, cuuint64_t);
	void *h = dlopen("libcuda.so.1", RTLD_NOW), *p4;
	gpa4_fn gpa4;
	size_t found = 0;

	if (!h)
		return 1;
	for (size_t i = 0; i < NSYMS; i++) {
		addr[i] = dlsym(h, syms[i].name);
		found += addr[i] != NULL;
		if (addr[i])
			icpt_expect(addr[i], syms[i].name);
	}
	printf("dlsym found %zu of %zu\n", found, NSYMS);
	p4 = dlsym(h, "cuGetProcAddress");
	if (!p4)
		return 1;
	memcpy(&gpa4, &p4, sizeof(gpa4));

	for (size_t i = 0; i < NSYMS; i++) {
		const int versions[3] = { syms[i].version, syms[i].version - 10, 13000 };

		for (int v = 0; v < 3; v++) {
			for (int flags = 0; flags <= 2; flags++) {
				CUdriverProcAddressQueryResult status = (CUdriverProcAddressQueryResult)-1;
				void *p = (void *)&status; /* must be overwritten */
				CUresult rc = cuGetProcAddress(syms[i].base, &p, versions[v], (cuuint64_t)flags, &status);

				printf("%s@%d/%d rc %d status %d -> %s\n", syms[i].base, versions[v], flags, (int)rc,
				       (int)status, p == (void *)&status ? "untouched" : identify(p));
				if (p && p != (void *)&status && strcmp(identify(p), "unknown") != 0)
					icpt_expect(p, syms[i].base);
			}
		}
		{
			void *p = NULL;
			CUresult rc = gpa4(syms[i].base, &p, syms[i].version, 0);

			printf("%s@%d v1 rc %d -> %s\n", syms[i].base, syms[i].version, (int)rc, identify(p));
		}
	}
	/* a name the driver does not know, and a version above the driver's */
	{
		CUdriverProcAddressQueryResult status = (CUdriverProcAddressQueryResult)-1;
		void *p = (void *)&status;
		CUresult rc = cuGetProcAddress("cuNoSuchEntryPoint", &p, 12000, 0, &status);

		printf("unknown rc %d status %d pfn %s\n", (int)rc, (int)status, p == NULL ? "null" : "set");
		rc = cuGetProcAddress("cuInit", &p, 99000, 0, &status);
		printf("future rc %d status %d\n", (int)rc, (int)status);
	}
	printf("done\n");
	return 0;
}
