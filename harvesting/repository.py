"""The repository view of extraction: a repository's files by posix path, decoded and parsed
lazily, with module-path resolution (which file and name an import of the repository points to).

`Repository` is what every harvest source builds (local folders, GitHub, packages, datasets);
`_follow` finds the file that finally defines a name through re-exports.
"""

from __future__ import annotations

import importlib
import importlib.util
import posixpath
import sys
from typing import Callable, Iterable

import libcst as cst

from autotriton.harvesting.parsing import ImportBinding, ParsedFile, _dotted, decode_source, parse_file


def parse_outcome(path: str, text: str | None) -> tuple[ParsedFile | None, tuple[str, str] | None]:
    """(the parse of `text`, None) or (None, (reason, detail)) when it cannot be parsed."""
    if text is None:
        return None, None
    try:
        return parse_file(path, text), None
    except cst.ParserSyntaxError as exc:
        detail = f"line {exc.raw_line}, column {exc.raw_column}: {exc.message}"
        try:  # CPython's parser names the line a reader would fix
            compile(text or "", path, "exec", flags=0x400, dont_inherit=True)  # PyCF_ONLY_AST
        except SyntaxError as py_exc:
            detail = f"line {py_exc.lineno}, column {py_exc.offset}: {py_exc.msg}"
        except (ValueError, RecursionError, MemoryError):
            pass
        return None, ("syntax_error", detail)
    except (RecursionError, ValueError) as exc:
        return None, ("unparseable", f"{type(exc).__name__}: {exc}"[:300])


