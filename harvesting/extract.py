"""Extraction: every nn.Module subclass of a file becomes a standalone piece of source.

A file is parsed with libcst; its top-level statements are the units of extraction. libcst's
scope analysis tells, for each statement, which top-level statements it reads (imports,
constants, helper functions and classes). Starting from one nn.Module class, the statements it
needs are collected transitively, and nothing else. Names imported from other files of the same
repository (relative imports, or absolute imports of the repository's own package) are followed
into those files, so a block built from the repository's own layers still stands alone.

What cannot be made standalone is reported with a reason instead of a module:
`relative_import` (a sibling file that is not in the repository, or a module object imported
relatively), `missing_dependency` (an external package that is not installed), `name_conflict`
(two different definitions of one name would be needed), `no_forward`.

The steps, one file each (every name below stays importable from here):
    parsing.py         one file's statements, what each defines and reads, its imports
    repository.py      `Repository`: a repository's files, parsed lazily, imports resolved to files
    module_classes.py  `ModuleClassIndex`: which classes are nn.Modules (finding what to extract)
    dependencies.py    the statements a class needs, transitively, and `ExtractionError`
    extract.py         (this file) `extract_class`: pruning helpers, assembling the standalone source
    renaming.py        `rename_to_model`, `rename_names`: the class to Model, names by a mapping
"""

from __future__ import annotations

import ast
import heapq

from dataclasses import dataclass, field
from functools import lru_cache

import libcst as cst

from autotriton.harvesting.dependencies import ExtractionError, _Collector
from autotriton.harvesting.module_classes import ModuleClassIndex
from autotriton.harvesting.parsing import BUILTIN_NAMES, ImportBinding, ParsedFile, _dotted, _line, decode_source, parse_file
from autotriton.harvesting.renaming import MODEL_NAME, _ChainRewriter, _Renamer, rename_names, rename_to_model
from autotriton.harvesting.repository import Repository, package_available

__all__ = [
    "extract_class", "Extracted", "ExtractionError", "Repository", "ModuleClassIndex", "rename_to_model", "rename_names",
    "MODEL_NAME", "BUILTIN_NAMES", "ImportBinding", "ParsedFile", "parse_file", "decode_source", "package_available",
]


@dataclass
class Extracted:
    """A class lifted out of its file with exactly what it needs."""

    path: str
    class_name: str  # its name in `source` (renamed only when another needed definition has the same name)
    line: int
    source: str  # standalone source, class keeps its own name
    files: list[str] = field(default_factory=list)  # every file that contributed a statement


def _trim_import(stmt: cst.SimpleStatementLine, names: set[str]) -> str:
    """The import statement keeping only the aliases that bind one of `names`."""
    if "*" in names:
        return cst.Module(body=[stmt]).code.strip()
    kept_smalls = []
    for small in stmt.body:
        if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(getattr(small, "names", None), cst.ImportStar):
            aliases = []
            for alias in small.names:  # type: ignore[union-attr]
                bound = _dotted(alias.asname.name) if alias.asname is not None else _dotted(alias.name)
                if bound in names:
                    aliases.append(alias.with_changes(comma=cst.MaybeSentinel.DEFAULT))
            if aliases:
                kept_smalls.append(small.with_changes(names=aliases, lpar=None, rpar=None) if isinstance(small, cst.ImportFrom) else small.with_changes(names=aliases))
    if not kept_smalls:
        return ""
    line = stmt.with_changes(body=[s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) for s in kept_smalls], leading_lines=[])
    return cst.Module(body=[line]).code.strip()


def extract_class(repo: Repository, path: str, class_name: str, prune: bool = True) -> Extracted:
    """The standalone source of one class: exactly the imports, constants, helper functions and
    classes it needs, transitively, in dependency order. Raises ExtractionError.

    With `prune`, methods of helper classes (bases, mixins, sub-layers; never the class itself)
    that no kept code can reach by attribute name are dropped first, with what only they needed
    (e.g. a mixin's image-saving method and its I/O imports)."""
    if prune:
        overrides = _pruned_helpers(repo, path, class_name)
        if overrides:
            try:
                return _extract(repo.overlay(overrides), path, class_name)
            except ExtractionError as pruned_error:
                try:
                    return _extract(repo, path, class_name)
                except ExtractionError:
                    raise pruned_error from None
    return _extract(repo, path, class_name)


_MODULE_PROTOCOL: frozenset[str] | None = None


def _protocol() -> frozenset[str]:
    """Method names torch or Python may call without naming them in the code we keep."""
    global _MODULE_PROTOCOL
    if _MODULE_PROTOCOL is None:
        import torch

        _MODULE_PROTOCOL = frozenset(dir(torch.nn.Module)) | {"forward"}
    return _MODULE_PROTOCOL


