"""`autotriton sft / grpo / train` through typer's CliRunner: exports recorded, checkpoints with lineage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotriton.flows.cli import app
from autotriton.records import Problem
from autotriton.training.models import make_tiny_model
from autotriton.warehouse import Warehouse
from training_helpers import elementwise_problem, validated_pairs


@pytest.fixture
def warehouse(tmp_path, monkeypatch):
    """6 validated pairs, 2 unsolved problems and a benchmark problem that must stay out."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "w.duckdb"
    pairs = validated_pairs(1)
    bench = elementwise_problem("bench", "torch.exp(x)")
    bench = Problem(reference_source=bench.reference_source, name="bench", suite="kernelbench/level1")
    unsolved = [elementwise_problem("cumsum", "torch.cumsum(x, 0)"), elementwise_problem("neg", "-x * 3.0")]
    with Warehouse(path) as wh:
        run = wh.start_run("seed", {"test": True})
        wh.put_problems(run, [p for p, _, _ in pairs] + unsolved + [bench])
        wh.put_candidates(run, [c for _, c, _ in pairs])
        wh.put_verdicts(run, [v for _, _, v in pairs])
        wh.finish_run(run, "succeeded", {})
    return path


def one_json(result) -> dict:
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"--json must print exactly one line on stdout, got: {result.stdout!r}"
    return json.loads(lines[0])


def test_sft_verb_exports_trains_and_registers_the_checkpoint(warehouse, tmp_path):
    tiny = make_tiny_model(tmp_path / "tiny")
    args = ["--db", str(warehouse), "--set", "training.device=cpu", "--set", "training.per_device_train_batch_size=2",
            "--set", "training.max_length=1024", "sft", "--model", str(tiny), "--max-steps", "3",
            "--output-dir", str(tmp_path / "runs"), "--json"]
    summary = one_json(CliRunner().invoke(app, args))
    assert summary["steps"] == 3 and Path(summary["curves_png"]).is_file()
    assert Path(summary["checkpoint_path"], "config.json").is_file()
    with Warehouse(warehouse, read_only=True) as wh:
        (export,) = wh.exports("sft")
        assert export.key == summary["export_key"] and export.row_count == 6
        (ck,) = wh.checkpoints(export_key=export.key)
        assert ck.key == summary["checkpoint_key"] and ck.trainer == "sft"
        runs = {r["run_id"]: r for r in wh.runs(kind="sft")}
        assert runs[summary["run_id"]]["status"] == "succeeded"
    # Training on the same recorded export again, by key.
    again = one_json(CliRunner().invoke(app, args[:-1] + ["--export", export.key, "--json"]))
    assert again["export_key"] == export.key


def test_rl_export_keeps_benchmarks_out_and_mixes_unsolved_with_sft(warehouse):
    result = CliRunner().invoke(app, ["--db", str(warehouse), "db", "export", "rl", "--json"])
    summary = one_json(result)
    from autotriton.warehouse.layout import read_export

    rows = read_export(summary["path"]).to_pylist()
    names = {r["name"] for r in rows}
    assert "bench" not in names
    assert {"cumsum", "neg"} <= names
    assert {r["origin"] for r in rows} == {"unsolved", "sft"}


def test_sft_verb_fails_clearly_on_an_empty_warehouse(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["--db", str(tmp_path / "empty.duckdb"), "sft", "--model", "tiny", "--json"])
    assert result.exit_code == 2
    assert "no validated pairs" in result.output and "autotriton distill" in result.output


def test_accelerate_configs_load_and_name_existing_deepspeed_files():
    from accelerate.commands.config.config_args import load_config_from_file

    root = Path(__file__).resolve().parent.parent
    files = sorted((root / "configs" / "accelerate").glob("*.yaml"))
    assert {f.stem for f in files} >= {"multi_gpu", "deepspeed_zero2", "deepspeed_zero3"}
    for f in files:
        cfg = load_config_from_file(str(f))
        assert cfg.num_processes >= 2 and not cfg.use_cpu
        ds = (cfg.deepspeed_config or {}).get("deepspeed_config_file")
        if ds:
            stage = json.loads((root / ds).read_text())["zero_optimization"]["stage"]
            assert f"zero{stage}" in f.stem
