/* sim_core.c - unit tests of the software device's core: initialization, device queries,
 * contexts, streams, events, host functions, the ordering rules and the random schedule,
 * and cuGetProcAddress. tests layer; runs against build/simcuda/libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

/* ------------------------------------------------------------------ host-function journal */

#define JOURNAL_MAX 64
static char journal[JOURNAL_MAX];
static int journal_len;

static void CUDA_CB note(void *tag)
{
	if (journal_len < JOURNAL_MAX - 1)
		journal[journal_len++] = (char)(uintptr_t)tag;
	journal[journal_len] = 0;
}

static void journal_reset(void)
{
	journal_len = 0;
	journal[0] = 0;
}

static int pos(char c)
{
	const char *p = strchr(journal, c);

	return p ? (int)(p - journal) : -1;
}

/* ------------------------------------------------------------------ tests */

static void test_init_and_device(void **state)
{
	int n = -1, v = 0, major = 0;
	CUdevice dev;
	char name[64];
	size_t total = 0;

	(void)state;
	assert_int_equal(cuDriverGetVersion(&v), CUDA_SUCCESS);
	assert_int_equal(v, 13000);
	assert_int_equal(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuInit(1), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuInit(0), CUDA_SUCCESS);
	assert_int_equal(cuDeviceGetCount(&n), CUDA_SUCCESS);
	assert_int_equal(n, 1);
	assert_int_equal(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
	assert_int_equal(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
	assert_int_equal(cuDeviceGetName(name, sizeof(name), dev), CUDA_SUCCESS);
	assert_non_null(strstr(name, "H200"));
	assert_int_equal(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), CUDA_SUCCESS);
	assert_int_equal(major, 9);
	assert_int_equal(cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), CUDA_SUCCESS);
	assert_int_equal(n, 132);
	assert_int_equal(cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MAX, dev), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuDeviceTotalMem(&total, dev), CUDA_SUCCESS);
	assert_true(total > (size_t)140 << 30);
}

static void test_error_names(void **state)
{
	const char *s = NULL;

	(void)state;
	assert_int_equal(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
	assert_string_equal(s, "CUDA_ERROR_OUT_OF_MEMORY");
	assert_int_equal(cuGetErrorString(CUDA_ERROR_INVALID_VALUE, &s), CUDA_SUCCESS);
	assert_non_null(strstr(s, "parameters"));
	assert_int_equal(cuGetErrorName((CUresult)123456, &s), CUDA_ERROR_INVALID_VALUE);
}

static void test_contexts(void **state)
{
	CUcontext primary, created, cur = NULL, popped = NULL;
	CUdevice dev = -1;
	unsigned int flags = 99;
	int active = 0;

	(void)state;
	CHECK(cuDevicePrimaryCtxRetain(&primary, 0));
	CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active));
	assert_int_equal(active, 1);
	CHECK(cuCtxSetCurrent(primary));
	CHECK(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, primary);
	CHECK(cuCtxGetDevice(&dev));
	assert_int_equal(dev, 0);

	CHECK(cuCtxCreate(&created, NULL, 0, 0));
	CHECK(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, created);
	assert_ptr_not_equal(created, primary);
	CHECK(cuCtxPopCurrent(&popped));
	assert_ptr_equal(popped, created);
	CHECK(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, primary);
	CHECK(cuCtxPushCurrent(created));
	CHECK(cuCtxGetDevice_v2(&dev, primary));
	assert_int_equal(dev, 0);
	CHECK(cuCtxDestroy(created));
	CHECK(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, primary);
	assert_int_equal(cuCtxPushCurrent(created), CUDA_ERROR_INVALID_CONTEXT);
	assert_int_equal(cuCtxDestroy(primary), CUDA_ERROR_INVALID_CONTEXT);
	CHECK(cuCtxSynchronize());
	CHECK(cuCtxSynchronize_v2(NULL));
}

