#!/usr/bin/env python3
"""gen.py - PTX from the other compilers cufold meets, for tests/unit/test_ptx_parse.c: numba
(NVVM) kernels, NVRTC kernels, nvcc with -rdc (indirect calls through a .callprototype,
function addresses in an initialiser, grid sync, CUB's block reduce), and three of CuPy's
generated kernels (two elementwise and its sum reduction: CArray structs by value, 32-bit
indexing; also run by the effects oracle, tests/unit/test_derive_card.c), written next to this
file.
Needs the clients venv (numba, cuda-python, cupy), nvcc and the software device built in
$B (default build) but no GPU: run it with /work/venvs/clients-venv/bin/python when the
compilers change, and commit the .ptx files it writes."""
import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def numba_kernels():
    from numba import cuda, float32, float64, int32, int64, void
    import math

    def saxpy(out, a, x, y, n):
        i = cuda.grid(1)
        if i < n:
            out[i] = a * x[i] + y[i]

    def grid_stride_exp(out, x, n):
        start = cuda.grid(1)
        step = cuda.gridsize(1)
        for i in range(start, n, step):
            out[i] = math.exp(x[i]) + math.sin(x[i])

    def block_sum(out, x, n):
        sm = cuda.shared.array(256, float32)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * cuda.blockDim.x + t
        sm[t] = x[i] if i < n else 0.0
        cuda.syncthreads()
        s = 128
        while s > 0:
            if t < s:
                sm[t] += sm[t + s]
            cuda.syncthreads()
            s //= 2
        if t == 0:
            cuda.atomic.add(out, 0, sm[0])

    def histogram(hist, idx, n):
        i = cuda.grid(1)
        if i < n:
            cuda.atomic.add(hist, idx[i], 1)

    def matmul(c, a, b):
        r, col = cuda.grid(2)
        if r < c.shape[0] and col < c.shape[1]:
            acc = 0.0
            for k in range(a.shape[1]):
                acc += a[r, k] * b[k, col]
            c[r, col] = acc

    sigs = {
        "saxpy": (saxpy, (float32[:], float32, float32[:], float32[:], int32)),
        "grid_stride_exp": (grid_stride_exp, (float64[:], float64[:], int64)),
        "block_sum": (block_sum, (float32[:], float32[:], int32)),
        "histogram": (histogram, (int32[:], int32[:], int32)),
        "matmul": (matmul, (float32[:, :], float32[:, :], float32[:, :])),
    }
    for name, (fn, sig) in sigs.items():
        ptx, _ = cuda.compile_ptx(fn, sig, cc=(9, 0))
        yield "numba_" + name, ptx


NVRTC_SRC = r'''
struct pair { float *p; int n; };
__device__ float helper(float x, int k) { return k > 0 ? x * helper(x, k - 1) : 1.0f; }
__constant__ float coeffs[4] = { 0.5f, -1.25f, 2.0f, 0.125f };
__device__ int counter;
extern "C" __global__ void nvrtc_poly(struct pair out, const float *__restrict__ x, int k)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < out.n) {
		float v = x[i];
		out.p[i] = coeffs[0] + coeffs[1] * v + helper(v, k & 3) + __shfl_down_sync(0xffffffff, v, 1);
		atomicAdd(&counter, 1);
	}
}
extern "C" __global__ void nvrtc_transpose(float *out, const float *in, int rows, int cols)
{
	__shared__ float tile[32][33];
	int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
	if (x < cols && y < rows)
		tile[threadIdx.y][threadIdx.x] = in[(long)y * cols + x];
	__syncthreads();
	x = blockIdx.y * 32 + threadIdx.x;
	y = blockIdx.x * 32 + threadIdx.y;
	if (x < rows && y < cols)
		out[(long)y * rows + x] = tile[threadIdx.x][threadIdx.y];
}
extern "C" __global__ void nvrtc_dyn(float4 *out, int n)
{
	extern __shared__ float4 buf[];
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	buf[threadIdx.x] = make_float4(i, i + 1, i + 2, i + 3);
	__syncthreads();
	if (i < n)
		out[i] = buf[blockDim.x - 1 - threadIdx.x];
}
'''


