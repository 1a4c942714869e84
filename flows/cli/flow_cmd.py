"""Orchestrated verbs: `refresh`, `run` (end to end), `serve` (schedules) and `ui` (local Prefect UI)."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Optional

import typer
from rich.table import Table

from autotriton.flows.cli.common import app, console, emit_json, fail, load_config_or_fail, stopped_by_interrupt


def _prefect_env() -> None:
    """Offline-friendly Prefect defaults (a user's own settings still win). Prefect reads its
    settings when first imported, so this runs when the CLI loads, before any flow import."""
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    os.environ.setdefault("PREFECT_LOGGING_TO_API_BATCH_INTERVAL", "0.5")
    # The ephemeral API server starts in 6-13 s on an idle 2-core machine; give a busy one room.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")


def _run_flow(flow_fn, cfg, **params: Any) -> dict[str, Any]:
    from autotriton.flows.pipeline import task_runner

    _prefect_env()
    try:
        return flow_fn.with_options(task_runner=task_runner(cfg))(cfg, **params)
    except Exception as exc:  # the flow already recorded the failure in the warehouse
        from autotriton.capacity import CapError
        from autotriton.tasks.db import WarehouseError

        if isinstance(exc, (WarehouseError, CapError)):
            fail(str(exc))
        raise


_prefect_env()


@app.command("refresh")
def refresh_cmd(json_out: bool = typer.Option(False, "--json", help="print one JSON object: harvest, distill and export summaries")) -> None:
    """Run the dataset refresh flow: harvest -> extract -> dedup -> distill -> validate -> store -> export,
    under Prefect (cached per problem, so an unchanged module is never re-distilled)."""
    from autotriton.flows.pipeline import refresh_dataset

    cfg, _ = load_config_or_fail()
    started = time.monotonic()
    out = _run_flow(refresh_dataset, cfg)
    out.pop("export_records", None)
    out["elapsed_s"] = round(time.monotonic() - started, 1)
    if json_out:
        emit_json(out)
        return
    console().print(_refresh_table(out))


def _refresh_table(out: dict[str, Any]) -> Table:
    h, d = out["harvest"], out["distill"]
    took = f", {out['elapsed_s']} s" if out.get("elapsed_s") is not None else ""
    table = Table(title=f"refresh (run {out['run_id']}{took})", show_header=False)
    table.add_column("what", style="cyan")
    table.add_column("value")
    table.add_row("harvest", f"{h['files']} files, {h['modules']} modules, {h['runnable']} runnable, {h['duplicates']} duplicates")
    table.add_row("rejected", ", ".join(f"{k} {v}" for k, v in h["rejected"].items()) or "-")
    table.add_row("distill", f"{d['problems']} problems, {d['candidates']} candidates, yield {d['yield']:.0%}")
    table.add_row("verdicts", ", ".join(f"{k} {v}" for k, v in d["verdicts"].items()) or "-")
    table.add_row("validated pairs", str(d["validated_pairs"]))
    table.add_row("exports", ", ".join(f"{k} {v}" for k, v in out["exports"].items()))
    return table


@app.command("run")
def run_cmd(json_out: bool = typer.Option(False, "--json", help="print one JSON object: the whole report")) -> None:
    """The whole pipeline, end to end (the retrain flow): refresh the dataset, train (SFT then GRPO),
    evaluate the trained model; ends with a short report. On the embedded defaults (demo profile)
    this runs on a CPU in minutes."""
    from autotriton.flows.pipeline import retrain

    cfg, _ = load_config_or_fail()
    started = time.monotonic()
    report = _run_flow(retrain, cfg)
    report["elapsed_s"] = round(time.monotonic() - started, 1)
    report["warehouse"] = cfg.warehouse.path
    if json_out:
        emit_json(json.loads(json.dumps(report, default=str)))
        return
    _print_report(report)


def _print_report(report: dict[str, Any]) -> None:
    out = console()
    r, t, e = report["refresh"], report["train"], report["evaluate"]
    out.print(_refresh_table({**r, "elapsed_s": None}))
    models = Table(title="models trained", show_header=True)
    for col in ("stage", "checkpoint", "steps", "key metrics"):
        models.add_column(col)
    for stage in ("sft", "grpo"):
        if stage in t:
            m = t[stage]["metrics"]
            shown = {k: m[k] for k in list(m)[:4]}
            models.add_row(stage, t[stage]["path"], str(t[stage]["steps"]),
                           ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items()))
    out.print(models)
    from autotriton.evaluation import metrics_in

    m = e["metrics"]
    ev = Table(title=f"evaluation of {e['model']}")
    shown = metrics_in("flat")  # the evaluation registry's flat row
    for metric in shown:
        ev.add_column("pass@k" if metric.shown == "per_k" else metric.name)
    fmt = lambda v: f"{v:.2f}" if isinstance(v, float) else ("n/a" if v is None else str(v))  # noqa: E731  (speed on a CPU: n/a)
    ev.add_row(*[", ".join(f"@{k}={v:.2f}" for k, v in (m.get(metric.name) or {}).items()) if metric.shown == "per_k"
                 else fmt(m.get(metric.name)) for metric in shown])
    out.print(ev)
    for line in _learned(t, m):
        out.print(line, highlight=False)
    out.print(f"whole pipeline: {report['elapsed_s']} s\nreport: {e['report']}\nwarehouse: {report['warehouse']} (autotriton db stats)\n"
              "runs, task graphs, artifacts and asset events: `autotriton ui`, then open the URL it prints "
              "(Runs, Artifacts, and the Event feed for asset materialisations).")


def _learned(train: dict[str, Any], metrics: dict[str, Any]) -> list[str]:
    """What the run learned and why samples failed, in words (a zero reward std means GRPO had nothing to learn from)."""
    lines = []
    g = (train.get("grpo") or {}).get("metrics") or {}
    if "max_reward_std" in g:
        std = g["max_reward_std"]
        line = (f"GRPO: mean reward {g.get('mean_reward', 0):.3f} (step 1: {g.get('first_reward', 0):.3f}, last: "
                f"{g.get('final_reward', 0):.3f}), reward std up to {std:.3f}, completions without code at the end "
                f"{g.get('final_judge_no_code', 0):.0%}")
        for name, what in (("combined_reward", "judged correct"), ("format_reward", "a complete ModelNew block")):
            if f"first_{name}" in g:
                line += f"; {what}: {g[f'first_{name}']:.0%} -> {g[f'final_{name}']:.0%} of completions"
        if not std:
            line = f"[yellow]{line}: no reward variance, so GRPO had nothing to learn from (every completion scored alike)[/]"
        lines.append(line)
    counts = metrics.get("outcome_counts") or {}
    if counts:
        lines.append("evaluation outcomes: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if metrics.get("truncated_rate"):
        lines.append(f"[yellow]{metrics['truncated_rate']:.0%} of the evaluation's samples hit evaluation.max_new_tokens[/]")
    in_suite = metrics.get("problems_in_suite")
    if in_suite and in_suite > (metrics.get("problems") or 0):
        lines.append(f"[yellow]evaluated {metrics.get('problems')} of the suite's {in_suite} problems (evaluation.max_problems)[/]")
    return lines


@app.command("serve")
def serve_cmd(
    cron: Optional[str] = typer.Option(None, "--cron", help="schedule of the dataset refresh [config: orchestration.refresh_cron]"),
    temporary_server: bool = typer.Option(False, "--temporary-server", help=(
        "without a Prefect server (PREFECT_API_URL unset), start one for as long as serve runs (its address is printed; "
        "schedules and runs live only as long as it does)")),
    port: int = typer.Option(4300, "--port", help="port of the temporary server (--temporary-server)"),
) -> None:
    """Serve the flows: the dataset refresh on its cron schedule, train / evaluate / retrain on demand
    (start them from the UI or `prefect deployment run`). Needs a Prefect server: run `autotriton ui`
    in another terminal first (or set PREFECT_API_URL), or pass --temporary-server. For work pools
    and workers instead, see prefect.yaml. Stops on Ctrl-C."""
    from contextlib import nullcontext

    cfg, _ = load_config_or_fail({"orchestration.refresh_cron": cron})
    _prefect_env()
    from prefect.settings import PREFECT_API_URL, get_current_settings, temporary_settings

    from autotriton.flows.serving import build_deployments

    try:
        deployments = build_deployments(cfg)
    except ValueError as exc:
        fail(str(exc))
    api_url = get_current_settings().api.url
    if not api_url and not temporary_server:
        fail("serve needs a Prefect server, and PREFECT_API_URL is not set: run `autotriton ui` in another terminal "
             "first (or set PREFECT_API_URL to your server), or pass --temporary-server to start one here.")
    out = console()
    if api_url:
        out.print(f"Prefect server: {api_url}")

    try:
        from autotriton.flows.ui import local_server

        with stopped_by_interrupt(), (local_server(port=port, point_cli=False) if not api_url else nullcontext(None)) as ui_url:
            settings = {PREFECT_API_URL: f"{ui_url}/api"} if ui_url else {}
            if ui_url:
                out.print(f"started a temporary Prefect server at {ui_url} (UI and API at {ui_url}/api); it stops with serve")
            with temporary_settings(updates=settings):
                from prefect import serve

                for d in deployments:
                    schedule = ", ".join(s.schedule.cron for s in (d.schedules or []) if hasattr(s.schedule, "cron")) or "on demand"
                    out.print(f"serving [bold]{d.name}[/] ({schedule})")
                serve(*deployments, print_starting_message=False)
    except RuntimeError as exc:  # the temporary server did not start (port taken)
        fail(str(exc))
    console(True).print("serve stopped")
    raise typer.Exit(0)


@app.command("ui")
def ui_cmd(
    host: str = typer.Option("127.0.0.1", "--host", help="address to listen on (loopback by default)"),
    port: int = typer.Option(4200, "--port", help="port of the Prefect API and UI"),
) -> None:
    """Start the local Prefect server and UI, point the CLI at it (flows run from other terminals
    report there), print the URL, and stop cleanly on Ctrl-C."""
    import signal
    import threading

    from autotriton.flows.ui import local_server

    out = console()
    stop = threading.Event()
    # Ctrl-C (and SIGTERM) only set the event: the server is then stopped and the CLI's profile
    # restored by ordinary code, never by an exception landing in the middle of start-up or clean-up.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        with local_server(host, port) as url:
            if not stop.is_set():
                out.print(f"Prefect UI: [bold]{url}[/]  (API {url}/api). autotriton runs now report here. Ctrl-C stops it.")
                stop.wait()
            out.print("stopping the Prefect server ...")
    except RuntimeError as exc:
        fail(str(exc))
