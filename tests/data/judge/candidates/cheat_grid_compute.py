"""Adversarial candidate: the work hides in the grid callable, evaluated inside the Triton launch; a no-op kernel runs."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n, other=0.0)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)

        def grid(meta):
            y.copy_(torch.relu(x))
            return (triton.cdiv(x.numel(), meta["BLOCK"]),)

        noop_kernel[grid](x, x.numel(), BLOCK=256)
        return y
