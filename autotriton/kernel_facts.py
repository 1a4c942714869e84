"""What a Triton candidate's source shows without running it: its @triton.jit kernels (loads,
stores, dots, reductions, math, the parameters it reads and writes through), how ModelNew launches
each (grid, arguments bound to parameters) and which sizes ModelNew.forward reads. Read by
describe.py for the plan a training pair states; only `ast` is used, nothing is executed."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

__all__ = ["analyze_candidate", "KernelSummary", "CandidateSummary"]

_BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.MatMult: "matmul",
           ast.Pow: "pow", ast.FloorDiv: "floordiv", ast.Mod: "mod"}
_REDUCTIONS = {"sum", "max", "min", "argmax", "argmin", "reduce", "cumsum", "cumprod", "xor_sum"}
_MATH = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "abs", "maximum", "minimum", "where",
         "sigmoid", "softmax", "erf", "fma", "clamp", "div_rn", "floor", "ceil", "tanh", "umulhi"}


@dataclass
class KernelSummary:
    name: str
    params: list[str]
    constexprs: list[str]
    loads: int = 0
    stores: int = 0
    dots: int = 0
    atomics: int = 0
    reductions: list[str] = field(default_factory=list)
    math: list[str] = field(default_factory=list)
    loops: int = 0
    features: set[str] = field(default_factory=set)
    fixed: dict[str, int] = field(default_factory=dict)  # constexprs set inside the kernel body
    # {"grid": str, "constexprs": {name: value}, "args": [(parameter, value text), ...] in parameter order}
    launches: list[dict[str, Any]] = field(default_factory=list)
    names: set[str] = field(default_factory=set)  # names this kernel uses (other @triton.jit functions among them)
    loaded: set[str] = field(default_factory=set)  # pointer parameters the kernel reads through (tl.load)
    stored: set[str] = field(default_factory=set)  # ... and writes through (tl.store, atomics)


@dataclass
class CandidateSummary:
    kernels: list[KernelSummary] = field(default_factory=list)
    parse_error: str | None = None
    # ModelNew.forward's reads of its arguments' sizes, per argument: {"x": [0, 1]} for x.shape[0],
    # x.size(1); "?" for a size read by a non-constant index, "*" for the whole shape (x.shape, x.size())
    size_reads: dict[str, list[Any]] = field(default_factory=dict)
    # the local each size read is kept in (`x_dim1 = x.shape[1]`): {(argument, index): "x_dim1"}
    size_names: dict[tuple[str, Any], str] = field(default_factory=dict)



def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return ""


# ---- the candidate ----------------------------------------------------------------------------
def _is_triton_jit(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if _dotted(target) in ("triton.jit", "jit", "triton.autotune") or _dotted(target).endswith(".jit"):
            return True
    return False


def analyze_candidate(code: str) -> CandidateSummary:
    """Kernels of a candidate, what each does, and how ModelNew launches them (never executes it)."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return CandidateSummary(parse_error=f"line {exc.lineno}: {exc.msg}")
    kernels: dict[str, KernelSummary] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and _is_triton_jit(node):
            params = [a.arg for a in node.args.args]
            constexprs = [a.arg for a in node.args.args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)]
            k = KernelSummary(name=node.name, params=params, constexprs=constexprs)
            reductions: list[str] = []
            math: list[str] = []
            for sub in node.body:
                # Inductor templates fix their tile sizes inside the kernel: `BLOCK_M: tl.constexpr = 32`
                if (isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name) and sub.value is not None
                        and "constexpr" in ast.unparse(sub.annotation) and isinstance(sub.value, ast.Constant)
                        and isinstance(sub.value.value, int) and not isinstance(sub.value.value, bool)):
                    k.fixed[sub.target.id] = sub.value.value
            k.names = {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name)}  # calls and `tl.reduce(..., combine)`
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call):
                    name = _dotted(sub.func)
                    last = name.rsplit(".", 1)[-1]
                    if last == "load":
                        k.loads += 1
                    elif last == "store":
                        k.stores += 1
                    elif last == "dot":
                        k.dots += 1
                        k.features.add("dot")
                    elif last.startswith("atomic_"):
                        k.atomics += 1
                    elif last in _REDUCTIONS:
                        reductions.append(last)
                        k.features.add(last)
                    elif last in _MATH:
                        math.append(last)
                        k.features.add(last)
                elif isinstance(sub, ast.BinOp) and type(sub.op) in _BINOPS:
                    k.features.add(_BINOPS[type(sub.op)])
                elif isinstance(sub, (ast.For, ast.While)):
                    k.loops += 1
            k.reductions = sorted(set(reductions))
            k.math = sorted(set(math))
            k.loaded, k.stored = _pointer_roles(node, params)
            kernels[node.name] = k
    # Grids are often named first (`grid = (triton.cdiv(n, BLOCK),)`): show the expression.
    assigned = {node.targets[0].id: node.value for node in ast.walk(tree)
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)}
    for node in ast.walk(tree):
        # kernel[grid](args..., BLOCK=...) : a Call whose func is a Subscript of a kernel name
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript):
            name = _dotted(node.func.value)
            if name in kernels:
                grid = node.func.slice
                if isinstance(grid, ast.Name) and grid.id in assigned:
                    grid = assigned[grid.id]
                consts = {}
                for kw in node.keywords:
                    if kw.arg:
                        consts[kw.arg] = ast.unparse(kw.value)
                params = kernels[name].params
                bound = dict(zip(params, (ast.unparse(a) for a in node.args)))
                bound.update((kw.arg, ast.unparse(kw.value)) for kw in node.keywords if kw.arg in params)
                kernels[name].launches.append({"grid": ast.unparse(grid), "constexprs": consts,
                                               "args": [(p, bound[p]) for p in params if p in bound]})
    reads, names = _forward_size_reads(tree)
    return CandidateSummary(kernels=list(kernels.values()), size_reads=reads, size_names=names)


