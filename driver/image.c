/* image.c - the one decoder of the images a program hands the driver (image.h says the
 * layouts). driver layer; libc and dlopen only. Used by cufold's capture (the PTX of what a
 * program loads) and by the software device (tests/simcuda/fatbin.c), which is why nothing here
 * logs: callers get a reason in err and say it their way. */
#include "driver/image.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"

#define FB_MAGIC 0xba55ed50u         /* fatbin header */
#define FB_WRAPPER_MAGIC 0x466243b1u /* __fatBinC_Wrapper_t */
#define FB_ENTRY_HDR 0x40u           /* the fields read from an entry header */
#define EIFMT_NVAL 1                 /* nv.info attribute formats */
#define EIFMT_HVAL 3
#define EIFMT_SVAL 4
#define EIATTR_KPARAM_INFO 0x17
#define EIATTR_CBANK_PARAM_SIZE 0x19
#define ELF_HDR 64u                  /* an ELF64 header's bytes */
#define SHT_SYMTAB 2
#define SHT_NOBITS 8

static uint16_t rd16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static void say(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ forms */

/* Whether the text at p (limit bytes, or up to a NUL) starts with `.version` once comments and
 * blanks are skipped: every PTX module does, and nothing else we meet does. */
static bool looks_like_ptx(const unsigned char *p, size_t limit)
{
	size_t i = 0;

	while (i < limit && p[i]) {
		if (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r') {
			i++;
		} else if (p[i] == '/' && i + 1 < limit && p[i + 1] == '/') {
			while (i < limit && p[i] && p[i] != '\n')
				i++;
		} else if (p[i] == '/' && i + 1 < limit && p[i + 1] == '*') {
			for (i += 2; i < limit && p[i] && !(p[i] == '*' && i + 1 < limit && p[i + 1] == '/');)
				i++;
			if (i >= limit || !p[i])
				return false;
			i += 2;
		} else {
			break;
		}
	}
	for (size_t k = 0; k < 8; k++)
		if (i + k >= limit || p[i + k] != (unsigned char)".version"[k])
			return false;
	return true;
}

/* Whether the image starts with the 4 bytes of magic, compared byte by byte so that a shorter
 * NUL-terminated text is never read past its end. */
static bool has_magic(const unsigned char *p, size_t limit, uint32_t magic)
{
	for (unsigned int k = 0; k < 4; k++)
		if (k >= limit || p[k] != (unsigned char)(magic >> (8 * k)))
			return false;
	return true;
}

enum img_form img_form_of(const void *image, size_t limit)
{
	const unsigned char *p = image;

	if (!p || limit == 0)
		return IMG_FORM_UNKNOWN;
	/* By the magic alone: a truncated image of a form is that form, and is refused as such. */
	if (has_magic(p, limit, FB_WRAPPER_MAGIC))
		return IMG_FORM_WRAPPER;
	if (has_magic(p, limit, FB_MAGIC))
		return IMG_FORM_FATBIN;
	if (has_magic(p, limit, 0x464c457fu)) /* \x7fELF */
		return IMG_FORM_ELF;
	return looks_like_ptx(p, limit) ? IMG_FORM_PTX : IMG_FORM_UNKNOWN;
}

const char *img_form_name(enum img_form form)
{
	static const char *const names[] = { "unknown", "ptx", "fatbin", "wrapper", "elf" };

	return (unsigned int)form < sizeof(names) / sizeof(names[0]) ? names[form] : "unknown";
}

const void *img_unwrap(const void *image, size_t *limit)
{
	const unsigned char *fb;

	if (img_form_of(image, *limit) != IMG_FORM_WRAPPER)
		return image;
	if (*limit < 16)
		return NULL;
	memcpy(&fb, (const unsigned char *)image + 8, sizeof(fb));
	if (!fb || !has_magic(fb, 4, FB_MAGIC))
		return NULL;
	*limit = SIZE_MAX;
	return fb;
}

size_t img_fatbin_span(const void *fatbin, size_t limit)
{
	const unsigned char *fb = fatbin;
	size_t hdr, total;

	if (!fb || limit < 16 || rd32(fb) != FB_MAGIC)
		return 0;
	hdr = rd16(fb + 6);
	total = (size_t)rd64(fb + 8);
	if (hdr < 16 || total > IMG_MAX_PAYLOAD || (limit != SIZE_MAX && (hdr > limit || total > limit - hdr)))
		return 0;
	return hdr + total;
}

int img_fatbin_walk(const void *fatbin, size_t limit, int (*visit)(const struct img_entry *e, void *arg),
		    void *arg)
{
	const unsigned char *fb = fatbin;
	size_t span = img_fatbin_span(fatbin, limit), at;
	int rc = -CF_EINVAL;

	if (!span)
		goto out;
	for (at = rd16(fb + 6); span - at >= FB_ENTRY_HDR;) {
		const unsigned char *p = fb + at;
		struct img_entry e;
		size_t ehdr = rd32(p + 4);
		uint64_t stored = rd64(p + 8);

		if (ehdr < FB_ENTRY_HDR || ehdr > span - at || stored > span - at - ehdr)
			goto out;
		e.kind = rd16(p);
		e.arch = rd32(p + 0x1c);
		e.flags = rd64(p + 0x28);
		e.payload = p + ehdr;
		e.payload_len = (size_t)stored;
		e.plain_len = (size_t)stored;
		if (e.flags & (IMG_FLAG_LZ4 | IMG_FLAG_ZSTD)) {
			e.payload_len = rd32(p + 0x10);
			e.plain_len = (size_t)rd64(p + 0x38);
			if (e.payload_len > stored)
				goto out;
		}
		rc = visit(&e, arg);
		if (rc)
			goto out;
		at += ehdr + (size_t)stored;
	}
	rc = 0;
out:
	return rc;
}

bool img_sm_runs(unsigned int arch, unsigned int device_arch)
{
	return arch / 10 == device_arch / 10 && arch <= device_arch;
}

bool img_entry_usable(const struct img_entry *e, unsigned int device_arch)
{
	if (e->flags & IMG_FLAG_ARCH_SPECIFIC)
		return e->arch == device_arch;
	if (e->kind == IMG_KIND_ELF || (e->flags & IMG_FLAG_FAMILY))
		return img_sm_runs(e->arch, device_arch);
	return e->arch <= device_arch; /* PTX JITs forward */
}

/* ------------------------------------------------------------------ decompression */

long img_lz4_block_decode(const unsigned char *in, size_t inlen, unsigned char *out, size_t outcap)
{
	size_t ip = 0, op = 0;
	long rc = -1;

	while (ip < inlen) {
		unsigned int token = in[ip++];
		size_t lit = token >> 4, match, off;

		if (lit == 15) {
			unsigned int b;

			do {
				if (ip >= inlen)
					goto out;
				b = in[ip++];
				lit += b;
			} while (b == 255);
		}
		if (lit > inlen - ip || lit > outcap - op)
			goto out;
		memcpy(out + op, in + ip, lit);
		ip += lit;
		op += lit;
		if (ip == inlen)
			break; /* the last sequence has literals only */
		if (inlen - ip < 2)
			goto out;
		off = in[ip] | (size_t)in[ip + 1] << 8;
		ip += 2;
		match = (token & 15) + 4;
		if ((token & 15) == 15) {
			unsigned int b;

			do {
				if (ip >= inlen)
					goto out;
				b = in[ip++];
				match += b;
			} while (b == 255);
		}
		if (off == 0 || off > op || match > outcap - op)
			goto out;
		/* Byte by byte: a match may overlap the bytes it produces (off < match). */
		for (size_t i = 0; i < match; i++, op++)
			out[op] = out[op - off];
	}
	rc = (long)op;
out:
	return rc;
}

typedef size_t (*zstd_decompress_fn)(void *dst, size_t cap, const void *src, size_t len);
typedef unsigned int (*zstd_is_error_fn)(size_t code);

/* libzstd, opened once per process at the first zstd entry: any thread may decode an image. */
static pthread_once_t zstd_once = PTHREAD_ONCE_INIT;
static zstd_decompress_fn zstd_decompress;
static zstd_is_error_fn zstd_is_error;

static void zstd_load(void)
{
	void *lib = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return;
	*(void **)&zstd_decompress = dlsym(lib, "ZSTD_decompress");
	*(void **)&zstd_is_error = dlsym(lib, "ZSTD_isError");
	if (!zstd_decompress || !zstd_is_error) {
		zstd_decompress = NULL;
		dlclose(lib);
	}
}

static bool zstd_there(void)
{
	pthread_once(&zstd_once, zstd_load);
	return zstd_decompress != NULL;
}

bool img_entry_decodable(const struct img_entry *e)
{
	return !(e->flags & IMG_FLAG_ZSTD) || (e->flags & IMG_FLAG_LZ4) || zstd_there();
}

/* Decompress (or copy) the entry's payload into buf (e->plain_len bytes): the bytes written. */
static int entry_decode(const struct img_entry *e, unsigned char *buf, size_t *n, char *err, size_t errlen)
{
	size_t got;

	if (e->flags & IMG_FLAG_LZ4) {
		long l = img_lz4_block_decode(e->payload, e->payload_len, buf, e->plain_len);

		if (l < 0) {
			say(err, errlen, "LZ4-compressed fatbin entry is malformed");
			return -CF_EINVAL;
		}
		got = (size_t)l;
	} else if (e->flags & IMG_FLAG_ZSTD) {
		if (!zstd_there()) {
			say(err, errlen, "fatbin entry is zstd-compressed and libzstd.so.1 is not installed "
			    "(install it, or build with nvcc --compress-mode=none)");
			return -CF_ENOSYS;
		}
		got = zstd_decompress(buf, e->plain_len, e->payload, e->payload_len);
		if (zstd_is_error(got)) {
			say(err, errlen, "zstd-compressed fatbin entry is malformed");
			return -CF_EINVAL;
		}
	} else {
		memcpy(buf, e->payload, e->plain_len);
		got = e->plain_len;
	}
	*n = got;
	return 0;
}

int img_entry_bytes(const struct img_entry *e, char **out, size_t *len, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t n = 0;
	int rc;

	*out = NULL;
	if (e->plain_len > IMG_MAX_PAYLOAD) {
		say(err, errlen, "fatbin entry claims %zu bytes", e->plain_len);
		rc = -CF_EINVAL;
		goto out;
	}
	buf = malloc(e->plain_len + 1);
	if (!buf) {
		say(err, errlen, "out of memory");
		rc = -CF_ENOMEM;
		goto out;
	}
	rc = entry_decode(e, buf, &n, err, errlen);
	if (rc < 0)
		goto out;
	buf[n] = 0;
	*out = (char *)buf;
	*len = n;
	buf = NULL;
out:
	free(buf);
	return rc;
}

/* ------------------------------------------------------------------ surveying a fatbin */

struct survey_walk {
	struct img_survey *s;
	unsigned int device_arch;
	bool want_names;
};

static void survey_arch(struct img_survey *s, const struct img_entry *e)
{
	size_t used = strlen(s->archs);

	snprintf(s->archs + used, sizeof(s->archs) - used, "%s%s_%u%s", used ? " " : "",
		 e->kind == IMG_KIND_PTX ? "compute" : e->kind == IMG_KIND_ELF ? "sm" : "other", e->arch,
		 e->flags & IMG_FLAG_ARCH_SPECIFIC ? "a" : e->flags & IMG_FLAG_FAMILY ? "f" : "");
}

static int survey_visit(const struct img_entry *e, void *arg)
{
	struct survey_walk *w = arg;
	struct img_survey *s = w->s;
	bool ok = img_entry_decodable(e);

	s->entries++;
	s->undecodable += !ok;
	survey_arch(s, e);
	if (e->kind == IMG_KIND_PTX) {
		s->ptx_entries++;
		/* The newest PTX the device can JIT, as the driver chooses. */
		if (e->arch > w->device_arch) {
			if (!s->too_new_arch || e->arch < s->too_new_arch)
				s->too_new_arch = e->arch;
		} else if (!img_entry_usable(e, w->device_arch)) {
			s->ptx_other_arch = true;
		} else if (!ok) {
			s->ptx_no_decoder = true;
		} else if (!s->have_ptx || e->arch > s->ptx.arch) {
			s->ptx = *e;
			s->have_ptx = true;
		}
	} else if (e->kind == IMG_KIND_ELF) {
		s->elf_entries++;
		if (ok && img_entry_usable(e, w->device_arch) && (!s->have_elf || e->arch > s->elf.arch)) {
			s->elf = *e;
			s->have_elf = true;
		}
		if (ok && (!s->have_newest_elf || e->arch > s->newest_elf.arch)) {
			s->newest_elf = *e;
			s->have_newest_elf = true;
		}
		if (w->want_names) {
			char *elf = NULL;
			size_t n;

			if (img_entry_bytes(e, &elf, &n, s->err, sizeof(s->err)) == 0)
				img_elf_kernels(elf, n, s->kernels, sizeof(s->kernels));
			free(elf);
		}
	}
	return 0;
}

int img_survey(const void *fatbin, size_t limit, unsigned int device_arch, bool want_names,
	       struct img_survey *out)
{
	struct survey_walk w = { out, device_arch, want_names };

	memset(out, 0, sizeof(*out));
	return img_fatbin_walk(fatbin, limit, survey_visit, &w) < 0 ? -CF_EINVAL : 0;
}

/* ------------------------------------------------------------------ the PTX to JIT */

/* A copy of PTX text given as such (up to a NUL or limit). */
static int ptx_copy(const char *p, size_t limit, char **text, size_t *len, char *err, size_t errlen)
{
	size_t n = strnlen(p, limit);

	*text = malloc(n + 1);
	if (!*text) {
		say(err, errlen, "out of memory");
		return -CF_ENOMEM;
	}
	memcpy(*text, p, n);
	(*text)[n] = 0;
	*len = n;
	return 0;
}

/* Why a surveyed fatbin gives no PTX (the result) and what it holds (err). */
static int no_ptx(const struct img_survey *s, unsigned int device_arch, char *err, size_t errlen)
{
	if (!s->entries) {
		say(err, errlen, "fatbin holds no code at all");
		return -CF_ENOENT;
	}
	if (s->ptx_no_decoder) {
		say(err, errlen, "fatbin's PTX is zstd-compressed and libzstd.so.1 is not installed (entries: %s)",
		    s->archs);
		return -CF_ENOSYS;
	}
	if (s->too_new_arch)
		say(err, errlen, "fatbin's PTX is for compute_%u, newer than the device's %u.%u (entries: %s)",
		    s->too_new_arch, device_arch / 10, device_arch % 10, s->archs);
	else if (s->ptx_other_arch)
		say(err, errlen, "fatbin's PTX is specific to another architecture than the device's %u.%u "
		    "(entries: %s)", device_arch / 10, device_arch % 10, s->archs);
	else
		say(err, errlen, "fatbin holds machine code only (%s)", s->archs);
	return -CF_ENOENT;
}

int img_ptx_text(const void *image, size_t limit, unsigned int device_arch, char **text, size_t *len,
		 bool *mc_only, char *err, size_t errlen)
{
	const void *fb;
	struct img_survey *s = NULL;
	enum img_form form = img_form_of(image, limit);
	int rc;

	*text = NULL;
	*len = 0;
	*mc_only = false;
	switch (form) {
	case IMG_FORM_PTX:
		return ptx_copy(image, limit, text, len, err, errlen);
	case IMG_FORM_ELF:
		*mc_only = true;
		say(err, errlen, "image is an ELF cubin for sm_%u and holds no PTX", img_elf_arch(image, limit));
		return -CF_ENOENT;
	case IMG_FORM_UNKNOWN:
		say(err, errlen, "not an image (no PTX text, fatbin, wrapper or ELF at the address)");
		return -CF_EINVAL;
	case IMG_FORM_FATBIN:
	case IMG_FORM_WRAPPER:
		break;
	}
	fb = img_unwrap(image, &limit);
	s = malloc(sizeof(*s));
	if (!s) {
		say(err, errlen, "out of memory");
		return -CF_ENOMEM;
	}
	if (!fb || img_survey(fb, limit, device_arch, false, s) < 0) {
		say(err, errlen, fb ? "fatbin is truncated or malformed" : "fatbin wrapper does not point at a fatbin");
		rc = -CF_EINVAL;
	} else if (s->have_ptx) {
		rc = img_entry_bytes(&s->ptx, text, len, err, errlen);
		if (rc == 0)
			*len = strnlen(*text, *len); /* a stored entry is padded with NULs */
	} else {
		*mc_only = s->elf_entries > 0;
		rc = no_ptx(s, device_arch, err, errlen);
	}
	free(s);
	return rc;
}

/* ------------------------------------------------------------------ ELF: headers */

/* An ELF64's section table, checked against the bytes at hand. */
struct elf_view {
	const unsigned char *p;
	size_t len;
	uint64_t shoff;
	unsigned int shentsize, shnum;
	const unsigned char *shstr;  /* the section name table */
	uint64_t shstrsize;
};

static bool elf_open(const void *elf, size_t len, struct elf_view *v)
{
	const unsigned char *p = elf;
	unsigned int shstrndx;
	uint64_t off, size;
	const unsigned char *sh;

	if (len < ELF_HDR || !has_magic(p, len, 0x464c457fu) || p[4] != 2) /* 64-bit only, as nvcc */
		return false;
	v->p = p;
	v->len = len;
	v->shoff = rd64(p + 0x28);
	v->shentsize = rd16(p + 0x3a);
	v->shnum = rd16(p + 0x3c);
	shstrndx = rd16(p + 0x3e);
	if (v->shentsize < 64 || shstrndx >= v->shnum || v->shoff > len ||
	    (uint64_t)v->shnum * v->shentsize > len - v->shoff)
		return false;
	sh = p + v->shoff + (size_t)shstrndx * v->shentsize;
	off = rd64(sh + 0x18);
	size = rd64(sh + 0x20);
	if (off > len || size > len - off)
		return false;
	v->shstr = p + off;
	v->shstrsize = size;
	return true;
}

static const unsigned char *elf_section(const struct elf_view *v, unsigned int i)
{
	return v->p + v->shoff + (size_t)i * v->shentsize;
}

/* The section's name, NULL when it is not a NUL-terminated string of the name table. */
static const char *elf_section_name(const struct elf_view *v, const unsigned char *sh)
{
	uint32_t nm = rd32(sh);

	if (nm >= v->shstrsize || !memchr(v->shstr + nm, 0, v->shstrsize - nm))
		return NULL;
	return (const char *)v->shstr + nm;
}

/* The section's bytes, false when they lie outside the image (SHT_NOBITS has none). */
static bool elf_section_bytes(const struct elf_view *v, const unsigned char *sh, const unsigned char **at,
			      size_t *n)
{
	uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20);

	if (off > v->len || size > v->len - off)
		return false;
	*at = v->p + off;
	*n = (size_t)size;
	return true;
}

