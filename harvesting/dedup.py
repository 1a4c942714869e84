"""Duplicate detection: exact (canonical-source hash) and near (MinHash LSH over token shingles).

Two modules are exact duplicates when they differ only in comments, docstrings, formatting and
the names of arguments and local variables: `canonical_source` renames those canonically before
hashing. Near-duplicates (a changed constant, an extra line) are caught by MinHash LSH over
5-token shingles of the canonical source.
"""

from __future__ import annotations

import ast
import builtins
import io
import tokenize

from datasketch import MinHash, MinHashLSH

from autotriton.hashing import content_key, normalize_source

_BUILTINS = frozenset(dir(builtins))
SHINGLE = 5
NUM_PERM = 128


class _CanonicalNames(ast.NodeTransformer):
    """Renames every function's arguments and local variables to v0, v1, ... in order of first
    appearance. Globals, attributes, keywords at call sites and builtins keep their names."""

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        mapping: dict[str, str] = {}
        args = node.args
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None and a.arg not in ("self", "cls"):
                mapping.setdefault(a.arg, f"v{len(mapping)}")
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                mapping.setdefault(sub.id, f"v{len(mapping)}")
            elif isinstance(sub, (ast.Global, ast.Nonlocal)):
                for name in sub.names:
                    mapping.pop(name, None)
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None and a.arg in mapping:
                a.arg = mapping[a.arg]
        for stmt in node.body:
            for sub in ast.walk(stmt):
                if isinstance(sub, ast.Name) and sub.id in mapping:
                    sub.id = mapping[sub.id]
                elif isinstance(sub, ast.arg) and sub.arg in mapping:
                    sub.arg = mapping[sub.arg]
        # nested functions get their own numbering after the outer one is done
        node.body = [self.visit(s) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else s for s in node.body]
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]


def canonical_source(source: str) -> str:
    """Source without comments, docstrings or layout, with locals and arguments renamed."""
    normalized = normalize_source(source)
    try:
        tree = ast.parse(normalized)
    except SyntaxError:
        return normalized
    return ast.unparse(_CanonicalNames().visit(tree))


def canonical_key(source: str) -> str:
    """The exact-duplicate key of a piece of source."""
    return content_key("canonical", canonical_source(source))


def shingles(source: str, size: int = SHINGLE) -> set[str]:
    tokens: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER, tokenize.STRING):
                tokens.append(tok.string)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        tokens = source.split()
    if len(tokens) < size:
        return {" ".join(tokens)}
    return {" ".join(tokens[i : i + size]) for i in range(len(tokens) - size + 1)}


def minhash(source: str) -> MinHash:
    m = MinHash(num_perm=NUM_PERM, seed=1)
    for s in shingles(canonical_source(source)):
        m.update(s.encode("utf-8"))
    return m


class DuplicateFilter:
    """Remembers what it has seen; `check` says whether a new source is a duplicate of it.

    `seen_keys` may be pre-filled with the canonical keys of earlier harvests (the state file).
    """

    def __init__(self, threshold: float = 0.85, seen_keys: set[str] | None = None):
        self.threshold = threshold
        self.lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
        self.keys: dict[str, str] = {k: "earlier harvest" for k in (seen_keys or set())}
        self._count = 0

    def check(self, source: str, label: str, near: bool = True) -> tuple[str | None, str | None]:
        """(kind, of_what): kind is None (new, now remembered), "duplicate" or "near_duplicate".
        `near=False`: exact duplicates only, and the source is not remembered for near ones."""
        key = canonical_key(source)
        if key in self.keys:
            return "duplicate", self.keys[key]
        if not near:
            self.keys[key] = label
            return None, None
        m = minhash(source)
        similar = self.lsh.query(m)
        if similar:
            return "near_duplicate", sorted(similar)[0]
        self.keys[key] = label
        name = f"{label}#{self._count}"
        self._count += 1
        self.lsh.insert(name, m)
        return None, None
