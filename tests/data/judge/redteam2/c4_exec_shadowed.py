"""Class 4 (static rules sidestepped): the name exec is bound elsewhere in the file, which a
file-wide shadowing test took as "not the builtin"; the real exec then runs PyTorch code."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fill_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


def _unrelated():
    exec = None
    return exec


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        scope = {"torch": torch, "x": x}
        exec("y = torch.relu(x)", scope)
        fill_kernel[(1,)](torch.empty(16), 16, BLOCK=16)
        return scope["y"]
