"""Runs: each execution that writes to the warehouse records a run, and every row it writes
carries the run's lineage (run id, flow-run id, config hash, code version).

The flow-run id is given by the caller (`start_run(kind, config, flow_run_id=...)`; tasks/runs.py
reads Prefect's): the warehouse knows nothing of the orchestrator.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping

from autotriton.hashing import content_key, stable_json
from autotriton.versioning import code_version
from autotriton.warehouse.connection import WarehouseError, _locked, _now

RUN_STATUSES = ("running", "succeeded", "failed", "cancelled", "crashed")


@dataclass(frozen=True)
class Run:
    """One execution that writes to the warehouse; every row it writes carries these values."""

    run_id: str
    kind: str
    flow_run_id: str
    config_hash: str
    code_version: str
    started_at: datetime


def _config_payload(config: Any) -> tuple[dict[str, Any], str]:
    if config is None:
        payload: dict[str, Any] = {}
    elif hasattr(config, "model_dump"):
        payload = config.model_dump(mode="json")
    elif dataclasses.is_dataclass(config) and not isinstance(config, type):
        payload = dataclasses.asdict(config)
    elif isinstance(config, Mapping):
        payload = dict(config)
    else:
        raise TypeError(f"start_run: config must be a pydantic model, a dataclass or a dict, got {type(config).__name__}")
    # Same formula as autotriton.configuration.config_hash, so a run's hash equals PipelineConfig.hash
    # (computed before redaction: the hash identifies the config, the stored JSON must not leak it).
    return _redact(payload), content_key("config", json.loads(stable_json(payload)))


_SECRET_KEY = re.compile(r"(^|_)(api_key|apikey|token|secret|password|passwd)$", re.IGNORECASE)


def _redact(value: Any, key: str = "") -> Any:
    """Config as stored in `runs.config`: string values of secret-looking keys (api_key, *_token,
    password, ...) replaced by '***'. Names of environment variables (api_key_env) stay."""
    if isinstance(value, Mapping):
        return {k: _redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, key) for v in value]
    if isinstance(value, str) and value and _SECRET_KEY.search(key):
        return "***"
    return value



class RunsMixin:
    """start_run / finish_run / runs of the Warehouse, and the lineage values a put stamps on its rows."""

    @_locked
    def start_run(self, kind: str, config: Any = None, flow_run_id: str = "") -> Run:
        """Record the start of a run; pass the Run to every put_* so its rows carry its lineage.
        `flow_run_id`: the orchestrator's id of the flow run this run belongs to ('' outside one)."""
        self._require_writable("start_run")
        payload, chash = _config_payload(config)
        started = _now()
        run = Run(
            run_id=f"{started:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:8]}",
            kind=kind, flow_run_id=flow_run_id or "", config_hash=chash,
            code_version=code_version(), started_at=started,
        )
        self._con.execute(
            "INSERT INTO runs (run_id, kind, status, started_at, config, config_hash, code_version, flow_run_id, "
            "pid, host, created_at) VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?)",
            [run.run_id, kind, started, stable_json(payload), chash, run.code_version, run.flow_run_id,
             os.getpid(), socket.gethostname(), started],
        ).fetchall()
        self._known_runs.add(run.run_id)
        return run

    @_locked
    def finish_run(self, run: Run, status: str = "succeeded", summary: Mapping[str, Any] | None = None) -> None:
        self._require_writable("finish_run")
        if status not in RUN_STATUSES:
            raise ValueError(f"finish_run: status {status!r} is not one of {', '.join(RUN_STATUSES)}")
        self._con.execute(
            "UPDATE runs SET status = ?, finished_at = ?, summary = ? WHERE run_id = ?",
            [status, _now(), stable_json(dict(summary or {})), run.run_id],
        ).fetchall()

    @_locked
    def runs(self, limit: int | None = 20, kind: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM runs" + (" WHERE kind = ?" if kind else "") + " ORDER BY started_at DESC, run_id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        rows = self._fetch_dicts(sql, [kind] if kind else [])
        for row in rows:
            for col in ("config", "summary"):
                row[col] = json.loads(row[col]) if row[col] else None
        return rows

    def _lineage_values(self, run: Run) -> dict[str, Any]:
        if not isinstance(run, Run):
            raise TypeError("put_*: pass the Run returned by wh.start_run(kind, config) as the first argument")
        if run.run_id not in self._known_runs:
            if not self._con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [run.run_id]).fetchall()[0][0]:
                raise WarehouseError(f"{self.path}: run {run.run_id} was not started in this warehouse; call start_run first.")
            self._known_runs.add(run.run_id)
        return {
            "run_id": run.run_id,
            "flow_run_id": run.flow_run_id,
            "config_hash": run.config_hash,
            "code_version": run.code_version,
            "created_at": _now(),
        }

