"""Constructor (and forward) arguments whose kind the code's use of them tells, not their name:
sequences (`tuple(p)`, `len(p)`, iteration), callables, sequences of pairs of callables, mappings,
axes, and None defaults the code asserts are given. Each module below is written here, in the
style of common PyTorch code, and must become a runnable problem through the real harvest path."""

from __future__ import annotations

from autotriton.harvesting.synthesis import synthesize

from tests.test_harvesting_synthesis import HEADER, assert_all_runnable

USAGES = '''
def keep_order(values):
    return [v for v in sorted(values)]


class Inner(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x)


class ShiftMix(nn.Module):
    def __init__(self, offsets):
        super().__init__()
        self.offsets = tuple(offsets)

    def forward(self, x):
        return sum(torch.roll(x, s, dims=1) for s in self.offsets)


class AxisScales(nn.Module):
    def __init__(self, dim, axes):
        super().__init__()
        self.order = keep_order(axes)
        self.scales = nn.Parameter(torch.ones(len(axes), dim))

    def forward(self, x):
        return x * self.scales.sum(0)


class Chain(nn.Module):
    def __init__(self, stages):
        super().__init__()
        self.stages = stages

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return x.tanh()


class Gate(nn.Module):
    def __init__(self, dim, g):
        super().__init__()
        self.g = Inner(g)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x) * self.g(x).sigmoid()


class CouplingStack(nn.Module):
    def __init__(self, couplings):
        super().__init__()
        self.couplings = couplings

    def forward(self, x):
        for f, g in self.couplings:
            x = x + f(x)
            x = x + g(x).sin()
        return x


class Settings(nn.Module):
    def __init__(self, dim, settings):
        super().__init__()
        self.settings = settings
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x) * self.settings.get("scale", 2.0)


class ConfigBlock(nn.Module):
    """A block configured by a dict (darts' TimesFM layers: `config["model_dim"]`)."""

    def __init__(self, config):
        super().__init__()
        self.proj = nn.Linear(config["model_dim"], config["hidden_size"])
        self.out = nn.Linear(config["hidden_size"], config["model_dim"])
        self.drop = nn.Dropout(config["dropout_rate"])
        self.eps = config["layer_norm_eps"]

    def forward(self, x):
        x = x / (x.norm(dim=-1, keepdim=True) + self.eps)
        return x + self.out(self.drop(torch.relu(self.proj(x))))


class SamePadPool(nn.Module):
    def __init__(self, channels, image_size=None):
        super().__init__()
        assert image_size is not None
        self.pool = nn.AdaptiveAvgPool2d(image_size // 2)
        self.conv = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        return self.pool(self.conv(x))


class Halves(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        a, b = x.chunk(2, dim=self.dim)
        return a * b.sigmoid()


class WindowPick(nn.Module):
    """Swin's window clipped to a smaller image: `min()` of one argument iterates it."""

    def __init__(self, dim, input_resolution, window_size=4):
        super().__init__()
        if min(input_resolution) <= window_size:
            window_size = min(input_resolution)
        self.window_size = window_size
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x) * max(self.window_size, 2)


class ApplyWith(nn.Module):
    def __init__(self, dim, f):
        super().__init__()
        self.f = f
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, f_args):
        return self.proj(self.f(x, **f_args))
'''


def _first(name: str):
    return synthesize((HEADER + USAGES).replace(f"class {name}(", "class Model("))[0]


def test_the_use_of_a_parameter_sets_the_kind_of_its_guess():
    assert _first("ShiftMix").init_code == ["(8, 8)"]  # tuple(offsets)
    assert _first("AxisScales").init_code[1] == "(8, 8)"  # len(axes), and sorted() in a helper
    assert _first("Chain").init_code == ["torch.nn.ModuleList([torch.nn.GELU(), torch.nn.GELU()])"]
    assert _first("Gate").init_code[1] == "torch.nn.GELU()"  # called through a local wrapper
    pair = "(torch.nn.GELU(), torch.nn.GELU())"
    assert _first("CouplingStack").init_code == [f"[{pair}, {pair}]"]
    assert _first("Settings").init_code[1] == "dict()"
    # each key read by subscript, valued by its name: sizes, a rate, an epsilon
    config = _first("ConfigBlock").init_code[0]
    assert eval(config) == {"model_dim": 32, "hidden_size": 32, "dropout_rate": 0.0, "layer_norm_eps": 1e-05}
    assert _first("SamePadPool").init_code[1] == "32"  # asserted not None: given, though it defaults to None
    assert _first("Halves").init_code == ["-1"]  # an axis of chunk(), not a width
    resolution = eval(_first("WindowPick").init_code[1])  # min() of it alone iterates; max(a, b) compares numbers
    assert isinstance(resolution, tuple) and len(resolution) >= 2 and all(type(v) is int for v in resolution)
    apply_with = _first("ApplyWith")
    assert apply_with.init_code[1] == "torch.nn.GELU()" and apply_with.input_code[1] == "dict()"


