"""Input guesses for module shapes held-out sets 20 and 21 failed on (forecasting heads, EEG models), written here."""

from __future__ import annotations

from test_harvesting_synthesis import HEADER, assert_all_runnable, first_guess

FLATTEN_HEADS = '''
class FlattenHead(nn.Module):
    def __init__(self, n_vars, nf, target_window, head_dropout=0):
        super().__init__()
        self.n_vars = n_vars
        self.flatten = nn.Flatten(start_dim=-2)
        self.linear = nn.Linear(nf, target_window)
        self.dropout = nn.Dropout(head_dropout)

    def forward(self, x):
        return self.dropout(self.linear(self.flatten(x)))


class PatchHead(nn.Module):
    def __init__(self, d_model, num_patches, horizon):
        super().__init__()
        self.proj = nn.Linear(d_model * num_patches, horizon)

    def forward(self, x):
        b, c = x.shape[0], x.shape[1]
        return self.proj(x.reshape(b, c, -1))
'''


def test_an_input_flattened_before_a_linear_is_shaped_so_its_trailing_sizes_multiply_to_the_width(tmp_path):
    """`nn.Flatten(start_dim=-2)` then `nn.Linear(nf, ...)` (neuralforecast's FlattenHead, PatchTST-
    style heads): torch says "mat1 and mat2 shapes cannot be multiplied (2x256 and 32x4)", where
    256 is no single dimension of the input but the product of its last two; the repair reshapes
    those so they multiply to the width the matmul wants."""
    assert_all_runnable(tmp_path, "heads.py", FLATTEN_HEADS, 2)


NAMED_CHOICES = '''
ACTIVATIONS = ["ReLU", "Softplus", "Tanh", "SELU", "LeakyReLU", "PReLU", "Sigmoid"]
NORMS = {"batch": nn.BatchNorm1d, "layer": nn.LayerNorm}


class MLP(nn.Module):
    def __init__(self, in_features, out_features, activation, hidden_size, num_layers, dropout):
        super().__init__()
        assert activation in ACTIVATIONS, f"{activation} is not in {ACTIVATIONS}"
        act = getattr(nn, activation)()
        layers = [nn.Linear(in_features, hidden_size), act]
        for _ in range(num_layers - 1):
            layers += [nn.Linear(hidden_size, hidden_size), act, nn.Dropout(dropout)]
        layers.append(nn.Linear(hidden_size, out_features))
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x)


class Normed(nn.Module):
    def __init__(self, dim, norm):
        super().__init__()
        if norm not in NORMS:
            raise ValueError(f"unknown norm {norm}")
        self.proj = nn.Linear(dim, dim)
        self.norm = NORMS[norm](dim)

    def forward(self, x):
        return self.norm(self.proj(x))
'''


def test_a_parameter_checked_against_a_module_level_list_of_names_is_given_one_of_them(tmp_path):
    """`assert activation in ACTIVATIONS` (neuralforecast's MLPs: "relu is not in ['ReLU', ...]",
    and the class nn.ReLU failed as well) and `if norm not in NORMS: raise` over a dict's keys:
    the names are read from the module-level constant the comparison names."""
    mlp = first_guess(NAMED_CHOICES, "MLP")
    assert mlp.init_code[2] == "'ReLU'", mlp.init_code
    normed = first_guess(NAMED_CHOICES, "Normed")
    assert normed.init_code[1] == "'batch'", normed.init_code
    assert_all_runnable(tmp_path, "mlp.py", NAMED_CHOICES, 2)


LAYER_LISTS = '''
class Encoder(nn.Module):
    def __init__(self, attn_layers, norm_layer=None):
        super().__init__()
        self.attn_layers = nn.ModuleList(attn_layers)
        self.norm = norm_layer

    def forward(self, x, attn_mask=None):
        for attn_layer in self.attn_layers:
            x = attn_layer(x, attn_mask=attn_mask)
        if self.norm is not None:
            x = self.norm(x)
        return x
'''


def test_a_list_of_layers_called_with_masks_is_given_stand_in_networks(tmp_path):
    """`for layer in self.layers: x = layer(x, attn_mask=attn_mask)` (neuralforecast's Autoformer /
    Informer encoders): the items take keyword arguments nn.GELU refuses, so the list holds the
    stand-in network, which takes any and keeps x's shape."""
    from autotriton.harvesting.synthesis import STAND_IN

    attempt = first_guess(LAYER_LISTS, "Encoder")
    assert f"{STAND_IN}()" in attempt.init_code[0], attempt.init_code
    assert_all_runnable(tmp_path, "encoder.py", LAYER_LISTS, 1)


