"""Shared CLI machinery: the typer app, global options, JSON/human output, errors."""

from __future__ import annotations

import functools
import inspect
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, Optional

import typer
from rich.console import Console
from typer.core import TyperOption
from typer.models import ParameterInfo

from autotriton.configuration import ConfigError, deprecated_paths, known_paths, parse_overrides

# `-h` as well as `--help`, on every verb (sub-apps are given the same settings where they are made).
CONTEXT = {"help_option_names": ["-h", "--help"]}

app = typer.Typer(
    name="autotriton",
    help="Build verified Triton-kernel training data, train models on it, and evaluate them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings=CONTEXT,
)

_display_type_rich = getattr(TyperOption, "display_type_rich", None)


def _flag_display(self: TyperOption, ctx: Any) -> str | None:
    # typer 0.29 labels every option with its type in the rich help, flags too ("--json <bool>"),
    # which reads as if the flag took a value (and `--json true` is then refused): flags get none.
    return None if self.is_flag else _display_type_rich(self, ctx)


if _display_type_rich is not None:  # the typer this was written for (pyproject's range); others label flags as they do
    TyperOption.display_type_rich = _flag_display  # type: ignore[method-assign]


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

DB_HELP = "DuckDB warehouse file [env: AUTOTRITON_DB] (default ./autotriton.duckdb)"
CONFIG_HELP = "TOML or YAML (.yaml/.yml) config file (default ./autotriton.toml, or ./autotriton.yaml, when present)"
PROFILE_HELP = "config profile: demo (CPU) or gpu [env: AUTOTRITON_PROFILE]"
SET_HELP = "override any config key, e.g. --set validation.trials=3 (repeatable)"
GLOBAL_PANEL = "Global options (also accepted before the verb)"


def _version(value: bool) -> None:
    if value:
        from autotriton.versioning import code_version

        sys.stdout.write(f"autotriton {code_version()}\n")
        raise typer.Exit(0)


@app.callback()
def _global(
    db: Optional[Path] = typer.Option(None, "--db", help=DB_HELP, show_default=False),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help=CONFIG_HELP, show_default=False),
    profile: Optional[str] = typer.Option(None, "--profile", "-p", help=PROFILE_HELP, show_default=False),
    set_: list[str] = typer.Option([], "--set", "-s", help=SET_HELP),
    version: bool = typer.Option(False, "--version", "-V", help="print the version (package and commit) and exit",
                                 is_eager=True, callback=_version),
) -> None:
    del version  # handled by its eager callback
    OPTIONS.db, OPTIONS.config_file, OPTIONS.profile, OPTIONS.overrides = db, config, profile, list(set_)


