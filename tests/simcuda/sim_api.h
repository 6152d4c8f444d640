/* sim_api.h - the software device's entry points: what each exported driver symbol calls, and
 * the one wrapper that exports it. tests/simcuda layer; never included by cufold.
 *
 * Every symbol of driver/cuda_api.def is defined in one generated file, $(B)/gen/sim_entry.c
 * (scripts/gen-sim-entry, from the objects of the .c files here), in one of three ways:
 *  - SIM_ENTRY, when a file here defines sim_api_<symbol>: count the call and apply SIMCUDA_FAIL
 *    and take the device lock (sim_enter), call sim_api_<symbol>, release the lock (sim_leave).
 *    The protocol of sim_int.h's invariant 1 is thus written once, below; sim_api_<symbol> runs
 *    with the lock held, returns the call's result and never calls an exported entry point.
 *  - SIM_UNSUPPORTED, when none does: the call is counted and answers CUDA_ERROR_NOT_SUPPORTED.
 *  - nothing, when a file here exports <symbol> itself because the entry point cannot follow the
 *    protocol; it says why beside it (occupancy.c: the occupancy calculators call the program's
 *    callback, which may call the driver, before they take the lock).
 * The counter and the SIMCUDA_FAIL name of a call are its exported symbol (cuMemAlloc_v2), as
 * when each entry point passed its own __func__.
 *
 * sim_api_<symbol> is declared below for every symbol with the exact parameters of
 * cuda_api.def, so an implementation whose name or signature is wrong does not compile. Name it
 * by the exported symbol, not by cuda.h's macro: sim_api_cuMemAlloc_v2 for cuMemAlloc; the
 * unsuffixed cuMemAlloc is CUDA 2.0's ABI, with 32-bit sizes. */
#ifndef SIM_API_H
#define SIM_API_H

#include <cuda.h>

#include "driver/cuda_compat.h"

#define CF_API(symbol, base, version, pt, ret, decls, args) ret sim_api_##symbol decls;
#define CF_API_UNTYPED(symbol)
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED

/* The exported definition of an implemented symbol (the arguments of its CF_API line). The C
 * name is private and the asm label exports the driver's name, so it cannot clash with cuda.h's
 * declaration of that name, whose macros may point elsewhere (cuMemAlloc -> cuMemAlloc_v2).
 * sim_enter returns an injected failure without the lock, which is returned as it is. */
#define SIM_ENTRY(symbol, base, version, pt, ret, decls, args) \
	ret sim_export_##symbol decls __asm__(#symbol);        \
	ret sim_export_##symbol decls                          \
	{                                                      \
		static struct sim_entry entry;                 \
		CUresult rc = sim_enter(&entry, #symbol);      \
							       \
		if (rc == CUDA_SUCCESS)                        \
			rc = sim_leave(sim_api_##symbol args); \
		if (rc != CUDA_SUCCESS)                        \
			sim_note_error(#symbol, rc);           \
		return rc;                                     \
	}

/* SIMCUDA_LOG_ERRORS=1: one log line per failing call (the first 500), core.c. */
void sim_note_error(const char *name, CUresult rc);

/* The exported definition of a symbol the device does not implement: counted (so SIMCUDA_FAIL
 * and SIMCUDA_STATS see it), CUDA_ERROR_NOT_SUPPORTED. It takes no parameters: it reads none, and
 * the untyped symbols (cuProfilerStart, ...) have no prototype to give. */
#define SIM_UNSUPPORTED(symbol)                                \
	CUresult sim_export_##symbol(void) __asm__(#symbol);   \
	CUresult sim_export_##symbol(void)                     \
	{                                                      \
		static struct sim_entry entry;                 \
							       \
		CUresult rc = sim_enter_unsupported(&entry, #symbol); \
							       \
		sim_note_error(#symbol, rc);                   \
		return rc;                                     \
	}

#endif
