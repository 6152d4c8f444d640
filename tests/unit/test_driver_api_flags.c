/* test_driver_api_flags.c - what each entry point does, as generated into driver/cuda_api_flags.def
 * and read from struct drv_api_info: a dozen named entry points with their exact flags, and
 * the classifications the code made by hand before (strstr "Async", the capture queries, the
 * primary context's destroyers). tests layer (cmocka, libcufold.a). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "driver/api.h"

#define A DRV_API_ASYNC
#define S DRV_API_STREAM
#define E DRV_API_ENQUEUES
#define O DRV_API_OBSERVES
#define F DRV_API_FREES
#define Q DRV_API_CAPTURE_QUERY
#define P DRV_API_DESTROYS_PRIMARY
#define C DRV_API_COOPERATIVE

struct want {
	const char *name; /* exported symbol */
	unsigned flags;   /* exactly these */
	int stream_arg;   /* index of the CUstream parameter, -1 none */
};

static const struct want wants[] = {
	{ "cuMemcpyHtoDAsync_v2", A | S | E, 3 },
	{ "cuMemcpyDtoHAsync_v2_ptsz", A | S | E, 3 },
	{ "cuMemcpyHtoD_v2", E | O, -1 },
	{ "cuMemcpyDtoD_v2_ptds", E | O, -1 },
	{ "cuMemsetD32Async_ptsz", A | S | E, 3 },
	{ "cuMemsetD8_v2", E | O, -1 },
	{ "cuLaunchKernel", S | E, 8 },
	{ "cuLaunchKernelEx", E, -1 }, /* the stream is in the config */
	{ "cuLaunchCooperativeKernel_ptsz", S | E | C, 8 },
	{ "cuLaunchHostFunc", S | E, 0 },
	{ "cuEventRecord", S | E, 1 },
	{ "cuStreamWaitEvent", S | E, 0 },
	{ "cuGraphLaunch", S | E, 1 },
	{ "cuMemAllocAsync", A | S | E, 2 },
	{ "cuMemFreeAsync", A | S | E | F, 1 },
	{ "cuMemFree_v2", F, -1 },
	{ "cuMemFreeHost", F, -1 },
	{ "cuMemHostUnregister", F, -1 },
	{ "cuMemUnmap", F, -1 },
	{ "cuStreamSynchronize", S | O, 0 },
	{ "cuStreamQuery_ptsz", S | O, 0 },
	{ "cuEventSynchronize", O, -1 },
	{ "cuEventQuery", O, -1 },
	{ "cuCtxSynchronize", O, -1 },
	{ "cuStreamIsCapturing", S | Q, 0 },
	{ "cuStreamGetCaptureInfo_v3_ptsz", S | Q, 0 },
	{ "cuStreamBeginCapture_v2", S, 0 },
	{ "cuDevicePrimaryCtxReset_v2", P, -1 },
	{ "cuDevicePrimaryCtxRelease", P, -1 },
	{ "cuDevicePrimaryCtxRetain", 0, -1 },
	{ "cuDeviceRegisterAsyncNotification", 0, -1 }, /* says Async about something else */
	{ "cuMemAlloc_v2", 0, -1 },
	{ "cuCtxGetCurrent", 0, -1 },
	{ "cuProfilerStop", 0, -1 }, /* untyped */
};

static void test_named_entry_points(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
		int id = drv_api_find(wants[i].name);

		if (id < 0)
			fail_msg("%s is not in cuda_api.def", wants[i].name);
		if (drv_api[id].flags != wants[i].flags || drv_api[id].stream_arg != wants[i].stream_arg)
			fail_msg("%s: flags %#x stream_arg %d, want %#x and %d", wants[i].name, drv_api[id].flags,
				 drv_api[id].stream_arg, wants[i].flags, wants[i].stream_arg);
		assert_true(drv_api_is((unsigned)id, wants[i].flags));
	}
}

/* ASYNC is what strstr(name, "Async") said wherever the code asked it (of memcpy, memset and
 * launch ops: each has its stream in the ABI). */
