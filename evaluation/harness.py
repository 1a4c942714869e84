"""`evaluate`: generate k samples per problem, judge every one with the validator, aggregate.

The judge is autotriton's own (`autotriton.validation`): static rules, a real compile check, the
sandboxed run with anti-cheat, several trials. A sample whose completion held no usable code is
judged too (as empty code), so it counts as the failure it is and still has a stored verdict.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from autotriton.evaluation.generators import Generator
from autotriton.evaluation.metrics import LEVEL, SUMMARY, compute_metrics, metrics_in
from autotriton.hashing import content_key
from autotriton.prompting import PROMPT_VERSION
from autotriton.records import Candidate, Evaluation, Problem, Verdict


@dataclass
class EvaluationResult:
    """Everything one evaluation produced: per-problem samples, their verdicts, metrics and the record."""

    problems: list[Problem]
    candidates: list[list[Candidate]]  # candidates[i]: the samples of problems[i]
    verdicts: list[list[Verdict]]  # verdicts[i][s] judges candidates[i][s]
    metrics: dict[str, Any]
    evaluation: Evaluation
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def all_candidates(self) -> list[Candidate]:
        return [c for cs in self.candidates for c in cs]

    @property
    def all_verdicts(self) -> list[Verdict]:
        return [v for vs in self.verdicts for v in vs]

    def summary(self) -> dict[str, Any]:
        """The CLI's --json object: the headline metrics (the registry's SUMMARY view, null speed
        metrics without a GPU), the reference failures and the per-level breakdown (LEVEL view)."""
        m = self.metrics
        out: dict[str, Any] = {"evaluation_key": self.evaluation.key, "suite": self.evaluation.suite,
                               "generator": self.evaluation.generator}
        out.update({metric.name: m.get(metric.name) for metric in metrics_in(SUMMARY)})
        out["reference_failures"] = m.get("reference_failures", [])
        out["by_level"] = {name: {metric.name: lv.get(metric.name) for metric in metrics_in(LEVEL)}
                           for name, lv in m["by_level"].items()}
        return out


def suite_label(problems: Sequence[Problem]) -> str:
    """One name for the problems' suites: `kernelbench/level1`, or `a+b` when several."""
    names = sorted({p.suite or "custom" for p in problems})
    return "+".join(names) if names else "empty"


def _judge(jobs: list[tuple[str, str]], validation_config: Any, judge: Any, progress: bool) -> list[Verdict]:
    if judge is not None:
        try:
            return list(judge.validate_many(jobs, progress=progress))
        except TypeError:  # a judge whose validate_many takes no progress flag
            return list(judge.validate_many(jobs))
    from autotriton.validation import validate_many

    return list(validate_many(jobs, validation_config, progress=progress))


def evaluate(problems: Sequence[Problem], generator: Generator, config: Any = None,
             validation_config: Any = None, judge: Any = None, *, progress: bool = False,
             on_generated: Callable[[int], None] | None = None) -> EvaluationResult:
    """Evaluate `generator` on `problems`: `config.samples` samples each, judged, with metrics.

    `config` is an `EvaluationConfig` (or any object with its fields samples, pass_k, temperature,
    top_p, max_new_tokens, seed, max_problems: a bare GPU machine without pydantic can pass a
    SimpleNamespace).
    `judge` is an optional warm `autotriton.validation.JudgePool` (anything with `validate_many(jobs)`);
    without one, `validate_many(jobs, validation_config)` starts and stops its own workers.
    `config.max_problems` caps the problems (0 = all). The returned `EvaluationResult.evaluation` is
    the warehouse record: suite, generator, config (sampling, judge config hash, problem keys) and
    the per-sample verdict keys in problem-major order.
    """
    if config is None:
        from autotriton.evaluation.config import EvaluationConfig

        config = EvaluationConfig()
    problems = list(problems)
    if config.max_problems:
        problems = problems[: config.max_problems]
    if not problems:
        raise ValueError("evaluate: no problems to evaluate (the suite is empty after filtering).")
    samples = config.samples

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    started = time.perf_counter()
    if progress:
        # Progress goes to stderr: stdout stays free for a --json summary.
        with Progress(TextColumn("[bold]generating"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=Console(stderr=True), transient=False) as bar:
            task = bar.add_task("generate", total=len(problems))

            def advance(n: int) -> None:
                bar.advance(task, n)
                if on_generated:
                    on_generated(n)

            candidates = generator.generate(problems, samples, progress=advance)
    else:
        candidates = generator.generate(problems, samples, progress=on_generated)
    generated = time.perf_counter()
    if len(candidates) != len(problems) or any(len(cs) != samples for cs in candidates):
        raise RuntimeError(f"generator {generator.name!r} returned {[len(cs) for cs in candidates]} samples per problem, "
                           f"expected {samples} for each of {len(problems)} problems.")

    jobs = [(p.reference_source, c.code) for p, cs in zip(problems, candidates) for c in cs]
    flat = _judge(jobs, validation_config, judge, progress)
    judged = time.perf_counter()
    if len(flat) != len(jobs):
        raise RuntimeError(f"the judge returned {len(flat)} verdicts for {len(jobs)} samples.")
    verdicts: list[list[Verdict]] = []
    it = iter(flat)
    for problem, cs in zip(problems, candidates):
        row = []
        for cand in cs:
            v = next(it)
            if v.problem_key != problem.key or v.candidate_key != cand.key:
                raise RuntimeError(f"verdict {v.key} judges candidate {v.candidate_key} of problem {v.problem_key}, "
                                   f"expected {cand.key} of {problem.key} ({problem.suite_id or problem.name}).")
            row.append(v)
        verdicts.append(row)

    # pass@k for the configured ks that the samples allow, and always pass@n (any of the n samples
    # solved it), the figure a run of n samples can state best: 8 samples give pass@8 by default.
    ks = sorted({k for k in config.pass_k if k <= samples} | {samples})
    metrics = compute_metrics(problems, candidates, verdicts, ks, require=getattr(config, "require_sizes", "own_sizes"))
    judge_hash = next((v.judge_config_hash for v in flat if v.judge_config_hash), "")
    if not judge_hash and validation_config is not None:
        from autotriton.configuration import config_hash

        judge_hash = config_hash(validation_config)
    record_config = {
        "samples": samples,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "max_new_tokens": config.max_new_tokens,
        "seed": config.seed,
        "pass_k": ks,
        "prompt_version": PROMPT_VERSION,
        "generator_version": getattr(generator, "version", ""),
        "judge_config_hash": judge_hash,
        "judge_device": flat[0].device if flat else "",
        "problem_keys": content_key([p.key for p in problems]),
        "problem_count": len(problems),
    }
    evaluation = Evaluation(suite=suite_label(problems), generator=generator.name, config=record_config,
                            verdict_keys=[v.key for v in flat], metrics=metrics)
    timings = {"generate_s": generated - started, "judge_s": judged - generated, "total_s": judged - started}
    return EvaluationResult(problems=problems, candidates=list(candidates), verdicts=verdicts, metrics=metrics,
                            evaluation=evaluation, timings=timings)
