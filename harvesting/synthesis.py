"""Input synthesis: `get_init_inputs()` and `get_inputs()` for a standalone `Model`.

Guesses come from the `__init__` and `forward` signatures (names, defaults, type hints, how
__init__ uses a parameter: argument_guesses.py), the docstrings ("shape (B, C, H, W)"), the first
layer applied to each input (nn.Linear's in_features, nn.Conv2d's in_channels, nn.Embedding's
vocabulary, ...), and the code's own asserts (`image_size % patch_size == 0`,
`x.shape[0] == self.num_layers`), which constraints.py turns into values that satisfy them. Each guess becomes an
`Attempt`; the harvester runs attempts in the validation sandbox, best guess first, until one
runs. Shapes are small (the `cpu-small` profile): the Triton interpreter must run them quickly.
An attempt that fails with a torch shape error is reshaped by input_repair.py; a forward that
draws random numbers is found by randomness.py.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from autotriton.harvesting.argument_guesses import _guess_value, module_usage
from autotriton.harvesting.constraints import constructor_constraints, declared_forms, fit_shape, input_constraints, satisfy
from autotriton.harvesting.signatures import _Param, _classes, _method, _params

# Layer constructors whose first argument is the feature/channel size of their input.
_FEATURE_LAYERS: dict[str, int | None] = {
    "Linear": None, "Bilinear": None, "LazyLinear": None,
    "Conv1d": 3, "ConvTranspose1d": 3, "BatchNorm1d": None, "InstanceNorm1d": 3,
    "Conv2d": 4, "ConvTranspose2d": 4, "BatchNorm2d": 4, "InstanceNorm2d": 4,
    "Conv3d": 5, "ConvTranspose3d": 5, "BatchNorm3d": 5, "InstanceNorm3d": 5,
    "LayerNorm": None, "RMSNorm": None, "LSTM": 3, "GRU": 3, "RNN": 3, "MultiheadAttention": 3,
}
_INDEX_LAYERS = {"Embedding", "EmbeddingBag"}

_INT_INPUT = re.compile(r"(^|_)(ids?|idx|index|indices|tokens?|labels?|targets?|positions?|token_ids|input_ids|classes)$")
_MASK_INPUT = re.compile(r"mask")


@dataclass
class Attempt:
    """One guess of constructor arguments and inputs, as source and as a JSON spec."""

    init_code: list[str]  # python expressions, positional constructor arguments
    init_spec: list[Any]
    input_code: list[str]  # python expressions building each forward input
    input_spec: list[Any]
    label: str = ""

    def functions(self) -> str:
        init = ", ".join(self.init_code)
        inputs = ", ".join(self.input_code)
        return (
            "def get_inputs():\n"
            f"    return [{inputs}]\n\n\n"
            "def get_init_inputs():\n"
            f"    return [{init}]\n"
        )


class SynthesisError(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def _has_torch_base(classes: dict[str, ast.ClassDef], name: str, depth: int = 0) -> bool:
    """True when some base (through local classes) is a torch class other than plain Module."""
    cls = classes.get(name)
    if cls is None or depth > 10:
        return False
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            if _has_torch_base(classes, base.id, depth + 1):
                return True
        else:
            dotted = ast.unparse(base)
            if not dotted.endswith("Module") and dotted.split(".")[-1][:1].isupper():
                return True
    return False


_TUPLE_NAMES = re.compile(r"(window|feat_size|grid_size|feature_size|img_size|image_size|input_size|resolution|patch_size)")
_CONFIG_NAMES = re.compile(r"^(config|cfg|conf|args|opt|opts|params|hparams|hp|configs|model_config|settings)$")


def _config_attrs(classes: dict[str, ast.ClassDef], param: str) -> list[str]:
    """Attributes read from a config object parameter anywhere in the class bodies."""
    attrs: list[str] = []
    for cls in classes.values():
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == param:
                if node.attr not in attrs:
                    attrs.append(node.attr)
    return attrs


def _torch_base_params(classes: dict[str, ast.ClassDef], name: str, depth: int = 0) -> list[_Param] | None:
    """Constructor parameters of the torch class the Model inherits its __init__ from
    (e.g. `class Linear(nn.Linear)` with only a new forward), read with inspect."""
    cls = classes.get(name)
    if cls is None or depth > 10:
        return None
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            found = _torch_base_params(classes, base.id, depth + 1)
            if found is not None:
                return found
            continue
        found = _torch_layer_params(ast.unparse(base).split(".")[-1])
        if found is not None:
            return found
    return None


def _torch_layer_params(last: str) -> list[_Param] | None:
    """Constructor parameters of torch.nn.<last> (a Module class other than Module), read with inspect."""
    import inspect

    import torch

    torch_cls = getattr(torch.nn, last, None)
    if not (isinstance(torch_cls, type) and issubclass(torch_cls, torch.nn.Module) and torch_cls is not torch.nn.Module):
        return None
    out = []
    for p in list(inspect.signature(torch_cls.__init__).parameters.values())[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        default = None if p.default is inspect.Parameter.empty else repr(p.default)
        if default is not None and default.startswith("<"):
            default = "None"
        kind = "kwonly" if p.kind == p.KEYWORD_ONLY else "pos"
        ann = p.annotation.__name__ if isinstance(p.annotation, type) else ("" if p.annotation is inspect.Parameter.empty else str(p.annotation))
        out.append(_Param(p.name, ann, default, kind))
    return out


def _forwarded_params(init: ast.FunctionDef) -> list[_Param] | None:
    """`def __init__(self, *args, **kwargs): self.linear = nn.Linear(*args, **kwargs)`: a
    constructor with only *args that hands them to a torch layer takes that layer's parameters."""
    params = _params(init)
    vararg = next((p.name for p in params if p.kind == "vararg"), None)
    if vararg is None or any(p.kind == "pos" and p.default is None for p in params):
        return None
    for node in ast.walk(init):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Starred) and \
                isinstance(node.args[0].value, ast.Name) and node.args[0].value.id == vararg:
            found = _torch_layer_params(ast.unparse(node.func).split(".")[-1])
            if found is not None:
                return found
    return None


