#!/usr/bin/env python3
"""torch_nogemm.py - a DLRM-shaped PyTorch training loop without matrix products, so that it runs
on the software device while cuBLAS does not (cuBLASLt finds no algorithm there: see README):
embedding bags, per-feature towers as broadcast multiply-and-sum instead of nn.Linear, cat and
split, layer norm, tanh/relu/sigmoid, BCE, foreach SGD, the loss read back every step.
tests/clients/torch_run.sh runs it eager and under cufold. usage: torch_nogemm.py [steps]"""
import torch
import torch.nn as nn

from torch_common import steps_from_argv, train

NSPARSE, ROWS, DIM, NDENSE, BATCH, POOL = 8, 1000, 16, 4, 64, 3


class Tower(nn.Module):
    """A linear map without a GEMM: (x[:, :, None] * w).sum(1) + b."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n_in, n_out) / n_in ** 0.5)
        self.b = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return (x.unsqueeze(2) * self.w).sum(1) + self.b


class DLRMNoGemm(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.ModuleList(nn.EmbeddingBag(ROWS, DIM, mode="sum") for _ in range(NSPARSE))
        self.towers = nn.ModuleList(Tower(1, DIM) for _ in range(NDENSE))
        width = DIM * (NSPARSE + NDENSE)
        self.norm = nn.LayerNorm(width)
        self.top1 = Tower(width, 16)
        self.top2 = Tower(16, 1)

    def forward(self, dense, idx, offs):
        feats = [torch.tanh(t(d)) for t, d in zip(self.towers, dense.split(1, dim=1))]
        feats += [e(i, o) for e, i, o in zip(self.emb, idx, offs)]
        z = self.norm(torch.cat(feats, dim=1))
        return torch.sigmoid(self.top2(torch.relu(self.top1(z)))).squeeze(1)


def main():
    torch.manual_seed(0)
    dev = "cuda"
    model = DLRMNoGemm().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, foreach=True)
    bce = nn.BCELoss()

    def batch(i):
        g = torch.Generator().manual_seed(i)
        dense = torch.rand(BATCH, NDENSE, generator=g).to(dev)
        idx = [torch.randint(0, ROWS, (BATCH * POOL,), generator=g).to(dev) for _ in range(NSPARSE)]
        offs = [torch.arange(0, BATCH * POOL, POOL).to(dev) for _ in range(NSPARSE)]
        y = torch.randint(0, 2, (BATCH,), generator=g).float().to(dev)
        return (dense, idx, offs), y

    train("nogemm", model, batch, bce, opt, steps_from_argv())


if __name__ == "__main__":
    main()
