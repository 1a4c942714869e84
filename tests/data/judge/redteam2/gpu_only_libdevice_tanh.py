"""Honest, GPU-only (class 8): libdevice's tanh, which the Triton interpreter lacks. On the CPU
the judge says unsupported_here (no reward, counted apart); on a GPU it is correct."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

from triton.language.extra import libdevice


@triton.jit
def tanh_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, libdevice.tanh(x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        tanh_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
        return y
