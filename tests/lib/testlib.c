/* testlib.c - helpers for the test programs (see testlib.h). tests layer. */
#include "testlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/simcuda/simcuda.h"

#ifndef TEST_PTX_DIR
#define TEST_PTX_DIR "build/kernels"
#endif

void tl_check(CUresult rc, const char *what, const char *file, int line)
{
	const char *name = NULL;

	if (rc == CUDA_SUCCESS)
		return;
	if (cuGetErrorName(rc, &name) != CUDA_SUCCESS)
		name = "?";
	fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", file, line, what, name, (int)rc);
	exit(1);
}

CUcontext tl_init(void)
{
	CUdevice dev;
	CUcontext ctx;

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	return ctx;
}

char *tl_read_ptx(const char *name)
{
	const char *dir = getenv("TEST_PTX_DIR");
	char path[4096];
	FILE *f;
	long n;
	char *buf;

	snprintf(path, sizeof(path), "%s/%s.ptx", dir && *dir ? dir : TEST_PTX_DIR, name);
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "testlib: cannot open %s\n", path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "testlib: cannot read %s\n", path);
		exit(1);
	}
	buf[n] = 0;
	fclose(f);
	return buf;
}

CUmodule tl_load_module(const char *name)
{
	char *ptx = tl_read_ptx(name);
	CUmodule mod;

	CHECK(cuModuleLoadData(&mod, ptx));
	free(ptx);
	return mod;
}

CUfunction tl_func(CUmodule mod, const char *entry)
{
	CUfunction f;

	CHECK(cuModuleGetFunction(&f, mod, entry));
	return f;
}

void tl_fill_random(float *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (float)((double)x / 2147483648.0 - 1.0);
	}
}

uint64_t tl_hash(const void *p, size_t n, uint64_t h)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ull;
	}
	return h;
}

uint64_t tl_hash_device(CUdeviceptr p, size_t n, uint64_t h)
{
	void *buf = malloc(n ? n : 1);

	if (!buf)
		exit(1);
	CHECK(cuMemcpyDtoH(buf, p, n));
	h = tl_hash(buf, n, h);
	free(buf);
	return h;
}

/* ------------------------------------------------------------------ the program's own host time */

static pthread_once_t app_once = PTHREAD_ONCE_INIT;
static bool app_set;                 /* tl_app_set_us was called: APP_US is not read */
static uint64_t app_ns;              /* host time per enqueued operation */
static simcuda_host_work_fn app_fn;  /* the software device's, NULL against a real driver */

void tl_app_set_us(double us)
{
	app_ns = us > 0 ? (uint64_t)(us * 1000.0 + 0.5) : 0;
	app_set = true;
}

static void app_init(void)
{
	const char *env = getenv("APP_US");
	void *p;

	if (!app_set && env && *env)
		tl_app_set_us(strtod(env, NULL));
	/* not linked: the programs also run against a real libcuda, which has no such name */
	p = dlsym(RTLD_DEFAULT, "simcuda_host_work");
	memcpy(&app_fn, &p, sizeof(p));
	if (app_ns && !app_fn)
		fprintf(stderr, "testlib: the program's host time per operation (--app-us, APP_US) is "
				"modeled only on the software device; ignored\n");
}

void tl_app_op(void)
{
	pthread_once(&app_once, app_init);
	if (app_ns && app_fn)
		app_fn(app_ns);
}