# braindecode's models (held-out set 21): sizes left at None in the signature, required by a base
# class's properties, which say so only when read
INFERRED_SIZES = '''
class EEGMixin:
    @property
    def n_chans(self):
        if self._n_chans is None:
            raise ValueError("n_chans could not be inferred. Either specify n_chans or chs_info.")
        return self._n_chans

    @property
    def n_times(self):
        if self._n_times is None:
            raise ValueError("n_times could not be inferred. Either specify n_times or input_window_seconds and sfreq.")
        return self._n_times


class ShallowNet(EEGMixin, nn.Module):
    def __init__(self, n_outputs=None, n_chans=None, chs_info=None, n_times=None, input_window_seconds=None, sfreq=None):
        super().__init__()
        self._n_chans, self._n_times = n_chans, n_times
        self.conv = nn.Conv1d(self.n_chans, 8, 3, padding=1)
        self.head = nn.Linear(8 * self.n_times, n_outputs or 4)

    def forward(self, x):
        return self.head(self.conv(x).flatten(1))
'''


def test_optional_sizes_an_error_names_are_given_one_at_a_time():
    from autotriton.harvesting.signatures import parameter_named_in

    source = HEADER + INFERRED_SIZES.replace("class ShallowNet", "class Model")
    # "Either specify n_chans or chs_info": the first one named, then the next error's
    assert parameter_named_in(source, "Traceback ...\nValueError: n_chans could not be inferred. Either specify n_chans or chs_info.") == "n_chans"
    assert parameter_named_in(source, "ValueError: n_times could not be inferred. Either specify n_times or input_window_seconds",
                              given={"n_chans"}) == "n_times"
    assert parameter_named_in(source, "RuntimeError: mat1 and mat2 shapes cannot be multiplied") is None


def test_a_model_whose_base_class_demands_optional_sizes_becomes_runnable(tmp_path):
    assert_all_runnable(tmp_path, "eeg.py", INFERRED_SIZES, 1)


# A graph layer (torch-spatiotemporal's style): an optional node count builds an embedding layer,
# else the attribute is registered as None, and forward calls it when no embedding is passed.
OPTIONAL_LAYER = '''
from typing import Optional


class NodeEmbedding(nn.Module):
    def __init__(self, n_nodes, emb_size):
        super().__init__()
        self.emb = nn.Parameter(torch.randn(n_nodes, emb_size))

    def forward(self, node_index=None):
        return self.emb if node_index is None else self.emb[node_index]


class NodeEncoder(nn.Module):
    def __init__(self, in_channels, out_channels, n_nodes: Optional[int] = None, scale=None):
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels)
        if n_nodes is not None:
            self.node_emb = NodeEmbedding(n_nodes, out_channels)
        else:
            self.register_parameter('node_emb', None)
        self.scale = nn.Parameter(torch.ones(out_channels)) if scale is not None else None

    def forward(self, x, node_emb=None):
        if node_emb is None:
            node_emb = self.node_emb(node_index=None)
        return torch.relu(self.lin(x).unsqueeze(-2) + node_emb)
'''


def test_a_layer_the_constructor_left_at_none_asks_for_the_parameter_that_builds_it(tmp_path):
    """"'NoneType' object is not callable" at `self.node_emb(...)`: the optional parameter whose test
    guards `self.node_emb = ...` in __init__ is guessed next (the input `node_emb` is not: a
    parameter that builds the layer keeps the layer's compute in the problem)."""
    from autotriton.harvesting.signatures import parameter_named_in

    source = HEADER + OPTIONAL_LAYER.replace("class NodeEncoder", "class Model")
    error = ("Traceback (most recent call last):\n  File \"problem.py\", line 30, in forward\n"
             "    node_emb = self.node_emb(node_index=None)\n               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
             "TypeError: 'NoneType' object is not callable")
    assert parameter_named_in(source, error) == "n_nodes"
    assert parameter_named_in(source, error, given={"n_nodes"}) is None
    assert parameter_named_in(source, error.replace("self.node_emb(", "self.scale.mul(").replace(
        "is not callable", "has no attribute 'mul'")) == "scale"  # a conditional expression guards it
    assert_all_runnable(tmp_path, "encoder.py", OPTIONAL_LAYER, 2)


# A metric-learning loss (pytorch-metric-learning's style): labels are optional in the signature,
# required by the loss, which says so in its own words.
LABELS_REQUIRED = '''
def labels_required(labels):
    if labels is None:
        raise ValueError("labels are required for this loss function")


class CenterLoss(nn.Module):
    def __init__(self, num_classes, embedding_size):
        super().__init__()
        self.centers = nn.Parameter(torch.randn(num_classes, embedding_size))

    def forward(self, embeddings, labels=None, ref_emb=None):
        labels_required(labels)
        if embeddings.ndim != 2:
            raise ValueError("embeddings must be a 2D tensor of shape (batch_size, embedding_size)")
        if labels.ndim != 1:
            raise ValueError("labels must be a 1D tensor of shape (batch_size,)")
        centers = self.centers[labels]
        return ((embeddings - centers) ** 2).sum(dim=1).mean()
'''


