"""Guessing one constructor argument from its name, type hint and use: sizes, counts,
regularisers, flags, layer classes and wrapped modules. Used by synthesis.py.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from autotriton.harvesting.signatures import unwrap_optional


_SIZE_WORDS = ("dim", "size", "channel", "chans", "feature", "hidden", "embed", "width", "n_embd", "d_model",
               "planes", "units", "ch", "c_in", "c_out", "inp", "oup", "filters", "neurons", "nf", "ngf", "ndf")


# Guesses from the argument's name alone, as (name pattern, value): the first match wins. Tables
# in the order _guess_value consults them, between the guesses that also read the type hint.
_REGULARISER_RULES: tuple[tuple[str, Any], ...] = (
    (r"(drop|dropout|^p$|_p$|prob)", 0.0),
    (r"(^|_)(eps|epsilon)$", 1e-5),  # not `n_steps`, `timesteps`, `reps`
    (r"momentum", 0.1),
)
_LAYER_RULES: tuple[tuple[str, Any], ...] = (
    (r"(group)", 4),
    (r"(kernel|ksize|^k$|kernel_size)", 3),
    (r"(stride)", 1),
    (r"output_padding|out_padding", 0),  # must stay below the stride (1): "output padding must be smaller than ..."
    (r"(padding|^pad$)", 1),
    (r"(dilation)", 1),
    (r"(num_layers|n_layers|depth|num_blocks|n_blocks|layers$|repeats|num_convs)", 2),
    (r"(num_classes|n_classes|classes$|num_labels|(?:^|_)n_out$|num_outputs)", 10),
    (r"(vocab|num_embeddings|n_tokens|num_tokens|n_vocab|ntoken|num_codes|codebook)", 100),
    # an FFT's size: at least a window's length (64, below; torch.stft: "expected 0 < win_length <= n_fft")
    (r"(^|_)(n_?fft|fft_size|fft_len(gth)?|filter_length)$", 64),
    (r"(max_len|max_seq|seq_len|block_size|context|n_ctx|max_position|num_positions|max_length|length)", 64),
)
_SPATIAL_RULES: tuple[tuple[str, Any], ...] = (
    (r"(feat_size|grid_size|feature_size|spatial_size)", 8),
    (r"(img_size|image_size|input_size|resolution|img_res)", 32),
    (r"(patch)", 4),
    (r"(window)", 4),
)


def _by_name(name: str, rules: tuple[tuple[str, Any], ...]) -> tuple[str, Any] | None:
    """(python source, JSON value) of the first rule whose pattern `name` matches."""
    for pattern, value in rules:
        if re.search(pattern, name):
            return repr(value), value
    return None


# A parameter that holds a module, a layer class or a function: by its annotation
# (`fn: Callable`, `net: nn.Module`, `block: Type[nn.Module]`) or its name (`fn`, `net`,
# `norm_layer`, `block_fn`, `image_encoder`...). Wrappers (PreNorm(dim, fn), Residual(fn)) are
# common in real code; an int there fails with "'int' object is not callable".
_MODULE_ANNOTATION = re.compile(r"(Callable|Module\b|Module\]|^Type\[|^type\[|Layer\b|Block\b)")
_MODULE_NAME = re.compile(
    r"^(fn|func|function|net|network|module|model|block|layer|sublayer|body|backbone|encoder|decoder|wrapped|submodule"
    r"|transformer|mlp|ff|ffn|feedforward|attn|attention|vit|unet|cell|branch|inner_module|base_model|base_module)$"
    r"|_(fn|func|net|network|module|model|block|layer|klass|cls|class|encoder|decoder|transformer|mlp|ff|attn|fct)$"
    r"|^(module|block|layer)_(cls|class|type|fn|factory)$")


# A size or count of something by its prefix (`d_model` is the model's width, `n_block` a number of blocks).
_COUNTED_PREFIX = re.compile(r"^(d|n|num|dim|size|hidden|len)_")

# Plurals of per-layer settings, as a network with stages takes them (`kernel_sizes=(3, 5)`).
_PER_STAGE = re.compile(r"(kernel_size|kernel|stride|padding|dilation|depth|patch_size|window_size|window)s$")

# Names of parameters that hold a class to build, not a built module, when passed on.
_CLASS_NAME = re.compile(r"(_layer|_cls|_klass|_class|_type|_factory|_builder|^act|activation)$")


def module_usage(init: ast.FunctionDef | None, name: str) -> str:
    """How __init__ uses a parameter: "called" (a class or factory: `norm_layer(dim)`), "passed"
    (handed to another constructor: `Block(act_layer=act_layer)`), or "held" (kept and applied
    later: `self.fn = fn`)."""
    usage = "held"
    if init is not None:
        for node in ast.walk(init):
            if isinstance(node, ast.Call):
                if isinstance(node.func, ast.Name) and node.func.id == name:
                    return "called"
                if any(kw.arg is None and isinstance(kw.value, ast.Name) and kw.value.id == name for kw in node.keywords):
                    return "unpacked"  # `Block(**block_kwargs)`: a mapping of options
                args = [*node.args, *(kw.value for kw in node.keywords)]
                if any(isinstance(a, ast.Name) and a.id == name for a in args):
                    usage = "passed"
    return usage


#: The guess for a module instance the code wraps and calls (`self.fn = fn`, `self.fn(x)`).
WRAPPED_MODULE = "torch.nn.GELU()"

#: A wrapped module the code calls with more than the input (`self.model(x, times, cache=c)`, a flow
#: or diffusion wrapper's network): no torch layer takes those, so the problem defines this stand-in
#: (STAND_IN_SOURCE, added by synthesis.problem_source): GELU of its first tensor argument (by position,
#: else by keyword; called with no tensor, as a layer factory, it returns a stand-in layer) times one learnt
#: scale (so it has parameters to move and train), every other argument accepted and unused. A
#: network whose attributes or methods the code reads (`backbone.num_features`,
#: `preprocess_net.get_output_dim()`) is given them as keywords: `WrappedNetwork(num_features=32)`;
#: one whose result is unpacked (`v, attn = self.attention(q, k, v)`) returns that many values, its
#: input after the first: `WrappedNetwork(outputs=2)`.
STAND_IN = "WrappedNetwork"
STAND_IN_SOURCE = f'''class {STAND_IN}(torch.nn.Module):
    """Stands in for the network this module wraps: GELU of its first argument, others unused;
    `outputs` values when the wrapping module unpacks its result (the input after the first); the
    attributes (and methods) the wrapping module reads of it are given as keywords."""

    def __init__(self, outputs=1, **fields):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(()))
        self.outputs = outputs
        for name, value in fields.items():
            setattr(self, name, value)

    def forward(self, *args, **kwargs):
        # the first tensor, passed by position or (`self.proj(query=q, key=k, seq_id=ids)`) by name
        x = next((v for v in (*args, *kwargs.values()) if isinstance(v, torch.Tensor)), None)
        if x is None:  # called with sizes, as the layer factory it was handed for (`conv(n_feat, n_feat, 3)`)
            return type(self)(self.outputs)
        y = torch.nn.functional.gelu(x) * self.scale
        return y if self.outputs == 1 else (y,) + (x,) * (self.outputs - 1)
'''


# An annotation that names an instance (`act: nn.Module`, `Optional[nn.Module]`), not a class
# (`Type[nn.Module]`, `Callable[..., nn.Module]`).
_INSTANCE_ANNOTATION = re.compile(r"^(Optional\[)?(torch\.)?(nn\.)?Module\]?$")


def _builds_class(n: str, usage: str, ann: str = "") -> bool:
    """Whether the parameter holds a class (or factory) to build rather than a built module: called
    in __init__, or handed on under a class-like name, unless its annotation says an instance."""
    if usage == "called":
        return True
    return usage == "passed" and bool(_CLASS_NAME.search(n)) and not _INSTANCE_ANNOTATION.match(ann)


def _module_guess(n: str, ann: str, usage: str) -> tuple[str, Any] | None:
    """A wrapped module or function: as an instance, nn.GELU (WRAPPED_MODULE): it takes any float
    input and keeps its shape, and it computes something (with nn.Identity a pure wrapper returned
    its input, which the probe rejects as `returns_input`); as a class __init__ builds, nn.Identity,
    which accepts any constructor arguments, so `block(dim, heads=4)` builds it too."""
    if not (_MODULE_NAME.search(n) or _MODULE_ANNOTATION.search(ann)):
        return None
    if _COUNTED_PREFIX.match(n) and not _MODULE_ANNOTATION.search(ann):
        return None  # `d_model`, `d_ff`, `n_block`, `num_layer`: the size or count of one, not one
    if "int" in ann.lower() or "float" in ann.lower() or ann in ("str", "bool"):
        return None
    code = "torch.nn.Identity" if _builds_class(n, usage, ann) else WRAPPED_MODULE
    return code, code


# An activation's name: `act`, `act_layer`, `hidden_act`, `activation_fn`, `actfn` (a word of its
# own: not `action`, `interaction`, `extract`); `act_dim` and other sizes are not one.
_ACTIVATION = re.compile(r"(^|_)(act|activation|actfn|activ|activations)(_|$)")
_SIZE_SUFFIX = re.compile(r"_(dim|dims|size|sizes|shape|num|space|count|n)$")


# The shape of one sample (an observation, an image, a model's input), not a size.
_SAMPLE_SHAPE = re.compile(r"^(input|in|obs|observation|state|img|image|sample|frame)_shape$")


# A sequence of sequences of ints: `list[list[int]]`, `Sequence[Tuple[int, int]]`, `tuple[tuple[int, ...], ...]`;
# a sequence of ints
_NESTED_INTS = re.compile(r"^(?:Optional\[)?(List|list|Sequence|Tuple|tuple|Iterable)\[(List|list|Sequence|Tuple|tuple|Iterable)\[int\b")
_FLAT_INTS = re.compile(r"^(?:Optional\[)?(List|list|Sequence|Tuple|tuple|Iterable)\[int\b")
# ...and of numbers or flags (a number or flag the name asks for, given as the hinted sequence of it)
_NESTED_NUMBERS = re.compile(r"^(?:Optional\[)?(List|list|Sequence|Tuple|tuple|Iterable)\[(List|list|Sequence|Tuple|tuple|Iterable)\[(int|float|bool)\b")
_FLAT_NUMBERS = re.compile(r"^(?:Optional\[)?(List|list|Sequence|Tuple|tuple|Iterable)\[(int|float|bool)\b")


def _guess_value(name: str, annotation: str, D: int, usage: str = "held") -> tuple[str, Any] | None:
    """(python source, JSON value) for a constructor argument, or None when there is no guess.
    `usage` says whether __init__ calls the parameter (module_usage), for module-valued ones.
    A number the name asks for where the hint asks for a sequence of them (`strides_per_stage:
    list[int]`, `expansion_factors: list[list[int]]`, `dropout_rates: list[list[float]]`) is given as
    that sequence of it; so is a flag (`use_se: list[list[int]]`, one 0/1 per unit: True == 1)."""
    guess = _named_value(name, annotation, D, usage)
    ann = annotation.replace("typing.", "").replace(" ", "")
    if guess is None or type(guess[1]) not in (int, float, bool):
        return guess
    code, value = guess
    if _NESTED_NUMBERS.match(ann):
        return f"[[{code}, {code}], [{code}, {code}]]", [[value, value], [value, value]]
    flat = _FLAT_NUMBERS.match(ann)
    if flat:
        return (f"({code}, {code})" if flat.group(1).lower() == "tuple" else f"[{code}, {code}]"), [value, value]
    return guess


def _named_value(name: str, annotation: str, D: int, usage: str = "held") -> tuple[str, Any] | None:
    """_guess_value's guess from the name and the hint, before a number becomes a hinted sequence."""
    n = name.lower()
    ann = annotation.replace("typing.", "").replace(" ", "")
    if usage == "unpacked":
        return "dict()", {"expr": "dict()"}  # no options: the callee's defaults
    if _PER_STAGE.search(n) and not _COUNTED_PREFIX.match(n) and ann not in ("int", "Optional[int]"):
        # kernel_sizes, strides, depths, window_sizes: one value per stage, two stages (`num_kernels`,
        # `n_strides: int` count them)
        single = _guess_value(_PER_STAGE.sub(lambda m: m.group(1), n), "", D)
        if single is not None and isinstance(single[1], int) and not isinstance(single[1], bool):
            if _NESTED_INTS.match(ann):  # per stage, per unit (`kernel_sizes: list[list[int]]`): _guess_value nests it
                return single
            return f"({single[0]}, {single[0]})", [single[1], single[1]]
    if ann in ("bool",) or n.startswith(("use_", "has_", "is_", "with_", "enable")) or n in ("bias", "affine", "residual", "causal", "batch_first", "inplace", "normalize", "learnable", "elementwise_affine"):
        return "False" if n in ("inplace",) else "True", True if n not in ("inplace",) else False
    found = _by_name(n, _REGULARISER_RULES)
    if found and not (ann in ("int", "Optional[int]") and isinstance(found[1], float)):  # `n_drop: int` is a count
        return found
    if re.search(r"(heads?|n_head|nhead|num_head)", n):
        return ("2" if "kv" in n else "4"), (2 if "kv" in n else 4)
    if re.fullmatch(r"(sr|fs|sample_?rate|sampling_?rate|sampling_freq(uency)?|audio_sample_rate)", n):
        return "16000", 16000  # a sample rate, in Hz: a size guess (32 Hz) puts every frequency above Nyquist
    if re.search(r"(^|_)(residual_)?streams$", n):
        return "2", 2  # residual streams folded into the batch (`(b s) ... d`): the batch of 2 holds them
    found = _by_name(n, _LAYER_RULES)
    if found:
        return found
    if _SAMPLE_SHAPE.search(n) and not ann.startswith(("int", "Optional[int]")):
        # the shape of one observation or image, channels first (`nn.Conv2d(input_shape[0], ...)`,
        # `torch.zeros(1, *img_shape)`, `int(np.prod(obs_shape))`), large enough for an Atari-style
        # stack of strided convolutions (8/4, 4/2, 3/1)
        return "(3, 64, 64)", [3, 64, 64]
    if ("Tuple" in ann or "tuple" in ann) and re.search(r"(size|window|shape|resolution|grid)", n):
        small = 4 if "window" in n or "patch" in n else 8
        return f"({small}, {small})", [small, small]
    found = _by_name(n, _SPATIAL_RULES)
    if found:
        return found
    if re.search(r"(^|_)(mask|keep|sample|sampling|noise|mix|overlap|train|test|val)_ratio$", n):
        return "0.5", 0.5  # a fraction of something
    if re.search(r"(ratio|expansion|expand|mult|factor|scale)", n):
        # an int unless the hint says float: `dims * ffn_ratio` sizes a layer, `downsampling_ratio` is a
        # kernel size; `int(dim * mlp_ratio)` takes either
        return ("2.0", 2.0) if "float" in ann else ("2", 2)
    if re.search(r"(temperature|tau|alpha|beta|gamma|margin|weight|lambda|lr|momentum)", n):
        return "1.0", 1.0
    activation = bool(_ACTIVATION.search(n)) and not _SIZE_SUFFIX.search(n)  # not `action_dim`, `act_dim`
    if activation and "str" in ann:
        return "'relu'", "relu"  # `activation: str`: an activation by name, the one every registry knows
    if activation and "float" not in ann and "int" not in ann:
        # an activation kept and applied in forward (`self.act(x)`) must be built already
        code = "torch.nn.ReLU" if _builds_class("act", usage, ann) else "torch.nn.ReLU()"
        return code, code
    if re.search(r"(^|_)(ind|idx|index)$", n):
        return "0", 0  # a position in a list of layers or outputs: the first always exists
    if re.search(r"(norm_layer|norm$)", n):
        return "torch.nn.LayerNorm", "torch.nn.LayerNorm"
    found = _module_guess(n, ann, usage)
    if found:
        return found
    nested = _NESTED_INTS.match(ann)
    if nested:
        # one list per stage (pytorchcv's `channels: list[list[int]]`, each stage's units' widths,
        # iterated twice): two stages of two, the outer and inner kinds as the hint says; widths
        # growing from D, as a network's do (a dense block's unit adds `out - in` channels)
        values = [[D + 16, D + 32], [D + 48, D + 64]]
        inner = "({}, {})" if nested.group(2).lower() == "tuple" else "[{}, {}]"
        outer = "({}, {})" if nested.group(1).lower() == "tuple" else "[{}, {}]"
        return outer.format(*(inner.format(*v) for v in values)), values
    if ann.startswith(("Tuple[int", "tuple[int")):
        return f"({D}, {D})", [D, D]  # a tuple where the hint says so (beartype & co check it)
    if ann.startswith(("List[int]", "list[int]", "Sequence[int]")) or re.search(r"(dims|sizes|channels_list|widths|hidden_sizes|features_list)$", n):
        return f"[{D}, {D}]", [D, D]
    if ann in ("float", "Optional[float]"):
        return "1.0", 1.0
    if ann.startswith(("Sequence[float]", "List[float]", "list[float]", "Tuple[float", "tuple[float", "Iterable[float]")):
        return "[0.25, 0.5]", [0.25, 0.5]  # fractions: cutoffs, probabilities, scales
    if ann == "str":
        # an identifier (`adapter_name: str`, a key into the module's own dicts): any name serves
        return ("'default'", "default") if re.search(r"(^|_)(name|key|id|prefix|tag)$", n) else None
    if ann in ("int", "Optional[int]") or any(w in n for w in _SIZE_WORDS) or re.match(r"^(n|num|d|in|out)(_|$)", n):
        return str(D), D
    if ann == "" or "int" in ann:
        return str(D), D
    if re.fullmatch(r"(Optional\[)?(torch\.)?Size\]?", ann):
        return f"torch.Size([{D}])", [D]  # the shape of one sample (sbi's `input_shape: torch.Size`)
    if re.search(r"\bfloat\b", ann):
        return "1.0", 1.0  # `mean: Union[Tensor, float]`: a scalar serves where a tensor would
    return None


