"""Work done once in a judge worker before it forks its candidate template, so that every
candidate starts warm: first-call costs of torch ops, dispatch modes and the Triton interpreter
(or JIT) are paid here, once per worker, instead of once per candidate."""

from __future__ import annotations

import os
import tempfile

_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def _warm_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0) + tl.sum(x, axis=0) * 0.0, mask=mask)
'''


def warm_up(directory: str) -> None:
    """CPU-only warm-up (never initialises CUDA: the template forks after this)."""
    import importlib.util
    import sys

    import torch

    from autotriton.validation.candidate_runner import AtenRecorder, install_launch_hooks

    x = torch.randn(64, 64)
    with torch.no_grad(), AtenRecorder():
        y = torch.empty_like(x)
        (x @ x).relu().sum()
    if os.environ.get("TRITON_INTERPRET") != "1":
        return
    install_launch_hooks()
    path = os.path.join(directory, "_autotriton_warm_kernel.py")
    with open(path, "w") as f:
        f.write(_KERNEL)
    spec = importlib.util.spec_from_file_location("_autotriton_warm_kernel", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["_autotriton_warm_kernel"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    with torch.no_grad(), AtenRecorder():
        module._warm_kernel[(2,)](x, y, x.numel(), BLOCK=2048)
    # forget what the warm-up recorded: candidates start with clean logs
    from autotriton.validation import candidate_runner as cr

    cr.STATE.launches, cr.STATE.compile_records, cr.STATE.compile_seen, cr.STATE.kernel_info = [], [], set(), {}
