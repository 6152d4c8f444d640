/* icpt_cudart.c - interception path 3: find the driver exactly as the CUDA runtime (13.0) does.
 * tests layer.
 *
 * dlopen("libcuda.so.1"); dlsym(handle, "cuGetProcAddress_v2"); then every lookup of the
 * runtime's recorded list (tests/data/cudart-lookups.txt: name@version[/PTDS][->suffix of the
 * exported symbol]) in order: the empty-name probe, cuInit@2000 and cuGetProcAddress@11030 and
 * @12000 through the dlsym'ed pointer, the rest through the pointer returned for
 * cuGetProcAddress@12000, with symbolStatus NULL as the runtime passes it. For each it prints the result code and whether the pointer is the one
 * dlsym gives for the expected exported symbol (with cufold both must be cufold's hook of
 * that exact symbol, so the output does not change). Then it checks that the per-thread
 * cuLaunchKernel (flags 2) and the legacy one are different pointers that both work, and does
 * the common work through looked-up pointers.
 *
 *   icpt_cudart [lookups.txt]   (default tests/data/cudart-lookups.txt, from the repository) */
#include <dlfcn.h>

#include "icpt_check.h"

static struct icpt_api *api_p;
#define CU(fn) (api_p->fn)
#include "icpt_work.h"

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *driver;
static gpa_fn gpa;
static struct icpt_api api;

static gpa_fn to_gpa(void *p)
{
	gpa_fn f;

	memcpy(&f, &p, sizeof(f));
	return f;
}

/* One lookup through the runtime's pointer; prints it and returns the pointer. */
static void *lookup(const char *name, int version, int flags, const char *expect_symbol)
{
	void *p = NULL, *want;
	CUresult rc = gpa(name, &p, version, (cuuint64_t)flags, NULL);
	const char *same;

	want = expect_symbol ? dlsym(driver, expect_symbol) : NULL;
	if (!p)
		same = "null";
	else if (p == want)
		same = "=dlsym";
	else
		same = "other";
	printf("lookup %s@%d/%d rc %d %s\n", name, version, flags, (int)rc, same);
	if (p)
		icpt_expect(p, name);
	return p;
}

/* The recorded lookups, in order. */
static void replay_lookups(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[4096];
	int n = 0;

	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		exit(1);
	}
	while (fgets(line, sizeof(line), f)) {
		char *save = NULL;
		void *p;

		if (line[0] == '#')
			continue;
		for (char *tok = strtok_r(line, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
			char name[256], symbol[300], *at = strchr(tok, '@'), *arrow = strstr(tok, "->");
			int version, flags = strstr(tok, "/PTDS") ? 2 : 0;

			if (!at || (size_t)(at - tok) >= sizeof(name))
				continue;
			memcpy(name, tok, (size_t)(at - tok));
			name[at - tok] = 0;
			version = atoi(at + 1);
			if (strcmp(name, "\"\"") == 0) {
				name[0] = 0; /* the runtime's probe with an empty name */
				lookup(name, version, flags, NULL);
				n++;
				continue;
			}
			snprintf(symbol, sizeof(symbol), "%s%s", name, arrow ? arrow + 2 : "");
			p = lookup(name, version, flags, symbol);
			n++;
			/* from here on the runtime asks through what it got for cuGetProcAddress@12000 */
			if (p && strcmp(name, "cuGetProcAddress") == 0 && version >= 12000)
				gpa = to_gpa(p);
		}
	}
	fclose(f);
	printf("lookups %d\n", n);
}

#define STR_(x) #x
#define XSTR(x) STR_(x)
/* Fill a field by base name and version, as the runtime would. */
#define LOAD(fn, version) \
	{ \
		void *p_ = NULL; \
		if (gpa(base_name(XSTR(fn)), &p_, version, 0, NULL) != CUDA_SUCCESS || !p_) { \
			fprintf(stderr, "lookup of %s failed\n", XSTR(fn)); \
			exit(1); \
		} \
		memcpy(&api.fn, &p_, sizeof(p_)); \
	}

/* "cuMemAlloc_v2" -> "cuMemAlloc": the name cuGetProcAddress knows. */
static const char *base_name(const char *symbol)
{
	static char buf[128];
	size_t n = strlen(symbol);

	snprintf(buf, sizeof(buf), "%s", symbol);
	if (n > 3 && buf[n - 3] == '_' && buf[n - 2] == 'v')
		buf[n - 3] = 0;
	return buf;
}

