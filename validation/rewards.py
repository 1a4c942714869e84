"""Rewards as plain functions of a Verdict (the GRPO reward and the distillation filter).

- `exec_reward(v)`: 1.0 when every trial matched the reference (`v.correct`), else 0.0.
- `rule_reward(v)`: 1.0 when no static or runtime rule was violated (`v.rule_ok`), else 0.0.
- `combined_reward(v, speedup_bonus=0.0, max_bonus=1.0)`: AutoTriton's reward, 1.0 only when
  both hold (and the status is "correct"), else 0.0; optionally plus a capped bonus for a
  trusted GPU speedup over eager PyTorch: `speedup_bonus * min(log2(speedup), max_bonus)` for
  speedups above 1. Speedups flagged suspect (`v.timing["suspect"]`) earn no bonus.

Which sizes count (`require`, a SizeRequirement): "own_and_odd_sizes" (the default, and the
dataset's: `training.require_sizes`) asks for every trial, the odd-size one included;
"own_sizes" (KernelBench's definition, the evaluation's default: `evaluation.require_sizes`)
asks only for the trials at the problem's own sizes (`Verdict.correct_own_sizes`), so a kernel
that bakes a size in still counts there, while `Verdict.odd_sizes_ok` says it is not general.
"""

from __future__ import annotations

import math

from autotriton.records import Verdict


def correct_at(v: Verdict, require: str = "own_and_odd_sizes") -> bool:
    """Whether the candidate is correct at the sizes `require` names (module docstring). Verdicts
    that predate the split (correct_own_sizes None) count as their `correct`."""
    if require == "own_and_odd_sizes":
        return bool(v.correct)
    if require == "own_sizes":
        return bool(v.correct if v.correct_own_sizes is None else v.correct_own_sizes)
    raise ValueError(f"unknown size requirement {require!r}: use 'own_sizes' or 'own_and_odd_sizes'")


def exec_reward(v: Verdict, require: str = "own_and_odd_sizes") -> float:
    """1.0 when the candidate's outputs matched the reference in every trial `require` asks for."""
    return 1.0 if correct_at(v, require) else 0.0


def rule_reward(v: Verdict) -> float:
    """1.0 when the candidate broke no static or runtime rule."""
    return 1.0 if v.rule_ok else 0.0


def combined_reward(v: Verdict, speedup_bonus: float = 0.0, max_bonus: float = 1.0, require: str = "own_and_odd_sizes") -> float:
    """AutoTriton's reward: 1.0 only when correct (at the sizes `require` names) AND rule-abiding;
    plus an optional capped speedup bonus."""
    if require == "own_and_odd_sizes" and not (v.correct and v.rule_ok and v.status == "correct"):
        return 0.0
    if not (correct_at(v, require) and v.rule_ok):
        return 0.0
    reward = 1.0
    if speedup_bonus > 0 and v.speedup and v.speedup > 1.0 and not v.timing.get("suspect"):
        reward += speedup_bonus * min(math.log2(v.speedup), max_bonus)
    return reward
