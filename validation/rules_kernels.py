"""Pass C of the static rules: Triton constraints inside kernels and on their launch options.

Per kernel: tl.arange extents and tl.zeros/tl.full shapes (powers of two, constexpr block
sizes), which pointer parameters it stores through (for INPUT-MUTATION), whether it writes
memory at all (TRITON-NO-STORE); num_warps / num_stages wherever they are given.
"""

from __future__ import annotations

from typing import Sequence

import libcst as cst

from autotriton.validation.rules_cst import _eval_int, _int_literal, _is_pow2, _params, _positional_params, _walk
from autotriton.validation.rules_structure import _Checker, _KernelInfo


# --------------------------------------------------------------------------------------------
# Pass C: Triton constraints inside kernels
# --------------------------------------------------------------------------------------------


def _check_launch_options(checker: _Checker, node: cst.CSTNode, args: Sequence[cst.Arg], kernel: str | None,
                          env: dict[str, int] | None = None) -> None:
    """num_warps / num_stages given as literals (launch keywords or triton.Config keywords), or as
    names bound once to a literal (module constants, `env`: the launching function's)."""
    for arg in args:
        if arg.keyword is None:
            continue
        key = arg.keyword.value
        val = _int_literal(arg.value)
        if val is None and isinstance(arg.value, cst.Name):
            val = (env or {}).get(arg.value.value, checker.constants.get(arg.value.value))
        if val is None:
            continue
        where = f" launching {kernel}" if kernel else " in triton.Config"
        if key == "num_warps" and not (_is_pow2(val) and val <= 32):
            checker.report("TRITON-NUM-WARPS", f"num_warps={val}{where}: must be a power of two between 1 and 32", arg)
        elif key == "num_stages" and not 1 <= val <= 8:
            checker.report("TRITON-NUM-STAGES", f"num_stages={val}{where}: must be between 1 and 8", arg)


class _KernelVisitor(cst.CSTVisitor):
    """tl.arange extents and tl.zeros/tl.full shapes in one kernel body."""

    _SHAPE_FUNCS = ("triton.language.zeros", "triton.language.full")

    def __init__(self, checker: _Checker, info: _KernelInfo):
        self.c = checker
        self.k = info
        self.params = {p.name.value for p in _params(info.node)}
        self.env = dict(checker.constants)
        self.local_env: dict[str, int] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            name = node.targets[0].target.value
            self.k.local_assigns.setdefault(name, []).append(node.value)
            v = _eval_int(node.value, self.env)
            if v is not None:
                self.env[name] = v

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name) and node.value is not None:
            self.k.local_assigns.setdefault(node.target.value, []).append(node.value)
            v = _eval_int(node.value, self.env)
            if v is not None:
                self.env[node.target.value] = v

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name) and isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)):
            self.k.local_assigns.setdefault(node.target.value, []).append(node.value)

    def _extent_name(self, node: cst.CSTNode, what: str, where: cst.CSTNode) -> None:
        """A block extent given by a name: must be a constexpr parameter (or a known constant)."""
        if isinstance(node, cst.Name) and node.value in self.params:
            if node.value in self.k.constexprs:
                self.k.block_params.add(node.value)
            else:
                self.c.report(
                    "TRITON-BLOCK-CONSTEXPR",
                    f"{self.k.name}: {what} uses parameter '{node.value}', which is not annotated tl.constexpr",
                    where,
                )

    def visit_Call(self, node: cst.Call) -> None:
        callee = self.c.resolve_node(node.func)
        last = callee.rsplit(".", 1)[-1] if callee else (node.func.attr.value if isinstance(node.func, cst.Attribute) else "")
        if last == "store" or last.startswith("atomic_") or last.endswith("_store"):
            self.k.stores = True
            if callee and callee.startswith("triton.language") and node.args:
                self.k.store_roots.append(node.args[0].value)
            elif isinstance(node.func, cst.Attribute) and not callee:
                self.k.store_roots.append(node.func.value)  # block_ptr.store(...) / desc.store(...)
        if isinstance(node.func, cst.Name):
            self.k.calls.add(node.func.value)
            self.k.helper_calls.append(node)
        if callee == "triton.language.arange" and len(node.args) >= 2:
            lo, hi = node.args[0].value, node.args[1].value
            a, b = _eval_int(lo, self.env), _eval_int(hi, self.env)
            if a is not None and b is not None:
                if not _is_pow2(b - a):
                    self.c.report("TRITON-ARANGE-POW2", f"{self.k.name}: tl.arange({a}, {b}) has extent {b - a}, not a power of two", node)
            for bound in (lo, hi):
                self._extent_name(bound, "tl.arange", node)
        elif callee in self._SHAPE_FUNCS and node.args:
            shape = node.args[0].value
            elems = [e.value for e in shape.elements] if isinstance(shape, (cst.Tuple, cst.List)) else [shape]
            for e in elems:
                self._extent_name(e, callee.rsplit(".", 1)[1] + " shape", node)
                v = _eval_int(e, self.env)
                if v is not None and not _is_pow2(v):
                    self.c.report("TRITON-ARANGE-POW2", f"{self.k.name}: tl.{callee.rsplit('.', 1)[1]} shape dimension {v} is not a power of two", node)


