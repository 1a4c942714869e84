"""Warehouse runs for flows: every row a flow writes carries the run (and so the flow-run id)."""

from __future__ import annotations

from typing import Any

from prefect import task

from autotriton.tasks import resources


@task(name="start-run")
def start_run(db_path: str, kind: str, config: Any):
    """Open the process-wide warehouse and record a run; its flow_run_id is Prefect's."""
    return resources.warehouse(db_path).start_run(kind, config)


@task(name="finish-run")
def finish_run(db_path: str, run: Any, status: str, summary: dict[str, Any]) -> None:
    resources.warehouse(db_path).finish_run(run, status, summary)
