/* cap_images.c - a program that loads code by every loader the driver has and launches one
 * kernel of each, for tests/e2e/capture_images.sh: cuModuleLoad (a PTX file), cuModuleLoadData
 * (PTX text), cuModuleLoadDataEx (an LZ4 fatbin), cuModuleLoadFatBinary (the runtime's wrapper
 * around nvcc's default zstd fatbin), cuLibraryLoadData (an uncompressed fatbin, launched
 * through its CUkernel), cuLibraryLoadFromFile (a fatbin with its machine code compressed too,
 * launched through cuKernelGetFunction), the library's module (cuLibraryGetModule, then
 * cuModuleGetFunction), the output of a JIT link of PTX text (cuLinkCreate, cuLinkAddData,
 * cuLinkComplete, cuModuleLoadData, cuLinkDestroy) and of a PTX file (cuLinkAddFile, loaded, not
 * launched), sm_90 machine code only (cuModuleLoadData of a
 * cubin: run it with SIMCUDA_MACHINE_CODE=noop); and one more module (linalg.cu's PTX) it never
 * launches. It knows nothing of cufold; it prints what it computed.
 * usage: cap_images STEPS [unload]   (unload: unload everything before the last sync)
 * tests layer; the images are built by the Makefile (FATBINS, MCODES). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define N 1024

/* What __cudaRegisterFatBinary receives: nvcc's __fatBinC_Wrapper_t. */
struct fb_wrapper {
	unsigned int magic;          /* 0x466243b1 */
	unsigned int version;        /* 1 */
	const void *data;            /* the fatbin */
	const void *filename;        /* unused */
};

static const char *kernels_dir(void)
{
	const char *d = getenv("TEST_PTX_DIR");

	return d && *d ? d : TEST_PTX_DIR;
}

static char *path_of(const char *file)
{
	static char path[4][512];
	static int next;
	char *p = path[next++ % 4];

	snprintf(p, sizeof(path[0]), "%s/%s", kernels_dir(), file);
	return p;
}

