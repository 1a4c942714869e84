"""Warehouse writes and reads: idempotent puts, lineage columns, record round trips, verdict policy, lineage walk."""

from __future__ import annotations

import dataclasses

import pytest

from autotriton.records import Checkpoint, Export, Problem
from autotriton.warehouse import UnknownKeyError, Warehouse, WarehouseError
from autotriton.warehouse.schema import LINEAGE_COLUMNS, TABLES

from warehouse_helpers import make_chain, make_evaluation, store_chain


@pytest.fixture
def wh(tmp_path):
    with Warehouse(tmp_path / "w.duckdb") as warehouse:
        yield warehouse


def test_reingesting_identical_rows_adds_nothing(wh):
    chain = make_chain(6)
    run = wh.start_run("harvest", {"harvest": {"max_files": 10}})
    assert store_chain(wh, run, chain) == {"modules": 6, "problems": 6, "candidates": 6, "verdicts": 6}
    assert wh.put_sources(run, chain.sources) == 0  # already stored alongside their modules
    before = {t: wh.sql(f"SELECT count(*) FROM {t}").rows[0][0] for t in TABLES}
    again = wh.start_run("harvest", {"harvest": {"max_files": 10}})
    assert store_chain(wh, again, chain) == {"modules": 0, "problems": 0, "candidates": 0, "verdicts": 0}
    # Also within one put: duplicates count once; a partly new batch counts only the new rows.
    more = make_chain(8)
    assert wh.put_problems(again, more.problems + more.problems) == 2
    after = {t: wh.sql(f"SELECT count(*) FROM {t}").rows[0][0] for t in TABLES}
    assert after["problems"] == before["problems"] + 2
    assert {t: n for t, n in after.items() if t != "problems"} == {t: n for t, n in before.items() if t != "problems"}
    # The identical re-ingest did not move rows to the second run.
    assert wh.sql("SELECT count(*) FROM candidates WHERE run_id = ?", [again.run_id]).rows == [(0,)]


def test_keys_ignore_comments_and_formatting(wh):
    run = wh.start_run("harvest", {})
    problem = make_chain(1).problems[0]
    reformatted = dataclasses.replace(problem, reference_source="# a comment\n" + problem.reference_source.replace("x * 0", "x*0"))
    assert reformatted.key == problem.key
    assert wh.put_problems(run, [problem]) == 1
    assert wh.put_problems(run, [reformatted]) == 0


def test_lineage_columns_are_never_null(wh):
    chain = make_chain(4)
    run = wh.start_run("refresh", {"x": 1})
    store_chain(wh, run, chain)
    wh.put_rejections(run, [{"stage": "harvest", "subject": "bad.py", "reason": "syntax_error", "detail": "line 3"}])
    export = wh.export_parquet("problems", [{"k": p.key} for p in chain.problems], {"all": True}, run)
    wh.put_checkpoints(run, [Checkpoint("tiny", export.key, "sft", {"lr": 1e-4}, {"loss": 1.0}, "/ckpt")])
    wh.put_evaluations(run, [make_evaluation(chain.verdicts)])
    wh.finish_run(run, "succeeded", {"ok": True})
    for table in TABLES:
        total = wh.sql(f"SELECT count(*) FROM {table}").rows[0][0]
        assert total > 0, f"{table} got no rows in this test"
        for column in LINEAGE_COLUMNS:
            nulls = wh.sql(f"SELECT count(*) FROM {table} WHERE {column} IS NULL").rows[0][0]
            assert nulls == 0, f"{table}.{column} has NULLs"
        runs = wh.sql(f"SELECT DISTINCT run_id, config_hash, code_version FROM {table}").rows
        assert runs == [(run.run_id, run.config_hash, run.code_version)]
    # Parent keys are there too: problem -> module -> source, verdict -> candidate -> problem.
    orphans = wh.sql(
        "SELECT count(*) FROM problems p LEFT JOIN modules m ON m.key = p.module_key "
        "LEFT JOIN sources s ON s.key = p.source_key WHERE m.key IS NULL OR s.key IS NULL"
    ).rows[0][0]
    assert orphans == 0
    run_row = wh.runs(limit=1)[0]
    assert run_row["status"] == "succeeded" and run_row["summary"] == {"ok": True} and run_row["config"] == {"x": 1}


def test_run_config_hash_matches_pipeline_config_hash(wh):
    from autotriton.flows.config import PipelineConfig

    cfg = PipelineConfig()
    assert wh.start_run("train", cfg).config_hash == cfg.hash


