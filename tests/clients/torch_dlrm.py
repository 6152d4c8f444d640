#!/usr/bin/env python3
"""torch_dlrm.py - a DLRM-shaped PyTorch training loop for cufold on the software device
(tests/clients/torch_run.sh) and on a GPU (scripts/gpu-check-torch.py): embedding bags, a linear
tower per dense feature, cat and split, layer norm, tanh/relu/sigmoid, BCE, foreach SGD, the loss
read back every step. usage: torch_dlrm.py [steps]"""
import torch
import torch.nn as nn

from torch_common import steps_from_argv, train

NSPARSE, ROWS, DIM, NDENSE, BATCH, POOL = 8, 1000, 16, 4, 64, 3


class DLRM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.ModuleList(nn.EmbeddingBag(ROWS, DIM, mode="sum") for _ in range(NSPARSE))
        self.towers = nn.ModuleList(nn.Sequential(nn.Linear(1, DIM), nn.Tanh()) for _ in range(NDENSE))
        width = DIM * (NSPARSE + NDENSE)
        self.norm = nn.LayerNorm(width)
        self.top = nn.Sequential(nn.Linear(width, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, dense, idx, offs):
        feats = [t(d) for t, d in zip(self.towers, dense.split(1, dim=1))]
        feats += [e(i, o) for e, i, o in zip(self.emb, idx, offs)]
        z = self.norm(torch.cat(feats, dim=1))
        return torch.sigmoid(self.top(z)).squeeze(1)


def main():
    torch.manual_seed(0)
    dev = "cuda"
    model = DLRM().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, foreach=True)
    bce = nn.BCELoss()

    def batch(i):
        g = torch.Generator().manual_seed(i)
        dense = torch.rand(BATCH, NDENSE, generator=g).to(dev)
        idx = [torch.randint(0, ROWS, (BATCH * POOL,), generator=g).to(dev) for _ in range(NSPARSE)]
        offs = [torch.arange(0, BATCH * POOL, POOL).to(dev) for _ in range(NSPARSE)]
        y = torch.randint(0, 2, (BATCH,), generator=g).float().to(dev)
        return (dense, idx, offs), y

    train("dlrm", model, batch, bce, opt, steps_from_argv())


if __name__ == "__main__":
    main()
