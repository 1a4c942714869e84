"""KernelBench in and out: its folder layout and single problem files as suites, its generated-kernel
run folders judged as they are, its eval_results.json written, and `autotriton suite convert` both
ways (plus TritonBench-T). Fixture: tests/data/kernelbench/ (written here in KernelBench's layout)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotriton.evaluation import load_suite, read_problems, read_run
from autotriton.evaluation.suites import SuiteError, read_suite_jsonl
from autotriton.flows.cli import app

DATA = Path(__file__).parent / "data" / "kernelbench"
KB = DATA / "KernelBench"
RUN = DATA / "runs" / "level1_demo"
TRITONBENCH = Path(__file__).parent / "data" / "evaluation" / "tritonbench_t" / "TritonBench_T_sample.json"
JUDGE = ["--set", "validation.device=cpu", "--set", "validation.trials=2", "--set", "validation.workers=1"]


def one_json(result) -> dict:
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"--json must print exactly one JSON line on stdout, got {result.stdout!r}"
    return json.loads(lines[0])


def test_kernelbench_folder_level_folder_and_single_file_are_suites():
    whole = read_problems(KB)
    assert [e.id for e in whole] == ["kernelbench/level1/1", "kernelbench/level1/19", "kernelbench/level2/1"]
    assert [e.level for e in whole] == [1, 1, 2] and [e.problem_id for e in whole] == [1, 19, 1]
    assert whole[1].name == "19_ReLU" and "torch.relu" in whole[1].source

    level1 = load_suite(KB / "level1")
    assert [p.suite_id for p in level1] == ["kernelbench/level1/1", "kernelbench/level1/19"]
    assert {p.suite for p in level1} == {"kernelbench/level1"}

    # One problem file: KernelBench's, not a TritonBench-T operator file without a test section.
    one = load_suite(KB / "level1" / "19_ReLU.py")
    assert [p.suite_id for p in one] == ["kernelbench/level1/19"]
    assert one[0].key == level1[1].key  # the same problem whichever way it was read
    assert [p.suite_id for p in load_suite(KB, levels=[2])] == ["kernelbench/level2/1"]


def test_kernelbench_folder_errors_name_the_file(tmp_path):
    level = tmp_path / "level1"
    shutil.copytree(KB / "level1", level)
    (level / "helpers.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    with pytest.raises(SuiteError, match=r"helpers\.py: not a KernelBench problem \(no class Model"):
        read_problems(level)
    (level / "helpers.py").unlink()
    shutil.copy(level / "19_ReLU.py", level / "19_ReLU_again.py")
    with pytest.raises(SuiteError, match=r"19_ReLU_again\.py: problem 19 of this level is also .*19_ReLU\.py"):
        read_problems(level)
    with pytest.raises(SuiteError, match="a folder of generated kernels"):
        load_suite(RUN)


def test_run_folder_in_kernelbench_naming(tmp_path):
    kernels = read_run(RUN)
    assert [(k.level, k.problem_id, k.sample_id) for k in kernels] == [(1, 19, 0), (1, 19, 1), (1, 42, 0)]
    assert kernels[0].suite_id == "kernelbench/level1/19"
    with pytest.raises(SuiteError, match=r"no generated kernels named level_<L>_problem_<P>_sample_<S>_kernel\.py"):
        read_run(tmp_path)


def test_eval_judges_a_run_folder_and_writes_kernelbench_results(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "w.duckdb"
    args = ["eval", "--suite", str(KB / "level1"), "--kernels", str(RUN), "--device", "cpu", "--json",
            "--db", str(db), *JUDGE]  # global options after the verb
    summary = one_json(CliRunner().invoke(app, args))
    # Only problem 19 has kernels; two samples (the run's own count), one correct and one wrong.
    assert summary["problems"] == 1 and summary["samples"] == 2
    assert summary["exec_accuracy"] == 0.5
    assert summary["outcome_counts"] == {"correct": 1, "incorrect": 1}
    assert summary["generator"] == "kernelbench-run:level1_demo"
    assert summary["kernels"]["unmatched"] == ["level_1_problem_42_sample_0_kernel.py"]

    [results_path] = summary["kernelbench_results"]
    assert Path(results_path).name == "eval_results.json" and Path(results_path).parent == Path(summary["report"]).parent
    results = json.loads(Path(results_path).read_text())
    assert list(results) == ["19"]
    rows = {row["sample_id"]: row for row in results["19"]}
    assert set(rows) == {0, 1}
    for row in rows.values():  # KernelBench's fields, in its types
        assert set(row) >= {"sample_id", "compiled", "correctness", "metadata", "runtime", "runtime_stats"}
        assert row["runtime"] == -1.0 and row["runtime_stats"] == {}  # not timed on the CPU
    assert rows[0]["correctness"] is True and rows[0]["metadata"]["kernel_file"] == "level_1_problem_19_sample_0_kernel.py"
    assert rows[1]["correctness"] is False and rows[1]["metadata"]["status"] == "incorrect"
    assert rows[1]["metadata"]["outputs_match"] is False

    no_suite = CliRunner().invoke(app, ["--db", str(db), "eval", "--kernels", str(RUN)])
    assert no_suite.exit_code == 2 and "pass --suite with the KernelBench problems" in no_suite.output
    other_level = CliRunner().invoke(app, ["--db", str(db), "eval", "--suite", str(KB / "level2"), "--kernels", str(RUN)])
    assert other_level.exit_code == 2 and "none of its kernels answers a problem" in other_level.output


def test_suite_convert_kernelbench_both_ways_and_tritonbench(tmp_path):
    jsonl = tmp_path / "kb.jsonl"
    first = one_json(CliRunner().invoke(app, ["suite", "convert", str(KB), "--out", str(jsonl), "--json"]))
    assert first["converted"] == 3 and first["format"] == "jsonl"
    entries = read_suite_jsonl(jsonl)
    assert [e.id for e in entries] == ["kernelbench/level1/1", "kernelbench/level1/19", "kernelbench/level2/1"]

    back = tmp_path / "KernelBench"
    second = one_json(CliRunner().invoke(app, ["suite", "convert", str(jsonl), "--out", str(back), "--json"]))
    assert second["format"] == "kernelbench"
    for original in KB.rglob("*.py"):
        copy = back / original.relative_to(KB)
        assert copy.read_text() == original.read_text(), copy
    assert [p.key for p in load_suite(back)] == [p.key for p in load_suite(KB)]

    again = CliRunner().invoke(app, ["suite", "convert", str(jsonl), "--out", str(back)])
    assert again.exit_code == 2 and "already holds files" in again.output

    tb = one_json(CliRunner().invoke(app, ["suite", "convert", str(TRITONBENCH), "--out", str(tmp_path / "tb.jsonl"), "--json"]))
    assert tb["converted"] >= 1 and all(e.id.startswith("tritonbench-t/") for e in read_suite_jsonl(tmp_path / "tb.jsonl"))
    tb_folder = one_json(CliRunner().invoke(app, ["suite", "convert", str(tmp_path / "tb.jsonl"), "--out",
                                                  str(tmp_path / "tb_kb"), "--json"]))
    assert len(tb_folder["files"]) == tb["converted"]
