/* api.h - what driver/cuda_api.def says, as C: one id per exported driver symbol, its typed
 * pointer type, its name/base/version/variant, what it does (flags from cuda_api_flags.def),
 * and lookup by name. driver layer (the real
 * driver's description, right above common; includes only common/ and driver/). The names
 * keep the shim_ prefix they had when this lived in shim/.
 *
 * Everything here is generated from cuda_api.def with X-macros. In the expansions the symbol is
 * only ever pasted (##) or stringized (#): cuda.h defines many driver names as macros (cuMemAlloc
 * expands to cuMemAlloc_v2), so a plain use would silently name another variant. */
#ifndef DRIVER_API_H
#define DRIVER_API_H

#include <stdbool.h>

#include "driver/cuda_compat.h"

enum drv_api_id {
#define CF_API(symbol, base, version, pt, ret, decls, args) DRV_ID_##symbol,
#define CF_API_UNTYPED(symbol) DRV_ID_##symbol,
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED
	DRV_API_COUNT
};

/* drv_pfn_<symbol>: the exact pointer type of each typed symbol. */
#define CF_API(symbol, base, version, pt, ret, decls, args) typedef ret(CUDAAPI *drv_pfn_##symbol) decls;
#define CF_API_UNTYPED(symbol)
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED

/* Any function pointer, for tables of mixed types (never called through this type). */
typedef void (*drv_fn)(void);

enum drv_pt {
	DRV_PT_NONE = 0, /* ordinary: stream 0 is the legacy default stream */
	DRV_PT_PTSZ = 1, /* _ptsz: stream 0 is the per-thread default stream */
	DRV_PT_PTDS = 2, /* _ptds: a synchronous call on the per-thread default stream */
};

/* What an entry point does: generated into driver/cuda_api_flags.def by scripts/gen-cuda-api
 * (its CLASSES table, the one place these are decided). Code that asks what a call does reads
 * these, never its name. */
enum drv_api_flag {
	/* the name says Async and the ABI takes the stream: returns before its work is done */
	DRV_API_ASYNC = 1u << 0,
	/* the ABI takes a CUstream (stream_arg says which parameter) */
	DRV_API_STREAM = 1u << 1,
	/* puts work in stream order: the stream it names, the legacy default stream (synchronous
	 * copies and memsets), or every stream of a context (cuCtxWaitEvent) */
	DRV_API_ENQUEUES = 1u << 2,
	/* lets the host observe the device: synchronizes, completion queries, and the synchronous
	 * copies and memsets (they may block until earlier work is done) */
	DRV_API_OBSERVES = 1u << 3,
	/* ends the life of memory at an address (frees, unregisters, unmaps) */
	DRV_API_FREES = 1u << 4,
	/* asks a stream's capture state */
	DRV_API_CAPTURE_QUERY = 1u << 5,
	/* may destroy a primary context with everything made in it (a reset always, a release
	 * when it drops the last reference) */
	DRV_API_DESTROYS_PRIMARY = 1u << 6,
	/* a cooperative launch (every block resident at once) */
	DRV_API_COOPERATIVE = 1u << 7,
};

struct drv_api_info {
	const char *name;       /* exported symbol, e.g. "cuMemcpyHtoDAsync_v2_ptsz" */
	const char *base;       /* name cuGetProcAddress knows it by, e.g. "cuMemcpyHtoDAsync" */
	int version;            /* CUDA version that introduced this ABI (1000*major + 10*minor) */
	unsigned char pt;       /* enum drv_pt */
	bool typed;             /* has a prototype (else it can only be passed through by address) */
	unsigned short flags;   /* enum drv_api_flag, from cuda_api_flags.def */
	signed char stream_arg; /* index of the ABI's first CUstream parameter, -1 if none */
};

extern const struct drv_api_info drv_api[DRV_API_COUNT];

/* Whether entry point api (an id, or anything out of range: false) has every flag of `flags`. */
static inline bool drv_api_is(unsigned api, unsigned flags)
{
	return api < DRV_API_COUNT && (drv_api[api].flags & flags) == flags;
}

/* The id of an exported symbol name, or -1. */
int drv_api_find(const char *name);
/* Internal, for the fork handler: forget a half-built name index. */
void drv__api_atfork_child(void);

/* Whether a name has the shape of a driver entry point: "cu" then an upper-case letter. */
static inline bool drv_name_is_driver(const char *name)
{
	return name && name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z';
}

#endif
