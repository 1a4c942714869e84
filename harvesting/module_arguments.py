"""Constructor arguments that hold a module, or choose a kind of layer, repaired from the probe's
error (error_repairs.py tries these first):

- layer_arguments: a torch layer where an argument was guessed as a plain module (nn.GELU from
  argument_guesses.WRAPPED_MODULE, the stand-in network, nn.Identity, a namespace of the attributes
  read of it) and the code wants one with weights. Adapters and wrappers read what their layer is
  made of: peft's tuner layers ("Unsupported layer type <class '...GELU'>" unless nn.Linear,
  nn.Conv2d or nn.Embedding), weight-norm wrappers (`module.weight`), quantisation wrappers
  (`layer.in_features`). The layer is the one the attribute read asks for (`in_channels` ->
  nn.Conv2d), else the one the class is named after (peft's `Conv2d` wrapper), else nn.Linear, with
  a second kind after it; square, of the guess's width D, so an input of that width runs through it.
- stand_in_arguments: the stand-in network where nn.GELU is called with more than its input
  (`self.main_module.forward(x, self.indices)`; a direct call `self.fn(x, idx)` is read statically
  by usage_kinds, a call of its `.forward` is not).
- dimension_arguments: 2, then 1, for an int that picks a layer's dimensionality by name
  (`getattr(nn, f"Conv{n_dim}d")` with n_dim guessed as a width: "no attribute 'Conv32d'").
- sequence_arguments: lists where tuples were guessed and the code concatenates them to a list
  (fastai's tabular models: `[n_emb + n_cont] + layers + [out_sz]`), and the other way round.
- norm_arguments: a batch norm of the map's rank where a `norm_layer` guessed as nn.LayerNorm met
  a channels-first map in a convolution block.
- isinstance_arguments: what a failed `assert isinstance(x, nn.BatchNorm2d)` (or `nn.Module`) asks
  of a norm or activation argument: a factory of that norm, an instance of that module.
"""

from __future__ import annotations

import ast
import re

import torch

from autotriton.harvesting.argument_guesses import _MODULE_NAME, STAND_IN
from autotriton.harvesting.shape_repairs import normalized_mismatch
from autotriton.harvesting.signatures import model_params
from autotriton.harvesting.synthesis import Attempt

# The plain modules synthesis gives, by the class name an error shows; and the namespace of the
# attributes read (`base_layer.in_features`), for a parameter named like a module
_GIVEN = {"GELU": "torch.nn.GELU()", "WrappedNetwork": "WrappedNetwork(", "Identity": "torch.nn.Identity",
          "SimpleNamespace": "types.SimpleNamespace("}
_NOT_A_LAYER = re.compile(r"'(?:types\.)?(GELU|WrappedNetwork|Identity|SimpleNamespace)' object has no attribute '(\w+)'"
                          r"|<class '[\w.]*?\b(GELU|WrappedNetwork|Identity|SimpleNamespace|type)'>")
# a layer class given where the code wanted a built layer ("Unsupported layer type <class 'type'>":
# `base_layer` handed on like a `norm_layer` class, guessed as one)
_CLASS_CODE = re.compile(r"torch\.nn\.[A-Za-z]\w*")
# attributes that only some torch layers have -> that layer
_ATTRIBUTE_LAYER = {
    "in_features": "Linear", "out_features": "Linear",
    "in_channels": "Conv2d", "out_channels": "Conv2d", "kernel_size": "Conv2d", "stride": "Conv2d",
    "padding": "Conv2d", "dilation": "Conv2d", "groups": "Conv2d", "padding_mode": "Conv2d",
    "num_embeddings": "Embedding", "embedding_dim": "Embedding", "padding_idx": "Embedding", "max_norm": "Embedding",
}
# what every layer with weights has: any of them does
_WEIGHT_ATTRIBUTES = {"weight", "bias", "_parameters"}
_LAYER_CODE = {
    "Linear": "torch.nn.Linear({D}, {D})",
    "Conv1d": "torch.nn.Conv1d({D}, {D}, 3, padding=1)",
    "Conv2d": "torch.nn.Conv2d({D}, {D}, 3, padding=1)",
    "Conv3d": "torch.nn.Conv3d({D}, {D}, 3, padding=1)",
    "Embedding": "torch.nn.Embedding({D}, {D})",
}
_NAMED_LAYER = re.compile(r"(Linear|Conv1d|Conv2d|Conv3d|Embedding)(?![a-z])")


