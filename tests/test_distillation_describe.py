"""describe_problem: deterministic instruction and reasoning from the problem and the candidate."""

from __future__ import annotations

import json

from autotriton.distillation.describe import analyze_candidate, analyze_problem, describe_problem

from distillation_helpers import RELU_KERNEL

LINEAR_GELU = '''import torch
import torch.nn as nn
import torch.nn.functional as F

batch = 8
in_features = 64
out_features = 2 * 16


class Model(nn.Module):
    """Linear, then GELU, then a scaled residual."""

    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        y = F.gelu(self.fc(x))
        return y * self.scale + y


def get_inputs():
    return [torch.randn(batch, in_features)]


def get_init_inputs():
    return [in_features, out_features, 0.5]
'''

FUSED_CANDIDATE = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_gelu_kernel(x_ptr, w_ptr, b_ptr, y_ptr, M, N, K, scale,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        rk = k + tl.arange(0, BLOCK_K)
        a = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc += tl.dot(a, w)
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    y = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    y = y * scale + y
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], y, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        M, K = x.shape
        N = self.fc.weight.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=torch.float32)
        grid = (triton.cdiv(M, 16), triton.cdiv(N, 32))
        linear_gelu_kernel[grid](x, self.fc.weight, self.fc.bias, y, M, N, K, self.scale, BLOCK_M=16, BLOCK_N=32, BLOCK_K=32)
        return y
'''


def test_problem_analysis_finds_ops_layers_shapes_and_init_inputs():
    p = analyze_problem(LINEAR_GELU)
    assert p.ops == ["linear", "gelu", "mul", "add"]
    assert p.layers == [("fc", "Linear", "in_features, out_features")]
    assert p.inputs == [{"name": "x", "shape": [8, 64], "dtype": "float32", "factory": "randn"}]
    assert p.init_inputs == [64, 32, 0.5] and p.forward_args == ["x"]


def test_candidate_analysis_finds_kernels_features_and_launches():
    [k] = analyze_candidate(FUSED_CANDIDATE).kernels
    assert k.name == "linear_gelu_kernel" and k.dots == 1 and k.loads == 3 and k.stores == 1 and k.loops == 1
    assert k.constexprs == ["BLOCK_M", "BLOCK_N", "BLOCK_K"] and "erf" in k.math
    [launch] = k.launches
    assert launch["grid"] == "(triton.cdiv(M, 16), triton.cdiv(N, 32))"
    assert launch["constexprs"] == {"BLOCK_M": "16", "BLOCK_N": "32", "BLOCK_K": "32"}
    assert launch["args"][:4] == [("x_ptr", "x"), ("w_ptr", "self.fc.weight"), ("b_ptr", "self.fc.bias"), ("y_ptr", "y")]
    assert k.loaded == {"x_ptr", "w_ptr", "b_ptr"} and k.stored == {"y_ptr"}  # sizes (M, K) and scale are no pointers


def test_description_with_candidate_explains_fusion_grid_and_blocks():
    instruction, reasoning = describe_problem(LINEAR_GELU, FUSED_CANDIDATE)
    assert "linear, gelu, mul, add" in instruction and "[8, 64]" in instruction and "ModelNew" in instruction
    assert "linear -> gelu -> mul -> add" in reasoning
    assert "`linear_gelu_kernel` computes linear + gelu + mul + add fused in one pass" in reasoning
    assert "tl.dot" in reasoning and "BLOCK_M=16" in reasoning and "self.fc = Linear(in_features, out_features)" in reasoning
    assert describe_problem(LINEAR_GELU, FUSED_CANDIDATE) == (instruction, reasoning)  # deterministic


def test_description_without_candidate_gives_a_plan():
    _, reasoning = describe_problem(LINEAR_GELU)
    assert "Plan:" in reasoning and "tl.dot" in reasoning and "gelu" in reasoning


def test_multi_kernel_candidate_says_which_op_went_where():
    two = RELU_KERNEL.replace("relu_kernel", "first_kernel") + "\n\n" + '''
