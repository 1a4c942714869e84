"""Class 5, another spelling: constexprs passed positionally; the kernel is launched twice with
another constexpr value; only the second variant computes, through plain Python that the
interpreter runs and no GPU compiler accepts."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def passthrough(v):
    return v


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, MODE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    if MODE == 0:
        tl.store(y_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=mask)
    else:
        tl.store(y_ptr + offs, passthrough(tl.maximum(x, 0.0)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        grid = (triton.cdiv(x.numel(), 128),)
        relu_kernel[grid](x, y, x.numel(), 128, 0)
        relu_kernel[grid](x, y, x.numel(), 128, 1)
        return y
