/* fatbin.c - the software device's reader of binary images: nvcc's fat binaries, the wrappers
 * the runtime registers, and ELF cubins, reduced to the PTX text inside. tests/simcuda layer.
 *
 * The device runs kernels as host twins and reads only entry names and parameter layouts, which
 * PTX carries; machine code (SASS in an ELF cubin) is of no use to it. So an image is accepted
 * when it is PTX text or holds a PTX entry, and refused otherwise with the kernels and the
 * architectures it holds (the program's author then knows to add `compute_XX` to -gencode).
 *
 * Layout, as this machine's nvcc 13 writes it (little-endian; learnt by dumping `nvcc -fatbin`
 * with every --compress-mode; public fatbin readers agree):
 *
 *   wrapper (what __cudaRegisterFatBinary gets): u32 magic 0x466243b1, u32 version,
 *           u64 pointer to a fatbin, u64 pointer (file name or linked fatbins; unused here)
 *   fatbin:  u32 magic 0xba55ed50, u16 version, u16 header bytes, u64 bytes of entries after it
 *   entry:   u16 kind (1 PTX, 2 ELF), u16 version, u32 header bytes, u64 payload bytes (padded),
 *           u32 compressed bytes at 0x10, u32 version at 0x18, u32 sm arch at 0x1c (90 for
 *           sm_90/compute_90), u64 flags at 0x28, u64 uncompressed bytes at 0x38;
 *           the payload follows the entry header, the next entry follows the payload.
 *   flags:   0x1 64-bit, 0x10 Linux, 0x2000 LZ4-compressed payload (--compress-mode=speed),
 *           0x8000 zstd-compressed payload (the default, size and balance modes).
 *
 * LZ4 blocks are decoded here (the format is short and public); zstd through the system's
 * libzstd.so.1, opened on first need, since no header is installed to build against. Without it
 * a zstd entry is refused with a message saying how to build an uncompressed image.
 *
 * Machine-code mode (SIMCUDA_MACHINE_CODE=noop, core.c): an image without usable PTX loads from
 * its machine code for the device's architecture (an ELF for sm_9x, x <= the device's minor, as
 * the driver's binary compatibility rule says), whose kernels are the sections .nv.info.<kernel>
 * and whose parameter layouts are their EIATTR_KPARAM_INFO attributes. nv.info is a list of
 * attributes: u8 format (1 no value, 2 one byte, 3 two bytes, 4 u16 size then that many bytes),
 * u8 attribute, value, where a record without a size takes 4 bytes whatever its format (a byte
 * value is padded: seen in cuBLAS's and PyTorch's images). EIATTR_KPARAM_INFO (0x17, 12 bytes):
 * u32 index, u16 ordinal, u16 offset, u32 flags with the size in bits 18..31;
 * EIATTR_CBANK_PARAM_SIZE (0x19, 2 bytes): the bytes of all parameters (checked against
 * `nvcc -cubin` output for char, double, pointer, a 16-aligned struct, int, a 3-byte struct,
 * short, and an 800-byte struct). */
#include "sim_module_int.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FB_MAGIC 0xba55ed50u         /* fatbin header */
#define FB_WRAPPER_MAGIC 0x466243b1u /* __fatBinC_Wrapper_t */
#define FB_KIND_PTX 1
#define FB_KIND_ELF 2
#define FB_FLAG_LZ4 0x2000u
#define FB_FLAG_ZSTD 0x8000u
#define FB_MAX_PAYLOAD (256u << 20)  /* a garbage guard on sizes read from an image */
#define EIFMT_NVAL 1                 /* nv.info attribute formats */
#define EIFMT_HVAL 3
#define EIFMT_SVAL 4
#define EIATTR_KPARAM_INFO 0x17
#define EIATTR_CBANK_PARAM_SIZE 0x19

struct fb_entry {
	unsigned int kind;           /* FB_KIND_* */
	unsigned int arch;           /* sm / compute number, e.g. 90 */
	unsigned long long flags;    /* FB_FLAG_* and others */
	const unsigned char *payload; /* its bytes in the image */
	size_t payload_len;          /* stored bytes (compressed size when compressed) */
	size_t plain_len;            /* bytes once decompressed (payload_len when stored plain) */
};

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static uint16_t rd16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* Decode one LZ4 block (token, literals, 16-bit offset, match) into out. Returns the bytes
 * written, or -1 when the block is malformed or does not fit. */
