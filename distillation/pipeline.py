"""Distillation: teacher candidates, judged, repaired with the judge's errors, kept only when verified.

    round 0:  teacher.generate(problems, samples)         -> candidates -> judge -> verdicts
    round r:  teacher.repair(failed, validator feedback)   -> candidates -> judge -> verdicts
              (multi-turn: the conversation holds every earlier answer and its feedback,
               as in Kevin and Dr. Kernel; only teachers with a `repair` method take part)

Only a candidate whose verdict has `combined_reward == 1` (correct AND no rule violation, the
AutoTriton rule) becomes a training pair. Everything else (wrong answers, malformed output,
failed repairs) is still returned, so the warehouse records it with its lineage.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from autotriton.distillation.config import DistillConfig
from autotriton.distillation.describe import fill_descriptions
from autotriton.distillation.teacher import RepairingTeacher, RepairRequest, Teacher, Turn
from autotriton.records import Candidate, Problem, Verdict

__all__ = ["distill", "DistillResult", "format_feedback", "clean_traceback", "Judge", "Explainer"]

_ERROR_TAIL_LINES = 30
_ERROR_TAIL_CHARS = 3000


class Explainer(Protocol):
    """Writes (instruction, reasoning) for (problem, code) pairs: OpenAITeacher.explain_many."""

    def explain_many(self, items: list[tuple[Problem, str]]) -> list[tuple[str, str]]: ...


class Judge(Protocol):
    """Anything with the validator's batch API (autotriton.validation.JudgePool)."""

    def validate_many(self, jobs: Sequence[tuple[str, str]]) -> list[Verdict]: ...


@dataclass
class DistillResult:
    candidates: list[Candidate]  # every distinct candidate, malformed ones included
    verdicts: list[Verdict]  # one per judged candidate (candidates with code)
    stats: dict[str, Any]
    pairs: list[tuple[Problem, Candidate, Verdict]] = field(default_factory=list)  # reward 1 only
    # One row per problem that yielded no pair, and why, for Warehouse.put_rejections:
    # {"stage": "distill", "subject": problem key, "reason", "detail"}.
    rejections: list[dict[str, str]] = field(default_factory=list)


def _tail(text: str) -> str:
    lines = text.rstrip().lstrip("\n").splitlines()
    tail = "\n".join(lines[-_ERROR_TAIL_LINES:])
    return tail[-_ERROR_TAIL_CHARS:]


_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (.*)$')


def clean_traceback(text: str) -> str:
    """A traceback as the teacher needs it: only the frames in the candidate's own file (shown as
    `candidate.py`) and the exception lines; the judge's, torch's and Triton's internals are noise
    to the model and cost context. Text that is not a traceback is returned as its tail."""
    lines = text.strip().splitlines()
    if not any(_FRAME.match(line) for line in lines):
        return _tail(text)
    out: list[str] = []
    keep_code = False
    for line in lines:
        frame = _FRAME.match(line)
        if frame:
            path, number, func = frame.groups()
            keep_code = path.endswith("candidate.py") or not path.startswith("/")
            if keep_code:
                out.append(f'  File "{path.rsplit("/", 1)[-1]}", line {number}, in {func}')
            continue
        if line.startswith((" ", "\t")):
            if keep_code and line.strip().strip("^~ ") and not set(line.strip()) <= set("^~ "):
                out.append(line)
            continue
        keep_code = False
        if not line.strip():
            continue
        if line.startswith("Traceback (most recent call last)") or line.startswith("The above exception") \
                or line.startswith("During handling of the above exception"):
            continue
        out.append(line)
    return _tail("\n".join(out))


