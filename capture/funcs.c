/* funcs.c - the cache of kernel functions (name and parameter layout from the driver, asked once
 * per function handle) and of CUkernel handles, and the kernel-name globs. capture layer.
 *
 * A launch may name a CUfunction or a CUkernel cast to one, and the two cannot be told apart by
 * value: capture learns CUkernel handles from cuLibraryGetKernel and cuLibraryEnumerateKernels
 * (and keeps them: a stale one that a later CUfunction happens to reuse fails to resolve, which
 * makes that launch a boundary, never a wrong record); those resolve to the per-context function
 * with cuKernelGetFunction in the current context. Parameter layouts come from
 * cuFuncGetParamInfo (cuKernelGetParamInfo for a CUkernel), asked for index 0, 1, ... until it
 * answers CUDA_ERROR_INVALID_VALUE.
 *
 * A record (struct cap_func) stands for a kernel by what it is, not by its handle: one record
 * per (name, layout, code: the PTX text it was loaded from, images.c), so a module unloaded and
 * loaded again gives its kernels' new handles the records (and key ids) they had, two kernels
 * of one name and layout but different code (NVRTC recompiling) are two, and records are
 * bounded by the distinct kernels a program has. Handles are bindings: by_func maps each handle to its record and remembers the handle's
 * module (cuFuncGetModule, asked once), so unloading a module forgets exactly that module's
 * handles (the driver may reuse them) and no others. Records are never freed before
 * cap_engine_destroy (ops of stored windows point at them). by_sig finds a record by its (name, layout, image id), written out
 * as bytes and compared exactly (a common/table.h table: asked once per new handle, not per
 * launch); the per-launch lookups by handle stay in cf_maps. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture_int.h"
#include "common/compiler.h"
#include "common/errors.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/table.h"

#define PARAM_INFO_MAX 8192 /* more parameters than any kernel can take */

struct kernel_fn {
	CUkernel kernel;             /* the library's kernel */
	CUcontext ctx;               /* context it was resolved in */
	CUfunction func;             /* cuKernelGetFunction's answer */
};

/* A record with what by_sig needs: f is what the rest of cufold sees. */
struct func_rec {
	struct cap_func f;           /* the record */
	struct cf_table_link link;   /* in by_sig */
	unsigned char *sig;          /* the key: name, NUL, layout_known, offsets, sizes (owned) */
	size_t sig_len;              /* bytes of sig */
};

/* One function handle the program launched. */
struct func_bind {
	struct cap_func *f;          /* the kernel's record */
	CUmodule mod;                /* the handle's module (NULL when the driver would not say) */
};

static const char kernel_marker; /* the value of every entry of kernels */

bool cap__name_matches(const char *patterns, const char *name)
{
	char pat[256];
	const char *p = patterns;

	if (!patterns || !name)
		return false;
	while (*p) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);

		if (n && n < sizeof(pat)) {
			memcpy(pat, p, n);
			pat[n] = 0;
			if (fnmatch(pat, name, 0) == 0)
				return true;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	return false;
}

void cap__plan_params(struct cap_func *f)
{
	uint32_t *q, j = 0;

	f->by_size = NULL;
	f->nwide = 0;
	f->packed = false;
	for (uint32_t i = 0; i < f->nparams; i++)
		if (f->size[i] != 8 && f->size[i] != 4)
			return;
	if (!f->nparams || !(q = malloc(2 * f->nparams * sizeof(*q))))
		return;
	for (uint32_t want = 8; want >= 4; want -= 4) {
		for (uint32_t i = 0; i < f->nparams; i++)
			if (f->size[i] == want) {
				q[j++] = i;
				q[j++] = f->offset[i];
			}
		if (want == 8)
			f->nwide = j / 2;
	}
	f->by_size = q;
	f->packed = true;
	for (uint32_t k = 0; k < f->nparams; k++)
		if (q[2 * k] != k || q[2 * k + 1] != (k < f->nwide ? 8 * k : 4 * f->nwide + 4 * k))
			f->packed = false;
}

