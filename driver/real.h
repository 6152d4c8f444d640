/* real.h - the typed table of the real driver's functions, and the real dlopen/dlsym. driver
 * layer; sits low (right of common) so every layer calls the driver through it, never through
 * an exported hook. Names: drv_real, DRV_REAL, drv_real_*.
 *
 * The driver (libcuda.so.1, or CUFOLD_LIBCUDA) is dlopen'ed, never linked. Until shim_init()
 * has loaded it, and for every symbol the driver lacks, each entry points at a stub that
 * answers CUDA_ERROR_NOT_FOUND, so an entry is never NULL. */
#ifndef DRIVER_REAL_H
#define DRIVER_REAL_H

#include <stdbool.h>

#include "driver/api.h"

struct drv_real_table {
#define CF_API(symbol, base, version, pt, ret, decls, args) drv_pfn_##symbol p_##symbol; /* the driver's symbol */
#define CF_API_UNTYPED(symbol)
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED
};

extern struct drv_real_table drv_real __attribute__((visibility("hidden")));

/* The real driver's function for an exported symbol, called with its exact prototype:
 *	rc = DRV_REAL(cuLaunchKernel_ptsz)(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra); */
#define DRV_REAL(symbol) (drv_real.p_##symbol)

/* The driver's address of a symbol (typed or not), NULL when it lacks it or is not loaded. */
void *drv_real_addr(enum drv_api_id id);
/* Whether the driver has this symbol. */
bool drv_real_has(enum drv_api_id id);

/* The loaded driver's handle and link map, or NULL. */
void *drv_real_handle(void);
const void *drv_real_link_map(void);

/* glibc's dlsym and dlopen, found with dlvsym (GLIBC_2.34, then GLIBC_2.2.5): cufold's own
 * lookups never go through its exported dlsym. */
void *drv_real_dlsym(void *handle, const char *name);

/* Make ctx current for a call of cufold's own when it is not: *pushed says whether
 * drv_ctx_leave pops it. The result of the query or the push (pushed false on failure). */
CUresult drv_ctx_enter(CUcontext ctx, bool *pushed);
/* Undo drv_ctx_enter: the pop's result, CUDA_SUCCESS when nothing was pushed. */
CUresult drv_ctx_leave(bool pushed);
void *drv_real_dlopen(const char *file, int flags);

/* Internal: glibc's dlsym, cached on first use (shim/dlsym.c's stub jumps to it). */
extern void *drv__dlsym_next __attribute__((visibility("hidden")));
void *drv__dlsym_next_get(void);
/* The same without logging or instrumentation, for the stub's first lookup. */
void *drv__dlsym_next_resolve(void);

/* Internal (shim/shim.c's initialization): dlopen path and look every symbol up into addr[]
 * (no lock is held: dlopen may run constructors that call back into cufold); then publish. */
int drv_real__open(const char *path, void **handle, void *addr[DRV_API_COUNT]);
void drv_real__publish(void *handle, void *const addr[DRV_API_COUNT]);

#endif
