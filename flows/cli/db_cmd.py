"""`autotriton db ...`: inspect, query, export and migrate the DuckDB warehouse.

The warehouse file comes from the global `--db`, AUTOTRITON_DB or config `warehouse.path`.
Reading verbs open it read-only; DuckDB still refuses while another process writes it, and the
error names that process.
"""

from __future__ import annotations

import json
import shutil
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import Any, Iterator, Optional

import typer
from rich.table import Table
from rich.tree import Tree

from autotriton.flows.cli.common import app, console, emit_json, fail, load_config_or_fail, writes_rows
from autotriton.tasks import db as store
from autotriton.tasks.db import EXPORTERS, OPEN_ERRORS, UnknownKeyError, Warehouse, WarehouseQueryError
from autotriton.tasks.runs import run_scope

db_app = typer.Typer(help="Inspect, query, export and migrate the warehouse (DuckDB).", no_args_is_help=True)
app.add_typer(db_app, name="db")


@contextmanager
def open_warehouse(read_only: bool, extra: dict[str, Any] | None = None) -> Iterator[tuple[Warehouse, Any]]:
    """The configured warehouse and config; every warehouse error becomes a clear exit-2 error."""
    cfg, _ = load_config_or_fail(extra)
    try:
        # hold=False: other commands hold the file only while they write, so a reader waits
        # (briefly) for that write instead of failing, and holds the file only per query itself.
        wh = store.open_warehouse(cfg.warehouse.path, read_only=read_only, export_dir=cfg.warehouse.export_dir,
                                  lock_wait_s=cfg.warehouse.lock_wait_s, hold=False)
    except OPEN_ERRORS as exc:
        fail(str(exc))
    with wh:
        try:
            yield wh, cfg
        except OPEN_ERRORS as exc:
            fail(str(exc))


