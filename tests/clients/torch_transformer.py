#!/usr/bin/env python3
"""torch_transformer.py - a small transformer block trained with PyTorch (tests/clients/torch_run.sh):
nn.TransformerEncoderLayer (attention, layer norms, dropout off), a linear head, cross entropy,
AdamW, the loss read back every step. usage: torch_transformer.py [steps]"""
import torch
import torch.nn as nn

from torch_common import steps_from_argv, train

SEQ, BATCH, DMODEL, HEADS, VOCAB = 16, 8, 64, 4, 100


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, DMODEL)
        self.layer = nn.TransformerEncoderLayer(DMODEL, HEADS, 4 * DMODEL, dropout=0.0, batch_first=True)
        self.head = nn.Linear(DMODEL, VOCAB)

    def forward(self, tokens):
        return self.head(self.layer(self.emb(tokens))).reshape(-1, VOCAB)


def main():
    torch.manual_seed(0)
    dev = "cuda"
    model = Block().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ce = nn.CrossEntropyLoss()

    def batch(i):
        g = torch.Generator().manual_seed(i)
        t = torch.randint(0, VOCAB, (BATCH, SEQ + 1), generator=g).to(dev)
        return (t[:, :-1],), t[:, 1:].reshape(-1)

    train("transformer", model, batch, ce, opt, steps_from_argv())


if __name__ == "__main__":
    main()