def _pointer_bases(c: _Checker, info: _KernelInfo, expr: cst.CSTNode) -> set[str]:
    """Parameters of a kernel that are the base of an address expression (through +/-, indexing,
    tl.where/broadcast/advance/make_block_ptr and local assignments)."""
    params = {p.name.value for p in _params(info.node)}
    found: set[str] = set()
    seen: set[str] = set()
    todo = [expr]
    while todo:
        e = todo.pop()
        if isinstance(e, cst.BinaryOperation) and isinstance(e.operator, (cst.Add, cst.Subtract)):
            todo += [e.left, e.right]
        elif isinstance(e, cst.Subscript):
            todo.append(e.value)
        elif isinstance(e, cst.Call):
            name = (c.resolve_node(e.func) or "").rsplit(".", 1)[-1]
            if name == "where" and len(e.args) == 3:
                todo += [e.args[1].value, e.args[2].value]
            elif name in ("broadcast_to", "reshape", "view", "expand_dims", "multiple_of", "max_contiguous", "advance", "make_block_ptr", "make_tensor_descriptor") and e.args:
                todo.append(e.args[0].value)
            for a in e.args:
                if a.keyword is not None and a.keyword.value == "base":
                    todo.append(a.value)
        elif isinstance(e, cst.Name):
            if e.value in params:
                found.add(e.value)
            elif e.value in info.local_assigns and e.value not in seen:
                seen.add(e.value)
                todo += info.local_assigns[e.value]
    return found


def _resolve_stored_params(c: _Checker) -> None:
    """Each kernel's pointer parameters that it (or a jit helper it calls) stores through."""
    for info in c.kernels.values():
        for root in info.store_roots:
            info.stored_params |= _pointer_bases(c, info, root)
    for _ in range(4):  # helpers calling helpers: a few rounds reach a fixpoint
        changed = False
        for info in c.kernels.values():
            for call in info.helper_calls:
                helper = c.kernels.get(call.func.value)  # type: ignore[union-attr]
                if helper is None or not helper.stored_params:
                    continue
                hparams = [p.name.value for p in _positional_params(helper.node)]
                for i, a in enumerate(call.args):
                    pname = a.keyword.value if a.keyword is not None else (hparams[i] if i < len(hparams) else None)
                    if pname in helper.stored_params:
                        new = _pointer_bases(c, info, a.value) - info.stored_params
                        if new:
                            info.stored_params |= new
                            changed = True
        if not changed:
            break


def _check_kernel(checker: _Checker, info: _KernelInfo) -> None:
    _walk(info.node.body, _KernelVisitor(checker, info))
    # literal defaults of block-size constexprs
    for p in _params(info.node):
        if p.name.value in info.block_params and p.default is not None:
            v = _eval_int(p.default, checker.constants)
            if v is not None and not _is_pow2(v):
                checker.report("TRITON-BLOCK-POW2", f"{info.name}: default {p.name.value}={v} is not a power of two", p)
    for dec in info.decorators:
        if isinstance(dec.decorator, cst.Call):
            name = checker.resolve_node(dec.decorator.func)
            if name in ("triton.jit", "triton.runtime.jit.jit"):
                _check_launch_options(checker, dec, dec.decorator.args, kernel=info.name)


def _writes_memory(c: _Checker, kernel: str, seen: set[str]) -> bool:
    info = c.kernels.get(kernel)
    if info is None or kernel in seen:
        return False
    seen.add(kernel)
    return info.stores or any(_writes_memory(c, k, seen) for k in info.calls if k in c.kernels)
