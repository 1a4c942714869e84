"""Pass A of the static rules: forbidden modules, names, builtins and monkeypatching, anywhere in the file.

`_SafetyVisitor` walks the whole module once: imports against the allowlist, dotted names
against FORBIDDEN_NAMES (re-exported modules such as `warnings.sys` re-rooted first), builtins,
interpreter internals, stores into imported modules, triton.Config options; the MODELNEW-CALL
checks ride on the same walk (`rules_modelnew._CallMachineryVisitor`).
"""

from __future__ import annotations

import libcst as cst

from autotriton.validation.rules_cst import (_allowlisted_internal, _dotted, _import_name, _int_literal, _is_main_guard,
                                             _is_pow2, _prefix_lookup, _str_literal, _walk)
from autotriton.validation.rules_kernels import _check_launch_options
from autotriton.validation.rules_modelnew import _CallMachineryVisitor
from autotriton.validation.rules_structure import _Checker
from autotriton.validation.rules_tables import (_REFERENCE_MODULE_HINTS, _REFERENCE_NAMES, ALLOWED_IMPORTS, FORBIDDEN_ATTRIBUTES,
                                                FORBIDDEN_BARE_NAMES, FORBIDDEN_BUILTIN_CALLS, FORBIDDEN_NAMES, RULES,
                                                SHADOWABLE_BUILTINS, TOLERATED_IMPORTS)

# --------------------------------------------------------------------------------------------
# Pass A: forbidden modules, names, builtins, monkeypatching, anywhere in the file
# --------------------------------------------------------------------------------------------


