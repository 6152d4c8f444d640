/* sim_variant.c - cufold's multi-instance variants (rewrite/variant.c) run on the software device:
 * one launch of E_cf_multi over k instances writes exactly the bytes k launches of E write, for
 * test kernels with grid-stride loops over %nctaid.x, a block per row, static shared memory,
 * atomics, 64-bit stores and float parameters, k in {1, 2, 5, 17} and grids of uneven sizes, with the blocks in shuffled
 * order; a chain of dependent instances gives other bytes under some order (which is why the
 * batch-kernel rule proves independence first); calls and module variables are refused. tests
 * layer: the generator and the PTX parser are the product's (tests may use the product). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"
#include "driver/ptx.h"
#include "rewrite/variant.h"
#include "simcuda.h"
#include "testlib.h"

void simcuda_interp_force(int on); /* exported by the software device for tests */

#define MAX_ARGS 6
#define BUF_FLOATS 4096

struct kmod {
	const char *file;
	struct ptx_module *pm;
	CUmodule mod;
};

static struct kmod elementwise = { "elementwise", NULL, NULL }, notwin = { "notwin", NULL, NULL },
		   nn = { "nn", NULL, NULL };

static void kmod_load(struct kmod *k)
{
	char err[256];
	char *ptx;

	if (k->pm)
		return;
	ptx = tl_read_ptx(k->file);
	k->pm = ptx_parse(ptx, strlen(ptx), err, sizeof(err));
	if (!k->pm)
		fail_msg("%s: %s", k->file, err);
	CHECK(cuModuleLoadData(&k->mod, ptx));
	free(ptx);
}

/* The variant of entry, loaded; NULL with why when refused. */
static CUfunction variant_of(struct kmod *k, const char *entry, char *why, size_t whylen)
{
	char name[256];
	CUmodule vm;
	CUfunction f;
	size_t len;
	char *text;
	int rc;

	kmod_load(k);
	rc = rw_variant_ptx(k->pm, entry, &text, &len, why, whylen);
	if (rc == -CF_ENOSYS)
		return NULL;
	assert_int_equal(rc, 0);
	assert_int_equal(strlen(text), len);
	if (cuModuleLoadData(&vm, text) != CUDA_SUCCESS)
		fail_msg("the variant of %s does not load:\n%s", entry, text);
	free(text);
	snprintf(name, sizeof(name), "%s%s", entry, RW_VARIANT_SUFFIX);
	CHECK(cuModuleGetFunction(&f, vm, name));
	return f;
}

/* The parameter block of entry for args (each args[i] points at the parameter's value), laid out
 * as the parse says. */
static uint32_t pack(const struct ptx_func *pf, void *const *args, unsigned char *block)
{
	for (uint32_t i = 0; i < pf->nparams; i++)
		memcpy(block + pf->params[i].offset, args[i], pf->params[i].size);
	return (uint32_t)pf->param_bytes;
}

/* One kernel's instances: grid x, the block, and each instance's arguments. */
struct inst {
	uint32_t grid_x;
	unsigned char params[256];
};

/* Launch the k instances one after another with E, or as one launch of the variant V. */
static void launch_apart(CUfunction e, const struct ptx_func *pf, const struct inst *in, uint32_t k, uint32_t block)
{
	for (uint32_t j = 0; j < k; j++) {
		size_t bytes = pf->param_bytes;
		void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, (void *)in[j].params, CU_LAUNCH_PARAM_BUFFER_SIZE,
				  &bytes, CU_LAUNCH_PARAM_END };

		CHECK(cuLaunchKernel(e, in[j].grid_x, 1, 1, block, 1, 1, 0, NULL, NULL, extra));
	}
}

static void launch_variant(CUfunction v, const struct ptx_func *pf, const struct inst *in, uint32_t k, uint32_t block)
{
	static unsigned char table[RW_MULTI_TABLE_BYTES];
	const void *params[RW_MULTI_MAX];
	uint32_t grid[RW_MULTI_MAX], total = 0;
	void *args[] = { table };

	for (uint32_t j = 0; j < k; j++) {
		grid[j] = in[j].grid_x;
		params[j] = in[j].params;
	}
	assert_int_equal(rw_variant_table(k, grid, params, (uint32_t)pf->param_bytes, table, sizeof(table), &total), 0);
	CHECK(cuLaunchKernel(v, total, 1, 1, block, 1, 1, 0, NULL, args, NULL));
}

