/* core.c - the software device's entry discipline: one device lock, call counting, fault
 * injection (SIMCUDA_FAIL), environment and logging. tests/simcuda layer.
 *
 * SIMCUDA_FAIL=rule[,rule...], rule = name:N[:error]. The Nth call (1-based) of an entry point
 * whose exported name or base name (without _vN/_ptsz/_ptds) is `name` fails with `error` (a
 * CUresult name such as CUDA_ERROR_OUT_OF_MEMORY or a number; default CUDA_ERROR_UNKNOWN). The
 * failing call has no other effect, as if the driver had refused it up front.
 *
 * SIMCUDA_MACHINE_CODE=noop (off by default) is machine-code mode: images with machine code and
 * no usable PTX load, and launches of their kernels do nothing to memory (fatbin.c, launch.c).
 * It is read once, at the first entry point, with one warning, since every result such kernels
 * compute is meaningless. */
#include "sim_int.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SIM_MAX_FAIL_RULES 16

struct fail_rule {
	char name[128];              /* entry point or base name */
	unsigned long nth;           /* which call fails (1-based) */
	CUresult err;                /* what it returns */
	atomic_ulong calls;          /* matching calls so far */
};

static pthread_mutex_t device_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static struct fail_rule fail_rules[SIM_MAX_FAIL_RULES];
static int nfail_rules;
static bool machine_code;        /* SIMCUDA_MACHINE_CODE=noop */

/* SIMCUDA_DELAY=name:ms[,...]: every call of the entry point (or base name) sleeps ms of wall
 * time before it enters the device, without the device lock: a slow driver call (a long
 * cuGraphInstantiate) for tests of what other threads do meanwhile. */
struct delay_rule {
	char name[128];              /* entry point or base name */
	unsigned int ms;             /* milliseconds each call sleeps */
};
static struct delay_rule delay_rules[SIM_MAX_FAIL_RULES];
static int ndelay_rules;

static void parse_delay_rules(const char *spec)
{
	char buf[1024];
	char *save = NULL;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		char *end;
		struct delay_rule *r;

		if (!colon || ndelay_rules == SIM_MAX_FAIL_RULES) {
			sim_log("SIMCUDA_DELAY: ignoring '%s' (expected name:ms)", tok);
			continue;
		}
		*colon = 0;
		r = &delay_rules[ndelay_rules];
		snprintf(r->name, sizeof(r->name), "%s", tok);
		r->ms = (unsigned int)strtoul(colon + 1, &end, 10);
		if (*end || !colon[1]) {
			sim_log("SIMCUDA_DELAY: ignoring '%s' (ms must be a number)", tok);
			continue;
		}
		ndelay_rules++;
	}
}

void sim_log(const char *fmt, ...)
{
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "simcuda[%d]: ", (int)getpid());
	va_list ap;

	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(buf))
		n += vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf) - 1)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(2, buf, (size_t)n) < 0)
		return;
}

