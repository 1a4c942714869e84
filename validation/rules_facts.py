"""Raw facts of one function body on ModelNew.forward's path, gathered in one walk (rules_forward).

Assignments, calls, operators, stores, try/with/global statements, names and returns, with
statically dead code (`if False:`, after `return`) left out; nothing is judged here.
"""

from __future__ import annotations

import dataclasses

import libcst as cst

from autotriton.validation.rules_cst import _FIELDS, _SKIP_FIELDS, _int_literal, _walk

# --------------------------------------------------------------------------------------------
# Pass B: ModelNew.forward's call graph
# --------------------------------------------------------------------------------------------


class _FactCollector(cst.CSTVisitor):
    """Raw facts of one function body (nested lambdas and defs included inline)."""

    def __init__(self) -> None:
        self.assigns: list[tuple[cst.CSTNode, cst.CSTNode]] = []
        self.for_targets: list[tuple[cst.CSTNode, cst.CSTNode]] = []
        self.calls: list[cst.Call] = []
        # element-by-element host reads: (call, inside a comprehension?, innermost loop or None)
        self.scalar_reads: list[tuple[cst.Call, bool, cst.CSTNode | None]] = []
        self.loop_calls: dict[int, list[cst.Call]] = {}  # id(loop) -> calls in its body
        self._loops: list[cst.CSTNode] = []
        self._comprehensions = 0
        self.ops: list[cst.CSTNode] = []  # BinaryOperation, UnaryOperation, Comparison
        self.aug: list[cst.AugAssign] = []
        self.subscript_stores: list[tuple[cst.Subscript, cst.CSTNode]] = []
        self.attr_stores: list[tuple[cst.Attribute, cst.CSTNode]] = []
        self.tries: list[cst.CSTNode] = []
        self.withs: list[cst.WithItem] = []
        self.globals: list[cst.Global] = []
        self.names: list[cst.Name] = []
        self.attributes: list[cst.Attribute] = []
        self.local_params: set[str] = set()
        self.local_defs: dict[str, cst.CSTNode] = {}  # nested defs and lambdas bound to names
        self.returns: list[cst.CSTNode] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._store(t.target, node.value)
            if isinstance(node.value, cst.Lambda) and isinstance(t.target, cst.Name):
                self.local_defs[t.target.value] = node.value

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._store(node.target, node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.local_defs[node.name.value] = node

    # statically dead code does not count (a launch under `if False:` or after `return`)
    def visit_If(self, node: cst.If) -> bool:
        test = node.test
        dead = (isinstance(test, cst.Name) and test.value in ("False", "None")) or _int_literal(test) == 0
        _walk(test, self)
        if not dead:
            _walk(node.body, self)
        if node.orelse is not None:
            _walk(node.orelse, self)
        return False

    def visit_While(self, node: cst.While) -> bool:
        test = node.test
        dead = (isinstance(test, cst.Name) and test.value in ("False", "None")) or _int_literal(test) == 0
        _walk(test, self)
        if not dead:
            self._loops.append(node)
            _walk(node.body, self)
            self._loops.pop()
        if node.orelse is not None:
            _walk(node.orelse, self)
        return False

    def _comprehension(self, node: cst.CSTNode) -> bool:
        self._comprehensions += 1
        for name in _FIELDS.get(type(node)) or tuple(f.name for f in dataclasses.fields(type(node))):
            value = getattr(node, name, None)
            if isinstance(value, cst.CSTNode) and name not in _SKIP_FIELDS and not name.startswith("whitespace"):
                _walk(value, self)
        self._comprehensions -= 1
        return False

    def visit_ListComp(self, node: cst.ListComp) -> bool:
        return self._comprehension(node)

    def visit_SetComp(self, node: cst.SetComp) -> bool:
        return self._comprehension(node)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> bool:
        return self._comprehension(node)

    def visit_DictComp(self, node: cst.DictComp) -> bool:
        return self._comprehension(node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> bool:
        for stmt in node.body:
            _walk(stmt, self)
            if isinstance(stmt, cst.SimpleStatementLine) and any(isinstance(s, (cst.Return, cst.Raise)) for s in stmt.body):
                break  # the rest of the block never runs
        return False

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.assigns.append((node.target, node.value))

    def visit_For(self, node: cst.For) -> bool:
        # iterating a tensor yields tensors; iterating anything else yields unknowns
        self.for_targets.append((node.target, node.iter))
        _walk(node.target, self)
        _walk(node.iter, self)
        self._loops.append(node)
        _walk(node.body, self)
        self._loops.pop()
        if node.orelse is not None:
            _walk(node.orelse, self)
        return False

    def _store(self, target: cst.CSTNode, value: cst.CSTNode) -> None:
        self.assigns.append((target, value))
        self._note_store(target, value)

    def _note_store(self, target: cst.CSTNode, value: cst.CSTNode) -> None:
        """Stores into x[...] and x.attr, by plain and augmented assignment alike."""
        if isinstance(target, cst.Subscript):
            self.subscript_stores.append((target, value))
        elif isinstance(target, cst.Attribute):
            self.attr_stores.append((target, value))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.aug.append(node)
        self._note_store(node.target, node.value)

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)
        for loop in self._loops:
            self.loop_calls.setdefault(id(loop), []).append(node)
        if self._comprehensions or self._loops:
            f = node.func
            if (isinstance(f, cst.Attribute) and f.attr.value == "item") or (
                    isinstance(f, cst.Name) and f.value in ("float", "int", "bool", "complex") and len(node.args) == 1):
                self.scalar_reads.append((node, bool(self._comprehensions), self._loops[-1] if self._loops else None))

    def _op(self, node: cst.BinaryOperation | cst.UnaryOperation | cst.Comparison) -> None:
        self.ops.append(node)

    visit_BinaryOperation = visit_UnaryOperation = visit_Comparison = _op

    def _try(self, node: cst.Try | cst.TryStar) -> None:
        self.tries.append(node)

    visit_Try = visit_TryStar = _try

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self.withs.append(node)

    def visit_Global(self, node: cst.Global) -> None:
        self.globals.append(node)

    def visit_Name(self, node: cst.Name) -> None:
        self.names.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        self.attributes.append(node)
        _walk(node.value, self)  # not node.attr: `x.relu` is no reference to a function `relu`
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        _walk(node.value, self)  # not the keyword name
        return False

    def visit_Param(self, node: cst.Param) -> None:
        self.local_params.add(node.name.value)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.returns.append(node.value)
