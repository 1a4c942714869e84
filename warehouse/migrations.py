"""Versioned schema migrations: an ordered list of (version, name, SQL or a Python step), applied in order.

Rules: never edit a migration that has shipped; add a new one at the end. Each migration runs in
its own transaction together with its row in `schema_migrations`, so a crash leaves the database
at the previous version. Applying them twice is a no-op. A database written by newer code (a
version this list does not know) is refused with a clear error instead of being misread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from autotriton.versioning import code_version

LINEAGE_SQL = """
    run_id VARCHAR NOT NULL,
    flow_run_id VARCHAR NOT NULL,
    config_hash VARCHAR NOT NULL,
    code_version VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL"""

_V1 = f"""
CREATE TABLE runs (
    run_id VARCHAR PRIMARY KEY,
    kind VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    started_at TIMESTAMP NOT NULL,
    finished_at TIMESTAMP,
    config JSON NOT NULL,
    config_hash VARCHAR NOT NULL,
    code_version VARCHAR NOT NULL,
    flow_run_id VARCHAR NOT NULL,
    summary JSON,
    pid BIGINT NOT NULL,
    host VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL
);

CREATE TABLE sources (
    key VARCHAR PRIMARY KEY,
    kind VARCHAR NOT NULL,
    repo VARCHAR NOT NULL,
    "commit" VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    licence VARCHAR,
    stars BIGINT,
    url VARCHAR,{LINEAGE_SQL}
);

CREATE TABLE modules (
    key VARCHAR PRIMARY KEY,
    source_key VARCHAR NOT NULL,
    class_name VARCHAR NOT NULL,
    original_source VARCHAR NOT NULL,
    standalone_source VARCHAR NOT NULL,{LINEAGE_SQL}
);

CREATE TABLE problems (
    key VARCHAR PRIMARY KEY,
    reference_source VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    module_key VARCHAR,
    source_key VARCHAR,
    init_spec JSON NOT NULL,
    input_spec JSON NOT NULL,
    shape_profile VARCHAR NOT NULL,
    op_tags JSON NOT NULL,
    status VARCHAR NOT NULL,
    reject_reason VARCHAR,
    licence VARCHAR,
    suite VARCHAR,
    suite_id VARCHAR,
    payload_hash VARCHAR NOT NULL,{LINEAGE_SQL}
);

CREATE TABLE rejections (
    key VARCHAR PRIMARY KEY,
    stage VARCHAR NOT NULL,
    subject VARCHAR NOT NULL,
    reason VARCHAR NOT NULL,
    detail VARCHAR,{LINEAGE_SQL}
);

CREATE TABLE candidates (
    key VARCHAR PRIMARY KEY,
    problem_key VARCHAR NOT NULL,
    code VARCHAR NOT NULL,
    reasoning VARCHAR NOT NULL,
    instruction VARCHAR NOT NULL,
    generator VARCHAR NOT NULL,
    generator_version VARCHAR NOT NULL,
    prompt_version VARCHAR NOT NULL,
    sampling JSON NOT NULL,
    repair_round BIGINT NOT NULL,
    parent_key VARCHAR,
    usage JSON NOT NULL,
    raw_output VARCHAR NOT NULL,
    parse_error VARCHAR,{LINEAGE_SQL}
);

CREATE TABLE verdicts (
    key VARCHAR PRIMARY KEY,
    candidate_key VARCHAR NOT NULL,
    problem_key VARCHAR NOT NULL,
    status VARCHAR NOT NULL,
    correct BOOLEAN NOT NULL,
    rule_ok BOOLEAN NOT NULL,
    compiled BOOLEAN NOT NULL,
    violations JSON NOT NULL,
    compile_report JSON NOT NULL,
    trials JSON NOT NULL,
    triton_kernels_launched JSON NOT NULL,
    aten_ops JSON NOT NULL,
    error VARCHAR,
    max_abs_err DOUBLE,
    speedup DOUBLE,
    speedup_vs_compile DOUBLE,
    timing JSON NOT NULL,
    device VARCHAR NOT NULL,
    versions JSON NOT NULL,
    judge_config_hash VARCHAR NOT NULL,
    elapsed_s DOUBLE NOT NULL,
    payload_hash VARCHAR NOT NULL,{LINEAGE_SQL}
);

CREATE TABLE exports (
    key VARCHAR PRIMARY KEY,
    name VARCHAR NOT NULL,
    filter JSON NOT NULL,
    row_count BIGINT NOT NULL,
    content_hash VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    splits JSON NOT NULL,
    payload_hash VARCHAR NOT NULL,{LINEAGE_SQL}
);

