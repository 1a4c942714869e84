"""Adapters and wrappers that take a built torch layer (peft's tuner layers, weight-norm and
quantisation wrappers; issue 13's held-out set 25): a `base_layer` guessed as a plain module fails
("Unsupported layer type <class '...GELU'>", "'GELU' object has no attribute 'in_channels'"), and
the harvest gives that argument the torch layer the error and the class's name ask for. Modules
written here in those packages' shapes."""

from __future__ import annotations

import torch

from autotriton.harvesting.module_arguments import dimension_arguments, layer_arguments, sequence_arguments, stand_in_arguments
from autotriton.harvesting.synthesis import Attempt

from tests.test_harvesting_synthesis import assert_all_runnable

ADAPTERS = '''
import torch.nn.functional as F


class LowRankLayer:
    """The adapter's bookkeeping, mixed into each wrapper (peft's LoraLayer)."""

    def __init__(self, base_layer, **kwargs):
        self.base_layer = base_layer
        self.rank = {}
        if isinstance(base_layer, nn.Linear):
            in_features, out_features = base_layer.in_features, base_layer.out_features
        elif isinstance(base_layer, nn.Conv2d):
            in_features, out_features = base_layer.in_channels, base_layer.out_channels
        elif isinstance(base_layer, nn.Embedding):
            in_features, out_features = base_layer.num_embeddings, base_layer.embedding_dim
        else:
            raise ValueError(f"Unsupported layer type {type(base_layer)}")
        self.in_features = in_features
        self.out_features = out_features


class Linear(nn.Module, LowRankLayer):
    """A low-rank update beside a linear layer."""

    def __init__(self, base_layer, adapter_name: str, r: int = 4, scaling: float = 0.5):
        nn.Module.__init__(self)
        LowRankLayer.__init__(self, base_layer)
        self.adapter_name = adapter_name
        self.down = nn.Linear(self.in_features, r, bias=False)
        self.up = nn.Linear(r, self.out_features, bias=False)
        nn.init.normal_(self.up.weight)
        self.scaling = scaling

    def forward(self, x):
        return self.base_layer(x) + self.up(self.down(x)) * self.scaling


class Conv2d(nn.Module, LowRankLayer):
    """The same beside a convolution: its kernel is read from the layer."""

    def __init__(self, base_layer, adapter_name: str, r: int = 4):
        nn.Module.__init__(self)
        LowRankLayer.__init__(self, base_layer)
        k = base_layer.kernel_size
        self.down = nn.Conv2d(self.in_features, r, k, base_layer.stride, base_layer.padding, bias=False)
        self.up = nn.Conv2d(r, self.out_features, 1, bias=False)
        nn.init.normal_(self.up.weight)

    def forward(self, x):
        return self.base_layer(x) + self.up(self.down(x))


class WeightNormed(nn.Module):
    """A layer's weight, normalised per output and rescaled by a learnt gain."""

    def __init__(self, module):
        super().__init__()
        self.module = module
        self.gain = nn.Parameter(module.weight.detach().norm(dim=1, keepdim=True))

    def forward(self, x):
        w = self.module.weight / self.module.weight.norm(dim=1, keepdim=True) * self.gain
        return F.linear(x, w, self.module.bias)
'''


def test_wrappers_of_a_torch_layer_are_given_one_and_become_runnable(tmp_path):
    assert_all_runnable(tmp_path, "adapters.py", ADAPTERS, 3)


# neuraloperator's shapes (held-out set 26): a wrapped module's forward called with more than its
# input, and a layer's dimensionality chosen by name from an int argument
OPERATOR_LAYERS = '''
class SubModule(nn.Module):
    """Applies a wrapped module to the channels it selects."""

    def __init__(self, main_module, width=16):
        super().__init__()
        self.main_module = main_module
        self.register_buffer("indices", torch.arange(0, width, 2))

    def forward(self, x):
        return self.main_module.forward(x, self.indices) * 0.5


class FiniteDifferenceConvolution(nn.Module):
    """A convolution of the dimensionality it is told."""

    def __init__(self, in_channels, out_channels, n_dim, kernel_size=3):
        super().__init__()
        conv_module = getattr(nn, f"Conv{n_dim}d")
        self.conv = conv_module(in_channels, out_channels, kernel_size, padding=kernel_size // 2)

    def forward(self, x):
        return self.conv(x) - x.mean()
'''


def test_a_wrapped_module_called_with_more_and_a_dimensionality_named_by_an_int_are_repaired(tmp_path):
    assert_all_runnable(tmp_path, "operators.py", OPERATOR_LAYERS, 2)