def _pointer_roles(kernel: ast.FunctionDef, params: list[str]) -> tuple[set[str], set[str]]:
    """The parameters a kernel loads through and stores through. A pointer parameter is a term of
    the sum that forms the address given to `tl.load` / `tl.store` / `tl.atomic_*` (`in_ptr0 + x0`),
    directly or through a local name (`ptrs = x_ptr + offs`), and never a compile-time constant, a
    factor or a compared size (`xnumel`, `ks0 * x0`, `XBLOCK`)."""
    constexprs = {a.arg for a in kernel.args.args if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}
    not_pointers = set(constexprs)
    for n in ast.walk(kernel):
        operands: list[ast.AST] = []
        if isinstance(n, ast.BinOp) and not isinstance(n.op, (ast.Add, ast.Sub)):
            operands = [n.left, n.right]
        elif isinstance(n, ast.Compare):
            operands = [n.left, *n.comparators]
        not_pointers |= {o.id for o in operands if isinstance(o, ast.Name)}

    def terms(expr: ast.AST) -> list[ast.AST]:
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
            return terms(expr.left) + terms(expr.right)
        if isinstance(expr, ast.Subscript):  # `(x_ptr + offs)[None, :]` keeps its base
            return terms(expr.value)
        return [expr]

    aliases = {n.targets[0].id: n.value for n in ast.walk(kernel)
               if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)}

    def bases(expr: ast.AST, seen: frozenset[str] = frozenset()) -> set[str]:
        found: set[str] = set()
        for t in terms(expr):
            if isinstance(t, ast.Name):
                if t.id in params and t.id not in not_pointers:
                    found.add(t.id)
                elif t.id in aliases and t.id not in seen:
                    found |= bases(aliases[t.id], seen | {t.id})
        return found

    loaded: set[str] = set()
    stored: set[str] = set()
    for n in ast.walk(kernel):
        if isinstance(n, ast.Call):
            last = _dotted(n.func).rsplit(".", 1)[-1]
            pointer = n.args[0] if n.args else next((kw.value for kw in n.keywords if kw.arg == "pointer"), None)
            if pointer is None:
                continue
            if last == "load":
                loaded |= bases(pointer)
            elif last == "store" or last.startswith("atomic_"):
                stored |= bases(pointer)
    return loaded, stored


def _forward_size_reads(tree: ast.Module) -> tuple[dict[str, list[Any]], dict[tuple[str, Any], str]]:
    """Which sizes of its arguments `ModelNew.forward` reads (`x.shape[1]`, `x.size(1)`), in
    source order per argument ("?" stands for a non-constant index, "*" for the whole shape), and
    the local a read is first assigned to alone (`x_dim1 = x.shape[1]`: {("x", 1): "x_dim1"})."""
    forward = next((fn for cls in tree.body if isinstance(cls, ast.ClassDef) and cls.name == "ModelNew"
                    for fn in cls.body if isinstance(fn, ast.FunctionDef) and fn.name == "forward"), None)
    if forward is None:
        return {}, {}
    args = {a.arg for a in forward.args.args[1:] + forward.args.kwonlyargs}
    subscripts = {id(n.value): n for n in ast.walk(forward) if isinstance(n, ast.Subscript)}
    found: list[tuple[int, int, str, Any]] = []
    read_by: dict[int, tuple[str, Any]] = {}  # id of the expression that reads a size -> (argument, index)

    def index_of(node: ast.AST | None) -> Any:
        if node is None:
            return "*"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return -node.operand.value if isinstance(node.operand.value, int) else "?"
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, int) else "?"

    for node in ast.walk(forward):
        if isinstance(node, ast.Attribute) and node.attr == "shape" and isinstance(node.value, ast.Name) and node.value.id in args:
            outer = subscripts.get(id(node))
            read = node.value.id, index_of(outer.slice if outer is not None else None)
            read_by[id(outer if outer is not None else node)] = read
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size"
              and isinstance(node.func.value, ast.Name) and node.func.value.id in args):
            read = node.func.value.id, index_of(node.args[0] if node.args else None)
            read_by[id(node)] = read
        else:
            continue
        found.append((node.lineno, node.col_offset, *read))
    reads: dict[str, list[Any]] = {}
    for _line, _col, name, index in sorted(found, key=lambda f: (f[0], f[1])):
        if index not in reads.setdefault(name, []):
            reads[name].append(index)
    names: dict[tuple[str, Any], str] = {}
    for node in ast.walk(forward):  # `x_dim1 = x.shape[1]`: the read, alone, into a local
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and id(node.value) in read_by and read_by[id(node.value)][1] not in ("*", "?"):
            names.setdefault(read_by[id(node.value)], node.targets[0].id)
    return reads, names