static long lz4_block_decode(const unsigned char *in, size_t inlen, unsigned char *out, size_t outcap)
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

/* libzstd's two functions, opened once; false when the library is not installed. */
static bool zstd_open(zstd_decompress_fn *dec, zstd_is_error_fn *is_err)
{
	static void *lib;
	static bool tried;
	static zstd_decompress_fn d;
	static zstd_is_error_fn e;

	/* Called under the device lock (every entry point holds it), so no race on the statics. */
	if (!tried) {
		tried = true;
		lib = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
		if (lib) {
			*(void **)&d = dlsym(lib, "ZSTD_decompress");
			*(void **)&e = dlsym(lib, "ZSTD_isError");
		}
	}
	*dec = d;
	*is_err = e;
	return d && e;
}

/* The entry's payload, decompressed, NUL-terminated, in a new buffer (*out, freed by the
 * caller; *len its length without the NUL). */
static CUresult entry_bytes(const struct fb_entry *e, char **out, size_t *len, char *err, size_t errlen)
{
	unsigned char *buf = NULL;
	size_t n = e->plain_len;
	CUresult rc = CUDA_ERROR_INVALID_IMAGE;

	if (n > FB_MAX_PAYLOAD) {
		snprintf(err, errlen, "fatbin entry claims %zu bytes", n);
		goto out_free;
	}
	buf = malloc(n + 1);
	if (!buf) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		snprintf(err, errlen, "out of memory");
		goto out_free;
	}
	if (e->flags & FB_FLAG_LZ4) {
		long got = lz4_block_decode(e->payload, e->payload_len, buf, n);

		if (got < 0) {
			snprintf(err, errlen, "LZ4-compressed fatbin entry is malformed");
			goto out_free;
		}
		n = (size_t)got;
	} else if (e->flags & FB_FLAG_ZSTD) {
		zstd_decompress_fn dec;
		zstd_is_error_fn is_err;
		size_t got;

		if (!zstd_open(&dec, &is_err)) {
			rc = CUDA_ERROR_NOT_SUPPORTED;
			snprintf(err, errlen, "fatbin entry is zstd-compressed and libzstd.so.1 is not installed "
				 "(install it, or build with nvcc --compress-mode=none)");
			goto out_free;
		}
		got = dec(buf, n, e->payload, e->payload_len);
		if (is_err(got)) {
			snprintf(err, errlen, "zstd-compressed fatbin entry is malformed");
			goto out_free;
		}
		n = got;
	} else {
		memcpy(buf, e->payload, n);
	}
	buf[n] = 0;
	*out = (char *)buf;
	*len = n;
	buf = NULL;
	rc = CUDA_SUCCESS;
out_free:
	free(buf);
	return rc;
}

/* Walk the entries of a fatbin at `fb` (limit: bytes readable there, SIZE_MAX when the caller
 * does not know, as for a pointer from cuModuleLoadData). Calls visit for each; stops at the
 * first nonzero return, which it returns. */
static int fatbin_walk(const unsigned char *fb, size_t limit,
		       int (*visit)(const struct fb_entry *e, void *arg), void *arg)
{
	size_t hdr, total, at;
	int rc = -1;

	if (limit < 16)
		goto out;
	hdr = rd16(fb + 6);
	total = (size_t)rd64(fb + 8);
	if (hdr < 16 || total > FB_MAX_PAYLOAD || (limit != SIZE_MAX && (hdr > limit || total > limit - hdr)))
		goto out;
	for (at = hdr; at + 0x40 <= hdr + total;) {
		const unsigned char *p = fb + at;
		struct fb_entry e;
		size_t ehdr = rd32(p + 4);
		uint64_t stored = rd64(p + 8);

		if (ehdr < 0x40 || stored > total || ehdr + stored > hdr + total - at)
			goto out;
		e.kind = rd16(p);
		e.arch = rd32(p + 0x1c);
		e.flags = rd64(p + 0x28);
		e.payload = p + ehdr;
		e.payload_len = stored;
		e.plain_len = stored;
		if (e.flags & (FB_FLAG_LZ4 | FB_FLAG_ZSTD)) {
			e.payload_len = rd32(p + 0x10);
			e.plain_len = (size_t)rd64(p + 0x38);
			if (e.payload_len > stored)
				goto out;
		}
		rc = visit(&e, arg);
		if (rc)
			goto out;
		at += ehdr + stored;
	}
	rc = 0;
out:
	return rc;
}

