"""Dropping what a standalone module never uses, for modules too long to be problems.

Real packages give their `nn.Module`s methods that a forward pass never reaches (saving, loading
from a hub, configuration dictionaries) and those methods bring their own helpers and imports: the
standalone source of sentence-transformers' `Pooling` was 35,000 characters, of which the forward
pass needs a third (RESULTS.md, set 12). `prune_unused` keeps, from the class outward:

- every method whose name is used anywhere in the code kept (as an attribute, a name, or a string
  such as `getattr(self, "name")`), every dunder, and every method whose name torch's own modules
  define (hooks and overrides torch calls: `extra_repr`, `_conv_forward`, `reset_parameters`);
  a name is kept or dropped in every class alike, so an abstract method and its implementations
  go together;
- every top-level statement that defines a name the kept code uses, and every top-level statement
  that defines nothing (it runs for its effect);
- of an import statement, the names still used.

It works on the source's lines (comments and layout of what is kept stay as written; strip_docstrings and
strip_comments, for a module still too long, take the documentation, then the comments), repeats
until nothing more is needed, and returns the source unchanged when it cannot parse it. A method
called under a name built at run time (`getattr(self, mode + "_forward")`) is dropped and fails
loudly when the problem is run; it is never silently different. harvesting/core.py calls it only
for modules over `harvest.max_problem_chars`, so problems that fit are as extracted.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize

from autotriton.harvesting.extract import _protocol


@functools.lru_cache(maxsize=1)
def _torch_member_names() -> frozenset[str]:
    """Names torch may call on a module without the kept code naming them: nn.Module's (the
    extractor's `_protocol`) and those of torch.nn's own layers, which a subclass overrides
    (`_conv_forward`, `_check_input_dim`, `reset_parameters`)."""
    import torch.nn as nn

    names = set(_protocol())
    for value in vars(nn).values():
        if isinstance(value, type) and issubclass(value, nn.Module):
            for klass in value.__mro__:
                names.update(vars(klass))
    return frozenset(names)


def _defined_names(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"}
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _is_definition(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
        return False
    return isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom,
                             ast.Assign, ast.AnnAssign)) and bool(_defined_names(stmt))


def _is_method(stmt: ast.stmt) -> bool:
    return isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))


def _method_kept(name: str, used_members: set[str]) -> bool:
    return (name.startswith("__") and name.endswith("__")) or name in used_members or name in _torch_member_names()


def _uses(nodes: list[ast.AST]) -> tuple[set[str], set[str]]:
    """(names read, attribute and string names) in `nodes`."""
    names: set[str] = set()
    members: set[str] = set()
    for root in nodes:
        docstrings = {id(n.value) for n in ast.walk(root) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        for n in ast.walk(root):
            if isinstance(n, ast.Name):
                names.add(n.id)
            elif isinstance(n, ast.Attribute):
                members.add(n.attr)
            elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings \
                    and n.value.isidentifier():
                names.add(n.value)  # string annotations, `globals()["name"]`
                members.add(n.value)  # `getattr(self, "name")`, `hasattr(...)`
    return names, members


def _parts(stmt: ast.stmt) -> list[tuple[str | None, ast.AST]]:
    """A statement's parts as (method name or None, node): a class's methods are used only when
    kept; everything else of a kept statement always counts."""
    if not isinstance(stmt, ast.ClassDef):
        return [(None, stmt)]
    parts: list[tuple[str | None, ast.AST]] = [(None, n) for n in (*stmt.decorator_list, *stmt.bases, *stmt.keywords)]
    parts += [(s.name if _is_method(s) else None, s) for s in stmt.body]
    return parts


def prune_unused(source: str, class_name: str) -> str:
    """`source` without the methods, helpers and imports `class_name` never uses (module docstring)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    body = tree.body
    if not any(isinstance(s, ast.ClassDef) and s.name == class_name for s in body):
        return source
    # each part's uses computed once; the fixed point below only joins sets
    uses = [[(method, *_uses([node])) for method, node in _parts(s)] for s in body]
    defined = [_defined_names(s) for s in body]
    live = {i for i, s in enumerate(body) if not _is_definition(s) or (isinstance(s, ast.ClassDef) and s.name == class_name)}
    used_members: set[str] = set()
    names: set[str] = set()
    while True:
        names = set()
        members: set[str] = set()
        for i in live:
            for method, n, m in uses[i]:
                if method is None or _method_kept(method, used_members):
                    names |= n
                    members |= m
        grown = {i for i in range(len(body)) if i not in live and defined[i] & names}
        if not grown and members <= used_members:
            break
        live |= grown
        used_members |= members
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []  # (first line, last line, replacement), 1-based inclusive

    def span(node: ast.stmt) -> tuple[int, int]:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        return first, node.end_lineno or node.lineno

    for i, stmt in enumerate(body):
        if i not in live:
            edits.append((*span(stmt), ""))
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)) and getattr(stmt, "module", None) != "__future__":
            kept = [a for a in stmt.names if a.name == "*" or (a.asname or a.name).split(".")[0] in names]
            if len(kept) < len(stmt.names):
                stmt.names = kept
                edits.append((*span(stmt), ast.unparse(stmt) + "\n"))
        elif isinstance(stmt, ast.ClassDef):
            dropped = [s for s in stmt.body if _is_method(s) and not _method_kept(s.name, used_members)]
            for j, method in enumerate(dropped):
                everything = len(dropped) == len(stmt.body)
                indent = " " * method.col_offset
                edits.append((*span(method), indent + "pass\n" if everything and j == 0 else ""))
    for first, last, text in sorted(edits, reverse=True):
        lines[first - 1:last] = [text] if text else []
    pruned = "".join(lines)
    try:
        ast.parse(pruned)
    except SyntaxError:  # pragma: no cover - a span the line edits got wrong: keep what was extracted
        return source
    return pruned