unsigned int img_elf_arch(const void *elf, size_t len)
{
	const unsigned char *p = elf;
	uint32_t f;

	if (len < ELF_HDR)
		return 0;
	f = rd32(p + 0x30);
	return p[8] >= 8 ? (f >> 8) & 0xff : f & 0xff;
}

size_t img_elf_span(const void *elf, size_t limit)
{
	const unsigned char *p = elf;
	uint64_t shoff, phoff, end;
	unsigned int shentsize, shnum, phentsize, phnum;

	if (limit < ELF_HDR || !has_magic(p, limit, 0x464c457fu) || p[4] != 2)
		return 0;
	phoff = rd64(p + 0x20);
	shoff = rd64(p + 0x28);
	phentsize = rd16(p + 0x36);
	phnum = rd16(p + 0x38);
	shentsize = rd16(p + 0x3a);
	shnum = rd16(p + 0x3c);
	if (shentsize < 64 || shoff > IMG_MAX_PAYLOAD || phoff > IMG_MAX_PAYLOAD)
		return 0;
	end = shoff + (uint64_t)shnum * shentsize;
	if (phoff + (uint64_t)phnum * phentsize > end)
		end = phoff + (uint64_t)phnum * phentsize;
	if (end > limit)
		return 0;
	/* The section table is read: the sections' own bytes may lie past it. */
	for (unsigned int i = 0; i < shnum; i++) {
		const unsigned char *sh = p + shoff + (size_t)i * shentsize;
		uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20);

		if (rd32(sh + 4) == SHT_NOBITS)
			continue;
		if (off > IMG_MAX_PAYLOAD || size > IMG_MAX_PAYLOAD)
			return 0;
		if (off + size > end)
			end = off + size;
	}
	return end > limit ? 0 : (size_t)end;
}

