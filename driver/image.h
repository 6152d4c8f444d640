/* image.h - the images a program hands the driver, decoded: PTX text, ELF cubins, nvcc's fat
 * binaries and the wrappers the CUDA runtime registers, down to the PTX text or the machine
 * code's kernels inside. driver layer (what the driver loads); libc and dlopen only, and it
 * includes no cufold header: the software device (tests/simcuda/fatbin.c) is built on it, so
 * there is one decoder of images in the codebase.
 *
 * Layout, as nvcc 13 writes it (little-endian; learnt by dumping `nvcc -fatbin` with every
 * --compress-mode and -Xfatbin -compress-all; public fatbin readers agree):
 *
 *   wrapper (what __cudaRegisterFatBinary gets, __fatBinC_Wrapper_t): u32 magic 0x466243b1,
 *           u32 version, u64 pointer to a fatbin, u64 pointer (file name or linked fatbins)
 *   fatbin:  u32 magic 0xba55ed50, u16 version, u16 header bytes, u64 bytes of entries after it
 *   entry:   u16 kind (1 PTX, 2 ELF), u16 version, u32 header bytes, u64 payload bytes (padded),
 *           u32 compressed bytes at 0x10, u32 sm arch at 0x1c (90 for sm_90/compute_90),
 *           u64 flags at 0x28, u64 uncompressed bytes at 0x38; the payload follows the entry
 *           header, the next entry follows the payload.
 *   flags:   0x1 64-bit, 0x10 Linux, 0x2000 LZ4 block (--compress-mode=speed), 0x8000 zstd
 *           frame (the default, size and balance modes), 0x100000 architecture-specific
 *           (compute_90a, sm_90a: that architecture only), 0x200000 family-specific
 *           (compute_100f: that major version, minor not below). nvcc compresses PTX only unless
 *           -Xfatbin -compress-all, which compresses the ELF entries too.
 *
 * LZ4 blocks are decoded here (the format is short and public); zstd through the system's
 * libzstd.so.1, opened at the first zstd entry, since no header is installed to build against.
 * Without the library such an entry is "compressed, no decoder" (img_entry_decodable false):
 * the rest of the image is still read.
 *
 * ELF cubins: sections, the symbol table, the kernels (sections .nv.info.<kernel>) and their
 * parameter layouts (EIATTR_KPARAM_INFO attributes), the architecture (e_flags) and the
 * module's variables. nv.info is a list of attributes: u8 format (1 no value, 2 one byte, 3 two
 * bytes, 4 u16 size then that many bytes), u8 attribute, value, where a record without a size
 * takes 4 bytes whatever its format (a byte value is padded: seen in cuBLAS's and PyTorch's
 * images). EIATTR_KPARAM_INFO (0x17, 12 bytes): u32 index, u16 ordinal, u16 offset, u32 flags
 * with the size in bits 18..31; EIATTR_CBANK_PARAM_SIZE (0x19, 2 bytes): the bytes of all
 * parameters.
 *
 * Bounds: every function takes `limit`, the bytes readable at the image, or SIZE_MAX when the
 * caller does not know (a pointer from cuModuleLoadData): then the image's own headers bound
 * it, and a short NUL-terminated PTX text is never read past its end. Any input, corrupt or
 * truncated within limit, gives an error, never a read outside it.
 *
 * Errors are negative codes of common/errors.h: -CF_EINVAL a malformed or truncated image,
 * -CF_ENOMEM, -CF_ENOENT no PTX the device can JIT, -CF_ENOSYS compressed with no decoder.
 * Functions taking err/errlen also write a one-line reason there (err may be NULL). */
#ifndef CF_DRIVER_IMAGE_H
#define CF_DRIVER_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ forms and fatbins */

enum img_form {
	IMG_FORM_UNKNOWN = 0,        /* none of the below (garbage, or text that is not PTX) */
	IMG_FORM_PTX,                /* PTX text: `.version` first, after comments and blanks */
	IMG_FORM_FATBIN,             /* a fat binary (magic 0xba55ed50) */
	IMG_FORM_WRAPPER,            /* __fatBinC_Wrapper_t (magic 0x466243b1) */
	IMG_FORM_ELF,                /* an ELF cubin */
};

