"""A long command keeps the warehouse open only while it writes (Warehouse(hold=False)): `db stats`
and other writers get in while it computes, and its running run is not taken for crashed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from autotriton.warehouse import Warehouse, WarehouseLockedError

WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from autotriton.warehouse import Warehouse
    db, hold, flag = sys.argv[1], sys.argv[2] == "hold", Path(sys.argv[3])
    wh = Warehouse(db, hold=hold)
    run = wh.start_run("eval", {"what": "a long evaluation"})
    tmp = Path(str(flag) + ".tmp")             # written whole, then renamed: the test never reads it half-written
    tmp.write_text(run.run_id)
    tmp.rename(flag)
    deadline = time.monotonic() + 25          # the computation: no warehouse call meanwhile
    while time.monotonic() < deadline and not Path(str(flag) + ".stop").exists():
        sum(i * i for i in range(10000))
    wh.finish_run(run, "succeeded", {"done": True})
    wh.close()
""")


def start_writer(tmp_path: Path, hold: bool):
    db, flag = tmp_path / "w.duckdb", tmp_path / ("flag-hold" if hold else "flag")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent))
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db), "hold" if hold else "transient", str(flag)], env=env)
    deadline = time.monotonic() + 120
    while not flag.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "the writer did not start"
        time.sleep(0.1)
    return proc, db, flag, flag.read_text()


def test_db_stats_reads_while_a_long_command_computes(tmp_path, monkeypatch):
    from autotriton.flows.cli import app

    monkeypatch.chdir(tmp_path)
    proc, db, flag, run_id = start_writer(tmp_path, hold=False)
    try:
        t0 = time.monotonic()
        result = CliRunner().invoke(app, ["--db", str(db), "db", "stats", "--json"])
        assert result.exit_code == 0, result.output
        assert time.monotonic() - t0 < 15 and proc.poll() is None  # answered while the writer still computes
        # another writer gets in too, and sees the live run as running, not crashed
        with Warehouse(db, hold=False) as other:
            mine = other.start_run("harvest", {})
            other.finish_run(mine, "succeeded", {})
            [row] = [r for r in other.runs(limit=None) if r["run_id"] == run_id]
            assert row["status"] == "running"
    finally:
        Path(str(flag) + ".stop").write_text("")
        assert proc.wait(timeout=120) == 0
    with Warehouse(db, read_only=True) as wh:
        [row] = [r for r in wh.runs(limit=None) if r["run_id"] == run_id]
        assert row["status"] == "succeeded"


def test_a_warehouse_held_for_the_whole_command_keeps_readers_out(tmp_path):
    """What hold=False fixes: the old way (hold=True) refuses a reader for the whole command."""
    proc, db, flag, _ = start_writer(tmp_path, hold=True)
    try:
        with pytest.raises(WarehouseLockedError, match=str(proc.pid)):
            Warehouse(db, read_only=True)
    finally:
        Path(str(flag) + ".stop").write_text("")
        assert proc.wait(timeout=120) == 0
