"""Writes: the put_* methods of the Warehouse. Each is idempotent on the records' content keys,
goes through Arrow (one INSERT ... SELECT per put, never row by row) and runs in one
transaction, so an exception or a killed process leaves no partial rows."""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping

import duckdb
import pyarrow as pa

from autotriton.records import Candidate, Checkpoint, Evaluation, Export, HarvestedModule, Problem, SourceRef, Verdict
from autotriton.warehouse.connection import WarehouseError, _locked, _now, _q
from autotriton.warehouse.runs import Run
from autotriton.warehouse.schema import ARROW_TYPES, HARVEST_STATE_TABLES, TABLES, TableSpec, arrow_table, dumps, row_key


class WritesMixin:
    """put_sources, put_modules, put_problems, ... : records in, number of new rows out."""

    def _insert(self, con: duckdb.DuckDBPyConnection, spec: TableSpec, rows: list[dict[str, Any]],
                lineage: dict[str, Any]) -> int:
        """Insert rows into spec.table in the caller's transaction; returns how many keys were new."""
        if not rows:
            return 0
        key = spec.key_column
        unique: dict[str, dict[str, Any]] = {}
        for row in rows:  # within one put the last occurrence of a key wins
            unique[row[key]] = {**row, **lineage}
        with self._incoming(con, spec.table, arrow_table(spec, list(unique.values()))) as view:
            new = con.execute(
                f"SELECT count(*) FROM {view} i ANTI JOIN {_q(spec.table)} t ON t.{_q(key)} = i.{_q(key)}"
            ).fetchall()[0][0]
            cols = ", ".join(_q(c) for c, _ in spec.all_columns)
            sql = f"INSERT INTO {_q(spec.table)} ({cols}) SELECT {cols} FROM {view}"
            if spec.policy == "newest_wins":
                updates = ", ".join(f"{_q(c)} = excluded.{_q(c)}" for c, _ in spec.all_columns if c != key)
                sql += (f" ON CONFLICT ({_q(key)}) DO UPDATE SET {updates} "
                        f"WHERE {_q(spec.table)}.payload_hash <> excluded.payload_hash")
            else:
                sql += " ON CONFLICT DO NOTHING"
            con.execute(sql).fetchall()
        return int(new)

    @contextmanager
    def _incoming(self, con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> Iterator[str]:
        """`rows` registered as a view for one INSERT ... SELECT into `table` (its name is yielded);
        a DuckDB error inside becomes a WarehouseError naming the table."""
        view = f"_incoming_{table}_{uuid.uuid4().hex[:8]}"
        con.register(view, rows)
        try:
            yield view
        except duckdb.Error as exc:
            raise WarehouseError(f"{self.path}: writing {rows.num_rows} row(s) to {table} failed: {exc}") from exc
        finally:
            try:
                con.unregister(view)
            except duckdb.Error:  # the transaction is aborted; unregister after the rollback
                self._stale_views.append(view)

    def _put(self, run: Run, table: str, records: Iterable[Any]) -> int:
        self._require_writable(f"put into {table}")
        spec = TABLES[table]
        rows = [spec.to_row(r) for r in records]
        lineage = self._lineage_values(run)
        with self._transaction() as con:
            return self._insert(con, spec, rows, lineage)

    @_locked
    def put_sources(self, run: Run, refs: Iterable[SourceRef]) -> int:
        return self._put(run, "sources", refs)

    @_locked
    def put_modules(self, run: Run, modules: Iterable[HarvestedModule]) -> int:
        """Modules and, in the same transaction, their SourceRefs. Returns the number of new modules."""
        self._require_writable("put_modules")
        modules = list(modules)
        sources = [TABLES["sources"].to_row(m.source) for m in modules]
        rows = [TABLES["modules"].to_row(m) for m in modules]
        lineage = self._lineage_values(run)
        with self._transaction() as con:
            self._insert(con, TABLES["sources"], sources, lineage)
            return self._insert(con, TABLES["modules"], rows, lineage)

    @_locked
    def put_problems(self, run: Run, problems: Iterable[Problem]) -> int:
        return self._put(run, "problems", problems)

    @_locked
    def put_rejections(self, run: Run, rows: Iterable[Any]) -> int:
        """Rejections: mappings or objects with stage, subject (a file path or a key), reason, detail."""
        clean = []
        for i, item in enumerate(rows):
            get = item.get if isinstance(item, Mapping) else (lambda name, default=None, _o=item: getattr(_o, name, default))
            row = {f: get(f, None) for f in ("stage", "subject", "reason", "detail")}
            missing = [f for f in ("stage", "subject", "reason") if not row[f]]
            if missing:
                raise ValueError(f"put_rejections: row {i} lacks {', '.join(missing)} (got {row})")
            row = {k: (str(v) if v is not None else None) for k, v in row.items()}
            clean.append(row)
        spec = TABLES["rejections"]
        for row in clean:
            row["key"] = row_key("rejections", row)
        self._require_writable("put_rejections")
        lineage = self._lineage_values(run)
        with self._transaction() as con:
            return self._insert(con, spec, clean, lineage)

    @_locked
    def reject_problems(self, run: Run, reasons: Mapping[str, tuple[str, str]], stage: str = "reprobe") -> int:
        """Problems stored as runnable that a later check refuses (`reasons`: problem key -> (reason,
        detail)): status 'rejected' with the reason, and a rejection row naming the problem, in one
        transaction. Returns how many problems changed (already rejected ones are left as they are)."""
        if not reasons:
            return 0
        self._require_writable("reject_problems")
        spec = TABLES["rejections"]
        rows = [{"stage": stage, "subject": key, "reason": reason, "detail": detail}
                for key, (reason, detail) in reasons.items()]
        for row in rows:
            row["key"] = row_key("rejections", row)
        lineage = self._lineage_values(run)
        with self._transaction() as con:
            keys = pa.table({"key": list(reasons), "why": [f"{stage}: {reason}" for reason, _ in reasons.values()]})
            con.register("_rejected_problems", keys)
            try:
                changed = len(con.execute("UPDATE problems SET status = 'rejected', reject_reason = r.why FROM _rejected_problems r "
                                          "WHERE problems.key = r.key AND problems.status = 'runnable' "
                                          "RETURNING problems.key").fetchall())
            finally:
                con.unregister("_rejected_problems")
            self._insert(con, spec, rows, lineage)
        return int(changed)

    @_locked
    def put_candidates(self, run: Run, candidates: Iterable[Candidate]) -> int:
        return self._put(run, "candidates", candidates)

    @_locked
    def set_words(self, run: Run, words: Mapping[str, tuple[str, str]]) -> int:
        """New (instruction, reasoning) for stored candidates (`words`: candidate key -> words), in one
        transaction. Words are not part of a candidate's key, so its verdicts and its lineage (the run
        that made it) stay as they are; `run` (the run rewriting them) must exist and records the
        change in its summary. Returns how many rows changed."""
        if not words:
            return 0
        self._require_writable("set_words")
        self._lineage_values(run)  # a run of this warehouse
        table = pa.table({"key": list(words), "instruction": [w[0] for w in words.values()],
                          "reasoning": [w[1] for w in words.values()]})
        with self._transaction() as con:
            con.register("_new_words", table)
            try:
                return len(con.execute(
                    "UPDATE candidates SET instruction = w.instruction, reasoning = w.reasoning FROM _new_words w "
                    "WHERE candidates.key = w.key AND (candidates.instruction IS DISTINCT FROM w.instruction "
                    "OR candidates.reasoning IS DISTINCT FROM w.reasoning) RETURNING candidates.key").fetchall())
            finally:
                con.unregister("_new_words")

    @_locked
    def put_verdicts(self, run: Run, verdicts: Iterable[Verdict]) -> int:
        """A verdict whose key exists with different content (re-judged) replaces it: newest wins."""
        return self._put(run, "verdicts", verdicts)

    @_locked
    def put_exports(self, run: Run, exports: Iterable[Export]) -> int:
        return self._put(run, "exports", exports)

    @_locked
    def put_checkpoints(self, run: Run, checkpoints: Iterable[Checkpoint]) -> int:
        return self._put(run, "checkpoints", checkpoints)

    @_locked
    def put_evaluations(self, run: Run, evaluations: Iterable[Evaluation]) -> int:
        """Evaluations and their per-sample links to verdicts (evaluation_samples), in one transaction."""
        self._require_writable("put_evaluations")
        evaluations = list(evaluations)
        spec = TABLES["evaluations"]
        rows = [spec.to_row(e) for e in evaluations]
        samples = []
        for ev in evaluations:
            for position, vkey in enumerate(ev.verdict_keys):
                sample = {"evaluation_key": ev.key, "verdict_key": vkey, "position": position}
                sample["key"] = row_key("evaluation_samples", sample)
                samples.append(sample)
        lineage = self._lineage_values(run)
        with self._transaction() as con:
            new = self._insert(con, spec, rows, lineage)
            keys = sorted({ev.key for ev in evaluations})
            if keys:  # a re-run evaluation replaces its sample links
                con.execute("DELETE FROM evaluation_samples WHERE evaluation_key IN (SELECT unnest(?::VARCHAR[]))", [keys]).fetchall()
            self._insert(con, TABLES["evaluation_samples"], samples, lineage)
            return new


    @_locked
    def put_harvest_state(self, run: Run | None, sources: Mapping[str, Any], seen: Iterable[str] = (), *,
                          replace: bool = True) -> int:
        """Record the incremental harvest's state: each source's state (source id -> JSON-able
        data) and the module keys seen, in one transaction (the caller's, inside atomic()).
        replace=True: a source's row is replaced by the new state (the harvest that touched it
        knows best); False: only sources without a row are added (an import from an older side
        file never undoes a newer harvest). Seen keys are only ever added. run None: an import,
        recorded without a run. Returns the number of source rows added or changed."""
        self._require_writable("put_harvest_state")
        run_id = self._lineage_values(run)["run_id"] if run is not None else None
        now = _now()
        state_rows = {"source_id": [], "state": [], "run_id": [], "updated_at": []}
        for source_id, data in sorted(sources.items()):
            for col, value in (("source_id", source_id), ("state", dumps(data)), ("run_id", run_id), ("updated_at", now)):
                state_rows[col].append(value)
        keys = sorted(set(seen))
        seen_rows = {"module_key": keys, "run_id": [run_id] * len(keys), "created_at": [now] * len(keys)}
        with self._transaction() as con:
            changed = 0
            if keys:
                self._insert_state_rows(con, "harvest_seen", seen_rows, " ON CONFLICT DO NOTHING")
            if state_rows["source_id"]:
                on_conflict = (" ON CONFLICT (source_id) DO UPDATE SET state = excluded.state, run_id = excluded.run_id, "
                               "updated_at = excluded.updated_at "
                               "WHERE CAST(harvest_state.state AS VARCHAR) <> CAST(excluded.state AS VARCHAR)"
                               if replace else " ON CONFLICT DO NOTHING")
                changed = self._insert_state_rows(con, "harvest_state", state_rows, on_conflict, count_changed=replace)
            return changed

    def _insert_state_rows(self, con: duckdb.DuckDBPyConnection, table: str, columns: dict[str, list[Any]],
                           on_conflict: str, count_changed: bool = False) -> int:
        """INSERT one Arrow batch into a harvest state table; returns how many rows were new
        (count_changed: or whose state differs)."""
        spec = HARVEST_STATE_TABLES[table]
        key = spec[0][0]
        incoming = pa.Table.from_pydict(columns, schema=pa.schema([(c, ARROW_TYPES[t]) for c, t in spec]))
        with self._incoming(con, table, incoming) as view:
            differs = " OR CAST(t.state AS VARCHAR) <> i.state" if count_changed else ""
            new = con.execute(f"SELECT count(*) FROM {view} i LEFT JOIN {_q(table)} t ON t.{_q(key)} = i.{_q(key)} "
                              f"WHERE t.{_q(key)} IS NULL{differs}").fetchall()[0][0]
            cols = ", ".join(_q(c) for c, _ in spec)
            con.execute(f"INSERT INTO {_q(table)} ({cols}) SELECT {cols} FROM {view}{on_conflict}").fetchall()
        return int(new)