/* Device buffers of the instances: NB per instance, BUF_FLOATS floats each. */
#define NB 3
static CUdeviceptr bufs[RW_MULTI_MAX][NB];

static void bufs_fill(uint32_t k, uint32_t seed)
{
	static float host[BUF_FLOATS];

	for (uint32_t j = 0; j < k; j++)
		for (int b = 0; b < NB; b++) {
			/* small integers: sums in any order are exact */
			tl_fill_random(host, BUF_FLOATS, seed * 131u + j * 7u + (uint32_t)b);
			for (int i = 0; i < BUF_FLOATS; i++)
				host[i] = (float)(int)(host[i] * 8.0f);
			CHECK(cuMemcpyHtoD(bufs[j][b], host, sizeof(host)));
		}
}

static uint64_t bufs_hash(uint32_t k)
{
	uint64_t h = TL_HASH_INIT;

	for (uint32_t j = 0; j < k; j++)
		for (int b = 0; b < NB; b++)
			h = tl_hash_device(bufs[j][b], BUF_FLOATS * sizeof(float), h);
	return h;
}

typedef void (*args_fn)(uint32_t j, uint32_t grid_x, uint32_t block, void **args, void *vals);

/* E over k instances apart, then the variant: the same bytes, for several rounds. */
static void same_bytes(struct kmod *km, const char *entry, args_fn make, uint32_t k, uint32_t block)
{
	const struct ptx_func *pf;
	struct inst in[RW_MULTI_MAX];
	char why[256] = "";
	CUfunction e, v;

	v = variant_of(km, entry, why, sizeof(why));
	if (!v)
		fail_msg("%s refused: %s", entry, why);
	pf = ptx_find_func(km->pm, entry);
	CHECK(cuModuleGetFunction(&e, km->mod, entry));
	for (uint32_t round = 0; round < 3; round++) {
		uint64_t apart, together;

		for (uint32_t j = 0; j < k; j++) {
			void *args[MAX_ARGS];
			uint64_t vals[MAX_ARGS];

			in[j].grid_x = 1 + (j * 5 + round * 3) % 7;
			make(j, in[j].grid_x, block, args, vals);
			assert_true(pf->param_bytes <= sizeof(in[j].params));
			pack(pf, args, in[j].params);
		}
		bufs_fill(k, round + 1);
		launch_apart(e, pf, in, k, block);
		apart = bufs_hash(k);
		bufs_fill(k, round + 1);
		launch_variant(v, pf, in, k, block);
		together = bufs_hash(k);
		if (apart != together)
			fail_msg("%s, k=%u, round %u: the variant wrote other bytes", entry, k, round);
	}
}

/* scale(out, in, s, n): n a little more than the grid covers, or less. */
static void args_scale(uint32_t j, uint32_t grid_x, uint32_t block, void **args, void *vals)
{
	struct { CUdeviceptr out, in; float s; int n; } *v = vals;

	v->out = bufs[j][0];
	v->in = bufs[j][1];
	v->s = 0.5f + (float)j;
	v->n = (int)(grid_x * block) - (int)(j % 3) * 17;
	args[0] = &v->out, args[1] = &v->in, args[2] = &v->s, args[3] = &v->n;
}

/* axpy(y, x, a, n) */
static void args_axpy(uint32_t j, uint32_t grid_x, uint32_t block, void **args, void *vals)
{
	struct { CUdeviceptr y, x; float a; int n; } *v = vals;

	v->y = bufs[j][0];
	v->x = bufs[j][2];
	v->a = 2.0f - (float)j;
	v->n = (int)(grid_x * block);
	args[0] = &v->y, args[1] = &v->x, args[2] = &v->a, args[3] = &v->n;
}

/* nt_sum4(total, blocks_done, in, n4): a grid-stride loop over %nctaid.x, static shared
 * memory, atomics into the instance's own total. */
static void args_sum4(uint32_t j, uint32_t grid_x, uint32_t block, void **args, void *vals)
{
	struct { CUdeviceptr total, done, in; int n4; } *v = vals;

	(void)grid_x;
	(void)block;
	v->total = bufs[j][0];
	v->done = bufs[j][0] + 64;
	v->in = bufs[j][1];
	v->n4 = 700 + (int)j * 13; /* more than the grid covers: the loop strides */
	args[0] = &v->total, args[1] = &v->done, args[2] = &v->in, args[3] = &v->n4;
}

