/* route.c - routing by identity: which exported driver symbol a pointer is, and cufold's hook
 * for it. Used for every pointer cuGetProcAddress and dlsym hand out. shim layer.
 *
 * Matching the pointer, not the requested name, is what keeps ABIs straight: the driver
 * already chose the variant for (name, version, flags), so cuCtxGetDevice@2000 and @13000, or
 * cuLaunchKernel with and without the per-thread flag, land on different hooks with exactly
 * the prototype the caller expects. A pointer that is not one of the exported symbols is
 * handed back unchanged. */
#include <string.h>

#include "common/compiler.h"
#include "shim/shim_int.h"

static struct shim_ptrmap real_map; /* the published driver's addresses (built once) */
static int real_map_ready;          /* real_map may be read (acquire/release) */

static unsigned slot_of(const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p;

	h ^= h >> 29;
	h *= 0x9e3779b97f4a7c15ull;
	return (unsigned)(h >> 40) & (SHIM_PTRMAP_SLOTS - 1);
}

void shim__ptrmap_build(struct shim_ptrmap *m, void *const addr[DRV_API_COUNT])
{
	int16_t last[DRV_API_COUNT]; /* last id of each address's chain, indexed by first id */

	memset(m->key, 0, sizeof(m->key));
	for (int id = 0; id < DRV_API_COUNT; id++)
		m->next[id] = -1;
	for (int id = 0; id < DRV_API_COUNT; id++) {
		unsigned s;

		if (!addr[id])
			continue;
		for (s = slot_of(addr[id]); m->key[s] && m->key[s] != addr[id]; s = (s + 1) & (SHIM_PTRMAP_SLOTS - 1))
			;
		if (!m->key[s]) {
			m->key[s] = addr[id];
			m->id[s] = (int16_t)id;
			last[id] = (int16_t)id;
		} else {
			/* an alias: the driver exports two names at one address */
			int first = m->id[s];

			m->next[last[first]] = (int16_t)id;
			last[first] = (int16_t)id;
		}
	}
}

int shim__ptrmap_find(const struct shim_ptrmap *m, const void *p)
{
	if (!p)
		return -1;
	for (unsigned s = slot_of(p); m->key[s]; s = (s + 1) & (SHIM_PTRMAP_SLOTS - 1))
		if (m->key[s] == p)
			return m->id[s];
	return -1;
}

int shim__ptrmap_pick(const struct shim_ptrmap *m, int first, const char *name, const char *base, int version,
		      unsigned long long flags)
{
	int best = first, best_score = -1;
	bool want_pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;

	if (first < 0 || m->next[first] < 0)
		return first;
	for (int id = first; id >= 0; id = m->next[id]) {
		const struct drv_api_info *a = &drv_api[id];
		int score = 0;

		if (name && strcmp(a->name, name) == 0)
			score += 16;
		if (base && strcmp(a->base, base) == 0)
			score += 8;
		if ((a->pt != DRV_PT_NONE) == want_pt)
			score += 4;
		if (version <= 0 || a->version <= version)
			score += 2;
		/* among equals the newest ABI at or below the request, as the driver picks */
		if (score > best_score || (score == best_score && a->version > drv_api[best].version &&
					   (version <= 0 || a->version <= version))) {
			best = id;
			best_score = score;
		}
	}
	return best;
}

void shim__route_build(void)
{
	void *addr[DRV_API_COUNT];

	for (int id = 0; id < DRV_API_COUNT; id++)
		addr[id] = drv_real_addr((enum drv_api_id)id);
	shim__ptrmap_build(&real_map, addr);
	__atomic_store_n(&real_map_ready, 1, __ATOMIC_RELEASE);
}

static void *route(void *p, const char *name, const char *base, int version, unsigned long long flags)
{
	int id;

	if (!p || !__atomic_load_n(&real_map_ready, __ATOMIC_ACQUIRE))
		return p;
	id = shim__ptrmap_find(&real_map, p);
	if (id < 0)
		return p;
	id = shim__ptrmap_pick(&real_map, id, name, base, version, flags);
	return shim_hook_addr((enum drv_api_id)id);
}

void *shim_route_procaddr(void *p, const char *base, int version, unsigned long long flags)
{
	return route(p, NULL, base, version, flags);
}

void *shim_route_dlsym(void *p, const char *name)
{
	return route(p, name, NULL, 0, 0);
}