def test_the_stand_in_and_the_dimensionality_come_from_the_error():
    attempt = Attempt(["torch.nn.GELU()", "32", "32"], [{"name": "fn", "value": "torch.nn.GELU()"}, {"name": "c", "value": 32},
                                                        {"name": "n_dim", "value": 32}], [], [], label="D=32")
    (stand_in,) = stand_in_arguments(attempt, "TypeError: GELU.forward() takes 2 positional arguments but 3 were given")
    assert stand_in.init_code == ["WrappedNetwork()", "32", "32"] and stand_in.init_spec[0]["value"] == "WrappedNetwork()"
    assert stand_in_arguments(attempt, "TypeError: forward() takes 2 positional arguments but 3 were given") == []
    two, one = dimension_arguments(attempt, "AttributeError: module 'torch.nn' has no attribute 'Conv32d'")
    # the argument named as a dimensionality, not the width of the same value
    assert two.init_code == ["torch.nn.GELU()", "32", "2"] and one.init_code[1:] == ["32", "1"]
    assert two.init_spec[2] == {"name": "n_dim", "value": 2}
    assert dimension_arguments(attempt, "AttributeError: module 'torch.nn' has no attribute 'Conv4d'") == []


def test_the_layer_is_the_one_the_error_or_the_class_name_asks_for():
    attempt = Attempt(["torch.nn.GELU()", "'default'"], [{"name": "base_layer", "value": "torch.nn.GELU()"},
                                                          {"name": "adapter_name", "value": "default"}],
                      ["torch.randn(2, 8, 16)"], [{"kind": "tensor", "shape": [2, 8, 16]}], label="D=16 option 0")
    standalone = "class Model(torch.nn.Module):\n    def __init__(self, base_layer, adapter_name):\n        pass\n"
    unsupported = "ValueError: Unsupported layer type <class 'torch.nn.modules.activation.GELU'>"
    linear, conv = layer_arguments(standalone, attempt, unsupported, "Linear")
    assert linear.init_code == ["torch.nn.Linear(16, 16)", "'default'"] and conv.init_code[0].startswith("torch.nn.Conv2d(16, 16")
    assert linear.init_spec[0] == {"name": "base_layer", "value": "torch.nn.Linear(16, 16)"}
    assert linear.input_code == attempt.input_code
    # the class's name, then the attribute read, lead
    assert layer_arguments(standalone, attempt, unsupported, "Embedding")[0].init_code[0] == "torch.nn.Embedding(16, 16)"
    read = "AttributeError: 'GELU' object has no attribute 'in_channels'"
    assert layer_arguments(standalone, attempt, read, "Adapter")[0].init_code[0].startswith("torch.nn.Conv2d(16, 16")
    # an error about another object, or a field a stand-in lacks, is not about a layer
    assert layer_arguments(standalone, attempt, "AttributeError: 'Tensor' object has no attribute 'weight'") == []
    assert layer_arguments(standalone, attempt, "AttributeError: 'GELU' object has no attribute 'num_features'") == []
    assert layer_arguments(standalone, Attempt(["32"], [32], [], []), unsupported) == []
    built = eval(layer_arguments(standalone, attempt, read)[0].init_code[0], {"torch": torch})
    assert isinstance(built, torch.nn.Conv2d) and built.in_channels == 16


def test_a_namespace_is_replaced_only_where_the_parameter_names_a_module():
    """The attributes read of `base_layer` made it a namespace: it becomes a layer; a config
    namespace (`config.padding` missing) stays a config."""
    standalone = "class Model(torch.nn.Module):\n    def __init__(self, base_layer, config):\n        pass\n"
    ns = "types.SimpleNamespace(in_features=16, out_features=16)"
    attempt = Attempt([ns, ns], [{"name": "base_layer"}, {"name": "config"}], [], [], label="D=16 option 0")
    (linear, _) = layer_arguments(standalone, attempt, "ValueError: Unsupported layer type <class 'types.SimpleNamespace'>")
    assert linear.init_code == ["torch.nn.Linear(16, 16)", ns]
    only_config = Attempt(["torch.nn.Linear(16, 16)", ns], [{}, {}], [], [], label="D=16")
    assert layer_arguments(standalone, only_config, "AttributeError: 'types.SimpleNamespace' object has no attribute 'padding'") == []


def test_a_layer_class_given_where_a_built_layer_was_wanted_becomes_a_layer():
    standalone = "class Model(torch.nn.Module):\n    def __init__(self, base_layer, norm_layer):\n        pass\n"
    attempt = Attempt(["torch.nn.Identity", "torch.nn.LayerNorm(16)"], [{}, {}], [], [], label="D=16")
    (linear, _) = layer_arguments(standalone, attempt, "ValueError: Unsupported layer type <class 'type'>", "Linear")
    assert linear.init_code == ["torch.nn.Linear(16, 16)", "torch.nn.LayerNorm(16)"]



# fastai's shapes (held-out set 26): layers as *args held in a ModuleList, and a list of widths
# concatenated with lists
SEQUENCES = '''
class SequentialEx(nn.Module):
    """Like nn.Sequential, with each layer's input kept on its output."""

    def __init__(self, *layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x):
        res = x
        for layer in self.layers:
            res = layer(res) + 0.5 * res
        return res
'''


