"""Input synthesis: `get_init_inputs()` and `get_inputs()` for a standalone `Model`.

Guesses come from the `__init__` and `forward` signatures (names, defaults, type hints, how
__init__ uses a parameter: argument_guesses.py), the docstrings ("shape (B, C, H, W)"), the first
layer applied to each input and how forward reads its shape (input_guesses.py: nn.Linear's
in_features, nn.Conv2d's in_channels, nn.Embedding's vocabulary, `b, c, h, w = x.shape`; for a
`features` dict, each key it reads: dict_inputs.py; for a graph batch, each attribute it reads:
record_inputs.py), and the
code's own asserts (`image_size % patch_size == 0`, `x.shape[0] == self.num_layers`), which
constraints.py turns into values that satisfy them. Each guess becomes an `Attempt`; the
harvester runs attempts in the validation sandbox, best guess first, until one runs. Shapes are
small (the `cpu-small` profile): the Triton interpreter must run them quickly.
An attempt that fails is resized to the sizes the probe found on symbolic shapes
(validation/shape_solver.py), else reshaped by input_repair.py from torch's error message; a
forward that draws random numbers is found by randomness.py.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Iterable

from autotriton.harvesting.argument_guesses import (
    _SIZE_WORDS, STAND_IN, STAND_IN_SOURCE, WRAPPED_MODULE, _guess_value, config_class_argument, dataclass_argument,
    fit_to_window, holds_modules, module_usage, offline_default, shrunk_default,
)
from autotriton.harvesting.constraints import constructor_constraints, declared_forms, input_constraints, satisfy
from autotriton.harvesting.dict_inputs import dict_input_options
from autotriton.harvesting.record_inputs import record_input_options
from autotriton.harvesting.input_guesses import tensor_list_length, _fitted, _input_options, _layer_calls
from autotriton.harvesting.signatures import (
    _Param, _classes, dataclass_params, _method, _method_owner, _params, _source_bases, class_with_attributes, module_names,
)
from autotriton.harvesting.usage_guess import _MODULE_API, usage_guess
from autotriton.harvesting.none_defaults import asserted_given, dereferenced, one_of_given
from autotriton.harvesting.usage_kinds import _STRING_METHODS, Usage, input_usages, parameter_usages


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


def _has_torch_base(classes: dict[str, ast.ClassDef], name: str) -> bool:
    """True when some base (through local classes) is a torch class other than plain Module."""
    return _torch_base_name(classes, name) is not None


def _torch_base_name(classes: dict[str, ast.ClassDef], name: str, depth: int = 0) -> str | None:
    """The torch layer a local class derives from (`class CausalConv1d(nn.Conv1d)` -> "Conv1d",
    through local bases), or None."""
    cls = classes.get(name)
    if cls is None or depth > 10:
        return None
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes:
            found = _torch_base_name(classes, base.id, depth + 1)
        else:
            found = ast.unparse(base).split(".")[-1]
            found = found if found[:1].isupper() and not found.endswith("Module") else None
        if found is not None:
            return found
    return None


def _as_torch_layers(calls: dict[str, ast.Call], classes: dict[str, ast.ClassDef]) -> dict[str, ast.Call]:
    """The constructor's layer calls, a local subclass of a torch layer (`self.conv =
    CausalConv1d(dim, dim, 3)`) read as that layer (Conv1d: a channels-first 3-D input), so the
    input guesses know its rank."""
    out = {}
    for attr, call in calls.items():
        name = ast.unparse(call.func).split(".")[-1]
        base = _torch_base_name(classes, name) if name in classes else None
        if base is not None:
            call = ast.Call(func=ast.Name(id=base, ctx=ast.Load()), args=call.args, keywords=call.keywords)
        out[attr] = call
    return out


# Sizes the input's spatial size follows (see synthesize): capped when asserts change them.
_SPATIAL_NAMES = re.compile(r"feat_size|grid_size|feature_size|spatial_size|img_size|image_size|input_size|resolution")
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


def _config_text(classes: dict[str, ast.ClassDef], param: str) -> dict[str, str]:
    """Fields of a config object that the class bodies use as text, with a value for each: the
    string it is compared with (`cfg.mode == "sum"`, `cfg.norm in ("ln", "bn")`, `"batch" in
    cfg.norm_mlp.lower()`), else, when only a str method says it is text, the field's own name."""
    out: dict[str, str] = {}
    for cls in classes.values():
        parents = {child: node for node in ast.walk(cls) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(cls):
            if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == param):
                continue
            subject, up, text = node, parents.get(node), False
            if isinstance(up, ast.Attribute) and up.attr in _STRING_METHODS and isinstance(parents.get(up), ast.Call) \
                    and parents[up].func is up:
                subject, text = parents[up], True
                up = parents.get(subject)
            if isinstance(up, ast.Compare) and len(up.ops) == 1 and isinstance(up.ops[0], (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
                other = up.left if up.comparators[0] is subject else up.comparators[0]
                values = other.elts if isinstance(other, (ast.Set, ast.List, ast.Tuple)) else [other]
                strings = [v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
                if strings:
                    out.setdefault(node.attr, strings[0])
                    continue
            if text:
                out.setdefault(node.attr, node.attr)
    return out


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


def _forwarded_params(init: ast.FunctionDef, classes: dict[str, ast.ClassDef] | None = None,
                      name: str = "Model", depth: int = 0) -> list[_Param] | None:
    """`def __init__(self, *args, **kwargs): self.linear = nn.Linear(*args, **kwargs)`: a
    constructor with only *args that hands them to a torch layer takes that layer's parameters;
    handed to `super().__init__`, the base class's: the nearest base of the source that defines
    __init__ (`class DeltaLeaky(Leaky)`: `def __init__(self, delta=1.0, *args, **kwargs)`, snntorch),
    else the torch layer it derives from (`class CausalConv1d(nn.Conv1d)`). Its own positional
    parameters (with defaults) come first: positional arguments fill them before *args."""
    params = _params(init)
    vararg = next((p.name for p in params if p.kind == "vararg"), None)
    if vararg is None or any(p.kind == "pos" and p.default is None for p in params) or depth > 10:
        return None
    own = [p for p in params if p.kind == "pos"]
    for node in ast.walk(init):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Starred) and \
                isinstance(node.args[0].value, ast.Name) and node.args[0].value.id == vararg:
            func = ast.unparse(node.func)
            if classes is not None and func.startswith("super(") and func.endswith(").__init__"):
                found = _source_base_params(classes, name, depth)
                found = found if found is not None else _torch_base_params(classes, name)
            else:
                found = _torch_layer_params(func.split(".")[-1])
            if found is not None:
                # *args fills the callee's positional parameters after the call's own positional
                # arguments, up to the first one the call passes by keyword (`super().__init__(
                # sigma_t=sigma_t, *args)`: past that, a positional argument would bind it twice)
                explicit = next(i for i, a in enumerate(node.args) if isinstance(a, ast.Starred))
                by_keyword = {k.arg for k in node.keywords if k.arg}
                forwarded = []
                for p in [p for p in found if p.kind == "pos"][explicit:]:
                    if p.name in by_keyword:
                        break
                    forwarded.append(p)
                taken = {p.name for p in own}
                return own + [p for p in forwarded if p.name not in taken]
    return None


def _source_base_params(classes: dict[str, ast.ClassDef], name: str, depth: int) -> list[_Param] | None:
    """Constructor parameters of the nearest base of `name`, among the source's classes, that
    defines __init__ (forwarding on in its turn if it too hands on *args); None without one."""
    bases = _source_bases(classes, name)
    found = _method_owner(classes, bases[0], "__init__") if bases else None
    if found is None:
        return None
    owner, init = found
    forwarded = _forwarded_params(init, classes, owner, depth + 1)
    if forwarded is not None:
        return forwarded
    return [p for p in _params(init) if p.kind in ("pos", "kwonly")]


def _init_attempt(classes: dict[str, ast.ClassDef], init: ast.FunctionDef | list[_Param] | None, D: int, shrink: bool,
                  tuples: bool = False, constraints: list[ast.expr] | None = None,
                  usages: dict[str, Usage] | None = None, demand: frozenset[str] = frozenset()
                  ) -> tuple[list[str], list[Any], dict[str, Any]] | None:
    """Constructor arguments: required ones guessed (from the name and type hint, or from how
    the code uses the parameter, `usages`, where that asks for another kind of value); large size
    defaults shrunk when `shrink`; then integer values changed where `constraints`
    (constraints.py) would otherwise fail. A parameter defaulting to None that the code asserts
    is not None counts as required, as does one in `demand` (named by an error: signatures.parameter_named_in)."""
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
    shrunk: dict[str, int] = {}  # shrunk defaults: name -> the default
    last_needed = -1
    usages = usages or {}
    demanded = one_of_given(init_fn) | dereferenced(init_fn, usages) | demand
    for i, p in enumerate(params):
        guess = None
        usage = usages.get(p.name)
        # a None default the code asserts is not None, or calls in __init__ (`subnet_constructor:
        # Callable = None`, then `subnet_constructor(c_in, c_out)`: FrEIA's coupling blocks), or
        # raises without (one_of_given), is required
        if p.default is None or (p.default == "None" and usage is not None
                                 and (usage.required or module_usage(init_fn, p.name) == "called")) \
                or (p.default == "None" and p.name in demanded):
            built = dataclass_argument(classes, p.annotation, D) or (
                config_class_argument(classes, D) if _CONFIG_NAMES.match(p.name.lower()) else None)
            if built is not None:  # `config: MambaConfig`: the file's own dataclass (or `config_class`), built
                codes.append(built[0])
                specs.append(built[1])
                last_needed = i
                continue
            if _CONFIG_NAMES.match(p.name.lower()) and not (usage and (usage.mapping or usage.sequence or usage.called)):
                # read in the class bodies, and wherever the value flows (usage_kinds: the module's functions it
                # is handed to, `MultiwayWrapper(args, m)` reading `args.multiway`); switches only tested, off
                attrs = _config_attrs(classes, p.name)
                attrs += [a for a in (usage.attributes if usage else []) if a not in attrs]
                flags = set(usage.flags()) if usage else set()
                fields = []
                text = _config_text(classes, p.name)
                for attr in attrs:
                    choices = (usage.attribute_choices.get(attr) if usage else None) or ([text[attr]] if attr in text else None)
                    g = ("False", False) if attr in flags else (repr(choices[0]), choices[0]) if choices else _guess_value(attr, "", D)
                    if g is not None:
                        fields.append((attr, g))
                code = "types.SimpleNamespace(" + ", ".join(f"{a}={g[0]}" for a, g in fields) + ")"
                codes.append(code)
                specs.append({"kind": "namespace", "fields": {a: g[1] for a, g in fields}})
                last_needed = i
                continue
            guess = _guess_value(p.name, p.annotation, D, module_usage(init_fn, p.name))
            owner = class_with_attributes(classes, set(usage.attributes) - _MODULE_API) if usage is not None and usage.called else None
            if owner is not None:
                # `block(self.inplanes, planes)` and `block.expansion`: a class of the file that has those
                # attributes (a ResNet's BasicBlock), built by the code as it builds its own
                guess = (owner, owner)
            elif usage is not None and module_usage(init_fn, p.name) == "called":
                if guess is None or "torch.nn." not in str(guess[0]):
                    guess = ("torch.nn.Identity", "torch.nn.Identity")  # a class __init__ builds: any arguments
            elif usage is not None:
                sized = any(w in p.name.lower() for w in _SIZE_WORDS)
                guess = usage_guess(usage, guess, D, sized) or guess
            form = forms.get(p.name)
            if form is None and usage is not None and usage.choices:
                # compared with strings where it flows (`get_activation_fn(activation=str(a))`): one of them
                form = ("choice", usage.choices[0])
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
            g = shrunk_default(p.name, p.annotation, default_value, D) if shrink else None
            if g is not None:
                guess = g
                last_needed = i
                guessed.append(p.name)
                if isinstance(g[1], int):
                    shrunk[p.name] = default_value
            if guess is None:
                guess = offline_default(p.name, default_value)
                last_needed = i if guess is not None else last_needed
            if guess is None:
                guess = (p.default, default_value if default_value is not None else {"expr": p.default})
        values[p.name] = guess[1]
        codes.append(guess[0])
        specs.append({"name": p.name, "value": guess[1]} if not isinstance(guess[1], dict) else {"name": p.name, **guess[1]})
    _keep_default_order(params, shrunk, values, codes, specs)
    fit_to_window(params, guessed, values, codes, specs, _SPATIAL_NAMES)
    if constraints:
        # Our own guesses are changed first, a default only when they cannot satisfy an assert.
        free = guessed + [p.name for p in params if p.name not in guessed]
        spatial = {p.name for p in params if _SPATIAL_NAMES.search(p.name.lower())}
        solved = satisfy(constraints, values, free, capped=spatial)
        for i, p in enumerate(params):
            if i < len(codes) and solved.get(p.name) != values.get(p.name):
                values[p.name] = solved[p.name]
                codes[i] = repr(solved[p.name])
                specs[i] = {"name": p.name, "value": solved[p.name]}
                last_needed = max(last_needed, i)
    codes, specs = codes[: last_needed + 1], specs[: last_needed + 1]
    vararg = next((p for p in all_params if p.kind == "vararg"), None)
    if vararg is not None and not params and init_fn is not None and holds_modules(init_fn, vararg.name):
        # `def __init__(self, *layers): self.layers = nn.ModuleList(layers)` (fastai's SequentialEx): two modules
        codes, specs = [WRAPPED_MODULE] * 2, [{"name": f"{vararg.name}[{k}]", "value": WRAPPED_MODULE} for k in range(2)]
    elif vararg is not None and not params and any(w in vararg.name.lower() for w in (*_SIZE_WORDS, "layer", "shape")):
        # `def __init__(self, *dims)` (an MLP's widths, `assert len(dims) > 1`): three sizes
        codes, specs = [str(D)] * 3, [{"name": f"{vararg.name}[{k}]", "value": D} for k in range(3)]
        values[vararg.name] = [D] * 3
    return codes, specs, values


# forward parameters that name the input a module computes on
_INPUT_NAMES = re.compile(r"^(x|xs|inp|input|inputs|input_ids|hidden_states?|samples?|audio|waveforms?|images?|imgs?|features|feats|tokens|embeddings?|src|seq|sequence)$")


def _keep_default_order(params: list[_Param], shrunk: dict[str, int], values: dict[str, Any], codes: list[str],
                        specs: list[Any]) -> None:
    """Shrunk defaults keep the order the defaults had: equal ones stay equal and a smaller one is
    never shrunk past a larger one (`n_fft=2048, hop_length=512, win_length=2048` shrunk by name to
    32, 32, 64 asks torch.stft for a window longer than its FFT; kept in order: 32, 32, 32). Values
    only go down, to the smallest guess among the defaults at or above."""
    if len(shrunk) < 2:
        return
    ceiling = None
    for default in sorted(set(shrunk.values()), reverse=True):
        group = [n for n, d in shrunk.items() if d == default]
        value = min(values[n] for n in group)
        value = value if ceiling is None else min(value, ceiling)
        ceiling = value
        for i, p in enumerate(params):
            if p.name in group and values[p.name] != value:
                values[p.name] = value
                codes[i] = repr(value)
                specs[i] = {"name": p.name, "value": value}


def _optional_tensor_input(p: _Param) -> bool:
    """A positional forward parameter defaulting to None that is a tensor input by its annotation
    (`Optional[torch.Tensor]`, `torch.LongTensor`) or by its name (`x`, `samples`, `input_ids`)."""
    return p.default == "None" and ("Tensor" in (p.annotation or "") or bool(_INPUT_NAMES.match(p.name.lower())))


def _abstract(fn: ast.FunctionDef) -> bool:
    """A body that, past its docstring and `pass`/`...`, only raises NotImplementedError."""
    body = [n for n in fn.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)) and not isinstance(n, ast.Pass)]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, (ast.Name, ast.Attribute)) and ast.unparse(exc).split(".")[-1] == "NotImplementedError"