static CUresult parse_error(const char *s)
{
	char *end;
	long v = strtol(s, &end, 0);

	if (*s && !*end)
		return (CUresult)v;
#define CF_CUDA_ERROR(value, name, desc) \
	if (!strcmp(s, #name))           \
		return (CUresult)(value);
#include "cuda_errors.h"
#undef CF_CUDA_ERROR
	sim_log("SIMCUDA_FAIL: unknown error '%s', using CUDA_ERROR_UNKNOWN", s);
	return CUDA_ERROR_UNKNOWN;
}

static void parse_fail_rules(const char *spec)
{
	char buf[1024];
	char *save = NULL;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		char *err;
		struct fail_rule *r;

		if (!colon || nfail_rules == SIM_MAX_FAIL_RULES) {
			sim_log("SIMCUDA_FAIL: ignoring '%s' (expected name:N[:error])", tok);
			continue;
		}
		*colon = 0;
		r = &fail_rules[nfail_rules];
		snprintf(r->name, sizeof(r->name), "%s", tok);
		r->nth = strtoul(colon + 1, &err, 10);
		if (r->nth == 0 || (*err && *err != ':')) {
			sim_log("SIMCUDA_FAIL: ignoring '%s' (N must be a positive call number)", tok);
			continue;
		}
		r->err = *err == ':' ? parse_error(err + 1) : CUDA_ERROR_UNKNOWN;
		atomic_init(&r->calls, 0);
		nfail_rules++;
	}
}

/* The CPU's time this thread has spent inside the device's entry points (monotonic ns, the
 * wait for the device lock included), and when its current call entered. */
static __thread uint64_t in_device_ns, entered_ns;
/* The same summed over all threads, exited ones included (SIMCUDA_STATS totals.device_cpu_ns,
 * stats.c): a slot per thread, written only by its thread (a plain add: a locked add in every
 * call cost ~5 ns, which a tool measuring its own CPU time would charge to the caller), in a
 * list the exit's sum walks. A slot outlives its thread (16 bytes a thread ever made). */
struct cpu_slot {
	_Atomic uint64_t ns;             /* its thread's time inside the device's calls */
	struct cpu_slot *next;           /* the next slot in cpu_slots */
};
static _Atomic(struct cpu_slot *) cpu_slots; /* every thread's slot, newest first */
static __thread struct cpu_slot *cpu_slot;   /* this thread's, made at its first call */
static _Atomic uint64_t cpu_unslotted;       /* time of threads whose slot could not be made */
/* What an empty pair of mono_ns() reads (calibrated once, init_process), added to every call's
 * interval: the part of the entry's read before its instant and the part of the exit's read
 * after it are the device's time too, about one read (~20 ns), and a tool subtracting the
 * device's time from its own (cufold's own_ns_per_op, scripts/bench-overhead --own-check)
 * charged it to the caller, once per device call. */
static uint64_t clock_pair_ns;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The mean reading of an empty pair of mono_ns() (pairs over 20 us, preempted, left out). */
static uint64_t calibrate_clock_pair(void)
{
	uint64_t sum = 0, n = 0;

	(void)mono_ns(); /* the first read may fault in the vDSO's page */
	for (int i = 0; i < 256; i++) {
		uint64_t t0 = mono_ns();
		uint64_t dt = mono_ns() - t0;

		if (dt < 20000) {
			sum += dt;
			n++;
		}
	}
	return n ? (sum + n / 2) / n : 0;
}

static void before_fork(void)
{
	pthread_mutex_lock(&device_lock);
}

static void after_fork(void)
{
	pthread_mutex_unlock(&device_lock);
}

static void init_process(void)
{
	const char *fail = getenv("SIMCUDA_FAIL");
	const char *delay = getenv("SIMCUDA_DELAY");

	const char *mc = getenv("SIMCUDA_MACHINE_CODE");

	clock_pair_ns = calibrate_clock_pair();
	if (fail && *fail)
		parse_fail_rules(fail);
	if (delay && *delay)
		parse_delay_rules(delay);
	if (mc && !strcmp(mc, "noop")) {
		machine_code = true;
		sim_log("WARNING: SIMCUDA_MACHINE_CODE=noop: kernels that have only machine code load and run as "
			"no-ops (counted and timed, memory untouched): every result they compute is meaningless");
	} else if (mc && *mc && strcmp(mc, "off")) {
		sim_log("SIMCUDA_MACHINE_CODE: unknown value '%s' (noop or off); machine-code mode stays off", mc);
	}
	pthread_atfork(before_fork, after_fork, after_fork);
}

void sim_init_once(void)
{
	pthread_once(&init_once, init_process);
}

bool sim_machine_code_is_on(void)
{
	sim_init_once();
	return machine_code;
}

/* The base name of an exported symbol: cuMemcpyHtoD_v2_ptds -> cuMemcpyHtoD. */
static void base_name(const char *sym, char *out, size_t cap)
{
	size_t n;

	snprintf(out, cap, "%s", sym);
	n = strlen(out);
	if (n > 5 && (!strcmp(out + n - 5, "_ptsz") || !strcmp(out + n - 5, "_ptds"))) {
		n -= 5;
		out[n] = 0;
	}
	while (n > 2 && isdigit((unsigned char)out[n - 1]))
		n--;
	if (n > 2 && out[n - 1] == 'v' && out[n - 2] == '_' && isdigit((unsigned char)out[n]))
		out[n - 2] = 0;
}

static void bind_entry(struct sim_entry *e, const char *name)
{
	char base[160];

	pthread_mutex_lock(&bind_lock);
	if (!e->ctr) {
		e->name = name;
		base_name(name, base, sizeof(base));
		for (int i = 0; i < nfail_rules; i++)
			if (!strcmp(fail_rules[i].name, name) || !strcmp(fail_rules[i].name, base))
				e->fail_rule = i + 1;
		for (int i = 0; i < ndelay_rules; i++)
			if (!strcmp(delay_rules[i].name, name) || !strcmp(delay_rules[i].name, base))
				e->delay_ms = delay_rules[i].ms;
		__atomic_store_n(&e->ctr, sim_stats_counter("calls", name), __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&bind_lock);
}

/* Count the call; returns the injected error or CUDA_SUCCESS. */
static CUresult count_call(struct sim_entry *e, const char *name)
{
	struct sim_counter *ctr;

	sim_init_once();
	ctr = __atomic_load_n(&e->ctr, __ATOMIC_ACQUIRE);
	if (!ctr) {
		bind_entry(e, name);
		ctr = e->ctr;
	}
	sim_counter_add(ctr, 1);
	if (e->delay_ms) {
		struct timespec ts = { .tv_sec = e->delay_ms / 1000, .tv_nsec = (long)(e->delay_ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) != 0)
			;
	}
	if (e->fail_rule) {
		struct fail_rule *r = &fail_rules[e->fail_rule - 1];
		unsigned long n = atomic_fetch_add(&r->calls, 1) + 1;

		if (n == r->nth) {
			sim_log("SIMCUDA_FAIL: failing call %lu of %s with error %d", n, name, (int)r->err);
			return r->err;
		}
	}
	return CUDA_SUCCESS;
}

/* The calling thread's slot, pushed on cpu_slots; false when out of memory. */
static bool cpu_slot_make(void)
{
	struct cpu_slot *c = calloc(1, sizeof(*c));

	if (!c)
		return false;
	c->next = atomic_load_explicit(&cpu_slots, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&cpu_slots, &c->next, c, memory_order_release,
						      memory_order_relaxed))
		;
	cpu_slot = c;
	return true;
}

uint64_t sim_thread_device_ns(void)
{
	return in_device_ns;
}

CUresult sim_enter(struct sim_entry *e, const char *name)
{
	uint64_t t0 = mono_ns(); /* the call's counting is the device's time too */
	CUresult rc = count_call(e, name);

	if (rc != CUDA_SUCCESS)
		return rc;
	entered_ns = t0;
	pthread_mutex_lock(&device_lock);
	sim_host_charge(sim_cost.host_call_ns);
	return CUDA_SUCCESS;
}

CUresult sim_leave(CUresult rc)
{
	uint64_t dt;

	pthread_mutex_unlock(&device_lock);
	dt = mono_ns() - entered_ns + clock_pair_ns;
	in_device_ns += dt;
	if (__builtin_expect(!cpu_slot, 0) && !cpu_slot_make()) {
		atomic_fetch_add_explicit(&cpu_unslotted, dt, memory_order_relaxed);
		return rc;
	}
	atomic_store_explicit(&cpu_slot->ns, atomic_load_explicit(&cpu_slot->ns, memory_order_relaxed) + dt,
			      memory_order_relaxed);
	return rc;
}

uint64_t sim__device_cpu_total_ns(void);
uint64_t sim__device_cpu_total_ns(void)
{
	uint64_t sum = atomic_load_explicit(&cpu_unslotted, memory_order_relaxed);

	for (struct cpu_slot *c = atomic_load_explicit(&cpu_slots, memory_order_acquire); c; c = c->next)
		sum += atomic_load_explicit(&c->ns, memory_order_relaxed);
	return sum;
}

void sim_note_error(const char *name, CUresult rc)
{
	static int on = -1;
	static atomic_int logged;

	if (on < 0) {
		const char *v = getenv("SIMCUDA_LOG_ERRORS");

		on = v && *v && strcmp(v, "0");
	}
	if (on && atomic_fetch_add(&logged, 1) < 500)
		sim_log("%s returned %d", name, (int)rc);
}

CUresult sim_enter_unsupported(struct sim_entry *e, const char *name)
{
	CUresult rc = count_call(e, name);

	return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_NOT_SUPPORTED;
}

/* Exit: run what is still queued, so counters and the modeled time cover all submitted work,
 * then write SIMCUDA_STATS. A destructor (not atexit) so that it runs after every atexit
 * handler, including a preloaded library's flush of deferred work. */
void sim__stats_write_at_exit(void);
__attribute__((destructor)) static void at_exit(void)
{
	if (pthread_mutex_trylock(&device_lock) != 0)
		return; /* another thread is inside the device: write nothing rather than hang */
	sim_sched_drain(NULL);
	sim__stats_write_at_exit();
	pthread_mutex_unlock(&device_lock);
}

/* ------------------------------------------------------------------ handle registry */

/* Open addressing over pointer values; tombstones keep probe chains intact after removal. */
#define TOMBSTONE ((const void *)1)

static const void **handles;
static size_t handles_cap, handles_used;

static size_t slot_of(const void *p, size_t cap)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)(x & (cap - 1));
}

