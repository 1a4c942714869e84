"""Reading the signatures of a file's classes (parameters, defaults, annotations, inherited
methods) from the AST; shared by input synthesis and the constraint reader. Never executes code."""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from typing import Iterable


@dataclass
class _Param:
    name: str
    annotation: str
    default: str | None  # source of the default, None when required
    kind: str  # "pos", "kwonly", "vararg", "kwarg"


def unwrap_optional(annotation: str) -> str:
    """`Optional[X]` (or `typing.Optional[X]`, quoted or not) -> "X"; any other annotation as it is."""
    text = (annotation or "").strip().strip("'\"")
    return text[text.index("[") + 1:-1].strip() if text.startswith(("Optional[", "typing.Optional[")) and text.endswith("]") else text


def _params(fn: ast.FunctionDef) -> list[_Param]:
    out: list[_Param] = []
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for a, d in zip(positional, defaults):
        out.append(_Param(a.arg, ast.unparse(a.annotation) if a.annotation else "", ast.unparse(d) if d is not None else None, "pos"))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        out.append(_Param(a.arg, ast.unparse(a.annotation) if a.annotation else "", ast.unparse(d) if d is not None else None, "kwonly"))
    if args.vararg:
        out.append(_Param(args.vararg.arg, "", None, "vararg"))
    if args.kwarg:
        out.append(_Param(args.kwarg.arg, "", None, "kwarg"))
    return [p for p in out if p.name not in ("self", "cls")] if out else out


def module_names(tree: ast.Module) -> dict[str, ast.expr]:
    """What the module binds at its top level with a plain `name = value` or `name: type = value`
    (the value's expression)."""
    return {**{n.targets[0].id: n.value for n in tree.body
               if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)},
            **{n.target.id: n.value for n in tree.body
               if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None}}


def _classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def _is_dataclass(cls: ast.ClassDef) -> bool:
    """Decorated `@dataclass`, `@dataclasses.dataclass` or either called (`@dataclass(eq=False)`)."""
    for d in cls.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if (isinstance(target, ast.Name) and target.id == "dataclass") or \
                (isinstance(target, ast.Attribute) and target.attr == "dataclass"):
            return True
    return False


def dataclass_params(classes: dict[str, ast.ClassDef], name: str, depth: int = 0) -> list[_Param] | None:
    """The `__init__` parameters a dataclass generates for class `name` (a module written as
    `@dataclass(eq=False) class CFM(nn.Module)` with fields and a `__post_init__`): its dataclass
    bases' fields first, then its own, in order; `field(init=False)` and `ClassVar`s left out, a
    `field(default=...)` or `field(default_factory=f)` a default. None when it is no dataclass or
    writes its own `__init__`."""
    cls = classes.get(name)
    if cls is None or depth > 10 or not _is_dataclass(cls) or \
            any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in cls.body):
        return None
    fields: dict[str, _Param] = {}
    for base in _source_bases(classes, name):
        for p in dataclass_params(classes, base, depth + 1) or []:
            fields[p.name] = p
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        annotation = ast.unparse(node.annotation)
        if "ClassVar" in annotation:
            continue
        default = ast.unparse(node.value) if node.value is not None else None
        value = node.value
        if isinstance(value, ast.Call) and isinstance(value.func, (ast.Name, ast.Attribute)) and \
                (value.func.id if isinstance(value.func, ast.Name) else value.func.attr) == "field":
            kw = {k.arg: k.value for k in value.keywords}
            if isinstance(kw.get("init"), ast.Constant) and kw["init"].value is False:
                fields.pop(node.target.id, None)
                continue
            default = ast.unparse(kw["default"]) if "default" in kw else \
                f"({ast.unparse(kw['default_factory'])})()" if "default_factory" in kw else None
        fields[node.target.id] = _Param(node.target.id, annotation, default, "pos")
    return list(fields.values())