def test_flow_run_id_recorded_from_prefect_environment(wh, monkeypatch):
    from autotriton.tasks.runs import start_run  # the caller passes the flow-run id: the warehouse knows no Prefect

    monkeypatch.setenv("PREFECT__FLOW_RUN_ID", "0f6e2c1a-1111-2222-3333-444455556666")
    run = start_run(wh, "refresh", {})
    wh.put_problems(run, make_chain(1).problems)
    assert run.flow_run_id == "0f6e2c1a-1111-2222-3333-444455556666"
    assert wh.sql("SELECT DISTINCT flow_run_id FROM problems").rows == [(run.flow_run_id,)]
    assert wh.lineage(run.flow_run_id)["runs"][0]["rows_written"] == {"problems": 1}


def test_records_round_trip(wh):
    chain = make_chain(5)
    run = wh.start_run("harvest", {})
    store_chain(wh, run, chain)
    rejected = Problem("import torch\nclass Model: pass\n", "bad", status="rejected", reject_reason="needs_data_files")
    wh.put_problems(run, [rejected])
    by_key = lambda records: sorted(records, key=lambda r: r.key)  # noqa: E731  (reads order by time, then key)
    assert wh.modules() == by_key(chain.modules)
    assert wh.sources() == by_key(chain.sources)
    assert wh.problems() == by_key(chain.problems)  # runnable only, by default
    assert wh.problems(status="rejected") == [rejected]
    assert len(wh.problems(status=None)) == 6
    assert wh.problems(keys=[chain.problems[2].key]) == [chain.problems[2]]
    assert len(wh.problems(limit=2)) == 2
    assert wh.candidates(problem_keys=[chain.problems[1].key]) == [chain.candidates[1]]
    assert wh.verdicts(candidate_keys=[c.key for c in chain.candidates[:2]]) == by_key(chain.verdicts[:2])
    assert next(v for v in wh.verdicts() if v.key == chain.verdicts[2].key).violations[0].rule == "TRITON-NO-LAUNCH"
    pairs = wh.validated_pairs()
    assert [(p.key, c.key, v.key) for p, c, v in pairs] == sorted(
        (p.key, c.key, v.key) for p, c, v in zip(chain.problems, chain.candidates, chain.verdicts) if v.correct and v.rule_ok
    )
    assert len(pairs) == 4


def test_rejudged_verdict_replaces_the_old_one(wh):
    chain = make_chain(1)
    run = wh.start_run("validate", {})
    store_chain(wh, run, chain)
    old = chain.verdicts[0]
    flaky = dataclasses.replace(old, status="incorrect", correct=False, max_abs_err=2.0)
    assert flaky.key == old.key  # same candidate, judge config and device
    later = wh.start_run("validate", {})
    assert wh.put_verdicts(later, [flaky]) == 0  # not a new row...
    assert wh.verdicts() == [flaky]  # ...but the newest judgement stands
    assert wh.sql("SELECT run_id FROM verdicts").rows == [(later.run_id,)]
    assert wh.validated_pairs() == []
    # A verdict from another device is another row; latest_verdicts keeps one per candidate.
    gpu = dataclasses.replace(old, device="NVIDIA H200", speedup=1.7)
    wh.put_verdicts(wh.start_run("validate", {}), [gpu])
    assert len(wh.verdicts()) == 2
    assert wh.latest_verdicts() == [gpu]
    assert [v.key for _, _, v in wh.validated_pairs()] == [gpu.key]


def test_rejections_and_evaluations(wh):
    chain = make_chain(3)
    run = wh.start_run("eval", {})
    store_chain(wh, run, chain)
    rows = [{"stage": "harvest", "subject": "a.py", "reason": "syntax_error", "detail": "line 2"},
            {"stage": "harvest", "subject": "b.py", "reason": "no_module", "detail": None}]
    assert wh.put_rejections(run, rows) == 2
    assert wh.put_rejections(run, rows) == 0
    assert sorted(r["subject"] for r in wh.rejections("harvest")) == ["a.py", "b.py"]
    with pytest.raises(ValueError, match="row 0 lacks reason"):
        wh.put_rejections(run, [{"stage": "harvest", "subject": "c.py"}])
    ev = make_evaluation(chain.verdicts)
    assert wh.put_evaluations(run, [ev]) == 1
    assert wh.evaluations() == [ev]
    assert wh.sql("SELECT verdict_key FROM evaluation_samples ORDER BY position").rows == [(v.key,) for v in chain.verdicts]
    assert wh.lineage(ev.key)["verdict_count"] == 3
    rerun = dataclasses.replace(ev, verdict_keys=[chain.verdicts[0].key], metrics={"pass@1": 1.0})
    assert wh.put_evaluations(run, [rerun]) == 0
    assert wh.evaluations() == [rerun]
    assert wh.sql("SELECT verdict_key FROM evaluation_samples").rows == [(chain.verdicts[0].key,)]


