"""Training tasks: SFT then GRPO, each consuming a recorded export; checkpoints are stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import task
from prefect.assets import materialize

from autotriton.tasks import resources
from autotriton.tasks.artifacts import asset_key, markdown_table, publish_image, publish_markdown


@task(name="sft", timeout_seconds=None)
def sft(training_config: Any, export: Any):
    """Fine-tune on the SFT export; resumes from the newest checkpoint in the output dir."""
    from autotriton.training.sft import run_sft

    result = run_sft(training_config, export.path, export_key=export.key, resume=True, progress=True)
    _publish_curves("sft", result)
    return result


@task(name="grpo", timeout_seconds=None)
def grpo(training_config: Any, validation_config: Any, export: Any, base_model: str | None):
    """GRPO on the RL export with the judge's batch API as the reward (a warm pool per process)."""
    from autotriton.training.grpo import run_grpo

    result = run_grpo(training_config, export.path, resources.judge(validation_config), export_key=export.key,
                      base_model=base_model, resume=True, progress=True)
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
    resources.warehouse(db_path).put_checkpoints(run, [result.checkpoint])
    return result.checkpoint.key
