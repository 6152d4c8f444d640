/* hooks_neutral.c - hand-written hooks of the calls that change nothing cufold tracks and let
 * the host observe nothing of the device: pure queries (attributes, names, handles, versions,
 * capture state), the creation of events and the loading of code. They only count, so they do not end windows: the
 * CUDA runtime and frameworks call several of them around every launch (cuCtxGetCurrent,
 * cuStreamGetCaptureInfo, cuPointerGetAttribute), and a boundary there would leave no window
 * longer than one op. shim layer.
 *
 * The hooks are generated from cuda_api.def for the names listed here (a #define per name, the
 * same membership probe as modeled.def; every name must also be listed there, or the link
 * fails with two definitions). Names cuda.h defines as macros cannot be listed (the expansion
 * would rename them), which is why plain cuDeviceGetUuid and cuStreamGetCaptureInfo stay
 * unmodeled. */
#include "shim/engine.h"

#define SHIM_NEUTRAL_cuCtxGetCurrent SHIM_YES
#define SHIM_NEUTRAL_cuCtxGetDevice SHIM_YES
#define SHIM_NEUTRAL_cuCtxGetDevice_v2 SHIM_YES
#define SHIM_NEUTRAL_cuCtxGetFlags SHIM_YES
#define SHIM_NEUTRAL_cuCtxGetId SHIM_YES
#define SHIM_NEUTRAL_cuCtxGetApiVersion SHIM_YES
#define SHIM_NEUTRAL_cuCtxGetLimit SHIM_YES
#define SHIM_NEUTRAL_cuCtxGetCacheConfig SHIM_YES
#define SHIM_NEUTRAL_cuCtxGetStreamPriorityRange SHIM_YES
#define SHIM_NEUTRAL_cuDeviceGet SHIM_YES
#define SHIM_NEUTRAL_cuDeviceGetAttribute SHIM_YES
#define SHIM_NEUTRAL_cuDeviceGetCount SHIM_YES
#define SHIM_NEUTRAL_cuDeviceGetName SHIM_YES
#define SHIM_NEUTRAL_cuDeviceGetUuid_v2 SHIM_YES
#define SHIM_NEUTRAL_cuDeviceGetPCIBusId SHIM_YES
#define SHIM_NEUTRAL_cuDeviceTotalMem_v2 SHIM_YES
#define SHIM_NEUTRAL_cuDeviceComputeCapability SHIM_YES
#define SHIM_NEUTRAL_cuDeviceCanAccessPeer SHIM_YES
#define SHIM_NEUTRAL_cuDeviceGetDefaultMemPool SHIM_YES
#define SHIM_NEUTRAL_cuDeviceGetMemPool SHIM_YES
#define SHIM_NEUTRAL_cuDevicePrimaryCtxGetState SHIM_YES
#define SHIM_NEUTRAL_cuDevicePrimaryCtxRetain SHIM_YES
#define SHIM_NEUTRAL_cuDriverGetVersion SHIM_YES
#define SHIM_NEUTRAL_cuGetErrorName SHIM_YES
#define SHIM_NEUTRAL_cuGetErrorString SHIM_YES
#define SHIM_NEUTRAL_cuFuncGetAttribute SHIM_YES
#define SHIM_NEUTRAL_cuFuncGetName SHIM_YES
#define SHIM_NEUTRAL_cuFuncGetParamInfo SHIM_YES
#define SHIM_NEUTRAL_cuFuncGetModule SHIM_YES
#define SHIM_NEUTRAL_cuFuncIsLoaded SHIM_YES
#define SHIM_NEUTRAL_cuKernelGetName SHIM_YES
#define SHIM_NEUTRAL_cuKernelGetAttribute SHIM_YES
#define SHIM_NEUTRAL_cuKernelGetParamInfo SHIM_YES
#define SHIM_NEUTRAL_cuKernelGetLibrary SHIM_YES
#define SHIM_NEUTRAL_cuModuleGetFunctionCount SHIM_YES
#define SHIM_NEUTRAL_cuModuleGetLoadingMode SHIM_YES
#define SHIM_NEUTRAL_cuLibraryGetKernelCount SHIM_YES
#define SHIM_NEUTRAL_cuStreamGetFlags SHIM_YES
#define SHIM_NEUTRAL_cuStreamGetPriority SHIM_YES
#define SHIM_NEUTRAL_cuStreamGetId SHIM_YES
#define SHIM_NEUTRAL_cuStreamGetCtx SHIM_YES
#define SHIM_NEUTRAL_cuStreamGetCtx_v2 SHIM_YES
#define SHIM_NEUTRAL_cuStreamIsCapturing SHIM_YES
#define SHIM_NEUTRAL_cuStreamIsCapturing_ptsz SHIM_YES
#define SHIM_NEUTRAL_cuStreamGetCaptureInfo_ptsz SHIM_YES
#define SHIM_NEUTRAL_cuStreamGetCaptureInfo_v2 SHIM_YES
#define SHIM_NEUTRAL_cuStreamGetCaptureInfo_v2_ptsz SHIM_YES
#define SHIM_NEUTRAL_cuStreamGetCaptureInfo_v3 SHIM_YES
#define SHIM_NEUTRAL_cuStreamGetCaptureInfo_v3_ptsz SHIM_YES
#define SHIM_NEUTRAL_cuPointerGetAttribute SHIM_YES
#define SHIM_NEUTRAL_cuPointerGetAttributes SHIM_YES
#define SHIM_NEUTRAL_cuMemGetAddressRange_v2 SHIM_YES
#define SHIM_NEUTRAL_cuMemHostGetDevicePointer_v2 SHIM_YES
#define SHIM_NEUTRAL_cuMemHostGetFlags SHIM_YES
#define SHIM_NEUTRAL_cuMemGetInfo_v2 SHIM_YES
#define SHIM_NEUTRAL_cuMemPoolGetAttribute SHIM_YES
#define SHIM_NEUTRAL_cuEventCreate SHIM_YES
#define SHIM_NEUTRAL_cuThreadExchangeStreamCaptureMode SHIM_YES
/* occupancy (frameworks ask it before launches, in the middle of a step), VMM and array queries */
#define SHIM_NEUTRAL_cuOccupancyMaxActiveBlocksPerMultiprocessor SHIM_YES
#define SHIM_NEUTRAL_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags SHIM_YES
#define SHIM_NEUTRAL_cuOccupancyMaxPotentialBlockSize SHIM_YES
#define SHIM_NEUTRAL_cuOccupancyMaxPotentialBlockSizeWithFlags SHIM_YES
#define SHIM_NEUTRAL_cuOccupancyAvailableDynamicSMemPerBlock SHIM_YES
#define SHIM_NEUTRAL_cuOccupancyMaxActiveClusters SHIM_YES
#define SHIM_NEUTRAL_cuOccupancyMaxPotentialClusterSize SHIM_YES
#define SHIM_NEUTRAL_cuMemGetAllocationGranularity SHIM_YES
#define SHIM_NEUTRAL_cuMemGetAllocationPropertiesFromHandle SHIM_YES
#define SHIM_NEUTRAL_cuMemGetAccess SHIM_YES
#define SHIM_NEUTRAL_cuArrayGetDescriptor_v2 SHIM_YES
#define SHIM_NEUTRAL_cuArray3DGetDescriptor_v2 SHIM_YES
/* linking code (frameworks compile kernels lazily, in the middle of their first steps: CuPy,
 * numba) changes nothing an open window holds; a module's globals are queried, not written.
 * Loading modules and libraries, looking functions up in them and the rest of JIT linking
 * are neutral too but hand-written in hooks_module.c: capture keeps their PTX. */
