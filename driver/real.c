/* real.c - the real driver: dlopen'ed by path, every exported symbol looked up once into a
 * typed table; glibc's dlsym/dlopen found with dlvsym. driver layer. */
#include "driver/real.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/compiler.h"
#include "common/config.h"
#include "common/errors.h"
#include "common/log.h"

typedef void *(*dlsym_fn)(void *, const char *);
typedef void *(*dlopen_fn)(const char *, int);

void *drv__dlsym_next;             /* glibc's dlsym (also jumped to by shim/dlsym.c's stub) */
static void *dlopen_next;           /* glibc's dlopen */
static void *addr_table[DRV_API_COUNT]; /* driver address per id, NULL when absent */
static void *driver_handle;         /* the dlopen'ed driver */
static const void *driver_map;      /* its struct link_map */
static unsigned char absent_reported[DRV_API_COUNT]; /* warned once per missing symbol */

static CUresult absent(enum drv_api_id id)
{
	if (!__atomic_exchange_n(&absent_reported[id], 1, __ATOMIC_RELAXED))
		cf_log_warn("%s: the driver does not have this entry point (or cufold could not load the driver); "
			    "answering CUDA_ERROR_NOT_FOUND", drv_api[id].name);
	return CUDA_ERROR_NOT_FOUND;
}

/* One stub per typed symbol with its exact prototype, so an entry of the table can always be
 * called. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define CF_API(symbol, base, version, pt, ret, decls, args) \
	static ret CUDAAPI absent_##symbol decls \
	{ \
		return absent(DRV_ID_##symbol); \
	}
#define CF_API_UNTYPED(symbol)
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED
#pragma GCC diagnostic pop

struct drv_real_table drv_real = {
#define CF_API(symbol, base, version, pt, ret, decls, args) .p_##symbol = absent_##symbol,
#define CF_API_UNTYPED(symbol)
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED
};

/* glibc's symbol at the newest version we know, then the oldest x86-64 one. RTLD_NEXT from here
 * is "after libcufold", so it can never be our own exported dlsym. */
static void *find_libc(const char *name)
{
	void *p = dlvsym(RTLD_NEXT, name, "GLIBC_2.34");

	if (!p)
		p = dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
	return p;
}

/* Not instrumented, and calls nothing instrumented: the dlsym stub calls it for the first
 * lookup of the process, which may come from a sanitizer runtime initializing itself. */
__attribute__((no_sanitize("address", "thread", "undefined"))) void *drv__dlsym_next_resolve(void)
{
	void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");

	if (!p)
		p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	if (p)
		__atomic_store_n(&drv__dlsym_next, p, __ATOMIC_RELEASE);
	return p;
}

void *drv__dlsym_next_get(void)
{
	void *p = __atomic_load_n(&drv__dlsym_next, __ATOMIC_ACQUIRE);

	if (cf_unlikely(!p)) {
		p = drv__dlsym_next_resolve();
		if (!p)
			cf_log_err_once("cannot find glibc's dlsym with dlvsym; cufold cannot answer dlsym");
	}
	return p;
}

CUresult drv_ctx_enter(CUcontext ctx, bool *pushed)
{
	CUcontext cur = NULL;
	CUresult rc = DRV_REAL(cuCtxGetCurrent)(&cur);

	*pushed = false;
	if (rc != CUDA_SUCCESS || cur == ctx)
		return rc;
	rc = DRV_REAL(cuCtxPushCurrent_v2)(ctx);
	*pushed = rc == CUDA_SUCCESS;
	return rc;
}

CUresult drv_ctx_leave(bool pushed)
{
	CUcontext popped;

	return pushed ? DRV_REAL(cuCtxPopCurrent_v2)(&popped) : CUDA_SUCCESS;
}

void *drv_real_dlsym(void *handle, const char *name)
{
	void *p = drv__dlsym_next_get();
	dlsym_fn fn;

	if (!p)
		return NULL;
	memcpy(&fn, &p, sizeof(fn));
	return fn(handle, name);
}

void *drv_real_dlopen(const char *file, int flags)
{
	void *p = __atomic_load_n(&dlopen_next, __ATOMIC_ACQUIRE);
	dlopen_fn fn;

	if (!p) {
		p = find_libc("dlopen");
		if (!p) {
			cf_log_err_once("cannot find glibc's dlopen with dlvsym");
			return NULL;
		}
		__atomic_store_n(&dlopen_next, p, __ATOMIC_RELEASE);
	}
	memcpy(&fn, &p, sizeof(fn));
	return fn(file, flags);
}

/* Whether addr lies in the object that holds cufold's own code (libcufold.so, or the program
 * a test linked libcufold.a into). */
static bool is_cufold(const void *addr, const char **own_name)
{
	Dl_info own, other;

	/* any object of ours will do: a data address converts to void * portably */
	if (!dladdr((const void *)addr_table, &own) || !dladdr(addr, &other))
		return false;
	*own_name = own.dli_fname && *own.dli_fname ? own.dli_fname : "the program";
	return own.dli_fbase == other.dli_fbase;
}

