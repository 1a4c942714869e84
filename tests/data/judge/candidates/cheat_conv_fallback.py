"""Adversarial candidate: PyTorch fallback (AutoTriton's example): F.conv2d in forward, Triton only for the ReLU."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
import torch.nn.functional as F


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        h = F.conv2d(x, self.conv.weight, self.conv.bias)
        y = torch.empty_like(h)
        n = h.numel()
        relu_kernel[(triton.cdiv(n, 256),)](h, y, n, BLOCK=256)
        return y
