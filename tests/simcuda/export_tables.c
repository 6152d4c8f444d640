/* export_tables.c - cuGetExportTable: the private tables the CUDA runtime (libcudart, static
 * or shared) asks the driver for by UUID before its first call can succeed. tests/simcuda layer.
 *
 * A table is an array of pointers; most start with their own size in bytes. What each slot
 * does was learnt from projects that run the runtime on other drivers (ZLUDA's "dark API",
 * GPU emulators) and checked here by running nvcc-built programs: CUDA 13.0's cudart asks, in
 * order, for
 *
 *   runtime-init  f8cff951-...  answered CUDA_ERROR_NOT_FOUND: success would make the runtime
 *                               skip the tables below and expect another bootstrap
 *   cudart        6bd5fb6c-...  slot 2: retain a device's primary context; slot 12: "load the
 *                               compilers" (nothing to load here)
 *   tools-hooks   a094798c-...  slots 2 and 6: buffers for the runtime's tool-callback state
 *   tools-tls     42d85a81-...  slot 2: the calling thread's current context (cuBLASLt asks it
 *                               before its first matrix product: answered NOT_SUPPORTED, its
 *                               heuristic finds no algorithm)
 *   context-local-storage c693336e-...  (no size word) put, delete, get a value by (context, key)
 *   context-checks 263e8860-... slot 2: a context's flags (0), slot 3: a global word (0)
 *   integrity     d4082055-...  slot 1: the answer to the runtime's challenge (see below)
 *
 * cuBLAS and cuBLASLt (13.x, inside PyTorch's first nn.Linear) ask for
 *
 *   context-identity 21318c60-... (93 slots) slot 4: a context's unique id (cuCtxGetId's);
 *                               slot 39: a private stream's identity; slot 51: the private
 *                               stream of a public handle (NULL, CU_STREAM_LEGACY and
 *                               CU_STREAM_PER_THREAD stand for themselves here; a created stream
 *                               is its own private stream). Slot numbers and arguments as another
 *                               driver emulator's tests record them; PyTorch's matrix products
 *                               were seen to need slot 4 and tools-tls slot 2.
 *
 * NVRTC (13.0's libnvrtc, inside nvrtcCompileProgram: numba and CuPy compile with it) asks for
 *
 *   nvrtc         da9151d3-...  answered CUDA_ERROR_NOT_FOUND: what the real driver hands out is
 *                               not documented anywhere we could find (ZLUDA's notes do not name
 *                               it); NVRTC compiles without it, so it is only named, not logged
 *
 * The runtime then registers its fat binaries with the public cuLibraryLoadData/cuLibraryGetKernel
 * (fatbin.c reads them) and launches with cuLaunchKernel: every launch stays visible to a
 * preloaded library such as cufold. Every slot not implemented is a function that logs the
 * table and slot and returns CUDA_ERROR_NOT_SUPPORTED, so a new runtime that needs one names it
 * instead of jumping through a null pointer. An unknown UUID is logged and answered
 * CUDA_ERROR_NOT_FOUND.
 *
 * Slots that touch device state take the device lock with sim_enter under a name of their own,
 * "cuGetExportTable.<table>.<what>", so SIMCUDA_STATS counts what the runtime did privately and
 * SIMCUDA_FAIL can fail it; those that act like a public entry point call it (counted under
 * its own name). */
#include "sim_int.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ET_MAX_STUBS 144 /* unimplemented slots of all tables together (108 today) */

struct et_table {
	const char *name;            /* what the runtime uses it for */
	unsigned char uuid[16];      /* as the runtime passes it, in memory order */
	bool sized;                  /* slot 0 holds the table's size in bytes */
	unsigned int nslots;         /* slots, the size word included */
	const void **slots;          /* the table handed out (built on first request) */
	const struct et_slot *fns;   /* implemented slots, ended by a NULL fn; the others log */
	CUresult absent;             /* when slots is NULL: the answer */
};

static const char *stub_table[ET_MAX_STUBS];
static unsigned int stub_slot[ET_MAX_STUBS];
static bool stub_logged[ET_MAX_STUBS];

/* An unimplemented slot: stub_<tag> for tag = 10..17, 20..27, ... is the (tag/10-1)*8 + tag%10'th
 * stub, bound to a table and slot by table_build. */
