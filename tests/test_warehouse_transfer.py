"""Issue 17: the released dataset (Parquet zstd + DATASET.md) and `db import` of a release or a
`db dump` into a fresh warehouse, idempotently, then `db stats`."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from autotriton.flows.cli import app
from autotriton.records import Problem
from autotriton.warehouse import Warehouse

from warehouse_helpers import distinct_chain, store_chain


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def one_json(result) -> dict:
    assert result.exit_code == 0, result.stderr + result.stdout
    return json.loads(result.stdout)


@pytest.fixture
def built(tmp_path, monkeypatch):
    """A warehouse like a small build: 8 problems with sources and modules, 7 validated pairs,
    one failed verdict, one rejected problem with its rejection row."""
    monkeypatch.chdir(tmp_path)
    chain = distinct_chain(8)
    last = chain.verdicts[-1]
    chain.verdicts[-1] = dataclasses.replace(last, status="incorrect", correct=False, max_abs_err=2.0)
    path = tmp_path / "build.duckdb"
    with Warehouse(path) as wh:
        run = wh.start_run("refresh", {})
        store_chain(wh, run, chain)
        rejected = Problem("import einops\nclass Model: pass\n", "needs_einops", status="rejected", reject_reason="missing_dependency")
        wh.put_problems(run, [rejected])
        wh.put_rejections(run, [{"stage": "harvest", "subject": rejected.key, "reason": "missing_dependency",
                                 "detail": "ModuleNotFoundError: No module named 'einops'"}])
        wh.finish_run(run, "succeeded", {})
    return path, chain


def test_release_writes_parquet_and_card_that_datasets_loads(built, tmp_path):
    import datasets

    path, chain = built
    out = tmp_path / "release"
    manifest = one_json(invoke("--db", str(path), "db", "release", "--out", str(out), "--json"))
    assert manifest["counts"]["rows"] == {"pairs": 7, "problems": 8}
    for config in ("pairs", "problems"):
        for f in (out / config / "data").iterdir():
            assert pq.ParquetFile(f).metadata.row_group(0).column(0).compression == "ZSTD"
    card = (out / "DATASET.md").read_text()
    for heading in ("## Sources", "## Licences", "## Counts per stage", "## Pairs per op category", "## Decontamination", "## Loading"):
        assert heading in card
    assert "| local:/repo/d | 8 |" in card and "| MIT | 8 |" in card and "missing_dependency" in card
    assert (out / "README.md").read_text() == card  # the hub reads README.md
    # where the pairs were judged (a CPU judge's pairs have no speed figures)
    devices = {v.device for v in chain.verdicts[:-1]}
    assert "| teacher | judged on | pairs |" in card
    assert all(f"| replay | {d} |" in card for d in devices), devices
    splits = manifest["counts"]["splits"]["pairs"]
    files = {s: str(out / "pairs" / "data" / f"{s}-00000-of-00001.parquet") for s in splits}
    pairs = datasets.load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "cache"))
    assert {s: len(d) for s, d in pairs.items()} == splits and sum(splits.values()) == 7
    row = pairs["train"][0]
    for column in ("source_repo", "source_path", "licence", "op_category", "teacher", "verdict_status", "reward",
                   "max_abs_err", "speedup", "split", "code", "reference_source"):
        assert column in row
    assert row["reward"] == 1.0 and row["teacher"] == "replay" and row["licence"] == "MIT"
    by_config = datasets.load_dataset(str(out), "problems", cache_dir=str(tmp_path / "cache"))
    assert sum(by_config.num_rows.values()) == 8
    # one split per problem, the same in both configs
    problem_split = {r["problem_key"]: r["split"] for d in by_config.values() for r in d}
    assert all(problem_split[r["problem_key"]] == r["split"] for d in pairs.values() for r in d)


def test_import_of_a_release_into_a_fresh_warehouse_is_idempotent(built, tmp_path):
    path, chain = built
    out = tmp_path / "release"
    one_json(invoke("--db", str(path), "db", "release", "--out", str(out), "--json"))
    fresh = tmp_path / "fresh.duckdb"
    first = one_json(invoke("--db", str(fresh), "db", "import", str(out), "--json"))
    assert first["kind"] == "release"
    assert first["new_rows"] == {"sources": 8, "modules": 8, "problems": 8, "candidates": 7, "verdicts": 7}
    again = one_json(invoke("--db", str(fresh), "db", "import", str(out), "--json"))
    assert set(again["new_rows"].values()) == {0}
    stats = one_json(invoke("--db", str(fresh), "db", "stats", "--json"))
    assert stats["validated_pairs"] == 7 and stats["problems_by_status"] == {"runnable": 8}
    with Warehouse(path, read_only=True) as a, Warehouse(fresh, read_only=True) as b:
        keys = lambda wh: sorted((p.key, c.key, v.key) for p, c, v in wh.validated_pairs())  # noqa: E731
        assert keys(a) == keys(b)  # the same records, content keys and all
        assert b.check()["ok"]


def test_dump_and_import_carry_every_row_with_its_lineage(built, tmp_path):
    path, _ = built
    dumped = one_json(invoke("--db", str(path), "db", "dump", "--out", str(tmp_path / "dump"), "--json"))
    assert dumped["tables"]["problems"] == 9 and dumped["tables"]["rejections"] == 1
    assert not (tmp_path / "dump" / "harvest-state.json").exists()  # no harvest state beside this warehouse
    (tmp_path / "build.duckdb.harvest-state.json").write_text('{"version": 1, "sources": {"pypi:timm==1.0.31": {"harvested": true}}, "seen": []}')
    dumped = one_json(invoke("--db", str(path), "db", "dump", "--out", str(tmp_path / "dump"), "--json"))
    assert dumped["harvest_state"] == "harvest-state.json"
    fresh = tmp_path / "fresh.duckdb"
    first = one_json(invoke("--db", str(fresh), "db", "import", str(tmp_path / "dump"), "--json"))
    assert first["kind"] == "dump" and first.pop("new_rows") == {**dumped["tables"], "harvest_state": 1}
    with Warehouse(fresh, read_only=True) as wh:  # the next harvest skips it: its state is in the warehouse now
        assert wh.harvest_state()["sources"] == {"pypi:timm==1.0.31": {"harvested": True}}
    assert not (tmp_path / "fresh.duckdb.harvest-state.json").exists()  # no side file any more
    assert set(one_json(invoke("--db", str(fresh), "db", "import", str(tmp_path / "dump"), "--json"))["new_rows"].values()) == {0}
    before = one_json(invoke("--db", str(path), "db", "stats", "--json"))
    after = one_json(invoke("--db", str(fresh), "db", "stats", "--json"))
    assert after["tables"] == before["tables"] and after["validated_pairs"] == before["validated_pairs"] == 7
    with Warehouse(path, read_only=True) as a, Warehouse(fresh, read_only=True) as b:
        query = "SELECT key, run_id, created_at, payload_hash FROM verdicts ORDER BY key"
        assert a.sql(query).rows == b.sql(query).rows


def test_the_harvest_state_travels_as_tables_and_the_target_keeps_its_own(built, tmp_path):
    path, _ = built
    with Warehouse(path) as wh:
        run = wh.start_run("harvest", {})
        wh.put_harvest_state(run, {"local:/a": {"files": {"m.py": "1"}}, "local:/b": {"files": {"n.py": "2"}}}, {"k1", "k2"})
        wh.finish_run(run, "succeeded", {})
    dumped = one_json(invoke("--db", str(path), "db", "dump", "--out", str(tmp_path / "dump"), "--json"))
    assert dumped["tables"]["harvest_state"] == 2 and dumped["tables"]["harvest_seen"] == 2
    assert "harvest_state" not in dumped and not (tmp_path / "dump" / "harvest-state.json").exists()
    fresh = tmp_path / "fresh.duckdb"
    with Warehouse(fresh) as wh:  # this machine harvested /a itself since
        wh.put_harvest_state(None, {"local:/a": {"files": {"m.py": "newer"}}})
    first = one_json(invoke("--db", str(fresh), "db", "import", str(tmp_path / "dump"), "--json"))
    assert first["new_rows"]["harvest_state"] == 1 and first["new_rows"]["harvest_seen"] == 2
    with Warehouse(fresh, read_only=True) as wh:
        state = wh.harvest_state()
    assert state["sources"] == {"local:/a": {"files": {"m.py": "newer"}}, "local:/b": {"files": {"n.py": "2"}}}
    assert state["seen"] == ["k1", "k2"]
    stats = one_json(invoke("--db", str(fresh), "db", "stats", "--json"))
    assert stats["harvest_state"] == {"sources": 2, "seen_modules": 2}


def test_a_dump_from_before_the_state_tables_imports_with_its_state_file(built, tmp_path):
    """A dump of schema version 5 has no harvest_state tables and may carry harvest-state.json:
    it imports, and its state lands in the tables."""
    path, _ = built
    out = tmp_path / "old-dump"
    one_json(invoke("--db", str(path), "db", "dump", "--out", str(out), "--json"))
    manifest = json.loads((out / "warehouse.json").read_text())
    manifest["schema_version"] = 5
    for table in ("harvest_state", "harvest_seen"):
        manifest["tables"].pop(table)
        (out / f"{table}.parquet").unlink()
    (out / "warehouse.json").write_text(json.dumps(manifest))
    (out / "harvest-state.json").write_text(json.dumps(
        {"version": 1, "sources": {"dataset:/d.jsonl": {"sha256": "ab", "rows": 3}}, "seen": ["k9"]}))
    fresh = tmp_path / "fresh.duckdb"
    first = one_json(invoke("--db", str(fresh), "db", "import", str(out), "--json"))
    assert first["new_rows"]["problems"] == 9 and first["new_rows"]["harvest_state"] == 1
    with Warehouse(fresh, read_only=True) as wh:
        assert wh.harvest_state() == {"sources": {"dataset:/d.jsonl": {"sha256": "ab", "rows": 3}}, "seen": ["k9"]}
    again = one_json(invoke("--db", str(fresh), "db", "import", str(out), "--json"))
    assert set(again["new_rows"].values()) == {0}


def test_import_of_something_else_is_a_clear_error(tmp_path):
    (tmp_path / "notes").mkdir()
    result = invoke("--db", str(tmp_path / "w.duckdb"), "db", "import", str(tmp_path / "notes"))
    assert result.exit_code == 2 and "db dump" in result.stderr and "db release" in result.stderr
    missing = invoke("--db", str(tmp_path / "w.duckdb"), "db", "import", str(tmp_path / "absent"))
    assert missing.exit_code == 2 and "no such folder" in missing.stderr


def test_a_release_carries_each_problems_dependency_environment(tmp_path, monkeypatch):
    """An imported problem keeps the requirement set its judge installs (einops for a module that
    imports it); a release written before releases carried it gets the set from the reference's imports."""
    from autotriton.environments import requirement_key

    monkeypatch.chdir(tmp_path)
    chain = distinct_chain(3)
    needs = chain.problems[0]
    needs.reference_source = "import einops\n" + needs.reference_source
    needs.requirements, needs.environment_key = ["einops>=0.7"], requirement_key(["einops>=0.7"])
    for cand, verdict in zip(chain.candidates, chain.verdicts):  # keys follow the edited source
        cand.problem_key = chain.problems[chain.candidates.index(cand)].key
        verdict.candidate_key, verdict.problem_key = cand.key, cand.problem_key
    path = tmp_path / "build.duckdb"
    with Warehouse(path) as wh:
        run = wh.start_run("refresh", {})
        store_chain(wh, run, chain)
        wh.finish_run(run, "succeeded", {})
    out = tmp_path / "release"
    one_json(invoke("--db", str(path), "db", "release", "--out", str(out), "--json"))

    def requirements_in(db) -> dict:
        with Warehouse(db, read_only=True) as wh:
            rows = wh.sql("SELECT key, requirements::VARCHAR, environment_key FROM problems").rows
        return {key: (json.loads(reqs), env) for key, reqs, env in rows}

    one_json(invoke("--db", str(tmp_path / "a.duckdb"), "db", "import", str(out), "--json"))
    got = requirements_in(tmp_path / "a.duckdb")
    assert got[needs.key] == (["einops>=0.7"], needs.environment_key)
    assert {k: v for k, v in got.items() if k != needs.key} == {p.key: ([], None) for p in chain.problems[1:]}

    for config in ("pairs", "problems"):  # the same release as written before the columns existed
        for f in (out / config / "data").iterdir():
            table = pq.read_table(f)
            pq.write_table(table.drop_columns(["requirements", "environment_key"]), f, compression="zstd")
    one_json(invoke("--db", str(tmp_path / "b.duckdb"), "db", "import", str(out), "--json"))
    got = requirements_in(tmp_path / "b.duckdb")
    assert got[needs.key] == (["einops"], requirement_key(["einops"]))  # unversioned: the release did not say
    assert all(v == ([], None) for k, v in got.items() if k != needs.key)


