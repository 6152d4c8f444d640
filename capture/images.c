/* images.c - the code of what the program loads: for every module and library, the PTX a
 * device of its compute capability would JIT from the image (driver/image.h), kept once per
 * distinct text, and which function and kernel handles came from it, so that a function record
 * (struct cap_func) knows its kernel's PTX. capture layer.
 *
 * Invariants:
 *  1. One struct image_rec per distinct PTX text (compared byte for byte in by_text); images
 *     with machine code only, or with nothing found, share the engine's two records `machine`
 *     and `none`, which are never freed. Record ids never repeat within an engine.
 *  2. A text record's refs count every entry of mods, libs, kernels and fns that points at it
 *     and every function record (cap_func.image) that does; at zero it is freed.
 *  3. Every kernels / fns entry remembers the module or library it came from (owner), so that
 *     unloading one forgets exactly its handles, which the driver may hand out again.
 *  4. Every entry of mods, libs, kernels and fns is in its owner's list (owners: one head per
 *     owner with entries; an empty list is freed), so that an unload visits its own entries
 *     only, not every handle bound (PyTorch unloads its 477 libraries at exit with 24 k kernel
 *     handles bound). A loaded module's or library's list holds its own entry, so binding a
 *     handle looked up from it never allocates a head; where a head cannot be made the bind
 *     fails and its entry goes, as when its map is full: no entry is ever outside the lists.
 *  5. Nothing here runs per launch: images are decoded when loaded, handles bound when looked
 *     up (cuModuleGetFunction, cuLibraryGetKernel, cuKernelGetFunction) and function records
 *     resolved once per new handle (funcs.c).
 *  6. A JIT link (links) keeps its PTX inputs until cuLinkDestroy; a module loaded from the
 *     link's output (by address) gets them as its PTX, whatever the output is (a cubin on a
 *     GPU, joined PTX on the software device). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/capture_int.h"
#include "common/compiler.h"
#include "common/errors.h"
#include "common/log.h"
#include "driver/image.h"
#include "driver/ptx.h"
#include "driver/ptx.h"

#define CAP_IMAGE_MACHINE_ID 1       /* ids of the shared records */
#define CAP_IMAGE_NONE_ID 2
#define OWNER_LIBRARY 1u             /* tag bit of a library owner (handles are aligned) */
/* The device's compute capability when the driver will not say: the newest PTX of an image is
 * taken (another architecture's PTX of the same source touches the same memory). */
#define UNKNOWN_ARCH 1000u

/* A distinct PTX text. */
struct image_rec {
	struct cap_image img;        /* what function records see */
	struct cf_table_link link;   /* in by_text, keyed by img.ptx */
};

/* A link of an owner's list, circular through its head: unlinking needs no lookup. */
struct owned_link {
	struct owned_link *next;     /* the next entry, or the head after the last */
	struct owned_link *prev;     /* the entry before, or the head before the first */
};

/* The head of an owner's list (invariant 4), the value of owners. */
struct owner_list {
	struct owned_link link;      /* first member: a link back to it is the head */
	uint64_t owner;              /* its key in owners */
};

/* A handle bound to the image it came from, in its owner's list. */
struct image_bind {
	struct owned_link link;      /* first member: in its owner's list */
	struct cap_image *img;       /* its image (one reference) */
	uint64_t owner;              /* the module, or the library | OWNER_LIBRARY, it belongs to */
	uint64_t handle;             /* its key in its map (which one: map_of) */
};

/* A JIT link in progress (cuLinkCreate .. cuLinkDestroy): its PTX inputs joined, as the
 * software device joins them (the headers of all but the first commented out), so that the
 * module loaded from its output, machine code on a GPU, has its PTX. */
struct link_rec {
	char *ptx;                   /* the joined PTX inputs, NUL-terminated; NULL before the first */
	size_t len;                  /* its bytes */
	const void *out;             /* cuLinkComplete's image, NULL before */
};

const char *cap_code_name(enum cap_code c)
{
	static const char *const names[] = { "unknown", "ptx", "machine_code", "none" };

	return (unsigned int)c < CF_ARRAY_SIZE(names) ? names[c] : "unknown";
}

