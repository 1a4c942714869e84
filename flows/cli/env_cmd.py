"""`autotriton env list|build|prefetch`: the dependency environments of harvested problems
(autotriton/environments.py), and wheelhouses to build them on machines without network."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from autotriton.flows.cli.common import app, console, emit_json, fail, load_config_or_fail

env_app = typer.Typer(help="Dependency environments of harvested problems: list, build, prefetch wheels for offline machines.",
                      no_args_is_help=True)
app.add_typer(env_app, name="env")


#: `env build|prefetch --all`: also the sets of rejected problems (by default only runnable problems',
#: which are all that distill and the judge ever run: the rejected ones' can be large, e.g. a
#: package whose own release pulls matplotlib and scipy, and are no use on a GPU machine).
ALL_SETS_HELP = "also the requirement sets of rejected problems (default: runnable problems only, the ones distill takes)"


def _recorded_sets(db_path: str, all_sets: bool = False) -> list[list[str]]:
    """The distinct requirement sets recorded with the warehouse's (runnable) problems."""
    from autotriton.tasks.db import requirement_sets

    try:
        return requirement_sets(db_path, runnable_only=not all_sets)
    except FileNotFoundError:
        fail(f"{db_path}: no such warehouse; harvest first (`autotriton harvest local PATH`) or pass --db")


@env_app.command("list")
def list_envs(json_out: bool = typer.Option(False, "--json", help="print {environments: [{key, requirements, path, installed}]}")) -> None:
    """The environments built in `environments.cache_dir` on this machine."""
    from autotriton.environments import EnvironmentCache

    cfg, _ = load_config_or_fail()
    envs = EnvironmentCache(cfg.environments).recorded()
    if json_out:
        emit_json({"cache_dir": cfg.environments.cache_dir, "environments": [
            {"key": e.key, "requirements": e.requirements, "path": e.path, "installed": e.installed} for e in envs]})
        return
    table = Table(title=f"dependency environments in {cfg.environments.cache_dir}")
    for col in ("key", "requirements", "installed"):
        table.add_column(col)
    for e in envs:
        table.add_row(e.key or "", ", ".join(e.requirements), ", ".join(f"{k} {v}" for k, v in e.installed.items()))
    console().print(table)


@env_app.command("build")
def build(all_sets: bool = typer.Option(False, "--all", help=ALL_SETS_HELP),
          json_out: bool = typer.Option(False, "--json", help="print {built, reused, failed: {requirements: reason}}")) -> None:
    """Build the environment of every runnable problem's requirement set (offline from
    `environments.find_links` with `--set environments.offline=true`), e.g. on a GPU machine
    before `autotriton distill`. Failures name the requirement."""
    from autotriton.environments import DependencyError, EnvironmentCache

    cfg, _ = load_config_or_fail()
    cache = EnvironmentCache(cfg.environments)
    out: dict[str, Any] = {"built": 0, "reused": 0, "failed": {}}
    for reqs in _recorded_sets(cfg.warehouse.path, all_sets):
        try:
            env = cache.ensure(reqs)
        except DependencyError as exc:
            out["failed"][", ".join(reqs)] = f"{exc.reason}: {exc.detail}"
            continue
        out["reused" if env.reused else "built"] += 1
    if json_out:
        emit_json(out)
        return
    con = console()
    con.print(f"environments: {out['built']} built, {out['reused']} already there, {len(out['failed'])} failed")
    for reqs, why in out["failed"].items():
        con.print(f"[red]{reqs}[/]: {why}")


@env_app.command("prefetch")
def prefetch(
    out_dir: Path = typer.Option(..., "--out", help="wheel folder to fill; carry it to the offline machine and point environments.find_links at it"),
    python_version: str = typer.Option("3.12", "--python-version", help="the offline machine's Python"),
    platform: list[str] = typer.Option([], "--platform", help="its platform tags (default: manylinux 2_28 down to manylinux1, x86_64); repeatable"),
    provided: list[str] = typer.Option([], "--provided", help="the exact versions of its torch and triton, pinned for the resolution "
                                       "and never downloaded (default: this machine's), e.g. --provided torch==2.11.0"),
    exclude_from: list[Path] = typer.Option([], "--exclude-from", help="a listing of what it has installed (`python3 -m pip list "
                                            "--format=freeze` run there, e.g. scripts/h200-image-packages.txt): what it has at a "
                                            "version every requirement accepts is not downloaded (the environment built there "
                                            "sees the machine's own packages); other versions are; repeatable"),
    all_sets: bool = typer.Option(False, "--all", help=ALL_SETS_HELP),
    json_out: bool = typer.Option(False, "--json", help="print {sets, downloaded, failed: {requirements: error}}"),
) -> None:
    """Download the wheels of every runnable problem's requirement set for another Python and platform (autotriton/wheelhouse.py), without torch, triton or CUDA libraries."""
    from autotriton.environments import judge_pins
    from autotriton.wheelhouse import DEFAULT_EXCLUDE, DEFAULT_PLATFORMS, WheelhouseError, build_wheelhouse, installed_versions

    target: dict[str, str | None] = {}
    for listing in exclude_from:
        try:
            target.update(installed_versions(listing))
        except OSError as exc:
            fail(f"--exclude-from {listing}: {exc.strerror or exc}; pass the output of `python3 -m pip list --format=freeze` run on the GPU machine")
    cfg, _ = load_config_or_fail()
    sets = _recorded_sets(cfg.warehouse.path, all_sets)
    pins = list(provided) or [f"{d}=={v.split('+')[0]}" for d, v in judge_pins().items() if d != "numpy"]
    summary: dict[str, Any] = {"sets": len(sets), "downloaded": [], "left_to_the_target": [], "failed": {}, "provided": pins}
    for reqs in sets:  # one resolution per set: two sets may pin the same package differently
        try:
            got = build_wheelhouse(reqs, out_dir, python_version=python_version, platforms=platform or list(DEFAULT_PLATFORMS),
                                   provided=pins, exclude=DEFAULT_EXCLUDE + ("numpy",), find_links=cfg.environments.find_links,
                                   target=target)
        except WheelhouseError as exc:
            summary["failed"][", ".join(reqs)] = str(exc)[-800:]
            continue
        summary["downloaded"] = sorted(set(summary["downloaded"]) | set(got["downloaded"]))  # type: ignore[arg-type]
        summary["left_to_the_target"] = sorted(set(summary["left_to_the_target"]) | set(got["left_to_the_target"]))  # type: ignore[arg-type]
    if json_out:
        emit_json(summary)
        return
    con = console()
    kept = f", {len(summary['left_to_the_target'])} left to the machine's own" if exclude_from else ""
    con.print(f"{len(summary['downloaded'])} wheel(s) for {len(sets)} requirement set(s) in {out_dir} (Python {python_version}{kept}); "
              f"on the offline machine: --set environments.offline=true --set 'environments.find_links=[\"{out_dir}\"]'")
    for reqs, why in summary["failed"].items():
        con.print(f"[red]{reqs}[/]: {why}")