#define IMG_KIND_PTX 1u              /* fatbin entry kinds */
#define IMG_KIND_ELF 2u
#define IMG_FLAG_LZ4 0x2000u         /* fatbin entry flags: payload compressed */
#define IMG_FLAG_ZSTD 0x8000u
#define IMG_FLAG_ARCH_SPECIFIC 0x100000u /* ...a: runs or JITs on that architecture only */
#define IMG_FLAG_FAMILY 0x200000u    /* ...f: on that major version, minor not below */
#define IMG_MAX_PAYLOAD (256u << 20) /* a garbage guard on sizes read from an image */

/* One entry of a fatbin, pointing into the image. */
struct img_entry {
	unsigned int kind;           /* IMG_KIND_*, or another number nvcc may write */
	unsigned int arch;           /* sm / compute number, e.g. 90 */
	unsigned long long flags;    /* IMG_FLAG_* and others */
	const unsigned char *payload; /* its bytes in the image */
	size_t payload_len;          /* stored bytes (the compressed size when compressed) */
	size_t plain_len;            /* bytes once decompressed (payload_len when stored plain) */
};

/* What the image at `image` is (limit: bytes readable there, SIZE_MAX when unknown). The
 * binary forms are told by their magic alone: one cut short is still that form (and the
 * functions that read it refuse it). */
enum img_form img_form_of(const void *image, size_t limit);
/* "ptx", "fatbin", "wrapper", "elf", "unknown". */
const char *img_form_name(enum img_form form);
/* The fatbin a wrapper points at (*limit becomes SIZE_MAX: the fatbin's own header bounds it),
 * NULL when it points at no fatbin; any other image is returned as it is. */
const void *img_unwrap(const void *image, size_t *limit);
/* Bytes of the fatbin at fatbin (header and entries), 0 when its header is malformed or says
 * more than limit. */
size_t img_fatbin_span(const void *fatbin, size_t limit);
/* Call visit for each entry of the fatbin, in order; stop at the first nonzero return and
 * return it. 0 when every entry was visited, -CF_EINVAL when the fatbin is malformed (entries
 * before the bad one were visited). */
int img_fatbin_walk(const void *fatbin, size_t limit, int (*visit)(const struct img_entry *e, void *arg),
		    void *arg);
/* Whether the entry's bytes can be had: stored plain, LZ4, or zstd with libzstd.so.1 there. */
bool img_entry_decodable(const struct img_entry *e);
/* The entry's payload, decompressed, NUL-terminated, in a new buffer (*out, freed by the
 * caller; *len its length without the NUL). 0, -CF_EINVAL, -CF_ENOMEM, -CF_ENOSYS. */
int img_entry_bytes(const struct img_entry *e, char **out, size_t *len, char *err, size_t errlen);
/* Decode one LZ4 block into out: the bytes written, or -1 when the block is malformed or does
 * not fit in outcap. */
long img_lz4_block_decode(const unsigned char *in, size_t inlen, unsigned char *out, size_t outcap);
/* Whether machine code for sm_<arch> runs on a device of compute capability device_arch
 * (major*10 + minor): same major, minor not above (the driver's binary compatibility rule). */
bool img_sm_runs(unsigned int arch, unsigned int device_arch);
/* Whether a device of compute capability device_arch can use the entry: PTX it can JIT (arch
 * not above the device's; for an `a` entry the device's exactly, for an `f` entry the same
 * major too), machine code it runs (img_sm_runs; an `a` entry: the device's arch exactly). */
bool img_entry_usable(const struct img_entry *e, unsigned int device_arch);

/* What a fatbin holds, for one device: what the driver would choose. */
struct img_survey {
	unsigned int entries;        /* entries of every kind */
	unsigned int ptx_entries;    /* PTX entries (any architecture) */
	unsigned int elf_entries;    /* ELF entries (any architecture) */
	unsigned int undecodable;    /* entries compressed with no decoder at hand */
	bool ptx_no_decoder;         /* one of them is PTX the device could JIT */
	struct img_entry ptx;        /* the newest decodable PTX the device can JIT */
	bool have_ptx;               /* ptx is set */
	unsigned int too_new_arch;   /* the lowest PTX architecture above the device's, 0 if none */
	bool ptx_other_arch;         /* a PTX entry specific to another architecture or family */
	struct img_entry elf;        /* the newest machine code the device runs */
	bool have_elf;               /* elf is set */
	struct img_entry newest_elf; /* the newest machine code of any architecture */
	bool have_newest_elf;        /* newest_elf is set */
	char archs[256];             /* every entry, e.g. "sm_90 compute_90 sm_90a" (cut when long) */
	char kernels[512];           /* with want_names: kernels of the ELF entries, space-separated */
	char err[200];               /* with want_names: why an ELF entry could not be read */
};

