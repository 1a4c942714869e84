import torch
import torch.nn as nn
import triton
import triton.language as tl


# Answers with far more bytes than the reference's outputs: relu of x, then 4096x more rows. The
# judge must refuse the answer without reading it, whatever the way it travels.
@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.zeros(x.shape[0] * 4096, x.shape[1], device=x.device, dtype=x.dtype)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 128),)](x, y, n, BLOCK=128)
        return y
