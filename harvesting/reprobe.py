"""Stored problems through the current probe (`autotriton harvest reprobe`).

A problem is probed once, when it is harvested; the probe's rules grow (`returns_input` for
modules that are the identity in eval mode, `input_independent`, `nondeterministic`), and the
problems stored before a rule existed stay runnable, to be distilled again and again without a
pair (DropPath: Dynamo captures no graph). Reprobing runs each stored problem through the same
sandbox probe a harvest uses and says which the current rules refuse. Only the refusals that
describe the problem itself retire it (RETIRING); a timeout, a crash or a dependency this
machine lacks describes the machine and is reported, never acted on.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from autotriton.records import Problem

__all__ = ["RETIRING", "Reprobed", "reprobe_problems", "reprobe_summary"]

#: Probe refusals that say the problem itself is no problem to learn from.
RETIRING = frozenset({"returns_input", "input_independent", "nondeterministic"})


@dataclass
class Reprobed:
    problem_key: str
    name: str
    ok: bool
    reason: str | None = None
    detail: str = ""

    @property
    def retire(self) -> bool:
        return not self.ok and self.reason in RETIRING


def reprobe_problems(problems: Sequence[Problem], probe: Callable[..., Sequence[Any]],
                     environments: dict[str, list[str]] | None = None) -> list[Reprobed]:
    """One Reprobed per problem, in order. `probe(sources, environments)`: harvesting.core's
    SandboxProbe (or anything returning objects with ok, reason, detail)."""
    results = probe([p.reference_source for p in problems], environments or {}) if problems else []
    return [Reprobed(problem_key=p.key, name=p.name, ok=bool(r.ok), reason=None if r.ok else r.reason,
                     detail="" if r.ok else (r.detail or "")[:500])
            for p, r in zip(problems, results)]


def reprobe_summary(results: Sequence[Reprobed]) -> dict[str, Any]:
    """Counts for a report: checked, still runnable, retired by reason (an example each), and the
    failures left alone by reason."""
    retired = Counter(r.reason for r in results if r.retire)
    kept = Counter(r.reason for r in results if not r.ok and not r.retire)
    examples = {}
    for r in results:
        if r.retire and r.reason not in examples:
            examples[r.reason] = f"{r.name}: {r.detail[:160]}"
    return {"checked": len(results), "runnable": sum(r.ok for r in results),
            "retired": dict(retired.most_common()), "retired_examples": examples,
            "failed_not_retired": dict(kept.most_common())}
