"""`autotriton config show`: the effective configuration and where each value came from."""

from __future__ import annotations

import typer
from rich.table import Table

from autotriton.configuration import flatten
from autotriton.flows.cli.common import app, console, emit_json, load_config_or_fail

config_app = typer.Typer(help="Inspect the configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("show")
def show(json_out: bool = typer.Option(False, "--json", help="print one JSON object: {values, sources, hash}")) -> None:
    """Print every config key, its effective value and the layer it came from
    (default, profile:NAME, file:PATH, env:VAR or cli)."""
    cfg, sources = load_config_or_fail()
    values = flatten(cfg.model_dump(mode="json"))
    if json_out:
        emit_json({"profile": cfg.profile, "hash": cfg.hash, "values": values, "sources": sources})
        return
    table = Table(title=f"autotriton config (profile {cfg.profile}, hash {cfg.hash})")
    table.add_column("key", style="cyan")
    table.add_column("value")
    table.add_column("from", style="dim")
    for key in sorted(values):
        table.add_row(key, repr(values[key]), sources.get(key, "default"))
    console().print(table)
