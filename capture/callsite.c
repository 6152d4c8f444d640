/* callsite.c - call sites (CUFOLD_CALLSITES=1): a hash of the first frames of the caller's stack
 * outside cufold for each op, and their symbol names for the report. capture layer; the only
 * file that uses libunwind.
 *
 * Unwinding costs microseconds per op, which is why it is off by default. Names are resolved
 * (unw_get_proc_name) only the first time a hash is seen; the registry has its own lock because
 * hooks unwind before they take the engine's lock (a registry lookup never waits on the engine).
 * The registry is a common/table.h table keyed by the hash's bytes (a site's name is looked up
 * per op only with CUFOLD_CALLSITES=1, where the unwinding costs far more). A site, once in it,
 * stays until cap__callsite_fini, so the name cap_callsite_name returns stays valid until then.
 *
 * libunwind is never linked: libunwind.so.8 exports its own _Unwind_RaiseException and friends,
 * and in a process without libgcc_s among its first libraries those would take over C++
 * exceptions everywhere (an exception thrown inside std::call_once then aborts). So it is
 * dlopen'ed RTLD_LOCAL on the first capture (only CUFOLD_CALLSITES=1 captures), its functions
 * looked up into typed pointers through glibc's dlsym (drv_real_dlsym, never cufold's exported
 * hook). When it cannot be loaded, call sites are off with one warning and every capture
 * returns 0, as when unwinding fails. The header is included for its types and prototypes
 * only: nothing here names a libunwind symbol outside a string. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_int.h"
#include "common/errors.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/table.h"

#define SITE_FRAMES 4    /* frames outside cufold that make a call site */
#define WALK_MAX 64      /* frames walked at most */
#define SITE_NAME_MAX 512 /* bytes of a site's printed name */
#define UNWIND_LIB "libunwind.so.8" /* loaded on first use, never linked */

/* The symbol a libunwind name stands for: unw_step is a macro for _ULx86_64_step (local-only
 * names) and unw_getcontext for _Ux86_64_getcontext, so the header says what to look up. */
#define SYM_NAME_(x) #x
#define SYM_NAME(x) SYM_NAME_(x)

struct site {
	struct cf_table_link link;   /* in sites, keyed by hash */
	uint64_t hash;               /* the call site */
	uint64_t ops;                /* ops recorded from it */
	char name[SITE_NAME_MAX];    /* "fn+0x1a < caller+0x40 < ..." */
};

/* libunwind's functions, typed with the header's own prototypes (__typeof__ names no symbol). */
struct unwinder {
	void *handle;                                    /* the dlopen'ed library, NULL when not loaded */
	__typeof__(&unw_tdep_getcontext) getcontext;     /* unw_getcontext */
	__typeof__(&unw_init_local) init_local;          /* unw_init_local */
	__typeof__(&unw_get_reg) get_reg;                /* unw_get_reg */
	__typeof__(&unw_get_proc_name) get_proc_name;    /* unw_get_proc_name */
	__typeof__(&unw_step) step;                      /* unw_step */
	__typeof__(&unw_backtrace) backtrace;            /* unw_backtrace */
	bool ok;                                         /* all of the above found */
};

static uintptr_t self_lo, self_hi; /* cufold's own text: frames there are skipped */
static struct unwinder uw;       /* set once by callsite_init, read-only after */
static pthread_once_t init_once = PTHREAD_ONCE_INIT; /* libunwind and self_lo/hi */

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t me = (uintptr_t)data, lo = UINTPTR_MAX, hi = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (me >= lo && me < hi) {
		self_lo = lo;
		self_hi = hi;
		return 1;
	}
	return 0;
}

/* One libunwind function into *slot; false (and *missing = name) when absent. */
static bool uw_find(void *handle, const char *name, void *slot, const char **missing)
{
	void *p = drv_real_dlsym(handle, name);

	if (!p) {
		*missing = name;
		return false;
	}
	memcpy(slot, &p, sizeof(p));
	return true;
}

/* 0 with uw's functions filled, or -CF_ENOENT (after one warning) when libunwind or one of its
 * functions is missing. */
