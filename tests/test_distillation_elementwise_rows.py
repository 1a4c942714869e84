"""Row operations in the elementwise teacher: softmax, keepdim reductions and norm layers, one
program per row, the statements around them in the same kernel; a change of row (another axis,
or after a reduction) starts the next kernel on the tensor the one before stored.

Every translation is judged by the CPU judge (interpreter), as distillation does.
"""

from __future__ import annotations

import ast

import pytest

from autotriton.distillation.elementwise_teacher import NotElementwise, translate


def _problem(init: str, forward: str, shape: str = "4, 6, 5, 3", init_inputs: str = "[6]") -> str:
    return f'''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(channels, 1, 1) * 0.1)
{init}

    def forward(self, x):
{forward}


def get_inputs():
    return [torch.randn({shape})]


def get_init_inputs():
    return {init_inputs}
'''


# softmax along the channels of a (B, C, H, W) tensor, a bias before it and an activation after:
# one kernel whose rows are C values H*W apart
CHANNEL_SOFTMAX = _problem("", "        x = x + self.bias\n        x = torch.softmax(x, dim=1)\n        x = F.gelu(x)\n"
                               "        return x * 2")
# GroupNorm (rows: a group of channels and the axes after them), then a sum over the channels
# (rows: along axis 1), then a log: three kernels
GROUP_NORM_SUM = _problem("        self.norm = nn.GroupNorm(3, channels)",
                          "        x = self.norm(x + self.bias)\n        x = torch.sum(x, dim=1, keepdim=True)\n"
                          "        x = torch.log(x * x + 1)\n        return x")
LAYER_NORM_LSE = _problem("        self.norm = nn.LayerNorm([5, 3], eps=1e-4)",
                          "        y = torch.tanh(x)\n        y = self.norm(y)\n        return torch.logsumexp(y, dim=-1, keepdim=True)")
INSTANCE_NORM = _problem("        self.norm = nn.InstanceNorm2d(channels, affine=True)",
                         "        h = self.norm(x)\n        h = h.amax(dim=3, keepdim=True)\n        return h.log_softmax(dim=2)")
SOFTMAX_LAYER = _problem("        self.softmax = nn.Softmax(dim=-1)", "        x = self.softmax(x * 3)\n        return x - self.bias")
# a mean that leaves its axis out, then a softmax and a maximum along the last axis of the rank-2 result (one row kernel)
DROPPED_AXIS = _problem("", "        x = torch.mean(x * 2, dim=1)\n        x = x.softmax(dim=-1)\n        return torch.amax(x, 1)",
                        shape="4, 6, 7")
# global average pooling over (H, W), kept as 1 x 1, then a per-channel bias and a softmax over the channels
SPATIAL_MEAN = _problem("", "        x = x.mean(dim=(2, 3), keepdim=True)\n        x = x + self.bias\n        return torch.softmax(x, dim=1)")
# pooling: a max pool after a bias (two kernels: the bias, then the windows), an average pool
# with padding and stride as the first statement, statements after it in its kernel
MAX_POOL = _problem("        self.pool = nn.MaxPool2d(kernel_size=2)",
                    "        x = x + self.bias\n        x = self.pool(x)\n        return torch.relu(x) * 2", shape="2, 6, 7, 9")
AVG_POOL = _problem("        self.pool = nn.AvgPool2d(3, stride=2, padding=1)",
                    "        y = self.pool(x)\n        y = y - self.bias\n        return y.softmax(dim=1)", shape="2, 6, 8, 5")
LAST_AXIS_MEAN = _problem("", "        x = torch.relu(x)\n        return torch.mean(x, dim=2, keepdim=True)", shape="4, 6, 37")


@pytest.fixture(scope="module")
def pool():
    from autotriton.validation import JudgePool, ValidationConfig

    with JudgePool(ValidationConfig(device="cpu", trials=2, workers=1, timeout_s=120.0)) as judge:
        yield judge


def _kernels(code: str) -> list[ast.FunctionDef]:
    return [n for n in ast.parse(code).body if isinstance(n, ast.FunctionDef)]


