/* sim_export_tables.c - unit tests of the software device's cuGetExportTable: which UUIDs are
 * answered and how, the cudart table's primary context, context-local storage semantics, the
 * integrity check's constant and computed answers, what cuBLAS(Lt) asks (tools-tls's current
 * context, context-identity's context id and private streams: without them PyTorch's first
 * matrix product finds no algorithm), and an unimplemented slot failing cleanly.
 * (That the real runtime accepts all of it is tests/e2e/sim_cudart_train.sh.) tests layer; runs
 * against libcuda.so.1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <string.h>

#include "testlib.h"

static const CUuuid runtime_init = { { (char)0xf8, (char)0xcf, (char)0xf9, 0x51, 0x21, 0x46, (char)0x8b, 0x4e,
				       (char)0xb9, (char)0xe2, (char)0xfb, 0x46, (char)0x9e, 0x7c, 0x0d, (char)0xd9 } };
static const CUuuid cudart = { { 0x6b, (char)0xd5, (char)0xfb, 0x6c, 0x5b, (char)0xf4, (char)0xe7, 0x4a,
				 (char)0x89, (char)0x87, (char)0xd9, 0x39, 0x12, (char)0xfd, (char)0x9d, (char)0xf9 } };
static const CUuuid cls = { { (char)0xc6, (char)0x93, 0x33, 0x6e, 0x11, 0x21, (char)0xdf, 0x11,
			      (char)0xa8, (char)0xc3, 0x68, (char)0xf3, 0x55, (char)0xd8, (char)0x95, (char)0x93 } };
static const CUuuid integrity = { { (char)0xd4, 0x08, 0x20, 0x55, (char)0xbd, (char)0xe6, 0x70, 0x4b,
				    (char)0x8d, 0x34, (char)0xba, 0x12, 0x3c, 0x66, (char)0xe1, (char)0xf2 } };

static const CUuuid tools_tls = { { 0x42, (char)0xd8, 0x5a, (char)0x81, 0x23, (char)0xf6, (char)0xcb, 0x47,
				    (char)0x82, (char)0x98, (char)0xf6, (char)0xe7, (char)0x8a, 0x3a, (char)0xec, (char)0xdc } };
static const CUuuid ctx_identity = { { 0x21, 0x31, (char)0x8c, 0x60, (char)0x97, 0x14, 0x32, 0x48,
				       (char)0x8c, (char)0xa6, 0x41, (char)0xff, 0x73, 0x24, (char)0xc8, (char)0xf2 } };

typedef CUresult (*primary_fn)(CUcontext *pctx, CUdevice dev);
typedef CUresult (*tls_ctx_fn)(void **pctx);
typedef CUresult (*ctx_id_fn)(CUcontext ctx, uint64_t *id);
typedef CUresult (*stream_priv_fn)(CUcontext ctx, CUstream h, void **priv, int per_thread);
typedef CUresult (*stream_ident_fn)(CUcontext ctx, const void *priv, uint64_t *identity);
typedef CUresult (*cls_put_fn)(CUcontext ctx, void *key, void *value, void (*dtor)(CUcontext, void *, void *));
typedef CUresult (*cls_delete_fn)(CUcontext ctx, void *key);
typedef CUresult (*cls_get_fn)(void **value, CUcontext ctx, void *key);
typedef CUresult (*integrity_fn)(unsigned int version, uint64_t unix_seconds, uint64_t result[2]);
typedef CUresult (*unknown_fn)(void);

static const void *const *table(const CUuuid *id)
{
	const void *t = NULL;

	CHECK(cuGetExportTable(&t, id));
	assert_non_null(t);
	return t;
}

/* Slot i of a table into a function pointer variable (memcpy: ISO C has no cast between
 * object and function pointers). */
static void slot(void *fnvar, const void *const *t, unsigned int i)
{
	memcpy(fnvar, &t[i], sizeof(void *));
}

static void test_answers(void **state)
{
	static const CUuuid unknown = { { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 } };
	const void *t = (const void *)1;

	(void)state;
	tl_init();
	assert_int_equal(cuGetExportTable(NULL, &cudart), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetExportTable(&t, NULL), CUDA_ERROR_INVALID_VALUE);
	/* success here would make the runtime skip its usual bootstrap */
	assert_int_equal(cuGetExportTable(&t, &runtime_init), CUDA_ERROR_NOT_FOUND);
	assert_null(t);
	t = (const void *)1;
	assert_int_equal(cuGetExportTable(&t, &unknown), CUDA_ERROR_NOT_FOUND);
	assert_null(t);
	/* sized tables start with their size in bytes */
	assert_int_equal((uintptr_t)table(&cudart)[0], 13 * sizeof(void *));
	assert_int_equal((uintptr_t)table(&integrity)[0], 3 * sizeof(void *));
}

