"""The elementwise teacher writes the kernel a person would: forward's statements, in order, in Triton.

Each test judges what the teacher wrote with the CPU judge (interpreter), as distillation does.
"""

from __future__ import annotations

import ast

import pytest

from autotriton.distillation import DistillConfig, distill
from autotriton.distillation.elementwise_teacher import ElementwiseTeacher, NotElementwise, translate
from autotriton.distillation.teachers import make_teacher
from autotriton.harvesting.synthetic import generate_problems
from autotriton.records import Problem

# A module in the shape harvested code has: an activation layer, a LayerScale-like gain on the
# last axis, a scalar attribute, two inputs, a tensor method, the tanh GELU, a square, a clamp.
GATED = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A gated residual with a learned gain."""

    def __init__(self, dim, offset=0.5):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(dim) * 0.1)
        self.act = nn.LeakyReLU(0.2)
        self.drop = nn.Dropout(0.1)
        self.offset = offset

    def forward(self, x, y):
        h = self.act(x * self.gamma + y)
        h = self.drop(h.sigmoid()) * F.gelu(y, approximate="tanh")
        return torch.clamp(h ** 2 - self.offset, min=-1.0)


batch = 4
seq = 8
dim = 16


def get_inputs():
    return [torch.randn(batch, seq, dim), torch.randn(batch, seq, dim)]


def get_init_inputs():
    return [dim]
'''

SOFTMAX = '''\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
'''

LAYER_NORM = SOFTMAX.replace("super().__init__()", "super().__init__()\n        self.norm = nn.LayerNorm(16)").replace(
    "torch.softmax(x, dim=1)", "self.norm(x)")


# BatchNorm in eval mode is per-channel arithmetic: on a (B, C, L) input, one without affine parameters.
BATCH_NORMS = '''\
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm1d(channels, eps=1e-3)
        self.plain = nn.BatchNorm1d(channels, affine=False)

    def forward(self, x):
        x = torch.relu(self.bn(x))
        return self.plain(x) * 2


def get_inputs():
    return [torch.randn(4, 12, 10)]


def get_init_inputs():
    return [12]
'''


@pytest.fixture(scope="module")
def pool():
    from autotriton.validation import JudgePool, ValidationConfig

    with JudgePool(ValidationConfig(device="cpu", trials=2, workers=1, timeout_s=120.0)) as judge:
        yield judge


def _kernel_body(code: str) -> list[str]:
    tree = ast.parse(code)
    kernel = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    return [ast.unparse(s) for s in kernel.body]


def test_the_kernel_repeats_forwards_statements_in_order(pool):
    (chain, source), = [g for g in generate_problems(40, 0, family="elementwise")
                        if "residual = x" in g[1] and "self.bias1" in g[1]][:1]
    code = translate(source)
    body = _kernel_body(code)
    forward = [ast.unparse(s) for s in next(n for n in ast.walk(ast.parse(source))
                                            if isinstance(n, ast.FunctionDef) and n.name == "forward").body]
    # Every statement of forward has its line in the kernel, in forward's order and names.
    assignments = [line.split(" = ")[0] for line in forward if not line.startswith("return")]
    computed = [line.split(" = ")[0] for line in body
                if " = " in line and "tl.load(" not in line and not line.startswith(("pid", "offsets", "mask"))]
    assert computed == assignments
    assert "residual = x" in body and "x = x + residual" in body and "x = x + bias1" in body
    assert body[-1] == "tl.store(out_ptr + offsets, x, mask=mask)"
    (verdict,) = pool.validate_many([(source, code)])
    assert verdict.status == "correct" and verdict.rule_ok, (verdict.error, verdict.violations)


def test_harvested_shapes_layers_gains_scalars_and_two_inputs_are_translated_and_correct(pool):
    code = translate(GATED)
    body = _kernel_body(code)
    assert "gamma = tl.load(gamma_ptr + offsets % gamma_size, mask=mask)" in body  # a gain on the last axis
    assert any(line.startswith("h = tl.where(") for line in body)  # nn.LeakyReLU(0.2), from __init__
    kernel = next(n for n in ast.parse(code).body if isinstance(n, ast.FunctionDef))
    assert "offset" in [a.arg for a in kernel.args.args]  # the scalar attribute is a kernel argument
    (verdict,) = pool.validate_many([(GATED, code)])
    assert verdict.status == "correct" and verdict.rule_ok, (verdict.error, verdict.violations)


def test_temporaries_never_take_a_name_forward_uses(pool):
    source = SOFTMAX.replace("return torch.softmax(x, dim=1)",
                             "t1 = x * 2\n        y = torch.nn.functional.mish(t1 + x)\n        return y + t1")
    body = _kernel_body(translate(source))
    assert "t1 = x * 2.0" in body and "t2 = t1 + x" in body  # mish's operand bound to a fresh name
    (verdict,) = pool.validate_many([(source, translate(source))])
    assert verdict.status == "correct" and verdict.rule_ok, (verdict.error, verdict.violations)


def test_batch_norms_in_eval_mode_are_per_channel_arithmetic(pool):
    code = translate(BATCH_NORMS)
    body = _kernel_body(code)
    assert "bn_mean = tl.load(bn_mean_ptr + offsets // inner % channels, mask=mask)" in body
    assert any("tl.sqrt(bn_var + 0.001) * bn_weight + bn_bias" in line for line in body)
    assert not any("plain_weight" in line for line in body)  # affine=False: statistics only
    (verdict,) = pool.validate_many([(BATCH_NORMS, code)])
    assert verdict.status == "correct" and verdict.rule_ok, (verdict.error, verdict.violations)


INSIDE = SOFTMAX.replace("torch.softmax(x, dim=1)", "torch.softmax(x, dim=1) * 2")


@pytest.mark.parametrize("source, why", [
    (INSIDE, "inside an expression"), (SOFTMAX.replace("(x, dim=1)", "(x, dim=1, dtype=torch.float64)"), "other than dim"),
    (LAYER_NORM.replace("self.norm(x)", "self.norm(x) + self.norm.weight.sum()"), "`self.norm\\(x\\)` inside an expression"),
    (BATCH_NORMS.replace("affine=False", "track_running_stats=False"), "batch statistics"),
    (SOFTMAX.replace("return torch.softmax(x, dim=1)", "y = y + x\n        return y"), "`y` is not a tensor forward has computed"),
])
def test_what_is_not_elementwise_is_refused_with_the_reason(source, why):
    with pytest.raises(NotElementwise, match=why):
        translate(source)


def test_distill_with_the_elementwise_teacher_gives_described_pairs_and_records_what_it_skipped(pool):
    teacher = make_teacher(DistillConfig(teacher="elementwise"))
    assert isinstance(teacher, ElementwiseTeacher)
    problems = [Problem(reference_source=src, name=f"ew{i}") for i, (_, src) in enumerate(generate_problems(4, 3, family="elementwise"))]
    problems.append(Problem(reference_source=INSIDE, name="inside"))
    result = distill(problems, teacher, DistillConfig(teacher="elementwise", describe_trace=False, rounds=0), judge=pool)
    assert len(result.pairs) == 4
    for problem, cand, verdict in result.pairs:
        assert cand.generator == "elementwise" and verdict.status == "correct"
        assert "Plan: 1 Triton kernel." in cand.reasoning and cand.instruction
    (rejection,) = result.rejections
    assert rejection["subject"] == problems[-1].key and rejection["reason"] == "not_elementwise"
    assert "inside an expression" in rejection["detail"]
