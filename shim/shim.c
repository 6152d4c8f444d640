/* shim.c - lazy initialization, the mode, per-symbol call counters and their report at exit,
 * and the fork handler. shim layer.
 *
 * Initialization has two phases. Phase 1, with no cufold lock held: read the configuration,
 * dlopen the driver and look every symbol up into a buffer on the stack (dlopen runs
 * constructors that may call back into cufold, and takes the loader lock; holding our own
 * lock across it could deadlock against a thread that holds the loader lock and calls us).
 * Phase 2, under a mutex that guards only memory: the first thread to get there publishes the
 * table, builds the pointer map and sets the mode; later ones drop their results. */
#include "shim/shim.h"

#include <link.h>
#include <pthread.h>
#include <string.h>

#include "common/compiler.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/serial.h"
#include "shim/engine.h"
#include "shim/shim_int.h"
#include "shim/signals.h"

bool shim__passthrough;
bool shim__counting; /* initialized in a mode other than off: neutral hooks count inline */
__thread struct shim_thread shim__thread __attribute__((tls_model("initial-exec")));

static int init_state;        /* 0 not done, 2 done (acquire/release) */
static int init_rc;           /* result of the initialization, valid once done */
static enum cf_mode mode;     /* mode in force, valid once done */
static pthread_mutex_t publish_lock = PTHREAD_MUTEX_INITIALIZER; /* guards phase 2 */
static int atfork_registered; /* pthread_atfork done */
uint64_t shim__counts[DRV_API_COUNT]; /* calls per symbol (atomic increments) */

/* The process's one fork child handler (registered once, at initialization). */
static void atfork_child(void)
{
	/* Only this thread survives: locks held by others would never be released. */
	pthread_mutex_init(&publish_lock, NULL);
	cf_config__atfork_child();
	drv__api_atfork_child();
	for (int i = 0; i < DRV_API_COUNT; i++)
		__atomic_store_n(&shim__counts[i], 0, __ATOMIC_RELAXED);
	shim_signals_atfork_child();
	shim_engine__atfork_child(); /* last: it makes the child's engine from the state above */
}

static int init_slow(void)
{
	void *addr[DRV_API_COUNT];
	const struct cf_config *cfg;
	void *handle = NULL;
	bool won = false;
	int rc;

	if (shim__thread.inside)
		return -CF_EBUSY;
	cf_assert(!cf_serial_is_mine()); /* invariant 1: no cufold lock while the driver is dlopen'ed */
	shim_inside_enter();
	cfg = cf_config_get();
	rc = drv_real__open(cfg->libcuda, &handle, addr);

	pthread_mutex_lock(&publish_lock);
	if (__atomic_load_n(&init_state, __ATOMIC_RELAXED) != 2) {
		if (rc == 0) {
			drv_real__publish(handle, addr);
			shim__route_build();
		} else {
			cf_log_err("no CUDA driver: every driver call through cufold answers CUDA_ERROR_NOT_FOUND");
		}
		mode = cfg->mode;
		init_rc = rc;
		__atomic_store_n(&init_state, 2, __ATOMIC_RELEASE);
		/* off: hooks forward without a look at anything else from now on */
		__atomic_store_n(&shim__passthrough, mode == CF_MODE_OFF, __ATOMIC_RELEASE);
		__atomic_store_n(&shim__counting, mode != CF_MODE_OFF, __ATOMIC_RELEASE);
		won = true;
	}
	rc = init_rc;
	pthread_mutex_unlock(&publish_lock);

	if (won) {
		if (!__atomic_exchange_n(&atfork_registered, 1, __ATOMIC_RELAXED))
			pthread_atfork(NULL, NULL, atfork_child);
		if (rc == 0) {
			const struct link_map *lm = drv_real_link_map();
			int n = 0;

			for (int id = 0; id < DRV_API_COUNT; id++)
				n += drv_real_has((enum drv_api_id)id);
			/* the library loaded, which is not CUFOLD_LIBCUDA when that was refused */
			cf_log_info("cufold %s; mode %s; driver %s: %d of %d entry points", CUFOLD_VERSION,
				    cf_mode_name(mode), lm && lm->l_name && lm->l_name[0] ? lm->l_name : cfg->libcuda, n, DRV_API_COUNT);
			if (mode != CF_MODE_OFF)
				shim_signals_arm(); /* outputs of a job stopped by a signal */
		}
	}
	shim_inside_leave();
	return rc;
}

int shim_init(void)
{
	if (cf_likely(__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == 2))
		return init_rc;
	return init_slow();
}

enum cf_mode shim_mode(void)
{
	if (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) == 2)
		return mode;
	return cf_config_get()->mode;
}

void shim_note_call(enum drv_api_id id)
{
	if (cf_unlikely(shim__thread.inside))
		return;
	shim_init();
	if (mode == CF_MODE_OFF || (unsigned)id >= DRV_API_COUNT)
		return;
	__atomic_fetch_add(&shim__counts[id], 1, __ATOMIC_RELAXED);
	shim_signals_check(); /* a periodic report due, or a forked child to re-arm */
}

void shim_note_unmodeled(enum drv_api_id id)
{
	/* A call cufold does not understand is a boundary: the engine closes the open window (and
	 * replay flushes deferred work) before it reaches the driver. */
	shim_note_call(id);
	shim_engine_unmodeled(id);
}

uint64_t shim_count(enum drv_api_id id)
{
	return (unsigned)id < DRV_API_COUNT ? __atomic_load_n(&shim__counts[id], __ATOMIC_RELAXED) : 0;
}

/* At exit, with CUFOLD_LOG=info: the calls intercepted, one line of the short summary; with
 * CUFOLD_LOG=debug also one line per exported symbol called. */
__attribute__((destructor)) static void report_counts(void)
{
	uint64_t total = 0;
	int symbols = 0;

	if (__atomic_load_n(&init_state, __ATOMIC_ACQUIRE) != 2 || mode == CF_MODE_OFF ||
	    !cf_log_enabled(CF_LOG_INFO))
		return;
	for (int id = 0; id < DRV_API_COUNT; id++) {
		uint64_t n = shim_count((enum drv_api_id)id);

		total += n;
		symbols += n > 0;
	}
	cf_log_info("%s: %llu driver calls intercepted through %d entry points", cf_mode_name(mode),
		    (unsigned long long)total, symbols);
	for (int id = 0; id < DRV_API_COUNT; id++) {
		uint64_t n = shim_count((enum drv_api_id)id);

		if (n)
			cf_log_debug("calls %s %llu", drv_api[id].name, (unsigned long long)n);
	}
}
