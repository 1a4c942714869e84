"""Constructor constraints read from the code: `assert image_size % patch_size == 0`,
`assert dim % heads == 0`, `assert divisible_by(dim, 4)`, `if dim % heads != 0: raise ValueError`,
so the guessed constructor arguments satisfy them instead of failing in the sandbox.

Each condition is rewritten in terms of the Model's constructor parameters: local aliases
(`h, w = pair(image_size)`, `inner = heads * dim_head`), attributes (`self.heads = heads`) and the
constructors of the file's own classes that the Model builds (`Attention(dim, heads=heads)`, whose
own asserts then speak of the Model's `dim` and `heads`) are followed. A condition that still names
something else (a loop variable, a tensor) is left out: only what can be decided is used.

Nothing here executes harvested code: conditions are evaluated over our own guessed numbers by
`holds`, which knows only numbers, comparisons, and/or/not, + - * / // % and divisibility helpers.
"""

from __future__ import annotations

import ast
import copy
import itertools
import re
from typing import Any, Iterator

from autotriton.harvesting.signatures import _method, _params

# Helper calls that return (a view of) their argument, e.g. `pair(image_size)`, `default(heads, 8)`,
# `cast_tuple(dim)`: the size they carry is their first argument's.
_PASS_THROUGH = re.compile(r"(pair|tuple|default|ntuple)")
# Divisibility helpers: `divisible_by(a, b)` means a % b == 0.
_DIVISIBLE = re.compile(r"divisible|divides")

_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a / b, ast.Mod: lambda a, b: a % b,
        ast.Pow: lambda a, b: a ** b}
_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
            ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}


class Undecided(Exception):
    """The condition names something other than numbers we know."""