def test_modules_whose_parameters_are_told_by_their_use_become_runnable(tmp_path):
    assert_all_runnable(tmp_path, "usages.py", USAGES, 12)


INDEXED = '''
class Stages(nn.Module):
    def __init__(self, dim, depths):
        super().__init__()
        self.first = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depths[0])])
        self.last = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depths[3])])

    def forward(self, x):
        return self.last(torch.relu(self.first(x)))


class ConvStack(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.convs = nn.ModuleList(
            nn.Conv2d(channels[i], channels[i + 1], kernel_size[i], padding=kernel_size[i] // 2)
            for i in range(len(channels) - 1))

    def forward(self, x):
        for conv in self.convs:
            x = torch.tanh(conv(x))
        return x
'''


def test_an_argument_read_by_index_is_a_sequence_long_enough():
    """resnest's `layers[0]..layers[3]`, normflows' `channels[i]`, `kernel_size[i]`: a sequence
    with at least as many items as the highest constant index asks (the name's scalar per item)."""
    stages = synthesize(HEADER + INDEXED.replace("class Stages", "class Model"))[0]
    assert stages.init_code[1].startswith("(") and len(eval(stages.init_code[1])) == 4
    convs = synthesize(HEADER + INDEXED.replace("class ConvStack", "class Model"))[0]
    assert all(code.startswith("(") for code in convs.init_code)


def test_modules_indexing_their_arguments_become_runnable(tmp_path):
    assert_all_runnable(tmp_path, "indexed.py", INDEXED, 2)


CONTAINERS = '''
class Chain(nn.Module):
    def __init__(self, flows):
        super().__init__()
        self.flows = nn.ModuleList(flows)

    def forward(self, x):
        for flow in self.flows:
            x = flow(x)
        return x


class Slot(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.add_module("net", net)

    def forward(self, x):
        return self.net(x) * 2


class Permute(nn.Module):
    def __init__(self, permutation):
        super().__init__()
        if permutation.ndimension() != 1:
            raise ValueError("a permutation is 1-D")
        self.register_buffer("perm", permutation)

    def forward(self, x):
        return x.index_select(-1, self.perm) + x
'''


def test_module_containers_slots_and_tensor_methods_tell_an_arguments_kind():
    """normflows' shapes: `nn.ModuleList(flows)` takes modules, `add_module(name, net)` one module,
    `permutation.ndimension()` says a tensor (not an int, not an object with fields)."""
    chain = synthesize(HEADER + CONTAINERS.replace("class Chain", "class Model"))[0]
    assert chain.init_code[0].startswith("torch.nn.ModuleList([")
    slot = synthesize(HEADER + CONTAINERS.replace("class Slot", "class Model"))[0]
    assert slot.init_code[0].startswith("torch.nn.")
    permute = synthesize(HEADER + CONTAINERS.replace("class Permute", "class Model"))[0]
    assert permute.init_code[0].startswith("torch.arange(")


def test_modules_with_container_slot_and_tensor_arguments_become_runnable(tmp_path):
    assert_all_runnable(tmp_path, "containers.py", CONTAINERS, 3)