def format_feedback(verdict: Verdict | None, parse_error: str | None = None) -> str:
    """The validator's findings as a user turn for the teacher: status, runtime error tail, rule
    violations with lines, compile errors per kernel, numerical mismatch. Ends with what to do."""
    if verdict is None:
        return (
            f"Your answer could not be used: {parse_error or 'no code found'}.\n"
            "Reply with your reasoning, then the complete `class ModelNew(nn.Module)` in one ```python code block."
        )
    parts = [f"I ran your ModelNew through the validator. Status: {verdict.status}."]
    if verdict.error:
        parts.append("Error:\n```\n" + clean_traceback(verdict.error) + "\n```")
    if verdict.violations:
        rows = []
        for v in verdict.violations:
            where = f" (line {v.line})" if v.line else ""
            rows.append(f"- [{v.rule}] {v.message}{where}")
        parts.append("Rule violations:\n" + "\n".join(rows))
    failed_compiles = []
    report = verdict.compile_report or {}
    kernels = report.get("kernels", report) if isinstance(report, dict) else {}
    if isinstance(kernels, dict):
        for name, info in kernels.items():
            if isinstance(info, dict) and info.get("ok") is False:
                failed_compiles.append(f"- kernel `{name}`: {_tail(str(info.get('error') or 'failed to compile'))}")
    if failed_compiles:
        parts.append("Compile errors (target sm_90):\n" + "\n".join(failed_compiles))
    if verdict.status == "incorrect" or (verdict.max_abs_err is not None and not verdict.correct):
        mismatch = [f"Output mismatch against the PyTorch reference: max_abs_err = {verdict.max_abs_err}."]
        for trial in verdict.trials[:3]:
            if isinstance(trial, dict) and not trial.get("ok", True):
                details = ", ".join(f"{k}={trial[k]}" for k in ("seed", "shapes", "max_abs_err", "reason", "error") if k in trial)
                mismatch.append(f"- failing trial: {details}")
        parts.append("\n".join(mismatch))
    if verdict.status == "correct" and not verdict.rule_ok:
        parts.append("The outputs were correct, but the implementation broke the rules above, so it does not count.")
    if not verdict.triton_kernels_launched and verdict.status in ("rule_violation", "incorrect"):
        parts.append("No Triton kernel was launched during forward.")
    parts.append(
        "Fix these problems. Reply with your reasoning, then the complete corrected `class ModelNew(nn.Module)` "
        "in one ```python code block; do all computation in @triton.jit kernels."
    )
    return "\n\n".join(parts)


def _reward(verdict: Verdict) -> float:
    from autotriton.validation import combined_reward

    return float(combined_reward(verdict))


@contextlib.contextmanager
def _judge_for(judge: Judge | None, validation_config: Any) -> Iterator[Judge]:
    """The caller's judge, or a warm JudgePool kept for all rounds of this run."""
    if judge is not None:
        yield judge
        return
    from autotriton.validation import JudgePool

    with JudgePool(validation_config) as pool:
        yield pool


def _progress(enabled: bool):
    if not enabled:
        return contextlib.nullcontext(None)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from rich.console import Console

    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=False)