def _global_after_verb(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` with the global options added to its own (long names only; a verb's short names win),
    so `autotriton db stats --db X` works like `autotriton --db X db stats` and each verb's help
    lists them. A value given after the verb overrides the one given before it; --set adds to it."""
    own = inspect.signature(fn)
    taken = {name for p in own.parameters.values() if isinstance(p.default, ParameterInfo)
             for name in (p.default.param_decls or ())}
    extra = [
        ("global_db", Optional[Path], "--db", DB_HELP, None),
        ("global_config", Optional[Path], "--config", CONFIG_HELP, None),
        ("global_profile", Optional[str], "--profile", PROFILE_HELP, None),
        ("global_set", list[str], "--set", SET_HELP, []),
    ]
    added = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                          default=typer.Option(default, flag, help=help_, show_default=False, rich_help_panel=GLOBAL_PANEL))
        for name, annotation, flag, help_, default in extra if flag not in taken
    ]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        db, config = kwargs.pop("global_db", None), kwargs.pop("global_config", None)
        profile, overrides = kwargs.pop("global_profile", None), kwargs.pop("global_set", None) or []
        OPTIONS.db = db or OPTIONS.db
        OPTIONS.config_file = config or OPTIONS.config_file
        OPTIONS.profile = profile or OPTIONS.profile
        OPTIONS.overrides = [*OPTIONS.overrides, *overrides]
        return fn(*args, **kwargs)

    params = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    wrapper.__signature__ = own.replace(parameters=[*params, *added])  # type: ignore[attr-defined]
    return wrapper


def accept_globals_after_verbs(root: typer.Typer) -> None:
    """Give every verb (and every verb group's own callback) the global options; idempotent."""
    def apps(parent: typer.Typer) -> list[typer.Typer]:
        return [parent, *(a for group in parent.registered_groups if group.typer_instance for a in apps(group.typer_instance))]

    for typer_app in apps(root):
        for command in typer_app.registered_commands:
            if command.callback and not getattr(command.callback, "_autotriton_globals", False):
                command.callback = _global_after_verb(command.callback)
                command.callback._autotriton_globals = True  # type: ignore[attr-defined]
                command.context_settings = {**CONTEXT, **(command.context_settings or {})}
        info = typer_app.registered_callback
        if typer_app is not root and info and info.callback and not getattr(info.callback, "_autotriton_globals", False):
            info.callback = _global_after_verb(info.callback)
            info.callback._autotriton_globals = True  # type: ignore[attr-defined]
        if typer_app is not root:
            typer_app.info.context_settings = {**CONTEXT, **(typer_app.info.context_settings or {})}


def console(json_mode: bool = False) -> Console:
    """Human output: stdout normally, stderr when stdout is reserved for --json.

    Piped or redirected, rich would assume 80 columns and cut table cells ("validation.tolera…"):
    a console that is not a terminal gets room for whole names (COLUMNS still wins when set)."""
    probe = Console(stderr=json_mode)
    if probe.is_terminal or os.environ.get("COLUMNS"):
        return probe
    return Console(stderr=json_mode, width=PIPE_WIDTH)


PIPE_WIDTH = 400


# Messages are not wrapped at rich's assumed width (80 columns when piped): one message, one line, greppable.
ERR = Console(stderr=True, soft_wrap=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print an error that names the input at fault, then exit (2 = usage / input error)."""
    ERR.print(f"[bold red]error:[/] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def stopped_by_interrupt() -> Iterator[threading.Event]:
    """Run a long-lived block (a server, `serve`) that Ctrl-C or SIGTERM ends at once, without a
    traceback; the block's own context managers clean up on the way out. The interrupt lands
    wherever the block is, and code it lands in may wrap it in an error of its own (pydantic turns
    it into a SchemaError while a model class is built during an import), so any error after the
    interrupt is taken as its echo. A second Ctrl-C does not interrupt the clean-up. Yields the
    event that is set once the block is being stopped."""
    stopping = threading.Event()

    def interrupted(*_):
        if not stopping.is_set():
            stopping.set()
            raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupted) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stopping
    except KeyboardInterrupt:
        pass
    except Exception:
        if not stopping.is_set():
            raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def emit_json(summary: dict[str, Any]) -> None:
    """The one JSON object a --json verb prints on stdout."""
    sys.stdout.write(json.dumps(summary, default=str, sort_keys=False) + "\n")
    sys.stdout.flush()


def load_config_or_fail(extra: dict[str, Any] | None = None):
    try:
        return OPTIONS.load(extra)
    except ConfigError as exc:
        fail(str(exc))


def verb_runs_as_flow() -> bool:
    """Whether a verb that writes rows runs as a Prefect flow run (orchestration.verbs_as_flows)."""
    mode = load_config_or_fail()[0].orchestration.verbs_as_flows
    if mode != "auto":
        return mode == "always"
    if os.environ.get("PREFECT_API_URL"):
        return True
    from prefect.settings import get_current_settings  # the active profile (where `autotriton ui` points it)

    return bool(get_current_settings().api.url)


def writes_rows(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a verb that writes warehouse rows: it runs as the Prefect flow run `autotriton-<name>`
    when `verb_runs_as_flow()` (so `autotriton ui` shows it and `start_run` stamps its id on every
    row), else plainly. The verb's own errors and exit codes pass through unchanged; Prefect records
    them as the flow run's failure."""
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def verb(*args: Any, **kwargs: Any) -> Any:
            ctx = next((a for a in (*args, *kwargs.values()) if isinstance(a, typer.Context)), None)
            if (ctx is not None and ctx.invoked_subcommand is not None) or not verb_runs_as_flow():  # a group's callback
                return fn(*args, **kwargs)
            from prefect import flow  # Prefect's offline defaults are set when the CLI loads (flow_cmd._prefect_env)
            from prefect.states import Failed

            exit_code: list[int] = []

            def run_verb() -> Any:
                try:
                    return fn(*args, **kwargs)
                except typer.Exit as exc:  # the verb said why already: no traceback, the flow run failed with its code
                    exit_code.append(exc.exit_code)
                    return Failed(message=f"exit code {exc.exit_code}") if exc.exit_code else None

            state = flow(name=f"autotriton-{name}", validate_parameters=False, persist_result=False)(run_verb)(return_state=True)
            if exit_code:
                raise typer.Exit(exit_code[0])
            return state.result()  # the verb's own exception, re-raised

        return verb

    return decorate


def main() -> None:
    import autotriton.flows.cli  # noqa: F401  (registers every verb)

    app()