static void rehash(size_t cap)
{
	const void **old = handles;
	size_t oldcap = handles_cap;

	handles = calloc(cap, sizeof(*handles));
	if (!handles) {
		sim_log("out of host memory for the handle registry");
		abort();
	}
	handles_cap = cap;
	handles_used = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i] && old[i] != TOMBSTONE)
			sim_handle_add(old[i]);
	free(old);
}

void sim_handle_add(const void *obj)
{
	size_t i;

	if ((handles_used + 1) * 2 > handles_cap)
		rehash(handles_cap ? handles_cap * 2 : 1024);
	for (i = slot_of(obj, handles_cap); handles[i] && handles[i] != TOMBSTONE; i = (i + 1) & (handles_cap - 1))
		if (handles[i] == obj)
			return;
	handles[i] = obj;
	handles_used++;
}

void sim_handle_remove(const void *obj)
{
	if (!handles_cap)
		return;
	for (size_t i = slot_of(obj, handles_cap); handles[i]; i = (i + 1) & (handles_cap - 1))
		if (handles[i] == obj) {
			handles[i] = TOMBSTONE;
			return;
		}
}

bool sim_handle_is_live(const void *obj, uint32_t magic)
{
	if (!obj || !handles_cap)
		return false;
	for (size_t i = slot_of(obj, handles_cap); handles[i]; i = (i + 1) & (handles_cap - 1))
		if (handles[i] == obj)
			return *(const uint32_t *)obj == magic;
	return false;
}
