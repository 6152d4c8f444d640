/* mcode.cu - kernels for the software device's machine-code mode (tests/unit/sim_mcode.c), built
 * as sm_90 machine code only by the Makefile: parameter layouts of every kind (char, double,
 * pointer, a 16-byte-aligned struct, int, a 3-byte struct, short; none; an 800-byte struct), a
 * name longer than 512 characters, and a __device__ and a __constant__ variable. */
struct __align__(16) mc_quad {
	float x, y, z, w;
};

struct mc_odd {
	char c[3];
};

struct mc_big {
	long long v[100];
};

__device__ int mc_counter = 7;
__constant__ float mc_table[4] = { 1.0f, 2.0f, 3.0f, 4.0f };

extern "C" __global__ void mc_mixed(char c, double d, float *p, struct mc_quad q, int n, struct mc_odd o, short s)
{
	if (n)
		p[threadIdx.x] = c + d + q.x + o.c[1] + s + mc_table[1];
}

extern "C" __global__ void mc_none(void)
{
	mc_counter++;
}

extern "C" __global__ void mc_large(struct mc_big b, int *out)
{
	out[0] = (int)b.v[99];
}

/* 603 characters, past the 512 the PTX reader once allowed (cuBLAS's mangled names are longer) */
extern "C" __global__ void mc_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_long_name_(int *out)
{
	out[0] = 1;
}