/* The parameter layout of func (of kernel, when the launch named a CUkernel). named: the
 * driver knew the function's name; without it, a refusal at index 0 may mean a bad handle
 * rather than no parameters. */
static void layout(struct cap_engine *ce, struct cap_func *f, CUfunction func, CUkernel kernel, bool named)
{
	uint32_t cap = 0, n = 0, end = 0;
	uint32_t *off = NULL, *size = NULL;

	for (;;) {
		size_t o = 0, s = 0;
		CUresult rc;

		if (n >= PARAM_INFO_MAX)
			goto out_unknown;
		if (kernel) {
			cap__own_call(ce, DRV_ID_cuKernelGetParamInfo);
			rc = DRV_REAL(cuKernelGetParamInfo)(kernel, n, &o, &s);
		} else {
			cap__own_call(ce, DRV_ID_cuFuncGetParamInfo);
			rc = DRV_REAL(cuFuncGetParamInfo)(func, n, &o, &s);
		}
		if (rc == CUDA_ERROR_INVALID_VALUE && (n > 0 || named))
			break;
		if (rc != CUDA_SUCCESS || o + s > CAP_MAX_PARAM_BYTES)
			goto out_unknown;
		if (n == cap) {
			uint32_t ncap = cap ? 2 * cap : 8;
			uint32_t *no = realloc(off, ncap * sizeof(*no)), *ns;

			if (!no)
				goto out_unknown;
			off = no;
			ns = realloc(size, ncap * sizeof(*ns));
			if (!ns)
				goto out_unknown;
			size = ns;
			cap = ncap;
		}
		off[n] = (uint32_t)o;
		size[n] = (uint32_t)s;
		if (o + s > end)
			end = (uint32_t)(o + s);
		n++;
	}
	f->nparams = n;
	f->param_bytes = end;
	f->offset = off;
	f->size = size;
	f->dense = true;
	for (uint32_t i = 0, at = 0; i < n; at = off[i] + size[i], i++)
		if (off[i] != at)
			f->dense = false;
	cap__plan_params(f);
	f->layout_known = true;
	return;
out_unknown:
	free(off);
	free(size);
	f->offset = f->size = f->by_size = NULL;
	f->nwide = 0;
	f->packed = false;
	f->nparams = f->param_bytes = 0;
	f->dense = false;
	f->layout_known = false;
}

/* r's key: the bytes of (name, layout, image); 0, or -CF_ENOMEM. The name's NUL ends it, so
 * the rest (one byte, 4 * nparams, 4 * nparams, then the image's id: 8 bytes, 0 when unknown)
 * cannot run into it. */
static int sig_make(struct func_rec *r)
{
	const struct cap_func *f = &r->f;
	size_t name_len = strlen(f->name) + 1, pbytes = f->nparams * sizeof(uint32_t);
	uint64_t image = f->image ? f->image->id : 0;
	unsigned char *p = malloc(name_len + 1 + 2 * pbytes + sizeof(image));

	if (!p)
		return -CF_ENOMEM;
	r->sig = p;
	r->sig_len = name_len + 1 + 2 * pbytes + sizeof(image);
	memcpy(p, f->name, name_len);
	p += name_len;
	*p++ = f->layout_known;
	if (pbytes) {
		memcpy(p, f->offset, pbytes);
		memcpy(p + pbytes, f->size, pbytes);
	}
	memcpy(p + 2 * pbytes, &image, sizeof(image));
	return 0;
}

static void func_free(struct cap_func *f)
{
	struct func_rec *r = CF_TABLE_ENTRY(f, struct func_rec, f);

	free((char *)f->name);
	free(f->offset);
	free(f->size);
	free(f->by_size);
	free(r->sig);
	free(r);
}

/* The record of a kernel with func's name and layout, loaded from img: an existing one, or a
 * new one. */
static struct cap_func *func_record(struct cap_engine *ce, CUfunction func, CUkernel kernel, struct cap_image *img)
{
	struct func_rec *r = calloc(1, sizeof(*r)), *known;
	struct cap_func *f;
	const char *name = NULL;
	bool named;

