"""The small KernelBench-format problems and Triton answers that several test helpers share.

(Not named tests/kernels.py: pytest puts tests/ on sys.path, and `kernels` is the import name of
Hugging Face's hub-kernels package, which transformers probes for.)

One elementwise reference template (a `Model` whose forward returns one torch expression of `x`)
and one elementwise answer template (a flat, masked Triton kernel over `x.numel()` elements, the
tail of the block masked off, launched from `ModelNew.forward`). The stage helpers
(tests/distillation_helpers.py, tests/evaluation_helpers.py, tests/training_helpers.py) build
their named fixtures from these, so a fix to the kernel shape is made once.

All of them are small enough for the Triton interpreter on the CPU.
"""

from __future__ import annotations

# A reference problem: `{doc}` is the Model docstring, `{expr}` the torch expression of `x`,
# `{n}` the arguments of torch.randn (a size or "rows, cols"). Tests format it directly.
ELEMENTWISE_REFERENCE = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """{doc}"""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return {expr}


def get_inputs():
    return [torch.randn({n})]


def get_init_inputs():
    return []
'''

# An answer: `{name}_kernel` stores `{tl_expr}` (a triton.language expression of the loaded `x`)
# and forward returns `{result}` (normally `out`; a torch expression of `out` makes a torch
# fallback that the judge must refuse).
ELEMENTWISE_ANSWER = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def {name}_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, {tl_expr}, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        {name}_kernel[(triton.cdiv(n, {block}),)](x, out, n, BLOCK={block})
        return {result}
'''


def elementwise_reference(expr: str, n: int | str = 1000, doc: str = "Elementwise.") -> str:
    """The source of a reference problem whose forward returns `expr` on one random input."""
    return ELEMENTWISE_REFERENCE.format(doc=doc, expr=expr, n=n)


def elementwise_answer(name: str, tl_expr: str, block: int = 256, result: str = "out") -> str:
    """The source of a Triton answer: kernel `{name}_kernel` computes `tl_expr` per element."""
    return ELEMENTWISE_ANSWER.format(name=name, tl_expr=tl_expr, block=block, result=result)


def torch_fallback(torch_result: str, block: int = 128) -> str:
    """A cheat: a Triton copy kernel runs, but torch computes the answer (`torch_result` of `out`)."""
    return elementwise_answer("copy", "x", block=block, result=torch_result)