/* Survey the fatbin for a device of compute capability device_arch (90 for 9.0). With
 * want_names every ELF entry is decompressed for its kernels' names (costly on images with many
 * architectures: leave it off when the names are not shown). 0 or -CF_EINVAL (malformed: *out
 * then holds what came before the bad entry). */
int img_survey(const void *fatbin, size_t limit, unsigned int device_arch, bool want_names,
	       struct img_survey *out);

/* The PTX a device of compute capability device_arch would JIT from the image (any form: PTX
 * text, a fatbin, a wrapper, an ELF), as a new NUL-terminated buffer (*text, freed by the
 * caller; *len its length, up to the first NUL). 0 when found. Otherwise *text is NULL,
 * *mc_only says whether the image holds machine code (an ELF, or ELF entries) and the result
 * is -CF_ENOENT (no PTX, or only PTX newer than the device), -CF_ENOSYS (its PTX is compressed
 * and there is no decoder), -CF_EINVAL (not an image, or malformed) or -CF_ENOMEM; err says
 * which, naming the architectures the image holds. */
int img_ptx_text(const void *image, size_t limit, unsigned int device_arch, char **text, size_t *len,
		 bool *mc_only, char *err, size_t errlen);

/* ------------------------------------------------------------------ ELF cubins */

struct img_param {
	size_t offset;               /* byte offset in the parameter buffer */
	size_t size;                 /* bytes */
	size_t align;                /* the largest power of two up to 16 that divides the offset and
				      * does not exceed the size (the ELF does not record it) */
};

struct img_kernel {
	char *name;                  /* entry name (.nv.info.<name>) */
	unsigned int nparams;        /* parameters (the highest ordinal + 1) */
	struct img_param *params;    /* nparams layouts, by ordinal (NULL when none) */
	size_t param_bytes;          /* the parameter buffer's bytes (EIATTR_CBANK_PARAM_SIZE or the
				      * end of the last parameter, whichever is larger) */
};

/* A module-scope variable (__device__, __constant__): an object of the symbol table in a
 * .nv.global* or .nv.constantN (N != 0) section. */
struct img_global {
	char *name;                  /* symbol name */
	size_t size;                 /* bytes */
	unsigned char *init;         /* initial bytes (size of them), NULL for zeros */
};

/* The machine code of one ELF cubin, as far as loading it needs. img_mcode_free frees it. */
struct img_mcode {
	struct img_kernel *kernels;  /* every kernel, in section order */
	unsigned int nkernels;
	struct img_global *globals;  /* its variables (a malformed symbol is skipped) */
	unsigned int nglobals;
	unsigned int arch;           /* sm number, e.g. 90 */
};

/* Read the ELF cubin's kernels, parameter layouts, variables and architecture into *out
 * (empty on failure). 0, -CF_EINVAL (not a 64-bit ELF, truncated, or malformed parameter
 * metadata: err names the kernel) or -CF_ENOMEM. */
int img_elf_read(const void *elf, size_t len, struct img_mcode *out, char *err, size_t errlen);
void img_mcode_free(struct img_mcode *m);
/* Append the kernels of an ELF cubin (the sections .text.<kernel>) to names (cap bytes,
 * space-separated, each once: a fatbin holds the same kernels for several architectures).
 * A malformed ELF adds nothing. */
void img_elf_kernels(const void *elf, size_t len, char *names, size_t cap);
/* The sm architecture of an ELF cubin (e_flags: bits 8..15 from the CUDA ELF ABI version 8,
 * nvcc 12 and later; bits 0..7 before); 0 when len is too short for an ELF header. */
unsigned int img_elf_arch(const void *elf, size_t len);
/* The bytes of an ELF cubin as its headers describe it (up to the end of the furthest section
 * or header table), for an ELF given without a length; 0 when its header is malformed or says
 * more than limit. */
size_t img_elf_span(const void *elf, size_t limit);

#endif
