"""A forward input's shape read from the statement that failed, as the traceback shows it:

    start = torch.gather(h, 1, span_idx[:, :, 0])          # span_idx has 3 axes
    res_idx, token_idx, asym_id = feats.unbind(dim=-1)     # feats' last axis holds 3
    batch_size, seq_len = asym_id.shape                    # asym_id has 2 axes
    q, k, v = qkv                                          # qkv's first axis holds 3

A guessed input of other sizes fails with "too many indices for tensor of dimension 2" (gliner's
span markers, held-out set 26), "too many values to unpack (expected 3)" or "not enough values to
unpack (expected 2, got 1)" (alphafold3-pytorch's features, set 28). A package's own message may
name the input and the shape it wants ("labels must be a 1D tensor of shape (batch_size,)"). Only
the AST and the traceback's text are read; nothing harvested is executed.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from autotriton.harvesting.docstring_inputs import STATED_SHAPE, stated_size
from autotriton.harvesting.input_display import tensor_code
from autotriton.harvesting.input_guesses import _INT_INPUT
from autotriton.harvesting.shape_repairs import _resized_code, _to_rank
from autotriton.harvesting.signatures import model_params
from autotriton.harvesting.synthesis import Attempt


def failing_statements(detail: str, end: int) -> list[str]:
    """The lines of code a traceback shows before position `end` (its error message), last the
    statement that raised; the `File "...", line N` lines and blank ones left out."""
    return [line for line in detail[:end].splitlines() if line.strip() and not line.strip().startswith("File ")]


def _forward_inputs(standalone: str) -> list[str]:
    return [p.name for p in model_params(standalone, "forward") or () if p.kind == "pos" and p.name != "self"]


_TOO_MANY_INDICES = re.compile(r"too many indices for tensor of dimension (\d+)")


def _index_parts(text: str) -> int:
    """How many axes a subscript's text indexes (`:, :, 0` -> 3; `None` and `...` add none)."""
    depth, parts, current = 0, [], ""
    for ch in text:
        depth += 1 if ch in "([{" else -1 if ch in ")]}" else 0
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return sum(1 for part in parts if part.strip() and part.strip() not in ("None", "..."))


def indexed_input(standalone: str, attempt: Attempt, detail: str) -> Attempt | None:
    """A forward input of rank N indexed with more axes in the statement that failed ("too many
    indices for tensor of dimension 2" at `span_idx[:, :, 0]`, gliner's span markers), given as many
    axes; None when the message or the statement names no such input."""
    m = _TOO_MANY_INDICES.search(detail or "")
    if m is None:
        return None
    rank = int(m.group(1))
    statements = [line.strip() for line in failing_statements(detail, m.start()) if "[" in line]
    if not statements:
        return None
    names = _forward_inputs(standalone)
    codes, specs, changed = list(attempt.input_code), list(attempt.input_spec), False
    for i, name in enumerate(names[:len(specs)]):
        spec = specs[i]
        if not (isinstance(spec, dict) and spec.get("kind") == "tensor" and len(spec.get("shape", [])) == rank):
            continue
        wanted = max((_index_parts(sub.group(1)) for sub in re.finditer(rf"\b{re.escape(name)}\[([^\[\]]*)\]", statements[-1])),
                     default=0)
        shape = _to_rank(list(spec["shape"]), wanted) if wanted > rank else None
        if shape:
            specs[i] = {**spec, "shape": shape}
            codes[i] = _resized_code(codes[i], shape, specs[i])
            changed = True
    if not changed:
        return None
    return Attempt(attempt.init_code, attempt.init_spec, codes, specs, label=f"{attempt.label} indexed")


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
    lines = [line for line in failing_statements(detail, m.start()) if "=" in line]
    found = _unpacked(lines[-1]) if lines else None
    if found is None:
        return None
    name, kind, axis, count = found
    names = _forward_inputs(standalone)
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




# "of shape B, got (2, 8)": one axis named without brackets, the message going on after it
_ONE_AXIS_SHAPE = re.compile(r"\bshape\s+(?:of\s+)?([A-Za-z_]\w*)(?=\s*(?:,\s*(?:got|but|found|instead|not)\b|[.;:]|$))")


def said_shape_input(standalone: str, attempt: Attempt, detail: str) -> Attempt | None:
    """The attempt with the forward input the error's message names given the shape the message
    states (a batch 2, a length 8, other sizes the input's own last size), as small integers when
    its name says labels or indices; None when the message names no input with a shape."""
    lines = [line for line in (detail or "").strip().splitlines() if line.strip()]
    names = _forward_inputs(standalone)[:len(attempt.input_spec)]
    message = lines[-1] if lines else ""

    def named(word: str) -> str | None:  # "targets" names the input `target`, and the other way round
        return next((n for n in names if word in (n, n + "s") or n == word + "s"), None)

    # a package naming an input and the shape it wants: pytorch-metric-learning's "labels must be a 1D
    # tensor of shape (batch_size,)"; the shape's syntax is a docstring's (docstring_inputs); or one bare
    # axis, pytorch-ood's "Expected targets of shape B, got (2, 8)"
    for m in [*STATED_SHAPE.finditer(message), *_ONE_AXIS_SHAPE.finditer(message)]:
        # the input named last before the shape, within a few words of it
        said = [n for w in re.findall(r"[A-Za-z_]\w*", message[max(0, m.start() - 60):m.start()]) for n in [named(w)] if n]
        if not said:
            continue
        name = said[-1]
        i = names.index(name)
        spec: Any = attempt.input_spec[i]
        if not (isinstance(spec, dict) and spec.get("kind") == "tensor" and spec.get("shape")):
            return None
        width = spec["shape"][-1]
        shape = [stated_size(d, {}, width, 8) for d in m.group(1).split(",") if d.strip()]
        if not shape or None in shape:
            return None
        new: dict[str, Any] = {"kind": "tensor", "shape": shape, "dtype": "float32"}
        if _INT_INPUT.search(name.lower()):  # labels, indices: small integers
            new = {**new, "dtype": "int64", "high": 2}
        if new == spec:
            return None
        codes, specs = list(attempt.input_code), list(attempt.input_spec)
        codes[i], specs[i] = tensor_code(shape, new), new
        return Attempt(attempt.init_code, attempt.init_spec, codes, specs, label=f"{attempt.label} {name} as said")
    return None
