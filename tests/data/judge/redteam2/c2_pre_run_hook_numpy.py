"""Class 2 (code exempted because it runs inside a launch): a kernel pre-run hook computes the
answer with numpy; the kernel itself only loads."""

import torch
import torch.nn as nn
import triton
import triton.language as tl

import numpy as np


@triton.jit
def touch_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(y_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, v, mask=offs < n)


def _hook(*args, **kwargs):
    x, y = args[0], args[1]
    np.maximum(x.numpy(), 0.0, out=y.numpy())


touch_kernel.add_pre_run_hook(_hook)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        touch_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
        return y