/* Whether name is one of the space-separated words of names. */
static bool name_listed(const char *names, const char *name)
{
	size_t n = strlen(name);
	bool found = false;

	for (const char *w = names; *w && !found; w += strcspn(w, " "), w += *w == ' ')
		found = strncmp(w, name, n) == 0 && (w[n] == ' ' || w[n] == 0);
	return found;
}

void img_elf_kernels(const void *elf, size_t len, char *names, size_t cap)
{
	struct elf_view v;

	if (!cap || !elf_open(elf, len, &v))
		return;
	for (unsigned int i = 0; i < v.shnum; i++) {
		const char *s = elf_section_name(&v, elf_section(&v, i));
		size_t used = strlen(names);

		if (!s || strncmp(s, ".text.", 6) || !s[6] || name_listed(names, s + 6))
			continue;
		snprintf(names + used, cap - used, "%s%s", used ? " " : "", s + 6);
	}
}

/* ------------------------------------------------------------------ ELF: kernels' parameters */

/* One nv.info record at sec + *at (n bytes): its attribute, format and value; false at a
 * malformed record. *at moves past it. */
static bool nvinfo_next(const unsigned char *sec, size_t n, size_t *at, unsigned int *attr, unsigned int *fmt,
			const unsigned char **val, size_t *vlen)
{
	size_t i = *at;

	*fmt = sec[i];
	*attr = sec[i + 1];
	*vlen = 2; /* every record is 4-byte aligned: a byte value is padded */
	if (*fmt == EIFMT_SVAL) {
		if (n - i < 4)
			return false;
		*vlen = rd16(sec + i + 2);
		i += 2;
	} else if (*fmt < EIFMT_NVAL || *fmt > EIFMT_SVAL) {
		return false;
	}
	i += 2;
	if (*vlen > n - i)
		return false;
	*val = sec + i;
	*at = i + *vlen;
	return true;
}