def _size_placeholder(value: ast.expr) -> bool:
    """A default that stands for "not known yet": None or a negative integer (-1)."""
    if isinstance(value, ast.Constant) and value.value is None:
        return True
    return isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and isinstance(value.operand, ast.Constant) \
        and type(value.operand.value) is int


def _none_tested_fields(cls: ast.ClassDef) -> set[str]:
    """Fields the dataclass's own methods test against None (`if self.head_size is None: ...`, `if
    self.n_expert_groups is not None: assert ...`): None is a state it handles (derived later, or a
    feature left off, litgpt's Config), not a size left for the caller."""
    out: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)) \
                and isinstance(node.comparators[0], ast.Constant) and node.comparators[0].value is None:
            target = node.left
        elif isinstance(node, (ast.If, ast.IfExp, ast.While)):
            target = node.test
        else:
            continue
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            out.add(target.attr)
    return out


def dataclass_argument(classes: dict[str, ast.ClassDef], annotation: str, D: int) -> tuple[str, Any] | None:
    """A parameter annotated with a dataclass of its own file (`config: MambaConfig`, `args:
    ModelArgs`): built with its required fields guessed from their names and types, so what its
    __post_init__ derives (`d_inner`, `dt_rank`) exists as the code expects, and integer fields
    whose default is a placeholder (-1, None) given a size. None otherwise."""
    name = unwrap_optional(annotation)
    cls = classes.get(name)
    # @dataclass, @dataclasses.dataclass, @dataclass(frozen=True)
    if cls is None or not any(ast.unparse(d.func if isinstance(d, ast.Call) else d) in ("dataclass", "dataclasses.dataclass")
                              for d in cls.decorator_list):
        return None
    fields = []
    handled = _none_tested_fields(cls)
    for node in cls.body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name) \
                or "ClassVar" in ast.unparse(node.annotation):
            continue
        annotation = ast.unparse(node.annotation)
        if node.value is None:
            guess = _guess_value(node.target.id, annotation, D)
            if guess is None:
                return None
            fields.append((node.target.id, guess))
        elif _size_placeholder(node.value) and unwrap_optional(annotation.replace(" | None", "").replace("None | ", "")) == "int" \
                and node.target.id not in handled:
            # `dim_in: int = -1`, `dim_out: Optional[int] = None`: a size left for later (inferred
            # from data by the framework): given one, as a required size would be (not a list of ints,
            # `sliding_window_indices: list[int] | None = None`, which stays None)
            guess = _guess_value(node.target.id, "int", D)
            if guess is not None and type(guess[1]) is int:
                fields.append((node.target.id, guess))
    code = f"{name}(" + ", ".join(f"{f}={g[0]}" for f, g in fields) + ")"
    return code, {"expr": code, "kind": "dataclass", "fields": {f: g[1] for f, g in fields}}


