"""Migration 5: problem instructions are stored with problems, and warehouses written before get
them backfilled with what prompts computed until then, so old warehouses keep working unchanged."""

from __future__ import annotations

import duckdb

from autotriton.describe import default_instruction, instruction_for
from autotriton.records import Problem
from autotriton.warehouse import Warehouse
from autotriton.warehouse.migrations import MIGRATIONS
from validation_helpers import problem as judge_problem


def test_migration_5_backfills_instructions_and_a_second_put_stays_a_no_op(tmp_path):
    path = tmp_path / "w.duckdb"
    relu = Problem(reference_source=judge_problem("relu"), name="relu")
    broken = Problem(reference_source="class Model(:\n", name="broken", status="rejected", reject_reason="syntax_error")
    with Warehouse(path) as wh:
        first = wh.start_run("harvest", {})
        assert wh.put_problems(first, [relu, broken]) == 2
        wh.finish_run(first, "succeeded", {})
    # The same warehouse as code before migration 5 left it: no instruction column, older payload hashes.
    con = duckdb.connect(str(path))
    con.execute("ALTER TABLE problems DROP COLUMN instruction")
    con.execute("UPDATE problems SET payload_hash = 'before-5'")
    # ... and without what later migrations added (migration 6: the harvest state's tables)
    con.execute("DROP TABLE IF EXISTS harvest_state")
    con.execute("DROP TABLE IF EXISTS harvest_seen")
    con.execute("DELETE FROM schema_migrations WHERE version >= 5")
    con.close()

    with Warehouse(path) as wh:
        assert wh.applied_migrations == [v for v, _, _ in MIGRATIONS if v >= 5]
        stored = {p.name: p for p in wh.problems(status=None)}
        assert stored["relu"].instruction == default_instruction(relu) == instruction_for(relu.reference_source)
        assert stored["broken"].instruction == instruction_for(broken.reference_source)  # what prompts said of it before
        second = wh.start_run("harvest", {})
        with_words = Problem(reference_source=relu.reference_source, name="relu",
                             instruction=instruction_for(relu.reference_source))
        assert wh.put_problems(second, [with_words]) == 0
        assert wh.sql("SELECT run_id FROM problems WHERE name = 'relu'").rows == [(first.run_id,)]  # not rewritten
        wh.finish_run(second, "succeeded", {})


def test_a_problem_keeps_its_key_whatever_its_instruction():
    source = judge_problem("relu")
    assert Problem(reference_source=source, name="relu").key == Problem(reference_source=source, name="relu",
                                                                         instruction="anything").key