/* Fill a parameter from its EIATTR_KPARAM_INFO value v. */
static void kparam_fill(struct img_param *pi, const unsigned char *v)
{
	size_t size = (rd32(v + 8) >> 18) & 0x3fff, align = 16;

	pi->offset = rd16(v + 6);
	pi->size = size;
	/* Not recorded in the ELF: the largest power of two up to 16 that divides the offset and
	 * does not exceed the size (only a launch's `extra` padding uses it). */
	while (align > 1 && (pi->offset % align || align > size))
		align /= 2;
	pi->align = align;
}

/* One kernel's parameters from its .nv.info.<kernel> section (sec, n bytes) into k. */
static int kernel_params(const unsigned char *sec, size_t n, struct img_kernel *k)
{
	size_t cbank_size = 0, end = 0;
	unsigned int nparams = 0;

	/* Two passes: count the parameters (the highest ordinal), then fill them in. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t at = 0; n - at >= 2;) {
			unsigned int fmt, attr;
			const unsigned char *v;
			struct img_param *pi;
			size_t vlen;

			if (!nvinfo_next(sec, n, &at, &attr, &fmt, &v, &vlen))
				return -CF_EINVAL;
			if (attr == EIATTR_CBANK_PARAM_SIZE && fmt == EIFMT_HVAL)
				cbank_size = rd16(v);
			if (attr != EIATTR_KPARAM_INFO || fmt != EIFMT_SVAL || vlen < 12)
				continue;
			if (pass == 0) {
				if (rd16(v + 4) >= nparams)
					nparams = rd16(v + 4) + 1u;
				continue;
			}
			pi = &k->params[rd16(v + 4)]; /* below nparams: counted in pass 0 */
			kparam_fill(pi, v);
			if (pi->offset + pi->size > end)
				end = pi->offset + pi->size;
		}
		if (pass == 0 && nparams) {
			k->params = calloc(nparams, sizeof(*k->params));
			if (!k->params)
				return -CF_ENOMEM;
			k->nparams = nparams;
		}
	}
	k->param_bytes = cbank_size > end ? cbank_size : end;
	return 0;
}