def test_an_optional_input_the_error_message_names_is_given(tmp_path):
    from autotriton.harvesting.signatures import optional_input_named_in

    source = HEADER + LABELS_REQUIRED.replace("class CenterLoss", "class Model")
    error = ("Traceback (most recent call last):\n    raise ValueError(\"labels are required for this loss function\")\n"
             "ValueError: labels are required for this loss function")
    assert optional_input_named_in(source, error) == "labels"
    assert optional_input_named_in(source, error, given={"labels"}) is None
    assert optional_input_named_in(source, "RuntimeError: mat1 and mat2 shapes cannot be multiplied") is None
    # then the labels given as the embeddings were: the loss states the shape it wants, and the name says integers
    from autotriton.harvesting.statement_inputs import said_shape_input
    from autotriton.harvesting.synthesis import Attempt

    given = Attempt(["10", "32"], [], ["torch.randn(2, 32)", "torch.randn(2, 32)"],
                    [{"kind": "tensor", "shape": [2, 32], "dtype": "float32"}] * 2, label="labels given")
    said = said_shape_input(source, given, "ValueError: labels must be a 1D tensor of shape (batch_size,)")
    assert said.input_code == ["torch.randn(2, 32)", "torch.randint(0, 2, (2,))"], said.input_code
    assert_all_runnable(tmp_path, "losses.py", LABELS_REQUIRED, 1)


# An open-set loss (pytorch-ood's CACLoss, held-out set 38): the targets' shape is stated as one bare
# axis, the input named in the plural.
BARE_AXIS_TARGETS = '''
def drop_unknown(target, *tensors):
    if target.dim() != 1:
        raise ValueError(f"Expected targets of shape B, got {tuple(target.shape)}")
    known = target >= 0
    return (target[known], *[t[known] for t in tensors])


class AnchorLoss(nn.Module):
    def __init__(self, n_classes):
        super().__init__()
        self.anchors = nn.Parameter(torch.randn(n_classes, n_classes))

    def forward(self, distances, target):
        target, distances = drop_unknown(target, distances)
        true = torch.gather(distances, 1, target.view(-1, 1)).view(-1)
        return (true - distances.logsumexp(dim=1)).mean()
'''


def test_a_shape_stated_as_one_bare_axis_of_a_plural_name_is_given(tmp_path):
    from autotriton.harvesting.statement_inputs import said_shape_input
    from autotriton.harvesting.synthesis import Attempt

    source = HEADER + BARE_AXIS_TARGETS.replace("class AnchorLoss", "class Model")
    given = Attempt(["10"], [], ["torch.randn(2, 10)", "torch.randint(0, 10, (2, 8))"],
                    [{"kind": "tensor", "shape": [2, 10], "dtype": "float32"},
                     {"kind": "tensor", "shape": [2, 8], "dtype": "int64", "high": 10}], label="guess")
    said = said_shape_input(source, given, "ValueError: Expected targets of shape B, got (2, 8)")
    assert said is not None and said.input_spec[1]["shape"] == [2] and said.input_spec[1]["dtype"] == "int64"
    # a shape with more to it than one word is not read as one axis
    assert said_shape_input(source, given, "ValueError: expected shape B x T for the targets") is None
    assert_all_runnable(tmp_path, "ood.py", BARE_AXIS_TARGETS, 1)


# Blocks that normalise over the last axis first: a ConvNeXt/Swin-style block wants its feature map
# channels last ([B, H, W, C]); a ViT-style one wants tokens ([B, N, C]). Both are first probed with a
# channels-first map, which LayerNorm refuses in its own words.
LAST_AXIS_BLOCKS = '''
class WindowBlock(nn.Module):
    def __init__(self, dim, window_size=4):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.window_size = window_size
        self.mlp = nn.Linear(dim, dim)

    def forward(self, x):
        B, H, W, C = x.shape
        assert H == W, "input feature has wrong size"
        x = self.norm(x)
        x = x.view(B, H // self.window_size, self.window_size, W // self.window_size, self.window_size, C)
        return self.mlp(x).view(B, H, W, C)


class TokenBlock(nn.Module):
    def __init__(self, dim, heads=4):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        y = self.norm(x)
        return x + self.attn(y, y, y, need_weights=False)[0]
'''


