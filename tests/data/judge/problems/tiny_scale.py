import torch
import torch.nn as nn


class Model(nn.Module):
    """Outputs far below the fp32 tolerance: an all-zero answer would pass a plain allclose."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 1e-6


batch_size = 8
dim = 32


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