static int uw_load(void)
{
	const char *missing = NULL, *why;
	void *h;
	int rc = 0;

	h = drv_real_dlopen(UNWIND_LIB, RTLD_LAZY | RTLD_LOCAL);
	if (!h) {
		why = dlerror();
		cf_log_warn_once("call sites are off: cannot load %s (CUFOLD_CALLSITES=1 needs libunwind8): %s",
				 UNWIND_LIB, why ? why : "?");
		rc = -CF_ENOENT;
		goto out;
	}
	if (!uw_find(h, SYM_NAME(unw_tdep_getcontext), &uw.getcontext, &missing) ||
	    !uw_find(h, SYM_NAME(unw_init_local), &uw.init_local, &missing) ||
	    !uw_find(h, SYM_NAME(unw_get_reg), &uw.get_reg, &missing) ||
	    !uw_find(h, SYM_NAME(unw_get_proc_name), &uw.get_proc_name, &missing) ||
	    !uw_find(h, SYM_NAME(unw_step), &uw.step, &missing) ||
	    !uw_find(h, SYM_NAME(unw_backtrace), &uw.backtrace, &missing))
		goto out_close;
	uw.handle = h;
	goto out;

out_close:
	cf_log_warn_once("call sites are off: %s has no %s", UNWIND_LIB, missing);
	dlclose(h);
	rc = -CF_ENOENT;
out:
	return rc;
}

/* The site of hash h, or NULL; under lock. */
static struct site *site_find(struct cap_engine *ce, uint64_t h)
{
	return CF_TABLE_ENTRY(cf_table_find(&ce->sites.sites, &h, sizeof(h)), struct site, link);
}

/* Once per process, on the first capture: libunwind, and cufold's own text range. */
static void callsite_init(void)
{
	uw.ok = uw_load() == 0;
	dl_iterate_phdr(find_self, (void *)(uintptr_t)&cap_callsite_capture);
}

static void name_frames(struct site *s, unw_cursor_t *cur, int n)
{
	size_t len = 0;

	s->name[0] = 0;
	for (int i = 0; i < n && len + 1 < sizeof(s->name); i++) {
		char fn[160];
		unw_word_t off = 0, ip = 0;
		int w;

		uw.get_reg(&cur[i], UNW_REG_IP, &ip);
		if (uw.get_proc_name(&cur[i], fn, sizeof(fn), &off) == 0)
			w = snprintf(s->name + len, sizeof(s->name) - len, "%s%s+0x%lx", i ? " < " : "", fn,
				     (unsigned long)off);
		else
			w = snprintf(s->name + len, sizeof(s->name) - len, "%s0x%lx", i ? " < " : "", (unsigned long)ip);
		if (w < 0)
			break;
		len += (size_t)w < sizeof(s->name) - len ? (size_t)w : sizeof(s->name) - len - 1;
	}
}

/* The first SITE_FRAMES frames outside cufold, walked with a cursor, for names. */
static int walk_frames(unw_cursor_t *cur, uint64_t *hash)
{
	unw_context_t uc;
	unw_cursor_t c;
	uint64_t h = CF_HASH_SEED;
	int n = 0;

	if (uw.getcontext(&uc) != 0 || uw.init_local(&c, &uc) != 0)
		return 0;
	for (int depth = 0; depth < WALK_MAX && n < SITE_FRAMES; depth++) {
		unw_word_t ip = 0;

		if (uw.get_reg(&c, UNW_REG_IP, &ip) != 0 || !ip)
			break;
		if (ip < self_lo || ip >= self_hi) {
			cur[n++] = c;
			h = cf_hash_combine(h, ip);
		}
		if (uw.step(&c) <= 0)
			break;
	}
	*hash = h ? h : 1;
	return n;
}