/* ------------------------------------------------------------------ ELF: variables */

/* The symbol table and its string table; false when there is none usable. */
static bool elf_symtab(const struct elf_view *v, const unsigned char **syms, size_t *symsize,
		       const unsigned char **str, size_t *strsize)
{
	for (unsigned int i = 0; i < v->shnum; i++) {
		const unsigned char *sh = elf_section(v, i);
		unsigned int link = rd32(sh + 0x28);

		if (rd32(sh + 4) != SHT_SYMTAB)
			continue;
		return link < v->shnum && elf_section_bytes(v, sh, syms, symsize) &&
		       elf_section_bytes(v, elf_section(v, link), str, strsize);
	}
	return false;
}

static int global_add(struct img_mcode *out, unsigned int *cap, const char *name, size_t size,
		      const unsigned char *init)
{
	struct img_global *g;

	if (out->nglobals == *cap) {
		unsigned int ncap = *cap ? *cap * 2 : 8;
		struct img_global *ng = realloc(out->globals, ncap * sizeof(*ng));

		if (!ng)
			return -CF_ENOMEM;
		out->globals = ng;
		*cap = ncap;
	}
	g = &out->globals[out->nglobals];
	memset(g, 0, sizeof(*g));
	g->name = strdup(name);
	if (!g->name)
		return -CF_ENOMEM;
	g->size = size;
	out->nglobals++;
	if (init) {
		g->init = malloc(size);
		if (!g->init)
			return -CF_ENOMEM;
		memcpy(g->init, init, size);
	}
	return 0;
}