void cap__images_init(struct cap_engine *ce)
{
	ce->images.machine.id = CAP_IMAGE_MACHINE_ID;
	ce->images.machine.code = CAP_CODE_MACHINE;
	ce->images.none.id = CAP_IMAGE_NONE_ID;
	ce->images.none.code = CAP_CODE_NONE;
	ce->images.next_id = CAP_IMAGE_NONE_ID + 1;
}

void cap__image_ref(struct cap_image *img)
{
	if (img && img->code == CAP_CODE_PTX) /* the shared records are never freed: not counted */
		img->refs++;
}

void cap__image_unref(struct cap_engine *ce, struct cap_image *img)
{
	struct image_rec *r;

	if (!img || img->code != CAP_CODE_PTX || --img->refs)
		return;
	r = CF_TABLE_ENTRY(img, struct image_rec, img);
	cf_table_del(&ce->images.by_text, &r->link);
	ce->images.texts--;
	ce->images.text_bytes -= img->ptx_len;
	free((char *)img->ptx);
	ptx_module_free(img->parsed);
	free(r);
}

/* The record of text (len bytes, malloc'ed: taken over), existing or new; NULL when out of
 * memory (text freed). */
static struct cap_image *text_image(struct cap_engine *ce, char *text, size_t len)
{
	struct image_rec *r = CF_TABLE_ENTRY(cf_table_find(&ce->images.by_text, text, len), struct image_rec, link);

	if (r) {
		free(text);
		return &r->img;
	}
	r = calloc(1, sizeof(*r));
	if (!r || cf_table_add(&ce->images.by_text, &r->link, text, len) != 0) {
		free(r);
		free(text);
		return NULL;
	}
	r->img.id = ce->images.next_id++;
	r->img.code = CAP_CODE_PTX;
	r->img.ptx = text;
	r->img.ptx_len = len;
	ce->images.texts++;
	ce->images.text_bytes += len;
	return &r->img;
}

/* Put b in its owner's list; false when the owner has none and no head can be made. */
static bool link_owned(struct cap_engine *ce, struct image_bind *b)
{
	struct owner_list *l = cf_map_get(&ce->images.owners, b->owner);

	if (!l) {
		l = malloc(sizeof(*l));
		if (!l || cf_map_put(&ce->images.owners, b->owner, l) != 0) {
			free(l);
			return false;
		}
		l->owner = b->owner;
		l->link.next = l->link.prev = &l->link;
	}
	b->link.next = l->link.next;
	b->link.prev = &l->link;
	l->link.next->prev = &b->link;
	l->link.next = &b->link;
	return true;
}

/* Take b out of its owner's list, and free the head when nothing is left in it. */
static void unlink_owned(struct cap_engine *ce, struct image_bind *b)
{
	struct owned_link *prev = b->link.prev, *next = b->link.next;

	prev->next = next;
	next->prev = prev;
	if (prev == next) { /* one link left: the head (struct owner_list starts with it) */
		struct owner_list *l = (struct owner_list *)(void *)prev;

		cf_map_del(&ce->images.owners, l->owner);
		free(l);
	}
	b->link.next = b->link.prev = NULL;
}

/* Bind handle (in map) to img and owner, replacing what it was bound to; false when out of
 * memory (handle then bound to nothing: never left to its old image or owner). */
static bool bind(struct cap_engine *ce, struct cf_map *map, const void *handle, struct cap_image *img,
		 uint64_t owner)
{
	uint64_t key = (uint64_t)(uintptr_t)handle;
	struct image_bind *b = cf_map_get(map, key);
	struct cap_image *old = NULL;

	if (!b) {
		b = malloc(sizeof(*b));
		if (!b || cf_map_put(map, key, b) != 0) {
			free(b);
			return false;
		}
		b->img = NULL;
		b->handle = key;
		b->owner = owner;
		if (!link_owned(ce, b))
			goto out_drop;
	} else if (b->owner != owner) {
		unlink_owned(ce, b);
		b->owner = owner;
		if (!link_owned(ce, b))
			goto out_drop;
	}
	old = b->img;
	cap__image_ref(img); /* before the old one goes: it may be the same record */
	b->img = img;
	cap__image_unref(ce, old);
	return true;
out_drop:
	cf_map_del(map, key);
	cap__image_unref(ce, b->img);
	free(b);
	return false;
}