static void test_streams_and_host_functions(void **state)
{
	CUstream s;
	unsigned int flags = 7;
	int prio = 1;

	(void)state;
	CHECK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, -3));
	CHECK(cuStreamGetFlags(s, &flags));
	assert_int_equal(flags, CU_STREAM_NON_BLOCKING);
	CHECK(cuStreamGetPriority(s, &prio));
	assert_int_equal(prio, -3);
	assert_int_equal(cuStreamCreate(&s, 0x80), CUDA_ERROR_INVALID_VALUE);

	journal_reset();
	for (int i = 0; i < 6; i++)
		CHECK(cuLaunchHostFunc(s, note, (void *)(uintptr_t)('a' + i)));
	assert_int_equal(journal_len, 0); /* nothing runs before a synchronization */
	CHECK(cuStreamSynchronize(s));
	assert_string_equal(journal, "abcdef"); /* stream order */
	CHECK(cuStreamDestroy(s));
	assert_int_equal(cuStreamSynchronize((CUstream)0xdead0), CUDA_ERROR_INVALID_HANDLE);
}

/* Two unordered streams: both orders must occur (the schedule is really random), and with an
 * event wait only the allowed one. */
static void test_random_interleaving_and_event_order(void **state)
{
	CUstream a, b;
	CUevent e;
	int ab = 0, ba = 0;

	(void)state;
	CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
	for (int i = 0; i < 64; i++) {
		journal_reset();
		CHECK(cuLaunchHostFunc(a, note, (void *)'A'));
		CHECK(cuLaunchHostFunc(b, note, (void *)'B'));
		CHECK(cuCtxSynchronize());
		if (pos('A') < pos('B'))
			ab++;
		else
			ba++;
	}
	assert_true(ab > 0);
	assert_true(ba > 0);
	for (int i = 0; i < 64; i++) {
		journal_reset();
		CHECK(cuLaunchHostFunc(a, note, (void *)'A'));
		CHECK(cuEventRecord(e, a));
		CHECK(cuStreamWaitEvent(b, e, 0));
		CHECK(cuLaunchHostFunc(b, note, (void *)'B'));
		CHECK(cuStreamSynchronize(b));
		assert_true(pos('A') >= 0 && pos('A') < pos('B'));
		CHECK(cuCtxSynchronize());
	}
	CHECK(cuEventDestroy(e));
	CHECK(cuStreamDestroy(a));
	CHECK(cuStreamDestroy(b));
}

/* Legacy default stream: it waits for blocking streams and they wait for it; non-blocking
 * streams are not ordered with it. */
static void test_legacy_stream_rules(void **state)
{
	CUstream blocking, nonblocking;
	int n_before = 0, n_after = 0;

	(void)state;
	CHECK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
	CHECK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
	for (int i = 0; i < 64; i++) {
		journal_reset();
		CHECK(cuLaunchHostFunc(blocking, note, (void *)'A'));
		CHECK(cuLaunchHostFunc(nonblocking, note, (void *)'N'));
		CHECK(cuLaunchHostFunc(NULL, note, (void *)'L'));
		CHECK(cuLaunchHostFunc(blocking, note, (void *)'B'));
		CHECK(cuLaunchHostFunc(CU_STREAM_PER_THREAD, note, (void *)'P'));
		CHECK(cuCtxSynchronize());
		assert_int_equal(journal_len, 5);
		assert_true(pos('A') < pos('L'));
		assert_true(pos('L') < pos('B'));
		assert_true(pos('L') < pos('P')); /* the per-thread stream is a blocking stream */
		if (pos('N') < pos('L'))
			n_before++;
		else
			n_after++;
	}
	assert_true(n_before > 0 && n_after > 0);
	CHECK(cuStreamDestroy(blocking));
	CHECK(cuStreamDestroy(nonblocking));
}

static void test_events(void **state)
{
	CUevent start, stop, notiming;
	CUstream s;
	float ms = -1;

	(void)state;
	CHECK(cuStreamCreate(&s, 0));
	CHECK(cuEventCreate(&start, 0));
	CHECK(cuEventCreate(&stop, CU_EVENT_BLOCKING_SYNC));
	CHECK(cuEventCreate(&notiming, CU_EVENT_DISABLE_TIMING));
	assert_int_equal(cuEventCreate(&notiming, 0x100), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuEventRecord(start, s));
	for (int i = 0; i < 4; i++)
		CHECK(cuLaunchHostFunc(s, note, (void *)'x'));
	CHECK(cuEventRecord(stop, s));
	CHECK(cuEventRecord(notiming, s));
	assert_int_equal(cuEventElapsedTime(&ms, start, stop), CUDA_ERROR_NOT_READY);
	CHECK(cuEventSynchronize(stop));
	CHECK(cuEventQuery(start));
	CHECK(cuEventElapsedTime(&ms, start, stop));
	assert_true(ms > 0.0f && ms < 1.0f); /* four host functions: a few modeled microseconds */
	assert_int_equal(cuEventElapsedTime(&ms, start, notiming), CUDA_ERROR_INVALID_HANDLE);
	CHECK(cuEventDestroy(start));
	CHECK(cuEventDestroy(stop));
	CHECK(cuEventDestroy(notiming));
	CHECK(cuStreamDestroy(s));
}

