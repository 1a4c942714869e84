"""The teacher's implicit-GEMM convolutions (distillation/conv_kernels.py): one Triton kernel per
convolution (per sub-pixel phase for a transposed one) with channel counts as arguments, instead
of an im2col buffer + matmul (the validated convolutions of the twenty-sixth and twenty-seventh GPU
runs ran at 0.02-0.6x torch.compile that way).

Checked on the CPU: the ops against torch's own convolutions under the Triton interpreter
(strides, padding, dilation, groups, output_padding, 1-D to 3-D, phases no tap reaches), and a
cpu-triton capture of real-shaped problems through convert and the CPU judge, odd-size trial
included: the candidate carries the kernel and takes every size from its inputs and weights."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from inductor_helpers import capture_on_cpu, convert_all

pytest.importorskip("torch")

DIRECT = [  # input, weight, stride, padding, dilation, groups (< 32 input channels a group: one (tap, channel) axis)
    ((2, 16, 9), (32, 16, 3), [1], [1], [1], 1),
    ((1, 64, 6, 7), (32, 64, 3, 3), [1, 2], [1, 0], [2, 1], 1),  # 64 a group: per-tap channel blocks
    ((1, 3, 6, 7, 8), (16, 3, 3, 3, 3), [1, 1, 1], [1, 1, 1], [1, 1, 1], 1),  # a first layer's 3 channels
    ((2, 16, 7, 9), (32, 16, 3, 5), [2, 1], [1, 2], [1, 2], 1),
    ((1, 32, 7, 8), (32, 8, 3, 3), [1, 1], [0, 0], [1, 1], 4),
    ((1, 16, 4, 5, 6), (17, 16, 3, 2, 3), [1, 2, 1], [1, 0, 1], [1, 1, 1], 1),
]


@pytest.mark.parametrize("case", range(len(DIRECT)))
def test_direct_convolution_matches_torch(interpreted, case):
    shape, expected_shape, err = interpreted["direct"][case]
    assert shape == expected_shape and err < 1e-4, (DIRECT[case], err)


TRANSPOSED = [  # input, weight, stride, padding, output_padding, groups, dilation
    ((2, 16, 9), (16, 32, 3), [2], [1], [1], 1, [1]),
    ((1, 64, 5, 6), (64, 16, 3, 3), [2, 2], [1, 1], [1, 0], 2, [1, 1]),  # 32 a group: per-tap channel blocks
    ((2, 16, 5, 6), (16, 16, 3, 5), [1, 1], [0, 0], [0, 0], 1, [1, 1]),
    # stride 2 with dilation 2: odd output rows are reached by no tap (bias only)
    ((1, 32, 5, 4), (32, 8, 3, 4), [2, 3], [1, 2], [1, 0], 2, [2, 1]),
    ((1, 16, 5, 4), (16, 16, 1, 1), [3, 3], [0, 0], [0, 0], 1, [1, 1]),
    ((1, 16, 3, 4, 5), (16, 16, 3, 3, 3), [2, 2, 2], [1, 1, 1], [0, 1, 0], 1, [1, 1, 1]),
]


@pytest.mark.parametrize("case", range(len(TRANSPOSED)))
@pytest.mark.parametrize("with_bias", [True, False])
def test_transposed_convolution_matches_torch(interpreted, case, with_bias):
    shape, expected_shape, err = interpreted["transposed"][f"{case}-{with_bias}"]
    assert shape == expected_shape and err < 1e-4, (TRANSPOSED[case], with_bias, err)


_CHECK = """
import json, sys
import torch
import torch.nn.functional as F
from autotriton.validation.triton_compat import apply_interpreter_fixes
apply_interpreter_fixes()
from autotriton.distillation.conv_kernels import conv_ops
conv, conv_transpose = conv_ops()
cases = json.loads(sys.argv[1])
out = {"direct": [], "transposed": {}}
for i, (xs, ws, stride, padding, dilation, groups) in enumerate(cases["direct"]):
    torch.manual_seed(i)
    x, w, b = torch.randn(xs), torch.randn(ws), torch.randn(ws[0])
    expected = getattr(F, f"conv{len(xs) - 2}d")(x, w, b, stride, padding, dilation, groups)
    actual = conv(x, w, b, stride, padding, dilation, groups)
    out["direct"].append([list(actual.shape), list(expected.shape), (actual - expected).abs().max().item()])