uint64_t cap_callsite_capture(struct cap_engine *ce)
{
	void *ips[WALK_MAX];
	uint64_t h = CF_HASH_SEED;
	int depth, n = 0;
	bool known;

	pthread_once(&init_once, callsite_init);
	if (!uw.ok)
		return 0;
	/* the fast path: return addresses only (libunwind caches what it needs per address) */
	depth = uw.backtrace(ips, WALK_MAX);
	for (int i = 0; i < depth && n < SITE_FRAMES; i++) {
		uintptr_t ip = (uintptr_t)ips[i];

		if (ip && (ip < self_lo || ip >= self_hi)) {
			h = cf_hash_combine(h, ip);
			n++;
		}
	}
	if (!n)
		return 0;
	if (!h)
		h = 1;
	pthread_mutex_lock(&ce->sites.lock);
	known = site_find(ce, h) != NULL;
	pthread_mutex_unlock(&ce->sites.lock);
	if (!known) {
		/* first sight: walk again with a cursor to name the frames (the same frames, so the
		 * same hash, unless the two walks disagree; then the cursor's hash is used) */
		unw_cursor_t cur[SITE_FRAMES];
		struct site *s = calloc(1, sizeof(*s));
		uint64_t h2 = 0;
		int m = walk_frames(cur, &h2);

		if (!s)
			return h;
		if (m && h2 != h)
			h = h2;
		s->hash = h;
		name_frames(s, cur, m);
		pthread_mutex_lock(&ce->sites.lock);
		if (site_find(ce, h) || cf_table_add(&ce->sites.sites, &s->link, &s->hash, sizeof(s->hash)) != 0)
			free(s);
		pthread_mutex_unlock(&ce->sites.lock);
	}
	return h;
}

const char *cap_callsite_name(struct cap_engine *ce, uint64_t hash)
{
	struct site *s;

	pthread_mutex_lock(&ce->sites.lock);
	s = site_find(ce, hash);
	pthread_mutex_unlock(&ce->sites.lock);
	return s ? s->name : NULL;
}

void cap__callsite_count(struct cap_engine *ce, uint64_t hash)
{
	struct site *s;

	pthread_mutex_lock(&ce->sites.lock);
	s = site_find(ce, hash);
	if (s)
		s->ops++;
	pthread_mutex_unlock(&ce->sites.lock);
}

static int cmp_ops_desc(const void *a, const void *b)
{
	uint64_t x = ((const struct cap_site_count *)a)->ops, y = ((const struct cap_site_count *)b)->ops;

	return x < y ? 1 : x > y ? -1 : 0;
}

size_t cap__callsite_top(struct cap_engine *ce, struct cap_site_count *out, size_t max)
{
	struct cap_site_count *all;
	size_t n = 0;

	pthread_mutex_lock(&ce->sites.lock);
	all = calloc(cf_table_count(&ce->sites.sites) + 1, sizeof(*all));
	if (all) {
		for (const struct cf_table_link *l = ce->sites.sites.head; l; l = cf_table_next(l)) {
			const struct site *s = CF_TABLE_ENTRY(l, const struct site, link);

			all[n++] = (struct cap_site_count){ s->hash, s->ops };
		}
	}
	pthread_mutex_unlock(&ce->sites.lock);
	if (!all)
		return 0;
	qsort(all, n, sizeof(*all), cmp_ops_desc);
	memcpy(out, all, (n < max ? n : max) * sizeof(*out));
	free(all);
	return n;
}

void cap__callsite_fini(struct cap_engine *ce)
{
	struct cf_table_link *l, *next;

	pthread_mutex_lock(&ce->sites.lock);
	for (l = ce->sites.sites.head; l; l = next) {
		next = cf_table_next(l);
		free(CF_TABLE_ENTRY(l, struct site, link));
	}
	cf_table_fini(&ce->sites.sites);
	pthread_mutex_unlock(&ce->sites.lock);
}

size_t cap__callsite_bytes(struct cap_engine *ce)
{
	size_t n;

	pthread_mutex_lock(&ce->sites.lock);
	n = cf_table_count(&ce->sites.sites) * sizeof(struct site) + cf_table_bytes(&ce->sites.sites);
	pthread_mutex_unlock(&ce->sites.lock);
	return n;
}
