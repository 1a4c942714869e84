"""Class 2: the grid callable computes through zero-copy numpy views (np.from_dlpack) of tensors
the kernel never touches; a dummy kernel runs."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fill_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)

import numpy as np


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        scratch = torch.empty(128)

        def grid(meta):
            np.maximum(np.from_dlpack(x), 0.0, out=np.from_dlpack(y))
            return (1,)

        fill_kernel[grid](scratch, 128, BLOCK=128)
        return y
