/* lock.h - the engine's lock: a mutex whose uncontended take and drop are one atomic each,
 * inline, where pthread_mutex_lock and _unlock cost about sixty instructions an intercepted op
 * between them (issue 22). common layer.
 *
 * Drepper's three-state futex mutex ("Futexes Are Tricky", mutex3): 0 free, 1 taken, 2 taken
 * with waiters; a drop wakes one waiter only when the word was 2. Not recursive, no owner, no
 * robustness: what the engine used of pthread's default mutex. Thread sanitizer builds keep
 * pthread's mutex, which the sanitizer understands. In a forked child the word is whatever the
 * parent's threads left (the engine there is abandoned, never taken again). */
#ifndef CF_LOCK_H
#define CF_LOCK_H

#include <pthread.h>
#include <stdbool.h>

#if defined(__SANITIZE_THREAD__)
#define CF_LOCK_PTHREAD 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CF_LOCK_PTHREAD 1
#endif
#endif

#ifdef CF_LOCK_PTHREAD
typedef struct {
	pthread_mutex_t m;
} cf_lock_t;

static inline void cf_lock_init(cf_lock_t *l)
{
	pthread_mutex_init(&l->m, NULL);
}

static inline void cf_lock(cf_lock_t *l)
{
	pthread_mutex_lock(&l->m);
}

static inline void cf_unlock(cf_lock_t *l)
{
	pthread_mutex_unlock(&l->m);
}

static inline bool cf_trylock(cf_lock_t *l)
{
	return pthread_mutex_trylock(&l->m) == 0;
}
#else
typedef struct {
	int word; /* 0 free, 1 taken, 2 taken and someone may wait (futex word) */
} cf_lock_t;

/* The contended halves (lock.c). */
void cf__lock_wait(cf_lock_t *l, int seen);
void cf__lock_wake(cf_lock_t *l);

static inline void cf_lock_init(cf_lock_t *l)
{
	__atomic_store_n(&l->word, 0, __ATOMIC_RELEASE);
}

static inline void cf_lock(cf_lock_t *l)
{
	int c = 0;

	if (__builtin_expect(!__atomic_compare_exchange_n(&l->word, &c, 1, false, __ATOMIC_ACQUIRE,
							  __ATOMIC_RELAXED), 0))
		cf__lock_wait(l, c);
}

static inline void cf_unlock(cf_lock_t *l)
{
	if (__builtin_expect(__atomic_exchange_n(&l->word, 0, __ATOMIC_RELEASE) == 2, 0))
		cf__lock_wake(l);
}

static inline bool cf_trylock(cf_lock_t *l)
{
	int c = 0;

	return __atomic_compare_exchange_n(&l->word, &c, 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}
#endif

/* Take l, waiting at most ms milliseconds (polled: for the rare waits of a signal's last
 * report); false when it stayed taken. */
bool cf_lock_within(cf_lock_t *l, unsigned int ms);

#endif
