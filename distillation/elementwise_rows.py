"""Row operations of the elementwise teacher: what reads a whole row of the tensor at once.

softmax / log_softmax along one axis, logsumexp / sum / mean / amax / amin along one axis or
adjacent ones (`dim=(2, 3)`; kept as 1 with keepdim=True, or left out), and the layers of `__init__` that are these (nn.Softmax, nn.LogSoftmax) or norms (LayerNorm over its trailing axes, GroupNorm over
a group of channels and the axes after them, InstanceNorm over the axes after the channel).
Each is a reduction over a block of axes, so a kernel for it runs one program per row: the row's
elements are `n_cols` values `col_stride` apart, loaded whole in one block (`cols`), and the
elementwise statements around the operation apply to the row as they would to any block. The
global offsets of the row's elements are computed as in the one-kernel translation, so
parameters, buffers and per-channel statistics load the same way (elementwise_ops).

Nothing here runs the reference: it reads the AST (elementwise_teacher.translate calls it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from autotriton.distillation.elementwise_ops import (_FUNCTION_PREFIXES, NotElementwise, _arguments, _bound, _dotted,
                                                    _Operand, _Plan)

#: Reductions that leave one value per row (called with keepdim=True), and those that keep the shape.
REDUCTIONS = {"sum", "mean", "amax", "amin", "logsumexp"}
SHAPE_KEEPING = {"softmax", "log_softmax"}
NORMS = {"layer_norm", "group_norm", "instance_norm"}
POOLS = {"max_pool", "avg_pool"}
_LAYER_NORM = [("normalized_shape", None), ("eps", 1e-5), ("elementwise_affine", True), ("bias", True)]
_GROUP_NORM = [("num_groups", None), ("num_channels", None), ("eps", 1e-5), ("affine", True)]
_INSTANCE_NORM = [("num_features", None), ("eps", 1e-5), ("momentum", 0.1), ("affine", False), ("track_running_stats", False)]


_POOL = [("kernel_size", None), ("stride", None), ("padding", 0)]


def norm_layer(called: str, value: ast.Call) -> tuple[str, dict[str, Any]] | None:
    """(kind, arguments) of a norm, softmax or 2-D pooling layer __init__ builds
    (`nn.LayerNorm(features)`, `nn.MaxPool2d(kernel_size=2)`), else None."""
    last, root = called.rsplit(".", 1)[-1], called.split(".")[0]
    if root not in ("nn", "torch"):
        return None
    if last in ("MaxPool2d", "AvgPool2d"):  # square windows, integers written out; no dilation or ceil_mode
        kwargs = _arguments(value, _POOL, skip=0)
        if not all(isinstance(kwargs[k], int) or (k == "stride" and kwargs[k] is None) for k in ("kernel_size", "stride", "padding")):
            raise NotElementwise(f"`{ast.unparse(value)}`: a window given as a tuple")
        kwargs["stride"] = kwargs["stride"] or kwargs["kernel_size"]
        return ("max_pool" if last == "MaxPool2d" else "avg_pool"), kwargs
    if last == "LayerNorm":
        kwargs = _arguments(value, _LAYER_NORM, skip=0, as_written=("normalized_shape",))
        node = value.args[0] if value.args else next((k.value for k in value.keywords if k.arg == "normalized_shape"), None)
        kwargs["dims"] = len(node.elts) if isinstance(node, (ast.Tuple, ast.List)) else 1
        if isinstance(node, (ast.Tuple, ast.List)) and not node.elts:
            raise NotElementwise(f"`{ast.unparse(value)}`: an empty normalized_shape")
        return "layer_norm", kwargs
    if last == "GroupNorm":
        return "group_norm", _arguments(value, _GROUP_NORM, skip=0, as_written=("num_groups", "num_channels"))
    if last in ("InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"):
        return "instance_norm", _arguments(value, _INSTANCE_NORM, skip=0, as_written=("num_features", "momentum"))
    if last in ("Softmax", "LogSoftmax"):  # nn.Softmax(dim=-1): the function along its axis
        return ("softmax" if last == "Softmax" else "log_softmax"), _arguments(value, [("dim", None)], skip=0)
    return None


@dataclass(frozen=True)
class Rows:
    """A row: the axes `first`..`last` of a tensor of rank `rank` (the first split into `groups`,
    a host expression, when GroupNorm reads a group of channels)."""

    first: int
    last: int
    rank: int
    groups: str = ""

    def host(self, t: str) -> list[str]:
        """Host statements computing the kernel's `n_cols` and `col_stride` for tensor `t`."""
        if self.groups:
            n_cols = f"{t}.numel() // ({t}.shape[0] * {self.groups})"
        else:
            n_cols = " * ".join(f"{t}.shape[{i}]" for i in range(self.first, self.last + 1))
        stride = " * ".join(f"{t}.shape[{i}]" for i in range(self.last + 1, self.rank)) or "1"
        return [f"n_cols = {n_cols}", f"col_stride = {stride}"]

    def reduced_shape(self, t: str, keepdim: bool) -> str:
        """The shape of `t` with the row's axes kept as 1 (keepdim) or left out."""
        k = self.last - self.first + 1
        ones = "(" + ", ".join(["1"] * k) + ("," if k == 1 else "") + ") + " if keepdim else ""
        return f"{t}.shape[:{self.first}] + {ones}{t}.shape[{self.last + 1}:]"


