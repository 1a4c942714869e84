"""Constructor and forward parameters that default to None but must be given: the code asserts
them (`assert exists(t)`), raises without them (`if w is None: raise`), or reads into them untested
(`drop_paths[i]`, `args.window_size`). Only the AST is read. Used by synthesis.py."""

from __future__ import annotations

import ast

from autotriton.harvesting.usage_kinds import Usage


def _none_compared(node: ast.expr, op: type) -> str | None:
    """The name of `name is None` (op ast.Is) or `name is not None` (ast.IsNot), else None."""
    if isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and len(node.ops) == 1 \
            and isinstance(node.ops[0], op) and isinstance(node.comparators[0], ast.Constant) \
            and node.comparators[0].value is None:
        return node.left.id
    return None


def _none_checks(functions: dict[str, ast.FunctionDef]) -> set[str]:
    """The file's `exists`-style helpers: one parameter, body `return v is not None`."""
    out = set()
    for name, fn in functions.items():
        body = [n for n in fn.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
        if len(fn.args.args) == 1 and len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None \
                and _none_compared(body[0].value, ast.IsNot) == fn.args.args[0].arg:
            out.add(name)
    return out


def asserted_given(forward: ast.FunctionDef, functions: dict[str, ast.FunctionDef]) -> set[str]:
    """Names forward's top-level statements demand be given: `assert exists(t)`, `assert t is not
    None`, `if t is None: raise ...`, `if not exists(t): raise ...` (AdaLN's `time_cond = None`
    that it then asserts: called without it, forward fails whatever the input)."""
    checks = _none_checks(functions)

    def given(cond: ast.expr) -> str | None:  # the name `cond` says is not None
        if isinstance(cond, ast.Call) and isinstance(cond.func, ast.Name) and cond.func.id in checks \
                and len(cond.args) == 1 and isinstance(cond.args[0], ast.Name):
            return cond.args[0].id
        return _none_compared(cond, ast.IsNot)

    def missing(cond: ast.expr) -> str | None:  # the name `cond` says is None
        if isinstance(cond, ast.UnaryOp) and isinstance(cond.op, ast.Not):
            return given(cond.operand)
        return _none_compared(cond, ast.Is)

    out: set[str] = set()
    for stmt in forward.body:
        if isinstance(stmt, ast.Assert):
            parts = stmt.test.values if isinstance(stmt.test, ast.BoolOp) and isinstance(stmt.test.op, ast.And) else [stmt.test]
            out |= {n for n in map(given, parts) if n}
        elif isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Raise):
            name = missing(stmt.test)
            if name:
                out.add(name)
    return out


def dereferenced(init: ast.FunctionDef | None, usages: dict[str, Usage]) -> set[str]:
    """Parameters defaulting to None that __init__ reads into without ever testing them: an item
    (`drop_path=drop_paths[i]`) or an attribute (`args.window_size`, here or where it is handed,
    usage_kinds) of None fails whatever else is given, so the default was never meant to be used
    (spandrel's RGT and GRL blocks)."""
    if init is None:
        return set()
    optional = {a.arg for a, d in zip(init.args.args[len(init.args.args) - len(init.args.defaults):], init.args.defaults)
                if isinstance(d, ast.Constant) and d.value is None}
    read: set[str] = set()
    tested: set[str] = set()
    for node in ast.walk(init):
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.value, ast.Name) \
                and node.value.id in optional and isinstance(node.ctx, ast.Load):
            read.add(node.value.id)
        condition = node.test if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)) else \
            ast.Tuple(node.values, ast.Load()) if isinstance(node, ast.BoolOp) else None
        if condition is not None:  # `if args is not None`, `args or default`, `x if drop_paths else 0.`
            tested |= {n.id for n in ast.walk(condition) if isinstance(n, ast.Name)}
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        tested |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}  # rebound before use
    read |= {name for name in optional if usages.get(name) is not None and usages[name].attributes}
    return read - tested


def one_of_given(init: ast.FunctionDef | None) -> set[str]:
    """Parameters __init__ refuses to go without: `if input_shape is None and input_size is None:
    raise ...` (SpeechBrain's layers take either) asks for one of them, the one that is not a shape
    (a width is guessed surely, a shape must match the input); `if w is None: raise`, for `w`."""
    out: set[str] = set()
    for stmt in init.body if init is not None else []:
        if not (isinstance(stmt, ast.If) and not stmt.orelse and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Raise)):
            continue
        parts = stmt.test.values if isinstance(stmt.test, ast.BoolOp) and isinstance(stmt.test.op, ast.And) else [stmt.test]
        names = [_none_compared(part, ast.Is) for part in parts]
        if names and all(names):
            out.add(next((n for n in names if "shape" not in n.lower()), names[-1]))
    return out
