"""Scoring candidates with verdicts an earlier judge run recorded (e.g. on a GPU machine):
`autotriton eval --recorded R --verdicts V` serves each sample the verdict recorded for exactly
its code and problem, counts samples never judged as failures, and stores it all in the warehouse."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from autotriton.flows.cli import app
from autotriton.hashing import source_key
from autotriton.records import Verdict, Violation, candidate_key
from autotriton.warehouse import Warehouse

from evaluation_helpers import AFFINE_CORRECT, AFFINE_PROBLEM, RELU_CORRECT, RELU_PROBLEM, write_suite
from test_evaluation_e2e import AFFINE_CORRECT_32, one_json

GPU = "NVIDIA H200"


def recorded_verdict(problem: str, code: str, **fields) -> Verdict:
    pkey = source_key(problem)
    return Verdict(candidate_key=candidate_key(code, pkey), problem_key=pkey, device=GPU,
                   judge_config_hash="h200-judge", **fields)


def replay_line(problem: str, code: str) -> str:
    return json.dumps({"problem_key": source_key(problem), "problem_name": "p", "teacher": "inductor",
                       "teacher_version": "torch-2.11", "prompt_version": "", "code": code, "reasoning": "",
                       "instruction": "", "usage": {}, "created": "2026-11-30T00:00:00Z"}) + "\n"


def test_verdict_round_trips_through_its_dict():
    v = recorded_verdict(RELU_PROBLEM, RELU_CORRECT, status="rule_violation",
                         violations=[Violation("TRITON-NO-LAUNCH", "no kernel ran", 3)], speedup=1.5)
    again = Verdict.from_dict(json.loads(json.dumps(v.to_dict())))
    assert again == v and again.key == v.key and isinstance(again.violations[0], Violation)


def test_eval_scores_recorded_verdicts_without_judging(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path / "tiny.jsonl")
    # The recorded run judged relu's candidate (correct, 1.8x on the GPU) and a different affine
    # kernel than the one replayed now: that verdict must not be reused for other code.
    relu = recorded_verdict(RELU_PROBLEM, RELU_CORRECT, status="correct", correct=True, rule_ok=True, compiled=True,
                            speedup=1.8, timing={"speedup": 1.8})
    other_affine = recorded_verdict(AFFINE_PROBLEM, AFFINE_CORRECT_32, status="correct",
                                    correct=True, rule_ok=True, compiled=True, speedup=3.0)
    lines = [json.dumps({"id": "tiny/level1/1", "status": "correct", "record": relu.to_dict()}),  # benchmark format
             json.dumps(other_affine.to_dict()),  # a bare Verdict dict
             json.dumps({"id": "tiny/level2/1", "status": "not_judged"})]  # placeholder: skipped
    (tmp_path / "verdicts.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "replay.jsonl").write_text(replay_line(RELU_PROBLEM, RELU_CORRECT) + replay_line(AFFINE_PROBLEM, AFFINE_CORRECT))

    db = tmp_path / "w.duckdb"
    summary = one_json(CliRunner().invoke(app, ["--db", str(db), "eval", "--suite", "tiny.jsonl", "--recorded", "replay.jsonl",
                                                "--verdicts", "verdicts.jsonl", "--samples", "1", "--json"]))
    assert summary["problems"] == 2 and summary["samples"] == 2
    assert summary["status_counts"] == {"correct": 1, "timeout": 1}
    assert summary["exec_accuracy"] == 0.5 and summary["pass_at_k"] == {"1": 0.5}
    assert summary["fast_1"] == 0.5 and summary["geomean_speedup"] == 1.8  # GPU figures come with the verdicts
    assert summary["recorded_verdicts"]["served"] == 1 and summary["recorded_verdicts"]["never_judged"] == 1
    assert summary["recorded_verdicts"]["device"] == GPU
    with Warehouse(str(db), read_only=True) as wh:
        stored = {v.problem_key: v for v in wh.verdicts()}
        record = wh.evaluations()[0]
    assert stored[relu.problem_key].key == relu.key and stored[relu.problem_key].device == GPU
    assert "never judged" in stored[source_key(AFFINE_PROBLEM)].error
    assert record.config["judge_device"] == GPU and set(record.verdict_keys) == {v.key for v in stored.values()}


def test_recorded_judge_judges_unrecorded_code_statically(tmp_path):
    from autotriton.evaluation import RecordedJudge

    judge = RecordedJudge([recorded_verdict(RELU_PROBLEM, RELU_CORRECT, status="correct", correct=True, rule_ok=True)])
    empty, unknown = judge.validate_many([(RELU_PROBLEM, ""), (AFFINE_PROBLEM, AFFINE_CORRECT)])
    assert empty.status == "rule_violation" and empty.violations and not empty.rule_ok
    assert unknown.status == "timeout" and not unknown.correct and "never judged" in unknown.error
    assert (judge.served, judge.static_only, judge.missing) == (0, 1, 1)


def test_eval_verdicts_errors_name_the_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_suite(tmp_path / "tiny.jsonl")
    (tmp_path / "replay.jsonl").write_text(replay_line(RELU_PROBLEM, RELU_CORRECT))
    (tmp_path / "bad.jsonl").write_text('{"record": {"candidate_key": "x", "nonsense": 1}}\n')
    db = str(tmp_path / "w.duckdb")
    alone = CliRunner().invoke(app, ["--db", db, "eval", "--suite", "tiny.jsonl", "--model", "m", "--verdicts", "bad.jsonl"])
    assert alone.exit_code == 2 and "--recorded FILE or --stored" in alone.output
    bad = CliRunner().invoke(app, ["--db", db, "eval", "--suite", "tiny.jsonl", "--recorded", "replay.jsonl", "--verdicts", "bad.jsonl"])
    assert bad.exit_code == 2 and "bad.jsonl:1: not a verdict record" in bad.output
    missing = CliRunner().invoke(app, ["--db", db, "eval", "--suite", "tiny.jsonl", "--recorded", "replay.jsonl", "--verdicts", "nope.jsonl"])
    assert missing.exit_code == 2 and "nope.jsonl: file not found" in missing.output
