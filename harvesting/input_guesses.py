"""Guessing the forward inputs of a `Model`: each input's rank, layout and sizes, from the first
layer applied to it, how forward reads its shape (`b, c, h, w = x.shape`, `t[:, None]`,
`torch.arange(n)`), the constructor's values, and forward's asserts on its shape. Used by
synthesis.py; never executes harvested code.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from autotriton.harvesting.docstring_inputs import docstring_input
from autotriton.harvesting.input_display import ones_code
from autotriton.harvesting.constraints import fit_shape
from autotriton.harvesting.signatures import _Param, unwrap_optional

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
# An axis, or how many trailing axes, forward works along (`forward(self, x, dim)`, neuraloperator's
# Fourier continuations: `range(-dim, 0)`): torch's own word for an axis, an int.
_AXIS_INPUT = re.compile(r"^(dim|dims|axis|axes|ndim|n_dim|n_dims|num_dims)$")
# Diffusion-style conditioning: one time / noise level per batch element.
_TIME_INPUT = re.compile(r"^(t|time|times|timesteps?|time_steps?|noise_levels?|sigmas?|log_snr|noise_cond)$")



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


_CONTAINERS = ("Sequential", "ModuleList", "ModuleDict")


def _opaque(call: ast.Call | None) -> bool:
    """Whether a layer built by `call` is a container filled later (`nn.Sequential()`, then
    `add_module(...)`): what it does to its input is not read here. A local class is not counted:
    most keep their input's features (a block, an attention), and the layer after them sizes it."""
    if call is None:
        return False
    return ast.unparse(call.func).split(".")[-1] in _CONTAINERS and not call.args and not call.keywords


def _passed_opaque_at(forward: ast.FunctionDef, param: str, calls: dict[str, ast.Call]) -> int | None:
    """The line of forward's first top-level `param = self.<layer>(param ...)` through an opaque
    layer (pytorchcv's `x = self.features(x)`, an `nn.Sequential()` filled by add_module): past it
    the name holds that layer's output, and the layers applied to it (`self.output`, a Linear over
    the features' channels) say nothing of the input's sizes."""
    for stmt in forward.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
                and stmt.targets[0].id == param and isinstance(stmt.value, ast.Call):
            f = stmt.value.func
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self" \
                    and any(isinstance(a, ast.Name) and a.id == param for a in stmt.value.args[:1]) and _opaque(calls.get(f.attr)):
                return stmt.lineno
    return None


def _first_layer(forward: ast.FunctionDef, param: str, calls: dict[str, ast.Call]) -> tuple[str, ast.Call] | None:
    """The first self.<layer>(param ...) call in forward whose layer we know, before forward changes
    the input's rank (`x = x.unsqueeze(1)`) or passes it through a layer whose effect is not read
    here (`x = self.features(x)`)."""
    reshaped = min((line for line in (_reshaped_at(forward, param), _passed_opaque_at(forward, param, calls))
                    if line is not None), default=None)
    for node in ast.walk(forward):
        if reshaped is not None and getattr(node, "lineno", 0) > reshaped:
            continue
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
    least: list[int] = []  # what `x.size(k)`, `x.shape[k]` ask: more than k axes
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
                    least.append(k + 1 if k >= 0 else -k)
            if node.func.attr in ("permute",) and node.args:
                if len(node.args) == 1 and isinstance(node.args[0], (ast.Tuple, ast.List)):
                    hints.append(len(node.args[0].elts))
                elif all(isinstance(a, ast.Constant) for a in node.args):
                    hints.append(len(node.args))
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) == f"{param}.shape" and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
            k = node.slice.value
            if k not in (0, -1):
                least.append(k + 1 if k >= 0 else -k)
    if least:  # `x.size(2)` and `x.size(3)`: at least 4 axes, one hint (a rank 3 guess fails the second)
        hints.append(max(least))
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


