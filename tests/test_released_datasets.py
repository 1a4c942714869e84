"""The datasets committed under datasets/ stay loadable: `autotriton db import` of each into a fresh
warehouse gives back what its release.json counts, and `datasets` reads its Parquet as the card says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotriton.flows.cli import app

RELEASES = sorted(p.parent for p in (Path(__file__).resolve().parent.parent / "datasets").glob("*/release.json"))


def test_there_is_a_released_dataset():
    assert RELEASES, "datasets/ holds no release (release.json)"


@pytest.mark.parametrize("release", RELEASES, ids=[p.name for p in RELEASES])
def test_a_committed_release_imports_into_a_fresh_warehouse(release, tmp_path):
    manifest = json.loads((release / "release.json").read_text())
    rows = manifest["counts"]["rows"]
    db = tmp_path / "fresh.duckdb"
    result = CliRunner().invoke(app, ["--db", str(db), "db", "import", str(release), "--json"])
    assert result.exit_code == 0, result.output
    imported = json.loads(result.stdout)["new_rows"]
    assert imported["problems"] == rows["problems"] and imported["candidates"] == rows["pairs"]
    stats = json.loads(CliRunner().invoke(app, ["--db", str(db), "db", "stats", "--json"]).stdout)
    assert stats["validated_pairs"] == rows["pairs"]
    assert "extern_kernels" not in (release / "pairs").joinpath("README.md").read_text()


@pytest.mark.parametrize("release", RELEASES, ids=[p.name for p in RELEASES])
def test_a_committed_release_loads_with_datasets_as_its_card_says(release):
    import datasets

    manifest = json.loads((release / "release.json").read_text())
    splits = manifest["counts"]["splits"]["pairs"]
    pairs = datasets.load_dataset("parquet", data_files={s: str(release / "pairs" / "data" / f"{s}-*.parquet") for s in splits})
    assert {s: len(pairs[s]) for s in splits} == splits
    train = pairs["train"]
    assert all("extern_kernels" not in code and "@triton.jit" in code for code in train["code"])
    assert set(train["reward"]) == {1.0} and set(train["verdict_status"]) == {"correct"}


@pytest.mark.parametrize("release", RELEASES, ids=[p.name for p in RELEASES])
def test_a_committed_releases_held_out_problems_are_an_evaluation_suite(release):
    """`autotriton eval --suite datasets/<release>/problems:validation`: the release's held-out
    problems (whole near-duplicate clusters no training row holds) load as the suite, one entry
    a problem, its reference the release's."""
    import pyarrow.parquet as pq

    from autotriton.evaluation import load_suite

    manifest = json.loads((release / "release.json").read_text())
    held_out = manifest["counts"]["splits"]["problems"]["validation"]
    suite = load_suite(f"{release / 'problems'}:validation")
    table = pq.read_table(release / "problems" / "data" / "validation-00000-of-00001.parquet").to_pylist()
    assert len(suite) == held_out == len(table)
    names = {row["reference_source"]: row["problem_name"] for row in table}
    assert {p.reference_source for p in suite} == set(names)
    assert all(p.name == names[p.reference_source] and p.suite_id.startswith("heldout/") for p in suite)