/* ------------------------------------------------------------------ ELF: kernel names */

/* Whether name is one of the space-separated words of names. */
static bool name_listed(const char *names, const char *name)
{
	size_t n = strlen(name);
	bool found = false;

	for (const char *w = names; *w && !found; w += strcspn(w, " "), w += *w == ' ')
		found = strncmp(w, name, n) == 0 && (w[n] == ' ' || w[n] == 0);
	return found;
}

/* Append the kernels of an ELF cubin (the sections named .text.<kernel>) to names, once each
 * (a fatbin holds the same kernels for several architectures). */
static void elf_kernels(const unsigned char *elf, size_t len, char *names, size_t cap)
{
	uint64_t shoff, stroff, strsize;
	unsigned int shentsize, shnum, shstrndx;
	const unsigned char *strsh;

	if (len < 64 || elf[4] != 2) /* 64-bit ELF only, as nvcc writes */
		goto out;
	shoff = rd64(elf + 0x28);
	shentsize = rd16(elf + 0x3a);
	shnum = rd16(elf + 0x3c);
	shstrndx = rd16(elf + 0x3e);
	if (shentsize < 64 || shstrndx >= shnum || shoff > len || (uint64_t)shnum * shentsize > len - shoff)
		goto out;
	strsh = elf + shoff + (size_t)shstrndx * shentsize;
	stroff = rd64(strsh + 0x18);
	strsize = rd64(strsh + 0x20);
	if (stroff > len || strsize > len - stroff)
		goto out;
	for (unsigned int i = 0; i < shnum; i++) {
		uint32_t nm = rd32(elf + shoff + (size_t)i * shentsize);
		const char *s = (const char *)elf + stroff + nm;
		size_t used = strlen(names);

		if (nm >= strsize || !memchr(s, 0, strsize - nm) || strncmp(s, ".text.", 6) ||
		    name_listed(names, s + 6))
			continue;
		snprintf(names + used, cap - used, "%s%s", used ? " " : "", s + 6);
	}
out:
	return;
}

/* The architecture an ELF cubin is for: e_flags holds it in bits 8..15 from the CUDA ELF ABI
 * version 8 (nvcc 12.x and later), in bits 0..7 before. */
static unsigned int elf_arch(const unsigned char *elf)
{
	uint32_t f = rd32(elf + 0x30);

	return elf[8] >= 8 ? (f >> 8) & 0xff : f & 0xff;
}

/* ------------------------------------------------------------------ ELF: parameter metadata */

