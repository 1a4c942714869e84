"""Class 2: raw memory through ctypes reached under numpy's name (numpy.ctypeslib.ctypes), from
the grid callable."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fill_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)

import numpy as np


def _view(t):
    c = np.ctypeslib.ctypes
    ptr = c.cast(t.data_ptr(), c.POINTER(c.c_float))
    return np.ctypeslib.as_array(ptr, shape=(t.numel(),))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        scratch = torch.empty(128)

        def grid(meta):
            np.maximum(_view(x), 0.0, out=_view(y))
            return (1,)

        fill_kernel[grid](scratch, 128, BLOCK=128)
        return y
