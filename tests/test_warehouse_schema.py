"""Schema: every record field has a column; migrations are versioned, idempotent and refuse newer files."""

from __future__ import annotations

import dataclasses

import duckdb
import pytest

from autotriton.warehouse import LATEST_VERSION, MIGRATIONS, MigrationError, Warehouse
from autotriton.warehouse.schema import HARVEST_STATE_TABLES, LINEAGE_COLUMNS, TABLES, field_column_map

SQL_TYPE_NAMES = {"VARCHAR": "VARCHAR", "JSON": "JSON", "BIGINT": "BIGINT", "DOUBLE": "DOUBLE",
                  "BOOLEAN": "BOOLEAN", "TIMESTAMP": "TIMESTAMP"}


def _db_columns(path) -> dict[str, dict[str, str]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = 'main'"
        ).fetchall()
    finally:
        con.close()
    out: dict[str, dict[str, str]] = {}
    for table, column, dtype in rows:
        out.setdefault(table, {})[column] = dtype
    return out


def test_every_record_field_has_a_column_of_the_right_type(tmp_path):
    path = tmp_path / "w.duckdb"
    Warehouse(path).close()
    db = _db_columns(path)
    for name, spec in TABLES.items():
        assert name in db, f"table {name} is described in schema.py but no migration creates it"
        expected = dict(spec.all_columns)
        assert set(db[name]) == set(expected), f"{name}: columns in the database differ from schema.py"
        for column, sql_type in expected.items():
            assert db[name][column] == SQL_TYPE_NAMES[sql_type], f"{name}.{column}: {db[name][column]} != {sql_type}"
        for column in LINEAGE_COLUMNS:
            assert column in db[name], f"{name} lacks lineage column {column}"
        if spec.record is not None:
            mapping = field_column_map(spec)
            for fname in (f.name for f in dataclasses.fields(spec.record)):
                assert mapping[fname] in db[name], f"{spec.record.__name__}.{fname} has no column in {name}"
    assert {"run_id", "kind", "status", "config", "config_hash", "code_version", "flow_run_id", "summary",
            "started_at", "finished_at"} <= set(db["runs"])


def test_harvest_state_tables_match_schema_py(tmp_path):
    Warehouse(tmp_path / "w.duckdb").close()
    db = _db_columns(tmp_path / "w.duckdb")
    expected = {name: {c: SQL_TYPE_NAMES[t] for c, t in columns} for name, columns in HARVEST_STATE_TABLES.items()}
    assert {name: db.get(name) for name in HARVEST_STATE_TABLES} == expected  # the migration creates what schema.py says


def test_harvest_state_replaces_touched_sources_and_adds_seen_keys(tmp_path):
    with Warehouse(tmp_path / "w.duckdb") as wh:
        run = wh.start_run("harvest", {})
        assert wh.put_harvest_state(run, {"local:/a": {"files": {"m.py": "1"}}, "local:/b": {"x": 1}}, {"k1"}) == 2
        assert wh.put_harvest_state(run, {"local:/a": {"files": {"m.py": "1"}}}, {"k1"}) == 0  # the same: no change
        assert wh.put_harvest_state(run, {"local:/a": {"files": {"m.py": "2"}}}, {"k2"}) == 1
        assert wh.put_harvest_state(None, {"local:/a": {"old": True}, "local:/c": {}}, replace=False) == 1  # an import keeps newer rows
        assert wh.harvest_state() == {"sources": {"local:/a": {"files": {"m.py": "2"}}, "local:/b": {"x": 1}, "local:/c": {}},
                                      "seen": ["k1", "k2"]}
        assert wh.sql("SELECT run_id IS NULL FROM harvest_state WHERE source_id = 'local:/c'").rows == [(True,)]


def test_record_field_without_column_is_refused_not_dropped(tmp_path):
    """A record field the table does not know (a field added without a migration) fails the put."""
    from autotriton.records import Candidate

    spec = TABLES["candidates"]
    narrower = dataclasses.replace(spec, columns=tuple(c for c in spec.columns if c[0] != "parse_error"))
    with pytest.raises(ValueError, match="parse_error have no column in table candidates"):
        narrower.to_row(Candidate(problem_key="p", code="x"))


def test_migrations_applied_twice_are_a_no_op(tmp_path):
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh:
        assert wh.applied_migrations == [v for v, _, _ in MIGRATIONS]
        run = wh.start_run("t", {})
        wh.finish_run(run, "succeeded", {})
    with Warehouse(path) as wh:
        assert wh.applied_migrations == []
        assert wh.schema_version == LATEST_VERSION
        rows = wh.sql("SELECT version, name FROM schema_migrations ORDER BY version").rows
        assert rows == [(v, n) for v, n, _ in MIGRATIONS]
        assert wh.sql("SELECT count(*) FROM runs").rows == [(1,)]  # data survives reopening


def test_database_from_newer_code_is_refused(tmp_path):
    path = tmp_path / "w.duckdb"
    Warehouse(path).close()
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO schema_migrations (version, name, code_version) VALUES (?, 'from the future', '9.9')",
                [LATEST_VERSION + 1])
    con.close()
    for read_only in (False, True):
        with pytest.raises(MigrationError, match=rf"schema version {LATEST_VERSION + 1}, newer than this code"):
            Warehouse(path, read_only=read_only)


def test_read_only_open_of_outdated_schema_says_migrate(tmp_path):
    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
                "applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp, code_version VARCHAR NOT NULL)")
    con.execute(MIGRATIONS[0][2])
    con.execute("INSERT INTO schema_migrations (version, name, code_version) VALUES (1, 'x', 'old')")
    con.close()
    with pytest.raises(MigrationError, match="autotriton db migrate"):
        Warehouse(path, read_only=True)
    with Warehouse(path) as wh:  # a writer upgrades it in place
        assert wh.applied_migrations == list(range(2, LATEST_VERSION + 1))


def test_failed_migration_leaves_previous_version(tmp_path, monkeypatch):
    import autotriton.warehouse.migrations as migrations

    path = tmp_path / "w.duckdb"
    bad = [*MIGRATIONS, (LATEST_VERSION + 1, "broken", "CREATE TABLE half_done (x INTEGER); SELECT * FROM no_such_table;")]
    monkeypatch.setattr(migrations, "MIGRATIONS", bad)
    monkeypatch.setattr(migrations, "LATEST_VERSION", LATEST_VERSION + 1)
    with pytest.raises(duckdb.Error):
        Warehouse(path)
    monkeypatch.undo()
    with Warehouse(path) as wh:
        assert wh.schema_version == LATEST_VERSION
        assert wh.sql("SELECT count(*) FROM information_schema.tables WHERE table_name = 'half_done'").rows == [(0,)]