#define SHIM_NEUTRAL_cuLinkCreate_v2 SHIM_YES
#define SHIM_NEUTRAL_cuModuleGetGlobal_v2 SHIM_YES

/* Each entry point's flags as a constant (cuda_api_flags.def), so that a hook knows without a
 * table load whether it is a query of capture state. */
#define CF_API_FLAGS(symbol, flags, stream_arg) SHIM_NFLAGS_##symbol = (flags),
enum {
#include "driver/cuda_api_flags.def"
};
#undef CF_API_FLAGS

/* A neutral hook: where the call is only counted (shim_engine_neutral_counted) the count is all
 * it does before it jumps to the driver; anything else goes through shim_nslow_<symbol>, which
 * calls shim_engine_neutral and the driver. Both ways end in a tail call, so the hook keeps no
 * registers (it was 21 instructions a call, 8 of them the frame and a table's load; PyTorch makes
 * about 11 such calls an op, issue 22). */
#define NEUTRAL_HOOK(symbol, decls, args) \
	static __attribute__((noinline)) CUresult shim_nslow_##symbol decls \
	{ \
		shim_engine_neutral(DRV_ID_##symbol); \
		return drv_real.p_##symbol args; \
	} \
	SHIM_HOOK(symbol) decls \
	{ \
		if (shim_is_inside() || shim_engine_neutral_counted(DRV_ID_##symbol, SHIM_NFLAGS_##symbol)) \
			return drv_real.p_##symbol args; \
		return shim_nslow_##symbol args; \
	}

#define CF_API(symbol, base, version, pt, ret, decls, args) \
	SHIM_IF_MODELED(SHIM_NEUTRAL_##symbol, NEUTRAL_HOOK(symbol, decls, args), )
#define CF_API_UNTYPED(symbol)
#include "driver/cuda_api.def"
#undef CF_API
#undef CF_API_UNTYPED