	if (!r)
		return NULL;
	f = &r->f;
	f->func = func;
	f->image = img;
	cap__own_call(ce, DRV_ID_cuFuncGetName);
	named = DRV_REAL(cuFuncGetName)(&name, func) == CUDA_SUCCESS && name;
	f->name = strdup(named ? name : "?");
	if (!f->name) {
		free(r);
		return NULL;
	}
	layout(ce, f, func, kernel, named);
	if (sig_make(r) != 0) {
		func_free(f);
		return NULL;
	}
	known = CF_TABLE_ENTRY(cf_table_find(&ce->funcs.by_sig, r->sig, r->sig_len), struct func_rec, link);
	if (known) {
		func_free(f);
		return &known->f;
	}
	if (cf_table_add(&ce->funcs.by_sig, &r->link, r->sig, r->sig_len) != 0) {
		func_free(f);
		return NULL;
	}
	f->id = ce->funcs.next_id++;
	cap__image_ref(f->image); /* the record's, never dropped: records live until the end */
	f->barrier = cap__name_matches(ce->cfg.barrier_kernels, f->name);
	f->next = ce->funcs.all;
	ce->funcs.all = f;
	ce->funcs.nbytes += sizeof(*r) + strlen(f->name) + 1 + 2 * f->nparams * sizeof(uint32_t) + r->sig_len;
	return f;
}

/* Bind a new handle to its record. */
static struct cap_func *func_bind_new(struct cap_engine *ce, CUfunction func, CUkernel kernel)
{
	struct func_bind *b = malloc(sizeof(*b));

	if (!b)
		return NULL;
	b->mod = NULL;
	if (DRV_REAL(cuFuncGetModule)) {
		cap__own_call(ce, DRV_ID_cuFuncGetModule);
		if (DRV_REAL(cuFuncGetModule)(&b->mod, func) != CUDA_SUCCESS)
			b->mod = NULL;
	}
	b->f = func_record(ce, func, kernel, cap__image_of(ce, func, kernel, b->mod));
	if (!b->f)
		goto out_free;
	if (cf_map_put(&ce->funcs.by_func, (uint64_t)(uintptr_t)func, b) != 0)
		goto out_free;
	ce->funcs.nbytes += sizeof(*b);
	return b->f;
out_free:
	free(b);
	return NULL;
}

/* A binding or kernel resolution is about to change or go: no remembered lookup may answer. */
static void hits_clear(struct cap_engine *ce)
{
	memset(ce->funcs.hits, 0, sizeof(ce->funcs.hits));
	ce->funcs.gen++;
}

static struct cap_func *func_lookup(struct cap_engine *ce, CUfunction handle, CUcontext ctx, CUfunction *func);

/* A launch names a function the last few launches named, mostly: the lookup's answer is
 * remembered per (handle, context), exactly, and forgotten whenever a binding or resolution
 * changes (hits_clear); two map probes an op cost sixty instructions (issue 22). */
struct cap_func *cap__func_get(struct cap_engine *ce, CUfunction handle, CUcontext ctx, CUfunction *func)
{
	uintptr_t u = (uintptr_t)handle;
	struct cap_func_hit *hit = &ce->funcs.hits[((u >> 4) ^ (u >> 10) ^ (u >> 16)) & (CAP_FUNC_CACHE - 1)];
	CUfunction fn = NULL;

	if (cf_likely(hit->f && hit->handle == handle && hit->ctx == ctx)) {
		if (func)
			*func = hit->fn;
		return hit->f;
	}
	hit->f = func_lookup(ce, handle, ctx, &fn);
	hit->handle = handle;
	hit->ctx = ctx;
	hit->fn = fn;
	if (hit->f && func)
		*func = fn;
	return hit->f;
}

