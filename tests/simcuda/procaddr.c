/* procaddr.c - cuGetProcAddress with the documented version and flags semantics, answered from
 * the same generated list of entry points cufold uses (driver/cuda_api.def). tests/simcuda layer.
 *
 * For (symbol, cudaVersion, flags): among the ordinary ABIs of `symbol` introduced at or before
 * cudaVersion the newest is chosen; with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the
 * per-thread variant of the same age is preferred when there is one. An unknown symbol, or one
 * whose oldest ABI is newer than cudaVersion, gives CUDA_SUCCESS with *pfn = NULL and the
 * status saying which. Addresses are taken by symbol name inside this library (the asm labels
 * below, bound locally by -Bsymbolic), never through dlsym, which a preloaded library may hook. */
#include "sim_int.h"

#include <string.h>

#define SIM_DRIVER_VERSION 13000

struct proc_entry {
	const char *sym;             /* exported symbol */
	const char *base;            /* name a caller asks for */
	int version;                 /* CUDA version that introduced this ABI */
	int pt;                      /* 0 ordinary, 1 _ptsz, 2 _ptds */
	const void *addr;            /* our definition */
};

#define CF_API(sym, base, ver, pt, ret, decls, args) extern const char sim_addr_##sym __asm__(#sym);
#define CF_API_UNTYPED(sym)
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED

static const struct proc_entry proc_table[] = {
#define CF_API(sym, base, ver, pt, ret, decls, args) {#sym, #base, ver, pt, &sim_addr_##sym},
#define CF_API_UNTYPED(sym)
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED
};

#define NPROC (sizeof(proc_table) / sizeof(proc_table[0]))

static CUresult lookup(const char *symbol, void **pfn, int version, cuuint64_t flags,
		       CUdriverProcAddressQueryResult *status)
{
	const struct proc_entry *best = NULL, *best_pt = NULL;
	bool known = false;

	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	if (version > SIM_DRIVER_VERSION ||
	    (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)))
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < NPROC; i++) {
		const struct proc_entry *e = &proc_table[i];

		if (strcmp(e->base, symbol))
			continue;
		known = true;
		if (e->version > version)
			continue;
		if (!e->pt && (!best || e->version > best->version))
			best = e;
		if (e->pt && (!best_pt || e->version > best_pt->version))
			best_pt = e;
	}
	*pfn = NULL;
	if (status)
		*status = !known ? CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
			: !best ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SUCCESS;
	if (!best)
		return CUDA_SUCCESS;
	if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best_pt && best_pt->version >= best->version)
		best = best_pt;
	*pfn = (void *)best->addr;
	return CUDA_SUCCESS;
}

CUresult sim_api_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
				     CUdriverProcAddressQueryResult *symbolStatus)
{
	return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* The CUDA 11.3 ABI without the status argument, exported as plain cuGetProcAddress. */
CUresult sim_api_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	return lookup(symbol, pfn, cudaVersion, flags, NULL);
}