class _SafetyVisitor(cst.CSTVisitor):
    def __init__(self, checker: _Checker):
        self.c = checker
        self.builtin_calls: list[tuple[str, cst.Call]] = []
        self.machinery = _CallMachineryVisitor(checker)  # MODELNEW-CALL checks ride on this walk

    # imports --------------------------------------------------------------------------------
    def _check_module(self, mod: str, node: cst.CSTNode, relative: bool = False) -> None:
        if relative:
            self.c.report("REFERENCE-IMPORT", f"relative import '{mod}': a candidate is a single file and must not import its neighbours (the reference)", node)
            return
        if _allowlisted_internal(mod):
            return
        hit = _prefix_lookup(mod, FORBIDDEN_NAMES)
        if hit is not None:
            self.c.report(hit[1], f"imports '{mod}' ({RULES[hit[1]]})", node)
            return
        root = mod.partition(".")[0]
        if root in ALLOWED_IMPORTS:
            return
        if root.lower() in _REFERENCE_MODULE_HINTS:
            self.c.report("REFERENCE-IMPORT", f"imports '{mod}', which looks like the reference problem; ModelNew must be self-contained", node)
        else:
            self.c.report("IMPORT-FORBIDDEN", f"imports '{mod}', which is not on the import allowlist ({', '.join(sorted(ALLOWED_IMPORTS))})", node)

    def visit_Import(self, node: cst.Import) -> bool:
        self.c._add_import_aliases(node)
        for alias in node.names:
            self._check_module(_import_name(alias.name), node)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self.c._add_import_aliases(node)
        mod = _import_name(node.module) if node.module else ""
        if node.relative:
            self._check_module("." * len(node.relative) + mod, node, relative=True)
            return False
        if isinstance(node.names, cst.ImportStar):
            self._check_module(mod, node)
            return False
        for alias in node.names:
            name = _import_name(alias.name)
            if name in _REFERENCE_NAMES:
                self.c.report("REFERENCE-IMPORT", f"imports '{name}' from '{mod}': the reference problem must not be imported", node)
            elif f"{mod}.{name}" not in TOLERATED_IMPORTS:
                self._check_module(f"{mod}.{name}", node)  # checks the module too (prefix match)
        return False

    # names and attributes -------------------------------------------------------------------
    def _check_dotted(self, d: str, node: cst.CSTNode) -> None:
        parts = d.split(".")
        for p in parts[1:]:
            if p in FORBIDDEN_ATTRIBUTES:
                rule = "MONKEYPATCH" if p in ("__setattr__", "__delattr__") else "INTROSPECTION"
                self.c.report(rule, f"'{d}' reaches interpreter internals through '{p}'", node)
                return
        if parts[0] in FORBIDDEN_BARE_NAMES:
            self.c.report(FORBIDDEN_BARE_NAMES[parts[0]], f"uses '{parts[0]}'", node)
            return
        rooted = self.c.is_import_rooted(d)
        rerooted = _reexported_module(self.c.resolve(d) if rooted else d, REEXPORTED_MODULES if rooted else CORE_REEXPORTED_MODULES)
        if rerooted is not None:
            self._check_module(rerooted, node)
            if rerooted.partition(".")[0] == "torch":
                self._check_dotted_resolved(rerooted, node)
            return
        if not self.c.is_import_rooted(d):
            return
        self._check_dotted_resolved(self.c.resolve(d), node)

    def _check_dotted_resolved(self, r: str, node: cst.CSTNode) -> None:
        if _allowlisted_internal(r):
            return
        hit = _prefix_lookup(r, FORBIDDEN_NAMES)
        if hit is not None:
            self.c.report(hit[1], f"uses '{r}' ({RULES[hit[1]]})", node)
        elif r == "sys.modules" or r.startswith("sys.modules."):
            self.c.report("MONKEYPATCH", "uses sys.modules", node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        d = _dotted(node)
        if d is not None:
            self._check_dotted(d, node)
            return False
        if node.attr.value in FORBIDDEN_ATTRIBUTES:
            rule = "MONKEYPATCH" if node.attr.value in ("__setattr__", "__delattr__") else "INTROSPECTION"
            self.c.report(rule, f"attribute '{node.attr.value}' reaches interpreter internals", node)
        _walk(node.value, self)  # the attribute name itself is no reference
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        _walk(node.value, self)  # keyword names are no references
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in FORBIDDEN_BARE_NAMES:
            self.c.report(FORBIDDEN_BARE_NAMES[node.value], f"uses '{node.value}'", node)
        elif node.value in self.c.aliases:
            self._check_dotted(node.value, node)

    # bindings (for builtin shadowing) --------------------------------------------------------
    def visit_Param(self, node: cst.Param) -> None:
        self.c.defined_names.add(node.name.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.c.defined_names.add(node.name.value)
        if node.name.value in ("__torch_function__", "__torch_dispatch__"):
            self.c.report("INTROSPECTION", f"defines {node.name.value}, which reroutes PyTorch's dispatcher around the judge", node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.c.defined_names.add(node.name.value)
        for arg in node.bases:
            d = _dotted(arg.value)
            if d is None:
                continue
            r = self.c.resolve(d)
            if r in ("torch.Tensor", "torch._tensor.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"):
                self.c.report("INTROSPECTION", f"class {node.name.value} subclasses {r}: tensor subclasses can hide PyTorch compute from the judge", node)
        for kw in node.keywords:
            if kw.keyword.value == "metaclass":
                self.c.report("INTROSPECTION", f"class {node.name.value} uses a metaclass", node)

    def _bind_target(self, t: cst.CSTNode) -> None:
        if isinstance(t, cst.Name):
            self.c.defined_names.add(t.value)
        elif isinstance(t, (cst.Tuple, cst.List)):
            for el in t.elements:
                self._bind_target(el.value)
        elif isinstance(t, cst.StarredElement):
            self._bind_target(t.value)

    # assignments: monkeypatching --------------------------------------------------------------
    def _check_store(self, target: cst.CSTNode, verb: str) -> None:
        if isinstance(target, cst.Name) and target.value in ("__name__", "__file__", "__package__"):
            self.c.report("MONKEYPATCH", f"{verb} the module's {target.value}", target)
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._check_store(el.value, verb)
            return
        if isinstance(target, cst.StarredElement):
            self._check_store(target.value, verb)
            return
        base = target
        while isinstance(base, cst.Subscript):
            base = base.value
        d = _dotted(base)
        if d is None:
            return
        root = d.partition(".")[0]
        if root in ("__builtins__", "builtins"):
            self.c.report("MONKEYPATCH", f"{verb} '{d}': builtins must not be changed", target)
            return
        if (isinstance(target, cst.Attribute) or isinstance(target, cst.Subscript)) and self.c.is_import_rooted(d):
            r = self.c.resolve(d)
            if r.startswith("os.environ") or r.startswith("os.putenv"):
                self.c.report("SYSTEM-ACCESS", f"{verb} '{d}': the environment must not be changed", target)
            else:
                self.c.report("MONKEYPATCH", f"{verb} '{d}' ({r}): imported modules and their classes must not be patched", target)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.machinery.visit_Assign(node)
        for t in node.targets:
            self._check_store(t.target, "assigns")
            self._bind_target(t.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._check_store(node.target, "assigns")

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.machinery.visit_AnnAssign(node)
        self._check_store(node.target, "assigns")
        self._bind_target(node.target)

    def visit_Del(self, node: cst.Del) -> None:
        self._check_store(node.target, "deletes")

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_target(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bind_target(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target)

    # `if __name__ == "__main__":` blocks (an author's own test harness) never run: the judge
    # imports the candidate under another module name, and rebinding __name__ is a violation
    def visit_If(self, node: cst.If) -> bool:
        if not _is_main_guard(node.test):
            return True
        if node.orelse is not None:
            _walk(node.orelse, self)
        return False

    def visit_Global(self, node: cst.Global) -> None:
        for n in node.names:
            if n.name.value in self.c.aliases:
                self.c.report("MONKEYPATCH", f"rebinds the imported name '{n.name.value}' through a global statement", node)

    # calls ------------------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        self.machinery.visit_Call(node)
        func = node.func
        if isinstance(func, cst.Name):
            name = func.value
            if name in FORBIDDEN_BUILTIN_CALLS:
                self.builtin_calls.append((name, node))
            elif name in ("getattr", "setattr", "delattr", "hasattr") and node.args:
                self._check_attr_builtin(name, node)
        callee = self.c.resolve_node(func)
        if callee in ("triton.Config", "triton.runtime.Config", "triton.runtime.autotuner.Config"):
            _check_launch_options(self.c, node, node.args[1:] if node.args else (), kernel=None)
            if node.args:
                cfg = node.args[0].value
                if isinstance(cfg, cst.Dict):
                    blocks = set().union(*(k.block_params for k in self.c.kernels.values())) if self.c.kernels else set()
                    for el in cfg.elements:
                        if isinstance(el, cst.DictElement):
                            key = _str_literal(el.key)
                            val = _int_literal(el.value)
                            if key in blocks and val is not None and not _is_pow2(val):
                                self.c.report("TRITON-BLOCK-POW2", f"triton.Config gives block size {key}={val}, not a power of two", el)

    def _check_attr_builtin(self, name: str, node: cst.Call) -> None:
        obj = node.args[0].value
        d = _dotted(obj)
        attr = _str_literal(node.args[1].value) if len(node.args) > 1 else None
        module_target = d is not None and (self.c.is_import_rooted(d) or d.partition(".")[0] in ("__builtins__", "builtins"))
        if name in ("setattr", "delattr"):
            if module_target:
                self.c.report("MONKEYPATCH", f"{name}() on '{d}': imported modules and their classes must not be patched", node)
            elif attr is None:
                self.c.report("INTROSPECTION", f"{name}() with a computed attribute name", node)
            return
        if attr is None:
            if module_target:
                self.c.report("INTROSPECTION", f"{name}() on '{d}' with a computed attribute name hides which API is used", node)
            return
        if attr in FORBIDDEN_ATTRIBUTES:
            self.c.report("INTROSPECTION", f"{name}(..., '{attr}') reaches interpreter internals", node)
        elif module_target and d is not None:
            self._check_dotted(f"{d}.{attr}", node)

    def finish(self) -> None:
        for name, node in self.builtin_calls:
            if name not in SHADOWABLE_BUILTINS or (name not in self.c.defined_names and name not in self.c.aliases):
                self.c.report(FORBIDDEN_BUILTIN_CALLS[name], f"calls {name}() ({RULES[FORBIDDEN_BUILTIN_CALLS[name]]})", node)


#: Modules that other modules re-export as attributes (`warnings.sys`, `typing.sys`,
#: `numpy.ctypeslib.ctypes`, `torch.nn.functional.torch._C`): reached that way, they are judged as
#: if imported by name. A chain is re-rooted at the LAST such name in it (issue 14, class 3).
REEXPORTED_MODULES = frozenset({
    "sys", "os", "ctypes", "_ctypes", "gc", "builtins", "importlib", "inspect", "threading", "_thread", "subprocess",
    "socket", "signal", "marshal", "pickle", "multiprocessing", "io", "pathlib", "shutil", "tempfile", "weakref",
    "traceback", "dis", "code", "runpy", "atexit", "mmap", "resource", "concurrent", "asyncio", "queue", "types",
    "posix", "nt", "_C", "torch", "_imp", "linecache", "faulthandler", "cffi", "_io", "_weakref", "_pickle",
})


#: On chains that do not start at an import (`self.x.sys`, a module kept in a variable), only the
#: names no honest attribute is called: `self.code` or `self.queue` may be the candidate's own.
CORE_REEXPORTED_MODULES = frozenset({"sys", "os", "ctypes", "_ctypes", "gc", "builtins", "_C", "importlib", "inspect",
                                     "subprocess", "_thread", "posix", "_imp"})


def _reexported_module(dotted: str, names: frozenset[str] = REEXPORTED_MODULES) -> str | None:
    """`a.b.sys.modules` -> "sys.modules"; `F.torch._C._foo` -> "torch._C._foo"; None when no part
    after the first names a re-exported module (or the chain is just `torch.<...>` itself)."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in names:
            root = "torch._C" if parts[i] == "_C" else parts[i]
            if parts[i] == "_C" and parts[i - 1] == "torch" and i == 1:
                return None  # torch._C itself: the ordinary rules judge it
            if parts[i] == "types" and parts[0] == "torch":
                continue  # torch.types: type aliases, no capability
            return ".".join([root, *parts[i + 1:]])
    return None
