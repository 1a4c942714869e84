"""GRPO reward functions backed by the judge: one batch judging per step, shared by components.

trl calls each reward function with the whole generation batch (`prompts`, `completions` and
every dataset column, here `reference` and `problem_key`). `JudgeRewards` parses every
completion with the shared strict parser (`autotriton.prompting.parse_completion`), sends the
parsed candidates to the judge's batch API in ONE `validate_many` call (a warm `JudgePool`
runs them in parallel, each under the validator's own timeout, so a hanging kernel costs at
most that timeout), and keeps the verdicts for the rest of the step: the `exec` and `rule`
components read the same verdicts instead of judging again.

The default reward is AutoTriton's combination: 1 only when the candidate is correct AND
keeps the rules (a rule violation scores 0 whatever the tests say). An optional format reward
(`format_weight`, off by default) adds that weight for a completion whose answer is one complete
code block defining `class ModelNew` (the strict parser's success, nothing judged): shaping for
small models and short runs, where every completion would otherwise score 0 alike and GRPO's
advantages would all be zero. Optional speedup shaping
(GPU verdicts only) adds the validator's capped bonus `bonus * min(log2(speedup), log2(cap))`
to reward-1 completions faster than eager PyTorch.

Per step it logs (through trl's `log_metric`): the share of completions that were correct,
compiled, rule-violating, "hacks" (tests passed but rules failed), and unparseable; and the
seconds spent judging.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from autotriton.hashing import source_key
from autotriton.prompting import parse_completion
from autotriton.records import Verdict


class BatchJudge(Protocol):
    """What the rewards need from the judge: `JudgePool` (warm workers) satisfies it."""

    def validate_many(self, jobs: Sequence[tuple[str, str]]) -> list[Verdict]: ...


def completion_text(completion: Any) -> str:
    """The assistant text of a trl completion (conversational: a list of messages; or a string)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(m.get("content") or "" for m in completion if m.get("role", "assistant") == "assistant")
    if isinstance(completion, dict):
        return completion.get("content") or ""
    return str(completion)


def exec_score(v: Verdict | None) -> float:
    return 1.0 if v is not None and v.correct else 0.0


def rule_score(v: Verdict | None) -> float:
    return 1.0 if v is not None and v.rule_ok else 0.0


