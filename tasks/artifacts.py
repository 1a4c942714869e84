"""Prefect artifacts and asset keys for the warehouse tables.

Asset keys name a warehouse and its table (`duckdb://<warehouse>/<table>`, the warehouse as
`<file stem>-<hash of its resolved path>`), so two warehouses never share an asset; a
materializing task declares the tables it writes and the upstream tables it read, so the event
feed shows the lineage of every refresh. Tasks are declared with the placeholder warehouse
`autotriton` and bound to the run's warehouse with `on_warehouse(task, db)`. Artifact keys must be lowercase letters, digits and dashes.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

TABLES = (
    "runs", "sources", "modules", "problems", "rejections", "candidates", "verdicts",
    "exports", "checkpoints", "evaluations",
)


UNBOUND = "autotriton"  # the warehouse part of keys declared at import, before a warehouse is known


def warehouse_id(db_path: str | Path) -> str:
    """`<file stem>-<8 hex of the resolved path>`: readable, and distinct for two files of one name."""
    import hashlib

    if str(db_path) == ":memory:":
        return "memory"
    resolved = Path(db_path).expanduser().resolve()
    stem = re.sub(r"[^a-z0-9-]+", "-", resolved.stem.lower()).strip("-") or "warehouse"
    return f"{stem}-{hashlib.sha256(str(resolved).encode()).hexdigest()[:8]}"


def asset_key(table: str, db_path: str | Path | None = None) -> str:
    """The Prefect asset key of a warehouse table (of the warehouse at `db_path`)."""
    if table not in TABLES and not table.startswith("exports/"):
        raise ValueError(f"unknown warehouse table {table!r}")
    return f"duckdb://{UNBOUND if db_path is None else warehouse_id(db_path)}/{table}"


def on_warehouse(task: Any, db_path: str | Path) -> Any:
    """A materializing task whose asset keys (and upstream keys) name the warehouse at `db_path`."""
    prefix, bound = f"duckdb://{UNBOUND}/", f"duckdb://{warehouse_id(db_path)}/"

    def rebind(assets):
        return [a.key.replace(prefix, bound, 1) if a.key.startswith(prefix) else a for a in assets]

    return task.with_options(assets=rebind(task.assets), asset_deps=rebind(task.asset_deps))


def artifact_key(*parts: str) -> str:
    """A valid artifact key from free text: lowercase, digits and dashes."""
    text = "-".join(parts).lower()
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]+", "-", text)).strip("-")


def _in_prefect_run() -> bool:
    try:
        from prefect.context import FlowRunContext, TaskRunContext
    except ImportError:
        return False
    return FlowRunContext.get() is not None or TaskRunContext.get() is not None


def publish_table(key: str, rows: Iterable[Mapping[str, Any]], description: str = "") -> None:
    """A table artifact (no-op outside a Prefect run, so stage steps stay usable without it)."""
    if not _in_prefect_run():
        return
    from prefect.artifacts import create_table_artifact

    create_table_artifact([dict(r) for r in rows], key=artifact_key(key), description=description)


def publish_markdown(key: str, markdown: str, description: str = "") -> None:
    if not _in_prefect_run():
        return
    from prefect.artifacts import create_markdown_artifact

    create_markdown_artifact(markdown, key=artifact_key(key), description=description)


def publish_image(key: str, png: Path, description: str = "") -> None:
    """A PNG shown in the UI: a markdown artifact embedding the image, with its path on disk."""
    if not _in_prefect_run() or not Path(png).exists():
        return
    data = base64.b64encode(Path(png).read_bytes()).decode()
    publish_markdown(key, f"![{description or key}](data:image/png;base64,{data})\n\n`{Path(png).resolve()}`", description)


class Progress:
    """A progress artifact for long stages, updated as work completes."""

    def __init__(self, key: str, description: str = ""):
        self.id = None
        if _in_prefect_run():
            from prefect.artifacts import create_progress_artifact

            self.id = create_progress_artifact(0.0, key=artifact_key(key), description=description)

    def update(self, fraction: float) -> None:
        if self.id is not None:
            from prefect.artifacts import update_progress_artifact

            update_progress_artifact(self.id, max(0.0, min(100.0, 100.0 * fraction)))


def markdown_table(rows: list[Mapping[str, Any]]) -> str:
    if not rows:
        return "_(none)_"
    cols = list(rows[0])
    head = "| " + " | ".join(cols) + " |\n| " + " | ".join("---" for _ in cols) + " |\n"
    return head + "".join("| " + " | ".join(str(r.get(c, "")) for c in cols) + " |\n" for r in rows)
