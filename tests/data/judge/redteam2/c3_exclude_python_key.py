"""Class 3: torch._C reached through a re-export (torch.nn.functional.torch._C) excludes the
Python dispatch key for the thread: the dispatch-mode recorder sees nothing, PyTorch computes."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fill_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)

import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        C = F.torch._C
        with C._ExcludeDispatchKeyGuard(C.DispatchKeySet(C.DispatchKey.Python)):
            y = torch.relu(x)
        fill_kernel[(1,)](torch.empty(16), 16, BLOCK=16)
        return y