def test_lineage_walks_parents_to_the_source(wh):
    chain = make_chain(2)
    run = wh.start_run("refresh", {})
    store_chain(wh, run, chain)
    node = wh.lineage(chain.verdicts[0].key)
    assert node["table"] == "verdicts" and node["run"]["run_id"] == run.run_id
    tables = {}

    def walk(n, depth=0):
        tables.setdefault(n["table"], n["key"])
        for parent in n["parents"]:
            walk(parent, depth + 1)

    walk(node)
    assert tables == {"verdicts": chain.verdicts[0].key, "candidates": chain.candidates[0].key,
                      "problems": chain.problems[0].key, "modules": chain.modules[0].key,
                      "sources": chain.sources[0].key}
    assert node["row"]["trials"] == [{"seed": 0, "ok": True, "max_abs_err": 0.0}]  # JSON decoded
    assert node["children"] == {}
    wh.put_rejections(run, [{"stage": "validate", "subject": chain.problems[0].key, "reason": "flaky"}])
    assert wh.lineage(chain.problems[0].key)["children"] == {
        "candidates.problem_key": 1, "verdicts.problem_key": 1, "rejections.subject": 1}
    # A unique prefix works; checkpoints lead to their export; a missing parent is reported.
    assert wh.lineage(chain.modules[1].key[:8])["key"] == chain.modules[1].key
    ckpt = Checkpoint("tiny", "feedfacefeedface", "sft", {}, {}, "/ckpt")
    wh.put_checkpoints(run, [ckpt])
    parent = wh.lineage(ckpt.key)["parents"][0]
    assert parent == {"via": "export_key", "table": "exports", "key": "feedfacefeedface", "missing": True}
    with pytest.raises(UnknownKeyError, match="no row, run or flow run has key"):
        wh.lineage("0123456789abcdef")


def test_put_needs_a_started_run_and_a_writable_warehouse(tmp_path):
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh:
        with pytest.raises(TypeError, match="start_run"):
            wh.put_problems(None, [])
        with pytest.raises(TypeError, match="table candidates stores Candidate records, got Problem"):
            wh.put_candidates(wh.start_run("x", {}), make_chain(1).problems)
        foreign = dataclasses.replace(wh.start_run("x", {}), run_id="not-a-run")
        with pytest.raises(WarehouseError, match="not-a-run was not started"):
            wh.put_problems(foreign, make_chain(1).problems)
    with Warehouse(path, read_only=True) as ro:
        with pytest.raises(WarehouseError, match="read-only"):
            ro.start_run("x", {})
        assert ro.stats()["tables"]["runs"] == 2
    closed = Warehouse(path)
    closed.close()
    with pytest.raises(WarehouseError, match="closed"):
        closed.problems()


def test_runs_left_running_by_a_dead_process_are_marked_crashed(tmp_path):
    path = tmp_path / "w.duckdb"
    with Warehouse(path) as wh:
        run = wh.start_run("refresh", {})
        wh.sql("UPDATE runs SET pid = 999999999 WHERE run_id = ?", [run.run_id])  # as if another process had died
    with Warehouse(path) as wh:
        assert wh.runs()[0]["status"] == "crashed"


def test_exports_table_idempotent_by_content_hash(wh, tmp_path):
    run = wh.start_run("export", {})
    rows = [{"a": i, "split": "train" if i % 4 else "validation"} for i in range(8)]
    first = wh.export_parquet("pairs", rows, {"f": 1}, run, out_dir=tmp_path / "a")
    second = wh.export_parquet("pairs", list(reversed(rows)), {"f": 1}, run, out_dir=tmp_path / "a")
    assert first == second and first.splits == {"train": 6, "validation": 2}
    assert wh.exports() == [first]
    other = wh.export_parquet("pairs", rows[:-1], {"f": 1}, run, out_dir=tmp_path / "a")
    assert other.key != first.key and len(wh.exports("pairs")) == 2 and other.path == first.path  # stable name
    # The same content written elsewhere: still one row, pointing at the newest file.
    moved = wh.export_parquet("pairs", rows, {"f": 1}, run, out_dir=tmp_path / "b")
    assert moved.key == first.key and wh.export(first.key).path == moved.path
    assert isinstance(wh.export(first.key), Export)


def test_not_a_warehouse_file_is_a_clear_error(tmp_path):
    bogus = tmp_path / "notes.duckdb"
    bogus.write_text("not a database\n")
    for read_only in (False, True):
        with pytest.raises(WarehouseError, match=r"notes.duckdb: not a readable DuckDB warehouse .*Point --db"):
            Warehouse(bogus, read_only=read_only)
    assert bogus.read_text() == "not a database\n"  # left untouched


