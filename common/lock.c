/* lock.c - the contended halves of the engine's lock (lock.h). common layer. */
#include "common/lock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef CF_LOCK_PTHREAD
/* The word was seen taken (seen: 1 or 2): mark it contended and sleep until a drop wakes us,
 * then take it as contended (a waiter cannot know whether others still wait). */
void cf__lock_wait(cf_lock_t *l, int seen)
{
	if (seen != 2)
		seen = __atomic_exchange_n(&l->word, 2, __ATOMIC_ACQUIRE);
	while (seen != 0) {
		syscall(SYS_futex, &l->word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
		seen = __atomic_exchange_n(&l->word, 2, __ATOMIC_ACQUIRE);
	}
}

void cf__lock_wake(cf_lock_t *l)
{
	syscall(SYS_futex, &l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
#endif

bool cf_lock_within(cf_lock_t *l, unsigned int ms)
{
	const struct timespec tick = { .tv_sec = 0, .tv_nsec = 1000000 };

	for (unsigned int i = 0; i <= ms; i++) {
		if (cf_trylock(l))
			return true;
		nanosleep(&tick, NULL);
	}
	return false;
}
