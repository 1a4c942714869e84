"""Leave out of ModelNew what the generated forward never needs and the judge's rules forbid.

inductor_module.py carries over the reference's `__init__`, the methods it reaches and, by name
closure, the helpers they name. Real-world packages keep things there that only their own forward
used, and that a candidate may not contain (validation/rules_tables.py): a `use_fused_attn()` that
reads `os.environ`, a `packaging.version` check, a `torch.jit.Final` annotation, a
`torch.jit.is_tracing()` in a helper method, an einops `Rearrange` layer. This module prunes them,
before the name closure is taken, so that what only they needed goes away with them:

0. tracer and compiler markers are read as eager execution reads them: `@torch.fx.wrap`,
   `@torch.jit.ignore`, `@torch.compiler.disable` and the like left out, `torch.jit.is_scripting()`,
   `torch.compiler.is_compiling()` and the like replaced by False, module-level `torch.fx.wrap("f")`
   and `self.forward = ...` rebindings left out (the generated forward is the one that runs); run-time
   type checkers (`@beartype`, `@jaxtyped(...)`) and the signature annotations they read go too
   (inductor_eager.py);
1. class-body annotations without a value (`fused_attn: torch.jit.Final[bool]`) are dropped, an
   annotated assignment keeps its value as a plain assignment (not in decorated classes nor
   NamedTuple/TypedDict-like ones, where annotations are fields);
2. in each kept method, a statement is left out when it is irrelevant to the module's state and
   forbidden. Irrelevant: an `assert`, a local computation nothing kept reads, a call that touches
   no `self` and no local, and `self.<attr> = <expr>` for an attribute no kept code reads (the
   generated forward included) that holds no parameter or buffer (the capture's names say so) and
   whose value does not read `self`, and an in-place write of parameter or buffer values that needs
   forbidden code (`conv.weight.data.copy_(repeat(w, ...))`: the judge loads the reference's
   state_dict into ModelNew). Forbidden: the statement, a module-level name it reads
   (transitively) or a local it reads that was assigned from forbidden code, touches a forbidden
   name or a module outside the judge's import allowlist;
3. helper-class methods only their (dropped) forward reached, when forbidden, likewise;
4. a layer constructed from a module outside the allowlist (`Rearrange(...)`, also inside
   `nn.Sequential(...)`/`nn.ModuleList([...])`) where the capture shows no parameter or buffer at
   its path becomes `nn.Identity()`: same position, so Sequential indices and parameter names
   stay the same.

The rules themselves are not changed: this only decides what to carry over. Where the judge's
tables cannot be imported (a bare GPU machine), only step 1 runs. Standard library only.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Iterable

# loaded after inductor_module and inductor_eager (inductor_convert._sibling), as inductor_forward and inductor_kernels are
from autotriton.distillation.inductor_eager import dotted_parts as _dotted, eager_only as _eager_only, import_aliases as _import_aliases
from autotriton.distillation.inductor_module import NOT_CARRIED

__all__ = ["RuleTables", "rule_tables", "prune_reference"]

_MODULE_BASES = {"nn.Module", "torch.nn.Module", "Module"}
_FIELD_BASES = {"NamedTuple", "TypedDict", "BaseModel", "Protocol", "Struct"}  # annotations are fields there
_SELF = {"self", "cls", "super", "__class__"}
_CONTROL = (ast.Return, ast.Raise, ast.Break, ast.Continue, ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom,
            ast.Await)
_CONTAINERS = {"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.modules.container.Sequential",
               "torch.nn.modules.container.ModuleList"}


@dataclass(frozen=True)
class RuleTables:
    """The judge's allow/deny lists this module needs (validation/rules_tables.py)."""

    allowed_imports: frozenset[str]
    forbidden_names: dict[str, str]
    forbidden_builtins: dict[str, str]
    forbidden_attributes: frozenset[str]


def rule_tables() -> RuleTables | None:
    """The judge's tables, or None where autotriton.validation cannot be imported."""
    try:
        from autotriton.validation import (ALLOWED_IMPORTS, FORBIDDEN_ATTRIBUTES, FORBIDDEN_BUILTIN_CALLS,
                                           FORBIDDEN_NAMES)
    except ImportError:
        return None
    return RuleTables(ALLOWED_IMPORTS, FORBIDDEN_NAMES, FORBIDDEN_BUILTIN_CALLS, FORBIDDEN_ATTRIBUTES)


