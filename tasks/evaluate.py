"""Evaluation tasks: generate and judge on a suite, then store samples and metrics."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefect import get_run_logger, task
from prefect.assets import materialize
from prefect.cache_policies import NO_CACHE

from autotriton.tasks.artifacts import asset_key, markdown_table, publish_image, publish_markdown
from autotriton.tasks.resources import Resources
from autotriton.warehouse import Run

if TYPE_CHECKING:
    from autotriton.evaluation import EvaluationResult
    from autotriton.flows.config import PipelineConfig  # the composed config (type only: tasks never import flows)


@task(name="choose-model", cache_policy=NO_CACHE)
def model_to_evaluate(resources: Resources, config: PipelineConfig, model: str = "") -> str:
    """`model` when given, else the newest checkpoint in the warehouse, else the configured model."""
    if model:
        return model
    checkpoints = resources.warehouse.checkpoints()
    return checkpoints[-1].path if checkpoints else (config.evaluation.model or config.training.model)


@task(name="evaluate-model", task_run_name="evaluate-{model}")
def evaluate_model(resources: Resources, config: PipelineConfig, model: str) -> EvaluationResult:
    """Evaluate `model` (HF id, path or checkpoint dir) on config.evaluation.suite with the judge."""
    from autotriton.evaluation import cap_problems, evaluate, load_suite, make_generator, shrink_suite_problem
    from autotriton.tasks.steps import completion_cap_check

    ev = config.evaluation
    logger = get_run_logger()
    problems = load_suite(suite_path(config), levels=ev.levels or None, ids=ev.ids or None, name_glob=ev.name_glob or None)
    in_suite = len(problems)
    if ev.max_problems and in_suite > ev.max_problems:  # said, so a capped evaluation never passes for a whole suite
        logger.warning(f"evaluating {ev.max_problems} of {in_suite} problems (evaluation.max_problems; "
                       f"pick_problems={ev.pick_problems})")
        problems = cap_problems(problems, ev.max_problems, ev.pick_problems, ev.seed)
    if ev.shrink:
        problems = [shrink_suite_problem(p) for p in problems]
    generator = make_generator(ev, model_path=model)
    cap = None
    if getattr(generator, "tokenizer", None) is not None:
        cap = completion_cap_check(resources.warehouse, ev.max_new_tokens, "evaluation.max_new_tokens",
                                   tokenizer=generator.tokenizer)
        if not cap.holds:
            logger.warning(cap.message())
    result = evaluate(problems, generator, ev, config.validation, judge=resources.judge(config.validation))
    result.metrics["problems_in_suite"] = in_suite
    if cap is not None and cap.shortest is not None:
        result.metrics["completion_cap"] = cap.to_dict()
    return result


def suite_path(config: PipelineConfig) -> str:
    from autotriton.paths import DEMO_EVAL_SUITE

    return config.evaluation.suite or str(DEMO_EVAL_SUITE)


@materialize(
    asset_key("evaluations"), asset_key("verdicts"),
    asset_deps=[asset_key("checkpoints")], name="store-evaluation", by="autotriton",
)
def store_evaluation(resources: Resources, run: Run, result: EvaluationResult, report_dir: str) -> dict[str, Any]:
    from autotriton.evaluation import write_report
    from autotriton.tasks.steps import store_evaluation_result

    new = store_evaluation_result(resources.warehouse, run, result)  # all of the evaluation's rows, or none
    report = write_report(result, Path(report_dir) / result.evaluation.key)
    metrics = result.evaluation.metrics
    publish_markdown("evaluation", "# Evaluation\n\n" + markdown_table([_flat_metrics(result)]) +
                     f"\n\nReport: `{report}`", f"{result.evaluation.generator} on {result.evaluation.suite}")
    for png in sorted(Path(report).parent.glob("*.png")):  # write_report returns the report.md beside its plots
        publish_image(f"evaluation-{png.stem}", png, png.stem)
    return {"evaluation_key": result.evaluation.key, "new_rows": new, "report": str(report), "metrics": metrics}


def _flat_metrics(result: EvaluationResult) -> dict[str, Any]:
    """One row for the evaluation artifact: generator, suite and the registry's FLAT metrics."""
    from autotriton.evaluation import flat_metrics

    m = result.evaluation.metrics
    return {"generator": result.evaluation.generator, "suite": result.evaluation.suite, **flat_metrics(m.get("overall", m))}
