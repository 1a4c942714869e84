"""Moving a build between machines: `db dump` writes a warehouse as Parquet, `db import` reads a
dump or a released dataset into another warehouse.

- A dump (`<dir>/warehouse.json` + one `<table>.parquet` per table, runs included, zstd) keeps
  every row as it is, lineage too; importing it inserts the rows whose key the target lacks.
  The incremental harvest's state (tables harvest_state, harvest_seen) travels the same way, so
  the importing machine harvests on from where the dump's left off; where this warehouse already
  holds a source's state, its own is kept.
- A release (warehouse/release.py, `<dir>/release.json`) holds pairs and problems; importing it
  rebuilds the SourceRef, HarvestedModule, Problem, Candidate and Verdict records from its columns
  (with the same content keys) and puts them under an `import` run.

Both are idempotent: importing the same thing twice adds nothing; each import is one transaction.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Callable

import pyarrow.parquet as pq

from autotriton.describe import instruction_for
from autotriton.environments import requirement_key
from autotriton.records import Candidate, HarvestedModule, Problem, SourceRef, Verdict, Violation
from autotriton.warehouse.layout import read_export
from autotriton.warehouse.migrations import LATEST_VERSION
from autotriton.warehouse.release import RELEASE_FORMAT
from autotriton.warehouse.schema import HARVEST_STATE_TABLES, TABLES
from autotriton.warehouse.connection import WarehouseError, _q
from autotriton.warehouse.store import Run, Warehouse

DUMP_FORMAT = "autotriton-warehouse"
DUMP_MANIFEST = "warehouse.json"
DUMP_TABLES = ("runs", *TABLES, *HARVEST_STATE_TABLES)  # parents before children
# Tables a dump written before their migration lacks (a dump at version 5 carried the harvest
# state as a side file, harvest-state.json: tasks/db.py `import_dump` restores it).
TABLE_SINCE = {name: 6 for name in HARVEST_STATE_TABLES}
OLDEST_DUMP_VERSION = 5  # dumps since then differ from this code's tables only by TABLE_SINCE's


def dump_warehouse(wh: Warehouse, out: str | os.PathLike[str]) -> dict[str, Any]:
    """Write every table to `<out>/<table>.parquet` and the manifest, atomically (a folder swapped
    in whole). Returns the manifest (schema version and rows per table)."""
    final = Path(out).resolve()
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.mkdir()
    try:
        counts = {}
        for table in DUMP_TABLES:
            target = tmp / f"{table}.parquet"
            quoted = str(target).replace("'", "''")
            wh.sql(f"COPY (SELECT * FROM {_q(table)} ORDER BY 1) TO '{quoted}' (FORMAT parquet, COMPRESSION zstd)")
            counts[table] = pq.read_metadata(target).num_rows
        manifest = {"format": DUMP_FORMAT, "schema_version": wh.schema_version, "source": wh.path, "tables": counts}
        (tmp / DUMP_MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return manifest


def detect(path: str | os.PathLike[str]) -> str:
    """"dump" or "release" for a folder `db import` can read; a clear error otherwise."""
    p = Path(path)
    if not p.is_dir():
        raise WarehouseError(f"{path}: no such folder; pass a folder written by `autotriton db dump` or `autotriton db release`.")
    for name, kind, fmt in ((DUMP_MANIFEST, "dump", DUMP_FORMAT), ("release.json", "release", RELEASE_FORMAT)):
        manifest = p / name
        if manifest.is_file():
            try:
                data = json.loads(manifest.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise WarehouseError(f"{manifest}: not valid JSON ({exc}); the folder is damaged, write it again.") from exc
            if data.get("format") != fmt:
                raise WarehouseError(f"{manifest}: format {data.get('format')!r}, expected {fmt!r}")
            return kind
    raise WarehouseError(f"{path}: neither {DUMP_MANIFEST} (a `db dump`) nor release.json (a `db release`) is there; "
                         "pass the folder those verbs wrote.")


def import_dump(wh: Warehouse, path: str | os.PathLike[str]) -> dict[str, int]:
    """Insert the dump's rows whose keys `wh` lacks, lineage as it was; new rows per table."""
    root = Path(path)
    manifest = json.loads((root / DUMP_MANIFEST).read_text(encoding="utf-8"))
    if manifest["schema_version"] > LATEST_VERSION:
        raise WarehouseError(f"{root}: dumped at schema version {manifest['schema_version']}, newer than this code "
                             f"({LATEST_VERSION}); import it with a newer autotriton.")
    if manifest["schema_version"] < OLDEST_DUMP_VERSION:
        raise WarehouseError(f"{root}: dumped at schema version {manifest['schema_version']}, older than this code "
                             f"({LATEST_VERSION}); dump it again after `autotriton db migrate` on the machine that has it.")
    new: dict[str, int] = {}
    with wh.atomic():
        for table in DUMP_TABLES:
            file = root / f"{table}.parquet"
            if TABLE_SINCE.get(table, 0) > manifest["schema_version"]:
                continue  # dumped before this table existed
            if not file.is_file():
                raise WarehouseError(f"{file}: missing from the dump; write the dump again.")
            columns = ", ".join(_q(c) for c in pq.read_schema(file).names)
            before = wh.sql(f"SELECT count(*) FROM {_q(table)}").rows[0][0]
            wh.sql(f"INSERT INTO {_q(table)} ({columns}) SELECT {columns} FROM read_parquet(?) ON CONFLICT DO NOTHING", [str(file)])
            new[table] = wh.sql(f"SELECT count(*) FROM {_q(table)}").rows[0][0] - before
    return new


