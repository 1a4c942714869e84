"""Exports: writing a training or analysis export as files and recording it, and reading it back
(checked to be the export recorded) as a Hugging Face dataset. The file layout is layout.py's."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

import pyarrow as pa

from autotriton.hashing import content_key
from autotriton.records import Export
from autotriton.warehouse.connection import WarehouseError, _locked
from autotriton.warehouse.runs import Run

_EXPORT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ExportingMixin:
    """export_parquet, export_files, to_hf_dataset, to_hf_dataset_dict."""

    @_locked
    def export_parquet(self, name: str, rows: Sequence[Mapping[str, Any]], filter: Mapping[str, Any] | None,
                       run: Run, out_dir: str | os.PathLike[str] | None = None, *, format: str = "hf",
                       path: str | os.PathLike[str] | None = None, card: str | None = None) -> Export:
        """Write rows as export `name` atomically and record it (warehouse/layout.py).

        format "hf": a Hugging Face dataset folder, one Parquet file per split (`datasets.load_dataset
        (folder)` gives train/validation); "parquet": one file with the `split` column. The place is
        `path` when given, else `<out_dir or export_dir>/<name>` (hf) or `/<name>.parquet`: a stable
        name, replaced by the next export of that name. The content hash covers the export name and
        the rows, independent of row order, so the same data exported twice is one export (one row
        in `exports`); it is stored in the files' metadata, not in their names.
        """
        from autotriton.warehouse.layout import FORMATS, write_export

        self._require_writable("export_parquet")
        if not _EXPORT_NAME.match(name or ""):
            raise ValueError(f"export_parquet: name {name!r} must be letters, digits, '_', '-' or '.'")
        if format not in FORMATS:
            raise ValueError(f"export format {format!r}: choose one of {', '.join(FORMATS)}")
        # Columns are the union over all rows (first-seen order); a row without one gets null there.
        # (pyarrow's from_pylist would silently drop columns the first row lacks.)
        columns = list(dict.fromkeys(col for r in rows for col in r))
        rows = [{col: r.get(col) for col in columns} for r in rows]
        row_hashes = sorted(content_key("row", r) for r in rows)
        chash = content_key("export", name, row_hashes)
        try:
            table = pa.Table.from_pydict({col: [r[col] for r in rows] for col in columns})
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise WarehouseError(f"export {name}: rows do not form one table ({exc}); every column needs one type in all rows.") from exc
        if path is not None:
            target = Path(path)
        else:
            directory = Path(out_dir) if out_dir is not None else self.export_dir
            target = directory / (name if format == "hf" else f"{name}.parquet")
        write_export(table, target, format, {"name": name, "content_hash": chash, "rows": len(rows),
                                             "filter": dict(filter or {})}, card=card)
        splits = dict(sorted(Counter(str(r["split"]) for r in rows).items())) if "split" in columns else {}
        export = Export(name=name, filter=dict(filter or {}), row_count=len(rows), content_hash=chash,
                        path=str(target.resolve()), splits=splits)
        self._put(run, "exports", [export])
        return export

    def export_files(self, export: Export | str) -> Export:
        """The export record, after checking that its path still holds this export (the files'
        metadata names its content hash: a later export of the same name replaces them)."""
        from autotriton.warehouse.layout import LayoutError, export_metadata

        if isinstance(export, str):
            export = self.export(export)
        try:
            found = export_metadata(export.path).get("content_hash")
        except LayoutError as exc:
            raise WarehouseError(
                f"{exc}: the files of export {export.name} ({export.key}) are gone; "
                f"re-create them with `autotriton db export {export.name}`."
            ) from exc
        if found != export.content_hash:
            raise WarehouseError(
                f"{export.path} now holds export {found}, not {export.key}: a later `{export.name}` export replaced it. "
                f"Use the newer export, or write this one again with `autotriton db export {export.name}`."
            )
        return export

    def current_export(self, name: str, key: str = "") -> Export | None:
        """The export `key` (or, without one, the newest export of `name`; None when there is none),
        checked to still be what its folder holds (a later export of the same name replaces the
        folder; training must not read other rows than it records)."""
        export = self.export(key) if key else (self.exports(name=name) or [None])[-1]
        return self.export_files(export) if export is not None else None

    def to_hf_dataset(self, export: Export | str, split: str | None = None):
        """The export as a `datasets.Dataset` (rows of one split when `split` is given)."""
        import datasets
        from datasets.table import InMemoryTable

        from autotriton.warehouse.layout import read_export

        export = self.export_files(export)
        if split is not None and not export.splits:
            raise WarehouseError(f"export {export.name} ({export.key}) has no split column; call without split=.")
        return datasets.Dataset(InMemoryTable(read_export(export.path, split)))

    def to_hf_dataset_dict(self, export: Export | str):
        """The export as a `datasets.DatasetDict` keyed by its split column (train, validation, ...)."""
        import datasets

        export = self.export_files(export)
        if not export.splits:
            return datasets.DatasetDict({"train": self.to_hf_dataset(export)})
        return datasets.DatasetDict({s: self.to_hf_dataset(export, split=s) for s in export.splits})

