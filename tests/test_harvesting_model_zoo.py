"""Image classifiers of a model zoo (the shapes held-out set 33's pytorchcv lost 187 classes on,
written here): per-stage width lists hinted `list[list[int]]`, a trunk built as an empty
`nn.Sequential()` filled by `add_module`, and a final pooling window fixed for the zoo's
224 x 224 images."""

from __future__ import annotations

import ast

from autotriton.harvesting.argument_guesses import _guess_value
from autotriton.harvesting.input_guesses import _first_layer, _layer_calls
from autotriton.harvesting.input_repair import repair_attempts
from autotriton.harvesting.module_arguments import isinstance_arguments
from autotriton.harvesting.synthesis import Attempt

from test_harvesting_synthesis import HEADER, assert_all_runnable, first_guess

# Growing widths (a dense unit adds `out - in` channels, none when they are equal), a stem that
# quarters the image, one halving per later stage, then a 7 x 7 average pool and a classifier over
# the last width: it runs only where the input is seven times the network's total stride.
ZOO = '''
class Stem(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=2, padding=1)
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

    def forward(self, x):
        return self.pool(torch.relu(self.conv(x)))


class DenseUnit(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.grow = nn.Conv2d(in_channels, out_channels - in_channels, kernel_size=3, stride=stride, padding=1)
        self.skip = nn.AvgPool2d(kernel_size=stride) if stride > 1 else nn.Identity()

    def forward(self, x):
        return torch.cat((self.skip(x), torch.relu(self.grow(x))), dim=1)


class DenseClassifier(nn.Module):
    def __init__(self,
                 channels: list[list[int]],
                 init_block_channels: int,
                 in_channels: int = 3,
                 in_size: tuple[int, int] = (224, 224),
                 num_classes: int = 1000):
        super().__init__()
        self.in_size = in_size
        self.features = nn.Sequential()
        self.features.add_module("init_block", Stem(in_channels, init_block_channels))
        in_channels = init_block_channels
        for i, channels_per_stage in enumerate(channels):
            stage = nn.Sequential()
            for j, out_channels in enumerate(channels_per_stage):
                stride = 2 if (j == 0) and (i != 0) else 1
                stage.add_module(f"unit{j + 1}", DenseUnit(in_channels, out_channels, stride))
                in_channels = out_channels
            self.features.add_module(f"stage{i + 1}", stage)
        self.features.add_module("final_pool", nn.AvgPool2d(kernel_size=7, stride=1))
        self.output = nn.Linear(in_features=in_channels, out_features=num_classes)

    def forward(self, x):
        x = self.features(x)
        x = x.view(x.size(0), -1)
        x = self.output(x)
        return x
'''


def test_a_list_of_lists_hint_gets_stages_of_growing_widths():
    """`channels: list[list[int]]` is iterated per stage, then per unit: an int there failed with
    "'int' object is not iterable" (pytorchcv: 87 classes); the outer and inner kinds follow the hint."""
    assert _guess_value("channels", "list[list[int]]", 32) == ("[[48, 64], [80, 96]]", [[48, 64], [80, 96]])
    assert _guess_value("channels", "List[List[int]]", 32)[0] == "[[48, 64], [80, 96]]"
    assert _guess_value("units", "tuple[tuple[int, int], ...]", 32)[0] == "((48, 64), (80, 96))"
    assert _guess_value("widths", "Optional[Sequence[Tuple[int, int]]]", 32)[0] == "[(48, 64), (80, 96)]"
    assert _guess_value("channels", "list[int]", 32) == ("[32, 32]", [32, 32])  # one level: as before


