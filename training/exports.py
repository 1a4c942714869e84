"""The `sft` and `rl` exports: training rows built from the records a warehouse holds.

Each export takes the records it is built from (`ExportRecords`: validated pairs and the runnable
problems, and for `rl` their candidates and latest verdicts, read by the caller: tasks/steps.py
`export_records`) and the training config, and returns `(rows, filter)` for
`wh.export_parquet(name, rows, filter, run)`; they are the `sft` and `rl` entries of
`autotriton db export`. No warehouse here: records in, rows out.

Both exports take each problem's train/validation split from one `shared_split` over the same
universe (every runnable training problem plus the validated pairs' problems), so the SFT and
the RL validation sets agree: a held-out problem and its near-copies are trained on by neither,
and `autotriton eval --suite <export>:validation` measures on problems unseen in training.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch
from typing import Any

from autotriton.records import Candidate, Problem, Verdict
from autotriton.training.data import ProblemSplit, build_rl_rows, build_sft_rows, pass_stats, problem_split

Rows = list[dict[str, Any]]


@dataclass
class ExportRecords:
    """What a training export is built from."""

    pairs: list[tuple[Problem, Candidate, Verdict]]  # validated pairs (reward 1 at training.require_sizes)
    problems: list[Problem] = field(default_factory=list)  # runnable problems (both: the split's universe; rl: prompts)
    candidates: list[Candidate] = field(default_factory=list)  # their candidates (rl: teacher and model pass rates)
    verdicts: list[Verdict] = field(default_factory=list)  # the candidates' latest verdicts (rl)
    generated: frozenset[str] = frozenset()  # keys of generated problems (the split clusters them by code up to literals)


def held_out(problem: Problem, globs: list[str]) -> bool:
    """True for benchmark problems (their suite matches training.exclude_suites)."""
    return bool(problem.suite) and any(fnmatch(problem.suite, g) for g in globs)


def training_problems(problems: list[Problem], training_config: Any, exclude_keys: Collection[str] = ()) -> list[Problem]:
    """The problems a training export may use: no held-out benchmark, none of `exclude_keys`."""
    excluded = set(exclude_keys)
    return [p for p in problems if not held_out(p, training_config.exclude_suites) and p.key not in excluded]


def _training_pairs(pairs: list[tuple[Problem, Candidate, Verdict]], training_config: Any,
                    exclude_keys: Collection[str]) -> list[tuple[Problem, Candidate, Verdict]]:
    excluded = set(exclude_keys)
    return [trip for trip in pairs if not held_out(trip[0], training_config.exclude_suites) and trip[0].key not in excluded]


def shared_split(records: ExportRecords, training_config: Any, exclude_keys: Collection[str] = ()) -> ProblemSplit:
    """The one train/validation split every training export uses: clusters and splits over the
    runnable training problems plus the validated pairs' problems (benchmarks and `exclude_keys`
    left out, as both exports leave them out), whichever export is being built."""
    t = training_config
    return problem_split(training_problems(records.problems, t, exclude_keys), _training_pairs(records.pairs, t, exclude_keys),
                         val_fraction=t.val_fraction, dedup_threshold=t.dedup_threshold, num_perm=t.minhash_perm, seed=t.seed,
                         generated=records.generated)


def preferred_pairs(pairs: list[tuple[Problem, Candidate, Verdict]], teachers: Sequence[str]) -> list[tuple[Problem, Candidate, Verdict]]:
    """Per problem, the pairs of the first of `teachers` (candidate generators, by preference) that
    solved it; a problem none of them solved keeps all its pairs. No teachers: every pair."""
    if not teachers:
        return list(pairs)
    rank = {name: i for i, name in enumerate(teachers)}
    best: dict[str, int] = {}
    for problem, cand, _ in pairs:
        if cand.generator in rank:
            best[problem.key] = min(best.get(problem.key, len(rank)), rank[cand.generator])
    return [trip for trip in pairs if trip[0].key not in best or rank.get(trip[1].generator) == best[trip[0].key]]


def sft_export(records: ExportRecords, training_config: Any, exclude_keys: Collection[str] = ()) -> tuple[Rows, dict[str, Any]]:
    """Rows of every validated pair (reward 1) whose problem is not a held-out benchmark, nor one
    of `exclude_keys` (problems found to copy an evaluation problem: decontamination)."""
    t = training_config
    pairs = preferred_pairs(_training_pairs(records.pairs, t, exclude_keys), t.sft_teachers)
    rows = build_sft_rows(pairs, split=shared_split(records, t, exclude_keys))
    filter_ = {"verdict": "correct and rule_ok (latest)", "require_sizes": t.require_sizes, "exclude_suites": t.exclude_suites,
               "sft_teachers": list(t.sft_teachers),
               "val_fraction": t.val_fraction, "dedup_threshold": t.dedup_threshold, "seed": t.seed}
    return rows, filter_


def rl_export(records: ExportRecords, training_config: Any, exclude_keys: Collection[str] = ()) -> tuple[Rows, dict[str, Any]]:
    """RL prompts: runnable problems no teacher solved plus a share of the SFT problems, sampled
    for diversity with difficulty from teacher and model pass rates (`exclude_keys` left out;
    training.rl_names: only problems of those names)."""
    t = training_config
    problems = training_problems(records.problems, t, exclude_keys)
    pairs = _training_pairs(records.pairs, t, exclude_keys)
    split = shared_split(records, t, exclude_keys)  # over every problem, whichever the prompts are drawn from
    names = list(t.rl_names)
    if names:
        problems = [p for p in problems if any(fnmatch(p.name, g) for g in names)]
        pairs = [trip for trip in pairs if any(fnmatch(trip[0].name, g) for g in names)]
    kept = {p.key for p in problems}
    candidates = [c for c in records.candidates if c.problem_key in kept]
    stats = pass_stats(candidates, records.verdicts)
    rows = build_rl_rows(problems, pairs, stats, n_prompts=t.rl_prompts, sft_share=t.rl_sft_share,
                         unsolved_weight=t.rl_unsolved_weight, difficulty_floor=t.rl_difficulty_floor,
                         split=split, seed=t.seed)
    filter_ = {"status": "runnable", "exclude_suites": t.exclude_suites, "rl_prompts": t.rl_prompts, "rl_names": names,
               "rl_sft_share": t.rl_sft_share, "rl_unsolved_weight": t.rl_unsolved_weight,
               "rl_difficulty_floor": t.rl_difficulty_floor, "val_fraction": t.val_fraction, "seed": t.seed}
    return rows, filter_


@dataclass(frozen=True)
class TrainingExport:
    """A training export: its row builder, and whether it needs more than the validated pairs."""

    build: Callable[[ExportRecords, Any, Collection[str]], tuple[Rows, dict[str, Any]]]
    pass_rates: bool = False  # also the problems' candidates and latest verdicts (every export reads the problems: the split)


# The training exports by name: `autotriton db export <name>` and the flows' export step.
TRAINING_EXPORTS = {
    "sft": TrainingExport(sft_export),  # training rows of validated pairs, split by near-duplicate cluster
    "rl": TrainingExport(rl_export, pass_rates=True),  # GRPO prompts: unsolved + a share of SFT problems, sampled for diversity
}
