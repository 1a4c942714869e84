"""The probe's shape solver: input sizes a module's forward accepts, found on symbolic shapes, and
the harvest that tries them when the error message alone does not say which input size to change."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from autotriton.harvesting import HarvestConfig, harvest_local
from autotriton.validation.config import ValidationConfig
from autotriton.validation.shape_solver import solve_input_shapes


class ProjectThenConvolve(nn.Module):
    """Linear over the features, a convolution over time, then a learned table of 11 positions."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(96, 32)
        self.conv = nn.Conv1d(32, 64, 3, padding=1)
        self.table = nn.Parameter(torch.zeros(64, 11))

    def forward(self, x):
        return self.conv(self.proj(x).transpose(1, 2)) + self.table


class GroupedGate(nn.Module):
    """A grouped convolution of one input (valid padding) gating the second."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(12, 24, 3, groups=3)

    def forward(self, x, gate):
        return self.conv(x) * gate


class Rows(nn.Module):
    def forward(self, x):
        return x.reshape(-1, 2048).softmax(-1)


class Checked(nn.Module):
    def forward(self, x, scale):
        if x.shape[-1] != 48:
            raise ValueError(f"expected 48 features, got {x.shape[-1]}")
        return x * scale


class Keyed(nn.Module):
    def forward(self, x):
        return {"a": x}["b"]


@pytest.mark.parametrize("module, inputs", [
    (ProjectThenConvolve(), [torch.randn(2, 8, 16)]),
    (GroupedGate(), [torch.randn(2, 8, 16, 16), torch.randn(2, 8, 16, 16)]),
    (Rows(), [torch.randn(2, 8, 16)]),
    (Checked(), [torch.randn(2, 8), 3.0]),
])
def test_the_solved_shapes_make_the_real_module_run(module, inputs):
    with pytest.raises(Exception):
        module(*inputs)
    shapes = solve_input_shapes(lambda: module, inputs)
    assert shapes is not None and len(shapes) == len(inputs)
    resized = [torch.randn(s) if s is not None else x for x, s in zip(inputs, shapes)]
    # ranks kept, the batch size left alone, non-tensor inputs untouched
    assert all(s is None or (len(s) == x.dim() and s[0] == x.shape[0]) for x, s in zip(inputs, shapes))
    assert all(s is not None for x, s in zip(inputs, shapes) if isinstance(x, torch.Tensor))
    module(*resized)  # runs for real


def test_the_sizes_are_those_forward_implies():
    # features to the Linear's width, time to the table's length
    assert solve_input_shapes(ProjectThenConvolve, [torch.randn(2, 8, 16)]) == [[2, 11, 96]]
    # the valid convolution takes 2 off each spatial size: the gate is 2 smaller than x
    x, gate = solve_input_shapes(GroupedGate, [torch.randn(2, 8, 16, 16), torch.randn(2, 8, 16, 16)])
    assert x[1] == 12 and gate[1] == 24 and [x[2] - 2, x[3] - 2] == gate[2:]
    # rows of 2048: the total a multiple of it, one size moved
    (rows,) = solve_input_shapes(Rows, [torch.randn(2, 8, 16)])
    assert (rows[0] * rows[1] * rows[2]) % 2048 == 0 and sum(a != b for a, b in zip(rows, [2, 8, 16])) == 1


def test_nothing_is_proposed_when_sizes_are_not_what_failed_or_forward_already_runs():
    assert solve_input_shapes(Keyed, [torch.randn(2, 8)]) is None
    assert solve_input_shapes(Rows, [torch.randn(4, 2048)]) is None
    assert solve_input_shapes(Rows, [3.0]) is None


HEADER = "# SPDX-License-Identifier: MIT\nimport torch\nimport torch.nn as nn\n\n"

# Sizes the error message does not name: the valid convolution shortens time by 4, so the broadcast
# says "tensor a (N - 4) must match tensor b (60)", a size no input has; the table's 60 positions
# mean an input of 64 steps.
POSITIONAL = '''
class ConvTokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 16, 5)
        self.positions = nn.Parameter(torch.randn(16, 60))

    def forward(self, x):
        return self.conv(x) + self.positions
'''


def test_a_module_whose_error_names_no_input_size_becomes_runnable_through_the_solver(tmp_path):
    (tmp_path / "tokens.py").write_text(HEADER + POSITIONAL)
    solved = harvest_local(tmp_path, HarvestConfig(incremental=False))
    (problem,) = solved.problems
    assert (problem.status, problem.reject_reason) == ("runnable", None), solved.details
    assert problem.input_spec[0]["shape"][1:] == [4, 64]
    # the solver off: the same module is rejected (what the error message says is not enough)
    off = harvest_local(tmp_path, HarvestConfig(incremental=False), validation_config=ValidationConfig(probe_solve_s=0))
    assert off.problems[0].status == "rejected" and off.problems[0].reject_reason == "no_working_inputs"


class Tabular(nn.Module):
    """A dict of features (pytorch-tabular's shape): one embedding per categorical column, asserted."""

    def __init__(self):
        super().__init__()
        self.embeddings = nn.ModuleList(nn.Embedding(10, 4) for _ in range(3))
        self.head = nn.Linear(3 * 4 + 5, 1)

    def forward(self, x):
        categorical, continuous = x["categorical"], x["continuous"]
        assert categorical.shape[1] == len(self.embeddings), "one column per embedding"
        embedded = [emb(categorical[:, i]) for i, emb in enumerate(self.embeddings)]
        return self.head(torch.cat([*embedded, continuous], dim=1))


class Pair(nn.Module):
    def forward(self, xs):
        return xs[0] @ xs[1]


def test_tensors_inside_a_dict_or_a_list_are_resized_too():
    features = {"categorical": torch.randint(0, 10, (2, 8)), "continuous": torch.randn(2, 8)}
    assert solve_input_shapes(Tabular, [features]) == [{"dict": {"categorical": [2, 3], "continuous": [2, 5]}}]
    ((a, b),) = [entry["list"] for entry in solve_input_shapes(Pair, [[torch.randn(4, 8), torch.randn(6, 3)]])]
    assert a[1] == b[0] and (a[0], b[1]) == (4, 3)  # one inner size moved to the other


def test_the_harvester_writes_the_solved_sizes_into_the_attempt_keeping_each_inputs_form():
    from autotriton.harvesting.input_repair import solved_attempt
    from autotriton.harvesting.synthesis import Attempt

    attempt = Attempt(["4"], [{"kind": "int", "value": 4}],
                      ["torch.randn(2, 8)", "{'ids': torch.randint(0, 7, (2, 8)), 'mask': torch.ones(2, 8)}", "3"],
                      [{"kind": "tensor", "shape": [2, 8], "dtype": "float32"},
                       {"kind": "tensor_dict", "items": {"ids": {"kind": "tensor", "shape": [2, 8], "dtype": "int64", "high": 7},
                                                         "mask": {"kind": "tensor", "shape": [2, 8], "dtype": "float32"}}},
                       {"kind": "int", "value": 3}], label="D=32 option 0")
    solved = solved_attempt(attempt, [[2, 16], {"dict": {"ids": [2, 5], "mask": [2, 5]}}, None])
    assert solved.input_code == ["torch.randn(2, 16)", "{'ids': torch.randint(0, 7, (2, 5)), 'mask': torch.ones(2, 5)}", "3"]
    assert solved.input_spec[1]["items"]["ids"] == {"kind": "tensor", "shape": [2, 5], "dtype": "int64", "high": 7}
    assert solved.init_code == ["4"] and solved.label.endswith("solved")
    # the same sizes, another rank, or a shape for a non-tensor: no attempt
    assert solved_attempt(attempt, [[2, 8], None, None]) is None
    assert solved_attempt(attempt, [[2, 8, 1], None, [3]]) is None


class Properties:
    """Keys held by another object (schnetpack's `properties.Z`): no string literal in forward."""
    Z = "_atomic_numbers"
    weight = "_weights"


class AtomEnergy(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(100, 16)
        self.out = nn.Linear(16, 1)

    def forward(self, inputs):
        return self.out(self.embedding(inputs[Properties.Z]) * inputs[Properties.weight].unsqueeze(-1))


def test_keys_a_dict_input_lacks_are_added_and_inputs_used_as_indices_become_integers():
    solved = solve_input_shapes(AtomEnergy, [{"x": torch.randn(2, 8)}])
    assert solved == [{"dict": {"x": [2, 8], "_atomic_numbers": {"shape": [2, 8], "dtype": "int64"}, "_weights": [2, 8]}}]

    from autotriton.harvesting.input_repair import solved_attempt
    from autotriton.harvesting.synthesis import Attempt

    attempt = Attempt([], [], ["{'x': torch.randn(2, 8)}"],
                      [{"kind": "tensor_dict", "items": {"x": {"kind": "tensor", "shape": [2, 8], "dtype": "float32"}}}])
    (code,) = solved_attempt(attempt, solved).input_code
    assert code == "{'x': torch.randn(2, 8), '_atomic_numbers': torch.randint(0, 2, (2, 8)), '_weights': torch.randn(2, 8)}"
    AtomEnergy()(eval(code))  # the real module runs on it


class Decoder(nn.Module):
    """Unpacks a 3-axis input (TemporalFusionDecoder's `bs, t, h_size = x.shape`)."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 4)

    def forward(self, x):
        bs, t, h = x.shape
        return self.proj(x).reshape(bs, t * 4)


def test_an_input_with_an_axis_too_many_loses_one_then_its_sizes_are_solved():
    (shape,) = solve_input_shapes(Decoder, [torch.randn(2, 8, 8, 32)])
    assert len(shape) == 3 and shape[0] == 2 and shape[-1] == 16
    Decoder()(torch.randn(shape))


class Widened(nn.Module):
    """Two projections whose sizes only agree when `hidden == dim` (the module's own sizes clash)."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        return self.out(torch.relu(self.up(x)))


class Skip(nn.Module):
    """A U-Net decoder stage (unetUp's shape): upsample to `out_ch`, concatenate the skip, then a
    convolution built for `in_ch` channels; the skip can only fill the gap when in_ch > out_ch."""

    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_ch, out_ch, 2, stride=2)
        self.conv = nn.Conv2d(in_ch, out_ch, 3, padding=1)

    def forward(self, x, skip):
        return self.conv(torch.cat([self.up(x), skip], 1))


@pytest.mark.parametrize("cls, init, inputs", [
    (Widened, [32, 64], [torch.randn(2, 32)]),
    (Skip, [16, 24], [torch.randn(2, 16, 4, 4), torch.randn(2, 16, 8, 8)]),
])
def test_constructor_sizes_that_clash_are_moved_until_forward_runs(cls, init, inputs):
    from autotriton.validation.shape_solver import solve_sizes

    with pytest.raises(RuntimeError):
        cls(*init)(*inputs)
    # no input size can help: the input search alone finds nothing that runs
    assert solve_input_shapes(lambda: cls(*init), inputs) is None
    with pytest.raises(RuntimeError) as err:
        cls(*init)(*inputs)
    solved = solve_sizes(lambda args: cls(*args), init, inputs, error=str(err.value))
    assert solved is not None and len(solved["init"]) == len(init)
    args = [a if s is None else s for a, s in zip(init, solved["init"])]
    assert args != init  # a constructor argument moved
    shapes = solved["inputs"] or [list(x.shape) for x in inputs]
    cls(*args)(*[torch.randn(s if s is not None else list(x.shape)) for x, s in zip(inputs, shapes)])  # runs for real


class MeanShifted(nn.Module):
    """RCAN's shape: an RGB mean subtracted before the first convolution and added after the
    last, so both `num_in_ch` and `num_out_ch` must be 3; only the error of the variant with
    `num_in_ch` moved (at `x + self.mean`) says what `num_out_ch` must be."""

    def __init__(self, num_in_ch, num_out_ch, num_feat=16):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.4, 0.45, 0.4]).view(1, 3, 1, 1))
        self.conv_first = nn.Conv2d(num_in_ch, num_feat, 3, padding=1)
        self.body = nn.Sequential(*[nn.Conv2d(num_feat, num_feat, 3, padding=1) for _ in range(4)])
        self.conv_last = nn.Conv2d(num_feat, num_out_ch, 3, padding=1)

    def forward(self, x):
        x = x - self.mean
        return self.conv_last(self.body(self.conv_first(x))) + self.mean


