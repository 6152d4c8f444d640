#!/usr/bin/env python3
"""gpu-check-torch.py - a small DLRM-like PyTorch training loop for scripts/gpu-check.

26 small nn.EmbeddingBag tables (one per sparse feature, the MLPerf row counts capped at 100 000),
13 dense features split per feature and concatenated back, bottom MLP 13-128-64-16, a dot
interaction (stack, bmm, gather of the lower triangle, cat with the dense output), top MLP
367-64-32-1, BCE loss, for-loop SGD (foreach=False: one update per parameter) after a
zero_grad(set_to_none=False) (one memset per gradient), per-table host-to-device copies of
indices and offsets, and loss.item() every step. The shape of tests/workloads/recsys.c, in
PyTorch.

Modes: eager (run it under LD_PRELOAD=libcufold.so for "eager + cufold"), and compile
(torch.compile(mode="reduce-overhead") of the model; loss, backward and optimizer stay eager).
Prints one line: torch mode=M steps=N step_us=X loss=L checksum=H (H: the final parameters and
the per-step losses; deterministic algorithms are on so eager runs can be compared bit for bit).

--clients [--lib PATH]: the PyTorch clients of the software device's tests (tests/clients/
torch_*.py, issue 25) on the GPU instead, each eager and under cufold (LD_PRELOAD=PATH, default
build/libcufold.so): the bytes they read back (losses every step, parameters at the end) must be
identical, and their step times are printed side by side. Exit 0 when all agree, 1 otherwise.

Exits 77 when there is no GPU: torch missing, no CUDA device, or only the software device
(tests/simcuda, whose kernels do not compute: use tests/clients/torch_run.sh there).
usage: gpu-check-torch.py [--mode eager|compile] [--steps N] [--warmup W] [--batch B]
       gpu-check-torch.py --clients [--steps N] [--lib PATH]"""
import argparse
import hashlib
import os
import subprocess
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
try:
    import torch  # noqa: E402
    import torch.nn as nn  # noqa: E402
except ImportError:
    print("gpu-check-torch: torch is not installed in %s" % sys.executable, file=sys.stderr)
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENTS = ["torch_dlrm", "torch_transformer", "torch_mlp_adam", "torch_nogemm"]

TABLE_ROWS = [45833188, 36746, 17245, 7413, 20243, 3, 7114, 1441, 62, 29275261, 1572176, 345138,
              10, 2209, 11267, 128, 4, 974, 14, 48937457, 11316796, 40094537, 452104, 12606, 104, 35]
DIM = 16
NDENSE = 13
POOL = 4  # indices per bag (fixed, so torch.compile sees static shapes)
NBATCHES = 8  # distinct pre-made batches, cycled


