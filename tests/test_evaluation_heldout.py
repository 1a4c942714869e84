"""Issue 17 item 5: a training export's held-out split is an evaluation suite (`--suite exports/rl:validation`).

A warehouse is exported through the CLI (`db export rl|sft`, as a user would), the validation split
is loaded as a suite, and it must hold exactly the export's validation problems, which no training
row of either export holds. A bad split or a bare export path fails with a message that says what to pass.
"""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from autotriton.evaluation import SuiteError, load_suite, read_entries
from autotriton.flows.cli import app
from autotriton.warehouse import Warehouse

from warehouse_helpers import distinct_chain, make_chain, store_chain


def _export(db, name: str, out, fmt: str = "hf") -> dict:
    result = CliRunner().invoke(app, ["--db", str(db), "--set", "training.val_fraction=0.3", "db", "export", name,
                                      "--format", fmt, "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _rows(export_path) -> list[dict]:
    files = [export_path] if export_path.is_file() else sorted((export_path / "data").glob("*.parquet"))
    return [row for f in files for row in pq.read_table(f).to_pylist()]


@pytest.fixture
def exported(tmp_path, monkeypatch):
    """Eight distinct validated problems plus six unsolved runnable ones (RL prompts only), exported both ways."""
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "w.duckdb"
    unsolved = make_chain(6, tag="u", bad_every=1)  # every verdict incorrect: runnable, no validated pair
    with Warehouse(db) as wh:
        run = wh.start_run("refresh", {})
        store_chain(wh, run, distinct_chain(8))
        store_chain(wh, run, unsolved)
    return {"rl": _export(db, "rl", tmp_path / "exports" / "rl"), "sft": _export(db, "sft", tmp_path / "exports" / "sft"),
            "rl.parquet": _export(db, "rl", tmp_path / "rl.parquet", fmt="parquet"), "tmp": tmp_path}


@pytest.mark.parametrize("name", ["rl", "sft", "rl.parquet"])
def test_the_validation_split_of_an_export_loads_as_exactly_its_held_out_problems(exported, name):
    tmp = exported["tmp"]
    path = tmp / "exports" / name if name in ("rl", "sft") else tmp / name
    rows = _rows(path)
    held_out = {r["problem_key"] for r in rows if r["split"] == "validation"}
    assert held_out and len(held_out) < len({r["problem_key"] for r in rows})  # both splits hold problems

    entries = read_entries(f"{path}:validation")
    assert {e.problem_id for e in entries} == held_out  # exactly the validation problems, once each
    by_key = {r["problem_key"]: r for r in rows}
    for e in entries:
        assert e.id.startswith("heldout/") and e.id.endswith(str(e.problem_id)[:8])
        assert e.source == by_key[e.problem_id]["reference"] and e.license == "MIT"
    problems = load_suite(f"{path}:validation")
    assert {p.reference_source for p in problems} == {by_key[k]["reference"] for k in held_out}
    assert {p.suite for p in problems} == {"heldout"}
    assert len({e.id for e in read_entries(f"{path}:train")}) == len({r["problem_key"] for r in rows} - held_out)


def test_no_problem_held_out_of_one_export_is_trained_on_in_the_other(exported):
    tmp = exported["tmp"]
    suites = {name: {e.problem_id for e in read_entries(f"{tmp / 'exports' / name}:validation")} for name in ("rl", "sft")}
    trained = {r["problem_key"] for name in ("rl", "sft") for r in _rows(tmp / "exports" / name) if r["split"] == "train"}
    assert not (suites["rl"] | suites["sft"]) & trained


def test_a_bad_split_or_a_bare_export_says_what_to_pass(exported):
    path = exported["tmp"] / "exports" / "rl"
    with pytest.raises(SuiteError, match=r"no split 'valid'; its splits are train, validation\. Pass --suite .*:validation"):
        load_suite(f"{path}:valid")
    with pytest.raises(SuiteError, match=r"a training export; name the split .*--suite .*rl:validation"):
        load_suite(str(path))
    with pytest.raises(SuiteError, match="no split 'test'"):
        load_suite(f"{exported['tmp'] / 'rl.parquet'}:test")
    result = CliRunner().invoke(app, ["eval", "--suite", f"{path}:heldout", "--model", "tiny", "--device", "cpu"])
    assert result.exit_code == 2 and "its splits are train, validation" in result.output


def test_evaluating_on_the_held_out_split_keeps_the_problems_provenance(exported):
    """The held-out problems are the warehouse's own: evaluating on them stores the samples and
    their verdicts against those problems, and leaves each problem's row (its harvested source,
    module, suite) as the harvest wrote it."""
    tmp = exported["tmp"]
    db = tmp / "w.duckdb"
    held_out = {r["problem_key"] for r in _rows(tmp / "exports" / "rl") if r["split"] == "validation"}
    with Warehouse(db, read_only=True) as wh:
        before = {p.key: (p.source_key, p.module_key, p.suite, p.suite_id, p.licence) for p in wh.problems(status=None, keys=held_out)}
    assert len(before) == len(held_out) and all(source for source, *_ in before.values())
    result = CliRunner().invoke(app, ["--db", str(db), "eval", "--suite", f"{tmp / 'exports' / 'rl'}:validation",
                                      "--model", "tiny", "--device", "cpu", "--samples", "1", "--max-new-tokens", "4", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["problems"] == len(held_out) and summary["new_rows"]["problems"] == 0
    with Warehouse(db, read_only=True) as wh:
        after = {p.key: (p.source_key, p.module_key, p.suite, p.suite_id, p.licence) for p in wh.problems(status=None, keys=held_out)}
        samples = wh.sql("SELECT DISTINCT problem_key FROM candidates WHERE run_id = ?", [summary["run_id"]]).rows
    assert after == before
    assert {key for (key,) in samples} == held_out  # the samples are stored against the warehouse's own problems


def test_a_capped_evaluation_samples_the_split_instead_of_taking_its_first_names():
    """A held-out split is sorted by id (name first): its first problems are one family (package
    modules, capitalised, sort before `synthetic_...`). With evaluation.max_problems the default
    pick is a seeded sample in suite order, so a capped evaluation sees every family; `first`
    keeps the suite's own numbering (KernelBench's first N)."""
    from autotriton.evaluation import cap_problems
    from autotriton.records import Problem

    problems = [Problem(reference_source=f"x = {i}\n", name=f"Attention{i}") for i in range(40)]
    problems += [Problem(reference_source=f"y = {i}\n", name=f"synthetic_pointwise_{i}") for i in range(60)]
    picked = cap_problems(problems, 20, "sample", seed=0)
    assert len(picked) == 20 and len({p.key for p in picked}) == 20
    assert [problems.index(p) for p in picked] == sorted(problems.index(p) for p in picked)  # suite order kept
    families = {p.name.rstrip("0123456789") for p in picked}
    assert families == {"Attention", "synthetic_pointwise_"}
    assert cap_problems(problems, 20, "sample", seed=0) == picked  # seeded: the same problems every time
    assert cap_problems(problems, 20, "sample", seed=1) != picked
    assert cap_problems(problems, 20, "first") == problems[:20]
    assert cap_problems(problems, 0) == problems and cap_problems(problems, 500) == problems
    with pytest.raises(ValueError, match="pick_problems"):
        cap_problems(problems, 20, "best")
