"""The warehouse as the command line reaches it: opening it, the errors it raises, and one plain
function per thing a verb asks of it (`autotriton db ...`, and the queries of the stage verbs).

flows/ never imports the warehouse: the verbs call these, so every query stays in `warehouse/`
and every verb reaches it through one place. No Prefect import here (the CLI stays quick).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from autotriton.warehouse import (
    MigrationError,
    QueryResult,
    Run,
    UnknownKeyError,
    Warehouse,
    WarehouseError,
    WarehouseQueryError,
)
from autotriton.training.exports import TRAINING_EXPORTS
from autotriton.warehouse.exports import WAREHOUSE_EXPORTS
from autotriton.warehouse.layout import FORMATS as EXPORT_FORMATS

if TYPE_CHECKING:
    from autotriton.flows.config import PipelineConfig  # the composed config (type only: tasks never import flows)
    from autotriton.records import Candidate, Evaluation, Export, Problem

__all__ = [
    "Warehouse", "Run", "QueryResult", "WarehouseError", "MigrationError", "UnknownKeyError", "WarehouseQueryError",
    "OPEN_ERRORS", "EXPORTERS", "EXPORT_FORMATS", "open_warehouse", "warehouse_stats", "loss_report", "run_sql",
    "build_named_export", "dump_warehouse", "detect_import", "import_dump", "import_release", "lineage", "check",
    "migration_summary", "runnable_problems", "distilled_problem_keys", "problem_origins", "candidates_of", "checkpoint_by_key", "evaluation_keys", "evaluations",
    "requirement_sets", "recorded_export", "harvest_state", "import_dump_state", "legacy_dump_state", "STATE_IN_DUMP",
]

STATE_IN_DUMP = "harvest-state.json"  # the incremental harvest state as dumps before schema 6 carried it

# What opening (or using) a warehouse raises for a wrong file, a lock, or an old schema.
OPEN_ERRORS = (WarehouseError, MigrationError)


# Every export by name: the warehouse's own (function(warehouse, config) -> (rows, filter)) and the
# training exports (built from records by tasks/steps.py `export_rows`). Adding an export is one
# entry in its table (warehouse/exports.py, training/exports.py); `db export NAME` lists the names.
EXPORTERS: dict[str, Any] = {**WAREHOUSE_EXPORTS, **TRAINING_EXPORTS}


def open_warehouse(path: str | os.PathLike[str], *, read_only: bool = False,
                   export_dir: str | os.PathLike[str] | None = None, lock_wait_s: float = 0.0,
                   hold: bool = False) -> Warehouse:
    """The warehouse at `path`. hold=False (the default here): the file is open only per query
    or write, so a long verb never keeps other commands out; raises one of OPEN_ERRORS."""
    return Warehouse(path, read_only=read_only, export_dir=export_dir, lock_wait_s=lock_wait_s, hold=hold)


# -- db verbs -------------------------------------------------------------------------------------
def warehouse_stats(wh: Warehouse) -> dict[str, Any]:
    """`db stats`: row counts, runs, verdict mix, and rejections by stage and reason."""
    from autotriton.warehouse.reports import rejection_counts

    summary = wh.stats()
    summary["rejections"] = rejection_counts(wh)
    return summary


def loss_report(wh: Warehouse, top: int = 10) -> dict[str, Any]:
    """`db report`: the packages missing most and the converter's most frequent failure kinds."""
    from autotriton.warehouse.reports import loss_report as report

    return report(wh, top)


def run_sql(wh: Warehouse, query: str) -> QueryResult:
    """`db sql`: the user's query (raises WarehouseQueryError)."""
    return wh.sql(query)


def build_named_export(wh: Warehouse, run: Run, config: PipelineConfig, name: str, *, format: str = "hf",
                       path: str | os.PathLike[str] | None = None) -> Export:
    """`db export NAME`: the rows of EXPORTERS[name] written and recorded; training exports leave
    evaluation problems out (harvest.eval_suites, tasks/steps.py `export_rows`)."""
    if name in TRAINING_EXPORTS:
        from autotriton.tasks.steps import export_rows

        rows, filter_ = export_rows(wh, run, config, name)
    else:
        rows, filter_ = EXPORTERS[name](wh, config)
    return wh.export_parquet(name, rows, filter_, run, format=format, path=path)


def recorded_export(wh: Warehouse, key: str) -> Export:
    """The recorded export `key` (raises UnknownKeyError), its files checked to still hold it
    (raises WarehouseError)."""
    return wh.export_files(wh.export(key))


def dump_warehouse(wh: Warehouse, out_dir: str | os.PathLike[str]) -> dict[str, Any]:
    from autotriton.warehouse.transfer import dump_warehouse as dump

    return dump(wh, out_dir)


def detect_import(path: str | os.PathLike[str]) -> str:
    """'dump' or 'release': what `db import PATH` was given."""
    from autotriton.warehouse.transfer import detect

    return detect(path)


def import_dump(wh: Warehouse, path: str | os.PathLike[str]) -> dict[str, int]:
    """Insert a dump's rows, the incremental harvest state among them (tables harvest_state and
    harvest_seen; a dump that carries it as harvest-state.json instead, as older ones and those of
    a warehouse that never harvested since do, restores it into those tables). Where this
    warehouse holds a source's state already, its own is kept. New rows per table."""
    from autotriton.warehouse.transfer import import_dump as load

    with wh.atomic():
        new = load(wh, path)
        carried = Path(path) / STATE_IN_DUMP
        if carried.is_file():
            new["harvest_state"] = new.get("harvest_state", 0) + import_dump_state(wh, carried)
    return new


