#!/usr/bin/env python3
"""torch_mlp_adam.py - an MLP trained with Adam in PyTorch (tests/clients/torch_run.sh): three
linear layers with ReLU, MSE, Adam (foreach), the loss read back every step.
usage: torch_mlp_adam.py [steps]"""
import torch
import torch.nn as nn

from torch_common import steps_from_argv, train


def main():
    torch.manual_seed(0)
    dev = "cuda"
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    mse = nn.MSELoss()

    def batch(i):
        g = torch.Generator().manual_seed(i)
        return (torch.randn(64, 32, generator=g).to(dev),), torch.randn(64, 1, generator=g).to(dev)

    train("mlp_adam", model, batch, mse, opt, steps_from_argv())


if __name__ == "__main__":
    main()
