"""The `sft` and `rl` exports: training rows built from what a warehouse holds.

Each function takes a warehouse (anything with the read API of `autotriton.warehouse.Warehouse`:
`validated_pairs()`, `problems()`, `candidates()`, `latest_verdicts()`) and the pipeline config,
and returns `(rows, filter)` for `wh.export_parquet(name, rows, filter, run)`; they are the
`sft` and `rl` entries of `autotriton db export`. No database code here: the warehouse owns it.
"""

from __future__ import annotations

from fnmatch import fnmatch
from typing import Any, Collection

from autotriton.records import Problem
from autotriton.training.data import build_rl_rows, build_sft_rows, pass_stats


def held_out(problem: Problem, globs: list[str]) -> bool:
    """True for benchmark problems (their suite matches training.exclude_suites)."""
    return bool(problem.suite) and any(fnmatch(problem.suite, g) for g in globs)


def sft_export(wh: Any, cfg: Any, exclude_keys: Collection[str] = ()) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows of every validated pair (reward 1) whose problem is not a held-out benchmark, nor one
    of `exclude_keys` (problems found to copy an evaluation problem: decontamination)."""
    t = cfg.training
    excluded = set(exclude_keys)
    pairs = [trip for trip in wh.validated_pairs(require=t.require_sizes) if not held_out(trip[0], t.exclude_suites) and trip[0].key not in excluded]
    rows = build_sft_rows(pairs, val_fraction=t.val_fraction, dedup_threshold=t.dedup_threshold,
                          num_perm=t.minhash_perm, seed=t.seed)
    filter_ = {"verdict": "correct and rule_ok (latest)", "require_sizes": t.require_sizes, "exclude_suites": t.exclude_suites,
               "val_fraction": t.val_fraction, "dedup_threshold": t.dedup_threshold, "seed": t.seed}
    return rows, filter_


def rl_export(wh: Any, cfg: Any, exclude_keys: Collection[str] = ()) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """RL prompts: runnable problems no teacher solved plus a share of the SFT problems, sampled
    for diversity with difficulty from teacher and model pass rates (`exclude_keys` left out)."""
    t = cfg.training
    excluded = set(exclude_keys)
    problems = [p for p in wh.problems(status="runnable") if not held_out(p, t.exclude_suites) and p.key not in excluded]
    pairs = [trip for trip in wh.validated_pairs(require=t.require_sizes) if not held_out(trip[0], t.exclude_suites) and trip[0].key not in excluded]
    candidates = wh.candidates(problem_keys=[p.key for p in problems]) if problems else []
    verdicts = wh.latest_verdicts(candidate_keys=[c.key for c in candidates]) if candidates else []
    stats = pass_stats(candidates, verdicts)
    rows = build_rl_rows(problems, pairs, stats, n_prompts=t.rl_prompts, sft_share=t.rl_sft_share,
                         unsolved_weight=t.rl_unsolved_weight, difficulty_floor=t.rl_difficulty_floor,
                         val_fraction=t.val_fraction, dedup_threshold=t.dedup_threshold, num_perm=t.minhash_perm,
                         seed=t.seed)
    filter_ = {"status": "runnable", "exclude_suites": t.exclude_suites, "rl_prompts": t.rl_prompts,
               "rl_sft_share": t.rl_sft_share, "rl_unsolved_weight": t.rl_unsolved_weight,
               "rl_difficulty_floor": t.rl_difficulty_floor, "val_fraction": t.val_fraction, "seed": t.seed}
    return rows, filter_


# The training exports by name: `autotriton db export <name>` and the flows' export step.
TRAINING_EXPORTS = {
    "sft": sft_export,  # training rows of validated pairs, split by near-duplicate cluster
    "rl": rl_export,  # GRPO prompts: unsolved + a share of SFT problems, sampled for diversity
}