static CUresult stub_hit(unsigned int tag)
{
	unsigned int n = (tag / 10 - 1) * 8 + tag % 10;

	/* Once per slot: the runtime may call tool slots around every graph operation, and carries
	 * on whatever they answer (seen: tools-hooks 1 and 4, tools-tls 2, with some builds of this
	 * library and not others; what decides it is not known). */
	if (!__atomic_exchange_n(&stub_logged[n], true, __ATOMIC_RELAXED))
		sim_log("export table %s slot %u called: not implemented by the software device "
			"(answered CUDA_ERROR_NOT_SUPPORTED; logged once)",
			stub_table[n] ? stub_table[n] : "?", stub_slot[n]);
	return CUDA_ERROR_NOT_SUPPORTED;
}

#define STUB(n) static CUresult stub_##n(void) { return stub_hit(n); }
#define STUB8(n) STUB(n##0) STUB(n##1) STUB(n##2) STUB(n##3) STUB(n##4) STUB(n##5) STUB(n##6) STUB(n##7)
STUB8(1) STUB8(2) STUB8(3) STUB8(4) STUB8(5) STUB8(6) STUB8(7) STUB8(8) STUB8(9)
STUB8(10) STUB8(11) STUB8(12) STUB8(13) STUB8(14) STUB8(15) STUB8(16) STUB8(17) STUB8(18)
#define REF8(n) stub_##n##0, stub_##n##1, stub_##n##2, stub_##n##3, stub_##n##4, stub_##n##5, stub_##n##6, stub_##n##7
static CUresult (*const stubs[ET_MAX_STUBS])(void) = {
	REF8(1),  REF8(2),  REF8(3),  REF8(4),  REF8(5),  REF8(6),  REF8(7),  REF8(8),  REF8(9),
	REF8(10), REF8(11), REF8(12), REF8(13), REF8(14), REF8(15), REF8(16), REF8(17), REF8(18),
};
static unsigned int stubs_used;

typedef void (*et_fn)(void);

struct et_slot {
	unsigned int slot;           /* index in the table */
	et_fn fn;                    /* our implementation */
};

static CUresult cudart_load_compilers(void)
{
	return CUDA_SUCCESS;
}

/* The runtime's primary context for a device, retained (it releases it at its own reset). */
static CUresult cudart_primary_ctx(CUcontext *pctx, CUdevice dev)
{
	return cuDevicePrimaryCtxRetain(pctx, dev);
}

static const struct et_slot cudart_fns[] = {
	{ 2, (et_fn)cudart_primary_ctx },
	{ 12, (et_fn)cudart_load_compilers },
	{ 0, NULL },
};

/* Tool hooks: two buffers of callback state shared by the runtime and tools (a profiler). The
 * sizes answered are those the runtime expects (1024 and 14); what unit they count is not
 * documented, so each buffer is given room for 8-byte units, zeroed: no stray byte can look
 * like an attached tool. */
static _Alignas(64) unsigned char hooks_buf1[1024 * 8];
static _Alignas(64) unsigned char hooks_buf2[14 * 8];

static void hooks_buffer1(void **ptr, size_t *size)
{
	*ptr = hooks_buf1;
	*size = 1024;
}

static void hooks_buffer2(void **ptr, size_t *size)
{
	*ptr = hooks_buf2;
	*size = 14;
}

static const struct et_slot hooks_fns[] = {
	{ 2, (et_fn)hooks_buffer1 },
	{ 6, (et_fn)hooks_buffer2 },
	{ 0, NULL },
};

/* ------------------------------------------------------------------ tools-tls, context-identity */