# Modules built around another network whose attributes and methods they read: an RL actor over a
# preprocessing net (`preprocess_net.get_output_dim()`, called with the observation and a state), a
# classifier head over a backbone (`backbone.num_features`), an encoder over a trunk and a neck
# whose widths it checks, an attention over an operator returning values and weights (pypots'
# `attn_opt`). Each network stands in as WrappedNetwork with those fields.
NETWORK_FIELDS = '''
class Actor(nn.Module):
    def __init__(self, preprocess_net, action_dim, max_action=1.0):
        super().__init__()
        self.preprocess = preprocess_net
        self.last = nn.Linear(preprocess_net.get_output_dim(), action_dim)
        self.max_action = max_action

    def forward(self, obs, state=None):
        hidden = self.preprocess(obs, state)
        return self.max_action * torch.tanh(self.last(hidden))


class Classifier(nn.Module):
    def __init__(self, backbone: nn.Module, num_classes: int):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(backbone.num_features, num_classes)

    def forward(self, x):
        return self.head(self.backbone(x).mean(1))


class Encoder(nn.Module):
    def __init__(self, trunk: nn.Module, neck: nn.Module):
        super().__init__()
        self.trunk = trunk
        self.neck = neck
        assert self.trunk.embed_dim == self.neck.embed_dim
        self.norm = nn.LayerNorm(neck.embed_dim)

    def forward(self, x):
        return self.norm(self.neck(self.trunk(x)))


class OperatorAttention(nn.Module):
    def __init__(self, attn_opt, d_model, n_heads, d_k):
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_k
        self.w_qs = nn.Linear(d_model, n_heads * d_k, bias=False)
        self.w_vs = nn.Linear(d_model, n_heads * d_k, bias=False)
        self.attention_operator = attn_opt
        self.fc = nn.Linear(n_heads * d_k, d_model, bias=False)

    def forward(self, q, v, attn_mask=None):
        b, n = q.size(0), q.size(1)
        q = self.w_qs(q).view(b, n, self.n_heads, self.d_k).transpose(1, 2)
        v = self.w_vs(v).view(b, n, self.n_heads, self.d_k).transpose(1, 2)
        v, attn_weights = self.attention_operator(q, v, attn_mask)
        return self.fc(v.transpose(1, 2).contiguous().view(b, n, -1)), attn_weights
'''


def test_a_wrapped_network_gets_the_attributes_and_methods_the_module_reads_of_it(tmp_path):
    actor = _first_of(NETWORK_FIELDS, "Actor")
    assert actor.init_code[0] == "WrappedNetwork(get_output_dim=lambda *args, **kwargs: 32)"
    assert _first_of(NETWORK_FIELDS, "Classifier").init_code[0] == "WrappedNetwork(num_features=32)"
    assert _first_of(NETWORK_FIELDS, "Encoder").init_code[:2] == ["WrappedNetwork(embed_dim=32)"] * 2
    # an operator whose result is unpacked into the output and the attention weights returns two values
    assert _first_of(NETWORK_FIELDS, "OperatorAttention").init_code[0] == "WrappedNetwork(outputs=2)"
    # what the stand-in has itself (its `outputs` keyword, its `scale` parameter) is never a field
    from autotriton.harvesting.usage_guess import _network_fields
    from autotriton.harvesting.usage_kinds import Usage

    read = Usage(called=True, attributes=["outputs", "scale", "embed_dim"], methods=["scale", "get_hidden_dim"])
    assert _network_fields(read, 32) == [("embed_dim", "32"), ("get_hidden_dim", "lambda *args, **kwargs: 32")]
    assert_all_runnable(tmp_path, "networks.py", NETWORK_FIELDS, 4)


def _first_of(source: str, name: str):
    return synthesize((HEADER + source).replace(f"class {name}(", "class Model("))[0]


# Reinforcement-learning and GAN networks sized by the shape of one observation or image
# (channels first), read by index, unpacked into a dummy batch and multiplied out.
SAMPLE_SHAPES = '''
import numpy as np


class PixelQNet(nn.Module):
    def __init__(self, input_shape, n_actions):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2d(input_shape[0], 16, kernel_size=8, stride=4), nn.ReLU(),
            nn.Conv2d(16, 32, kernel_size=4, stride=2), nn.ReLU(),
            nn.Conv2d(32, 32, kernel_size=3, stride=1), nn.ReLU(),
        )
        out = self.conv(torch.zeros(1, *input_shape))
        self.head = nn.Linear(int(np.prod(out.size())), n_actions)

    def forward(self, x):
        return self.head(self.conv(x).view(x.size(0), -1))


class ImageGenerator(nn.Module):
    def __init__(self, latent_dim, img_shape):
        super().__init__()
        self.img_shape = img_shape
        self.net = nn.Sequential(nn.Linear(latent_dim, 64), nn.LeakyReLU(0.2), nn.Linear(64, int(np.prod(img_shape))))

    def forward(self, z):
        return torch.tanh(self.net(z)).view(z.size(0), *self.img_shape)
'''


