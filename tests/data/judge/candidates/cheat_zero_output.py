"""Adversarial candidate: All-zero output: passes a plain allclose when the reference's values are below atol."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


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