def distill(
    problems: Sequence[Problem],
    teacher: Teacher,
    config: DistillConfig | None = None,
    validation_config: Any = None,
    judge: Judge | None = None,
    *,
    explainer: Explainer | None = None,
    progress: bool = False,
    environments: dict[str, list[str]] | None = None,
) -> DistillResult:
    """Generate, judge and repair candidates for `problems`; see the module docstring.

    `judge` (e.g. a JudgePool the caller keeps warm) is used when given; otherwise a JudgePool
    over `validation_config` lives for the duration of this call. Candidates without instruction
    or reasoning (compiler output) get them from `explainer.explain_many` (e.g. OpenAITeacher) when
    they validated and an explainer is given, else from `describe_problem`. `environments`
    (problem key -> site-packages folders, autotriton.environments.environment_paths) are the
    problems' dependency environments, handed to the judge (`JudgePool.use_environments`).
    """
    config = config or DistillConfig()
    problems = list({p.key: p for p in problems}.values())  # the same reference twice is one problem
    if config.max_problems:
        problems = problems[: config.max_problems]
    by_key = {p.key: p for p in problems}
    can_repair = isinstance(teacher, RepairingTeacher) and config.rounds > 0

    candidates: dict[str, Candidate] = {}
    verdicts: dict[str, Verdict] = {}
    rewards: dict[str, float] = {}
    history: dict[str, list[Turn]] = {}  # candidate key -> the conversation that produced it
    malformed = 0
    produced = 0
    usage: Counter = Counter()  # over every output, duplicates included: what the outputs cost
    per_round: list[dict[str, int]] = []

    with _judge_for(judge, validation_config) as active_judge, _progress(progress) as bar:
        if environments:  # the problems' own dependencies, for the judge and a teacher that runs the reference
            mine = {k: v for k, v in environments.items() if k in by_key}
            for user in (active_judge, teacher):
                if hasattr(user, "use_environments"):
                    user.use_environments(mine)
        task = bar.add_task("distilling", total=len(problems) * config.samples) if bar else None
        previous_hook = getattr(teacher, "on_output", None)
        if bar is not None and hasattr(teacher, "on_output"):
            teacher.on_output = lambda n: bar.advance(task, n)  # type: ignore[attr-defined]  # per answer, not per batch

        def judge_batch(batch: list[Candidate]) -> None:
            todo = [c for c in batch if c.code and c.key not in verdicts]
            if bar is not None:
                bar.update(task, description=f"round {round_no}: judging", total=len(todo), completed=0)
            # Batches big enough to keep every judge worker busy, small enough for a live progress bar.
            workers = int(getattr(validation_config, "workers", 0) or 0) or (os.cpu_count() or 2)
            step = max(8, 2 * workers)
            for start in range(0, len(todo), step):
                chunk = todo[start:start + step]
                results = active_judge.validate_many([(by_key[c.problem_key].reference_source, c.code) for c in chunk])
                for cand, verdict in zip(chunk, results):
                    verdicts[cand.key] = verdict
                    rewards[cand.key] = _reward(verdict)
                if bar is not None:
                    bar.advance(task, len(chunk))

        round_no = 0
        if bar is not None:
            bar.update(task, description=f"round 0: {teacher.name} writing")
        batch = teacher.generate(problems, config.samples)
        fresh: list[Candidate] = []
        for cand in batch:
            produced += 1
            _add_usage(usage, cand)
            malformed += bool(cand.parse_error)
            if cand.key not in candidates:
                candidates[cand.key] = cand
                history[cand.key] = []
                fresh.append(cand)
        judge_batch(fresh)
        per_round.append(_round_stats(fresh, rewards))

        for round_no in range(1, config.rounds + 1 if can_repair else 1):
            failed = [c for c in fresh if rewards.get(c.key, 0.0) != 1.0]
            if not failed:
                break
            requests = []
            for cand in failed:
                verdict = verdicts.get(cand.key)
                turns = history[cand.key] + [Turn(cand, format_feedback(verdict, cand.parse_error))]
                requests.append(RepairRequest(problem=by_key[cand.problem_key], history=turns, verdict=verdict))
            if bar is not None:
                bar.update(task, description=f"round {round_no}: {teacher.name} repairing", total=len(requests), completed=0)
            repaired = teacher.repair(requests)  # type: ignore[attr-defined]
            fresh = []
            turns_by_parent = {r.parent.key: r.history for r in requests}
            for cand in repaired:
                produced += 1
                _add_usage(usage, cand)
                malformed += bool(cand.parse_error)
                if cand.key not in candidates:
                    candidates[cand.key] = cand
                    history[cand.key] = turns_by_parent.get(cand.parent_key or "", [])
                    fresh.append(cand)
            judge_batch(fresh)
            per_round.append(_round_stats(fresh, rewards))

    if hasattr(teacher, "on_output"):
        teacher.on_output = previous_hook  # type: ignore[attr-defined]
    ordered = list(candidates.values())
    pairs = [(by_key[c.problem_key], c, verdicts[c.key]) for c in ordered if rewards.get(c.key) == 1.0]
    # Compiler output has no words. Validated pairs get them from the LLM when one is configured
    # (only pairs: explaining failures would be money spent on nothing); everything else, and any
    # pair the LLM could not explain, gets the deterministic description.
    wordless_pairs = [c for _, c, _ in pairs if not c.instruction or not c.reasoning]
    if explainer is not None and wordless_pairs:
        texts = explainer.explain_many([(by_key[c.problem_key], c.code) for c in wordless_pairs])
        for cand, (instruction, reasoning) in zip(wordless_pairs, texts):
            cand.instruction = cand.instruction or instruction
            cand.reasoning = cand.reasoning or reasoning
    fill_descriptions(ordered, by_key, trace=config.describe_trace)
    stats = _stats(problems, ordered, list(verdicts.values()), pairs, produced, malformed, per_round, teacher, usage)
    if explainer is not None:
        spent = getattr(explainer, "usage_totals", None) or {}
        stats["explain_tokens"] = int(spent.get("prompt_tokens", 0)) + int(spent.get("completion_tokens", 0))
        stats["explain_cost_usd"] = round(float(spent["cost_usd"]), 6) if "cost_usd" in spent else None
    rejections = _rejections(problems, ordered, verdicts, {p.key for p, _, _ in pairs}, getattr(teacher, "failures", {}) or {})
    return DistillResult(candidates=ordered, verdicts=list(verdicts.values()), stats=stats, pairs=pairs, rejections=rejections)


