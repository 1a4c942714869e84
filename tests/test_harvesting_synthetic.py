"""The synthetic fused-problem source: determinism, validity at full and shrunk sizes, the sandbox
probe on a sample, and `autotriton harvest synthetic` storing problems with their provenance."""

from __future__ import annotations

import json
import types
from collections import Counter

import pytest
import torch
from typer.testing import CliRunner

from autotriton.flows.cli import app
from autotriton.harvesting import HarvestConfig
from autotriton.harvesting.synthetic import (
    ELEMENTWISE_OPS, GENERATOR_VERSION, draw_chain, generate_problems, harvest_synthetic, memory, problem_source, propagate, shrunk_consts,
)
from autotriton.validation.shrink import shrink_problem


def _load(source: str) -> types.ModuleType:
    module = types.ModuleType("synthetic_problem")
    exec(compile(source, "<synthetic>", "exec"), module.__dict__)  # noqa: S102 (our own generated problem)
    return module


def test_the_same_seed_gives_the_same_problems_and_an_index_does_not_depend_on_count():
    a = [src for _, src in generate_problems(12, seed=5)]
    b = [src for _, src in generate_problems(12, seed=5)]
    assert a == b
    assert [src for _, src in generate_problems(4, seed=5, start=8)] == a[8:]  # extending a suite keeps its problems
    other = [src for _, src in generate_problems(12, seed=6)]
    assert sum(x != y for x, y in zip(a, other)) >= 10
    assert len(set(a)) == 12


def test_chains_cover_the_operator_families_and_stay_within_2_to_6_operators():
    chains = [draw_chain(11, i) for i in range(150)]
    assert all(2 <= len(c.ops) <= 6 for c in chains)
    tags = Counter(t for c in chains for t in c.tags)
    heads = {c.ops[0]["tag"] for c in chains}
    assert {"gemm", "bmm", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"} <= heads
    for family in ("batch_norm", "group_norm", "instance_norm", "layer_norm", "max_pool", "avg_pool", "softmax",
                   "logsumexp", "residual_add", "scale", "bias_add"):
        assert tags[family] > 0, family
    assert any(tags[r] for r in ("sum", "mean", "amax"))


def test_memory_limits_hold_for_many_seeds():
    for seed in range(4):
        for i in range(250):
            chain = draw_chain(seed, i)
            ins, outs, largest = memory(chain)
            assert ins + outs <= 256 * 2**20 and largest <= 512 * 2**20, (seed, i, chain.consts, chain.tags)


def test_every_problem_is_legal_at_its_own_and_at_shrunk_sizes_and_fits_the_memory_budget():
    """Shapes from torch itself (meta device: no memory, no compute) match the generator's propagation,
    at the problem's sizes and after the judge's shrink rule; inputs + output of a call fit 256 MiB."""
    for i in range(80):
        chain = draw_chain(3, i)
        source = problem_source(chain)
        assert f"seed {chain.seed}, index {i}" in source and GENERATOR_VERSION in source
        ins, outs, largest = memory(chain)
        assert ins + outs <= 256 * 2**20 and largest <= 512 * 2**20, (i, ins, outs, largest)
        assert chain.consts["batch_size"] >= 8
        for src, consts in ((source, chain.consts), (shrink_problem(source, 32), shrunk_consts(chain.consts))):
            module = _load(src)
            with torch.device("meta"), torch.no_grad():
                out = module.Model(*module.get_init_inputs()).eval()(*module.get_inputs())
            assert list(out.shape) == propagate(chain, consts)[-1], (i, src)


def test_a_sample_of_problems_runs_in_the_sandbox_at_shrunk_sizes():
    """30 problems through the project's probe (validation sandbox, CPU, shrunk sizes): deterministic,
    input-dependent, runnable; none rejected."""
    result = harvest_synthetic(30, seed=2024, config=HarvestConfig(incremental=False))
    rejected = {p.name: (p.reject_reason, result.details.get(p.key)) for p in result.problems if p.status != "runnable"}
    assert not rejected
    assert len(result.problems) == 30 and len(result.sources) == 30
    assert {s.kind for s in result.sources} == {"synthetic"}
    assert all(p.shape_profile == "gpu-full" and p.op_tags for p in result.problems)


def test_cli_harvest_synthetic_stores_problems_with_provenance_and_a_second_run_adds_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "s.duckdb")

    def invoke(args: list[str]) -> dict:
        result = CliRunner().invoke(app, ["--db", db, "harvest", "synthetic", *args])
        assert result.exit_code == 0, (result.output, result.exception)
        return json.loads(result.stdout.strip().splitlines()[-1])

    first = invoke(["--count", "4", "--seed", "9", "--json"])
    assert first["runnable"] == 4 and first["new_rows"]["problems"] == 4 and first["generator_version"] == GENERATOR_VERSION
    from autotriton.warehouse import Warehouse

    with Warehouse(db) as wh:
        problems = wh.problems(status="runnable")
        assert len(problems) == 4
        sources = wh.sql("SELECT kind, repo, commit, path FROM sources ORDER BY path")
    assert [tuple(r) for r in sources.rows] == [("synthetic", "autotriton/synthetic", GENERATOR_VERSION, f"seed=9/index={i}")
                                           for i in range(4)]
    assert {p.reference_source.split("\n", 1)[0] for p in problems} == {
        problem_source(draw_chain(9, i)).split("\n", 1)[0] for i in range(4)}
    again = invoke(["--count", "4", "--seed", "9", "--json"])
    assert all(v == 0 for v in again["new_rows"].values())
    bad = CliRunner().invoke(app, ["--db", db, "harvest", "synthetic", "--count", "0"])
    assert bad.exit_code == 2 and "--count" in bad.output