def test_a_norm_over_the_last_axis_turns_a_channels_first_input_channels_last_or_into_tokens(tmp_path):
    from autotriton.harvesting.input_repair import repair_attempts
    from autotriton.harvesting.synthesis import Attempt

    attempt = Attempt(["32"], [{"name": "dim", "value": 32}], ["torch.randn(2, 32, 8, 8)"],
                      [{"kind": "tensor", "shape": [2, 32, 8, 8], "dtype": "float32"}], label="first")
    message = "RuntimeError: Given normalized_shape=[32], expected input with shape [*, 32], but got input of size[2, 32, 8, 8]"
    shapes = [a.input_spec[0]["shape"] for a in repair_attempts(attempt, message)]
    assert shapes[:2] == [[2, 8, 8, 32], [2, 64, 32]], shapes
    assert_all_runnable(tmp_path, "blocks.py", LAST_AXIS_BLOCKS, 2)


# A convolution block that builds its norm from a class it is given (torchvision's RAFT and RegNet
# blocks): the name alone guesses nn.LayerNorm, which refuses a channels-first map.
NORM_CLASS_BLOCK = '''
class BottleneckBlock(nn.Module):
    def __init__(self, in_channels, out_channels, norm_layer, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels // 4, kernel_size=1)
        self.conv2 = nn.Conv2d(out_channels // 4, out_channels, kernel_size=3, padding=1, stride=stride)
        self.norm1 = norm_layer(out_channels // 4)
        self.norm2 = norm_layer(out_channels)
        self.relu = nn.ReLU()

    def forward(self, x):
        y = self.relu(self.norm1(self.conv1(x)))
        y = self.relu(self.norm2(self.conv2(y)))
        return self.relu(x + y)
'''


def test_a_layer_norm_guess_for_a_convolution_blocks_norm_class_becomes_a_batch_norm(tmp_path):
    from autotriton.harvesting.module_arguments import norm_arguments
    from autotriton.harvesting.synthesis import Attempt

    attempt = Attempt(["32", "32", "torch.nn.LayerNorm"], [{"name": "in_channels", "value": 32}, {"name": "out_channels", "value": 32},
                      {"name": "norm_layer", "value": "torch.nn.LayerNorm"}], ["torch.randn(2, 32, 8, 8)"],
                      [{"kind": "tensor", "shape": [2, 32, 8, 8], "dtype": "float32"}], label="first")
    message = "RuntimeError: Given normalized_shape=[8], expected input with shape [*, 8], but got input of size[2, 8, 8, 8]"
    (fixed,) = norm_arguments(attempt, message)
    assert fixed.init_code == ["32", "32", "torch.nn.BatchNorm2d"]
    assert norm_arguments(attempt, message.replace("size[2, 8, 8, 8]", "size[2, 16, 8, 8]")) == []  # not the channels
    assert_all_runnable(tmp_path, "raft.py", NORM_CLASS_BLOCK, 1)


# torch-spatiotemporal's Lambda: a function it is given, whose name it reads.
NAMED_FUNCTION = '''
from typing import Callable


class Lambda(nn.Module):
    def __init__(self, function: Callable):
        super().__init__()
        self.function = function
        self.source = ''
        if function.__name__ == '<lambda>':
            self.source = 'lambda'

    def forward(self, input):
        return self.function(input)
'''


def test_a_callable_whose_name_is_read_gets_a_torch_function_not_a_module(tmp_path):
    assert_all_runnable(tmp_path, "lam.py", NAMED_FUNCTION, 1)


# sbi's style: a sample shape typed torch.Size, a statistic typed Union[Tensor, float].
SIZE_AND_SCALAR_HINTS = '''
from typing import Union
from torch import Tensor


class Standardize(nn.Module):
    def __init__(self, mean: Union[Tensor, float], std: Union[Tensor, float]):
        super().__init__()
        self.register_buffer("_mean", torch.as_tensor(mean))
        self.register_buffer("_std", torch.as_tensor(std))

    def forward(self, tensor):
        return (tensor - self._mean) / self._std + torch.tanh(tensor)


class Estimator(nn.Module):
    def __init__(self, input_shape: torch.Size, condition_shape: torch.Size):
        super().__init__()
        self.input_shape, self.condition_shape = input_shape, condition_shape
        self.net = nn.Linear(input_shape[-1] + condition_shape[-1], input_shape[-1])

    def forward(self, input, condition):
        return self.net(torch.cat([input, condition], dim=-1))
'''


def test_size_and_float_union_hints_get_a_shape_and_a_scalar(tmp_path):
    from autotriton.harvesting.argument_guesses import _guess_value

    assert _guess_value("condition_shape", "torch.Size", 16) == ("torch.Size([16])", [16])
    assert _guess_value("mean", "Union[Tensor, float]", 16) == ("1.0", 1.0)
    assert_all_runnable(tmp_path, "sbi_like.py", SIZE_AND_SCALAR_HINTS, 2)
