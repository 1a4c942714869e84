"""Configuration of the warehouse."""

from __future__ import annotations

from pydantic import BaseModel, Field


class WarehouseConfig(BaseModel):
    path: str = Field("autotriton.duckdb", description="DuckDB file (global option --db or AUTOTRITON_DB)")
    export_dir: str = Field("exports", description="Parquet exports are written here")