/* ------------------------------------------------------------------ cuGetProcAddress */

static const char *symbol_of(void *p)
{
	Dl_info info;

	return p && dladdr(p, &info) && info.dli_sname ? info.dli_sname : "(none)";
}

static void test_proc_address(void **state)
{
	void *p = NULL, *q = NULL;
	CUdriverProcAddressQueryResult st = 99;

	(void)state;
	CHECK(cuGetProcAddress("cuMemAlloc", &p, 3020, 0, &st));
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
	assert_string_equal(symbol_of(p), "cuMemAlloc_v2");
	CHECK(cuGetProcAddress("cuMemAlloc", &p, 2000, 0, &st));
	assert_string_equal(symbol_of(p), "cuMemAlloc");
	CHECK(cuGetProcAddress("cuLaunchKernel", &p, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
	assert_string_equal(symbol_of(p), "cuLaunchKernel_ptsz");
	CHECK(cuGetProcAddress("cuLaunchKernel", &q, 12000, 0, &st));
	assert_string_equal(symbol_of(q), "cuLaunchKernel");
	CHECK(cuGetProcAddress("cuMemcpyHtoD", &p, 7000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
	assert_string_equal(symbol_of(p), "cuMemcpyHtoD_v2_ptds");
	CHECK(cuGetProcAddress("cuCtxGetDevice", &p, 2000, 0, &st));
	CHECK(cuGetProcAddress("cuCtxGetDevice", &q, 13000, 0, &st));
	assert_string_equal(symbol_of(p), "cuCtxGetDevice");
	assert_string_equal(symbol_of(q), "cuCtxGetDevice_v2");
	CHECK(cuGetProcAddress("cuCtxCreate", &p, 12080, 0, &st));
	assert_string_equal(symbol_of(p), "cuCtxCreate_v4");
	/* a per-thread request for a name without a per-thread variant gets the legacy one */
	CHECK(cuGetProcAddress("cuMemAlloc", &p, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
	assert_string_equal(symbol_of(p), "cuMemAlloc_v2");
	CHECK(cuGetProcAddress("cuNoSuchThing", &p, 12000, 0, &st));
	assert_null(p);
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	CHECK(cuGetProcAddress("cuLibraryLoadData", &p, 11000, 0, &st));
	assert_null(p);
	assert_int_equal(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	assert_int_equal(cuGetProcAddress("cuMemAlloc", &p, 14000, 0, &st), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetProcAddress("cuMemAlloc", NULL, 12000, 0, &st), CUDA_ERROR_INVALID_VALUE);
}

/* Stale or invented handles give errors, never a crash (the handle registry). */
static void test_invented_handles(void **state)
{
	char junk[64] = {0};
	CUmodule mod = NULL;
	const char *name = NULL;
	size_t off = 0;

	(void)state;
	assert_int_equal(cuLaunchKernel((CUfunction)junk, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
			 CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cuFuncGetName(&name, (CUfunction)0x10), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cuModuleUnload((CUmodule)junk), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cuStreamSynchronize((CUstream)junk), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(cuEventRecord((CUevent)junk, NULL), CUDA_ERROR_INVALID_HANDLE);
	mod = tl_load_module("elementwise");
	{
		CUfunction f = tl_func(mod, "fill");

		CHECK(cuFuncGetParamInfo(f, 0, &off, NULL));
		CHECK(cuModuleUnload(mod));
		assert_int_equal(cuFuncGetParamInfo(f, 0, &off, NULL), CUDA_ERROR_INVALID_HANDLE);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_and_device),
		cmocka_unit_test(test_error_names),
		cmocka_unit_test(test_contexts),
		cmocka_unit_test(test_streams_and_host_functions),
		cmocka_unit_test(test_random_interleaving_and_event_order),
		cmocka_unit_test(test_legacy_stream_rules),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_proc_address),
		cmocka_unit_test(test_invented_handles),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
