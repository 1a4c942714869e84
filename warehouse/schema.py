"""How each record maps onto a warehouse table: columns, JSON fields, parent keys, write policy.

The tables themselves are created by the versioned SQL in warehouse/migrations.py; this module
describes them to the Python side (record <-> Arrow row <-> record) and is checked against both
autotriton/records.py and the migrated database by tests/test_warehouse_schema.py, so a record
field without a column fails loudly instead of being dropped silently.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from autotriton.hashing import content_key
from autotriton.records import (
    Candidate,
    Checkpoint,
    Evaluation,
    Export,
    HarvestedModule,
    Problem,
    SourceRef,
    Verdict,
    Violation,
)

# Every row of every table carries these, never null (runs carry them about themselves).
LINEAGE_COLUMNS: tuple[str, ...] = ("run_id", "flow_run_id", "config_hash", "code_version", "created_at")

ARROW_TYPES: dict[str, pa.DataType] = {
    "VARCHAR": pa.string(),
    "JSON": pa.string(),
    "BIGINT": pa.int64(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "TIMESTAMP": pa.timestamp("us"),
}


def dumps(value: Any) -> str:
    """Canonical JSON for nested fields (sorted keys, so equal content gives equal text)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str, ensure_ascii=False)


@dataclass(frozen=True)
class TableSpec:
    """One record table.

    columns: (column, SQL type) of the record's own data, in table order, excluding `key`,
        the lineage columns and `payload_hash`.
    field_columns: record field -> column, where they differ (HarvestedModule.source -> source_key).
    parents: column -> table whose key it holds (the lineage walk follows these).
    policy: "keep_first" (a key's first write stands: ON CONFLICT DO NOTHING) or "newest_wins"
        (a later write of the same key with different content replaces the row, lineage and all:
        a re-judged verdict, a re-trained checkpoint, a re-run evaluation).
    """

    table: str
    record: type | None
    columns: tuple[tuple[str, str], ...]
    field_columns: dict[str, str] = field(default_factory=dict)
    parents: dict[str, str] = field(default_factory=dict)
    policy: str = "keep_first"
    key_column: str = "key"

    @property
    def json_columns(self) -> frozenset[str]:
        return frozenset(c for c, t in self.columns if t == "JSON")

    @property
    def all_columns(self) -> list[tuple[str, str]]:
        cols = [(self.key_column, "VARCHAR"), *self.columns]
        if self.policy == "newest_wins":
            cols.append(("payload_hash", "VARCHAR"))
        cols += [(c, "TIMESTAMP" if c == "created_at" else "VARCHAR") for c in LINEAGE_COLUMNS]
        return cols

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([(c, ARROW_TYPES[t]) for c, t in self.all_columns])

    # -- record -> row ------------------------------------------------------------------------
    def to_row(self, record: Any) -> dict[str, Any]:
        """The record's own columns (no lineage), nested values as canonical JSON."""
        if self.record is not None and not isinstance(record, self.record):
            raise TypeError(f"table {self.table} stores {self.record.__name__} records, got {type(record).__name__}")
        data = record.to_dict() if dataclasses.is_dataclass(record) else dict(record)
        row: dict[str, Any] = {}
        for fname, value in data.items():
            col = self.field_columns.get(fname, fname)
            if col == "source_key" and isinstance(value, dict):  # HarvestedModule.source
                value = record.source.key
            row[col] = value
        known = {c for c, _ in self.columns}
        unstored = [c for c in row if c not in known]
        if unstored:  # a record field added without a migration must not be dropped silently
            raise ValueError(
                f"{type(record).__name__} field(s) {', '.join(unstored)} have no column in table {self.table}: "
                "add a migration (warehouse/migrations.py) and the column (warehouse/schema.py)"
            )
        for col, sql_type in self.columns:
            if col not in row:
                raise ValueError(f"{type(record).__name__} has no value for column {self.table}.{col}")
            if sql_type == "JSON":
                row[col] = dumps(row[col])
        row = {c: row[c] for c, _ in self.columns}
        # A record's key is computed once here (modules, problems, candidates: an AST round trip each).
        row[self.key_column] = record.key if self.record is not None else row_key(self.table, row)
        if self.policy == "newest_wins":
            row["payload_hash"] = content_key("payload", {c: row[c] for c, _ in self.columns})
        return row

    # -- row -> record ------------------------------------------------------------------------
    def from_row(self, row: dict[str, Any]) -> Any:
        if self.record is None:
            return row
        values: dict[str, Any] = {}
        inverse = {v: k for k, v in self.field_columns.items()}
        for col, sql_type in self.columns:
            value = row[col]
            if sql_type == "JSON" and value is not None:
                value = json.loads(value)
            values[inverse.get(col, col)] = value
        if self.record is Verdict:
            values["violations"] = [Violation(**v) for v in values["violations"] or []]
        return self.record(**values)


def row_key(table: str, row: dict[str, Any]) -> str:
    """Content key of a row that has no record class (rejections)."""
    return content_key(table, row)


