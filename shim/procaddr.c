/* procaddr.c - the hand-written hooks of cuGetProcAddress (11.3, four arguments) and
 * cuGetProcAddress_v2 (12.0, five). shim layer.
 *
 * The driver answers the lookup; cufold only swaps the pointer it returns for its hook of that
 * exact symbol (shim/route.c). Result code, symbol status and unknown names stay exactly as the
 * driver answered. Asking for "cuGetProcAddress" itself routes to these hooks, which is how the
 * CUDA runtime's 436 later lookups stay visible. In mode off the driver's pointers go out
 * untouched. */
#include <string.h>

#include "common/compiler.h"
#include "common/log.h"
#include "shim/shim_int.h"

/* The routed pointer for a successful lookup. */
static void *route_lookup(const char *symbol, void *p, int version, cuuint64_t flags)
{
	void *hooked;

	if (!p || shim_is_inside() || shim_mode() == CF_MODE_OFF)
		return p;
	hooked = shim_route_procaddr(p, symbol, version, flags);
	if (hooked == p && symbol && strcmp(symbol, "cuGetProcAddress") == 0) {
		/* A driver whose lookup of itself is not its exported symbol: without our wrapper the
		 * runtime's later lookups would all bypass cufold, so pick by the version asked for. */
		hooked = shim_hook_addr(version >= 12000 ? DRV_ID_cuGetProcAddress_v2 : DRV_ID_cuGetProcAddress);
		cf_log_debug("cuGetProcAddress@%d returned %p, not an exported symbol; handing out cufold's wrapper",
			     version, p);
	} else if (hooked == p) {
		cf_log_debug("cuGetProcAddress(%s@%d, flags %llu) = %p: not an exported symbol, passed on", symbol,
			     version, (unsigned long long)flags, p);
	}
	return hooked;
}

CUresult CUDAAPI shim_hand_cuGetProcAddress(const char *symbol, void **pfn, int driverVersion, cuuint64_t flags)
{
	CUresult rc;

	if (cf_likely(shim_is_passthrough()))
		return drv_real.p_cuGetProcAddress(symbol, pfn, driverVersion, flags);
	shim_note_call(DRV_ID_cuGetProcAddress);
	rc = drv_real.p_cuGetProcAddress(symbol, pfn, driverVersion, flags);
	if (rc == CUDA_SUCCESS && pfn && *pfn)
		*pfn = route_lookup(symbol, *pfn, driverVersion, flags);
	return rc;
}
SHIM_EXPORT_HOOK(cuGetProcAddress);

CUresult CUDAAPI shim_hand_cuGetProcAddress_v2(const char *symbol, void **pfn, int driverVersion, cuuint64_t flags,
					       CUdriverProcAddressQueryResult *symbolFound)
{
	CUresult rc;

	if (cf_likely(shim_is_passthrough()))
		return drv_real.p_cuGetProcAddress_v2(symbol, pfn, driverVersion, flags, symbolFound);
	shim_note_call(DRV_ID_cuGetProcAddress_v2);
	rc = drv_real.p_cuGetProcAddress_v2(symbol, pfn, driverVersion, flags, symbolFound);
	if (rc == CUDA_SUCCESS && pfn && *pfn)
		*pfn = route_lookup(symbol, *pfn, driverVersion, flags);
	return rc;
}
SHIM_EXPORT_HOOK(cuGetProcAddress_v2);