def _number(node: ast.expr, values: dict[str, Any]) -> int | float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in values:
        v = values[node.id]
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return v
        if isinstance(v, (list, tuple)) and v and all(isinstance(x, int) and not isinstance(x, bool) for x in v) and len(set(v)) == 1:
            return v[0]  # a square size (8, 8) read as one number, as `h, w = pair(size)` does
        raise Undecided(node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        a, b = _number(node.left, values), _number(node.right, values)
        if b == 0 and isinstance(node.op, (ast.Mod, ast.FloorDiv, ast.Div)):
            raise Undecided("division by zero")
        if isinstance(node.op, ast.Pow) and (abs(b) > 16 or abs(a) > 1024):
            raise Undecided("too large")
        return _OPS[type(node.op)](a, b)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_number(node.operand, values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1 \
            and isinstance(node.args[0], ast.Name) and isinstance(values.get(node.args[0].id), (list, tuple)):
        return len(values[node.args[0].id])  # `self.num_categories = len(categories)`
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and len(node.args) == 1 \
            and not node.keywords:
        items = _sequence(node.args[0], values)  # `max(self.cutoffs)`, `min(list(cutoffs))`
        if not items:
            raise Undecided(ast.unparse(node))
        return (min if node.func.id == "min" else max)(items)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("int", "min", "max", "abs") and node.args and not node.keywords:
        args = [_number(a, values) for a in node.args]
        return {"int": lambda *a: int(a[0]), "min": min, "max": max, "abs": lambda *a: abs(a[0])}[node.func.id](*args)
    raise Undecided(ast.unparse(node))


def _sequence(node: ast.expr, values: dict[str, Any]) -> list[int | float]:
    """The numbers of a list or tuple: a literal of numbers we know, a parameter holding one, or
    `list(...)`, `tuple(...)`, `sorted(...)` of those; raises Undecided otherwise."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_number(e, values) for e in node.elts]
    if isinstance(node, ast.Name) and isinstance(values.get(node.id), (list, tuple)):
        items = values[node.id]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
            return list(items)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple", "sorted") \
            and len(node.args) == 1 and not node.keywords:
        return _sequence(node.args[0], values)
    raise Undecided(ast.unparse(node))


def holds(cond: ast.expr, values: dict[str, Any]) -> bool:
    """Whether `cond` holds for `values`; raises Undecided when it names anything else."""
    if isinstance(cond, ast.BoolOp):
        results = [holds(v, values) for v in cond.values]
        return all(results) if isinstance(cond.op, ast.And) else any(results)
    if isinstance(cond, ast.UnaryOp) and isinstance(cond.op, ast.Not):
        return not holds(cond.operand, values)
    if isinstance(cond, ast.Compare) and all(type(op) in _COMPARE for op in cond.ops):
        left = _number(cond.left, values)
        for op, right_node in zip(cond.ops, cond.comparators):
            right = _number(right_node, values)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(cond, ast.Call) and _call_name(cond) and _DIVISIBLE.search(_call_name(cond)) and len(cond.args) == 2:
        a, b = _number(cond.args[0], values), _number(cond.args[1], values)
        if b == 0:
            raise Undecided("division by zero")
        return a % b == 0
    truth = _flag(cond, values)
    if truth is not None:
        return truth
    # `assert not dim % heads`: a bare number is true when non-zero
    return _number(cond, values) != 0


_BIT_OPS = {ast.BitXor: lambda a, b: a ^ b, ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b}


def _flag(node: ast.expr, values: dict[str, Any]) -> bool | None:
    """A condition over boolean parameters: `self_attention ^ encoder_decoder_attention`,
    `use_a | use_b`, a flag alone; None when `node` is no such expression."""
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and isinstance(values.get(node.id), bool):
        return values[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BIT_OPS:
        a, b = _flag(node.left, values), _flag(node.right, values)
        return None if a is None or b is None else _BIT_OPS[type(node.op)](a, b)
    return None


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


# ---------------------------------------------------------------------------------------------
# Reading conditions in terms of the constructor's parameters.


class _Substitute(ast.NodeTransformer):
    """Replaces local names and `self.<attr>` by what they were assigned, in parameter terms."""

    def __init__(self, env: dict[str, ast.expr]):
        self.env = env

    # Replacements are shared, not copied: _substitute copies its input, and a transformer does
    # not descend into what it just put in place.
    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.env.get(node.id, node)

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            return self.env.get(f"self.{node.attr}", _OPAQUE)
        return self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        # `image_size[0]` of a square size is the size itself (see _number)
        if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
            return self.visit(node.value)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        name = _call_name(node)
        if isinstance(node.func, ast.Name) and _PASS_THROUGH.search(name) and node.args:
            return self.visit(node.args[0])
        return self.generic_visit(node)


# What an expression too large (a layer, a list of blocks) or unknown (`self.x` never assigned)
# stands for: a name no constructor has, so a condition reading it is never decided.
_OPAQUE = ast.Name("__opaque")
_MAX_NODES = 40


def _larger_than(node: ast.expr, limit: int) -> bool:
    """Whether walking `node` meets more than `limit` nodes; stops there, as a tree whose parts are
    shared (substitution shares them) can be exponentially larger walked than stored."""
    for count, _ in enumerate(ast.walk(node), 1):
        if count > limit:
            return True
    return False


def _substitute(node: ast.expr, env: dict[str, ast.expr]) -> ast.expr:
    if _larger_than(node, 4 * _MAX_NODES):
        return _OPAQUE
    return _Substitute(env).visit(copy.deepcopy(node))


def _small(node: ast.expr) -> ast.expr:
    """`node`, or _OPAQUE when it is too large to be a size: keeps substitution linear."""
    return _OPAQUE if _larger_than(node, _MAX_NODES) else node


def _in_order(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements in source order, descending into if/with/for/try bodies (not nested defs)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                yield from _in_order(inner)
        for handler in getattr(stmt, "handlers", []) or []:
            yield from _in_order(handler.body)


def _assign(env: dict[str, ast.expr], target: ast.expr, value: ast.expr) -> None:
    if isinstance(target, ast.Name):
        env[target.id] = _small(_substitute(value, env))
    elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        env[f"self.{target.attr}"] = _small(_substitute(value, env))
    elif isinstance(target, (ast.Tuple, ast.List)):
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
            for t, v in zip(target.elts, value.elts):
                _assign(env, t, v)
        else:
            # `h, w = pair(image_size)`, `h, w = image_size`: each part carries the (square) size
            source = _small(_substitute(value, env))
            for t in target.elts:
                if isinstance(t, ast.Name):
                    env[t.id] = source
                elif isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    env[f"self.{t.attr}"] = source


def _conditions(fn: ast.FunctionDef, env: dict[str, ast.expr]) -> Iterator[tuple[ast.stmt, ast.expr]]:
    """(statement, condition that must hold) for each assert and `if <cond>: raise`, while
    recording assignments in `env` as they come."""
    for stmt in _in_order(fn.body):
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                _assign(env, target, stmt.value)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            _assign(env, stmt.target, stmt.value)
        elif isinstance(stmt, ast.Assert):
            yield stmt, stmt.test
        elif isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[0], ast.Raise):
            yield stmt, ast.UnaryOp(ast.Not(), stmt.test)


def _split_and(cond: ast.expr) -> list[ast.expr]:
    if isinstance(cond, ast.BoolOp) and isinstance(cond.op, ast.And):
        return [part for v in cond.values for part in _split_and(v)]
    return [cond]


def _names(node: ast.expr) -> set[str]:
    """Names a condition reads, not counting the functions it calls (`divisible_by`, `min`)."""
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and id(n) not in called}


def constructor_constraints(classes: dict[str, ast.ClassDef], class_name: str, params: list[str],
                            init: ast.FunctionDef | None, forward: ast.FunctionDef | None = None,
                            depth: int = 0) -> list[ast.expr]:
    """Conditions over `params` (the constructor's parameter names) that __init__ (and the
    constructors of local classes it builds, and forward's asserts on attributes) require."""
    if init is None or depth > 3:
        return []
    env: dict[str, ast.expr] = {}
    found: list[ast.expr] = []
    for _, cond in _conditions(init, env):
        found.extend(_split_and(_substitute(cond, env)))
    # The sub-layers it builds: their constructors' conditions, with their parameters bound to
    # what this constructor passes (`Attention(dim, heads=heads)` binds Attention's dim to ours).
    env_now: dict[str, ast.expr] = {}
    for stmt in _in_order(init.body):
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                _assign(env_now, target, stmt.value)
        for call in (n for n in ast.walk(stmt) if isinstance(n, ast.Call)):
            callee = _call_name(call) if isinstance(call.func, ast.Name) else ""
            if callee not in classes or callee == class_name or not isinstance(stmt, (ast.Assign, ast.Expr, ast.AnnAssign, ast.Return)):
                continue
            found.extend(_callee_constraints(classes, callee, call, env_now, depth))
    if forward is not None:
        # forward's asserts on constructor values (`assert self.dim % self.heads == 0`); those on
        # the input's shape stay undecided here and are left to the sandbox.
        fenv = {k: v for k, v in env.items() if k.startswith("self.")}
        for _, cond in _conditions(forward, fenv):
            found.extend(_split_and(_substitute(cond, fenv)))
    allowed = set(params)
    # a condition grown past any size a solver could use (substitution shares subtrees, so through
    # nested constructors a tree can be exponentially larger walked than stored: a harvest spent
    # over 30 minutes walking one of torch-uncertainty's) is left out unread
    found = [c for c in found if not _larger_than(c, 4 * _MAX_NODES)]
    return [c for c in found if _names(c) and _names(c) <= allowed]


def _callee_constraints(classes: dict[str, ast.ClassDef], callee: str, call: ast.Call, env: dict[str, ast.expr], depth: int) -> list[ast.expr]:
    init = _method(classes, callee, "__init__")
    if init is None:
        return []
    params = _params(init)
    bound: dict[str, ast.expr] = {}
    positional = [p for p in params if p.kind == "pos"]
    for p, arg in zip(positional, call.args):
        if isinstance(arg, ast.Starred):
            break
        bound[p.name] = _substitute(arg, env)
    for kw in call.keywords:
        if kw.arg is not None:
            bound[kw.arg] = _substitute(kw.value, env)
    for p in params:
        if p.name not in bound and p.default is not None:
            try:
                bound[p.name] = ast.parse(p.default, mode="eval").body
            except SyntaxError:
                continue
        # Neither passed nor defaulted (it came through `**kwargs`, or the call is wrong): its
        # value is unknown here. Left unbound it would keep its own name and could be read as
        # one of ours that merely shares it.
        bound.setdefault(p.name, _OPAQUE)
    inner = constructor_constraints(classes, callee, [p.name for p in params], init, _method(classes, callee, "forward"), depth + 1)
    return [_substitute(c, bound) for c in inner]  # oversized ones are dropped by the caller's filter


def declared_forms(init: ast.FunctionDef | None) -> dict[str, tuple[str, Any]]:
    """What __init__'s asserts say a parameter must be, beyond a number:
    `assert isinstance(depth, tuple)` / `assert len(dims) == 3` -> ("tuple", length or None);
    `assert attn_type in {'short', 'long'}` -> ("choice", 'short')."""
    forms: dict[str, tuple[str, Any]] = {}
    if init is None:
        return forms
    for stmt in _in_order(init.body):
        if not isinstance(stmt, ast.Assert):
            continue
        for cond in _split_and(stmt.test):
            if isinstance(cond, ast.Call) and _call_name(cond) == "isinstance" and len(cond.args) == 2 and isinstance(cond.args[0], ast.Name):
                kinds = cond.args[1].elts if isinstance(cond.args[1], ast.Tuple) else [cond.args[1]]
                if any(isinstance(k, ast.Name) and k.id in ("tuple", "list") for k in kinds):
                    forms.setdefault(cond.args[0].id, ("tuple", None))
            elif isinstance(cond, ast.Compare) and len(cond.ops) == 1:
                left, op, right = cond.left, cond.ops[0], cond.comparators[0]
                if (isinstance(op, ast.Eq) and isinstance(left, ast.Call) and _call_name(left) == "len" and len(left.args) == 1
                        and isinstance(left.args[0], ast.Name) and isinstance(right, ast.Constant) and type(right.value) is int and 0 < right.value <= 8):
                    forms[left.args[0].id] = ("tuple", right.value)
                elif (isinstance(op, ast.In) and isinstance(left, ast.Name) and isinstance(right, (ast.Set, ast.List, ast.Tuple))
                        and right.elts and all(isinstance(e, ast.Constant) for e in right.elts)):
                    forms.setdefault(left.id, ("choice", right.elts[0].value))
    # A parameter compared with strings anywhere in __init__ is a string option, one of those:
    # `assert rnn_type.upper() in ["RNN", "LSTM"]`, `if norm_type == "gLN": ... elif ...`,
    # `mode.lower() not in ("sum", "mean")`: the first string it is compared with (a case-folded
    # comparison is met by the literal as written).
    params = {a.arg for a in init.args.args + init.args.kwonlyargs}
    for node in ast.walk(init):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        name = _string_subject(node.left)
        other = node.comparators[0]
        if name is None:
            name, other = _string_subject(node.comparators[0]), node.left
        if name is None or name not in params or not isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.In, ast.NotIn)):
            continue
        values = other.elts if isinstance(other, (ast.Set, ast.List, ast.Tuple)) else [other]
        strings = [v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
        if strings and len(strings) == len(values):
            forms.setdefault(name, ("choice", strings[0]))
    return forms


# str methods whose result is still the option's text (case-folded or trimmed)
_CASE_METHODS = {"upper", "lower", "casefold", "strip", "title", "capitalize"}


def _string_subject(node: ast.expr) -> str | None:
    """The parameter name a comparison with strings reads: `p` or `p.upper()` (and the like)."""
    if isinstance(node, ast.Name):
        return node.id
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CASE_METHODS
            and not node.args and isinstance(node.func.value, ast.Name)):
        return node.func.value.id
    return None


# ---------------------------------------------------------------------------------------------
# Choosing values that satisfy them.

_CANDIDATES = (32, 16, 64, 8, 4, 2, 1, 3, 5, 128)


def _nearest_first(value: int, extra: set[int] = frozenset()) -> list[int]:
    """Candidates other than `value`, nearest (by ratio) first: 6 heads become 8 or 4, not 128."""
    base = max(value, 1)
    return sorted((c for c in {*_CANDIDATES, *extra} if c != value), key=lambda c: (max(c, base) / min(c, base), -c))


# A float parameter's alternatives (a cutoff in [0, 0.5], a probability, a ratio under or over 1).
_FRACTIONS = [0.5, 0.25, 0.1, 0.75, 2.0, 0.0]

# The sandbox shrinks sizes above this in get_inputs() (validation's shrink_max_dim), so an input
# size, or a constructor size an input must match (image_size), is chosen at most this large.
INPUT_SIZE_LIMIT = 32


def satisfy(constraints: list[ast.expr], values: dict[str, Any], free: list[str],
            capped: frozenset[str] | set[str] = frozenset()) -> dict[str, Any]:
    """`values` with as few of the `free` integer parameters changed (earlier ones first) as
    makes the most decidable constraints hold. Unchanged when they already hold. The `capped`
    parameters take values up to INPUT_SIZE_LIMIT only."""
    decidable = []
    for c in constraints:
        try:
            holds(c, values)
        except (Undecided, TypeError, ValueError, ZeroDivisionError, OverflowError):
            continue
        decidable.append(c)

    def score(vals: dict[str, Any]) -> int:
        n = 0
        for c in decidable:
            try:
                n += holds(c, vals)
            except (Undecided, TypeError, ValueError, ZeroDivisionError, OverflowError):
                pass
        return n

    best, best_score = values, score(values)
    if best_score == len(decidable):
        return values
    involved = set().union(*(_names(c) for c in decidable)) if decidable else set()
    # numbers, and flags (`assert self_attention ^ encoder_decoder_attention`: one must be switched on)
    variables = [p for p in free if p in involved and isinstance(values.get(p), (int, float))][:8]
    # multiples of the numbers in play: a window of 7 needs a size of 7 or 14, not a power of two
    numbers = {v for n in involved for v in [values.get(n)] if isinstance(v, int) and not isinstance(v, bool)}
    numbers |= {n.value for c in decidable for n in ast.walk(c) if isinstance(n, ast.Constant) and type(n.value) is int}
    extra = {m for v in numbers if 1 < v <= 64 for m in (v, 2 * v, 4 * v) if m <= 256}
    budget = 3_000  # trials: a few constraints over a few parameters need far fewer
    for k in range(1, min(3, len(variables)) + 1):
        for chosen in itertools.combinations(variables, k):
            options = [[not values[p]] if isinstance(values[p], bool) else _FRACTIONS if isinstance(values[p], float) else
                       [v for v in _nearest_first(values[p], extra) if p not in capped or v <= INPUT_SIZE_LIMIT] for p in chosen]
            combos = itertools.product(*options)
            if sum(isinstance(values[p], float) for p in chosen) > 1:
                # distinct fractions first: two cutoffs of a band pass both 0.5 pass no band at all
                combos = sorted(combos, key=lambda c: len(c) - len(set(c)))
            for combo in combos:
                budget -= 1
                if budget < 0:
                    return best
                trial = {**values, **dict(zip(chosen, combo))}
                s = score(trial)
                if s > best_score:
                    best, best_score = trial, s
                    if s == len(decidable):
                        return best
    return best


# ---------------------------------------------------------------------------------------------
# Conditions on the inputs' shapes: `assert hiddens.shape[0] == self.num_layers`,
# `b, c, h, w = img.shape; assert h % self.patch_size == 0`.


def _shape_symbol(param: str, k: int) -> str:
    return f"__shape_{param}_{k}" if k >= 0 else f"__shape_{param}_m{-k}"


class _ShapeSymbols(ast.NodeTransformer):
    """`x.shape[k]` and `x.size(k)` of a forward input become one symbol per dimension."""

    def __init__(self, inputs: set[str]):
        self.inputs = inputs

    def _dim(self, node: ast.expr, index: ast.expr) -> ast.expr | None:
        if isinstance(node, ast.Name) and node.id in self.inputs:
            k = index.value if isinstance(index, ast.Constant) else -index.operand.value if (
                isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub) and isinstance(index.operand, ast.Constant)) else None
            if isinstance(k, int) and not isinstance(k, bool):
                return ast.Name(_shape_symbol(node.id, k))
        return None

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            found = self._dim(node.value.value, node.slice)
            if found is not None:
                return found
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "size" and len(node.args) == 1 and not node.keywords:
            found = self._dim(node.func.value, node.args[0])
            if found is not None:
                return found
        return self.generic_visit(node)


