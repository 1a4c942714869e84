import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over the last dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.sum(dim=1)


batch_size = 8
dim = 48


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
