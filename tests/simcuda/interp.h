/* interp.h - the software device's PTX interpreter as the rest of the device sees it: decode a
 * function once, run a queued launch of it. tests/simcuda layer.
 *
 * A kernel runs through the interpreter when it has no twin, or for every kernel when
 * SIMCUDA_INTERPRET=1. Decoding happens at the first launch (not at load, so a module with an
 * unused kernel the interpreter cannot run still loads); a function it cannot run fails that
 * launch with CUDA_ERROR_NOT_SUPPORTED and one log line naming the instruction and kernel. */
#ifndef SIM_INTERP_H
#define SIM_INTERP_H

#include "sim_module_int.h"

struct sim_ifunc;
struct sim_imod;

/* SIMCUDA_INTERPRET=1: interpret kernels that have a twin too (read once). */
bool sim_interp_is_forced(void);
/* Decode fn's body (once; the result is cached in fn). CUDA_SUCCESS when it can run. */
CUresult sim_interp_prepare(struct sim_func *fn);
/* Run the whole grid of a prepared kernel call (every block, every thread). */
void sim_interp_run(const struct sim_kernel_call *k);
/* Free a module's decoded functions (module_free). */
void sim_interp_mod_free(struct sim_imod *m);

#endif