/* What path is when dlopen would open something that is not a regular file (a FIFO, whose open
 * blocks until a writer comes, a device, a directory), as a phrase; NULL when it is a regular
 * file or cannot be found (dlopen then says why). A name without '/' is looked for in
 * LD_LIBRARY_PATH's folders, as dlopen looks first (the system folders hold libraries only). */
static const char *not_regular(const char *path)
{
	const char *dirs = strchr(path, '/') ? NULL : getenv("LD_LIBRARY_PATH");
	char cand[4096];
	struct stat st;
	bool found;

	if (!dirs) {
		found = stat(path, &st) == 0;
	} else {
		for (found = false; *dirs && !found;) {
			size_t n = strcspn(dirs, ":");

			found = n && snprintf(cand, sizeof(cand), "%.*s/%s", (int)n, dirs, path) < (int)sizeof(cand) &&
				stat(cand, &st) == 0;
			dirs += n + (dirs[n] == ':');
		}
	}
	if (!found || S_ISREG(st.st_mode))
		return NULL;
	if (S_ISFIFO(st.st_mode))
		return "a FIFO";
	return S_ISDIR(st.st_mode) ? "a directory" : "a device or special file";
}

/* dlopen path and look every symbol up into addr[]; refuse (warning, handle closed) a library
 * that is cufold itself, whose calls would come back to the hooks and wait forever on their own
 * initialization, or that lacks what every CUDA driver exports. NULL when refused or not
 * loaded. */
static void *driver_open(const char *path, void *addr[DRV_API_COUNT])
{
	static const enum drv_api_id needed[] = { DRV_ID_cuInit, DRV_ID_cuDriverGetVersion };
	const char *own = NULL, *kind;
	char missing[96] = "";
	void *h;

	memset(addr, 0, sizeof(void *) * DRV_API_COUNT);
	/* never open a FIFO or a device: dlopen's open would block (a FIFO without a writer hangs
	 * the program before its first driver call) or have effects */
	if ((kind = not_regular(path))) {
		char shown[200];

		cf_log_err("cannot use %s as the CUDA driver: it is %s, not a regular file; not opened",
			   cf_log_printable(shown, sizeof(shown), path, 160), kind);
		return NULL;
	}
	h = drv_real_dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();

		cf_log_err("cannot load the CUDA driver %s: %s", path, why ? why : "?");
		return NULL;
	}
	/* An explicit handle searches the driver's own scope, so these are the driver's
	 * definitions, never our exported hooks (unless the library is cufold). */
	for (int id = 0; id < DRV_API_COUNT; id++)
		addr[id] = drv_real_dlsym(h, drv_api[id].name);
	if (addr[DRV_ID_cuInit] && is_cufold(addr[DRV_ID_cuInit], &own)) {
		cf_log_warn("cannot use %s as the CUDA driver: it is cufold itself (%s)", path, own);
		goto out_refused;
	}
	for (size_t k = 0; k < CF_ARRAY_SIZE(needed); k++)
		if (!addr[needed[k]])
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s",
				 missing[0] ? ", " : "", drv_api[needed[k]].name);
	if (!addr[DRV_ID_cuGetProcAddress] && !addr[DRV_ID_cuGetProcAddress_v2])
		snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%s",
			 missing[0] ? ", " : "", "cuGetProcAddress");
	if (missing[0]) {
		cf_log_warn("cannot use %s as the CUDA driver: it does not export %s (not a CUDA driver)", path,
			    missing);
		goto out_refused;
	}
	return h;

out_refused:
	memset(addr, 0, sizeof(void *) * DRV_API_COUNT);
	dlclose(h);
	return NULL;
}

int drv_real__open(const char *path, void **handle, void *addr[DRV_API_COUNT])
{
	void *h = driver_open(path, addr);

	if (!h && strcmp(path, CF_DEFAULT_LIBCUDA) != 0) {
		h = driver_open(CF_DEFAULT_LIBCUDA, addr);
		if (h)
			cf_log_warn("using %s instead", CF_DEFAULT_LIBCUDA);
	}
	*handle = h;
	return h ? 0 : -CF_ENODRIVER;
}

void drv_real__publish(void *handle, void *const addr[DRV_API_COUNT])
{
	struct link_map *lm = NULL;

	memcpy(addr_table, addr, sizeof(addr_table));
#define CF_API(symbol, base, version, pt, ret, decls, args) \
	if (addr[DRV_ID_##symbol]) \
		memcpy(&drv_real.p_##symbol, &addr[DRV_ID_##symbol], sizeof(void *));
#define CF_API_UNTYPED(symbol)
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED
	if (handle && dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0)
		lm = NULL;

	driver_handle = handle;
	driver_map = lm;
}

void *drv_real_addr(enum drv_api_id id)
{
	return (unsigned)id < DRV_API_COUNT ? addr_table[id] : NULL;
}

bool drv_real_has(enum drv_api_id id)
{
	return drv_real_addr(id) != NULL;
}

void *drv_real_handle(void)
{
	return driver_handle;
}

const void *drv_real_link_map(void)
{
	return driver_map;
}
