/* memory.c - the software device's memory: device and managed allocations in one reserved
 * range, pinned and registered host memory, the allocation map, pointer attributes and
 * stream-ordered allocation with memory pools. tests/simcuda layer.
 *
 * Invariants:
 *  1. Device and managed memory lie in one private anonymous mapping reserved once (lazily);
 *     an allocation is a 256-byte aligned piece of it handed out first-fit from a sorted list
 *     of free extents. Host code may dereference any device address (sim_int.h invariant 4).
 *  2. Every live allocation of any kind is one entry of a map sorted by base address, so an
 *     address is resolved in O(log n). Entries never overlap.
 *  3. A freed piece returns to the free list at once, merged with its neighbours, and its
 *     whole pages are given back with MADV_DONTNEED: a later allocation of the same addresses
 *     reads zeros, as fresh memory does.
 *  4. cuMemFree, cuMemFreeHost and cuMemHostUnregister run all pending work first (the real
 *     ones synchronize), so queued work never touches memory after it is released.
 *     cuMemFreeAsync queues the release as stream work; until it runs the allocation stays in
 *     the map marked free_pending, so freeing it again is an error.
 *  5. A pool is bookkeeping only: its allocations are ordinary device allocations charged to
 *     it. A destroyed pool with live allocations lingers (magic cleared) until the last goes.
 *  6. Virtual memory management (vmm.c) takes its address reservations from the same range
 *     (uncharged: only cuMemCreate's physical memory counts as used) and enters each accessible
 *     mapping in the map as device memory marked vmm: copies, memsets, pointer attributes and
 *     address ranges see it like any allocation, but cuMemFree refuses it and removing it
 *     gives nothing back to the range (the reservation still holds the addresses). */
#include "sim_mem_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SIM_ALIGN 256u                          /* allocation granularity, as the driver's */
#define SIM_PITCH_ALIGN 512u                    /* cuMemAllocPitch row alignment */
#define SIM_RANGE_WANT (1ull << 40)             /* reserved range: above the modeled total, and room
						 * for VMM reservations as large as it (PyTorch's
						 * expandable segments reserve 9/8 of it each) */
#define SIM_RANGE_MIN (1ull << 30)              /* smallest range worth running with */
#define SIM_TOTAL_MEM 150754820096ull           /* an H200's cuDeviceTotalMem */
#define SIM_HOST_ALIGN 4096u                    /* pinned host allocations are page aligned */

struct sim_pool {
	uint32_t magic;              /* SIM_MAGIC_POOL, cleared when destroyed */
	int device;                  /* ordinal of its device */
	bool is_default;             /* the device's default pool (cannot be destroyed) */
	bool destroyed;              /* cuMemPoolDestroy called; freed when live reaches 0 */
	CUmemPoolProps props;        /* as created */
	int reuse_follow;            /* CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES */
	int reuse_opportunistic;     /* CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC */
	int reuse_internal;          /* CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES */
	cuuint64_t release_threshold; /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
	cuuint64_t used;             /* bytes of live allocations (also the reserved bytes) */
	cuuint64_t used_high;        /* high watermark of used since the last reset */
	cuuint64_t reserved_high;    /* high watermark of reserved since the last reset */
	unsigned int live;           /* live allocations made from it */
};

struct sim_alloc {
	uintptr_t base;              /* first byte */
	size_t size;                 /* bytes asked for */
	size_t span;                 /* bytes taken from the range (device, managed) */
	enum sim_mem_kind kind;      /* device, managed, pinned or registered */
	unsigned int flags;          /* cuMemHostAlloc / cuMemHostRegister / managed flags */
	struct sim_ctx *ctx;         /* context it was made in */
	int device;                  /* ordinal of that context's device */
	struct sim_pool *pool;       /* pool it was charged to, or NULL */
	uint64_t id;                 /* process-unique buffer id, never reused */
	bool free_pending;           /* a cuMemFreeAsync is queued for it */
	bool sync_memops;            /* CU_POINTER_ATTRIBUTE_SYNC_MEMOPS */
	bool vmm;                    /* a cuMemMap'ed range (vmm.c): no span, not for cuMemFree */
};

struct sim_extent {
	size_t off, len;             /* a free piece of the range: offset and length */
};

/* The payload of a queued cuMemFreeAsync. */
struct sim_free_op {
	uintptr_t base;              /* allocation to release */
	uint64_t id;                 /* its buffer id: a reused address is not freed twice */
};