static __attribute__((noinline)) struct cap_func *func_lookup(struct cap_engine *ce, CUfunction handle,
							      CUcontext ctx, CUfunction *func)
{
	CUfunction fn = handle;
	struct cap_func *f;

	if (cf_unlikely(ce->funcs.kernels.n) && cf_map_get(&ce->funcs.kernels, (uint64_t)(uintptr_t)handle)) {
		uint64_t k = cf_hash_combine((uint64_t)(uintptr_t)handle, (uint64_t)(uintptr_t)ctx);
		struct kernel_fn *kf = cf_map_get(&ce->funcs.kernel_fns, k);

		if (!kf || kf->kernel != (CUkernel)handle || kf->ctx != ctx) {
			CUfunction resolved = NULL;

			cap__own_call(ce, DRV_ID_cuKernelGetFunction);
			if (DRV_REAL(cuKernelGetFunction)(&resolved, (CUkernel)handle) != CUDA_SUCCESS || !resolved)
				return NULL;
			if (!kf) {
				kf = malloc(sizeof(*kf));
				if (!kf)
					return NULL;
				if (cf_map_put(&ce->funcs.kernel_fns, k, kf) != 0) {
					free(kf);
					return NULL;
				}
				ce->funcs.nbytes += sizeof(*kf);
			}
			kf->kernel = (CUkernel)handle;
			kf->ctx = ctx;
			kf->func = resolved;
		}
		fn = kf->func;
	}
	{
		struct func_bind *b = cf_map_get(&ce->funcs.by_func, (uint64_t)(uintptr_t)fn);

		f = b ? b->f : func_bind_new(ce, fn, fn != handle ? (CUkernel)handle : NULL);
	}
	if (f && func)
		*func = fn;
	return f;
}

bool cap_kernel_handle_add(struct cap_engine *ce, CUkernel k)
{
	/* known already: nothing resolves otherwise. The CUDA runtime asks cuLibraryGetKernel before
	 * launches (PyTorch: 4 a launch), and clearing the lookups' answers each time sent every
	 * launch to the long lookup and kept capture's kernel lane from trusting its predicted op's
	 * function record (funcs.gen, record.c: repeat_kernel) */
	if (!k || cf_map_get(&ce->funcs.kernels, (uint64_t)(uintptr_t)k))
		return false;
	hits_clear(ce); /* the handle now resolves as a CUkernel */
	cf_map_put(&ce->funcs.kernels, (uint64_t)(uintptr_t)k, (void *)&kernel_marker);
	return true;
}

static void drop_kernel_fns(struct cap_engine *ce)
{
	void *v;

	hits_clear(ce);
	for (size_t i = 0; cf_map_next(&ce->funcs.kernel_fns, &i, NULL, &v);)
		free(v);
	cf_map_fini(&ce->funcs.kernel_fns);
}

static void drop_bindings(struct cap_engine *ce)
{
	void *v;

	hits_clear(ce);
	for (size_t i = 0; cf_map_next(&ce->funcs.by_func, &i, NULL, &v);)
		free(v);
	cf_map_fini(&ce->funcs.by_func);
}

/* Whether a binding belongs to mod (an unknown module counts: it may). */
static bool bind_in(const struct func_bind *b, CUmodule mod)
{
	return !b || !b->mod || b->mod == mod;
}

/* Forget the handles of mod only; false when out of memory (nothing forgotten). */
static bool forget_module(struct cap_engine *ce, CUmodule mod)
{
	uint64_t *keys = NULL, k;
	size_t n = 0, cap = 0;
	void *v;
	bool ok = false;

	hits_clear(ce);
	/* first the kernels resolved to the module's functions, while their bindings say so */
	for (int pass = 0; pass < 2; pass++) {
		struct cf_map *m = pass == 0 ? &ce->funcs.kernel_fns : &ce->funcs.by_func;

		n = 0;
		for (size_t i = 0; cf_map_next(m, &i, &k, &v);) {
			const struct func_bind *b =
				pass == 0 ? cf_map_get(&ce->funcs.by_func,
						       (uint64_t)(uintptr_t)((struct kernel_fn *)v)->func)
					  : v;

			if (!bind_in(b, mod))
				continue;
			if (n == cap) {
				size_t ncap = cap ? 2 * cap : 16;
				uint64_t *nk = realloc(keys, ncap * sizeof(*nk));

				if (!nk)
					goto out;
				keys = nk;
				cap = ncap;
			}
			keys[n++] = k;
		}
		for (size_t i = 0; i < n; i++) {
			v = cf_map_del(m, keys[i]);
			ce->funcs.nbytes -= pass == 0 ? sizeof(struct kernel_fn) : sizeof(struct func_bind);
			free(v);
		}
	}
	ok = true;
out:
	free(keys);
	return ok;
}