def test_the_second_constructor_move_tries_first_what_the_furthest_variants_error_names():
    from autotriton.validation.shape_solver import solve_sizes

    with pytest.raises(RuntimeError) as err:
        MeanShifted(32, 32)(torch.randn(2, 32, 8, 8))
    builds: list[list[int]] = []
    solved = solve_sizes(lambda args: builds.append(list(args)) or MeanShifted(*args), [32, 32],
                         [torch.randn(2, 32, 8, 8)], error=str(err.value), budget_s=60)
    assert solved == {"inputs": [[2, 3, 8, 8]], "init": [3, 3]}
    # num_in_ch moved to 3 got furthest; "(32) must match ... (3)" at the mean's addition then
    # gives num_out_ch its value before any halving or doubling of it is built
    second = [b for b in builds if b[0] == 3 and b[1] != 32]
    assert second and second[0] == [3, 3]
    MeanShifted(3, 3)(torch.randn(2, 3, 8, 8))


def test_constructor_arguments_are_left_alone_when_the_inputs_suffice():
    from autotriton.validation.shape_solver import solve_sizes

    solved = solve_sizes(lambda args: ProjectThenConvolve(), [], [torch.randn(2, 8, 16)])
    assert solved == {"inputs": [[2, 11, 96]], "init": []}
    assert solve_sizes(lambda args: Widened(*args), [32, 32], [torch.randn(2, 32)]) is None  # already runs