def _loads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _stores(node: ast.AST) -> set[str]:
    out = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
    for n in ast.walk(node):
        if isinstance(n, (ast.Import, ast.ImportFrom)):
            out |= {a.asname or a.name.split(".")[0] for a in n.names}
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
    return out


def _without_forward(stmt: ast.stmt) -> ast.stmt:
    if not isinstance(stmt, ast.ClassDef):
        return stmt
    body = [n for n in stmt.body if not (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in NOT_CARRIED)]
    return ast.ClassDef(name=stmt.name, bases=stmt.bases, keywords=stmt.keywords, body=body,
                        decorator_list=stmt.decorator_list)


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


class _Forbidden:
    """Whether code touches, itself or through the module-level names it reads, something the
    judge's rules forbid (an approximation of validation/rules_safety.py, used only to decide
    what is worth leaving out)."""

    def __init__(self, tree: ast.Module, top_level: dict[str, list[int]], header: dict[str, str], tables: RuleTables):
        self.tables = tables
        self.aliases = _import_aliases(tree, header)
        self.top_level = top_level
        self.tainted: set[str] = set()
        stmts = {i: _without_forward(s) for i, s in enumerate(tree.body)}
        own = {name: any(self.own(stmts[i]) for i in idx) for name, idx in top_level.items()}
        self.tainted = {n for n, bad in own.items() if bad}
        reads = {name: set().union(*(_loads(stmts[i]) for i in idx)) for name, idx in top_level.items()}
        changed = True
        while changed:
            changed = False
            for name, names in reads.items():
                if name not in self.tainted and names & self.tainted:
                    self.tainted.add(name)
                    changed = True

    def module_allowed(self, qualified: str) -> bool:
        return not qualified.startswith(".") and qualified.split(".")[0] in self.tables.allowed_imports

    def _name_forbidden(self, parts: list[str]) -> bool:
        for i in range(len(parts), 0, -1):
            if ".".join(parts[:i]) in self.tables.forbidden_names:
                return True
        return False

    def own(self, node: ast.AST) -> bool:
        for n in ast.walk(node):
            if isinstance(n, ast.Import):
                if any(not self.module_allowed(a.name) or self._name_forbidden(a.name.split(".")) for a in n.names):
                    return True
            elif isinstance(n, ast.ImportFrom):
                module = "." * n.level + (n.module or "")
                if not self.module_allowed(module) or any(self._name_forbidden(f"{module}.{a.name}".split("."))
                                                          for a in n.names):
                    return True
            elif isinstance(n, ast.Attribute):
                if n.attr in self.tables.forbidden_attributes:
                    return True
                parts = _dotted(n)
                if parts and parts[0] in self.aliases and self._name_forbidden(
                        self.aliases[parts[0]].split(".") + parts[1:]):
                    return True
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                if n.id in self.aliases:
                    if self._name_forbidden(self.aliases[n.id].split(".")):
                        return True
                elif n.id in self.tables.forbidden_builtins and n.id not in self.top_level:
                    return True
        return False

    def __call__(self, node: ast.AST) -> bool:
        return self.own(node) or bool(_loads(node) & self.tainted)


