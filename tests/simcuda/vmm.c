/* vmm.c - the software device's virtual memory management: address reservations, physical
 * allocations (cuMemCreate), mappings and their access. tests/simcuda layer.
 *
 * Device pointers are host addresses that twins dereference (sim_int.h invariant 4), so a
 * mapping must be a real host mapping of the physical memory:
 *  1. A physical allocation is a memfd of its size (pages appear when first touched). Mapping
 *     it maps the file MAP_SHARED at the device address, so one allocation mapped at several
 *     addresses is the same bytes seen through each.
 *  2. A reservation is a piece of memory.c's device range (sim__mem_range_reserve), remapped
 *     PROT_NONE: an address nothing is mapped at faults, as on the device. cuMemAddressFree
 *     makes it ordinary range memory again and gives it back.
 *  3. A mapping starts with no access (PROT_NONE, as CUDA documents); cuMemSetAccess sets the
 *     protection. Each run of adjacent mappings some device may read is one entry of memory.c's
 *     allocation map, so copies, memsets, pointer attributes and cuMemGetAddressRange know it,
 *     and a copy may cross from one mapping into the next, as on the device (PyTorch's
 *     expandable segments place blocks across the chunks they map).
 *  4. cuMemUnmap is synchronous (\note_sync): it runs all pending work first, as cuMemFree
 *     does, so queued work never touches unmapped addresses; then the range is PROT_NONE again.
 *  5. A physical allocation lives while a handle to it (cuMemCreate, each
 *     cuMemRetainAllocationHandle) is unreleased or a mapping of it exists. Its bytes count as
 *     used device memory (cuMemGetInfo) from cuMemCreate until it is freed.
 *  6. Shareable handles are POSIX file descriptors (the only type the device offers): exporting
 *     hands out a dup of the memfd, importing one makes a new handle on the same file, so a
 *     mapping of either is the same bytes (in this process or another). An imported handle is
 *     not charged again: the bytes were counted when the exporter created them. */
#include "sim_mem_int.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define SIM_MAGIC_VMEM 0x564d4d31u  /* "VMM1" */
#define VMM_GRANULARITY (2u << 20)  /* what an H100/H200 reports, minimum and recommended */

int sim__device_count(void); /* device.c */

struct sim_vmem {
	uint32_t magic;              /* SIM_MAGIC_VMEM; cleared when freed */
	int fd;                      /* the memfd holding the bytes */
	size_t size;                 /* bytes, a multiple of the granularity */
	CUmemAllocationProp prop;    /* as created */
	unsigned int handles;        /* unreleased handles: cuMemCreate + retains - releases */
	unsigned int maps;           /* live mappings of it */
	bool charged;                /* counted as used memory (created here, not imported) */
};

struct sim_vres {
	uintptr_t base;              /* first address */
	size_t size;                 /* bytes, as reserved */
	struct sim_vres *next;       /* next reservation */
};

struct sim_vmap {
	uintptr_t base;              /* first mapped address */
	size_t size;                 /* bytes mapped */
	struct sim_vmem *mem;        /* what is mapped there */
	unsigned long long access[SIM_MAX_DEVICES]; /* CU_MEM_ACCESS_FLAGS_PROT_* per device */
	bool readable;               /* some device may access it: in the allocation map */
	struct sim_ctx *ctx;         /* current at its last cuMemSetAccess (pointer attributes) */
	struct sim_vmap *next;       /* next mapping */
};

static struct sim_vres *reservations; /* every live reservation */
static struct sim_vmap *mappings;    /* every live mapping */

/* ------------------------------------------------------------------ helpers */

static bool is_multiple(size_t v, size_t unit)
{
	return v % unit == 0;
}

static struct sim_vmem *vmem_from(CUmemGenericAllocationHandle h)
{
	struct sim_vmem *m = (struct sim_vmem *)(uintptr_t)h;

	return sim_handle_is_live(m, SIM_MAGIC_VMEM) ? m : NULL;
}

/* Free a physical allocation once nothing holds it (invariant 5). */
static void vmem_maybe_free(struct sim_vmem *m)
{
	if (m->handles || m->maps)
		return;
	sim_handle_remove(m);
	m->magic = 0;
	close(m->fd);
	if (m->charged)
		sim__mem_uncharge(m->size);
	free(m);
}

/* The reservation holding all of [p, p+n), or NULL. */
static struct sim_vres *vres_holding(uintptr_t p, size_t n)
{
	for (struct sim_vres *r = reservations; r; r = r->next)
		if (p >= r->base && p - r->base < r->size && n <= r->size - (p - r->base))
			return r;
	return NULL;
}

/* The mapping containing p, or NULL. */
static struct sim_vmap *vmap_at(uintptr_t p)
{
	for (struct sim_vmap *m = mappings; m; m = m->next)
		if (p >= m->base && p - m->base < m->size)
			return m;
	return NULL;
}

