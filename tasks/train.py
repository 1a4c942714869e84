"""Training tasks: SFT then GRPO, each consuming a recorded export; checkpoints are stored."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from prefect import task
from prefect.assets import materialize
from prefect.cache_policies import NO_CACHE

from autotriton.capacity import CapCheck
from autotriton.records import Export
from autotriton.tasks.artifacts import asset_key, markdown_table, publish_image, publish_markdown
from autotriton.tasks.resources import Resources
from autotriton.tasks.steps import completion_cap_check, store_checkpoint_result, train_grpo, train_sft
from autotriton.warehouse import Run

if TYPE_CHECKING:
    from autotriton.training import TrainingConfig, TrainResult
    from autotriton.validation import ValidationConfig


@task(name="find-export", task_run_name="find-export-{name}", cache_policy=NO_CACHE)
def training_export(resources: Resources, name: str, key: str = "") -> Export | None:
    """The given (or newest) export of `name`, checked to still be what its folder holds."""
    return resources.warehouse.current_export(name, key)


@task(name="check-completion-cap", cache_policy=NO_CACHE)
def training_completion_cap(resources: Resources, training_config: TrainingConfig) -> CapCheck:
    """training.max_completion_length against the warehouse's validated kernels, in tokens of
    the model to train (a GRPO whose completions cannot hold a kernel has nothing to learn)."""
    return completion_cap_check(resources.warehouse, training_config.max_completion_length,
                                "training.max_completion_length", model=training_config.model,
                                training_config=training_config)


@task(name="sft", timeout_seconds=None)
def sft(training_config: TrainingConfig, export: Export) -> TrainResult:
    """Fine-tune on the SFT export; resumes from the newest checkpoint in the output dir."""
    result = train_sft(training_config, export, resume=True)
    _publish_curves("sft", result)
    return result


@task(name="grpo", timeout_seconds=None)
def grpo(resources: Resources, training_config: TrainingConfig, validation_config: ValidationConfig, export: Export,
         base_model: str | None) -> TrainResult:
    """GRPO on the RL export with the judge's batch API as the reward (a warm pool per process,
    timing kernels only when the reward uses speedups: `grpo_judge_config`)."""
    result = train_grpo(training_config, validation_config, export, base_model=base_model, resume=True,
                        judge_for=resources.judge)
    _publish_curves("grpo", result)
    return result


def _publish_curves(trainer: str, result: TrainResult) -> None:
    if result.curves_png:
        publish_image(f"{trainer}-curves", Path(result.curves_png), f"{trainer} training curves")
    metrics = {k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in result.metrics.items()}
    publish_markdown(f"{trainer}-metrics", f"# {trainer}\n\n" + markdown_table([{"steps": result.steps, **metrics}]),
                     f"{trainer} metrics")


@materialize(asset_key("checkpoints"), asset_deps=[asset_key("exports")], name="store-checkpoint", by="autotriton")
def store_checkpoint(resources: Resources, run: Run, result: TrainResult) -> str:
    store_checkpoint_result(resources.warehouse, run, result)
    return result.checkpoint.key
