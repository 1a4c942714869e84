"""`autotriton harvest github|local|dataset`: harvest nn.Modules into the warehouse."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

import typer
from rich.table import Table

from autotriton.flows.cli.common import app, console, emit_json, fail, load_config_or_fail

harvest_app = typer.Typer(help="Harvest PyTorch modules into runnable problems (GitHub, local folders, datasets).",
                          no_args_is_help=True)
app.add_typer(harvest_app, name="harvest")

JSON_HELP = "print one JSON object: {files, modules, runnable, rejected: {reason: count}, duplicates, ...}"


def _store(cfg: Any, kind: str, result: Any) -> dict[str, int]:
    """Store the harvest under a run of its own (`store_harvest_results`: one transaction, then
    the incremental state, so a failed write never marks files as harvested)."""
    from autotriton.tasks.steps import store_harvest_results
    from autotriton.warehouse import Warehouse

    with Warehouse(cfg.warehouse.path, hold=False) as wh:  # open only while writing
        run = wh.start_run(f"harvest-{kind}", cfg)
        try:
            new = store_harvest_results(wh, run, [result])
        except BaseException as exc:
            wh.finish_run(run, "failed", {"error": str(exc)[:500]})
            raise
        wh.finish_run(run, "succeeded", {**result.summary(), "new_rows": new})
    return new


def _run(kind: str, json_out: bool, dry_run: bool, work: Callable[[Any, Any], Any], extra: dict[str, Any] | None = None) -> None:
    from github import GithubException

    from autotriton.harvesting import GitHubHarvestError, HarvestInputError, StateError

    cfg, _ = load_config_or_fail(extra)
    out = console(json_out)
    try:
        result = work(cfg, out)
    except (HarvestInputError, StateError, GitHubHarvestError) as exc:
        fail(str(exc))
    except GithubException as exc:
        fail(f"GitHub answered {exc.status} ({exc.data.get('message') if isinstance(exc.data, dict) else exc.data}); "
             "check GITHUB_TOKEN, --base-url and the query")
    new: dict[str, int] | None = None
    if not dry_run:
        try:
            new = _store(cfg, kind, result)
        except Exception as exc:  # the warehouse names the file and the holder of a lock
            fail(f"{cfg.warehouse.path}: could not store the harvest ({type(exc).__name__}: {exc})")
    summary = result.summary()
    if new is not None:
        summary["new_rows"] = new
    if json_out:
        emit_json(summary)
        return
    table = Table(title=f"harvest {kind}")
    table.add_column("what", style="cyan")
    table.add_column("count", justify="right")
    table.add_row("files read", str(summary["files"]))
    table.add_row("modules found", str(summary["modules"]))
    table.add_row("problems runnable", f"[green]{summary['runnable']}[/]")
    for reason, count in summary["rejected"].items():
        table.add_row(f"rejected: {reason}", f"[red]{count}[/]")
    table.add_row("duplicates", str(summary["duplicates"]))
    for reason, count in summary["file_errors"].items():
        table.add_row(f"file skipped: {reason}", f"[yellow]{count}[/]")
    if summary.get("pairs"):
        table.add_row("ready pairs", str(summary["pairs"]))
    if summary.get("unchanged"):
        table.add_row("unchanged since last harvest", str(summary["unchanged"]))
    if new is not None:
        table.add_row("new rows stored", ", ".join(f"{k} {v}" for k, v in new.items()))
    out.print(table)


@harvest_app.command("local")
def local(
    path: Path = typer.Argument(..., help="a directory, git clone or .py file"),
    full: bool = typer.Option(False, "--full", help="ignore the incremental state and leave it as it is: re-read every file"),
    no_probe: bool = typer.Option(False, "--no-probe", help="do not run problems in the sandbox (trust the first input guess)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="harvest and report, but write nothing (no warehouse, no state)"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Harvest every nn.Module class of a local folder or git clone (commit from `git rev-parse HEAD`,
    licence from LICENSE/COPYING, SPDX headers or packaging metadata)."""
    from autotriton.harvesting import harvest_local

    extra = {"harvest.incremental": False if full else None, "harvest.probe": False if no_probe else None}
    _run("local", json_out, dry_run, lambda cfg, out: harvest_local(
        path, cfg.harvest, progress=True, commit_state=False, console=out, validation_config=cfg.validation), extra)


@harvest_app.command("dataset")
def dataset(
    file: Path = typer.Argument(..., help="KernelBook-style (python_code, triton_code, ...) or benchmark-suite JSONL/Parquet"),
    suite: Optional[str] = typer.Option(None, "--suite", help="suite name for benchmark rows (default: from the ids)"),
    full: bool = typer.Option(False, "--full", help="ignore the incremental state and leave it as it is: re-read the file"),
    no_probe: bool = typer.Option(False, "--no-probe", help="do not run KernelBook problems in the sandbox"),
    dry_run: bool = typer.Option(False, "--dry-run", help="harvest and report, but write nothing"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Import a dataset: KernelBook rows become modules, problems and ready (problem, candidate)
    pairs; benchmark-suite rows become problems with suite ids, verbatim."""
    from autotriton.harvesting import harvest_dataset

    extra = {"harvest.incremental": False if full else None, "harvest.probe": False if no_probe else None}
    _run("dataset", json_out, dry_run, lambda cfg, out: harvest_dataset(
        file, cfg.harvest, progress=True, commit_state=False, console=out, validation_config=cfg.validation, suite=suite), extra)


@harvest_app.command("github")
def github(
    query: Optional[str] = typer.Option(None, "--query", "-q", help="repository search query (default harvest.github_query)"),
    max_repos: Optional[int] = typer.Option(None, "--max-repos", help="at most this many repositories"),
    min_stars: Optional[int] = typer.Option(None, "--min-stars", help="skip repositories with fewer stars"),
    pushed_after: Optional[str] = typer.Option(None, "--pushed-after", help="only repositories pushed after YYYY-MM-DD"),
    base_url: Optional[str] = typer.Option(None, "--base-url", help="GitHub API root (GitHub Enterprise, or a local recording)"),
    full: bool = typer.Option(False, "--full", help="ignore ETags and seen commits (state left as it is): re-read every repository"),
    no_probe: bool = typer.Option(False, "--no-probe", help="do not run problems in the sandbox"),
    dry_run: bool = typer.Option(False, "--dry-run", help="harvest and report, but write nothing"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Search GitHub and harvest the matching repositories at their default branch's head.
    The token is read from GITHUB_TOKEN (never stored); rate limits are waited out."""
    from autotriton.harvesting import harvest_github

    extra = {"harvest.github_query": query, "harvest.max_repos": max_repos, "harvest.min_stars": min_stars,
             "harvest.pushed_after": pushed_after, "harvest.github_base_url": base_url,
             "harvest.incremental": False if full else None, "harvest.probe": False if no_probe else None}
    _run("github", json_out, dry_run, lambda cfg, out: harvest_github(
        cfg.harvest, progress=True, commit_state=False, console=out, validation_config=cfg.validation), extra)
