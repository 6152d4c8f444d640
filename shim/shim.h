/* shim.h - the process-facing layer as the rest of cufold sees it: lazy initialization, the
 * mode, the thread-local "inside cufold" guard, and the notes every hook makes. shim layer.
 *
 * Invariants:
 *  1. Initialization is lazy and idempotent and runs from whichever comes first: an exported
 *     hook, dlsym, cuGetProcAddress (even before cuInit), a library constructor. No cufold lock
 *     is held while the driver is dlopen'ed (its constructors may call back into cufold).
 *  2. cufold's own driver calls go through DRV_REAL (driver/real.h), never through a hook; while
 *     cufold itself runs on a thread (shim_inside_enter), hooks and lookups pass straight
 *     through and nothing is counted.
 *  3. In CUFOLD_MODE=off a hook costs one predictable branch, and dlsym/cuGetProcAddress hand
 *     out the driver's own pointers.
 *  4. After fork the child keeps working: locks are re-made and counters restart at zero. */
#ifndef SHIM_SHIM_H
#define SHIM_SHIM_H

#include <stdbool.h>
#include <stdint.h>

#include "common/compiler.h"
#include "common/config.h"
#include "driver/api.h"

/* Load the configuration and the real driver once. 0, or a negative CF_E* code (-CF_EBUSY
 * when called from inside cufold's own initialization on this thread). */
int shim_init(void);
/* The mode in force (CUFOLD_MODE); loads the configuration if needed. */
enum cf_mode shim_mode(void);

/* Set once initialization finished in mode off: hooks then only forward. */
extern bool shim__passthrough __attribute__((visibility("hidden")));
/* The shim's per-thread state, one block: the thread pointer plus one offset from the GOT
 * reaches all of it (a block of the engine's beside this one cost every op a second offset and
 * the register holding it, issue 22). initial-exec: one load from the thread pointer instead of a
 * __tls_get_addr call each. */
struct shim_thread {
	int inside;                  /* depth of cufold's own activity on this thread */
	uint32_t ops;                /* engine.c: ops this thread brought to the engine (its timed
				      * samples) */
	bool ctx_ok;                 /* engine.c: ctx is known */
	CUcontext ctx;               /* engine.c: the thread's current context, when ctx_ok */
};
extern __thread struct shim_thread shim__thread __attribute__((tls_model("initial-exec"), visibility("hidden")));

static inline bool shim_is_passthrough(void)
{
	return __atomic_load_n(&shim__passthrough, __ATOMIC_ACQUIRE);
}

static inline bool shim_is_inside(void)
{
	return shim__thread.inside != 0;
}

static inline void shim_inside_enter(void)
{
	shim__thread.inside++;
}

static inline void shim_inside_leave(void)
{
	cf_assert(shim__thread.inside > 0); /* enter and leave pair up */
	shim__thread.inside--;
}

/* A hook is about to forward a call cufold does not model: the flush point later layers hang
 * off. For now it counts the call (trace and replay). Initializes on first use. */
void shim_note_unmodeled(enum drv_api_id id);
/* A call that needs no flush (a lookup such as cuGetProcAddress): counts it. */
void shim_note_call(enum drv_api_id id);

/* Calls per entry point (shim.c; atomic increments). */
extern uint64_t shim__counts[DRV_API_COUNT] __attribute__((visibility("hidden")));
/* Set once initialization finished in a mode other than off (shim_note_call would count). */
extern bool shim__counting __attribute__((visibility("hidden")));

/* Calls counted for a symbol since start (or since fork in a child). */
uint64_t shim_count(enum drv_api_id id);

#endif
