"""Reports: markdown tables with the numbers, PNG plots (speedups only with GPU timings), comparisons."""

from __future__ import annotations

import json

from autotriton.evaluation import EvaluationResult, compare_markdown, compute_metrics, write_report
from autotriton.records import Candidate, Evaluation, Problem, Verdict

PNG = b"\x89PNG\r\n\x1a\n"


def _result(device: str) -> EvaluationResult:
    problems, cands, verdicts = [], [], []
    plan = {
        "kb/level1": [("correct", True, True, 1.5), ("incorrect", False, True, None)],
        "kb/level2": [("correct", True, True, 3.0), ("rule_violation", True, False, 9.0)],
    }
    for suite, samples in plan.items():
        p = Problem(reference_source=f"# {suite}\nclass Model: pass\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n",
                    name=suite.replace("/", "_"), suite=suite, suite_id=f"{suite}/1")
        cs, vs = [], []
        for i, (status, correct, rule_ok, speed) in enumerate(samples):
            c = Candidate(problem_key=p.key, code=f"class ModelNew: pass  # {i}\n")
            cs.append(c)
            vs.append(Verdict(candidate_key=c.key, problem_key=p.key, status=status, correct=correct, rule_ok=rule_ok,
                              compiled=True, speedup=speed if device != "cpu" else None, device=device,
                              violations=[] if rule_ok else []))
        problems.append(p)
        cands.append(cs)
        verdicts.append(vs)
    metrics = compute_metrics(problems, cands, verdicts, ks=(1, 2))
    ev = Evaluation(suite="kb/level1+kb/level2", generator="openai:m", config={"samples": 2}, metrics=metrics,
                    verdict_keys=[v.key for vs in verdicts for v in vs])
    return EvaluationResult(problems, cands, verdicts, metrics, ev, {"generate_s": 1.0, "judge_s": 2.0})


def test_gpu_report_has_tables_numbers_and_all_plots(tmp_path):
    result = _result("NVIDIA H200")
    report = write_report(result, tmp_path / "r")
    text = report.read_text()
    # overall: 2 problems, 4 samples, rule pass 3/4, compile 4/4, exec 2/4, hack 1/4, pass@1 .5, pass@2 1,
    # fast_1 2/2 (1.5x and 3x), fast_2 1/2, geomean sqrt(1.5 * 3)
    assert "| 2 | 4 | 75.0% | 100.0% | 50.0% | 25.0% | 50.0% | 100.0% | 100.0% | 50.0% | 2.12 |" in text
    assert "| kb/level2 | 1 | 2 | 50.0% | 100.0% | 50.0% | 50.0% |" in text
    assert "![Speedup distribution](speedups.png)" in text
    for name in ("accuracy_by_level.png", "status_mix.png", "speedups.png"):
        assert (report.parent / name).read_bytes()[:8] == PNG
    saved = json.loads((report.parent / "metrics.json").read_text())
    assert saved["metrics"]["fast_2"] == 0.5 and saved["evaluation_key"] == result.evaluation.key
    assert len((report.parent / "samples.jsonl").read_text().splitlines()) == 4


def test_cpu_report_marks_speed_metrics_na_and_skips_the_speed_plot(tmp_path):
    report = write_report(_result("cpu"), tmp_path / "r")
    text = report.read_text()
    assert "| 2 | 4 | 75.0% | 100.0% | 50.0% | 25.0% | 50.0% | 100.0% | n/a | n/a | n/a |" in text
    assert "need a GPU judge" in text and not (report.parent / "speedups.png").exists()


def test_report_from_a_stored_evaluation_and_comparison(tmp_path):
    gpu, cpu = _result("NVIDIA H200").evaluation, _result("cpu").evaluation
    report = write_report(gpu, tmp_path / "stored")  # an Evaluation read back from the warehouse
    assert "| 2 | 4 | 75.0% |" in report.read_text() and (report.parent / "speedups.png").exists()
    md = compare_markdown([gpu, cpu], labels=["h200", "cpu"])
    assert "| h200 | openai:m | kb/level1+kb/level2 | 2 | 4 | 75.0% |" in md
    assert "| cpu | openai:m | kb/level1+kb/level2 | 2 | 4 | 75.0% | 100.0% | 50.0% | 25.0% | 50.0% | 100.0% | n/a |" in md
    assert "## kb/level1" in md and "## kb/level2" in md


def test_report_shows_one_example_answer_per_outcome_and_samples_keep_the_completion(tmp_path):
    """What the model can and cannot do, in its own words: the report shows one answer per outcome,
    the correct one first, with why a failed one failed; samples.jsonl keeps every completion."""
    from autotriton.records import Violation

    result = _result("NVIDIA H200")
    violating = result.verdicts[1][1]
    result.verdicts[1][1] = Verdict(candidate_key=violating.candidate_key, problem_key=violating.problem_key,
                                    status="rule_violation", correct=True, rule_ok=False, compiled=True, device="NVIDIA H200",
                                    violations=[Violation("TORCH-COMPUTE", "torch.relu computes in forward", 3)])
    cut = Candidate(problem_key=result.problems[0].key, code="", raw_output="<think>\nplan\n</think>\n```python\nimport triton\n",
                    parse_error="truncated code block (no closing ```)")
    result.candidates[0][1] = cut
    report = write_report(result, tmp_path / "r").read_text()
    examples = report[report.index("## Examples"):]
    order = [line.split(":")[0].removeprefix("### ") for line in examples.splitlines() if line.startswith("### ")]
    assert order[0] == "correct" and set(order) == {"correct", "truncated", "rule_violation"}
    assert "Why: TORCH-COMPUTE: torch.relu computes in forward" in examples
    assert "Why: truncated code block" in examples and "import triton" in examples
    assert "class ModelNew: pass  # 0" in examples
    rows = [json.loads(line) for line in (tmp_path / "r" / "samples.jsonl").read_text().splitlines()]
    assert rows[1]["completion"].startswith("<think>") and rows[0]["completion"].startswith("class ModelNew")