def test_a_layer_applied_after_an_opaque_trunk_does_not_size_the_input():
    """`x = self.features(x)` through an `nn.Sequential()` filled by add_module: the Linear applied
    afterwards (over the last stage's width) says nothing of the image, which takes the
    constructor's `in_channels` channels first, not 3 features last."""
    tree = ast.parse(HEADER + ZOO)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    forward = next(f for f in classes[-1].body if isinstance(f, ast.FunctionDef) and f.name == "forward")
    assert _first_layer(forward, "x", _layer_calls(classes)) is None
    guess = first_guess(ZOO, "DenseClassifier")
    assert guess.init_code[0] == "[[48, 64], [80, 96]]"
    assert guess.input_spec[0]["shape"][:2] == [2, 3] and len(guess.input_spec[0]["shape"]) == 4


def test_a_pooling_window_larger_than_its_map_grows_the_input_by_what_it_lacked():
    """"Given input size: (96x1x1). Calculated output size: (96x-5x-5)": the 7 x 7 window needs a map
    seven times larger, so the input grows seven times (8 -> 56), not by the usual four (8 -> 32,
    again too small, and 128 -> a map the classifier's width does not fit); four stays the least."""
    attempt = Attempt(["[[48, 64], [80, 96]]", "32"], [], ["torch.randn(2, 3, 8, 8)"],
                      [{"kind": "tensor", "shape": [2, 3, 8, 8], "dtype": "float32"}])
    message = ("RuntimeError: Given input size: (96x1x1). Calculated output size: (96x-5x-5). Output size is too small")
    (grown, *_) = repair_attempts(attempt, message)
    assert grown.input_spec[0]["shape"] == [2, 3, 56, 56]
    fixed = repair_attempts(attempt, "RuntimeError: Input and output sizes should be greater than 0, but got input (H: 0, W: 0)")
    assert fixed[0].input_spec[0]["shape"] == [2, 3, 32, 32]  # no sizes said: four times, as before
    short = "RuntimeError: Given input size: (3x1x1). Calculated output size: (3x0x0). Output size is too small"
    assert repair_attempts(attempt, short)[0].input_spec[0]["shape"] == [2, 3, 32, 32]  # lacking two: still four


# A conv block taking its norm and activation as factories: functions are called, modules kept,
# and what was built is checked with isinstance asserts (pytorchcv's common/conv.py, 30 classes).
FACTORY_BLOCK = '''
from inspect import isfunction
from typing import Callable


def create_norm(normalization, num_features):
    if isfunction(normalization):
        return normalization(num_features=num_features)
    assert isinstance(normalization, nn.Module)
    return normalization


def create_activation(activation):
    if isfunction(activation):
        return activation()
    if isinstance(activation, str):
        return nn.ReLU() if activation == "relu" else nn.Identity()
    assert isinstance(activation, nn.Module)
    return activation


class FactoryConvBlock(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, normalization: Callable[..., nn.Module],
                 activation: Callable[..., nn.Module]):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False)
        self.bn = create_norm(normalization, out_channels)
        assert isinstance(self.bn, nn.BatchNorm2d)
        self.activ = create_activation(activation)

    def forward(self, x):
        return self.activ(self.bn(self.conv(x)))
'''


def test_isinstance_asserts_on_built_layers_ask_for_a_norm_factory_and_a_built_module():
    """`assert isinstance(self.bn, nn.BatchNorm2d)` gives the norm-named argument a BatchNorm2d
    factory (a function: the code calls functions and keeps modules); `assert
    isinstance(activation, nn.Module)` builds the class guessed for `activation`."""
    attempt = Attempt(["32", "32", "torch.nn.Identity", "torch.nn.ReLU"],
                      [{"name": "in_channels", "value": 32}, {"name": "out_channels", "value": 32},
                       {"name": "normalization", "value": "torch.nn.Identity"}, {"name": "activation", "value": "torch.nn.ReLU"}],
                      ["torch.randn(2, 32, 8, 8)"], [{"kind": "tensor", "shape": [2, 32, 8, 8], "dtype": "float32"}])
    bn = isinstance_arguments(attempt, "    assert isinstance(self.bn, nn.BatchNorm2d)\nAssertionError")
    assert [a.init_code[2:] for a in bn] == [["lambda *args, **kwargs: torch.nn.BatchNorm2d(*args, **kwargs)", "torch.nn.ReLU"]]
    built = isinstance_arguments(attempt, "  File 'm.py', line 20\n    assert isinstance(activation, nn.Module)\nAssertionError")
    assert [a.init_code[2:] for a in built] == [["torch.nn.Identity", "torch.nn.ReLU()"]]
    assert isinstance_arguments(attempt, "    assert x.shape[1] == 3\nAssertionError") == []


