"""The incremental harvest's state between the warehouse and the harvest stage.

The warehouse keeps it (tables harvest_state and harvest_seen, warehouse/migrations.py 6), so a
copy of the .duckdb file harvests on from where it was. A harvest is handed the state as data
(`harvest_state_data`, then `state_for_harvest` where it runs: a Dask worker gets a copy of its
own), records what it read in its HarvestResult.state, and `store_harvest_state` writes the
sources it touched and the module keys it saw first in the transaction that stores its rows
(tasks/steps.py `store_harvest_results`): a failed store never marks files as harvested.

Older versions kept the state in a side file (harvest.state_path, by default
`<warehouse>.harvest-state.json`). A warehouse that has no state yet starts from that file, and
the first store imports it; from then on the file is neither read nor written.

No Prefect import here (the CLI calls these too).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

if TYPE_CHECKING:
    from autotriton.harvesting import HarvestConfig, HarvestResult, HarvestState
    from autotriton.warehouse import Run, Warehouse


def legacy_state_file(wh: Warehouse | None, state_path: str | os.PathLike[str] | None) -> Path | None:
    """The older side file of the state to import: `state_path` when it is a file and the
    warehouse (None: not created yet) holds no state; else None."""
    if not state_path or not Path(state_path).is_file():
        return None
    if wh is not None and wh.harvest_state_counts()["sources"]:
        return None
    return Path(state_path)


def harvest_state_data(wh: Warehouse | None, harvest_config: HarvestConfig) -> dict[str, Any] | None:
    """The state a harvest starts from, as data ({"sources": {...}, "seen": [...]}): the
    warehouse's, or the legacy side file's while the warehouse has none. None when
    harvest.incremental is off (the harvest reads no state and records none)."""
    from autotriton.harvesting import HarvestState

    if not harvest_config.incremental:
        return None
    legacy = legacy_state_file(wh, harvest_config.state_path)
    if legacy is not None:
        return HarvestState.load(legacy).data  # StateError names a damaged file
    return wh.harvest_state() if wh is not None else {"sources": {}, "seen": []}


def state_for_harvest(data: Mapping[str, Any] | None) -> HarvestState | None:
    """The HarvestState a harvest call takes (`state=`), a copy of `data` of its own; None
    (not incremental): the stage's own empty state, recorded nowhere."""
    from autotriton.harvesting import HarvestState

    return HarvestState.from_data(data) if data is not None else None


def store_harvest_state(wh: Warehouse, run: Run, results: Sequence[HarvestResult],
                        legacy_state_path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Write the state of every result that carries one (inside the caller's transaction):
    first, into a warehouse without state, the legacy side file at `legacy_state_path` (only the
    sources no harvest has written), then each result's touched sources and new seen keys.
    Returns {"sources": source rows added or changed, "imported_from": the side file imported, or ""}."""
    from autotriton.harvesting import HarvestState

    states = [r.state for r in results if r.state is not None]
    out: dict[str, Any] = {"sources": 0, "imported_from": ""}
    if not states:
        return out
    legacy = legacy_state_file(wh, legacy_state_path)
    if legacy is not None:
        old = HarvestState.load(legacy).data
        out["sources"] += wh.put_harvest_state(None, old["sources"], old["seen"], replace=False)
        out["imported_from"] = str(legacy)
    for state in states:
        sources, seen = state.changes()
        out["sources"] += wh.put_harvest_state(run, sources, seen)
    return out


def import_note(imported_from: str) -> str:
    """The one line that says a side file was imported (shown by the harvest that imported it)."""
    return (f"harvest state: imported {imported_from} into the warehouse; the warehouse keeps the state now and "
            "this file is no longer read or written (delete it when you like)")