class _MethodSlice:
    """Step 2 of the module docstring for one function: which statements stay."""

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, forbidden: _Forbidden, dead_attr: Any,
                 states: set[str] | None = None):
        self.fn, self.forbidden, self.dead_attr, self.states = fn, forbidden, dead_attr, states
        args = fn.args
        self.locals = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
                       if a is not None} | set().union(*(_stores(s) for s in fn.body))
        self.locals -= _SELF
        self.live: set[str] = set()
        self.dropped = 0
        # locals whose value needs forbidden code (flow-insensitive: assigned anywhere from such code)
        self.tainted: set[str] = set()
        assigns = [n for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For))]
        changed = True
        while changed:
            changed = False
            for n in assigns:
                value = n.iter if isinstance(n, ast.For) else n.value
                if value is None or not (forbidden(value) or _loads(value) & self.tainted):
                    continue
                new = _stores(n) - self.tainted - _SELF
                if new:
                    self.tainted |= new
                    changed = True

    def _needs_forbidden(self, s: ast.AST) -> bool:
        return self.forbidden(s) or bool(_loads(s) & self.tainted)

    def _writes_state_value(self, s: ast.stmt) -> bool:
        """An in-place write of a parameter's or buffer's values (`conv.weight.data.copy_(w)`,
        `nn.init.zeros_(self.bias)`, `self.gain.uniform_(...)`, an initialiser handed the module's
        layers): irrelevant to ModelNew, whose state the judge loads from the reference's state_dict."""
        if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)):
            return False
        call = s.value
        name = (_dotted(call.func) or [""])[-1]
        if "init" in name.lower() and call.args:
            # a package's initialiser handed the module's layers: basicsr's
            # `default_init_weights(self.modulation, scale=1, ...)`, `init_weights([self.conv1, self.conv2], 0.1)`
            first = call.args[0]
            layers = first.elts if isinstance(first, (ast.List, ast.Tuple)) else [first]
            if layers and all((_dotted(e) or [""])[0] == "self" and len(_dotted(e) or []) > 1 for e in layers):
                return True
        if not isinstance(call.func, ast.Attribute):
            return False
        if not call.func.attr.endswith("_") or call.func.attr.startswith("_"):
            return False
        parts = _dotted(call.func) or []
        if "init" in parts[:-1] and call.args:  # nn.init.kaiming_uniform_(target, ...)
            target = _dotted(call.args[0])
        else:
            target = _dotted(call.func.value)
        if not target:
            return False
        return ("data" in target[1:] or target[-1] in ("weight", "bias")
                or (target[0] == "self" and self.states is not None and _holds_state(target[1:], self.states)))

    def _is_dead_attribute(self, s: ast.stmt) -> bool:
        if isinstance(s, ast.Assign) and len(s.targets) == 1:
            target, value = s.targets[0], s.value
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            target, value = s.target, s.value
        else:
            return False
        return (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
                and not (_loads(value) & _SELF) and self.dead_attr(target.attr))

    def _simple_relevant(self, s: ast.stmt) -> bool:
        if any(isinstance(n, _CONTROL) for n in ast.walk(s)):
            return True
        if isinstance(s, ast.Assert) or isinstance(s, ast.Pass):
            return False
        if self._is_dead_attribute(s):
            return False
        if self._writes_state_value(s) and self._needs_forbidden(s):
            return False
        if (isinstance(s, (ast.Assign, ast.AnnAssign)) and self._needs_forbidden(s)
                and all(isinstance(t, ast.Name) for t in (s.targets if isinstance(s, ast.Assign) else [s.target]))):
            return bool(_stores(s) & self.live)  # a local computed with forbidden code matters only if read
        if _loads(s) & _SELF:
            return True
        if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if any(not isinstance(n, ast.Name) for t in targets for n in ast.walk(t)
                   if isinstance(n, (ast.Attribute, ast.Subscript))):
                return True  # writes into an object (a local dict, a submodule...)
            return bool(_stores(s) & self.live)
        if isinstance(s, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return bool(_stores(s) & self.live)
        if isinstance(s, ast.Expr):  # a call may mutate what it is given, unless that comes from forbidden code
            given = _loads(s) & self.locals
            return bool(given - self.tainted) if self._needs_forbidden(s) else bool(given)
        return True  # del, anything unforeseen

    @staticmethod
    def _children(s: ast.stmt) -> list[list[ast.stmt]]:
        blocks = [getattr(s, f) for f in ("body", "orelse", "finalbody") if isinstance(getattr(s, f, None), list)]
        blocks += [h.body for h in getattr(s, "handlers", [])]
        blocks += [c.body for c in getattr(s, "cases", [])]
        return blocks

    @staticmethod
    def _header(s: ast.stmt) -> list[ast.AST]:
        out: list[ast.AST] = [getattr(s, f) for f in ("test", "iter", "target", "subject") if getattr(s, f, None)]
        out += list(getattr(s, "items", []))
        out += [h for h in getattr(s, "handlers", [])]  # the handler types (bodies are children)
        return out

    def _relevant(self, s: ast.stmt, memo: dict[int, bool]) -> bool:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not self._children(s):
            r = self._simple_relevant(s)
        else:
            r = False
            for block in self._children(s):
                for c in block:
                    r = self._relevant(c, memo) or r
            header_stores = set().union(*(_stores(h) for h in self._header(s) if not isinstance(h, ast.ExceptHandler)))
            header_stores |= {h.name for h in getattr(s, "handlers", []) if h.name}
            r = r or bool(header_stores & self.live) or isinstance(s, (ast.While,))  # loops may not end
        memo[id(s)] = r
        return r

    def _keep(self, block: list[ast.stmt], memo: dict[int, bool], kept: set[int], loads: set[str]) -> None:
        for s in block:
            if not (memo[id(s)] or not self._needs_forbidden(s)):
                continue
            kept.add(id(s))
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or not self._children(s):
                loads |= _loads(s)
                continue
            for h in self._header(s):
                loads |= _loads(h) if not isinstance(h, ast.ExceptHandler) or h.type is None else _loads(h.type)
            for child in self._children(s):
                self._keep(child, memo, kept, loads)

    def run(self) -> None:
        while True:
            memo: dict[int, bool] = {}
            for s in self.fn.body:
                self._relevant(s, memo)
            kept: set[int] = set()
            loads: set[str] = set()
            self._keep(self.fn.body, memo, kept, loads)
            if loads <= self.live:
                break
            self.live |= loads
        self.fn.body = self._filter(self.fn.body, kept) or [ast.Pass()]

    def _filter(self, block: list[ast.stmt], kept: set[int]) -> list[ast.stmt]:
        out = []
        for s in block:
            if id(s) not in kept:
                self.dropped += 1
                continue
            if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for field in ("body", "orelse", "finalbody"):
                    value = getattr(s, field, None)
                    if isinstance(value, list) and value:
                        setattr(s, field, self._filter(value, kept) or ([ast.Pass()] if field == "body" else []))
                for h in [*getattr(s, "handlers", []), *getattr(s, "cases", [])]:
                    h.body = self._filter(h.body, kept) or [ast.Pass()]
            out.append(s)
        return out


def _strip_annotations(body: list[ast.stmt]) -> tuple[list[ast.stmt], int]:
    """Step 1: class-body annotations without a value go, annotated assignments become plain ones."""
    out, dropped = [], 0
    for s in body:
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
            if s.value is None:
                dropped += 1
                continue
            s = ast.copy_location(ast.Assign(targets=[s.target], value=s.value, lineno=s.lineno), s)
        out.append(s)
    return out, dropped


def _annotations_are_fields(cls: ast.ClassDef) -> bool:
    return bool(cls.decorator_list or cls.keywords) or any(
        (_dotted(b) or [""])[-1] in _FIELD_BASES for b in cls.bases)


def _layer_calls(expr: ast.expr, path: list[str], resolve: Any) -> Iterable[tuple[ast.Call, list[str]]]:
    """Constructor calls in `self.<attr> = expr` whose path under the module is known."""
    if isinstance(expr, ast.IfExp):
        yield from _layer_calls(expr.body, path, resolve)
        yield from _layer_calls(expr.orelse, path, resolve)
        return
    if not isinstance(expr, ast.Call):
        return
    callee = resolve(expr.func)
    if callee in _CONTAINERS:
        items = expr.args
        if callee.endswith("ModuleList"):
            items = expr.args[0].elts if expr.args and isinstance(expr.args[0], (ast.List, ast.Tuple)) else []
        for i, item in enumerate(items):
            if isinstance(item, ast.Starred):
                break
            yield from _layer_calls(item, [*path, str(i)], resolve)
        return
    yield expr, path


def _holds_state(path: list[str], state_names: set[str]) -> bool:
    """Whether some parameter/buffer lies under `path`, wherever the owning module sits."""
    n = len(path)
    for name in state_names:
        parts = name.split(".")
        if any(parts[i:i + n] == path for i in range(len(parts) - n + 1)):
            return True
    return False


def prune_reference(ref: Any, state_names: Iterable[str] | None, forward_src: str, header: dict[str, str],
                    tables: RuleTables | None = None) -> list[str]:
    """Prune `ref` (an inductor_module.ReferenceModel, changed in place) as the module docstring
    says, before its module statements are taken. `state_names`: the capture's parameter and
    buffer names (None: unknown, then nothing holding state may go). Returns notes."""
    notes: list[str] = []
    model = next(n for n in ref.tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    n_eager = _eager_only(ref, model, header)
    if n_eager:
        notes.append(f"left out {n_eager} tracer, compiler or type-checker marker(s) (eager execution: decorators, "
                     "is_scripting(), forward rebinding, signature annotations)")
    helpers = {i: s for i, s in enumerate(ref.tree.body) if isinstance(s, ast.ClassDef) and s is not model}
    ref.body, n_ann = _strip_annotations(ref.body)
    for i, cls in helpers.items():
        if not _annotations_are_fields(cls):
            cls = ast.parse(ast.unparse(cls)).body[0]  # a copy: the tree is the caller's
            cls.body, n = _strip_annotations(cls.body)
            cls.body = cls.body or [ast.Pass()]
            n_ann += n
            helpers[i] = ref.tree.body[i] = cls
    if n_ann:
        notes.append(f"left out {n_ann} class annotation(s) without a value")
    tables = tables or rule_tables()
    if tables is None:
        return notes
    forbidden = _Forbidden(ref.tree, ref.top_level, header, tables)
    states = set(state_names) if state_names is not None else None

    # what kept code reads: attribute names and strings (getattr(self, "x")), forwards left out
    def forward_only(cls: ast.ClassDef) -> set[str]:
        methods = _methods(cls)
        reached, todo = set(), ["forward"]
        while todo:
            name = todo.pop()
            if name in reached or name not in methods:
                continue
            reached.add(name)
            todo += [n.attr for n in ast.walk(methods[name]) if isinstance(n, ast.Attribute)
                     and isinstance(n.value, ast.Name) and n.value.id == "self"]
        others = {n.attr for m, fn in methods.items() if m not in reached for n in ast.walk(fn)
                  if isinstance(n, ast.Attribute)}
        return {m for m in reached - others - {"forward"} if not m.startswith("__")}

    kept_code: list[ast.AST] = [*ref.body, ast.parse(forward_src or "pass")]
    only_forward: dict[int, set[str]] = {}
    for i, stmt in enumerate(ref.tree.body):
        if stmt is model:
            continue
        if i in helpers:
            only_forward[i] = forward_only(helpers[i])
            kept_code += [n for n in helpers[i].body if not (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                                                             and n.name in only_forward[i] | {"forward"})]
        else:
            kept_code.append(stmt)
    reads: set[str] = set()
    for node in kept_code:
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Store):
                reads.add(n.attr)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.isidentifier():
                reads.add(n.value)

    # step 3: forward-only helper methods that are forbidden
    n_methods = 0
    for i, cls in helpers.items():
        gone = {m for m, fn in _methods(cls).items() if m in only_forward[i] and m not in reads and forbidden(fn)}
        if gone:
            cls = ast.parse(ast.unparse(cls)).body[0]
            cls.body = [n for n in cls.body if not (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                                                    and n.name in gone)] or [ast.Pass()]
            helpers[i] = ref.tree.body[i] = cls
            n_methods += len(gone)
    if n_methods:
        notes.append(f"left out {n_methods} helper method(s) only the reference forward used")
    forbidden = _Forbidden(ref.tree, ref.top_level, header, tables)  # taints without those methods

    # step 2: statements of the kept methods
    def dead_attr(attr: str) -> bool:
        return states is not None and attr not in reads and not _holds_state([attr], states)

    def methods_of(body: list[ast.stmt]) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        return [n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name != "forward"]

    dropped = 0
    for i in list(helpers):
        helpers[i] = ref.tree.body[i] = ast.parse(ast.unparse(helpers[i])).body[0]
    for fn in methods_of(ref.body) + [fn for cls in helpers.values() for fn in methods_of(cls.body)]:
        sliced = _MethodSlice(fn, forbidden, dead_attr, states)
        sliced.run()
        dropped += sliced.dropped
    if dropped:
        notes.append(f"left out {dropped} statement(s) of kept methods that only the reference forward needed "
                     "and the rules forbid")

    # step 4: parameter-free layers from modules outside the allowlist
    def resolve(func: ast.expr) -> str:
        parts = _dotted(func) or []
        if not parts or parts[0] not in forbidden.aliases:
            return ""
        return ".".join([forbidden.aliases[parts[0]], *parts[1:]])

    replaced = []
    if states is not None:
        for fn in methods_of(ref.body) + [fn for cls in helpers.values() for fn in methods_of(cls.body)]:
            for s in ast.walk(fn):
                if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Attribute)
                        and isinstance(s.targets[0].value, ast.Name) and s.targets[0].value.id == "self"):
                    continue
                for call, path in _layer_calls(s.value, [s.targets[0].attr], resolve):
                    if len(path) == 1 and path[0] in reads:
                        continue  # kept code uses the object itself: not only a position in a container
                    qualified = resolve(call.func)
                    if not qualified or forbidden.module_allowed(qualified) or _holds_state(path, states):
                        continue
                    replaced.append(f"{'.'.join(path)} ({ast.unparse(call.func)})")
                    call.func = ast.Attribute(value=ast.Name(id="nn", ctx=ast.Load()), attr="Identity", ctx=ast.Load())
                    call.args, call.keywords = [], []
    if replaced:
        notes.append("parameter-free layers from outside the import allowlist -> nn.Identity: " + ", ".join(replaced))
    return notes
