"""Distillation tasks: one cached task per problem, then one store.

The per-problem task is cached on its inputs (the problem's source, the teacher and judge
configs and versions) and on the task's source, so an unchanged problem is never re-distilled
or re-judged, and a run killed mid-way resumes from the problems already done.
"""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.assets import materialize
from prefect.cache_policies import INPUTS, TASK_SOURCE

from autotriton.tasks import resources
from autotriton.tasks.artifacts import asset_key, markdown_table, publish_markdown, publish_table
from autotriton.tasks.steps import store_distill_results


def judge_fingerprint(validation_config: Any) -> str:
    """What a verdict depends on besides the candidate: the judge config and the judge's code."""
    from autotriton.hashing import content_key
    from autotriton.versioning import package_fingerprint

    return content_key("judge", validation_config.model_dump(mode="json"), package_fingerprint("autotriton.validation"))


@task(
    name="distill-problem",
    task_run_name="distill-{problem.name}",
    cache_policy=INPUTS + TASK_SOURCE,
    persist_result=True,
)
def distill_problem(problem: Any, distill_config: Any, validation_config: Any, teacher_version: str, judge_version: str,
                    environments: Any = None):
    """Candidates (with repairs) and verdicts for one problem. `teacher_version` and
    `judge_version` are cache-key inputs: new teacher data or judge code means new work.
    `environments` (EnvironmentConfig): the problem is judged with its dependency environment."""
    from autotriton.distillation import distill, make_explainer
    from autotriton.environments import environment_paths

    paths, _missing = environment_paths([problem], environments)  # a missing one: the judge reports the reference's ImportError
    return distill([problem], resources.teacher(distill_config), distill_config, validation_config,
                   judge=resources.judge(validation_config), explainer=make_explainer(distill_config), environments=paths)


@task(name="judge-candidates", cache_policy=INPUTS + TASK_SOURCE, persist_result=True)
def judge_candidates(jobs: list[tuple[str, str]], validation_config: Any, judge_version: str):
    """Verdicts for (problem source, candidate code) pairs that have none yet (e.g. dataset pairs)."""
    return resources.judge(validation_config).validate_many(jobs)


@materialize(
    asset_key("candidates"), asset_key("verdicts"),
    asset_deps=[asset_key("problems")], name="store-distilled", by="autotriton",
)
def store_distilled(db_path: str, run: Any, results: list[Any], extra_verdicts: list[Any]) -> dict[str, Any]:
    """Store every candidate and verdict (`store_distill_results`, one transaction); publish the
    yield and verdict mix."""
    candidates = [c for r in results for c in r.candidates]
    verdicts = [v for r in results for v in r.verdicts] + list(extra_verdicts)
    new = store_distill_results(resources.warehouse(db_path), run, results, extra_verdicts)
    new_candidates, new_verdicts = new["new_candidates"], new["new_verdicts"]
    mix: dict[str, int] = {}
    for v in verdicts:
        mix[v.status] = mix.get(v.status, 0) + 1
    solved = sum(1 for r in results if r.pairs)
    pairs = sum(len(r.pairs) for r in results)
    summary = {
        "problems": len(results), "candidates": len(candidates), "verdicts": dict(sorted(mix.items())),
        "validated_pairs": pairs, "problems_solved": solved,
        "yield": (solved / len(results)) if results else 0.0,
        "new_candidates": new_candidates, "new_verdicts": new_verdicts,
    }
    publish_table("verdict-mix", [{"status": k, "count": v} for k, v in sorted(mix.items())], "Verdicts by status")
    publish_markdown("distill-yield", "# Distillation yield\n\n" + markdown_table([
        {"problems": len(results), "solved": solved, "yield": f"{summary['yield']:.1%}", "validated pairs": pairs,
         "candidates": len(candidates), "new candidates": new_candidates}
    ]), "Problems solved by the teacher, validated by the judge")
    return summary