def _per_dimension(cond: ast.expr) -> ast.expr:
    """`x.shape[1:] == (c, h, w)` / `x.shape[-2:] == (h, w)` as one equality per dimension."""
    cond = copy.deepcopy(cond)
    if not (isinstance(cond, ast.Compare) and len(cond.ops) == 1 and isinstance(cond.ops[0], ast.Eq)):
        return cond
    left, right = cond.left, cond.comparators[0]
    if not (isinstance(left, ast.Subscript) and isinstance(left.slice, ast.Slice) and isinstance(right, ast.Tuple)
            and left.slice.upper is None and left.slice.step is None and isinstance(left.value, ast.Attribute)
            and left.value.attr == "shape"):
        return cond
    lower = left.slice.lower
    start = 0 if lower is None else lower.value if isinstance(lower, ast.Constant) else -lower.operand.value if (
        isinstance(lower, ast.UnaryOp) and isinstance(lower.operand, ast.Constant)) else None
    if not isinstance(start, int) or (start < 0 and -start != len(right.elts)):
        return cond
    parts = [ast.Compare(ast.Subscript(left.value, ast.Constant(start + i)), [ast.Eq()], [e]) for i, e in enumerate(right.elts)]
    return ast.BoolOp(ast.And(), parts) if len(parts) > 1 else parts[0]


