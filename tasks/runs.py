"""Warehouse runs for flows and CLI verbs: every row a run writes carries the run (and so the
flow-run id), and every run ends marked succeeded (with its summary) or failed (with the error).

    with run_scope(resources.warehouse, "refresh", cfg) as scope:
        ...  # puts with scope.run
        scope.summary = {...}

No Prefect import at module level (the CLI stays quick to start and runs without a Prefect
server); inside a flow, `run_scope(..., as_tasks=True)` records the run's start and finish as
the `start-run` and `finish-run` task runs.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:
    from autotriton.warehouse import Run, Warehouse

ERROR_CHARS = 2000  # how much of a failed run's error its summary keeps


def current_flow_run_id() -> str:
    """Prefect's flow-run id when called inside a flow (or task) run, else ''.

    Prefect is consulted only if the process has already imported it: a flow run cannot exist in a
    process that has not, and importing it costs seconds. Deployments' subprocesses export
    PREFECT__FLOW_RUN_ID, which is honoured too.
    """
    if "prefect" in sys.modules:
        try:
            from prefect.runtime import flow_run

            found = flow_run.id
            if found:
                return str(found)
        except Exception:  # noqa: BLE001  (a broken prefect install must not break writes)
            pass
    return os.environ.get("PREFECT__FLOW_RUN_ID", "")


def start_run(wh: Warehouse, kind: str, config: Any) -> Run:
    """Record a run in `wh`; its flow_run_id is Prefect's (when there is a flow run)."""
    return wh.start_run(kind, config, flow_run_id=current_flow_run_id())


def finish_run(wh: Warehouse, run: Run, status: str, summary: dict[str, Any]) -> None:
    wh.finish_run(run, status, summary)


def error_summary(exc: BaseException) -> dict[str, Any]:
    """What a failed run stores: the error's type and message."""
    return {"error": f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]}


@dataclass
class RunScope:
    """The run of a `run_scope` block. Set `summary` (stored when the block ends) and, for a run
    that ends otherwise than succeeded without an error (a cancelled one), `status`."""

    run: Run
    summary: dict[str, Any] = field(default_factory=dict)
    status: str = "succeeded"


@contextmanager
def run_scope(wh: Warehouse, kind: str, config: Any, *, as_tasks: bool = False,
              on_interrupt: str = "failed") -> Iterator[RunScope]:
    """Start a run, yield its RunScope, and finish it: with `scope.status` and `scope.summary`
    when the block ends, or "failed" with the summary and the error (`error_summary`) when it
    raises (anything; a KeyboardInterrupt marks it `on_interrupt`), re-raising.

    `as_tasks`: inside a Prefect flow, start and finish are the `start-run` and
    `finish-run` task runs.
    """
    start, finish = start_run, finish_run
    if as_tasks:
        from prefect import task
        from prefect.cache_policies import NO_CACHE

        start = task(name="start-run", cache_policy=NO_CACHE)(start_run)  # a Warehouse handle is no cache key
        finish = task(name="finish-run", cache_policy=NO_CACHE)(finish_run)
    scope = RunScope(start(wh, kind, config))
    try:
        yield scope
    except BaseException as exc:
        status = on_interrupt if isinstance(exc, KeyboardInterrupt) else "failed"
        finish(wh, scope.run, status, {**scope.summary, **error_summary(exc)})
        raise
    finish(wh, scope.run, scope.status, scope.summary)
