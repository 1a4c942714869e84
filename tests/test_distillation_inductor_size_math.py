"""Size arithmetic in Inductor's call(): `math.ceil`, `math.trunc`, `torch.sym_float`, ... (issue:
an H200 run of the teacher over package problems lost 3 to `unsupported_call`, e.g.
`buf0 = reinterpret_tensor(buf2, (math.ceil((-0.5 + torch.sym_float(s53)) / 1.0), ...), ..., 0)`).

Inductor prints sizes that come from float arithmetic on symbolic ints (`torch.arange(0.5, h)`,
`int(n * ratio)`) with `math.*` and SymInt-safe torch functions. The converter now lets them through
as plain Python on ints (`float(s0)`, `math.sqrt(...)`) and imports math for them: the judge's rules
count a torch call in forward as PyTorch compute, and a forward that used `math` without importing
it failed with a NameError. The problems below have those shapes (written here, no package code);
each is captured on the CPU (cpu-triton dry run), converted, and judged by the CPU judge.
"""

from __future__ import annotations

import ast

import pytest

from inductor_helpers import assert_cpu_judge_passes, capture_on_cpu, convert_all

# vit-style sin-cos position embedding whose grid comes from the input's shape (arange of floats:
# its length is math.ceil((h - 0.5) / 1.0) in call())
SINCOS = '''import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim, temperature=10000.0):
        super().__init__()
        self.temperature = temperature
        self.norm = nn.GroupNorm(4, dim)

    def forward(self, img):
        x = self.norm(img)
        b, d, h, w = x.shape
        y, xx = torch.meshgrid(torch.arange(0.5, h), torch.arange(0.5, w), indexing="ij")
        omega = torch.arange(d // 4) / (d // 4 - 1)
        omega = torch.exp(-math.log(self.temperature) * omega)
        y = y.flatten()[:, None] * omega[None, :]
        xx = xx.flatten()[:, None] * omega[None, :]
        pe = torch.cat((xx.sin(), xx.cos(), y.sin(), y.cos()), dim=1)
        return x.flatten(2).transpose(1, 2) + pe


def get_inputs():
    return [torch.randn(2, 16, 6, 8)]


def get_init_inputs():
    return [16]
'''

# a sequence cropped to a float fraction of its length (math.trunc(0.75 * torch.sym_float(s)))
CROP = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim, ratio=0.75):
        super().__init__()
        self.ratio = ratio
        self.gain = nn.Parameter(torch.linspace(0.5, 1.5, dim)[:, None])

    def forward(self, x):
        keep = int(x.shape[-1] * self.ratio)
        x = x[..., :keep] * self.gain
        return F.max_pool1d(x, 3, stride=2, ceil_mode=True)


def get_inputs():
    return [torch.randn(2, 4, 13)]


def get_init_inputs():
    return [4]
'''

PROBLEMS = {"sincos": SINCOS, "crop": CROP}


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> dict[str, dict]:
    return capture_on_cpu(PROBLEMS, tmp_path_factory.mktemp("size_math"), "size")


def _call_body(capture: dict) -> str:
    attempt = capture["attempts"][0]
    return attempt["output_code"].split("def call", 1)[1].split("def get_args", 1)[0]


def test_call_holds_size_arithmetic_with_math_and_sym_float(captured):
    """What the converter refused: the captures really have these statements in call()."""
    assert "math.ceil(" in _call_body(captured["sincos"]) and "torch.sym_float(" in _call_body(captured["sincos"])
    assert "math.trunc(" in _call_body(captured["crop"]) and "torch.sym_float(" in _call_body(captured["crop"])


@pytest.fixture(scope="module")
def converted(captured) -> dict:
    return convert_all(captured, PROBLEMS)


def test_size_arithmetic_becomes_plain_python_with_math_imported(converted):
    from autotriton.validation import static_rules

    for name, result in converted.items():
        code = result.code
        tree = ast.parse(code)
        assert "import math" in {ast.unparse(n) for n in tree.body if isinstance(n, ast.Import)}, name
        forward = code[code.index("    def forward"):]
        assert "torch.sym_float" not in code and "float(" in forward and "math." in forward, name
        assert [f"{v.rule}: {v.message}" for v in static_rules(code)] == [], name
    assert code.count("import math") == 1


def test_size_arithmetic_candidates_pass_the_cpu_judge(converted):
    assert_cpu_judge_passes(PROBLEMS, converted)


@pytest.mark.parametrize("printed, plain", [
    ("math.sqrt(torch.sym_float(s0))", "math.sqrt(float(s0))"),
    ("1.0 / torch._sym_sqrt(torch.sym_float(s0))", "1.0 / math.sqrt(float(s0))"),
    ("torch.sym_max(s0, torch.sym_int(torch.sym_float(s1) * 0.5))", "max(s0, int(float(s1) * 0.5))"),
])
def test_sym_functions_become_their_python_equivalents(printed, plain):
    """Inductor's SymInt-safe spellings (its printer's ToFloat / sqrt) as plain Python on ints,
    which the judge's rules accept: a `torch.*` call in forward is PyTorch compute to them."""
    from autotriton.distillation.inductor_forward import _only_shape_calls, _SizeMathRewriter

    assert _only_shape_calls(ast.parse(printed, mode="eval").body)
    assert ast.unparse(_SizeMathRewriter().visit(ast.parse(printed, mode="eval"))) == plain


def test_the_rules_stay_strict_for_math_on_tensors_and_unimported_math():
    """What the converter emits passes; math on a tensor, torch.sym_float left in, and `math`
    used without an import (what failed with a NameError) are still flagged."""
    from autotriton.validation import static_rules

    template = '''import torch
import torch.nn as nn
import triton
import triton.language as tl
{imports}


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, scale, XBLOCK: tl.constexpr):
    offs = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * scale, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x_dim0 = x.shape[0]
        n = max(1, math.ceil((-0.5 + float(x_dim0)) / 1.0), math.trunc(0.75 * float(x_dim0)))
        scale = {scale}
        y = torch.empty_strided((x_dim0,), (1,), dtype=torch.float32, device=x.device)
        scale_kernel[((n + 127) // 128,)](x, y, n, scale, XBLOCK=128)
        return y
'''

    def rules(imports: str, scale: str) -> list[str]:
        return [v.rule for v in static_rules(template.format(imports=imports, scale=scale))]

    assert rules("import math", "1.0 / math.sqrt(float(x_dim0))") == []
    assert rules("import math", "math.floor(math.sqrt(x_dim0))") == []
    assert "TORCH-COMPUTE" in rules("import math", "math.sqrt(x)")  # a tensor
    assert "TORCH-COMPUTE" in rules("import math", "math.sqrt(torch.sym_float(x_dim0))")
    assert "TORCH-COMPUTE" in rules("", "math.sqrt(float(x_dim0))")  # `math` is not the module here