def input_constraints(classes: dict[str, ast.ClassDef], init: ast.FunctionDef | None, forward: ast.FunctionDef | None,
                      params: list[str], inputs: list[str]) -> list[ast.expr]:
    """Conditions of forward's asserts over the constructor `params` and the inputs' dimensions
    (symbols named by _shape_symbol), e.g. `__shape_img_2 % patch_size == 0`."""
    if forward is None:
        return []
    env: dict[str, ast.expr] = {}
    if init is not None:
        for _ in _conditions(init, env):
            pass
    env = {k: v for k, v in env.items() if k.startswith("self.")}
    symbols = _ShapeSymbols(set(inputs))
    for stmt in _in_order(forward.body):  # `b, c, h, w = img.shape` names each dimension
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple):
            value = stmt.value
            elts = stmt.targets[0].elts
            if isinstance(value, ast.Tuple) and value.elts and isinstance(value.elts[0], ast.Starred):
                # `b, n, _, h = *x.shape, self.heads`: the leading targets are x's dimensions
                rest = len(value.elts) - 1
                elts, value = elts[: len(elts) - rest], value.elts[0].value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "size" and not value.args:
                value = value.func.value
            elif isinstance(value, ast.Attribute) and value.attr == "shape":
                value = value.value
            else:
                continue
            if isinstance(value, ast.Name) and value.id in inputs and not any(isinstance(e, ast.Starred) for e in elts):
                for k, e in enumerate(elts):
                    if isinstance(e, ast.Name):
                        env.setdefault(e.id, ast.Name(_shape_symbol(value.id, k)))
    found: list[ast.expr] = []
    for stmt in _in_order(forward.body):
        cond = stmt.test if isinstance(stmt, ast.Assert) else ast.UnaryOp(ast.Not(), stmt.test) if (
            isinstance(stmt, ast.If) and stmt.body and isinstance(stmt.body[0], ast.Raise)) else None
        if cond is not None:
            for part in _split_and(cond):
                found.extend(_split_and(_substitute(symbols.visit(_per_dimension(part)), env)))
    allowed = set(params)
    return [c for c in found if any(n.startswith("__shape_") for n in _names(c))
            and all(n in allowed or n.startswith("__shape_") for n in _names(c))]