static char *range_base;             /* the reserved range, NULL until first use */
static size_t range_size;            /* its length */
static struct sim_extent *free_ext;  /* free pieces, sorted by offset, never adjacent */
static size_t nfree, capfree;        /* used and allocated slots of free_ext */
static struct sim_alloc *allocs;     /* the allocation map, sorted by base */
static size_t nallocs, capallocs;    /* used and allocated slots of allocs */
static size_t used_bytes;            /* spans of live device and managed allocations */
static size_t used_peak;             /* the most used_bytes ever was (SIMCUDA_STATS) */
static uint64_t next_id = 1;         /* next buffer id */
static struct sim_pool *default_pools[SIM_MAX_DEVICES]; /* created on first use */
static struct sim_pool *current_pools[SIM_MAX_DEVICES]; /* cuDeviceSetMemPool, NULL: default */

/* ------------------------------------------------------------------ the reserved range */

static bool range_reserve(void)
{
	if (range_base)
		return true;
	for (size_t sz = SIM_RANGE_WANT; sz >= SIM_RANGE_MIN; sz /= 2) {
		void *p = mmap(NULL, sz, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED)
			continue;
		free_ext = malloc(16 * sizeof(*free_ext));
		if (!free_ext) {
			munmap(p, sz);
			return false;
		}
		capfree = 16;
		free_ext[0] = (struct sim_extent){ .off = 0, .len = sz };
		nfree = 1;
		range_base = p;
		range_size = sz;
		return true;
	}
	sim_log("memory: cannot reserve a device memory range");
	return false;
}

/* First fit: the lowest free piece that holds span bytes. */
static bool range_take(size_t span, uintptr_t *out)
{
	for (size_t i = 0; i < nfree; i++) {
		if (free_ext[i].len < span)
			continue;
		*out = (uintptr_t)range_base + free_ext[i].off;
		free_ext[i].off += span;
		free_ext[i].len -= span;
		if (free_ext[i].len == 0) {
			memmove(&free_ext[i], &free_ext[i + 1], (nfree - i - 1) * sizeof(*free_ext));
			nfree--;
		}
		return true;
	}
	return false;
}