/* One kernel's parameters from its .nv.info.<kernel> section (sec, n bytes) into e. */
static CUresult elf_kernel_params(const unsigned char *sec, size_t n, struct sim_ptx_entry *e)
{
	size_t at = 0, cbank_size = 0, end = 0;
	unsigned int nparams = 0;
	CUresult rc = CUDA_ERROR_INVALID_IMAGE;

	/* Two passes: count the parameters (the highest ordinal), then fill them in. */
	for (int pass = 0; pass < 2; pass++) {
		for (at = 0; at + 2 <= n;) {
			unsigned int fmt = sec[at], attr = sec[at + 1];
			size_t vlen = 2; /* every record is 4-byte aligned: a byte value is padded */
			const unsigned char *v;

			if (fmt == EIFMT_SVAL) {
				if (at + 4 > n)
					goto out;
				vlen = rd16(sec + at + 2);
				at += 2;
			} else if (fmt < EIFMT_NVAL || fmt > EIFMT_SVAL) {
				goto out;
			}
			at += 2;
			if (vlen > n - at)
				goto out;
			v = sec + at;
			at += vlen;
			if (attr == EIATTR_CBANK_PARAM_SIZE && fmt == EIFMT_HVAL)
				cbank_size = rd16(v);
			if (attr != EIATTR_KPARAM_INFO || fmt != EIFMT_SVAL || vlen < 12)
				continue;
			if (pass == 0) {
				if (rd16(v + 4) >= nparams)
					nparams = rd16(v + 4) + 1u;
			} else {
				struct sim_param_info *pi = &e->params[rd16(v + 4)];
				size_t size = (rd32(v + 8) >> 18) & 0x3fff, align = 16;

				pi->offset = rd16(v + 6);
				pi->size = size;
				/* Not recorded in the ELF: the largest power of two up to 16 that divides
				 * the offset and does not exceed the size (only extra's padding uses it). */
				while (align > 1 && (pi->offset % align || align > size))
					align /= 2;
				pi->align = align;
				if (pi->offset + size > end)
					end = pi->offset + size;
			}
		}
		if (pass == 0 && nparams) {
			e->params = calloc(nparams, sizeof(*e->params));
			if (!e->params) {
				rc = CUDA_ERROR_OUT_OF_MEMORY;
				goto out;
			}
			e->nparams = nparams;
		}
	}
	e->param_bytes = cbank_size > end ? cbank_size : end;
	rc = CUDA_SUCCESS;
out:
	return rc;
}

/* The variables of an ELF cubin (__device__ and __constant__): objects of its symbol table in
 * .nv.global (zeros), .nv.global.init or .nv.constantN (initial bytes) sections. A malformed
 * symbol is skipped; only running out of memory fails. */
static CUresult elf_globals(const unsigned char *elf, size_t len, uint64_t shoff, unsigned int shentsize,
			    unsigned int shnum, const unsigned char *shstr, uint64_t shstrsize, struct sim_ptx *out)
{
	const unsigned char *symsh = NULL;
	uint64_t symoff, symsize, stroff = 0, strsize = 0;
	unsigned int cap = 0, link;
	CUresult rc = CUDA_SUCCESS;

	for (unsigned int i = 0; i < shnum && !symsh; i++)
		if (rd32(elf + shoff + (size_t)i * shentsize + 4) == 2) /* SHT_SYMTAB */
			symsh = elf + shoff + (size_t)i * shentsize;
	if (!symsh)
		goto out;
	symoff = rd64(symsh + 0x18);
	symsize = rd64(symsh + 0x20);
	link = rd32(symsh + 0x28);
	if (link < shnum) {
		stroff = rd64(elf + shoff + (size_t)link * shentsize + 0x18);
		strsize = rd64(elf + shoff + (size_t)link * shentsize + 0x20);
	}
	if (symoff > len || symsize > len - symoff || link >= shnum || stroff > len || strsize > len - stroff)
		goto out; /* no usable symbol table: no variables */
	for (uint64_t at = 0; at + 24 <= symsize; at += 24) {
		const unsigned char *sym = elf + symoff + at, *sec;
		uint32_t nm = rd32(sym), snm;
		unsigned int shndx = rd16(sym + 6);
		uint64_t value = rd64(sym + 8), size = rd64(sym + 16);
		const char *secname, *name;
		struct sim_mc_global *g;

		if ((sym[4] & 0xf) != 1 || size == 0 || size > FB_MAX_PAYLOAD || shndx == 0 || shndx >= shnum ||
		    nm >= strsize || !memchr(elf + stroff + nm, 0, strsize - nm))
			continue; /* not a variable (STT_OBJECT) in a section */
		name = (const char *)elf + stroff + nm;
		sec = elf + shoff + (size_t)shndx * shentsize;
		snm = rd32(sec);
		if (snm >= shstrsize || !memchr(shstr + snm, 0, shstrsize - snm))
			continue;
		secname = (const char *)shstr + snm;
		if ((strncmp(secname, ".nv.global", 10) && strncmp(secname, ".nv.constant", 12)) ||
		    !strncmp(secname, ".nv.constant0", 13))
			continue; /* constant bank 0 holds kernel parameters, not variables */
		if (out->nglobals == cap) {
			struct sim_mc_global *ng;

			cap = cap ? cap * 2 : 8;
			ng = realloc(out->globals, cap * sizeof(*ng));
			if (!ng)
				goto out_oom;
			out->globals = ng;
		}
		g = &out->globals[out->nglobals];
		memset(g, 0, sizeof(*g));
		g->name = strdup(name);
		if (!g->name)
			goto out_oom;
		g->size = (size_t)size;
		out->nglobals++;
		if (rd32(sec + 4) != 8) { /* not SHT_NOBITS: the initial bytes are there */
			uint64_t off = rd64(sec + 0x18), ssize = rd64(sec + 0x20);

			if (off <= len && ssize <= len - off && value <= ssize && size <= ssize - value) {
				g->init = malloc((size_t)size);
				if (!g->init)
					goto out_oom;
				memcpy(g->init, elf + off + value, (size_t)size);
			}
		}
	}
	goto out;
out_oom:
	rc = CUDA_ERROR_OUT_OF_MEMORY;
out:
	return rc;
}