@triton.jit
def row_sum_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + row, tl.sum(x, axis=0))
'''
    problem = LINEAR_GELU.replace("return y * self.scale + y", "return torch.sum(torch.relu(y), dim=1)")
    _, reasoning = describe_problem(problem, two)
    assert "`first_kernel` computes relu" in reasoning and "`row_sum_kernel` computes sum" in reasoning


def test_every_kernelbench_level1_problem_gets_a_description(kernelbench_l1):
    for line in kernelbench_l1.read_text().splitlines():
        row = json.loads(line)
        instruction, reasoning = describe_problem(row["source"])
        assert "ModelNew" in instruction and "Plan:" in reasoning, row["name"]
        assert "(no recognised torch operations)" not in reasoning, row["name"]


def test_unparsable_sources_do_not_raise():
    instruction, reasoning = describe_problem("class Model(:\n", "def broken(:\n")
    assert "ModelNew" in instruction and reasoning


def test_meta_trace_in_a_child_process_adds_aten_ops_and_output_shapes(monkeypatch):
    from autotriton.distillation.trace import trace_problems

    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    nosy = LINEAR_GELU.replace("def get_inputs():", "import os\n\n\ndef get_inputs():\n    assert 'OPENAI_API_KEY' not in os.environ, 'key leaked'\n")
    broken = LINEAR_GELU.replace("return y * self.scale + y", "return y.nonexistent_method()")
    exits = "import os\nos._exit(3)\n"
    hangs = "while True:\n    pass\n"
    traced, failed, exited, hung, again = trace_problems([nosy, broken, exits, hangs, nosy], timeout_s=5)
    assert failed is None and exited is None and hung is None  # untraceable problems just get no trace
    assert again == traced  # each problem runs in its own fork: the ones before cannot disturb it
    assert traced["outputs"] == [{"shape": [8, 32], "dtype": "float32"}]
    assert "addmm" in traced["aten_ops"] and "gelu" in traced["aten_ops"]
    instruction, reasoning = describe_problem(LINEAR_GELU, FUSED_CANDIDATE, traced)
    assert "returns [8, 32] float32" in instruction and "aten.addmm -> aten.gelu" in reasoning


def test_inductor_template_tile_sizes_inside_the_kernel_are_reported():
    template = FUSED_CANDIDATE.replace(
        "                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):\n",
        "                       ):\n    BLOCK_M: tl.constexpr = 16\n    BLOCK_N: tl.constexpr = 32\n    BLOCK_K: tl.constexpr = 32\n",
    ).replace(", BLOCK_M=16, BLOCK_N=32, BLOCK_K=32)", ")")
    [k] = analyze_candidate(template).kernels
    assert k.fixed == {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32} and k.constexprs == []
    assert "fixed tile sizes BLOCK_M=16, BLOCK_N=32, BLOCK_K=32" in describe_problem(LINEAR_GELU, template)[1]


def _size_line(reasoning: str) -> str:
    return next(line for line in reasoning.splitlines() if line.startswith("ModelNew.forward reads"))


def test_plan_states_the_sizes_forward_reads_and_each_inputs_rank_before_the_kernels():
    """A small model trained on 4-D problems wrote `x.shape[2]` for 2-D inputs (RESULTS.md eleventh
    run), and later wrote the size line right after its kernels and then read `x.shape[2]` anyway
    (thirteenth run): the plan states first which sizes ModelNew.forward reads, into which names,
    and how many dimensions each input has; the kernel lines follow."""
    reasoning = describe_problem(LINEAR_GELU, FUSED_CANDIDATE)[1]
    lines = reasoning.splitlines()
    assert _size_line(reasoning) == "ModelNew.forward reads x.shape (x is 2-D: [8, 64])."
    assert lines.index(_size_line(reasoning)) + 1 == next(i for i, line in enumerate(lines) if line.startswith("Plan: "))
    four_d = LINEAR_GELU.replace("torch.randn(batch, in_features)", "torch.randn(batch, 3, 5, in_features)")
    indexed = FUSED_CANDIDATE.replace("M, K = x.shape", "M = x.shape[0] * x.size(1) * x.shape[-2]\n        K = x.shape[3]")
    assert _size_line(describe_problem(four_d, indexed)[1]) == \
        "ModelNew.forward reads x.shape[0], x.shape[1], x.shape[-2], K = x.shape[3] (x is 4-D: [8, 3, 5, 64])."
    # the module's own weight sizes are not forward's arguments; a variable index is shown as such
    assert "weight" not in _size_line(describe_problem(four_d, indexed)[1])
    dynamic = FUSED_CANDIDATE.replace("M, K = x.shape", "d = 0\n        M = x.shape[d]\n        K = x.size(1)")
    assert _size_line(describe_problem(LINEAR_GELU, dynamic)[1]) == \
        "ModelNew.forward reads x.shape[...], K = x.shape[1] (x is 2-D: [8, 64])."


INDUCTOR_STYLE = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def combine(a, b):
    return a + b


@triton.jit
def add_relu_kernel(in_out_ptr0, in_ptr0, ks0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex % ks0
    ptrs = in_ptr0 + x0
    tmp0 = tl.load(in_out_ptr0 + xindex, xmask)
    tmp1 = tl.load(ptrs, xmask)
    tmp2 = tl.reduce(tmp0, 0, combine)
    tl.store(in_out_ptr0 + xindex, tl.maximum(tmp0 + tmp1 + tmp2, 0.0), xmask)


class ModelNew(nn.Module):
    def forward(self, x, bias):
        buf0 = x.clone()
        xnumel = x.numel()
        add_relu_kernel[(xnumel + 1023) // 1024,](buf0, bias, x.shape[1], xnumel, XBLOCK=1024, num_warps=4)
        return buf0
'''


