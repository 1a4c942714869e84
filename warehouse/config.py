"""Configuration of the warehouse."""

from __future__ import annotations

from pydantic import BaseModel, Field


class WarehouseConfig(BaseModel):
    path: str = Field("autotriton.duckdb", description="DuckDB file (global option --db or AUTOTRITON_DB)")
    export_dir: str = Field("exports", description="Parquet exports are written here")
    lock_wait_s: float = Field(0.0, ge=0, description="seconds to wait for another process to release the warehouse file before failing (0: fail at once)")
