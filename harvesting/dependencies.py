"""Collecting what a class needs: the statements (imports, constants, helpers, classes) one
class reads, transitively, across the repository's files, in dependency order, with the renames
that name clashes and import aliases require.

What cannot be met raises `ExtractionError` with a stable reason (extract.py's docstring lists them).
"""

from __future__ import annotations

import posixpath
import re

from autotriton.harvesting.parsing import ImportBinding, ParsedFile, _line
from autotriton.harvesting.repository import Repository, _follow, star_import

# Code that looks names up in its own module's namespace at run time.
_NAMESPACE_LOOKUP = re.compile(r"\bglobals\(\)|sys\.modules\[__name__\]")
# `gLN = GlobLN`: another name for a class or function, which such a registry also answers to.
_ALIAS = re.compile(r"^[A-Za-z_]\w*\s*=\s*[A-Za-z_]\w*$")


class ExtractionError(Exception):
    """A module cannot be made standalone; `reason` is a short stable id, `detail` says why."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


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
        self._scoped_names: dict[str, set[str]] = {}  # file -> names bound below module level (_scoped)

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
            # `import logging.config` binds `logging`: a read of `logging.getLogger` names only the top
            # (tsl's logger), a read of `logging.config.x` the whole dotted name
            by_top = {id(b) for b in bindings if names is not None and b.asname not in names
                      and b.name is None and "." in b.asname and b.asname.split(".")[0] in names}
            local = [b for b in bindings if names is None or b.asname in names or id(b) in by_top]
            external = []
            for b in local:
                resolved = self.repo.resolve_import(path, b)
                if resolved is None:
                    external.append(b)
                    continue
                if id(b) in by_top:
                    # a module of this repository read through its top name (libcst names the read of
                    # `escnn.group.groups_dict[k]` by `escnn` alone): the chains through it, inlined
                    through = {c for c in (chains or {}).get(b.asname.split(".")[0], ()) if c.startswith(b.asname + ".")}
                    if isinstance(resolved, str) and resolved and through:
                        self._module_object(path, _line(parsed, idx), b, resolved, through, depth)
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
        if _NAMESPACE_LOOKUP.search(parsed.codes[idx]):
            # `globals().get(identifier)`, `getattr(sys.modules[__name__], name)`: a registry of the
            # file's classes and functions by name (Keras-style `get("gLN")`, asteroid's norms and
            # activations); any of them may be asked for, so all of them come along
            for name, where in sorted(parsed.defines.items()):
                for d in where:
                    if d != idx and (type(parsed.statements[d]).__name__ in ("ClassDef", "FunctionDef")
                                     or _ALIAS.match(parsed.codes[d].strip())):
                        self.need(path, d, {name}, depth + 1)
        self._claim(path, idx, parsed)
        self.order.append(key)

    def _need_star(self, path: str, sidx: int, name: str, depth: int) -> None:
        parsed = self.repo.parsed(path)
        assert parsed is not None
        module, level, target = star_import(self.repo, parsed, sidx)
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
        else:
            # defined in none of the repository's files the star imports reach: it comes from a package
            # one of them star-imports (fastai's `from fastcore.all import *` in imports.py, star-imported
            # by torch_core.py): those imports come along
            self._external_stars(target, set())

    def _external_stars(self, path: str, visited: set[str]) -> None:
        """Keep every star import of a package (not of this repository) that `path` makes, or that a
        file of the repository it star-imports makes, in turn."""
        parsed = self.repo.parsed(path)
        if parsed is None or path in visited:
            return
        visited.add(path)
        for sidx in parsed.star_imports:
            module, level, target = star_import(self.repo, parsed, sidx)
            if target is not None:
                self._external_stars(target, visited)
            elif not level and self.repo.external_ok(module.split(".")[0]) and (path, sidx) not in self.seen:
                self.seen.add((path, sidx))
                self.order.append((path, sidx))
                self.import_names[(path, sidx)] = {"*"}

    def _claim(self, path: str, idx: int, parsed: ParsedFile) -> None:
        for name, idxs in parsed.defines.items():
            if idx not in idxs:
                continue
            if name in self.renames.get(path, {}) or name in parsed.star_fills:
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
        """Propagate renames through import links, then turn module chains into names. Where the
        name a use would be renamed to is bound inside a function or class of that file (`from .c
        import biort as _biort` read as `_biort(biort)` in a method whose parameter is `biort`), the
        definition itself takes a fresh name (the alias, when free), so no local shadows it."""
        def final(file: str, name: str) -> str:
            return self.renames.get(file, {}).get(name, name)

        def propagate() -> None:
            for _ in range(10):  # re-exports chain renames through files; a few passes settle them
                changed = False
                for path, local, tpath, tname in self.links:
                    want = final(tpath, tname)
                    if want != local and self.renames.get(path, {}).get(local) != want:
                        self.renames.setdefault(path, {})[local] = want
                        changed = True
                    elif want == local and local in self.renames.get(path, {}):
                        del self.renames[path][local]  # the definition now has this name itself
                        changed = True
                if not changed:
                    break

        propagate()
        for _ in range(10):
            shadowed = self._shadowed(final)
            if not shadowed:
                break
            bound = set().union(*(self._scoped(p) for p in {p for p, _ in self.order}))
            for (dpath, dname), local in shadowed.items():
                fresh, n = local, 2
                while fresh in self.owner or fresh in bound or not fresh.isidentifier():
                    fresh, n = f"{dname}_{n}", n + 1
                self.owner[fresh] = self.owner.get(final(dpath, dname), (dpath, -1))  # taken from now on
                self.renames.setdefault(dpath, {})[dname] = fresh
            propagate()
        self.rewrites: dict[str, dict[str, str]] = {}
        for path, prefix, tpath, tname in self.chain_links:
            self.rewrites.setdefault(path, {})[prefix] = final(tpath, tname)


    def _origin(self, path: str, name: str) -> tuple[str, str]:
        """The file and name that define what `name` in `path` is linked to (re-exports followed)."""
        for _ in range(20):
            nxt = next(((t, n) for p, l, t, n in self.links if p == path and l == name), None)
            if nxt is None or nxt == (path, name):
                break
            path, name = nxt
        return path, name

    def _scoped(self, path: str) -> set[str]:
        """Names bound inside functions, lambdas and classes of the needed statements of `path`."""
        if path not in self._scoped_names:
            parsed = self.repo.parsed(path)
            self._scoped_names[path] = set().union(*(
                _nested_bindings(parsed.codes[idx]) for p, idx in self.order if p == path and parsed is not None))
        return self._scoped_names[path]

    def _shadowed(self, final) -> dict[tuple[str, str], str]:
        """Definitions (file, name) some use of which would be renamed to a name bound locally
        where it is used: {definition: the local alias, a candidate fresh name}."""
        out: dict[tuple[str, str], str] = {}
        # a `pkg.sub.fn` chain becomes the bare final name, so it is shadowed even when it keeps its name
        uses = [(p, l, t, n, False) for p, l, t, n in self.links] + [(p, "_" + n, t, n, True) for p, _c, t, n in self.chain_links]
        for path, local, tpath, tname, chain in uses:
            want = final(tpath, tname)
            if (chain or want != local) and want in self._scoped(path):
                out.setdefault(self._origin(tpath, tname), local)
        return out


def _nested_bindings(code: str) -> set[str]:
    """Names bound below the module level of `code`: parameters, assignments, loop and `with`
    targets, comprehension variables and nested definitions inside functions, lambdas and classes."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for scope in ast.walk(tree):
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            a = scope.args
            names |= {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x is not None}
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            body = scope.body if isinstance(scope.body, list) else [scope.body]
            for stmt in body:
                for node in ast.walk(stmt):
                    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                        names.add(node.id)
                    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        names.add(node.name)
                    elif isinstance(node, ast.alias):
                        names.add((node.asname or node.name).split(".")[0])
    return names


def _is_module_import(parsed: ParsedFile, name: str) -> bool:
    """True when `name` is bound in the file by `import x` / `from . import sub` of a module file."""
    for idx in parsed.defines.get(name, []):
        for b in parsed.imports.get(idx, []):
            if b.asname == name and b.name is None:
                return True
    return False
