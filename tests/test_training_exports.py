"""The `sft` and `rl` exports are built from records (no warehouse): held-out benchmark suites and
decontaminated problems are left out, and a problem's stored instruction is what its prompt states."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from autotriton.describe import default_instruction
from autotriton.records import Candidate
from autotriton.training.exports import TRAINING_EXPORTS, ExportRecords, rl_export, sft_export
from training_helpers import validated_pairs


def _config(**overrides):
    base = dict(require_sizes="own_and_odd_sizes", exclude_suites=["kernelbench/*"], val_fraction=0.0,
                dedup_threshold=0.8, minhash_perm=128, seed=0, rl_prompts=0, rl_sft_share=0.3, rl_unsolved_weight=0.5,
                rl_difficulty_floor=0.2)
    return SimpleNamespace(**{**base, **overrides})


def test_exports_from_records_leave_benchmarks_and_excluded_problems_out():
    pairs = validated_pairs(1)
    (bench, c0, v0), (dropped, _, _), *kept = pairs
    bench = dataclasses.replace(bench, suite="kernelbench/level1")
    pairs = [(bench, c0, v0), *pairs[1:]]
    records = ExportRecords(pairs, problems=[p for p, _, _ in pairs], candidates=[c for _, c, _ in pairs],
                            verdicts=[v for _, _, v in pairs])
    rows, filter_ = sft_export(records, _config(), exclude_keys={dropped.key})
    assert {r["problem_key"] for r in rows} == {p.key for p, _, _ in kept}
    assert filter_["exclude_suites"] == ["kernelbench/*"]
    rl_rows, _ = rl_export(records, _config(), exclude_keys={dropped.key})
    assert {r["problem_key"] for r in rl_rows} <= {p.key for p, _, _ in kept} and rl_rows
    assert TRAINING_EXPORTS["rl"].pass_rates and not TRAINING_EXPORTS["sft"].pass_rates


def test_a_prompt_states_the_problems_stored_instruction_and_computes_it_only_when_missing():
    (p, c, v), *_ = validated_pairs(1)
    c = Candidate(problem_key=p.key, code=c.code)  # no teacher words: the problem's instruction is used
    v = dataclasses.replace(v, candidate_key=c.key)
    stored = dataclasses.replace(p, instruction="Write the kernel (stored instruction).")
    [row] = sft_export(ExportRecords([(stored, c, v)]), _config())[0]
    assert row["prompt"][1]["content"].startswith("Write the kernel (stored instruction).")
    [row] = sft_export(ExportRecords([(p, c, v)]), _config())[0]  # built by hand, none stored
    assert row["prompt"][1]["content"].startswith(default_instruction(p).strip())
