"""The value a constructor parameter's usage asks for (usage_kinds.Usage), as python source and
its JSON spec: a sequence of the right length and items, a module that is called (with the
attributes and methods the code reads of it), a mapping with the keys read, a namespace, an
axis, a tensor. Only the usage and the name's own guess are read; nothing here executes
harvested code. Used by synthesis.py.
"""

from __future__ import annotations

from autotriton.harvesting.argument_guesses import STAND_IN, WRAPPED_MODULE, _guess_value
from autotriton.harvesting.usage_kinds import Usage


_IDENTITY = WRAPPED_MODULE  # a called item: a module that computes and keeps the shape


def _item_code(usage: Usage | None, D: int = 32) -> tuple[str, object]:
    """One item of a sequence: a module when it is called; a shape when it is a sequence itself
    (`dims_in[0][0]`, `len(dims_in[0])`: a list of input shapes), one sample's shape as the first
    input guess has it, (D, 8, 8); else a small size."""
    if usage is not None and usage.called:
        return _IDENTITY, _IDENTITY
    if usage is not None and usage.mapping:
        return "dict()", {"expr": "dict()"}
    if usage is not None and (usage.indexed or usage.sequence) and not (usage.tensor or usage.attributes):
        return f"({D}, 8, 8)", [D, 8, 8]
    return "8", 8


def _field_guess(usage: Usage, attr: str, D: int) -> tuple[str, object] | None:
    """A config field's value: one of the strings its own use is compared with or handed to an
    Enum as (`Activation(cfg.activation)`), else the guess from its name."""
    choices = usage.attribute_choices.get(attr)
    return (repr(choices[0]), choices[0]) if choices else _guess_value(attr, "", D)


def _tensor_guess(D: int) -> tuple[str, object]:
    """A tensor constructor argument (a mask, a permutation, a bias): D alternating 0/1 integers,
    which index, permute-select and mask alike (`masked_select(m <= 0)` keeps half)."""
    src = f"torch.arange({D}) % 2"
    return src, {"expr": src}


# What every torch.nn.Module already has: read of a wrapped network, they need no stand-in field.
_MODULE_API = {"forward", "parameters", "named_parameters", "buffers", "named_buffers", "children", "named_children",
               "modules", "named_modules", "state_dict", "load_state_dict", "to", "cpu", "cuda", "half", "float",
               "double", "bfloat16", "type", "train", "eval", "training", "requires_grad_", "zero_grad", "apply",
               "register_buffer", "register_parameter", "register_module", "add_module", "get_submodule",
               "get_parameter", "extra_repr", "register_forward_hook", "register_forward_pre_hook"}
# The stand-in's own: a field of that name would clash with its keyword or replace its parameter.
_STAND_IN_OWN = {"outputs", "scale"}
_NOT_FIELDS = _MODULE_API | _STAND_IN_OWN
# A method asked for a value (`get_output_dim()`, `compute_hidden_size()`): the value its name after the verb says.
_GETTER_VERB = ("get_", "compute_", "calc_", "calculate_")


def _network_fields(usage: Usage, D: int) -> list[tuple[str, str]]:
    """The stand-in network's keywords for what the code reads of it: each attribute its name's
    guess (`num_features=32`), each method a function giving its name's guess (`get_output_dim=
    lambda *args, **kwargs: 32`); names nothing guesses are left out."""
    out: list[tuple[str, str]] = []
    for name in usage.attributes:
        guess = _guess_value(name, "", D) if name not in _NOT_FIELDS else None
        if guess is not None:
            out.append((name, guess[0]))
    for name in usage.methods:
        if name in _NOT_FIELDS or name in usage.attributes:
            continue
        stem = next((name[len(v):] for v in _GETTER_VERB if name.startswith(v)), name)
        guess = _guess_value(stem, "", D)
        if guess is not None:
            out.append((name, f"lambda *args, **kwargs: {guess[0]}"))
    return out


