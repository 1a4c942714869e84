"""The flows: refresh_dataset, train, evaluate, and retrain (all three, end to end).

Flows only compose tasks (tasks/). Each takes the effective PipelineConfig as its one
parameter (the Prefect UI shows it as a form), defaulting to the layered config on disk.
"""

from __future__ import annotations

from typing import Any

from prefect import flow, get_run_logger, unmapped
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from autotriton.capacity import require
from autotriton.distillation import teacher_spec
from autotriton.flows.config import PipelineConfig, load_config
from autotriton.tasks.artifacts import Progress, markdown_table, on_warehouse, publish_markdown
from autotriton.tasks.distill import (
    distill_problem, judge_candidates, judge_fingerprint, runnable_problems, store_distilled, teacher_version, unjudged_jobs,
)
from autotriton.tasks.evaluate import evaluate_model, model_to_evaluate, store_evaluation
from autotriton.tasks.export import export_training_sets
from autotriton.tasks.harvest import (
    harvest_dataset_source, harvest_github_source, harvest_local_source, harvest_packages_source, harvest_synthetic_source,
    load_harvest_state, store_harvest,
)
from autotriton.tasks.resources import flow_resources
from autotriton.tasks.runs import run_scope
from autotriton.tasks.train import grpo, sft, store_checkpoint, training_completion_cap, training_export


def _config(config: PipelineConfig | None) -> PipelineConfig:
    return config if config is not None else load_config()[0]


def task_runner(config: PipelineConfig):
    """Threads on one machine (default) or Dask (prefect-dask) for many."""
    orch = config.orchestration
    if orch.task_runner == "dask":
        from prefect_dask import DaskTaskRunner

        if orch.dask_address:
            return DaskTaskRunner(address=orch.dask_address)
        return DaskTaskRunner(cluster_kwargs={"n_workers": orch.max_workers, "threads_per_worker": 1, "processes": True})
    return ThreadPoolTaskRunner(max_workers=orch.max_workers)


@flow(name="refresh-dataset")
def refresh_dataset(config: PipelineConfig | None = None) -> dict[str, Any]:
    """harvest -> extract -> dedup -> distill -> validate -> store -> export."""
    cfg = _config(config)
    db = cfg.warehouse.path
    with flow_resources(db) as res, run_scope(res.warehouse, "refresh", cfg, as_tasks=True) as scope:
        run = scope.run
        h, v, orch = cfg.harvest, cfg.validation, cfg.orchestration
        envs = cfg.environments
        state = load_harvest_state(res, h)  # handed to each harvest as data, stored with its rows
        futures = [harvest_local_source.submit(p, h, v, envs, state) for p in h.local_paths]
        futures += [harvest_dataset_source.submit(p, h, v, envs, state) for p in h.dataset_paths]
        if h.synthetic_count:
            futures.append(harvest_synthetic_source.submit(h.synthetic_count, h.synthetic_seed, h, v))
        if h.synthetic_pointwise_count:
            futures.append(harvest_synthetic_source.submit(h.synthetic_pointwise_count, h.synthetic_seed, h, v, "pointwise"))
        if h.synthetic_elementwise_count:
            futures.append(harvest_synthetic_source.submit(h.synthetic_elementwise_count, h.synthetic_seed, h, v, "elementwise"))
        futures += [harvest_packages_source.submit(p, h, v, envs, state) for p in h.sources_files]
        if h.github:
            github = harvest_github_source.with_options(retries=orch.network_retries, timeout_seconds=orch.network_timeout_s)
            futures.append(github.submit(h, v, envs, state))
        harvested = on_warehouse(store_harvest, db)(res, run, [f.result() for f in futures], h.state_path)

        problems = runnable_problems(res, cfg.distill.max_problems)
        judge_version = judge_fingerprint(v)
        distill_task = distill_problem
        if teacher_spec(cfg.distill.teacher).network:  # an endpoint: its tasks are retried
            distill_task = distill_problem.with_options(retries=orch.network_retries, timeout_seconds=orch.network_timeout_s)
        progress = Progress("distill-progress", f"{len(problems)} problems")
        results = []
        for done, future in enumerate(as_completed(distill_task.map(
                unmapped(res), problems, unmapped(cfg.distill), unmapped(v), unmapped(teacher_version(res, cfg.distill)),
                unmapped(judge_version), unmapped(cfg.environments))), 1):
            results.append(future.result())
            progress.update(done / max(1, len(problems)))
        # Ready pairs imported from datasets (KernelBook) have candidates but no verdict yet.
        pending = unjudged_jobs(res)
        extra = judge_candidates(res, pending, v, judge_version) if pending else []
        distilled = on_warehouse(store_distilled, db)(res, run, results, extra)
        exports = on_warehouse(export_training_sets, db)(res, run, cfg)
        scope.summary = {"run_id": run.run_id, "harvest": harvested, "distill": distilled,
                         "exports": {k: (e.key if e else None) for k, e in exports.items()}}
    return {**scope.summary, "export_records": exports}


