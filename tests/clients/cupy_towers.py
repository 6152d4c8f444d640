"""cupy_towers.py - a CuPy training loop written as CuPy users write it: per-feature towers of
elementwise ops on separate arrays, a concatenate and a split, a loss read back every step with
float(), SGD updates. Prints one line per step (the loss, exactly) and a digest of the weights.
Usage: cupy_towers.py STEPS [FEATURES]. tests layer (a client of the driver through CuPy)."""
import hashlib
import sys

import cupy as cp
import numpy as np

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 8
nfeat = int(sys.argv[2]) if len(sys.argv) > 2 else 16
n = 256      # rows of every feature
lr = np.float32(0.05)

rng = np.random.default_rng(7)
xs = [cp.asarray(rng.standard_normal(n, dtype=np.float32)) for _ in range(nfeat)]
target = cp.asarray(rng.standard_normal(n * nfeat, dtype=np.float32))
w = [cp.asarray(rng.standard_normal(2, dtype=np.float32) * np.float32(0.5)) for _ in range(nfeat)]
b = [cp.zeros(1, dtype=cp.float32) for _ in range(nfeat)]

for step in range(steps):
    # forward: one tower per feature, on its own arrays
    hs, pre = [], []
    for f in range(nfeat):
        a = xs[f] * w[f][0] + b[f]
        t = cp.tanh(a)
        h = t * w[f][1] + t * t * np.float32(0.1)
        pre.append(t)
        hs.append(h)
    z = cp.concatenate(hs)
    diff = z - target
    loss = (diff * diff).mean()
    print("step %d loss %.9e" % (step, float(loss)))   # read back every step
    # backward: split the gradient of the concatenation back into the towers
    gz = diff * np.float32(2.0 / z.size)
    gs = cp.split(gz, nfeat)
    for f in range(nfeat):
        t = pre[f]
        gh = gs[f]
        gw1 = (gh * t).sum()
        gt = gh * (w[f][1] + t * np.float32(0.2))
        ga = gt * (1 - t * t)
        gw0 = (ga * xs[f]).sum()
        gb = ga.sum()
        w[f] = w[f] - lr * cp.stack([gw0, gw1])
        b[f] -= lr * gb

h = hashlib.sha256()
for f in range(nfeat):
    h.update(cp.asnumpy(w[f]).tobytes())
    h.update(cp.asnumpy(b[f]).tobytes())
print("digest", h.hexdigest()[:32])
