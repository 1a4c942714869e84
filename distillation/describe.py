"""Words for distilled pairs: `fill_descriptions` gives candidates that a compiler teacher wrote
without words the deterministic instruction and reasoning of `autotriton.describe`.

The description itself (`describe_problem`, `analyze_problem`, `analyze_candidate` and their
summaries) lives in core, `autotriton/describe.py`, because training and evaluation phrase a
problem the same way; it is re-exported here so `autotriton.distillation.describe` keeps working.
"""

from __future__ import annotations

from typing import Any

from autotriton.describe import (
    CandidateSummary, KernelSummary, ProblemSummary, analyze_candidate, analyze_problem, describe_problem, is_described,
)

__all__ = ["describe_problem", "fill_descriptions", "redescribe", "is_described", "analyze_problem", "analyze_candidate", "ProblemSummary", "KernelSummary", "CandidateSummary"]


def fill_descriptions(candidates: list[Any], problems: dict[str, Any], *, trace: bool = True,
                      trace_cache: dict[str, dict[str, Any] | None] | None = None) -> int:
    """Give every candidate with code but no instruction or reasoning the describe_problem text
    (in place; words already there are kept). With `trace`, the problems are traced on the meta
    device first (one child process for all; results kept in `trace_cache`). Returns how many
    candidates got words."""
    todo = [c for c in candidates if c.code and (not c.instruction or not c.reasoning)]
    if not todo:
        return 0
    traces = trace_cache if trace_cache is not None else {}
    if trace:
        _trace_into(traces, {c.problem_key for c in todo}, problems)
    for cand in todo:
        instruction, reasoning = describe_problem(problems[cand.problem_key].reference_source, cand.code, traces.get(cand.problem_key))
        cand.instruction = cand.instruction or instruction
        cand.reasoning = cand.reasoning or reasoning
    return len(todo)


def redescribe(candidates: list[Any], problems: dict[str, Any], *, trace: bool = True) -> dict[str, tuple[str, str]]:
    """The current describer's words for candidates whose words an older describer wrote (their
    reasoning `is_described`; an explainer's or a person's words are left alone): candidate key ->
    (instruction, reasoning), only where the words change. Pairs distilled before a describer
    change (e.g. a release) get the text a new distill would give them. With `trace`, the problems
    are traced on the meta device first (one child process for all)."""
    todo = [c for c in candidates if c.code and is_described(c.reasoning or "") and c.problem_key in problems]
    traces: dict[str, dict[str, Any] | None] = {}
    if trace:
        _trace_into(traces, {c.problem_key for c in todo}, problems)
    words: dict[str, tuple[str, str]] = {}
    for cand in todo:
        instruction, reasoning = describe_problem(problems[cand.problem_key].reference_source, cand.code, traces.get(cand.problem_key))
        if (instruction, reasoning) != (cand.instruction, cand.reasoning):
            words[cand.key] = (instruction, reasoning)
    return words


def _trace_into(traces: dict[str, dict[str, Any] | None], keys: set[str], problems: dict[str, Any]) -> None:
    """Trace the problems of `keys` not yet in `traces` on the meta device (one child process)."""
    todo = sorted(keys - set(traces))
    if todo:
        from autotriton.distillation.trace import trace_problems

        traces.update(zip(todo, trace_problems([problems[k].reference_source for k in todo])))
