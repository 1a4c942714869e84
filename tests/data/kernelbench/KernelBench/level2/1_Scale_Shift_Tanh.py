import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Model that scales its input, shifts it by a constant and applies tanh.
    """

    def __init__(self, scale, shift):
        super(Model, self).__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x):
        x = x * self.scale
        x = x + self.shift
        return torch.tanh(x)


batch_size = 8
features = 48
scale = 0.5
shift = 0.1


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [scale, shift]
