"""Decontamination: find training problems that are evaluation problems, exactly or nearly.

A harvested problem and a suite problem are compared on their *model* only: the module-level
size constants and the `get_inputs` / `get_init_inputs` builders are dropped first (a harvest
synthesises its own inputs, and a copy with other sizes is still the same problem), then

- exact: the canonical source (dedup.py: no comments, docstrings or layout; arguments and locals
  renamed v0, v1, ...; here also the attributes of `self`, a0, a1, ...) hashes the same;
- near duplicate: MinHash (5-token shingles of the canonical model, numbers folded, since a changed
  constant is not a new problem) estimates a Jaccard similarity of at least `threshold`; the
  similarity is then computed exactly on the shingles, so the reported figure is not an estimate.

Plain records in, plain records out: the caller loads the suites and decides what to do with a
match (the export step keeps matches out of training rows and records why).
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from typing import Iterable, Sequence

from datasketch import MinHash, MinHashLSH

from autotriton.harvesting.dedup import canonical_key, canonical_source
from autotriton.records import Problem

NUM_PERM = 128
SHINGLE = 5
_INPUT_BUILDERS = frozenset({"get_inputs", "get_init_inputs"})


@dataclass(frozen=True)
class Contamination:
    """A training problem that matches an evaluation problem."""

    problem_key: str
    problem_name: str
    suite: str  # e.g. "kernelbench/level1"
    suite_id: str  # e.g. "kernelbench/level1/19"
    kind: str  # "exact" or "near_duplicate"
    similarity: float  # Jaccard similarity of the models' shingles (1.0 for exact)
    origin: str = ""  # where the suite was read from (the path the user named)

    @property
    def reason(self) -> str:
        return f"eval_{self.kind}"

    @property
    def detail(self) -> str:
        where = f" (suite file {self.origin})" if self.origin else ""
        return f"matches evaluation problem {self.suite_id}{where}: {self.kind.replace('_', ' ')}, similarity {self.similarity:.2f}"


class _SelfAttributes(ast.NodeTransformer):
    """`self.ln` -> `self.a0`, in order of first appearance: a renamed layer is the same problem."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            node.attr = self.names.setdefault(node.attr, f"a{len(self.names)}")
        return node


def model_source(source: str) -> str:
    """What the problem computes: the source without module-level constants and input builders,
    with the attributes of `self` renamed canonically."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    kept = [node for node in tree.body
            if not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in _INPUT_BUILDERS)
            and not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))]
    return ast.unparse(_SelfAttributes().visit(ast.Module(body=kept, type_ignores=[])))


def _shingles(source: str) -> set[str]:
    tokens: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.NUMBER:
                tokens.append("<num>")
            elif tok.type in (tokenize.NAME, tokenize.OP, tokenize.STRING):
                tokens.append(tok.string)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        tokens = source.split()
    if len(tokens) < SHINGLE:
        return {" ".join(tokens)}
    return {" ".join(tokens[i:i + SHINGLE]) for i in range(len(tokens) - SHINGLE + 1)}


def _fingerprint(source: str) -> tuple[str, set[str]]:
    model = model_source(source)
    return canonical_key(model), _shingles(canonical_source(model))


class EvalIndex:
    """The evaluation problems, indexed for exact and near-duplicate lookups."""

    def __init__(self, suite_problems: Iterable[Problem], threshold: float = 0.8, origin: str = ""):
        if not 0 < threshold <= 1:
            raise ValueError(f"decontamination threshold {threshold} must be in (0, 1]")
        self.threshold = threshold
        self.exact: dict[str, Problem] = {}
        self.shingles: dict[str, set[str]] = {}
        self.problems: dict[str, Problem] = {}
        self.origins: dict[str, str] = {}
        self.lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
        self.add(suite_problems, origin)

    def add(self, suite_problems: Iterable[Problem], origin: str = "") -> None:
        for problem in suite_problems:
            ident = problem.suite_id or problem.key
            if ident in self.problems:
                continue
            key, shingles = _fingerprint(problem.reference_source)
            self.exact.setdefault(key, problem)
            self.problems[ident] = problem
            self.shingles[ident] = shingles
            self.origins[ident] = origin
            self.lsh.insert(ident, _minhash(shingles))

    def __len__(self) -> int:
        return len(self.problems)

    def match(self, problem: Problem) -> Contamination | None:
        """The closest evaluation problem this one duplicates, or None."""
        key, shingles = _fingerprint(problem.reference_source)
        hit = self.exact.get(key)
        if hit is not None:
            ident = hit.suite_id or hit.key
            return Contamination(problem.key, problem.name, hit.suite or "", ident, "exact", 1.0, self.origins.get(ident, ""))
        best: tuple[float, str] | None = None
        for ident in self.lsh.query(_minhash(shingles)):
            other = self.shingles[ident]
            sim = len(shingles & other) / max(1, len(shingles | other))
            if sim >= self.threshold and (best is None or (sim, ident) > best):
                best = (sim, ident)
        if best is None:
            return None
        hit = self.problems[best[1]]
        return Contamination(problem.key, problem.name, hit.suite or "", best[1], "near_duplicate", round(best[0], 4),
                             self.origins.get(best[1], ""))


def _minhash(shingles: set[str]) -> MinHash:
    m = MinHash(num_perm=NUM_PERM, seed=1)
    m.update_batch([s.encode("utf-8") for s in shingles])
    return m


def find_contaminated(problems: Sequence[Problem], index: EvalIndex) -> list[Contamination]:
    """Every problem that matches an evaluation problem. The evaluation suite's own problems, when
    the warehouse holds them too, are not matches of themselves (training.exclude_suites keeps
    them out); a training suite's problem that copies an evaluation problem is."""
    out = []
    for problem in problems:
        found = index.match(problem)
        if found is not None and not (problem.suite and problem.suite == found.suite):
            out.append(found)
    return out
