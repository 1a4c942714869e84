"""Reads: every query the pipeline asks of the warehouse, returning records (or plain rows), and
`sql`, `stats`, `check` for the command line."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import duckdb

from autotriton.records import Candidate, Checkpoint, Evaluation, Export, HarvestedModule, Problem, SourceRef, Verdict
from autotriton.warehouse.connection import UnknownKeyError, WarehouseError, WarehouseQueryError, _locked, _q
from autotriton.warehouse.migrations import current_version
from autotriton.warehouse.schema import TABLES


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[tuple[Any, ...]]

    def to_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]



class ReadsMixin:
    """The read queries of the Warehouse."""

    def _fetch_dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cur = self._con.execute(sql, list(params))
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]

    def _records(self, table: str, where: list[str], params: list[Any], *, source: str | None = None,
                 limit: int | None = None) -> list[Any]:
        spec = TABLES[table]
        sql = f"SELECT * FROM {source or _q(table)}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        # Deterministic order: by write time, then key (DuckDB's upsert does not keep a batch's order).
        sql += " ORDER BY created_at, key"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [spec.from_row(row) for row in self._fetch_dicts(sql, params)]

    def _records_by_key(self, table: str, keys: Iterable[str]) -> dict[str, Any]:
        """Stored key -> record, without recomputing content keys (an AST round trip per record)."""
        spec = TABLES[table]
        rows = self._fetch_dicts(f"SELECT * FROM {_q(table)} WHERE key IN (SELECT unnest(?::VARCHAR[]))", [sorted(set(keys))])
        return {row["key"]: spec.from_row(row) for row in rows}

    @staticmethod
    def _key_filter(column: str, keys: Iterable[str] | None, where: list[str], params: list[Any]) -> None:
        if keys is not None:
            where.append(f"{_q(column)} IN (SELECT unnest(?::VARCHAR[]))")
            params.append(list(keys))

    @_locked
    def sources(self, keys: Iterable[str] | None = None) -> list[SourceRef]:
        where: list[str] = []
        params: list[Any] = []
        self._key_filter("key", keys, where, params)
        return self._records("sources", where, params)

    @_locked
    def modules(self, keys: Iterable[str] | None = None) -> list[HarvestedModule]:
        where: list[str] = []
        params: list[Any] = []
        self._key_filter("key", keys, where, params)
        rows = self._fetch_dicts(
            "SELECT m.*, s.kind AS s_kind, s.repo AS s_repo, s.\"commit\" AS s_commit, s.path AS s_path, "
            "s.licence AS s_licence, s.stars AS s_stars, s.url AS s_url FROM modules m LEFT JOIN sources s "
            "ON s.key = m.source_key" + (" WHERE m." + where[0] if where else "") + " ORDER BY m.created_at, m.key",
            params,
        )
        out = []
        for row in rows:
            if row["s_kind"] is None:
                raise WarehouseError(f"{self.path}: module {row['key']} names source {row['source_key']}, which is not stored.")
            ref = SourceRef(row["s_kind"], row["s_repo"], row["s_commit"], row["s_path"], row["s_licence"],
                            row["s_stars"], row["s_url"])
            out.append(HarvestedModule(ref, row["class_name"], row["original_source"], row["standalone_source"]))
        return out

    @_locked
    def problems(self, status: str | None = "runnable", suite: str | None = None,
                 keys: Iterable[str] | None = None, limit: int | None = None,
                 source_kind: str | None = None, names: Sequence[str] = ()) -> list[Problem]:
        """Problems, by default the runnable ones; status=None gives all, suite filters by suite
        name, source_kind by the kind of the source they were harvested from (pypi, local, ...),
        names by globs on the problem's name (any of them; case-sensitive, `*`, `?`, `[...]`)."""
        where: list[str] = []
        params: list[Any] = []
        if status is not None:
            where.append("status = ?")
            params.append(status)
        if names:
            where.append("(" + " OR ".join(["name GLOB ?"] * len(names)) + ")")
            params.extend(names)
        if suite is not None:
            where.append("suite = ?")
            params.append(suite)
        if source_kind is not None:
            where.append("source_key IN (SELECT key FROM sources WHERE kind = ?)")
            params.append(source_kind)
        self._key_filter("key", keys, where, params)
        return self._records("problems", where, params, limit=limit)

    @_locked
    def problem_keys_of_kind(self, source_kind: str) -> set[str]:
        """Keys of the problems harvested from sources of `source_kind` (keys only: the split
        needs to know which problems are generated, not their sources again)."""
        rows = self._con.execute("SELECT key FROM problems WHERE source_key IN (SELECT key FROM sources WHERE kind = ?)",
                                 [source_kind]).fetchall()
        return {key for (key,) in rows}

    @_locked
    def problem_origins(self, keys: Iterable[str]) -> dict[str, str]:
        """Problem key -> where it came from: its source's repository (a package==version, a
        repo, a dataset file; for the synthetic generator each family, by its version), or its
        suite for suite rows."""
        rows = self._con.execute(
            "SELECT p.key, coalesce(CASE WHEN s.kind = 'synthetic' THEN s.repo || '@' || s.\"commit\" ELSE s.repo END, p.suite, '') "
            "FROM problems p LEFT JOIN sources s ON p.source_key = s.key "
            "WHERE p.key IN (SELECT unnest(?::VARCHAR[]))", [sorted(set(keys))]).fetchall()
        return {key: origin for key, origin in rows}

    @_locked
    def distilled_problem_keys(self, teacher: str) -> set[str]:
        """Keys of the problems `teacher` has already been run on: a candidate it generated
        (`generator` is its name, or its name and a colon: `replay:inductor`), however it came
        (a distill run, an imported release or dump), or a distill rejection written by a run
        configured with that teacher (a capture that failed leaves no candidate). A resumed
        build skips them."""
        rows = self._con.execute(
            "SELECT DISTINCT problem_key FROM candidates WHERE generator = ? OR starts_with(generator, ? || ':') "
            "UNION SELECT DISTINCT t.subject FROM rejections t JOIN runs u ON t.run_id = u.run_id "
            "WHERE json_extract_string(u.config, '$.distill.teacher') = ? AND t.stage = 'distill'",
            [teacher, teacher, teacher]).fetchall()
        return {row[0] for row in rows}

    @_locked
    def solved_problem_keys(self, require: str = "own_and_odd_sizes") -> set[str]:
        """Keys of the problems with a validated pair (as `validated_pairs` counts one)."""
        rows = self._con.execute("SELECT DISTINCT c.problem_key FROM latest_verdicts v JOIN candidates c "
                                 "ON c.key = v.candidate_key JOIN problems p ON p.key = c.problem_key "
                                 f"WHERE {_correct_at(require)} AND v.rule_ok AND p.status = 'runnable'").fetchall()
        return {row[0] for row in rows}

    @_locked
    def rejections(self, stage: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM rejections" + (" WHERE stage = ?" if stage else "") + " ORDER BY created_at, key"
        return self._fetch_dicts(sql, [stage] if stage else [])

    @_locked
    def candidates(self, problem_keys: Iterable[str] | None = None, keys: Iterable[str] | None = None) -> list[Candidate]:
        where: list[str] = []
        params: list[Any] = []
        self._key_filter("problem_key", problem_keys, where, params)
        self._key_filter("key", keys, where, params)
        return self._records("candidates", where, params)

    @_locked
    def verdicts(self, candidate_keys: Iterable[str] | None = None, keys: Iterable[str] | None = None) -> list[Verdict]:
        """Every stored verdict (one per candidate x judge config x device, the newest of each)."""
        where: list[str] = []
        params: list[Any] = []
        self._key_filter("candidate_key", candidate_keys, where, params)
        self._key_filter("key", keys, where, params)
        return self._records("verdicts", where, params)

    @_locked
    def latest_verdicts(self, candidate_keys: Iterable[str] | None = None) -> list[Verdict]:
        """One verdict per candidate: the newest, whatever judge config or device gave it."""
        where: list[str] = []
        params: list[Any] = []
        self._key_filter("candidate_key", candidate_keys, where, params)
        return self._records("verdicts", where, params, source="latest_verdicts")

    @_locked
    def validated_pairs(self, require: str = "own_and_odd_sizes") -> list[tuple[Problem, Candidate, Verdict]]:
        """(problem, candidate, verdict) where the candidate's latest verdict has reward 1
        (correct at the sizes `require` names, and rule_ok: validation/rewards.py `correct_at`),
        ordered by problem then candidate key. Only runnable problems' pairs: a problem rejected
        after it was solved (`harvest reprobe`: it returns its input) takes its pairs with it."""
        correct = _correct_at(require)
        cur = self._con.execute(
            "SELECT p.key AS pk, c.key AS ck, v.key AS vk FROM latest_verdicts v "
            "JOIN candidates c ON c.key = v.candidate_key JOIN problems p ON p.key = c.problem_key "
            f"WHERE {correct} AND v.rule_ok AND p.status = 'runnable' ORDER BY p.key, c.key"
        )
        triples = cur.fetchall()
        if not triples:
            return []
        problems = self._records_by_key("problems", (t[0] for t in triples))
        cands = self._records_by_key("candidates", (t[1] for t in triples))
        verdicts = self._records_by_key("verdicts", (t[2] for t in triples))
        return [(problems[p], cands[c], verdicts[v]) for p, c, v in triples]

    @_locked
    def unjudged_pairs(self) -> list[tuple[Problem, Candidate]]:
        """(problem, candidate) of runnable problems' stored candidates with code and no verdict
        yet (ready pairs imported from datasets, such as KernelBook's), to judge."""
        problems = {p.key: p for p in self.problems(status="runnable")}
        candidates = [c for c in self.candidates(problem_keys=list(problems)) if c.code] if problems else []
        judged = {v.candidate_key for v in self.verdicts(candidate_keys=[c.key for c in candidates])} if candidates else set()
        return [(problems[c.problem_key], c) for c in candidates if c.key not in judged]

    @_locked
    def exports(self, name: str | None = None) -> list[Export]:
        where, params = (["name = ?"], [name]) if name else ([], [])
        return self._records("exports", where, params)

    @_locked
    def export(self, key: str) -> Export:
        found = self._records("exports", ["key = ?"], [key])
        if not found:
            raise UnknownKeyError(f"{self.path}: no export with key {key}; list them with `autotriton db sql \"SELECT * FROM exports\"`.")
        return found[0]

    @_locked
    def checkpoints(self, export_key: str | None = None) -> list[Checkpoint]:
        where, params = (["export_key = ?"], [export_key]) if export_key else ([], [])
        return self._records("checkpoints", where, params)

    @_locked
    def evaluations(self, suite: str | None = None) -> list[Evaluation]:
        where, params = (["suite = ?"], [suite]) if suite else ([], [])
        return self._records("evaluations", where, params)

    @_locked
    def checkpoints_by_key_prefix(self, key: str) -> list[tuple[str, str]]:
        """(key, path) of the checkpoints whose key is `key` or starts with it, newest first."""
        return [tuple(row) for row in self._con.execute(
            "SELECT key, path FROM checkpoints WHERE key = ? OR starts_with(key, ?) ORDER BY created_at DESC",
            [key, key]).fetchall()]

    @_locked
    def evaluation_keys(self, ref: str) -> tuple[list[str], bool]:
        """The keys of the evaluations `ref` names (a key, a key prefix or a run id), in write
        order, and whether `ref` is the run id of one."""
        rows = self._con.execute("SELECT key FROM evaluations WHERE key = ? OR run_id = ? OR starts_with(key, ?) "
                                 "ORDER BY created_at", [ref, ref, ref]).fetchall()
        is_run = bool(self._con.execute("SELECT 1 FROM evaluations WHERE run_id = ?", [ref]).fetchall())
        return list(dict.fromkeys(r[0] for r in rows)), is_run

    @_locked
    def requirement_sets(self, *, runnable_only: bool = False) -> list[list[str]]:
        """The distinct requirement sets recorded with the problems (none: []); `runnable_only`: of
        the runnable problems only (the ones distill takes)."""
        status = "AND status = 'runnable' " if runnable_only else ""
        rows = self._con.execute("SELECT DISTINCT CAST(requirements AS VARCHAR) AS r FROM problems "
                                 "WHERE requirements IS NOT NULL AND CAST(requirements AS VARCHAR) <> '[]' "
                                 f"{status}ORDER BY r").fetchall()
        return [json.loads(r[0]) for r in rows]

    @_locked
    def harvest_state(self) -> dict[str, Any]:
        """The incremental harvest's state: {"sources": {source id: state}, "seen": [module keys]}
        (harvesting/state.py `HarvestState.from_data` takes it); both empty when none is stored."""
        sources = {sid: json.loads(state) for sid, state in
                   self._con.execute("SELECT source_id, CAST(state AS VARCHAR) FROM harvest_state ORDER BY source_id").fetchall()}
        seen = [r[0] for r in self._con.execute("SELECT module_key FROM harvest_seen ORDER BY module_key").fetchall()]
        return {"sources": sources, "seen": seen}

    @_locked
    def harvest_state_counts(self) -> dict[str, int]:
        """{"sources": sources with a stored state, "seen_modules": module keys seen}."""
        row = self._con.execute("SELECT (SELECT count(*) FROM harvest_state), (SELECT count(*) FROM harvest_seen)").fetchall()[0]
        return {"sources": int(row[0]), "seen_modules": int(row[1])}

    @_locked
    def sql(self, query: str, params: Sequence[Any] | None = None) -> QueryResult:
        """Run any SQL; returns column names and rows. Errors become WarehouseQueryError."""
        try:
            cur = self._con.execute(query, list(params or []))
            rows = cur.fetchall()  # always drain: DuckDB refuses other work while a result is open
            if cur.description is None:
                return QueryResult([], [])
            return QueryResult([d[0] for d in cur.description], rows)
        except duckdb.Error as exc:
            raise WarehouseQueryError(f"SQL failed: {exc}".strip()) from exc

    @_locked
    def stats(self) -> dict[str, Any]:
        """Row counts per table, schema version, runs by status, the last runs."""
        counts = {t: int(self._con.execute(f"SELECT count(*) FROM {_q(t)}").fetchall()[0][0]) for t in ("runs", *TABLES)}
        by_status = dict(self._con.execute("SELECT status, count(*) FROM runs GROUP BY status ORDER BY status").fetchall())
        problem_status = dict(self._con.execute("SELECT status, count(*) FROM problems GROUP BY status ORDER BY status").fetchall())
        verdict_status = dict(self._con.execute("SELECT status, count(*) FROM latest_verdicts GROUP BY status ORDER BY status").fetchall())
        validated = int(self._con.execute(
            "SELECT count(*) FROM latest_verdicts v JOIN problems p ON p.key = v.problem_key "
            "WHERE v.correct AND v.rule_ok AND p.status = 'runnable'").fetchall()[0][0])
        last = self._fetch_dicts(
            "SELECT run_id, kind, status, started_at, finished_at, flow_run_id, config_hash, code_version FROM runs "
            "ORDER BY started_at DESC, run_id DESC LIMIT 5"
        )
        size = Path(self.path).stat().st_size if self.path != ":memory:" and Path(self.path).exists() else 0
        return {
            "path": self.path, "schema_version": current_version(self._con), "size_bytes": size,
            "tables": counts, "runs_by_status": by_status, "problems_by_status": problem_status,
            "latest_verdicts_by_status": verdict_status, "validated_pairs": validated,
            "harvest_state": self.harvest_state_counts(), "last_runs": last,
        }

    @_locked
    def check(self, examples: int = 5) -> dict[str, Any]:
        """Consistency report: parent keys that point nowhere, export files that are gone, runs
        still marked running. `ok` is True when nothing was found."""
        orphans: dict[str, dict[str, Any]] = {}
        for table, spec in TABLES.items():
            for col, parent in spec.parents.items():
                rows = self._con.execute(
                    f"SELECT DISTINCT c.{_q(col)} FROM {_q(table)} c ANTI JOIN {_q(parent)} p ON p.key = c.{_q(col)} "
                    f"WHERE c.{_q(col)} IS NOT NULL ORDER BY 1"
                ).fetchall()
                if rows:
                    orphans[f"{table}.{col}"] = {"missing_in": parent, "count": len(rows), "examples": [r[0] for r in rows[:examples]]}
        missing_files = [
            {"key": key, "name": name, "path": path}
            for key, name, path in self._con.execute("SELECT key, name, path FROM exports ORDER BY created_at").fetchall()
            if not Path(path).exists()
        ]
        running = [r[0] for r in self._con.execute("SELECT run_id FROM runs WHERE status = 'running' ORDER BY started_at").fetchall()]
        return {"ok": not orphans and not missing_files, "orphans": orphans,
                "missing_export_files": missing_files, "running_runs": running}


def _correct_at(require: str) -> str:
    """The SQL test of a verdict `v` being correct at the sizes `require` names
    (validation/rewards.py `correct_at`)."""
    correct = {"own_and_odd_sizes": "v.correct", "own_sizes": "coalesce(v.correct_own_sizes, v.correct)"}.get(require)
    if correct is None:
        raise ValueError(f"unknown size requirement {require!r}: use 'own_sizes' or 'own_and_odd_sizes'")
    return correct
