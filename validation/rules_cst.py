"""libcst helpers the static rules share: a fast read-only walk, dotted names, literals, params.

Nothing here knows a rule; `rules_structure`, `rules_safety`, `rules_kernels` and the forward
analysis build on it.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from autotriton.validation.rules_tables import INDUCTOR_RUNTIME_ALLOWLIST


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


# libcst's own visitor rebuilds every node it passes (tens of microseconds each); the checks only
# read, so they walk the dataclass fields directly, skipping whitespace and punctuation.
_SKIP_FIELDS = frozenset({
    "asynchronous", "colon", "comma", "comment", "dot", "empty_lines", "encoding", "equal", "first_colon", "footer",
    "header", "indent", "lbrace", "lbracket", "leading_lines", "leading_whitespace", "lines_after_decorators", "lpar",
    "rpar", "newline", "rbrace", "rbracket", "relative", "second_colon", "semicolon", "separator", "trailing_whitespace",
    "default_indent", "default_newline", "has_trailing_newline", "operator", "star", "posonly_ind", "first_line",
    "last_line", "parsed_python_version", "python_version", "trailing_comma",
})
_FIELDS: dict[type, tuple[str, ...]] = {}
_DISPATCH: dict[tuple[type, type], object] = {}


def _walk(node: cst.CSTNode, visitor: object) -> None:
    """Depth-first walk calling `visitor.visit_<NodeType>(node)`; a False return skips the children."""
    tp = type(node)
    key = (type(visitor), tp)
    meth = _DISPATCH.get(key, _walk)
    if meth is _walk:
        name = "visit_" + tp.__name__
        meth = getattr(type(visitor), name, None)
        if meth is not None and meth is getattr(cst.CSTVisitor, name, None):
            meth = None  # libcst's no-op default
        _DISPATCH[key] = meth
    if meth is not None and meth(visitor, node) is False:  # type: ignore[operator]
        return
    fields = _FIELDS.get(tp)
    if fields is None:
        fields = tuple(f.name for f in dataclasses.fields(tp) if f.name not in _SKIP_FIELDS and not f.name.startswith("whitespace"))
        _FIELDS[tp] = fields
    for name in fields:
        value = getattr(node, name)
        if isinstance(value, cst.CSTNode):
            _walk(value, visitor)
        elif isinstance(value, (list, tuple)):
            for item in value:
                if isinstance(item, cst.CSTNode):
                    _walk(item, visitor)


# --------------------------------------------------------------------------------------------
# Small CST helpers
# --------------------------------------------------------------------------------------------


def _dotted(node: cst.CSTNode) -> str | None:
    """`a.b.c` for a chain of Names/Attributes, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def _import_name(node: cst.CSTNode) -> str:
    return _dotted(node) or ""


def _int_literal(node: cst.CSTNode | None) -> int | None:
    if isinstance(node, cst.Integer):
        try:
            return int(node.evaluated_value)
        except ValueError:
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        v = _int_literal(node.expression)
        return -v if v is not None else None
    return None


def _str_literal(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        v = node.evaluated_value
        return v if isinstance(v, str) else None
    return None


def _params(fn: cst.FunctionDef) -> list[cst.Param]:
    p = fn.params
    out = list(p.posonly_params) + list(p.params)
    if isinstance(p.star_arg, cst.Param):
        out.append(p.star_arg)
    out += list(p.kwonly_params)
    if p.star_kwarg is not None:
        out.append(p.star_kwarg)
    return out


def _positional_params(fn: cst.FunctionDef) -> list[cst.Param]:
    return list(fn.params.posonly_params) + list(fn.params.params)


def _prefix_lookup(name: str, table: dict[str, str]) -> tuple[str, str] | None:
    """Longest dotted prefix of `name` present in `table`: (prefix, value)."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        pre = ".".join(parts[:i])
        if pre in table:
            return pre, table[pre]
    return None


def _allowlisted_internal(name: str) -> bool:
    """True for the Inductor helper names that live under otherwise forbidden prefixes."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in INDUCTOR_RUNTIME_ALLOWLIST:
            return True
    return False


def _is_main_guard(test: cst.CSTNode) -> bool:
    """`__name__ == "__main__"` (either order)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Equal)):
        return False
    sides = [test.left, test.comparisons[0].comparator]
    return any(isinstance(x, cst.Name) and x.value == "__name__" for x in sides) and any(_str_literal(x) == "__main__" for x in sides)


def _eval_int(node: cst.CSTNode | None, env: dict[str, int]) -> int | None:
    """Integer value of a literal / known-constant expression (+ - * // << >>), else None."""
    if node is None:
        return None
    v = _int_literal(node)
    if v is not None:
        return v
    if isinstance(node, cst.Name):
        return env.get(node.value)
    if isinstance(node, cst.BinaryOperation):
        a, b = _eval_int(node.left, env), _eval_int(node.right, env)
        if a is None or b is None:
            return None
        op = node.operator
        try:
            if isinstance(op, cst.Add):
                return a + b
            if isinstance(op, cst.Subtract):
                return a - b
            if isinstance(op, cst.Multiply):
                return a * b
            if isinstance(op, cst.FloorDivide):
                return a // b
            if isinstance(op, cst.LeftShift) and 0 <= b < 64:
                return a << b
            if isinstance(op, cst.RightShift) and 0 <= b < 64:
                return a >> b
        except ZeroDivisionError:
            return None
    return None


def _lambda_as_function(lam: cst.Lambda) -> cst.FunctionDef:
    """A lambda seen as `def <lambda>(params): return body` (the body node is the original)."""
    return cst.FunctionDef(
        name=cst.Name("lambda_"), params=lam.params,
        body=cst.IndentedBlock(body=[cst.SimpleStatementLine(body=[cst.Return(value=lam.body)])]),
    )


def _param_names(fn: cst.FunctionDef) -> list[str]:
    return [p.name.value for p in _params(fn)]


def _self_attr(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self"


def _scalar_param(p: cst.Param) -> bool:
    """A forward() parameter that is a Python scalar, not a tensor (by annotation or default)."""
    if p.annotation is not None:
        d = _dotted(p.annotation.annotation) or ""
        if d in ("int", "float", "bool", "str"):
            return True
    if p.default is not None and isinstance(p.default, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if p.default is not None and isinstance(p.default, cst.Name) and p.default.value in ("True", "False"):
        return True
    return False


class _CallNameFinder(cst.CSTVisitor):
    """Names called anywhere below a node (`Block(...)`, `make_layer(...)`)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name):
            self.names.append(node.func.value)


class _NameFinder(cst.CSTVisitor):
    def __init__(self, names: frozenset[str]):
        self.names = names
        self.found: list[cst.Name] = []

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names:
            self.found.append(node)
