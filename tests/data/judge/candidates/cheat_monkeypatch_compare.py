"""Adversarial candidate: Monkeypatching the comparison (torch.allclose, assert_close, builtins) and returning zeros."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
import builtins

torch.allclose = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None
torch.equal = lambda *args, **kwargs: True
builtins.abs = lambda v: 0


@triton.jit
def zero_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        zero_kernel[(triton.cdiv(n, 256),)](y, n, BLOCK=256)
        return y
