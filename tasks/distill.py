"""Distillation tasks: one cached task per problem, then one store.

The per-problem task is cached on its inputs (the problem's source, the teacher and judge
configs and versions) and on the task's source, so an unchanged problem is never re-distilled
or re-judged, and a run killed mid-way resumes from the problems already done.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prefect import task
from prefect.assets import materialize
from prefect.cache_policies import INPUTS, NO_CACHE, TASK_SOURCE

from autotriton.environments import EnvironmentConfig
from autotriton.records import Problem, Verdict
from autotriton.tasks.artifacts import asset_key, markdown_table, publish_markdown, publish_table
from autotriton.tasks.resources import Resources
from autotriton.tasks.steps import store_distill_results
from autotriton.warehouse import Run

if TYPE_CHECKING:
    from autotriton.distillation import DistillConfig, DistillResult
    from autotriton.validation import ValidationConfig

# The per-problem tasks are cached on their inputs, less the Resources they are handed: those
# are this flow run's handles, not something a result depends on.
CACHED_ON_INPUTS = (INPUTS - "resources") + TASK_SOURCE


def judge_fingerprint(validation_config: ValidationConfig) -> str:
    """What a verdict depends on besides the candidate: the judge config and the judge's code."""
    from autotriton.hashing import content_key
    from autotriton.versioning import package_fingerprint

    return content_key("judge", validation_config.model_dump(mode="json"), package_fingerprint("autotriton.validation"))


def teacher_version(resources: Resources, distill_config: DistillConfig) -> str:
    """The version of the teacher `distill_config` names (a cache-key input of distill_problem)."""
    return resources.teacher(distill_config).version


@task(name="load-problems", cache_policy=NO_CACHE)
def runnable_problems(resources: Resources, limit: int = 0) -> list[Problem]:
    """The warehouse's runnable problems (the first `limit`; 0: all), to distil."""
    return resources.warehouse.problems(status="runnable", limit=limit or None)


@task(name="find-unjudged", cache_policy=NO_CACHE)
def unjudged_jobs(resources: Resources) -> list[tuple[str, str]]:
    """(problem source, code) of stored candidates with code and no verdict yet (e.g. dataset pairs)."""
    return [(problem.reference_source, candidate.code) for problem, candidate in resources.warehouse.unjudged_pairs()]


@task(
    name="distill-problem",
    task_run_name="distill-{problem.name}",
    cache_policy=CACHED_ON_INPUTS,
    persist_result=True,
)
def distill_problem(resources: Resources, problem: Problem, distill_config: DistillConfig,
                    validation_config: ValidationConfig, teacher_version: str, judge_version: str,
                    environments: EnvironmentConfig | None = None) -> DistillResult:
    """Candidates (with repairs) and verdicts for one problem. `teacher_version` and
    `judge_version` are cache-key inputs: new teacher data or judge code means new work.
    `environments` (EnvironmentConfig): the problem is judged with its dependency environment."""
    from autotriton.distillation import distill, make_explainer
    from autotriton.environments import environment_paths

    paths, _missing = environment_paths([problem], environments)  # a missing one: the judge reports the reference's ImportError
    return distill([problem], resources.teacher(distill_config), distill_config, validation_config,
                   judge=resources.judge(validation_config), explainer=make_explainer(distill_config), environments=paths)


@task(name="judge-candidates", cache_policy=CACHED_ON_INPUTS, persist_result=True)
def judge_candidates(resources: Resources, jobs: list[tuple[str, str]], validation_config: ValidationConfig,
                     judge_version: str) -> list[Verdict]:
    """Verdicts for (problem source, candidate code) pairs that have none yet (e.g. dataset pairs)."""
    return resources.judge(validation_config).validate_many(jobs)


@materialize(
    asset_key("candidates"), asset_key("verdicts"),
    asset_deps=[asset_key("problems")], name="store-distilled", by="autotriton",
)
def store_distilled(resources: Resources, run: Run, results: list[DistillResult], extra_verdicts: list[Verdict]) -> dict[str, Any]:
    """Store every candidate and verdict (`store_distill_results`, one transaction); publish the
    yield and verdict mix."""
    candidates = [c for r in results for c in r.candidates]
    verdicts = [v for r in results for v in r.verdicts] + list(extra_verdicts)
    new = store_distill_results(resources.warehouse, run, results, extra_verdicts)
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