/* The calling thread's current context (NULL and CUDA_ERROR_INVALID_CONTEXT when it has none). */
static CUresult tls_current_ctx(void **pctx)
{
	struct sim_ctx *c;

	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	c = sim_is_initialized() ? sim_ctx_current() : NULL;
	*pctx = c;
	return c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static const struct et_slot tls_fns[] = {
	{ 2, (et_fn)tls_current_ctx },
	{ 0, NULL },
};

/* A context's unique id, as cuCtxGetId answers (NULL: the current context). */
static CUresult ident_ctx_id(CUcontext ctx, uint64_t *id)
{
	unsigned long long v = 0;
	CUresult rc = sim_api_cuCtxGetId(ctx, &v);

	if (rc == CUDA_SUCCESS && id)
		*id = v;
	return id ? rc : CUDA_ERROR_INVALID_VALUE;
}

/* Whether h names a stream: NULL, the legacy and per-thread handles, or a stream created in a
 * live context. */
static bool ident_stream_ok(CUstream h)
{
	CUcontext c;

	return !h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD || sim_api_cuStreamGetCtx(h, &c) == CUDA_SUCCESS;
}

static CUresult ident_stream_private(CUcontext ctx, CUstream h, void **priv, int per_thread)
{
	(void)ctx;
	if (!priv)
		return CUDA_ERROR_INVALID_VALUE;
	if (!ident_stream_ok(h))
		return CUDA_ERROR_INVALID_HANDLE;
	*priv = !h && per_thread ? (void *)CU_STREAM_PER_THREAD : (void *)h;
	return CUDA_SUCCESS;
}

static CUresult ident_stream_identity(CUcontext ctx, const void *priv, uint64_t *identity)
{
	(void)ctx;
	if (!identity || !ident_stream_ok((CUstream)(uintptr_t)priv))
		return CUDA_ERROR_INVALID_VALUE;
	*identity = (uint64_t)(uintptr_t)priv;
	return CUDA_SUCCESS;
}

static const struct et_slot ident_fns[] = {
	{ 4, (et_fn)ident_ctx_id },
	{ 39, (et_fn)ident_stream_identity },
	{ 51, (et_fn)ident_stream_private },
	{ 0, NULL },
};

/* ------------------------------------------------------------------ context-local storage
 *
 * The runtime keeps its per-context state (its module registrations, streams, ...) in values
 * the driver stores for it by (context, key); NULL names the current context. A value lives
 * until deleted; the destructor would run when the context is destroyed, which the software
 * device never does to a primary context, so it is kept but not called. */

typedef void (*cls_dtor)(CUcontext ctx, void *key, void *value);

struct cls_value {
	struct sim_ctx *ctx;         /* owning context */
	void *key;                   /* the runtime's key */
	void *value;                 /* its value */
	cls_dtor dtor;               /* given at put; not called (see above) */
	struct cls_value *next;      /* next in cls_values */
};

static struct cls_value *cls_values;

/* The context a call names: ctx itself when live, the current one for NULL; NULL if neither. */
static struct sim_ctx *cls_ctx(CUcontext ctx)
{
	return ctx ? sim_ctx_from(ctx) : sim_ctx_current();
}

static struct cls_value **cls_find(struct sim_ctx *c, void *key)
{
	struct cls_value **p = &cls_values;

	while (*p && ((*p)->ctx != c || (*p)->key != key))
		p = &(*p)->next;
	return p;
}

static CUresult cls_put(CUcontext ctx, void *key, void *value, cls_dtor dtor)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, "cuGetExportTable.context-local-storage.put");
	struct sim_ctx *c;
	struct cls_value **p, *v;

	if (rc != CUDA_SUCCESS)
		return rc;
	c = cls_ctx(ctx);
	if (!c) {
		rc = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	p = cls_find(c, key);
	v = *p;
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
		v->ctx = c;
		v->key = key;
		*p = v;
	}
	v->value = value;
	v->dtor = dtor;
out:
	return sim_leave(rc);
}

static CUresult cls_delete(CUcontext ctx, void *key)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, "cuGetExportTable.context-local-storage.delete");
	struct sim_ctx *c;
	struct cls_value **p, *v;

	if (rc != CUDA_SUCCESS)
		return rc;
	c = cls_ctx(ctx);
	if (!c) {
		rc = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	p = cls_find(c, key);
	v = *p;
	if (v) {
		*p = v->next;
		free(v);
	}
out:
	return sim_leave(rc);
}