def usage_guess(usage: Usage, current: tuple[str, object] | None, D: int, sized: bool = False) -> tuple[str, object] | None:
    """(python source, JSON value) the usage asks for, or None when `current` (the guess from the
    name and type hint) already is of that kind, or the usage says nothing decisive. A sequence of
    numbers repeats the name's scalar guess when it is specific (a kernel size's 3), or a width D
    when `sized` (the name says it is a size), else 8 (a small length or shape)."""
    code = current[0] if current else ""
    value = current[1] if current else None
    if usage.named and code == WRAPPED_MODULE:
        # a function the code names (`if function.__name__ == '<lambda>':`): a torch function has a
        # name, a module instance has none
        return "torch.tanh", "torch.tanh"
    if usage.string and not (usage.called or usage.mapping or usage.tensor or usage.sequence):
        # `activation.endswith("glu")`: a layer's name, not the layer (nn.ReLU -> "relu"); else a neutral option
        if isinstance(value, str) and not code.startswith("torch."):
            return None
        text = code.rsplit(".", 1)[-1].split("(")[0].lower() if code.startswith("torch.nn.") else "none"
        return repr(text), text
    scalar = value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
    if usage.sequence or (usage.indexed and (scalar or isinstance(value, list)) and not usage.called and not usage.mapping
                          and not usage.tensor):
        if usage.item_arity:
            parts = [_item_code(usage.item_parts[i] if i < len(usage.item_parts) else None) for i in range(usage.item_arity)]
            item = "(" + ", ".join(c for c, _ in parts) + ")"
            n = usage.length or 2
            src = "[" + ", ".join([item] * n) + "]"
            return src, {"expr": src}
        if usage.item is not None and usage.item.called:
            if "ModuleList" in code or "Sequential" in code:
                return None
            n = usage.length or 2
            # items called with more than the input (`layer(x, attn_mask=mask)`): the stand-in network
            item = STAND_IN + "()" if usage.item.call_extra else _IDENTITY
            src = "torch.nn.ModuleList([" + ", ".join([item] * n) + "])"
            return src, {"expr": src}
        if isinstance(value, list) and len(value) >= usage.indexed:
            return None
        if usage.permutation:
            return "(0, 1, 2, 3)", [0, 1, 2, 3]  # the axes of a rank-4 input, the first input guess
        item_code, item_value = _item_code(usage.item, D)
        shapes = isinstance(item_value, list)  # a list of input shapes: one input's
        n = max(usage.length or (1 if shapes else 2), usage.indexed)
        if usage.padding:
            return "(" + ", ".join(["1"] * n) + ")", [1] * n
        if isinstance(value, list) and value and isinstance(value[0], int) and not isinstance(value[0], bool):
            value = value[0]  # a per-stage guess too short for the indices read: its item, more times
        if item_value == 8 and isinstance(value, int) and not isinstance(value, bool) and (value != D or sized):
            item_code, item_value = repr(value), value  # the name's own scalar guess, once per item
        elif item_value == 8 and isinstance(value, float):
            item_code, item_value = repr(value), value  # a rate per item (`drop_paths[i]`): the name's rate
        if not isinstance(item_value, int):
            src = "[" + ", ".join([item_code] * n) + "]"
            return src, {"expr": src}
        return "(" + ", ".join([item_code] * n) + ("," if n == 1 else "") + ")", [item_value] * n
    if usage.called:
        built = not (code.startswith("torch.nn.") and not code.endswith(")"))  # not a class __init__ builds
        fields = _network_fields(usage, D) if built else []
        if built and usage.call_results and usage.call_results > 1 and "lambda" not in code:
            # `v, attn = self.attention_operator(q, k, v, mask)`, `out, state = self.preprocess(obs, state)`
            fields.insert(0, ("outputs", str(usage.call_results)))
        if fields:
            # `backbone.num_features`, `preprocess_net.get_output_dim()`: a network that has them (a
            # class to build, `block.expansion`, is left to its name's guess)
            src = STAND_IN + "(" + ", ".join(f"{name}={value}" for name, value in fields) + ")"
            return src, src
        if usage.call_extra and "lambda" not in code:
            # `self.model(x, times, cache=cache)`: a module that takes those arguments and keeps x's
            # shape; whatever the name suggested (`denoiser` read as a size, a one-input torch layer)
            return STAND_IN + "()", STAND_IN + "()"
        if "torch.nn." in code or "lambda" in code:
            return None
        return _IDENTITY, _IDENTITY
    if usage.tensor and not usage.mapping and not usage.attributes:
        if code.startswith("torch.") and "nn." not in code:
            return None
        return _tensor_guess(D)
    if usage.mapping:
        if "dict(" in code or code.startswith("{"):
            return None
        if usage.keys:
            # a config dict (`config["model_dim"]`, `config["dropout_rate"]`): each key read, its value
            # guessed from its name as a parameter's would be (a size, a rate, a flag), else a small size
            items = [(k, _guess_value(k, "", D) or ("8", 8)) for k in usage.keys]
            src = "{" + ", ".join(f"{k!r}: {g[0]}" for k, g in items) + "}"
            return src, {"expr": src}
        return "dict()", {"expr": "dict()"}
    if usage.axis:
        return None if value == -1 else ("-1", -1)
    if usage.attributes:
        if "SimpleNamespace" in code:
            return None
        if code.startswith(("torch.nn.", STAND_IN)):
            # a module (or a layer class) by its name or type hint that the code reads sizes of and
            # keeps or copies without calling it here, an instance as attributes are read of it
            # (labml's `Encoder(layer: TransformerLayer, n_layers)`: `layer.size`, then
            # `clone_module_list(layer, n_layers)`): the stand-in network with those attributes, a
            # Module that deep copies and registers where a namespace is refused ("types.SimpleNamespace
            # is not a Module subclass")
            fields = _network_fields(usage, D)
            if fields:
                src = STAND_IN + "(" + ", ".join(f"{name}={value}" for name, value in fields) + ")"
                return src, src
        fields = [(a, g) for a in usage.attributes for g in [_field_guess(usage, a, D)] if g is not None]
        src = "types.SimpleNamespace(" + ", ".join(f"{a}={g[0]}" for a, g in fields) + ")"
        return src, {"kind": "namespace", "fields": {a: g[1] for a, g in fields}}
    return None
