"""Class 1 (outputs that are not plain tensors): a list subclass, made with three-argument type(),
whose iteration computes the answer with PyTorch after forward returned (recorders off)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fill_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)


def _later(self):
    x, y = list.__getitem__(self, 0)
    return iter([torch.relu(x)])


LazyList = type("LazyList", (list,), {"__iter__": _later})


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        fill_kernel[(triton.cdiv(y.numel(), 128),)](y, y.numel(), BLOCK=128)
        return LazyList([(x, y)])
