"""End to end on the CPU: `autotriton eval` against a local OpenAI-compatible server (correct kernels,
PyTorch-fallback cheats and garbage, metrics checked exactly) and against a tiny local model given as
a warehouse checkpoint key; every sample lands in the warehouse; compare and report verbs; the
library's evaluate() with a warm JudgePool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotriton.flows.cli import app
from autotriton.records import Checkpoint
from autotriton.training.models import make_tiny_model
from autotriton.warehouse import Warehouse

from evaluation_helpers import (
    AFFINE_CHEAT, AFFINE_CORRECT, GARBAGE, RELU_CHEAT, RELU_CORRECT, ChatServer, completion, write_suite,
)

MODEL = "test-kernel-model"
JUDGE = ["--set", "validation.device=cpu", "--set", "validation.trials=2", "--set", "validation.workers=2"]
# A second correct affine kernel (other block size): a distinct candidate with the same verdict.
AFFINE_CORRECT_32 = AFFINE_CORRECT.replace("triton.cdiv(n, 64),)](x, out, n, BLOCK=64)", "triton.cdiv(n, 32),)](x, out, n, BLOCK=32)")


def one_json(result) -> dict:
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"--json must print exactly one JSON line on stdout, got {result.stdout!r}"
    return json.loads(lines[0])


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path / "tiny.jsonl")
    return tmp_path


def _script():
    return {
        # relu: correct, PyTorch fallback (breaks the rules; the judge's dispatch guard makes its
        # PyTorch compute fail, so it does not match the reference either), garbage -> c = 1
        "Tiny ReLU.": [completion(RELU_CORRECT), completion(RELU_CHEAT), GARBAGE],
        # affine: two correct kernels and a fallback -> c = 2
        "Tiny affine map": [completion(AFFINE_CORRECT), completion(AFFINE_CORRECT_32), completion(AFFINE_CHEAT)],
    }


def test_eval_endpoint_end_to_end_metrics_warehouse_report_and_compare(workdir):
    db = workdir / "w.duckdb"
    with ChatServer(_script()) as server:
        args = ["--db", str(db), *JUDGE, "--set", "evaluation.pass_k=[1,2,5]", "eval", "--suite", "tiny.jsonl",
                "--endpoint", server.base_url, "--model", MODEL, "--samples", "3", "--temperature", "0.7",
                "--device", "cpu", "--json"]
        summary = one_json(CliRunner().invoke(app, args))
        assert len(server.requests) == 2

    assert {"problems", "samples", "rule_pass", "compile_rate", "exec_accuracy", "hack_rate", "pass_at_k", "fast_1",
            "fast_2", "geomean_speedup"} <= set(summary)
    assert summary["problems"] == 2 and summary["samples"] == 6
    assert summary["exec_accuracy"] == pytest.approx(3 / 6)
    assert summary["hack_rate"] == 0.0  # the two fallbacks' PyTorch compute failed: no outputs to match
    assert summary["status_counts"]["rule_violation"] == 3  # the two fallbacks and the garbage
    assert summary["rule_pass"] == pytest.approx(3 / 6)
    assert summary["compile_rate"] == pytest.approx(5 / 6)  # all but the garbage
    assert summary["parse_error_rate"] == pytest.approx(1 / 6)
    # pass@1 = mean(1/3, 2/3); pass@2 = mean(1 - C(2,2)/C(3,2), 1); k = 5 > n = 3 is not reported,
    # pass@n (n = 3 samples: any of them solved it) always is
    assert summary["pass_at_k"] == pytest.approx({"1": 0.5, "2": (2 / 3 + 1) / 2, "3": 1.0})
    assert summary["fast_1"] is None and summary["fast_2"] is None and summary["geomean_speedup"] is None
    assert summary["status_counts"] == {"correct": 3, "rule_violation": 3}
    assert summary["by_level"]["tiny/level1"]["exec_accuracy"] == pytest.approx(1 / 3)
    assert summary["by_level"]["tiny/level2"]["exec_accuracy"] == pytest.approx(2 / 3)
    assert summary["generator"] == f"openai:{MODEL}" and summary["suite"] == "tiny/level1+tiny/level2"

    with Warehouse(db, read_only=True) as wh:
        [evaluation] = wh.evaluations()
        assert evaluation.key == summary["evaluation_key"] and len(evaluation.verdict_keys) == 6
        verdicts = {v.key: v for v in wh.verdicts(keys=evaluation.verdict_keys)}
        assert set(verdicts) == set(evaluation.verdict_keys)
        assert sorted(v.status for v in (verdicts[k] for k in evaluation.verdict_keys)) == ["correct"] * 3 + ["rule_violation"] * 3
        cands = wh.candidates(keys=[v.candidate_key for v in verdicts.values()])
        assert len(cands) == 6 and {c.generator for c in cands} == {f"openai:{MODEL}"}
        garbage = [c for c in cands if c.parse_error]
        assert len(garbage) == 1 and garbage[0].raw_output == GARBAGE
        assert len(wh.problems(suite="tiny/level1")) == 1 and len(wh.problems(suite="tiny/level2")) == 1
        samples = wh.sql("SELECT verdict_key FROM evaluation_samples WHERE evaluation_key = ? ORDER BY position",
                         [evaluation.key]).rows
        assert [r[0] for r in samples] == evaluation.verdict_keys
        run = wh.runs(kind="evaluate")[0]
        assert run["run_id"] == summary["run_id"] and run["status"] == "succeeded"
        lineage = wh.sql("SELECT DISTINCT run_id FROM verdicts").rows
        assert lineage == [(summary["run_id"],)]

    report = Path(summary["report"])
    text = report.read_text()
    assert "| 2 | 6 | 50.0% | 83.3% | 50.0% | 0.0% | 50.0% | 83.3% | 100.0% | n/a | n/a | n/a | n/a | 50.0% | 50.0% |" in text
    assert "`tiny/level1/1` | 1/3 | 0 |" in text
    for png in ("accuracy_by_level.png", "status_mix.png"):
        assert (report.parent / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (report.parent / "speedups.png").exists()  # no GPU, no speedups
    lines = (report.parent / "samples.jsonl").read_text().splitlines()
    assert len(lines) == 6 and json.loads(lines[1])["violations"]

    # The endpoint's stored candidates, scored again from the warehouse (how a teacher's upper bound is taken).
    second = one_json(CliRunner().invoke(app, ["--db", str(db), *JUDGE, "--set", "evaluation.pick_problems=first", "eval",
                                               "--suite", "tiny.jsonl", "--stored", f"openai:{MODEL}", "--samples", "3",
                                               "--max-problems", "1", "--json"]))
    assert second["generator"] == f"stored:openai:{MODEL}" and second["samples"] == 3 and second["problems"] == 1
    assert second["exec_accuracy"] == pytest.approx(1 / 3) and second["rule_pass"] == pytest.approx(1 / 3)
    nothing = CliRunner().invoke(app, ["--db", str(db), "eval", "--suite", "tiny.jsonl", "--stored", "inductor"])
    assert nothing.exit_code == 2 and "no candidates of a generator starting with 'inductor'" in nothing.output

    # The two side by side, named by key prefix and by run id.
    out_md = workdir / "compare.md"
    compared = one_json(CliRunner().invoke(app, ["--db", str(db), "eval", "compare", summary["evaluation_key"][:8],
                                                 second["run_id"], "--out", str(out_md), "--json"]))
    assert [e["key"] for e in compared["evaluations"]] == [summary["evaluation_key"], second["evaluation_key"]]
    assert compared["evaluations"][0]["metrics"]["exec_accuracy"] == pytest.approx(0.5)
    md = out_md.read_text()
    assert summary["evaluation_key"] in md and second["evaluation_key"] in md and "## tiny/level1" in md
    table = CliRunner().invoke(app, ["--db", str(db), "eval", "compare", summary["evaluation_key"], second["evaluation_key"]])
    assert table.exit_code == 0 and "50.0%" in table.stdout and "33.3%" in table.stdout
    missing = CliRunner().invoke(app, ["--db", str(db), "eval", "compare", "nosuchkey"])
    assert missing.exit_code == 2 and "nosuchkey: no evaluation" in missing.output

    rewritten = one_json(CliRunner().invoke(app, ["--db", str(db), "eval", "report", summary["evaluation_key"],
                                                  "--out", str(workdir / "again"), "--json"]))
    assert "| 2 | 6 | 50.0% |" in Path(rewritten["report"]).read_text()


def test_eval_tiny_local_model_from_a_checkpoint_key(workdir):
    tiny = make_tiny_model(workdir / "tiny-model")
    db = workdir / "w.duckdb"
    ckpt = Checkpoint(base_model="tiny", export_key="none", trainer="sft", trainer_config={}, metrics={}, path=str(tiny))
    with Warehouse(db) as wh:
        run = wh.start_run("sft", {})
        wh.put_checkpoints(run, [ckpt])
        wh.finish_run(run, "succeeded", {})
    args = ["--db", str(db), *JUDGE, "eval", "--suite", "tiny.jsonl", "--model", ckpt.key, "--samples", "2",
            "--temperature", "0.9", "--max-new-tokens", "8", "--device", "cpu", "--json"]
    summary = one_json(CliRunner().invoke(app, args))
    # An untrained model writes no usable code: everything fails, nothing crashes, all of it is stored.
    assert summary["generator"] == f"model:checkpoint-{ckpt.key}" and summary["samples"] == 4
    assert summary["exec_accuracy"] == 0.0 and summary["parse_error_rate"] == 1.0 and summary["pass_at_k"] == {"1": 0.0, "2": 0.0}
    with Warehouse(db, read_only=True) as wh:
        [evaluation] = wh.evaluations()
        assert len(evaluation.verdict_keys) == 4 and evaluation.config["samples"] == 2
        assert len(wh.verdicts(keys=evaluation.verdict_keys)) == len(set(evaluation.verdict_keys))


def test_eval_cli_errors_name_the_input(workdir):
    db = str(workdir / "w.duckdb")
    missing = CliRunner().invoke(app, ["--db", db, "eval", "--suite", "nope.jsonl", "--model", "x"])
    assert missing.exit_code == 2 and "nope.jsonl: suite not found" in missing.output
    no_model = CliRunner().invoke(app, ["--db", db, "eval", "--suite", "tiny.jsonl", "--endpoint", "http://127.0.0.1:9/v1"])
    assert no_model.exit_code == 2 and "--endpoint needs --model" in no_model.output
    empty = CliRunner().invoke(app, ["--db", db, "eval", "--suite", "tiny.jsonl", "--level", "7", "--model", "x"])
    assert empty.exit_code == 2 and "no problem matches the filters" in empty.output


def test_evaluate_library_with_a_warm_judge_pool(workdir):
    from autotriton.evaluation import EvaluationConfig, RecordedGenerator, evaluate, load_suite
    from autotriton.records import Candidate
    from autotriton.validation import JudgePool, ValidationConfig

    problems = load_suite(workdir / "tiny.jsonl")
    recorded = RecordedGenerator([Candidate(problem_key=problems[0].key, code=RELU_CORRECT),
                                  Candidate(problem_key=problems[1].key, code=AFFINE_CHEAT)], name="fixture")
    vcfg = ValidationConfig(device="cpu", trials=2, workers=1, time_kernels=False)
    with JudgePool(vcfg) as pool:
        result = evaluate(problems, recorded, EvaluationConfig(samples=1), vcfg, judge=pool)
    assert [v.status for v in result.all_verdicts] == ["correct", "rule_violation"]
    assert result.metrics["exec_accuracy"] == 0.5 and result.metrics["rule_pass"] == 0.5
    assert result.evaluation.verdict_keys == [v.key for v in result.all_verdicts]
    assert result.evaluation.config["problem_count"] == 2 and result.evaluation.generator == "fixture"
