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
"""

from __future__ import annotations

import builtins
import functools
import importlib
import importlib.util
import io
import posixpath
import sys
import tokenize
from dataclasses import dataclass, field
from typing import Callable, Iterable

import libcst as cst
from libcst.metadata import GlobalScope, MetadataWrapper, ScopeProvider

BUILTIN_NAMES = frozenset(dir(builtins))
MODEL_NAME = "Model"


class ExtractionError(Exception):
    """A module cannot be made standalone; `reason` is a short stable id, `detail` says why."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass
class ImportBinding:
    """What an import statement binds a name to."""

    module: str  # dotted module ("" for `from . import x`)
    level: int  # 0 = absolute, 1 = `.`, 2 = `..`
    name: str | None  # the imported attribute (None for `import a.b`)
    asname: str  # the bound name

    @property
    def qualified(self) -> str:
        base = self.module if self.name is None else (f"{self.module}.{self.name}" if self.module else self.name)
        return base


@dataclass
class ParsedFile:
    """One parsed file: its top-level statements and the dependencies between them."""

    path: str
    module: cst.Module
    statements: list[cst.CSTNode]
    codes: list[str]
    defines: dict[str, list[int]]  # global name -> indices of the statements that bind it
    reads: list[dict[int, set[str]]]  # per statement: other statement index -> names read from it
    unresolved: list[set[str]]  # per statement: non-builtin names with no binding in the file
    imports: dict[int, list[ImportBinding]]  # import statement index -> bindings
    star_imports: list[int]  # statement indices of `from x import *`
    guarded: set[int]  # statements that are try/if blocks (imports there may fail on purpose)
    classes: dict[str, int]  # class name -> statement index
    chains: list[dict[str, set[str]]]  # per statement: imported name -> dotted chains read through it


def _line(parsed: ParsedFile, index: int) -> int:
    return sum(parsed.module.code_for_node(s).count("\n") for s in parsed.statements[:index]) + 1


