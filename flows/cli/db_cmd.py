"""`autotriton db ...`: inspect, query, export and migrate the DuckDB warehouse.

The warehouse file comes from the global `--db`, AUTOTRITON_DB or config `warehouse.path`.
Reading verbs open it read-only; DuckDB still refuses while another process writes it, and the
error names that process.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import typer
from rich.table import Table
from rich.tree import Tree

from autotriton.flows.cli.common import app, console, emit_json, fail, load_config_or_fail
from autotriton.warehouse import MigrationError, UnknownKeyError, Warehouse, WarehouseError, WarehouseQueryError
from autotriton.warehouse.exports import WAREHOUSE_EXPORTS
from autotriton.training.exports import TRAINING_EXPORTS

db_app = typer.Typer(help="Inspect, query, export and migrate the warehouse (DuckDB).", no_args_is_help=True)
app.add_typer(db_app, name="db")

# name -> function(warehouse, config) returning (rows: list[dict], filter: dict).
# Adding an export is one entry here; `autotriton db export NAME` lists the names on error.
Exporter = Callable[[Warehouse, Any], "tuple[list[dict[str, Any]], dict[str, Any]]"]
EXPORTERS: dict[str, Exporter] = {**WAREHOUSE_EXPORTS, **TRAINING_EXPORTS}


@contextmanager
def open_warehouse(read_only: bool) -> Iterator[tuple[Warehouse, Any]]:
    """The configured warehouse and config; every warehouse error becomes a clear exit-2 error."""
    cfg, _ = load_config_or_fail()
    try:
        # hold=False: other commands hold the file only while they write, so a reader waits
        # (briefly) for that write instead of failing, and holds the file only per query itself.
        wh = Warehouse(cfg.warehouse.path, read_only=read_only, export_dir=cfg.warehouse.export_dir,
                       lock_wait_s=cfg.warehouse.lock_wait_s, hold=False)
    except (WarehouseError, MigrationError) as exc:
        fail(str(exc))
    try:
        yield wh, cfg
    except (WarehouseError, MigrationError) as exc:
        fail(str(exc))
    finally:
        wh.close()


def _plain(value: Any) -> Any:
    if isinstance(value, (datetime, date)):
        return value.isoformat(sep=" ") if isinstance(value, datetime) else value.isoformat()
    return value


def _cell(value: Any, width: int = 60) -> str:
    text = "" if value is None else str(_plain(value))
    text = text.replace("\n", "⏎")
    return text if len(text) <= width else text[: width - 1] + "…"


@db_app.command("stats")
def stats(json_out: bool = typer.Option(False, "--json", help="print one JSON object: tables, runs, schema version")) -> None:
    """Row counts per table, verdict mix and the last runs."""
    with open_warehouse(read_only=True) as (wh, _):
        summary = wh.stats()
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
    runs = Table(title="last runs")
    for col in ("run_id", "kind", "status", "started_at", "flow_run_id"):
        runs.add_column(col)
    for run in summary["last_runs"]:
        runs.add_row(*(_cell(run[c], 40) for c in ("run_id", "kind", "status", "started_at", "flow_run_id")))
    out.print(runs)


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
            result = wh.sql(query)
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
    for row in result.rows[:max_rows]:
        table.add_row(*(_cell(v) for v in row))
    out.print(table)


@db_app.command("export")
def export(
    name: str = typer.Argument(..., help=f"what to export: one of {', '.join(EXPORTERS)}"),
    out_dir: Optional[Path] = typer.Option(None, "--out", help="directory of the Parquet file (default: config warehouse.export_dir)"),
    json_out: bool = typer.Option(False, "--json", help="print one JSON object: the recorded export"),
) -> None:
    """Write an export to Parquet (atomically) and record it, with its content hash, in `exports`."""
    if name not in EXPORTERS:
        fail(f"unknown export {name!r}; choose one of: {', '.join(sorted(EXPORTERS))}.")
    out = console(json_out)
    with open_warehouse(read_only=False) as (wh, cfg):
        run = wh.start_run("export", cfg)
        try:
            with out.status(f"building the {name} export"):
                rows, filter_ = EXPORTERS[name](wh, cfg)
                result = wh.export_parquet(name, rows, filter_, run, out_dir=out_dir)
        except BaseException as exc:
            wh.finish_run(run, "failed", {"export": name, "error": str(exc)})
            raise
        summary = {"key": result.key, **result.to_dict(), "run_id": run.run_id}
        wh.finish_run(run, "succeeded", summary)
    if json_out:
        emit_json(summary)
        return
    out.print(f"exported {result.row_count} {name} row(s) to {result.path} (key {result.key}"
              + (f", splits {result.splits}" if result.splits else "") + ")")


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
            result = wh.lineage(key, max_children=max_children)
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
        report = wh.check()
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
        summary = {"path": cfg.warehouse.path, "applied": wh.applied_migrations, "schema_version": wh.schema_version}
    if json_out:
        emit_json(summary)
        return
    applied = ", ".join(map(str, summary["applied"])) or "none (already current)"
    console().print(f"{summary['path']}: schema version {summary['schema_version']}; applied: {applied}")
