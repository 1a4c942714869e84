"""Rows written under a Prefect flow run carry its flow-run id; the warehouse itself never imports Prefect."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from warehouse_helpers import make_chain

REPO_ROOT = Path(__file__).resolve().parent.parent


def test_warehouse_does_not_import_prefect():
    code = ("import sys\nfrom autotriton.warehouse import Warehouse\nwh = Warehouse(':memory:')\n"
            "run = wh.start_run('x', {})\nassert run.flow_run_id == ''\nprint('prefect' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in __import__("os").environ.items() if k != "PREFECT__FLOW_RUN_ID"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


@pytest.fixture(scope="module")
def prefect_server(request):
    """Reuse a session-wide Prefect test harness when conftest offers one, else start one here."""
    try:
        yield request.getfixturevalue("prefect_harness")
        return
    except pytest.FixtureLookupError:
        pass
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield None


@pytest.mark.slow
def test_rows_written_in_a_flow_and_its_tasks_carry_the_flow_run_id(tmp_path, prefect_server):
    from prefect import flow, task
    from prefect.runtime import flow_run

    from autotriton.tasks.runs import start_run
    from autotriton.warehouse import Warehouse

    chain = make_chain(3)

    @task
    def store_problems(wh, run):
        return wh.put_problems(run, chain.problems)

    @flow
    def refresh(path: str):
        with Warehouse(path) as wh:
            run = start_run(wh, "refresh", {"flow": True})  # tasks/runs.py passes Prefect's flow-run id
            wh.put_modules(run, chain.modules)
            stored = store_problems.submit(wh, run).result()  # a task on the thread runner, same handle
            wh.finish_run(run, "succeeded", {"problems": stored})
            return str(flow_run.id), run.run_id

    path = tmp_path / "w.duckdb"
    flow_run_id, run_id = refresh(str(path))
    assert flow_run_id and flow_run_id != "None"
    with Warehouse(path, read_only=True) as wh:
        for table in ("sources", "modules", "problems"):
            assert wh.sql(f"SELECT DISTINCT flow_run_id, run_id FROM {table}").rows == [(flow_run_id, run_id)]
        assert wh.runs()[0]["flow_run_id"] == flow_run_id
        found = wh.lineage(flow_run_id)  # a flow run leads to its rows...
        assert found["runs"][0]["rows_written"] == {"sources": 3, "modules": 3, "problems": 3}
        node = wh.lineage(chain.problems[0].key)  # ...and a row to its flow run
        assert node["lineage"]["flow_run_id"] == flow_run_id and node["run"]["flow_run_id"] == flow_run_id
