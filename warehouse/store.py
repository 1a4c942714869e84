"""The warehouse: one DuckDB file holding every record the pipeline produces, with lineage.

    with Warehouse("autotriton.duckdb") as wh:
        run = wh.start_run("harvest", config)
        wh.put_problems(run, problems)          # -> number of NEW rows
        wh.finish_run(run, "succeeded", {"problems": n})

Writes are idempotent on the records' content keys, go through Arrow (one INSERT ... SELECT per
put, never row by row) and run in one transaction per put, so an exception or a killed process
leaves no partial rows. One process writes a file at a time (DuckDB's file lock); a second one
gets WarehouseLockedError naming the holder. See warehouse/README.md.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import socket
import sys
import threading
import time
import uuid
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import duckdb
import pyarrow as pa

from autotriton.hashing import content_key, stable_json
from autotriton.records import (
    Candidate,
    Checkpoint,
    Evaluation,
    Export,
    HarvestedModule,
    Problem,
    SourceRef,
    Verdict,
)
from autotriton.versioning import code_version
from autotriton.warehouse.migrations import (
    LATEST_VERSION,
    MigrationError,
    apply_migrations,
    check_not_newer,
    current_version,
)
from autotriton.warehouse.schema import LINEAGE_COLUMNS, TABLES, TableSpec, arrow_table, row_key

# How long a Warehouse(hold=False) retries to open the file while another process writes it:
# writers hold it only for one write, so this is a wait for that write, not for a command.
TRANSIENT_WAIT_S = 30.0

RUN_STATUSES = ("running", "succeeded", "failed", "cancelled", "crashed")
_EXPORT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class WarehouseError(RuntimeError):
    """A warehouse input or state is wrong; the message names it and says what to do."""


class WarehouseLockedError(WarehouseError):
    """Another process holds the warehouse file (DuckDB allows one writing process per file)."""

    def __init__(self, path: str, pid: int | None, command: str):
        self.path, self.pid, self.command = path, pid, command
        holder = f"process {pid} ({command})" if pid is not None else f"another process ({command})"
        super().__init__(
            f"{path}: the warehouse is locked by {holder}. One process uses a warehouse file at a "
            "time: wait for that process to finish (or stop it), or point --db / AUTOTRITON_DB at "
            "another file."
        )


class WarehouseQueryError(WarehouseError):
    """A SQL query given by the user failed."""


class UnknownKeyError(WarehouseError):
    """No row in any table has the key asked for."""


@dataclass(frozen=True)
class Run:
    """One execution that writes to the warehouse; every row it writes carries these values."""

    run_id: str
    kind: str
    flow_run_id: str
    config_hash: str
    code_version: str
    started_at: datetime


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]

    def to_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]


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


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


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


def _process_command(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return " ".join(part.decode("utf-8", "replace") for part in raw.split(b"\0") if part)


def _translate_open_error(path: str, exc: Exception) -> WarehouseError:
    message = str(exc)
    if "Could not set lock" in message or "Conflicting lock" in message:
        found = re.search(r"Conflicting lock is held in (.*?) \(PID (\d+)\)", message)
        if found:
            pid = int(found.group(2))
            return WarehouseLockedError(path, pid, _process_command(pid) or found.group(1))
        return WarehouseLockedError(path, None, message)
    if "different configuration" in message:
        return WarehouseError(
            f"{path}: this process already has the warehouse open in another mode (read-only vs read-write); "
            "reuse that Warehouse object or close it first."
        )
    if "not a valid DuckDB" in message or "Unable to open" in message or "database file" in message:
        return WarehouseError(f"{path}: not a readable DuckDB warehouse ({message}). Point --db at a warehouse file.")
    return WarehouseError(f"{path}: cannot open the warehouse ({message}).")


def _locked(method):
    @functools.wraps(method)
    def wrapper(self: "Warehouse", *args: Any, **kwargs: Any):
        with self._lock, self._connection():
            return method(self, *args, **kwargs)

    return wrapper


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class Warehouse:
    """The DuckDB warehouse. Thread-safe within one process (calls are serialised)."""

    def __init__(self, path: str | os.PathLike[str] = "autotriton.duckdb", *, read_only: bool = False,
                 export_dir: str | os.PathLike[str] | None = None, lock_wait_s: float = 0.0, hold: bool = True):
        """Open (and, unless read_only, create and migrate) the warehouse at `path`.

        lock_wait_s: while another process holds the file, keep retrying this long before raising
        WarehouseLockedError (0: fail at once).
        hold: keep the file open until close() (one connection, the fastest for many small
        calls). hold=False opens the file for each call (or atomic() block) and closes it
        after, so a long command (an evaluation, a training run) never keeps other processes
        out while it computes: DuckDB lets one process write a file, so readers (`db stats`)
        and other writers only wait for a write in progress. Each open then retries for at
        least TRANSIENT_WAIT_S.
        """
        self.path = os.path.expanduser(str(path))
        self.read_only = read_only
        self.hold = hold
        self._lock_wait_s = lock_wait_s if hold else max(lock_wait_s, TRANSIENT_WAIT_S)
        self._closed = False
        self.applied_migrations: list[int] = []  # versions this open applied (writers only)
        self._lock = threading.RLock()
        self._con: duckdb.DuckDBPyConnection | None = None
        self._known_runs: set[str] = set()
        self._tx_depth, self._tx_doomed = 0, False
        self._stale_views: list[str] = []
        in_memory = self.path == ":memory:"
        if export_dir is not None:
            self.export_dir = Path(export_dir)
        else:
            self.export_dir = (Path.cwd() if in_memory else Path(self.path).resolve().parent) / "exports"
        if read_only and not in_memory and not Path(self.path).exists():
            raise WarehouseError(
                f"{self.path}: no warehouse there yet (nothing has been written). Run a pipeline verb "
                "first, or pass --db / AUTOTRITON_DB pointing at an existing warehouse."
            )
        if not in_memory and not read_only:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._con = self._connect(self._lock_wait_s)
        try:
            if read_only:
                version = check_not_newer(self._con, self.path)
                if version < LATEST_VERSION:
                    raise MigrationError(
                        f"{self.path}: the warehouse is at schema version {version}, this code needs "
                        f"{LATEST_VERSION}. Run `autotriton db migrate` (it needs write access) and retry."
                    )
            else:
                self.applied_migrations = apply_migrations(self._con, self.path)
                self._mark_crashed_runs()
        except BaseException:
            self._con.close()
            self._con = None
            raise
        if not hold and not in_memory:
            self._con.close()
            self._con = None
        elif not hold:
            self.hold = True  # an in-memory database lives only as long as its connection

    def _connect(self, wait_s: float) -> duckdb.DuckDBPyConnection:
        """A connection to the file, retrying for `wait_s` while another process holds it."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                return duckdb.connect(self.path, read_only=self.read_only)
            except duckdb.Error as exc:
                error = _translate_open_error(self.path, exc)
                if isinstance(error, WarehouseLockedError) and time.monotonic() < deadline:
                    time.sleep(min(0.05, max(deadline - time.monotonic(), 0.01)))
                    continue
                raise error from exc

    @contextmanager
    def _connection(self) -> Iterator[None]:
        """With self._lock held: self._con is open inside the block (opened for it, and closed
        after it, when the Warehouse does not hold the file)."""
        if self._closed:
            raise WarehouseError(f"{self.path}: the warehouse is closed; open a new Warehouse.")
        if self._con is not None:
            yield
            return
        self._con = self._connect(self._lock_wait_s)
        try:
            yield
        finally:
            if self._tx_depth == 0 and self._con is not None:
                self._con.close()
                self._con = None

    # -- lifecycle --------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._con is not None:
                self._con.close()
                self._con = None

    def __enter__(self) -> "Warehouse":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        with self._lock, self._connection():
            return current_version(self._con)

    def _mark_crashed_runs(self) -> None:
        """Runs left 'running' by a process that is gone are marked 'crashed'.

        Only one process can hold the file for writing, so any other process's running run ended
        without finish_run (killed, power loss).
        """
        host = socket.gethostname()
        running = self._con.execute("SELECT run_id, pid, host FROM runs WHERE status = 'running'").fetchall()
        # Writers no longer hold the file for a whole command (hold=False), so a run of this host
        # whose process is alive is still running; other hosts' runs cannot be checked.
        gone = [run_id for run_id, pid, run_host in running
                if run_host != host or pid is None or (pid != os.getpid() and not _pid_alive(int(pid)))]
        for run_id in gone:
            self._con.execute("UPDATE runs SET status = 'crashed', finished_at = ? WHERE run_id = ?",
                              [_now(), run_id]).fetchall()

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction; nested uses join the outer one (see atomic()). Call with self._lock held."""
        con = self._con
        if self._tx_depth:
            self._tx_depth += 1
            try:
                yield con
            except BaseException:
                self._tx_doomed = True  # the outer block must not commit half of this put
                raise
            finally:
                self._tx_depth -= 1
            return
        con.execute("BEGIN TRANSACTION").fetchall()
        self._tx_depth, self._tx_doomed = 1, False
        try:
            yield con
        except BaseException:
            self._tx_depth = 0
            self._rollback()
            raise
        self._tx_depth = 0
        if self._tx_doomed:
            self._rollback()
            raise WarehouseError(
                f"{self.path}: a write inside an atomic() block failed and its error was caught; the whole "
                "block was rolled back. Let the error propagate or retry the block."
            )
        con.execute("COMMIT").fetchall()

    def _rollback(self) -> None:
        self._con.execute("ROLLBACK").fetchall()
        self._known_runs.clear()  # a run started inside the transaction is gone too
        while self._stale_views:
            self._con.unregister(self._stale_views.pop())

    @contextmanager
    def atomic(self) -> Iterator["Warehouse"]:
        """Group several puts into one transaction: all of them are stored, or none.

            with wh.atomic():
                wh.put_modules(run, modules)
                wh.put_problems(run, problems)

        Other threads' calls wait until the block ends. An exception rolls everything back.
        """
        with self._lock, self._connection():
            self._require_writable("atomic()")
            with self._transaction():
                yield self

    def _require_writable(self, what: str) -> None:
        if self.read_only:
            raise WarehouseError(f"{self.path}: opened read-only; {what} needs a writable Warehouse.")

    # -- runs ---------------------------------------------------------------------------------
    @_locked
    def start_run(self, kind: str, config: Any = None) -> Run:
        """Record the start of a run; pass the Run to every put_* so its rows carry its lineage."""
        self._require_writable("start_run")
        payload, chash = _config_payload(config)
        started = _now()
        run = Run(
            run_id=f"{started:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:8]}",
            kind=kind, flow_run_id=current_flow_run_id(), config_hash=chash,
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
            "flow_run_id": current_flow_run_id() or run.flow_run_id,
            "config_hash": run.config_hash,
            "code_version": run.code_version,
            "created_at": _now(),
        }

    # -- writes -------------------------------------------------------------------------------
    def _insert(self, con: duckdb.DuckDBPyConnection, spec: TableSpec, rows: list[dict[str, Any]],
                lineage: dict[str, Any]) -> int:
        """Insert rows into spec.table in the caller's transaction; returns how many keys were new."""
        if not rows:
            return 0
        key = spec.key_column
        unique: dict[str, dict[str, Any]] = {}
        for row in rows:  # within one put the last occurrence of a key wins
            unique[row[key]] = {**row, **lineage}
        incoming = arrow_table(spec, list(unique.values()))
        view = f"_incoming_{spec.table}_{uuid.uuid4().hex[:8]}"
        con.register(view, incoming)
        try:
            new = con.execute(
                f"SELECT count(*) FROM {view} i ANTI JOIN {_q(spec.table)} t ON t.{_q(key)} = i.{_q(key)}"
            ).fetchall()[0][0]
            cols = ", ".join(_q(c) for c, _ in spec.all_columns)
            sql = f"INSERT INTO {_q(spec.table)} ({cols}) SELECT {cols} FROM {view}"
            if spec.policy == "newest_wins":
                updates = ", ".join(f"{_q(c)} = excluded.{_q(c)}" for c, _ in spec.all_columns if c != key)
                sql += (f" ON CONFLICT ({_q(key)}) DO UPDATE SET {updates} "
                        f"WHERE {_q(spec.table)}.payload_hash <> excluded.payload_hash")
            else:
                sql += " ON CONFLICT DO NOTHING"
            con.execute(sql).fetchall()
        except duckdb.Error as exc:
            raise WarehouseError(f"{self.path}: writing {len(unique)} row(s) to {spec.table} failed: {exc}") from exc
        finally:
            try:
                con.unregister(view)
            except duckdb.Error:  # the transaction is aborted; unregister after the rollback
                self._stale_views.append(view)
        return int(new)

    def _put(self, run: Run, table: str, records: Iterable[Any]) -> int:
        self._require_writable(f"put into {table}")
        spec = TABLES[table]
        rows = [spec.to_row(r) for r in records]
        lineage = self._lineage_values(run)
        with self._transaction() as con:
            return self._insert(con, spec, rows, lineage)

    @_locked
    def put_sources(self, run: Run, refs: Iterable[SourceRef]) -> int:
        return self._put(run, "sources", refs)

    @_locked
    def put_modules(self, run: Run, modules: Iterable[HarvestedModule]) -> int:
        """Modules and, in the same transaction, their SourceRefs. Returns the number of new modules."""
        self._require_writable("put_modules")
        modules = list(modules)
        sources = [TABLES["sources"].to_row(m.source) for m in modules]
        rows = [TABLES["modules"].to_row(m) for m in modules]
        lineage = self._lineage_values(run)
        with self._transaction() as con:
            self._insert(con, TABLES["sources"], sources, lineage)
            return self._insert(con, TABLES["modules"], rows, lineage)

    @_locked
    def put_problems(self, run: Run, problems: Iterable[Problem]) -> int:
        return self._put(run, "problems", problems)

    @_locked
    def put_rejections(self, run: Run, rows: Iterable[Any]) -> int:
        """Rejections: mappings or objects with stage, subject (a file path or a key), reason, detail."""
        clean = []
        for i, item in enumerate(rows):
            get = item.get if isinstance(item, Mapping) else (lambda name, default=None, _o=item: getattr(_o, name, default))
            row = {f: get(f, None) for f in ("stage", "subject", "reason", "detail")}
            missing = [f for f in ("stage", "subject", "reason") if not row[f]]
            if missing:
                raise ValueError(f"put_rejections: row {i} lacks {', '.join(missing)} (got {row})")
            row = {k: (str(v) if v is not None else None) for k, v in row.items()}
            clean.append(row)
        spec = TABLES["rejections"]
        for row in clean:
            row["key"] = row_key("rejections", row)
        self._require_writable("put_rejections")
        lineage = self._lineage_values(run)
        with self._transaction() as con:
            return self._insert(con, spec, clean, lineage)

    @_locked
    def put_candidates(self, run: Run, candidates: Iterable[Candidate]) -> int:
        return self._put(run, "candidates", candidates)

    @_locked
    def put_verdicts(self, run: Run, verdicts: Iterable[Verdict]) -> int:
        """A verdict whose key exists with different content (re-judged) replaces it: newest wins."""
        return self._put(run, "verdicts", verdicts)

    @_locked
    def put_exports(self, run: Run, exports: Iterable[Export]) -> int:
        return self._put(run, "exports", exports)

    @_locked
    def put_checkpoints(self, run: Run, checkpoints: Iterable[Checkpoint]) -> int:
        return self._put(run, "checkpoints", checkpoints)

    @_locked
    def put_evaluations(self, run: Run, evaluations: Iterable[Evaluation]) -> int:
        """Evaluations and their per-sample links to verdicts (evaluation_samples), in one transaction."""
        self._require_writable("put_evaluations")
        evaluations = list(evaluations)
        spec = TABLES["evaluations"]
        rows = [spec.to_row(e) for e in evaluations]
        samples = []
        for ev in evaluations:
            for position, vkey in enumerate(ev.verdict_keys):
                sample = {"evaluation_key": ev.key, "verdict_key": vkey, "position": position}
                sample["key"] = row_key("evaluation_samples", sample)
                samples.append(sample)
        lineage = self._lineage_values(run)
        with self._transaction() as con:
            new = self._insert(con, spec, rows, lineage)
            keys = sorted({ev.key for ev in evaluations})
            if keys:  # a re-run evaluation replaces its sample links
                con.execute("DELETE FROM evaluation_samples WHERE evaluation_key IN (SELECT unnest(?::VARCHAR[]))", [keys]).fetchall()
            self._insert(con, TABLES["evaluation_samples"], samples, lineage)
            return new

    # -- reads --------------------------------------------------------------------------------
    def _fetch_dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cur = self._con.execute(sql, list(params))
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]

    def _records(self, table: str, where: list[str], params: list[Any], *, source: str | None = None,
                 limit: int | None = None) -> list[Any]:
        spec = TABLES[table]
        sql = f"SELECT * FROM {source or _q(table)}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        # Deterministic order: by write time, then key (DuckDB's upsert does not keep a batch's order).
        sql += " ORDER BY created_at, key"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [spec.from_row(row) for row in self._fetch_dicts(sql, params)]

    def _records_by_key(self, table: str, keys: Iterable[str]) -> dict[str, Any]:
        """Stored key -> record, without recomputing content keys (an AST round trip per record)."""
        spec = TABLES[table]
        rows = self._fetch_dicts(f"SELECT * FROM {_q(table)} WHERE key IN (SELECT unnest(?::VARCHAR[]))", [sorted(set(keys))])
        return {row["key"]: spec.from_row(row) for row in rows}

    @staticmethod
    def _key_filter(column: str, keys: Iterable[str] | None, where: list[str], params: list[Any]) -> None:
        if keys is not None:
            where.append(f"{_q(column)} IN (SELECT unnest(?::VARCHAR[]))")
            params.append(list(keys))

    @_locked
    def sources(self, keys: Iterable[str] | None = None) -> list[SourceRef]:
        where: list[str] = []
        params: list[Any] = []
        self._key_filter("key", keys, where, params)
        return self._records("sources", where, params)

    @_locked
    def modules(self, keys: Iterable[str] | None = None) -> list[HarvestedModule]:
        where: list[str] = []
        params: list[Any] = []
        self._key_filter("key", keys, where, params)
        rows = self._fetch_dicts(
            "SELECT m.*, s.kind AS s_kind, s.repo AS s_repo, s.\"commit\" AS s_commit, s.path AS s_path, "
            "s.licence AS s_licence, s.stars AS s_stars, s.url AS s_url FROM modules m LEFT JOIN sources s "
            "ON s.key = m.source_key" + (" WHERE m." + where[0] if where else "") + " ORDER BY m.created_at, m.key",
            params,
        )
        out = []
        for row in rows:
            if row["s_kind"] is None:
                raise WarehouseError(f"{self.path}: module {row['key']} names source {row['source_key']}, which is not stored.")
            ref = SourceRef(row["s_kind"], row["s_repo"], row["s_commit"], row["s_path"], row["s_licence"],
                            row["s_stars"], row["s_url"])
            out.append(HarvestedModule(ref, row["class_name"], row["original_source"], row["standalone_source"]))
        return out

    @_locked
    def problems(self, status: str | None = "runnable", suite: str | None = None,
                 keys: Iterable[str] | None = None, limit: int | None = None) -> list[Problem]:
        """Problems, by default the runnable ones; status=None gives all, suite filters by suite name."""
        where: list[str] = []
        params: list[Any] = []
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if suite is not None:
            where.append("suite = ?")
            params.append(suite)
        self._key_filter("key", keys, where, params)
        return self._records("problems", where, params, limit=limit)

    @_locked
    def rejections(self, stage: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM rejections" + (" WHERE stage = ?" if stage else "") + " ORDER BY created_at, key"
        return self._fetch_dicts(sql, [stage] if stage else [])

    @_locked
    def candidates(self, problem_keys: Iterable[str] | None = None, keys: Iterable[str] | None = None) -> list[Candidate]:
        where: list[str] = []
        params: list[Any] = []
        self._key_filter("problem_key", problem_keys, where, params)
        self._key_filter("key", keys, where, params)
        return self._records("candidates", where, params)

    @_locked
    def verdicts(self, candidate_keys: Iterable[str] | None = None, keys: Iterable[str] | None = None) -> list[Verdict]:
        """Every stored verdict (one per candidate x judge config x device, the newest of each)."""
        where: list[str] = []
        params: list[Any] = []
        self._key_filter("candidate_key", candidate_keys, where, params)
        self._key_filter("key", keys, where, params)
        return self._records("verdicts", where, params)

    @_locked
    def latest_verdicts(self, candidate_keys: Iterable[str] | None = None) -> list[Verdict]:
        """One verdict per candidate: the newest, whatever judge config or device gave it."""
        where: list[str] = []
        params: list[Any] = []
        self._key_filter("candidate_key", candidate_keys, where, params)
        return self._records("verdicts", where, params, source="latest_verdicts")

    @_locked
    def validated_pairs(self, require: str = "own_and_odd_sizes") -> list[tuple[Problem, Candidate, Verdict]]:
        """(problem, candidate, verdict) where the candidate's latest verdict has reward 1
        (correct at the sizes `require` names, and rule_ok: validation/rewards.py `correct_at`),
        ordered by problem then candidate key."""
        correct = {"own_and_odd_sizes": "v.correct", "own_sizes": "coalesce(v.correct_own_sizes, v.correct)"}.get(require)
        if correct is None:
            raise ValueError(f"unknown size requirement {require!r}: use 'own_sizes' or 'own_and_odd_sizes'")
        cur = self._con.execute(
            "SELECT p.key AS pk, c.key AS ck, v.key AS vk FROM latest_verdicts v "
            "JOIN candidates c ON c.key = v.candidate_key JOIN problems p ON p.key = c.problem_key "
            f"WHERE {correct} AND v.rule_ok ORDER BY p.key, c.key"
        )
        triples = cur.fetchall()
        if not triples:
            return []
        problems = self._records_by_key("problems", (t[0] for t in triples))
        cands = self._records_by_key("candidates", (t[1] for t in triples))
        verdicts = self._records_by_key("verdicts", (t[2] for t in triples))
        return [(problems[p], cands[c], verdicts[v]) for p, c, v in triples]

    @_locked
    def exports(self, name: str | None = None) -> list[Export]:
        where, params = (["name = ?"], [name]) if name else ([], [])
        return self._records("exports", where, params)

    @_locked
    def export(self, key: str) -> Export:
        found = self._records("exports", ["key = ?"], [key])
        if not found:
            raise UnknownKeyError(f"{self.path}: no export with key {key}; list them with `autotriton db sql \"SELECT * FROM exports\"`.")
        return found[0]

    @_locked
    def checkpoints(self, export_key: str | None = None) -> list[Checkpoint]:
        where, params = (["export_key = ?"], [export_key]) if export_key else ([], [])
        return self._records("checkpoints", where, params)

    @_locked
    def evaluations(self, suite: str | None = None) -> list[Evaluation]:
        where, params = (["suite = ?"], [suite]) if suite else ([], [])
        return self._records("evaluations", where, params)

    @_locked
    def sql(self, query: str, params: Sequence[Any] | None = None) -> QueryResult:
        """Run any SQL; returns column names and rows. Errors become WarehouseQueryError."""
        try:
            cur = self._con.execute(query, list(params or []))
            rows = cur.fetchall()  # always drain: DuckDB refuses other work while a result is open
            if cur.description is None:
                return QueryResult([], [])
            return QueryResult([d[0] for d in cur.description], rows)
        except duckdb.Error as exc:
            raise WarehouseQueryError(f"SQL failed: {exc}".strip()) from exc

    @_locked
    def stats(self) -> dict[str, Any]:
        """Row counts per table, schema version, runs by status, the last runs."""
        counts = {t: int(self._con.execute(f"SELECT count(*) FROM {_q(t)}").fetchall()[0][0]) for t in ("runs", *TABLES)}
        by_status = dict(self._con.execute("SELECT status, count(*) FROM runs GROUP BY status ORDER BY status").fetchall())
        problem_status = dict(self._con.execute("SELECT status, count(*) FROM problems GROUP BY status ORDER BY status").fetchall())
        verdict_status = dict(self._con.execute("SELECT status, count(*) FROM latest_verdicts GROUP BY status ORDER BY status").fetchall())
        validated = int(self._con.execute("SELECT count(*) FROM latest_verdicts WHERE correct AND rule_ok").fetchall()[0][0])
        last = self._fetch_dicts(
            "SELECT run_id, kind, status, started_at, finished_at, flow_run_id, config_hash, code_version FROM runs "
            "ORDER BY started_at DESC, run_id DESC LIMIT 5"
        )
        size = Path(self.path).stat().st_size if self.path != ":memory:" and Path(self.path).exists() else 0
        return {
            "path": self.path, "schema_version": current_version(self._con), "size_bytes": size,
            "tables": counts, "runs_by_status": by_status, "problems_by_status": problem_status,
            "latest_verdicts_by_status": verdict_status, "validated_pairs": validated, "last_runs": last,
        }

    @_locked
    def check(self, examples: int = 5) -> dict[str, Any]:
        """Consistency report: parent keys that point nowhere, export files that are gone, runs
        still marked running. `ok` is True when nothing was found."""
        orphans: dict[str, dict[str, Any]] = {}
        for table, spec in TABLES.items():
            for col, parent in spec.parents.items():
                rows = self._con.execute(
                    f"SELECT DISTINCT c.{_q(col)} FROM {_q(table)} c ANTI JOIN {_q(parent)} p ON p.key = c.{_q(col)} "
                    f"WHERE c.{_q(col)} IS NOT NULL ORDER BY 1"
                ).fetchall()
                if rows:
                    orphans[f"{table}.{col}"] = {"missing_in": parent, "count": len(rows), "examples": [r[0] for r in rows[:examples]]}
        missing_files = [
            {"key": key, "name": name, "path": path}
            for key, name, path in self._con.execute("SELECT key, name, path FROM exports ORDER BY created_at").fetchall()
            if not Path(path).exists()
        ]
        running = [r[0] for r in self._con.execute("SELECT run_id FROM runs WHERE status = 'running' ORDER BY started_at").fetchall()]
        return {"ok": not orphans and not missing_files, "orphans": orphans,
                "missing_export_files": missing_files, "running_runs": running}

    # -- exports ------------------------------------------------------------------------------
    @_locked
    def export_parquet(self, name: str, rows: Sequence[Mapping[str, Any]], filter: Mapping[str, Any] | None,
                       run: Run, out_dir: str | os.PathLike[str] | None = None, *, format: str = "hf",
                       path: str | os.PathLike[str] | None = None, card: str | None = None) -> Export:
        """Write rows as export `name` atomically and record it (warehouse/layout.py).

        format "hf": a Hugging Face dataset folder, one Parquet file per split (`datasets.load_dataset
        (folder)` gives train/validation); "parquet": one file with the `split` column. The place is
        `path` when given, else `<out_dir or export_dir>/<name>` (hf) or `/<name>.parquet`: a stable
        name, replaced by the next export of that name. The content hash covers the export name and
        the rows, independent of row order, so the same data exported twice is one export (one row
        in `exports`); it is stored in the files' metadata, not in their names.
        """
        from autotriton.warehouse.layout import FORMATS, write_export

        self._require_writable("export_parquet")
        if not _EXPORT_NAME.match(name or ""):
            raise ValueError(f"export_parquet: name {name!r} must be letters, digits, '_', '-' or '.'")
        if format not in FORMATS:
            raise ValueError(f"export format {format!r}: choose one of {', '.join(FORMATS)}")
        # Columns are the union over all rows (first-seen order); a row without one gets null there.
        # (pyarrow's from_pylist would silently drop columns the first row lacks.)
        columns = list(dict.fromkeys(col for r in rows for col in r))
        rows = [{col: r.get(col) for col in columns} for r in rows]
        row_hashes = sorted(content_key("row", r) for r in rows)
        chash = content_key("export", name, row_hashes)
        try:
            table = pa.Table.from_pydict({col: [r[col] for r in rows] for col in columns})
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise WarehouseError(f"export {name}: rows do not form one table ({exc}); every column needs one type in all rows.") from exc
        if path is not None:
            target = Path(path)
        else:
            directory = Path(out_dir) if out_dir is not None else self.export_dir
            target = directory / (name if format == "hf" else f"{name}.parquet")
        write_export(table, target, format, {"name": name, "content_hash": chash, "rows": len(rows),
                                             "filter": dict(filter or {})}, card=card)
        splits = dict(sorted(Counter(str(r["split"]) for r in rows).items())) if "split" in columns else {}
        export = Export(name=name, filter=dict(filter or {}), row_count=len(rows), content_hash=chash,
                        path=str(target.resolve()), splits=splits)
        self._put(run, "exports", [export])
        return export

    def export_files(self, export: Export | str) -> Export:
        """The export record, after checking that its path still holds this export (the files'
        metadata names its content hash: a later export of the same name replaces them)."""
        from autotriton.warehouse.layout import LayoutError, export_metadata

        if isinstance(export, str):
            export = self.export(export)
        try:
            found = export_metadata(export.path).get("content_hash")
        except LayoutError as exc:
            raise WarehouseError(
                f"{exc}: the files of export {export.name} ({export.key}) are gone; "
                f"re-create them with `autotriton db export {export.name}`."
            ) from exc
        if found != export.content_hash:
            raise WarehouseError(
                f"{export.path} now holds export {found}, not {export.key}: a later `{export.name}` export replaced it. "
                f"Use the newer export, or write this one again with `autotriton db export {export.name}`."
            )
        return export

    def to_hf_dataset(self, export: Export | str, split: str | None = None):
        """The export as a `datasets.Dataset` (rows of one split when `split` is given)."""
        import datasets
        from datasets.table import InMemoryTable

        from autotriton.warehouse.layout import read_export

        export = self.export_files(export)
        if split is not None and not export.splits:
            raise WarehouseError(f"export {export.name} ({export.key}) has no split column; call without split=.")
        return datasets.Dataset(InMemoryTable(read_export(export.path, split)))

    def to_hf_dataset_dict(self, export: Export | str):
        """The export as a `datasets.DatasetDict` keyed by its split column (train, validation, ...)."""
        import datasets

        export = self.export_files(export)
        if not export.splits:
            return datasets.DatasetDict({"train": self.to_hf_dataset(export)})
        return datasets.DatasetDict({s: self.to_hf_dataset(export, split=s) for s in export.splits})

    # -- lineage ------------------------------------------------------------------------------
    @_locked
    def lineage(self, key: str, max_children: int = 20) -> dict[str, Any]:
        """Find `key` (a row key, a unique prefix of one, a run id or a Prefect flow-run id) and
        walk its parents: verdict -> candidate -> problem -> module -> source; checkpoint -> export;
        evaluation -> its verdicts. Each node carries its row, its run and its parents."""
        key = (key or "").strip()
        if not key:
            raise UnknownKeyError("lineage: give a row key, a run id or a flow-run id")
        run_rows = self._fetch_dicts("SELECT * FROM runs WHERE run_id = ? OR flow_run_id = ? ORDER BY started_at", [key, key])
        if run_rows:
            return {"kind": "run", "key": key, "runs": [self._run_node(r) for r in run_rows]}
        table, row = self._find(key)
        node = self._node(table, row, seen=set(), max_children=max_children)
        node["children"] = self._children(table, row["key"])
        return node

    def _children(self, table: str, key: str) -> dict[str, int]:
        """How many rows point at this one: 'candidates.problem_key': 3, 'rejections.subject': 1, ..."""
        links = [(child, col) for child, spec in TABLES.items() for col, parent in spec.parents.items() if parent == table]
        links.append(("rejections", "subject"))  # rejected problems are recorded with subject = problem key
        out: dict[str, int] = {}
        for child, col in links:
            n = int(self._con.execute(f"SELECT count(*) FROM {_q(child)} WHERE {_q(col)} = ?", [key]).fetchall()[0][0])
            if n:
                out[f"{child}.{col}"] = n
        return out

    def _find(self, key: str) -> tuple[str, dict[str, Any]]:
        hits: list[tuple[str, dict[str, Any]]] = []
        for table in TABLES:
            for row in self._fetch_dicts(f"SELECT * FROM {_q(table)} WHERE key = ?", [key]):
                hits.append((table, row))
        if not hits and len(key) >= 6:
            for table in TABLES:
                for row in self._fetch_dicts(f"SELECT * FROM {_q(table)} WHERE starts_with(key, ?) LIMIT 5", [key]):
                    hits.append((table, row))
        if not hits:
            raise UnknownKeyError(
                f"{self.path}: no row, run or flow run has key {key!r}. Keys are the 16-hex content keys shown "
                "by `autotriton db sql` (or a unique prefix of at least 6 characters)."
            )
        if len(hits) > 1:
            names = ", ".join(f"{t}:{r['key']}" for t, r in hits[:6])
            raise UnknownKeyError(f"{self.path}: key {key!r} is ambiguous ({names}); give more characters.")
        return hits[0]

    def _run_node(self, run_row: dict[str, Any]) -> dict[str, Any]:
        rid = run_row["run_id"]
        counts = {t: int(self._con.execute(f"SELECT count(*) FROM {_q(t)} WHERE run_id = ?", [rid]).fetchall()[0][0]) for t in TABLES}
        node = {c: run_row[c] for c in ("run_id", "kind", "status", "started_at", "finished_at", "flow_run_id",
                                         "config_hash", "code_version", "pid", "host")}
        node["summary"] = json.loads(run_row["summary"]) if run_row["summary"] else None
        node["rows_written"] = {t: n for t, n in counts.items() if n}
        return node

    def _node(self, table: str, row: dict[str, Any], seen: set[tuple[str, str]], max_children: int) -> dict[str, Any]:
        spec = TABLES[table]
        seen.add((table, row["key"]))
        run_row = self._fetch_dicts("SELECT * FROM runs WHERE run_id = ?", [row["run_id"]])
        node: dict[str, Any] = {
            "table": table,
            "key": row["key"],
            "row": {k: _brief(json.loads(v) if k in spec.json_columns and isinstance(v, str) else v)
                    for k, v in row.items() if k not in LINEAGE_COLUMNS and k not in ("key", "payload_hash")},
            "lineage": {c: row[c] for c in LINEAGE_COLUMNS},
            "run": {c: run_row[0][c] for c in ("run_id", "kind", "status", "flow_run_id")} if run_row else None,
            "parents": [],
        }
        parents: list[tuple[str, str, str]] = [(col, ptable, row[col]) for col, ptable in spec.parents.items() if row.get(col)]
        if table == "evaluations":
            vkeys = json.loads(row["verdict_keys"]) if row["verdict_keys"] else []
            node["verdict_count"] = len(vkeys)
            parents += [("verdict_keys", "verdicts", k) for k in vkeys[:max_children]]
        for col, ptable, pkey in parents:
            if (ptable, pkey) in seen:
                continue
            found = self._fetch_dicts(f"SELECT * FROM {_q(ptable)} WHERE key = ?", [pkey])
            if found:
                node["parents"].append({"via": col, **self._node(ptable, found[0], seen, max_children)})
            else:
                node["parents"].append({"via": col, "table": ptable, "key": pkey, "missing": True})
        return node


def _brief(value: Any, limit: int = 240) -> Any:
    """Long text (source code, raw outputs) shortened for lineage display; full rows via `db sql`."""
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + f"... ({len(value)} chars)"
    return value