def test_the_pointwise_family_draws_short_memory_bound_chains_and_leaves_the_fused_ones_as_they_were():
    """`family="pointwise"`: 2-4 operators on the input itself, no GEMM, matmul or convolution,
    legal at the problem's own and at shrunk sizes (torch on the meta device agrees with the
    generator), deterministic; adding the family changed no fused problem (own rng stream)."""
    fused = [src for _, src in generate_problems(20, seed=4)]
    assert [src for _, src in generate_problems(20, seed=4, family="fused")] == fused
    chains = [draw_chain(4, i, family="pointwise") for i in range(120)]
    assert [problem_source(c) for c in chains[:10]] == [src for _, src in generate_problems(10, seed=4, family="pointwise")]
    assert not set(map(problem_source, chains)) & set(fused)
    heavy = {"linear", "bmm", "conv", "conv_transpose"}
    for chain in chains:
        assert chain.ops[0]["op"] == "input" and 2 <= len(chain.tags) <= 4, chain.tags
        assert not heavy & {op["op"] for op in chain.ops}
        source = problem_source(chain)
        assert "pointwise" in source and "nn.Linear" not in source and "nn.Conv" not in source
        for src, consts in ((source, chain.consts), (shrink_problem(source, 32), shrunk_consts(chain.consts))):
            module = _load(src)
            with torch.device("meta"), torch.no_grad():
                out = module.Model(*module.get_init_inputs()).eval()(*module.get_inputs())
            assert list(out.shape) == propagate(chain, consts)[-1], src
    tags = Counter(t for c in chains for t in c.tags)
    for op in ("layer_norm", "batch_norm", "group_norm", "softmax", "max_pool", "residual_add"):
        assert tags[op] > 0, op
    with pytest.raises(ValueError, match="unknown synthetic family"):
        draw_chain(4, 0, family="gemm")