def test_a_block_of_factories_becomes_runnable(tmp_path):
    assert_all_runnable(tmp_path, "factory_block.py", FACTORY_BLOCK, 1)


def test_a_zoo_classifier_becomes_a_runnable_problem(tmp_path):
    """End to end in the real sandbox: the stem, the dense units and the classifier all runnable."""
    assert_all_runnable(tmp_path, "zoo.py", ZOO, 3)


# A network whose stages take one dropout rate per unit (`dropout_rates: list[list[float]]`), its
# plural name and its hint both saying so: a single 0.0 there was indexed, then "repaired" into
# widths, and nn.Dropout refused "probability 8".
STAGED_DROPOUT = '''
class FactorizedUnit(nn.Module):
    def __init__(self, channels: int, dilation: int, dropout_rate: float):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size=3, padding=dilation, dilation=dilation)
        self.dropout = nn.Dropout(p=dropout_rate) if dropout_rate != 0.0 else None

    def forward(self, x):
        y = torch.relu(self.conv(x))
        if self.dropout is not None:
            y = self.dropout(y)
        return x + y


class StagedNet(nn.Module):
    def __init__(self,
                 channels: list[int],
                 dilations: list[list[int]],
                 dropout_rates: list[list[float]],
                 in_channels: int = 3):
        super().__init__()
        self.stem = nn.Conv2d(in_channels, channels[0], kernel_size=3, padding=1)
        self.stages = nn.ModuleList()
        for i, stage_channels in enumerate(channels):
            units = [FactorizedUnit(stage_channels, dilations[i][j], dropout_rates[i][j]) for j in range(len(dropout_rates[i]))]
            self.stages.append(nn.Sequential(*units))
            if i + 1 < len(channels):
                self.stages.append(nn.Conv2d(stage_channels, channels[i + 1], kernel_size=1))

    def forward(self, x):
        x = self.stem(x)
        for stage in self.stages:
            x = stage(x)
        return x
'''


def test_a_rate_or_flag_per_stage_and_unit_is_a_sequence_of_them():
    """A number the name asks for (a dropout rate: 0.0) where the hint asks for a sequence of
    numbers is that sequence of it, floats as ints were (pytorchcv's ERFNet, ESNet, Jasper,
    FractalNet: 'dropout probability has to be between 0 and 1, but got 8')."""
    assert _guess_value("dropout_rates", "list[list[float]]", 32) == ("[[0.0, 0.0], [0.0, 0.0]]", [[0.0, 0.0], [0.0, 0.0]])
    assert _guess_value("dropout_probs", "list[float]", 32) == ("[0.0, 0.0]", [0.0, 0.0])
    assert _guess_value("dropout_rates", "list[int]", 32) == ("[0.0, 0.0]", [0.0, 0.0])  # a rate, whatever the hint's kind
    assert _guess_value("cutoffs", "list[float]", 32) == ("[0.25, 0.5]", [0.25, 0.5])  # no number by name: fractions, as before
    # a flag per stage and unit (pytorchcv's `use_se: list[list[int]]`, tested `use_se[i][j] == 1`)
    assert _guess_value("use_se", "list[list[int]]", 32) == ("[[True, True], [True, True]]", [[True, True], [True, True]])
    assert _guess_value("use_bias", "bool", 32) == ("True", True)


def test_a_network_of_staged_dropout_rates_becomes_runnable(tmp_path):
    assert_all_runnable(tmp_path, "staged.py", STAGED_DROPOUT, 2)