/* A key never put answers CUDA_ERROR_INVALID_HANDLE: the runtime then creates its state. */
static CUresult cls_get(void **value, CUcontext ctx, void *key)
{
	static struct sim_entry entry;
	CUresult rc = sim_enter(&entry, "cuGetExportTable.context-local-storage.get");
	struct sim_ctx *c;
	struct cls_value *v;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!value) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	*value = NULL;
	c = cls_ctx(ctx);
	if (!c) {
		rc = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	v = *cls_find(c, key);
	if (v)
		*value = v->value;
	else
		rc = CUDA_ERROR_INVALID_HANDLE;
out:
	return sim_leave(rc);
}

static const struct et_slot cls_fns[] = {
	{ 0, (et_fn)cls_put },
	{ 1, (et_fn)cls_delete },
	{ 2, (et_fn)cls_get },
	{ 0, NULL },
};

/* Context checks: slot 2, whether a context is usable by the runtime (flags 0: nothing to
 * report); slot 3, called once at start-up. Others document slot 3 as taking nothing and
 * returning a word; cudart 13.0 passes it three arguments (a pointer into its own data, 64 and
 * NULL), so its job is not known. Answering 0 and touching nothing lets the runtime go on. */
static CUresult checks_context(CUcontext ctx, unsigned int *flags, const void **detail)
{
	(void)ctx;
	if (flags)
		*flags = 0;
	if (detail)
		*detail = NULL;
	return CUDA_SUCCESS;
}

static unsigned int checks_global(void)
{
	return 0;
}

static const struct et_slot checks_fns[] = {
	{ 2, (et_fn)checks_context },
	{ 3, (et_fn)checks_global },
	{ 0, NULL },
};

/* ------------------------------------------------------------------ integrity check
 *
 * The runtime checks it talks to a genuine driver: it calls slot 1 with a version word and the
 * time, and compares the 16 bytes it gets with what it computes itself. For versions ending in
 * 0 and 1 the answer is a constant; for the others (CUDA 13.0's cudart asks 13000, 13001, then
 * 13002) it is HMAC-MD2 (RFC 2104 over RFC 1319) under a fixed 16-byte key, of: the driver
 * version, the version word, the process and thread ids (32 bits each), the addresses of the
 * cudart table, of the integrity table and of the check function itself, the time, then for
 * each device its UUID and PCI domain, bus and device numbers. Layout and constants as
 * documented by projects that run the runtime on other drivers (ZLUDA's dark_api); MD2 and
 * HMAC written from the RFCs. */

/* RFC 1319's substitution table, built from the digits of pi. */
static const uint8_t md2_s[256] = {
	41, 46, 67, 201, 162, 216, 124, 1, 61, 54, 84, 161, 236, 240, 6, 19,
	98, 167, 5, 243, 192, 199, 115, 140, 152, 147, 43, 217, 188, 76, 130, 202,
	30, 155, 87, 60, 253, 212, 224, 22, 103, 66, 111, 24, 138, 23, 229, 18,
	190, 78, 196, 214, 218, 158, 222, 73, 160, 251, 245, 142, 187, 47, 238, 122,
	169, 104, 121, 145, 21, 178, 7, 63, 148, 194, 16, 137, 11, 34, 95, 33,
	128, 127, 93, 154, 90, 144, 50, 39, 53, 62, 204, 231, 191, 247, 151, 3,
	255, 25, 48, 179, 72, 165, 181, 209, 215, 94, 146, 42, 172, 86, 170, 198,
	79, 184, 56, 210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4, 241,
	69, 157, 112, 89, 100, 113, 135, 32, 134, 91, 207, 101, 230, 45, 168, 2,
	27, 96, 37, 173, 174, 176, 185, 246, 28, 70, 97, 105, 52, 64, 126, 15,
	85, 71, 163, 35, 221, 81, 175, 58, 195, 92, 249, 206, 186, 197, 234, 38,
	44, 83, 13, 110, 133, 40, 132, 9, 211, 223, 205, 244, 65, 129, 77, 82,
	106, 220, 55, 200, 108, 193, 171, 250, 36, 225, 123, 8, 12, 189, 177, 74,
	120, 136, 149, 139, 227, 99, 232, 109, 233, 203, 213, 254, 59, 0, 29, 57,
	242, 239, 183, 14, 102, 88, 208, 228, 166, 119, 114, 248, 235, 117, 75, 10,
	49, 68, 80, 180, 143, 237, 31, 26, 219, 153, 141, 51, 159, 17, 131, 20,
};

