import torch.nn as nn


class Broken(nn.Module):
    def forward(self, x)
        return x
