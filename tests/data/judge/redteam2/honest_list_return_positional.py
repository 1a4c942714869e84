"""Honest but unusual: constexprs passed positionally, two launches over the two halves with
different block sizes (two compiled variants), and the result returned in a one-element list."""

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


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        half = n // 2
        relu_kernel[(triton.cdiv(half, 64),)](x, y, half, 64)
        xs, ys = x.view(-1)[half:], y.view(-1)[half:]
        relu_kernel[(triton.cdiv(n - half, 32),)](xs, ys, n - half, 32)
        return [y]