def _init_attempt(classes: dict[str, ast.ClassDef], init: ast.FunctionDef | list[_Param] | None, D: int, shrink: bool,
                  tuples: bool = False, constraints: list[ast.expr] | None = None) -> tuple[list[str], list[Any], dict[str, Any]] | None:
    """Constructor arguments: required ones guessed; large size defaults shrunk when `shrink`;
    then integer values changed where `constraints` (constraints.py) would otherwise fail."""
    if init is None:
        return [], [], {}
    all_params = init if isinstance(init, list) else _params(init)
    init_fn = init if isinstance(init, ast.FunctionDef) else None
    forms = declared_forms(init_fn)
    params = [p for p in all_params if p.kind == "pos"]
    if any(p.kind == "kwonly" and p.default is None for p in all_params):
        raise SynthesisError("keyword_only_init", "the constructor has required keyword-only arguments; get_init_inputs() passes positional ones")
    values: dict[str, Any] = {}
    codes: list[str] = []
    specs: list[Any] = []
    guessed: list[str] = []  # parameters whose value is ours to choose (required, or shrunk)
    last_needed = -1
    for i, p in enumerate(params):
        guess = None
        if p.default is None:
            if _CONFIG_NAMES.match(p.name.lower()):
                attrs = _config_attrs(classes, p.name)
                fields = []
                for attr in attrs:
                    g = _guess_value(attr, "", D)
                    if g is not None:
                        fields.append((attr, g))
                code = "types.SimpleNamespace(" + ", ".join(f"{a}={g[0]}" for a, g in fields) + ")"
                codes.append(code)
                specs.append({"kind": "namespace", "fields": {a: g[1] for a, g in fields}})
                last_needed = i
                continue
            guess = _guess_value(p.name, p.annotation, D, module_usage(init_fn, p.name))
            form = forms.get(p.name)
            if form is not None and form[0] == "choice":
                guess = (repr(form[1]), form[1])
            elif form is not None and guess is not None:
                # asserted to be a tuple (of a length): the scalar guess, repeated
                scalar = guess[1][0] if isinstance(guess[1], list) and guess[1] else guess[1]
                if isinstance(scalar, (int, float)) and not isinstance(scalar, bool):
                    n = form[1] or (len(guess[1]) if isinstance(guess[1], list) else 2)
                    guess = ("(" + ", ".join([repr(scalar)] * n) + ("," if n == 1 else "") + ")", [scalar] * n)
            if guess is None:
                return None
            if tuples and isinstance(guess[1], int) and not isinstance(guess[1], bool) and _TUPLE_NAMES.search(p.name.lower()):
                guess = (f"({guess[0]}, {guess[0]})", [guess[1], guess[1]])
            last_needed = i
            guessed.append(p.name)
        else:
            try:
                default_value = ast.literal_eval(p.default)
            except (ValueError, SyntaxError):
                default_value = None
            too_big = isinstance(default_value, int) and not isinstance(default_value, bool) and default_value > 64
            if shrink and too_big:
                g = _guess_value(p.name, p.annotation, D)
                if g is not None and isinstance(g[1], int) and g[1] < default_value:
                    guess = g
                    last_needed = i
                    guessed.append(p.name)
            if guess is None:
                guess = (p.default, default_value if default_value is not None else {"expr": p.default})
        values[p.name] = guess[1]
        codes.append(guess[0])
        specs.append({"name": p.name, "value": guess[1]} if not isinstance(guess[1], dict) else {"name": p.name, **guess[1]})
    if constraints:
        # Our own guesses are changed first, a default only when they cannot satisfy an assert.
        free = guessed + [p.name for p in params if p.name not in guessed]
        solved = satisfy(constraints, values, free)
        for i, p in enumerate(params):
            if i < len(codes) and solved.get(p.name) != values.get(p.name):
                values[p.name] = solved[p.name]
                codes[i] = repr(solved[p.name])
                specs[i] = {"name": p.name, "value": solved[p.name]}
                last_needed = max(last_needed, i)
    return codes[: last_needed + 1], specs[: last_needed + 1], values