# decorators known not to read the docstring they wrap
_DOC_BLIND = {"property", "staticmethod", "classmethod", "abstractmethod", "overload", "override", "cached_property",
              "no_grad", "inference_mode", "enable_grad", "wraps", "lru_cache", "cache", "dataclass", "unused", "ignore",
              "export", "script", "setter", "getter", "deleter", "custom_fwd", "custom_bwd", "autocast", "compile"}


def _reads_docs(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
    return name not in _DOC_BLIND


def strip_docstrings(source: str) -> str:
    """`source` without the docstrings of its module, classes and functions (a body left empty
    gets `pass`): for a module still over the limit after `prune_unused` (sentence-transformers'
    `Router` is 35,000 characters pruned, 12,600 without its documentation). Decorated classes and
    functions keep theirs (pykeen's `@parse_docdata` raises "docstring is empty"); other code that
    reads `__doc__` then sees None; `source` comes back unchanged when it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    spans: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                _reads_docs(d) for d in node.decorator_list):
            continue  # a decorator may read it (`@parse_docdata`, a docstring updated with the resolver's keys)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                alone = len(node.body) == 1
                spans.append((first.lineno, first.end_lineno or first.lineno, " " * first.col_offset + "pass\n" if alone else ""))
    lines = source.splitlines(keepends=True)
    for first_line, last_line, text in sorted(spans, reverse=True):
        lines[first_line - 1:last_line] = [text] if text else []
    stripped = "".join(lines)
    try:
        ast.parse(stripped)
    except SyntaxError:  # pragma: no cover - a docstring sharing its line with code (`"""doc"""; x = 1`)
        return source
    return stripped


def strip_comments(source: str) -> str:
    """`source` without its comments (a line left empty goes; runs of blank lines become one): for
    a module still over the limit without its docstrings (torch-ecg's and pypots' models carry
    commented-out code and long notes: 10-20 % of their length). Strings that hold a `#` are
    untouched (the tokenizer tells them apart); `source` comes back unchanged when it does not tokenize."""
    try:
        starts = {tok.start[0] - 1: tok.start[1] for tok in tokenize.generate_tokens(io.StringIO(source).readline)
                  if tok.type == tokenize.COMMENT}
    except (tokenize.TokenError, SyntaxError):
        return source
    lines = []
    for number, line in enumerate(source.splitlines(keepends=True)):
        if number in starts:
            code = line[:starts[number]].rstrip()
            if not code:
                continue
            line = code + "\n"
        lines.append(line)
    stripped = re.sub(r"\n(?:[ \t]*\n){2,}", "\n\n", "".join(lines))
    try:
        ast.parse(stripped)
    except SyntaxError:  # pragma: no cover - a comment the tokenizer placed inside a continuation we cut
        return source
    return stripped
