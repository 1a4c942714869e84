"""Parsing one source file for extraction: its top-level statements, the names each defines and
reads (libcst scope analysis), and the imports that bind names.

`parse_file` gives the `ParsedFile` that the repository view (repository.py) caches per path and
the dependency collector (dependencies.py) walks; `decode_source` turns a file's bytes into text
or names why it cannot be used (too large, binary, not UTF-8).
"""

from __future__ import annotations

import builtins
import io
import re
import tokenize
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import GlobalScope, MetadataWrapper, ScopeProvider


BUILTIN_NAMES = frozenset(dir(builtins))


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
    # names a star import binds that this file only fills (`defaults.activation = nn.ReLU`): one object,
    # shared with every file that fills it, never renamed apart
    star_fills: frozenset[str] = frozenset()


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


def _access_chains(node: cst.CSTNode, name: str, chain_of: dict[int, str]) -> list[str]:
    """The dotted chains an access of the imported `name` reads through it. A string annotation
    (`-> 'escnn.nn.GeometricTensor'`) is an access too, whose node is the string: its chains are
    the ones written inside it (the bare name said the module object itself was used)."""
    if isinstance(node, cst.SimpleString):
        try:
            text = node.evaluated_value
        except Exception:  # noqa: BLE001  (an odd literal: fall back to the bare name)
            text = ""
        if isinstance(text, str):
            found = re.findall(rf"(?<![\w.]){re.escape(name)}(?:\.\w+)*", text)
            if found:
                return found
    return [chain_of.get(id(node), name)]


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
    wrapper = MetadataWrapper(cst.parse_module(text), unsafe_skip_copy=True)  # a fresh tree, shared with no one: no deep copy
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
    # `Activations.relu = nn.ReLU`, `NORMS["bn"] = nn.BatchNorm2d`, `REGISTRY.update(...)` at the top
    # level: whoever needs `Activations` needs the statements that fill it, not only `Activations = CFG()`
    fills: dict[str, list[int]] = {}
    star_filled: set[str] = set()
    for i, stmt in enumerate(statements):
        if not isinstance(stmt, cst.SimpleStatementLine) or i in imports:
            continue
        for small in stmt.body:
            for name in _mutated_globals(small):
                bucket = defines.get(name)
                if bucket and i not in bucket and not all(d in imports for d in bucket):
                    bucket.append(i)
                    fills.setdefault(name, []).append(i)
                elif bucket is None and star_imports and name not in BUILTIN_NAMES:
                    # a name a star import binds, filled here (fastai's torch_core.py: `defaults.activation =
                    # nn.ReLU` on fastcore's `defaults`): this file's fills are what importers of it need
                    defines[name] = [i]
                    fills[name] = [i]
                    star_filled.add(name)
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
                    chains[idx].setdefault(ref.name, set()).update(_access_chains(access.node, ref.name, chain_of))
    for idx, read in enumerate(reads):
        # names read from a binding here, or (a star import's) from none: the fills of either
        for name in sorted({n for names in read.values() for n in names if n in fills} | (unresolved[idx] & fills.keys())):
            for j in fills[name]:
                # a reader needs every filling statement; a filling statement the ones before it (file order)
                if j != idx and (idx not in fills[name] or j < idx):
                    read.setdefault(j, set()).add(name)
    codes = [module.code_for_node(s) for s in statements]
    return ParsedFile(path, module, statements, codes, defines, reads, unresolved, imports, star_imports, guarded, classes, chains,
                      frozenset(star_filled))


# Methods that fill a container or registry in place.
_FILLING = {"update", "append", "extend", "add", "insert", "setdefault", "register", "register_module", "__setitem__"}


def _base_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c`, `a["k"].b` -> "a"."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _mutated_globals(small: cst.BaseSmallStatement) -> list[str]:
    """The names a top-level small statement fills in place: `x.attr = v`, `x[k] = v`, `x.attr += v`,
    `x.update(...)` (a plain `x = v` defines x and is found by the scope analysis)."""
    targets: list[cst.BaseExpression] = []
    if isinstance(small, cst.Assign):
        targets = [t.target for t in small.targets]
    elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
        targets = [small.target]
    elif isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and isinstance(small.value.func, cst.Attribute) \
            and small.value.func.attr.value in _FILLING:
        targets = [small.value.func]
    out = []
    for t in targets:
        if isinstance(t, (cst.Attribute, cst.Subscript)):
            name = _base_name(t)
            if name is not None and name not in out:
                out.append(name)
    return out


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