def _parse_job(path: str, text: str) -> bytes | None:
    """A worker's parse outcome, pickled here so that a tree too deep for pickle's recursion comes
    back as None (parsed again in the harvest's process) instead of failing the pool."""
    import pickle

    try:
        return pickle.dumps(parse_outcome(path, text), protocol=pickle.HIGHEST_PROTOCOL)
    except RecursionError:
        return None


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
        # Facts derived from this repository's parsed nodes, computed once per node (a package's
        # classes share their helpers: torchrl's harvest visited the same base classes' methods
        # thousands of times). Keyed by (kind, id(node)); the value keeps the node, so ids stay unique.
        self.node_facts: dict[tuple[str, int], tuple[object, object]] = {}

    def overlay(self, texts: dict[str, str]) -> "Repository":
        """The same repository with some files' texts replaced. Every other file is this one's:
        read and parsed here, once, whichever of the two asks first (a package's classes each get
        an overlay of their pruned helpers, and reparsing the shared files for each made torchrl's
        harvest spend most of its time in libcst)."""
        other = Repository(self.paths, lambda p: texts[p].encode() if p in texts else self._read(p), self.max_bytes)
        other._parent, other._own = self, frozenset(texts)
        other.errors = dict(self.errors)
        other.external_ok = self.external_ok
        return other

    _parent: "Repository | None" = None
    _own: frozenset[str] = frozenset()

    def text(self, path: str) -> str | None:
        if self._parent is not None and path not in self._own:
            return self._parent.text(path)
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
        if self._parent is not None and path not in self._own:
            return self._parent.parsed(path)
        if path not in self._parsed:
            text = self.text(path) if path in self.paths else None
            self._store_parse(path, *parse_outcome(path, text))
        return self._parsed[path]

    def _store_parse(self, path: str, parsed: ParsedFile | None, error: tuple[str, str] | None) -> None:
        self._parsed[path] = parsed
        if error is not None:
            self.errors[path] = error

    def preparse(self, paths: Iterable[str], jobs: int) -> int:
        """Parse `paths` in `jobs` processes ahead of extraction (libcst's parse and scope analysis
        are the harvest's main CPU cost: ~0.5 s a file, minutes for a large package); the parses
        are the same as `parsed` would make one by one. Returns how many files were parsed here;
        0 when a pool would not pay for itself (one job, or fewer files than two per job)."""
        todo = [p for p in paths if p in self.paths and p not in self._parsed]
        texts = {p: self.text(p) for p in todo}
        todo = [p for p in todo if texts[p] is not None]
        if jobs <= 1 or len(todo) < 2 * jobs:
            return 0
        import multiprocessing
        import pickle
        from concurrent.futures import ProcessPoolExecutor

        from concurrent.futures.process import BrokenProcessPool

        done = 0
        try:
            # spawn: the harvest process may hold torch's thread pools, which do not survive a fork
            with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
                outcomes = pool.map(_parse_job, todo, [texts[p] for p in todo], chunksize=4)
                for path, blob in zip(todo, outcomes):
                    if blob is None:  # too deep to send back: parsed here when needed
                        continue
                    self._store_parse(path, *pickle.loads(blob))
                    done += 1
        except (BrokenProcessPool, OSError):  # a worker killed (memory) or no processes to be had:
            pass  # what is left is parsed here, one file at a time, when extraction reaches it
        return done

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
                    sub is not None and (binding.name not in parsed.defines or self._binds_submodule(target, parsed, binding.name, sub))
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
        sub = self.module_file(f"{binding.module}.{binding.name}", None)
        if target is None and sub is None and not package_available(binding.module.split(".")[0]):
            # a project vendored inside this one, importing its own modules as top-level ones
            # (torchxrayvision/baseline_models/jfhealthcare/model/*.py: `from model.utils import
            # get_norm`): the nearest folder above the importing file that holds them is its root.
            # Not a module installed here: gluonts/torch/model/*.py's `from torch import nn` is
            # torch's, not gluonts/torch's, and gluonts/pydantic.py's `from pydantic import ...`
            # the real pydantic's
            base = self._vendored_root(from_path, binding.module)
            if base is not None:
                target = self.module_file(binding.module, base)
                sub = self.module_file(f"{binding.module}.{binding.name}", base)
        if target is None:
            # a namespace package (a folder without __init__.py, PEP 420) is the repository's own
            # when the submodule named is: `from pytorch_tabnet import sparsemax`
            return sub
        parsed = self.parsed(target)
        if sub is not None and (parsed is None or binding.name not in parsed.defines
                                or self._binds_submodule(target, parsed, binding.name, sub)):
            return sub
        return (target, binding.name)

    def _vendored_root(self, from_path: str, dotted: str) -> str | None:
        """The nearest folder holding `from_path` (its own, then each above it, below the
        repository's root) in which `dotted` is a module file or package, or None."""
        base = posixpath.dirname(from_path)
        while base:
            if self.module_file(dotted, base) is not None:
                return base
            base = posixpath.dirname(base)
        return None

    def _binds_submodule(self, path: str, parsed: ParsedFile, name: str, sub: str) -> bool:
        """Whether `path` (a package's __init__.py) binds `name` only by importing the submodule
        file `sub` (`from . import utils`): then `name` is that module, not a definition to follow."""
        found = False
        for idx in parsed.defines.get(name, []):
            bindings = parsed.imports.get(idx)
            if bindings is None:
                return False  # defined by code of its own
            for b in bindings:
                if b.asname != name:
                    continue
                dotted = f"{b.module}.{b.name}" if b.module and b.name else (b.name or b.module)
                base = _up(path, b.level) if b.level else None
                if self.module_file(dotted, base) != sub:
                    return False
                found = True
        return found


def _up(path: str, level: int) -> str:
    base = posixpath.dirname(path)
    for _ in range(level - 1):
        base = posixpath.dirname(base)
    return base


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
        target = star_import(repo, parsed, idx)[2]
        if target is not None:
            found = _follow(repo, target, name, depth + 1)
            if found is not None:
                return found
    return None


def star_import(repo: Repository, parsed: ParsedFile, idx: int) -> tuple[str, int, str | None]:
    """(module, level, the repository's file it imports, or None for a package's) of the
    `from module import *` at statement `idx` of `parsed`."""
    stmt = parsed.statements[idx]
    assert isinstance(stmt, cst.SimpleStatementLine)
    small = stmt.body[0]
    assert isinstance(small, cst.ImportFrom)
    module = _dotted(small.module) if small.module else ""
    level = len(small.relative)
    return module, level, repo.module_file(module, _up(parsed.path, level) if level else None)


_package_cache: dict[str, bool] = {}


def package_available(top: str) -> bool:
    if top not in _package_cache:
        try:
            _package_cache[top] = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            _package_cache[top] = False
    return _package_cache[top]