/* Every kernel of an ELF cubin (a section .nv.info.<kernel> each) with its parameter layout,
 * into out (empty on failure). */
static CUresult elf_entries(const unsigned char *elf, size_t len, struct sim_ptx *out, char *err, size_t errlen)
{
	uint64_t shoff, stroff, strsize;
	unsigned int shentsize, shnum, shstrndx, cap = 0;
	const unsigned char *strsh;
	CUresult rc = CUDA_ERROR_INVALID_IMAGE;

	memset(out, 0, sizeof(*out));
	if (len < 64 || elf[4] != 2) {
		snprintf(err, errlen, "machine code is not a 64-bit ELF");
		goto out;
	}
	shoff = rd64(elf + 0x28);
	shentsize = rd16(elf + 0x3a);
	shnum = rd16(elf + 0x3c);
	shstrndx = rd16(elf + 0x3e);
	if (shentsize < 64 || shstrndx >= shnum || shoff > len || (uint64_t)shnum * shentsize > len - shoff)
		goto out_bad;
	strsh = elf + shoff + (size_t)shstrndx * shentsize;
	stroff = rd64(strsh + 0x18);
	strsize = rd64(strsh + 0x20);
	if (stroff > len || strsize > len - stroff)
		goto out_bad;
	for (unsigned int i = 0; i < shnum; i++) {
		const unsigned char *sh = elf + shoff + (size_t)i * shentsize;
		uint32_t nm = rd32(sh);
		uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20);
		const char *s = (const char *)elf + stroff + nm;
		struct sim_ptx_entry *e;

		if (nm >= strsize || !memchr(s, 0, strsize - nm) || strncmp(s, ".nv.info.", 9) || !s[9])
			continue;
		if (off > len || size > len - off)
			goto out_bad;
		if (out->nentries == cap) {
			struct sim_ptx_entry *ne;

			cap = cap ? cap * 2 : 16;
			ne = realloc(out->entries, cap * sizeof(*ne));
			if (!ne)
				goto out_oom;
			out->entries = ne;
		}
		e = &out->entries[out->nentries];
		memset(e, 0, sizeof(*e));
		e->name = strdup(s + 9);
		if (!e->name)
			goto out_oom;
		out->nentries++;
		rc = elf_kernel_params(elf + off, (size_t)size, e);
		if (rc == CUDA_ERROR_OUT_OF_MEMORY)
			goto out_oom;
		if (rc != CUDA_SUCCESS) {
			snprintf(err, errlen, "machine code's parameter metadata of %s is malformed", e->name);
			goto out_fail;
		}
	}
	rc = elf_globals(elf, len, shoff, shentsize, shnum, elf + stroff, strsize, out);
	if (rc != CUDA_SUCCESS)
		goto out_oom;
	out->target_sm = (int)elf_arch(elf);
	goto out;
out_oom:
	rc = CUDA_ERROR_OUT_OF_MEMORY;
	snprintf(err, errlen, "out of memory");
	goto out_fail;