static struct image_bind *bound(const struct cf_map *map, const void *handle)
{
	return handle ? cf_map_get(map, (uint64_t)(uintptr_t)handle) : NULL;
}

/* ------------------------------------------------------------------ loading */

/* The compute capability images are read for (major*10 + minor): the current context's device,
 * else device 0; asked once (a process's devices are of one kind in practice). */
static unsigned int device_arch(struct cap_engine *ce)
{
	CUdevice dev = 0;
	int major = 0, minor = 0;

	if (ce->images.device_arch)
		return ce->images.device_arch;
	if (!DRV_REAL(cuCtxGetDevice) || !DRV_REAL(cuDeviceGetAttribute))
		return UNKNOWN_ARCH;
	cap__own_call(ce, DRV_ID_cuCtxGetDevice);
	if (DRV_REAL(cuCtxGetDevice)(&dev) != CUDA_SUCCESS)
		dev = 0;
	cap__own_call(ce, DRV_ID_cuDeviceGetAttribute);
	cap__own_call(ce, DRV_ID_cuDeviceGetAttribute);
	if (DRV_REAL(cuDeviceGetAttribute)(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) != CUDA_SUCCESS ||
	    DRV_REAL(cuDeviceGetAttribute)(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) != CUDA_SUCCESS ||
	    major <= 0 || minor < 0)
		return UNKNOWN_ARCH; /* asked again at the next image */
	ce->images.device_arch = (unsigned int)(major * 10 + minor);
	return ce->images.device_arch;
}

/* The bytes of the file at path (as cuModuleLoad reads it), NULL when it cannot be read. */
static void *read_image_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	size_t got = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > IMG_MAX_PAYLOAD)
		goto out;
	buf = malloc((size_t)st.st_size);
	while (buf && got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

		if (n <= 0) {
			free(buf);
			buf = NULL;
			break;
		}
		got += (size_t)n;
	}
	*len = got;
out:
	close(fd);
	return buf;
}

/* The link whose output image is at image, when it had PTX inputs. */
static const struct link_rec *link_output(struct cap_engine *ce, const void *image)
{
	void *v;

	for (size_t i = 0; image && ce->images.links.n && cf_map_next(&ce->images.links, &i, NULL, &v);)
		if (((const struct link_rec *)v)->out == image && ((const struct link_rec *)v)->ptx)
			return v;
	return NULL;
}

/* The image record of an image (bytes, limit readable) or of the file at path. */
static struct cap_image *decode(struct cap_engine *ce, const void *image, const char *path)
{
	const struct link_rec *l = path ? NULL : link_output(ce, image);
	void *file = NULL;
	size_t limit = SIZE_MAX, len = 0;
	char *text = NULL, err[256] = "";
	bool mc = false;
	int rc = -CF_EINVAL;
	struct cap_image *img;

	if (l) { /* a JIT link's output: what it was linked from */
		text = malloc(l->len + 1);
		if (text) {
			memcpy(text, l->ptx, l->len + 1);
			len = l->len;
			rc = 0;
		}
	} else if (path) {
		file = read_image_file(path, &limit);
		image = file;
		if (!file)
			snprintf(err, sizeof(err), "cannot read %s", path);
	}
	if (image && !l)
		rc = img_ptx_text(image, limit, device_arch(ce), &text, &len, &mc, err, sizeof(err));
	if (rc != 0)
		cf_log_debug("image %p%s%s: no PTX: %s", image, path ? " from " : "", path ? path : "", err);
	free(file);
	if (rc == 0) {
		img = text_image(ce, text, len);
		if (img)
			return img;
		cf_log_warn_once("out of memory keeping a module's PTX: its kernels are treated as having none");
		return &ce->images.none;
	}
	return mc ? &ce->images.machine : &ce->images.none;
}

