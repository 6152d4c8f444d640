/* serial.h - which thread holds the lock that orders all recording (the engine's mutex,
 * shim/engine.c), told to the layers below it so they can check "called with the caller's lock
 * held" (capture/capture.h) without knowing the lock. common layer.
 *
 * Debug builds only (CF_DEBUG): the holder calls cf_serial_enter right after taking the lock and
 * cf_serial_leave right before dropping it; cf_serial_is_held() is then true on that thread
 * only. Until some holder first enters, no lock is known to exist and every thread passes
 * cf_serial_is_held: unit tests drive capture and rewrite directly from one thread, with no
 * engine around them. cf_serial_is_mine() is the strict question ("this thread holds it"), for
 * the places that must NOT run under the lock. In release builds every function here is empty
 * and only cf_assert, itself compiled out, asks them. */
#ifndef CF_SERIAL_H
#define CF_SERIAL_H

#include <stdbool.h>

#ifdef CF_DEBUG
void cf_serial_enter(void);
void cf_serial_leave(void);
/* In a forked child, where the holder re-made the lock unlocked: this thread holds nothing. */
void cf_serial_forget(void);
bool cf_serial_is_held(void);
bool cf_serial_is_mine(void);
#else
static inline void cf_serial_enter(void)
{
}

static inline void cf_serial_leave(void)
{
}

static inline void cf_serial_forget(void)
{
}

static inline bool cf_serial_is_held(void)
{
	return true;
}

static inline bool cf_serial_is_mine(void)
{
	return false;
}
#endif

#endif
