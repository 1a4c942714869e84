"""Training rows: SFT/RL row format, split by problem and near-duplicate cluster, diversity sampling."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from autotriton.prompting import SYSTEM_PROMPT, parse_completion
from autotriton.records import Candidate, Problem, Verdict
from autotriton.training.data import (
    default_instruction,
    PassStats, SampleItem, assign_splits, build_rl_rows, build_sft_rows, difficulty_weight, diversity_sample,
    infer_op_tags, near_duplicate_clusters, pass_stats,
)
from training_helpers import ELEMENTWISE_OPS, ELEMENTWISE_REFERENCE, elementwise_problem, validated_pairs


def test_sft_rows_are_conversational_prompt_completion_with_the_shared_prompt():
    rows = build_sft_rows(validated_pairs(1), val_fraction=0.0)
    assert len(rows) == len(ELEMENTWISE_OPS)
    row = rows[0]
    assert [m["role"] for m in row["prompt"]] == ["system", "user"]
    assert row["prompt"][0]["content"] == SYSTEM_PROMPT
    assert [m["role"] for m in row["completion"]] == ["assistant"]
    parsed = parse_completion(row["completion"][0]["content"])
    assert parsed.error is None and "class ModelNew" in parsed.code and parsed.reasoning
    assert {r["split"] for r in rows} == {"train"}


def test_sft_prompt_states_the_problems_instruction_as_evaluation_does():
    """A teacher's own wording of the task (traced: "... and returns [16, 1] float32") is kept with
    its candidate, but the SFT prompt states the problem's instruction: the prompt RL rows and
    evaluation give the trained model."""
    import dataclasses

    pairs = [(p, dataclasses.replace(c, instruction="The teacher's wording, never shown at evaluation."), v)
             for p, c, v in validated_pairs(1)]
    sft = build_sft_rows(pairs, val_fraction=0.0)
    rl = {r["problem_key"]: r["prompt"] for r in build_rl_rows([], pairs, {}, sft_share=1.0, val_fraction=0.0)}
    assert sft and all("teacher's wording" not in m["content"] for r in sft for m in r["prompt"])
    assert all(r["prompt"] == rl[r["problem_key"]] for r in sft if r["problem_key"] in rl) and set(rl)


def test_sft_refuses_pairs_that_are_not_reward_one():
    (p, c, v), *_ = validated_pairs(1)
    hack = Verdict(candidate_key=c.key, problem_key=p.key, status="rule_violation", correct=True, rule_ok=False)
    with pytest.raises(ValueError, match="rule_violation"):
        build_sft_rows([(p, c, hack)])


FAMILIES = {
    "matmul": """import torch
import torch.nn as nn


class Model(nn.Module):
    \"\"\"{doc}\"\"\"

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = {n}
K = 64
N = 32


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
""",
    "conv": """import torch
import torch.nn as nn


class Model(nn.Module):
    \"\"\"{doc}\"\"\"

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs():
    return [torch.randn(2, 3, {n}, {n})]


def get_init_inputs():
    return [3, 8, 3]
""",
    "softmax": """import torch
import torch.nn as nn


class Model(nn.Module):
    \"\"\"{doc}\"\"\"

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, logits: torch.Tensor) -> torch.Tensor:
        shifted = logits - logits.max(dim=self.dim, keepdim=True).values
        return torch.softmax(shifted, dim=self.dim)


batch = {n}


def get_inputs():
    return [torch.randn(batch, 128)]


def get_init_inputs():
    return [1]
