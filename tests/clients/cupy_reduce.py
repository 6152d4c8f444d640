"""cupy_reduce.py - CuPy reductions every step: sum, mean, max, min, argmax, var, norm, a
per-row sum over an axis, cumsum, each read back. Prints every result exactly and a digest.
With CUPY_ACCELERATORS=cub (CuPy's default) the whole-array reductions run CuPy's bundled CUB
kernels (PTX for compute_120 only: the software device needs SIMCUDA_CC=120).
Usage: cupy_reduce.py STEPS. tests layer (a client of the driver through CuPy)."""
import hashlib
import sys

import cupy as cp
import numpy as np

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
rng = np.random.default_rng(5)
a = cp.asarray(rng.standard_normal((16, 64), dtype=np.float32))
h = hashlib.sha256()
for step in range(steps):
    a = a * np.float32(0.99) + cp.sin(a) * np.float32(0.01)
    r = [a.sum(), a.mean(), a.max(), a.min(), a.argmax(), a.var(), cp.linalg.norm(a)]
    rows = a.sum(axis=1)
    c = cp.cumsum(a[0])
    vals = [float(t) for t in r]
    print("step %d %s" % (step, " ".join("%.9e" % t for t in vals)))
    h.update(cp.asnumpy(rows).tobytes())
    h.update(cp.asnumpy(c).tobytes())
print("digest", h.hexdigest()[:32])
