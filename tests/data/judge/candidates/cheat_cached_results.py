"""Adversarial candidate: Cached results: the first call per shape runs the kernel, later calls replay the stored output."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)

_CACHE = {}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        key = tuple(x.shape)
        if key in _CACHE:
            return _CACHE[key]
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        _CACHE[key] = y
        return y
