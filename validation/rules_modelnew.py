"""Static rules on ModelNew itself: it is called the nn.Module way, defined once, and uses no reference.

MODELNEW-CALL: no call-machinery overrides, hooks or rebinding of forward / ModelNew;
REFERENCE-USE: no mention of the reference `Model` in ModelNew's body.
"""

from __future__ import annotations

import libcst as cst

from autotriton.validation.rules_cst import _dotted, _NameFinder, _str_literal, _walk
from autotriton.validation.rules_structure import _Checker, _ClassInfo

#: nn.Module internals whose override changes what `model(x)` runs.
_CALL_MACHINERY = frozenset({
    "__call__", "_call_impl", "_wrapped_call_impl", "__getattribute__", "__getattr__", "__new__", "__init_subclass__",
    "__class_getitem__", "_apply", "__setstate__", "__reduce__", "__reduce_ex__", "__instancecheck__",
})
_HOOK_METHODS = frozenset({
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook", "register_backward_hook",
    "register_full_backward_pre_hook", "register_module_forward_hook", "register_module_forward_pre_hook",
    "register_state_dict_pre_hook", "register_load_state_dict_post_hook",
})


class _CallMachineryVisitor(cst.CSTVisitor):
    def __init__(self, c: _Checker):
        self.c = c

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name in _HOOK_METHODS:
            self.c.report("MODELNEW-CALL", f"{name}() lets a hook replace what the module computes", node)
        elif name in ("setattr", "object.__setattr__") and len(node.args) >= 2 and _str_literal(node.args[1].value) in ("forward", "__call__"):
            self.c.report("MODELNEW-CALL", f"setattr(..., {_str_literal(node.args[1].value)!r}) rebinds the method the judge calls", node)

    def _store(self, target: cst.CSTNode) -> None:
        d = _dotted(target)
        if d and "." in d and d.rsplit(".", 1)[1] in ("forward", "__call__", "_call_impl", "_forward_hooks", "_forward_pre_hooks"):
            self.c.report("MODELNEW-CALL", f"assigning '{d}' rebinds what the judge calls", target)

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._store(t.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._store(node.target)


def _check_call_machinery(c: _Checker, model: _ClassInfo) -> None:
    """ModelNew (and its in-file bases) must be called the nn.Module way: forward, no hooks."""
    seen: set[str] = set()
    todo = ["ModelNew"]
    while todo:
        name = todo.pop()
        cls = c.classes.get(name)
        if cls is None or name in seen:
            continue
        seen.add(name)
        todo += [b for b in cls.bases if b in c.classes]
        for stmt in cls.node.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value in _CALL_MACHINERY:
                c.report("MODELNEW-CALL", f"{name} overrides {stmt.name.value}: the judge calls the module the nn.Module way and checks forward", stmt)
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target] if isinstance(small, cst.AnnAssign) else []
                    for t in targets:
                        if isinstance(t, cst.Name) and (t.value in _CALL_MACHINERY or t.value == "forward"):
                            c.report("MODELNEW-CALL", f"{name} binds {t.value} to a value instead of defining a method", small)
    # hooks and forward rebinding anywhere in the file are reported during the safety walk


def _check_modelnew_rebinding(c: _Checker) -> None:
    """`ModelNew = Model`, `from x import y as ModelNew` or a second definition after the class."""
    seen_class = False
    for stmt in c.module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == "ModelNew":
            if seen_class:
                c.report("MODELNEW-CALL", "ModelNew is defined twice: only one definition may exist", stmt)
            seen_class = True
        elif isinstance(stmt, cst.FunctionDef) and stmt.name.value == "ModelNew":
            c.report("MODELNEW-CALL", "ModelNew is rebound to a function", stmt)
        elif isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets: list[cst.CSTNode] = []
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
                    targets = [small.target]
                elif isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(getattr(small, "names", None), cst.ImportStar):
                    for alias in small.names:  # type: ignore[union-attr]
                        local = alias.asname.name if alias.asname is not None else alias.name
                        if isinstance(local, cst.Name) and local.value == "ModelNew":
                            c.report("MODELNEW-CALL", "ModelNew is imported, not defined here", small)
                for t in targets:
                    for n in (t.elements if isinstance(t, (cst.Tuple, cst.List)) else [t]):
                        value = n.value if isinstance(n, cst.Element) else n
                        if isinstance(value, cst.Name) and value.value == "ModelNew":
                            c.report("MODELNEW-CALL", "ModelNew is rebound by an assignment", small)


def _report_reference_in_class(c: _Checker, cls: _ClassInfo) -> None:
    """Any mention of the reference Model in ModelNew's body (__init__ included). A `Model` the
    candidate defines itself counts too: it is the reference's name and, pasted, its code."""
    finder = _NameFinder(frozenset({"Model"}))
    _walk(cls.node.body, finder)
    for n in finder.found:
        c.report("REFERENCE-USE", "ModelNew uses 'Model', the reference implementation", n)