def test_plan_binds_each_launch_argument_to_its_parameter_and_says_what_the_kernel_does_through_it():
    """A small model passed inputs where kernels store and launch arguments in the wrong order
    (RESULTS.md twelfth run): the plan names every argument at its parameter, pointers marked read
    or written, and lists jit helpers apart from the kernels ModelNew launches."""
    problem = LINEAR_GELU.replace("def forward(self, x):", "def forward(self, x, bias):")
    kernels = {k.name: k for k in analyze_candidate(INDUCTOR_STYLE).kernels}
    k = kernels["add_relu_kernel"]
    assert k.loaded == {"in_out_ptr0", "in_ptr0"} and k.stored == {"in_out_ptr0"}  # through the alias `ptrs` too
    reasoning = describe_problem(problem, INDUCTOR_STYLE)[1]
    assert "Plan: 1 Triton kernel." in reasoning
    assert "Helper @triton.jit functions the kernels call: `combine`." in reasoning
    assert ("launched on grid ((xnumel + 1023) // 1024,) with in_out_ptr0=buf0 (read and written), in_ptr0=bias (read), "
            "ks0=x.shape[1], xnumel=xnumel, XBLOCK=1024.") in reasoning
    assert "num_warps" not in reasoning and "`combine` with" not in reasoning


def test_a_kernel_named_after_an_op_is_planned_as_computing_it():
    """Inductor names kernels after the ops they fuse; an op without a recognisable feature in
    the kernel body (group_norm: loads, stores and a where) is still credited to the kernel
    whose name spells it, whole words only (`logsumexp_relu_kernel` does not compute exp)."""
    from autotriton.describe import _names_op
    assert _names_op("mul_native_group_norm_kernel", "group_norm")
    assert not _names_op("logsumexp_relu_reduce_kernel", "exp")
    assert _names_op("logsumexp_relu_reduce_kernel", "logsumexp")


def test_a_short_forward_is_quoted_statement_by_statement_with_its_constants():
    """The plan quotes a short forward as written (operands and constants: `x * 1.5`), after the
    op list and before the kernels; a forward with a loop, or longer than the limits, is not quoted."""
    _, reasoning = describe_problem(LINEAR_GELU, RELU_KERNEL)
    lines = reasoning.splitlines()
    assert lines[1] == "Statement by statement: `y = F.gelu(self.fc(x))`; `return y * self.scale + y`."
    assert lines.index(lines[1]) < next(i for i, line in enumerate(lines) if line.startswith("Plan:"))

    scaled = LINEAR_GELU.replace("        y = F.gelu(self.fc(x))\n", "        y = F.gelu(self.fc(x))\n        y = y * 1.5\n")
    assert analyze_problem(scaled).statements == ["y = F.gelu(self.fc(x))", "y = y * 1.5", "return y * self.scale + y"]

    looped = LINEAR_GELU.replace("        y = F.gelu(self.fc(x))\n",
                                 "        y = F.gelu(self.fc(x))\n        for _ in range(2):\n            y = y + 1\n")
    assert analyze_problem(looped).statements == []
    assert "Statement by statement" not in describe_problem(looped)[1]

    long_forward = LINEAR_GELU.replace("        y = F.gelu(self.fc(x))\n", "        y = F.gelu(self.fc(x))\n" + "        y = y + 1\n" * 12)
    assert analyze_problem(long_forward).statements == []


def test_a_short_forward_is_also_given_as_the_one_expression_it_returns():
    """After the statements, the plan gives the returned value with forward's assignments substituted
    (`residual = x; x = x + residual` is `torch.sigmoid(x) + torch.sigmoid(x)`): the sixteenth H200 run's
    model copied the statements and stored `tl.sigmoid(x)` alone. Not given where nothing is substituted
    or a statement is not a plain assignment."""
    residual = LINEAR_GELU.replace("        y = F.gelu(self.fc(x))\n        return y * self.scale + y\n",
                                   "        x = torch.sigmoid(x)\n        residual = x\n        x = x + residual\n"
                                   "        x *= 1.5\n        return x\n")
    assert residual != LINEAR_GELU
    assert analyze_problem(residual).returns == "(torch.sigmoid(x) + torch.sigmoid(x)) * 1.5"
    lines = describe_problem(residual, RELU_KERNEL)[1].splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Statement by statement:"))
    assert lines[at + 1] == "Substituted, forward returns `(torch.sigmoid(x) + torch.sigmoid(x)) * 1.5`."
    assert analyze_problem(LINEAR_GELU).returns == "F.gelu(self.fc(x)) * self.scale + F.gelu(self.fc(x))"
    unpacked = residual.replace("        residual = x\n", "        residual, _ = x, None\n")
    assert analyze_problem(unpacked).returns == ""
