"""Forward sizes that do not depend on the input's rank (issue 17 item 5: the eighth H200 run's SFT
model unpacked `x.shape[0..3]` of two-dimensional inputs in 29 of its 41 answers that ran, copying
pairs that named every dimension of a four-dimensional input). An output allocated with all of an
input's dimensions is `torch.empty(x.shape, ...)`, a count of all its elements `x.numel()`; each
problem below is captured on the CPU (cpu-triton dry run), converted and judged by the CPU judge."""

from __future__ import annotations

import ast

import pytest

from inductor_helpers import assert_cpu_judge_passes, capture_on_cpu, convert_all

HEAD = "import torch\nimport torch.nn as nn\n\n\n"

POINTWISE_2D = HEAD + '''class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.relu(x * self.scale + 1.0)


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return [0.5]
'''

POINTWISE_4D_TWO_INPUTS = HEAD + '''class Model(nn.Module):
    def forward(self, x, y):
        return torch.sigmoid(x) * y


def get_inputs():
    return [torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8)]


def get_init_inputs():
    return []
'''

SOFTMAX_ROWS = HEAD + '''class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1) * 2.0


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
'''

PROBLEMS = {"pointwise2d": POINTWISE_2D, "pointwise4d": POINTWISE_4D_TWO_INPUTS, "softmax": SOFTMAX_ROWS}


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> dict:
    return convert_all(capture_on_cpu(PROBLEMS, tmp_path_factory.mktemp("rank_generic"), "rank"), PROBLEMS)


def _forward(code: str) -> str:
    return code[code.index("    def forward"):]


def test_pointwise_forwards_name_no_dimension(converted):
    for name in ("pointwise2d", "pointwise4d"):
        forward = _forward(converted[name].code)
        assert "_dim" not in forward and ".shape[" not in forward, forward
        assert "torch.empty(x.shape" in forward and "x.numel()" in forward, forward


def test_a_row_reduction_allocates_like_its_input_and_keeps_the_sizes_its_kernel_needs(converted):
    forward = _forward(converted["softmax"].code)
    assert "torch.empty(x.shape" in forward and "torch.empty_strided" not in forward, forward
    assert "x_dim1 = x.shape[1]" in forward, forward  # the row length is the reduction's extent


def test_rank_generic_candidates_pass_the_cpu_judge(converted):
    assert_cpu_judge_passes(PROBLEMS, converted)


def test_only_contiguous_allocations_of_every_dimension_are_rewritten():
    from autotriton.distillation.inductor_forward import _rank_generic_sizes

    fn = ast.parse('''def forward(self, x):
    x_dim0 = x.shape[0]
    x_dim1 = x.shape[1]
    a = torch.empty_strided((x_dim0, x_dim1), (x_dim1, 1), dtype=torch.float32, device=x.device)
    b = torch.empty_strided((x_dim0, x_dim1), (1, x_dim0), dtype=torch.float32, device=x.device)
    c = torch.empty_strided((x_dim1,), (1,), dtype=torch.float32, device=x.device)
    n = (x_dim1 * x_dim0 + 511) // 512
    return a, b, c, n
''').body[0]
    _rank_generic_sizes(fn, {"x": 2})
    lines = [ast.unparse(s) for s in fn.body]
    assert lines[2] == "a = torch.empty(x.shape, dtype=torch.float32, device=x.device)"
    assert lines[3].startswith("b = torch.empty_strided((x_dim0, x_dim1), (1, x_dim0)")  # transposed: kept
    assert lines[4].startswith("c = torch.empty_strided((x_dim1,)")
    assert lines[5] == "n = (x.numel() + 511) // 512"
    assert lines[:2] == ["x_dim0 = x.shape[0]", "x_dim1 = x.shape[1]"]  # still used by b and c