/* nt_bits(out, a, b, n): 64-bit stores */
static void args_bits(uint32_t j, uint32_t grid_x, uint32_t block, void **args, void *vals)
{
	struct { CUdeviceptr out, a, b; int n; } *v = vals;

	v->out = bufs[j][2];
	v->a = bufs[j][1];
	v->b = bufs[j][0];
	v->n = (int)(grid_x * block) - (int)j;
	args[0] = &v->out, args[1] = &v->a, args[2] = &v->b, args[3] = &v->n;
}

/* layernorm_row(out, in, gamma, beta, cols, eps): a block per row (%ctaid.x picks the row),
 * static shared memory, a float parameter last. */
static void args_layernorm(uint32_t j, uint32_t grid_x, uint32_t block, void **args, void *vals)
{
	struct { CUdeviceptr out, in, gamma, beta; int cols; float eps; } *v = vals;

	(void)grid_x;
	(void)block;
	v->out = bufs[j][0];
	v->in = bufs[j][1];
	v->gamma = bufs[j][2];
	v->beta = bufs[j][2] + 1024;
	v->cols = 64 + (int)j;
	v->eps = 1e-5f;
	args[0] = &v->out, args[1] = &v->in, args[2] = &v->gamma, args[3] = &v->beta, args[4] = &v->cols,
	args[5] = &v->eps;
}

/* Kernels with a host twin run a variant's instances as that twin (tests/simcuda/launch.c);
 * with the interpreter forced, the variant's own PTX runs, prologue and all. Both ways. */
static void test_same_bytes(void **state)
{
	static const uint32_t ks[] = { 1, 2, 5, 17 };

	(void)state;
	for (size_t i = 0; i < 2 * sizeof(ks) / sizeof(ks[0]); i++) {
		simcuda_interp_force(i % 2);
		same_bytes(&elementwise, "scale", args_scale, ks[i / 2], 128);
		same_bytes(&elementwise, "axpy", args_axpy, ks[i / 2], 64);
		same_bytes(&notwin, "nt_sum4", args_sum4, ks[i / 2], 64);
		same_bytes(&notwin, "nt_bits", args_bits, ks[i / 2], 32);
		same_bytes(&nn, "layernorm_row", args_layernorm, ks[i / 2], 32);
	}
	simcuda_interp_force(0);
}

/* axpy instances chained: instance j + 1 reads what instance j writes. Apart, the chain runs in
 * order; as one grid whose blocks run in any order, some order gives other bytes. */
static void args_chain(uint32_t j, uint32_t grid_x, uint32_t block, void **args, void *vals)
{
	struct { CUdeviceptr y, x; float a; int n; } *v = vals;

	v->y = bufs[j + 1][0];
	v->x = bufs[j][0];
	v->a = 1.0f;
	v->n = (int)(grid_x * block);
	args[0] = &v->y, args[1] = &v->x, args[2] = &v->a, args[3] = &v->n;
}

static void test_dependent_differs(void **state)
{
	const struct ptx_func *pf;
	struct inst in[4];
	char why[128];
	CUfunction e, v;
	uint64_t apart;
	bool differed = false;

	(void)state;
	v = variant_of(&elementwise, "axpy", why, sizeof(why));
	assert_non_null(v);
	pf = ptx_find_func(elementwise.pm, "axpy");
	CHECK(cuModuleGetFunction(&e, elementwise.mod, "axpy"));
	for (uint32_t j = 0; j < 4; j++) {
		void *args[MAX_ARGS];
		uint64_t vals[MAX_ARGS];

		in[j].grid_x = 1;
		args_chain(j, 1, 64, args, vals);
		pack(pf, args, in[j].params);
	}
	bufs_fill(5, 9);
	launch_apart(e, pf, in, 4, 64);
	apart = bufs_hash(5);
	simcuda_block_order_force(1);
	simcuda_interp_force(1); /* the variant's own PTX: its blocks in any order */
	for (int round = 0; round < 12 && !differed; round++) {
		bufs_fill(5, 9);
		launch_variant(v, pf, in, 4, 64);
		differed = bufs_hash(5) != apart;
	}
	/* in index order the chain happens to run in order: the same bytes */
	simcuda_block_order_force(0);
	bufs_fill(5, 9);
	launch_variant(v, pf, in, 4, 64);
	assert_true(bufs_hash(5) == apart);
	simcuda_block_order_force(-1);
	simcuda_interp_force(0);
	assert_true(differed);
}