def _unpacked_ranks(forward: ast.FunctionDef, param: str) -> tuple[int | None, int | None]:
    """(exact, least): the rank `a, b, c = x.shape` (no starred target) demands of input `param`,
    and the least rank `b, n, *_, device = *x.shape, x.device` (one starred target) demands; None
    where forward has no such unpacking."""
    shapes = (f"{param}.shape", f"{param}.size()")
    exact: int | None = None
    least: int | None = None
    for node in ast.walk(forward):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple)):
            continue
        added = _axes_added_before(forward, param, node.lineno)
        e, l = _unpacked_rank(node, shapes)
        if e is not None and exact is None:
            exact = e - added if e - added >= 1 else None
        if l is not None and least is None:
            least = max(l - added, 1)
    return exact, least


def _axes_added(stmt: ast.stmt, param: str) -> int:
    """Axes a rebinding of input `param` adds: `x = x.unsqueeze(1)` and `x = x[:, None]` one each,
    `x = x.squeeze(1)` one less; 0 for any other statement (other rebindings are taken to keep the rank)."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == param):
        return 0
    v = stmt.value
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and isinstance(v.func.value, ast.Name) \
            and v.func.value.id == param and len(v.args) == 1:
        return {"unsqueeze": 1, "squeeze": -1}.get(v.func.attr, 0)
    if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and v.value.id == param:
        items = v.slice.elts if isinstance(v.slice, ast.Tuple) else [v.slice]
        return sum(1 for e in items if isinstance(e, ast.Constant) and e.value is None)
    return 0


def _axes_added_before(forward: ast.FunctionDef, param: str, line: int) -> int:
    """Axes forward's top-level rebindings of input `param` add before `line` (`x = x.unsqueeze(1);
    b, c, t = x.shape` takes a 2-D input)."""
    return sum(_axes_added(stmt, param) for stmt in forward.body if stmt.lineno < line)


def _reshaped_at(forward: ast.FunctionDef, param: str) -> int | None:
    """The line of forward's first top-level rebinding that changes input `param`'s rank: past it,
    a layer applied to the name is not applied to the input (its sizes are not the input's)."""
    return next((stmt.lineno for stmt in forward.body if _axes_added(stmt, param)), None)


def _shape_prefix(node: ast.expr, shapes: tuple[str, str]) -> int | None:
    """k of `x.shape[:k]` (the input has at least k axes), else None."""
    if isinstance(node, ast.Subscript) and ast.unparse(node.value) in shapes and isinstance(node.slice, ast.Slice) \
            and node.slice.lower is None and node.slice.step is None and isinstance(node.slice.upper, ast.Constant) \
            and type(node.slice.upper.value) is int and node.slice.upper.value > 0:
        return node.slice.upper.value
    return None


def _unpacked_rank(node: ast.Assign, shapes: tuple[str, str]) -> tuple[int | None, int | None]:
    """(exact, least) rank of the shape one tuple assignment unpacks (see _unpacked_ranks)."""
    exact: int | None = None
    least: int | None = None
    targets = node.targets[0].elts
    stars = [i for i, e in enumerate(targets) if isinstance(e, ast.Starred)]
    values = node.value.elts if isinstance(node.value, ast.Tuple) else []
    if not stars:
        if ast.unparse(node.value) in shapes:
            exact = len(targets)
        else:  # `b, n, _, h = *x.shape, self.heads`: the shape fills what the other values leave
            starred = [e for e in values if isinstance(e, ast.Starred)]
            if len(starred) == 1 and ast.unparse(starred[0].value) in shapes and len(targets) > len(values) - 1:
                exact = len(targets) - (len(values) - 1)
            elif len(starred) == 1:  # `batch, seq_len, device = *tokens.shape[:2], tokens.device`: at least 2
                least = _shape_prefix(starred[0].value, shapes)
    elif len(stars) == 1:
        after = len(targets) - stars[0] - 1
        if ast.unparse(node.value) in shapes:
            least = len(targets) - 1
        elif values and isinstance(values[0], ast.Starred) and ast.unparse(values[0].value) in shapes \
                and after >= len(values) - 1:  # the values after the shape fill the targets after the star
            least = len(targets) - 1 - (len(values) - 1)
    return exact, least


_EINOPS_FUNCS = {"rearrange", "reduce", "repeat"}
_EINOPS_LAYERS = {"Rearrange", "Reduce", "EinMix"}


def _pattern_rank(side: str) -> int | None:
    """Number of axes one side of an einops pattern names (`b (h w) c` is 3), None with `...`."""
    if "..." in side or "…" in side:
        return None
    depth, count = 0, 0
    for token in re.findall(r"\(|\)|[^\s()]+", side):
        if token == "(":
            count += depth == 0
            depth += 1
        elif token == ")":
            depth -= 1
        elif depth == 0:
            count += 1
    return count or None


def _einops_layer_pattern(call: ast.Call) -> str | None:
    """The pattern of an einops layer (`Rearrange('b c h w -> b (h w) c')`), also as the first
    layer of an nn.Sequential."""
    name = ast.unparse(call.func).split(".")[-1]
    if name == "Sequential" and call.args and isinstance(call.args[0], ast.Call):
        return _einops_layer_pattern(call.args[0])
    if name in _EINOPS_LAYERS and call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        return call.args[0].value
    return None


def _einops_rank(forward: ast.FunctionDef, param: str, calls: dict[str, ast.Call]) -> int | None:
    """The rank the first einops pattern applied to input `param` names: `rearrange(x, 'b n d -> ...')`,
    an einops layer from __init__ (`self.to_patches(x)`), or its operand of
    `einsum('b i d, b j d -> b i j', x, y)`. einops refuses any other rank."""
    # the input's own pattern only while it is still the input: before forward rebinds the name
    rebound = min((n.lineno for n in ast.walk(forward) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                   and any(isinstance(t, ast.Name) and t.id == param
                           for t in ast.walk(ast.Tuple(n.targets if isinstance(n, ast.Assign) else [n.target])))),
                  default=None)
    calls_in_order = sorted((n for n in ast.walk(forward) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))
    for node in calls_in_order:
        if rebound is not None and node.lineno > rebound:
            break
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
        args = node.args
        pattern = None
        if name in _EINOPS_FUNCS and len(args) >= 2 and isinstance(args[0], ast.Name) and args[0].id == param \
                and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str):
            pattern = args[1].value
        elif _einx_call(f) and args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            # einx: `einx.multiply('b, d -> b d', x, freqs)`, `einx.sum('b [n] d', x)`: the pattern's
            # comma-separated inputs are the operands', in order
            pattern = _operand_pattern(args[0].value, args[1:], param, spaced=True)
        elif name == "einsum" and args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            pattern = _operand_pattern(args[0].value, args[1:], param, spaced=False)
        elif name == "einsum" and len(args) >= 2 and isinstance(args[-1], ast.Constant) and isinstance(args[-1].value, str):
            # einops.einsum(x, y, 'b i d, b j d -> b i j'): the pattern comes last
            pattern = _operand_pattern(args[-1].value, args[:-1], param, spaced=True)
        elif (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self" and f.attr in calls
              and args and isinstance(args[0], ast.Name) and args[0].id == param):
            pattern = _einops_layer_pattern(calls[f.attr])
        if pattern is not None:
            return _pattern_rank(pattern.split("->")[0])
    return None


def _einx_call(f: ast.expr) -> bool:
    """`einx.<op>(pattern, *tensors)` (or an alias of the module: `import einx as ex`)."""
    return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("einx", "ex")


def _operand_pattern(pattern: str, operands: list[ast.expr], param: str, *, spaced: bool) -> str | None:
    """The part of an einsum-style `pattern` ('b i d, b j d -> b i j') that names operand `param`;
    torch.einsum's unspaced terms ('bid') are spelled out an axis a letter."""
    if len(operands) == 1 and isinstance(operands[0], (ast.Tuple, ast.List)):
        operands = operands[0].elts
    terms = pattern.split("->")[0].split(",")
    for k, a in enumerate(operands):
        if isinstance(a, ast.Name) and a.id == param:
            if k >= len(terms):
                return None
            term = terms[k].strip()
            return term if spaced or " " in term else " ".join(term.replace("...", "…"))
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


# a tensor's methods whose positional arguments, when there are several, are each one size:
# `x.view(B, H, W, C)`, `patches.view(b, height // k, width // k, k, k)`, `x.repeat(1, n, 1)`
_SHAPE_METHODS = {"view", "reshape", "expand", "repeat", "new_zeros", "new_ones", "new_empty"}


def _used_as_size(forward: ast.FunctionDef, param: str) -> bool:
    """Whether forward passes `param` itself (or arithmetic on it) as a size to a factory or range, as
    a slice's bound,
    or as one of several sizes to a tensor's shape method (a `forward(self, x, H, W)` that views a
    flattened x back as [B, H, W, C]: H and W are ints; a tensor there raises "view(): argument
    'size' failed to unpack ... got Tensor")."""
    def plain(node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id == param
        if isinstance(node, ast.BinOp):
            return plain(node.left) or plain(node.right)
        if isinstance(node, ast.UnaryOp):
            return plain(node.operand)
        return False

    for node in ast.walk(forward):
        if isinstance(node, ast.Slice) and any(b is not None and plain(b) for b in (node.lower, node.upper, node.step)):
            return True  # `text[:, :seq_len]`: a bound of a slice (a tensor there: "only integer tensors ... index")
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in _SIZE_CALLS and any(plain(a) for a in node.args):
                return True
            # a method of a tensor (not `torch.reshape(x, shape)`, whose first argument is the tensor)
            method = isinstance(f, ast.Attribute) and not (isinstance(f.value, ast.Name) and f.value.id in ("torch", "F"))
            if method and name in _SHAPE_METHODS and len(node.args) >= 2 and any(plain(a) for a in node.args):
                return True
    return False


# calls whose arguments are sizes: `x.view(b, c, size[0], size[1])`, `int(size[0])`, `range(size[0])`
_SIZE_TAKERS = _SIZE_CALLS | {"view", "reshape", "expand", "repeat", "unflatten", "interpolate", "int", "max", "min", "new_tensor"}


def _read_as_size(item: ast.Subscript, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether `p[k]` is used the way a size is: in arithmetic, a comparison, a tuple, an
    assignment to a name, or as an argument of a call that takes sizes (not as an index into a
    tensor, nor as a layer's input)."""
    up = parents.get(item)
    while isinstance(up, (ast.Tuple, ast.List, ast.Starred)):
        item, up = up, parents.get(up)
    if isinstance(up, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.Assign, ast.keyword)):
        return True
    if isinstance(up, ast.Call) and item is not up.func:
        f = up.func
        return (f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "") in _SIZE_TAKERS
    return False


# forward inputs named as a spatial size: `x_size`, `hw_shape`, `input_resolution`, `img_size`
_SIZE_INPUT = re.compile(r"(^|_)(size|shape|hw|resolution)$")


def _hands_on(func: ast.expr) -> bool:
    """Whether a call passes its arguments on to the module's own code (`self.calculate_mask(s)`,
    `blk(x, s)` for a block of a loop, `window_partition(x, s)`) rather than to torch's."""
    if isinstance(func, ast.Attribute):
        return isinstance(func.value, ast.Name) and func.value.id == "self"
    return isinstance(func, ast.Name) and func.id not in _SIZE_TAKERS


def _compares_whole(compare: ast.Compare) -> bool:
    """`self.input_resolution == x_size`: an equality with another value, no literal in it."""
    return all(isinstance(o, (ast.Eq, ast.NotEq)) for o in compare.ops) \
        and not any(isinstance(o, ast.Constant) for o in [compare.left, *compare.comparators])


def _python_value_use(forward: ast.FunctionDef, param: str) -> tuple[str, Any] | None:
    """How forward uses `param` when every use says it is a plain Python value, not a tensor:
    ("ints", n) when it is only indexed by constants or unpacked (`x_size[0]`, `h, w = x_size`:
    a (height, width) handed down beside a flattened input); ("number", literal) when a use
    compares it with a number as a condition (`if quality < 50:`, a tensor there raises "Boolean
    value of Tensor ... is ambiguous"); ("bool", True) when it is tested bare (`if target_is_real:`,
    `a if p else b`). None when any use could be a tensor's (an attribute, an argument, arithmetic
    outside a condition). A size handed on (`blk(x, x_size)`, `self.calculate_mask(x_size)`) or
    compared with another value (`if self.input_resolution == x_size:`) says nothing either way; a
    size spread into a shape (`view(B, C, *x_size)`) or named as one (`x_size`, `hw_shape`) whose
    uses say nothing else is a (height, width) pair."""
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(forward):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    length, number, tested, arithmetic, spread = 0, None, False, False, False
    uses = [n for n in ast.walk(forward) if isinstance(n, ast.Name) and n.id == param and isinstance(n.ctx, ast.Load)]
    if not uses:
        return None
    for use in uses:
        up = parents.get(use)
        if isinstance(up, ast.Subscript) and up.value is use:
            index = up.slice
            if not (isinstance(index, ast.Constant) and type(index.value) is int and 0 <= index.value < 6):
                return None
            if not _read_as_size(up, parents):
                return None  # `z[edge_index[0]]`: an item that indexes a tensor is a tensor itself
            length = max(length, index.value + 1)
        elif isinstance(up, ast.Assign) and up.value is use and len(up.targets) == 1 and isinstance(up.targets[0], ast.Tuple) \
                and all(isinstance(e, ast.Name) for e in up.targets[0].elts):
            length = max(length, len(up.targets[0].elts))
        elif isinstance(up, (ast.If, ast.While, ast.IfExp, ast.Assert)) and up.test is use:
            tested = True
        elif isinstance(up, ast.UnaryOp) and isinstance(up.op, ast.Not) and isinstance(parents.get(up), (ast.If, ast.IfExp)):
            tested = True
        elif isinstance(up, ast.Compare) and isinstance(parents.get(up), (ast.If, ast.While, ast.IfExp, ast.Assert)) \
                and parents[up].test is up:
            others = [up.left, *up.comparators]
            literal = next((o.value for o in others if isinstance(o, ast.Constant) and type(o.value) in (int, float)), None)
            if literal is None and _compares_whole(up):
                continue
            if literal is None:
                return None
            number = literal if number is None else number
        elif isinstance(up, ast.BinOp):
            arithmetic = True  # `5000. / quality`: a number's, when a condition shows it is one
        elif isinstance(up, ast.Starred) and _read_as_size(up, parents):
            spread = True
        elif isinstance(up, ast.Compare) and _compares_whole(up):
            continue
        elif isinstance(up, ast.Call) and use in up.args and _hands_on(up.func):
            continue
        else:
            return None
    if arithmetic and number is None:
        return None
    if not (length or number is not None or tested) and (spread or _SIZE_INPUT.search(param)):
        return ("ints", 2)
    if length and number is None and not tested:
        return ("ints", length)
    if number is not None and not length:
        return ("number", number)
    if tested and not length and number is None:
        return ("bool", True)
    return None


# `List[torch.Tensor]`, `list[Tensor]`, `Sequence[torch.Tensor]`, `Tuple[Tensor, ...]`, `Tuple[Tensor, Tensor]`,
# `Sequence[FloatTensor]` (torch's typed tensor aliases)
_TENSOR_LIST = re.compile(r"^(?:typing\.)?(?:List|list|Sequence|Iterable|Tuple|tuple)\[((?:torch\.)?\w*Tensor(?:\s*,\s*(?:(?:torch\.)?\w*Tensor|\.\.\.))*)\]$")


def tensor_list_length(annotation: str) -> int:
    """How many tensors a forward input annotated as a list (or tuple) of tensors gets: the
    tuple's own count, else 2 (two pathways, two feature levels); 0 when it is not one."""
    m = _TENSOR_LIST.match(unwrap_optional(annotation))
    if m is None:
        return 0
    parts = [part.strip() for part in m.group(1).split(",")]
    return len(parts) if len(parts) > 1 and "..." not in parts else 2


def _input_options(p: _Param, forward: ast.FunctionDef | None, calls: dict[str, ast.Call], values: dict[str, Any], D: int,
                   spatial: int, like: list[tuple[str, dict[str, Any]]] | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The guesses for one forward input, best first: a plain Python value first when every use
    of it says so (_python_value_use; the tensor guesses follow, in case a tuple of tensors was
    read as sizes), then tensors by the evidence below. A mask forward reads nothing of the rank of
    (`torch.where(mask, x, y)`) takes the shapes of `like`, the first input's guesses, option by option."""
    if like and _MASK_INPUT.search(p.name) and forward is not None and all(s.get("kind") == "tensor" for _, s in like) \
            and not _rank_hints(forward, p.name) and _unpacked_ranks(forward, p.name) == (None, None):
        return [(ones_code(s["shape"]), {"kind": "tensor", "shape": list(s["shape"]), "dtype": "float32"}) for _, s in like]
    plain = _python_value_use(forward, p.name) if forward is not None and "Tensor" not in (p.annotation or "") else None
    first: list[tuple[str, dict[str, Any]]] = []
    if plain is not None and plain[0] == "ints":
        # a spatial size per item, as the tensor guesses use (8): the solver then fits the tensors to it
        first = [("(" + ", ".join(["8"] * plain[1]) + ("," if plain[1] == 1 else "") + ")",
                  {"kind": "ints", "value": [8] * plain[1]})]
    elif plain is not None and plain[0] == "number":
        first = [(repr(plain[1]), {"kind": "int" if type(plain[1]) is int else "float", "value": plain[1]})]
    elif plain is not None and plain[0] == "bool":
        first = [("True", {"kind": "bool", "value": True}), ("False", {"kind": "bool", "value": False})]
    else:
        # the shape forward's docstring states (`heads: torch.Tensor, dtype: torch.long, shape: (batch_size)`)
        stated = docstring_input(forward, p.name, values, D, spatial)
        first = [stated] if stated is not None else []
    taken = {code for code, _ in first}
    return first + [o for o in _guessed_options(p, forward, calls, values, D, spatial) if o[0] not in taken]


def _guessed_options(p: _Param, forward: ast.FunctionDef | None, calls: dict[str, ast.Call], values: dict[str, Any], D: int,
                     spatial: int) -> list[tuple[str, dict[str, Any]]]:
    name = p.name.lower()
    ann = p.annotation
    if ann in ("int",):
        return [(str(D), {"kind": "int", "value": D})]
    if ann in ("float",):
        return [("1.0", {"kind": "float", "value": 1.0})]
    if ann in ("bool",):
        return [("True", {"kind": "bool", "value": True})]
    if _AXIS_INPUT.match(name) and "Tensor" not in (ann or ""):
        return [("1", {"kind": "int", "value": 1}), ("2", {"kind": "int", "value": 2})]
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
    if _INT_INPUT.search(name) and layer is None:  # `tokens` a norm or a projection takes are embeddings
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
    exact, least = _unpacked_ranks(forward, p.name) if forward is not None else (None, None)
    told = _einops_rank(forward, p.name, calls) if forward is not None and exact is None else None
    least = least if exact is None and told is None else None
    if least is not None and 1 <= least <= 5 and not any(r >= least for r, _, _ in options[:1]):
        options.insert(0, (least, F, "channels_first" if least >= 4 else "channels_last"))
    if told is not None and 1 <= told <= 5:
        # the options so far were the fallbacks: the told rank leads, then them at that rank
        at_rank = [(told, F, "channels_first" if told >= 4 else "channels_last")] + [o for o in options if o[0] == told]
        options = at_rank + [o for o in options if o[0] != told]
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
    if _TIME_INPUT.match(name) and layer is None:
        # in [0, 1): a valid continuous time, noise level or (after scaling) step
        out.append(("torch.rand(2)", {"kind": "tensor", "shape": [2], "dtype": "float32"}))
        seen.add("torch.rand(2)")
    for rank, feat, layout in options:
        shape = _tensor_specs(rank, feat, layout, spatial)
        if _MASK_INPUT.search(name):
            code = ones_code(shape)
        else:
            code = f"torch.randn({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"
        if code not in seen:
            seen.add(code)
            out.append((code, {"kind": "tensor", "shape": shape, "dtype": "float32"}))
    return out

