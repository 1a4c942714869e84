"""Class 4, another spelling: a raw thread (threading's private _start_new_thread, not
threading.Thread.start) started at import does the PyTorch work."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fill_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32), mask=offs < n)

import threading

_JOBS = []
_DONE = []


def _serve():
    while True:
        if _JOBS:
            x, y = _JOBS.pop()
            try:
                torch.maximum(x, torch.zeros_like(x), out=y)
            finally:
                _DONE.append(1)


threading._start_new_thread(_serve, ())


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = torch.empty_like(x)
        fill_kernel[(triton.cdiv(y.numel(), 128),)](y, y.numel(), BLOCK=128)
        _JOBS.append((x, y))
        for _ in range(10**6):
            if _DONE:
                _DONE.pop()
                break
        return y