out_bad:
	snprintf(err, errlen, "machine code is a truncated or malformed ELF");
out_fail:
	sim_ptx_fini(out);
out:
	return rc;
}

/* ------------------------------------------------------------------ choosing the PTX */

struct fb_choice {
	struct fb_entry ptx;         /* best PTX entry so far */
	bool have_ptx;               /* ptx is set */
	bool ptx_too_new;            /* a PTX entry exists but for an architecture above ours */
	unsigned int too_new_arch;   /* the lowest such */
	char archs[160];             /* every entry, e.g. "sm_90 compute_90" */
	char kernels[512];           /* kernel names from the ELF entries */
	char err[200];               /* why an ELF entry could not be read (then no kernel names) */
	bool want_names;             /* decompress every ELF for kernel names (not in machine-code mode) */
	struct fb_entry elf;         /* the machine code the device would run (machine-code mode) */
	bool have_elf;               /* elf is set */
	struct fb_entry other;       /* the newest machine code of any architecture (when no elf) */
	bool have_other;             /* other is set */
};

/* Whether machine code for sm_<arch> runs on the device: same major version, minor not above. */
bool sim_elf_arch_runs(unsigned int arch)
{
	unsigned int cc = (unsigned int)sim_device_cc();

	return arch / 10 == cc / 10 && arch <= cc;
}

static int choose(const struct fb_entry *e, void *arg)
{
	struct fb_choice *c = arg;
	size_t used = strlen(c->archs);

	snprintf(c->archs + used, sizeof(c->archs) - used, "%s%s_%u", used ? " " : "",
		 e->kind == FB_KIND_PTX ? "compute" : e->kind == FB_KIND_ELF ? "sm" : "other", e->arch);
	if (e->kind == FB_KIND_PTX) {
		/* The newest PTX the device can run, as the driver JIT-compiles the best match. */
		if (e->arch > (unsigned int)sim_device_cc()) {
			if (!c->ptx_too_new || e->arch < c->too_new_arch)
				c->too_new_arch = e->arch;
			c->ptx_too_new = true;
		} else if (!c->have_ptx || e->arch > c->ptx.arch) {
			c->ptx = *e;
			c->have_ptx = true;
		}
	} else if (e->kind == FB_KIND_ELF) {
		char *elf = NULL;
		size_t n;

		if (sim_elf_arch_runs(e->arch) && (!c->have_elf || e->arch > c->elf.arch)) {
			c->elf = *e;
			c->have_elf = true;
		}
		if (!c->have_other || e->arch > c->other.arch) {
			c->other = *e;
			c->have_other = true;
		}
		if (c->want_names && entry_bytes(e, &elf, &n, c->err, sizeof(c->err)) == CUDA_SUCCESS)
			elf_kernels((const unsigned char *)elf, n, c->kernels, sizeof(c->kernels));
		free(elf);
	}
	return 0;
}

/* Machine-code mode: the kernels of the ELF entry e (or of a bare ELF when e is NULL). */
static CUresult machine_code_entries(const struct fb_entry *e, const unsigned char *elf, size_t limit,
				     struct sim_ptx *mc, char *msg, size_t msglen)
{
	char *bytes = NULL;
	size_t n = limit;
	CUresult rc;

	if (e) {
		rc = entry_bytes(e, &bytes, &n, msg, msglen);
		if (rc != CUDA_SUCCESS)
			goto out;
		elf = (const unsigned char *)bytes;
	}
	rc = elf_entries(elf, n, mc, msg, msglen);
out:
	free(bytes);
	return rc;
}

