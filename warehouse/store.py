"""The warehouse: one DuckDB file holding every record the pipeline produces, with lineage.

    with Warehouse("autotriton.duckdb") as wh:
        run = wh.start_run("harvest", config)
        wh.put_problems(run, problems)          # -> number of NEW rows
        wh.finish_run(run, "succeeded", {"problems": n})

Writes are idempotent on the records' content keys, go through Arrow (one INSERT ... SELECT per
put, never row by row) and run in one transaction per put, so an exception or a killed process
leaves no partial rows. One process writes a file at a time (DuckDB's file lock); a second one
gets WarehouseLockedError naming the holder. See warehouse/README.md.

The Warehouse is composed of one part per responsibility, each in its own file:
    connection.py   opening the file, its lock, migrations, transactions, atomic()
    runs.py         start_run / finish_run / runs, the lineage every row carries
    writes.py       put_*
    reads.py        the queries (records out), sql, stats, check
    exporting.py    export_parquet, export_files, to_hf_dataset(_dict)
    lineage.py      lineage(key)
"""

from __future__ import annotations

from autotriton.warehouse.connection import (
    TRANSIENT_WAIT_S,
    Connection,
    UnknownKeyError,
    WarehouseError,
    WarehouseLockedError,
    WarehouseQueryError,
)
from autotriton.warehouse.exporting import ExportingMixin
from autotriton.warehouse.lineage import LineageMixin
from autotriton.warehouse.reads import QueryResult, ReadsMixin
from autotriton.warehouse.runs import RUN_STATUSES, Run, RunsMixin
from autotriton.warehouse.writes import WritesMixin

__all__ = [
    "Warehouse", "Run", "QueryResult", "RUN_STATUSES", "TRANSIENT_WAIT_S", "WarehouseError", "WarehouseLockedError",
    "WarehouseQueryError", "UnknownKeyError",
]


class Warehouse(RunsMixin, WritesMixin, ReadsMixin, ExportingMixin, LineageMixin, Connection):
    """The DuckDB warehouse. Thread-safe within one process (calls are serialised)."""
