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

static void *hand(shim_fn f)
{
	void *p;

	memcpy(&p, &f, sizeof(p));
	return p;
}

static void test_modeled_sets(void **state)
{
	static const enum shim_api_id modeled[] = {
		/* stream work */
		SHIM_ID_cuLaunchKernel, SHIM_ID_cuLaunchKernel_ptsz, SHIM_ID_cuLaunchKernelEx,
		SHIM_ID_cuLaunchKernelEx_ptsz, SHIM_ID_cuLaunchCooperativeKernel, SHIM_ID_cuLaunchHostFunc_ptsz,
		SHIM_ID_cuMemcpyHtoDAsync_v2, SHIM_ID_cuMemcpyDtoH_v2_ptds, SHIM_ID_cuMemcpy3DPeerAsync_ptsz,
		SHIM_ID_cuMemcpy, SHIM_ID_cuMemsetD2D16Async_ptsz, SHIM_ID_cuMemsetD8_v2, SHIM_ID_cuEventRecordWithFlags,
		SHIM_ID_cuStreamWaitEvent_ptsz,
		/* boundaries and bookkeeping */
		SHIM_ID_cuStreamSynchronize, SHIM_ID_cuEventQuery, SHIM_ID_cuCtxSynchronize_v2,
		SHIM_ID_cuStreamBeginCapture, SHIM_ID_cuStreamBeginCapture_v2_ptsz, SHIM_ID_cuStreamEndCapture,
		SHIM_ID_cuCtxSetCurrent, SHIM_ID_cuCtxPopCurrent_v2, SHIM_ID_cuMemFree_v2, SHIM_ID_cuMemFreeAsync_ptsz,
		SHIM_ID_cuMemAlloc_v2, SHIM_ID_cuMemHostRegister_v2, SHIM_ID_cuMemMap, SHIM_ID_cuMemUnmap,
		SHIM_ID_cuModuleUnload, SHIM_ID_cuLibraryGetKernel,
		/* loaders and lookups (capture keeps their images' PTX) */
		SHIM_ID_cuModuleLoad, SHIM_ID_cuModuleLoadDataEx, SHIM_ID_cuModuleLoadFatBinary,
		SHIM_ID_cuLibraryLoadFromFile, SHIM_ID_cuModuleGetFunction, SHIM_ID_cuKernelGetFunction,
		SHIM_ID_cuLibraryGetModule, SHIM_ID_cuLinkAddData_v2, SHIM_ID_cuLinkAddFile_v2, SHIM_ID_cuLinkDestroy,
		/* neutral */
		SHIM_ID_cuCtxGetCurrent, SHIM_ID_cuPointerGetAttribute, SHIM_ID_cuStreamGetCaptureInfo_v3,
		SHIM_ID_cuFuncGetParamInfo, SHIM_ID_cuEventCreate, SHIM_ID_cuOccupancyMaxPotentialBlockSize,
		SHIM_ID_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, SHIM_ID_cuMemGetAllocationGranularity,
		SHIM_ID_cuArray3DGetDescriptor_v2, SHIM_ID_cuModuleLoadData, SHIM_ID_cuLibraryLoadData,
		SHIM_ID_cuLinkComplete, SHIM_ID_cuModuleGetGlobal_v2,
	};
	static const enum shim_api_id unmodeled[] = {
		SHIM_ID_cuInit, SHIM_ID_cuGraphLaunch, SHIM_ID_cuEventElapsedTime,
		SHIM_ID_cuFuncSetAttribute, SHIM_ID_cuMemcpyBatchAsync_v2, SHIM_ID_cuMemcpyAtoH_v2,
		SHIM_ID_cuStreamGetCaptureInfo, SHIM_ID_cuDeviceGetUuid, SHIM_ID_cuMemCreate,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(modeled) / sizeof(modeled[0]); i++) {
		if (!shim_is_modeled(modeled[i]))
			fail_msg("%s should be modeled", shim_api[modeled[i]].name);
	}
	for (size_t i = 0; i < sizeof(unmodeled) / sizeof(unmodeled[0]); i++) {
		if (shim_is_modeled(unmodeled[i]))
			fail_msg("%s should stay a generated boundary", shim_api[unmodeled[i]].name);
	}
}

static void test_hooks_are_hand_written(void **state)
{
	(void)state;
	assert_ptr_equal(shim_hook_addr(SHIM_ID_cuLaunchKernel), hand((shim_fn)shim_hand_cuLaunchKernel));
	assert_ptr_equal(shim_hook_addr(SHIM_ID_cuMemsetD32Async_ptsz), hand((shim_fn)shim_hand_cuMemsetD32Async_ptsz));
	assert_ptr_equal(shim_hook_addr(SHIM_ID_cuStreamBeginCapture), hand((shim_fn)shim_hand_cuStreamBeginCapture));
	assert_ptr_equal(shim_hook_addr(SHIM_ID_cuStreamBeginCapture_v2),
			 hand((shim_fn)shim_hand_cuStreamBeginCapture_v2));
	assert_ptr_not_equal(shim_hook_addr(SHIM_ID_cuStreamBeginCapture),
			     shim_hook_addr(SHIM_ID_cuStreamBeginCapture_v2));
	assert_ptr_equal(shim_hook_addr(SHIM_ID_cuCtxGetCurrent), hand((shim_fn)shim_hand_cuCtxGetCurrent));
	/* every hook distinct, whatever wrote it */
	for (int id = 0; id < SHIM_API_COUNT; id++)
		assert_int_equal(shim_hook_find(shim_hook_addr((enum shim_api_id)id)), id);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modeled_sets),
		cmocka_unit_test(test_hooks_are_hand_written),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
