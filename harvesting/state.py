"""Incremental-harvest state: a small JSON file under the workdir.

Per source it keeps what a refresh needs to fetch only what changed: for GitHub the last seen
commit, ETags and blob shas per path; for local directories a content hash per file; for
datasets the file's hash. It also keeps the canonical keys of every module seen, so a module
found again (in another repository, or after a rename of locals) counts as a duplicate.
The file is replaced atomically, and only after a harvest has been stored.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

STATE_VERSION = 1


class StateError(ValueError):
    pass


class HarvestState:
    def __init__(self, path: str | os.PathLike[str] | None, data: dict[str, Any] | None = None):
        self.path = Path(path) if path else None
        self.data: dict[str, Any] = data or {"version": STATE_VERSION, "sources": {}, "seen": []}
        self._touched: set[str] = set()  # sources this harvest read or changed

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
        if not isinstance(data, dict) or data.get("version") != STATE_VERSION:
            raise StateError(f"{path}: unknown harvest state format (version {data.get('version') if isinstance(data, dict) else '?'}); delete it to start afresh.")
        data.setdefault("sources", {})
        data.setdefault("seen", [])
        return cls(path, data)

    def source(self, source_id: str) -> dict[str, Any]:
        self._touched.add(source_id)
        return self.data["sources"].setdefault(source_id, {})

    @property
    def seen(self) -> set[str]:
        return set(self.data["seen"])

    def add_seen(self, keys: set[str]) -> None:
        self.data["seen"] = sorted(set(self.data["seen"]) | keys)

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
