"""`autotriton harvest reprobe`: problems stored before a probe rule existed are probed again and
rejected for what they are (issue 13: DropPath-like modules harvested before `returns_input` were
distilled on every H200 run, "0 graphs", never a pair); a problem that still runs stays runnable,
and a refusal that describes the machine (a timeout, a crash) changes nothing."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from autotriton.flows.cli import app
from autotriton.harvesting.reprobe import Reprobed, reprobe_summary
from autotriton.records import Problem
from autotriton.warehouse import Warehouse

IDENTITY_IN_EVAL = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, p: float = 0.1):
        super().__init__()
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.drop(x)


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return [0.1]
'''

REAL = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.gain = nn.Parameter(torch.linspace(0.5, 1.5, dim))

    def forward(self, x):
        return torch.relu(x * self.gain) + 1.0


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return [16]
'''


def test_reprobe_rejects_what_the_current_probe_refuses_and_keeps_the_rest(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "w.duckdb")
    with Warehouse(db) as wh:
        run = wh.start_run("harvest", {})
        wh.put_problems(run, [Problem(REAL, "Scale"), Problem(IDENTITY_IN_EVAL, "DropPath")])
        wh.finish_run(run)

    def invoke(*args: str) -> dict:
        result = CliRunner().invoke(app, ["--db", db, "harvest", "reprobe", *args, "--json"])
        assert result.exit_code == 0, (result.output, result.exception)
        return json.loads(result.stdout.strip().splitlines()[-1])

    dry = invoke("--dry-run")
    assert dry["checked"] == 2 and dry["runnable"] == 1 and dry["retired"] == {"returns_input": 1}
    assert dry["retired_examples"]["returns_input"].startswith("DropPath: ")
    with Warehouse(db, read_only=True) as wh:
        assert len(wh.problems()) == 2  # a dry run changes nothing
    done = invoke()
    assert done["new_rows"] == {"problems_rejected": 1}
    with Warehouse(db, read_only=True) as wh:
        assert [p.name for p in wh.problems()] == ["Scale"]
        gone = [p for p in wh.problems(status="rejected")]
        assert [(p.name, p.reject_reason) for p in gone] == [("DropPath", "reprobe: returns_input")]
        rows = wh.rejections(stage="reprobe")
        assert [(r["stage"], r["subject"], r["reason"]) for r in rows] == [("reprobe", gone[0].key, "returns_input")]
        assert rows[0]["run_id"]  # which run rejected it
    assert invoke("--name", "Drop*")["checked"] == 0  # rejected problems are not probed again


def test_only_refusals_about_the_problem_retire_it():
    results = [Reprobed("a", "A", True), Reprobed("b", "B", False, "timeout", "over 60 s"),
               Reprobed("c", "C", False, "crashed", "worker died"), Reprobed("d", "D", False, "input_independent", "same")]
    assert [r.retire for r in results] == [False, False, False, True]
    summary = reprobe_summary(results)
    assert summary["retired"] == {"input_independent": 1}
    assert summary["failed_not_retired"] == {"timeout": 1, "crashed": 1}