@dataclass
class RowOp:
    kind: str  # a REDUCTIONS, SHAPE_KEEPING or NORMS name
    arg: ast.expr  # the tensor it reads
    rows: Rows
    attr: str = ""  # the norm layer's attribute
    kwargs: dict[str, Any] = field(default_factory=dict)
    keepdim: bool = True  # a reduction's: the axis kept as 1, or left out (the rank one less)

    @property
    def reduces(self) -> bool:
        return self.kind in REDUCTIONS


def _axis(node: ast.expr | None, rank: int, where: str) -> int:
    first, last = _axes(node, rank, where, several=False)
    return first


def _axes(node: ast.expr | None, rank: int, where: str, several: bool = True) -> tuple[int, int]:
    """(first, last) of the literal axis, or of a literal tuple of adjacent axes (`dim=(2, 3)`)."""
    try:
        value = ast.literal_eval(node) if node is not None else None
    except ValueError:
        value = None
    axes = list(value) if several and isinstance(value, (tuple, list)) and value else [value]
    if not all(isinstance(a, int) and not isinstance(a, bool) and -rank <= a < rank for a in axes):
        raise NotElementwise(f"{where}: dim must be literal axes of the rank-{rank} input")
    axes = sorted({a % rank for a in axes})
    if axes != list(range(axes[0], axes[-1] + 1)) or len(axes) != len(value if isinstance(value, (tuple, list)) else [value]):
        raise NotElementwise(f"{where}: the axes are not adjacent")
    return axes[0], axes[-1]