def _dotted(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        left = _dotted(node.value)
        return f"{left}.{node.attr.value}" if left else ""
    return ""


class _NodeIndex(cst.CSTVisitor):
    """Maps every node of a statement to the statement's index, and every node inside a dotted
    chain (`pkg.sub.fn`) to the longest chain around it."""

    def __init__(self, index: int, table: dict[int, int], chains: dict[int, str]):
        self.index = index
        self.table = table
        self.chains = chains

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.table[id(node)] = self.index
        if isinstance(node, cst.Attribute) and id(node) not in self.chains:
            chain = _dotted(node)
            if chain:
                inner: cst.BaseExpression = node
                while isinstance(inner, cst.Attribute):
                    self.chains.setdefault(id(inner), chain)
                    inner = inner.value
                self.chains.setdefault(id(inner), chain)
        return True


def _is_main_guard(stmt: cst.CSTNode) -> bool:
    if not isinstance(stmt, cst.If):
        return False
    test = stmt.test
    return (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and test.left.value == "__name__"
    )


def parse_file(path: str, text: str) -> ParsedFile:
    """Parse a file and compute what each top-level statement defines and reads.

    Raises cst.ParserSyntaxError on a syntax error.
    """
    wrapper = MetadataWrapper(cst.parse_module(text))
    module = wrapper.module
    statements = list(module.body)
    table: dict[int, int] = {}
    chain_of: dict[int, str] = {}
    for i, stmt in enumerate(statements):
        stmt.visit(_NodeIndex(i, table, chain_of))
    scopes = wrapper.resolve(ScopeProvider)
    global_scope = next((s for s in set(scopes.values()) if isinstance(s, GlobalScope)), None)

    defines: dict[str, list[int]] = {}
    imports: dict[int, list[ImportBinding]] = {}
    star_imports: list[int] = []
    guarded: set[int] = set()
    classes: dict[str, int] = {}
    for i, stmt in enumerate(statements):
        if _is_main_guard(stmt):
            continue
        if isinstance(stmt, (cst.Try, cst.If, cst.With)):
            guarded.add(i)
        if isinstance(stmt, cst.ClassDef):
            classes[stmt.name.value] = i
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                bindings = _import_bindings(small)
                if bindings is None:
                    continue
                if bindings == "*":
                    star_imports.append(i)
                else:
                    imports.setdefault(i, []).extend(bindings)
    if global_scope is not None:
        for assignment in global_scope.assignments:
            idx = table.get(id(assignment.node))
            if idx is None or _is_main_guard(statements[idx]):
                continue
            bucket = defines.setdefault(assignment.name, [])
            if idx not in bucket:
                bucket.append(idx)
    for bucket in defines.values():
        bucket.sort()

    reads: list[dict[int, set[str]]] = [dict() for _ in statements]
    chains: list[dict[str, set[str]]] = [dict() for _ in statements]
    unresolved: list[set[str]] = [set() for _ in statements]
    for scope in set(scopes.values()):
        for access in scope.accesses:
            idx = table.get(id(access.node))
            if idx is None:
                continue
            name = _dotted(access.node) if isinstance(access.node, (cst.Name, cst.Attribute)) else ""
            referents = [r for r in access.referents if isinstance(r.scope, GlobalScope)]
            if not access.referents:
                head = name.split(".")[0] if name else ""
                if head and head not in BUILTIN_NAMES:
                    unresolved[idx].add(head)
                continue
            for ref in referents:
                ref_idx = table.get(id(ref.node))
                if ref_idx is None or ref_idx == idx:
                    continue
                reads[idx].setdefault(ref_idx, set()).add(ref.name)
                if ref_idx in imports:
                    chains[idx].setdefault(ref.name, set()).add(chain_of.get(id(access.node), ref.name))
    codes = [module.code_for_node(s) for s in statements]
    return ParsedFile(path, module, statements, codes, defines, reads, unresolved, imports, star_imports, guarded, classes, chains)


def _import_bindings(small: cst.BaseSmallStatement) -> list[ImportBinding] | str | None:
    if isinstance(small, cst.Import):
        out = []
        for alias in small.names:
            full = _dotted(alias.name)
            if alias.asname is not None:
                out.append(ImportBinding(full, 0, None, _dotted(alias.asname.name)))
            else:
                # `import a.b` binds `a` (and makes a.b reachable); libcst names it "a.b"
                out.append(ImportBinding(full, 0, None, full))
        return out
    if isinstance(small, cst.ImportFrom):
        module = _dotted(small.module) if small.module is not None else ""
        level = len(small.relative)
        if isinstance(small.names, cst.ImportStar):
            return "*"
        out = []
        for alias in small.names:
            name = _dotted(alias.name)
            asname = _dotted(alias.asname.name) if alias.asname is not None else name
            out.append(ImportBinding(module, level, name, asname))
        return out
    return None


def decode_source(data: bytes, max_bytes: int) -> tuple[str | None, str, str]:
    """(text, reason, detail): text is None when the file cannot be used."""
    if len(data) > max_bytes:
        return None, "file_too_large", f"{len(data)} bytes > harvest.max_file_bytes={max_bytes}"
    if b"\x00" in data[:65536]:
        return None, "binary_file", "contains NUL bytes"
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return None, "bad_encoding", str(exc)
    try:
        text = data.decode("utf-8-sig" if encoding in ("utf-8", "utf-8-sig") else encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        where = f" at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else ""
        return None, "not_utf8", f"cannot decode as {encoding}{where}; re-encode the file as UTF-8"
    return text, "", ""



# ---------------------------------------------------------------------------------------------
# Repository view: files by path, parsed lazily, with module-path resolution.


class Repository:
    """The files of one repository (or directory), addressed by posix paths relative to its root.

    `read(path)` returns the file's bytes or None; it may fetch lazily (GitHub blobs). Files that
    cannot be decoded or parsed are remembered in `errors` (path -> (reason, detail)).
    """

    def __init__(self, paths: Iterable[str], read: Callable[[str], bytes | str | None], max_bytes: int = 1_000_000):
        self.paths = set(paths)
        self._read = read
        self.max_bytes = max_bytes
        # Whether an external package may be imported by an extracted module: installed here, by
        # default; the harvest sets it to "any" when it installs each module's dependencies into
        # an environment of its own (autotriton/environments.py), which then decides.
        self.external_ok: Callable[[str], bool] = package_available
        self._texts: dict[str, str | None] = {}
        self._parsed: dict[str, ParsedFile | None] = {}
        self.errors: dict[str, tuple[str, str]] = {}
        self._roots = self._package_roots()

    def overlay(self, texts: dict[str, str]) -> "Repository":
        """The same repository with some files' texts replaced (parses of the others are shared)."""
        other = Repository(self.paths, lambda p: texts[p].encode() if p in texts else self._read(p), self.max_bytes)
        other._texts = {k: v for k, v in self._texts.items() if k not in texts}
        other._parsed = {k: v for k, v in self._parsed.items() if k not in texts}
        other.errors = dict(self.errors)
        other.external_ok = self.external_ok
        return other

    def text(self, path: str) -> str | None:
        if path not in self._texts:
            data = self._read(path) if path in self.paths else None
            if isinstance(data, str):
                data = data.encode("utf-8", errors="surrogatepass")
            if data is None:
                self._texts[path] = None
                self.errors.setdefault(path, ("unreadable", "the file could not be read"))
            else:
                text, reason, detail = decode_source(data, self.max_bytes)
                self._texts[path] = text
                if text is None:
                    self.errors[path] = (reason, detail)
        return self._texts[path]

    def _package_roots(self) -> list[str]:
        roots = {""}
        for p in self.paths:
            parts = p.split("/")
            if "src" in parts[:-1]:
                roots.add("/".join(parts[: parts.index("src") + 1]))
        return sorted(roots, key=len)

    def parsed(self, path: str) -> ParsedFile | None:
        if path not in self._parsed:
            text = self.text(path) if path in self.paths else None
            try:
                self._parsed[path] = parse_file(path, text) if text is not None else None
            except cst.ParserSyntaxError as exc:
                self._parsed[path] = None
                detail = f"line {exc.raw_line}, column {exc.raw_column}: {exc.message}"
                try:  # CPython's parser names the line a reader would fix
                    compile(text or "", path, "exec", flags=0x400, dont_inherit=True)  # PyCF_ONLY_AST
                except SyntaxError as py_exc:
                    detail = f"line {py_exc.lineno}, column {py_exc.offset}: {py_exc.msg}"
                except (ValueError, RecursionError, MemoryError):
                    pass
                self.errors[path] = ("syntax_error", detail)
            except (RecursionError, ValueError) as exc:
                self._parsed[path] = None
                self.errors[path] = ("unparseable", f"{type(exc).__name__}: {exc}"[:300])
        return self._parsed[path]

    def module_file(self, dotted: str, base_dir: str | None) -> str | None:
        """File of a module: relative to base_dir when given, else absolute under a package root."""
        rel = dotted.replace(".", "/") if dotted else ""
        bases = [base_dir] if base_dir is not None else self._roots
        for base in bases:
            stem = posixpath.join(base, rel) if rel else base
            for candidate in (f"{stem}.py", posixpath.join(stem, "__init__.py")):
                candidate = candidate.lstrip("/")
                if candidate in self.paths:
                    return candidate
        return None

    def resolve_import(self, from_path: str, binding: ImportBinding) -> tuple[str, str] | str | None:
        """Where an import of this repository points: (file, name), a module file (str) for a
        module object, or None when the import is external."""
        if binding.level > 0:
            base = posixpath.dirname(from_path)
            for _ in range(binding.level - 1):
                base = posixpath.dirname(base)
            target = self.module_file(binding.module, base)
            if binding.name is None:
                return target
            sub = self.module_file(f"{binding.module}.{binding.name}" if binding.module else binding.name, base)
            if target is not None:
                parsed = self.parsed(target)
                if parsed is not None and (binding.name in parsed.defines or parsed.star_imports) and not (
                    sub is not None and binding.name not in parsed.defines
                ):
                    return (target, binding.name)
            if sub is not None:
                return sub
            return (target, binding.name) if target is not None else ("", binding.name)
        if not binding.module:
            return None
        if binding.module.split(".")[0] in sys.stdlib_module_names:
            return None  # `from typing import ...` is the standard library even beside a typing.py
        if binding.name is None:
            target = self.module_file(binding.module, None)
            return target
        target = self.module_file(binding.module, None)
        if target is None:
            return None
        sub = self.module_file(f"{binding.module}.{binding.name}", None)
        parsed = self.parsed(target)
        if sub is not None and (parsed is None or binding.name not in parsed.defines):
            return sub
        return (target, binding.name)


# ---------------------------------------------------------------------------------------------
# Which classes are nn.Modules.


@functools.lru_cache(maxsize=4096)
def _torch_module_class(qualified: str) -> bool | None:
    """True when `qualified` (e.g. "torch.nn.Conv2d") names a torch.nn.Module subclass."""
    if not qualified.startswith("torch."):
        return None
    import torch

    obj: object = torch
    for part in qualified.split(".")[1:]:
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return isinstance(obj, type) and issubclass(obj, torch.nn.Module)


def _base_qualified(parsed: ParsedFile, expr: cst.BaseExpression) -> tuple[str, str]:
    """(head name, qualified dotted name through the file's imports) of a base-class expression."""
    dotted = _dotted(expr)
    if not dotted:
        return "", ""
    head, _, rest = dotted.partition(".")
    for bindings in parsed.imports.values():
        for b in bindings:
            if b.level:
                continue
            if b.asname == dotted or (rest and dotted.startswith(b.asname + ".")):
                tail = dotted[len(b.asname):]
                return head, b.qualified + tail
            if b.asname == head:
                return head, b.qualified + ("." + rest if rest else "")
    return head, dotted


class ModuleClassIndex:
    """Decides, with memo, whether a class of the repository is an nn.Module subclass."""

    def __init__(self, repo: Repository):
        self.repo = repo
        self._memo: dict[tuple[str, str], bool] = {}

    def is_module(self, path: str, class_name: str, depth: int = 0) -> bool:
        key = (path, class_name)
        if key in self._memo:
            return self._memo[key]
        self._memo[key] = False  # cycle guard
        result = self._decide(path, class_name, depth)
        self._memo[key] = result
        return result

    def torch_base(self, path: str, class_name: str, depth: int = 0) -> str | None:
        """The qualified torch base class reached through the class's bases, if any."""
        parsed = self.repo.parsed(path)
        if parsed is None or class_name not in parsed.classes or depth > 8:
            return None
        node = parsed.statements[parsed.classes[class_name]]
        assert isinstance(node, cst.ClassDef)
        for arg in node.bases:
            head, qual = _base_qualified(parsed, arg.value)
            if _torch_module_class(qual):
                return qual
            target = self._locate(parsed, head, qual)
            if target is not None:
                found = self.torch_base(target[0], target[1], depth + 1)
                if found:
                    return found
        return None

    def _locate(self, parsed: ParsedFile, head: str, qual: str) -> tuple[str, str] | None:
        if "." not in _dotted_tail(qual, head) and (head in parsed.classes or head in _assign_aliases(parsed)):
            return (parsed.path, head)
        for idx, bindings in parsed.imports.items():
            for b in bindings:
                if b.asname == head and b.name is not None:
                    resolved = self.repo.resolve_import(parsed.path, b)
                    if isinstance(resolved, tuple) and resolved[0]:
                        return _follow(self.repo, resolved[0], resolved[1])
        return None

    def _decide(self, path: str, class_name: str, depth: int) -> bool:
        parsed = self.repo.parsed(path)
        if parsed is None or depth > 8:
            return False
        if class_name not in parsed.classes:
            # `Module = torch.nn.Module` style aliases (kornia.core and others)
            value = _assign_aliases(parsed).get(class_name)
            if value is None:
                return False
            head, qual = _base_qualified(parsed, value)
            if _torch_module_class(qual):
                return True
            target = self._locate(parsed, head, qual)
            return target is not None and target != (path, class_name) and self.is_module(target[0], target[1], depth + 1)
        node = parsed.statements[parsed.classes[class_name]]
        assert isinstance(node, cst.ClassDef)
        for arg in node.bases:
            if arg.keyword is not None:
                continue
            head, qual = _base_qualified(parsed, arg.value)
            known = _torch_module_class(qual)
            if known:
                return True
            target = self._locate(parsed, head, qual)
            if target is not None and self.is_module(target[0], target[1], depth + 1):
                return True
        return False

    def module_classes(self, path: str) -> list[str]:
        parsed = self.repo.parsed(path)
        if parsed is None:
            return []
        return [name for name in parsed.classes if self.is_module(path, name)]


def _assign_aliases(parsed: ParsedFile) -> dict[str, cst.BaseExpression]:
    """Top-level `Name = dotted.name` assignments of a file (class aliases)."""
    cached = getattr(parsed, "_aliases", None)
    if cached is not None:
        return cached
    out: dict[str, cst.BaseExpression] = {}
    for stmt in parsed.statements:
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
            assign = stmt.body[0]
            if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name) and _dotted(assign.value):
                out[assign.targets[0].target.value] = assign.value
    object.__setattr__(parsed, "_aliases", out)
    return out


def _dotted_tail(qual: str, head: str) -> str:
    return qual[len(head):] if qual.startswith(head) else qual


def _follow(repo: Repository, path: str, name: str, depth: int = 0) -> tuple[str, str] | None:
    """The file and name that finally define `name` as seen from `path` (through re-exports)."""
    parsed = repo.parsed(path)
    if parsed is None or depth > 10:
        return None
    for idx in parsed.defines.get(name, []):
        bindings = parsed.imports.get(idx)
        if bindings is None:
            return (path, name)
        for b in bindings:
            if b.asname == name:
                resolved = repo.resolve_import(path, b)
                if resolved is None:
                    return (path, name)  # external import: defined here as far as the repo knows
                if isinstance(resolved, tuple) and resolved[0]:
                    return _follow(repo, resolved[0], resolved[1], depth + 1)
                return None
        return (path, name)
    for idx in parsed.star_imports:
        stmt = parsed.statements[idx]
        assert isinstance(stmt, cst.SimpleStatementLine)
        small = stmt.body[0]
        assert isinstance(small, cst.ImportFrom)
        binding = ImportBinding(_dotted(small.module) if small.module else "", len(small.relative), None, "*")
        target = repo.resolve_import(path, binding) if binding.level else repo.module_file(binding.module, None)
        if isinstance(target, str) and target:
            found = _follow(repo, target, name, depth + 1)
            if found is not None:
                return found
    return None


# ---------------------------------------------------------------------------------------------
# Collecting what a class needs.


@dataclass
class Extracted:
    """A class lifted out of its file with exactly what it needs."""

    path: str
    class_name: str  # its name in `source` (renamed only when another needed definition has the same name)
    line: int
    source: str  # standalone source, class keeps its own name
    files: list[str] = field(default_factory=list)  # every file that contributed a statement


_package_cache: dict[str, bool] = {}


def package_available(top: str) -> bool:
    if top not in _package_cache:
        try:
            _package_cache[top] = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            _package_cache[top] = False
    return _package_cache[top]


class _Collector:
    def __init__(self, repo: Repository, strict: bool = True):
        self.repo = repo
        self.strict = strict  # False: record what cannot be met and go on (a first, pruning pass)
        self.errors: list[ExtractionError] = []
        self.order: list[tuple[str, int]] = []  # statements in dependency post-order
        self.seen: set[tuple[str, int]] = set()
        self.import_names: dict[tuple[str, int], set[str]] = {}  # external import stmt -> needed names
        self.owner: dict[str, tuple[str, int]] = {}  # top-level name -> defining statement
        self.renames: dict[str, dict[str, str]] = {}  # file -> {name: new name} (name clashes, import aliases)
        self.links: list[tuple[str, str, str, str]] = []  # (file, local name, defining file, defined name)
        self.chain_links: list[tuple[str, str, str, str]] = []  # (file, "pkg.sub.fn", defining file, "fn")

    def _module_object(self, path: str, line: int, b: ImportBinding, module_file: str, chains: set[str], depth: int) -> None:
        """`import pkg` / `from . import sub` of this repository, used as `pkg.sub.fn`: inline `fn`
        and rewrite the chain to the bare name."""
        package_dir = posixpath.dirname(module_file) if module_file.endswith("__init__.py") else None
        for chain in sorted(chains):
            rest = chain[len(b.asname) + 1:] if chain.startswith(b.asname + ".") else ""
            parts = rest.split(".") if rest else []
            found = None
            current, current_dir = module_file, package_dir
            for i, part in enumerate(parts):
                target = _follow(self.repo, current, part)
                tparsed = self.repo.parsed(target[0]) if target else None
                if target is not None and tparsed is not None and target[1] in tparsed.defines and not _is_module_import(tparsed, target[1]):
                    found = (target, b.asname + "." + ".".join(parts[: i + 1]))
                    break
                sub = self.repo.module_file(part, current_dir) if current_dir is not None else None
                if sub is None:
                    break
                current = sub
                current_dir = posixpath.dirname(sub) if sub.endswith("__init__.py") else None
            if found is None:
                raise ExtractionError(
                    "relative_import",
                    f"{path}:{line}: `{chain}` uses a module of this repository as an object; it cannot be inlined")
            (tpath, tname), prefix = found
            tparsed = self.repo.parsed(tpath)
            assert tparsed is not None
            for tidx in tparsed.defines[tname]:
                self.need(tpath, tidx, {tname}, depth + 1)
            self.chain_links.append((path, prefix, tpath, tname))

    def need(self, path: str, idx: int, names: set[str] | None, depth: int = 0,
             chains: dict[str, set[str]] | None = None) -> None:
        if self.strict:
            self._need(path, idx, names, depth, chains)
            return
        try:
            self._need(path, idx, names, depth, chains)
        except ExtractionError as exc:
            self.errors.append(exc)

    def _need(self, path: str, idx: int, names: set[str] | None, depth: int = 0,
              chains: dict[str, set[str]] | None = None) -> None:
        parsed = self.repo.parsed(path)
        assert parsed is not None
        key = (path, idx)
        bindings = parsed.imports.get(idx)
        if bindings is not None and idx not in parsed.guarded:
            local = [b for b in bindings if names is None or b.asname in names]
            external = []
            for b in local:
                resolved = self.repo.resolve_import(path, b)
                if resolved is None:
                    external.append(b)
                    continue
                if isinstance(resolved, str) and resolved and chains is not None and b.asname in chains:
                    self._module_object(path, _line(parsed, idx), b, resolved, chains[b.asname], depth)
                    continue
                if isinstance(resolved, str) or not resolved[0]:
                    what = "." * b.level + (b.module or "") + (f" import {b.name}" if b.name else "")
                    raise ExtractionError(
                        "relative_import",
                        f"{path}:{_line(parsed, idx)}: `{what}` is not a file of this repository "
                        "(or imports a module object); it cannot be inlined",
                    )
                target = _follow(self.repo, resolved[0], resolved[1])
                if target is None:
                    raise ExtractionError(
                        "relative_import",
                        f"{path}:{_line(parsed, idx)}: cannot find `{resolved[1]}` in {resolved[0]}",
                    )
                tparsed = self.repo.parsed(target[0])
                assert tparsed is not None
                if target[1] not in tparsed.defines:
                    raise ExtractionError("relative_import", f"{target[0]}: `{target[1]}` is not defined there")
                for tidx in tparsed.defines[target[1]]:
                    self.need(target[0], tidx, {target[1]}, depth + 1)
                # `from .x import A as B`: B is renamed to A's final name in this file's code
                self.links.append((path, b.asname, target[0], target[1]))
            if external:
                for b in external:
                    top = b.module.split(".")[0]
                    if not self.repo.external_ok(top):
                        raise ExtractionError(
                            "missing_dependency",
                            f"{path}:{_line(parsed, idx)}: needs package `{top}`, which is not installed",
                        )
                self.import_names.setdefault(key, set()).update(b.asname for b in external)
                if key not in self.seen:
                    self.seen.add(key)
                    self.order.append(key)
            return
        if key in self.seen:
            return
        self.seen.add(key)
        if depth > 200:
            raise ExtractionError("too_deep", f"{path}: dependency chain deeper than 200 statements")
        for dep_idx, dep_names in sorted(parsed.reads[idx].items()):
            self.need(path, dep_idx, set(dep_names), depth + 1, chains=parsed.chains[idx])
        if parsed.unresolved[idx] and parsed.star_imports:
            for name in sorted(parsed.unresolved[idx]):
                for sidx in parsed.star_imports:
                    self._need_star(path, sidx, name, depth)
        self._claim(path, idx, parsed)
        self.order.append(key)

    def _need_star(self, path: str, sidx: int, name: str, depth: int) -> None:
        parsed = self.repo.parsed(path)
        assert parsed is not None
        stmt = parsed.statements[sidx]
        small = stmt.body[0]  # type: ignore[attr-defined]
        module = _dotted(small.module) if small.module else ""
        level = len(small.relative)
        target = self.repo.module_file(module, _up(path, level)) if level else self.repo.module_file(module, None)
        if target is None:
            if level:
                raise ExtractionError("relative_import", f"{path}: `from {'.' * level}{module} import *` is not in this repository")
            top = module.split(".")[0]
            if not self.repo.external_ok(top):
                raise ExtractionError("missing_dependency", f"{path}: needs package `{top}`, which is not installed")
            if (path, sidx) not in self.seen:
                self.seen.add((path, sidx))
                self.order.append((path, sidx))
                self.import_names[(path, sidx)] = {"*"}
            return
        found = _follow(self.repo, target, name)
        if found is not None:
            tparsed = self.repo.parsed(found[0])
            assert tparsed is not None
            for tidx in tparsed.defines.get(found[1], []):
                self.need(found[0], tidx, {found[1]}, depth + 1)

    def _claim(self, path: str, idx: int, parsed: ParsedFile) -> None:
        for name, idxs in parsed.defines.items():
            if idx not in idxs:
                continue
            if name in self.renames.get(path, {}):
                continue
            prev = self.owner.get(name)
            if prev is not None and prev[0] != path:
                prev_code = self.repo.parsed(prev[0]).codes[prev[1]]  # type: ignore[union-attr]
                if prev_code.strip() != parsed.codes[idx].strip():
                    # two files define `name` differently and both are needed: this file's one
                    # gets a fresh name everywhere this file's code (and its importers) use it
                    n = 2
                    while f"{name}_{n}" in self.owner:
                        n += 1
                    self.renames.setdefault(path, {})[name] = f"{name}_{n}"
                    self.owner[f"{name}_{n}"] = (path, idx)
                    continue
            self.owner.setdefault(name, (path, idx))

    def final_names(self) -> None:
        """Propagate renames through import links, then turn module chains into names."""
        def final(file: str, name: str) -> str:
            return self.renames.get(file, {}).get(name, name)

        for _ in range(10):  # re-exports chain renames through files; a few passes settle them
            changed = False
            for path, local, tpath, tname in self.links:
                want = final(tpath, tname)
                if want != local and self.renames.get(path, {}).get(local) != want:
                    self.renames.setdefault(path, {})[local] = want
                    changed = True
            if not changed:
                break
        self.rewrites: dict[str, dict[str, str]] = {}
        for path, prefix, tpath, tname in self.chain_links:
            self.rewrites.setdefault(path, {})[prefix] = final(tpath, tname)


def _up(path: str, level: int) -> str:
    base = posixpath.dirname(path)
    for _ in range(level - 1):
        base = posixpath.dirname(base)
    return base


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


def _attr_names(node: cst.CSTNode) -> set[str]:
    visitor = _AttrNames()
    node.visit(visitor)
    return visitor.names


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
            reached |= _attr_names(stmt)
    if not helpers:
        return {}
    kept: dict[tuple[str, int], set[int]] = {key: set() for key in helpers}
    for key, cls in helpers.items():  # class-level statements (attributes, docstrings) always stay
        for i, member in enumerate(cls.body.body):
            if not isinstance(member, cst.FunctionDef):
                kept[key].add(i)
                reached |= _attr_names(member)
    changed = True
    while changed:
        changed = False
        for key, cls in helpers.items():
            for i, member in enumerate(cls.body.body):
                if i not in kept[key] and isinstance(member, cst.FunctionDef) and (
                        member.name.value in reached or member.name.value.startswith("__")):
                    kept[key].add(i)
                    reached |= _attr_names(member)
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
    if any(_has_future_annotations(repo.parsed(f)) for f in files):
        # annotations stay unevaluated, as in the files they came from
        import_lines.insert(0, "from __future__ import annotations")
    source = "\n".join(import_lines) + ("\n\n\n" if import_lines else "") + "\n\n\n".join(b.rstrip() for b in body) + "\n"
    final_name = collector.renames.get(path, {}).get(class_name, class_name)
    return Extracted(path=path, class_name=final_name, line=_line(parsed, idx), source=source, files=files)


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


# ---------------------------------------------------------------------------------------------
# Renaming the class to Model.


def _is_module_import(parsed: ParsedFile, name: str) -> bool:
    """True when `name` is bound in the file by `import x` / `from . import sub` of a module file."""
    for idx in parsed.defines.get(name, []):
        for b in parsed.imports.get(idx, []):
            if b.asname == name and b.name is None:
                return True
    return False


class _ChainRewriter(cst.CSTTransformer):
    """Replaces dotted chains (`pkg.sub.fn`) by bare names (`fn`)."""

    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        chain = _dotted(original)
        if chain in self.mapping:
            return cst.Name(self.mapping[chain])
        return updated


class _Renamer(cst.CSTTransformer):
    """Renames bare names (not attributes, keywords or import names)."""

    def __init__(self, mapping: dict[str, str]):
        self.mapping = mapping

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.mapping.get(original.value)
        return updated.with_changes(value=new) if new else updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)

    def leave_ImportAlias(self, original: cst.ImportAlias, updated: cst.ImportAlias) -> cst.ImportAlias:
        return original

    def leave_ImportFrom(self, original: cst.ImportFrom, updated: cst.ImportFrom) -> cst.ImportFrom:
        return original


def rename_to_model(source: str, class_name: str) -> str:
    """The source with `class_name` (and every reference to it) renamed to `Model`; an unrelated
    top-level `Model` is renamed out of the way first."""
    if class_name == MODEL_NAME:
        return source
    module = cst.parse_module(source)
    mapping = {class_name: MODEL_NAME}
    taken = {n for n in _top_names(module)}
    if MODEL_NAME in taken:
        spare = f"{MODEL_NAME}_"
        while spare in taken:
            spare += "_"
        mapping[MODEL_NAME] = spare
    return module.visit(_Renamer(mapping)).code


def rename_names(source: str, mapping: dict[str, str]) -> str:
    """The source with bare names renamed by `mapping` (attributes, keywords, imports untouched)."""
    return cst.parse_module(source).visit(_Renamer(mapping)).code


def _top_names(module: cst.Module) -> set[str]:
    names = set()
    for stmt in module.body:
        if isinstance(stmt, (cst.ClassDef, cst.FunctionDef)):
            names.add(stmt.name.value)
    return names