static bool vmap_overlaps(uintptr_t p, size_t n)
{
	for (struct sim_vmap *m = mappings; m; m = m->next)
		if (p < m->base + m->size && m->base < p + n)
			return true;
	return false;
}

/* Whether whole mappings, back to back, cover exactly [p, p+n). */
static bool vmaps_tile(uintptr_t p, size_t n)
{
	uintptr_t at = p;

	while (at < p + n) {
		struct sim_vmap *m = vmap_at(at);

		if (!m || m->base != at || m->size > p + n - at)
			return false;
		at += m->size;
	}
	return n > 0;
}

/* Allocation properties the software device can honour: pinned memory on one of its devices,
 * exportable (if asked) only as a POSIX file descriptor. bad_device tells a wrong ordinal. */
static CUresult prop_check(const CUmemAllocationProp *prop, bool bad_device_is_device_error)
{
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->location.id < 0 || prop->location.id >= sim__device_count() ||
	    prop->location.id >= SIM_MAX_DEVICES)
		return bad_device_is_device_error ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_INVALID_VALUE;
	if (prop->requestedHandleTypes & ~(unsigned int)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	return CUDA_SUCCESS;
}

static int vmap_cmp(const void *a, const void *b)
{
	uintptr_t x = (*(struct sim_vmap *const *)a)->base, y = (*(struct sim_vmap *const *)b)->base;

	return x < y ? -1 : x > y;
}

/* Enter r's readable mappings in the allocation map again, one entry per run of adjacent ones
 * (invariant 3). */
static CUresult vres_sync(struct sim_vres *r)
{
	struct sim_vmap **v = NULL;
	size_t n = 0, cap = 0;
	CUresult rc = CUDA_SUCCESS;

	sim__mem_unmap_vmm(r->base, r->size);
	for (struct sim_vmap *m = mappings; m; m = m->next) {
		if (!m->readable || m->base < r->base || m->base - r->base >= r->size)
			continue;
		if (n == cap) {
			struct sim_vmap **nv = realloc(v, (cap ? 2 * cap : 16) * sizeof(*v));

			if (!nv) {
				rc = CUDA_ERROR_OUT_OF_MEMORY;
				goto out;
			}
			v = nv;
			cap = cap ? 2 * cap : 16;
		}
		v[n++] = m;
	}
	if (n)
		qsort(v, n, sizeof(*v), vmap_cmp);
	for (size_t i = 0; i < n && rc == CUDA_SUCCESS;) {
		size_t j = i + 1, len = v[i]->size;

		while (j < n && v[j]->base == v[i]->base + len)
			len += v[j++]->size;
		rc = sim__mem_map_vmm(v[i]->base, len, v[i]->ctx, v[i]->mem->prop.location.id);
		i = j;
	}
out:
	free(v);
	return rc;
}

/* Make [p, p+n) an empty reservation again: nothing mapped, no access. */
static bool make_reserved(uintptr_t p, size_t n)
{
	return mmap((void *)p, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) !=
	       MAP_FAILED;
}

/* ------------------------------------------------------------------ granularity and handles */

CUresult sim_api_cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
					       CUmemAllocationGranularity_flags option)
{
	CUresult rc = CUDA_SUCCESS;

	if (!sim_is_initialized())
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
				  option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		rc = prop_check(prop, false);
	if (rc == CUDA_SUCCESS)
		*granularity = VMM_GRANULARITY;
	return rc;
}

CUresult sim_api_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
			     unsigned long long flags)
{
	struct sim_vmem *m = NULL;
	CUresult rc = CUDA_SUCCESS;

	if (!sim_is_initialized()) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	if (!handle || flags != 0 || size == 0 || !is_multiple(size, VMM_GRANULARITY)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	rc = prop_check(prop, true);
	if (rc != CUDA_SUCCESS)
		goto out;
	m = calloc(1, sizeof(*m));
	if (!m || !sim__mem_charge(size)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	m->fd = memfd_create("simcuda-vmm", MFD_CLOEXEC);
	if (m->fd < 0 || ftruncate(m->fd, (off_t)size) != 0) {
		sim_log("vmm: cannot create %zu bytes of physical memory", size);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_uncharge;
	}
	m->magic = SIM_MAGIC_VMEM;
	m->size = size;
	m->prop = *prop;
	m->handles = 1;
	m->charged = true;
	sim_handle_add(m);
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)m;
	goto out;
out_uncharge:
	if (m->fd >= 0)
		close(m->fd);
	sim__mem_uncharge(size);
out_free:
	free(m);
out:
	return rc;
}

CUresult sim_api_cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct sim_vmem *m;
	CUresult rc = CUDA_SUCCESS;

	m = vmem_from(handle);
	if (!sim_is_initialized())
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!m || m->handles == 0)
		rc = CUDA_ERROR_INVALID_VALUE; /* undefined in CUDA; an error here */
	else {
		m->handles--;
		vmem_maybe_free(m);
	}
	return rc;
}

