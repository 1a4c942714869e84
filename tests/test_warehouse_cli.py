"""`autotriton db ...` verbs through typer's CliRunner: JSON contract, exports, lineage, clear errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotriton.flows.cli import app
from autotriton.flows.cli.db_cmd import EXPORTERS
from autotriton.warehouse import LATEST_VERSION, Warehouse

from warehouse_helpers import make_chain, store_chain


@pytest.fixture
def filled(tmp_path, monkeypatch):
    """A warehouse with 6 chains (4 validated), cwd in tmp_path so exports land there."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "w.duckdb"
    chain = make_chain(6)
    with Warehouse(path) as wh:
        run = wh.start_run("refresh", {"x": 1})
        store_chain(wh, run, chain)
        wh.finish_run(run, "succeeded", {"problems": 6})
    return path, chain


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    return result


def one_json(result) -> dict:
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"--json must print exactly one line on stdout, got: {result.stdout!r}"
    return json.loads(lines[0])


def test_migrate_creates_and_is_idempotent(tmp_path):
    db = str(tmp_path / "new.duckdb")
    first = one_json(invoke("--db", db, "db", "migrate", "--json"))
    assert first["applied"] == list(range(1, LATEST_VERSION + 1)) and first["schema_version"] == LATEST_VERSION
    again = one_json(invoke("--db", db, "db", "migrate", "--json"))
    assert again["applied"] == [] and again["schema_version"] == LATEST_VERSION
    human = invoke("--db", db, "db", "migrate")
    assert human.exit_code == 0 and "already current" in human.stdout


def test_stats(filled):
    path, _ = filled
    summary = one_json(invoke("--db", str(path), "db", "stats", "--json"))
    assert summary["tables"]["problems"] == 6 and summary["tables"]["sources"] == 6
    assert summary["validated_pairs"] == 4 and summary["last_runs"][0]["kind"] == "refresh"
    human = invoke("--db", str(path), "db", "stats")
    assert human.exit_code == 0 and "candidates" in human.stdout and "refresh" in human.stdout


def test_sql_json_and_errors(filled):
    path, _ = filled
    out = one_json(invoke("--db", str(path), "db", "sql", "SELECT status, count(*) AS n FROM verdicts GROUP BY 1 ORDER BY 1", "--json"))
    assert out == {"columns": ["status", "n"], "rows": [["correct", 4], ["incorrect", 2]]}
    table = invoke("--db", str(path), "db", "sql", "SELECT name FROM problems ORDER BY name")
    assert table.exit_code == 0 and "block_t_0" in table.stdout and "6 row(s)" in table.stdout
    bad = invoke("--db", str(path), "db", "sql", "SELEC nonsense")
    assert bad.exit_code == 2 and "SQL failed" in bad.stderr and "SELEC nonsense" in bad.stderr
    # Read-only by default: writes need --write.
    denied = invoke("--db", str(path), "db", "sql", "DELETE FROM problems")
    assert denied.exit_code == 2 and "read-only" in denied.stderr.lower() and "--write" in denied.stderr
    assert one_json(invoke("--db", str(path), "db", "sql", "DELETE FROM rejections", "--write", "--json")) is not None


def test_missing_warehouse_is_a_clear_error(tmp_path):
    result = invoke("--db", str(tmp_path / "absent.duckdb"), "db", "stats")
    assert result.exit_code == 2 and "no warehouse there yet" in result.stderr
    assert not (tmp_path / "absent.duckdb").exists()  # reading never creates the file


def test_export_verb_round_trips_to_datasets(filled, tmp_path):
    path, chain = filled
    summary = one_json(invoke("--db", str(path), "db", "export", "pairs", "--out", str(tmp_path / "ex"), "--json"))
    assert summary["row_count"] == 4 and summary["path"].startswith(str(tmp_path / "ex"))
    default_dir = one_json(invoke("--db", str(path), "db", "export", "problems", "--json"))
    assert default_dir["path"].startswith(str(tmp_path / "exports"))  # config warehouse.export_dir, relative to cwd
    with Warehouse(path, read_only=True) as wh:
        dataset = wh.to_hf_dataset(summary["key"])
        assert sorted(dataset["candidate_key"]) == sorted(c.key for c, v in zip(chain.candidates, chain.verdicts) if v.correct)
        runs = {r["run_id"]: r for r in wh.runs()}
        assert runs[summary["run_id"]]["kind"] == "export" and runs[summary["run_id"]]["status"] == "succeeded"
    unknown = invoke("--db", str(path), "db", "export", "nope")
    assert unknown.exit_code == 2 and "pairs" in unknown.stderr and "problems" in unknown.stderr


def test_exporters_registry_is_one_entry_per_export(filled, monkeypatch, tmp_path):
    path, _ = filled
    monkeypatch.setitem(EXPORTERS, "names", lambda wh, cfg: ([{"name": p.name} for p in wh.problems()], {"by": "test"}))
    summary = one_json(invoke("--db", str(path), "db", "export", "names", "--json"))
    assert summary["name"] == "names" and summary["row_count"] == 6 and summary["filter"] == {"by": "test"}


