"""Static rules: every rule fires with its id on the right line; correct candidates pass clean.

Bad candidates mark the line the violation must point at with a trailing `# <-` comment.
"""

from __future__ import annotations

import textwrap

import pytest
from validation_rules_helpers import GOOD_CANDIDATES

from autotriton.records import Violation
from autotriton.validation.rules import (
    ALLOWED_IMPORTS,
    ALLOWED_TENSOR_METHODS,
    ALLOWED_TORCH_CALLS,
    FORBIDDEN_NAMES,
    RULES,
    TENSOR_COMPUTE_METHODS,
    check_rules,
)

HEADER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl
"""

KERNEL = """
@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)
"""

LAUNCH = """\
out = torch.empty_like(x)
n = x.numel()
relu_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
"""


def make(forward: str = LAUNCH + "return out", *, top: str = "", init: str = "", kernel: str = KERNEL,
         bottom: str = "", bases: str = "nn.Module", args: str = "x") -> str:
    """A candidate around the relu kernel; each piece can be swapped for a cheat."""
    init_body = textwrap.indent(textwrap.dedent(init).strip("\n") or "pass", " " * 8)
    fwd_body = textwrap.indent(textwrap.dedent(forward).strip("\n"), " " * 8)
    return (
        HEADER + textwrap.dedent(top) + kernel
        + f"\n\nclass ModelNew({bases}):\n    def __init__(self):\n        super().__init__()\n{init_body}\n\n"
        + f"    def forward(self, {args}):\n{fwd_body}\n" + textwrap.dedent(bottom)
    )


def marked_line(source: str) -> int | None:
    for i, line in enumerate(source.splitlines(), start=1):
        if line.rstrip().endswith("# <-"):
            return i
    return None


def rules_of(violations: list[Violation]) -> set[str]:
    return {v.rule for v in violations}


def assert_fires(source: str, rule: str) -> list[Violation]:
    """`rule` is reported on the `# <-` line (or with no line when nothing is marked)."""
    assert rule in RULES
    violations = check_rules(source)
    line = marked_line(source)
    hits = [v for v in violations if v.rule == rule]
    assert hits, f"{rule} not reported; got {violations}\n{source}"
    assert any(v.line == line for v in hits), f"{rule} reported on lines {[v.line for v in hits]}, expected {line}"
    for v in violations:
        assert v.rule in RULES and v.message
    return violations


# --------------------------------------------------------------------------------------------
# correct candidates: no violations at all
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(GOOD_CANDIDATES))
def test_correct_candidates_pass_every_rule(name: str) -> None:
    assert check_rules(GOOD_CANDIDATES[name]) == []


def test_the_template_itself_is_clean() -> None:
    assert check_rules(make()) == []


def test_shape_arithmetic_and_python_helpers_are_not_compute() -> None:
    source = make(
        """
        B, C, H, W = x.shape
        n = B * C * H * W
        half = n // 2 + (n % 2)
        dims = [d * 2 for d in x.shape]
        block = min(1024, triton.next_power_of_2(max(1, H * W)))
        scale = 1.0 / math.sqrt(float(C))
        assert x.is_contiguous() and x.dim() == 4 and x.shape[1] == C
        if x.size(0) > 0 and scale > 0:
            pass
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block)
        return out.view(B, C, H, W)
        """,
        top="import math\n",
    )
    assert check_rules(source) == []


def test_parameter_named_input_and_scalar_forward_arguments() -> None:
    source = make(
        """
        out = torch.empty_like(input)
        n = input.numel() * repeat
        relu_kernel[(triton.cdiv(n, 256),)](input, out, n, BLOCK=256)
        return out
        """,
        args="input, repeat: int = 1",
    )
    assert check_rules(source) == []


def test_kernel_launched_through_helper_function_variable() -> None:
    source = make(
        """
        return apply(relu_kernel, x)
        """,
        top="",
        bottom="""

        def apply(kernel, t):
            out = torch.empty_like(t)
            kernel[(triton.cdiv(t.numel(), 128),)](t, out, t.numel(), BLOCK=128)
            return out
        """,
    )
    assert check_rules(source) == []


# --------------------------------------------------------------------------------------------
# structure
# --------------------------------------------------------------------------------------------


def test_syntax_error() -> None:
    source = make().replace("def forward(self, x):", "def forward(self, x)  # <-")
    violations = assert_fires(source, "SYNTAX")
    assert len(violations) == 1


def test_modelnew_missing() -> None:
    source = make().replace("class ModelNew(", "class Solution(")
    assert_fires(source, "MODELNEW-MISSING")


def test_modelnew_must_subclass_nn_module() -> None:
    source = make(bases="object").replace("class ModelNew(object):", "class ModelNew(object):  # <-")
    assert_fires(source, "MODELNEW-BASE")


def test_modelnew_subclassing_a_local_module_is_fine() -> None:
    source = make(bases="Base", top="\n\nclass Base(nn.Module):\n    pass\n")
    assert "MODELNEW-BASE" not in rules_of(check_rules(source))


def test_modelnew_without_forward() -> None:
    source = make().replace("def forward(self, x):", "def run(self, x):").replace("class ModelNew(nn.Module):", "class ModelNew(nn.Module):  # <-")
    assert_fires(source, "MODELNEW-FORWARD")


def test_no_triton_kernel() -> None:
    source = make(kernel="\n\ndef relu_kernel(x):\n    return x\n", forward="out = torch.empty_like(x)\nreturn out")
    assert_fires(source, "TRITON-NO-KERNEL")


def test_kernel_defined_but_never_launched() -> None:
    source = make(forward="out = torch.empty_like(x)\nreturn out").replace("def forward(self, x):", "def forward(self, x):  # <-")
    assert_fires(source, "TRITON-NOT-LAUNCHED")


def test_kernel_launched_only_from_dead_helper() -> None:
    source = make(
        forward="return torch.empty_like(x)",
        bottom="""

        def unused(x):
            out = torch.empty_like(x)
            relu_kernel[(1,)](x, out, x.numel(), BLOCK=256)
            return out
        """,
    ).replace("def forward(self, x):", "def forward(self, x):  # <-")
    assert_fires(source, "TRITON-NOT-LAUNCHED")


# --------------------------------------------------------------------------------------------
# PyTorch compute in the forward path
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "y = torch.relu(x)  # <-",
    "y = F.gelu(x)  # <-",
    "y = x.sum(dim=1)  # <-",
    "y = x @ x.t()  # <-",
    "y = torch.matmul(x, x)  # <-",
    "y = x * 2.0  # <-",
    "y = torch.nn.functional.softmax(x, dim=-1)  # <-",
    "y = x.exp().mean()  # <-",
    "y = torch.where(x > 0, x, 0.0)  # <-",
    "y = sum(x)  # <-",
    "y = x.cpu().numpy()  # <-",
    "y = torch.cat([x, x])  # <-",
    "x.add_(1.0)  # <-",
    "y = -x  # <-",
])
def test_pytorch_compute_in_forward(line: str) -> None:
    assert_fires(make(line + "\n" + LAUNCH + "return out"), "TORCH-COMPUTE")


def test_pytorch_compute_after_the_kernel() -> None:
    # AutoTriton's own example: Triton for the ReLU, PyTorch for the rest
    source = make(LAUNCH + "return out + x  # <-")
    assert_fires(source, "TORCH-COMPUTE")


def test_torch_module_called_in_forward() -> None:
    # the conv falls back to PyTorch; only the relu is Triton
    source = make(
        "x = self.conv(x)  # <-\n" + LAUNCH + "return out",
        init="self.conv = nn.Conv2d(3, 8, 3)",
    )
    assert_fires(source, "TORCH-COMPUTE")


def test_compute_in_a_helper_reached_from_forward() -> None:
    source = make(
        "return helper(x)",
        bottom="""

        def helper(t):
            t = t.contiguous()
            out = torch.empty_like(t)
            relu_kernel[(1,)](t, out, t.numel(), BLOCK=256)
            return out * 0.5  # <-
        """,
    )
    assert_fires(source, "TORCH-COMPUTE")


def test_compute_in_a_method_of_a_helper_module() -> None:
    source = make(
        "return self.block(x)",
        init="self.block = Helper()",
        bottom="""

        class Helper(nn.Module):
            def forward(self, t):
                out = torch.empty_like(t)
                relu_kernel[(1,)](t, out, t.numel(), BLOCK=256)
                return torch.tanh(out)  # <-
        """,
    )
    assert_fires(source, "TORCH-COMPUTE")


def test_compute_on_weights_in_forward() -> None:
    source = make(
        "w = self.weight.t().contiguous()\nb = self.weight.sum()  # <-\n" + LAUNCH + "return out",
        init="self.weight = nn.Parameter(torch.randn(4, 4))",
    )
    assert_fires(source, "TORCH-COMPUTE")


def test_indexed_write_into_a_tensor() -> None:
    source = make(LAUNCH + "out[0] = x[0]  # <-\nreturn out")
    assert_fires(source, "TORCH-COMPUTE")


def test_compute_in_init_is_allowed() -> None:
    source = make(init="self.weight = nn.Parameter(torch.randn(4, 4) * 0.02)\nnn.init.xavier_uniform_(self.weight)")
    assert check_rules(source) == []


# --------------------------------------------------------------------------------------------
# fallbacks, compilers, libraries
# --------------------------------------------------------------------------------------------


def test_try_except_around_launch() -> None:
    source = make(
        """
        out = torch.empty_like(x)
        try:  # <-
            relu_kernel[(1,)](x, out, x.numel(), BLOCK=256)
        except Exception:
            out = torch.relu(x)
        return out
        """
    )
    assert_fires(source, "TRY-EXCEPT")


def test_contextlib_suppress_in_forward() -> None:
    source = make(
        """
        out = torch.empty_like(x)
        with contextlib.suppress(Exception):  # <-
            relu_kernel[(1,)](x, out, x.numel(), BLOCK=256)
        return out
        """,
        top="import contextlib\n",
    )
    assert_fires(source, "TRY-EXCEPT")


def test_torch_compile() -> None:
    source = make(init="self.fn = torch.compile(torch.relu)  # <-")
    assert_fires(source, "TORCH-COMPILE")


def test_extern_kernels() -> None:
    # the import alone is tolerated (every Inductor module has it); calling into it is cuBLAS
    top = "from torch._inductor.select_algorithm import extern_kernels\n"
    assert check_rules(make(top=top)) == []
    source = make("y = extern_kernels.mm(x, x)  # <-\n" + LAUNCH + "return out", top=top)
    assert_fires(source, "TORCH-COMPILE")


def test_extern_kernels_used_in_inductor_output() -> None:
    from validation_rules_helpers import KERNELBOOK_STYLE

    source = KERNELBOOK_STYLE.replace(
        "        get_raw_stream(0)\n",
        "        get_raw_stream(0)\n        extern_kernels.mm(arg0_1, arg0_1, out=buf0)  # <-\n",
    )
    assert_fires(source, "TORCH-COMPILE")


def test_torch_ops_aten() -> None:
    source = make("y = torch.ops.aten.relu.default(x)  # <-\n" + LAUNCH + "return out")
    assert_fires(source, "TORCH-OPS")


def test_torch_c_compute() -> None:
    source = make("y = torch._C._nn.linear(x, x)  # <-\n" + LAUNCH + "return out")
    assert_fires(source, "TORCH-OPS")


def test_cudnn_switch() -> None:
    source = make(top="torch.backends.cudnn.allow_tf32 = True  # <-\n")
    assert_fires(source, "VENDOR-LIBRARY")


def test_cpp_extension() -> None:
    source = make(top="from torch.utils.cpp_extension import load_inline  # <-\n")
    assert_fires(source, "VENDOR-LIBRARY")


def test_global_seed() -> None:
    source = make("torch.manual_seed(0)  # <-\n" + LAUNCH + "return out")
    assert_fires(source, "GLOBAL-STATE")


def test_matmul_precision_change() -> None:
    source = make(top="torch.set_float32_matmul_precision('medium')  # <-\n")
    assert_fires(source, "GLOBAL-STATE")


# --------------------------------------------------------------------------------------------
# the reference, imports, patching, introspection
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "from reference import Model  # <-",
    "import problem  # <-",
    "from .model import Model  # <-",
    "from __main__ import get_inputs  # <-",
])
def test_reference_import(line: str) -> None:
    assert_fires(make(top=line + "\n"), "REFERENCE-IMPORT")


def test_reference_model_used_in_modelnew() -> None:
    source = make(init="self.ref = Model()  # <-")
    assert_fires(source, "REFERENCE-USE")


def test_modelnew_subclasses_reference() -> None:
    source = make(bases="Model").replace("class ModelNew(Model):", "class ModelNew(Model):  # <-")
    assert_fires(source, "REFERENCE-USE")


def test_import_outside_allowlist() -> None:
    assert_fires(make(top="import scipy.special  # <-\n"), "IMPORT-FORBIDDEN")


@pytest.mark.parametrize("line", [
    "torch.allclose = lambda *a, **k: True  # <-",
    "torch.Tensor.__eq__ = lambda a, b: True  # <-",
    "tl.dot = None  # <-",
    "setattr(torch, 'allclose', lambda *a, **k: True)  # <-",
    "F.relu = lambda x: x  # <-",
    "triton.knobs.runtime.interpret = False  # <-",
])
def test_monkeypatching(line: str) -> None:
    assert_fires(make(top=line + "\n"), "MONKEYPATCH")


@pytest.mark.parametrize("top,forward_line", [
    ("import gc  # <-\n", ""),
    ("import inspect  # <-\n", ""),
    ("import ctypes  # <-\n", ""),
    ("", "frame = globals()  # <-"),
    ("", "d = x.__class__.__dict__  # <-"),
    ("", "f = getattr(torch, name)  # <-"),
])
def test_introspection(top: str, forward_line: str) -> None:
    forward = (forward_line + "\n" if forward_line else "") + LAUNCH + "return out"
    assert_fires(make(forward, top=top), "INTROSPECTION")


def test_torch_function_override() -> None:
    source = make(bottom="""

        class Sneaky(torch.Tensor):  # <-
            pass
        """)
    assert_fires(source, "INTROSPECTION")


@pytest.mark.parametrize("line", [
    "exec('import os')  # <-",
    "y = eval('1 + 1')  # <-",
    "m = __import__('os')  # <-",
])
def test_dynamic_code(line: str) -> None:
    assert_fires(make(line + "\n" + LAUNCH + "return out"), "DYNAMIC-CODE")


def test_importlib() -> None:
    assert_fires(make(top="import importlib  # <-\n"), "DYNAMIC-CODE")


@pytest.mark.parametrize("top,line", [
    ("import threading  # <-\n", ""),
    ("from concurrent.futures import ThreadPoolExecutor  # <-\n", ""),
    ("", "s = torch.cuda.Stream()  # <-"),
    ("", "g = torch.cuda.CUDAGraph()  # <-"),
])
def test_concurrency(top: str, line: str) -> None:
    forward = (line + "\n" if line else "") + LAUNCH + "return out"
    assert_fires(make(forward, top=top), "CONCURRENCY")


def test_stream_context() -> None:
    source = make(
        """
        out = torch.empty_like(x)
        with torch.cuda.stream(torch.cuda.Stream()):  # <-
            relu_kernel[(1,)](x, out, x.numel(), BLOCK=256)
        return out
        """
    )
    assert_fires(source, "CONCURRENCY")


def test_sleep() -> None:
    source = make("time.sleep(0.01)  # <-\n" + LAUNCH + "return out", top="import time\n")
    assert_fires(source, "SLEEP")


@pytest.mark.parametrize("top,line", [
    ("", "f = open('/etc/passwd')  # <-"),
    ("import os  # <-\n", ""),
    ("import subprocess  # <-\n", ""),
    ("from pathlib import Path  # <-\n", ""),
    ("import socket  # <-\n", ""),
    ("", "w = torch.load('weights.pt')  # <-"),
    ("import pickle  # <-\n", ""),
])
def test_system_access(top: str, line: str) -> None:
    forward = (line + "\n" if line else "") + LAUNCH + "return out"
    assert_fires(make(forward, top=top), "SYSTEM-ACCESS")


def test_environment_write() -> None:
    source = make(top="import os\nos.environ['TRITON_INTERPRET'] = '0'  # <-\n")
    assert_fires(source, "SYSTEM-ACCESS")


# --------------------------------------------------------------------------------------------
# caching results
# --------------------------------------------------------------------------------------------


def test_result_cached_on_module() -> None:
    source = make(LAUNCH + "self.cached = out  # <-\nreturn out")
    assert_fires(source, "RESULT-CACHE")


def test_result_cached_in_a_dict() -> None:
    source = make(LAUNCH + "self.memo[x.shape] = out  # <-\nreturn out", init="self.memo = {}")
    assert_fires(source, "RESULT-CACHE")


def test_global_statement_in_forward() -> None:
    source = make("global LAST  # <-\n" + LAUNCH + "LAST = out\nreturn out", top="LAST = None\n")
    assert_fires(source, "RESULT-CACHE")


def test_memoised_helper() -> None:
    source = make(
        "return run(x)",
        top="import functools\n",
        bottom="""

        @functools.lru_cache(maxsize=None)  # <-
        def run(t):
            out = torch.empty_like(t)
            relu_kernel[(1,)](t, out, t.numel(), BLOCK=256)
            return out
        """,
    )
    assert_fires(source, "RESULT-CACHE")


def test_lazily_allocated_workspace_is_fine() -> None:
    source = make(
        """
        if self.buf is None or self.buf.shape != x.shape:
            self.buf = torch.empty_like(x)
        relu_kernel[(1,)](x, self.buf, x.numel(), BLOCK=256)
        return self.buf.clone()
        """,
        init="self.buf = None",
    )
    assert check_rules(source) == []


# --------------------------------------------------------------------------------------------
# Triton constraints
# --------------------------------------------------------------------------------------------


def test_arange_extent_not_power_of_two() -> None:
    kernel = KERNEL.replace("offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)", "offs = tl.program_id(0) * 100 + tl.arange(0, 100)  # <-")
    assert_fires(make(kernel=kernel), "TRITON-ARANGE-POW2")


def test_block_size_not_constexpr() -> None:
    kernel = KERNEL.replace("BLOCK: tl.constexpr", "BLOCK").replace(
        "offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)", "offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # <-")
    assert_fires(make(kernel=kernel), "TRITON-BLOCK-CONSTEXPR")


def test_block_size_launched_with_non_power_of_two() -> None:
    source = make(LAUNCH.replace("BLOCK=256)", "BLOCK=1000)  # <-") + "return out")
    assert_fires(source, "TRITON-BLOCK-POW2")


def test_block_size_from_module_constant() -> None:
    source = make(LAUNCH.replace("BLOCK=256)", "BLOCK=BLOCK_SIZE)  # <-") + "return out", top="BLOCK_SIZE = 384\n")
    assert_fires(source, "TRITON-BLOCK-POW2")


def test_num_warps_not_power_of_two() -> None:
    source = make(LAUNCH.replace("BLOCK=256)", "BLOCK=256, num_warps=6)  # <-") + "return out")
    assert_fires(source, "TRITON-NUM-WARPS")


def test_num_warps_too_large_in_autotune_config() -> None:
    kernel = (
        "\n@triton.autotune(configs=[triton.Config({'BLOCK': 128}, num_warps=64)], key=['n'])  # <-"
        + KERNEL.replace("\n@triton.jit", "\n@triton.jit", 1)
    )
    source = make(kernel=kernel, forward=LAUNCH.replace(", BLOCK=256", "") + "return out")
    assert_fires(source, "TRITON-NUM-WARPS")


def test_autotune_config_with_non_power_of_two_block() -> None:
    kernel = "\n@triton.autotune(configs=[triton.Config({'BLOCK': 96}, num_warps=4)], key=['n'])  # <-" + KERNEL
    source = make(kernel=kernel, forward=LAUNCH.replace(", BLOCK=256", "") + "return out")
    assert_fires(source, "TRITON-BLOCK-POW2")


@pytest.mark.parametrize("stages", [0, 12])
def test_num_stages_out_of_range(stages: int) -> None:
    source = make(LAUNCH.replace("BLOCK=256)", f"BLOCK=256, num_stages={stages})  # <-") + "return out")
    assert_fires(source, "TRITON-NUM-STAGES")


# --------------------------------------------------------------------------------------------
# the rule table and allowlists are coherent data
# --------------------------------------------------------------------------------------------


def test_rule_table_and_allowlists_are_consistent() -> None:
    assert all(rule in RULES for rule in FORBIDDEN_NAMES.values())
    assert not (ALLOWED_TENSOR_METHODS & TENSOR_COMPUTE_METHODS)
    assert {"sum", "matmul", "relu", "exp", "softmax", "copy_", "numpy"} <= TENSOR_COMPUTE_METHODS
    assert {"view", "reshape", "contiguous", "size", "stride", "to"} <= ALLOWED_TENSOR_METHODS
    assert "torch.empty_strided" in ALLOWED_TORCH_CALLS and "torch.matmul" not in ALLOWED_TORCH_CALLS
    assert "torch" in ALLOWED_IMPORTS and "os" not in ALLOWED_IMPORTS
    assert all(r == r.upper() and " " not in r for r in RULES)


def test_violations_are_sorted_by_line_and_deduplicated() -> None:
    source = make("y = torch.relu(x)\nz = torch.relu(x)\n" + LAUNCH + "return out", top="import os\n")
    violations = check_rules(source)
    lines = [v.line or 0 for v in violations]
    assert lines == sorted(lines)
    assert len({(v.rule, v.line, v.message) for v in violations}) == len(violations)


# --------------------------------------------------------------------------------------------
# hardening: cheats that dodge the plain patterns
# --------------------------------------------------------------------------------------------


def test_launched_kernel_that_writes_nothing() -> None:
    kernel = """
