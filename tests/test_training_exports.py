"""The `sft` and `rl` exports are built from records (no warehouse): held-out benchmark suites and
decontaminated problems are left out, and a problem's stored instruction is what its prompt states."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from autotriton.describe import default_instruction
from autotriton.records import Candidate
from autotriton.training.data import build_sft_rows, problem_split
from autotriton.training.exports import TRAINING_EXPORTS, ExportRecords, rl_export, sft_export, shared_split
from test_training_data import family_problems
from training_helpers import reward1_verdict, validated_pairs


def _config(**overrides):
    base = dict(require_sizes="own_and_odd_sizes", exclude_suites=["kernelbench/*"], val_fraction=0.0,
                dedup_threshold=0.8, minhash_perm=128, seed=0, rl_prompts=0, rl_sft_share=0.3, rl_unsolved_weight=0.5,
                rl_difficulty_floor=0.2, rl_names=[], sft_teachers=[])
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


def _records_with_near_duplicates() -> ExportRecords:
    """Four families of three near-copies (sizes and docstrings differ): two of each family have
    a validated answer, the third none. The SFT and RL universes differ, and clusters span both."""
    problems = family_problems()
    pairs = []
    for p in problems[::3] + problems[1::3]:
        c = Candidate(problem_key=p.key, code=f"# answer to {p.name}", generator="replay")
        pairs.append((p, c, reward1_verdict(p, c)))
    return ExportRecords(pairs, problems=problems, candidates=[c for _, c, _ in pairs], verdicts=[v for _, _, v in pairs])


def test_sft_and_rl_exports_share_one_split_so_no_cluster_is_trained_on_in_either_when_held_out():
    records = _records_with_near_duplicates()
    config = _config(val_fraction=0.3, rl_sft_share=0.9)  # RL takes every SFT problem too: the overlap is checked
    held_out_somewhere = 0
    for seed in range(6):
        config.seed = seed
        split = shared_split(records, config)
        assert len(set(split.cluster.values())) == 4  # near-copies merged, distinct ops kept apart
        sft_rows, _ = sft_export(records, config)
        rl_rows, _ = rl_export(records, config)
        assert {r["problem_key"] for r in sft_rows} & {r["problem_key"] for r in rl_rows}
        side_of_cluster: dict[str, set[str]] = {}
        for row in sft_rows + rl_rows:
            assert row["split"] == split.split[row["problem_key"]]
            assert row["cluster"] == split.cluster[row["problem_key"]]
            side_of_cluster.setdefault(row["cluster"], set()).add(row["split"])
        # A problem, or any member of its near-duplicate cluster, is train in one export and
        # validation in the other: the leak this split exists to prevent.
        straddling = {c: sides for c, sides in side_of_cluster.items() if len(sides) > 1}
        assert not straddling, (seed, straddling)
        held_out_somewhere += any(r["split"] == "validation" for r in sft_rows) and any(
            r["split"] == "validation" for r in rl_rows)
    assert held_out_somewhere  # the check above is not vacuous: both exports hold problems out


def test_a_problem_outside_the_given_split_is_refused_with_the_fix():
    pairs = validated_pairs(1)
    split = problem_split([p for p, _, _ in pairs[1:]])
    with pytest.raises(ValueError, match="problem_split over every problem"):
        build_sft_rows(pairs, split=split)


def test_rl_names_draw_the_prompts_from_one_family_and_keep_the_split_of_the_whole():
    records = _records_with_near_duplicates()
    config = _config(val_fraction=0.3, rl_sft_share=0.5, seed=1)
    names = {p.key: p.name for p in records.problems}
    everything, _ = rl_export(records, config)
    assert len({names[r["problem_key"]].split("_")[0] for r in everything}) == 4
    config.rl_names = ["softmax_*", "matmul_*"]
    rows, filter_ = rl_export(records, config)
    assert rows and {names[r["problem_key"]].split("_")[0] for r in rows} <= {"softmax", "matmul"}
    assert filter_["rl_names"] == ["softmax_*", "matmul_*"]
    whole = {r["problem_key"]: r["split"] for r in everything}
    assert all(whole.get(r["problem_key"], r["split"]) == r["split"] for r in rows)
    split = shared_split(records, config)
    assert all(split.split[r["problem_key"]] == r["split"] for r in rows)
    config.rl_names = ["nothing_*"]
    assert rl_export(records, config)[0] == []


def test_sft_teachers_keep_one_teachers_style_per_problem():
    """A problem solved by the elementwise teacher and by Inductor is taught in the preferred
    teacher's kernel only; a problem only Inductor solved keeps Inductor's pair."""
    (both, c0, _), (only_inductor, c1, _), *_ = validated_pairs(1)
    def pair(problem, generator, code):
        cand = Candidate(problem_key=problem.key, code=code, generator=generator)
        return problem, cand, reward1_verdict(problem, cand)
    pairs = [pair(both, "inductor", c0.code), pair(both, "elementwise", c0.code + "\nREADABLE = True\n"),
             pair(only_inductor, "inductor", c1.code)]
    records = ExportRecords(pairs, problems=[both, only_inductor], candidates=[c for _, c, _ in pairs],
                            verdicts=[v for _, _, v in pairs])
    everything, _ = sft_export(records, _config())
    assert len(everything) == 3
    rows, filter_ = sft_export(records, _config(sft_teachers=["elementwise", "inductor"]))
    kept = {(r["problem_key"], r["candidate_key"]) for r in rows}
    assert kept == {(both.key, pairs[1][1].key), (only_inductor.key, pairs[2][1].key)}
    assert filter_["sft_teachers"] == ["elementwise", "inductor"]