def test_layers_given_as_args_held_in_a_module_list_are_modules(tmp_path):
    assert_all_runnable(tmp_path, "sequences.py", SEQUENCES, 1)


def test_tuples_the_code_concatenates_to_lists_become_lists():
    attempt = Attempt(["32", "(32, 32)", "'relu'"], [{"name": "n_cont", "value": 32}, {"name": "layers", "value": [32, 32]},
                                                    {"name": "act", "value": "relu"}], [], [], label="D=32")
    (lists,) = sequence_arguments(attempt, 'TypeError: can only concatenate list (not "tuple") to list')
    assert lists.init_code == ["32", "[32, 32]", "'relu'"] and lists.init_spec[1] == {"name": "layers", "value": [32, 32]}
    back = Attempt(["[8, 8]"], [{"name": "shape", "value": [8, 8]}], [], [], label="D=32")
    (tuples,) = sequence_arguments(back, 'TypeError: can only concatenate tuple (not "list") to tuple')
    assert tuples.init_code == ["(8, 8)"]
    assert sequence_arguments(attempt, "TypeError: unsupported operand type(s) for +: 'int' and 'list'") == []


# uni2ts' shape (held-out set 27): the wrapped projection called with keywords only
# (`self.qk_proj(query=q, key=k, query_id=ids)`): nn.Identity refuses the keywords, and the stand-in
# network takes its input by name.
KEYWORD_CALLS = '''
class ResBlock(nn.Module):
    """RCAN's block: its convolutions made by the factory it is handed (`default_conv`)."""

    def __init__(self, conv, n_feat, kernel_size, bias=True, res_scale=1.0):
        super().__init__()
        self.body = nn.Sequential(conv(n_feat, n_feat, kernel_size, bias=bias), nn.ReLU(),
                                  conv(n_feat, n_feat, kernel_size, bias=bias))
        self.res_scale = res_scale

    def forward(self, x):
        return self.body(x) * self.res_scale + x


class TrunkBranch(nn.Module):
    """super-image's RNAN: the factory handed on to the blocks it builds."""

    def __init__(self, conv, n_feat, kernel_size):
        super().__init__()
        self.body = nn.Sequential(*[ResBlock(conv, n_feat, kernel_size) for _ in range(2)])

    def forward(self, x):
        return self.body(x)


class GroupedAttention(nn.Module):
    def __init__(self, dim, qk_proj):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.qk_proj = qk_proj

    def forward(self, x):
        q, k = self.q(x), self.k(x)
        q = self.qk_proj(query=q, key=k, query_id=None)
        return torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ x
'''


def test_a_wrapped_module_called_with_keywords_only_gets_the_stand_in_network(tmp_path):
    """(and a layer factory handed on to the blocks that call it with sizes, RCAN's `conv`, is given
    the stand-in, which builds a stand-in layer when called without a tensor)"""
    assert_all_runnable(tmp_path, "keyword_calls.py", KEYWORD_CALLS, 3)


CLONED_LAYER = '''
import copy


def clone_module_list(module, n):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerLayer(nn.Module):
    def __init__(self, d_model: int):
        super().__init__()
        self.size = d_model
        self.ff = nn.Linear(d_model, d_model)

    def forward(self, *, x, mask=None):
        return x + self.ff(x)


class Encoder(nn.Module):
    """A stack of copies of the layer it is given (labml_nn.transformers.models.Encoder)."""

    def __init__(self, layer: "TransformerLayer", n_layers: int):
        super().__init__()
        self.layers = clone_module_list(layer, n_layers)
        self.norm = nn.LayerNorm([layer.size])

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x=x, mask=mask)
        return self.norm(x)


class TokenStack(nn.Module):
    """The same, typed by a layer class of the file (labml_nn.transformers.vit.VisionTransformer):
    `transformer_layer: TransformerLayer` read as a class to build until its size was read."""

    def __init__(self, transformer_layer: TransformerLayer, n_layers: int):
        super().__init__()
        self.layers = clone_module_list(transformer_layer, n_layers)
        self.cls_token = nn.Parameter(torch.randn(1, 1, transformer_layer.size))

    def forward(self, x):
        x = torch.cat([self.cls_token.expand(-1, x.shape[1], -1), x])
        for layer in self.layers:
            x = layer(x=x, mask=None)
        return x.mean(0)
'''


def test_a_layer_the_module_copies_and_reads_the_size_of_is_a_network_with_that_size(tmp_path):
    """Held-out set 39 (labml-nn's Encoder, TransformerXL, VisionTransformer...: 7 classes): a layer
    argument read for its size (`layer.size`) and deep-copied into a ModuleList was given a
    namespace holding the size ("types.SimpleNamespace is not a Module subclass"); a module by its
    name that the code reads attributes of is the stand-in network with those attributes."""
    assert_all_runnable(tmp_path, "models.py", CLONED_LAYER, 3)

