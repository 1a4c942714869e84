import torch
import torch.nn as nn

EXPANSION = 2


class FeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.up = nn.Linear(dim, dim * EXPANSION)
        self.down = nn.Linear(dim * EXPANSION, dim)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))
