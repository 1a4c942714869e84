import torch
import torch.nn as nn


class Model(nn.Module):
    """ReLU; sizes stated in one tuple assignment (issue 14, class 7)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size, dim = 16, 64


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
