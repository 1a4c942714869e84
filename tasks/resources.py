"""The resources the tasks of one flow run (or one CLI verb) share: the warehouse handle, the
warm judge pools and the teachers. The flow (or verb) creates a `Resources`, hands it to every
task that needs one, and closes it when it ends.

DuckDB allows one writing process per file, so a flow process makes one Warehouse handle and
every task running in that process (thread task runner, or tasks called directly from the
flow) writes through it; the handle opens the file only for each write (hold=False), so a
long flow never keeps `db stats` or another command out while it computes. Compute-only tasks that may run elsewhere (Dask
workers) never touch it: they return records, and a persisting task in the flow process
writes them.

A judge pool is warm (its workers have torch and triton imported): it is started on first use
and reused by every task of the flow run that judges with the same validation config, and by
the subflows of `retrain` (`flow_resources` reuses the enclosing flow's Resources).
"""

from __future__ import annotations

import atexit
import threading
import uuid
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Self

if TYPE_CHECKING:
    from autotriton.distillation import DistillConfig, Teacher
    from autotriton.validation import JudgePool, ValidationConfig
    from autotriton.warehouse import Warehouse


class Resources:
    """The warehouse of `db_path`, and the judge pools and teachers built for it, each made on
    first use and closed by close() (or the end of a `with` block).

    Pickled (a task argument sent to a Dask worker), it carries only its identity: the copies
    a worker process unpickles share one set of judges and teachers there, built on first use
    and closed when that process exits.
    """

    def __init__(self, db_path: str | Path | None = None, *, read_only: bool = False,
                 export_dir: str | Path | None = None, lock_wait_s: float = 0.0, hold: bool = False,
                 token: str | None = None):
        self.db_path = _resolved(db_path)
        self.read_only, self.export_dir, self.lock_wait_s, self.hold = read_only, export_dir, lock_wait_s, hold
        self.token = token or uuid.uuid4().hex
        self._lock = threading.RLock()
        self._warehouse: Warehouse | None = None
        self._judges: dict[str, JudgePool] = {}
        self._teachers: dict[str, Teacher] = {}

    @property
    def warehouse(self) -> Warehouse:
        """The open Warehouse (opened on first use; hold=False unless asked: open only per write)."""
        from autotriton.warehouse import Warehouse

        if self.db_path is None:
            raise ValueError("these Resources have no warehouse: create them with the warehouse path")
        with self._lock:
            if self._warehouse is None:
                self._warehouse = Warehouse(self.db_path, read_only=self.read_only, export_dir=self.export_dir,
                                            lock_wait_s=self.lock_wait_s, hold=self.hold)
            return self._warehouse

    def judge(self, validation_config: ValidationConfig) -> JudgePool:
        """A warm JudgePool for this validation config, shared by every task given these Resources."""
        from autotriton.hashing import content_key
        from autotriton.validation import JudgePool

        key = content_key(validation_config.model_dump(mode="json"))
        with self._lock:
            pool = self._judges.get(key)
            if pool is None:
                pool = JudgePool(validation_config)
                pool.__enter__()
                self._judges[key] = pool
            return pool

    def teacher(self, distill_config: DistillConfig) -> Teacher:
        """The teacher this distill config names, built once (replay data loads once)."""
        from autotriton.distillation import make_teacher
        from autotriton.hashing import content_key

        key = content_key(distill_config.model_dump(mode="json"))
        with self._lock:
            found = self._teachers.get(key)
            if found is None:
                found = self._teachers[key] = make_teacher(distill_config)
            return found

    def close(self) -> None:
        """Close every judge pool and the warehouse these Resources opened."""
        with self._lock:
            pools, self._judges = list(self._judges.values()), {}
            wh, self._warehouse = self._warehouse, None
            self._teachers = {}
        for pool in pools:
            try:
                pool.__exit__(None, None, None)
            except Exception:  # noqa: BLE001 - best effort at shutdown
                pass
        if wh is not None:
            wh.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self):
        return (_unpickled, (self.token, self.db_path))

    def __copy__(self) -> Self:  # a handle: a copy in this process is the same Resources
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        return self


def _resolved(db_path: str | Path | None) -> str | None:
    """The resolved path: a flow's warehouse and its asset keys name the same file, whatever the cwd."""
    return str(Path(db_path).expanduser().resolve()) if db_path not in (None, ":memory:") else db_path


# The copies of one Resources that this process unpickled (a Dask worker's), by token: they share
# one set of warm judges and teachers. Only the unpickling path fills it; a flow's own Resources
# are never kept here.
_copies: dict[str, Resources] = {}
_copies_lock = threading.Lock()


def _unpickled(token: str, db_path: str | None) -> Resources:
    with _copies_lock:
        found = _copies.get(token)
        if found is None:
            found = _copies[token] = Resources(db_path, token=token)
            atexit.register(found.close)
        return found


_current: ContextVar[Resources | None] = ContextVar("autotriton_flow_resources", default=None)


@contextmanager
def flow_resources(db_path: str | Path) -> Iterator[Resources]:
    """The Resources of a flow run: new ones (closed when the flow ends), or the enclosing flow's
    when this one runs as its subflow on the same warehouse (retrain's refresh, train, evaluate
    share one warm judge pool)."""
    outer = _current.get()
    if outer is not None and outer.db_path == _resolved(db_path):
        yield outer
        return
    with Resources(db_path) as resources:
        token = _current.set(resources)
        try:
            yield resources
        finally:
            _current.reset(token)
