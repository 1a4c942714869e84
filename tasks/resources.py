"""Process-wide resources shared by the tasks of a flow run: the warehouse handle and the judge pool.

DuckDB allows one writing process per file, so a flow process makes one Warehouse handle and
every task running in that process (thread task runner, or tasks called directly from the
flow) writes through it; the handle opens the file only for each write (hold=False), so a
long flow never keeps `db stats` or another command out while it computes. Compute-only tasks that may run elsewhere (Dask
workers) never touch it: they return records, and a persisting task in the flow process
writes them.
"""

from __future__ import annotations

import atexit
import threading
from pathlib import Path
from typing import Any

_lock = threading.RLock()
_warehouses: dict[str, Any] = {}
_judges: dict[str, Any] = {}


def warehouse(path: str | Path):
    """The open Warehouse for `path` in this process (opened on first use, closed at exit)."""
    from autotriton.warehouse import Warehouse

    key = str(Path(path).resolve())
    with _lock:
        wh = _warehouses.get(key)
        if wh is None:
            wh = Warehouse(key, hold=False)  # the file is open only during each write (other processes read meanwhile)
            _warehouses[key] = wh
        return wh


def close_warehouse(path: str | Path) -> None:
    key = str(Path(path).resolve())
    with _lock:
        wh = _warehouses.pop(key, None)
    if wh is not None:
        wh.close()


def judge(validation_config) -> Any:
    """A warm JudgePool for this validation config, shared by every task in the process."""
    from autotriton.hashing import content_key
    from autotriton.validation import JudgePool

    key = content_key(validation_config.model_dump(mode="json"))
    with _lock:
        pool = _judges.get(key)
        if pool is None:
            pool = JudgePool(validation_config)
            pool.__enter__()
            _judges[key] = pool
        return pool


_teachers: dict[str, Any] = {}


def teacher(distill_config) -> Any:
    """The teacher this distill config names, built once per process (replay data loads once)."""
    from autotriton.distillation import make_teacher
    from autotriton.hashing import content_key

    key = content_key(distill_config.model_dump(mode="json"))
    with _lock:
        found = _teachers.get(key)
        if found is None:
            found = _teachers[key] = make_teacher(distill_config)
        return found


def close_all() -> None:
    """Close every judge pool and warehouse this process opened."""
    with _lock:
        pools, _judges_copy = list(_judges.values()), _judges.clear()
        whs, _wh_copy = list(_warehouses.values()), _warehouses.clear()
    for pool in pools:
        try:
            pool.__exit__(None, None, None)
        except Exception:  # noqa: BLE001 - best effort at shutdown
            pass
    for wh in whs:
        try:
            wh.close()
        except Exception:  # noqa: BLE001
            pass


atexit.register(close_all)