def test_generated_problems_are_split_by_their_code_in_the_release_and_the_exports(tmp_path, monkeypatch):
    """The synthetic generator's problems share a template: the release and the training exports
    cluster them by code up to literals (not MinHash, which chains a family into a few clusters),
    so the held-out split holds part of every family, and both give a problem the same split."""
    monkeypatch.chdir(tmp_path)
    db = str(tmp_path / "gen.duckdb")
    one_json(invoke("--db", db, "harvest", "synthetic", "--family", "elementwise", "--count", "80", "--no-probe", "--json"))
    out = tmp_path / "release"
    one_json(invoke("--db", db, "db", "release", "--out", str(out), "--json"))
    rows = [r for s in ("train", "validation") for r in pq.read_table(out / "problems" / "data" / f"{s}-00000-of-00001.parquet").to_pylist()]
    assert len(rows) >= 70
    clusters = Counter(r["cluster"] for r in rows)
    assert max(clusters.values()) <= 4, clusters.most_common(3)
    held = sum(r["split"] == "validation" for r in rows)
    assert 5 <= held <= 14
    one_json(invoke("--db", db, "db", "export", "rl", "--out", str(tmp_path / "rl"), "--json"))
    from autotriton.warehouse.layout import read_export
    exported = read_export(tmp_path / "rl").to_pylist()
    released = {r["problem_key"]: r["split"] for r in rows}
    assert exported and all(released[r["problem_key"]] == r["split"] for r in exported)