static void *read_file(const char *file)
{
	FILE *f = fopen(path_of(file), "rb");
	void *buf;
	long n;

	if (!f) {
		fprintf(stderr, "cap_images: cannot open %s\n", path_of(file));
		exit(2);
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		exit(2);
	((char *)buf)[n] = 0;
	fclose(f);
	return buf;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 3, unload = argc > 2 && !strcmp(argv[2], "unload"), n = N;
	void *text = tl_read_ptx("elementwise"), *lz4 = read_file("elementwise.lz4.fatbin");
	void *zstd = read_file("elementwise.fatbin"), *plain = read_file("elementwise.plain.fatbin");
	void *cubin = read_file("mcode.sm90.cubin");
	struct fb_wrapper w = { 0x466243b1u, 1, zstd, NULL };
	CUmodule m_file, m_text, m_lz4, m_zstd, m_mc, m_unused, m_link, m_link2, m_lib;
	CUlinkState link;
	void *linked;
	size_t linked_size;
	CUlibrary l_plain, l_file;
	CUfunction f_fill, f_scale, f_relu, f_add, f_tanh, f_mc, f_mul, f_copy;
	CUkernel k_axpy, k_tanh;
	CUdeviceptr a, b, c, out;
	float two = 2.0f, half = 0.5f;
	uint64_t h = TL_HASH_INIT;

	tl_init();
	CHECK(cuModuleLoad(&m_file, path_of("elementwise.ptx")));
	CHECK(cuModuleLoadData(&m_text, text));
	CHECK(cuModuleLoadDataEx(&m_lz4, lz4, 0, NULL, NULL));
	CHECK(cuModuleLoadFatBinary(&m_zstd, &w));
	CHECK(cuLibraryLoadData(&l_plain, plain, NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryLoadFromFile(&l_file, path_of("elementwise.all-zstd.fatbin"), NULL, NULL, 0, NULL, NULL, 0));
	CHECK(cuModuleLoadData(&m_mc, cubin));
	m_unused = tl_load_module("linalg");
	CHECK(cuLinkCreate(0, NULL, NULL, &link));
	CHECK(cuLinkAddData(link, CU_JIT_INPUT_PTX, text, strlen(text) + 1, "elementwise.ptx", 0, NULL, NULL));
	CHECK(cuLinkComplete(link, &linked, &linked_size));
	CHECK(cuModuleLoadData(&m_link, linked));
	CHECK(cuLinkDestroy(link));
	CHECK(cuLinkCreate(0, NULL, NULL, &link));
	CHECK(cuLinkAddFile(link, CU_JIT_INPUT_PTX, path_of("elementwise.ptx"), 0, NULL, NULL));
	CHECK(cuLinkComplete(link, &linked, &linked_size));
	CHECK(cuModuleLoadData(&m_link2, linked));
	CHECK(cuLinkDestroy(link));
	f_fill = tl_func(m_file, "fill");
	f_scale = tl_func(m_text, "scale");
	f_relu = tl_func(m_lz4, "relu");
	f_add = tl_func(m_zstd, "add");
	CHECK(cuLibraryGetKernel(&k_axpy, l_plain, "axpy"));
	CHECK(cuLibraryGetKernel(&k_tanh, l_file, "tanh_kernel"));
	CHECK(cuKernelGetFunction(&f_tanh, k_tanh));
	f_mc = tl_func(m_mc, "mc_none");
	f_mul = tl_func(m_link, "mul");
	CHECK(cuLibraryGetModule(&m_lib, l_plain));
	f_copy = tl_func(m_lib, "copy");
	CHECK(cuMemAlloc(&a, N * sizeof(float)));
	CHECK(cuMemAlloc(&b, N * sizeof(float)));
	CHECK(cuMemAlloc(&c, N * sizeof(float)));
	CHECK(cuMemAlloc(&out, N * sizeof(float)));
	for (int step = 0; step < steps; step++) {
		float v = 1.0f + (float)step;
		void *fill_args[] = { &a, &v, &n }, *scale_args[] = { &b, &a, &half, &n };
		void *relu_args[] = { &c, &b, &n }, *add_args[] = { &out, &b, &c, &n };
		void *axpy_args[] = { &out, &a, &two, &n }, *tanh_args[] = { &out, &out, &n };
		void *mul_args[] = { &out, &out, &a, &n }, *copy_args[] = { &c, &out, &n };

		CHECK(cuLaunchKernel(f_fill, N / 256, 1, 1, 256, 1, 1, 0, 0, fill_args, NULL));
		CHECK(cuLaunchKernel(f_scale, N / 256, 1, 1, 256, 1, 1, 0, 0, scale_args, NULL));
		CHECK(cuLaunchKernel(f_relu, N / 256, 1, 1, 256, 1, 1, 0, 0, relu_args, NULL));
		CHECK(cuLaunchKernel(f_add, N / 256, 1, 1, 256, 1, 1, 0, 0, add_args, NULL));
		CHECK(cuLaunchKernel((CUfunction)k_axpy, N / 256, 1, 1, 256, 1, 1, 0, 0, axpy_args, NULL));
		CHECK(cuLaunchKernel(f_tanh, N / 256, 1, 1, 256, 1, 1, 0, 0, tanh_args, NULL));
		CHECK(cuLaunchKernel(f_mc, 1, 1, 1, 1, 1, 1, 0, 0, NULL, NULL));
		CHECK(cuLaunchKernel(f_mul, N / 256, 1, 1, 256, 1, 1, 0, 0, mul_args, NULL));
		CHECK(cuLaunchKernel(f_copy, N / 256, 1, 1, 256, 1, 1, 0, 0, copy_args, NULL));
		CHECK(cuCtxSynchronize());
	}
	h = tl_hash_device(out, N * sizeof(float), h);
	if (unload) {
		CHECK(cuModuleUnload(m_file));
		CHECK(cuModuleUnload(m_text));
		CHECK(cuModuleUnload(m_lz4));
		CHECK(cuModuleUnload(m_zstd));
		CHECK(cuModuleUnload(m_mc));
		CHECK(cuModuleUnload(m_unused));
		CHECK(cuModuleUnload(m_link));
		CHECK(cuModuleUnload(m_link2));
		CHECK(cuLibraryUnload(l_plain));
		CHECK(cuLibraryUnload(l_file));
	}
	CHECK(cuCtxSynchronize());
	printf("cap_images steps=%d checksum=%016llx\n", steps, (unsigned long long)h);
	free(text);
	free(lz4);
	free(zstd);
	free(plain);
	free(cubin);
	return 0;
}
