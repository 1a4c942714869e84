"""Single-stage verbs that write rows run as Prefect flow runs when a server is configured
(orchestration.verbs_as_flows = auto), so `autotriton ui` shows every run and each row leads to
its flow run; with `never` they run plainly. A failing verb keeps its exit code and message, and
its flow run is marked failed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from autotriton.flows.cli import app

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "modules"


def _flow_run(flow_run_id: str):
    from prefect.client.orchestration import get_client

    async def read():
        async with get_client() as client:
            run = await client.read_flow_run(flow_run_id)
            flow = await client.read_flow(run.flow_id)
            return run, flow

    return asyncio.run(read())


def _runs(db: Path) -> list[tuple[str, str, str]]:
    from autotriton.warehouse import Warehouse

    with Warehouse(db, read_only=True) as wh:
        return [tuple(r) for r in wh.sql("SELECT kind, status, flow_run_id FROM runs ORDER BY started_at").rows]


def _harvest(db: Path, mode: str, path: Path = EXAMPLES):
    return CliRunner().invoke(app, ["--db", str(db), "--set", f"orchestration.verbs_as_flows={mode}", "harvest", "local",
                                    str(path), "--no-probe", "--json"])


def test_a_harvest_under_a_server_is_a_flow_run_and_its_rows_carry_the_id(tmp_path, prefect_harness):
    db = tmp_path / "w.duckdb"
    result = _harvest(db, "auto")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])  # stdout still holds exactly the JSON object
    assert summary["runnable"] > 0
    ((kind, status, flow_run_id),) = _runs(db)
    assert (kind, status) == ("harvest-local", "succeeded") and flow_run_id
    run, flow = _flow_run(flow_run_id)
    assert flow.name == "autotriton-harvest-local" and run.state.is_completed()
    from autotriton.warehouse import Warehouse

    with Warehouse(db, read_only=True) as wh:
        ids = {r[0] for r in wh.sql("SELECT DISTINCT flow_run_id FROM problems").rows}
    assert ids == {flow_run_id}


def test_a_failing_verb_keeps_its_exit_code_and_its_flow_run_fails(tmp_path, prefect_harness):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowFilter, FlowFilterName

    result = _harvest(tmp_path / "w.duckdb", "auto", tmp_path / "missing")
    assert result.exit_code == 2 and "no such file or directory" in result.output

    async def failed_runs():
        async with get_client() as client:
            runs = await client.read_flow_runs(flow_filter=FlowFilter(name=FlowFilterName(any_=["autotriton-harvest-local"])))
            return [r for r in runs if r.state and r.state.is_failed() and "exit code 2" in (r.state.message or "")]

    assert asyncio.run(failed_runs())


def test_never_runs_the_verb_plainly_even_with_a_server(tmp_path, prefect_harness):
    db = tmp_path / "w.duckdb"
    result = _harvest(db, "never")
    assert result.exit_code == 0, result.output
    assert [(k, s, f) for k, s, f in _runs(db)] == [("harvest-local", "succeeded", "")]
