"""Expressions of the elementwise teacher (elementwise_teacher.py): forward's operators as Triton
expressions, with the operands (inputs, parameters, buffers, per-channel statistics) and scalars
a kernel must be given, collected in a `_Plan`. Shared by the one-kernel translation and the
row kernels of elementwise_rows.py (softmax, reductions and norms along an axis)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from autotriton.distillation.inductor_eager import dotted_parts

_FACTORIES = {"randn", "rand", "zeros", "ones", "empty", "full", "tensor"}
_FUNCTION_PREFIXES = ("torch.nn.functional.", "torch.", "F.", "nn.functional.")
_NO_OPS = {"contiguous", "clone", "detach", "float", "dropout", "identity"}
_RESERVED = {"tl", "triton", "pid", "offsets", "mask", "n_elements", "BLOCK_SIZE", "out_ptr", "channels", "inner",
             "row", "cols", "n_cols", "col_stride", "n_rows"}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
_OP_NAMES = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
# torch.nn activation layers -> (function name, its positional parameter names with defaults)
_LAYERS: dict[str, tuple[str, list[tuple[str, Any]]]] = {
    "ReLU": ("relu", []), "GELU": ("gelu", [("approximate", "none")]), "SiLU": ("silu", []), "Mish": ("mish", []),
    "Sigmoid": ("sigmoid", []), "Tanh": ("tanh", []), "ELU": ("elu", [("alpha", 1.0)]), "SELU": ("selu", []),
    "LeakyReLU": ("leaky_relu", [("negative_slope", 0.01)]), "Hardtanh": ("hardtanh", [("min_val", -1.0), ("max_val", 1.0)]),
    "ReLU6": ("relu6", []), "Softplus": ("softplus", [("beta", 1.0), ("threshold", 20.0)]),
    "Hardsigmoid": ("hardsigmoid", []), "Hardswish": ("hardswish", []), "Identity": ("identity", []),
    "Dropout": ("dropout", [("p", 0.5)]),  # eval mode: the identity
}
_BATCH_NORM = [("num_features", None), ("eps", 1e-5), ("momentum", 0.1), ("affine", True), ("track_running_stats", True)]
# function -> its parameters after the tensor, with defaults (positional or keyword in the call)
_PARAMS: dict[str, list[tuple[str, Any]]] = {
    "gelu": [("approximate", "none")], "elu": [("alpha", 1.0)], "leaky_relu": [("negative_slope", 0.01)],
    "hardtanh": [("min_val", -1.0), ("max_val", 1.0)], "softplus": [("beta", 1.0), ("threshold", 20.0)],
    "clamp": [("min", None), ("max", None)], "clip": [("min", None), ("max", None)],
}
_SIMPLE = {"sigmoid": "tl.sigmoid({v})", "exp": "tl.exp({v})", "log": "tl.log({v})", "sqrt": "tl.sqrt({v})",
           "rsqrt": "tl.rsqrt({v})", "abs": "tl.abs({v})", "sin": "tl.sin({v})", "cos": "tl.cos({v})", "neg": "-{v}",
           "relu": "tl.maximum({v}, 0.0)", "silu": "{v} * tl.sigmoid({v})", "tanh": "2.0 * tl.sigmoid(2.0 * {v}) - 1.0",
           "relu6": "tl.minimum(tl.maximum({v}, 0.0), 6.0)",
           "hardsigmoid": "tl.minimum(tl.maximum({v} / 6.0 + 0.5, 0.0), 1.0)",
           "hardswish": "{v} * tl.minimum(tl.maximum({v} / 6.0 + 0.5, 0.0), 1.0)",
           "mish": "{v} * (2.0 * tl.sigmoid(2.0 * tl.where({v} > 20.0, {v}, tl.log(1.0 + tl.exp({v})))) - 1.0)",
           "selu": "1.0507009873554805 * tl.where({v} > 0.0, {v}, 1.6732632423543772 * (tl.exp({v}) - 1.0))"}
class NotElementwise(ValueError):
    """The forward is not one this teacher translates; the message says what stopped it."""


@dataclass
class _Operand:
    """A tensor the kernel loads besides the first input: another input or a parameter/buffer."""

    name: str  # its name inside the kernel
    host: str  # how ModelNew.forward passes it (`y`, `self.bias1`)
    shape: list[str] | None  # the parameter's shape as written (None: an input of the first's shape)
    channels_of: str = ""  # a per-channel statistic of this BatchNorm layer (axis 1 of the input)

    def block(self) -> tuple[int, int, int]:
        """(rank, first, last) of its non-1 axes, or (rank, -1, -1) when it holds one value."""
        assert self.shape is not None
        kept = [i for i, s in enumerate(self.shape) if s != "1"]
        if kept and kept != list(range(kept[0], kept[-1] + 1)):
            raise NotElementwise(f"{self.host} has shape ({', '.join(self.shape)}): its non-1 axes are not one block")
        return len(self.shape), (kept[0] if kept else -1), (kept[-1] if kept else -1)


@dataclass
class _Plan:
    inputs: list[str]
    operands: dict[str, _Operand] = field(default_factory=dict)  # attribute or input name -> operand
    scalars: dict[str, str] = field(default_factory=dict)  # attribute -> kernel argument name
    layers: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # attribute -> (function, arguments)
    lines: list[str] = field(default_factory=list)  # the kernel's statements, forward's order
    ops: list[str] = field(default_factory=list)  # operator names, in order (the kernel's name)
    temps: int = 0
    taken: set[str] = field(default_factory=set)  # every name forward uses: temporaries avoid them


def _tensor(plan: _Plan, kinds: dict[str, str], attr: str, value: ast.expr) -> None:
    factory = next((n for n in ast.walk(value) if isinstance(n, ast.Call)
                    and _dotted(n.func).split(".")[-1] in _FACTORIES and _dotted(n.func).startswith("torch.")), None)
    if factory is None:
        kinds[attr] = "tensor?"
        return
    dims = factory.args
    if len(dims) == 1 and isinstance(dims[0], (ast.Tuple, ast.List)):
        dims = dims[0].elts
    if _dotted(factory.func) == "torch.full":
        dims = dims[0].elts if dims and isinstance(dims[0], (ast.Tuple, ast.List)) else []
    if _dotted(factory.func) == "torch.tensor":
        kinds[attr] = "tensor?" if not (dims and isinstance(dims[0], ast.Constant)) else "tensor"
        shape = ["1"]
    else:
        shape = [ast.unparse(d) for d in dims]
        if not shape or any(isinstance(d, ast.Starred) for d in dims):
            kinds[attr] = "tensor?"
            return
        kinds[attr] = "tensor"
    name = attr if attr not in _RESERVED else attr + "_p"
    plan.operands["self." + attr] = _Operand(name, "self." + attr, shape)


def _arguments(call: ast.Call, params: list[tuple[str, Any]], skip: int = 1, *, as_written: tuple[str, ...] = ()) -> dict[str, Any]:
    """The call's arguments after the first `skip` positional ones, by parameter name, as literals
    (those named in `as_written`, which the kernel does not need, as their source text)."""
    out = {name: default for name, default in params}
    positional = call.args[skip:]
    if len(positional) > len(params):
        raise NotElementwise(f"`{ast.unparse(call)}`: more arguments than translated")
    named = [(name, arg) for (name, _), arg in zip(params, positional)]
    for kw in call.keywords:
        if kw.arg == "inplace":
            continue
        if kw.arg not in out:
            raise NotElementwise(f"`{ast.unparse(call)}`: argument {kw.arg} is not translated")
        named.append((kw.arg, kw.value))
    for name, arg in named:
        out[name] = ast.unparse(arg) if name in as_written else _literal(arg, call)
    return out


def _literal(node: ast.expr, call: ast.Call) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise NotElementwise(f"`{ast.unparse(call)}`: a non-literal argument") from None


def _dotted(node: ast.expr) -> str:
    """`torch.nn.functional.gelu` for a chain of names, "" for anything else."""
    return ".".join(dotted_parts(node) or [])


def _expr(node: ast.expr, plan: _Plan, rename: dict[str, str], attributes: dict[str, str]) -> str:
    """The Triton expression of a forward expression (names already bound in the kernel)."""
    if isinstance(node, ast.Name):
        if node.id not in rename:
            raise NotElementwise(f"`{node.id}` is not a tensor forward has computed")
        return rename[node.id]
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return repr(float(node.value))
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        kind = attributes.get(node.attr)
        if kind == "tensor":
            return plan.operands["self." + node.attr].name
        if kind == "scalar":
            return plan.scalars[node.attr]
        raise NotElementwise(f"self.{node.attr} is not a parameter, buffer or number __init__ sets plainly")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return f"-({_expr(node.operand, plan, rename, attributes)})"
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = (_expr(node.left, plan, rename, attributes), _expr(node.right, plan, rename, attributes))
        plan.ops.append(_OP_NAMES[type(node.op)])
        return f"{_wrap(left)} {_BINOPS[type(node.op)]} {_wrap(right)}"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        if isinstance(node.right, ast.Constant) and node.right.value in (2, 3, 2.0, 3.0):
            base = _bound(_expr(node.left, plan, rename, attributes), plan)
            plan.ops.append("pow")
            return " * ".join([base] * int(node.right.value))
        raise NotElementwise(f"`{ast.unparse(node)}`: only squares and cubes are translated")
    if isinstance(node, ast.Call):
        return _call(node, plan, rename, attributes)
    raise NotElementwise(f"`{ast.unparse(node)}` is not translated")


def _call(node: ast.Call, plan: _Plan, rename: dict[str, str], attributes: dict[str, str]) -> str:
    func = node.func
    dotted = _dotted(func)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self" \
            and attributes.get(func.attr) == "layer":
        if len(node.args) != 1 or node.keywords:
            raise NotElementwise(f"`{ast.unparse(node)}`: a layer called with more than its input")
        name, kwargs = plan.layers[func.attr]
        if name == "batch_norm":
            return _batch_norm(func.attr, _expr(node.args[0], plan, rename, attributes), kwargs, plan)
        return _apply(name, _expr(node.args[0], plan, rename, attributes), kwargs, plan)
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        raise NotElementwise(f"`{ast.unparse(node)}`: self.{func.attr} is not an activation layer this teacher translates")
    name = next((dotted[len(p):] for p in _FUNCTION_PREFIXES if dotted.startswith(p) and "." not in dotted[len(p):]), None)
    if name is not None:  # torch.relu(x), F.gelu(x, approximate="tanh")
        if not node.args:
            raise NotElementwise(f"`{ast.unparse(node)}` has no tensor argument")
        if name in ("add", "sub", "mul", "div") and len(node.args) == 2 and not node.keywords:
            op = {"add": ast.Add(), "sub": ast.Sub(), "mul": ast.Mult(), "div": ast.Div()}[name]
            return _expr(ast.BinOp(left=node.args[0], op=op, right=node.args[1]), plan, rename, attributes)
        value = _expr(node.args[0], plan, rename, attributes)
        return _apply(name, value, _arguments(node, _PARAMS.get(name, []), skip=1), plan, node)
    if isinstance(func, ast.Attribute):  # x.sigmoid(), x.clamp(min=0)
        value = _expr(func.value, plan, rename, attributes)
        return _apply(func.attr, value, _arguments(node, _PARAMS.get(func.attr, []), skip=0), plan, node)
    raise NotElementwise(f"`{ast.unparse(node)}` is not translated")


def _batch_norm(attr: str, value: str, kwargs: dict[str, Any], plan: _Plan) -> str:
    """A BatchNorm layer in eval mode: its running statistics and affine parameters, per channel."""
    if not kwargs["track_running_stats"]:
        raise NotElementwise(f"self.{attr} normalises by batch statistics (track_running_stats=False)")
    stats = ["running_mean", "running_var"] + (["weight", "bias"] if kwargs["affine"] else [])
    names = {}
    for stat in stats:
        name = f"{attr}_{stat.replace('running_', '')}"
        names[stat] = name
        plan.operands.setdefault(f"self.{attr}.{stat}", _Operand(name, f"self.{attr}.{stat}", None, channels_of=attr))
    v = _bound(value, plan)
    plan.ops.append("batch_norm")
    out = f"({v} - {names['running_mean']}) / tl.sqrt({names['running_var']} + {float(kwargs['eps'])!r})"
    return out + (f" * {names['weight']} + {names['bias']}" if kwargs["affine"] else "")


def _apply(name: str, value: str, kwargs: dict[str, Any], plan: _Plan, node: ast.Call | None = None) -> str:
    """The Triton expression of activation/math function `name` applied to `value`."""
    if name in _NO_OPS:
        if name == "float" and kwargs:
            raise NotElementwise("float() with arguments")
        return value
    where = f"`{ast.unparse(node)}`" if node is not None else name
    if name == "gelu" and kwargs.get("approximate", "none") not in ("none", "tanh"):
        raise NotElementwise(f"{where}: approximate={kwargs['approximate']!r}")
    if name in ("clamp", "clip"):
        lo, hi = kwargs.get("min"), kwargs.get("max")
        if lo is None and hi is None:
            raise NotElementwise(f"{where}: clamp without bounds")
        v = _bound(value, plan)
        out = v if lo is None else f"tl.maximum({v}, {float(lo)!r})"
        out = out if hi is None else f"tl.minimum({out}, {float(hi)!r})"
        plan.ops.append("clamp")
        return out
    v = _bound(value, plan)
    plan.ops.append(name)
    if name in _SIMPLE:
        return _SIMPLE[name].format(v=v)
    if name == "gelu" and kwargs.get("approximate", "none") == "tanh":
        return (f"0.5 * {v} * (1.0 + (2.0 * tl.sigmoid(2.0 * (0.7978845608028654 * ({v} + 0.044715 * {v} * {v} * {v})))"
                " - 1.0))")
    if name == "gelu":
        return f"0.5 * {v} * (1.0 + tl.erf({v} * 0.7071067811865476))"
    if name == "elu":
        return f"tl.where({v} > 0.0, {v}, {float(kwargs['alpha'])!r} * (tl.exp({v}) - 1.0))"
    if name == "leaky_relu":
        return f"tl.where({v} > 0.0, {v}, {v} * {float(kwargs['negative_slope'])!r})"
    if name == "hardtanh":
        return f"tl.minimum(tl.maximum({v}, {float(kwargs['min_val'])!r}), {float(kwargs['max_val'])!r})"
    if name == "softplus":
        beta, threshold = float(kwargs["beta"]), float(kwargs["threshold"])
        if beta == 1.0:
            return f"tl.where({v} > {threshold!r}, {v}, tl.log(1.0 + tl.exp({v})))"
        return f"tl.where({v} * {beta!r} > {threshold!r}, {v}, tl.log(1.0 + tl.exp({v} * {beta!r})) / {beta!r})"
    plan.ops.pop()
    raise NotElementwise(f"{where}: {name} is not an elementwise operator this teacher translates")


def _bound(value: str, plan: _Plan) -> str:
    """`value` as a name the formula may repeat: an expression is bound to a temporary first."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", value):
        return value
    plan.temps += 1
    name = f"t{plan.temps}"
    while name in plan.taken or any(op.name == name for op in plan.operands.values()):
        plan.temps += 1
        name = f"t{plan.temps}"
    plan.lines.append(f"{name} = {value}")
    return name


def _wrap(text: str) -> str:
    return text if re.fullmatch(r"[A-Za-z_][A-Za-z_0-9.]*|-?\d[\d.e+-]*|[A-Za-z_.]+\(.*\)", text) and not _top_level_op(text) else f"({text})"


def _top_level_op(text: str) -> bool:
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and ch in "+-*/ " and i > 0:
            return True
    return False


def _kernel_name(ops: list[str]) -> str:
    names: list[str] = []
    for op in ops:
        if not names or names[-1] != op:
            names.append(op)
    return "_".join(names[:4]) + "_kernel"