/* The variables of an ELF cubin (__device__ and __constant__): objects of its symbol table in
 * .nv.global (zeros), .nv.global.init or .nv.constantN (initial bytes) sections. A malformed
 * symbol is skipped; only running out of memory fails. */
static int elf_globals(const struct elf_view *v, struct img_mcode *out)
{
	const unsigned char *syms, *str;
	size_t symsize, strsize;
	unsigned int cap = 0;
	int rc = 0;

	if (!elf_symtab(v, &syms, &symsize, &str, &strsize))
		return 0; /* no usable symbol table: no variables */
	for (size_t at = 0; symsize - at >= 24 && rc == 0; at += 24) {
		const unsigned char *sym = syms + at, *sec, *bytes = NULL;
		uint32_t nm = rd32(sym);
		unsigned int shndx = rd16(sym + 6);
		uint64_t value = rd64(sym + 8), size = rd64(sym + 16);
		const char *secname;
		size_t secsize;

		if ((sym[4] & 0xf) != 1 || size == 0 || size > IMG_MAX_PAYLOAD || shndx == 0 || shndx >= v->shnum ||
		    nm >= strsize || !memchr(str + nm, 0, strsize - nm))
			continue; /* not a variable (STT_OBJECT) in a section */
		sec = elf_section(v, shndx);
		secname = elf_section_name(v, sec);
		if (!secname || (strncmp(secname, ".nv.global", 10) && strncmp(secname, ".nv.constant", 12)) ||
		    !strncmp(secname, ".nv.constant0", 13))
			continue; /* constant bank 0 holds kernel parameters, not variables */
		if (rd32(sec + 4) != SHT_NOBITS && elf_section_bytes(v, sec, &bytes, &secsize) &&
		    (value > secsize || size > secsize - value))
			bytes = NULL; /* initial bytes outside their section: zeros */
		rc = global_add(out, &cap, (const char *)str + nm, (size_t)size, bytes ? bytes + value : NULL);
	}
	return rc;
}