def _replaced(attempt: Attempt, held: list[int], code: str, value: object, label: str) -> Attempt:
    """`attempt` with the constructor arguments at `held` given as `code` (their specs' value `value`)."""
    codes, specs = list(attempt.init_code), list(attempt.init_spec)
    for k in held:
        codes[k] = code
        specs[k] = {**specs[k], "value": value} if k < len(specs) and isinstance(specs[k], dict) else value
    return Attempt(codes, specs, attempt.input_code, attempt.input_spec, label=f"{attempt.label} {label}")


def _kinds(attribute: str | None, class_name: str) -> list[str]:
    """The layer kinds to try, best first: the attribute's, the class name's, then Linear and Conv2d."""
    first = [_ATTRIBUTE_LAYER[attribute]] if attribute in _ATTRIBUTE_LAYER else []
    named = _NAMED_LAYER.findall(class_name)
    return list(dict.fromkeys([*first, *named, "Linear", "Conv2d"]))


def layer_arguments(standalone: str, attempt: Attempt, detail: str, class_name: str = "") -> list[Attempt]:
    """Attempts with the constructor argument(s) guessed as a plain module given a torch layer,
    when `detail` (the probe's error) says the code wanted one; up to two layer kinds, best first.
    [] when the error is not about a module we gave, or no argument of the attempt holds one."""
    m = _NOT_A_LAYER.search(detail or "")
    if m is None:
        return []
    given, attribute = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), None)
    if attribute is not None and attribute not in _ATTRIBUTE_LAYER and attribute not in _WEIGHT_ATTRIBUTES:
        return []  # a field the stand-in lacks (`num_features`): usage_guess's business, not a layer's
    params = [p for p in model_params(standalone, "__init__") or () if p.kind == "pos"]

    def holds(k: int, code: object) -> bool:
        if not isinstance(code, str):
            return False
        if given == "type":
            return bool(_CLASS_CODE.fullmatch(code))
        return code.startswith(_GIVEN[given]) and (
            given != "SimpleNamespace" or (k < len(params) and bool(_MODULE_NAME.search(params[k].name.lower()))))

    held = [k for k, code in enumerate(attempt.init_code) if holds(k, code)]
    if not held:
        return []
    sized = re.search(r"D=(\d+)", attempt.label)
    D = int(sized.group(1)) if sized else 32
    return [_replaced(attempt, held, code, code, f"{kind.lower()} layer")
            for kind in _kinds(attribute, class_name)[:2] for code in [_LAYER_CODE[kind].format(D=D)]]


_CALLED_WITH_MORE = re.compile(r"\b(GELU|Identity)\.forward\(\) (?:takes 2 positional arguments but \d+ were given"
                               r"|got an unexpected keyword argument)")


def stand_in_arguments(attempt: Attempt, detail: str) -> list[Attempt]:
    """The attempt with the arguments guessed as nn.GELU (or nn.Identity) given the stand-in network,
    which takes any further arguments, when the error says the module was called with more; else []."""
    m = _CALLED_WITH_MORE.search(detail or "")
    if m is None:
        return []
    prefix = _GIVEN[m.group(1)]
    held = [k for k, code in enumerate(attempt.init_code) if isinstance(code, str) and code.startswith(prefix)]
    if not held:
        return []
    return [_replaced(attempt, held, f"{STAND_IN}()", f"{STAND_IN}()", "stand-in network")]


