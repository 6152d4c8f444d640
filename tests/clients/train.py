#!/usr/bin/env python3
"""train.py - a training-style loop written with cuda-python (cuda.bindings) and NVRTC, as a
Python client of the driver API writes one: kernels compiled at run time from CUDA C, a stream,
several kernels per step, a reduction with shared memory and atomics, the loss read back every
step. It knows nothing of cufold; with and without it the output must be identical. Its kernels
have no twins: the software device interprets their PTX. tests layer.

usage: train.py [steps]"""
import ctypes
import hashlib
import struct
import sys

from cuda.bindings import driver as cu
from cuda.bindings import nvrtc

SRC = rb"""
extern "C" __global__ void mul(float *h, const float *w, const float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) h[i] = w[i] * x[i];
}
extern "C" __global__ void relu_grad(float *h, float *g, const float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = h[i] > 0.0f ? h[i] : 0.0f;
        h[i] = v;
        g[i] = 2.0f * v * x[i];
    }
}
extern "C" __global__ void sumsq(float *loss, const float *h, int n)
{
    __shared__ float part[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    part[threadIdx.x] = i < n ? h[i] * h[i] : 0.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(loss, part[0]);
}
extern "C" __global__ void sgd(float *w, const float *g, float lr, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) w[i] -= lr * g[i];
}
"""
N = 4096
BLOCK = 256
MICRO = 3


def check(result):
    """The values of a cuda-python call, or an exception naming its error."""
    err, rest = result[0], result[1:]
    if int(err) != 0:
        raise RuntimeError("%s" % err)
    return rest[0] if len(rest) == 1 else rest


def compile_ptx():
    prog = check(nvrtc.nvrtcCreateProgram(SRC, b"train.cu", 0, [], []))
    try:
        check(nvrtc.nvrtcCompileProgram(prog, 1, [b"--gpu-architecture=compute_90"]))
    except RuntimeError:
        size = check(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b" " * size
        check(nvrtc.nvrtcGetProgramLog(prog, log))
        sys.exit("nvrtc: " + log.decode(errors="replace"))
    size = check(nvrtc.nvrtcGetPTXSize(prog))
    ptx = b" " * size
    check(nvrtc.nvrtcGetPTX(prog, ptx))
    return ptx


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    check(cu.cuInit(0))
    dev = check(cu.cuDeviceGet(0))
    ctx = check(cu.cuDevicePrimaryCtxRetain(dev))
    check(cu.cuCtxSetCurrent(ctx))
    mod = check(cu.cuModuleLoadData(compile_ptx()))
    fn = {k: check(cu.cuModuleGetFunction(mod, k.encode())) for k in ("mul", "relu_grad", "sumsq", "sgd")}
    stream = check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING))
    nbytes = N * 4
    w, x, h, g = (check(cu.cuMemAlloc(nbytes)) for _ in range(4))
    loss = check(cu.cuMemAlloc(4))
    host_w = (ctypes.c_float * N)(*[0.5 + 0.001 * (i % 37) for i in range(N)])
    host_x = (ctypes.c_float * N)(*[((i * 7) % 23 - 11) * 0.01 for i in range(N)])
    check(cu.cuMemcpyHtoD(w, host_w, nbytes))
    check(cu.cuMemcpyHtoD(x, host_x, nbytes))
    grid = (N + BLOCK - 1) // BLOCK
    vp, f32, i32 = None, ctypes.c_float, ctypes.c_int
    out = ctypes.c_float(0)

    def launch(name, args, types):
        check(cu.cuLaunchKernel(fn[name], grid, 1, 1, BLOCK, 1, 1, 0, stream, (args, types), 0))

    for step in range(steps):
        check(cu.cuMemsetD32Async(loss, 0, 1, stream))
        for _ in range(MICRO):  # micro-batches: the loss sums over them
            launch("mul", (h, w, x, N), (vp, vp, vp, i32))
            launch("relu_grad", (h, g, x, N), (vp, vp, vp, i32))
            launch("sumsq", (loss, h, N), (vp, vp, i32))
            launch("sgd", (w, g, 0.05, N), (vp, vp, f32, i32))
        check(cu.cuMemcpyDtoHAsync(ctypes.addressof(out), loss, 4, stream))
        check(cu.cuStreamSynchronize(stream))
        print("step %d loss %s" % (step, struct.pack("<f", out.value).hex()))
    final = (ctypes.c_float * N)()
    check(cu.cuMemcpyDtoH(final, w, nbytes))
    print("weights sha256 %s" % hashlib.sha256(bytes(final)).hexdigest()[:16])
    for p in (w, x, h, g, loss):
        check(cu.cuMemFree(p))
    check(cu.cuStreamDestroy(stream))
    check(cu.cuModuleUnload(mod))
    check(cu.cuDevicePrimaryCtxRelease(dev))


if __name__ == "__main__":
    main()
