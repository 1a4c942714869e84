import torch
import torch.nn as tnn


def swish(x):
    return x * torch.sigmoid(x)


class SwiGLU(tnn.Module):
    def __init__(self, in_features: int, hidden_features: int):
        super().__init__()
        self.w12 = tnn.Linear(in_features, 2 * hidden_features)
        self.w3 = tnn.Linear(hidden_features, in_features)

    def forward(self, x):
        a, b = self.w12(x).chunk(2, dim=-1)
        return self.w3(swish(a) * b)


class GEGLU(tnn.Module):
    def forward(self, x):
        a, gate = x.chunk(2, dim=-1)
        return a * torch.nn.functional.gelu(gate)