class JudgeRewards:
    """Reward functions for trl's GRPOTrainer that judge each generation batch once.

    `judge`: anything with `validate_many(jobs) -> list[Verdict]`, normally a
    `autotriton.validation.JudgePool` kept warm across steps. `reward`: "combined" (default,
    AutoTriton) or "exec" (tests only: lets hacks through; for ablations).
    """

    def __init__(self, judge: BatchJudge, *, reward: str = "combined", speedup_bonus: float = 0.0,
                 speedup_cap: float = 4.0, require_sizes: str = "own_and_odd_sizes", format_weight: float = 0.0):
        if reward not in ("combined", "exec"):
            raise ValueError(f"training.reward = {reward!r}: choose 'combined' or 'exec'.")
        self.judge = judge
        self.reward = reward
        self.speedup_bonus = speedup_bonus
        self.speedup_cap = speedup_cap
        self.require_sizes = require_sizes  # which trials count (validation/rewards.py correct_at)
        if format_weight < 0:
            raise ValueError(f"training.format_reward = {format_weight}: must be >= 0 (0 = off)")
        self.format_weight = format_weight
        # (batch id, verdicts) of the last batch, one attribute: replaced in one step, so a reader
        # on another thread (training.reward_overlap judges in the background) never mixes two batches.
        self._last: tuple[tuple | None, list[Verdict | None]] = (None, [])
        self.judge_calls = 0  # validate_many calls (one per generation batch)
        self.judge_seconds: list[float] = []  # wall time of each of those calls
        self.history: list[dict[str, float]] = []  # per batch: the shares logged

    # -- judging, once per batch ---------------------------------------------------------------
    def verdicts(self, completions: Sequence[Any], reference: Sequence[str],
                 log_metric: Callable[[str, float], None] | None = None, trainer_state: Any = None) -> list[Verdict | None]:
        """Verdicts for a batch (None where no code could be parsed), judged once per batch and
        step: the components called after the main reward in the same step reuse them."""
        texts = [completion_text(c) for c in completions]
        step = getattr(trainer_state, "global_step", None)
        # The trainer's state object is part of the identity: with reward_overlap every batch
        # gets its own snapshot, so two batches of one step are judged (and logged) apart.
        batch_id = (id(trainer_state), step, tuple(zip(reference, texts)))
        last_id, last_verdicts = self._last
        if batch_id == last_id:
            return last_verdicts
        parsed = [parse_completion(t) for t in texts]
        jobs: list[tuple[str, str]] = []
        index: dict[tuple[str, str], int] = {}  # identical candidates are judged once
        slots: list[int | None] = []
        for ref, p in zip(reference, parsed):
            if p.code is None:
                slots.append(None)
                continue
            key = (source_key(ref), p.code)
            if key not in index:
                index[key] = len(jobs)
                jobs.append((ref, p.code))
            slots.append(index[key])
        t0 = time.perf_counter()
        judged = self.judge.validate_many(jobs) if jobs else []
        elapsed = time.perf_counter() - t0
        if len(judged) != len(jobs):
            raise RuntimeError(f"the judge returned {len(judged)} verdicts for {len(jobs)} jobs")
        self.judge_calls += 1
        self.judge_seconds.append(elapsed)
        verdicts = [None if s is None else judged[s] for s in slots]
        self._last = (batch_id, verdicts)
        shares = self.shares(verdicts)
        shares["judge_s"] = elapsed
        self.history.append(shares)
        if log_metric is not None:
            for name, value in shares.items():
                log_metric(f"judge/{name}", value)
        return verdicts

    @staticmethod
    def shares(verdicts: Sequence[Verdict | None]) -> dict[str, float]:
        n = max(1, len(verdicts))
        judged = [v for v in verdicts if v is not None]
        return {
            "correct": sum(v.correct for v in judged) / n,
            "compiled": sum(v.compiled for v in judged) / n,
            "rule_violation": sum(not v.rule_ok for v in judged) / n,
            "hack": sum(v.correct and not v.rule_ok for v in judged) / n,
            "no_code": sum(v is None for v in verdicts) / n,
            "reward1": sum(v.correct and v.rule_ok for v in judged) / n,
        }

    # -- the reward functions trl calls ----------------------------------------------------------
    def _shaped(self, v: Verdict | None) -> float:
        if v is None:
            return 0.0
        from autotriton.validation import combined_reward, exec_reward  # the judge's public rewards

        if self.reward == "exec":
            return float(exec_reward(v, self.require_sizes))
        # The validator's definition, with its capped log2 speedup bonus (suspect timings earn none).
        return float(combined_reward(v, speedup_bonus=self.speedup_bonus, max_bonus=math.log2(self.speedup_cap),
                                     require=self.require_sizes))

    def main(self, completions, reference, log_metric=None, trainer_state=None, **_: Any) -> list[float]:
        """The training reward: AutoTriton's combined reward (or exec only), optionally shaped."""
        return [self._shaped(v) for v in self.verdicts(completions, reference, log_metric, trainer_state)]

    def exec_component(self, completions, reference, log_metric=None, trainer_state=None, **_: Any) -> list[float]:
        """1 when the tests pass (whatever the rules say): logged to watch for hacks."""
        return [exec_score(v) for v in self.verdicts(completions, reference, log_metric, trainer_state)]

    def rule_component(self, completions, reference, log_metric=None, trainer_state=None, **_: Any) -> list[float]:
        """1 when the candidate keeps the rules (real Triton, no torch compute)."""
        return [rule_score(v) for v in self.verdicts(completions, reference, log_metric, trainer_state)]

    def format_component(self, completions, reference, log_metric=None, trainer_state=None, **_: Any) -> list[float]:
        """1 when the completion's answer is a complete code block defining ModelNew, whatever the
        judge said of it (a verdict exists exactly for the completions the parser took code from)."""
        return [0.0 if v is None else 1.0 for v in self.verdicts(completions, reference, log_metric, trainer_state)]

    def reward_funcs(self) -> tuple[list[Callable[..., list[float]]], list[float]]:
        """(functions, weights) for GRPOTrainer: the main reward with weight 1, the exec and rule
        components with weight 0 (logged as rewards/<name>/mean, not trained on), and the format
        component with `format_weight` (logged either way)."""

        def named(fn, name):
            def reward_fn(*args, **kwargs):
                return fn(*args, **kwargs)

            reward_fn.__name__ = name
            return reward_fn

        funcs = [named(self.main, f"{self.reward}_reward"), named(self.exec_component, "exec_reward"),
                 named(self.rule_component, "rule_reward"), named(self.format_component, "format_reward")]
        return funcs, [1.0, 0.0, 0.0, self.format_weight]