static void test_cudart_primary_context(void **state)
{
	const void *const *t = table(&cudart);
	CUcontext a = NULL, b = NULL;
	CUdevice dev;
	primary_fn primary;
	unknown_fn unknown;

	(void)state;
	slot(&primary, t, 2);
	slot(&unknown, t, 1);
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(primary(&a, dev));
	CHECK(cuDevicePrimaryCtxRetain(&b, dev));
	assert_ptr_equal(a, b);
	/* an unimplemented slot fails cleanly (and is logged once) */
	assert_int_equal(unknown(), CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(unknown(), CUDA_ERROR_NOT_SUPPORTED);
}

/* cuBLASLt's questions before its first matrix product: the current context (tools-tls slot 2)
 * and that context's unique id (context-identity slot 4), both answered as cuCtxGetCurrent and
 * cuCtxGetId would; and the private stream of a public handle and its identity. */
static void test_cublas_tables(void **state)
{
	const void *const *tls = table(&tools_tls), *const *ident = table(&ctx_identity);
	tls_ctx_fn current;
	ctx_id_fn ctx_id;
	stream_priv_fn priv_of;
	stream_ident_fn ident_of;
	CUcontext ctx, other;
	CUdevice dev;
	CUstream s;
	unsigned long long want;
	uint64_t got = 0;
	void *p = (void *)1;

	(void)state;
	tl_init();
	assert_int_equal((uintptr_t)ident[0], 93 * sizeof(void *));
	slot(&current, tls, 2);
	slot(&ctx_id, ident, 4);
	slot(&priv_of, ident, 51);
	slot(&ident_of, ident, 39);
	CHECK(cuCtxSetCurrent(NULL));
	assert_int_equal(current(&p), CUDA_ERROR_INVALID_CONTEXT);
	assert_null(p);
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(current(&p));
	assert_ptr_equal(p, ctx);
	CHECK(cuCtxGetId(ctx, &want));
	CHECK(ctx_id(ctx, &got));
	assert_int_equal(got, want);
	CHECK(cuCtxCreate(&other, NULL, 0, dev));
	CHECK(ctx_id(other, &got));
	assert_int_not_equal(got, want);
	CHECK(cuCtxDestroy(other));
	assert_int_equal(ctx_id(other, &got), CUDA_ERROR_INVALID_CONTEXT);
	CHECK(cuCtxSetCurrent(ctx));
	/* streams: a created stream is its own private stream, NULL becomes the per-thread stream
	 * when asked, a handle that names nothing is refused */
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(priv_of(ctx, s, &p, 0));
	assert_ptr_equal(p, s);
	CHECK(ident_of(ctx, p, &got));
	assert_int_equal(got, (uint64_t)(uintptr_t)s);
	CHECK(priv_of(ctx, NULL, &p, 1));
	assert_ptr_equal(p, CU_STREAM_PER_THREAD);
	assert_int_equal(priv_of(ctx, (CUstream)(uintptr_t)0x7777, &p, 0), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(priv_of(ctx, s, NULL, 0), CUDA_ERROR_INVALID_VALUE);
	CHECK(cuStreamDestroy(s));
}

static void test_context_local_storage(void **state)
{
	const void *const *t = table(&cls);
	int key1, key2, v1, v2;
	void *got = &got;
	CUcontext ctx;
	cls_put_fn put;
	cls_delete_fn del;
	cls_get_fn get;

	(void)state;
	slot(&put, t, 0);
	slot(&del, t, 1);
	slot(&get, t, 2);
	CHECK(cuCtxGetCurrent(&ctx));
	assert_int_equal(get(&got, NULL, &key1), CUDA_ERROR_INVALID_HANDLE);
	assert_null(got);
	CHECK(put(NULL, &key1, &v1, NULL));
	CHECK(put(ctx, &key2, &v2, NULL));
	/* NULL names the current context: both keys are found either way */
	CHECK(get(&got, ctx, &key1));
	assert_ptr_equal(got, &v1);
	CHECK(get(&got, NULL, &key2));
	assert_ptr_equal(got, &v2);
	/* put again replaces */
	CHECK(put(NULL, &key1, &v2, NULL));
	CHECK(get(&got, NULL, &key1));
	assert_ptr_equal(got, &v2);
	CHECK(del(NULL, &key1));
	assert_int_equal(get(&got, NULL, &key1), CUDA_ERROR_INVALID_HANDLE);
	CHECK(get(&got, NULL, &key2));
	assert_ptr_equal(got, &v2);
	assert_int_equal(get(&got, (CUcontext)&key1, &key2), CUDA_ERROR_INVALID_CONTEXT);
}

static void test_integrity(void **state)
{
	const void *const *t = table(&integrity);
	integrity_fn check;
	uint64_t r[2], again[2], later[2];

	(void)state;
	slot(&check, t, 1);
	/* versions ending in 0 and 1 have constant answers */
	CHECK(check(13000, 1, r));
	assert_true(r[0] == 0x3341181c03cb675cull && r[1] == 0x8ed383aa1f4cd1e8ull);
	CHECK(check(12071, 99, r));
	assert_true(r[0] == 0x1841181c03cb675cull && r[1] == 0x8ed383aa1f4cd1e8ull);
	/* the others are a keyed hash of the process, the time and the devices: the same inputs
	 * give the same answer, another time another one */
	CHECK(check(13002, 1796000000, r));
	CHECK(check(13002, 1796000000, again));
	CHECK(check(13002, 1796000001, later));
	assert_memory_equal(r, again, sizeof(r));
	assert_memory_not_equal(r, later, sizeof(r));
	assert_int_equal(check(13002, 1, NULL), CUDA_ERROR_INVALID_VALUE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answers),
		cmocka_unit_test(test_cudart_primary_context),
		cmocka_unit_test(test_cublas_tables),
		cmocka_unit_test(test_context_local_storage),
		cmocka_unit_test(test_integrity),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