struct md2 {
	uint8_t x[48];               /* state: digest, block, block ^ digest */
	uint8_t sum[16];             /* running checksum */
	uint8_t block[16];           /* bytes not yet processed */
	unsigned int n;              /* of them */
};

static void md2_block(struct md2 *m, const uint8_t *b, bool checksum)
{
	uint8_t t = 0, l = m->sum[15];

	for (int j = 0; j < 16; j++) {
		m->x[16 + j] = b[j];
		m->x[32 + j] = (uint8_t)(b[j] ^ m->x[j]);
	}
	for (int j = 0; j < 18; j++) {
		for (int k = 0; k < 48; k++)
			t = m->x[k] ^= md2_s[t];
		t = (uint8_t)(t + j);
	}
	for (int j = 0; checksum && j < 16; j++)
		l = m->sum[j] ^= md2_s[b[j] ^ l];
}

static void md2_update(struct md2 *m, const void *p, size_t len, uint8_t mask)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++) {
		m->block[m->n++] = (uint8_t)(b[i] ^ mask);
		if (m->n == 16) {
			md2_block(m, m->block, true);
			m->n = 0;
		}
	}
}

static void md2_final(struct md2 *m, uint8_t out[16])
{
	uint8_t pad = (uint8_t)(16 - m->n);
	uint8_t sum[16];

	while (m->n)
		md2_update(m, &pad, 1, 0);
	if (pad == 16) /* a whole block of 16s when the message filled its last block */
		for (int i = 0; i < 16; i++)
			md2_update(m, &pad, 1, 0);
	memcpy(sum, m->sum, 16);
	md2_block(m, sum, false);
	memcpy(out, m->x, 16);
}

static const uint8_t integrity_key[16] = {
	0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52, 0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f,
};

struct integrity_head {
	uint32_t driver_version;     /* cuDriverGetVersion */
	uint32_t version;            /* the runtime's version word */
	uint32_t pid;                /* getpid() */
	uint32_t tid;                /* pthread_self(), low 32 bits */
	const void *cudart_table;    /* the table handed out for the cudart UUID */
	const void *integrity_table; /* this table */
	const void *check_fn;        /* integrity_check's address */
	uint64_t unix_seconds;       /* the runtime's time argument */
};

struct integrity_device {
	CUuuid uuid;                 /* cuDeviceGetUuid */
	int32_t pci_domain;          /* CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID */
	int32_t pci_bus;             /* ..._PCI_BUS_ID */
	int32_t pci_device;          /* ..._PCI_DEVICE_ID */
};

static const void *cudart_slots[13];
static const void *integrity_slots[3];

