"""Adversarial candidate: torch.ops.aten compute behind the dispatcher, token kernel launch."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        h = torch.ops.aten.relu(x)
        y = torch.empty_like(h)
        n = h.numel()
        copy_kernel[(triton.cdiv(n, 256),)](h, y, n, BLOCK=256)
        return y