def _source_bases(classes: dict[str, ast.ClassDef], name: str) -> list[str]:
    """The bases of class `name` that are classes of the source, in order."""
    cls = classes.get(name)
    return [b.id for b in cls.bases if isinstance(b, ast.Name) and b.id in classes] if cls is not None else []


def _method(classes: dict[str, ast.ClassDef], name: str, method: str) -> ast.FunctionDef | None:
    """`method` as class `name` has it: its own, or the first found in its bases of the source."""
    found = _method_owner(classes, name, method)
    return found[1] if found is not None else None


def _method_owner(classes: dict[str, ast.ClassDef], name: str, method: str,
                  depth: int = 0) -> tuple[str, ast.FunctionDef] | None:
    """(the class of the source that defines it, the method) for `name`'s `method`, as `_method` finds it."""
    cls = classes.get(name)
    if cls is None or depth > 10:
        return None
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == method:
            return name, node
    for base in cls.bases:
        if isinstance(base, ast.Name):
            found = _method_owner(classes, base.id, method, depth + 1)
            if found is not None:
                return found
    return None


@functools.lru_cache(maxsize=32)
def model_params(standalone: str, method: str) -> tuple[_Param, ...] | None:
    """The parameters of `Model.<method>` in `standalone` (its own or a base's of the source), or None
    when it does not parse or has none: read once per source by the harvester's error readers
    (parameter_named_in, optional_input_named_in, module_arguments.tensor_argument) on each failed guess."""
    try:
        fn = _method(_classes(ast.parse(standalone)), "Model", method)
    except SyntaxError:
        return None
    return tuple(_params(fn)) if fn is not None else None


def parameter_named_in(standalone: str, detail: str, given: Iterable[str] = ()) -> str | None:
    """The first constructor parameter of `Model` defaulting to None (and not in `given`) that the
    last line of an error names: braindecode's "n_chans could not be inferred. Either specify
    n_chans or chs_info." raised by a base class's property, which no reading of __init__ sees.
    Passed to synthesize's `demand`, it is guessed like a required one."""
    lines = [line for line in detail.strip().splitlines() if line.strip()]
    params = model_params(standalone, "__init__")
    if not lines or params is None:
        return None
    optional = {p.name for p in params if p.kind == "pos" and p.default == "None"} - set(given)
    for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", lines[-1]):
        if word in optional and len(word) > 2:
            return word
    if _NONE_LAYER.search(lines[-1]):
        # `self.node_emb(...)` on a None the constructor left (`if n_nodes is not None: self.node_emb = ...
        # else: self.register_parameter('node_emb', None)`): the parameter its building depends on
        for attribute in re.findall(r"self\.(\w+)\s*[(.]", " ".join(lines[-4:-1])):
            guards = _guarding_parameters(standalone, attribute, frozenset(optional))
            if guards:
                return guards[0]
    return None


_NONE_LAYER = re.compile(r"'NoneType' object (?:is not callable|has no attribute)")


@functools.lru_cache(maxsize=32)
def _guarding_parameters(standalone: str, attribute: str, optional: frozenset[str]) -> tuple[str, ...]:
    """The optional (None-defaulting) parameters of Model.__init__ that an `if` or a conditional
    expression tests where __init__ sets `self.<attribute>` to something other than None, in order."""
    try:
        init = _method(_classes(ast.parse(standalone)), "Model", "__init__")
    except SyntaxError:
        return ()
    if init is None:
        return ()
    found: list[str] = []

    def tested(test: ast.expr) -> None:
        found.extend(n.id for n in ast.walk(test) if isinstance(n, ast.Name) and n.id in optional and n.id not in found)

    def sets(stmt: ast.stmt) -> ast.expr | None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
        hit = any(isinstance(t, ast.Attribute) and t.attr == attribute and isinstance(t.value, ast.Name)
                  and t.value.id == "self" for t in targets)
        value = getattr(stmt, "value", None)
        return value if hit and not (isinstance(value, ast.Constant) and value.value is None) else None

    def walk(body: list[ast.stmt], tests: list[ast.expr]) -> None:
        for stmt in body:
            value = sets(stmt)
            if value is not None:
                for test in tests:
                    tested(test)
                if isinstance(value, ast.IfExp):
                    tested(value.test)
            if isinstance(stmt, ast.If):
                walk(stmt.body, tests + [stmt.test])
                walk(stmt.orelse, tests + [stmt.test])
            elif isinstance(stmt, (ast.For, ast.While, ast.With, ast.Try)):
                for part in ("body", "orelse", "finalbody"):
                    walk(getattr(stmt, part, []) or [], tests)
                for handler in getattr(stmt, "handlers", []):
                    walk(handler.body, tests)
    walk(init.body, [])
    return tuple(found)


