"""Work done once in a judge worker before it forks its candidate template, so that every
candidate starts warm: first-call costs of torch ops, dispatch modes and the Triton interpreter
(`warm_up`), and the Triton compiler's once-per-process costs (`warm_compiler`), are paid here,
once per worker, instead of once per candidate. One tiny kernel serves both."""

from __future__ import annotations

import os
import shutil

_KERNEL = '''
import triton
import triton.language as tl


@triton.jit
def _warm_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0) + tl.sum(x, axis=0) * 0.0, mask=mask)


def launch(x, y, n):  # the launch site warm_compiler's static compile check reads
    _warm_kernel[(1,)](x, y, n, BLOCK=128)
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


def warm_compiler(directory: str) -> None:
    """Pay the Triton compiler's once-per-process costs in the worker, before the template forks,
    so that every candidate inherits them: `triton_key()` (a SHA-256 of Triton's sources and its
    415 MB libtriton.so, lru-cached: ~0.45 s of each candidate's first compile, on the CPU's compile
    check and on the GPU's JIT alike), the code generator's imports and ptxas' version query.
    One real compile of a tiny kernel for sm_90, from source, with an explicit target: no GPU
    driver is touched and CUDA is not initialised (the template must never initialise it)."""
    from triton.runtime.cache import triton_key

    triton_key()
    from autotriton.validation.compile_check import compile_check

    previous = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(directory, ".triton-warm")  # never the candidates' cache
    try:
        compile_check(_KERNEL, target="cuda:90")
    finally:
        if previous is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = previous
        shutil.rmtree(os.path.join(directory, ".triton-warm"), ignore_errors=True)