CREATE TABLE checkpoints (
    key VARCHAR PRIMARY KEY,
    base_model VARCHAR NOT NULL,
    export_key VARCHAR NOT NULL,
    trainer VARCHAR NOT NULL,
    trainer_config JSON NOT NULL,
    metrics JSON NOT NULL,
    path VARCHAR NOT NULL,
    payload_hash VARCHAR NOT NULL,{LINEAGE_SQL}
);

CREATE TABLE evaluations (
    key VARCHAR PRIMARY KEY,
    suite VARCHAR NOT NULL,
    generator VARCHAR NOT NULL,
    config JSON NOT NULL,
    verdict_keys JSON NOT NULL,
    metrics JSON NOT NULL,
    payload_hash VARCHAR NOT NULL,{LINEAGE_SQL}
);

CREATE TABLE evaluation_samples (
    key VARCHAR PRIMARY KEY,
    evaluation_key VARCHAR NOT NULL,
    verdict_key VARCHAR NOT NULL,
    position BIGINT NOT NULL,{LINEAGE_SQL}
);
"""

# The newest verdict per candidate, whatever judge config or device produced it (a verdict's key
# already makes it unique per candidate x judge config x device; newest_wins keeps that row the
# latest judgement). Training pairs are chosen from this view.
_V2 = """
CREATE VIEW latest_verdicts AS
SELECT * EXCLUDE (rn) FROM (
    SELECT *, row_number() OVER (PARTITION BY candidate_key ORDER BY created_at DESC, key) AS rn
    FROM verdicts
) WHERE rn = 1;
"""

# Dependency environments (autotriton/environments.py): the requirement set a problem needs and
# its key. Rows written before have none ('[]', NULL): they ran with the judge's packages.
_V3_PROBLEM_ENVIRONMENTS = """
ALTER TABLE problems ADD COLUMN requirements JSON DEFAULT '[]';
ALTER TABLE problems ADD COLUMN environment_key VARCHAR;
"""

# Verdict sizes (issue 15): correctness at the problem's own sizes and at the odd-size trial, apart.
# Older rows are backfilled from their trials: own sizes hold when every main-phase trial matched
# and the verdict failed only later (status incorrect or runtime_error, i.e. in the odd-size phase);
# odd_sizes_ok is NULL where no odd-size trial ran. The view is recreated to carry the new columns.
_V4_VERDICT_SIZES = """
ALTER TABLE verdicts ADD COLUMN correct_own_sizes BOOLEAN;
ALTER TABLE verdicts ADD COLUMN odd_sizes_ok BOOLEAN;
UPDATE verdicts SET
    correct_own_sizes = correct OR (status IN ('incorrect', 'runtime_error') AND len(parsed.main) > 0 AND list_bool_and(parsed.main)),
    odd_sizes_ok = CASE WHEN len(parsed.odd) = 0 THEN NULL ELSE list_bool_and(parsed.odd) END
