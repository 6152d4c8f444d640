/* oracle_runner.c - runs kernels on the software device for the effects oracle (issue 23 part
 * 5): each line of stdin is one launch, run with SIMCUDA_ORACLE set by the caller, so the device
 * appends what the launch touched to the oracle file; the caller compares that with what
 * cufold derived (tests/unit/test_derive_card.c). tests layer; runs against libcuda.so.1.
 *
 *   oracle_runner ALLOC < jobs
 *   job:  PTXFILE KERNEL gx gy gz bx by bz [PARAM ...]
 *   PARAM: p (a fresh zeroed allocation of ALLOC bytes), u32:V, u64:V, i32:V, f32:V, f64:V,
 *          b:SIZE (SIZE zero bytes), s:SIZE/OFF=PARAM/OFF=PARAM... (a by-value struct of SIZE
 *          zero bytes with a p, u32:V, i32:V or u64:V at each byte OFF: pointers inside it)
 *
 * One line of output per job: "ok", or "error CODE" when the module, the function or the
 * launch failed (the oracle then has no record of it). Zeroed buffers keep indices read from
 * memory at 0, so a gather stays inside its allocation. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define MAX_PARAMS 32

struct mod {
	char path[512];
	CUmodule m;
};

static CUmodule module_of(struct mod *cache, unsigned *n, const char *path)
{
	FILE *fp;
	char *text;
	long len;

	for (unsigned i = 0; i < *n; i++)
		if (!strcmp(cache[i].path, path))
			return cache[i].m;
	if (*n == 64 || !(fp = fopen(path, "rb")))
		return NULL;
	fseek(fp, 0, SEEK_END);
	len = ftell(fp);
	rewind(fp);
	text = calloc(1, (size_t)len + 1);
	if (text && fread(text, 1, (size_t)len, fp) == (size_t)len &&
	    cuModuleLoadData(&cache[*n].m, text) == CUDA_SUCCESS) {
		snprintf(cache[*n].path, sizeof(cache[*n].path), "%s", path);
		(*n)++;
		free(text);
		fclose(fp);
		return cache[*n - 1].m;
	}
	free(text);
	fclose(fp);
	return NULL;
}

static int param(const char *spec, size_t alloc, unsigned char *val, size_t *size, CUdeviceptr *dp);

/* Allocations made for pointers inside struct parameters, freed after each job. */
static CUdeviceptr inner[64];
static unsigned ninner;

/* s:SIZE/OFF=PARAM/...: each PARAM written at its offset (a pointer gets its own allocation). */
static int struct_param(const char *spec, size_t alloc, unsigned char *val, size_t *size)
{
	char buf[1024], *save = NULL, *t;

	snprintf(buf, sizeof(buf), "%s", spec + 2);
	t = strtok_r(buf, "/", &save);
	*size = t ? strtoul(t, NULL, 0) : 0;
	if (!*size || *size > 1024)
		return -1;
	memset(val, 0, *size);
	while ((t = strtok_r(NULL, "/", &save))) {
		unsigned char v[16];
		size_t off = strtoul(t, NULL, 0), n;
		char *eq = strchr(t, '=');
		CUdeviceptr dp = 0;

		if (!eq || param(eq + 1, alloc, v, &n, &dp) < 0 || n > 8 || off + n > *size)
			return -1;
		if (dp && ninner < sizeof(inner) / sizeof(inner[0]))
			inner[ninner++] = dp;
		memcpy(val + off, v, n);
	}
	return 0;
}

/* One parameter: its bytes in val (a pointer parameter gets a fresh allocation). */
static int param(const char *spec, size_t alloc, unsigned char *val, size_t *size, CUdeviceptr *dp)
{
	*dp = 0;
	if (!strcmp(spec, "p")) {
		if (cuMemAlloc(dp, alloc) != CUDA_SUCCESS || cuMemsetD8(*dp, 0, alloc) != CUDA_SUCCESS)
			return -1;
		memcpy(val, dp, 8);
		*size = 8;
	} else if (!strncmp(spec, "u32:", 4) || !strncmp(spec, "i32:", 4)) {
		int32_t v = (int32_t)strtoll(spec + 4, NULL, 0);

		memcpy(val, &v, 4);
		*size = 4;
	} else if (!strncmp(spec, "u64:", 4)) {
		uint64_t v = strtoull(spec + 4, NULL, 0);

		memcpy(val, &v, 8);
		*size = 8;
	} else if (!strncmp(spec, "f32:", 4)) {
		float v = strtof(spec + 4, NULL);

		memcpy(val, &v, 4);
		*size = 4;
	} else if (!strncmp(spec, "f64:", 4)) {
		double v = strtod(spec + 4, NULL);

		memcpy(val, &v, 8);
		*size = 8;
	} else if (!strncmp(spec, "b:", 2)) {
		*size = strtoul(spec + 2, NULL, 0);
		if (*size > 1024)
			return -1;
		memset(val, 0, *size);
	} else if (!strncmp(spec, "s:", 2)) {
		return struct_param(spec, alloc, val, size);
	} else {
		return -1;
	}
	return 0;
}

static int run_job(char *line, size_t alloc, struct mod *cache, unsigned *nmods)
{
	static unsigned char vals[MAX_PARAMS][1024];
	void *args[MAX_PARAMS];
	CUdeviceptr dps[MAX_PARAMS] = { 0 };
	unsigned dims[6], np = 0;
	char *tok[8 + MAX_PARAMS], *save = NULL;
	unsigned nt = 0;
	CUfunction f;
	CUmodule m;
	int rc = -1;

	for (char *t = strtok_r(line, " \t\n", &save); t && nt < 8 + MAX_PARAMS; t = strtok_r(NULL, " \t\n", &save))
		tok[nt++] = t;
	if (nt < 8 || !(m = module_of(cache, nmods, tok[0])) || cuModuleGetFunction(&f, m, tok[1]) != CUDA_SUCCESS)
		return -1;
	for (unsigned i = 0; i < 6; i++)
		dims[i] = (unsigned)strtoul(tok[2 + i], NULL, 0);
	for (unsigned i = 8; i < nt; i++, np++) {
		size_t size;

		if (param(tok[i], alloc, vals[np], &size, &dps[np]) < 0)
			goto out;
		args[np] = vals[np];
	}
	if (cuLaunchKernel(f, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], 0, NULL, args, NULL) ==
	    CUDA_SUCCESS && cuCtxSynchronize() == CUDA_SUCCESS)
		rc = 0;
out:
	for (unsigned i = 0; i < np + 1 && i < MAX_PARAMS; i++)
		if (dps[i])
			cuMemFree(dps[i]);
	while (ninner)
		cuMemFree(inner[--ninner]);
	return rc;
}

int main(int argc, char **argv)
{
	static struct mod cache[64];
	unsigned nmods = 0;
	char line[4096];
	size_t alloc;

	if (argc != 2) {
		fprintf(stderr, "usage: oracle_runner ALLOC < jobs\n");
		return 2;
	}
	alloc = strtoul(argv[1], NULL, 0);
	tl_init();
	while (fgets(line, sizeof(line), stdin)) {
		printf("%s\n", run_job(line, alloc, cache, &nmods) == 0 ? "ok" : "error");
		fflush(stdout);
	}
	return 0;
}
