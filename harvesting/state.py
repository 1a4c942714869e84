"""Incremental-harvest state: what a harvest needs to read only what changed since the last one.

Per source it keeps what a refresh needs to fetch only what changed: for GitHub the last seen
commit, ETags and blob shas per path; for local directories a content hash per file; for
datasets the file's hash. It also keeps the canonical keys of every module seen, so a module
found again (in another repository, or after a rename of locals) counts as a duplicate.

Where it lives is the caller's choice; this stage only holds it as data. The pipeline keeps it
in the warehouse (tables harvest_state and harvest_seen: tasks/ load it with `from_data`, pass
it in, and store `changes()` in the transaction that stores the harvest's rows). A library call
without a warehouse uses an empty in-memory state, or a JSON file when harvest.state_path names
one: that file is replaced atomically, and only after a harvest has been stored.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

STATE_VERSION = 1


class StateError(ValueError):
    pass


class HarvestState:
    def __init__(self, path: str | os.PathLike[str] | None, data: dict[str, Any] | None = None):
        self.path = Path(path) if path else None
        self.data: dict[str, Any] = data or {"version": STATE_VERSION, "sources": {}, "seen": []}
        self._touched: set[str] = set()  # sources this harvest read or changed
        self._added: set[str] = set()  # module keys this harvest saw first

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None) -> "HarvestState":
        if not path or not Path(path).is_file():
            return cls(path)
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise StateError(
                f"{path}: the harvest state file is not valid JSON ({exc}). Delete it to harvest everything again, "
                "or point harvest.state_path elsewhere."
            ) from exc
        return cls(path, _checked(data, str(path), versioned=True))

    @classmethod
    def for_config(cls, config: Any) -> "HarvestState":
        """The state a harvest called without one starts from: the file at harvest.state_path when
        harvest.incremental is on (a library call outside the warehouse), else an empty one."""
        return cls.load(config.state_path) if config.incremental else cls(None)

    @classmethod
    def from_data(cls, data: Mapping[str, Any], where: str = "harvest state") -> "HarvestState":
        """A state kept elsewhere ({"sources": {source id: state}, "seen": [keys]}, as the warehouse
        holds it), copied: harvests given the same data each change their own copy."""
        return cls(None, _checked(copy.deepcopy(dict(data)), where))

    def source(self, source_id: str) -> dict[str, Any]:
        self._touched.add(source_id)
        return self.data["sources"].setdefault(source_id, {})

    @property
    def seen(self) -> set[str]:
        return set(self.data["seen"])

    def add_seen(self, keys: set[str]) -> None:
        before = set(self.data["seen"])
        self._added |= keys - before
        self.data["seen"] = sorted(before | keys)

    def changes(self) -> tuple[dict[str, dict[str, Any]], set[str]]:
        """(source id -> state of every source this harvest read or changed, module keys it saw
        first): what a store writes, replacing only those sources and adding the keys, so several
        harvests (one per source, each with its own copy) never undo each other's work."""
        sources = self.data["sources"]
        return {sid: sources[sid] for sid in sorted(self._touched) if sid in sources}, set(self._added)

    def save(self) -> None:
        """Write the state, merged into what is on disk now: several harvests (one per source, as
        the refresh flow runs them) may each hold a copy; each only replaces its own sources."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            current = HarvestState.load(self.path).data if self.path.is_file() else None
        except StateError:
            current = None  # a corrupt file is replaced by this harvest's state
        if current is not None:
            merged = dict(current["sources"])
            merged.update({sid: self.data["sources"][sid] for sid in self._touched if sid in self.data["sources"]})
            self.data["sources"] = merged
            self.data["seen"] = sorted(set(current["seen"]) | set(self.data["seen"]))
        fd, tmp = tempfile.mkstemp(prefix=".harvest_state.", dir=str(self.path.parent))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(self.data, fh, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def _checked(data: Any, where: str, versioned: bool = False) -> dict[str, Any]:
    """`data` as a state of this version (sources and seen filled in); StateError naming `where`
    otherwise. A file must say its version (`versioned`); data from the warehouse is of this one."""
    if not isinstance(data, dict) or data.get("version", None if versioned else STATE_VERSION) != STATE_VERSION:
        raise StateError(f"{where}: unknown harvest state format (version {data.get('version') if isinstance(data, dict) else '?'}); delete it to start afresh.")
    data.setdefault("version", STATE_VERSION)
    data.setdefault("sources", {})
    data.setdefault("seen", [])
    return data
