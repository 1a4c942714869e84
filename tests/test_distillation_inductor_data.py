"""The demo's problem suites (examples/demo/) and the Inductor teacher's shipped replay data.

The demo harvests problems.jsonl, distills it with the replay teacher (serving
distillation/data/replay/inductor.jsonl), validates on the CPU, trains, and evaluates on
eval_problems.jsonl: so the suites must be well formed, disjoint and runnable, and every shipped
replay line must answer a demo training problem and still pass the CPU judge.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from autotriton.hashing import source_key

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo"
REPLAY = ROOT / "distillation" / "data" / "replay" / "inductor.jsonl"
SUITE_FIELDS = {"id", "level", "problem_id", "name", "source", "origin", "license"}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("suite,split", [("problems.jsonl", "train"), ("eval_problems.jsonl", "eval")])
def test_demo_suites_are_well_formed_and_runnable(suite, split):
    problems = rows(DEMO / suite)
    assert len(problems) >= 8
    assert len({p["id"] for p in problems}) == len(problems)
    for p in problems:
        assert set(p) == SUITE_FIELDS
        assert p["id"] == f"demo/{split}/{p['name']}"
        assert p["origin"] == "autotriton examples" and p["license"] == "Apache-2.0"
        ns: dict = {}
        exec(compile(p["source"], p["id"], "exec"), ns)
        torch.manual_seed(0)
        model = ns["Model"](*ns["get_init_inputs"]())
        inputs = ns["get_inputs"]()
        with torch.no_grad():
            out = model(*inputs)
        # small enough for the interpreter: no input over 64K elements
        assert all(t.numel() <= 65536 for t in inputs if isinstance(t, torch.Tensor)), p["id"]
        assert torch.isfinite(out).all(), p["id"]


def test_training_and_evaluation_suites_share_no_problem():
    train = {source_key(p["source"]) for p in rows(DEMO / "problems.jsonl")}
    evaluation = {source_key(p["source"]) for p in rows(DEMO / "eval_problems.jsonl")}
    assert not train & evaluation
    assert not {p["name"] for p in rows(DEMO / "problems.jsonl")} & {p["name"] for p in rows(DEMO / "eval_problems.jsonl")}


def test_make_suites_writes_exactly_the_shipped_files(tmp_path):
    spec = importlib.util.spec_from_file_location("make_suites", DEMO / "make_suites.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    make.write_suite(tmp_path / "problems.jsonl", "train", make.TRAIN)
    make.write_suite(tmp_path / "eval_problems.jsonl", "eval", make.EVAL)
    assert (tmp_path / "problems.jsonl").read_text() == (DEMO / "problems.jsonl").read_text()
    assert (tmp_path / "eval_problems.jsonl").read_text() == (DEMO / "eval_problems.jsonl").read_text()


def test_replay_lines_follow_the_format_and_answer_demo_training_problems():
    from autotriton.distillation.cache import REPLAY_FIELDS

    train = {source_key(p["source"]): p["name"] for p in rows(DEMO / "problems.jsonl")}
    records = rows(REPLAY)
    assert len(records) >= 12
    for r in records:
        assert set(r) == set(REPLAY_FIELDS)
        assert r["problem_key"] in train and train[r["problem_key"]] == r["problem_name"]
        assert r["teacher"] == "inductor" and r["teacher_version"].startswith("torch-")
        assert "class ModelNew" in r["code"]
        for banned in ("extern_kernels", "torch._inductor", "triton_helpers", "async_compile"):
            assert banned not in r["code"]
    assert len({r["problem_key"] for r in records}) == len(records)


def test_replay_candidates_still_pass_the_cpu_judge():
    from autotriton.validation import ValidationConfig, validate_many

    train = {source_key(p["source"]): p["source"] for p in rows(DEMO / "problems.jsonl")}
    records = rows(REPLAY)
    verdicts = validate_many([(train[r["problem_key"]], r["code"]) for r in records],
                             ValidationConfig(device="cpu", trials=2, workers=2, timeout_s=300))
    failed = [(r["problem_name"], v.status, v.error) for r, v in zip(records, verdicts) if not (v.correct and v.rule_ok)]
    assert not failed
