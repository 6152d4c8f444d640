/* clock.c - the software device's modeled host clock, exported for a preloaded tool that wants
 * to time what the program waits for in the model's terms (cufold's gate, replay/gate.c, uses
 * it when present: the wall clock of the CPU running the model says nothing of a GPU's time).
 * tests/simcuda layer. */
#include "sim_int.h"

/* simcuda.h declares them for programs; repeated here so this file needs nothing else. */
uint64_t simcuda_host_now_ns(void);
uint64_t simcuda_device_cpu_ns(void);

uint64_t simcuda_host_now_ns(void)
{
	return sim_host_now();
}

/* The CPU's time this thread has spent inside the device's calls (the PTX interpreter running
 * kernels on a query or a synchronize among it), for a tool that times its own work on the CPU
 * and whose calls into the device the model already charges (cufold's own_ns_per_op). */
uint64_t simcuda_device_cpu_ns(void)
{
	return sim_thread_device_ns();
}