def nvrtc_kernels():
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(NVRTC_SRC.encode(), b"nvrtc_test.cu", 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    opts = [b"--gpu-architecture=compute_90", b"-default-device"]
    err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, n = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * n
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise SystemExit(log.decode())
    err, n = nvrtc.nvrtcGetPTXSize(prog)
    buf = b" " * n
    nvrtc.nvrtcGetPTX(prog, buf)
    yield "nvrtc_kernels", buf.rstrip(b"\0").decode()


NVCC_RDC_SRC = r'''
#include <cstdio>
#include <cub/block/block_reduce.cuh>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__device__ int inc(int a) { return a + 1; }
__device__ int dec(int a) { return a - 1; }
__device__ int (*tab[2])(int) = { inc, dec };
struct pair { float *p; int n; };
extern "C" __global__ void indirect(int *x) { x[0] = tab[x[2] & 1](x[1]); }
extern "C" __global__ void gridsync(int *x) { cg::grid_group g = cg::this_grid(); x[threadIdx.x] = 1; g.sync(); if (!threadIdx.x) printf("%d %f\\n", x[0], 1.5); }
extern "C" __global__ void block_sum(struct pair out, const float *in)
{
	typedef cub::BlockReduce<float, 128> R;
	__shared__ typename R::TempStorage tmp;
	float v = R(tmp).Sum(in[blockIdx.x * 128 + threadIdx.x]);
	if (threadIdx.x == 0 && blockIdx.x < out.n)
		atomicAdd(out.p + blockIdx.x, v);
}
'''


def nvcc_kernels():
    nvcc = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "rdc.cu"), os.path.join(d, "rdc.ptx")
        with open(src, "w") as f:
            f.write(NVCC_RDC_SRC)
        subprocess.run([nvcc, "-ptx", "-arch=compute_90", "-rdc=true", "-o", out, src], check=True)
        with open(out) as f:
            yield "nvcc_rdc", f.read()


CUPY_SRC = r'''
import cupy as cp
x = cp.arange(256, dtype=cp.float32)
cp.tanh(x)
x * x[3]
x.sum()
cp.cuda.runtime.deviceSynchronize()
'''


def cupy_kernels():
    """CuPy's kernels as it compiles them (NVRTC), from its kernel cache: the device runs PTX
    only, so CUPY_COMPILE_WITH_PTX=1 makes CuPy keep PTX there."""
    import glob
    import sys
    root = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, CUPY_COMPILE_WITH_PTX="1", CUPY_ACCELERATORS="", CUPY_CACHE_DIR=d,
                   LD_LIBRARY_PATH=os.path.join(root, os.environ.get("B", "build"), "simcuda") + ":" +
                   os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "lib64"))
        subprocess.run([sys.executable, "-c", CUPY_SRC], check=True, env=env)
        for f in glob.glob(os.path.join(d, "*")):
            b = open(f, "rb").read()
            i = b.find(b".version")
            if i < 0:
                continue
            j = b.rfind(b"\n//", 0, i)
            text = b[j + 1 if j >= 0 else i:].split(b"\0")[0].decode()
            for name in ("cupy_tanh__float32_float32", "cupy_multiply__float32_float32_float32", "cupy_sum"):
                if ".entry " + name + "(" in text:
                    yield name.split("__")[0], text


def main():
    for gen in (numba_kernels, nvrtc_kernels, nvcc_kernels, cupy_kernels):
        for name, ptx in gen():
            with open(os.path.join(HERE, name + ".ptx"), "w") as f:
                f.write(ptx)
            print(name, len(ptx))


if __name__ == "__main__":
    main()
