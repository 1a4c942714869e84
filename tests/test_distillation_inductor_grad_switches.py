"""Gradient switches in a forward do not cost the capture: `t.requires_grad = False` breaks Dynamo's
graph (setattr on requires_grad) although it changes no value under no_grad; deformable-attention's
sampling-grid helper does exactly that. The capture runs the problem without those switches; the
ModelNew made from it must still be correct against the untouched reference."""

from __future__ import annotations

import ast

from autotriton.distillation.inductor_capture import _inference_source
from inductor_helpers import assert_cpu_judge_passes, capture_on_cpu, convert_all

GRID = '''
import torch
import torch.nn as nn


def sampling_grid(h, w, device):
    ys, xs = torch.meshgrid(torch.arange(h, device=device), torch.arange(w, device=device), indexing="ij")
    grid = torch.stack((ys, xs), dim=0).float()
    grid.requires_grad = False
    return grid


class Model(nn.Module):
    """Offsets added to a pixel grid, scaled by features (a deformable sampler's first step)."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        grid = sampling_grid(x.shape[2], x.shape[3], x.device)
        offsets = torch.tanh(x[:, :2]).requires_grad_(False) * self.scale
        return (grid.unsqueeze(0) + offsets) * x[:, 2:4]


batch = 2
height = 8
width = 8


def get_inputs():
    return [torch.randn(batch, 4, height, width)]


def get_init_inputs():
    return [0.5]
'''


def test_switching_gradients_off_is_left_out_only_for_the_capture():
    out = _inference_source(GRID)
    assert "requires_grad" not in out
    assert "torch.tanh(x[:, :2]) * self.scale" in ast.unparse(ast.parse(out))
    kept = "p = nn.Parameter(w, requires_grad=False)\nz.requires_grad = True\nz.requires_grad_(True)\n"
    assert _inference_source(kept) == kept  # parameters' flags and switching gradients ON stay
    assert _inference_source("import torch\n") == "import torch\n"


def test_a_forward_that_switches_gradients_off_is_captured_whole_and_judged_correct(tmp_path):
    problems = {"grid_offsets": GRID}
    captured = capture_on_cpu(problems, tmp_path, "gradswitch")
    attempt = captured["grid_offsets"]["attempts"][0]
    assert attempt["ok"] and len(attempt["graphs"]) == 1, attempt.get("error")
    converted = convert_all(captured, problems)
    assert "requires_grad" not in converted["grid_offsets"].code
    assert_cpu_judge_passes(problems, converted)
