/* test_shim_hooks.c - the hand-written hooks of capture: which entry points are modeled (stream
 * work, boundaries, the allocation map, neutral queries) and which stay generated boundaries,
 * and that each modeled symbol's hook is its hand-written stub. tests layer (cmocka,
 * libcufold.a). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "shim/shim_int.h"

static void *hand(drv_fn f)
{
	void *p;

	memcpy(&p, &f, sizeof(p));
	return p;
}

static void test_modeled_sets(void **state)
{
	static const enum drv_api_id modeled[] = {
		/* stream work */
		DRV_ID_cuLaunchKernel, DRV_ID_cuLaunchKernel_ptsz, DRV_ID_cuLaunchKernelEx,
		DRV_ID_cuLaunchKernelEx_ptsz, DRV_ID_cuLaunchCooperativeKernel, DRV_ID_cuLaunchHostFunc_ptsz,
		DRV_ID_cuMemcpyHtoDAsync_v2, DRV_ID_cuMemcpyDtoH_v2_ptds, DRV_ID_cuMemcpy3DPeerAsync_ptsz,
		DRV_ID_cuMemcpy, DRV_ID_cuMemsetD2D16Async_ptsz, DRV_ID_cuMemsetD8_v2, DRV_ID_cuEventRecordWithFlags,
		DRV_ID_cuStreamWaitEvent_ptsz,
		/* boundaries and bookkeeping */
		DRV_ID_cuStreamSynchronize, DRV_ID_cuEventQuery, DRV_ID_cuCtxSynchronize_v2,
		DRV_ID_cuStreamBeginCapture, DRV_ID_cuStreamBeginCapture_v2_ptsz, DRV_ID_cuStreamEndCapture,
		DRV_ID_cuCtxSetCurrent, DRV_ID_cuCtxPopCurrent_v2, DRV_ID_cuMemFree_v2, DRV_ID_cuMemFreeAsync_ptsz,
		DRV_ID_cuMemAlloc_v2, DRV_ID_cuMemHostRegister_v2, DRV_ID_cuMemMap, DRV_ID_cuMemUnmap,
		DRV_ID_cuModuleUnload, DRV_ID_cuLibraryGetKernel,
		/* loaders and lookups (capture keeps their images' PTX) */
		DRV_ID_cuModuleLoad, DRV_ID_cuModuleLoadDataEx, DRV_ID_cuModuleLoadFatBinary,
		DRV_ID_cuLibraryLoadFromFile, DRV_ID_cuModuleGetFunction, DRV_ID_cuKernelGetFunction,
		DRV_ID_cuLibraryGetModule, DRV_ID_cuLinkAddData_v2, DRV_ID_cuLinkAddFile_v2, DRV_ID_cuLinkDestroy,
		/* neutral */
		DRV_ID_cuCtxGetCurrent, DRV_ID_cuPointerGetAttribute, DRV_ID_cuStreamGetCaptureInfo_v3,
		DRV_ID_cuFuncGetParamInfo, DRV_ID_cuEventCreate, DRV_ID_cuOccupancyMaxPotentialBlockSize,
		DRV_ID_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, DRV_ID_cuMemGetAllocationGranularity,
		DRV_ID_cuArray3DGetDescriptor_v2, DRV_ID_cuModuleLoadData, DRV_ID_cuLibraryLoadData,
		DRV_ID_cuLinkComplete, DRV_ID_cuModuleGetGlobal_v2,
		/* neutral when the value is already set (hooks_attr.c) */
		DRV_ID_cuFuncSetAttribute, DRV_ID_cuKernelSetAttribute,
	};
	static const enum drv_api_id unmodeled[] = {
		DRV_ID_cuInit, DRV_ID_cuGraphLaunch, DRV_ID_cuEventElapsedTime,
		DRV_ID_cuFuncSetCacheConfig, DRV_ID_cuMemcpyBatchAsync_v2, DRV_ID_cuMemcpyAtoH_v2,
		DRV_ID_cuStreamGetCaptureInfo, DRV_ID_cuDeviceGetUuid, DRV_ID_cuMemCreate,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(modeled) / sizeof(modeled[0]); i++) {
		if (!shim_is_modeled(modeled[i]))
			fail_msg("%s should be modeled", drv_api[modeled[i]].name);
	}
	for (size_t i = 0; i < sizeof(unmodeled) / sizeof(unmodeled[0]); i++) {
		if (shim_is_modeled(unmodeled[i]))
			fail_msg("%s should stay a generated boundary", drv_api[unmodeled[i]].name);
	}
}

static void test_hooks_are_hand_written(void **state)
{
	(void)state;
	assert_ptr_equal(shim_hook_addr(DRV_ID_cuLaunchKernel), hand((drv_fn)shim_hand_cuLaunchKernel));
	assert_ptr_equal(shim_hook_addr(DRV_ID_cuMemsetD32Async_ptsz), hand((drv_fn)shim_hand_cuMemsetD32Async_ptsz));
	assert_ptr_equal(shim_hook_addr(DRV_ID_cuStreamBeginCapture), hand((drv_fn)shim_hand_cuStreamBeginCapture));
	assert_ptr_equal(shim_hook_addr(DRV_ID_cuStreamBeginCapture_v2),
			 hand((drv_fn)shim_hand_cuStreamBeginCapture_v2));
	assert_ptr_not_equal(shim_hook_addr(DRV_ID_cuStreamBeginCapture),
			     shim_hook_addr(DRV_ID_cuStreamBeginCapture_v2));
	assert_ptr_equal(shim_hook_addr(DRV_ID_cuCtxGetCurrent), hand((drv_fn)shim_hand_cuCtxGetCurrent));
	/* every hook distinct, whatever wrote it */
	for (int id = 0; id < DRV_API_COUNT; id++)
		assert_int_equal(shim_hook_find(shim_hook_addr((enum drv_api_id)id)), id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modeled_sets),
		cmocka_unit_test(test_hooks_are_hand_written),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
