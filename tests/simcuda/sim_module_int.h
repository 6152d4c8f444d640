/* sim_module_int.h - private interface of the software device's modules, libraries, functions
 * and kernels (ptx.c, module.c, launch.c, twins.c). tests/simcuda layer; sim_int.h has the
 * part other files of the device use.
 *
 * Ownership: a module owns its parsed PTX and one struct sim_func per entry. It is freed when
 * the program has unloaded it AND no kernel payload (queued launch, graph node) refers to one
 * of its functions any more: every struct sim_kernel_call holds a reference on the module, so
 * work that outlives an unload still finds its function, name and parameter layout. */
#ifndef SIM_MODULE_INT_H
#define SIM_MODULE_INT_H

#include "sim_int.h"

#include "driver/ptx.h"

/* ------------------------------------------------------------------ PTX (ptx.c) */

struct sim_param_info {
	size_t offset;               /* byte offset in the parameter buffer */
	size_t size;                 /* bytes */
	size_t align;                /* alignment the offset was rounded to */
};

struct sim_ptx_entry {
	char *name;                  /* entry name, as in the PTX */
	unsigned int nparams;        /* parameters */
	struct sim_param_info *params; /* nparams layouts, in declaration order */
	size_t param_bytes;          /* end of the last parameter (0 without parameters) */
};

/* A module-scope variable of machine code (__device__, __constant__), machine-code mode only. */
struct sim_mc_global {
	char *name;                  /* symbol name */
	size_t size;                 /* bytes */
	unsigned char *init;         /* initial bytes (size of them), NULL for zeros */
	CUdeviceptr dptr;            /* its device memory, allocated at the first lookup (0 before) */
};

struct sim_ptx {
	struct sim_mc_global *globals; /* machine code's variables (fatbin.c), NULL for PTX */
	unsigned int nglobals;       /* globals used */
	struct sim_ptx_entry *entries; /* every .entry, in file order */
	unsigned int nentries;       /* entries used */
	int target_sm;               /* from .target sm_NN (e.g. 90), 0 when absent */
	int version;                 /* .version major*10 + minor (e.g. 90) */
	struct ptx_module *parsed;   /* the text read by the PTX front end (driver/ptx.h): what the
	                              * interpreter decodes; NULL for machine code */
};

/* The PTX text an image handed to cuModuleLoadData & co carries (fatbin.c). For PTX text,
 * CUDA_SUCCESS with *text NULL (use the image itself); for a fatbin or a fatbin wrapper, the
 * best PTX entry decompressed into a new NUL-terminated buffer (*text, freed by the caller);
 * for an image without usable PTX (ELF cubin, machine code only, a newer PTX, a bad or
 * truncated fatbin) the error, with one sim_log line naming `who` and, in err, the kernels and
 * architectures it holds. limit: the bytes readable at image, SIZE_MAX when unknown.
 * In machine-code mode (sim_machine_code_is_on, and mc given), an image without usable PTX but
 * with machine code succeeds instead with *is_mc set and its kernels' names and parameter
 * layouts in *mc (no text; sim_ptx_fini frees it; mc->target_sm the machine code's sm, that of
 * the device's architecture when it has one, else the newest: see sim_elf_arch_runs). */
CUresult sim_image_ptx(const char *who, const void *image, size_t limit, char **text, struct sim_ptx *mc,
		       bool *is_mc, char *err, size_t errlen);
/* Whether machine code for sm_<arch> runs on the device (same major, minor not above). */
bool sim_elf_arch_runs(unsigned int arch);
/* Parse NUL-terminated PTX text with the PTX front end (driver/ptx.h), the one reading of PTX
 * cufold and the software device share. On failure returns CUDA_ERROR_INVALID_PTX (or
 * CUDA_ERROR_OUT_OF_MEMORY), leaves *out empty and writes the parser's "line N: reason" into err
 * (errlen bytes; err may be NULL). */
CUresult sim_ptx_parse(const char *text, struct sim_ptx *out, char *err, size_t errlen);
void sim_ptx_fini(struct sim_ptx *p);

/* ------------------------------------------------------------------ objects (module.c) */

struct sim_module;
struct sim_library;

/* The CUkernel face of a function: a CUkernel handle points here. */
struct sim_kernel_handle {
	uint32_t magic;              /* SIM_MAGIC_KERNEL */
	struct sim_func *fn;         /* the function it stands for */
};

struct sim_func {
	uint32_t magic;              /* SIM_MAGIC_FUNC */
	struct sim_module *mod;      /* owning module */
	const struct sim_ptx_entry *entry; /* name and parameter layout (owned by the module) */
	size_t *param_sizes;         /* entry->params[i].size as an array (struct sim_launch) */
	sim_twin_fn twin;            /* cached twin, NULL when none */
	struct sim_func *multi_base; /* a cufold multi-instance variant E_cf_multi whose module holds
				      * E with a twin: each instance runs as E's twin (its twin is
				      * then E's; launch.c) */
	bool twin_looked;            /* twin lookup done (and logged when missing) */
	int max_dyn_shared;          /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
	int carveout;                /* CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT */
	int cluster_attr[5];         /* CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH.. (11..15) as set */
	CUfunc_cache cache_config;   /* cuFuncSetCacheConfig */
	struct sim_kernel_handle kernel; /* CUkernel handle (library kernels) */
	struct sim_ifunc *interp;    /* decoded body (interp_decode.c), NULL until first needed */
	int interp_rc;               /* CUresult of that decoding, once tried (0 before) */
	bool interp_tried;           /* decoding was tried */
	bool noop_logged;            /* machine code: its first launch was logged */
};

struct sim_module {
	uint32_t magic;              /* SIM_MAGIC_MODULE; cleared at unload */
	struct sim_ctx *ctx;         /* context it was loaded in; NULL for a library's */
	struct sim_library *lib;     /* owning library, or NULL for cuModuleLoad* */
	struct sim_ptx ptx;          /* parsed entries */
	unsigned int nfuncs;         /* = ptx.nentries */
	struct sim_func *funcs;      /* one per entry */
	unsigned int refs;           /* 1 until unloaded + one per live kernel payload */
	struct sim_imod *interp;     /* the interpreter's decoded functions, NULL until needed */
	bool machine_code;           /* loaded from machine code: its launches are no-ops (launch.c) */
	bool no_binary;              /* machine code, none for the device: launches fail (launch.c) */
};

struct sim_library {
	uint32_t magic;              /* SIM_MAGIC_LIBRARY; cleared at unload */
	struct sim_module *mod;      /* its code, context-independent */
};

/* Resolve handles; NULL when not a live object of that kind. */
struct sim_module *sim_module_from(CUmodule h);
struct sim_library *sim_library_from(CUlibrary h);
struct sim_func *sim_kernel_from(CUkernel h);
/* Payload references on a function's module (kernel calls). */
void sim_module_ref(struct sim_module *m);
void sim_module_unref(struct sim_module *m);

/* Dynamic shared memory a function may use without opting in, and the opt-in maximum (H100). */
#define SIM_SHARED_DEFAULT (48 * 1024)
#define SIM_SHARED_OPTIN_MAX (227 * 1024)
#define SIM_MAX_BLOCK_THREADS 1024

/* ------------------------------------------------------------------ twins (twins.c) */

/* The function's twin, looked up once and cached; NULL (silently) when there is none: the PTX
 * interpreter runs such a kernel (interp.h). */
sim_twin_fn sim_func_twin(struct sim_func *fn);
/* The function of module m named name, or NULL. */
struct sim_func *sim_module_find_func(struct sim_module *m, const char *name);

#endif
