"""Training tasks: SFT then GRPO, each consuming a recorded export; checkpoints are stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import task
from prefect.assets import materialize

from autotriton.tasks import resources
from autotriton.tasks.artifacts import asset_key, markdown_table, publish_image, publish_markdown
from autotriton.tasks.steps import store_checkpoint_result, train_grpo, train_sft


@task(name="sft", timeout_seconds=None)
def sft(training_config: Any, export: Any):
    """Fine-tune on the SFT export; resumes from the newest checkpoint in the output dir."""
    result = train_sft(training_config, export, resume=True)
    _publish_curves("sft", result)
    return result


@task(name="grpo", timeout_seconds=None)
def grpo(training_config: Any, validation_config: Any, export: Any, base_model: str | None):
    """GRPO on the RL export with the judge's batch API as the reward (a warm pool per process,
    timing kernels only when the reward uses speedups: `grpo_judge_config`)."""
    result = train_grpo(training_config, validation_config, export, base_model=base_model, resume=True,
                        judge_for=resources.judge)
    _publish_curves("grpo", result)
    return result


def _publish_curves(trainer: str, result: Any) -> None:
    if result.curves_png:
        publish_image(f"{trainer}-curves", Path(result.curves_png), f"{trainer} training curves")
    metrics = {k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in result.metrics.items()}
    publish_markdown(f"{trainer}-metrics", f"# {trainer}\n\n" + markdown_table([{"steps": result.steps, **metrics}]),
                     f"{trainer} metrics")


@materialize(asset_key("checkpoints"), asset_deps=[asset_key("exports")], name="store-checkpoint", by="autotriton")
def store_checkpoint(db_path: str, run: Any, result: Any) -> str:
    store_checkpoint_result(resources.warehouse(db_path), run, result)
    return result.checkpoint.key
