"""The module model of a candidate: what is defined where (imports, classes, kernels, constants).

`_Checker` is the one object every check reports to: it collects the module's structure in
one pass, resolves names through import aliases, and turns findings into sorted `Violation`s
(resolving lines only when something was reported). `_InitCollector` records what kind of
value each `self.X` of a class's `__init__` holds (tensor, torch module, helper, kernel, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from autotriton.records import Violation
from autotriton.validation.rules_cst import _dotted, _import_name, _int_literal, _is_main_guard, _params, _str_literal, _walk
from autotriton.validation.rules_tables import _INIT_TENSOR_FACTORIES, ALLOWED_TORCH_CALLS

# --------------------------------------------------------------------------------------------
# Module model: what is defined where
# --------------------------------------------------------------------------------------------


@dataclass
class _ClassInfo:
    name: str
    node: cst.ClassDef
    bases: list[str]  # resolved dotted names (local classes stay bare)
    methods: dict[str, cst.FunctionDef] = field(default_factory=dict)
    # attribute kinds from __init__: "tensor", "torch_module", "helper:<Class>", "function:<name>",
    # "kernel:<name>", "method:<name>"
    attrs: dict[str, str] = field(default_factory=dict)


@dataclass
class _KernelInfo:
    name: str
    node: cst.FunctionDef
    decorators: list[cst.Decorator]
    constexprs: set[str] = field(default_factory=set)
    block_params: set[str] = field(default_factory=set)  # constexprs used as tl.arange / shape extents
    stores: bool = False  # calls tl.store / tl.atomic_* / <block pointer>.store itself
    calls: set[str] = field(default_factory=set)  # names it calls (other @triton.jit helpers)
    stored_params: set[str] = field(default_factory=set)  # pointer parameters it writes through
    store_roots: list[cst.CSTNode] = field(default_factory=list)  # address expressions of its stores
    helper_calls: list[cst.Call] = field(default_factory=list)  # calls of other kernels / helpers
    local_assigns: dict[str, list[cst.CSTNode]] = field(default_factory=dict)


class _Checker:
    """One pass over the module's structure, then the semantic checks. Use `check_rules`."""

    def __init__(self, module: cst.Module, wrapper: MetadataWrapper):
        self.module = module
        self.wrapper = wrapper
        self.found: list[tuple[str, str, cst.CSTNode | None]] = []
        self.aliases: dict[str, str] = {}  # local name -> resolved dotted name (imports, module aliases)
        self.functions: dict[str, cst.FunctionDef] = {}
        self.classes: dict[str, _ClassInfo] = {}
        self.kernels: dict[str, _KernelInfo] = {}
        self.kernel_aliases: dict[str, str] = {}  # name -> kernel name (k2 = triton.jit(f); k = kern)
        self.constants: dict[str, int] = {}  # module-level integer constants
        self.module_names: set[str] = set()  # every name assigned at module level
        self.defined_names: set[str] = set()  # every binding in the file (for builtin shadowing)

    # ---- reporting --------------------------------------------------------------------------
    def report(self, rule: str, message: str, node: cst.CSTNode | None) -> None:
        self.found.append((rule, message, node))

    def violations(self) -> list[Violation]:
        if not self.found:
            return []
        positions = self.wrapper.resolve(PositionProvider)
        seen: set[tuple[str, int | None, str]] = set()
        out: list[Violation] = []
        for rule, message, node in self.found:
            line = None
            if node is not None and node in positions:
                line = positions[node].start.line
            k = (rule, line, message)
            if k in seen:
                continue
            seen.add(k)
            out.append(Violation(rule=rule, message=message, line=line))
        out.sort(key=lambda v: (v.line if v.line is not None else 0, v.rule))
        return out

    # ---- name resolution --------------------------------------------------------------------
    def resolve(self, dotted: str) -> str:
        root, _, rest = dotted.partition(".")
        base = self.aliases.get(root)
        if base is None:
            return dotted
        return f"{base}.{rest}" if rest else base

    def resolve_node(self, node: cst.CSTNode) -> str | None:
        d = _dotted(node)
        return self.resolve(d) if d is not None else None

    def is_import_rooted(self, dotted: str) -> bool:
        return dotted.partition(".")[0] in self.aliases

    def kernel_of(self, node: cst.CSTNode) -> str | None:
        """The kernel a launch expression refers to (`k`, `mod.k`, an alias), else None."""
        if isinstance(node, cst.Name):
            return self.kernel_of_name(node.value)
        return None

    def kernel_of_name(self, name: str) -> str | None:
        if name in self.kernels:
            return name
        return self.kernel_aliases.get(name)

    # ---- structure ----------------------------------------------------------------------------
    def collect(self) -> None:
        for stmt in self._top_level_statements(self.module.body):
            if isinstance(stmt, cst.FunctionDef):
                self.functions[stmt.name.value] = stmt
                if self._is_jit_decorated(stmt):
                    self.kernels[stmt.name.value] = _KernelInfo(stmt.name.value, stmt, list(stmt.decorators))
            elif isinstance(stmt, cst.ClassDef):
                self.classes[stmt.name.value] = self._class_info(stmt)
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, (cst.Import, cst.ImportFrom)):
                        self._add_import_aliases(small)
                    elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                        self._module_assign(small.targets[0].target, small.value)
                        if isinstance(small.targets[0].target, cst.Name):
                            self.module_names.add(small.targets[0].target.value)
                    elif isinstance(small, cst.AnnAssign) and small.value is not None:
                        self._module_assign(small.target, small.value)
        # decorators may have been resolved before a later import; redo kernel detection now.
        for name, fn in self.functions.items():
            if name not in self.kernels and self._is_jit_decorated(fn):
                self.kernels[name] = _KernelInfo(name, fn, list(fn.decorators))
        for info in self.kernels.values():
            self._kernel_params(info)
        for cls in self.classes.values():
            self._init_attrs(cls)

    def _top_level_statements(self, body: Sequence[cst.CSTNode]) -> Iterable[cst.CSTNode]:
        for stmt in body:
            if isinstance(stmt, cst.If) and _is_main_guard(stmt.test):
                if stmt.orelse is not None:  # the body never runs when the judge imports the module
                    yield from self._top_level_statements(stmt.orelse.body.body if isinstance(stmt.orelse, cst.Else) else [stmt.orelse])
            elif isinstance(stmt, cst.If):
                yield from self._top_level_statements(stmt.body.body)
                if stmt.orelse is not None:
                    yield from self._top_level_statements(stmt.orelse.body.body if isinstance(stmt.orelse, cst.Else) else [stmt.orelse])
            elif isinstance(stmt, (cst.Try, cst.TryStar)):
                yield from self._top_level_statements(stmt.body.body)
                for h in stmt.handlers:
                    yield from self._top_level_statements(h.body.body)
            else:
                yield stmt

    def _add_import_aliases(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _import_name(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.aliases[alias.asname.name.value] = full
                else:
                    root = full.partition(".")[0]
                    self.aliases.setdefault(root, root)
        else:
            if node.relative:
                mod = "." * len(node.relative) + (_import_name(node.module) if node.module else "")
            else:
                mod = _import_name(node.module) if node.module else ""
            if isinstance(node.names, cst.ImportStar):
                return
            for alias in node.names:
                name = _import_name(alias.name)
                local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
                self.aliases[local] = f"{mod}.{name}" if mod else name

    def _module_assign(self, target: cst.CSTNode, value: cst.CSTNode) -> None:
        if not isinstance(target, cst.Name):
            return
        name = target.value
        lit = _int_literal(value)
        if lit is not None:
            self.constants[name] = lit
            return
        if isinstance(value, cst.Call):
            callee = self.resolve_node(value.func)
            if callee in ("triton.jit", "triton.runtime.jit.jit") and value.args:
                k = self.kernel_of(value.args[0].value) or (_dotted(value.args[0].value) or "")
                if k in self.functions:
                    fn = self.functions[k]
                    self.kernels.setdefault(k, _KernelInfo(k, fn, list(fn.decorators)))
                    self.kernel_aliases[name] = k
            return
        d = _dotted(value)
        if d is not None:
            k = self.kernel_of_name(d)
            if k is not None:
                self.kernel_aliases[name] = k
            elif self.is_import_rooted(d):
                self.aliases[name] = self.resolve(d)

    def _is_jit_decorated(self, fn: cst.FunctionDef) -> bool:
        for dec in fn.decorators:
            expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
            name = self.resolve_node(expr)
            if name in ("triton.jit", "triton.runtime.jit.jit", "triton.runtime.jit"):
                return True
        return False

    def _class_info(self, node: cst.ClassDef) -> _ClassInfo:
        bases = []
        for arg in node.bases:
            d = _dotted(arg.value)
            if d is not None:
                bases.append(self.resolve(d))
        info = _ClassInfo(node.name.value, node, bases)
        for stmt in node.body.body:
            if isinstance(stmt, cst.FunctionDef):
                info.methods[stmt.name.value] = stmt
        return info

    def _kernel_params(self, info: _KernelInfo) -> None:
        for p in _params(info.node):
            if p.annotation is not None:
                ann = p.annotation.annotation
                name = self.resolve_node(ann) or (_str_literal(ann) or "")
                if name.endswith("constexpr"):
                    info.constexprs.add(p.name.value)

    def is_nn_module_class(self, name: str, seen: set[str] | None = None) -> bool:
        """True when the (resolved) class name is torch.nn.Module or an in-file subclass of it."""
        if name in ("torch.nn.Module", "torch.nn.modules.module.Module"):
            return True
        cls = self.classes.get(name)
        if cls is None:
            return False
        seen = seen or set()
        if name in seen:
            return False
        seen.add(name)
        return any(self.is_nn_module_class(b, seen) for b in cls.bases)

    def is_torch_class(self, resolved: str) -> bool:
        return resolved.startswith("torch.")

    def _init_attrs(self, cls: _ClassInfo) -> None:
        init = cls.methods.get("__init__")
        if init is None:
            return
        collector = _InitCollector(self, cls)
        _walk(init.body, collector)

    def method_of(self, class_name: str, method: str, seen: set[str] | None = None) -> tuple[str, cst.FunctionDef] | None:
        cls = self.classes.get(class_name)
        if cls is None:
            return None
        if method in cls.methods:
            return class_name, cls.methods[method]
        seen = seen or set()
        seen.add(class_name)
        for b in cls.bases:
            if b in self.classes and b not in seen:
                found = self.method_of(b, method, seen)
                if found:
                    return found
        return None

    def class_attr(self, class_name: str, attr: str, seen: set[str] | None = None) -> str | None:
        cls = self.classes.get(class_name)
        if cls is None:
            return None
        if attr in cls.attrs:
            return cls.attrs[attr]
        seen = seen or set()
        seen.add(class_name)
        for b in cls.bases:
            if b in self.classes and b not in seen:
                found = self.class_attr(b, attr, seen)
                if found:
                    return found
        return None

    def is_autograd_function(self, class_name: str) -> bool:
        cls = self.classes.get(class_name)
        return cls is not None and any(b in ("torch.autograd.Function", "torch.autograd.function.Function") for b in cls.bases)


class _InitCollector(cst.CSTVisitor):
    """Kinds of `self.X` attributes assigned in a class's __init__."""

    def __init__(self, checker: _Checker, cls: _ClassInfo):
        self.c = checker
        self.cls = cls

    def _kind(self, value: cst.CSTNode) -> str | None:
        if isinstance(value, cst.Call):
            callee = self.c.resolve_node(value.func)
            if callee is None:
                return None
            if callee in _INIT_TENSOR_FACTORIES or callee in ALLOWED_TORCH_CALLS or callee.startswith("torch.rand"):
                return "tensor"
            if callee in self.c.classes:
                return f"helper:{callee}"
            if callee.startswith("torch.nn."):
                return "torch_module"
            if callee.startswith("torch."):
                return "tensor"
            return None
        d = _dotted(value)
        if d is not None:
            k = self.c.kernel_of_name(d)
            if k is not None:
                return f"kernel:{k}"
            if d in self.c.functions:
                return f"function:{d}"
            if d.startswith("self.") and d.count(".") == 1:
                return f"method:{d[5:]}"
        return None

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            d = _dotted(t.target)
            if d and d.startswith("self.") and d.count(".") == 1:
                kind = self._kind(node.value)
                if kind:
                    self.cls.attrs[d[5:]] = kind

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        d = _dotted(node.target)
        if node.value is not None and d and d.startswith("self.") and d.count(".") == 1:
            kind = self._kind(node.value)
            if kind:
                self.cls.attrs[d[5:]] = kind

    def visit_Call(self, node: cst.Call) -> None:
        d = _dotted(node.func)
        if d in ("self.register_buffer", "self.register_parameter") and node.args:
            name = _str_literal(node.args[0].value)
            if name:
                self.cls.attrs[name] = "tensor"
