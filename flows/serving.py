"""Deployments served by `autotriton serve`: the scheduled refresh and the on-demand flows."""

from __future__ import annotations

from typing import Any

from autotriton.flows.config import PipelineConfig


def build_deployments(cfg: PipelineConfig) -> list[Any]:
    """refresh-dataset on `orchestration.refresh_cron`; train, evaluate and retrain on demand.
    Each deployment's parameters are the effective config, editable in the UI."""
    from prefect.schedules import Cron

    from autotriton.flows.pipeline import evaluate, refresh_dataset, retrain, train

    try:
        schedule = Cron(cfg.orchestration.refresh_cron, timezone=cfg.orchestration.timezone)
    except Exception as exc:  # croniter / pydantic reject the expression
        raise ValueError(f"orchestration.refresh_cron = {cfg.orchestration.refresh_cron!r} is not a cron expression ({exc})") from exc
    params = {"config": cfg.model_dump(mode="json")}
    return [
        refresh_dataset.to_deployment(name="scheduled-refresh", schedules=[schedule], parameters=params,
                                      description="Dataset refresh on a schedule"),
        train.to_deployment(name="train", parameters=params, description="SFT then GRPO on the newest exports"),
        evaluate.to_deployment(name="evaluate", parameters=params, description="Evaluate the newest checkpoint"),
        retrain.to_deployment(name="retrain", parameters=params, description="refresh -> train -> evaluate"),
    ]