/* Give span bytes at p back, merging with free neighbours; returns its pages to the kernel. */
static void range_give(uintptr_t p, size_t span)
{
	size_t off = p - (uintptr_t)range_base, lo = 0, hi = nfree, i;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), a, b, ext_lo, ext_hi;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (free_ext[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	i = lo; /* first piece after the freed one */
	if (i > 0 && free_ext[i - 1].off + free_ext[i - 1].len == off) {
		i--;
		free_ext[i].len += span;
	} else {
		if (nfree == capfree) {
			struct sim_extent *n = realloc(free_ext, 2 * capfree * sizeof(*free_ext));

			if (!n) {
				sim_log("memory: out of host memory; %zu bytes of device range lost", span);
				return;
			}
			free_ext = n;
			capfree *= 2;
		}
		memmove(&free_ext[i + 1], &free_ext[i], (nfree - i) * sizeof(*free_ext));
		free_ext[i] = (struct sim_extent){ .off = off, .len = span };
		nfree++;
	}
	if (i + 1 < nfree && free_ext[i].off + free_ext[i].len == free_ext[i + 1].off) {
		free_ext[i].len += free_ext[i + 1].len;
		memmove(&free_ext[i + 1], &free_ext[i + 2], (nfree - i - 2) * sizeof(*free_ext));
		nfree--;
	}
	/* The pages touching the freed piece that now lie wholly in free space. */
	ext_lo = free_ext[i].off;
	ext_hi = free_ext[i].off + free_ext[i].len;
	a = off / page * page;
	if (a < ext_lo)
		a += page;
	b = (off + span + page - 1) / page * page;
	if (b > ext_hi)
		b -= page;
	if (a < b)
		madvise(range_base + a, b - a, MADV_DONTNEED);
}

/* ------------------------------------------------------------------ the allocation map */

/* Index of the last entry with base <= p, or nallocs when none. */
static size_t map_floor(uintptr_t p)
{
	size_t lo = 0, hi = nallocs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (allocs[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 ? nallocs : lo - 1;
}

static struct sim_alloc *map_find(uintptr_t p, size_t n)
{
	size_t i = map_floor(p);
	struct sim_alloc *a;

	if (i == nallocs)
		return NULL;
	a = &allocs[i];
	if (n == 0)
		n = 1;
	if (p - a->base >= a->size || n > a->size - (p - a->base))
		return NULL;
	return a;
}

static struct sim_alloc *map_find_base(uintptr_t base)
{
	struct sim_alloc *a = map_find(base, 1);

	return a && a->base == base ? a : NULL;
}

/* Whether [p, p+n) overlaps any entry. */
static bool map_overlaps(uintptr_t p, size_t n)
{
	size_t i = map_floor(p + n - 1);

	return i != nallocs && allocs[i].base + allocs[i].size > p;
}

static struct sim_alloc *map_insert(const struct sim_alloc *a)
{
	size_t i = map_floor(a->base);

	i = i == nallocs ? 0 : i + 1;
	if (nallocs == capallocs) {
		size_t cap = capallocs ? 2 * capallocs : 64;
		struct sim_alloc *n = realloc(allocs, cap * sizeof(*allocs));

		if (!n)
			return NULL;
		allocs = n;
		capallocs = cap;
	}
	memmove(&allocs[i + 1], &allocs[i], (nallocs - i) * sizeof(*allocs));
	allocs[i] = *a;
	allocs[i].id = next_id++;
	nallocs++;
	return &allocs[i];
}

static void pool_release(struct sim_pool *pool, size_t size)
{
	pool->used -= size;
	pool->live--;
	if (pool->destroyed && pool->live == 0)
		free(pool);
}

/* Remove an entry and release what it holds. */
static void map_remove(struct sim_alloc *a)
{
	struct sim_alloc copy = *a;
	size_t i = (size_t)(a - allocs);

	memmove(&allocs[i], &allocs[i + 1], (nallocs - i - 1) * sizeof(*allocs));
	nallocs--;
	if (copy.vmm)
		return; /* the reservation keeps the addresses; vmm.c owns the pages */
	switch (copy.kind) {
	case SIM_MEM_DEVICE:
	case SIM_MEM_MANAGED:
		used_bytes -= copy.span;
		range_give(copy.base, copy.span);
		break;
	case SIM_MEM_HOST_PINNED:
		free((void *)copy.base);
		break;
	case SIM_MEM_HOST_REGISTERED:
		break;
	}
	if (copy.pool)
		pool_release(copy.pool, copy.size);
}

/* ------------------------------------------------------------------ queries (sim_int.h) */

bool sim_mem_find(uintptr_t p, size_t n, uintptr_t *base, size_t *size, enum sim_mem_kind *kind)
{
	struct sim_alloc *a = map_find(p, n);

	if (!a)
		return false;
	if (base)
		*base = a->base;
	if (size)
		*size = a->size;
	if (kind)
		*kind = a->kind;
	return true;
}

bool sim_mem_in_range(uintptr_t p)
{
	return range_base && p >= (uintptr_t)range_base && p - (uintptr_t)range_base < range_size;
}

bool sim_mem_is_device(uintptr_t p, size_t n)
{
	struct sim_alloc *a;

	if (!sim_mem_in_range(p))
		return false;
	a = map_find(p, n);
	return a && (a->kind == SIM_MEM_DEVICE || a->kind == SIM_MEM_MANAGED);
}

bool sim_mem_is_pinned(const void *p, size_t n)
{
	struct sim_alloc *a = map_find((uintptr_t)p, n);

	return a && (a->kind == SIM_MEM_HOST_PINNED || a->kind == SIM_MEM_HOST_REGISTERED);
}

size_t sim_mem_used(void)
{
	return used_bytes;
}

size_t sim_mem_peak(void)
{
	return used_peak;
}

size_t sim_mem_total(void)
{
	return (size_t)SIM_TOTAL_MEM;
}

/* ------------------------------------------------------------------ allocation (sim_mem_int.h) */

CUresult sim_mem_alloc(struct sim_ctx *ctx, size_t bytes, enum sim_mem_kind kind,
		       struct sim_pool *pool, CUdeviceptr *out)
{
	struct sim_alloc a = { 0 };
	struct sim_alloc *e;
	size_t span;

	if (bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (bytes > SIM_TOTAL_MEM)
		return CUDA_ERROR_OUT_OF_MEMORY;
	span = (bytes + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN;
	if (!range_reserve() || used_bytes + span > SIM_TOTAL_MEM)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!range_take(span, &a.base))
		return CUDA_ERROR_OUT_OF_MEMORY;
	a.size = bytes;
	a.span = span;
	a.kind = kind;
	a.flags = kind == SIM_MEM_MANAGED ? CU_MEM_ATTACH_GLOBAL : 0;
	a.ctx = ctx;
	a.device = ctx ? ctx->device : 0;
	a.pool = pool;
	e = map_insert(&a);
	if (!e) {
		range_give(a.base, span);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	used_bytes += span;
	if (used_bytes > used_peak)
		used_peak = used_bytes;
	if (pool) {
		pool->used += bytes;
		pool->live++;
		if (pool->used > pool->used_high)
			pool->used_high = pool->used;
		if (pool->used > pool->reserved_high)
			pool->reserved_high = pool->used;
	}
	*out = (CUdeviceptr)a.base;
	return CUDA_SUCCESS;
}

CUresult sim_mem_free(CUdeviceptr p)
{
	struct sim_alloc *a = map_find_base((uintptr_t)p);

	if (!a || a->vmm || (a->kind != SIM_MEM_DEVICE && a->kind != SIM_MEM_MANAGED))
		return CUDA_ERROR_INVALID_VALUE;
	map_remove(a);
	return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ virtual memory (sim_mem_int.h) */

CUresult sim__mem_range_reserve(size_t size, size_t align, uintptr_t *out)
{
	uintptr_t first, aligned;
	size_t span;

	if (size == 0 || align == 0 || (align & (align - 1)) || __builtin_add_overflow(size, align, &span))
		return CUDA_ERROR_INVALID_VALUE;
	if (!range_reserve() || !range_take(span, &first))
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Over-take by the alignment, then give back the head and tail around the aligned piece. */
	aligned = (first + align - 1) & ~(uintptr_t)(align - 1);
	if (aligned > first)
		range_give(first, aligned - first);
	if (first + span > aligned + size)
		range_give(aligned + size, first + span - (aligned + size));
	*out = aligned;
	return CUDA_SUCCESS;
}

void sim__mem_range_release(uintptr_t base, size_t size)
{
	range_give(base, size);
}

bool sim__mem_charge(size_t bytes)
{
	if (bytes > SIM_TOTAL_MEM - used_bytes)
		return false;
	used_bytes += bytes;
	if (used_bytes > used_peak)
		used_peak = used_bytes;
	return true;
}

void sim__mem_uncharge(size_t bytes)
{
	used_bytes -= bytes;
}

CUresult sim__mem_map_vmm(uintptr_t base, size_t size, struct sim_ctx *ctx, int device)
{
	struct sim_alloc a = { 0 };

	if (map_overlaps(base, size))
		return CUDA_ERROR_INVALID_VALUE;
	a.base = base;
	a.size = size;
	a.kind = SIM_MEM_DEVICE;
	a.ctx = ctx;
	a.device = device;
	a.vmm = true;
	return map_insert(&a) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

void sim__mem_unmap_vmm(uintptr_t base, size_t size)
{
	size_t i = map_floor(base);

	i = i == nallocs ? 0 : i;
	while (i < nallocs && allocs[i].base < base + size) {
		if (allocs[i].vmm && allocs[i].base >= base)
			map_remove(&allocs[i]);
		else
			i++;
	}
}

/* ------------------------------------------------------------------ stream-ordered free */

static void free_op_run(struct sim_work *w, void *payload)
{
	struct sim_free_op *f = payload;
	struct sim_alloc *a = map_find_base(f->base);

	(void)w;
	/* A graph launched again replays its free: the allocation is gone by then. */
	if (a && a->id == f->id)
		map_remove(a);
}

static void *free_op_clone(const void *payload)
{
	struct sim_free_op *f = malloc(sizeof(*f));

	if (f)
		*f = *(const struct sim_free_op *)payload;
	return f;
}

static const struct sim_work_ops sim_free_ops = {
	.kind = "memfree",
	.run = free_op_run,
	.free = free,
	.clone = free_op_clone,
	.cost = NULL,
	.label = NULL,
};

/* ------------------------------------------------------------------ pools */

int sim__device_count(void); /* device.c */

static bool device_is_valid(CUdevice dev)
{
	return dev >= 0 && dev < sim__device_count() && dev < SIM_MAX_DEVICES;
}

static struct sim_pool *pool_new(int device, bool is_default, const CUmemPoolProps *props)
{
	struct sim_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->magic = SIM_MAGIC_POOL;
	sim_handle_add(p);
	p->device = device;
	p->is_default = is_default;
	if (props)
		p->props = *props;
	else {
		p->props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
		p->props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		p->props.location.id = device;
	}
	p->reuse_follow = 1;
	p->reuse_opportunistic = 1;
	p->reuse_internal = 1;
	return p;
}

static struct sim_pool *pool_default(int device)
{
	if (!default_pools[device])
		default_pools[device] = pool_new(device, true, NULL);
	return default_pools[device];
}

/* The pool cuMemAllocAsync uses on a device. */
static struct sim_pool *pool_current(int device)
{
	return current_pools[device] ? current_pools[device] : pool_default(device);
}

static struct sim_pool *pool_from(CUmemoryPool h)
{
	struct sim_pool *p = (struct sim_pool *)h;

	return sim_handle_is_live(p, SIM_MAGIC_POOL) ? p : NULL;
}

/* ------------------------------------------------------------------ entry points: device memory */

CUresult sim_api_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	struct sim_ctx *ctx;
	CUresult rc;

	rc = sim_ctx_require(&ctx);
	if (rc == CUDA_SUCCESS && !dptr)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = sim_mem_alloc(ctx, bytesize, SIM_MEM_DEVICE, NULL, dptr);
	return rc;
}

CUresult sim_api_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
				    unsigned int ElementSizeBytes)
{
	struct sim_ctx *ctx;
	size_t pitch, bytes;
	CUresult rc;

	rc = sim_ctx_require(&ctx);
	if (rc != CUDA_SUCCESS)
		goto out;
	if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (WidthInBytes > SIM_TOTAL_MEM) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	pitch = (WidthInBytes + SIM_PITCH_ALIGN - 1) / SIM_PITCH_ALIGN * SIM_PITCH_ALIGN;
	if (__builtin_mul_overflow(pitch, Height, &bytes)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	rc = sim_mem_alloc(ctx, bytes, SIM_MEM_DEVICE, NULL, dptr);
	if (rc == CUDA_SUCCESS)
		*pPitch = pitch;
out:
	return rc;
}

CUresult sim_api_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	struct sim_ctx *ctx;
	CUresult rc;

	rc = sim_ctx_require(&ctx);
	if (rc == CUDA_SUCCESS &&
	    (!dptr || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = sim_mem_alloc(ctx, bytesize, SIM_MEM_MANAGED, NULL, dptr);
	if (rc == CUDA_SUCCESS)
		map_find_base((uintptr_t)*dptr)->flags = flags;
	return rc;
}

CUresult sim_api_cuMemFree_v2(CUdeviceptr dptr)
{
	struct sim_ctx *ctx;
	struct sim_alloc *a;
	CUresult rc;

	rc = sim_ctx_require(&ctx);
	if (rc != CUDA_SUCCESS || !dptr)
		goto out; /* freeing 0 is a no-op success, as the runtime's cudaFree(0) idiom needs */
	rc = sim__capture_check_sync(ctx, NULL);
	if (rc != CUDA_SUCCESS)
		goto out;
	sim_sched_drain(NULL);
	a = map_find_base((uintptr_t)dptr);
	if (!a || a->free_pending || a->vmm || (a->kind != SIM_MEM_DEVICE && a->kind != SIM_MEM_MANAGED)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	map_remove(a);
out:
	return rc;
}

CUresult sim_api_cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
	struct sim_ctx *ctx;
	CUresult rc;

	rc = sim_ctx_require(&ctx);
	if (rc == CUDA_SUCCESS && (!free_bytes || !total))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS) {
		*total = sim_mem_total();
		*free_bytes = sim_mem_total() - used_bytes;
	}
	return rc;
}

CUresult sim_api_cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	struct sim_ctx *ctx;
	struct sim_alloc *a;
	CUresult rc;

	rc = sim_ctx_require(&ctx);
	if (rc != CUDA_SUCCESS)
		goto out;
	a = map_find((uintptr_t)dptr, 1);
	if (!a) {
		rc = CUDA_ERROR_NOT_FOUND;
		goto out;
	}
	if (pbase)
		*pbase = (CUdeviceptr)a->base;
	if (psize)
		*psize = a->size;
out:
	return rc;
}

/* ------------------------------------------------------------------ entry points: host memory */

static CUresult host_alloc(struct sim_ctx *ctx, void **pp, size_t bytes, unsigned int flags)
{
	struct sim_alloc a = { 0 };
	void *p = NULL;

	if (!pp || bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (posix_memalign(&p, SIM_HOST_ALIGN, bytes) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	a.base = (uintptr_t)p;
	a.size = bytes;
	a.kind = SIM_MEM_HOST_PINNED;
	a.flags = flags;
	a.ctx = ctx;
	a.device = ctx->device;
	if (!map_insert(&a)) {
		free(p);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*pp = p;
	return CUDA_SUCCESS;
}

CUresult sim_api_cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	struct sim_ctx *ctx;
	CUresult rc;

	rc = sim_ctx_require(&ctx);
	if (rc == CUDA_SUCCESS)
		rc = host_alloc(ctx, pp, bytesize, 0);
	return rc;
}

CUresult sim_api_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	struct sim_ctx *ctx;
	const unsigned int known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
				   CU_MEMHOSTALLOC_WRITECOMBINED;
	CUresult rc;

	rc = sim_ctx_require(&ctx);
	if (rc == CUDA_SUCCESS && (Flags & ~known))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = host_alloc(ctx, pp, bytesize, Flags);
	return rc;
}

/* Release host memory after all pending work: cuMemFreeHost and cuMemHostUnregister. */
static CUresult host_release(void *p, enum sim_mem_kind kind, CUresult not_found)
{
	struct sim_ctx *ctx;
	struct sim_alloc *a;
	CUresult rc = sim_ctx_require(&ctx);

	if (rc != CUDA_SUCCESS)
		return rc;
	rc = sim__capture_check_sync(ctx, NULL);
	if (rc != CUDA_SUCCESS)
		return rc;
	sim_sched_drain(NULL);
	a = map_find_base((uintptr_t)p);
	if (!p || !a || a->kind != kind)
		return not_found;
	map_remove(a);
	return CUDA_SUCCESS;
}

CUresult sim_api_cuMemFreeHost(void *p)
{
	return host_release(p, SIM_MEM_HOST_PINNED, CUDA_ERROR_INVALID_VALUE);
}

CUresult sim_api_cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	struct sim_ctx *ctx;
	struct sim_alloc a = { 0 };
	const unsigned int known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
				   CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
	CUresult rc;

	rc = sim_ctx_require(&ctx);
	if (rc != CUDA_SUCCESS)
		goto out;
	if (!p || bytesize == 0 || (Flags & ~known) || (uintptr_t)p + bytesize < (uintptr_t)p) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (map_overlaps((uintptr_t)p, bytesize)) {
		rc = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
		goto out;
	}
	a.base = (uintptr_t)p;
	a.size = bytesize;
	a.kind = SIM_MEM_HOST_REGISTERED;
	a.flags = Flags;
	a.ctx = ctx;
	a.device = ctx->device;
	if (!map_insert(&a))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
out:
	return rc;
}

CUresult sim_api_cuMemHostUnregister(void *p)
{
	return host_release(p, SIM_MEM_HOST_REGISTERED, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

CUresult sim_api_cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
	struct sim_ctx *ctx;
	CUresult rc;

	rc = sim_ctx_require(&ctx);
	if (rc == CUDA_SUCCESS && (!pdptr || Flags != 0 || !sim_mem_is_pinned(p, 1)))
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		*pdptr = (CUdeviceptr)(uintptr_t)p; /* unified addressing: the same address */
	return rc;
}

CUresult sim_api_cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
	struct sim_ctx *ctx;
	struct sim_alloc *a;
	CUresult rc;

	rc = sim_ctx_require(&ctx);
	if (rc != CUDA_SUCCESS)
		goto out;
	a = map_find((uintptr_t)p, 1);
	if (!pFlags || !a || (a->kind != SIM_MEM_HOST_PINNED && a->kind != SIM_MEM_HOST_REGISTERED)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	*pFlags = a->flags;
out:
	return rc;
}

/* ------------------------------------------------------------------ entry points: pointer attributes */

static void put_uint(void *data, unsigned int v)
{
	memcpy(data, &v, sizeof(v));
}

/* One attribute of a known allocation a (NULL: ptr is no CUDA memory; strict: fail as
 * cuPointerGetAttribute does, else answer the defaults as cuPointerGetAttributes does). */
static CUresult pointer_attr(struct sim_alloc *a, CUpointer_attribute attr, uintptr_t ptr,
			     void *data, bool strict)
{
	bool on_device = a && (a->kind == SIM_MEM_DEVICE || a->kind == SIM_MEM_MANAGED);

	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	if (!a && strict)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT: {
		CUcontext c = a ? (CUcontext)a->ctx : NULL;

		memcpy(data, &c, sizeof(c));
		return CUDA_SUCCESS;
	}
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		put_uint(data, !a ? 0u : on_device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
		CUdeviceptr d = a ? (CUdeviceptr)ptr : 0;

		memcpy(data, &d, sizeof(d));
		return CUDA_SUCCESS;
	}
	case CU_POINTER_ATTRIBUTE_HOST_POINTER: {
		void *h = a && a->kind != SIM_MEM_DEVICE ? (void *)ptr : NULL;

		if (!h && strict)
			return CUDA_ERROR_INVALID_VALUE;
		memcpy(data, &h, sizeof(h));
		return CUDA_SUCCESS;
	}
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		put_uint(data, a && a->sync_memops);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
	case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: {
		unsigned long long id = a ? a->id : 0;

		memcpy(data, &id, sizeof(id));
		return CUDA_SUCCESS;
	}
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		put_uint(data, a && a->kind == SIM_MEM_MANAGED);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: {
		int dev = a ? a->device : -2; /* -2: what the runtime reports for unknown memory */

		memcpy(data, &dev, sizeof(dev));
		return CUDA_SUCCESS;
	}
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
		put_uint(data, a && a->kind == SIM_MEM_DEVICE && !a->pool && !a->vmm);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: {
		CUdeviceptr b = a ? (CUdeviceptr)a->base : 0;

		memcpy(data, &b, sizeof(b));
		return CUDA_SUCCESS;
	}
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: {
		size_t s = a ? a->size : 0;

		memcpy(data, &s, sizeof(s));
		return CUDA_SUCCESS;
	}
	case CU_POINTER_ATTRIBUTE_MAPPED:
		put_uint(data, a != NULL);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: {
		unsigned long long t = 0;

		memcpy(data, &t, sizeof(t));
		return CUDA_SUCCESS;
	}
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
		put_uint(data, 0);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		put_uint(data, a ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE
				 : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: {
		CUmemoryPool p = a ? (CUmemoryPool)a->pool : NULL;

		memcpy(data, &p, sizeof(p));
		return CUDA_SUCCESS;
	}
	case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult sim_api_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	CUresult rc = CUDA_SUCCESS;

	if (!sim_is_initialized())
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else
		rc = pointer_attr(map_find((uintptr_t)ptr, 1), attribute, (uintptr_t)ptr, data, true);
	return rc;
}

CUresult sim_api_cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
					void **data, CUdeviceptr ptr)
{
	struct sim_alloc *a;
	CUresult rc = CUDA_SUCCESS;

	if (!sim_is_initialized()) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	if (numAttributes == 0 || !attributes || !data) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	a = map_find((uintptr_t)ptr, 1);
	for (unsigned int i = 0; i < numAttributes && rc == CUDA_SUCCESS; i++)
		rc = pointer_attr(a, attributes[i], (uintptr_t)ptr, data[i], false);
out:
	return rc;
}

CUresult sim_api_cuPointerSetAttribute(const void *value, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	struct sim_alloc *a;
	unsigned int v;
	CUresult rc = CUDA_SUCCESS;

	a = map_find((uintptr_t)ptr, 1);
	if (!value || !a || attribute != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	memcpy(&v, value, sizeof(v));
	a->sync_memops = v != 0;
out:
	return rc;
}

/* ------------------------------------------------------------------ entry points: stream-ordered */

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, struct sim_pool *pool, CUstream h,
			    enum sim_pt pt)
{
	struct sim_stream *s;
	CUresult rc = sim_stream_resolve(h, pt, &s);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	if (!pool)
		pool = pool_current(s->ctx->device);
	if (!pool)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* Allocated now, usable by any work submitted after the call. */
	return sim_mem_alloc(s->ctx, bytes, SIM_MEM_DEVICE, pool, dptr);
}

static CUresult free_async(CUdeviceptr dptr, CUstream h, enum sim_pt pt)
{
	struct sim_stream *s;
	struct sim_alloc *a;
	struct sim_free_op *f;
	struct sim_work *w;
	CUresult rc = sim_stream_resolve(h, pt, &s);

	if (rc != CUDA_SUCCESS)
		return rc;
	a = map_find_base((uintptr_t)dptr);
	if (!a || a->free_pending || a->vmm || (a->kind != SIM_MEM_DEVICE && a->kind != SIM_MEM_MANAGED))
		return CUDA_ERROR_INVALID_VALUE;
	f = malloc(sizeof(*f));
	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	f->base = a->base;
	f->id = a->id;
	w = sim_work_new(&sim_free_ops, f, s->ctx);
	if (!w) {
		free(f);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	rc = sim_stream_submit(s, w);
	if (rc == CUDA_SUCCESS)
		a->free_pending = true;
	return rc;
}

CUresult sim_api_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return alloc_async(dptr, bytesize, NULL, hStream, SIM_PT_LEGACY);
}

CUresult sim_api_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return alloc_async(dptr, bytesize, NULL, hStream, SIM_PT_PER_THREAD);
}

CUresult sim_api_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
					 CUstream hStream)
{
	struct sim_pool *p;
	CUresult rc = CUDA_SUCCESS;

	p = pool_from(pool);
	rc = p ? alloc_async(dptr, bytesize, p, hStream, SIM_PT_LEGACY) : CUDA_ERROR_INVALID_VALUE;
	return rc;
}

CUresult sim_api_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
					      CUstream hStream)
{
	struct sim_pool *p;
	CUresult rc = CUDA_SUCCESS;

	p = pool_from(pool);
	rc = p ? alloc_async(dptr, bytesize, p, hStream, SIM_PT_PER_THREAD) : CUDA_ERROR_INVALID_VALUE;
	return rc;
}

CUresult sim_api_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return free_async(dptr, hStream, SIM_PT_LEGACY);
}

CUresult sim_api_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return free_async(dptr, hStream, SIM_PT_PER_THREAD);
}

/* ------------------------------------------------------------------ entry points: pools */

CUresult sim_api_cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;

	if (!sim_is_initialized())
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!pool_out)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!device_is_valid(dev))
		rc = CUDA_ERROR_INVALID_DEVICE;
	else if (!(*pool_out = (CUmemoryPool)pool_default(dev)))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	return rc;
}