# ---------------------------------------------------------------------------------------------
# Guessing the forward inputs.


def _layer_calls(cls_nodes: list[ast.ClassDef]) -> dict[str, ast.Call]:
    """self.<attr> = <Layer>(...) assignments in the constructors."""
    out: dict[str, ast.Call] = {}
    for cls in cls_nodes:
        for node in ast.walk(cls):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                for t in node.targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                        out.setdefault(t.attr, node.value)
    return out


_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a / b, ast.Mod: lambda a, b: a % b}


def _arith(node: ast.expr, values: dict[str, Any]) -> Any:
    """Evaluate integer arithmetic over our own guessed values. Harvested code is never executed
    here (only the sandbox runs it): anything but numbers, known names, + - * / // %, int(),
    min() and max() is refused."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in values and isinstance(values[node.id], (int, float)):
        return values[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _arith(node.left, values), _arith(node.right, values)
        if isinstance(right, (int, float)) and right == 0 and isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):
            raise ValueError("division by zero")
        if abs(left) > 1e6 or abs(right) > 1e6:
            raise ValueError("too large")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_arith(node.operand, values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("int", "min", "max") and not node.keywords:
        args = [_arith(a, values) for a in node.args]
        return {"int": lambda *a: int(a[0]), "min": min, "max": max}[node.func.id](*args)
    raise ValueError("not simple arithmetic")


def _eval_size(expr: ast.expr, values: dict[str, Any]) -> int | None:
    try:
        result = _arith(expr, values)
    except (ValueError, TypeError, IndexError, OverflowError):
        return None
    return result if isinstance(result, int) and not isinstance(result, bool) and 0 < result <= 4096 else None


def _layer_kind(call: ast.Call, calls: dict[str, ast.Call]) -> tuple[str, ast.Call] | None:
    name = ast.unparse(call.func).split(".")[-1]
    if name in ("Sequential",) and call.args and isinstance(call.args[0], ast.Call):
        return _layer_kind(call.args[0], calls)
    if name in _FEATURE_LAYERS or name in _INDEX_LAYERS:
        return name, call
    return None


def _first_layer(forward: ast.FunctionDef, param: str, calls: dict[str, ast.Call]) -> tuple[str, ast.Call] | None:
    """The first self.<layer>(param ...) call in forward whose layer we know."""
    for node in ast.walk(forward):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == param:
            f = node.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self" and f.attr in calls:
                kind = _layer_kind(calls[f.attr], calls)
                if kind is not None:
                    return kind
            if isinstance(f, ast.Subscript) and isinstance(f.value, ast.Attribute) and f.value.attr in calls:
                kind = _layer_kind(calls[f.value.attr], calls)
                if kind is not None:
                    return kind
    return None


def _rank_hints(forward: ast.FunctionDef, param: str) -> list[int]:
    """Ranks suggested by unpacking `a, b, c = x.shape`, `x.size(k)`, `x.shape[k]`, `x.view(...)`, docstrings."""
    hints: list[int] = []
    for node in ast.walk(forward):
        # `t[:, None]`, `x[..., None]` excluded: indexing with None spells out the rank
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == param
                and isinstance(node.slice, ast.Tuple) and any(isinstance(e, ast.Constant) and e.value is None for e in node.slice.elts)
                and not any(isinstance(e, ast.Constant) and e.value is Ellipsis for e in node.slice.elts)):
            hints.append(sum(1 for e in node.slice.elts if not (isinstance(e, ast.Constant) and e.value is None)))
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
            v = node.value
            src = ast.unparse(v)
            if src in (f"{param}.shape", f"{param}.size()"):
                hints.append(len(node.targets[0].elts))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id == param:
            if node.func.attr == "size" and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, int):
                k = node.args[0].value
                if k not in (0, -1):  # every tensor has a first and a last dimension: no rank told
                    hints.append(k + 1 if k >= 0 else -k)
            if node.func.attr in ("permute",) and node.args:
                if len(node.args) == 1 and isinstance(node.args[0], (ast.Tuple, ast.List)):
                    hints.append(len(node.args[0].elts))
                elif all(isinstance(a, ast.Constant) for a in node.args):
                    hints.append(len(node.args))
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) == f"{param}.shape" and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
            k = node.slice.value
            if k not in (0, -1):
                hints.append(k + 1 if k >= 0 else -k)
    doc = ast.get_docstring(forward) or ""
    m = re.search(rf"{re.escape(param)}\b[^\n]*?[\(\[]((?:\s*[\w\*]+\s*,)+\s*[\w\*]+\s*)[\)\]]", doc)
    if m:
        hints.insert(0, len(m.group(1).split(",")))
    return hints


_CHANNEL_NAMES = re.compile(r"^(channels|in_channels|in_chans|num_channels|image_channels|img_channels|input_channels|in_ch|channels_in|n_channels)$")


def _channels_value(values: dict[str, Any]) -> int | None:
    for name, value in values.items():
        if _CHANNEL_NAMES.match(name.lower()) and isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 64:
            return value
    return None


def _unpacked_rank(forward: ast.FunctionDef, param: str) -> int | None:
    """The rank `a, b, c = x.shape` (no starred target) demands of input `param`, or None."""
    shapes = (f"{param}.shape", f"{param}.size()")
    for node in ast.walk(forward):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
            targets = node.targets[0].elts
            if any(isinstance(e, ast.Starred) for e in targets):
                continue
            if ast.unparse(node.value) in shapes:
                return len(targets)
            # `b, n, _, h = *x.shape, self.heads`: the shape fills what the other values leave
            if isinstance(node.value, ast.Tuple):
                starred = [e for e in node.value.elts if isinstance(e, ast.Starred)]
                if len(starred) == 1 and ast.unparse(starred[0].value) in shapes and len(targets) > len(node.value.elts) - 1:
                    return len(targets) - (len(node.value.elts) - 1)
    return None


def _tensor_specs(rank: int, F: int, layout: str, spatial: int) -> list[int]:
    B, T = 2, 8
    if rank <= 1:
        return [F]
    if rank == 2:
        return [B, F]
    if rank == 3:
        return [B, F, T] if layout == "channels_first" else [B, T, F]
    if rank == 4:
        return [B, F, spatial, spatial] if layout != "channels_last" else [B, spatial, spatial, F]
    return [B, F] + [4] * (rank - 2)


def synthesize(standalone: str, *, max_attempts: int = 8, sizes: tuple[int, ...] = (32, 16)) -> list[Attempt]:
    """Attempts, best guess first, for the `Model` class of `standalone` (already renamed).

    Raises SynthesisError(no_forward | keyword_only_init | no_guess) when nothing can be tried.
    """
    tree = ast.parse(standalone)
    classes = _classes(tree)
    if "Model" not in classes:
        raise SynthesisError("not_found", "no class Model")
    forward = _method(classes, "Model", "forward")
    if forward is None and not _has_torch_base(classes, "Model"):
        raise SynthesisError("no_forward", "the class (and its bases in the file) defines no forward()")
    init: ast.FunctionDef | list[_Param] | None = _method(classes, "Model", "__init__")
    if init is None:
        init = _torch_base_params(classes, "Model")
    elif _forwarded_params(init) is not None:
        init = _forwarded_params(init)
    fparams = _params(forward) if forward is not None else [_Param("x", "", None, "pos")]
    if forward is not None and any(p.kind == "kwonly" and p.default is None for p in fparams):
        raise SynthesisError("keyword_only_forward", "forward() has required keyword-only arguments")
    required = [p for p in fparams if p.kind == "pos" and p.default is None]
    if forward is not None and not required and any(p.kind == "vararg" for p in fparams):
        required = [_Param("x", "", None, "pos")]
    calls = _layer_calls(list(classes.values()))
    constraints: list[ast.expr] = []
    if isinstance(init, ast.FunctionDef):
        constraints = constructor_constraints(classes, "Model", [p.name for p in _params(init)], init, forward)
    shape_constraints = input_constraints(classes, init if isinstance(init, ast.FunctionDef) else None, forward,
                                          [p.name for p in init] if isinstance(init, list) else
                                          [p.name for p in _params(init)] if init is not None else [],
                                          [p.name for p in required])

    attempts: list[Attempt] = []
    seen: set[str] = set()
    # Init variants (size D, shrunk defaults, tuple-valued window/feature sizes), each with its
    # input options; ordered so that every variant's best input guess comes before later options.
    ranked: list[tuple[int, int, Attempt]] = []
    variant = 0
    for D in sizes:
        for shrink, tuples in ((True, False), (False, False), (True, True)):
            init_guess = _init_attempt(classes, init, D, shrink, tuples, constraints)
            if init_guess is None:
                continue
            init_code, init_spec, values = init_guess
            spatial = 8
            for k, v in values.items():
                if re.search(r"feat_size|grid_size|feature_size|spatial_size|img_size|image_size|input_size|resolution|window", k):
                    if isinstance(v, (list, tuple)) and v and isinstance(v[0], int):
                        v = v[0]
                    if isinstance(v, int) and not isinstance(v, bool) and 1 < v <= 32:
                        spatial = v if "window" not in k else max(8, v)
                        break
            per_input: list[list[tuple[str, dict[str, Any]]]] = []
            for p in required:
                options = _input_options(p, forward, calls, values, D, spatial)
                if shape_constraints:
                    options = [_fitted(code, spec, p.name, shape_constraints, values) for code, spec in options]
                per_input.append(options)
            n_options = max((len(o) for o in per_input), default=1)
            for k in range(n_options):
                codes, specs = [], []
                for options in per_input:
                    code, spec = options[min(k, len(options) - 1)]
                    codes.append(code)
                    specs.append(spec)
                label = f"D={D}{' shrunk' if shrink else ''}{' tuples' if tuples else ''} option {k}"
                attempt = Attempt(init_code, init_spec, codes, specs, label=label)
                sig = attempt.functions()
                if sig not in seen:
                    seen.add(sig)
                    ranked.append((k + variant, len(ranked), attempt))
            variant += 1
    attempts = [a for _, _, a in sorted(ranked, key=lambda t: (t[0], t[1]))]
    if not attempts:
        raise SynthesisError("no_guess", "no constructor argument could be guessed (untyped, unrecognised names)")
    return attempts[:max_attempts]


def _fitted(code: str, spec: dict[str, Any], name: str, constraints: list[ast.expr], values: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The input option with its dimensions changed as forward's asserts on its shape ask."""
    if spec.get("kind") != "tensor":
        return code, spec
    shape = fit_shape(constraints, values, name, list(spec["shape"]))
    if shape == spec["shape"] or not all(0 < d <= 4096 for d in shape):
        return code, spec
    dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
    if spec.get("dtype") == "int64":
        return f"torch.randint(0, {spec.get('high', 10)}, ({dims}))", {**spec, "shape": shape}
    return f"{code.split('(', 1)[0]}({dims})", {**spec, "shape": shape}


