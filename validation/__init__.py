"""The judge: does a Triton candidate compute what the reference computes, honestly?

Public API (see README, "The judge"):
- `validate_many(jobs, config=None, *, progress=False) -> list[Verdict]`, jobs are
  `(problem_source, candidate_source)`; `validate_candidate(problem, candidate, config=None)`.
- `JudgePool(config)`: warm workers kept across calls, same `.validate_many(jobs)` and `.probe_many(sources)`.
- `probe_problem(source, config=None) -> ProbeResult`, `probe_many(sources, config=None)`.
- `shrink_problem(source, max_dim=32) -> str` (pure), `shrink_and_check(source, config)` (shrunk only
  if it still runs in the sandbox), `perturb_sizes(source)`, `shrink_value(value, max_dim)` (the rule for one size).
- `rewards.exec_reward / rule_reward / combined_reward`, and `correct_at(verdict, require)` (which sizes count as solved).
- `visible_gpu_ids(n)`: the GPUs the judge would see (CUDA_VISIBLE_DEVICES honoured), for layouts that share GPUs with it.
- `ALLOWED_IMPORTS`, `FORBIDDEN_NAMES`, `FORBIDDEN_BUILTIN_CALLS`, `FORBIDDEN_ATTRIBUTES`: the rules' lists (data).
- `static_rules(candidate_source)` (the rules as the judge applies them), `rules.check_rules(candidate_source)`, `compile_check.compile_check(candidate_source, target)`.

Importing this package is cheap: torch and pydantic are only imported by the parts that need them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autotriton.validation.shrink import perturb_sizes, shrink_problem, shrink_value

__all__ = [
    "ValidationConfig", "JudgePool", "JudgeError", "ProbeResult", "validate_many", "validate_candidate", "probe_problem",
    "probe_many", "static_rules", "shrink_problem", "shrink_and_check", "perturb_sizes", "exec_reward", "rule_reward", "combined_reward",
    "correct_at", "visible_gpu_ids", "shrink_value",
    "ALLOWED_IMPORTS", "FORBIDDEN_NAMES", "FORBIDDEN_BUILTIN_CALLS", "FORBIDDEN_ATTRIBUTES",
]

if TYPE_CHECKING:
    from autotriton.validation.config import ValidationConfig
    from autotriton.validation.pool import (JudgeError, JudgePool, ProbeResult, probe_many, probe_problem, shrink_and_check,
                                            static_rules, validate_candidate, validate_many, visible_gpu_ids)
    from autotriton.validation.rewards import combined_reward, correct_at, exec_reward, rule_reward
    from autotriton.validation.rules_tables import (ALLOWED_IMPORTS, FORBIDDEN_ATTRIBUTES, FORBIDDEN_BUILTIN_CALLS,
                                                    FORBIDDEN_NAMES)

# Lazy, so that judge workers (torch + triton + stdlib only; pydantic may be absent on a bare
# GPU machine) can import the package's worker-side modules.
_LAZY = {
    "ValidationConfig": "config",
    "JudgePool": "pool", "JudgeError": "pool", "ProbeResult": "pool", "validate_many": "pool", "validate_candidate": "pool",
    "probe_problem": "pool", "probe_many": "pool", "shrink_and_check": "pool", "static_rules": "pool", "exec_reward": "rewards", "rule_reward": "rewards", "combined_reward": "rewards",
    "correct_at": "rewards", "visible_gpu_ids": "pool",
    # the rules' allow/deny lists (plain data): the Inductor teacher leaves out reference code they forbid
    "ALLOWED_IMPORTS": "rules_tables", "FORBIDDEN_NAMES": "rules_tables", "FORBIDDEN_BUILTIN_CALLS": "rules_tables",
    "FORBIDDEN_ATTRIBUTES": "rules_tables",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"autotriton.validation.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'autotriton.validation' has no attribute {name!r}")
