"""Decontamination (issue 17): planted copies of KernelBench level-1 problems, exact and lightly
edited (renamed variables and layers, other sizes, a tweaked constant), are found, kept out of
the training exports with the reason recorded, and counted per suite file."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from autotriton.evaluation import load_suite
from autotriton.flows.cli import app
from autotriton.flows.config import PipelineConfig
from autotriton.harvesting.decontamination import EvalIndex, find_contaminated
from autotriton.records import Problem
from autotriton.tasks.steps import export_rows
from autotriton.warehouse import Warehouse

from warehouse_helpers import distinct_chain, store_chain


def suite_sources(path) -> dict[str, str]:
    return {p.suite_id: p.reference_source for p in load_suite(path)}


def planted(path) -> dict[str, str]:
    """name -> source of a copy of a suite problem, edited the way a copy in the wild would be."""
    src = suite_sources(path)
    gelu = (src["kernelbench/level1/88"]  # renamed argument, other sizes, a comment changed
            .replace("def forward(self, x):", "def forward(self, inp):")
            .replace("0.5 * x *", "0.5 * inp *").replace("(x + 0.044715 * torch.pow(x, 3.0))", "(inp + 0.044715 * torch.pow(inp, 3.0))")
            .replace("batch_size = 8192", "batch_size = 16").replace("dim = 8192", "dim = 64")
            .replace("# From https://github.com/karpathy/minGPT/blob/master/mingpt/model.py", "# my gelu"))
    layernorm = (src["kernelbench/level1/40"]  # renamed layer, other sizes
                 .replace("self.ln", "self.layer_norm").replace("dim1 = 256", "dim1 = 8").replace("dim2 = 256", "dim2 = 8"))
    cumsum = (src["kernelbench/level1/91"]  # one more operation: not the same model, nearly
              .replace("return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)",
                       "return torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim).contiguous()")
              .replace("batch_size = 32768", "batch_size = 8"))
    return {"planted_gelu": gelu, "planted_layernorm": layernorm, "planted_cumsum": cumsum}


def test_exact_and_near_copies_are_found_and_distinct_problems_are_not(kernelbench_l1):
    index = EvalIndex(load_suite(kernelbench_l1), threshold=0.8, origin=str(kernelbench_l1))
    assert len(index) == 100
    problems = [Problem(source, name) for name, source in planted(kernelbench_l1).items()]
    problems += distinct_chain(8).problems
    found = {c.problem_name: c for c in find_contaminated(problems, index)}
    assert sorted(found) == ["planted_cumsum", "planted_gelu", "planted_layernorm"]
    assert (found["planted_gelu"].suite_id, found["planted_gelu"].kind) == ("kernelbench/level1/88", "exact")
    assert (found["planted_layernorm"].suite_id, found["planted_layernorm"].kind) == ("kernelbench/level1/40", "exact")
    near = found["planted_cumsum"]
    assert (near.suite_id, near.kind) == ("kernelbench/level1/91", "near_duplicate") and 0.8 <= near.similarity < 1.0
    assert near.reason == "eval_near_duplicate" and str(kernelbench_l1) in near.detail
    # the suite's own problems are held out by their suite, not reported as copies of themselves
    assert find_contaminated(load_suite(kernelbench_l1)[:5], index) == []


def _warehouse_with_planted(tmp_path, suite_path):
    """Validated pairs for 8 distinct problems and for the 3 planted copies."""
    chain = distinct_chain(8)
    copies = distinct_chain(3, tag="p")
    for (name, source), problem, cand, verdict in zip(planted(suite_path).items(), copies.problems, copies.candidates,
                                                      copies.verdicts):
        problem.reference_source, problem.name = source, name
        cand.problem_key = problem.key
        verdict.candidate_key, verdict.problem_key = cand.key, problem.key
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh:
        run = wh.start_run("refresh", {})
        store_chain(wh, run, chain)
        store_chain(wh, run, copies)
    return path, chain, copies


def test_training_exports_leave_copies_out_and_record_why(tmp_path, kernelbench_l1):
    path, chain, copies = _warehouse_with_planted(tmp_path, kernelbench_l1)
    cfg = PipelineConfig()
    with Warehouse(path) as wh:
        run = wh.start_run("export", cfg)
        before, _ = export_rows(wh, run, cfg, "sft")  # no suites named: nothing is checked
        assert len(before) == 11
        cfg.harvest.eval_suites = [str(kernelbench_l1)]
        rows, filter_ = export_rows(wh, run, cfg, "sft")
        assert sorted(r["name"] for r in rows) == sorted(p.name for p in chain.problems)
        report = filter_["decontamination"]
        assert report["problems_removed"] == 3 and report["by_suite_file"] == {str(kernelbench_l1): 3}
        assert report["by_kind"] == {"exact": 2, "near_duplicate": 1}
        rl_rows, _ = export_rows(wh, run, cfg, "rl")
        assert not {r["problem_key"] for r in rl_rows} & {p.key for p in copies.problems}
        # marked, not silently dropped: one rejection per removed problem, naming the suite problem and file
        recorded = wh.sql("SELECT subject, reason, detail FROM rejections WHERE stage = 'decontamination' ORDER BY reason").to_dicts()
        assert {r["subject"] for r in recorded} == {p.key for p in copies.problems}
        assert [r["reason"] for r in recorded] == ["eval_exact", "eval_exact", "eval_near_duplicate"]
        assert all("kernelbench/level1/" in r["detail"] and str(kernelbench_l1) in r["detail"] for r in recorded)


def test_decontaminate_and_export_verbs_report_the_removed(tmp_path, kernelbench_l1, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path, _, _ = _warehouse_with_planted(tmp_path, kernelbench_l1)
    runner = CliRunner()
    result = runner.invoke(app, ["--db", str(path), "db", "decontaminate", "--suite", str(kernelbench_l1), "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["removed"] == 3 and report["checked"] == 11 and report["suite_problems"] == 100
    assert {e["suite_id"] for e in report["examples"]} == {"kernelbench/level1/88", "kernelbench/level1/40", "kernelbench/level1/91"}
    exported = runner.invoke(app, ["--db", str(path), "--set", f"harvest.eval_suites=[\"{kernelbench_l1}\"]",
                                   "db", "export", "sft", "--json"])
    assert exported.exit_code == 0, exported.stderr
    summary = json.loads(exported.stdout)
    assert summary["row_count"] == 8 and summary["filter"]["decontamination"]["problems_removed"] == 3
    missing = runner.invoke(app, ["--db", str(path), "db", "decontaminate", "--suite", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2 and "nope.jsonl" in missing.stderr
    none = runner.invoke(app, ["--db", str(path), "db", "decontaminate"])
    assert none.exit_code == 2 and "--suite" in none.stderr


@pytest.mark.parametrize("threshold", [0.0, 1.5])
def test_threshold_out_of_range_is_refused(threshold):
    with pytest.raises(ValueError, match="threshold"):
        EvalIndex([], threshold=threshold)


def test_tritonbench_t_suites_are_checked_too_and_matches_name_their_file(kernelbench_l1):
    """Several suites at once (KernelBench JSONL and TritonBench-T data, by path): a match names
    the suite file it came from."""
    from pathlib import Path

    tb = Path(__file__).parent / "data" / "evaluation" / "tritonbench_t" / "TritonBench_T_sample.json"
    index = EvalIndex([], threshold=0.8)
    index.add(load_suite(kernelbench_l1), origin=str(kernelbench_l1))
    index.add(load_suite(tb), origin=str(tb))
    scaled_relu = next(p for p in load_suite(tb) if p.suite_id == "tritonbench-t/level1/scaled_relu")
    copy = (scaled_relu.reference_source.replace("x2", "inp").replace("torch.randn(4, 8)", "torch.randn(64, 128)")
            .replace('"""Rectified linear unit followed by a constant scale."""', "# relu then scale"))
    (found,) = find_contaminated([Problem(copy, "my_scaled_relu")], index)
    assert (found.suite_id, found.kind, found.origin) == ("tritonbench-t/level1/scaled_relu", "exact", str(tb))