static void load_api(void)
{
	LOAD(cuInit, 2000) LOAD(cuDriverGetVersion, 2020) LOAD(cuDeviceGetCount, 2000) LOAD(cuDeviceGet, 2000)
	LOAD(cuDevicePrimaryCtxRetain, 7000) LOAD(cuDevicePrimaryCtxRelease, 11000) LOAD(cuCtxSetCurrent, 4000)
	LOAD(cuCtxGetCurrent, 4000) LOAD(cuCtxSynchronize, 2000) LOAD(cuModuleLoadData, 2000)
	LOAD(cuModuleGetFunction, 2000) LOAD(cuModuleUnload, 2000) LOAD(cuMemAlloc, 3020) LOAD(cuMemFree, 3020)
	LOAD(cuMemAllocHost, 3020) LOAD(cuMemFreeHost, 2000) LOAD(cuMemsetD32, 3020) LOAD(cuMemsetD32Async, 3020)
	LOAD(cuMemsetD8, 3020) LOAD(cuMemcpyHtoD, 3020) LOAD(cuMemcpyDtoH, 3020) LOAD(cuMemcpyDtoD, 3020)
	LOAD(cuMemcpyHtoDAsync, 3020) LOAD(cuMemcpyDtoHAsync, 3020) LOAD(cuStreamCreate, 2000)
	LOAD(cuStreamSynchronize, 2000) LOAD(cuStreamDestroy, 4000) LOAD(cuStreamWaitEvent, 3020)
	LOAD(cuEventCreate, 2000) LOAD(cuEventRecord, 2000) LOAD(cuEventSynchronize, 2000) LOAD(cuEventDestroy, 4000)
	LOAD(cuLaunchKernel, 4000)
}

/* cuLaunchKernel@7000 with the per-thread flag is the _ptsz entry, @4000 the legacy one: two
 * different pointers, each launching fill on its own meaning of stream 0. */
static void per_thread_launch(void)
{
	typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				      unsigned, CUstream, void **, void **);
	void *p_legacy = NULL, *p_pt = NULL;
	launch_fn legacy, pt;
	struct icpt_kernels k;
	CUdeviceptr a, b;
	int n = 1024;
	float va = 7.0f, vb = -3.5f, out[2];
	void *args_a[] = { &a, &va, &n }, *args_b[] = { &b, &vb, &n };

	ICPT_CHECK(gpa("cuLaunchKernel", &p_legacy, 4000, 0, NULL));
	ICPT_CHECK(gpa("cuLaunchKernel", &p_pt, 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL));
	printf("launch legacy=dlsym %d per-thread=dlsym %d differ %d\n", p_legacy == dlsym(driver, "cuLaunchKernel"),
	       p_pt == dlsym(driver, "cuLaunchKernel_ptsz"), p_legacy != p_pt);
	if (!p_legacy || !p_pt || p_legacy == p_pt)
		exit(2);
	icpt_expect(p_legacy, "cuLaunchKernel");
	icpt_expect(p_pt, "cuLaunchKernel_ptsz");
	memcpy(&legacy, &p_legacy, sizeof(legacy));
	memcpy(&pt, &p_pt, sizeof(pt));

	icpt_load_kernels(&k);
	ICPT_CHECK(api.cuMemAlloc(&a, (size_t)n * sizeof(float)));
	ICPT_CHECK(api.cuMemAlloc(&b, (size_t)n * sizeof(float)));
	ICPT_CHECK(legacy(k.fill, 4, 1, 1, 256, 1, 1, 0, NULL, args_a, NULL));
	ICPT_CHECK(pt(k.fill, 4, 1, 1, 256, 1, 1, 0, NULL, args_b, NULL));
	ICPT_CHECK(api.cuCtxSynchronize());
	ICPT_CHECK(api.cuMemcpyDtoH(&out[0], a + (size_t)(n - 1) * sizeof(float), sizeof(float)));
	ICPT_CHECK(api.cuMemcpyDtoH(&out[1], b + (size_t)(n - 1) * sizeof(float), sizeof(float)));
	printf("launch legacy %g per-thread %g\n", (double)out[0], (double)out[1]);
	ICPT_CHECK(api.cuMemFree(a));
	ICPT_CHECK(api.cuMemFree(b));
	ICPT_CHECK(api.cuModuleUnload(k.mod));
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "tests/data/cudart-lookups.txt";
	void *p = NULL;

	driver = dlopen("libcuda.so.1", RTLD_NOW);
	if (!driver) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	p = dlsym(driver, "cuGetProcAddress_v2");
	if (!p) {
		fprintf(stderr, "no cuGetProcAddress_v2\n");
		return 1;
	}
	icpt_expect(p, "dlsym cuGetProcAddress_v2");
	gpa = to_gpa(p);
	replay_lookups(path);
	load_api();
	api_p = &api;
	icpt_init();
	per_thread_launch();
	icpt_work("cudart", 4);
	printf("done\n");
	return 0;
}