/* ------------------------------------------------------------------ ELF: the whole cubin */

static int kernel_add(struct img_mcode *out, unsigned int *cap, const char *name, struct img_kernel **k)
{
	if (out->nkernels == *cap) {
		unsigned int ncap = *cap ? *cap * 2 : 16;
		struct img_kernel *nk = realloc(out->kernels, ncap * sizeof(*nk));

		if (!nk)
			return -CF_ENOMEM;
		out->kernels = nk;
		*cap = ncap;
	}
	*k = &out->kernels[out->nkernels];
	memset(*k, 0, sizeof(**k));
	(*k)->name = strdup(name);
	if (!(*k)->name)
		return -CF_ENOMEM;
	out->nkernels++;
	return 0;
}

int img_elf_read(const void *elf, size_t len, struct img_mcode *out, char *err, size_t errlen)
{
	struct elf_view v;
	unsigned int cap = 0;
	int rc = -CF_EINVAL;

	memset(out, 0, sizeof(*out));
	if (!elf_open(elf, len, &v)) {
		say(err, errlen, len >= 5 && has_magic(elf, len, 0x464c457fu) && ((const unsigned char *)elf)[4] == 2 ?
		    "machine code is a truncated or malformed ELF" : "machine code is not a 64-bit ELF");
		goto out;
	}
	for (unsigned int i = 0; i < v.shnum; i++) {
		const unsigned char *sh = elf_section(&v, i), *sec;
		const char *s = elf_section_name(&v, sh);
		struct img_kernel *k;
		size_t n;

		if (!s || strncmp(s, ".nv.info.", 9) || !s[9])
			continue;
		if (!elf_section_bytes(&v, sh, &sec, &n)) {
			say(err, errlen, "machine code is a truncated or malformed ELF");
			goto out_fail;
		}
		rc = kernel_add(out, &cap, s + 9, &k);
		if (rc == 0)
			rc = kernel_params(sec, n, k);
		if (rc == -CF_EINVAL)
			say(err, errlen, "machine code's parameter metadata of %s is malformed", k->name);
		if (rc < 0)
			goto out_fail;
	}
	rc = elf_globals(&v, out);
	if (rc < 0)
		goto out_fail;
	out->arch = img_elf_arch(elf, len);
	goto out;
out_fail:
	if (rc == -CF_ENOMEM)
		say(err, errlen, "out of memory");
	img_mcode_free(out);
out:
	return rc;
}

void img_mcode_free(struct img_mcode *m)
{
	for (unsigned int i = 0; i < m->nkernels; i++) {
		free(m->kernels[i].name);
		free(m->kernels[i].params);
	}
	free(m->kernels);
	for (unsigned int i = 0; i < m->nglobals; i++) {
		free(m->globals[i].name);
		free(m->globals[i].init);
	}
	free(m->globals);
	memset(m, 0, sizeof(*m));
}
