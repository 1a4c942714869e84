"""Class 7, another spelling (sizes as get_inputs() literals; a flat launch over 32-wide rows): each row is 32 columns, the
shrunk width of a problem whose sizes are literals in get_inputs(); right there, wrong at its own size
and at any odd width."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_flat(x_ptr, y_ptr, rows, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < rows * 32  # the width is assumed, not read
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask, other=0.0), 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        relu_flat[(triton.cdiv(x.shape[0] * 32, 64),)](x, y, x.shape[0], BLOCK=64)
        return y
