"""A forward input unpacked into a fixed number of names, sized from the error that says how many.

    res_idx, token_idx, asym_id = feats.unbind(dim=-1)   # feats' last axis holds 3
    batch_size, seq_len = asym_id.shape                   # asym_id has 2 axes
    q, k, v = qkv                                         # qkv's first axis holds 3

A guessed input of other sizes fails with "too many values to unpack (expected 3)" or "not enough
values to unpack (expected 2, got 1)" at that statement (alphafold3-pytorch's features, held-out set
28). The statement is read from the traceback; only the AST is read, nothing harvested is executed.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from autotriton.harvesting.input_repair import _resized_code, _to_rank
from autotriton.harvesting.signatures import model_params
from autotriton.harvesting.synthesis import Attempt

_UNPACK = re.compile(r"(?:too many|not enough) values to unpack \(expected (\d+)")


def _unpacked(statement: str) -> tuple[str, str, int, int] | None:
    """(input name, "axis" or "rank", axis, count) of a statement that unpacks a name, else None."""
    try:
        tree = ast.parse(statement.strip())
    except SyntaxError:
        return None
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Assign):
        return None
    node = tree.body[0]
    target = node.targets[0]
    if not isinstance(target, (ast.Tuple, ast.List)) or any(isinstance(e, ast.Starred) for e in target.elts):
        return None
    count, value = len(target.elts), node.value
    if isinstance(value, ast.Name):
        return value.id, "axis", 0, count
    if isinstance(value, ast.Attribute) and value.attr == "shape" and isinstance(value.value, ast.Name):
        return value.value.id, "rank", 0, count
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "unbind"):
        return None
    args = list(value.args)
    if isinstance(value.func.value, ast.Name) and value.func.value.id == "torch":  # torch.unbind(x, dim)
        if not args or not isinstance(args[0], ast.Name):
            return None
        name, args = args[0].id, args[1:]
    elif isinstance(value.func.value, ast.Name):
        name = value.func.value.id
    else:
        return None
    dim: ast.expr | None = args[0] if args else next((k.value for k in value.keywords if k.arg == "dim"), None)
    try:
        axis = 0 if dim is None else ast.literal_eval(dim)
    except ValueError:
        return None
    return (name, "axis", axis, count) if isinstance(axis, int) else None


def unpacked_input(standalone: str, attempt: Attempt, detail: str) -> Attempt | None:
    """The attempt with the forward input that the failing statement unpacks given as many items
    along the unpacked axis (or as many axes, for `a, b = x.shape`); None when the error is not an
    unpacking one or the statement unpacks no forward input."""
    m = None
    for m in _UNPACK.finditer(detail or ""):
        pass
    if m is None:
        return None
    lines = [line for line in detail[:m.start()].splitlines() if "=" in line and not line.strip().startswith("File ")]
    found = _unpacked(lines[-1]) if lines else None
    if found is None:
        return None
    name, kind, axis, count = found
    names = [p.name for p in model_params(standalone, "forward") or () if p.kind == "pos" and p.name != "self"]
    if name not in names[:len(attempt.input_spec)]:
        return None
    i = names.index(name)
    spec: Any = attempt.input_spec[i]
    if not (isinstance(spec, dict) and spec.get("kind") == "tensor" and spec.get("shape")):
        return None
    shape = list(spec["shape"])
    if kind == "rank":
        shape = (_to_rank(shape, count) or shape + [8] * (count - len(shape))) if len(shape) != count else None
    elif -len(shape) <= axis < len(shape) and shape[axis] != count:
        shape[axis] = count
    else:
        return None
    if not shape:
        return None
    codes, specs = list(attempt.input_code), list(attempt.input_spec)
    specs[i] = {**spec, "shape": shape}
    codes[i] = _resized_code(codes[i], shape, specs[i])
    return Attempt(attempt.init_code, attempt.init_spec, codes, specs, label=f"{attempt.label} unpacked")
