"""`autotriton harvest github|local|dataset|packages|synthetic|reprobe`: harvest nn.Modules into the warehouse."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

import typer
from rich.table import Table

from autotriton.flows.cli.common import app, console, emit_json, ERR, fail, load_config_or_fail, writes_rows

harvest_app = typer.Typer(help="Harvest PyTorch modules into runnable problems (GitHub, local folders, datasets, generated fused problems).",
                          no_args_is_help=True)
app.add_typer(harvest_app, name="harvest")

JSON_HELP = ("print one JSON object: {files, modules, runnable, rejected: {reason: count}, rejected_examples: "
             "{reason: 'Class: detail'}, missing_dependencies: {package: count}, duplicates, ...}")


def _store(cfg: Any, kind: str, result: Any) -> dict[str, int]:
    """Store the harvest under a run of its own, with its incremental state (`store_harvest_results`:
    one transaction, so a failed write never marks files as harvested)."""
    from autotriton.tasks.db import open_warehouse
    from autotriton.tasks.harvest_state import import_note
    from autotriton.tasks.runs import run_scope
    from autotriton.tasks.steps import store_harvest_results

    with open_warehouse(cfg.warehouse.path) as wh, run_scope(wh, f"harvest-{kind}", cfg) as scope:  # open only while writing
        new = store_harvest_results(wh, scope.run, [result], cfg.harvest.state_path)
        scope.summary = {**result.summary(), "new_rows": new}
    if result.extra.get("harvest_state_imported"):
        ERR.print(import_note(result.extra["harvest_state_imported"]))
    return new


def _state(cfg: Any, dry_run: bool) -> Any:
    """The incremental state a harvest starts from, read from the warehouse (None: --full)."""
    from autotriton.tasks.db import OPEN_ERRORS, harvest_state

    try:
        return harvest_state(cfg, read_only=dry_run)
    except OPEN_ERRORS as exc:
        fail(f"{cfg.warehouse.path}: could not read the harvest state ({exc})")


def _run(kind: str, json_out: bool, dry_run: bool, work: Callable[[Any, Any, Callable[[], Any]], Any],
         extra: dict[str, Any] | None = None, store: bool = True) -> None:
    """Run `work(cfg, console, state)` (state(): the incremental state to harvest against, read
    from the warehouse when called), store its result (unless `store` is False: `work` stored
    it) and report."""
    from github import GithubException

    from autotriton.harvesting import GitHubHarvestError, HarvestInputError, StateError

    cfg, _ = load_config_or_fail(extra)
    out = console(json_out)
    per_source: dict[str, Any] | None = None
    try:
        result = work(cfg, out, lambda: _state(cfg, dry_run))
        if hasattr(result, "per_source"):  # a sources-file harvest: figures per package too
            result, per_source = result.result, result.per_source
    except (HarvestInputError, StateError, GitHubHarvestError) as exc:
        fail(str(exc))
    except GithubException as exc:
        fail(f"GitHub answered {exc.status} ({exc.data.get('message') if isinstance(exc.data, dict) else exc.data}); "
             "check GITHUB_TOKEN, --base-url and the query")
    new: dict[str, int] | None = result.extra.pop("new_rows", None)  # stored by `work` itself
    if not dry_run and store:
        try:
            new = _store(cfg, kind, result)
        except Exception as exc:  # the warehouse names the file and the holder of a lock
            fail(f"{cfg.warehouse.path}: could not store the harvest ({type(exc).__name__}: {exc})")
    summary = result.summary()
    if new is not None:
        summary["new_rows"] = new
    if per_source is not None:
        summary["per_source"] = per_source
    if json_out:
        emit_json(summary)
        return
    if per_source:
        by_source = Table(title="per source")
        for col in ("source", "modules", "runnable", "rejected (top reasons)", "missing modules"):
            by_source.add_column(col)
        for label, s in per_source.items():
            top = ", ".join(f"{k} {v}" for k, v in list(s["rejected"].items())[:4])
            missing = ", ".join(f"{k} {v}" for k, v in list(s["missing_modules"].items())[:4])
            by_source.add_row(label, str(s["modules"]), str(s["runnable"]), top, missing)
        out.print(by_source)
    table = Table(title=f"harvest {kind}")
    table.add_column("what", style="cyan")
    table.add_column("count", justify="right")
    table.add_row("files read", str(summary["files"]))
    table.add_row("modules found", str(summary["modules"]))
    table.add_row("problems runnable", f"[green]{summary['runnable']}[/]")
    for reason, count in summary["rejected"].items():
        table.add_row(f"rejected: {reason}", f"[red]{count}[/]")
    if summary.get("missing_dependencies"):  # what to install to harvest more
        table.add_row("missing packages", ", ".join(f"{k} ({v})" for k, v in summary["missing_dependencies"].items()))
    table.add_row("duplicates", str(summary["duplicates"]))
    for reason, count in summary["file_errors"].items():
        table.add_row(f"file skipped: {reason}", f"[yellow]{count}[/]")
    if summary.get("pairs"):
        table.add_row("ready pairs", str(summary["pairs"]))
    if summary.get("unchanged"):
        table.add_row("unchanged since last harvest", str(summary["unchanged"]))
    if summary.get("harvest_state_imported"):
        table.add_row("harvest state imported from", str(summary["harvest_state_imported"]))
    if new is not None:
        table.add_row("new rows stored", ", ".join(f"{k} {v}" for k, v in new.items()))
    out.print(table)


@harvest_app.command("local")
@writes_rows("harvest-local")
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
    _run("local", json_out, dry_run, lambda cfg, out, state: harvest_local(
        path, cfg.harvest, progress=True, commit_state=False, state=state(), console=ERR, validation_config=cfg.validation,
        environments=cfg.environments), extra)


@harvest_app.command("packages")
@writes_rows("harvest-packages")
def packages(
    sources: Optional[Path] = typer.Option(None, "--sources", help="TOML/YAML file listing [[package]] name/version "
                                           "(include/exclude globs) and [[folder]] path entries (default: harvest.sources_files)"),
    full: bool = typer.Option(False, "--full", help="ignore the incremental state and leave it as it is: re-harvest every package"),
    no_probe: bool = typer.Option(False, "--no-probe", help="do not run problems in the sandbox (trust the first input guess)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="harvest and report, but write nothing (no warehouse, no state)"),
    fetch_only: bool = typer.Option(False, "--fetch-only", help="only download and unpack the packages into harvest.package_cache "
                                    "(on a machine with network, for a harvest on one without)"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP + " plus per_source figures"),
) -> None:
    """Harvest pinned PyPI packages (sources fetched with `pip download`, unpacked into
    harvest.package_cache) and folders named in a sources file; provenance keeps package, version,
    path and licence. The shipped list: harvesting/sources/pytorch.toml."""
    from autotriton.harvesting import HarvestInputError
    from autotriton.harvesting import harvest_packages, merge_results as merge_harvest_results, sources_file_units

    extra = {"harvest.incremental": False if full else None, "harvest.probe": False if no_probe else None}
    if fetch_only:
        _fetch_only(sources, json_out, extra)
        return

    def work(cfg: Any, out: Any, state: Callable[[], Any]) -> Any:
        files = [str(sources)] if sources is not None else list(cfg.harvest.sources_files)
        if not files:
            raise HarvestInputError("no sources file: pass --sources FILE (e.g. harvesting/sources/pytorch.toml) "
                                    "or set harvest.sources_files")
        # Every file is checked before anything is fetched. One package (or folder) at a time, each
        # stored with its state when done (and the next one started from the state stored): a
        # harvest cut off mid-way keeps every package it finished, and the next one skips them.
        per_file = [sources_file_units(f) for f in files]
        units = [u for file_units in per_file for u in file_units if u.packages]
        units += [u for file_units in per_file for u in file_units if u.folders]
        total: Any = None
        new_rows: dict[str, int] = {}
        for unit in units:
            part = harvest_packages(unit, cfg.harvest, progress=True, commit_state=False, state=state(), console=ERR,
                                    validation_config=cfg.validation, environments=cfg.environments)
            if not dry_run:
                try:
                    stored = _store(cfg, "packages", part.result)
                except Exception as exc:  # the warehouse names the file and the holder of a lock
                    fail(f"{cfg.warehouse.path}: could not store the harvest ({type(exc).__name__}: {exc})")
                for table, n in stored.items():
                    new_rows[table] = new_rows.get(table, 0) + n
            if total is None:
                total = part
            else:
                merge_harvest_results(total.result, part.result)
                total.per_source.update(part.per_source)
        if not dry_run:
            total.result.extra["new_rows"] = new_rows
        return total

    _run("packages", json_out, dry_run, work, extra, store=False)


def _fetch_only(sources: Optional[Path], json_out: bool, extra: dict[str, Any]) -> None:
    from autotriton.harvesting import HarvestInputError
    from autotriton.harvesting import FetchError, fetch_package, load_sources

    cfg, _ = load_config_or_fail(extra)
    out = console(json_out)
    files = [str(sources)] if sources is not None else list(cfg.harvest.sources_files)
    try:
        if not files:
            raise HarvestInputError("no sources file: pass --sources FILE or set harvest.sources_files")
        packages = [p for f in files for p in load_sources(f).packages]
    except HarvestInputError as exc:
        fail(str(exc))
    fetched: dict[str, Any] = {}
    for src in packages:
        try:
            root, fmt = fetch_package(src, cfg.harvest.package_cache)
            fetched[src.label] = {"format": fmt, "path": str(root)}
        except FetchError as exc:
            fetched[src.label] = {"error": str(exc)}
        out.print(f"{src.label}: {fetched[src.label].get('format') or fetched[src.label]['error']}")
    summary = {"package_cache": str(Path(cfg.harvest.package_cache).expanduser()), "packages": fetched,
               "failed": sum("error" in v for v in fetched.values())}
    if json_out:
        emit_json(summary)
    if summary["failed"]:
        raise typer.Exit(1)


@harvest_app.command("dataset")
@writes_rows("harvest-dataset")
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
    _run("dataset", json_out, dry_run, lambda cfg, out, state: harvest_dataset(
        file, cfg.harvest, progress=True, commit_state=False, state=state(), console=ERR, validation_config=cfg.validation, suite=suite,
        environments=cfg.environments), extra)


@harvest_app.command("github")
@writes_rows("harvest-github")
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
    _run("github", json_out, dry_run, lambda cfg, out, state: harvest_github(
        cfg.harvest, progress=True, commit_state=False, state=state(), console=ERR, validation_config=cfg.validation,
        environments=cfg.environments), extra)


@harvest_app.command("reprobe")
@writes_rows("harvest-reprobe")
def reprobe(
    source_kind: Optional[str] = typer.Option(None, "--source-kind", help="only problems harvested from this kind of source: pypi, local, github, dataset, suite, synthetic"),
    names: list[str] = typer.Option([], "--name", help="only problems whose name matches this glob (repeatable: any of them)", show_default=False),
    dry_run: bool = typer.Option(False, "--dry-run", help="probe and report, but change nothing"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: {checked, runnable, retired: {reason: count}, "
                                  "retired_examples, failed_not_retired: {reason: count}, new_rows}"),
) -> None:
    """Probe the warehouse's runnable problems again with this version's probe, each with its own
    dependencies, and reject those it refuses for what they are (a module that returns its input
    in eval mode, one whose output ignores its input, one that is nondeterministic): problems
    stored before such a rule existed stop being distilled. Timeouts, crashes and missing
    dependencies are reported, never acted on (they describe the machine, not the problem)."""
    from autotriton.tasks.db import OPEN_ERRORS
    from autotriton.tasks.harvest import reprobe_stored

    cfg, _ = load_config_or_fail(None)
    out = console(json_out)
    try:
        summary = reprobe_stored(cfg, source_kind=source_kind, names=names, dry_run=dry_run)
    except OPEN_ERRORS as exc:
        fail(f"{cfg.warehouse.path}: {exc}")
    if json_out:
        emit_json(summary)
        return
    table = Table(title="harvest reprobe" + (" (dry run: nothing changed)" if dry_run else ""))
    table.add_column("what", style="cyan")
    table.add_column("count", justify="right")
    table.add_row("problems probed", str(summary["checked"]))
    table.add_row("still runnable", f"[green]{summary['runnable']}[/]")
    for reason, count in summary["retired"].items():
        table.add_row(f"rejected: {reason}", f"[red]{count}[/]")
    for reason, count in summary["failed_not_retired"].items():
        table.add_row(f"failed, kept: {reason}", f"[yellow]{count}[/]")
    out.print(table)
    for reason, example in summary["retired_examples"].items():
        out.print(f"  {reason}: {example}", highlight=False)


@harvest_app.command("synthetic")
@writes_rows("harvest-synthetic")
def synthetic(
    count: int = typer.Option(100, "--count", "-n", help="how many problems to generate"),
    seed: int = typer.Option(0, "--seed", help="generator seed: problem i of a seed is the same on every run and machine"),
    start: int = typer.Option(0, "--start", help="index of the first problem (extend a suite without regenerating it)"),
    no_probe: bool = typer.Option(False, "--no-probe", help="do not run the problems in the sandbox (they are valid by construction)"),
    family: str = typer.Option("fused", "--family", help="fused: a GEMM/bmm/convolution head and 1-5 operators after it; "
                               "pointwise: 2-4 memory-bound operators on the input itself (norms, activations, pooling, "
                               "softmax, reductions), short kernels; elementwise: 1-3 operators that touch each "
                               "element once (activations, clamp, scaling, bias and residual adds), one kernel"),
    dry_run: bool = typer.Option(False, "--dry-run", help="generate and report, but write nothing"),
    json_out: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Generate KernelBench-level-2-style fused problems (2-6 operators: GEMM, bmm, Conv and
    ConvTranspose 1-3D, pooling, norms, activations, reductions, softmax, residual adds, scaling)
    at realistic sizes, deterministically from --seed (harvesting/synthetic.py); `--family
    pointwise` draws chains without a GEMM or convolution instead, `--family elementwise` chains of
    elementwise operators only (the first kernels a small model learns to write)."""
    from autotriton.harvesting import harvest_synthetic

    extra = {"harvest.probe": False if no_probe else None}
    _run("synthetic", json_out, dry_run, lambda cfg, out, state: harvest_synthetic(
        count, seed, cfg.harvest, start=start, progress=True, console=ERR, validation_config=cfg.validation,
        family=family), extra)
