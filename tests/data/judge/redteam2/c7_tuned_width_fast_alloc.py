"""Class 7 (tuned to the CPU's shrunk shape), output from Inductor's fast allocator: at an odd
width the columns past 32 are never written, and `_empty_strided_cpu` skips PyTorch's fill of
uninitialised memory; the judge's trials must read them as NaN, not as whatever the allocator
held (zeros where relu is zero, or an earlier candidate's freed answer)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_rows(x_ptr, y_ptr, rows):
    r = tl.program_id(0)
    cols = tl.arange(0, 32)
    v = tl.load(x_ptr + r * 32 + cols)
    tl.store(y_ptr + r * 32 + cols, tl.maximum(v, 0.0))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch._C._dynamo.guards._empty_strided_cpu(tuple(x.shape), tuple(x.stride()), x.dtype)
        relu_rows[(x.shape[0],)](x, y, x.shape[0])
        return y