def test_run_config_is_stored_without_secrets(wh):
    config = {"distill": {"api_key": "sk-live-123", "api_key_env": "OPENAI_API_KEY", "max_tokens": 512},
              "harvest": {"github_token": "ghp_abc", "query": "nn.Module"}, "password": ""}
    run = wh.start_run("distill", config)
    stored = wh.runs(limit=1)[0]["config"]
    assert stored == {"distill": {"api_key": "***", "api_key_env": "OPENAI_API_KEY", "max_tokens": 512},
                      "harvest": {"github_token": "***", "query": "nn.Module"}, "password": ""}
    from autotriton.hashing import content_key

    assert run.config_hash == content_key("config", config)  # the hash still identifies the real config


def test_problems_filtered_by_the_kind_of_source_they_came_from(wh):
    """`distill --source-kind pypi`: a build distils one kind of source at a time (package code
    before generated problems, say); problems without a source (suite rows) match no kind."""
    from autotriton.records import SourceRef

    run = wh.start_run("harvest", {})
    package = SourceRef(kind="pypi", repo="einops-models==1.0", commit="", path="m/a.py", licence="MIT")
    generated = SourceRef(kind="synthetic", repo="synthetic-fused-v2", commit="", path="s0/1", licence="Apache-2.0")
    wh.put_sources(run, [package, generated])
    problems = [Problem(reference_source=f"x = {i}\n", name=f"p{i}", source_key=src)
                for i, src in enumerate([package.key, generated.key, package.key, None])]
    wh.put_problems(run, problems)
    assert sorted(p.name for p in wh.problems(source_kind="pypi")) == ["p0", "p2"]
    assert [p.name for p in wh.problems(source_kind="synthetic")] == ["p1"]
    assert wh.problems(source_kind="github") == []
    assert len(wh.problems()) == 4


def test_a_build_takes_its_problems_in_turns_from_each_origin(wh):
    """`distill` orders the problems one origin (package, generator, suite) at a time, so a build
    cut off half-way has some of every source, not all of whichever was harvested first."""
    from autotriton.records import SourceRef
    from autotriton.distillation import interleave_by_origin
    from autotriton.tasks.db import problem_origins

    run = wh.start_run("harvest", {})
    sources = {name: SourceRef(kind="pypi", repo=f"{name}==1.0", commit="", path=f"{name}/m.py", licence="MIT")
               for name in ("big", "small")}
    wh.put_sources(run, list(sources.values()))
    problems = [Problem(reference_source=f"x = {i}\n", name=f"big{i}", source_key=sources["big"].key) for i in range(4)]
    problems += [Problem(reference_source=f"y = {i}\n", name=f"small{i}", source_key=sources["small"].key) for i in range(2)]
    problems.append(Problem(reference_source="z = 0\n", name="suite0", suite="kernelbench/level1"))
    # each family of the generator takes its own turn (one repository, a version per family)
    families = [SourceRef(kind="synthetic", repo="autotriton/synthetic", commit=version, path=f"s=0/index={i}", licence="MIT")
                for i, version in enumerate(["synthetic-fused-v2", "synthetic-fused-v2", "synthetic-pointwise-v1"])]
    wh.put_sources(run, families)
    problems += [Problem(reference_source=f"w = {i}\n", name=f"gen{i}", source_key=src.key) for i, src in enumerate(families)]
    wh.put_problems(run, problems)
    ordered = interleave_by_origin(problems, problem_origins(wh, problems))
    assert [p.name for p in ordered] == ["big0", "small0", "suite0", "gen0", "gen2", "big1", "small1", "gen1", "big2", "big3"]
    assert interleave_by_origin([], {}) == []


def test_a_problem_rejected_after_it_was_solved_takes_its_pairs_with_it(wh):
    # `harvest reprobe` rejects a stored problem (it returns its input): its validated pair must
    # leave the SFT data, the pairs export and the release with it, not stay as a pair of no problem.
    from autotriton.warehouse.exports import pair_rows
    from autotriton.warehouse.release import release_rows

    chain = make_chain(2)
    run = wh.start_run("harvest", {})
    store_chain(wh, run, chain)
    assert len(wh.validated_pairs()) == 2
    gone = chain.problems[0]
    assert wh.reject_problems(wh.start_run("harvest", {}), {gone.key: ("returns_input", "forward returns its input")}) == 1
    assert [p.key for p, _, _ in wh.validated_pairs()] == [chain.problems[1].key]
    assert [r["problem_key"] for r in pair_rows(wh)[0]] == [chain.problems[1].key]
    pairs, problems = release_rows(wh)
    assert [r["problem_key"] for r in pairs] == [chain.problems[1].key]
    assert [r["problem_key"] for r in problems] == [chain.problems[1].key]
    assert wh.stats()["validated_pairs"] == 1
    assert wh.solved_problem_keys() == {chain.problems[1].key}
