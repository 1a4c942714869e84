"""`autotriton eval`: benchmark a model (local or behind an endpoint) on a suite, judged by our validator.

    autotriton eval --suite FILE [--model PATH|ID|CHECKPOINT_KEY | --endpoint URL --model NAME]
                    [--samples K] [--device cpu|cuda] [--max-problems N] [--json]
    autotriton eval --suite KernelBench/level1 --kernels runs/RUN   (judge KernelBench's generated kernels as they are)
    autotriton eval compare REF_A REF_B ...      (evaluation keys or run ids, from the warehouse)
    autotriton eval report REF [--out DIR]       (rewrite the markdown report of a stored evaluation)
    autotriton eval convert-tritonbench PATH --out SUITE.jsonl

Every sample's candidate and verdict, the suite's problems and the Evaluation record land in the
warehouse with the run's lineage; the report (markdown + PNG) goes to evaluation.report_dir/<key>/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from autotriton.flows.cli.common import app, console, emit_json, ERR, fail, load_config_or_fail, writes_rows

eval_app = typer.Typer(
    help="Evaluate a model on a benchmark suite (KernelBench, TritonBench-T) with autotriton's judge; compare evaluations.",
    invoke_without_command=True,
    no_args_is_help=False,
)
app.add_typer(eval_app, name="eval")

from autotriton.paths import DEMO_EVAL_SUITE as DEMO_SUITE  # noqa: E402


def _suite_path(configured: str) -> str:
    if configured:
        return configured
    if DEMO_SUITE.is_file():
        return str(DEMO_SUITE)
    fail("no suite given: pass --suite SUITE (KernelBench/level1, the level folder of a KernelBench clone, or a suite "
         f"JSONL); the demo suite {DEMO_SUITE} is not present in this install.")


def _require_files(option: str, paths: list[Path]) -> None:
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        fail(f"{option} {', '.join(missing)}: file not found.")


def _resolve_checkpoint(wh: Any, model: str) -> tuple[str, str] | None:
    """A warehouse checkpoint key (or unique key prefix) -> (key, the checkpoint's path); None if `model` is no key."""
    # Keys are hex content hashes; anything else (a path, a hub id, an alias) is not a key.
    if not model or Path(model).exists() or len(model) < 6 or any(ch not in "0123456789abcdef" for ch in model):
        return None
    from autotriton.tasks.db import checkpoint_by_key

    rows = checkpoint_by_key(wh, model)
    if not rows:
        return None
    if len({r[0] for r in rows}) > 1 and not any(r[0] == model for r in rows):
        fail(f"--model {model}: the prefix matches several checkpoints ({', '.join(sorted({r[0] for r in rows}))}); give more characters.")
    key, path = next((r for r in rows if r[0] == model), rows[0])
    if not Path(path).exists():
        fail(f"--model {model}: checkpoint {key} points at {path}, which does not exist here (moved or trained elsewhere).")
    return key, str(path)


def _headline_table(summary: dict[str, Any]) -> Table:
    from autotriton.evaluation import metrics_in

    table = Table(title=f"evaluation {summary['evaluation_key']}: {summary['generator']} on {summary['suite']}")
    table.add_column("metric", style="cyan")
    table.add_column("value", justify="right")
    for metric in metrics_in("summary"):  # the evaluation registry's headline metrics
        if metric.shown == "per_k":
            for k, value in (summary[metric.name] or {}).items():
                table.add_row(f"pass@{k}", metric.cell(value))
        elif metric.shown not in ("counts", "text"):
            table.add_row(metric.name, metric.cell(summary[metric.name]))
    # Outcomes, not bare verdict statuses: a completion with no code is judged a rule_violation, but
    # the user needs to know it was cut off (truncated) or unparseable (parse_error).
    table.add_row("outcomes", ", ".join(f"{s} {n}" for s, n in summary["outcome_counts"].items()))
    return table


@eval_app.callback(invoke_without_command=True)
@writes_rows("eval")
def eval_main(
    ctx: typer.Context,
    suite: Optional[str] = typer.Option(None, "--suite", help="suite: KernelBench's folder, a level folder (KernelBench/level1) or one problem .py; a suite JSONL; TritonBench-T data (statistics JSON or folder); hf:level_N with --hub; or a training export's split, <export>:validation (the held-out problems) [default: the demo suite]"),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="local: HF model id, local path or warehouse checkpoint key; with --endpoint: the model name there [default: training.model]"),
    endpoint: Optional[str] = typer.Option(None, "--endpoint", help="base URL of an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1 (key from $OPENAI_API_KEY or evaluation.api_key_env)"),
    recorded: list[Path] = typer.Option([], "--recorded", help="score recorded candidates instead of generating: replay JSONL file(s) (distillation's format), e.g. a teacher's outputs (repeatable)"),
    stored: Optional[str] = typer.Option(None, "--stored", help="score candidates already in the warehouse whose generator starts with this (e.g. 'inductor', 'replay:inductor', 'openai:deepseek'): a teacher's upper bound"),
    kernels: Optional[Path] = typer.Option(None, "--kernels", help="judge KernelBench's generated kernels as they are, instead of generating: a run folder (runs/<run_name>) of level_<L>_problem_<P>_sample_<S>_kernel.py; only the suite's problems that have kernels there are evaluated"),
    verdicts: list[Path] = typer.Option([], "--verdicts", help="with --recorded/--stored: take each sample's verdict from these JSONL files, written by an earlier judge run (e.g. benchmarks/inductor_l1.py validate on a GPU), instead of judging again; samples without one count as failures (repeatable)"),
    samples: Optional[int] = typer.Option(None, "--samples", "-k", min=1, help="samples per problem (n); pass@k for k in {1,5,10} <= n"),
    temperature: Optional[float] = typer.Option(None, "--temperature", min=0.0, help="sampling temperature (0 = greedy)"),
    top_p: Optional[float] = typer.Option(None, "--top-p", min=0.0, max=1.0, help="nucleus sampling threshold"),
    max_new_tokens: Optional[int] = typer.Option(None, "--max-new-tokens", min=1, help="completion length limit"),
    device: Optional[str] = typer.Option(None, "--device", help="cpu (Triton interpreter, shrunk shapes) or cuda (real GPU, timings): the judge's and the local model's device"),
    max_problems: Optional[int] = typer.Option(None, "--max-problems", min=0, help="evaluate at most this many problems (0 = all)"),
    level: list[int] = typer.Option([], "--level", help="keep only this level (repeatable)"),
    ids: list[str] = typer.Option([], "--id", help="keep only this problem id: suite id or problem number (repeatable)"),
    name: Optional[str] = typer.Option(None, "--name", help="keep only problems whose name matches this glob, e.g. '*conv*'"),
    hub: Optional[bool] = typer.Option(None, "--hub/--no-hub", help="allow loading KernelBench from the Hugging Face hub (online only)"),
    shrink: Optional[bool] = typer.Option(None, "--shrink/--no-shrink", help="shrink problem sizes for the CPU interpreter when loading"),
    report_dir: Optional[Path] = typer.Option(None, "--report-dir", help="where the markdown report and plots go [default: evaluation.report_dir]"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: problems, samples, rule_pass, compile_rate, exec_accuracy, hack_rate, pass_at_k, fast_1, fast_2, geomean_speedup, ..."),
) -> None:
    """Generate k samples per problem, judge each with autotriton's validator, store every sample's
    candidate and verdict and the Evaluation in the warehouse, and write a markdown report."""
    if ctx.invoked_subcommand is not None:
        return
    if device is not None and device not in ("cpu", "cuda", "auto"):
        fail(f"--device {device!r}: choose cpu, cuda or auto.")
    extra: dict[str, Any] = {
        "evaluation.suite": suite, "evaluation.model": model, "evaluation.endpoint": endpoint,
        "evaluation.samples": samples, "evaluation.temperature": temperature, "evaluation.top_p": top_p,
        "evaluation.max_new_tokens": max_new_tokens, "evaluation.max_problems": max_problems,
        "evaluation.levels": list(level) or None, "evaluation.ids": list(ids) or None, "evaluation.name_glob": name,
        "evaluation.hub": hub, "evaluation.shrink": shrink,
        "evaluation.report_dir": str(report_dir) if report_dir else None,
        "evaluation.device": device, "validation.device": device,
    }
    if endpoint:
        extra["evaluation.generator"] = "openai"
    run_kernels = None
    if kernels is not None:
        from autotriton.evaluation import SuiteError as _SuiteError, read_run

        if recorded or stored or endpoint:
            fail("--kernels judges a KernelBench run folder's kernels; it cannot be combined with --recorded, --stored or --endpoint.")
        try:
            run_kernels = read_run(kernels)
        except _SuiteError as exc:
            fail(str(exc))
        if samples is None:  # as many samples as the run holds per problem (KernelBench's num_samples_per_problem)
            per_problem: dict[str, int] = {}
            for k in run_kernels:
                per_problem[k.suite_id] = per_problem.get(k.suite_id, 0) + 1
            extra["evaluation.samples"] = max(per_problem.values())
    cfg, sources = load_config_or_fail(extra)
    ev = cfg.evaluation
    out = console(json_mode=json_out)

    from autotriton.evaluation import (
        RecordedGenerator, RecordedJudge, SuiteError, evaluate, load_suite, make_generator, write_report,
    )
    from autotriton.tasks.db import OPEN_ERRORS, candidates_of, open_warehouse
    from autotriton.tasks.runs import run_scope
    from autotriton.tasks.steps import store_evaluation_result

    if "cuda" in (cfg.validation.device, ev.device):
        import torch

        if not torch.cuda.is_available():
            fail("--device cuda: torch sees no CUDA GPU on this machine (every sample would fail in the judge). "
                 "Use --device cpu here (Triton interpreter, shrunk shapes), or run on a GPU machine.")
    if run_kernels is not None and not suite:
        fail(f"--kernels {kernels}: pass --suite with the KernelBench problems these kernels answer (KernelBench/level1, "
             "the level folder of a KernelBench clone, or a suite JSONL of it).")
    suite_path = _suite_path(ev.suite)
    try:
        # Shrunk below, after the cap: shrinking checks that each shrunk problem still runs.
        problems = load_suite(suite_path, levels=ev.levels or None, ids=ev.ids or None, name_glob=ev.name_glob or None,
                              hub=ev.hub)
    except (SuiteError, ValueError) as exc:
        fail(str(exc))
    if not problems:
        fail(f"{suite_path}: no problem matches the filters (levels {ev.levels or 'all'}, ids {ev.ids or 'all'}, "
             f"name {ev.name_glob or '*'}); loosen them.")
    unmatched_kernels: list[str] = []
    if run_kernels is not None:
        answered = {k.suite_id for k in run_kernels}
        unmatched_kernels = sorted(k.path.name for k in run_kernels if k.suite_id not in {p.suite_id for p in problems})
        problems = [p for p in problems if p.suite_id in answered]
        if not problems:
            fail(f"--kernels {kernels}: none of its kernels answers a problem of {suite_path} (kernels are matched as "
                 f"kernelbench/level<L>/<P>; e.g. {unmatched_kernels[0]}). Pass the suite of the run's level.")
    total_problems = len(problems)
    if ev.max_problems and len(problems) > ev.max_problems:
        # Said out loud: a capped evaluation must not pass for one of the whole suite.
        layer = sources.get("evaluation.max_problems", "default")
        how = "the first" if ev.pick_problems == "first" else f"a sample (seed {ev.seed}) of"
        ERR.print(f"[yellow]evaluating {how} {ev.max_problems} of {len(problems)} problems "
                  f"(evaluation.max_problems = {ev.max_problems}, from {layer}; --max-problems 0 for all; "
                  f"evaluation.pick_problems = {ev.pick_problems})[/]", highlight=False)
        from autotriton.evaluation import cap_problems

        problems = cap_problems(problems, ev.max_problems, ev.pick_problems, ev.seed)
    if ev.shrink:
        from autotriton.evaluation import shrink_suite_problem

        try:
            problems = [shrink_suite_problem(p) for p in problems]
        except (SuiteError, ValueError) as exc:
            fail(str(exc))
    if endpoint and not ev.model:
        fail("--endpoint needs --model NAME: the model's name at the endpoint.")

    try:
        wh = open_warehouse(cfg.warehouse.path, export_dir=cfg.warehouse.export_dir)  # open only while writing
    except OPEN_ERRORS as exc:
        fail(str(exc))
    evaluating = False
    try:
        if recorded and stored:
            fail("--recorded and --stored both choose the candidates to score; pass one.")
        judge = None
        if verdicts:
            if not (recorded or stored):
                fail("--verdicts scores recorded candidates: pass --recorded FILE or --stored GENERATOR with it.")
            _require_files("--verdicts", verdicts)
            try:
                judge = RecordedJudge.from_jsonl(verdicts)
            except ValueError as exc:
                fail(str(exc))
            if not judge.by_key:
                fail(f"--verdicts {', '.join(map(str, verdicts))}: no verdict records in these files.")
        if run_kernels is not None:
            from autotriton.evaluation import kernelbench_run_candidates

            cands, _ = kernelbench_run_candidates(run_kernels, problems, run_name=kernels.resolve().name)
            generator = RecordedGenerator(cands, name=f"kernelbench-run:{kernels.resolve().name}", version=str(kernels.resolve()))
        elif stored:
            found = candidates_of(wh, problems, generator_prefix=stored)
            if not found:
                fail(f"--stored {stored}: the warehouse holds no candidates of a generator starting with {stored!r} for these "
                     "problems. See `autotriton db sql \"SELECT generator, count(*) FROM candidates GROUP BY 1\"`.")
            generator = RecordedGenerator(found, name=f"stored:{stored}", version=cfg.warehouse.path)
        elif recorded:
            _require_files("--recorded", recorded)
            try:
                generator = RecordedGenerator.from_jsonl(recorded)
            except ValueError as exc:
                fail(str(exc))
        else:
            model_path, label = None, None
            if ev.generator != "openai" and not ev.endpoint:
                checkpoint = _resolve_checkpoint(wh, ev.model)
                if checkpoint:
                    label, model_path = f"model:checkpoint-{checkpoint[0]}", checkpoint[1]
                else:
                    model_path = ev.model or cfg.training.model
            try:
                generator = make_generator(ev, model_path=model_path, name=label)
            except (ValueError, RuntimeError) as exc:
                fail(str(exc))
        cap_check = None
        if getattr(generator, "tokenizer", None) is not None:  # a local model: its cap is measurable here
            from autotriton.tasks.steps import completion_cap_check

            cap_check = completion_cap_check(wh, ev.max_new_tokens, "evaluation.max_new_tokens", tokenizer=generator.tokenizer)
            if not cap_check.holds:
                ERR.print(f"[bold yellow]warning:[/] {cap_check.message()}", highlight=False, soft_wrap=True)
        where = f"recorded verdicts from {judge.source}, judged on {judge.device}" if judge else f"judge device: {cfg.validation.device}"
        ERR.print(f"evaluating [bold]{generator.name}[/] on {len(problems)} problems x {ev.samples} samples ({where})",
                  highlight=False)
        with run_scope(wh, "evaluate", cfg, on_interrupt="cancelled") as scope:  # failed (or cancelled) on any error
            run = scope.run
            evaluating = True
            result = evaluate(problems, generator, ev, cfg.validation, judge=judge, progress=True)
            evaluating = False
            result.metrics["problems_in_suite"] = total_problems  # the same dict as the stored record's metrics
            if cap_check is not None and cap_check.shortest is not None:
                result.metrics["completion_cap"] = cap_check.to_dict()
            new_rows = store_evaluation_result(wh, run, result)  # all of the evaluation's rows, or none
            report = write_report(result, Path(ev.report_dir) / result.evaluation.key)
            summary = result.summary()
            summary.update({"report": str(report), "run_id": run.run_id, "new_rows": new_rows,
                            "timings": {k: round(v, 2) for k, v in result.timings.items()}})
            if isinstance(generator, RecordedGenerator) and generator.misses:
                summary["recorded_misses"] = generator.misses
            if run_kernels is not None:
                summary["kernels"] = {"run": str(kernels), "files": len(run_kernels), "unmatched": unmatched_kernels}
            summary["problems_in_suite"] = total_problems
            if cap_check is not None and cap_check.shortest is not None:
                summary["completion_cap"] = cap_check.to_dict()
            kernelbench_results = sorted(Path(report).parent.rglob("eval_results.json"))
            if kernelbench_results:
                summary["kernelbench_results"] = [str(p) for p in kernelbench_results]
            if judge is not None:
                summary["recorded_verdicts"] = {"source": judge.source, "device": judge.device, "served": judge.served,
                                                "static_only": judge.static_only, "never_judged": judge.missing}
            failed_requests = getattr(generator, "failed_requests", 0)
            if failed_requests:
                summary["failed_requests"] = failed_requests
            scope.summary = {k: v for k, v in summary.items() if k != "by_level"}
    except OPEN_ERRORS as exc:
        fail(str(exc))
    except RuntimeError as exc:  # the judge or the generator failed: recorded on the run, said plainly
        if not evaluating:
            raise
        fail(str(exc))
    finally:
        wh.close()

    if json_out:
        emit_json(summary)
        return
    out.print(_headline_table(summary))
    if summary.get("reference_failures"):
        out.print(f"[yellow]{len(summary['reference_failures'])} problems' references did not run in the judge "
                  f"(counted as failures): {', '.join(summary['reference_failures'][:10])}[/]")
    if summary.get("failed_requests"):
        out.print(f"[yellow]{summary['failed_requests']} endpoint requests failed after retries; their samples count as failures.[/]")
    if summary["problems"] < summary["problems_in_suite"]:
        out.print(f"[yellow]{summary['problems']} of the suite's {summary['problems_in_suite']} problems were evaluated "
                  "(evaluation.max_problems).[/]", highlight=False)
    if summary.get("truncated_rate"):
        looping = summary.get("looping_rate") or 0.0
        out.print(f"[yellow]{summary['truncated_rate']:.0%} of the samples were cut off at max_new_tokens"
                  + (f", {looping:.0%} while repeating themselves (more tokens will not finish those)" if looping else "")
                  + (": raise --max-new-tokens.[/]" if summary["truncated_rate"] > looping else ".[/]"), highlight=False)
    if summary.get("kernels", {}).get("unmatched"):
        out.print(f"[yellow]kernels matching no problem of the suite (not judged): {', '.join(summary['kernels']['unmatched'][:10])}[/]",
                  highlight=False)
    for path in summary.get("kernelbench_results", []):
        out.print(f"KernelBench results: {path}", highlight=False)
    out.print(f"report: {summary['report']}  (run {summary['run_id']}, evaluation {summary['evaluation_key']})")


def _find_evaluations(wh: Any, refs: list[str]) -> list[Any]:
    """Evaluation records for keys, key prefixes or run ids, in the order given."""
    from autotriton.tasks import db as store

    found = []
    all_evals = store.evaluations(wh)
    for ref in refs:
        keys, is_run = store.evaluation_keys(wh, ref)
        if not keys:
            fail(f"{ref}: no evaluation with that key or run id in {wh.path}. List them with "
                 "`autotriton db sql \"SELECT key, run_id, suite, generator FROM evaluations\"`.")
        exact = [k for k in keys if k == ref]
        if len(keys) > 1 and not exact and not is_run:
            fail(f"{ref}: the prefix matches several evaluations ({', '.join(keys)}); give more characters.")
        for key in exact or keys:
            found.append(all_evals[key])
    return found


@eval_app.command("compare")
def compare(
    refs: list[str] = typer.Argument(..., help="evaluation keys (or unique prefixes) or run ids, in the order to show"),
    out: Optional[Path] = typer.Option(None, "--out", help="also write the comparison as a markdown file"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: {evaluations: [{key, suite, generator, metrics}]}"),
) -> None:
    """Put stored evaluations side by side: headline metrics, then per level where they share levels."""
    from autotriton.evaluation import compare_markdown, compare_rows
    from autotriton.tasks.db import OPEN_ERRORS, open_warehouse

    cfg, _ = load_config_or_fail()
    try:
        with open_warehouse(cfg.warehouse.path, read_only=True, hold=True) as wh:
            evaluations = _find_evaluations(wh, refs)
    except OPEN_ERRORS as exc:
        fail(str(exc))
    markdown = compare_markdown(evaluations)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(markdown, encoding="utf-8")
    if json_out:
        from autotriton.evaluation import metrics_in

        keep = [metric.name for metric in metrics_in("summary")] + ["by_level"]  # the evaluation registry's headline
        emit_json({"evaluations": [{"key": e.key, "suite": e.suite, "generator": e.generator,
                                    "metrics": {k: e.metrics.get(k) for k in keep}} for e in evaluations],
                   "markdown": str(out) if out else None})
        return
    header, rows = compare_rows(evaluations)
    # Transposed for the terminal: one column per evaluation, one row per metric.
    table = Table(title="evaluations compared")
    table.add_column("metric", style="cyan")
    for row in rows:
        table.add_column(row[0], justify="right")
    for i, name in enumerate(header[1:], start=1):
        table.add_row(name, *[row[i] for row in rows])
    console().print(table)
    if out:
        console().print(f"markdown: {out}")


@eval_app.command("report")
def report(
    ref: str = typer.Argument(..., help="evaluation key (or unique prefix) or run id"),
    out: Optional[Path] = typer.Option(None, "--out", help="folder for report.md and plots [default: evaluation.report_dir/KEY]"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: {evaluation_key, report}"),
) -> None:
    """Rewrite the markdown report (tables and plots) of a stored evaluation from the warehouse."""
    from autotriton.evaluation import write_report
    from autotriton.tasks.db import OPEN_ERRORS, open_warehouse

    cfg, _ = load_config_or_fail()
    try:
        with open_warehouse(cfg.warehouse.path, read_only=True, hold=True) as wh:
            evaluations = _find_evaluations(wh, [ref])
    except OPEN_ERRORS as exc:
        fail(str(exc))
    if len(evaluations) != 1:
        fail(f"{ref}: names {len(evaluations)} evaluations; pass one evaluation key.")
    ev = evaluations[0]
    path = write_report(ev, out or Path(cfg.evaluation.report_dir) / ev.key)
    if json_out:
        emit_json({"evaluation_key": ev.key, "report": str(path)})
    else:
        console().print(f"report: {path}")


@eval_app.command("convert-tritonbench")
def convert_tritonbench(
    path: Path = typer.Argument(..., help="TritonBench-T data: statistics JSON (TritonBench_T_v1.json), its folder of operator files, or one file"),
    out: Path = typer.Option(..., "--out", "-o", help="suite JSONL to write (KernelBench format), then `autotriton eval --suite OUT`"),
    probe: bool = typer.Option(False, "--probe", help="also run every converted problem in the judge's sandbox and drop those that do not run"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: {converted, errors: [{record, file, line, message}], out}"),
) -> None:
    """Convert TritonBench-T operators into KernelBench-format problems (Model wrapping the torch
    reference, get_inputs from one of its test cases); records that cannot be converted are listed."""
    from autotriton.evaluation import convert_to_suite_file

    cfg, _ = load_config_or_fail()
    try:
        result = convert_to_suite_file(path, out, probe=probe, validation_config=cfg.validation)
    except (ValueError, OSError) as exc:
        fail(str(exc))
    errors = [{"record": e.record, "file": e.file, "line": e.line, "message": e.message} for e in result.errors]
    if json_out:
        emit_json({"converted": len(result.entries), "errors": errors, "out": str(out)})
        return
    c = console()
    c.print(f"converted {len(result.entries)} operators into {out}; {len(errors)} could not be converted")
    for e in result.errors:
        c.print(f"  [yellow]{e}[/]", highlight=False)