def synthesize(standalone: str, *, max_attempts: int = 8, sizes: tuple[int, ...] = (32, 16),
               demand: Iterable[str] = (), inputs: Iterable[str] = ()) -> list[Attempt]:
    """Attempts, best guess first, for the `Model` class of `standalone` (already renamed).
    `demand`: constructor parameters defaulting to None to guess anyway (an error named them);
    `inputs`: forward's optional inputs to give (forward used them as tensors), with those before them.

    Raises SynthesisError(no_forward | keyword_only_init | no_guess) when nothing can be tried.
    """
    tree = ast.parse(standalone)
    classes = _classes(tree)
    if "Model" not in classes:
        raise SynthesisError("not_found", "no class Model")
    forward = _method(classes, "Model", "forward")
    if forward is None and not _has_torch_base(classes, "Model"):
        raise SynthesisError("no_forward", "the class (and its bases in the file) defines no forward()")
    if forward is not None and _abstract(forward):
        # an interface for subclasses to fill in: no input guess can make it compute
        raise SynthesisError("no_forward", "forward() only raises NotImplementedError (an abstract base class)")
    init: ast.FunctionDef | list[_Param] | None = _method(classes, "Model", "__init__")
    if init is None:
        # a dataclass module (`@dataclass(eq=False) class CFM(nn.Module)`, fields and __post_init__): its fields
        init = dataclass_params(classes, "Model") or _torch_base_params(classes, "Model")
    elif _forwarded_params(init, classes) is not None:
        init = _forwarded_params(init, classes)
    fparams = _params(forward) if forward is not None else [_Param("x", "", None, "pos")]
    if forward is not None and any(p.kind == "kwonly" and p.default is None for p in fparams):
        # positional_signatures (renaming.py) made them positional, Model's own or a base's of the source,
        # unless they follow *args
        raise SynthesisError("keyword_only_forward", "forward() has required keyword-only arguments (after *args, or in "
                             "a base class's forward outside the source); get_inputs() passes positional ones")
    required = [p for p in fparams if p.kind == "pos" and p.default is None]
    if forward is not None and not required and any(p.kind == "vararg" for p in fparams):
        required = [_Param("x", "", None, "pos")]
    positional = [p for p in fparams if p.kind == "pos"]
    if forward is not None and not required and positional and _optional_tensor_input(positional[0]):
        # `forward(self, samples: Tensor = None, sample_rate=None)`, `forward(self, input_ids=None, ...)`: called
        # with nothing, such a forward has nothing to compute; its first input is given
        required = [positional[0]]
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if forward is not None and required:
        # optional inputs forward then asserts are given (`time_cond = None`, `assert exists(time_cond)`):
        # given, with every optional one before them
        asserted = asserted_given(forward, functions)
        optional = [p for p in positional if p.default == "None"]
        last = max((k for k, p in enumerate(optional) if p.name in asserted), default=-1)
        if last >= 0 and positional.index(optional[0]) == len(required) and all(p.name in asserted for p in optional[:last + 1]):
            required = required + optional[:last + 1]
    wanted = set(inputs)
    if wanted and any(p.name in wanted for p in positional):
        last = max(k for k, p in enumerate(positional) if p.name in wanted)
        required = required + [p for p in positional[:last + 1] if p not in required]
    calls = _as_torch_layers(_layer_calls(list(classes.values())), classes)
    usages: dict[str, Usage] = {}
    if isinstance(init, ast.FunctionDef):
        usages = parameter_usages(classes, functions, "Model", [p.name for p in _params(init)], module_names(tree))
    # forward inputs spread as keyword arguments (`self.f(x, **f_args)`): no options, a mapping
    mappings = {name for name, u in input_usages(classes, functions, "Model", forward, [p.name for p in required]).items()
                if u.mapping and not u.sequence} if forward is not None else set()
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
    # Each variant with the kinds the code's use asks for (usages), and the first also without
    # them, right after: where the use was misread, the guess from names alone still comes early.
    plans = [(D, shrink, tuples, use) for D in sizes for shrink, tuples in ((True, False), (False, False), (True, True))
             for use in ((usages, {}) if usages and (D, shrink, tuples) == (sizes[0], True, False) else (usages,))]
    for D, shrink, tuples, use in plans:
        init_guess = _init_attempt(classes, init, D, shrink, tuples, constraints, use, frozenset(demand))
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
            if p.name in wanted and per_input and per_input[0] and per_input[0][0][1].get("kind") == "tensor":
                # used with the first input where forward had None (`tgt + query_pos`): its shape
                per_input.append(per_input[0])
                continue
            keyed = dict_input_options(p, forward, calls, values, D, spatial,
                                       init if isinstance(init, ast.FunctionDef) else None)
            if keyed:  # `features["token_embeddings"]`: a dict of tensors with the keys forward reads
                per_input.append(keyed)
                continue
            recorded = record_input_options(p, forward, calls, values, D, spatial,
                                            init if isinstance(init, ast.FunctionDef) else None)
            if recorded:  # `data.x`, `data.edge_index`: a namespace of tensors with the attributes forward reads
                per_input.append(recorded)
                continue
            if p.name in mappings:
                per_input.append([("dict()", {"kind": "mapping"})])
                continue
            options = _input_options(p, forward, calls, values, D, spatial, like=per_input[0] if per_input else None)
            if shape_constraints:
                options = [_fitted(code, spec, p.name, shape_constraints, values) for code, spec in options]
            items = tensor_list_length(p.annotation)
            if items:  # `x: List[torch.Tensor]`: the pathways of a fusion, the features of a head
                options = [("[" + ", ".join([code] * items) + "]", {"kind": "tensor_list", "items": [spec] * items})
                           for code, spec in options if spec.get("kind") == "tensor"] or options
            per_input.append(options)
        n_options = max((len(o) for o in per_input), default=1)
        added = False
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
                added = True
        variant += 1 if added or use is usages else 0  # the names-only variant, when it repeats the first, takes no rank
    attempts = [a for _, _, a in sorted(ranked, key=lambda t: (t[0], t[1]))]
    if not attempts:
        raise SynthesisError("no_guess", "no constructor argument could be guessed (untyped, unrecognised names)")
    return attempts[:max_attempts]


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
    if any("types.SimpleNamespace" in c for c in [*attempt.init_code, *attempt.input_code]) and "types" not in bound:
        head.append("import types")
    prefix = "\n".join(head) + "\n" if head else ""
    future = ""
    if standalone_model.startswith("from __future__ import"):
        future, _, standalone_model = standalone_model.partition("\n")
        future += "\n"
    stand_in = f"\n\n\n{STAND_IN_SOURCE.rstrip()}" if any(f"{STAND_IN}(" in c for c in attempt.init_code) else ""
    return f"{future}{prefix}{standalone_model.rstrip()}{stand_in}\n\n\n{attempt.functions()}"
