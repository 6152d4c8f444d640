/* twins.c - the twin registry: finds the host function that plays a kernel entry, first in
 * the plugin libraries named by SIMCUDA_TWINS, then among the device's own exports.
 * tests/simcuda layer.
 *
 * There is no table to register in: a twin is any exported function named
 * sim_twin_<entry>. Plugins are dlopen'ed once, RTLD_LOCAL so two plugins (or a plugin and the
 * device) may export the same name and the first in the list wins. The device's built-in twins
 * (twins_builtin.c, and any other file of tests/simcuda exporting one) are found with dlsym on
 * a handle of this very library, so adding a twin to the device is also just a function. */
#include "sim_module_int.h"

#include "rewrite/kernels/variant_table.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TWIN_MAX_PLUGINS 16

static struct {
	pthread_once_t once;         /* guards the loading below */
	void *plugins[TWIN_MAX_PLUGINS]; /* handles of SIMCUDA_TWINS libraries, in order */
	unsigned int nplugins;       /* plugins loaded */
	void *self;                  /* handle of the library holding sim_twin_find */
} twins = { .once = PTHREAD_ONCE_INIT };

static void load_plugin(const char *path)
{
	void *h;

	if (twins.nplugins == TWIN_MAX_PLUGINS) {
		sim_log("SIMCUDA_TWINS: more than %d libraries; ignoring %s", TWIN_MAX_PLUGINS, path);
		return;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		sim_log("SIMCUDA_TWINS: cannot load %s (%s); its twins are not available", path,
			dlerror());
		return;
	}
	twins.plugins[twins.nplugins++] = h;
}

static void twins_load(void)
{
	const char *env = getenv("SIMCUDA_TWINS");
	Dl_info info;

	if (env && *env) {
		char *list = strdup(env), *save = NULL;

		if (!list) {
			sim_log("SIMCUDA_TWINS: out of memory; plugins not loaded");
		} else {
			for (char *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save))
				load_plugin(p);
			free(list);
		}
	}
	/* RTLD_NOLOAD: only a handle (and a reference) on the library that is already mapped. */
	if (dladdr(&twins, &info) && info.dli_fname)
		twins.self = dlopen(info.dli_fname, RTLD_NOLOAD | RTLD_NOW);
	if (!twins.self)
		sim_log("cannot open a handle on the software device itself (%s): built-in twins "
			"are not available", dlerror());
}

/* The symbol in h, unless it is sim_twin_find itself (an entry named "find"). Function and
 * object pointers are converted by memcpy, which ISO C allows and POSIX makes meaningful. */
static sim_twin_fn lookup(void *h, const char *sym)
{
	sim_twin_fn (*self)(const char *) = sim_twin_find;
	void *f = dlsym(h, sym), *selfp;
	sim_twin_fn fn;

	memcpy(&selfp, &self, sizeof(selfp));
	if (!f || f == selfp)
		return NULL;
	memcpy(&fn, &f, sizeof(fn));
	return fn;
}

sim_twin_fn sim_twin_find(const char *entry)
{
	char small[256], *sym = small;
	size_t len;
	sim_twin_fn fn = NULL;

	if (!entry || !*entry)
		return NULL;
	pthread_once(&twins.once, twins_load);
	len = strlen("sim_twin_") + strlen(entry) + 1;
	if (len > sizeof(small)) {
		sym = malloc(len);
		if (!sym)
			return NULL;
	}
	snprintf(sym, len, "sim_twin_%s", entry);
	for (unsigned int i = 0; i < twins.nplugins && !fn; i++)
		fn = lookup(twins.plugins[i], sym);
	if (!fn && twins.self)
		fn = lookup(twins.self, sym);
	if (sym != small)
		free(sym);
	return fn;
}

/* A cufold multi-instance variant E_cf_multi (rewrite/kernels/variant_table.h) runs as E's twin
 * per instance when E, in the same module, has one: the variant's PTX computes what E's does,
 * and a twin that is not bit-exact with the interpreter (tanhf, expf from the C library) would
 * otherwise make the fused launch differ from the launches it stands for. */
static struct sim_func *multi_base(struct sim_func *fn)
{
	const char *name = fn->entry->name;
	size_t n = strlen(name), sl = strlen(CF_VARIANT_SUFFIX);
	struct sim_func *base;
	char *e;

	if (n <= sl || strcmp(name + n - sl, CF_VARIANT_SUFFIX) || fn->entry->nparams != 1 ||
	    fn->entry->param_bytes != CF_VARIANT_TABLE_BYTES || !(e = strndup(name, n - sl)))
		return NULL;
	base = sim_module_find_func(fn->mod, e);
	free(e);
	return base && base != fn && sim_func_twin(base) ? base : NULL;
}

sim_twin_fn sim_func_twin(struct sim_func *fn)
{
	if (fn->twin_looked)
		return fn->twin;
	fn->twin_looked = true; /* before multi_base, which asks the base */
	fn->multi_base = multi_base(fn);
	if (fn->multi_base) {
		fn->twin = fn->multi_base->twin;
		return fn->twin;
	}
	fn->twin = sim_twin_find(fn->entry->name);
	/* No twin is no error: the PTX interpreter runs the kernel (launch.c). */
	fn->twin_looked = true;
	return fn->twin;
}
