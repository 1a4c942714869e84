"""`autotriton distill`: turn the warehouse's runnable problems into judged Triton candidates."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from autotriton.distillation import TEACHERS
from autotriton.flows.cli.common import app, console, emit_json, fail, load_config_or_fail, writes_rows

TEACHER_HELP = ", ".join(f"{s.name} ({s.description})" for s in TEACHERS.values())


@app.command("distill")
@writes_rows("distill")
def distill_cmd(
    teacher: Optional[str] = typer.Option(None, "--teacher", "-t", help=f"one of: {TEACHER_HELP} [config: distill.teacher]", show_default=False),
    samples: Optional[int] = typer.Option(None, "--samples", "-k", min=1, help="candidates per problem [config: distill.samples]", show_default=False),
    rounds: Optional[int] = typer.Option(None, "--rounds", "-r", min=0, help="repair rounds: the validator's errors go back to the LLM teacher [config: distill.rounds]", show_default=False),
    max_problems: Optional[int] = typer.Option(None, "--max-problems", "-n", min=0, help="distill at most this many problems, 0 = all [config: distill.max_problems]", show_default=False),
    time_budget: Optional[float] = typer.Option(None, "--time-budget", min=0, help="seconds: start no batch that would end past this; finished batches are stored and a later run continues [config: distill.time_budget_s]", show_default=False),
    suite: Optional[str] = typer.Option(None, "--suite", help="only problems of this suite (e.g. kernelbench/level1)", show_default=False),
    source_kind: Optional[str] = typer.Option(None, "--source-kind", help="only problems harvested from this kind of source: pypi, local, github, dataset, suite, synthetic", show_default=False),
    names: list[str] = typer.Option([], "--name", help="only problems whose name matches this glob, e.g. 'synthetic_pointwise_*' (repeatable: any of them)", show_default=False),
    redo: bool = typer.Option(False, "--redo", help="also distil problems this teacher was already run on (default: skip them, so a cut-off build continues) [config: distill.skip_distilled=false]"),
    redo_unsolved: bool = typer.Option(False, "--redo-unsolved", help="distil again the problems this teacher was run on without a validated pair (e.g. after a converter fix); solved ones stay skipped [config: distill.redo_unsolved]"),
    replay: list[Path] = typer.Option([], "--replay", help="extra replay JSONL file or teacher cache dir for --teacher replay (repeatable)"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: problems, candidates, verdicts (status -> count), validated_pairs, tokens, ..."),
) -> None:
    """Distil the warehouse's runnable problems with a teacher, judge every candidate with the
    validator (repairing failures with the LLM teacher for --rounds rounds), and store candidates
    and verdicts with lineage. Only verdicts with reward 1 count as validated pairs."""
    if teacher is not None and teacher not in TEACHERS:
        fail(f"--teacher {teacher!r}: choose one of {', '.join(TEACHERS)}.")
    extra: dict[str, Any] = {"distill.teacher": teacher, "distill.samples": samples, "distill.rounds": rounds,
                             "distill.max_problems": max_problems, "distill.time_budget_s": time_budget, "distill.skip_distilled": False if redo else None,
                             "distill.redo_unsolved": True if redo_unsolved else None}
    cfg, _ = load_config_or_fail(extra)
    if replay:
        cfg.distill.replay_paths = [*cfg.distill.replay_paths, *(str(p) for p in replay)]

    from autotriton.distillation import (GPUUnavailableError, ReplayFormatError, TeacherError,
                                         combine_results, interleave_by_origin, make_explainer, make_teacher)
    from autotriton.tasks.db import (OPEN_ERRORS, distilled_problem_keys, open_warehouse, problem_origins,
                                     runnable_problems, solved_problem_keys)
    from autotriton.tasks.runs import run_scope
    from autotriton.tasks.steps import distill_in_batches
    from autotriton.validation import JudgeError, JudgePool

    try:
        chosen = make_teacher(cfg.distill)
        explainer = make_explainer(cfg.distill)
    except GPUUnavailableError as exc:
        fail(f"--teacher {cfg.distill.teacher}: {exc}")
    except (ReplayFormatError, FileNotFoundError) as exc:
        fail(str(exc))

    out = console(json_out)
    try:
        wh = open_warehouse(cfg.warehouse.path, export_dir=cfg.warehouse.export_dir)  # open only while writing
    except OPEN_ERRORS as exc:
        fail(str(exc))
    with wh:
        problems = runnable_problems(wh, suite=suite, source_kind=source_kind, names=names)
        if not problems:
            where = ((f" of suite {suite!r}" if suite else "") + (f" from {source_kind!r} sources" if source_kind else "")
                     + (f" named like {' or '.join(map(repr, names))}" if names else ""))
            fail(f"{cfg.warehouse.path}: no runnable problems{where} in the warehouse. "
                 "Harvest some first (`autotriton harvest ...`), or pass --db pointing at another warehouse.")
        skipped = 0
        if cfg.distill.skip_distilled:  # a build continues where the warehouse it carries stopped
            done = distilled_problem_keys(wh, chosen.name)
            if cfg.distill.redo_unsolved:
                done &= solved_problem_keys(wh, cfg.training.require_sizes)  # solved as the dataset counts it
            skipped = sum(p.key in done for p in problems)
            problems = [p for p in problems if p.key not in done]
            if not problems:
                if json_out:
                    emit_json({"problems": 0, "skipped_distilled": skipped})
                else:
                    out.print(f"all {skipped} runnable problem(s) were already distilled by teacher {chosen.name}; "
                              "nothing to do (--redo distils them again)")
                return
        problems = interleave_by_origin(problems, problem_origins(wh, problems))  # every source gets its turn in a cut-off build
        if cfg.distill.max_problems:
            problems = problems[: cfg.distill.max_problems]
        results: list[Any] = []  # the finished batches, for the error message
        try:
            with run_scope(wh, "distill", cfg) as scope:
                run = scope.run
                out.print(f"distilling {len(problems)} problem(s) with teacher [bold]{chosen.name}[/] "
                          f"({cfg.distill.samples} sample(s), {cfg.distill.rounds} repair round(s)); judge on {cfg.validation.device}; run {run.run_id}")
                from autotriton.environments import environment_paths

                envs, missing = environment_paths(problems, cfg.environments)  # the problems' own dependencies
                for key, why in list(missing.items())[:5]:
                    out.print(f"[yellow]problem {key}: no dependency environment ({why}); its reference will fail to import[/]")
                step = cfg.distill.batch_problems or len(problems)
                batches = [problems[i:i + step] for i in range(0, len(problems), step)]
                if skipped:
                    out.print(f"skipping {skipped} problem(s) already distilled by {chosen.name} (--redo distils them again)")
                with JudgePool(cfg.validation) as judge:  # one warm judge for every batch
                    batch_run, new = distill_in_batches(wh, run, batches, chosen, cfg, judge, explainer=explainer,
                                                        environments=envs, say=out.print, finished=results)
                left = batch_run.left
                result = combine_results(results, batch_run.problems)
                reasons: dict[str, int] = {}
                for row in result.rejections:
                    reasons[row["reason"]] = reasons.get(row["reason"], 0) + 1
                summary = scope.summary = dict(result.stats, run_id=run.run_id, **new, unsolved=dict(sorted(reasons.items())),
                                               skipped_distilled=skipped, problems_left=left)
        except (TeacherError, JudgeError) as exc:  # recorded on the run (failed), then said plainly
            what = "the teacher" if isinstance(exc, TeacherError) else "the judge (validation.*)"
            kept = f"the {len(results)} finished batch(es) were stored" if results else "nothing was stored"
            fail(f"{what} failed, {kept}: {exc}")

    if json_out:
        emit_json(summary)
        return
    out.print(summary_table(summary))


def summary_table(s: dict[str, Any]) -> Table:
    table = Table(title=f"distill: teacher {s['teacher']}", show_header=False)
    table.add_column("what", style="cyan")
    table.add_column("value", justify="right")
    table.add_row("problems tried", str(s["problems"]))
    table.add_row("candidates", f"{s['candidates']} ({s['new_candidates']} new)")
    table.add_row("malformed outputs", str(s["malformed"]))
    for status, count in s["verdicts"].items():
        table.add_row(f"verdicts: {status}", str(count))
    table.add_row("validated pairs (reward 1)", str(s["validated_pairs"]))
    table.add_row("yield (problems solved)", f"{s['problems_solved']}/{s['problems']} = {s['yield']:.1%}")
    for reason, count in s.get("unsolved", {}).items():
        table.add_row(f"unsolved: {reason}", str(count))
    if "yield_own_sizes" in s:
        table.add_row("yield at own sizes (KernelBench's definition)", f"{s['yield_own_sizes']:.1%}")
    for name, count in s.get("failure_classes", {}).items():
        table.add_row(f"failure class: {name}", str(count))
    speed = s.get("speed") or {}
    if speed.get("timed_problems"):
        table.add_row("geomean speedup vs eager (best per solved problem)",
                      f"{speed['geomean_speedup_vs_eager']:.3g}x over {speed['timed_problems']}")
    if speed.get("timed_vs_compile"):
        table.add_row("geomean speedup vs torch.compile", f"{speed['geomean_speedup_vs_compile']:.3g}x over {speed['timed_vs_compile']}")
    tokens = s["tokens"]
    table.add_row("tokens (prompt / completion)", f"{tokens['prompt']:,} / {tokens['completion']:,}")
    table.add_row("tokens spent this run", f"{tokens['spent_this_run']:,}")
    table.add_row("cost", "unknown" if s["cost_usd"] is None else f"${s['cost_usd']:.4f} (this run ${s['cost_usd_this_run'] or 0:.4f})")
    if "explain_tokens" in s:
        cost = "" if s.get("explain_cost_usd") is None else f" (${s['explain_cost_usd']:.4f})"
        table.add_row("LLM explanations: tokens spent", f"{s['explain_tokens']:,}{cost}")
    for name, count in sorted(s["teacher_counters"].items()):
        table.add_row(f"teacher: {name}", str(count))
    return table
