"""One writer per file (a real second process gets a clear lock error) and all-or-nothing writes
(an exception or SIGKILL mid-write leaves no partial rows)."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from autotriton.warehouse import Warehouse, WarehouseError, WarehouseLockedError
from autotriton.warehouse.store import Warehouse as _Warehouse

from warehouse_helpers import make_chain

REPO_ROOT = Path(__file__).resolve().parent.parent


def _spawn(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args], cwd=REPO_ROOT,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _wait_for(proc: subprocess.Popen, marker: str, timeout: float = 60.0) -> list[str]:
    """Lines printed by proc up to and including the first one starting with marker."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"child exited before {marker!r}: {proc.stderr.read()[-2000:]}")
        lines.append(line.strip())
        if line.startswith(marker):
            return lines
    raise AssertionError(f"child did not print {marker!r} within {timeout}s")


HOLDER = """
    import sys
    from autotriton.warehouse import Warehouse
    wh = Warehouse(sys.argv[1])
    wh.start_run("holder", {})
    print("holding", flush=True)
    sys.stdin.read()  # hold the file until the test closes our stdin
    wh.close()
"""


def test_second_process_gets_a_lock_error_naming_the_holder(tmp_path):
    path = tmp_path / "w.duckdb"
    holder = _spawn(HOLDER, str(path))
    try:
        _wait_for(holder, "holding")
        for read_only in (False, True):
            with pytest.raises(WarehouseLockedError) as info:
                Warehouse(path, read_only=read_only)
            err = info.value
            assert err.pid == holder.pid
            assert "import sys" in err.command  # the holder's command line, from /proc/PID/cmdline
            message = str(err)
            assert str(path) in message and f"process {holder.pid}" in message
            assert "wait for that process" in message and "--db" in message
        # The CLI says the same and exits 2.
        cli = subprocess.run([sys.executable, "-c", "from autotriton.flows.cli import main; main()",
                              "--db", str(path), "db", "stats"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
        assert cli.returncode == 2, cli.stderr
        assert f"process {holder.pid}" in cli.stderr and "locked" in cli.stderr
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    # Once the holder is gone the file opens, and the holder's run was closed properly.
    with Warehouse(path) as wh:
        assert [r["kind"] for r in wh.runs()] == ["holder"]


def test_exception_mid_put_leaves_no_partial_rows(tmp_path, monkeypatch):
    path = tmp_path / "w.duckdb"
    chain = make_chain(5)
    calls = []
    original = _Warehouse._insert

    def insert_then_fail(self, con, spec, rows, lineage):
        new = original(self, con, spec, rows, lineage)  # the rows are in, uncommitted
        calls.append(spec.table)
        if spec.table == "modules" or spec.table == "candidates":
            raise RuntimeError("injected failure after inserting into " + spec.table)
        return new

    with Warehouse(path) as wh:
        run = wh.start_run("harvest", {})
        monkeypatch.setattr(_Warehouse, "_insert", insert_then_fail)
        with pytest.raises(RuntimeError, match="injected failure after inserting into modules"):
            wh.put_modules(run, chain.modules)  # sources went in first, in the same transaction
        with pytest.raises(RuntimeError, match="injected failure after inserting into candidates"):
            wh.put_candidates(run, chain.candidates)
        assert calls == ["sources", "modules", "candidates"]
        counts = {t: wh.sql(f"SELECT count(*) FROM {t}").rows[0][0] for t in ("sources", "modules", "candidates")}
        assert counts == {"sources": 0, "modules": 0, "candidates": 0}
        monkeypatch.undo()
        # The warehouse is still usable, and a retry stores everything once.
        assert wh.put_modules(run, chain.modules) == 5 and wh.put_candidates(run, chain.candidates) == 5
    with Warehouse(path) as wh:
        assert wh.sql("SELECT count(*) FROM sources").rows == [(5,)]


KILLED_MID_TRANSACTION = """
    import sys, time
    from autotriton.warehouse import Warehouse
    from autotriton.warehouse.store import Warehouse as W
    original = W._insert
    def insert_then_stall(self, con, spec, rows, lineage):
        new = original(self, con, spec, rows, lineage)
        if len(rows) > 1000:  # the big batch: inserted, not committed; wait to be killed
            print("inserted-uncommitted", flush=True)
            time.sleep(600)
        return new
    W._insert = insert_then_stall
    wh = Warehouse(sys.argv[1])
    small = wh.start_run("bulk", {"batch": 0})
    wh.put_rejections(small, [{"stage": "harvest", "subject": f"small/{i}.py", "reason": "r"} for i in range(100)])
    print("committed", small.run_id, flush=True)
    big = wh.start_run("bulk", {"batch": 1})
    # More than one DuckDB row group (122,880 rows), so DuckDB writes blocks before the commit.
    wh.put_rejections(big, [{"stage": "harvest", "subject": f"big/{i}.py", "reason": "r", "detail": "x" * 40}
                            for i in range(150_000)])
"""

BULK_WRITER = """
    import sys
    from autotriton.warehouse import Warehouse
    wh = Warehouse(sys.argv[1])
    for batch in range(1000):
        run = wh.start_run("bulk", {"batch": batch})
        print("writing", batch, run.run_id, flush=True)
        wh.put_rejections(run, [{"stage": "s", "subject": f"{batch}/{i}", "reason": "r", "detail": "y" * 64}
                                for i in range(40_000)])
        print("committed", batch, run.run_id, flush=True)
"""


def _check_consistent(path: Path) -> None:
    with Warehouse(path) as wh:
        for table in ("runs", "sources", "modules", "problems", "rejections", "candidates", "verdicts"):
            wh.sql(f"SELECT * FROM {table}")  # every block readable
        run = wh.start_run("after-crash", {})  # and writable
        assert wh.put_problems(run, make_chain(1).problems) == 1


def test_sigkill_mid_transaction_leaves_no_partial_rows(tmp_path):
    path = tmp_path / "w.duckdb"
    child = _spawn(KILLED_MID_TRANSACTION, str(path))
    try:
        lines = _wait_for(child, "inserted-uncommitted", timeout=120)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    small_run = next(line.split()[1] for line in lines if line.startswith("committed"))
    with Warehouse(path) as wh:
        assert wh.sql("SELECT run_id, count(*) FROM rejections GROUP BY run_id").rows == [(small_run, 100)]
        statuses = {r["run_id"]: r["status"] for r in wh.runs()}
        assert sorted(statuses.values()) == ["crashed", "crashed"]  # the dead writer's runs are closed as crashed
    _check_consistent(path)


def test_sigkill_during_a_stream_of_large_writes(tmp_path):
    """Killed at an arbitrary moment of a write loop: every batch is all there or not at all."""
    path = tmp_path / "w.duckdb"
    child = _spawn(BULK_WRITER, str(path))
    try:
        lines = _wait_for(child, "committed 1", timeout=180)
        lines += _wait_for(child, "writing", timeout=60)
        time.sleep(0.4)  # somewhere inside the next put
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    committed = {line.split()[2] for line in lines if line.startswith("committed")}
    with Warehouse(path) as wh:
        per_run = dict(wh.sql("SELECT run_id, count(*) FROM rejections GROUP BY run_id").rows)
    assert committed <= set(per_run)
    assert set(per_run.values()) == {40_000}, per_run
    _check_consistent(path)


def test_atomic_groups_puts_all_or_nothing(tmp_path):
    chain = make_chain(4)
    with Warehouse(tmp_path / "w.duckdb") as wh:
        run = wh.start_run("harvest", {})
        with pytest.raises(RuntimeError, match="harvest crashed"):
            with wh.atomic():
                assert wh.put_modules(run, chain.modules) == 4
                assert wh.put_problems(run, chain.problems) == 4
                raise RuntimeError("harvest crashed")
        assert wh.sql("SELECT (SELECT count(*) FROM modules) + (SELECT count(*) FROM problems)").rows == [(0,)]
        # A failed put whose error is swallowed inside the block dooms the whole block.
        with pytest.raises(WarehouseError, match="whole block was rolled back"):
            with wh.atomic():
                wh.put_modules(run, chain.modules)
                try:  # NOT NULL violation inside the transaction
                    wh.put_problems(run, [dataclasses.replace(chain.problems[0], name=None)])
                except WarehouseError as exc:
                    assert "writing 1 row(s) to problems failed" in str(exc) and "name" in str(exc)
        assert wh.sql("SELECT count(*) FROM modules").rows == [(0,)]
        with wh.atomic():
            wh.put_modules(run, chain.modules)
            wh.put_problems(run, chain.problems)
        assert wh.sql("SELECT (SELECT count(*) FROM modules) + (SELECT count(*) FROM problems)").rows == [(8,)]


def test_threads_share_one_warehouse(tmp_path):
    """Tasks of a flow run in threads of one process and write through one handle."""
    from concurrent.futures import ThreadPoolExecutor

    chains = [make_chain(30, tag=f"th{i}") for i in range(6)]
    with Warehouse(tmp_path / "w.duckdb") as wh:
        run = wh.start_run("refresh", {})

        def work(chain):
            counts = [wh.put_modules(run, chain.modules), wh.put_problems(run, chain.problems),
                      wh.put_candidates(run, chain.candidates), wh.put_verdicts(run, chain.verdicts)]
            return counts, len(wh.problems(keys=[p.key for p in chain.problems]))

        with ThreadPoolExecutor(max_workers=6) as pool:
            results = list(pool.map(work, chains + chains))  # each chain twice: idempotent under races too
        assert sum(sum(counts) for counts, _ in results) == 6 * 30 * 4
        assert all(seen == 30 for _, seen in results)
        assert wh.stats()["tables"]["verdicts"] == 180


def test_lock_wait_opens_once_the_holder_is_done(tmp_path):
    path = tmp_path / "w.duckdb"
    holder = _spawn(HOLDER, str(path))
    try:
        _wait_for(holder, "holding")
        threading.Timer(1.0, holder.stdin.close).start()  # the holder finishes a second from now
        start = time.monotonic()
        with Warehouse(path, lock_wait_s=60) as wh:
            waited = time.monotonic() - start
            assert [r["kind"] for r in wh.runs()] == ["holder"]
        assert 0.5 < waited < 60
    finally:
        holder.wait(timeout=30)
    holder = _spawn(HOLDER, str(path))
    try:
        _wait_for(holder, "holding")
        start = time.monotonic()
        with pytest.raises(WarehouseLockedError):
            Warehouse(path, lock_wait_s=1.0)
        assert time.monotonic() - start >= 1.0
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
