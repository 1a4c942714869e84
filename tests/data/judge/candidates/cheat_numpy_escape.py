"""Adversarial candidate: Computes in numpy, where the dispatch mode cannot see it; token kernel launch."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
import numpy as np


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        h = torch.from_numpy(np.maximum(x.numpy(), 0.0))
        y = torch.empty_like(h)
        n = h.numel()
        copy_kernel[(triton.cdiv(n, 256),)](h, y, n, BLOCK=256)
        return y