def _config_class(classes: dict[str, ast.ClassDef]) -> ast.expr | None:
    """The `config_class = ...` expression of Model or of the nearest base of it in the file that sets one."""
    seen, todo = set(), ["Model"]
    while todo:
        cls = classes.get(name := todo.pop(0))
        if cls is None or name in seen:
            continue
        seen.add(name)
        for node in cls.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "config_class" for t in node.targets):
                return node.value
        todo += [b.id for b in cls.bases if isinstance(b, ast.Name)]
    return None


def config_class_argument(classes: dict[str, ast.ClassDef], D: int) -> tuple[str, Any] | None:
    """A Hugging Face style model's configuration: `config_class = EdsrConfig` on Model or a base of
    it in the file names the class its `config` argument must be an instance of (PreTrainedModel
    refuses anything else: "should be an instance of class `PretrainedConfig`"). Built with its
    defaults, and integer fields left at None (`scale: int = None`) given one; a package's class
    (`config_class = BertConfig`, imported) with its defaults. None otherwise (`config_class = None`,
    the framework base's own)."""
    value = _config_class(classes)
    if not isinstance(value, (ast.Name, ast.Attribute)) or ast.unparse(value) == "PretrainedConfig":
        return None
    config = classes.get(value.id) if isinstance(value, ast.Name) else None
    init = next((n for n in config.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) if config else None
    fields = []
    if init is not None:
        args = init.args.args[1:] + init.args.kwonlyargs
        defaults = [None] * (len(init.args.args) - 1 - len(init.args.defaults)) + init.args.defaults + init.args.kw_defaults
        for arg, default in zip(args, defaults):
            hint = ast.unparse(arg.annotation) if arg.annotation is not None else ""
            if isinstance(default, ast.Constant) and default.value is None and "int" in hint:
                guess = _guess_value(arg.arg, "int", D)
                if guess is not None and type(guess[1]) is int:
                    fields.append((arg.arg, guess))
    code = f"{ast.unparse(value)}(" + ", ".join(f"{f}={g[0]}" for f, g in fields) + ")"
    return code, {"expr": code, "kind": "config", "fields": {f: g[1] for f, g in fields}}


def holds_modules(init: ast.FunctionDef, name: str) -> bool:
    """Whether __init__ hands `name` (a *args) to nn.ModuleList / nn.Sequential / nn.ModuleDict."""
    for node in ast.walk(init):
        if isinstance(node, ast.Call) and re.search(r"(ModuleList|Sequential|ModuleDict)$", ast.unparse(node.func)):
            for arg in node.args:
                inner = arg.value if isinstance(arg, ast.Starred) else arg
                if isinstance(inner, ast.Name) and inner.id == name:
                    return True
    return False


# Options that fetch weights from the network when left at their defaults (`backbone_pretrained: bool
# = True`, `encoder_weights="imagenet"`, `download=True`): a problem runs offline and is
# self-contained, so they are turned off (False, or None for a named set of weights)
_FETCHING = re.compile(r"pretrain|(^|_)(download|from_hub|load_weights|use_hub)$")
_NAMED_WEIGHTS = re.compile(r"pretrain|(^|_)weights$")


def offline_default(name: str, default: Any) -> tuple[str, Any] | None:
    """(source, value) that turns off an option fetching weights by default (`backbone_pretrained=True`
    -> False, `encoder_weights="imagenet"` -> None), or None for any other parameter."""
    if default is True and _FETCHING.search(name.lower()):
        return "False", False
    if isinstance(default, str) and default and _NAMED_WEIGHTS.search(name.lower()):
        return "None", None
    return None


def shrunk_default(name: str, annotation: str, default: Any, D: int) -> tuple[str, Any] | None:
    """(source, value) of a large size default made small, or None where it stays: an int above 64
    becomes the name's size guess (`image_size=224` -> 32), and so does each such int of a tuple
    or list of ints (`input_size=(224, 224)` -> (32, 32), `img_size=[256, 128]` -> [32, 32]: a
    model that derives its token grid from the pair wants its input at those sizes)."""
    sequence = isinstance(default, (tuple, list))
    items = list(default) if sequence else [default]
    if not items or not all(type(v) is int for v in items) or max(items) <= 64:
        return None
    g = _guess_value(name, "" if sequence else annotation, D)
    if g is None or type(g[1]) is not int:
        return None
    values = [g[1] if 64 < v and g[1] < v else v for v in items]
    if values == items:
        return None
    if not sequence:
        return str(values[0]), values[0]
    return (repr(values), values) if isinstance(default, list) else (repr(tuple(values)), values)


def fit_to_window(params: list, guessed: list[str], values: dict[str, Any], codes: list[str], specs: list[Any],
                  spatial_names: re.Pattern) -> None:
    """Guessed spatial sizes made multiples of the window size the constructor keeps by default: a
    Swin block (`window_size=7`) partitions its (32, 32) resolution into windows of 7 and fails
    (`view(B, H // 7, 7, W // 7, 7, C)`); (28, 28) splits evenly. `spatial_names`: the parameters
    that are spatial sizes (synthesis._SPATIAL_NAMES). Changes `values`, `codes` and `specs` in place."""
    window = None
    for p in params:
        if p.name not in guessed and "window" in p.name.lower() and p.default is not None:
            try:
                w = ast.literal_eval(p.default)
            except (ValueError, SyntaxError):
                continue
            if type(w) is int and w > 1:
                window = w
                break
    if window is None:
        return

    def fitted(v: Any) -> Any:
        if type(v) is int and v > 1 and v % window:
            return max(window, v - v % window)
        if isinstance(v, (list, tuple)) and v and all(type(x) is int for x in v):
            return [fitted(x) for x in v]
        return v

    for i, p in enumerate(params):
        if i >= len(codes) or p.name not in guessed or not spatial_names.search(p.name.lower()):
            continue
        new = fitted(values.get(p.name))
        if new != values.get(p.name):
            values[p.name] = new
            codes[i] = repr(tuple(new)) if isinstance(new, list) else repr(new)
            specs[i] = {"name": p.name, "value": new}