UNET_UP = '''
class Up(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, out_channels, 2, stride=2)
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x, skip):
        return self.conv(torch.cat([self.up(x), skip], 1))
'''


def test_a_decoder_stage_whose_guessed_channels_clash_is_harvested_with_moved_constructor_sizes(tmp_path):
    # the guess gives both channel counts one size: the concatenation then has more channels than the
    # convolution takes, whatever the skip brings; only a larger in_channels fits
    (tmp_path / "up.py").write_text(HEADER + UNET_UP)
    solved = harvest_local(tmp_path, HarvestConfig(incremental=False))
    (problem,) = solved.problems
    assert (problem.status, problem.reject_reason) == ("runnable", None), solved.details
    in_ch, out_ch = (spec["value"] for spec in problem.init_spec)
    assert in_ch > out_ch and problem.input_spec[1]["shape"][1] == in_ch - out_ch
    assert f"return [{in_ch}, {out_ch}]" in problem.reference_source
    # without the solver the guesses' own repair gets there too since 35aa256: the convolution met more
    # channels than any input has, so the constructor width it was built with grows to them
    off = harvest_local(tmp_path, HarvestConfig(incremental=False),
                        validation_config=ValidationConfig(probe_solve_init=False))
    assert off.problems[0].status == "runnable", off.details
    in_ch, out_ch = (spec["value"] for spec in off.problems[0].init_spec)
    assert in_ch > out_ch and off.problems[0].input_spec[1]["shape"][1] == in_ch - out_ch


