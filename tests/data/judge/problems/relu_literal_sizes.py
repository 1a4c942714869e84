import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU; sizes only as literals in get_inputs() (issue 14, class 7)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
