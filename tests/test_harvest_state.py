"""The incremental harvest state lives in the warehouse (issue 18): a copy of the .duckdb file
harvests on, a failed store leaves the state as it was, an older side file is imported once,
and a harvest without a warehouse keeps its state in memory (or the file it was given)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotriton.flows.cli import app
from autotriton.harvesting import HarvestConfig, HarvestState, harvest_local
from autotriton.warehouse import Warehouse

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "modules"


def _invoke(args: list[str]) -> dict:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout.strip().splitlines()[-1])


def _harvest(db: Path, folder: Path) -> dict:
    return _invoke(["--db", str(db), "harvest", "local", str(folder), "--no-probe", "--json"])


@pytest.fixture
def modules(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "modules"  # a copy outside git: the checkout's HEAD moves as people commit
    shutil.copytree(EXAMPLES, folder)
    return folder


def _state(db: Path) -> dict:
    with Warehouse(db, read_only=True) as wh:
        return wh.harvest_state()


def test_the_state_is_in_the_warehouse_and_a_copied_file_harvests_on(tmp_path, modules):
    db = tmp_path / "h.duckdb"
    first = _harvest(db, modules)
    assert first["files"] == 8 and first["new_rows"]["problems"] == 13
    state = _state(db)
    assert set(state["sources"]) == {f"local:{modules}"} and len(state["sources"][f"local:{modules}"]["files"]) == 8
    assert len(state["seen"]) == 13
    assert not list(tmp_path.glob("*harvest-state*")) and not (tmp_path / ".autotriton").exists()  # no side file
    assert _harvest(db, modules)["unchanged"] == 8
    # Only the .duckdb file, elsewhere: the state came with it.
    moved = tmp_path / "elsewhere" / "copy.duckdb"
    moved.parent.mkdir()
    shutil.copyfile(db, moved)
    again = _harvest(moved, modules)
    assert again["unchanged"] == 8 and again["files"] == 0 and all(v == 0 for v in again["new_rows"].values())
    stats = _invoke(["--db", str(moved), "db", "stats", "--json"])
    assert stats["harvest_state"] == {"sources": 1, "seen_modules": 13}


def test_a_failed_store_leaves_the_state_unchanged(tmp_path, modules, monkeypatch):
    db = tmp_path / "h.duckdb"
    _harvest(db, modules)
    before = _state(db)
    (modules / "gated.py").write_text((modules / "gated.py").read_text() + "\n# changed\n")

    def broken(self, run, problems):
        raise RuntimeError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(Warehouse, "put_problems", broken)
        result = CliRunner().invoke(app, ["--db", str(db), "harvest", "local", str(modules), "--no-probe", "--json"])
        assert result.exit_code == 2 and "could not store the harvest" in result.output and "disk full" in result.output
    assert _state(db) == before
    assert _harvest(db, modules)["unchanged"] == 7  # the changed file is read again


def test_harvests_of_different_sources_from_one_state_keep_each_others_work(tmp_path, modules):
    """Two harvests handed the same state (as the refresh flow hands it to its tasks) each record
    only the sources they touched."""
    from autotriton.tasks.steps import store_harvest_results

    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(modules / "gated.py", other / "gated.py")
    cfg = HarvestConfig(probe=False)
    data = {"sources": {"local:/gone": {"files": {}}}, "seen": []}
    a = harvest_local(modules, cfg, state=HarvestState.from_data(data), commit_state=False)
    b = harvest_local(other, cfg, state=HarvestState.from_data(data), commit_state=False)
    with Warehouse(tmp_path / "w.duckdb") as wh:
        run = wh.start_run("harvest", {})
        store_harvest_results(wh, run, [a])
        store_harvest_results(wh, run, [b])
        state = wh.harvest_state()
    assert set(state["sources"]) == {f"local:{modules}", f"local:{other}"}  # neither undid the other; /gone untouched
    assert len(state["seen"]) == 13  # other's module was seen by a too: one key


def test_a_legacy_side_file_is_imported_once_and_left_alone(tmp_path, modules):
    db = tmp_path / "h.duckdb"
    legacy = Path(f"{db}.harvest-state.json")  # where older versions kept it
    harvest_local(modules, HarvestConfig(probe=False, state_path=str(legacy)))  # a harvest of an older version
    text = legacy.read_text()
    assert f"local:{modules}" in text
    first = _harvest(db, modules)
    assert first["unchanged"] == 8 and first["harvest_state_imported"] == str(legacy)
    assert set(_state(db)["sources"]) == {f"local:{modules}"}
    assert legacy.read_text() == text  # untouched
    legacy.write_text("{not json")  # no longer read: a damaged file does not matter any more
    second = _harvest(db, modules)
    assert second["unchanged"] == 8 and "harvest_state_imported" not in second


def test_full_harvest_leaves_the_state_as_it_is(tmp_path, modules):
    db = tmp_path / "h.duckdb"
    _harvest(db, modules)
    before = _state(db)
    (modules / "gated.py").write_text((modules / "gated.py").read_text() + "\n# changed\n")
    _invoke(["--db", str(db), "harvest", "local", str(modules), "--no-probe", "--full", "--json"])
    assert _state(db) == before


def test_a_library_harvest_without_a_warehouse_keeps_its_state_in_memory(tmp_path, modules):
    assert harvest_local(modules, HarvestConfig(probe=False)).state is not None
    again = harvest_local(modules, HarvestConfig(probe=False))
    assert again.unchanged == 0 and again.files == 8  # nothing was kept between the calls
    assert not (tmp_path / ".autotriton").exists() and not list(tmp_path.glob("*.json"))