@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):  # <-
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
"""
    assert_fires(make(kernel=kernel), "TRITON-NO-STORE")


def test_kernel_storing_through_a_jit_helper_writes_memory() -> None:
    kernel = """
@triton.jit
def _write(ptr, offs, val, mask):
    tl.store(ptr + offs, val, mask=mask)


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    _write(out_ptr, offs, tl.maximum(x, 0.0), offs < n)
"""
    assert check_rules(make(kernel=kernel)) == []


@pytest.mark.parametrize("forward", [
    "if False:\n    relu_kernel[(1,)](x, x, x.numel(), BLOCK=256)\nreturn torch.empty_like(x)",
    "out = torch.empty_like(x)\nreturn out\nrelu_kernel[(1,)](x, out, x.numel(), BLOCK=256)",
])
def test_launch_in_dead_code_does_not_count(forward: str) -> None:
    source = make(forward).replace("def forward(self, x):", "def forward(self, x):  # <-")
    assert_fires(source, "TRITON-NOT-LAUNCHED")


@pytest.mark.parametrize("line", [
    "y = x.__mul__(2.0)  # <-",
    "y = getattr(x, 'sum')()  # <-",
    "act = torch.relu  # <-",
    "y = functools.reduce(operator.add, [x, x])  # <-",
    "out.data = x  # <-",
])
def test_disguised_pytorch_compute(line: str) -> None:
    forward = LAUNCH + line + "\nreturn out"
    assert_fires(make(forward, top="import functools\nimport operator\n"), "TORCH-COMPUTE")


def test_compute_inside_a_lambda_called_with_tensors() -> None:
    source = make("double = lambda t: t * 2.0  # <-\ny = double(x)\n" + LAUNCH + "return out")
    assert_fires(source, "TORCH-COMPUTE")


def test_compute_inside_a_nested_function() -> None:
    source = make("def inner(t):\n    return t.softmax(dim=-1)  # <-\ny = inner(x)\n" + LAUNCH + "return out")
    assert_fires(source, "TORCH-COMPUTE")


def test_grid_lambdas_are_not_compute() -> None:
    source = make(
        """
        out = torch.empty_like(x)
        n = x.numel()
        grid = lambda META: (n // META["BLOCK"] + 1,)
        relu_kernel[grid](x, out, n, BLOCK=256)
        return out
        """
    )
    assert check_rules(source) == []


@pytest.mark.parametrize("init,bottom", [
    ("self.register_forward_hook(lambda m, i, o: torch.relu(i[0]))  # <-", ""),
    ("self.forward = torch.relu  # <-", ""),
    ("", "\nModelNew = nn.ReLU  # <-\n"),
])
def test_changing_what_the_judge_calls(init: str, bottom: str) -> None:
    assert_fires(make(init=init, bottom=bottom), "MODELNEW-CALL")


def test_overriding_call() -> None:
    source = make().replace(
        "    def forward(self, x):",
        "    def __call__(self, x):  # <-\n        return torch.relu(x)\n\n    def forward(self, x):",
    )
    assert_fires(source, "MODELNEW-CALL")


def test_lazy_tensor_subclass_construction() -> None:
    source = make("y = torch.Tensor._make_subclass(torch.Tensor, x)  # <-\n" + LAUNCH + "return out")
    assert_fires(source, "INTROSPECTION")


def test_result_cached_in_a_module_level_dict() -> None:
    source = make(
        """
        key = tuple(x.shape)
        if key in _CACHE:
            return _CACHE[key]
        out = torch.empty_like(x)
        relu_kernel[(1,)](x, out, x.numel(), BLOCK=256)
        _CACHE[key] = out  # <-
        return out
        """,
        top="_CACHE = {}\n",
    )
    assert_fires(source, "RESULT-CACHE")


@pytest.mark.parametrize("forward", [
    "relu_kernel[(1,)](x, x, x.numel(), BLOCK=256)  # <-\nreturn x",
    "flat = x.contiguous().view(-1)\nrelu_kernel[(1,)](flat, flat, flat.numel(), BLOCK=256)  # <-\nreturn x",
    "return _inplace(x)",
])
def test_kernel_writing_into_an_input(forward: str) -> None:
    source = make(forward, bottom="""

        def _inplace(t):
            relu_kernel[(1,)](t, t, t.numel(), BLOCK=256)  # <-
            return t
        """)
    assert_fires(source, "INPUT-MUTATION")


def test_reading_an_input_and_writing_a_fresh_output_is_fine() -> None:
    source = make("x = x.contiguous()\nout = torch.empty_like(x)\nrelu_kernel[(1,)](x, out, x.numel(), BLOCK=256)\nreturn out")
    assert check_rules(source) == []


@pytest.mark.parametrize("forward,top", [
    (LAUNCH + "y = torch.tensor([max(v, 0.0) for v in x.flatten().tolist()])  # <-\nreturn out", ""),
    (LAUNCH + "y = operator.methodcaller('relu')(x)  # <-\nreturn out", "import operator\n"),
])
def test_host_or_higher_order_compute(forward: str, top: str) -> None:
    assert_fires(make(forward, top=top), "TORCH-COMPUTE")


@pytest.mark.parametrize("forward,args", [
    (LAUNCH + "ModelNew.last = out  # <-\nreturn out", "x"),
    (LAUNCH + "_cache[x.shape] = out\nreturn out", "x, _cache={}  # <-"),
])
def test_result_cached_on_class_or_default(forward: str, args: str) -> None:
    source = make(forward, args=args)
    if "# <-" in args:  # the marker sits on the def line
        source = source.replace("_cache={}  # <-):", "_cache={}):  # <-")
    assert_fires(source, "RESULT-CACHE")


@pytest.mark.parametrize("source", ["", "   \n", "# just a comment\n", "\x00", "(" * 3000 + ")" * 3000,
                                    "class ModelNew: pass", "ModelNew = 1", "def f(:\n"])
def test_weird_sources_give_violations_not_exceptions(source: str) -> None:
    violations = check_rules(source)
    assert violations and all(v.rule in RULES for v in violations)


def test_returning_an_unwritten_allocation() -> None:
    # KernelBench's result-reuse cheat: the caching allocator may hand back memory that still
    # holds the reference's output
    source = make(
        """
        scratch = torch.empty_like(x)
        relu_kernel[(1,)](x, scratch, x.numel(), BLOCK=256)
        out = torch.empty_like(x)  # <-
        return out
        """
    )
    assert_fires(source, "OUTPUT-UNWRITTEN")


STACKED = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * alpha, mask=mask)


class Block(nn.Module):
    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        out = torch.empty_like(x)
        scale_kernel[(triton.cdiv(x.numel(), 256),)](x, out, x.numel(), self.alpha, BLOCK=256)
        return out


def make_blocks(n):
    return nn.ModuleList([Block(0.5 + i) for i in range(n)])


class ModelNew(nn.Module):
    def __init__(self, depth):
        super().__init__()
        self.blocks = make_blocks(depth)

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x
'''


def test_submodules_in_a_module_list_are_followed() -> None:
    assert check_rules(STACKED) == []
    cheat = STACKED.replace("        return out\n", "        return out.tanh()  # <-\n")
    assert_fires(cheat, "TORCH-COMPUTE")


def test_launch_options_bound_to_a_local_literal() -> None:
    source = make("nw = 12\nout = torch.empty_like(x)\nrelu_kernel[(1,)](x, out, x.numel(), BLOCK=256, num_warps=nw)  # <-\nreturn out")
    assert_fires(source, "TRITON-NUM-WARPS")
    source = make("B = 100\nout = torch.empty_like(x)\nrelu_kernel[(1,)](x, out, x.numel(), BLOCK=B)  # <-\nreturn out")
    assert_fires(source, "TRITON-BLOCK-POW2")


def test_every_rule_has_a_test_that_fires_it() -> None:
    """A new rule id must come with a test in this file that fires it (assert_fires(..., "ID"))."""
    import re
    from pathlib import Path

    text = Path(__file__).read_text()
    fired = set(re.findall(r'assert_fires\([^\n]*"([A-Z0-9-]+)"\)', text))
    missing = sorted(set(RULES) - fired)
    assert not missing, f"rules without a firing test: {missing}"


@pytest.mark.parametrize("forward", [
    LAUNCH + "vals = [x[i].item() * 2.0 for i in range(x.shape[0])]  # <-\nreturn torch.tensor(vals)",
    LAUNCH + "acc = []\nfor i in range(x.shape[0]):\n    acc.append(float(x[i]) ** 2)  # <-\nreturn torch.tensor(acc)",
])
def test_element_by_element_host_compute(forward: str) -> None:
    assert_fires(make(forward), "TORCH-COMPUTE")


def test_per_slice_launches_with_scalar_arguments_are_fine() -> None:
    source = make(
        """
        out = torch.empty_like(x)
        for b in range(x.shape[0]):
            n = int(x[b].numel())
            relu_kernel[(triton.cdiv(n, 256),)](x[b], out[b], n, BLOCK=256)
        return out
        """
    )
    assert check_rules(source) == []


def test_launch_with_an_empty_grid_runs_nothing() -> None:
    source = make("out = torch.empty_like(x)\nrelu_kernel[(0,)](x, out, x.numel(), BLOCK=256)  # <-\nreturn out")
    assert_fires(source, "TRITON-NOT-LAUNCHED")


def test_an_authors_main_block_is_not_judged() -> None:
    harness = """

        if __name__ == "__main__":
            import time
            torch.manual_seed(0)
            m = ModelNew()
            x = torch.randn(1024)
            t0 = time.time()
            print(torch.allclose(m(x), torch.relu(x)), time.time() - t0)
        """
    assert check_rules(make(bottom=harness)) == []
    # ... unless the candidate makes it run
    assert_fires(make(top="__name__ = '__main__'  # <-\n", bottom=harness), "MONKEYPATCH")