""",
    "elementwise": ELEMENTWISE_REFERENCE,
}


def family_problems() -> list[Problem]:
    out = []
    for family, template in FAMILIES.items():
        for i, n in enumerate((16, 24, 40)):
            if family == "elementwise":
                src = template.format(doc=f"variant {i}", expr="torch.relu(x)", n=n)
            else:
                src = template.format(doc=f"{family} variant {i}", n=n)
            out.append(Problem(reference_source=src, name=f"{family}_{i}"))
    return out


def test_near_duplicates_share_a_cluster_and_never_straddle_the_split():
    # Same module with different sizes and docstrings: near-duplicates; different modules: distinct.
    problems = family_problems()
    clusters = near_duplicate_clusters({p.key: p.reference_source for p in problems}, threshold=0.7)
    by_family: dict[str, set[str]] = {}
    for p in problems:
        by_family.setdefault(p.name.split("_")[0], set()).add(clusters[p.key])
    assert all(len(c) == 1 for c in by_family.values()), by_family  # each family's variants: one cluster
    assert len({next(iter(c)) for c in by_family.values()}) == 4  # families stay apart
    for seed in range(5):
        splits = assign_splits(clusters, val_fraction=0.25, seed=seed)
        assert Counter(splits.values()) == {"train": 9, "validation": 3}
        for members in by_family.values():
            keys = [p.key for p in problems if clusters[p.key] in members]
            assert len({splits[k] for k in keys}) == 1


def test_sft_split_is_by_problem_even_with_several_answers_per_problem():
    pairs = validated_pairs(1)
    extra = []
    for p, c, v in pairs:  # a second, different correct answer for every problem
        c2 = Candidate(problem_key=p.key, code=c.code.replace("BLOCK=256", "BLOCK=128"), reasoning="smaller blocks",
                       generator="replay")
        extra.append((p, c2, Verdict(candidate_key=c2.key, problem_key=p.key, status="correct", correct=True,
                                     rule_ok=True)))
    rows = build_sft_rows(pairs + extra, val_fraction=0.3, seed=1)
    per_problem = Counter((r["problem_key"], r["split"]) for r in rows)
    assert all(n == 2 for n in per_problem.values())  # both answers of a problem on one side
    assert {r["split"] for r in rows} == {"train", "validation"}


def test_infer_op_tags_reads_calls_and_operators_not_input_builders():
    src = '''import torch
import torch.nn as nn
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
    def forward(self, a, b):
        return torch.softmax(self.conv(a), dim=1).sum() + (a @ b).mean()
def get_inputs():
    return [torch.randn(1, 3, 8, 8).abs()]
'''
    assert infer_op_tags(src) == ["conv", "elementwise", "matmul", "reduction", "softmax"]
    assert infer_op_tags("def broken(:") == []


def test_diversity_sampler_balances_categories_and_spreads_over_clusters():
    items = []
    # "elementwise" is abundant (40 items in 4 clusters), the rest are rare.
    for i in range(40):
        items.append(SampleItem(f"e{i:02d}", "elementwise", f"ec{i % 4}", 1.0))
    for cat in ("matmul", "conv", "softmax"):
        for i in range(5):
            items.append(SampleItem(f"{cat}{i}", cat, f"{cat}-c{i}", 1.0))
    picked = diversity_sample(items, 16, seed=0)
    counts = Counter(it.category for it in picked)
    assert len(picked) == 16 and len({it.key for it in picked}) == 16
    assert max(counts.values()) - min(counts.values()) <= 1, counts  # uniform would give ~11 elementwise
    elementwise_clusters = Counter(it.cluster for it in picked if it.category == "elementwise")
    assert len(elementwise_clusters) == 4  # 4 picks: one from each cluster, not 4 from one


def test_diversity_sampler_orders_by_difficulty_weight():
    items = [SampleItem(f"k{i}", "x", f"c{i}", 100.0 if i < 3 else 0.01) for i in range(20)]
    firsts = Counter()
    for seed in range(20):
        firsts.update(it.key for it in diversity_sample(items, 3, seed=seed))
    assert sum(firsts[f"k{i}"] for i in range(3)) >= 50  # heavy items go first in most draws


def test_pass_stats_and_difficulty_weights():
    p = elementwise_problem("relu", "torch.relu(x)")
    cands = [Candidate(problem_key=p.key, code=f"class ModelNew:\n    v = {i}", generator=g)
             for i, g in enumerate(["replay", "replay", "model:tiny", "model:tiny"])]
    verdicts = [Verdict(candidate_key=c.key, problem_key=p.key, status=s, correct=ok, rule_ok=ok)
                for c, (s, ok) in zip(cands, [("correct", True), ("incorrect", False), ("incorrect", False),
                                              ("incorrect", False)])]
    stats = pass_stats(cands, verdicts)[p.key]
    assert (stats.teacher_attempts, stats.teacher_passes, stats.model_attempts, stats.model_passes) == (2, 1, 2, 0)
    assert stats.pass_rate == 0.25 and stats.teacher_solved
    assert difficulty_weight(PassStats(2, 1, 0, 0)) == pytest.approx(1.0)  # p = 0.5: the most signal
    assert difficulty_weight(PassStats(4, 4, 0, 0)) == pytest.approx(0.2)  # always solved: the floor
    assert difficulty_weight(PassStats(4, 0, 4, 0), unsolved_weight=0.5) == 0.5
    assert difficulty_weight(None) == 1.0


def test_rl_rows_mix_unsolved_problems_with_a_share_of_sft_problems():
    pairs = validated_pairs(1)  # 6 solved problems (the SFT distribution)
    unsolved = [elementwise_problem(f"op{i}", f"x * {i + 3}.0 + torch.exp(x)" if i % 2 else f"torch.cumsum(x, 0) * {i}",
                                    suffix=f"_{i}") for i in range(8)]
    rejected = Problem(reference_source="class Model: pass", name="broken", status="rejected", reject_reason="bad_format")
    rows = build_rl_rows(unsolved + [rejected], pairs, {}, n_prompts=10, sft_share=0.3, val_fraction=0.0)
    origins = Counter(r["origin"] for r in rows)
    assert origins == {"unsolved": 7, "sft": 3}
    assert len({r["problem_key"] for r in rows}) == 10
    assert "broken" not in {r["name"] for r in rows}
    row = rows[0]
    assert row["reference"].startswith("import torch") and [m["role"] for m in row["prompt"]] == ["system", "user"]
    # n_prompts = 0: every eligible problem once, whether few or many are unsolved (a share of one
    # unsolved problem once left GRPO two prompts of a warehouse its teachers had nearly solved)
    rows = build_rl_rows(unsolved, pairs, {}, sft_share=0.3, val_fraction=0.0)
    assert Counter(r["origin"] for r in rows) == {"unsolved": 8, "sft": 6}
    rows = build_rl_rows(unsolved[:1], pairs, {}, sft_share=0.3, val_fraction=0.0)
    assert Counter(r["origin"] for r in rows) == {"unsolved": 1, "sft": 6}


def test_one_big_cluster_cannot_swallow_the_validation_split():
    clusters = {f"big{i}": "big" for i in range(7)} | {f"s{i}": f"s{i}" for i in range(9)}
    for seed in range(10):
        splits = assign_splits(clusters, val_fraction=0.1, seed=seed)
        held = [k for k, s in splits.items() if s == "validation"]
        assert 1 <= len(held) <= 3 and not any(k.startswith("big") for k in held)
    only_big = {f"a{i}": "a" for i in range(6)} | {"b0": "b"}
    assert Counter(assign_splits(only_big, 0.1).values()) == {"train": 6, "validation": 1}


def test_default_instruction_is_the_description_and_a_failure_to_describe_is_an_error(monkeypatch):
    import autotriton.distillation as distillation
    from autotriton.records import Problem
    from validation_helpers import problem as judge_problem

    relu = Problem(reference_source=judge_problem("relu"), name="relu")
    assert default_instruction(relu) == distillation.describe_problem(relu.reference_source)[0]

    def broken(source, *args, **kwargs):
        raise RuntimeError("the describer broke")

    # No generic prompt in its place: the problem is named and the cause kept.
    import autotriton.describe as describe  # where describe_problem lives now (core)

    monkeypatch.setattr(describe, "describe_problem", broken)
    with pytest.raises(ValueError, match=r"'relu'.*describe_problem failed \(RuntimeError: the describer broke\)"):
        default_instruction(relu)


def test_generated_problems_are_near_duplicates_only_of_the_same_code_up_to_literals():
    # A generator's problems share its template: MinHash chains a family into one cluster, and a
    # split of whole clusters then holds none of it out. Among themselves they cluster by code up
    # to literals; against harvested code MinHash still decides.
    from autotriton.harvesting.synthetic import generate_problems

    sources = {f"g{i:03d}": src for i, (_, src) in enumerate(generate_problems(120, 0, family="elementwise"))}
    by_minhash = near_duplicate_clusters(sources, threshold=0.8)
    assert max(Counter(by_minhash.values()).values()) > 20  # the problem: one template, a few giant clusters
    clusters = near_duplicate_clusters(sources, threshold=0.8, generated=set(sources))
    sizes = Counter(clusters.values())
    assert len(sizes) > 60 and max(sizes.values()) <= 4, sizes.most_common(3)
    # the same chain at other literals: one cluster; another chain: another
    base = sources["g000"]
    rescaled = re.sub(r"\d+", lambda m: str(int(m[0]) * 2 + 1), base)
    assert rescaled != base
    other = next(s for k, s in sources.items() if clusters[k] != clusters["g000"])
    more = {"g000": base, "g900": rescaled, "g901": other}
    c = near_duplicate_clusters(more, generated=set(more))
    assert c["g000"] == c["g900"] != c["g901"]
    # a harvested near copy of a generated problem joins its cluster
    harvested = base.replace('"""', '"""From a repository: ', 1)
    c = near_duplicate_clusters({"g000": base, "h1": harvested}, generated={"g000"})
    assert c["h1"] == c["g000"]
    for seed in range(3):
        splits = assign_splits(clusters, val_fraction=0.1, seed=seed)
        held = [k for k, s in splits.items() if s == "validation"]
        assert 8 <= len(held) <= 18