def test_a_softmax_between_elementwise_statements_is_one_row_kernel(pool):
    code = translate(CHANNEL_SOFTMAX)
    (kernel,) = _kernels(code)
    body = [ast.unparse(s) for s in kernel.body]
    assert "offsets = row // col_stride * n_cols * col_stride + row % col_stride + cols * col_stride" in body
    assert body.index("x = x + bias") < body.index("x = exps / tl.sum(exps, axis=0)") < body.index(
        next(line for line in body if line.startswith("x = 0.5 * x")))
    assert "col_stride = x.shape[2] * x.shape[3]" in code and "n_cols = x.shape[1]" in code
    (verdict,) = pool.validate_many([(CHANNEL_SOFTMAX, code)])
    assert verdict.status == "correct" and verdict.rule_ok, (verdict.error, verdict.violations)


@pytest.mark.parametrize("source, kernels", [(GROUP_NORM_SUM, 3), (LAYER_NORM_LSE, 2), (INSTANCE_NORM, 3), (LAST_AXIS_MEAN, 1), (SOFTMAX_LAYER, 1), (DROPPED_AXIS, 2), (SPATIAL_MEAN, 2),
                                           (MAX_POOL, 2), (AVG_POOL, 2)])
def test_norms_and_keepdim_reductions_chain_kernels_where_the_row_changes(pool, source, kernels):
    """GroupNorm's rows (a group of channels, the axes after) differ from the sum's (axis 1): the
    sum reads the normalised tensor the first kernel stored, and its one value per row is what the
    log reads. Rows of 37 values (not a power of two) leave the block's last lanes out."""
    code = translate(source)
    assert len(_kernels(code)) == kernels, code
    (verdict,) = pool.validate_many([(source, code)])
    assert verdict.status == "correct" and verdict.rule_ok, (verdict.error, verdict.violations)


def test_norm_parameters_load_per_channel_or_over_the_normalised_axes():
    group = translate(GROUP_NORM_SUM)
    assert "norm_weight = tl.load(norm_weight_ptr + offsets // inner % channels, mask=mask)" in [
        ast.unparse(s) for s in _kernels(group)[0].body]
    assert "n_cols = x.numel() // (x.shape[0] * self.norm.num_groups)" in group
    layer = translate(LAYER_NORM_LSE)
    assert "norm_weight = tl.load(norm_weight_ptr + offsets % norm_weight_size, mask=mask)" in [
        ast.unparse(s) for s in _kernels(layer)[0].body]
    assert "tl.sqrt(var + 0.0001)" in layer and "n_cols = x.shape[2] * x.shape[3]" in layer


@pytest.mark.parametrize("forward, why", [
    ("        y = self.norm(x)\n        z = torch.sum(y, dim=1, keepdim=True)\n        return z + y", "`y` is not a tensor"),
    ("        return torch.softmax(x, dim=4)", "dim must be literal axes"),
    ("        return torch.sum(x, dim=(1, 3))", "not adjacent"),
    ("        return torch.softmax(x, dim=1, dtype=torch.float64)", "arguments other than dim"),
    ("        return self.norm(x, 2)", "more than its input"),
])
def test_what_the_rows_cannot_carry_is_refused_with_the_reason(forward, why):
    """Only the tensor a kernel stores crosses to the next: `y` from before the sum is gone."""
    with pytest.raises(NotElementwise, match=why):
        translate(_problem("        self.norm = nn.GroupNorm(3, channels)", forward))


def test_the_plan_says_which_kernel_computes_which_operation():
    """The pair's reasoning names each kernel's own operations: the sum kernel's tl.sum and its
    index arithmetic's `+` made it claim the group norm kernel's add and the other way round."""
    from autotriton.describe import describe_problem

    _, reasoning = describe_problem(GROUP_NORM_SUM, translate(GROUP_NORM_SUM))
    plan = [line for line in reasoning.splitlines() if line[:3] in ("1. ", "2. ", "3. ")]
    assert plan[0].startswith("1. `add_group_norm_kernel` computes add + group_norm fused in one pass;"), plan
    assert plan[1].startswith("2. `sum_kernel` computes sum;"), plan
    assert plan[2].startswith("3. `mul_add_log_kernel` computes add + mul + log fused in one pass;"), plan
