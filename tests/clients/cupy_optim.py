"""cupy_optim.py - an optimizer loop as CuPy users write one: a linear model's gradient with
cp.matmul-free elementwise code, Adam's update as one cp.ElementwiseKernel, a custom activation
as a cp.RawKernel, the loss read back with .item() every step. Prints the losses exactly and a
digest of the parameters. Usage: cupy_optim.py STEPS. tests layer (a client of the driver
through CuPy)."""
import hashlib
import sys

import cupy as cp
import numpy as np

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
n = 512

adam = cp.ElementwiseKernel(
    "T g, T lr, T b1, T b2, T c1, T c2", "T p, T m, T v",
    """
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    p = p - lr * (m / c1) / (sqrt(v / c2) + (T)1e-8);
    """, "adam_update")

swish = cp.RawKernel(r"""
extern "C" __global__ void swish(const float *x, float *y, float *dy, int n)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) {
        float s = 1.0f / (1.0f + expf(-x[i]));
        y[i] = x[i] * s;
        dy[i] = s + x[i] * s * (1.0f - s);
    }
}
""", "swish")

rng = np.random.default_rng(11)
x = cp.asarray(rng.standard_normal(n, dtype=np.float32))
y_true = cp.asarray(rng.standard_normal(n, dtype=np.float32))
p = cp.asarray(rng.standard_normal(n, dtype=np.float32) * np.float32(0.1))
m = cp.zeros_like(p)
v = cp.zeros_like(p)
b1, b2, lr = np.float32(0.9), np.float32(0.999), np.float32(0.01)

for step in range(1, steps + 1):
    a = x * p
    y = cp.empty_like(a)
    dy = cp.empty_like(a)
    swish(((n + 127) // 128,), (128,), (a, y, dy, np.int32(n)))
    err = y - y_true
    loss = (err * err).sum() / np.float32(n)
    print("step %d loss %.9e" % (step, loss.item()))
    g = np.float32(2.0 / n) * err * dy * x
    adam(g, lr, b1, b2, np.float32(1 - b1 ** step), np.float32(1 - b2 ** step), p, m, v)

print("digest", hashlib.sha256(cp.asnumpy(p).tobytes() + cp.asnumpy(m).tobytes()).hexdigest()[:32])