# Calls whose plain arguments are sizes or counts (`torch.arange(n)`, `range(n)`, `x.new_ones(n, n)`).
_SIZE_CALLS = {"arange", "range", "zeros", "ones", "empty", "full", "rand", "randn", "linspace", "eye",
               "tril_indices", "triu_indices", "new_zeros", "new_ones", "new_empty", "new_full"}


def _used_as_size(forward: ast.FunctionDef, param: str) -> bool:
    """Whether forward passes `param` itself (or arithmetic on it) as a size to a factory or range."""
    def plain(node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id == param
        if isinstance(node, ast.BinOp):
            return plain(node.left) or plain(node.right)
        if isinstance(node, ast.UnaryOp):
            return plain(node.operand)
        return False

    for node in ast.walk(forward):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in _SIZE_CALLS and any(plain(a) for a in node.args):
                return True
    return False


def _input_options(p: _Param, forward: ast.FunctionDef | None, calls: dict[str, ast.Call], values: dict[str, Any], D: int, spatial: int) -> list[tuple[str, dict[str, Any]]]:
    name = p.name.lower()
    ann = p.annotation
    if ann in ("int",):
        return [(str(D), {"kind": "int", "value": D})]
    if ann in ("float",):
        return [("1.0", {"kind": "float", "value": 1.0})]
    if ann in ("bool",):
        return [("True", {"kind": "bool", "value": True})]
    if forward is not None and _used_as_size(forward, p.name):
        # `arange(j - i, j)`, `torch.ones(n, n)`: a length, as positional biases take (i, j)
        return [("8", {"kind": "int", "value": 8})]
    layer = _first_layer(forward, p.name, calls) if forward is not None else None
    size = None
    options: list[tuple[int, int, str]] = []  # (rank, feature, layout)
    F = D
    if layer is not None:
        kind, call = layer
        if kind in _INDEX_LAYERS:
            vocab = _eval_size(call.args[0], values) if call.args else None
            hi = max(1, min(vocab or 10, 10))
            return [
                (f"torch.randint(0, {hi}, (2, 8))", {"kind": "tensor", "shape": [2, 8], "dtype": "int64", "high": hi}),
                (f"torch.randint(0, {hi}, (2,))", {"kind": "tensor", "shape": [2], "dtype": "int64", "high": hi}),
            ]
        arg0 = call.args[0] if call.args else next((kw.value for kw in call.keywords if kw.arg in ("in_features", "in_channels", "num_features", "normalized_shape", "input_size", "embed_dim")), None)
        size = _eval_size(arg0, values) if arg0 is not None else None
        if size is not None:
            F = size
        rank = _FEATURE_LAYERS.get(kind)
        if kind in ("LSTM", "GRU", "RNN", "MultiheadAttention"):
            options += [(3, F, "channels_last")]
        elif rank is not None:
            options.append((rank, F, "channels_first"))
        else:
            options += [(3, F, "channels_last"), (2, F, "channels_last"), (4, F, "channels_last")]
    if _INT_INPUT.search(name):
        hi = min(int(values.get("vocab_size", 10)) if isinstance(values.get("vocab_size"), int) else 10, 10)
        return [
            (f"torch.randint(0, {hi}, (2, 8))", {"kind": "tensor", "shape": [2, 8], "dtype": "int64", "high": hi}),
            (f"torch.randint(0, {hi}, (2,))", {"kind": "tensor", "shape": [2], "dtype": "int64", "high": hi}),
        ]
    hints = _rank_hints(forward, p.name) if forward is not None else []
    for r in hints:
        if 1 <= r <= 5:
            options.insert(0 if not options else 1, (r, F, "channels_first" if r >= 4 else "channels_last"))
            if r == 3:
                options.append((3, F, "channels_first"))
    options += [(4, F, "channels_first"), (3, F, "channels_last"), (2, F, "channels_last"), (3, F, "channels_first"), (4, F, "channels_last")]
    exact = _unpacked_rank(forward, p.name) if forward is not None else None
    if exact is not None and any(r == exact for r, _, _ in options):
        # `b, c, h, w = x.shape` fails for any other rank: keep only the layouts of this one
        options = [o for o in options if o[0] == exact]
    channels = _channels_value(values)
    if channels is not None and (layer is None or size is None):
        # An image/signal input whose first layer we cannot size (an einops Rearrange, a conv
        # built from a local variable): its channel axis is the constructor's `channels`.
        options = [(r, channels, lay) if lay == "channels_first" and r >= 3 else (r, f, lay) for r, f, lay in options]
    out: list[tuple[str, dict[str, Any]]] = []
    seen: set[str] = set()
    for rank, feat, layout in options:
        shape = _tensor_specs(rank, feat, layout, spatial)
        if _MASK_INPUT.search(name):
            code = f"torch.ones({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"
        else:
            code = f"torch.randn({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"
        if code not in seen:
            seen.add(code)
            out.append((code, {"kind": "tensor", "shape": shape, "dtype": "float32"}))
    return out


def problem_source(standalone_model: str, attempt: Attempt) -> str:
    """The KernelBench-format problem: the standalone module (class already `Model`), `import torch`
    (and `types` for config namespaces) when missing, and the two input functions."""
    head = []
    tree = ast.parse(standalone_model)
    bound = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            bound.update((a.asname or a.name.split(".")[0]) for a in node.names)
    if "torch" not in bound:
        head.append("import torch")
    if any("types.SimpleNamespace" in c for c in attempt.init_code) and "types" not in bound:
        head.append("import types")
    prefix = "\n".join(head) + "\n" if head else ""
    future = ""
    if standalone_model.startswith("from __future__ import"):
        future, _, standalone_model = standalone_model.partition("\n")
        future += "\n"
    return f"{future}{prefix}{standalone_model.rstrip()}\n\n\n{attempt.functions()}"