def _rejections(problems: list[Problem], candidates: list[Candidate], verdicts: dict[str, Verdict], solved: set[str],
                failures: dict[str, str]) -> list[dict[str, str]]:
    """Why each unsolved problem yielded no pair: the teacher had nothing (its own reason, e.g.
    replay_miss or request_failed), only malformed output, or nothing that validated."""
    by_problem: dict[str, list[Candidate]] = {}
    for cand in candidates:
        by_problem.setdefault(cand.problem_key, []).append(cand)
    rows = []
    for problem in problems:
        if problem.key in solved:
            continue
        cands = by_problem.get(problem.key, [])
        if not cands:
            reason, _, detail = (failures.get(problem.key) or "no_candidate").partition(": ")
        elif all(c.parse_error for c in cands) and failures.get(problem.key):
            # the teacher says why it produced nothing usable (Inductor: the converter's failure kind)
            reason, _, detail = failures[problem.key].partition(": ")
        elif all(c.parse_error for c in cands):
            reason, detail = "malformed_output", "; ".join(sorted({c.parse_error or "" for c in cands}))
        else:
            statuses = Counter(verdicts[c.key].status for c in cands if c.key in verdicts)
            reason = "not_validated"
            detail = ", ".join(f"{status} x{n}" for status, n in sorted(statuses.items()))
            if any(c.parse_error for c in cands):
                detail += f", malformed x{sum(1 for c in cands if c.parse_error)}"
        rows.append({"stage": "distill", "subject": problem.key, "reason": reason, "detail": f"{problem.name}: {detail}".rstrip(": ")})
    return rows


def _add_usage(usage: Counter, cand: Candidate) -> None:
    usage["prompt"] += int(cand.usage.get("prompt_tokens", 0) or 0)
    usage["completion"] += int(cand.usage.get("completion_tokens", 0) or 0)
    if cand.usage.get("cost_usd") is not None:
        usage["cost_usd"] += float(cand.usage["cost_usd"])
        usage["costed"] += 1


def combine_results(results: Sequence[DistillResult], problems: Sequence[Problem]) -> DistillResult:
    """One DistillResult for a run distilled in batches (`problems`: all of them, in order):
    records concatenated, counts summed, yields and outcomes recomputed over everything. The
    teacher's own running totals (tokens spent this run, counters) are the last batch's."""
    if len(results) == 1:
        return results[0]
    if not results:
        raise ValueError("combine_results needs at least one DistillResult")
    candidates = [c for r in results for c in r.candidates]
    verdicts = [v for r in results for v in r.verdicts]
    pairs = [p for r in results for p in r.pairs]
    first, last = results[0].stats, results[-1].stats
    stats: dict[str, Any] = dict(last)
    for key in ("candidates", "outputs", "malformed", "validated_pairs", "problems_solved"):
        stats[key] = sum(int(r.stats.get(key, 0)) for r in results)
    stats["teacher"], stats["teacher_version"] = first["teacher"], first["teacher_version"]
    stats["problems"] = len(problems)
    stats["verdicts"] = dict(sorted(sum((Counter(r.stats.get("verdicts", {})) for r in results), Counter()).items()))
    stats["yield"] = round(stats["problems_solved"] / len(problems), 4) if problems else 0.0
    rounds: list[dict[str, int]] = []
    for r in results:
        for i, row in enumerate(r.stats.get("rounds", [])):
            if i == len(rounds):
                rounds.append(Counter())
            rounds[i].update(row)
    stats["rounds"] = [dict(row) for row in rounds]
    tokens = {k: sum(int(r.stats["tokens"].get(k, 0)) for r in results) for k in ("prompt", "completion", "total")}
    stats["tokens"] = dict(tokens, spent_this_run=last["tokens"].get("spent_this_run", 0))
    costs = [r.stats.get("cost_usd") for r in results if r.stats.get("cost_usd") is not None]
    stats["cost_usd"] = round(sum(costs), 6) if costs else None
    stats["batches"] = len(results)
    solved = {p.key for p, _, _ in pairs}
    stats.update(_outcomes(list(problems), candidates, verdicts, solved))
    return DistillResult(candidates=candidates, verdicts=verdicts, stats=stats, pairs=pairs,
                         rejections=[row for r in results for row in r.rejections])


def _round_stats(batch: list[Candidate], rewards: dict[str, float]) -> dict[str, int]:
    return {
        "candidates": len(batch),
        "malformed": sum(1 for c in batch if c.parse_error),
        "validated": sum(1 for c in batch if rewards.get(c.key) == 1.0),
    }


