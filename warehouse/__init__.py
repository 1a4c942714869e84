"""The DuckDB warehouse: every record the pipeline produces, with lineage, migrations and exports.

Public API (see warehouse/README.md):
    Warehouse(path, *, read_only=False, export_dir=None)   context manager, close()
    start_run / finish_run, put_* (idempotent, Arrow, one transaction each), reads returning
    records, validated_pairs, export_parquet / to_hf_dataset, lineage, sql, stats
No Prefect here: the caller passes the flow-run id to start_run (tasks/runs.py reads Prefect's).
"""

from autotriton.warehouse.migrations import LATEST_VERSION, MIGRATIONS, MigrationError
from autotriton.warehouse.store import (
    QueryResult,
    Run,
    UnknownKeyError,
    Warehouse,
    WarehouseError,
    WarehouseLockedError,
    WarehouseQueryError,
)

__all__ = [
    "Warehouse", "Run", "QueryResult", "WarehouseError", "WarehouseLockedError", "WarehouseQueryError",
    "UnknownKeyError", "MigrationError", "MIGRATIONS", "LATEST_VERSION"
]
