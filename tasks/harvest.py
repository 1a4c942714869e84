"""Harvest tasks: read sources (compute, retried when they touch the network), then store.

The incremental state comes out of the warehouse once (`load_harvest_state`, in the flow
process), goes to every harvest task as data (they may run on Dask workers) and comes back in
each HarvestResult.state; `store_harvest` writes it with the harvest's rows (tasks/harvest_state.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prefect import get_run_logger, task
from prefect.assets import materialize

from autotriton.environments import EnvironmentConfig
from autotriton.tasks.artifacts import asset_key, publish_table
from autotriton.tasks.harvest_state import harvest_state_data, import_note, state_for_harvest
from autotriton.tasks.resources import Resources
from autotriton.tasks.steps import store_harvest_results
from autotriton.warehouse import Run

if TYPE_CHECKING:
    from autotriton.harvesting import HarvestConfig, HarvestResult
    from autotriton.validation import ValidationConfig


@task(name="load-harvest-state")
def load_harvest_state(resources: Resources, harvest_config: HarvestConfig) -> dict[str, Any] | None:
    """The incremental state the harvests start from, as data (None: harvest.incremental is off)."""
    return harvest_state_data(resources.warehouse, harvest_config)


@task(name="harvest-local", task_run_name="harvest-local-{path}")
def harvest_local_source(path: str, harvest_config: HarvestConfig, validation_config: ValidationConfig,
                        environments: EnvironmentConfig | None = None, state: dict[str, Any] | None = None) -> HarvestResult:
    from autotriton.harvesting import harvest_local

    return harvest_local(path, harvest_config, commit_state=False, state=state_for_harvest(state),
                         validation_config=validation_config, environments=environments)


@task(name="harvest-dataset", task_run_name="harvest-dataset-{path}")
def harvest_dataset_source(path: str, harvest_config: HarvestConfig, validation_config: ValidationConfig,
                        environments: EnvironmentConfig | None = None, state: dict[str, Any] | None = None) -> HarvestResult:
    from autotriton.harvesting import harvest_dataset

    return harvest_dataset(path, harvest_config, commit_state=False, state=state_for_harvest(state),
                           validation_config=validation_config, environments=environments)


@task(name="harvest-synthetic", task_run_name="harvest-synthetic-{family}-{count}-seed-{seed}")
def harvest_synthetic_source(count: int, seed: int, harvest_config: HarvestConfig,
                             validation_config: ValidationConfig, family: str = "fused") -> HarvestResult:
    from autotriton.harvesting import harvest_synthetic

    return harvest_synthetic(count, seed, harvest_config, validation_config=validation_config, family=family)


@task(name="harvest-packages", task_run_name="harvest-packages-{path}")
def harvest_packages_source(path: str, harvest_config: HarvestConfig, validation_config: ValidationConfig,
                            environments: EnvironmentConfig | None = None,
                            state: dict[str, Any] | None = None) -> HarvestResult:
    """The packages and folders of one sources file (pip download is retried by the next refresh:
    a failed fetch is recorded as a rejection and the package stays unharvested in the state),
    each module probed with its own dependencies (`environments`)."""
    from autotriton.harvesting import harvest_packages

    return harvest_packages(path, harvest_config, commit_state=False, state=state_for_harvest(state),
                            validation_config=validation_config, environments=environments).result


@task(name="harvest-github", retries=3, retry_delay_seconds=[10, 60, 300])
def harvest_github_source(harvest_config: HarvestConfig, validation_config: ValidationConfig,
                        environments: EnvironmentConfig | None = None, state: dict[str, Any] | None = None) -> HarvestResult:
    """GitHub search + tree walk + blobs. Rate limits are waited out inside; other network
    failures are retried by Prefect (the incremental state makes a retry cheap)."""
    from autotriton.harvesting import harvest_github

    return harvest_github(harvest_config, commit_state=False, state=state_for_harvest(state),
                          validation_config=validation_config, environments=environments)


@materialize(
    asset_key("sources"), asset_key("modules"), asset_key("problems"), asset_key("rejections"),
    name="store-harvest", by="autotriton",
)
def store_harvest(resources: Resources, run: Run, results: list[HarvestResult],
                  legacy_state_path: str = "") -> dict[str, Any]:
    """Store every harvest result with the incremental state it carries (`store_harvest_results`:
    one transaction; a warehouse without state first imports the side file at
    `legacy_state_path`) and publish the yield. Returns new rows per table and stats."""
    new = store_harvest_results(resources.warehouse, run, results, legacy_state_path)
    totals = harvest_totals(results)
    imported = results[0].extra.get("harvest_state_imported") if results else None
    if imported:
        get_run_logger().warning(import_note(imported))
        totals["harvest_state_imported"] = imported
    publish_table("harvest-yield", [
        {"source": r.sources[0].repo if r.sources else "?", "files": r.stats.get("files", 0), "modules": r.stats.get("modules", 0),
         "runnable": r.stats.get("runnable", 0), "duplicates": r.stats.get("duplicates", 0)} for r in results
    ], "Harvest yield per source")
    publish_table("harvest-rejections", [{"reason": k, "count": v} for k, v in sorted(totals["rejected"].items())],
                  "Why harvested modules were rejected")
    return {"new_rows": new, **totals}


def harvest_totals(results: list[HarvestResult]) -> dict[str, Any]:
    out: dict[str, Any] = {"files": 0, "modules": 0, "runnable": 0, "duplicates": 0, "rejected": {}}
    for r in results:
        s = r.summary()
        for key in ("files", "modules", "runnable", "duplicates"):
            out[key] += int(s.get(key, 0))
        for reason, count in s.get("rejected", {}).items():
            out["rejected"][reason] = out["rejected"].get(reason, 0) + count
    return out


def reprobe_stored(cfg: Any, *, source_kind: str | None = None, names: list[str] | None = None,
                   dry_run: bool = False) -> dict[str, Any]:
    """`harvest reprobe`: the warehouse's runnable problems (of one source kind, whose names match
    one of `names`' globs) through the current probe, each with its dependency environment; those
    it refuses for what they are (harvesting.reprobe.RETIRING) become rejected under a run of their
    own (unless `dry_run`). Returns harvesting.reprobe's summary, plus `new_rows`."""
    from autotriton.environments import environment_paths
    from autotriton.harvesting.core import SandboxProbe
    from autotriton.harvesting.reprobe import reprobe_problems, reprobe_summary
    from autotriton.tasks.db import open_warehouse, runnable_problems
    from autotriton.tasks.runs import run_scope

    wh = open_warehouse(cfg.warehouse.path, read_only=dry_run)
    problems = runnable_problems(wh, source_kind=source_kind, names=names or ())
    envs, _missing = environment_paths(problems, cfg.environments)  # a missing one: the probe reports the ImportError
    with SandboxProbe(cfg.validation) as probe:
        results = reprobe_problems(problems, probe, envs)
    summary = reprobe_summary(results)
    if not dry_run:
        reasons = {r.problem_key: (r.reason or "", r.detail) for r in results if r.retire}
        with run_scope(wh, "harvest-reprobe", cfg) as scope:
            changed = wh.reject_problems(scope.run, reasons)
            summary["new_rows"] = {"problems_rejected": changed}
            scope.summary = summary
    return summary