TABLES: dict[str, TableSpec] = {
    "sources": TableSpec(
        "sources", SourceRef,
        (("kind", "VARCHAR"), ("repo", "VARCHAR"), ("commit", "VARCHAR"), ("path", "VARCHAR"),
         ("licence", "VARCHAR"), ("stars", "BIGINT"), ("url", "VARCHAR")),
    ),
    "modules": TableSpec(
        "modules", HarvestedModule,
        (("source_key", "VARCHAR"), ("class_name", "VARCHAR"), ("original_source", "VARCHAR"),
         ("standalone_source", "VARCHAR")),
        field_columns={"source": "source_key"},
        parents={"source_key": "sources"},
    ),
    "problems": TableSpec(
        "problems", Problem,
        (("reference_source", "VARCHAR"), ("name", "VARCHAR"), ("module_key", "VARCHAR"),
         ("source_key", "VARCHAR"), ("init_spec", "JSON"), ("input_spec", "JSON"),
         ("shape_profile", "VARCHAR"), ("op_tags", "JSON"), ("status", "VARCHAR"),
         ("reject_reason", "VARCHAR"), ("licence", "VARCHAR"), ("suite", "VARCHAR"), ("suite_id", "VARCHAR"),
         ("requirements", "JSON"), ("environment_key", "VARCHAR"), ("instruction", "VARCHAR")),
        parents={"module_key": "modules", "source_key": "sources"},
        policy="newest_wins",
    ),
    "rejections": TableSpec(
        "rejections", None,
        (("stage", "VARCHAR"), ("subject", "VARCHAR"), ("reason", "VARCHAR"), ("detail", "VARCHAR")),
    ),
    "candidates": TableSpec(
        "candidates", Candidate,
        (("problem_key", "VARCHAR"), ("code", "VARCHAR"), ("reasoning", "VARCHAR"), ("instruction", "VARCHAR"),
         ("generator", "VARCHAR"), ("generator_version", "VARCHAR"), ("prompt_version", "VARCHAR"),
         ("sampling", "JSON"), ("repair_round", "BIGINT"), ("parent_key", "VARCHAR"), ("usage", "JSON"),
         ("raw_output", "VARCHAR"), ("parse_error", "VARCHAR")),
        parents={"problem_key": "problems", "parent_key": "candidates"},
    ),
    "verdicts": TableSpec(
        "verdicts", Verdict,
        (("candidate_key", "VARCHAR"), ("problem_key", "VARCHAR"), ("status", "VARCHAR"), ("correct", "BOOLEAN"),
         ("rule_ok", "BOOLEAN"), ("compiled", "BOOLEAN"), ("violations", "JSON"), ("compile_report", "JSON"),
         ("trials", "JSON"), ("triton_kernels_launched", "JSON"), ("aten_ops", "JSON"), ("error", "VARCHAR"),
         ("max_abs_err", "DOUBLE"), ("speedup", "DOUBLE"), ("speedup_vs_compile", "DOUBLE"), ("timing", "JSON"),
         ("device", "VARCHAR"), ("versions", "JSON"), ("judge_config_hash", "VARCHAR"), ("elapsed_s", "DOUBLE"),
         ("correct_own_sizes", "BOOLEAN"), ("odd_sizes_ok", "BOOLEAN")),
        parents={"candidate_key": "candidates", "problem_key": "problems"},
        policy="newest_wins",
    ),
    "exports": TableSpec(
        "exports", Export,
        (("name", "VARCHAR"), ("filter", "JSON"), ("row_count", "BIGINT"), ("content_hash", "VARCHAR"),
         ("path", "VARCHAR"), ("splits", "JSON")),
        policy="newest_wins",  # same content written again elsewhere: the row points at the newest file
    ),
    "checkpoints": TableSpec(
        "checkpoints", Checkpoint,
        (("base_model", "VARCHAR"), ("export_key", "VARCHAR"), ("trainer", "VARCHAR"), ("trainer_config", "JSON"),
         ("metrics", "JSON"), ("path", "VARCHAR")),
        parents={"export_key": "exports"},
        policy="newest_wins",
    ),
    "evaluations": TableSpec(
        "evaluations", Evaluation,
        (("suite", "VARCHAR"), ("generator", "VARCHAR"), ("config", "JSON"), ("verdict_keys", "JSON"),
         ("metrics", "JSON")),
        policy="newest_wins",
    ),
    "evaluation_samples": TableSpec(
        "evaluation_samples", None,
        (("evaluation_key", "VARCHAR"), ("verdict_key", "VARCHAR"), ("position", "BIGINT")),
        parents={"evaluation_key": "evaluations", "verdict_key": "verdicts"},
    ),
}

# Tables that hold no records: the incremental harvest's state (migration 6; written by
# put_harvest_state, read by harvest_state). (column, SQL type) in table order, the key first.
HARVEST_STATE_TABLES: dict[str, tuple[tuple[str, str], ...]] = {
    "harvest_state": (("source_id", "VARCHAR"), ("state", "JSON"), ("run_id", "VARCHAR"), ("updated_at", "TIMESTAMP")),
    "harvest_seen": (("module_key", "VARCHAR"), ("run_id", "VARCHAR"), ("created_at", "TIMESTAMP")),
}

# Which table holds each record type (put_* and reads use it).
TABLE_OF: dict[type, str] = {spec.record: name for name, spec in TABLES.items() if spec.record is not None}

# Tables the lineage walk and `db stats` look through, parents before children.
RECORD_TABLES: tuple[str, ...] = tuple(TABLES)


def field_column_map(spec: TableSpec) -> dict[str, str]:
    """Record field -> column for a record table (used by the schema check)."""
    assert spec.record is not None
    return {f.name: spec.field_columns.get(f.name, f.name) for f in dataclasses.fields(spec.record)}


def arrow_table(spec: TableSpec, rows: list[dict[str, Any]]) -> pa.Table:
    """Rows (own columns + lineage) as an Arrow table with the table's exact column types."""
    schema = spec.arrow_schema()
    return pa.Table.from_pydict({name: [r.get(name) for r in rows] for name in schema.names}, schema=schema)

