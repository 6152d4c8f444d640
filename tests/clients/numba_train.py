#!/usr/bin/env python3
"""numba_train.py - a training-style loop written with numba-cuda, as a Python user writes one:
kernels compiled from Python by NVVM, several per step, a block reduction with shared memory,
a barrier and an atomic, the loss read back every step. It knows nothing of cufold; with and
without it the output must be identical. The software device interprets its kernels' PTX.

One switch is not the user's: cuda.core links with nvJitLink when it finds one (the toolkit's),
which makes machine code the software device cannot run, and numba-cuda then links LTO-IR. The
driver's own linker (cuLinkCreate/AddData/Complete, which the device implements for PTX) is
forced below through cuda.core's and numba-cuda's private names, so make deps-clients pins their
versions. tests layer.

usage: numba_train.py [steps]"""
import hashlib
import struct
import sys

import cuda.core._linker as _linker
import numba.cuda.cudadrv.driver as _nbdriver
import numba.cuda.decorators as _nbdecorators
from cuda.bindings import driver as _drv

_linker._decide_nvjitlink_or_driver()
_linker._use_nvjitlink_backend = False
_linker._driver = _drv
_T = _drv.CUjitInputType
_linker._driver_input_types = {"ptx": _T.CU_JIT_INPUT_PTX, "cubin": _T.CU_JIT_INPUT_CUBIN,
                               "fatbin": _T.CU_JIT_INPUT_FATBINARY, "object": _T.CU_JIT_INPUT_OBJECT,
                               "library": _T.CU_JIT_INPUT_LIBRARY}
_linker._decide_nvjitlink_or_driver = lambda: True
_nbdriver._have_nvjitlink = lambda: False
_nbdecorators._have_nvjitlink = lambda: False  # it decides whether @cuda.jit links LTO-IR

import numpy as np  # noqa: E402  (after the switches: numba reads them at import and compile)
from numba import cuda, float32  # noqa: E402

N = 4096
BLOCK = 256
MICRO = 3


@cuda.jit
def mul(h, w, x):
    i = cuda.grid(1)
    if i < h.size:
        h[i] = w[i] * x[i]


@cuda.jit
def relu_grad(h, g, x):
    i = cuda.grid(1)
    if i < h.size:
        v = h[i] if h[i] > 0 else float32(0)
        h[i] = v
        g[i] = float32(2) * v * x[i]


@cuda.jit
def sumsq(loss, h):
    part = cuda.shared.array(BLOCK, float32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    part[t] = h[i] * h[i] if i < h.size else float32(0)
    cuda.syncthreads()
    s = BLOCK // 2
    while s > 0:
        if t < s:
            part[t] += part[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        cuda.atomic.add(loss, 0, part[0])


@cuda.jit
def sgd(w, g, lr):
    i = cuda.grid(1)
    if i < w.size:
        w[i] -= lr * g[i]


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    idx = np.arange(N)
    w = cuda.to_device((0.5 + 0.001 * (idx % 37)).astype(np.float32))
    x = cuda.to_device((((idx * 7) % 23 - 11) * 0.01).astype(np.float32))
    h = cuda.device_array(N, np.float32)
    g = cuda.device_array(N, np.float32)
    loss = cuda.device_array(1, np.float32)
    grid = (N + BLOCK - 1) // BLOCK
    host = np.zeros(1, np.float32)
    # the first step's loss from a host reference (float64; the device sums in another order)
    wr, xr = w.copy_to_host().astype(np.float64), x.copy_to_host().astype(np.float64)
    want = 0.0
    for _ in range(MICRO):
        hr = np.maximum(wr * xr, 0.0)
        want += float(np.sum(hr * hr))
        wr -= np.float64(np.float32(0.05)) * (2.0 * hr * xr)
    for step in range(steps):
        loss[0] = 0  # a small host-to-device copy
        for _ in range(MICRO):
            mul[grid, BLOCK](h, w, x)
            relu_grad[grid, BLOCK](h, g, x)
            sumsq[grid, BLOCK](loss, h)
            sgd[grid, BLOCK](w, g, np.float32(0.05))
        loss.copy_to_host(host)
        if step == 0 and abs(float(host[0]) - want) > 1e-4 * abs(want):
            sys.exit("step 0 loss %.7g, host reference %.7g" % (host[0], want))
        print("step %d loss %s" % (step, struct.pack("<f", host[0]).hex()))
    print("weights sha256 %s" % hashlib.sha256(w.copy_to_host().tobytes()).hexdigest()[:16])


if __name__ == "__main__":
    main()
