"""Training: SFT and GRPO on trl, the judge as the reward.

Public API:
    build_sft_rows(pairs) / build_rl_rows(problems, pairs, stats)   training rows (data.py)
    problem_split(problems, pairs) -> ProblemSplit                the one train/validation split both use (data.py)
    pass_stats(candidates, verdicts)                              teacher/model pass rates (data.py)
    near_duplicate_clusters, assign_splits, diversity_sample      split and sampling (data.py)
    load_model(name_or_path) -> (model, tokenizer)                HF id, folder, GGUF, smollm2-135m, tiny (models.py)
    make_tiny_model(dir), fetch_smollm2(), write_gguf(dir, file)  (models.py)
    run_sft(config, data) / run_grpo(config, data, judge) -> TrainResult (sft.py, grpo.py)
    JudgeRewards(judge)                                           GRPO reward functions (rewards.py)
    TrainingConfig                                                (config.py)
    check_trl_args(config)                                        trl mappings and trackers checked before training (trl_args.py)

trl, transformers and torch are imported on first use of a trainer or model, so importing this
package (e.g. for the config or the row builders) stays light.
"""

from __future__ import annotations

from typing import Any

from autotriton.training.config import TrainingConfig
from autotriton.training.data import (
    PassStats, ProblemSplit, assign_splits, build_rl_rows, build_sft_rows, default_instruction, diversity_sample,
    infer_op_tags, near_duplicate_clusters, pass_stats, problem_split,
)

__all__ = [
    "TrainingConfig", "PassStats", "assign_splits", "build_rl_rows", "build_sft_rows", "default_instruction",
    "diversity_sample", "infer_op_tags", "near_duplicate_clusters", "pass_stats", "ProblemSplit", "problem_split",
    "load_model", "make_tiny_model", "fetch_smollm2", "write_gguf", "ModelLoadError",
    "run_sft", "run_grpo", "TrainResult", "JudgeRewards", "check_trl_args",
]

_LAZY = {
    "load_model": "models", "make_tiny_model": "models", "fetch_smollm2": "models", "write_gguf": "models",
    "ModelLoadError": "models", "run_sft": "sft", "TrainResult": "sft", "run_grpo": "grpo", "JudgeRewards": "rewards",
    "check_trl_args": "trl_args",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"autotriton.training.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'autotriton.training' has no attribute {name!r}")