for i, (xs, ws, stride, padding, opad, groups, dilation) in enumerate(cases["transposed"]):
    for with_bias in (True, False):
        torch.manual_seed(i)
        x, w = torch.randn(xs), torch.randn(ws)
        b = torch.randn(ws[1] * groups) if with_bias else None
        expected = getattr(F, f"conv_transpose{len(xs) - 2}d")(x, w, b, stride, padding, opad, groups, dilation)
        actual = conv_transpose(x, w, b, stride, padding, opad, groups, dilation)
        out["transposed"][f"{i}-{with_bias}"] = [list(actual.shape), list(expected.shape),
                                                  (actual - expected).abs().max().item()]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def interpreted():
    """Every case above run once by the Triton interpreter (the judge's CPU mode) in a process of
    its own, TRITON_INTERPRET set before triton is imported, as the judge's workers do (in a
    process that imported triton first, tl.zeros and friends stay compiled-only functions):
    per case (shape, torch's shape, max abs error)."""
    import json
    import subprocess
    import sys

    cases = json.dumps({"direct": DIRECT, "transposed": TRANSPOSED})
    done = subprocess.run([sys.executable, "-c", _CHECK, cases], capture_output=True, text=True, timeout=900,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_depthwise_sized_products_are_left_to_the_reduction():
    from autotriton.distillation.conv_kernels import implicit_gemm_applies

    assert implicit_gemm_applies(16, 32, 1) and implicit_gemm_applies(3, 16, 9)
    assert not implicit_gemm_applies(1, 1, 9)  # depthwise: one input and one output channel per group
    assert not implicit_gemm_applies(3, 16, 3)  # 9 reduced values: no tensor-core tile


TRANSPOSED_PROBLEM = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size, stride=stride,
                                                 padding=padding, output_padding=output_padding)

    def forward(self, x):
        return torch.relu(self.conv_transpose(x))

def get_inputs():
    return [torch.randn(2, 32, 9, 7)]

def get_init_inputs():
    return [32, 32, (3, 4), (2, 1), (1, 2), (1, 0)]
'''

DILATED_1D_PROBLEM = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, dilation=2)

    def forward(self, x):
        return self.conv(x) * 2.0

def get_inputs():
    return [torch.randn(2, 16, 30)]

def get_init_inputs():
    return [16, 32, 3]
'''


def test_captured_convolutions_become_one_kernel_each_and_pass_the_judge(tmp_path: Path):
    """Inductor writes the op's kernel into its output code (a user-defined kernel, one variable
    per specialisation); the converter carries it with its own launch config, the transposed
    convolution's two phases as two launches into one output; no im2col, no matmul; the CPU judge
    (interpreter, two trials, the odd-size trial included) finds them correct."""
    from inductor_helpers import assert_cpu_judge_passes

    problems = {"convt": TRANSPOSED_PROBLEM, "conv1d_dilated": DILATED_1D_PROBLEM}
    captured = capture_on_cpu(problems, tmp_path, "igemm")
    for name, capture in captured.items():
        assert capture["attempts"][0].get("implicit_gemm") is True, name
    converted = convert_all(captured, problems)
    launches = {n: [line for line in r.code.splitlines() if "_kernel[" in line] for n, r in converted.items()}
    # stride (2, 1): two phases, two launches of one kernel (Inductor wrote it twice, one per specialisation)
    assert [line.split("[")[0].strip() for line in launches["convt"] if "conv_implicit_gemm" in line] == \
        ["conv_implicit_gemm_kernel", "conv_implicit_gemm_kernel"]
    assert converted["convt"].code.count("def conv_implicit_gemm") == 1
    assert sum("conv_implicit_gemm" in line for line in launches["conv1d_dilated"]) == 1
    for name, result in converted.items():
        assert "extern_kernels" not in result.code and "unfold" not in result.code, name
        assert "num_warps=4, num_stages=3" in result.code, name  # the op's own launch config
    assert_cpu_judge_passes(problems, converted)


def test_only_launched_kernels_that_differ_by_name_alone_are_merged():
    """Two launched kernels with one body become one definition launched twice; helpers the
    kernels call by name stay, even when their bodies match (renaming a launch would not reach them)."""
    from autotriton.distillation.inductor_convert import _merge_identical_kernels

    body = "    tl.store(p, tl.load(q))\n"
    srcs = [f"@triton.jit\ndef {n}(p, q):\n{body}" for n in ("copy_kernel", "copy_1_kernel", "_helper_a", "_helper_b")]
    forward = "copy_kernel[(1,)](a, b)\ncopy_1_kernel[(1,)](c, d)"
    merged = _merge_identical_kernels(srcs, forward)
    assert merged == "copy_kernel[(1,)](a, b)\ncopy_kernel[(1,)](c, d)"
    assert [s.split("def ")[1].split("(")[0] for s in srcs] == ["copy_kernel", "_helper_a", "_helper_b"]


def test_convolutions_reached_from_the_aten_decomposition_table_keep_gathers_and_matmul(monkeypatch):
    """A convolution the module calls as `torch.conv_transpose2d` (not through torch.nn.functional)
    reaches the teacher's aten decomposition table, where an op would stay an opaque call the
    converter refuses: there the rewrite is gathers + matmul even inside implicit_gemm_convolutions,
    phases included; through F the op is used."""
    import torch

    from autotriton.distillation import conv_kernels, inductor_decompose as dec

    calls = []

    def counting(*args, **kwargs):
        calls.append(args)
        raise RuntimeError("the implicit-GEMM op was called")

    monkeypatch.setattr(conv_kernels, "conv_ops", lambda: (counting, counting))
    table = dec.convolution_decompositions()[torch.ops.aten.convolution.default]
    x, w = torch.randn(1, 32, 5, 6), torch.randn(32, 16, 3, 3)
    expected = torch.conv_transpose2d(x, w, None, 2, 1, 1)
    with dec.implicit_gemm_convolutions():
        out = table(x, w, None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1)
        assert calls == []
        torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-4)
        with pytest.raises(RuntimeError, match="implicit-GEMM op was called"):
            torch.nn.functional.conv_transpose2d(x, w, None, 2, 1, 1)  # through F: the op
    assert len(calls) == 1