def _stats(problems: list[Problem], candidates: list[Candidate], verdicts: list[Verdict],
           pairs: list[tuple[Problem, Candidate, Verdict]], produced: int, malformed: int,
           per_round: list[dict[str, int]], teacher: Teacher, usage: Counter) -> dict[str, Any]:
    by_status = Counter(v.status for v in verdicts)
    solved = {p.key for p, _, _ in pairs}
    prompt, completion = usage["prompt"], usage["completion"]
    spent = getattr(teacher, "usage_totals", None) or {}
    counters = dict(getattr(teacher, "counters", {}) or {})
    costed = usage["costed"] > 0
    return {
        "teacher": teacher.name,
        "teacher_version": teacher.version,
        "problems": len(problems),
        "candidates": len(candidates),
        "outputs": produced,  # before de-duplication by content key
        "malformed": malformed,
        "verdicts": dict(sorted(by_status.items())),
        "validated_pairs": len(pairs),
        "problems_solved": len(solved),
        "yield": round(len(solved) / len(problems), 4) if problems else 0.0,
        "rounds": per_round,
        "tokens": {
            "prompt": prompt, "completion": completion, "total": prompt + completion,
            "spent_this_run": int(spent.get("prompt_tokens", 0)) + int(spent.get("completion_tokens", 0)),
        },
        "cost_usd": round(usage["cost_usd"], 6) if costed else None,
        "cost_usd_this_run": round(float(spent["cost_usd"]), 6) if "cost_usd" in spent else (0.0 if costed else None),
        "teacher_counters": counters,
        **_outcomes(problems, candidates, verdicts, solved),
    }


# Unsolved problems by their best candidate's outcome, best first: the failure classes of a run.
_CLASS_ORDER = ("odd_sizes_only", "incorrect", "runtime_error", "compile_error", "rule_violation", "timeout", "crashed")


def _outcomes(problems: list[Problem], candidates: list[Candidate], verdicts: list[Verdict], solved: set[str]) -> dict[str, Any]:
    """Both yields (own sizes only, KernelBench's definition; and the validated pairs' rule), the
    failure class of every unsolved problem, and the speed of the solved ones: per problem its
    fastest validated candidate (speedups the judge flagged suspect left out), geometric means
    over problems against eager and against torch.compile (GPU judges only; None otherwise)."""
    import math

    from autotriton.validation import correct_at

    by_candidate = {v.candidate_key: v for v in verdicts}
    per_problem: dict[str, list[Verdict]] = {}
    malformed: set[str] = set()
    for cand in candidates:
        if cand.parse_error:
            malformed.add(cand.problem_key)
        if cand.key in by_candidate:
            per_problem.setdefault(cand.problem_key, []).append(by_candidate[cand.key])
    own = sum(1 for p in problems if any(correct_at(v, "own_sizes") and v.rule_ok for v in per_problem.get(p.key, [])))
    classes: Counter = Counter()
    eager: list[float] = []
    compiled: list[float] = []
    for problem in problems:
        judged = per_problem.get(problem.key, [])
        if problem.key in solved:
            good = [v for v in judged if v.correct and v.rule_ok and not (v.timing or {}).get("suspect")]
            for values, attr in ((eager, "speedup"), (compiled, "speedup_vs_compile")):
                best = max((getattr(v, attr) for v in good if getattr(v, attr)), default=None)
                if best:
                    values.append(best)
            continue
        labels = {"odd_sizes_only" if v.correct_own_sizes and v.rule_ok else v.status for v in judged}
        found = next((c for c in _CLASS_ORDER if c in labels), None)
        classes[found or ("conversion_failed" if problem.key in malformed else "no_candidate")] += 1

    def geomean(values: list[float]) -> float | None:
        return round(math.exp(sum(math.log(x) for x in values) / len(values)), 4) if values else None

    return {
        "yield_own_sizes": round(own / len(problems), 4) if problems else 0.0,
        "failure_classes": dict(sorted(classes.items())),
        "speed": {"timed_problems": len(eager), "geomean_speedup_vs_eager": geomean(eager),
                  "timed_vs_compile": len(compiled), "geomean_speedup_vs_compile": geomean(compiled)},
    }


def interleave_by_origin(problems: Sequence[Problem], origins: Mapping[str, str]) -> list[Problem]:
    """The problems in turns, one from each origin (`origins`: problem key -> package, repository,
    generator or suite) at a time, each origin's in its own order: a build cut off half-way has
    distilled some of every source instead of all of the first one."""
    queues: dict[str, list[Problem]] = {}
    for p in problems:
        queues.setdefault(origins.get(p.key, ""), []).append(p)
    order: list[Problem] = []
    for turn in range(max((len(q) for q in queues.values()), default=0)):
        order += [q[turn] for q in queues.values() if turn < len(q)]
    return order
