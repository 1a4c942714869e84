"""Completion caps measured against the shortest validated kernel with the run's tokenizer: a GRPO
run that could not hold one is refused before anything is trained, an evaluation is warned and its
truncated samples are counted as such."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from autotriton.capacity import CapError, check_cap, fenced, require
from autotriton.flows.cli import app
from autotriton.tasks.steps import load_tokenizer
from autotriton.training.models import make_tiny_model
from autotriton.warehouse import Warehouse
from training_helpers import validated_pairs

SETTING = "training.max_completion_length"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_model(tmp_path_factory.mktemp("models") / "tiny")


@pytest.fixture
def warehouse(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "w.duckdb"
    pairs = validated_pairs(1)
    with Warehouse(path) as wh:
        run = wh.start_run("seed", {"test": True})
        wh.put_problems(run, [p for p, _, _ in pairs])
        wh.put_candidates(run, [c for _, c, _ in pairs])
        wh.put_verdicts(run, [v for _, _, v in pairs])
        wh.finish_run(run, "succeeded", {})
    return path


def _lengths(tokenizer) -> dict[str, int]:
    return {p.name: len(tokenizer(fenced(c.code), add_special_tokens=False)["input_ids"]) for p, c, _ in validated_pairs(1)}


def test_check_measures_the_shortest_kernel_with_the_tokenizer(tiny):
    tok = load_tokenizer(str(tiny))
    lengths = _lengths(tok)
    shortest_name = min(lengths, key=lengths.get)
    shortest = lengths[shortest_name]
    count = lambda text: len(tok(text, add_special_tokens=False)["input_ids"])  # noqa: E731
    kernels = [(p.name, c.code) for p, c, _ in validated_pairs(1)]

    short = check_cap(count, kernels, shortest - 1, SETTING, tokenizer="tiny")
    assert not short.holds and short.shortest == shortest and short.shortest_name == shortest_name
    assert short.fitting == 0 and short.measured == len(kernels)
    with pytest.raises(CapError, match=rf"{SETTING} = {shortest - 1} tokens cannot hold a kernel.*\({shortest_name}\) is "
                                       rf"{shortest} tokens.*--set {SETTING}=\d+"):
        require(short)
    exact = require(check_cap(count, kernels, shortest, SETTING))
    assert exact.holds and exact.fitting == sum(n <= shortest for n in lengths.values())
    assert exact.suggestion >= shortest
    assert check_cap(count, [], 8, SETTING).holds  # nothing validated: nothing to hold


def test_grpo_and_train_are_refused_before_training_when_the_cap_cannot_hold_a_kernel(warehouse, tiny, tmp_path):
    for verb in ("grpo", "train"):
        result = CliRunner().invoke(app, ["--db", str(warehouse), verb, "--model", str(tiny), "--output-dir", str(tmp_path / "runs"),
                                          "--set", f"{SETTING}=16", "--json"])
        assert result.exit_code == 2, result.output
        assert f"{SETTING} = 16 tokens cannot hold a kernel" in result.output
        assert result.stdout == ""
    with Warehouse(warehouse, read_only=True) as wh:
        assert wh.exports("rl") == [] and wh.exports("sft") == [] and wh.checkpoints() == []  # nothing started
    assert not (tmp_path / "runs").exists()


def test_eval_warns_when_max_new_tokens_cannot_hold_a_kernel_and_counts_truncation(warehouse, tiny, tmp_path):
    suite = tmp_path / "one.jsonl"
    pair = validated_pairs(1)[0]
    suite.write_text(json.dumps({"id": "custom/level1/1", "source": pair[0].reference_source}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["--db", str(warehouse), "--set", "validation.workers=1", "eval", "--suite", str(suite),
                                      "--model", str(tiny), "--max-new-tokens", "8", "--samples", "2", "--temperature", "0.9",
                                      "--device", "cpu", "--json"])
    assert result.exit_code == 0, result.output
    assert "warning: evaluation.max_new_tokens = 8 tokens cannot hold a kernel" in result.stderr
    summary = json.loads(result.stdout)
    assert summary["completion_cap"]["holds"] is False and summary["completion_cap"]["cap"] == 8
    # A random tiny model never closes a code block in 8 tokens: each sample hit the cap.
    assert summary["truncated_rate"] == 1.0 and summary["outcome_counts"] == {"truncated": 2}
    assert summary["status_counts"] == {"rule_violation": 2}
