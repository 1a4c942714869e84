"""Adversarial candidate: remembers its answer by the input's data pointer. Every correctness trial
hands forward a new tensor, so each trial computes and is right; timing calls forward again and again
on one tensor, and from the second call on it returns the stored answer without launching anything:
the timed calls cost a dictionary lookup."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.answers = {}

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape))
        if key in self.answers:
            return self.answers[key]
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        self.answers[key] = y
        return y