@flow(name="train")
def train(config: PipelineConfig | None = None, sft_export_key: str = "", rl_export_key: str = "") -> dict[str, Any]:
    """SFT on the newest (or given) `sft` export, then GRPO from the SFT model on the `rl` export."""
    cfg = _config(config)
    db = cfg.warehouse.path
    with flow_resources(db) as res, run_scope(res.warehouse, "train", cfg, as_tasks=True) as scope:
        run = scope.run
        sft_export = training_export(res, "sft", sft_export_key)
        rl_export = training_export(res, "rl", rl_export_key)
        out: dict[str, Any] = {"run_id": run.run_id}
        # Before any training: a GRPO whose completions cannot hold a kernel has nothing to learn.
        cap = require(training_completion_cap(res, cfg.training))
        if cap.shortest is not None:
            get_run_logger().info(cap.message())
            out["completion_cap"] = cap.to_dict()
        base_model = None
        if sft_export is not None:
            sft_result = sft(cfg.training, sft_export)
            out["sft_checkpoint"] = on_warehouse(store_checkpoint, db)(res, run, sft_result)
            out["sft"] = {"path": sft_result.checkpoint.path, "steps": sft_result.steps, "metrics": sft_result.metrics}
            base_model = sft_result.checkpoint.path
        else:
            get_run_logger().warning("no sft export (nothing validated yet): GRPO starts from the base model")
        if rl_export is None:
            raise ValueError(f"{db}: no rl export; run the refresh-dataset flow (autotriton refresh) first")
        grpo_result = grpo(res, cfg.training, cfg.validation, rl_export, base_model)
        out["grpo_checkpoint"] = on_warehouse(store_checkpoint, db)(res, run, grpo_result)
        out["grpo"] = {"path": grpo_result.checkpoint.path, "steps": grpo_result.steps, "metrics": grpo_result.metrics}
        out["model"] = grpo_result.checkpoint.path
        scope.summary = out
    return out


@flow(name="evaluate")
def evaluate(config: PipelineConfig | None = None, model: str = "") -> dict[str, Any]:
    """Evaluate a model (default: the newest checkpoint in the warehouse) on evaluation.suite."""
    cfg = _config(config)
    db = cfg.warehouse.path
    with flow_resources(db) as res, run_scope(res.warehouse, "evaluate", cfg, as_tasks=True) as scope:
        model = model_to_evaluate(res, cfg, model)
        result = evaluate_model(res, cfg, model)
        stored = on_warehouse(store_evaluation, db)(res, scope.run, result, cfg.evaluation.report_dir)
        scope.summary = {"run_id": scope.run.run_id, "model": model, **stored}
    return scope.summary


@flow(name="retrain")
def retrain(config: PipelineConfig | None = None) -> dict[str, Any]:
    """refresh-dataset -> train -> evaluate: the whole pipeline, end to end."""
    cfg = _config(config)
    with flow_resources(cfg.warehouse.path):  # the three subflows share its warehouse handle and warm judges
        refreshed = refresh_dataset(cfg)
        trained = train(cfg)
        evaluated = evaluate(cfg, trained["model"])
    report = {"refresh": {k: v for k, v in refreshed.items() if k != "export_records"}, "train": trained, "evaluate": evaluated}
    publish_markdown("retrain-report", retrain_markdown(report), "rows per stage, models trained, evaluation")
    return report


def retrain_markdown(report: dict[str, Any]) -> str:
    h = report["refresh"]["harvest"]
    d = report["refresh"]["distill"]
    rows = [
        {"stage": "harvest", "result": f"{h['modules']} modules, {h['runnable']} runnable, {h['duplicates']} duplicates",
         "new rows": ", ".join(f"{k} {v}" for k, v in h["new_rows"].items())},
        {"stage": "distill + validate", "result": f"{d['problems']} problems, {d['validated_pairs']} validated pairs, yield {d['yield']:.0%}",
         "new rows": f"candidates {d['new_candidates']}, verdicts {d['new_verdicts']}"},
        {"stage": "export", "result": ", ".join(f"{k} {v}" for k, v in report["refresh"]["exports"].items()), "new rows": ""},
        {"stage": "train", "result": f"sft {report['train'].get('sft', {}).get('steps', 0)} steps, grpo {report['train']['grpo']['steps']} steps",
         "new rows": f"model {report['train']['model']}"},
    ]
    from autotriton.evaluation import flat_metrics

    ev = flat_metrics(report["evaluate"]["metrics"])  # the evaluation registry's FLAT row
    return ("# retrain\n\n" + markdown_table(rows) + "\n\n## evaluation\n\n" + markdown_table([ev]) +
            f"\n\nReport: `{report['evaluate']['report']}`\n")