# forward used an input left at None as a tensor: `tgt + query_pos`, `pos.transpose(0, 1)`, `mask[:, None]`
_NONE_USED = re.compile(r"unsupported operand type\(s\) for [^:]+: '(?:Tensor|NoneType)' and '(?:NoneType|Tensor)'|"
                        r"'NoneType' object (?:has no attribute|is not subscriptable)|"
                        r"must be Tensor, not NoneType")


def optional_input_named_in(standalone: str, detail: str, given: Iterable[str] = ()) -> str | None:
    """For an error that says forward used None as a tensor, the optional input (a positional
    parameter of Model.forward defaulting to None, not in `given`) to give: the first the error's
    last lines name (the traceback's line of code, `q = k = tgt + query_pos`), else the first one.
    DETR-style layers add their positional encodings unguarded (`query_pos=None` in the signature).
    Any other error gives the optional input its message names, if any (a metric-learning loss's
    "labels are required for this loss function")."""
    params = model_params(standalone, "forward")
    if params is None:
        return None
    optional = [p.name for p in params if p.kind == "pos" and p.default == "None" and p.name not in set(given)]
    if not optional:
        return None
    lines = [line for line in detail.strip().splitlines() if line.strip()][-4:]
    if not _NONE_USED.search(detail):
        # the package's own message names the input it wants ("labels are required for this loss function")
        said = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", lines[-1] if lines else ""))
        return next((name for name in optional if name in said and len(name) > 2), None)
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", " ".join(lines)))
    return next((name for name in optional if name in words), optional[0])


def class_with_attributes(classes: dict[str, ast.ClassDef], attributes: set[str]) -> str | None:
    """The first module class of the source (one with a forward; not Model) whose body sets every
    one of `attributes` (`expansion = 4`), or None: for a parameter the code builds and reads
    (`block(self.inplanes, planes)`, `block.expansion`), a class to pass."""
    if not attributes:
        return None
    for name, cls in classes.items():
        if name == "Model" or _method(classes, name, "forward") is None:
            continue
        own = {t.id for stmt in cls.body if isinstance(stmt, (ast.Assign, ast.AnnAssign))
               for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]) if isinstance(t, ast.Name)}
        if attributes <= own:
            return name
    return None


def torch_params(dotted: str) -> list[_Param]:
    """The parameters of a torch function called by its full name (`torch.stft`, `torch.nn.functional.pad`),
    read from its signature; none for anything else or a builtin without one."""
    import importlib
    import inspect

    path = dotted.split(".")
    if len(path) < 2 or path[0] != "torch" or not all(part.isidentifier() for part in path):
        return []
    try:
        obj = importlib.import_module("torch")
        for part in path[1:]:
            obj = getattr(obj, part)
        signature = inspect.signature(obj)
    except (ImportError, AttributeError, TypeError, ValueError):
        return []
    kinds = {inspect.Parameter.POSITIONAL_ONLY: "pos", inspect.Parameter.POSITIONAL_OR_KEYWORD: "pos",
             inspect.Parameter.KEYWORD_ONLY: "kwonly"}
    return [_Param(p.name, "", None if p.default is inspect.Parameter.empty else repr(p.default), kinds[p.kind])
            for p in signature.parameters.values() if p.kind in kinds]
