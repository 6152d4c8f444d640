/* vmm_grow.c - a training-shaped loop on memory managed the way PyTorch's expandable segments
 * manage it: one large address reservation, physical chunks created and mapped at its end as
 * the segment grows, tensors that straddle chunk boundaries, and chunks unmapped and mapped
 * again between and inside steps. Prints a checksum of everything it computed; it knows
 * nothing of cufold, so with and without it the output must be identical.
 * usage: vmm_grow [steps]   tests layer.
 *
 * Every step (one window: kernels, then the loss copied to the host and waited for):
 *  - steps 4 and 8 grow the segment by one chunk and start using a tensor in it;
 *  - steps with step % 4 == 2 unmap, in the middle of the step, a spare chunk no work of the
 *    step touches, and map it again after the step (a window that does not reference it may
 *    go on);
 *  - steps with step % 4 == 3 have a kernel write a tensor in a chunk that is mapped twice,
 *    unmap the first view in the middle of the step (the window references it: it must end
 *    there, and the work must have run before the addresses go: cuMemUnmap is synchronous),
 *    read the result through the second view, and map the first view again after the step.
 * The last line says how many of each kind of unmap happened ("unmaps: N spare, M referenced"),
 * for the test to check cufold's report against. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define N (64 * 1024)                /* floats per tensor: 256 KiB */
#define CHUNKS 32                    /* chunk slots used, at the start of the reservation */

static CUfunction f_fill, f_axpy, f_scale, f_add;
static CUmemAllocationProp prop;     /* pinned memory on device 0 */
static size_t gran;                  /* the allocation granularity: one chunk */
static CUdeviceptr va;               /* the reservation */
static size_t va_size;               /* its size: 9/8 of the device's memory, as PyTorch reserves */
static CUmemGenericAllocationHandle chunk[CHUNKS]; /* handles of mapped chunks, 0 when none */
static uint64_t h64 = TL_HASH_INIT;

static void launch(CUfunction f, CUstream s, void **args)
{
	CHECK(cuLaunchKernel(f, (N + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

static void k_fill(CUdeviceptr x, float v, CUstream s)
{
	int n = N;
	void *a[] = {&x, &v, &n};

	launch(f_fill, s, a);
}

static void k_axpy(CUdeviceptr y, CUdeviceptr x, float al, CUstream s)
{
	int n = N;
	void *a[] = {&y, &x, &al, &n};

	launch(f_axpy, s, a);
}

static void k_scale(CUdeviceptr o, CUdeviceptr i, float sc, CUstream s)
{
	int n = N;
	void *a[] = {&o, &i, &sc, &n};

	launch(f_scale, s, a);
}

static void k_add(CUdeviceptr o, CUdeviceptr x, CUdeviceptr y, CUstream s)
{
	int n = N;
	void *a[] = {&o, &x, &y, &n};

	launch(f_add, s, a);
}

static void set_access(CUdeviceptr p, size_t size)
{
	CUmemAccessDesc d;

	memset(&d, 0, sizeof(d));
	d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	d.location.id = 0;
	d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CHECK(cuMemSetAccess(p, size, &d, 1));
}

/* Map handle h at chunk slot i of the reservation and make it accessible. */
static void map_at(int i, CUmemGenericAllocationHandle h)
{
	CHECK(cuMemMap(va + (size_t)i * gran, gran, 0, h, 0));
	set_access(va + (size_t)i * gran, gran);
}

/* Grow: a new physical chunk at slot i. */
static void grow(int i)
{
	CHECK(cuMemCreate(&chunk[i], gran, &prop, 0));
	map_at(i, chunk[i]);
}

static void unmap_at(int i)
{
	CHECK(cuMemUnmap(va + (size_t)i * gran, gran));
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 12, spare_unmaps = 0, ref_unmaps = 0;
	const int spare = CHUNKS - 1, view1 = CHUNKS - 3, view2 = CHUNKS - 2; /* slots at the end */
	CUdeviceptr x, y, z[2], w1, w2;
	CUmodule mod;
	CUstream s;
	float loss[16];

	tl_init();
	mod = tl_load_module("elementwise");
	f_fill = tl_func(mod, "fill");
	f_axpy = tl_func(mod, "axpy");
	f_scale = tl_func(mod, "scale");
	f_add = tl_func(mod, "add");
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	CHECK(cuDeviceTotalMem(&va_size, 0));
	va_size = (va_size + va_size / 8 + gran - 1) / gran * gran;
	CHECK(cuMemAddressReserve(&va, va_size, 0, 0, 0));
	/* two chunks to start; x straddles their boundary, y lies in the second */
	grow(0);
	grow(1);
	x = va + gran - N * sizeof(float) / 2;
	y = va + gran + gran / 4;
	/* a spare chunk, and one chunk mapped at two slots (w1 and w2 are the same bytes) */
	grow(spare);
	grow(view1);
	map_at(view2, chunk[view1]);
	w1 = va + (size_t)view1 * gran;
	w2 = va + (size_t)view2 * gran;

	k_fill(x, 0.25f, s);
	k_fill(y, -1.0f, s);
	for (int step = 0; step < steps; step++) {
		bool unmap_spare = step % 4 == 2, unmap_ref = step % 4 == 3;

		if (step == 4 || step == 8) {
			int i = step / 4 - 1;

			grow(2 + i);
			z[i] = va + (size_t)(2 + i) * gran + 4096;
			k_fill(z[i], (float)step, s);
		}
		for (int layer = 0; layer < 4; layer++) {
			k_axpy(y, x, 0.5f, s);
			k_scale(x, y, 0.75f, s);
		}
		for (int i = 0; i < 2 && step >= 4 * (i + 1); i++)
			k_add(z[i], z[i], y, s);
		if (unmap_spare) {
			unmap_at(spare);
			spare_unmaps++;
		}
		if (unmap_ref) {
			k_add(w1, x, y, s);
			unmap_at(view1);
			ref_unmaps++;
		}
		k_axpy(y, x, -0.25f, s);
		CHECK(cuMemcpyDtoHAsync(loss, y, sizeof(loss), s));
		CHECK(cuStreamSynchronize(s));
		h64 = tl_hash(loss, sizeof(loss), h64);
		if (unmap_spare)
			map_at(spare, chunk[spare]);
		if (unmap_ref) {
			h64 = tl_hash_device(w2, N * sizeof(float), h64);
			map_at(view1, chunk[view1]);
		}
	}
	h64 = tl_hash_device(x, N * sizeof(float), h64);
	h64 = tl_hash_device(y, N * sizeof(float), h64);
	for (int i = 0; i < 2 && steps > 4 * (i + 1); i++)
		h64 = tl_hash_device(z[i], N * sizeof(float), h64);
	printf("vmm_grow %d steps: %016llx\n", steps, (unsigned long long)h64);

	/* tear down in the order PyTorch's release does: unmap, release, free the range */
	unmap_at(view2);
	for (int i = 0; i < CHUNKS; i++) {
		if (!chunk[i])
			continue;
		unmap_at(i);
		CHECK(cuMemRelease(chunk[i]));
	}
	CHECK(cuMemAddressFree(va, va_size));
	CHECK(cuStreamDestroy(s));
	printf("unmaps: %d spare, %d referenced\n", spare_unmaps, ref_unmaps);
	return 0;
}