void cap_image_loaded(struct cap_engine *ce, bool library, const void *handle, const void *image, const char *path)
{
	struct cap_image *img;

	if (!handle || (!image && !path))
		return;
	img = decode(ce, image, path);
	ce->totals.images_loaded++;
	ce->totals.images_ptx += img->code == CAP_CODE_PTX;
	ce->totals.images_machine_code += img->code == CAP_CODE_MACHINE;
	ce->totals.images_no_code += img->code == CAP_CODE_NONE;
	cap__image_ref(img); /* held across bind, which may free a record it replaces */
	if (!bind(ce, library ? &ce->images.libs : &ce->images.mods, handle, img,
		  (uint64_t)(uintptr_t)handle | (library ? OWNER_LIBRARY : 0)))
		cf_log_warn_once("out of memory binding a module to its image: its kernels' PTX is not known");
	cap__image_unref(ce, img);
}

void cap_image_link(struct cap_engine *ce, enum cap_image_link kind, const void *handle, const void *from)
{
	struct image_bind *src;
	struct cf_map *map = kind == CAP_LINK_LIBRARY_KERNEL ? &ce->images.kernels :
			     kind == CAP_LINK_LIBRARY_MODULE ? &ce->images.mods : &ce->images.fns;

	switch (kind) {
	case CAP_LINK_MODULE_FUNCTION:
		src = bound(&ce->images.mods, from);
		break;
	case CAP_LINK_LIBRARY_KERNEL:
	case CAP_LINK_LIBRARY_MODULE:
		src = bound(&ce->images.libs, from);
		break;
	case CAP_LINK_KERNEL_FUNCTION:
	default:
		src = bound(&ce->images.kernels, from);
		break;
	}
	if (!src || !handle)
		return;
	/* a function or kernel belongs to what its source belongs to: a kernel's function goes
	 * when the kernel's library is unloaded */
	if (!bind(ce, map, handle, src->img, src->owner))
		cf_log_warn_once("out of memory binding a function to its image: its PTX is not known");
}

struct cap_image *cap__image_of(struct cap_engine *ce, CUfunction func, CUkernel kernel, CUmodule mod)
{
	struct image_bind *b = bound(&ce->images.fns, func);

	if (!b)
		b = bound(&ce->images.kernels, kernel);
	if (!b)
		b = bound(&ce->images.mods, mod);
	return b ? b->img : NULL;
}

/* ------------------------------------------------------------------ JIT links */

/* Whether the line at p starts (after blanks) with one of PTX's module headers. */
static bool header_line(const char *p, const char *end)
{
	static const char *const heads[] = { ".version", ".target", ".address_size" };

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	for (size_t i = 0; i < CF_ARRAY_SIZE(heads); i++)
		if ((size_t)(end - p) >= strlen(heads[i]) && !memcmp(p, heads[i], strlen(heads[i])))
			return true;
	return false;
}

/* Append n bytes of PTX to the link's text: after the first input, headers become comments
 * (one module has one .version). false when out of memory. */
static bool link_append(struct link_rec *l, const char *text, size_t n)
{
	size_t heads = 0, at;
	char *p;

	for (const char *q = text, *e; l->ptx && q < text + n; q = e + 1) {
		e = memchr(q, '\n', (size_t)(text + n - q));
		e = e ? e : text + n;
		heads += header_line(q, e);
	}
	p = realloc(l->ptx, l->len + 1 + n + 2 * heads + 1);
	if (!p)
		return false;
	at = l->len;
	if (l->ptx)
		p[at++] = '\n';
	for (const char *q = text, *e; q < text + n; q = e + 1) {
		e = memchr(q, '\n', (size_t)(text + n - q));
		e = e ? e : text + n;
		if (l->ptx && header_line(q, e)) {
			memcpy(p + at, "//", 2);
			at += 2;
		}
		memcpy(p + at, q, (size_t)(e - q));
		at += (size_t)(e - q);
		if (e < text + n)
			p[at++] = '\n';
	}
	p[at] = 0;
	l->ptx = p;
	l->len = at;
	return true;
}

