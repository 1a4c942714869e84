"""Rewriting a problem's sizes: shrinking for the CPU interpreter, perturbing to odd sizes.

The shrink rule (`shrink_problem`), applied to the problem's source, never to the candidate:
1. Every module-level assignment `NAME = <integer expression>` (literals combined with
   + - * // ** <<, or other such names) whose value exceeds `max_dim` is replaced by a smaller
   literal: halve it while it is even and above `max_dim` (so powers of two stay powers of
   two and divisibility by small factors survives); if it is still above `max_dim` (an odd
   size), use `max_dim + 1` (odd stays odd).
2. Inside `get_inputs()` / `get_init_inputs()`, integer literals above `max_dim` given as sizes
   to tensor factories (`torch.rand(4096, 4096)`, `torch.randn((B, 4096))`, ...) follow the same rule.
3. Module-level tuples/lists of integer literals (`input_shape = (32768,)`) and tuple assignments
   (`M, N = 4096, 4096`) follow rule 1 element-wise.
4. Batch-like constants (the name contains "batch") are capped at `max_batch` (default 4): the
   batch dimension multiplies every cost and adds nothing to what a kernel must get right.
5. Small constants (kernel sizes, strides, groups, ...) are never touched, and names defined
   from other names (`groups = in_channels`) follow their source.
The result is only useful if it still runs: `autotriton.validation.shrink_and_check` (and the
judge itself, before every CPU judgement) runs the shrunk problem in the sandbox and falls back to
the original when it does not.

The perturbation rule (`perturb_sizes`), for the odd-size trial: every size written in a way the
shrink rule reads (module-level integer constants, tuple assignments, tuple/list literals, integer
literals given to tensor factories in `get_inputs()`) of at least `min_size` that is even becomes
odd (+1), so no block size divides them and masked edges are exercised. Variants are tried from "all perturbed" to "one perturbed at a time"; the
judge keeps the first whose reference runs.

Standard library only.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

FACTORIES = {"rand", "randn", "randint", "zeros", "ones", "empty", "full", "rand_like", "randn_like", "randperm",
             "arange", "tensor", "normal", "eye", "linspace"}


def _int_value(node: ast.AST, env: dict[str, int]) -> int | None:
    """Value of an integer constant expression, or None."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _int_value(node.operand, env)
        return -v if v is not None else None
    if isinstance(node, ast.BinOp):
        a, b = _int_value(node.left, env), _int_value(node.right, env)
        if a is None or b is None:
            return None
        try:
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, ast.FloorDiv) and b:
                return a // b
            if isinstance(node.op, ast.Pow) and 0 <= b <= 64:
                return a ** b
            if isinstance(node.op, ast.LShift) and 0 <= b <= 64:
                return a << b
        except (OverflowError, ValueError):
            return None
    return None


def shrink_value(value: int, max_dim: int) -> int:
    if value <= max_dim:
        return value
    while value > max_dim and value % 2 == 0:
        value //= 2
    return value if value <= max_dim else max_dim + 1


def _size_constants(tree: ast.Module) -> Iterator[tuple[ast.Assign, str, int, bool]]:
    """(statement, name, value, is_derived) for module-level integer assignments, in order."""
    env: dict[str, int] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = _int_value(stmt.value, env)
            if value is not None and not isinstance(value, bool):
                derived = any(isinstance(n, ast.Name) for n in ast.walk(stmt.value))
                env[stmt.targets[0].id] = value
                yield stmt, stmt.targets[0].id, value, derived


def _replace_source(source: str, edits: list[tuple[ast.AST, str]]) -> str:
    """Replace node spans in the source text, keeping everything else byte for byte."""
    lines = source.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode("utf-8")))
    data = source.encode("utf-8")
    spans = []
    for node, text in edits:
        start = offsets[node.lineno - 1] + node.col_offset  # type: ignore[attr-defined]
        end = offsets[node.end_lineno - 1] + node.end_col_offset  # type: ignore[attr-defined]
        spans.append((start, end, text.encode("utf-8")))
    for start, end, text in sorted(spans, reverse=True):
        data = data[:start] + text + data[end:]
    return data.decode("utf-8")


def _literal_sizes(tree: ast.Module, min_value: int) -> list[ast.Constant]:
    """Integer literals that state sizes outside `NAME = <int expression>`: elements of tuple
    assignments (`M, N = 64, 128`) and of module-level tuple/list literals (`shape = (64, 128)`),
    and literal sizes given to tensor factories in get_inputs()/get_init_inputs()."""
    out: list[ast.Constant] = []

    def ints(node: ast.AST) -> list[ast.Constant]:
        elts = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
        return [e for e in elts if isinstance(e, ast.Constant) and type(e.value) is int and e.value >= min_value]

    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, (ast.Tuple, ast.List)):
            out.extend(ints(stmt.value))
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in ("get_inputs", "get_init_inputs"):
            for call in ast.walk(fn):
                if isinstance(call, ast.Call):
                    name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
                    if name in FACTORIES:
                        for arg in call.args:
                            out.extend(ints(arg))
    return out


def shrink_problem(problem_source: str, max_dim: int = 32, max_batch: int = 4) -> str:
    """The problem with its large sizes scaled down by the documented rule (module docstring).

    Returns the source unchanged when nothing is above `max_dim` or it does not parse.
    """
    try:
        tree = ast.parse(problem_source)
    except SyntaxError:
        return problem_source
    edits: list[tuple[ast.AST, str]] = []
    for stmt, name, value, derived in _size_constants(tree):
        limit = min(max_dim, max_batch) if "batch" in name.lower() else max_dim
        if not derived and value > limit:
            edits.append((stmt.value, str(shrink_value(value, limit))))
    for elt in _literal_sizes(tree, min(max_dim, max_batch) + 1):
        batch = False
        for stmt in tree.body:  # `batch_size, dim = 64, 512`: the batch element follows the batch cap
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Tuple) and isinstance(stmt.value, ast.Tuple) \
                    and elt in stmt.value.elts and len(stmt.targets[0].elts) == len(stmt.value.elts):
                target = stmt.targets[0].elts[stmt.value.elts.index(elt)]
                batch = isinstance(target, ast.Name) and "batch" in target.id.lower()
        limit = min(max_dim, max_batch) if batch else max_dim
        if elt.value > limit:
            edits.append((elt, str(shrink_value(elt.value, limit))))
    return _replace_source(problem_source, edits) if edits else problem_source


def perturb_sizes(problem_source: str, min_size: int = 16) -> list[str]:
    """Variants of the problem whose even size constants (>= min_size) become odd, most perturbed first.

    Empty when the problem has no such constants (then there is no odd-size trial).
    """
    try:
        tree = ast.parse(problem_source)
    except SyntaxError:
        return []
    targets: list[tuple[ast.AST, int]] = [(stmt.value, value) for stmt, _name, value, derived in _size_constants(tree)
                                          if not derived and value >= min_size and value % 2 == 0]
    targets += [(elt, elt.value) for elt in _literal_sizes(tree, min_size) if elt.value % 2 == 0]
    if not targets:
        return []
    variants = [_replace_source(problem_source, [(node, str(v + 1)) for node, v in targets])]
    if len(targets) > 1:
        for node, value in reversed(targets):
            variants.append(_replace_source(problem_source, [(node, str(value + 1))]))
    return variants[:5]
