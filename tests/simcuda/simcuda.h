/* simcuda.h - what the software device offers programs beyond the driver API: telling the cost
 * model about the program's own host time, and reading its modeled host clock. tests/simcuda
 * layer, public; compiles alone.
 *
 * A program that should also run against a real libcuda must not link to these names: it looks
 * them up at run time, dlsym(RTLD_DEFAULT, "simcuda_host_work"), and does without when absent
 * (tests/lib/testlib.c, tl_app_op). */
#ifndef SIMCUDA_H
#define SIMCUDA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The program spent ns of its own host time (framework code between its driver calls): the
 * modeled host clock advances by ns. Thread-safe; not a driver call (not counted in "calls").
 * The total is in SIMCUDA_STATS as modeled.app_host_ns. */
void simcuda_host_work(uint64_t ns);

/* Its type, for the pointer dlsym returns. */
typedef void (*simcuda_host_work_fn)(uint64_t ns);

/* The modeled host clock now, in ns (clock.c): for a tool that times what the program waits
 * for in the model's terms rather than by the CPU running the model (cufold's gate). */
uint64_t simcuda_host_now_ns(void);
typedef uint64_t (*simcuda_host_now_ns_fn)(void);

/* The CPU's time, in monotonic ns, the calling thread has spent inside the device's entry points
 * (clock.c): a tool timing its own work subtracts it, as the model charges those calls. */
uint64_t simcuda_device_cpu_ns(void);

/* The order the PTX interpreter runs a grid's blocks in, for tests: 0 index order, 1 shuffled
 * (a permutation from SIMCUDA_SEED and the launch's number), -1 back to SIMCUDA_BLOCK_ORDER
 * (linear or shuffled, the default). Host twins of kernels always run in their own order. */
void simcuda_block_order_force(int order);

#ifdef __cplusplus
}
#endif

#endif