def test_the_elementwise_family_draws_one_to_three_elementwise_operators_and_changes_no_other_family():
    """`family="elementwise"`: 1-3 operators that touch each element once (activations, clamp,
    scaling, bias and residual adds) on the input itself, legal at its own and at shrunk sizes,
    deterministic, in its own rng stream (fused and pointwise problems are the ones drawn before)."""
    fused = [src for _, src in generate_problems(10, seed=2)]
    pointwise = [src for _, src in generate_problems(10, seed=2, family="pointwise")]
    chains = [draw_chain(2, i, family="elementwise") for i in range(150)]
    assert [problem_source(c) for c in chains[:10]] == [src for _, src in generate_problems(10, seed=2, family="elementwise")]
    assert not set(map(problem_source, chains)) & (set(fused) | set(pointwise))
    for chain in chains:
        assert chain.ops[0]["op"] == "input" and 1 <= len(chain.tags) <= 3, chain.tags
        assert {op["op"] for op in chain.ops[1:]} <= set(ELEMENTWISE_OPS), chain.ops
        source = problem_source(chain)
        assert "synthetic-elementwise-v1" in source
        for src, consts in ((source, chain.consts), (shrink_problem(source, 32), shrunk_consts(chain.consts))):
            module = _load(src)
            x = module.get_inputs()[0]
            with torch.device("meta"), torch.no_grad():
                out = module.Model(*module.get_init_inputs()).eval()(*module.get_inputs())
            assert list(out.shape) == list(x.shape) == propagate(chain, consts)[-1], src
    lengths = Counter(len(c.tags) for c in chains)
    assert lengths[1] and lengths[2] and lengths[3]
    tags = Counter(t for c in chains for t in c.tags)
    for op in ("scale", "bias_add", "residual_add", "clamp", "gelu", "relu"):
        assert tags[op] > 0, op


def test_cli_harvest_synthetic_pointwise_problems_run_in_the_sandbox_with_their_own_provenance(tmp_path):
    db = str(tmp_path / "p.duckdb")
    result = CliRunner().invoke(app, ["--db", db, "harvest", "synthetic", "--family", "pointwise", "--count", "6",
                                      "--seed", "1", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["runnable"] == 6 and summary["generator_version"] == "synthetic-pointwise-v1"
    from autotriton.warehouse import Warehouse

    with Warehouse(db, read_only=True) as wh:
        sources = wh.sql("SELECT commit, path FROM sources ORDER BY path").rows
        names = sorted(p.name for p in wh.problems(status="runnable"))
    assert [tuple(r) for r in sources] == [("synthetic-pointwise-v1", f"pointwise/seed=1/index={i}") for i in range(6)]
    assert all(n.startswith("synthetic_pointwise_s1_") for n in names)
    bad = CliRunner().invoke(app, ["--db", db, "harvest", "synthetic", "--family", "gemm", "--count", "1"])
    assert bad.exit_code == 2 and "--family gemm" in bad.output


def test_the_refresh_flows_synthetic_task_harvests_each_family():
    """The refresh flow's task (harvest.synthetic_count / synthetic_pointwise_count /
    synthetic_elementwise_count) passes the family on."""
    from autotriton.tasks.harvest import harvest_synthetic_source
    from autotriton.validation.config import ValidationConfig

    config = HarvestConfig(incremental=False, probe=False)
    pointwise = harvest_synthetic_source.fn(2, 0, config, ValidationConfig(device="cpu"), "pointwise")
    fused = harvest_synthetic_source.fn(2, 0, config, ValidationConfig(device="cpu"))
    assert [s.path for s in pointwise.sources] == ["pointwise/seed=0/index=0", "pointwise/seed=0/index=1"]
    elementwise = harvest_synthetic_source.fn(1, 0, config, ValidationConfig(device="cpu"), "elementwise")
    assert [(s.commit, s.path) for s in elementwise.sources] == [("synthetic-elementwise-v1", "elementwise/seed=0/index=0")]
    assert [s.path for s in fused.sources] == ["seed=0/index=0", "seed=0/index=1"]
