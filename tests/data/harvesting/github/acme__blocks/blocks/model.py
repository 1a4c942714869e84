import torch.nn as nn

from .layers import FeedForward


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = FeedForward(dim)

    def forward(self, x):
        return x + self.ff(self.norm(x))