class AtariTorso(nn.Module):
    """DQN's network for 84 x 84 frames (labml-nn's rl/dqn Model): three valid convolutions, then a
    linear layer over a flattened 7 x 7 x 64 map."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 32, 8, stride=4)
        self.conv2 = nn.Conv2d(32, 64, 4, stride=2)
        self.conv3 = nn.Conv2d(64, 64, 3)
        self.lin = nn.Linear(7 * 7 * 64, 512)

    def forward(self, obs):
        h = torch.relu(self.conv3(torch.relu(self.conv2(torch.relu(self.conv1(obs))))))
        return self.lin(h.reshape((-1, 7 * 7 * 64)))


class DigitNet(nn.Module):
    """LeNet for 28 x 28 digits (labml-nn's MNIST models): `view(-1, 4 * 4 * 50)` after two
    convolutions and poolings."""

    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 20, 5), nn.Conv2d(20, 50, 5)
        self.fc = nn.Linear(4 * 4 * 50, 10)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
        return self.fc(x.view(-1, 4 * 4 * 50))


@pytest.mark.parametrize("module, guess, side", [(AtariTorso, [2, 4, 32, 32], 84), (DigitNet, [2, 1, 8, 8], 28),
                                                 (DigitNet, [2, 1, 32, 32], 31)])
def test_a_network_built_for_one_resolution_gets_a_square_input_of_it_with_its_batch(module, guess, side):
    """Held-out set 39: networks whose flattened map must match a linear layer were lost. Moving
    one axis at a time oscillated between the two axes' checks (a convolution checks each), and a
    flattened product that divides the view's width was also found by sizes that fold the batch
    into the rows (32 x 44) or empty the map (a zero divides anything). The square image's axes
    move together, to the nearest size at which the product is whole and non-empty: DQN's 84 x 84,
    the digits' 28 x 28 from a tiny guess (31 x 31 from 32 x 32: also a 4 x 4 map)."""
    solved = solve_input_shapes(module, [torch.randn(guess)])
    assert solved is not None and solved[0] == [guess[0], guess[1], side, side], solved
    out = module()(torch.randn(solved[0]))
    assert out.shape[0] == guess[0]  # the batch kept: one row per image