def mlp(dims, last_relu):
    layers = []
    for i in range(len(dims) - 1):
        layers.append(nn.Linear(dims[i], dims[i + 1]))
        if i < len(dims) - 2 or last_relu:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.ModuleList(nn.EmbeddingBag(min(r, 100000), DIM, mode="sum") for r in TABLE_ROWS)
        self.bot = mlp([NDENSE, 128, 64, DIM], True)
        nf = len(TABLE_ROWS) + 1
        self.top = mlp([DIM + nf * (nf - 1) // 2, 64, 32, 1], False)
        li, lj = torch.tril_indices(nf, nf, offset=-1)
        self.register_buffer("li", li, persistent=False)
        self.register_buffer("lj", lj, persistent=False)

    def forward(self, dense, indices, offsets):
        # the dense features as per-feature slices, glued back
        dense = torch.cat(torch.split(dense, 1, dim=1), dim=1)
        x = self.bot(dense)
        ly = [e(i, o) for e, i, o in zip(self.emb, indices, offsets)]
        t = torch.stack([x] + ly, dim=1)
        z = torch.bmm(t, t.transpose(1, 2))
        r = torch.cat([x, z[:, self.li, self.lj]], dim=1)
        return self.top(r).squeeze(1)


def make_batches(batch, gen):
    out = []
    for _ in range(NBATCHES):
        dense = torch.rand(batch, NDENSE, generator=gen) * 2 - 1
        labels = ((dense[:, 0] + dense[:, 1]) > 0).float()
        idx = [torch.randint(0, min(r, 100000), (batch * POOL,), generator=gen) for r in TABLE_ROWS]
        off = [torch.arange(0, batch * POOL, POOL) for _ in TABLE_ROWS]
        out.append(([dense.pin_memory(), labels.pin_memory()],
                    [i.pin_memory() for i in idx], [o.pin_memory() for o in off]))
    return out


def have_gpu():
    """A real CUDA device: not none, and not the software device (its name says simcuda)."""
    if not torch.cuda.is_available():
        print("gpu-check-torch: no CUDA device", file=sys.stderr)
        return False
    name = torch.cuda.get_device_name(0)
    if "simcuda" in name:
        print("gpu-check-torch: %s is the software device, not a GPU" % name, file=sys.stderr)
        return False
    return True


def run_client(name, steps, lib):
    """One client's stdout (the bytes it read back) and its step_us line, eager or under lib."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tests", "clients"))
    env.pop("LD_PRELOAD", None)
    if lib:
        env["LD_PRELOAD"] = lib
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "clients", name + ".py"), str(steps)],
                       env=env, capture_output=True, text=True)
    us = [ln.split()[-1] for ln in p.stderr.splitlines() if " step_us " in ln]
    return p.returncode, p.stdout, float(us[-1]) if us else float("nan"), p.stderr


def clients(steps, lib):
    """Every client eager and under cufold on the GPU: identical bytes, step times."""
    if not os.path.exists(lib):
        print("gpu-check-torch: %s not found (make)" % lib, file=sys.stderr)
        return 1
    bad = 0
    print("%-20s %12s %12s  %s" % ("client", "eager us", "cufold us", "bytes read back"))
    for name in CLIENTS:
        rc_e, out_e, us_e, err_e = run_client(name, steps, None)
        rc_c, out_c, us_c, err_c = run_client(name, steps, lib)
        same = rc_e == 0 and rc_c == 0 and out_e == out_c and out_e
        bad += not same
        verdict = "identical" if same else "DIFFER (exit %d / %d)" % (rc_e, rc_c)
        print("%-20s %12.1f %12.1f  %s" % (name, us_e, us_c, verdict))
        if not same:
            sys.stderr.write((err_e + err_c)[-2000:])
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["eager", "compile"], default="eager")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--clients", action="store_true", help="tests/clients/torch_*.py eager and under cufold")
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "libcufold.so"))
    a = ap.parse_args()
    if not have_gpu():
        return 77
    if a.clients:
        return clients(a.steps, a.lib)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True, warn_only=True)
    dev = torch.device("cuda")
    gen = torch.Generator().manual_seed(1)
    model = DLRM().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, weight_decay=1e-4, foreach=False)
    lossf = nn.BCEWithLogitsLoss()
    fwd = torch.compile(model, mode="reduce-overhead") if a.mode == "compile" else model
    batches = make_batches(a.batch, gen)
    losses = []
    t0 = None
    for step in range(a.warmup + a.steps):
        if step == a.warmup:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        (dense, labels), idx, off = batches[step % NBATCHES]
        dense = dense.to(dev, non_blocking=True)
        labels = labels.to(dev, non_blocking=True)
        idx = [i.to(dev, non_blocking=True) for i in idx]
        off = [o.to(dev, non_blocking=True) for o in off]
        opt.zero_grad(set_to_none=False)
        if a.mode == "compile":
            torch.compiler.cudagraph_mark_step_begin()
        loss = lossf(fwd(dense, idx, off), labels)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    elapsed = time.perf_counter() - t0
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().float().cpu().numpy().tobytes())
    h.update(torch.tensor(losses, dtype=torch.float32).numpy().tobytes())
    print("torch mode=%s steps=%d step_us=%.1f loss=%.6f checksum=%s" %
          (a.mode, a.steps, elapsed * 1e6 / a.steps, losses[-1], h.hexdigest()[:16]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