def row_op(node: ast.expr, layers: dict[str, tuple[str, dict[str, Any]]], rank: int) -> RowOp | None:
    """The row operation `node` is (a norm or softmax layer's call, softmax, a reduction along
    one axis or adjacent ones), or None."""
    if not isinstance(node, ast.Call):
        return None
    func, where = node.func, f"`{ast.unparse(node)}`"
    layer = _layer_call(node, layers, SHAPE_KEEPING | NORMS)
    if layer is not None and layer[0] in SHAPE_KEEPING:
        kind, kwargs = layer
        axis = _axis(ast.Constant(kwargs["dim"]) if kwargs["dim"] is not None else None, rank, where)
        return RowOp(kind, node.args[0], Rows(axis, axis, rank))
    if layer is not None:
        kind, kwargs = layer
        if kind == "layer_norm":
            rows = Rows(rank - kwargs["dims"], rank - 1, rank)
        elif kind == "group_norm":
            rows = Rows(1, rank - 1, rank, groups=f"self.{func.attr}.num_groups")
        else:
            if kwargs["track_running_stats"]:
                raise NotElementwise(f"{where}: an InstanceNorm with running statistics")
            rows = Rows(2, rank - 1, rank)
        if rows.first < 1 or rows.first > rows.last:
            raise NotElementwise(f"{where}: normalises the batch axis or no axis of the rank-{rank} input")
        return RowOp(kind, node.args[0], rows, attr=func.attr, kwargs=kwargs)
    dotted = _dotted(func)
    name = next((dotted[len(p):] for p in _FUNCTION_PREFIXES if dotted.startswith(p) and "." not in dotted[len(p):]), None)
    args = list(node.args)
    if name is None and isinstance(func, ast.Attribute):  # x.softmax(dim=1), x.sum(1, keepdim=True)
        name, args = func.attr, [func.value, *args]
    if name not in REDUCTIONS | SHAPE_KEEPING or not args:
        return None
    keywords = {k.arg: k.value for k in node.keywords}
    if set(keywords) - {"dim", "keepdim"} or len(args) > (3 if name in REDUCTIONS else 2):
        raise NotElementwise(f"{where}: arguments other than dim and keepdim are not translated")
    first, last = _axes(keywords.get("dim", args[1] if len(args) > 1 else None), rank, where, several=name in REDUCTIONS)
    keepdim = True
    if name in REDUCTIONS:
        keep = keywords.get("keepdim", args[2] if len(args) > 2 else ast.Constant(False))
        if not (isinstance(keep, ast.Constant) and isinstance(keep.value, bool)):
            raise NotElementwise(f"{where}: keepdim must be True or False as written")
        keepdim = keep.value
    return RowOp(name, args[0], Rows(first, last, rank), keepdim=keepdim)


def pool_op(node: ast.expr, layers: dict[str, tuple[str, dict[str, Any]]], rank: int) -> tuple[str, ast.expr, dict[str, Any]] | None:
    """(kind, the tensor it reads, its window) for a call of a pooling layer of __init__, else None."""
    layer = _layer_call(node, layers, POOLS)
    if layer is None:
        return None
    if rank != 4:
        raise NotElementwise(f"`{ast.unparse(node)}`: a 2-D pooling layer reads one (B, C, H, W) input")
    return layer[0], node.args[0], layer[1]


def _layer_call(node: ast.expr, layers: dict[str, tuple[str, dict[str, Any]]], kinds: set[str]) -> tuple[str, dict[str, Any]] | None:
    """(kind, arguments) when `node` calls a layer of __init__ (`self.norm(x)`) of one of `kinds`,
    else None; refused when it passes the layer more than its input."""
    func = node.func if isinstance(node, ast.Call) else None
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
            and layers.get(func.attr, ("",))[0] in kinds):
        return None
    if len(node.args) != 1 or node.keywords:
        raise NotElementwise(f"`{ast.unparse(node)}`: a layer called with more than its input")
    return layers[func.attr]


def pool_lines(kind: str, window: dict[str, Any], x: str, target: str) -> list[str]:
    """Kernel statements computing `target`, the pooled value of each output element (`offsets`
    over the output) from input `x` (`x_ptr`, planes of in_h x in_w): the window's loads, masked
    where they fall outside the input."""
    k, s, p = window["kernel_size"], window["stride"], window["padding"]
    other = '-float("inf")' if kind == "max_pool" else "0.0"
    start = f"tl.full([BLOCK_SIZE], {other}, tl.float32)"
    load = f"tl.load({x}_ptr + (plane * in_h + ih) * in_w + iw, mask=inside, other={other})"
    step = f"tl.maximum({target}, {load})" if kind == "max_pool" else f"{target} + {load}"
    lines = ["ow = offsets % out_w", "oh = (offsets // out_w) % out_h", "plane = offsets // (out_w * out_h)",
             f"{target} = {start}", f"for kh in tl.static_range({k}):", f"    for kw in tl.static_range({k}):",
             f"        ih = oh * {s} + kh" + (f" - {p}" if p else ""), f"        iw = ow * {s} + kw" + (f" - {p}" if p else ""),
             "        inside = mask & (ih >= 0) & (ih < in_h) & (iw >= 0) & (iw < in_w)", f"        {target} = {step}"]
    if kind == "avg_pool":
        lines.append(f"{target} = {target} / {float(k * k)!r}")
    return lines