CUresult sim_api_cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	CUresult rc = CUDA_SUCCESS;

	if (!sim_is_initialized())
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!pool)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!device_is_valid(dev))
		rc = CUDA_ERROR_INVALID_DEVICE;
	else if (!(*pool = (CUmemoryPool)pool_current(dev)))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	return rc;
}

CUresult sim_api_cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	struct sim_pool *p;
	CUresult rc = CUDA_SUCCESS;

	p = pool_from(pool);
	if (!sim_is_initialized())
		rc = CUDA_ERROR_NOT_INITIALIZED;
	else if (!device_is_valid(dev))
		rc = CUDA_ERROR_INVALID_DEVICE;
	else if (!p || p->device != dev)
		rc = CUDA_ERROR_INVALID_VALUE;
	else
		current_pools[dev] = p;
	return rc;
}

CUresult sim_api_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
	struct sim_pool *p;
	CUresult rc = CUDA_SUCCESS;

	if (!sim_is_initialized()) {
		rc = CUDA_ERROR_NOT_INITIALIZED;
		goto out;
	}
	if (!pool || !poolProps || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (!device_is_valid(poolProps->location.id)) {
		rc = CUDA_ERROR_INVALID_DEVICE;
		goto out;
	}
	p = pool_new(poolProps->location.id, false, poolProps);
	if (!p) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	*pool = (CUmemoryPool)p;
out:
	return rc;
}

