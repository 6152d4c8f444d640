/* serial.c - the debug-build record of which thread holds the recording lock (serial.h).
 * common layer. */
#include "common/serial.h"

#include "common/compiler.h"

#ifdef CF_DEBUG
static bool known;                 /* some holder entered once: a lock exists (atomic) */
static __thread bool mine;         /* this thread holds it */

void cf_serial_enter(void)
{
	cf_assert(!mine); /* the lock is not recursive: entering twice is a self-deadlock elsewhere */
	mine = true;
	__atomic_store_n(&known, true, __ATOMIC_RELAXED);
}

void cf_serial_leave(void)
{
	cf_assert(mine);
	mine = false;
}

void cf_serial_forget(void)
{
	mine = false;
}

bool cf_serial_is_held(void)
{
	return mine || !__atomic_load_n(&known, __ATOMIC_RELAXED);
}

bool cf_serial_is_mine(void)
{
	return mine;
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int cf_serial_release_build_;
#endif