_NO_SUCH_LAYER = re.compile(r"module 'torch\.nn(?:\.functional)?' has no attribute '[A-Za-z_]+?(\d+)d'")


def dimension_arguments(attempt: Attempt, detail: str) -> list[Attempt]:
    """Attempts with the int argument that named a layer of no such dimensionality (`Conv32d`) at 2,
    then 1; else []."""
    m = _NO_SUCH_LAYER.search(detail or "")
    if m is None:
        return []
    wrong = int(m.group(1))
    held = [k for k, code in enumerate(attempt.init_code) if code == str(wrong)]
    # of several arguments of that value (widths guessed alike), the ones named as dimensions
    named = [k for k in held if k < len(attempt.init_spec) and isinstance(attempt.init_spec[k], dict)
             and re.search(r"dim|rank|spatial", str(attempt.init_spec[k].get("name", "")).lower())]
    held = named or held
    return [_replaced(attempt, held, str(n), n, f"{n}-d layers") for n in (2, 1) if held and n != wrong]


_CONCATENATED = re.compile(r'can only concatenate (list|tuple) \(not "(tuple|list)"\) to (?:list|tuple)')


def sequence_arguments(attempt: Attempt, detail: str) -> list[Attempt]:
    """The attempt with its tuple-valued constructor arguments given as lists (or list-valued as
    tuples) when the error says the code concatenated one kind to the other; else []."""
    m = _CONCATENATED.search(detail or "")
    if m is None:
        return []
    want, got = (list, tuple) if m.group(1) == "list" else (tuple, list)
    codes, specs, changed = list(attempt.init_code), list(attempt.init_spec), False
    for k, code in enumerate(codes):
        try:
            value = ast.literal_eval(code) if isinstance(code, str) else None
        except (ValueError, SyntaxError):
            continue
        if type(value) is got:
            converted = want(value)
            codes[k] = repr(converted)
            if k < len(specs) and isinstance(specs[k], dict):
                specs[k] = {**specs[k], "value": list(converted)}
            changed = True
    if not changed:
        return []
    return [Attempt(codes, specs, attempt.input_code, attempt.input_spec, label=f"{attempt.label} {want.__name__}s")]



def norm_arguments(attempt: Attempt, detail: str) -> list[Attempt]:
    """The attempt with a `norm_layer` guessed as nn.LayerNorm given the batch norm of the map's rank
    (nn.BatchNorm2d for [B, C, H, W]) when LayerNorm refused a channels-first map whose channels it
    was built for: a convolution block (torchvision's MaxVit and RegNet blocks, timm's Res2Net) builds
    its norm as `norm_layer(channels)`. Else []."""
    want, got = normalized_mismatch(detail) or ([], [])
    spatial = len(got) - 2
    if len(want) != 1 or spatial < 1 or got[1] != want[0] or spatial > 3:
        return []
    held = [k for k, code in enumerate(attempt.init_code) if code == "torch.nn.LayerNorm"]
    norm = f"torch.nn.BatchNorm{spatial}d"
    return [_replaced(attempt, held, norm, norm, "batch norm")] if held else []


# a failed check of what a module argument built: `assert isinstance(self.bn, nn.BatchNorm2d)`,
# `assert isinstance(activation, nn.Module)` (the traceback shows the assert line, then AssertionError)
_ISINSTANCE_ASSERT = re.compile(r"assert\s*\(?\s*isinstance\(\s*([\w.]+)\s*,\s*(?:torch\.)?nn\.(\w+)\s*\)\s*\)?[^|\n]*(?:\||\n).*AssertionError",
                                re.DOTALL)
_NORM_ARG = re.compile(r"(^|_)(norm|normali[sz]ation|bn)($|_)")  # norm_layer, normalization, bn
_ACT_ARG = re.compile(r"(^|_)(act|activ|activation|nonlinearity)($|_)")  # act_layer, activation


