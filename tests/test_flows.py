"""The Prefect flows: DAG order, caching, resume after kill -9, assets/artifacts, lineage, retrain."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from distillation_helpers import RELU_KERNEL, RELU_KERNEL_WRONG, RELU_PROBLEM

from autotriton.hashing import source_key

REPO_ROOT = Path(__file__).resolve().parent.parent

ABS_PROBLEM = RELU_PROBLEM.replace("torch.relu(x)", "torch.abs(x)")
NEG_PROBLEM = RELU_PROBLEM.replace("torch.relu(x)", "-x")  # no teacher output: an RL-only prompt
HANG_PROBLEM = RELU_PROBLEM.replace("torch.relu(x)", "torch.relu(x) * 2.0")
HANG_KERNEL = RELU_KERNEL.replace("        x = x.contiguous()\n", "        while True:\n            pass\n")


def _suite(path: Path, prefix: str, problems: dict[str, str]) -> Path:
    with path.open("w") as fh:
        for i, (name, source) in enumerate(problems.items(), 1):
            fh.write(json.dumps({"id": f"{prefix}/{name}", "level": 1, "problem_id": i, "name": name, "source": source,
                                 "origin": "autotriton tests", "license": "Apache-2.0"}) + "\n")
    return path


def _replay(path: Path, outputs: dict[str, tuple[str, str]]) -> Path:
    from autotriton.distillation import replay_record

    with path.open("w") as fh:
        for name, (problem, code) in outputs.items():
            fh.write(json.dumps(replay_record(problem_key=source_key(problem), problem_name=name, teacher="flowtest",
                                              teacher_version="1", prompt_version="v1", code=code)) + "\n")
    return path


def _config(d: Path, suite: Path, replay: Path, **extra):
    from autotriton.flows.config import load_config

    cli = {
        "warehouse.path": str(d / "wh.duckdb"), "warehouse.export_dir": str(d / "exports"),
        "harvest.local_paths": [], "harvest.dataset_paths": [str(suite)], "harvest.state_path": str(d / "state.json"),
        "distill.replay_paths": [str(replay)],
        "validation.trials": 1, "validation.workers": 1, "validation.timeout_s": 60.0,
        "training.model": "tiny", "training.output_dir": str(d / "runs"), "training.sft_max_steps": 2,
        "training.grpo_max_steps": 1, "training.num_generations": 2, "training.batch_size": 2,
        # 256: room for the validated relu kernel (222 tokens with the tiny tokenizer); the train flow refuses less.
        # 1024: the SFT row (prompt + kernel) whole: SFT leaves out rows longer than max_length
        "training.max_completion_length": 256, "training.max_length": 1024,
        "evaluation.suite": str(suite), "evaluation.max_problems": 2, "evaluation.samples": 1,
        "evaluation.max_new_tokens": 24, "evaluation.report_dir": str(d / "eval"),
        "orchestration.max_workers": 2,
    }
    cli.update(extra)
    return load_config(environ={}, cli=cli)[0]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    d = tmp_path_factory.mktemp("flows")
    suite = _suite(d / "suite.jsonl", "flowtest/train", {"relu": RELU_PROBLEM, "abs": ABS_PROBLEM, "neg": NEG_PROBLEM})
    replay = _replay(d / "replay.jsonl", {"relu": (RELU_PROBLEM, RELU_KERNEL), "abs": (ABS_PROBLEM, RELU_KERNEL_WRONG)})
    return d, _config(d, suite, replay)


def _task_runs(flow_run_id):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    async def read():
        async with get_client() as client:
            return await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))

    return asyncio.run(read())


def _read_db(cfg, query):
    from autotriton.warehouse import Warehouse

    # (a flow closes its warehouse handle when it ends: tasks/resources.py)
    with Warehouse(cfg.warehouse.path) as wh:
        return wh.sql(query).rows


@pytest.fixture(scope="module")
def first_refresh(world, prefect_harness):
    from autotriton.flows.pipeline import refresh_dataset

    _, cfg = world
    state = refresh_dataset(cfg, return_state=True)
    assert state.is_completed(), state
    return state.state_details.flow_run_id, state.result()


def test_refresh_runs_the_dag_in_order(first_refresh, world):
    flow_run_id, result = first_refresh
    runs = _task_runs(flow_run_id)
    by_stage: dict[str, list] = {}
    for tr in runs:
        by_stage.setdefault(tr.task_key.split("-")[0] if False else tr.name.rsplit("-", 1)[0], []).append(tr)
    names = [tr.name for tr in runs]
    order = ["start-run", "harvest-dataset", "store-harvest", "distill", "store-distilled", "export-training-sets", "finish-run"]
    stages = {s: [tr for tr in runs if tr.name.startswith(s)] for s in order}
    for stage, trs in stages.items():
        assert trs, f"no task run for {stage}: {names}"
    distills = stages["distill"]
    assert sorted(tr.name for tr in distills) == ["distill-abs", "distill-neg", "distill-relu"]
    for before, after in zip(order, order[1:]):
        finished = max(tr.end_time for tr in stages[before])
        started = min(tr.start_time for tr in stages[after])
        assert finished <= started, f"{before} must finish before {after} starts"
    assert result["distill"]["validated_pairs"] == 1, result["distill"]  # relu is right, abs is wrong, neg has no teacher output
    assert result["distill"]["verdicts"] == {"correct": 1, "incorrect": 1}, result["distill"]
    assert result["export_records"]["sft"].row_count == 1


def test_rows_written_under_the_flow_carry_its_flow_run_id(first_refresh, world):
    flow_run_id, _ = first_refresh
    _, cfg = world
    for table in ("problems", "candidates", "verdicts", "exports", "sources"):
        ids = {r[0] for r in _read_db(cfg, f"SELECT DISTINCT flow_run_id FROM {table}")}
        assert ids == {str(flow_run_id)}, table
    run_ids = _read_db(cfg, f"SELECT status FROM runs WHERE flow_run_id = '{flow_run_id}'")
    assert run_ids == [("succeeded",)]


def test_assets_and_artifacts_are_recorded(first_refresh, world):
    from prefect.client.orchestration import get_client
    from prefect.events.filters import EventFilter, EventNameFilter

    from autotriton.tasks.artifacts import asset_key, warehouse_id

    flow_run_id, _ = first_refresh
    db = world[1].warehouse.path

    async def read():
        async with get_client() as client:
            for _ in range(30):  # events are flushed asynchronously
                page = await client.read_events(filter=EventFilter(event=EventNameFilter(prefix=["prefect.asset.materialization"])), limit=50)
                keys = {e.resource.id for e in page.events if any(r.id == f"prefect.flow-run.{flow_run_id}" for r in e.related)}
                if {asset_key("exports", db), asset_key("verdicts", db)} <= keys:
                    break
                await asyncio.sleep(1)
            artifacts = await client.read_artifacts()
            return keys, {a.key for a in artifacts}

    keys, artifact_keys = asyncio.run(read())
    for table in ("sources", "modules", "problems", "rejections", "candidates", "verdicts", "exports"):
        # the key names this warehouse (file stem and a hash of its path), so two warehouses never collide
        assert f"duckdb://{warehouse_id(db)}/{table}" in keys
    assert warehouse_id(db).startswith(Path(db).stem.lower()) and warehouse_id(db) != warehouse_id(Path(db).parent / "x" / Path(db).name)
    assert {"harvest-yield", "harvest-rejections", "verdict-mix", "distill-yield", "training-exports", "distill-progress"} <= artifact_keys


def test_refresh_keeps_the_harvest_state_in_the_warehouse(first_refresh, world):
    """The harvest tasks get the state as data and the store writes it with the rows: no side file."""
    d, cfg = world
    sources = [r[0] for r in _read_db(cfg, "SELECT source_id FROM harvest_state")]
    assert sources == [f"dataset:{d / 'suite.jsonl'}"]
    assert not (d / "state.json").exists() and not Path(f"{cfg.warehouse.path}.harvest-state.json").exists()


def test_second_refresh_is_served_from_cache(first_refresh, world):
    from autotriton.flows.pipeline import refresh_dataset

    _, cfg = world
    before = _read_db(cfg, "SELECT (SELECT count(*) FROM candidates), (SELECT count(*) FROM verdicts), (SELECT count(*) FROM problems)")
    state = refresh_dataset(cfg, return_state=True)
    assert state.is_completed()
    distills = [tr for tr in _task_runs(state.state_details.flow_run_id) if tr.name.startswith("distill-")]
    assert len(distills) == 3 and all(tr.state.name == "Cached" for tr in distills), [tr.state.name for tr in distills]
    after = _read_db(cfg, "SELECT (SELECT count(*) FROM candidates), (SELECT count(*) FROM verdicts), (SELECT count(*) FROM problems)")
    assert after == before


def test_serve_builds_the_scheduled_refresh_and_on_demand_flows(world):
    from autotriton.flows.serving import build_deployments

    _, cfg = world
    deployments = {d.name: d for d in build_deployments(cfg)}
    assert set(deployments) == {"scheduled-refresh", "train", "evaluate", "retrain"}
    assert deployments["scheduled-refresh"].schedules[0].schedule.cron == cfg.orchestration.refresh_cron
    assert not deployments["train"].schedules
    bad = cfg.model_copy(update={"orchestration": cfg.orchestration.model_copy(update={"refresh_cron": "every day"})})
    with pytest.raises(ValueError, match="refresh_cron"):
        build_deployments(bad)


@pytest.mark.slow
def test_retrain_flow_end_to_end(first_refresh, world):
    """refresh -> train (SFT, GRPO with the real judge) -> evaluate, with the tiny test model."""
    from autotriton.flows.pipeline import retrain

    _, cfg = world
    report = retrain(cfg)
    assert report["train"]["grpo"]["steps"] >= 1
    assert Path(report["train"]["model"]).is_dir()
    assert report["evaluate"]["metrics"]["samples"] == 2
    rows = _read_db(cfg, "SELECT trainer FROM checkpoints ORDER BY trainer")
    assert [r[0] for r in rows] == ["grpo", "sft"]
    (n_verdicts,) = _read_db(cfg, f"SELECT count(*) FROM evaluations WHERE key = '{report['evaluate']['evaluation_key']}'")[0]
    assert n_verdicts == 1


def _run_refresh_subprocess(cfg, env) -> subprocess.Popen:
    code = ("import json, sys\nfrom autotriton.flows.config import PipelineConfig\n"
            "from autotriton.flows.pipeline import refresh_dataset\n"
            "cfg = PipelineConfig.model_validate(json.loads(sys.argv[1]))\nrefresh_dataset(cfg)\n")
    return subprocess.Popen([sys.executable, "-c", code, cfg.model_dump_json()], cwd=REPO_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


@pytest.mark.slow
def test_run_killed_mid_way_resumes_without_duplicates(tmp_path):
    """kill -9 while one problem's candidate hangs in the judge: the rerun takes the finished
    problems from the cache, finishes the rest, and the warehouse holds each row once."""
    suite = _suite(tmp_path / "suite.jsonl", "killtest/train",
                   {"relu": RELU_PROBLEM, "abs": ABS_PROBLEM, "hang": HANG_PROBLEM})
    replay = _replay(tmp_path / "replay.jsonl", {"relu": (RELU_PROBLEM, RELU_KERNEL), "abs": (ABS_PROBLEM, RELU_KERNEL_WRONG),
                                                 "hang": (HANG_PROBLEM, HANG_KERNEL)})
    # Two judge workers and three task threads: the hanging candidate holds one worker, the other
    # problems finish on the other one, whatever order the threads start in.
    cfg = _config(tmp_path, suite, replay, **{"validation.timeout_s": 45.0, "validation.workers": 2,
                                              "orchestration.max_workers": 3})
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180",
               PREFECT_LOGGING_LEVEL="INFO", PYTHONUNBUFFERED="1")  # the test follows the task-run log lines as they come

    proc = _run_refresh_subprocess(cfg, env)
    log: list[str] = []
    deadline = time.monotonic() + 400
    done = set()
    for line in proc.stdout:
        log.append(line)
        for name in ("relu", "abs"):
            if f"distill-{name}" in line and "Finished in state Completed" in line:
                done.add(name)
        if done == {"relu", "abs"} or time.monotonic() > deadline:
            break
    assert done == {"relu", "abs"}, "".join(log[-30:])
    os.killpg(proc.pid, signal.SIGKILL)  # the hanging problem is still being judged
    assert not any("distill-hang" in line and "Finished" in line for line in log), "killed too late: " + "".join(log[-30:])
    proc.wait()

    proc = _run_refresh_subprocess(cfg, env)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out[-3000:]
    finished = "\n".join(line for line in out.splitlines() if "Task run 'distill-" in line)
    assert "distill-relu' - Finished in state Cached" in finished, finished
    assert "distill-abs' - Finished in state Cached" in finished, finished
    assert "distill-hang' - Finished in state Completed" in finished, finished

    from autotriton.warehouse import Warehouse

    with Warehouse(cfg.warehouse.path) as wh:
        assert wh.sql("SELECT count(*), count(DISTINCT problem_key) FROM candidates").rows == [(3, 3)]
        statuses = sorted(v.status for v in wh.verdicts())
        assert statuses == ["correct", "incorrect", "timeout"]
        runs = [r[0] for r in wh.sql("SELECT status FROM runs WHERE kind = 'refresh' ORDER BY started_at").rows]
        assert runs == ["crashed", "succeeded"]


@pytest.mark.slow
def test_refresh_on_a_local_dask_cluster(tmp_path, prefect_harness):
    """The same flow with prefect-dask: compute tasks run in Dask worker processes (each with its
    own warm judge), persistence stays in the flow process that holds the warehouse."""
    from autotriton.flows.pipeline import refresh_dataset, task_runner

    suite = _suite(tmp_path / "suite.jsonl", "dasktest/train", {"relu": RELU_PROBLEM, "abs": ABS_PROBLEM})
    replay = _replay(tmp_path / "replay.jsonl", {"relu": (RELU_PROBLEM, RELU_KERNEL), "abs": (ABS_PROBLEM, RELU_KERNEL_WRONG)})
    cfg = _config(tmp_path, suite, replay, **{"orchestration.task_runner": "dask"})
    runner = task_runner(cfg)
    assert type(runner).__name__ == "DaskTaskRunner"
    result = refresh_dataset.with_options(task_runner=runner)(cfg)
    assert result["distill"]["verdicts"] == {"correct": 1, "incorrect": 1}, result["distill"]
    assert result["distill"]["validated_pairs"] == 1
    assert _read_db(cfg, "SELECT count(*) FROM verdicts") == [(2,)]


@pytest.mark.slow
def test_ui_serves_points_the_cli_and_stops_on_ctrl_c(tmp_path):
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API")}
    env["PREFECT_HOME"] = str(tmp_path / "prefect")
    proc = subprocess.Popen([sys.executable, "-m", "autotriton.flows.cli", "ui", "--port", str(port)], cwd=REPO_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        line = ""
        deadline = time.monotonic() + 240
        while "Prefect UI" not in line and time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "ui exited early"
        assert f"http://127.0.0.1:{port}" in line, line
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=10) as resp:
            assert resp.status == 200
        profiles = (tmp_path / "prefect" / "profiles.toml").read_text()
        assert f"http://127.0.0.1:{port}/api" in profiles  # the CLI now reports to this server
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert f"http://127.0.0.1:{port}/api" not in (tmp_path / "prefect" / "profiles.toml").read_text()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=3)
