"""Exports: Parquet written atomically, content-hashed, recorded; round trips through pyarrow and `datasets`."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from autotriton.warehouse import Warehouse, WarehouseError
from autotriton.warehouse.exports import pair_rows, problem_rows, verdict_rows

from warehouse_helpers import make_chain, store_chain

ROWS = [
    {"prompt": f"write kernel {i}", "completion": f"```python\nk{i}\n```", "reward": i / 10, "tags": ["a", "b"][: i % 3],
     "split": "validation" if i % 5 == 0 else "train"}
    for i in range(20)
]


@pytest.fixture
def wh(tmp_path):
    with Warehouse(tmp_path / "w.duckdb") as warehouse:
        yield warehouse


def test_parquet_and_datasets_round_trip_with_splits(wh, tmp_path):
    run = wh.start_run("export", {})
    export = wh.export_parquet("sft", ROWS, {"min_reward": 0}, run, out_dir=tmp_path / "out")
    assert export.row_count == 20 and export.splits == {"train": 16, "validation": 4}
    # A Hugging Face dataset folder with a stable name; the content hash is in the metadata.
    assert export.path == str((tmp_path / "out" / "sft").resolve())
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["sft"]  # no temp folders left
    files = sorted(p.name for p in (tmp_path / "out" / "sft" / "data").iterdir())
    assert files == ["train-00000-of-00001.parquet", "validation-00000-of-00001.parquet"]
    train_file = tmp_path / "out" / "sft" / "data" / "train-00000-of-00001.parquet"
    assert pq.read_table(train_file).to_pylist() == [r for r in ROWS if r["split"] == "train"]
    assert pq.ParquetFile(train_file).metadata.row_group(0).column(0).compression == "ZSTD"
    assert json.loads(pq.read_schema(train_file).metadata[b"autotriton"])["content_hash"] == export.content_hash
    assert export.content_hash in (tmp_path / "out" / "sft" / "README.md").read_text()
    dataset = wh.to_hf_dataset(export)
    assert len(dataset) == 20 and dataset.column_names == ["prompt", "completion", "reward", "tags", "split"]
    assert sorted(dataset.to_list(), key=lambda r: r["prompt"]) == sorted(ROWS, key=lambda r: r["prompt"])
    validation = wh.to_hf_dataset(export.key, split="validation")  # by key too
    assert validation.to_list() == [r for r in ROWS if r["split"] == "validation"]
    splits = wh.to_hf_dataset_dict(export)
    assert {name: len(ds) for name, ds in splits.items()} == {"train": 16, "validation": 4}
    recorded = wh.exports("sft")[0]
    assert recorded == export and recorded.filter == {"min_reward": 0}
    assert wh.lineage(export.key)["run"]["run_id"] == run.run_id


def test_content_hash_is_order_independent_and_content_sensitive(wh, tmp_path):
    run = wh.start_run("export", {})
    a = wh.export_parquet("sft", ROWS, {}, run, out_dir=tmp_path)
    b = wh.export_parquet("sft", ROWS[::-1], {}, run, out_dir=tmp_path)
    changed = [dict(r) for r in ROWS]
    changed[3]["completion"] += " "
    c = wh.export_parquet("sft", changed, {}, run, out_dir=tmp_path)
    renamed = wh.export_parquet("sft2", ROWS, {}, run, out_dir=tmp_path)
    assert a.content_hash == b.content_hash
    assert len({a.content_hash, c.content_hash, renamed.content_hash}) == 3
    assert wh.sql("SELECT count(*) FROM exports").rows == [(3,)]


def test_bad_rows_leave_no_file_and_no_record(wh, tmp_path):
    run = wh.start_run("export", {})
    with pytest.raises(WarehouseError, match="export sft: rows do not form one table"):
        wh.export_parquet("sft", [{"a": 1}, {"a": "text"}], {}, run, out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
    assert wh.exports() == []
    with pytest.raises(ValueError, match="must be letters"):
        wh.export_parquet("../escape", ROWS, {}, run, out_dir=tmp_path)


def test_missing_or_replaced_export_files_are_a_clear_error(wh, tmp_path):
    run = wh.start_run("export", {})
    export = wh.export_parquet("sft", ROWS, {}, run, out_dir=tmp_path)
    newer = wh.export_parquet("sft", ROWS[:-1], {}, run, out_dir=tmp_path)  # same stable name: replaces the folder
    assert newer.path == export.path and newer.key != export.key
    with pytest.raises(WarehouseError, match=rf"now holds export {newer.key}, not {export.key}"):
        wh.to_hf_dataset(export)
    assert len(wh.to_hf_dataset(newer)) == 19
    import shutil

    shutil.rmtree(newer.path)
    with pytest.raises(WarehouseError, match=r"are gone; re-create them with `autotriton db export sft`"):
        wh.to_hf_dataset(newer)


def test_hf_folder_loads_with_datasets_load_dataset(wh, tmp_path):
    """Issue 18: `load_dataset(FOLDER)` gives train and validation splits, nothing mixed."""
    import datasets

    run = wh.start_run("export", {})
    export = wh.export_parquet("sft", ROWS, {}, run, path=tmp_path / "my-dataset")
    loaded = datasets.load_dataset(str(tmp_path / "my-dataset"), cache_dir=str(tmp_path / "cache"))
    assert sorted(loaded) == ["train", "validation"]
    assert loaded.num_rows == {"train": 16, "validation": 4}
    assert set(loaded["validation"]["split"]) == {"validation"}
    # the single-file format keeps the split column in one stable file name
    single = wh.export_parquet("sft", ROWS, {}, run, out_dir=tmp_path / "flat", format="parquet")
    assert single.path.endswith("flat/sft.parquet") and single.key == export.key
    assert pq.read_table(single.path).num_rows == 20


def test_builtin_exports(wh, tmp_path):
    chain = make_chain(6)
    run = wh.start_run("refresh", {})
    store_chain(wh, run, chain)
    rows, filter_ = problem_rows(wh)
    assert sorted(r["problem_key"] for r in rows) == sorted(p.key for p in chain.problems)
    assert json.loads(rows[0]["input_spec"]) == [{"shape": [4], "dtype": "float32"}] and filter_["status"] == "runnable"
    rows, _ = pair_rows(wh)
    good = {c.key for c, v in zip(chain.candidates, chain.verdicts) if v.correct}
    assert {r["candidate_key"] for r in rows} == good and len(rows) == 4
    pair = next(r for r in rows if r["candidate_key"] == chain.candidates[0].key)
    assert pair["code"] == chain.candidates[0].code and pair["problem_source"] == chain.problems[0].reference_source
    assert pair["reasoning"] == "scale by 0" and pair["instruction"] == "write a Triton kernel"
    rows, _ = verdict_rows(wh)
    assert sorted(r["status"] for r in rows) == ["correct"] * 4 + ["incorrect"] * 2
    assert sorted((r["status"], r["reward"]) for r in rows) == [("correct", 1.0)] * 4 + [("incorrect", 0.0)] * 2
    export = wh.export_parquet("pairs", pair_rows(wh)[0], {}, run, out_dir=tmp_path)
    assert sorted(wh.to_hf_dataset(export)["candidate_key"]) == sorted(good)


def test_columns_missing_from_some_rows_are_kept_as_nulls(wh, tmp_path):
    run = wh.start_run("export", {})
    export = wh.export_parquet("mixed", [{"a": 1}, {"a": 2, "note": "late column"}], {}, run, out_dir=tmp_path)
    assert wh.to_hf_dataset(export).to_list() == [{"a": 1, "note": None}, {"a": 2, "note": "late column"}]
    same = wh.export_parquet("mixed", [{"a": 1, "note": None}, {"a": 2, "note": "late column"}], {}, run, out_dir=tmp_path)
    assert same.key == export.key
    empty = wh.export_parquet("empty", [], {}, run, out_dir=tmp_path)
    assert empty.row_count == 0 and len(wh.to_hf_dataset(empty)) == 0