def _plain(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat(sep=" ") if isinstance(value, datetime) else value.isoformat()
    return value


def _cell(value: Any, width: int | None = 60) -> str:
    text = "" if value is None else str(_plain(value))
    text = text.replace("\n", "⏎")
    return text if width is None or len(text) <= width else text[: width - 1] + "…"


@db_app.command("stats")
def stats(json_out: bool = typer.Option(False, "--json", help="print one JSON object: tables, runs, schema version, "
                                        "rejections: {stage: {reason: {count, example}}}")) -> None:
    """Row counts per table, verdict mix, rejections by reason (with an example) and the last runs."""
    with open_warehouse(read_only=True) as (wh, _):
        summary = store.warehouse_stats(wh)
    if json_out:
        emit_json(summary)
        return
    out = console()
    table = Table(title=f"warehouse {summary['path']} (schema v{summary['schema_version']}, {summary['size_bytes']:,} bytes)")
    table.add_column("table", style="cyan")
    table.add_column("rows", justify="right")
    for name, count in summary["tables"].items():
        table.add_row(name, f"{count:,}")
    out.print(table)
    mix = ", ".join(f"{k}: {v}" for k, v in summary["latest_verdicts_by_status"].items()) or "none"
    out.print(f"problems: {summary['problems_by_status'] or 'none'}; latest verdicts: {mix}; "
              f"validated pairs: {summary['validated_pairs']}")
    state = summary["harvest_state"]
    out.print(f"harvest state: {state['sources']} source(s), {state['seen_modules']} module key(s) seen")
    if summary["rejections"]:
        out.print(_rejections_table(summary["rejections"]))
    runs = Table(title="last runs")
    for col in ("run_id", "kind", "status", "started_at", "flow_run_id"):
        runs.add_column(col)
    for run in summary["last_runs"]:
        runs.add_row(*(_cell(run[c], 40) for c in ("run_id", "kind", "status", "started_at", "flow_run_id")))
    out.print(runs)


def _rejections_table(rejections: dict[str, dict[str, dict[str, Any]]]) -> Table:
    table = Table(title="rejections by reason (newest per subject)")
    for col in ("stage", "reason", "count", "example"):
        table.add_column(col, overflow="fold")
    for stage, reasons in rejections.items():
        for reason, entry in reasons.items():
            table.add_row(stage, reason, str(entry["count"]), _cell(entry["example"]["detail"], 90))
    return table


@db_app.command("report")
def report(
    top: int = typer.Option(10, "--top", min=1, help="how many packages and failure kinds to list"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: {missing_dependencies: [{package, count, "
                                  "example}], converter_failures: [{kind, count, example}], rejections}"),
) -> None:
    """What lost problems, and what to do about it: the packages harvested modules needed most
    (install them and harvest again) and the Inductor converter's most frequent failure kinds
    (file them, with the example)."""
    with open_warehouse(read_only=True) as (wh, _):
        summary = store.loss_report(wh, top)
    if json_out:
        emit_json(summary)
        return
    out = console()
    deps = Table(title="missing dependencies: install these and harvest again")
    for col in ("package", "modules", "example"):
        deps.add_column(col, overflow="fold")
    for row in summary["missing_dependencies"]:
        deps.add_row(row["package"], str(row["count"]), _cell(row["example"], 90))
    out.print(deps if summary["missing_dependencies"] else "missing dependencies: none")
    if summary["missing_dependency_unnamed"]:
        out.print(f"({summary['missing_dependency_unnamed']} missing_dependency rejection(s) name no package: "
                  "see `autotriton db sql \"SELECT detail FROM rejections WHERE reason = 'missing_dependency'\"`)")
    kinds = Table(title="converter failures (Inductor teacher): file these with the example")
    for col in ("kind", "problems", "example"):
        kinds.add_column(col, overflow="fold")
    for row in summary["converter_failures"]:
        kinds.add_row(row["kind"], str(row["count"]), _cell(row["example"]["detail"], 90))
    out.print(kinds if summary["converter_failures"] else "converter failures: none")
    if summary["rejections"]:
        out.print(_rejections_table(summary["rejections"]))


@db_app.command("sql")
def sql(
    query: str = typer.Argument(..., help='SQL to run, e.g. "SELECT status, count(*) FROM verdicts GROUP BY 1"'),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: {columns, rows}"),
    write: bool = typer.Option(False, "--write", help="open the warehouse read-write (needed for UPDATE/DELETE)"),
    max_rows: int = typer.Option(200, "--max-rows", help="rows shown in the human table (--json gives all)"),
) -> None:
    """Run SQL against the warehouse (read-only unless --write)."""
    with open_warehouse(read_only=not write) as (wh, _):
        try:
            result = store.run_sql(wh, query)
        except WarehouseQueryError as exc:
            hint = ("add --write to change data" if "read-only" in str(exc)
                    else "fix the query (tables: `autotriton db stats`)")
            fail(f"{exc}\nQuery: {query}\nWhat to do: {hint}.")
    if json_out:
        emit_json({"columns": result.columns, "rows": [[_plain(v) for v in row] for row in result.rows]})
        return
    out = console()
    if not result.columns:
        out.print("done (no result set)")
        return
    table = Table(caption=f"{len(result.rows)} row(s)" + (f", first {max_rows} shown" if len(result.rows) > max_rows else ""))
    for col in result.columns:
        table.add_column(col, overflow="fold")
    cut = 60 if out.is_terminal else None  # piped or redirected: whole values, for whatever reads them
    for row in result.rows[:max_rows]:
        table.add_row(*(_cell(v, cut) for v in row))
    out.print(table)


@db_app.command("export")
@writes_rows("db-export")
def export(
    name: str = typer.Argument(..., help=f"what to export: one of {', '.join(EXPORTERS)}"),
    out_path: Optional[Path] = typer.Option(None, "--out", help="where to write it: the dataset folder (hf) or the .parquet file "
                                            "(default: <warehouse.export_dir>/NAME, or NAME.parquet)"),
    fmt: str = typer.Option("hf", "--format", help="hf: a Hugging Face dataset folder, one Parquet file per split "
                            "(datasets.load_dataset(FOLDER)); parquet: one file with a split column"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: the recorded export"),
) -> None:
    """Write an export (atomically, Parquet with zstd) and record it, with its content hash, in
    `exports`. The file names are stable (a newer export of NAME replaces the older); the content
    hash is in the files' metadata and in the folder's README.md."""
    from autotriton.evaluation import SuiteError

    if name not in EXPORTERS:
        fail(f"unknown export {name!r}; choose one of: {', '.join(sorted(EXPORTERS))}.")
    if fmt not in store.EXPORT_FORMATS:
        fail(f"--format {fmt!r}: choose one of {', '.join(store.EXPORT_FORMATS)}.")
    if out_path is not None and fmt == "parquet" and out_path.suffix != ".parquet":
        out_path = out_path / f"{name}.parquet"
    out = console(json_out)
    with open_warehouse(read_only=False) as (wh, cfg):
        try:
            with run_scope(wh, "export", cfg) as scope:
                scope.summary = {"export": name}  # what a failed run keeps, with the error
                with out.status(f"building the {name} export"):  # training exports: evaluation problems kept out
                    result = store.build_named_export(wh, scope.run, cfg, name, format=fmt, path=out_path)
                summary = scope.summary = {"key": result.key, **result.to_dict(), "run_id": scope.run.run_id}
        except SuiteError as exc:
            fail(f"harvest.eval_suites: {exc}")
    if json_out:
        emit_json(summary)
        return
    out.print(f"exported {result.row_count} {name} row(s) to {result.path} (key {result.key}"
              + (f", splits {result.splits}" if result.splits else "") + ")")


@db_app.command("dump")
def dump(
    out_dir: Path = typer.Option(..., "--out", help="folder to write (replaced whole): one Parquet file per table and warehouse.json"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: schema version, rows per table"),
) -> None:
    """Write the whole warehouse (every table, lineage and runs included) as Parquet, to carry a
    build to another machine: `autotriton db import DIR` there."""
    with open_warehouse(read_only=True) as (wh, cfg):
        manifest = store.dump_warehouse(wh, out_dir)  # the harvest's incremental state too (its tables)
        # A warehouse that has not harvested since the state moved into it still has it in the
        # older side file: carried as such, so the next machine skips what was harvested.
        legacy = store.legacy_dump_state(wh, cfg)
    if legacy is not None:
        shutil.copyfile(legacy, out_dir / store.STATE_IN_DUMP)
        manifest["harvest_state"] = store.STATE_IN_DUMP
    if json_out:
        emit_json({"path": str(out_dir.resolve()), **manifest})
        return
    console().print(f"dumped {sum(manifest['tables'].values())} row(s) of {len(manifest['tables'])} tables to {out_dir}")


@db_app.command("import")
@writes_rows("db-import")
def import_(
    path: Path = typer.Argument(..., help="a folder written by `autotriton db dump` or `autotriton db release`"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: kind, new rows per table"),
) -> None:
    """Import a dump or a released dataset into the warehouse (created if needed), so a build
    continues on this machine. Idempotent: rows whose key is already there are left as they are."""
    with open_warehouse(read_only=False) as (wh, cfg):
        kind = store.detect_import(path)
        if kind == "dump":
            new = store.import_dump(wh, path)  # with the harvest state; a source's state already here is kept
            run_id = None
        else:
            with run_scope(wh, "import", {"path": str(path.resolve()), "kind": kind}) as scope:
                new = store.import_release(wh, scope.run, path)
                scope.summary = {"kind": kind, "new_rows": new}
            run_id = scope.run.run_id
    summary = {"path": str(path.resolve()), "kind": kind, "new_rows": new, "run_id": run_id}
    if json_out:
        emit_json(summary)
        return
    console().print(f"imported {kind} {path}: new rows " + ", ".join(f"{t} {n}" for t, n in new.items()))


@db_app.command("release")
@writes_rows("db-release")
def release(
    out_dir: Path = typer.Option(..., "--out", help="folder of the released dataset (pairs/, problems/, DATASET.md, release.json)"),
    name: str = typer.Option("autotriton-triton-kernels", "--name", help="dataset name in the card"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: the release manifest"),
) -> None:
    """Write the released dataset: validated pairs and runnable problems with provenance, licence,
    op category, teacher, verdict figures and split, as Parquet (zstd) in a Hugging Face folder,
    with its card DATASET.md. Evaluation problems (harvest.eval_suites) and held-out suites are left out."""
    from autotriton.evaluation import SuiteError
    from autotriton.tasks.steps import build_release

    with open_warehouse(read_only=False) as (wh, cfg):
        try:
            with run_scope(wh, "release", cfg) as scope:
                manifest = build_release(wh, scope.run, cfg, out_dir, name=name)
                scope.summary = {"path": str(out_dir.resolve()), "rows": manifest["counts"]["rows"]}
        except SuiteError as exc:
            fail(f"harvest.eval_suites: {exc}")
    if json_out:
        emit_json({"path": str(out_dir.resolve()), **manifest})
        return
    rows = manifest["counts"]["rows"]
    console().print(f"released {rows['pairs']} pair(s) and {rows['problems']} problem(s) to {out_dir} (card: {out_dir / 'DATASET.md'})")


@db_app.command("decontaminate")
@writes_rows("db-decontaminate")
def decontaminate(
    suites: list[Path] = typer.Option([], "--suite", help="an evaluation suite (KernelBench-format JSONL, TritonBench-T data); "
                                      "repeatable (default: harvest.eval_suites)"),
    threshold: Optional[float] = typer.Option(None, "--threshold", help="near-copy similarity [config: harvest.decontamination_threshold]"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: removed, by_suite_file, by_kind, examples"),
) -> None:
    """Check every runnable problem against evaluation suites (exact and near copies) and record
    the matches as `decontamination` rejections. Training exports always leave the matches of
    harvest.eval_suites out; this verb shows (and records) them ahead of an export."""
    from autotriton.evaluation import SuiteError
    from autotriton.tasks.steps import decontaminate as run_decontamination

    extra = {"harvest.eval_suites": [str(s) for s in suites] or None, "harvest.decontamination_threshold": threshold}
    cfg, _ = load_config_or_fail(extra)
    if not cfg.harvest.eval_suites:
        fail("no evaluation suite to check against: pass --suite FILE (e.g. ../shared/benchmarks/kernelbench_level1.jsonl) "
             "or set harvest.eval_suites.")
    with open_warehouse(read_only=False, extra=extra) as (wh, _):
        try:
            with run_scope(wh, "decontaminate", cfg) as scope:
                report = run_decontamination(wh, scope.run, cfg)
                report.pop("keys")
                scope.summary = report
        except SuiteError as exc:
            fail(str(exc))
    if json_out:
        emit_json(report)
        return
    out = console()
    out.print(f"{report['checked']} runnable problem(s) checked against {report['suite_problems']} evaluation problem(s): "
              f"{report['removed']} match (kept out of training exports)")
    for origin, n in report["by_suite_file"].items():
        out.print(f"  {origin}: {n}")
    for ex in report["examples"]:
        out.print(f"  {ex['problem']} ({ex['problem_key']}) ~ {ex['suite_id']}: {ex['kind']} {ex['similarity']:.2f}")


@db_app.command("describe")
@writes_rows("db-describe")
def describe(
    teacher: Optional[str] = typer.Option(None, "--teacher", help="only this generator's candidates (e.g. inductor)"),
    no_trace: bool = typer.Option(False, "--no-trace", help="describe from the sources alone (no meta-device trace)"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: candidates, described, changed, example"),
) -> None:
    """Rewrite the words (instruction, reasoning) that an older version of the describer gave stored
    candidates, with the current describer: pairs distilled before a describer change, or imported
    from a release, then train on the text a new distill would write. Words from an explainer (an
    LLM) or a person are left as they are; kernels, verdicts and lineage do not change."""
    from autotriton.tasks.steps import redescribe_candidates

    out = console(json_out)
    with open_warehouse(read_only=False) as (wh, cfg):
        with run_scope(wh, "describe", cfg) as scope:
            with out.status("describing the stored candidates"):
                report = scope.summary = redescribe_candidates(wh, scope.run, teacher, trace=not no_trace)
    if json_out:
        emit_json(report)
        return
    out.print(f"{report['candidates']} candidate(s), {report['described']} with the describer's words: "
              f"{report['changed']} rewritten")


def _tree(node: dict[str, Any], parent: Tree | None = None) -> Tree:
    if node.get("missing"):
        label = f"[red]{node['table']} {node['key']} (missing: parent not stored)[/]"
    else:
        row = node["row"]
        hint = next((f"{k}={_cell(row[k], 40)}" for k in ("name", "status", "class_name", "repo", "generator", "suite", "trainer") if row.get(k)), "")
        run = node.get("run") or {}
        flow = f" flow-run {run['flow_run_id']}" if run.get("flow_run_id") else ""
        label = (f"[cyan]{node['table']}[/] [bold]{node['key']}[/] {hint}  [dim](via {node.get('via', '-')}; "
                 f"run {run.get('run_id', '?')} {run.get('kind', '')}{flow})[/]")
    branch = Tree(label) if parent is None else parent.add(label)
    for child in node.get("parents", []):
        _tree(child, branch)
    return branch


@db_app.command("lineage")
def lineage(
    key: str = typer.Argument(..., help="a row key (or unique prefix of 6+ characters), a run id or a Prefect flow-run id"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: the row, its run and its parents"),
    max_children: int = typer.Option(20, "--max-children", help="verdicts shown per evaluation"),
) -> None:
    """Where a row came from: its run (and Prefect flow run) and its parents, down to the source."""
    with open_warehouse(read_only=True) as (wh, _):
        try:
            result = store.lineage(wh, key, max_children=max_children)
        except UnknownKeyError as exc:
            fail(str(exc))
    if json_out:
        emit_json(json.loads(json.dumps(result, default=_plain)))
        return
    out = console()
    if result.get("kind") == "run":
        for run in result["runs"]:
            out.print(f"[cyan]run[/] [bold]{run['run_id']}[/] {run['kind']} {run['status']} "
                      f"started {_plain(run['started_at'])} flow-run {run['flow_run_id'] or '-'}")
            out.print(f"  rows written: {run['rows_written'] or 'none'}")
        return
    out.print(_tree(result))
    if result.get("children"):
        out.print("referenced by: " + ", ".join(f"{n} {link}" for link, n in result["children"].items()))


@db_app.command("check")
def check(json_out: bool = typer.Option(False, "--json", help="print one JSON object: ok, orphans, missing_export_files, running_runs")) -> None:
    """Check consistency: parent keys that point nowhere, export files that are gone, runs still
    running. Exit code 1 when something is wrong (details printed), 0 when all is well."""
    with open_warehouse(read_only=True) as (wh, _):
        report = store.check(wh)
    if json_out:
        emit_json(report)
    else:
        out = console()
        for link, info in report["orphans"].items():
            out.print(f"[red]orphans[/] {link}: {info['count']} key(s) not in {info['missing_in']}, e.g. {', '.join(info['examples'])}")
        for item in report["missing_export_files"]:
            out.print(f"[red]missing file[/] export {item['name']} ({item['key']}): {item['path']} "
                      f"(re-create it with `autotriton db export {item['name']}`)")
        if report["running_runs"]:
            out.print(f"runs still marked running: {', '.join(report['running_runs'])} "
                      "(in progress elsewhere, or killed; a writer's next open marks dead ones crashed)")
        if report["ok"]:
            out.print("[green]ok[/]: every parent key resolves and every export file exists")
    if not report["ok"]:
        raise typer.Exit(1)


@db_app.command("migrate")
def migrate(json_out: bool = typer.Option(False, "--json", help="print one JSON object: applied versions, schema version")) -> None:
    """Bring the warehouse schema up to date (creates the file if needed); a no-op when current."""
    with open_warehouse(read_only=False) as (wh, cfg):
        summary = {**store.migration_summary(wh), "path": cfg.warehouse.path}
    if json_out:
        emit_json(summary)
        return
    applied = ", ".join(map(str, summary["applied"])) or "none (already current)"
    console().print(f"{summary['path']}: schema version {summary['schema_version']}; applied: {applied}")