CUresult sim_api_cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	struct sim_vmap *v;
	CUresult rc = CUDA_SUCCESS;

	v = vmap_at((uintptr_t)addr);
	if (!sim_is_initialized())
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!handle || !v)
		rc = CUDA_ERROR_INVALID_VALUE;
	else {
		v->mem->handles++;
		*handle = (CUmemGenericAllocationHandle)(uintptr_t)v->mem;
	}
	return rc;
}

CUresult sim_api_cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop, CUmemGenericAllocationHandle handle)
{
	struct sim_vmem *m;
	CUresult rc = CUDA_SUCCESS;

	m = vmem_from(handle);
	if (!sim_is_initialized())
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!prop || !m)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		*prop = m->prop;
	return rc;
}

CUresult sim_api_cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
					      CUmemAllocationHandleType handleType, unsigned long long flags)
{
	struct sim_vmem *m;
	int fd;
	CUresult rc = CUDA_SUCCESS;

	m = vmem_from(handle);
	if (!sim_is_initialized())
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!shareableHandle || !m || flags != 0)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		rc = CUDA_ERROR_NOT_SUPPORTED;
	else if (!(m->prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
		rc = CUDA_ERROR_INVALID_VALUE; /* not requested at cuMemCreate */
	else if ((fd = fcntl(m->fd, F_DUPFD_CLOEXEC, 0)) < 0)
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	else
		memcpy(shareableHandle, &fd, sizeof(fd));
	return rc;
}

CUresult sim_api_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
						CUmemAllocationHandleType shHandleType)
{
	int fd = (int)(intptr_t)osHandle;
	struct sim_vmem *m = NULL;
	struct stat st;
	CUresult rc = CUDA_SUCCESS;

	if (!sim_is_initialized()) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
		rc = CUDA_ERROR_NOT_SUPPORTED;
		goto out;
	}
	/* the file must be a whole number of chunks: what an export of this device hands out */
	if (!handle || fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0 ||
	    !is_multiple((size_t)st.st_size, VMM_GRANULARITY)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	m = calloc(1, sizeof(*m));
	if (!m || (m->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		free(m);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	m->magic = SIM_MAGIC_VMEM;
	m->size = (size_t)st.st_size;
	m->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	m->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE; /* device 0: a file does not say */
	m->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	m->handles = 1;
	sim_handle_add(m);
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)m;
out:
	return rc;
}

/* ------------------------------------------------------------------ reservations */

CUresult sim_api_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
				     unsigned long long flags)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct sim_vres *r = NULL;
	uintptr_t base = 0;
	CUresult rc = CUDA_SUCCESS;

	if (!sim_is_initialized()) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	if (!ptr || flags != 0 || size == 0 || !is_multiple(size, page) || !is_multiple(addr, page) ||
	    (alignment & (alignment - 1))) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	/* addr is only a hint: the software device places every reservation itself. At least the
	 * granularity, so that a reservation can be mapped from its first byte. */
	if (alignment < VMM_GRANULARITY)
		alignment = VMM_GRANULARITY;
	r = calloc(1, sizeof(*r));
	if (!r) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	rc = sim__mem_range_reserve(size, alignment, &base);
	if (rc != CUDA_SUCCESS)
		goto out_free;
	if (!make_reserved(base, size)) {
		sim__mem_range_release(base, size);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	r->base = base;
	r->size = size;
	r->next = reservations;
	reservations = r;
	*ptr = (CUdeviceptr)base;
	goto out;
out_free:
	free(r);
out:
	return rc;
}

