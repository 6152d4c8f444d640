/* sim_twin.h - the ABI of a kernel twin: the host function the software device runs for a
 * kernel entry. Public part of tests/simcuda; a plugin named in SIMCUDA_TWINS includes only this.
 *
 * A twin is exported as  void sim_twin_<entry name>(const struct sim_launch *l);
 * It must compute exactly what the kernel computes for the whole grid (every block, every
 * thread), deterministically, and touch no memory the kernel would not touch. Device pointers
 * are host-usable addresses, so a twin reads a pointer parameter and dereferences it. */
#ifndef SIM_TWIN_H
#define SIM_TWIN_H

#include <stddef.h>

struct sim_dim3 {
	unsigned int x, y, z; /* extent in each dimension, each >= 1 */
};

struct sim_launch {
	struct sim_dim3 grid;           /* blocks in the grid */
	struct sim_dim3 block;          /* threads in a block */
	unsigned int shared_bytes;      /* dynamic shared memory requested */
	unsigned int param_count;       /* parameters of the entry, from its PTX */
	const void *const *params;      /* params[i] points at parameter i's bytes */
	const size_t *param_sizes;      /* size in bytes of each parameter */
	const char *name;               /* entry name as in the PTX */
};

typedef void (*sim_twin_fn)(const struct sim_launch *l);

/* Read parameter i as a value of type T (sizes are checked by the device at launch). */
#define SIM_PARAM(l, i, T) (*(const T *)(l)->params[(i)])

/* Threads in the whole grid, the bound of the usual `i < n` guard of a 1-D kernel. */
static inline size_t sim_launch_threads(const struct sim_launch *l)
{
	return (size_t)l->grid.x * l->grid.y * l->grid.z * l->block.x * l->block.y * l->block.z;
}

#endif
