"""Adversarial candidate for problems judged at shrunk sizes: at the small sizes correctness is
judged at, it computes every call (so no cache across trials shows); at the problem's own sizes,
where only timing runs, it remembers its answer by the input's data pointer and answers the
timed calls from that cache (kept where the static rules do not look for it: a default argument)."""

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

    def forward(self, x, answers=[]):
        key = (x.data_ptr(), tuple(x.shape))
        large = x.numel() >= 1024
        for known, y in answers:
            if large and known == key:
                return y
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        if large:
            answers.insert(0, (key, y))
        return y