static __thread CUmodule unload_mod;  /* cap_funcs_unloading: the module the thread unloads */
static __thread CUlibrary unload_lib; /* or the library */
static __thread bool unload_known;    /* one of them is set */

void cap_funcs_unloading(CUmodule mod, CUlibrary lib)
{
	unload_mod = mod;
	unload_lib = lib;
	unload_known = mod || lib;
}

void cap_funcs_forget_module(struct cap_engine *ce, CUmodule mod, CUlibrary lib)
{
	cap__images_forget(ce, lib ? NULL : mod, lib);
	if (lib) {
		mod = NULL;
		cap__own_call(ce, DRV_ID_cuLibraryGetModule);
		if (!DRV_REAL(cuLibraryGetModule) || DRV_REAL(cuLibraryGetModule)(&mod, lib) != CUDA_SUCCESS)
			mod = NULL;
	}
	if (mod && forget_module(ce, mod))
		return;
	/* which handles went is not known: forget them all */
	drop_bindings(ce);
	drop_kernel_fns(ce);
}

void cap_funcs_forget(struct cap_engine *ce)
{
	CUmodule mod = unload_mod;
	CUlibrary lib = unload_lib;
	bool known = unload_known;

	cap_funcs_unloading(NULL, NULL);
	if (known) {
		cap_funcs_forget_module(ce, mod, lib);
		return;
	}
	drop_bindings(ce);
	drop_kernel_fns(ce);
	cap__images_drop_handles(ce);
}

bool cap_window_uses_unloading(struct cap_engine *ce)
{
	const struct cap_window *w = ce->cur;
	CUmodule mod = unload_mod;

	if (!unload_known)
		return true;
	if (unload_lib) {
		mod = NULL;
		cap__own_call(ce, DRV_ID_cuLibraryGetModule);
		if (!DRV_REAL(cuLibraryGetModule) || DRV_REAL(cuLibraryGetModule)(&mod, unload_lib) != CUDA_SUCCESS)
			return true;
	}
	for (uint32_t i = 0; w && i < w->nops; i++) {
		const struct cap_op *op = &w->ops[i];

		if (op->kind == CAP_OP_KERNEL &&
		    bind_in(cf_map_get(&ce->funcs.by_func, (uint64_t)(uintptr_t)op->u.kernel.func), mod))
			return true;
	}
	return false;
}

const struct cap_func *cap_funcs_all(struct cap_engine *ce)
{
	return ce->funcs.all;
}

struct cap_func *cap__funcs_all(struct cap_engine *ce)
{
	return ce->funcs.all;
}

void cap__funcs_fini(struct cap_engine *ce)
{
	struct cap_func *f, *next;

	drop_bindings(ce);
	drop_kernel_fns(ce);
	cf_map_fini(&ce->funcs.kernels);
	cf_table_fini(&ce->funcs.by_sig);
	for (f = ce->funcs.all; f; f = next) {
		next = f->next;
		func_free(f);
	}
	ce->funcs.all = NULL;
	ce->funcs.next_id = 1;
	ce->funcs.nbytes = 0;
}

size_t cap__funcs_bytes(struct cap_engine *ce)
{
	return ce->funcs.nbytes + cf_map_bytes(&ce->funcs.by_func) + cf_table_bytes(&ce->funcs.by_sig) +
	       cf_map_bytes(&ce->funcs.kernels) + cf_map_bytes(&ce->funcs.kernel_fns);
}