static CUresult integrity_check(unsigned int version, uint64_t unix_seconds, uint64_t result[2])
{
	struct integrity_head h;
	struct md2 m;
	uint8_t inner[16], out[16];
	int driver = 0, ndev = 0;
	CUresult rc = CUDA_SUCCESS;

	if (!result) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (version % 10 <= 1) {
		result[0] = version % 10 ? 0x1841181c03cb675cull : 0x3341181c03cb675cull;
		result[1] = 0x8ed383aa1f4cd1e8ull;
		goto out;
	}
	memset(&h, 0, sizeof(h));
	(void)cuDriverGetVersion(&driver);
	h.driver_version = (uint32_t)driver;
	h.version = version;
	h.pid = (uint32_t)getpid();
	h.tid = (uint32_t)(uintptr_t)pthread_self();
	h.cudart_table = cudart_slots;
	h.integrity_table = integrity_slots;
	h.check_fn = (const void *)(uintptr_t)integrity_check;
	h.unix_seconds = unix_seconds;
	memset(&m, 0, sizeof(m));
	md2_update(&m, integrity_key, 16, 0x36);
	md2_update(&m, &h, sizeof(h), 0);
	rc = cuDeviceGetCount(&ndev);
	for (int i = 0; rc == CUDA_SUCCESS && i < ndev; i++) {
		struct integrity_device d;
		CUdevice dev;

		memset(&d, 0, sizeof(d));
		rc = cuDeviceGet(&dev, i);
		if (rc == CUDA_SUCCESS)
			rc = cuDeviceGetUuid_v2(&d.uuid, dev);
		if (rc == CUDA_SUCCESS)
			rc = cuDeviceGetAttribute(&d.pci_domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev);
		if (rc == CUDA_SUCCESS)
			rc = cuDeviceGetAttribute(&d.pci_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
		if (rc == CUDA_SUCCESS)
			rc = cuDeviceGetAttribute(&d.pci_device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev);
		md2_update(&m, &d, sizeof(d), 0);
	}
	md2_final(&m, inner);
	memset(&m, 0, sizeof(m));
	md2_update(&m, integrity_key, 16, 0x5c);
	md2_update(&m, inner, 16, 0);
	md2_final(&m, out);
	memcpy(result, out, 16);
out:
	return rc;
}

static const struct et_slot integrity_fns[] = {
	{ 1, (et_fn)integrity_check },
	{ 0, NULL },
};

static const void *hooks_slots[7];
static const void *cls_slots[3];
static const void *tls_slots[4];
static const void *ident_slots[93];
static const void *checks_slots[4];

static struct et_table tables[] = {
	{ "runtime-init",
	  { 0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e,
	    0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9 },
	  false, 0, NULL, NULL, CUDA_ERROR_NOT_FOUND },
	{ "cudart",
	  { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
	    0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 },
	  true, 13, cudart_slots, cudart_fns, 0 },
	{ "tools-hooks",
	  { 0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74,
	    0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66 },
	  true, 7, hooks_slots, hooks_fns, 0 },
	{ "context-local-storage",
	  { 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11,
	    0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 },
	  false, 3, cls_slots, cls_fns, 0 },
	{ "tools-tls",
	  { 0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47,
	    0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc },
	  true, 4, tls_slots, tls_fns, 0 },
	{ "context-identity",
	  { 0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48,
	    0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2 },
	  true, 93, ident_slots, ident_fns, 0 },
	{ "context-checks",
	  { 0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43,
	    0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e },
	  true, 4, checks_slots, checks_fns, 0 },
	{ "integrity",
	  { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
	    0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 },
	  true, 3, integrity_slots, integrity_fns, 0 },
	{ "nvrtc",
	  { 0xda, 0x91, 0x51, 0xd3, 0x3a, 0xe6, 0xcc, 0x41,
	    0xa5, 0xc0, 0x4f, 0x26, 0xd5, 0x33, 0xe3, 0x28 },
	  false, 0, NULL, NULL, CUDA_ERROR_NOT_FOUND },
};

#define NTABLES (sizeof(tables) / sizeof(tables[0]))

static void table_build(struct et_table *t)
{
	for (const struct et_slot *f = t->fns; f && f->fn; f++)
		memcpy(&t->slots[f->slot], &f->fn, sizeof(void *));
	for (unsigned int i = 0; i < t->nslots; i++) {
		if (t->slots[i])
			continue;
		if (i == 0 && t->sized) {
			t->slots[0] = (const void *)(uintptr_t)(t->nslots * sizeof(void *));
			continue;
		}
		if (stubs_used < ET_MAX_STUBS) {
			stub_table[stubs_used] = t->name;
			stub_slot[stubs_used] = i;
			memcpy(&t->slots[i], &stubs[stubs_used], sizeof(void *));
			stubs_used++;
		}
	}
}

CUresult sim_api_cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
	static bool built;
	CUresult rc = CUDA_SUCCESS;
	const unsigned char *u;

	if (!ppExportTable || !pExportTableId) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (!built) {
		for (size_t i = 0; i < NTABLES; i++)
			if (tables[i].slots)
				table_build(&tables[i]);
		built = true;
	}
	*ppExportTable = NULL;
	u = (const unsigned char *)pExportTableId->bytes;
	rc = CUDA_ERROR_NOT_FOUND;
	for (size_t i = 0; i < NTABLES; i++) {
		if (memcmp(u, tables[i].uuid, 16))
			continue;
		if (tables[i].slots) {
			*ppExportTable = tables[i].slots;
			rc = CUDA_SUCCESS;
		} else {
			rc = tables[i].absent;
		}
		goto out;
	}
	sim_log("cuGetExportTable: unknown table %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
out:
	return rc;
}
