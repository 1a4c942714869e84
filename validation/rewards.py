"""Rewards as plain functions of a Verdict (the GRPO reward and the distillation filter).

- `exec_reward(v)`: 1.0 when every trial matched the reference (`v.correct`), else 0.0.
- `rule_reward(v)`: 1.0 when no static or runtime rule was violated (`v.rule_ok`), else 0.0.
- `combined_reward(v, speedup_bonus=0.0, max_bonus=1.0)`: AutoTriton's reward, 1.0 only when
  both hold (and the status is "correct"), else 0.0; optionally plus a capped bonus for a
  trusted GPU speedup over eager PyTorch: `speedup_bonus * min(log2(speedup), max_bonus)` for
  speedups above 1. Speedups flagged suspect (`v.timing["suspect"]`) earn no bonus.
"""

from __future__ import annotations

import math

from autotriton.records import Verdict


def exec_reward(v: Verdict) -> float:
    """1.0 when the candidate's outputs matched the reference in every trial."""
    return 1.0 if v.correct else 0.0


def rule_reward(v: Verdict) -> float:
    """1.0 when the candidate broke no static or runtime rule."""
    return 1.0 if v.rule_ok else 0.0


def combined_reward(v: Verdict, speedup_bonus: float = 0.0, max_bonus: float = 1.0) -> float:
    """AutoTriton's reward: 1.0 only when correct AND rule-abiding; plus an optional capped speedup bonus."""
    if not (v.correct and v.rule_ok and v.status == "correct"):
        return 0.0
    reward = 1.0
    if speedup_bonus > 0 and v.speedup and v.speedup > 1.0 and not v.timing.get("suspect"):
        reward += speedup_bonus * min(math.log2(v.speedup), max_bonus)
    return reward
