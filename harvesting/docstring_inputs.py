"""Input shapes and dtypes that forward's own docstring states, in the numpydoc and Google styles
scientific packages write:

    heads: torch.Tensor, dtype: torch.long, shape: (batch_size)
    x (Tensor): node features of shape [num_nodes, in_channels].
    theta : Tensor
        Parameters, of shape (batch_size, dim_theta).

The shape's names become sizes (a batch is 2, a length 8, a constructor size its value, any other
width D) and an integer dtype a tensor of small indices; used by input_guesses as a forward
input's first guess. Only the docstring is read; nothing here executes harvested code.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from autotriton.harvesting.input_display import tensor_code

# `shape: (batch_size, dim)`, `of shape [N, C]`, `shape=(b, n)`, `Shape: (B, T)`
STATED_SHAPE = re.compile(r"\bshape\b\s*(?:[:=]|of)?\s*[\(\[]([^\)\]\n]*)[\)\]]", re.IGNORECASE)
_INTEGER = re.compile(r"\b(?:torch\.)?(?:long|int64|int32|int|integer|LongTensor|IntTensor)\b|\bindices\b|\bindex\b|\bkeys\b",
                      re.IGNORECASE)
_BATCH = re.compile(r"^(?:b|bs|batch|batch_?size|b_size|n_?batch|num_batch)$", re.IGNORECASE)
_LENGTH = re.compile(r"(?:^|_)(?:t|l|n|len|length|seq|seq_?len|time|steps?|tokens?|nodes?|points?|edges?|samples?|sequence)(?:_|$)",
                     re.IGNORECASE)
_SPATIAL = re.compile(r"^(?:h|w|height|width|depth|hh|ww)$", re.IGNORECASE)  # `D` alone is a width: (B, N, D)


def _entry(doc: str, name: str) -> str | None:
    """The text documenting parameter `name`: its line (`name: ...`, `name (type): ...`, `name : type`)
    and the more indented lines below it."""
    lines = doc.splitlines()
    head = re.compile(rf"^(\s*)\*{{0,2}}{re.escape(name)}\s*(?::|\(|\s-\s)")
    for i, line in enumerate(lines):
        m = head.match(line)
        if m is None:
            continue
        indent = len(m.group(1))
        out = [line]
        for nxt in lines[i + 1:]:
            if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                break
            out.append(nxt)
        return "\n".join(out)
    return None


def stated_size(dim: str, values: dict[str, Any], D: int, spatial: int) -> int | None:
    """The size one named axis of a stated shape stands for (`batch_size` 2, `seq_len` 8, `in_channels`
    its constructor value, any other name D); None for `...` or `*`."""
    dim = dim.strip().strip("'\"`").replace(" ", "")
    if not dim or dim in ("...", "*"):
        return None
    if dim.isdigit():
        return int(dim) if 0 < int(dim) <= 64 else D
    if not re.fullmatch(r"[A-Za-z_]\w*", dim):
        return D  # an expression (`2*dim`): any width
    value = values.get(dim)
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 256:
        return value
    if _BATCH.match(dim):
        return 2
    if _SPATIAL.match(dim):
        return spatial
    if _LENGTH.search(dim):
        return 8
    return D


def docstring_input(forward: ast.FunctionDef | None, name: str, values: dict[str, Any], D: int,
                    spatial: int) -> tuple[str, dict[str, Any]] | None:
    """(code, spec) of the tensor forward's docstring describes for input `name`, or None where it
    states no shape for it."""
    doc = ast.get_docstring(forward) if forward is not None else None
    text = _entry(doc, name) if doc else None
    m = STATED_SHAPE.search(text) if text else None
    if m is None:
        return None
    dims = [d for d in m.group(1).split(",") if d.strip()]
    shape = [stated_size(d, values, D, spatial) for d in dims]
    if not shape or any(s is None for s in shape) or len(shape) > 6:
        return None
    described = text[:m.start()] + text[m.end():m.end() + 40]  # the entry's words beside the shape
    spec: dict[str, Any] = {"kind": "tensor", "shape": shape, "dtype": "float32"}
    if _INTEGER.search(described) and not re.search(r"\bfloat", described, re.IGNORECASE):
        spec = {**spec, "dtype": "int64", "high": 2}
    return tensor_code(shape, spec), spec