static struct link_rec *link_get(struct cap_engine *ce, const void *state)
{
	struct link_rec *l = cf_map_get(&ce->images.links, (uint64_t)(uintptr_t)state);

	if (l || !state)
		return l;
	l = calloc(1, sizeof(*l));
	if (l && cf_map_put(&ce->images.links, (uint64_t)(uintptr_t)state, l) != 0) {
		free(l);
		l = NULL;
	}
	return l;
}

void cap_link_input(struct cap_engine *ce, CUlinkState state, CUjitInputType type, const void *data, size_t size,
		    const char *path)
{
	struct link_rec *l;
	void *file = NULL;
	size_t n = size;

	if (type != CU_JIT_INPUT_PTX)
		return; /* machine code, libraries, NVVM IR: no PTX to read (their kernels get none) */
	l = link_get(ce, state);
	if (l && path) {
		data = file = read_image_file(path, &n);
		size = n;
	}
	if (l && data && !link_append(l, data, strnlen(data, size)))
		cf_log_warn_once("out of memory keeping a JIT link's PTX: its kernels are treated as having none");
	free(file);
}

void cap_link_complete(struct cap_engine *ce, CUlinkState state, const void *out)
{
	struct link_rec *l = cf_map_get(&ce->images.links, (uint64_t)(uintptr_t)state);

	if (l)
		l->out = out;
}

void cap_link_destroy(struct cap_engine *ce, CUlinkState state)
{
	struct link_rec *l = state ? cf_map_del(&ce->images.links, (uint64_t)(uintptr_t)state) : NULL;

	if (l) {
		free(l->ptx);
		free(l);
	}
}

/* ------------------------------------------------------------------ unloading */

/* The map b is in, found by identity: one handle value may be a key of several maps. Not kept
 * in b: 40 bytes a bind, not 48 (a malloc chunk of 48, not 64, times PyTorch's 24 k kernels). */
static struct cf_map *map_of(struct cap_engine *ce, const struct image_bind *b)
{
	struct cf_map *const maps[] = { &ce->images.kernels, &ce->images.fns, &ce->images.mods, &ce->images.libs };

	for (size_t i = 0; i < CF_ARRAY_SIZE(maps); i++)
		if (cf_map_get(maps[i], b->handle) == b)
			return maps[i];
	return NULL;
}

/* Drop every entry of owner's list, in whichever map: its own entry (a module's in mods, a
 * library's in libs), and the functions, kernels and library module looked up from it. */
static void drop_owned(struct cap_engine *ce, uint64_t owner)
{
	struct owner_list *l = cf_map_del(&ce->images.owners, owner);
	struct owned_link *e, *next;

	if (!l)
		return;
	for (e = l->link.next; e != &l->link; e = next) {
		struct image_bind *b = (struct image_bind *)(void *)e; /* link: its first member */
		struct cf_map *map = map_of(ce, b);

		next = e->next;
		ce->images.forget_visits++;
		if (CF_NEVER(!map))
			continue; /* in no map: an entry leaves its map only with its list; leaked */
		cf_map_del(map, b->handle);
		cap__image_unref(ce, b->img);
		free(b);
	}
	free(l);
}

static void drop_one(struct cap_engine *ce, struct cf_map *map, const void *handle)
{
	struct image_bind *b = handle ? cf_map_del(map, (uint64_t)(uintptr_t)handle) : NULL;

	if (b) {
		unlink_owned(ce, b);
		cap__image_unref(ce, b->img);
		free(b);
	}
}

void cap__images_forget(struct cap_engine *ce, CUmodule mod, CUlibrary lib)
{
	if (!mod && !lib)
		return;
	drop_owned(ce, mod ? (uint64_t)(uintptr_t)mod : (uint64_t)(uintptr_t)lib | OWNER_LIBRARY);
	/* its own entry is in that list unless the handle was bound as another's: a library's
	 * module (cuLibraryGetModule) unloaded as a module goes alone */
	drop_one(ce, mod ? &ce->images.mods : &ce->images.libs, mod ? (const void *)mod : (const void *)lib);
}