def import_dump_state(wh: Warehouse, file: str | os.PathLike[str]) -> int:
    """Add the sources and seen module keys of a state file that this warehouse lacks; new source rows."""
    from autotriton.harvesting import HarvestState

    data = HarvestState.load(file).data
    return wh.put_harvest_state(None, data["sources"], data["seen"], replace=False)


def legacy_dump_state(wh: Warehouse, config: PipelineConfig) -> Path | None:
    """The legacy side file (harvest.state_path) a `db dump` carries as STATE_IN_DUMP: the state
    of a warehouse that has not harvested since it moved into the warehouse; None otherwise."""
    from autotriton.tasks.harvest_state import legacy_state_file

    return legacy_state_file(wh, config.harvest.state_path)


def harvest_state(config: PipelineConfig, *, read_only: bool = False) -> Any:
    """The HarvestState a CLI harvest starts from (tasks/harvest_state.py), out of the warehouse
    at warehouse.path (opened only to read it; a file not created yet holds none; read_only: a
    --dry-run, which writes nothing); None when harvest.incremental is off."""
    from autotriton.tasks.harvest_state import harvest_state_data, state_for_harvest

    if not config.harvest.incremental:
        return None
    path = config.warehouse.path
    if path == ":memory:" or not Path(path).exists():
        return state_for_harvest(harvest_state_data(None, config.harvest))
    with open_warehouse(path, read_only=read_only, lock_wait_s=config.warehouse.lock_wait_s) as wh:
        return state_for_harvest(harvest_state_data(wh, config.harvest))


def import_release(wh: Warehouse, run: Run, path: str | os.PathLike[str]) -> dict[str, int]:
    from autotriton.harvesting.requirements import module_requirements
    from autotriton.warehouse.transfer import import_release as load

    # Releases carry each problem's requirement set; older ones get it from the reference's imports.
    return load(wh, run, path, derive_requirements=module_requirements)


def lineage(wh: Warehouse, key: str, max_children: int = 20) -> dict[str, Any]:
    return wh.lineage(key, max_children=max_children)


def check(wh: Warehouse) -> dict[str, Any]:
    return wh.check()


def migration_summary(wh: Warehouse) -> dict[str, Any]:
    """`db migrate`: the migrations this open applied and the schema version now."""
    return {"path": wh.path, "applied": wh.applied_migrations, "schema_version": wh.schema_version}


# -- the stage verbs' queries ---------------------------------------------------------------------
def runnable_problems(wh: Warehouse, suite: str | None = None, limit: int = 0, source_kind: str | None = None,
                      names: Sequence[str] = ()) -> list[Problem]:
    """The runnable problems (of `suite`, harvested from sources of `source_kind`, named like one of
    the globs `names`; the first `limit`, 0: all)."""
    return wh.problems(status="runnable", suite=suite, limit=limit or None, source_kind=source_kind, names=names)


def problem_origins(wh: Warehouse, problems: list[Problem]) -> dict[str, str]:
    """Problem key -> its origin (source repository, or suite): what `distill` takes turns over."""
    return wh.problem_origins(p.key for p in problems)


def distilled_problem_keys(wh: Warehouse, teacher: str) -> set[str]:
    """Problems `teacher` was already run on (a candidate, or a recorded failure): a resumed build skips them."""
    return wh.distilled_problem_keys(teacher)


def solved_problem_keys(wh: Warehouse, require: str = "own_and_odd_sizes") -> set[str]:
    """Problems with a validated pair at the sizes `require` names (`distill --redo-unsolved` skips only these)."""
    return wh.solved_problem_keys(require)


def candidates_of(wh: Warehouse, problems: list[Problem], generator_prefix: str = "") -> list[Candidate]:
    """The stored candidates of these problems (of generators whose name starts with the prefix)."""
    return [c for c in wh.candidates(problem_keys=[p.key for p in problems]) if c.generator.startswith(generator_prefix)]


def checkpoint_by_key(wh: Warehouse, key: str) -> list[tuple[str, str]]:
    """(key, path) of the checkpoints whose key is `key` or starts with it, newest first."""
    return wh.checkpoints_by_key_prefix(key)


def evaluations(wh: Warehouse) -> dict[str, Evaluation]:
    """Every stored evaluation by key."""
    return {e.key: e for e in wh.evaluations()}


def evaluation_keys(wh: Warehouse, ref: str) -> tuple[list[str], bool]:
    """The keys of the evaluations `ref` names (a key, a unique key prefix or a run id), in
    write order, and whether `ref` is a run id."""
    return wh.evaluation_keys(ref)


def requirement_sets(db_path: str | os.PathLike[str], *, runnable_only: bool = False) -> list[list[str]]:
    """The distinct requirement sets recorded with the warehouse's problems (`runnable_only`: the
    runnable ones'; raises FileNotFoundError when there is no warehouse at `db_path`)."""
    if str(db_path) != ":memory:" and not Path(db_path).exists():
        raise FileNotFoundError(db_path)
    with Warehouse(db_path) as wh:
        return wh.requirement_sets(runnable_only=runnable_only)
