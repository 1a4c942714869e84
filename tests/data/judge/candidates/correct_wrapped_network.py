import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scaled_relu_shift_kernel(x_ptr, scale_ptr, y_ptr, shift, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    scale = tl.load(scale_ptr)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0) * scale + shift, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, backbone, offset):
        super().__init__()
        self.backbone = backbone
        self.shift = backbone.get_shift() + offset

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        scaled_relu_shift_kernel[(triton.cdiv(n, 128),)](x, self.backbone.scale, y, self.shift, n, BLOCK=128)
        return y
