/* api.h - what shim/cuda_api.def says, as C: one id per exported driver symbol, its typed
 * pointer type, its name/base/version/variant, and lookup by name. shim layer (sits with
 * real.h under capture; includes only common/ and shim/).
 *
 * Everything here is generated from cuda_api.def with X-macros. In the expansions the symbol is
 * only ever pasted (##) or stringized (#): cuda.h defines many driver names as macros (cuMemAlloc
 * expands to cuMemAlloc_v2), so a plain use would silently name another variant. */
#ifndef SHIM_API_H
#define SHIM_API_H

#include <stdbool.h>

#include "shim/cuda_compat.h"

enum shim_api_id {
#define CF_API(symbol, base, version, pt, ret, decls, args) SHIM_ID_##symbol,
#define CF_API_UNTYPED(symbol) SHIM_ID_##symbol,
#include "shim/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED
	SHIM_API_COUNT
};

/* shim_pfn_<symbol>: the exact pointer type of each typed symbol. */
#define CF_API(symbol, base, version, pt, ret, decls, args) typedef ret(CUDAAPI *shim_pfn_##symbol) decls;
#define CF_API_UNTYPED(symbol)
#include "shim/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED

/* Any function pointer, for tables of mixed types (never called through this type). */
typedef void (*shim_fn)(void);

enum shim_pt {
	SHIM_PT_NONE = 0, /* ordinary: stream 0 is the legacy default stream */
	SHIM_PT_PTSZ = 1, /* _ptsz: stream 0 is the per-thread default stream */
	SHIM_PT_PTDS = 2, /* _ptds: a synchronous call on the per-thread default stream */
};

struct shim_api_info {
	const char *name;     /* exported symbol, e.g. "cuMemcpyHtoDAsync_v2_ptsz" */
	const char *base;     /* name cuGetProcAddress knows it by, e.g. "cuMemcpyHtoDAsync" */
	int version;          /* CUDA version that introduced this ABI (1000*major + 10*minor) */
	unsigned char pt;     /* enum shim_pt */
	bool typed;           /* has a prototype (else it can only be passed through by address) */
	bool modeled;         /* has a hand-written hook (shim/modeled.def) */
};

extern const struct shim_api_info shim_api[SHIM_API_COUNT];

/* The id of an exported symbol name, or -1. */
int shim_api_find(const char *name);
/* Internal, for the fork handler: forget a half-built name index. */
void shim__api_atfork_child(void);

/* Whether a name has the shape of a driver entry point: "cu" then an upper-case letter. */
static inline bool shim_name_is_driver(const char *name)
{
	return name && name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z';
}

/* Membership test in modeled.def by name, at preprocessing time:
 * SHIM_IF_MODELED(SHIM_MODELED_##symbol, yes, no) expands to yes when modeled.def defines
 * SHIM_MODELED_<symbol> (as SHIM_YES, which expands to "~, 1"), else to no. The probe works
 * because a defined name turns into two arguments and shifts the 1 into second place. */
#define SHIM_YES ~, 1
#define SHIM_SECOND_(a, b, ...) b
#define SHIM_IS_(...) SHIM_SECOND_(__VA_ARGS__, 0, ~)
#define SHIM_CAT_(a, b) a##b
#define SHIM_CAT(a, b) SHIM_CAT_(a, b)
#define SHIM_SEL_0(yes, no) no
#define SHIM_SEL_1(yes, no) yes
#define SHIM_IF_MODELED(probe, yes, no) SHIM_CAT(SHIM_SEL_, SHIM_IS_(probe))(yes, no)

#include "shim/modeled.def"

#endif