CUresult sim_api_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct sim_vres **pp = &reservations;
	CUresult rc = CUDA_SUCCESS;

	if (!sim_is_initialized()) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	while (*pp && ((*pp)->base != (uintptr_t)ptr || (*pp)->size != size))
		pp = &(*pp)->next;
	/* A reservation with live mappings is refused: they must be unmapped first. */
	if (!*pp || vmap_overlaps((uintptr_t)ptr, size)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	{
		struct sim_vres *r = *pp;

		/* Ordinary private memory of the device range again, then back to its free list. */
		if (mmap((void *)r->base, r->size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
		sim__mem_range_release(r->base, r->size);
		*pp = r->next;
		free(r);
	}
out:
	return rc;
}

/* ------------------------------------------------------------------ mappings */

CUresult sim_api_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
			  unsigned long long flags)
{
	struct sim_vmem *m;
	struct sim_vmap *v = NULL;
	CUresult rc = CUDA_SUCCESS;

	if (!sim_is_initialized()) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	m = vmem_from(handle);
	/* Offsets other than 0 are accepted (granularity-aligned): memfd maps them as easily. */
	if (!m || flags != 0 || size == 0 || !is_multiple(ptr, VMM_GRANULARITY) ||
	    !is_multiple(size, VMM_GRANULARITY) || !is_multiple(offset, VMM_GRANULARITY) ||
	    offset > m->size || size > m->size - offset || !vres_holding((uintptr_t)ptr, size) ||
	    vmap_overlaps((uintptr_t)ptr, size)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	v = calloc(1, sizeof(*v));
	if (!v) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	if (mmap((void *)(uintptr_t)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, m->fd, (off_t)offset) ==
	    MAP_FAILED) {
		sim_log("vmm: cannot map %zu bytes at %#llx", size, (unsigned long long)ptr);
		free(v);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	v->base = (uintptr_t)ptr;
	v->size = size;
	v->mem = m;
	v->next = mappings;
	mappings = v;
	m->maps++;
out:
	return rc;
}

CUresult sim_api_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	struct sim_ctx *ctx;
	struct sim_vres *r;
	CUresult rc = CUDA_SUCCESS;

	if (!sim_is_initialized()) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	r = vres_holding((uintptr_t)ptr, size);
	if (!r || !vmaps_tile((uintptr_t)ptr, size)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	ctx = sim_ctx_current();
	if (ctx) {
		rc = sim__capture_check_sync(ctx, NULL);
		if (rc != CUDA_SUCCESS)
			goto out;
	}
	sim_sched_drain(NULL); /* invariant 4 */
	for (struct sim_vmap **pp = &mappings; *pp;) {
		struct sim_vmap *v = *pp;

		if (v->base < (uintptr_t)ptr || v->base - (uintptr_t)ptr >= size) {
			pp = &v->next;
			continue;
		}
		if (!make_reserved(v->base, v->size))
			sim_log("vmm: cannot unmap %zu bytes at %#lx", v->size, (unsigned long)v->base);
		*pp = v->next;
		v->mem->maps--;
		vmem_maybe_free(v->mem);
		free(v);
	}
	rc = vres_sync(r);
out:
	return rc;
}

/* Apply a mapping's access: the host protection is the widest any device has (one address
 * space serves them all). */
static CUresult vmap_apply(struct sim_vmap *v, struct sim_ctx *ctx)
{
	unsigned long long widest = CU_MEM_ACCESS_FLAGS_PROT_NONE;
	int prot;

	for (int d = 0; d < SIM_MAX_DEVICES; d++)
		if (v->access[d] > widest)
			widest = v->access[d];
	prot = widest == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? PROT_READ | PROT_WRITE
	       : widest == CU_MEM_ACCESS_FLAGS_PROT_READ   ? PROT_READ
							    : PROT_NONE;
	v->readable = prot != PROT_NONE;
	v->ctx = ctx;
	return mprotect((void *)v->base, v->size, prot) == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult access_desc_check(const CUmemAccessDesc *d)
{
	if (d->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (d->location.id < 0 || d->location.id >= sim__device_count() || d->location.id >= SIM_MAX_DEVICES)
		return CUDA_ERROR_INVALID_DEVICE;
	if (d->flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d->flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
	    d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

CUresult sim_api_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	uintptr_t end = (uintptr_t)ptr + size;
	struct sim_vres *r;
	CUresult rc = CUDA_SUCCESS;

	if (!sim_is_initialized()) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	r = vres_holding((uintptr_t)ptr, size);
	if (!desc || count == 0 || !r || !vmaps_tile((uintptr_t)ptr, size)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	for (size_t i = 0; i < count && rc == CUDA_SUCCESS; i++)
		rc = access_desc_check(&desc[i]);
	if (rc != CUDA_SUCCESS)
		goto out;
	/* Synchronous (\note_sync): work queued before sees the old access. */
	sim_sched_drain(NULL);
	for (struct sim_vmap *v = mappings; v && rc == CUDA_SUCCESS; v = v->next) {
		if (v->base < (uintptr_t)ptr || v->base >= end)
			continue;
		for (size_t i = 0; i < count; i++)
			v->access[desc[i].location.id] = desc[i].flags;
		rc = vmap_apply(v, sim_ctx_current());
	}
	if (rc == CUDA_SUCCESS)
		rc = vres_sync(r);
out:
	return rc;
}

CUresult sim_api_cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
	struct sim_vmap *v;
	CUresult rc = CUDA_SUCCESS;

	v = vmap_at((uintptr_t)ptr);
	if (!sim_is_initialized())
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!flags || !location || location->type != CU_MEM_LOCATION_TYPE_DEVICE || !v)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (location->id < 0 || location->id >= sim__device_count() || location->id >= SIM_MAX_DEVICES)
		rc = CUDA_ERROR_INVALID_DEVICE;
	else
		*flags = v->access[location->id];
	return rc;
}
