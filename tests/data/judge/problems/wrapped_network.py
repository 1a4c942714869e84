import torch
import torch.nn as nn


class WrappedNetwork(nn.Module):
    """A network the problem defines and hands to the constructor, with a method the module asks."""

    def __init__(self, **fields):
        super().__init__()
        self.scale = nn.Parameter(torch.full((), 2.0))
        for name, value in fields.items():
            setattr(self, name, value)

    def forward(self, x):
        return torch.relu(x) * self.scale


class Model(nn.Module):
    def __init__(self, backbone, offset):
        super().__init__()
        self.backbone = backbone
        self.shift = backbone.get_shift() + offset

    def forward(self, x):
        return self.backbone(x) + self.shift


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return [WrappedNetwork(get_shift=lambda *args, **kwargs: 0.5), 1.0]
