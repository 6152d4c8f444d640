/* clock.h - the monotonic clock and the calling thread's id, for every layer. common layer. */
#ifndef CF_CLOCK_H
#define CF_CLOCK_H

#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/compiler.h"

/* Nanoseconds of CLOCK_MONOTONIC. */
static inline uint64_t cf_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The calling thread's kernel id, cached per thread (one syscall per thread). */
extern __thread uint32_t cf__tid __attribute__((tls_model("initial-exec"), visibility("hidden")));

static inline uint32_t cf_tid(void)
{
	if (cf_unlikely(!cf__tid))
		cf__tid = (uint32_t)syscall(SYS_gettid);
	return cf__tid;
}

/* In a forked child: the surviving thread has a new id. */
static inline void cf_tid_forget(void)
{
	cf__tid = 0;
}

#endif