CUresult sim_api_cuMemPoolDestroy(CUmemoryPool pool)
{
	struct sim_pool *p;
	CUresult rc = CUDA_SUCCESS;

	p = pool_from(pool);
	if (!p || p->is_default) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (current_pools[p->device] == p)
		current_pools[p->device] = NULL;
	sim_handle_remove(p);
	p->magic = 0;
	p->destroyed = true;
	/* Outstanding allocations keep it until they are freed (the driver's documented rule). */
	if (p->live == 0)
		free(p);
out:
	return rc;
}

CUresult sim_api_cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	CUresult rc = CUDA_SUCCESS;

	(void)minBytesToKeep; /* nothing is cached: freed memory is returned at once */
	if (!pool_from(pool))
		rc = CUDA_ERROR_INVALID_VALUE;
	return rc;
}

static CUresult pool_set(struct sim_pool *p, CUmemPool_attribute attr, const void *value)
{
	int iv;
	cuuint64_t uv;

	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		memcpy(&iv, value, sizeof(iv));
		if (attr == CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)
			p->reuse_follow = iv;
		else if (attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)
			p->reuse_opportunistic = iv;
		else
			p->reuse_internal = iv;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		memcpy(&p->release_threshold, value, sizeof(p->release_threshold));
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		memcpy(&uv, value, sizeof(uv));
		if (uv != 0)
			return CUDA_ERROR_INVALID_VALUE; /* a high watermark can only be reset */
		if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
			p->reserved_high = p->used;
		else
			p->used_high = p->used;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

static CUresult pool_get(struct sim_pool *p, CUmemPool_attribute attr, void *value)
{
	int iv = 0;
	cuuint64_t uv = 0;
	bool is_int = false;

	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		iv = p->reuse_follow;
		is_int = true;
		break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		iv = p->reuse_opportunistic;
		is_int = true;
		break;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		iv = p->reuse_internal;
		is_int = true;
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		uv = p->release_threshold;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		uv = p->used; /* nothing is cached: reserved equals used */
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		uv = p->reserved_high;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		uv = p->used_high;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (is_int)
		memcpy(value, &iv, sizeof(iv));
	else
		memcpy(value, &uv, sizeof(uv));
	return CUDA_SUCCESS;
}

CUresult sim_api_cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	struct sim_pool *p;
	CUresult rc = CUDA_SUCCESS;

	p = pool_from(pool);
	rc = p && value ? pool_set(p, attr, value) : CUDA_ERROR_INVALID_VALUE;
	return rc;
}

CUresult sim_api_cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	struct sim_pool *p;
	CUresult rc = CUDA_SUCCESS;

	p = pool_from(pool);
	rc = p && value ? pool_get(p, attr, value) : CUDA_ERROR_INVALID_VALUE;
	return rc;
}
