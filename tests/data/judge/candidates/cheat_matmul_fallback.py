"""Adversarial candidate: PyTorch fallback: torch.matmul does the work, Triton only copies the result."""

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
    """Cheats."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        C = torch.matmul(A, B)
        out = torch.empty_like(C)
        n = C.numel()
        copy_kernel[(triton.cdiv(n, 256),)](C, out, n, BLOCK=256)
        return out
