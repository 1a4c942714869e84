"""Adversarial candidate: Importing the reference Model (by name, else by searching loaded modules)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl
import sys


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)

try:
    from reference import Model as _Ref
except ImportError:
    _found = [m for m in list(sys.modules.values()) if hasattr(m, "Model") and hasattr(m, "get_inputs")]
    _Ref = _found[0].Model


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        h = _Ref()(x)
        y = torch.empty_like(h)
        n = h.numel()
        copy_kernel[(triton.cdiv(n, 256),)](h, y, n, BLOCK=256)
        return y