static void test_async_is_the_name(void **state)
{
	int n = 0;

	(void)state;
	for (int id = 0; id < DRV_API_COUNT; id++) {
		bool says = strstr(drv_api[id].name, "Async") != NULL;
		bool stream = drv_api[id].stream_arg >= 0;

		if (drv_api_is((unsigned)id, DRV_API_ASYNC) != (says && stream))
			fail_msg("%s: ASYNC %d, name says Async %d, stream %d", drv_api[id].name,
				 drv_api_is((unsigned)id, DRV_API_ASYNC), says, stream);
		if (drv_api_is((unsigned)id, DRV_API_STREAM) != stream)
			fail_msg("%s: STREAM and stream_arg disagree", drv_api[id].name);
		if (says && (!strncmp(drv_api[id].name, "cuMemcpy", 8) || !strncmp(drv_api[id].name, "cuMemset", 8)))
			assert_true(drv_api_is((unsigned)id, DRV_API_ASYNC | DRV_API_ENQUEUES));
		n += says;
	}
	assert_true(n > 60);
}

/* The lists the shim's engine kept by hand, exactly. */
static void test_hand_lists(void **state)
{
	static const char *const capture_queries[] = {
		"cuStreamIsCapturing",        "cuStreamIsCapturing_ptsz",        "cuStreamGetCaptureInfo",
		"cuStreamGetCaptureInfo_ptsz", "cuStreamGetCaptureInfo_v2",      "cuStreamGetCaptureInfo_v2_ptsz",
		"cuStreamGetCaptureInfo_v3",  "cuStreamGetCaptureInfo_v3_ptsz",
	};
	static const char *const primary[] = {
		"cuDevicePrimaryCtxReset",
		"cuDevicePrimaryCtxReset_v2",
		"cuDevicePrimaryCtxRelease",
		"cuDevicePrimaryCtxRelease_v2",
	};
	int nq = 0, np = 0, nc = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(capture_queries) / sizeof(capture_queries[0]); i++)
		assert_true(drv_api_is((unsigned)drv_api_find(capture_queries[i]), DRV_API_CAPTURE_QUERY));
	for (size_t i = 0; i < sizeof(primary) / sizeof(primary[0]); i++)
		assert_true(drv_api_is((unsigned)drv_api_find(primary[i]), DRV_API_DESTROYS_PRIMARY));
	for (int id = 0; id < DRV_API_COUNT; id++) {
		nq += drv_api_is((unsigned)id, DRV_API_CAPTURE_QUERY);
		np += drv_api_is((unsigned)id, DRV_API_DESTROYS_PRIMARY);
		nc += drv_api_is((unsigned)id, DRV_API_COOPERATIVE);
	}
	assert_int_equal(nq, 8);
	assert_int_equal(np, 4);
	assert_int_equal(nc, 3); /* cuLaunchCooperativeKernel, _ptsz, MultiDevice */
}

/* Every flag is given to some entry point, and an id out of range has none. */
static void test_every_flag_used(void **state)
{
	unsigned seen = 0;

	(void)state;
	for (int id = 0; id < DRV_API_COUNT; id++) {
		seen |= drv_api[id].flags;
		assert_true(drv_api[id].stream_arg >= -1 && drv_api[id].stream_arg < 16);
		/* an asynchronous call returns before work it enqueued */
		if (drv_api_is((unsigned)id, DRV_API_ASYNC) && !drv_api_is((unsigned)id, DRV_API_ENQUEUES))
			fail_msg("%s is asynchronous but enqueues nothing", drv_api[id].name);
	}
	assert_int_equal(seen, A | S | E | O | F | Q | P | C);
	assert_false(drv_api_is(DRV_API_COUNT, 0));
	assert_false(drv_api_is(0xffffu, DRV_API_ASYNC));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_named_entry_points),
		cmocka_unit_test(test_async_is_the_name),
		cmocka_unit_test(test_hand_lists),
		cmocka_unit_test(test_every_flag_used),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