def test_lineage_verb(filled):
    path, chain = filled
    out = one_json(invoke("--db", str(path), "db", "lineage", chain.verdicts[0].key, "--json"))
    assert out["table"] == "verdicts" and out["parents"][0]["table"] == "candidates"
    human = invoke("--db", str(path), "db", "lineage", chain.candidates[1].key)
    assert human.exit_code == 0
    for fragment in ("candidates", "problems", "modules", "sources", chain.sources[1].key):
        assert fragment in human.stdout
    run_id = out["run"]["run_id"]
    by_run = one_json(invoke("--db", str(path), "db", "lineage", run_id, "--json"))
    assert by_run["runs"][0]["rows_written"]["problems"] == 6
    missing = invoke("--db", str(path), "db", "lineage", "ffffffffffffffff")
    assert missing.exit_code == 2 and "no row, run or flow run" in missing.stderr


def test_check_verb_finds_orphans_and_missing_exports(filled, tmp_path):
    path, chain = filled
    assert one_json(invoke("--db", str(path), "db", "check", "--json"))["ok"] is True
    exported = one_json(invoke("--db", str(path), "db", "export", "pairs", "--json"))
    with Warehouse(path) as wh:
        run = wh.start_run("distill", {})
        from autotriton.records import Candidate

        wh.put_candidates(run, [Candidate(problem_key="0000feed0000feed", code="x = 1")])
        wh.finish_run(run, "succeeded", {})
    shutil.rmtree(exported["path"])  # an export is a dataset folder
    result = invoke("--db", str(path), "db", "check", "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["orphans"] == {"candidates.problem_key": {"missing_in": "problems", "count": 1, "examples": ["0000feed0000feed"]}}
    assert [m["key"] for m in report["missing_export_files"]] == [exported["key"]]
    human = invoke("--db", str(path), "db", "check")
    assert human.exit_code == 1 and "0000feed0000feed" in human.stdout and "autotriton db export pairs" in human.stdout


def test_export_sft_as_hf_folder_loads_with_train_and_validation(tmp_path):
    """Issue 18 point 6: `db export sft --format hf --out DIR` -> `datasets.load_dataset(DIR)`."""
    import datasets

    from warehouse_helpers import distinct_chain

    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh:
        store_chain(wh, wh.start_run("refresh", {}), distinct_chain(8))
    out = tmp_path / "sft-dataset"
    summary = one_json(invoke("--db", str(path), "db", "export", "sft", "--format", "hf", "--out", str(out), "--json"))
    loaded = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "hf-cache"))
    assert sorted(loaded) == ["train", "validation"]
    assert sum(loaded.num_rows.values()) == summary["row_count"] and loaded.num_rows == summary["splits"]
    assert summary["content_hash"] in (out / "README.md").read_text()
    assert sorted(p.name for p in (out / "data").iterdir()) == ["train-00000-of-00001.parquet", "validation-00000-of-00001.parquet"]
    bad = invoke("--db", str(path), "db", "export", "sft", "--format", "csv")
    assert bad.exit_code == 2 and "hf, parquet" in bad.stderr


def test_describe_verb_rewrites_the_describers_old_words_and_keeps_an_explainers(tmp_path):
    """Pairs distilled (or released) before a describer change get the current describer's words;
    words an LLM explainer wrote, kernels, verdicts and lineage stay as they are."""
    from autotriton.describe import describe_problem

    chain = make_chain(3, bad_every=99)
    old = describe_problem(chain.problems[0].reference_source, chain.candidates[0].code)
    chain.candidates[0].instruction, chain.candidates[0].reasoning = old[0], old[1] + "\nAn older describer's last line."
    chain.candidates[1].reasoning = "The kernel scales each element (an explainer's words)."
    chain.candidates[2].instruction, chain.candidates[2].reasoning = describe_problem(
        chain.problems[2].reference_source, chain.candidates[2].code)
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh:
        run = wh.start_run("refresh", {})
        store_chain(wh, run, chain)
        wh.finish_run(run, "succeeded", {})
        before = {c.key: c for c in wh.candidates()}
        lineage = dict(wh.sql("SELECT key, run_id FROM candidates").rows)
    report = one_json(invoke("--db", str(path), "db", "describe", "--no-trace", "--json"))
    assert report["candidates"] == 3 and report["described"] == 2 and report["changed"] == 1
    with Warehouse(path, read_only=True) as wh:
        after = {c.key: c for c in wh.candidates()}
        assert dict(wh.sql("SELECT key, run_id FROM candidates").rows) == lineage
        assert wh.runs(kind="describe")[0]["status"] == "succeeded"
        assert len(wh.validated_pairs()) == 3
    first, second, third = (c.key for c in chain.candidates)
    assert after[first].reasoning == old[1] and after[first].code == before[first].code
    assert after[second].reasoning == before[second].reasoning
    assert after[third].reasoning == before[third].reasoning
    # run again: nothing left to rewrite
    assert one_json(invoke("--db", str(path), "db", "describe", "--no-trace", "--json"))["changed"] == 0