FROM (
    SELECT key AS k,
           [coalesce(x.ok, false) FOR x IN t IF x.phase = 'main'] AS main,
           [coalesce(x.ok, false) FOR x IN t IF x.phase = 'odd_sizes'] AS odd
    FROM (SELECT key, from_json(coalesce(trials, '[]'), '[{"phase": "VARCHAR", "ok": "BOOLEAN"}]') AS t FROM verdicts)
) AS parsed
WHERE verdicts.key = parsed.k;
CREATE OR REPLACE VIEW latest_verdicts AS
SELECT * EXCLUDE (rn) FROM (
    SELECT *, row_number() OVER (PARTITION BY candidate_key ORDER BY created_at DESC, key) AS rn
    FROM verdicts
) WHERE rn = 1;
"""

# The problems' own columns at version 5, in table order: what a problem row's payload hash covers
# (warehouse/schema.py TableSpec.to_row). Fixed here: a later column must not change this step.
_V5_PROBLEM_COLUMNS = (
    "reference_source", "name", "module_key", "source_key", "init_spec", "input_spec", "shape_profile", "op_tags",
    "status", "reject_reason", "licence", "suite", "suite_id", "requirements", "environment_key", "instruction",
)


def _v5_problem_instructions(con: Any) -> None:
    """Problem instructions (issue 16): the task in words, computed once when a problem is made
    (autotriton/describe.py). Older rows are backfilled with what prompts computed from their
    reference until now, and their payload hash is recomputed with it, so putting the same problem
    again stays a no-op."""
    from autotriton.describe import instruction_for
    from autotriton.hashing import content_key

    con.execute("ALTER TABLE problems ADD COLUMN instruction VARCHAR DEFAULT ''").fetchall()
    cols = ", ".join(f'"{c}"' for c in _V5_PROBLEM_COLUMNS)
    rows = con.execute(f"SELECT key, {cols} FROM problems").fetchall()
    updates = []
    for key, *values in rows:
        row = dict(zip(_V5_PROBLEM_COLUMNS, values))
        row["instruction"] = instruction_for(row["reference_source"])
        updates.append([row["instruction"], content_key("payload", row), key])
    if updates:
        con.executemany("UPDATE problems SET instruction = ?, payload_hash = ? WHERE key = ?", updates)


# The incremental harvest's state (harvesting/state.py), kept with the rows it describes so that a
# copy of the warehouse file harvests on from where it was: one row per source (its commit, ETags,
# blob shas or file hashes, as JSON), replaced whole by the harvest that touched it, and one row per
# module key seen (for duplicate counting), only ever added. So harvests of different sources never
# overwrite each other's state. run_id: the run whose harvest wrote the row (NULL: imported from an
# older side file or dump).
_V6_HARVEST_STATE = """
CREATE TABLE harvest_state (
    source_id VARCHAR PRIMARY KEY,
    state JSON NOT NULL,
    run_id VARCHAR,
    updated_at TIMESTAMP NOT NULL
);
CREATE TABLE harvest_seen (
    module_key VARCHAR PRIMARY KEY,
    run_id VARCHAR,
    created_at TIMESTAMP NOT NULL
);
"""

# A migration is SQL, or a function of the connection for a step SQL cannot compute.
MIGRATIONS: list[tuple[int, str, str | Callable[[Any], None]]] = [
    (1, "record tables with lineage columns", _V1),
    (2, "latest_verdicts view", _V2),
    (3, "problem dependency environments (requirements, environment_key)", _V3_PROBLEM_ENVIRONMENTS),
    (4, "verdict sizes: correct_own_sizes and odd_sizes_ok", _V4_VERDICT_SIZES),
    (5, "problem instructions, backfilled from the reference", _v5_problem_instructions),
    (6, "harvest state: per source and the module keys seen", _V6_HARVEST_STATE),
]

LATEST_VERSION = MIGRATIONS[-1][0]


class MigrationError(RuntimeError):
    """The database's schema cannot be used by this code; the message says what to do."""


def _check_order() -> None:
    versions = [v for v, _, _ in MIGRATIONS]
    if versions != list(range(1, len(versions) + 1)):
        raise MigrationError(f"warehouse/migrations.py: versions must be 1..N in order, got {versions}")


def current_version(con: Any) -> int:
    """Highest applied version, 0 for a database without the migrations table."""
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations'"
    ).fetchall()[0][0]
    if not exists:
        return 0
    return int(con.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchall()[0][0])


def check_not_newer(con: Any, path: str) -> int:
    version = current_version(con)
    if version > LATEST_VERSION:
        raise MigrationError(
            f"{path}: the warehouse is at schema version {version}, newer than this code knows "
            f"(up to {LATEST_VERSION}); it was written by a newer autotriton. Upgrade autotriton, "
            "or point --db / AUTOTRITON_DB at another file."
        )
    return version


def apply_migrations(con: Any, path: str = "warehouse") -> list[int]:
    """Apply every pending migration, each in its own transaction; returns the versions applied."""
    _check_order()
    check_not_newer(con, path)
    con.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
        "applied_at TIMESTAMP NOT NULL DEFAULT current_timestamp, code_version VARCHAR NOT NULL)"
    ).fetchall()
    applied: list[int] = []
    for version, name, sql in MIGRATIONS:
        if version <= current_version(con):
            continue
        con.execute("BEGIN TRANSACTION").fetchall()
        try:
            if callable(sql):
                sql(con)
            else:
                con.execute(sql).fetchall()
            con.execute(
                "INSERT INTO schema_migrations (version, name, code_version) VALUES (?, ?, ?)",
                [version, name, code_version()],
            ).fetchall()
            con.execute("COMMIT").fetchall()
        except BaseException:
            con.execute("ROLLBACK").fetchall()
            raise
        applied.append(version)
    return applied
