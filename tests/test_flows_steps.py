"""The plain stage steps that both the Prefect tasks and the CLI verbs use (autotriton.tasks.steps)."""

from __future__ import annotations

import pytest

from autotriton.records import Checkpoint
from autotriton.tasks.steps import build_export, grpo_judge_config, store_checkpoint_result, train_grpo
from autotriton.training.config import TrainingConfig
from autotriton.validation import ValidationConfig
from autotriton.warehouse import Warehouse


def test_grpo_judge_times_kernels_only_when_the_reward_uses_speedups():
    judge = ValidationConfig(time_kernels=True, workers=3)
    plain = grpo_judge_config(TrainingConfig(speedup_bonus=0.0), judge)
    assert plain.time_kernels is False and plain.workers == 3  # everything else kept
    assert judge.time_kernels is True  # the caller's config is not changed
    assert grpo_judge_config(TrainingConfig(speedup_bonus=0.5), judge) is judge
    untimed = ValidationConfig(time_kernels=False)
    assert grpo_judge_config(TrainingConfig(speedup_bonus=0.5), untimed) is untimed


class _Stop(Exception):
    pass


def test_the_grpo_step_asks_for_the_untimed_judge(tmp_path):
    """The Prefect grpo task passes resources.judge as judge_for: it must receive the GRPO config."""
    asked = []

    def judge_for(config):
        asked.append(config)
        raise _Stop

    export = type("E", (), {"path": str(tmp_path / "rl.parquet"), "key": "k"})()
    with pytest.raises(_Stop):
        train_grpo(TrainingConfig(speedup_bonus=0.0), ValidationConfig(time_kernels=True), export,
                   base_model=None, resume=False, judge_for=judge_for)
    assert [c.time_kernels for c in asked] == [False]


def test_export_and_checkpoint_steps_record_rows(tmp_path):
    from autotriton.flows.config import PipelineConfig
    from training_helpers import elementwise_problem

    cfg = PipelineConfig()
    with Warehouse(tmp_path / "w.duckdb", export_dir=tmp_path / "exports") as wh:
        run = wh.start_run("test", {})
        wh.put_problems(run, [elementwise_problem("relu", "torch.relu(x)")])
        assert build_export(wh, run, cfg, "sft") is None  # nothing validated: no rows, nothing recorded
        rl = build_export(wh, run, cfg, "rl")
        assert rl is not None and rl.row_count == 1 and wh.export(rl.key).path == rl.path
        with pytest.raises(ValueError, match="choose one of sft, rl"):
            build_export(wh, run, cfg, "dpo")
        checkpoint = Checkpoint(base_model="tiny", export_key=rl.key, trainer="grpo", trainer_config={}, metrics={},
                                path=str(tmp_path / "final"))
        result = type("TrainResult", (), {"checkpoint": checkpoint})()
        assert store_checkpoint_result(wh, run, result) == 1
        assert store_checkpoint_result(wh, run, result) == 0  # idempotent on the content key
        assert [c.key for c in wh.checkpoints()] == [checkpoint.key]