def _json(value: Any, default: Any) -> Any:
    return json.loads(value) if isinstance(value, str) and value else default


def _requirements(row: dict[str, Any], derive: Callable[[str], list[str]] | None) -> tuple[list[str], str | None]:
    """The problem's dependency environment as released; a release written before releases carried
    it (no `requirements` column) gets the set derived from the reference's imports by `derive`."""
    if "requirements" in row:
        requirements = _json(row["requirements"], [])
        return requirements, row.get("environment_key") or requirement_key(requirements)
    requirements = derive(row["reference_source"]) if derive is not None else []
    return requirements, requirement_key(requirements)


def _records(row: dict[str, Any], derive: Callable[[str], list[str]] | None = None
             ) -> tuple[SourceRef | None, HarvestedModule | None, Problem]:
    source = None
    if row.get("source_kind"):
        source = SourceRef(kind=row["source_kind"], repo=row["source_repo"], commit=row["source_version"] or "",
                           path=row["source_path"] or "", licence=row["source_licence"], stars=row["source_stars"],
                           url=row["source_url"])
    module = None
    if source is not None and row.get("module_source"):
        # A release keeps the standalone module, not the whole file it came from (the key covers the former).
        module = HarvestedModule(source, row["module_class"], row["module_source"], row["module_source"])
    problem = Problem(reference_source=row["reference_source"], name=row["problem_name"],
                      module_key=row["module_key"] if module is not None else None,
                      source_key=row["source_key"] if source is not None else None,
                      init_spec=_json(row["init_spec"], []), input_spec=_json(row["input_spec"], []),
                      shape_profile=row["shape_profile"], op_tags=_json(row["op_tags"], []), status="runnable",
                      licence=row["licence"], suite=row["suite"], suite_id=row["suite_id"],
                      instruction=instruction_for(row["reference_source"]))
    problem.requirements, problem.environment_key = _requirements(row, derive)
    return source, module, problem


def import_release(wh: Warehouse, run: Run, path: str | os.PathLike[str],
                   derive_requirements: Callable[[str], list[str]] | None = None) -> dict[str, int]:
    """Rebuild the records of a release and put them (one transaction); new rows per table.
    `derive_requirements(reference_source)`: the requirement set of a problem from a release that
    does not carry one (released before it did)."""
    root = Path(path)
    sources: dict[str, SourceRef] = {}
    modules: dict[str, HarvestedModule] = {}
    problems: dict[str, Problem] = {}
    candidates: dict[str, Candidate] = {}
    verdicts: list[Verdict] = []
    for config in ("problems", "pairs"):
        for row in read_export(root / config).to_pylist():
            source, module, problem = _records(row, derive_requirements)
            if problem.key != row["problem_key"]:
                raise WarehouseError(f"{root / config}: problem {row['problem_key']} does not hash to its key any more "
                                     "(its reference_source was edited); the release is damaged.")
            if source is not None:
                sources[source.key] = source
            if module is not None:
                modules[module.key] = module
            problems[problem.key] = problem
            if config != "pairs":
                continue
            cand = Candidate(problem_key=problem.key, code=row["code"], reasoning=row["reasoning"] or "",
                             instruction=row["instruction"] or "", generator=row["teacher"] or "",
                             generator_version=row["generator_version"] or "", prompt_version=row["prompt_version"] or "",
                             sampling=_json(row["sampling"], {}), repair_round=int(row["repair_round"] or 0),
                             parent_key=row["parent_key"], usage=_json(row["usage"], {}))
            if cand.key != row["candidate_key"]:
                raise WarehouseError(f"{root / config}: candidate {row['candidate_key']} does not hash to its key; the release is damaged.")
            candidates[cand.key] = cand
            verdicts.append(Verdict(
                candidate_key=cand.key, problem_key=problem.key, status=row["verdict_status"], correct=bool(row["correct"]),
                rule_ok=bool(row["rule_ok"]), compiled=bool(row["compiled"]),
                violations=[Violation(**v) for v in _json(row["violations"], [])],
                compile_report=_json(row["compile_report"], {}), trials=_json(row["trials"], []),
                triton_kernels_launched=_json(row["triton_kernels_launched"], []), aten_ops=_json(row["aten_ops"], []),
                error=row["error"], max_abs_err=row["max_abs_err"], speedup=row["speedup"],
                speedup_vs_compile=row["speedup_vs_compile"], timing=_json(row["timing"], {}), device=row["device"],
                versions=_json(row["versions"], {}), judge_config_hash=row["judge_config_hash"],
                elapsed_s=float(row["elapsed_s"] or 0.0)))
    # A parent (a parent candidate of a repair) the release does not hold would dangle: drop the link.
    for cand in candidates.values():
        if cand.parent_key and cand.parent_key not in candidates:
            cand.parent_key = None  # not part of the key: the candidate stays the same row
    with wh.atomic():
        return {"sources": wh.put_sources(run, sources.values()), "modules": wh.put_modules(run, modules.values()),
                "problems": wh.put_problems(run, problems.values()), "candidates": wh.put_candidates(run, candidates.values()),
                "verdicts": wh.put_verdicts(run, verdicts)}
