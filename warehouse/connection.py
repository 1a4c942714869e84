"""The warehouse's connection: opening the DuckDB file (with its lock and migrations), the
per-call connection of a Warehouse(hold=False), transactions and atomic() blocks, and the errors
a user sees when the file is locked, missing or not a warehouse.

DuckDB lets one process write a file at a time; a second one gets WarehouseLockedError naming the
holder. The other parts of the Warehouse (runs.py, writes.py, reads.py, exporting.py,
lineage.py) run their SQL inside `_locked` methods, on the connection this class keeps.
"""

from __future__ import annotations

import functools
import os
import re
import socket
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Self

import duckdb

from autotriton.warehouse.migrations import (
    LATEST_VERSION,
    MigrationError,
    apply_migrations,
    check_not_newer,
    current_version,
)

# How long a Warehouse(hold=False) retries to open the file while another process writes it:
# writers hold it only for one write, so this is a wait for that write, not for a command.
TRANSIENT_WAIT_S = 30.0

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


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


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
    def wrapper(self: "Connection", *args: Any, **kwargs: Any):
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


class Connection:
    """The open DuckDB file behind a Warehouse. Thread-safe within one process (calls are serialised)."""

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

    def __enter__(self) -> Self:
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
    def atomic(self) -> Iterator[Self]:
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