static void drop_map(struct cap_engine *ce, struct cf_map *map)
{
	void *v;

	for (size_t i = 0; cf_map_next(map, &i, NULL, &v);) {
		unlink_owned(ce, v); /* owners only: map is not changed inside the loop */
		cap__image_unref(ce, ((struct image_bind *)v)->img);
		free(v);
	}
	cf_map_fini(map);
}

void cap__images_drop_handles(struct cap_engine *ce)
{
	drop_map(ce, &ce->images.fns);
	drop_map(ce, &ce->images.kernels);
}

void cap__images_fini(struct cap_engine *ce)
{
	struct cf_table_link *l, *next;
	void *v;

	drop_map(ce, &ce->images.fns);
	drop_map(ce, &ce->images.kernels);
	drop_map(ce, &ce->images.mods);
	drop_map(ce, &ce->images.libs);
	cf_assert(ce->images.owners.n == 0); /* every entry was in a list */
	cf_map_fini(&ce->images.owners);
	for (size_t i = 0; cf_map_next(&ce->images.links, &i, NULL, &v);) {
		free(((struct link_rec *)v)->ptx);
		free(v);
	}
	cf_map_fini(&ce->images.links);
	/* the texts function records held (funcs.c frees its records first, without unref) */
	for (l = ce->images.by_text.head; l; l = next) {
		struct image_rec *r = CF_TABLE_ENTRY(l, struct image_rec, link);

		next = cf_table_next(l);
		free((char *)r->img.ptx);
		free(r);
	}
	cf_table_fini(&ce->images.by_text);
	ce->images.texts = 0;
	ce->images.text_bytes = 0;
}

size_t cap__images_bytes(struct cap_engine *ce)
{
	const struct cf_map *maps[] = { &ce->images.mods, &ce->images.libs, &ce->images.kernels, &ce->images.fns };
	size_t n = ce->images.text_bytes + ce->images.texts * sizeof(struct image_rec) +
		   cf_table_bytes(&ce->images.by_text);

	void *v;

	for (size_t i = 0; i < CF_ARRAY_SIZE(maps); i++)
		n += maps[i]->n * sizeof(struct image_bind) + cf_map_bytes(maps[i]);
	n += ce->images.owners.n * sizeof(struct owner_list) + cf_map_bytes(&ce->images.owners);
	for (size_t i = 0; cf_map_next(&ce->images.links, &i, NULL, &v);)
		n += sizeof(struct link_rec) + ((struct link_rec *)v)->len;
	return n + cf_map_bytes(&ce->images.links);
}

/* ------------------------------------------------------------------ what function records see */

const struct ptx_module *cap_func_module(const struct cap_func *f, char *err, size_t errlen)
{
	struct cap_image *img = f ? f->image : NULL;
	struct ptx_module *m, *expected = NULL;
	char why[160];

	if (!img || img->code != CAP_CODE_PTX) {
		if (errlen)
			snprintf(err, errlen, "no PTX");
		return NULL;
	}
	m = __atomic_load_n((struct ptx_module **)&img->parsed, __ATOMIC_ACQUIRE);
	if (m)
		return m;
	m = ptx_parse(img->ptx, img->ptx_len, why, sizeof(why));
	if (!m) {
		if (errlen)
			snprintf(err, errlen, "%s", why);
		return NULL; /* not kept: a text that does not parse is asked rarely (once per kernel) */
	}
	if (!__atomic_compare_exchange_n((struct ptx_module **)&img->parsed, &expected, m, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		ptx_module_free(m); /* another build parsed it first */
		return expected;
	}
	return m;
}

const char *cap_func_ptx(const struct cap_func *f, size_t *len)
{
	const struct cap_image *img = f ? f->image : NULL;

	if (!img || img->code != CAP_CODE_PTX) {
		if (len)
			*len = 0;
		return NULL;
	}
	if (len)
		*len = img->ptx_len;
	return img->ptx;
}

enum cap_code cap_func_code(const struct cap_func *f)
{
	return f && f->image ? f->image->code : CAP_CODE_UNKNOWN;
}