def _named(plan: _Plan, base: str, value: str) -> str:
    """`value` bound to a new kernel variable named after `base` (numbered when taken)."""
    taken = plan.taken | {op.name for op in plan.operands.values()} | {line.split(" = ", 1)[0] for line in plan.lines}
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}{k}"
    plan.lines.append(f"{name} = {value}")
    return name


def row_value(op: RowOp, value: str, plan: _Plan) -> str:
    """The Triton expression of `op` applied to the row `value` (lines it needs added to `plan`).
    Lanes past the row's end (`mask` off) are left out of every sum and maximum."""
    v = _bound(value, plan)
    plan.ops.append(op.kind)
    masked = f"tl.where(mask, {v}, 0.0)"
    if op.kind in ("sum", "mean"):
        total = f"tl.sum({masked}, axis=0)"
        return total if op.kind == "sum" else f"{total} / n_cols"
    if op.kind in ("amax", "amin"):
        fn, fill = ("tl.max", '-float("inf")') if op.kind == "amax" else ("tl.min", 'float("inf")')
        return f"{fn}(tl.where(mask, {v}, {fill}), axis=0)"
    if op.kind in ("softmax", "log_softmax", "logsumexp"):
        top = _named(plan, "row_max", f'tl.max(tl.where(mask, {v}, -float("inf")), axis=0)')
        if op.kind == "softmax":
            exps = _named(plan, "exps", f"tl.where(mask, tl.exp({v} - {top}), 0.0)")
            return f"{exps} / tl.sum({exps}, axis=0)"
        total = _named(plan, "row_sum", f"tl.sum(tl.where(mask, tl.exp({v} - {top}), 0.0), axis=0)")
        return f"{v} - {top} - tl.log({total})" if op.kind == "log_softmax" else f"{top} + tl.log({total})"
    # a norm: the row's mean and biased variance, then the affine parameters
    mean = _named(plan, "mean", f"tl.sum({masked}, axis=0) / n_cols")
    diff = _named(plan, "diff", f"tl.where(mask, {v} - {mean}, 0.0)")
    var = _named(plan, "var", f"tl.sum({diff} * {diff}, axis=0) / n_cols")
    out = f"{diff} / tl.sqrt({var} + {float(op.kwargs['eps'])!r})"
    weight, bias = _norm_parameters(op, plan)
    if weight:
        out = f"{out} * {weight}"
    if bias:
        out = f"{out} + {bias}"
    return out


def _norm_parameters(op: RowOp, plan: _Plan) -> tuple[str, str]:
    """The kernel names of the norm's weight and bias (empty when it has none), registered as
    operands: LayerNorm's over its trailing axes, GroupNorm's and InstanceNorm's per channel."""
    if op.kind == "layer_norm":
        affine = op.kwargs["elementwise_affine"]
        names = ["weight", "bias"] if affine and op.kwargs["bias"] else ["weight"] if affine else []
        shape = ["n"] * op.kwargs["dims"]  # not 1: the parameter spans the normalised axes
        channels = False
    else:
        names = ["weight", "bias"] if op.kwargs["affine"] else []
        shape, channels = None, True
    out = {}
    for param in names:
        name = f"{op.attr}_{param}"
        host = f"self.{op.attr}.{param}"
        plan.operands.setdefault(host, _Operand(name, host, shape, channels_of=op.attr if channels else ""))
        out[param] = name
    return out.get("weight", ""), out.get("bias", "")
