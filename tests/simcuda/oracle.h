/* oracle.h - the software device as the oracle of cufold's derived effects (issue 23 part 5):
 * with SIMCUDA_ORACLE=path, every interpreted launch appends to path the global byte ranges its
 * loads, stores and atomics touched. tests/simcuda layer.
 *
 * SIMCUDA_ORACLE implies SIMCUDA_INTERPRET=1 (a twin's accesses cannot be seen). Off, the cost
 * is one load of a flag per memory instruction. A launch's record (one line each, appended in
 * one write when the grid ends, so records of launches on other threads do not interleave):
 *
 *   launch NAME gx gy gz bx by bz
 *   params HEX                      the parameter buffer, byte by byte
 *   r 0xSTART 0xEND                 bytes [START, END) read (merged, ascending)
 *   w 0xSTART 0xEND                 written
 *   u 0xSTART 0xEND                 updated atomically
 *   end
 *
 * Shared, local and parameter memory reached through generic addresses is left out; module
 * variables are not (they are global memory no parameter names: what the oracle must show). */
#ifndef SIM_ORACLE_H
#define SIM_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { SIM_ORACLE_READ, SIM_ORACLE_WRITE, SIM_ORACLE_ATOMIC };

/* Nonzero while the calling thread runs a launch the oracle records (the handlers' test). */
extern __thread int sim_oracle_recording;

/* Whether SIMCUDA_ORACLE is set (read once). */
bool sim_oracle_enabled(void);
/* A launch starts on this thread: its name, grid, block and parameter bytes, and the host
 * ranges of its shared, local and call-parameter buffers (generic accesses there are left out). */
void sim_oracle_begin(const char *name, const unsigned grid[3], const unsigned block[3],
		      const void *params, size_t param_bytes, const void *const excl[3][2]);
/* One access of `bytes` at host address addr by the current launch. */
void sim_oracle_note(uint64_t addr, uint64_t bytes, int kind);
/* The launch ended: its record is appended to the file. */
void sim_oracle_end(void);

#endif