/* The cost model charges a variant the extra work of each instance (SIMCUDA_KERNEL_NS, set to
 * 1 ms in main): fusing launches saves their launch floors, not the work they do. */
static void test_cost_per_instance(void **state)
{
	const struct ptx_func *pf;
	struct inst in[5];
	char why[128];
	CUfunction v;
	uint64_t t0, t1;

	(void)state;
	v = variant_of(&elementwise, "scale", why, sizeof(why));
	assert_non_null(v);
	pf = ptx_find_func(elementwise.pm, "scale");
	for (uint32_t j = 0; j < 5; j++) {
		void *args[MAX_ARGS];
		uint64_t vals[MAX_ARGS];

		in[j].grid_x = 1;
		args_scale(j, 1, 64, args, vals);
		pack(pf, args, in[j].params);
	}
	CHECK(cuCtxSynchronize());
	t0 = simcuda_host_now_ns();
	launch_variant(v, pf, in, 5, 64);
	CHECK(cuCtxSynchronize());
	t1 = simcuda_host_now_ns();
	if (t1 - t0 < 5 * 1000000ull)
		fail_msg("a variant of 5 instances was charged %llu ns, less than 5 x SIMCUDA_KERNEL_NS",
			 (unsigned long long)(t1 - t0));
}

static void test_refused(void **state)
{
	char why[256] = "";
	char *text = NULL;
	size_t len;

	(void)state;
	kmod_load(&notwin);
	assert_int_equal(rw_variant_ptx(notwin.pm, "nt_powers", &text, &len, why, sizeof(why)), -CF_ENOSYS);
	assert_non_null(strstr(why, "calls"));
	assert_int_equal(rw_variant_ptx(notwin.pm, "nt_printf", &text, &len, why, sizeof(why)), -CF_ENOSYS);
	assert_int_equal(rw_variant_ptx(notwin.pm, "nt_globals", &text, &len, why, sizeof(why)), -CF_ENOSYS);
	assert_non_null(strstr(why, "module variable"));
	assert_int_equal(rw_variant_ptx(notwin.pm, "no_such_kernel", &text, &len, why, sizeof(why)), -CF_ENOENT);
	assert_null(text);
}

static void test_table(void **state)
{
	static unsigned char table[RW_MULTI_TABLE_BYTES];
	unsigned char p[64] = { 1 };
	const void *params[RW_MULTI_MAX];
	uint32_t grid[RW_MULTI_MAX], total = 0, first;

	(void)state;
	for (uint32_t j = 0; j < RW_MULTI_MAX; j++) {
		params[j] = p;
		grid[j] = j + 1;
	}
	assert_int_equal(rw_variant_table(3, grid, params, 24, table, sizeof(table), &total), 0);
	assert_int_equal(total, 6);
	memcpy(&first, table + 8 + 4 * 2, 4);
	assert_int_equal(first, 3);
	assert_int_equal(rw_variant_table(0, grid, params, 24, table, sizeof(table), &total), -CF_EINVAL);
	/* 64-byte blocks: (4096 - 144) / 64 = 61, so all 32 fit; 256-byte blocks: 15 */
	assert_int_equal(rw_variant_capacity(64), RW_MULTI_MAX);
	assert_int_equal(rw_variant_capacity(256), 15);
	assert_int_equal(rw_variant_table(16, grid, params, 256, table, sizeof(table), &total), -CF_ERANGE);
	grid[1] = 0;
	assert_int_equal(rw_variant_table(3, grid, params, 24, table, sizeof(table), &total), -CF_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_same_bytes),
		cmocka_unit_test(test_dependent_differs),
		cmocka_unit_test(test_cost_per_instance),
	};

	setenv("SIMCUDA_KERNEL_NS", "1000000", 1); /* test_cost_per_instance */
	tl_init();
	for (uint32_t j = 0; j < RW_MULTI_MAX; j++)
		for (int b = 0; b < NB; b++)
			CHECK(cuMemAlloc(&bufs[j][b], BUF_FLOATS * sizeof(float)));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