def test_the_shape_of_one_observation_or_image_is_channels_first_and_large_enough(tmp_path):
    assert _first_of(SAMPLE_SHAPES, "PixelQNet").init_code[0] == "(3, 64, 64)"
    assert _first_of(SAMPLE_SHAPES, "ImageGenerator").init_code[1] == "(3, 64, 64)"
    assert_all_runnable(tmp_path, "pixels.py", SAMPLE_SHAPES, 2)


# An option looked up in a dict of choices (recbole's `ACT2FN[act]` in a helper method; a
# module-level table of normalisations): one of the dict's keys, not a layer.
LOOKED_UP = '''
NORMS = {"layer": nn.LayerNorm, "batch": nn.BatchNorm1d}


class FeedForward(nn.Module):
    def __init__(self, hidden_size, inner_size, hidden_act, norm):
        super().__init__()
        self.dense_1 = nn.Linear(hidden_size, inner_size)
        self.act_fn = self.get_hidden_act(hidden_act)
        self.dense_2 = nn.Linear(inner_size, hidden_size)
        self.norm = NORMS[norm](hidden_size)

    def get_hidden_act(self, act):
        ACT2FN = {"gelu": nn.functional.gelu, "relu": torch.relu, "tanh": torch.tanh}
        return ACT2FN[act]

    def forward(self, x):
        return self.norm(x + self.dense_2(self.act_fn(self.dense_1(x))))
'''


def test_an_option_looked_up_in_a_dict_is_one_of_its_keys(tmp_path):
    init = _first_of(LOOKED_UP, "FeedForward").init_code
    assert init[2:] == ["'gelu'", "'layer'"], init
    assert_all_runnable(tmp_path, "lookups.py", LOOKED_UP, 1)


# The option normalised first (gliner's `m = relation_mode.lower()`, then `if m == "dot": ...
# else: raise ValueError`): one of the strings the normalised text is compared with.
NORMALISED = '''
class Relations(nn.Module):
    def __init__(self, in_dim, relation_mode):
        super().__init__()
        m = relation_mode.strip().lower()
        if m == "dot":
            self.proj = nn.Identity()
        elif m in {"mlp", "ffn"}:
            self.proj = nn.Linear(in_dim, in_dim)
        else:
            raise ValueError(f"Unknown relation mode: {relation_mode}")

    def forward(self, x):
        x = self.proj(x)
        return torch.sigmoid(x @ x.transpose(-1, -2))
'''


def test_an_option_normalised_before_it_is_compared_is_one_of_the_compared_strings(tmp_path):
    init = _first_of(NORMALISED, "Relations").init_code
    assert init[1] in ("'dot'", "'mlp'", "'ffn'"), init
    assert_all_runnable(tmp_path, "relations.py", NORMALISED, 1)


# A policy handed to an Enum of the file (rtdl's `initialization: str` -> `_TokenInitialization.from_str`,
# held-out set 30: "no constructor argument could be guessed"): one of the members' values.
ENUM_POLICY = '''
import enum


class _Init(enum.Enum):
    UNIFORM = "uniform"
    NORMAL = "normal"

    @classmethod
    def from_str(cls, initialization: str) -> "_Init":
        return cls(initialization)

    def apply(self, x, d):
        if self == _Init.UNIFORM:
            nn.init.uniform_(x, a=-d ** -0.5, b=d ** -0.5)
        else:
            nn.init.normal_(x, std=d ** -0.5)


class NumericalTokenizer(nn.Module):
    def __init__(self, n_features: int, d_token: int, bias: bool, initialization: str) -> None:
        super().__init__()
        init = _Init.from_str(initialization)
        self.weight = nn.Parameter(torch.empty(n_features, d_token))
        self.bias = nn.Parameter(torch.empty(n_features, d_token)) if bias else None
        for parameter in [self.weight, self.bias]:
            if parameter is not None:
                init.apply(parameter, d_token)

    def forward(self, x):
        x = self.weight[None] * x[..., None]
        return x if self.bias is None else x + self.bias[None]
'''


def test_an_option_handed_to_an_enum_of_the_file_is_one_of_its_values(tmp_path):
    init = _first_of(ENUM_POLICY, "NumericalTokenizer").init_code
    assert init[3] in ("'uniform'", "'normal'"), init
    assert_all_runnable(tmp_path, "tokenizer.py", ENUM_POLICY, 1)
