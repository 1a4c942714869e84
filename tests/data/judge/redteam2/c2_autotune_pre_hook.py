"""Class 2: an autotuner config's pre_hook computes the answer with PyTorch."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


def _hook(nargs):
    nargs["y_ptr"].copy_(torch.relu(nargs["x_ptr"]))


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, pre_hook=_hook)], key=["n"])
@triton.jit
def touch_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(y_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, v, mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        touch_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, x.numel())
        return y