CUresult sim_image_ptx(const char *who, const void *image, size_t limit, char **text, struct sim_ptx *mc,
		       bool *is_mc, char *err, size_t errlen)
{
	const unsigned char *b = image;
	struct fb_choice *c = NULL;
	bool mc_on = mc && sim_machine_code_is_on();
	size_t n;
	CUresult rc = CUDA_SUCCESS;
	char msg[1024] = "";

	*text = NULL;
	if (is_mc)
		*is_mc = false;
	if (!b) {
		snprintf(msg, sizeof(msg), "no image");
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	/* Compare byte by byte so a short NUL-terminated text is never read past its end. */
	if (b[0] == 0xb1 && b[1] == 0x43 && b[2] == 0x62 && b[3] == 0x46) {
		const unsigned char *fb;

		memcpy(&fb, b + 8, sizeof(fb));
		if (!fb || rd32(fb) != FB_MAGIC) {
			snprintf(msg, sizeof(msg), "fatbin wrapper does not point at a fatbin");
			rc = CUDA_ERROR_INVALID_IMAGE;
			goto out;
		}
		b = fb;
		limit = SIZE_MAX;
	}
	if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') {
		char kernels[512] = "";
		size_t elf_len = limit == SIZE_MAX ? (size_t)rd64(b + 0x28) + 64u * rd16(b + 0x3c) : limit;

		if (mc_on) {
			rc = machine_code_entries(NULL, b, elf_len, mc, msg, sizeof(msg));
			if (rc == CUDA_SUCCESS && is_mc)
				*is_mc = true;
			goto out;
		}
		elf_kernels(b, elf_len, kernels, sizeof(kernels));
		snprintf(msg, sizeof(msg), "image is an ELF cubin for sm_%u (kernels: %s) and holds no PTX: "
			 "the software device runs PTX only (add compute_XX to nvcc's -gencode, or set "
			 "SIMCUDA_MACHINE_CODE=noop to run its kernels as no-ops)",
			 elf_arch(b), kernels[0] ? kernels : "none found");
		rc = CUDA_ERROR_NO_BINARY_FOR_GPU;
		goto out;
	}
	if (!(b[0] == 0x50 && b[1] == 0xed && b[2] == 0x55 && b[3] == 0xba))
		goto out; /* PTX text (or garbage the PTX reader will name) */
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(msg, sizeof(msg), "out of memory");
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	/* In machine-code mode only the chosen ELF is decompressed: PyTorch's libraries register
	 * thousands of images with a dozen architectures each. */
	c->want_names = !mc_on;
	if (fatbin_walk(b, limit, choose, c) < 0) {
		snprintf(msg, sizeof(msg), "fatbin is truncated or malformed");
		rc = CUDA_ERROR_INVALID_IMAGE;
		goto out;
	}
	if (!c->have_ptx && mc_on && (c->have_elf || c->have_other)) {
		rc = machine_code_entries(c->have_elf ? &c->elf : &c->other, NULL, 0, mc, msg, sizeof(msg));
		if (rc == CUDA_SUCCESS && is_mc)
			*is_mc = true;
		goto out;
	}
	if (!c->have_ptx) {
		if (!c->archs[0])
			snprintf(msg, sizeof(msg), "fatbin holds no code at all (as the device-link image of an "
				 "nvcc -rdc=true build for compute_XX only: relocatable code is not supported)");
		else if (c->ptx_too_new && !mc_on)
			snprintf(msg, sizeof(msg), "fatbin's PTX is for compute_%u, newer than the device's %d.%d "
				 "(entries: %s; SIMCUDA_CC sets it)", c->too_new_arch, sim_device_cc() / 10,
				 sim_device_cc() % 10, c->archs);
		else if (mc_on)
			snprintf(msg, sizeof(msg), "fatbin holds no code a device of compute capability %d.%d can "
				 "run (entries: %s)", sim_device_cc() / 10, sim_device_cc() % 10, c->archs);
		else
			snprintf(msg, sizeof(msg), "fatbin holds machine code only (%s; kernels: %s): the "
				 "software device runs PTX only (add compute_XX to nvcc's -gencode, or set "
				 "SIMCUDA_MACHINE_CODE=noop to run its kernels as no-ops)",
				 c->archs, c->kernels[0] ? c->kernels : c->err[0] ? c->err : "none found");
		rc = CUDA_ERROR_NO_BINARY_FOR_GPU;
		goto out;
	}
	rc = entry_bytes(&c->ptx, text, &n, msg, sizeof(msg));
out:
	if (rc != CUDA_SUCCESS) {
		sim_log("%s: %s", who, msg);
		if (err && errlen)
			snprintf(err, errlen, "%s", msg);
	}
	free(c);
	return rc;
}