def fit_shape(constraints: list[ast.expr], values: dict[str, Any], param: str, shape: list[int]) -> list[int]:
    """`shape` (of input `param`) with dimensions changed so the decidable `constraints` hold."""
    def with_shape(dims: list[int]) -> dict[str, Any]:
        out = dict(values)
        for k, d in enumerate(dims):
            out[_shape_symbol(param, k)] = d
            out[_shape_symbol(param, k - len(dims))] = d
        return out

    prefix = f"__shape_{param}_"
    mine = [c for c in constraints if all(not n.startswith("__shape_") or n.startswith(prefix) for n in _names(c))]
    if not mine:
        return shape
    names = {_shape_symbol(param, k): k for k in range(len(shape))} | {_shape_symbol(param, k - len(shape)): k for k in range(len(shape))}
    free = sorted({names[n] for c in mine for n in _names(c) if n in names})
    values_now = with_shape(shape)
    dims = {f"__dim{k}": shape[k] for k in free}
    # each named dimension of the input becomes a free variable for `satisfy`
    renamed = [_substitute(c, {s: ast.Name(f"__dim{k}") for s, k in names.items()}) for c in mine]
    solved = satisfy(renamed, {**values_now, **dims}, list(dims), capped=set(dims))
    return [solved.get(f"__dim{k}", d) for k, d in enumerate(shape)]
