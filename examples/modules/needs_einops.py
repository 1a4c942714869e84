import torch.nn as nn
from einops import rearrange


class PatchFlatten(nn.Module):
    def forward(self, x):
        return rearrange(x, "b c h w -> b (h w) c")
