"""Shared CLI machinery: the typer app, global options, JSON/human output, errors."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, Optional

import typer
from rich.console import Console

from autotriton.configuration import ConfigError, deprecated_paths, known_paths, parse_overrides

app = typer.Typer(
    name="autotriton",
    help="Build verified Triton-kernel training data, train models on it, and evaluate them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)


@dataclass
class GlobalOptions:
    db: Optional[Path] = None
    config_file: Optional[Path] = None
    profile: Optional[str] = None
    overrides: list[str] = field(default_factory=list)
    _loaded: Any = None

    def load(self, extra: dict[str, Any] | None = None):
        """The effective PipelineConfig and the source of each value (CLI flags win)."""
        from autotriton.flows.config import PipelineConfig, load_config

        cli: dict[str, Any] = parse_overrides(self.overrides, known_paths(PipelineConfig), deprecated_paths(PipelineConfig))
        if self.profile:
            cli["profile"] = self.profile
        if self.db:
            cli["warehouse.path"] = str(self.db)
        cli.update({k: v for k, v in (extra or {}).items() if v is not None})
        return load_config(self.config_file, cli=cli)


OPTIONS = GlobalOptions()


@app.callback()
def _global(
    db: Optional[Path] = typer.Option(None, "--db", help="DuckDB warehouse file [env: AUTOTRITON_DB] (default ./autotriton.duckdb)", show_default=False),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="TOML or YAML (.yaml/.yml) config file (default ./autotriton.toml, or ./autotriton.yaml, when present)", show_default=False),
    profile: Optional[str] = typer.Option(None, "--profile", "-p", help="config profile: demo (CPU) or gpu [env: AUTOTRITON_PROFILE]", show_default=False),
    set_: list[str] = typer.Option([], "--set", "-s", help="override any config key, e.g. --set validation.trials=3 (repeatable)"),
) -> None:
    OPTIONS.db, OPTIONS.config_file, OPTIONS.profile, OPTIONS.overrides = db, config, profile, list(set_)


def console(json_mode: bool = False) -> Console:
    """Human output: stdout normally, stderr when stdout is reserved for --json."""
    return Console(stderr=json_mode)


ERR = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print an error that names the input at fault, then exit (2 = usage / input error)."""
    ERR.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def emit_json(summary: dict[str, Any]) -> None:
    """The one JSON object a --json verb prints on stdout."""
    sys.stdout.write(json.dumps(summary, default=str, sort_keys=False) + "\n")
    sys.stdout.flush()


def load_config_or_fail(extra: dict[str, Any] | None = None):
    try:
        return OPTIONS.load(extra)
    except ConfigError as exc:
        fail(str(exc))


def main() -> None:
    import autotriton.flows.cli  # noqa: F401  (registers every verb)

    app()