def isinstance_arguments(attempt: Attempt, detail: str) -> list[Attempt]:
    """The attempt with its norm or activation arguments given as the failed isinstance assert asks:
    pytorchcv's conv blocks build `self.bn` by calling `normalization(num_features=...)` and assert
    it is an nn.BatchNorm2d (a norm factory: `lambda *args, **kwargs: torch.nn.BatchNorm2d(*args,
    **kwargs)`, a function where the code tells functions from modules with `isfunction`), and take an
    `activation` that is an nn.Module instance (the guessed class, built). Else []."""
    m = _ISINSTANCE_ASSERT.search(detail or "")
    if m is None:
        return []
    checked, cls = m.group(1), m.group(2)
    names = [spec.get("name", "") if isinstance(spec, dict) else "" for spec in attempt.init_spec]
    norm = "Norm" in cls
    if "." not in checked and checked in names:
        held = [names.index(checked)]
    else:
        pattern = _NORM_ARG if norm else _ACT_ARG
        held = [k for k, name in enumerate(names) if pattern.search(name.lower())]
    if not held:
        return []
    if norm:
        code = f"lambda *args, **kwargs: torch.nn.{cls}(*args, **kwargs)"
        return [_replaced(attempt, held, code, {"expr": code}, cls)]
    if cls == "Module":  # each argument's guessed class built, else an Identity
        for k in held:
            given = attempt.init_code[k] if k < len(attempt.init_code) else ""
            built = f"{given}()" if re.fullmatch(r"torch\.nn\.[A-Z]\w*", given) else "torch.nn.Identity()"
            attempt = _replaced(attempt, [k], built, built, "built")
        return [attempt]
    if not isinstance(getattr(torch.nn, cls, None), type):
        return []
    return [_replaced(attempt, held, f"torch.nn.{cls}()", f"torch.nn.{cls}()", cls)]


# A number given where the module keeps a tensor: "cannot assign 'float' as buffer 'pos_weight' (torch.nn.Buffer,
# torch.Tensor or None expected)" (older torch: "... 'float' object to buffer ..."; a constructor argument
# registered as a buffer, then reassigned), "argument 'pos_weight' (position 4) must be Tensor, not float"
# (a loss's class weight handed to the functional form)
_WANTS_TENSOR = re.compile(r"cannot assign '(?:float|int)' (?:object to|as) buffer '(\w+)'|"
                           r"argument '(\w+)'[^\n]{0,30}? must be Tensor, not (?:float|int)")


def tensor_argument(standalone: str, attempt: Attempt, detail: str) -> Attempt | None:
    """The attempt with the number-valued constructor argument an error names (as a buffer or an
    argument of the same name) given as a 1-element tensor of that number, or None. An argument
    left at its default is passed, with the defaults of the parameters before it."""
    m = _WANTS_TENSOR.search(detail)
    if m is None:
        return None
    name = m.group(1) or m.group(2)
    params = [p for p in model_params(standalone, "__init__") or () if p.kind == "pos"]
    i = next((k for k, p in enumerate(params) if p.name == name), None)
    if i is None:
        return None
    codes, specs = list(attempt.init_code), list(attempt.init_spec)
    if len(codes) != len(specs) or any(p.default is None for p in params[len(codes):i + 1]):
        return None
    for p in params[len(codes):i + 1]:  # left at their defaults so far: written out, up to the one named
        codes.append(p.default or "None")
        specs.append({"kind": "default", "code": p.default})
    try:
        value = ast.literal_eval(codes[i])
    except (ValueError, SyntaxError):
        return None
    if type(value) not in (int, float):
        return None
    codes[i] = f"torch.tensor([{float(value)!r}])"
    specs[i] = {"kind": "tensor", "shape": [1], "dtype": "float32", "value": float(value)}
    return Attempt(codes, specs, attempt.input_code, attempt.input_spec, label=f"{attempt.label} tensor {name}")
