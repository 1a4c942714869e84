"""Lineage: from a row key (or a run id, or a Prefect flow-run id) to its run and its parents:
verdict -> candidate -> problem -> module -> source; checkpoint -> export; evaluation -> verdicts."""

from __future__ import annotations

import json
from typing import Any

from autotriton.warehouse.connection import UnknownKeyError, _locked, _q
from autotriton.warehouse.schema import LINEAGE_COLUMNS, TABLES


class LineageMixin:
    """lineage() and its walk over the tables' parent keys."""

    @_locked
    def lineage(self, key: str, max_children: int = 20) -> dict[str, Any]:
        """Find `key` (a row key, a unique prefix of one, a run id or a Prefect flow-run id) and
        walk its parents: verdict -> candidate -> problem -> module -> source; checkpoint -> export;
        evaluation -> its verdicts. Each node carries its row, its run and its parents."""
        key = (key or "").strip()
        if not key:
            raise UnknownKeyError("lineage: give a row key, a run id or a flow-run id")
        run_rows = self._fetch_dicts("SELECT * FROM runs WHERE run_id = ? OR flow_run_id = ? ORDER BY started_at", [key, key])
        if run_rows:
            return {"kind": "run", "key": key, "runs": [self._run_node(r) for r in run_rows]}
        table, row = self._find(key)
        node = self._node(table, row, seen=set(), max_children=max_children)
        node["children"] = self._children(table, row["key"])
        return node

    def _children(self, table: str, key: str) -> dict[str, int]:
        """How many rows point at this one: 'candidates.problem_key': 3, 'rejections.subject': 1, ..."""
        links = [(child, col) for child, spec in TABLES.items() for col, parent in spec.parents.items() if parent == table]
        links.append(("rejections", "subject"))  # rejected problems are recorded with subject = problem key
        out: dict[str, int] = {}
        for child, col in links:
            n = int(self._con.execute(f"SELECT count(*) FROM {_q(child)} WHERE {_q(col)} = ?", [key]).fetchall()[0][0])
            if n:
                out[f"{child}.{col}"] = n
        return out

    def _find(self, key: str) -> tuple[str, dict[str, Any]]:
        hits: list[tuple[str, dict[str, Any]]] = []
        for table in TABLES:
            for row in self._fetch_dicts(f"SELECT * FROM {_q(table)} WHERE key = ?", [key]):
                hits.append((table, row))
        if not hits and len(key) >= 6:
            for table in TABLES:
                for row in self._fetch_dicts(f"SELECT * FROM {_q(table)} WHERE starts_with(key, ?) LIMIT 5", [key]):
                    hits.append((table, row))
        if not hits:
            raise UnknownKeyError(
                f"{self.path}: no row, run or flow run has key {key!r}. Keys are the 16-hex content keys shown "
                "by `autotriton db sql` (or a unique prefix of at least 6 characters)."
            )
        if len(hits) > 1:
            names = ", ".join(f"{t}:{r['key']}" for t, r in hits[:6])
            raise UnknownKeyError(f"{self.path}: key {key!r} is ambiguous ({names}); give more characters.")
        return hits[0]

    def _run_node(self, run_row: dict[str, Any]) -> dict[str, Any]:
        rid = run_row["run_id"]
        counts = {t: int(self._con.execute(f"SELECT count(*) FROM {_q(t)} WHERE run_id = ?", [rid]).fetchall()[0][0]) for t in TABLES}
        node = {c: run_row[c] for c in ("run_id", "kind", "status", "started_at", "finished_at", "flow_run_id",
                                         "config_hash", "code_version", "pid", "host")}
        node["summary"] = json.loads(run_row["summary"]) if run_row["summary"] else None
        node["rows_written"] = {t: n for t, n in counts.items() if n}
        return node

    def _node(self, table: str, row: dict[str, Any], seen: set[tuple[str, str]], max_children: int) -> dict[str, Any]:
        spec = TABLES[table]
        seen.add((table, row["key"]))
        run_row = self._fetch_dicts("SELECT * FROM runs WHERE run_id = ?", [row["run_id"]])
        node: dict[str, Any] = {
            "table": table,
            "key": row["key"],
            "row": {k: _brief(json.loads(v) if k in spec.json_columns and isinstance(v, str) else v)
                    for k, v in row.items() if k not in LINEAGE_COLUMNS and k not in ("key", "payload_hash")},
            "lineage": {c: row[c] for c in LINEAGE_COLUMNS},
            "run": {c: run_row[0][c] for c in ("run_id", "kind", "status", "flow_run_id")} if run_row else None,
            "parents": [],
        }
        parents: list[tuple[str, str, str]] = [(col, ptable, row[col]) for col, ptable in spec.parents.items() if row.get(col)]
        if table == "evaluations":
            vkeys = json.loads(row["verdict_keys"]) if row["verdict_keys"] else []
            node["verdict_count"] = len(vkeys)
            parents += [("verdict_keys", "verdicts", k) for k in vkeys[:max_children]]
        for col, ptable, pkey in parents:
            if (ptable, pkey) in seen:
                continue
            found = self._fetch_dicts(f"SELECT * FROM {_q(ptable)} WHERE key = ?", [pkey])
            if found:
                node["parents"].append({"via": col, **self._node(ptable, found[0], seen, max_children)})
            else:
                node["parents"].append({"via": col, "table": ptable, "key": pkey, "missing": True})
        return node


def _brief(value: Any, limit: int = 240) -> Any:
    """Long text (source code, raw outputs) shortened for lineage display; full rows via `db sql`."""
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + f"... ({len(value)} chars)"
    return value