class _AttrNames(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.names.add(node.attr.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:  # getattr(self, "name")
        value = node.evaluated_value
        if isinstance(value, str) and value.isidentifier():
            self.names.add(value)


def _attr_names(node: cst.CSTNode, facts: dict[tuple[str, int], tuple[object, object]] | None = None) -> frozenset[str]:
    """The attribute names (and identifier strings) `node` mentions; with `facts` (a repository's
    node_facts) computed once per node."""
    key = ("attr_names", id(node))
    if facts is not None and key in facts:
        return facts[key][1]  # type: ignore[return-value]
    visitor = _AttrNames()
    node.visit(visitor)
    names = frozenset(visitor.names)
    if facts is not None:
        facts[key] = (node, names)
    return names


def _pruned_helpers(repo: Repository, path: str, class_name: str) -> dict[str, str]:
    """New texts of the files whose needed helper classes lose unreachable methods ({} if none)."""
    parsed = repo.parsed(path)
    if parsed is None or class_name not in parsed.classes:
        return {}
    target = (path, parsed.classes[class_name])
    collector = _Collector(repo, strict=False)
    collector.need(path, target[1], None)
    helpers: dict[tuple[str, int], cst.ClassDef] = {}
    reached: set[str] = set(_protocol())
    for key in collector.order:
        if key in collector.import_names:
            continue
        fparsed = repo.parsed(key[0])
        stmt = fparsed.statements[key[1]] if fparsed is not None else None
        if isinstance(stmt, cst.ClassDef) and key != target:
            helpers[key] = stmt
        elif stmt is not None:
            reached |= _attr_names(stmt, repo.node_facts)
    if not helpers:
        return {}
    kept: dict[tuple[str, int], set[int]] = {key: set() for key in helpers}
    for key, cls in helpers.items():  # class-level statements (attributes, docstrings) always stay
        for i, member in enumerate(cls.body.body):
            if not isinstance(member, cst.FunctionDef):
                kept[key].add(i)
                reached |= _attr_names(member, repo.node_facts)
    changed = True
    while changed:
        changed = False
        for key, cls in helpers.items():
            for i, member in enumerate(cls.body.body):
                if i not in kept[key] and isinstance(member, cst.FunctionDef) and (
                        member.name.value in reached or member.name.value.startswith("__")):
                    kept[key].add(i)
                    reached |= _attr_names(member, repo.node_facts)
                    changed = True
    by_file: dict[str, dict[int, cst.ClassDef]] = {}
    for key, cls in helpers.items():
        if len(kept[key]) == len(cls.body.body):
            continue
        body = [m for i, m in enumerate(cls.body.body) if i in kept[key]] or [cst.SimpleStatementLine([cst.Pass()])]
        by_file.setdefault(key[0], {})[key[1]] = cls.with_changes(body=cls.body.with_changes(body=body))
    overrides: dict[str, str] = {}
    for fpath, replaced in by_file.items():
        fparsed = repo.parsed(fpath)
        assert fparsed is not None
        statements = [replaced.get(i, stmt) for i, stmt in enumerate(fparsed.statements)]
        overrides[fpath] = fparsed.module.with_changes(body=statements).code
    return overrides


def _extract(repo: Repository, path: str, class_name: str) -> Extracted:
    parsed = repo.parsed(path)
    if parsed is None or class_name not in parsed.classes:
        raise ExtractionError("not_found", f"{path}: no class {class_name}")
    idx = parsed.classes[class_name]
    # the file's own classes its callers hand it (`ResNet(BasicBlock, [2, 2, 2, 2])` in a factory
    # function): kept beside it, so a guess can pass one where the class builds its parameter
    # (`block(self.inplanes, planes)`, `block.expansion`); left out when one cannot stand alone
    passed = _passed_classes(parsed, class_name)
    collector = _Collector(repo)
    try:
        for sidx in [idx, *passed]:
            collector.need(path, sidx, None)
    except ExtractionError:
        if not passed:
            raise
        collector = _Collector(repo)
        collector.need(path, idx, None)
    collector.final_names()
    import_lines: list[str] = []
    body: list[str] = []
    files: list[str] = []
    for fpath, sidx in collector.order:
        fparsed = repo.parsed(fpath)
        assert fparsed is not None
        if fpath not in files:
            files.append(fpath)
        if (fpath, sidx) in collector.import_names:
            stmt = fparsed.statements[sidx]
            assert isinstance(stmt, cst.SimpleStatementLine)
            code = _trim_import(stmt, collector.import_names[(fpath, sidx)])
            if code and code not in import_lines:
                import_lines.append(code)
            continue
        code = _strip_leading(fparsed.codes[sidx])
        if collector.rewrites.get(fpath) or collector.renames.get(fpath):
            tree = cst.parse_module(code)
            if collector.rewrites.get(fpath):
                tree = tree.visit(_ChainRewriter(collector.rewrites[fpath]))
            if collector.renames.get(fpath):
                tree = tree.visit(_Renamer(collector.renames[fpath]))
            code = tree.code
        if code not in body:
            body.append(code)
    future = any(_has_future_annotations(repo.parsed(f)) for f in files)
    body = _definition_order(body, evaluates_annotations=not future)
    if future:
        # annotations stay unevaluated, as in the files they came from
        import_lines.insert(0, "from __future__ import annotations")
    source = "\n".join(import_lines) + ("\n\n\n" if import_lines else "") + "\n\n\n".join(b.rstrip() for b in body) + "\n"
    final_name = collector.renames.get(path, {}).get(class_name, class_name)
    return Extracted(path=path, class_name=final_name, line=_line(parsed, idx), source=source, files=files)


def _passed_classes(parsed: ParsedFile, class_name: str, limit: int = 2) -> list[int]:
    """Statement indices of the file's classes (at most `limit`, first found first) that the file's
    own code passes to a call of `class_name` as an argument: `ResNet(BasicBlock, [2, 2, 2, 2])`."""
    found: list[int] = []
    for code in parsed.codes:
        if class_name + "(" not in code:
            continue
        try:
            tree = ast.parse(code.strip())
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == class_name:
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    if isinstance(arg, ast.Name) and arg.id != class_name and arg.id in parsed.classes:
                        cidx = parsed.classes[arg.id]
                        if cidx not in found:
                            found.append(cidx)
                        if len(found) >= limit:
                            return found
    return found


def _definition_order(body: list[str], *, evaluates_annotations: bool) -> list[str]:
    """`body` (top-level statements in the collector's dependency order) reordered, stably, so that
    what a statement evaluates when it runs comes first: a class's bases, keywords and
    decorators, a function's decorators and defaults (and annotations, unless they stay
    unevaluated), an assignment's value. The collector also counts names read inside function
    bodies, which run later; where those make a cycle (zuko: `LazyTransform.inv()` returns a
    `LazyInverse`, a subclass of LazyTransform) its post-order can put a subclass first."""
    facts = [_statement_facts(code, evaluates_annotations) for code in body]
    if any(f is None for f in facts):
        return body
    owner: dict[str, int] = {}
    for i, (defines, _) in enumerate(facts):
        for name in defines:
            owner.setdefault(name, i)
    # Kahn's algorithm, taking the earliest ready statement each time (what a scan of the statements
    # left in order would take, in O(n log n) instead of O(n^3): a package of a few thousand
    # statements (torchrl) spent minutes here per class); a cycle gives way at its earliest member.
    waiting = [0] * len(body)
    dependants: list[list[int]] = [[] for _ in body]
    for i, (_, needs) in enumerate(facts):
        for j in {owner[n] for n in needs if owner.get(n, i) != i}:
            waiting[i] += 1
            dependants[j].append(i)
    ready = [i for i, w in enumerate(waiting) if w == 0]
    everything = list(range(len(body)))  # already a heap: the earliest left when a cycle blocks
    placed: set[int] = set()
    order: list[int] = []
    while len(order) < len(body):
        while ready and ready[0] in placed:
            heapq.heappop(ready)
        if ready:
            i = heapq.heappop(ready)
        else:
            while everything[0] in placed:
                heapq.heappop(everything)
            i = heapq.heappop(everything)
        placed.add(i)
        order.append(i)
        for k in dependants[i]:
            waiting[k] -= 1
            if waiting[k] == 0 and k not in placed:
                heapq.heappush(ready, k)
    return [body[i] for i in order]


@lru_cache(maxsize=65536)
def _statement_facts(code: str, evaluates_annotations: bool) -> tuple[frozenset[str], frozenset[str]] | None:
    """(names a top-level chunk defines, names it reads when it runs), None when it does not parse;
    cached: the classes of one package share most of their dependency closures."""
    try:
        nodes = ast.parse(code).body
    except SyntaxError:
        return None
    return (frozenset(n for node in nodes for n in _top_names(node)),
            frozenset(n for node in nodes for n in _definition_time_reads(node, evaluates_annotations)))


def _top_names(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node.name]
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    return []


def _definition_time_reads(node: ast.stmt, annotations: bool) -> list[str]:
    """Names `node` reads when it is executed (not those its function bodies read later)."""
    exprs: list[ast.AST] = []
    if isinstance(node, ast.ClassDef):
        exprs = [*node.bases, *(k.value for k in node.keywords), *node.decorator_list]
        for member in node.body:  # class-level statements run with the class
            exprs += [member] if not isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                exprs += _signature_exprs(member, annotations)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        exprs = _signature_exprs(node, annotations)
    else:
        exprs = [node]
    return [n.id for e in exprs for n in ast.walk(e) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def _signature_exprs(fn: ast.FunctionDef | ast.AsyncFunctionDef, annotations: bool) -> list[ast.AST]:
    a = fn.args
    out: list[ast.AST] = [*fn.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d is not None)]
    if annotations:
        params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p is not None)]
        out += [p.annotation for p in params if p.annotation is not None]
        out += [fn.returns] if fn.returns is not None else []
    return out


def _has_future_annotations(parsed: ParsedFile | None) -> bool:
    if parsed is None:
        return False
    for stmt in parsed.statements[:5]:
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.ImportFrom):
            node = stmt.body[0]
            if _dotted(node.module) == "__future__" and not isinstance(node.names, cst.ImportStar):
                if any(_dotted(a.name) == "annotations" for a in node.names):
                    return True
    return False


def _strip_leading(code: str) -> str:
    """Statement code without the blank lines and comments that lead into it."""
    lines = code.splitlines()
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("#")):
        lines.pop(0)
    return "\n".join(lines)
