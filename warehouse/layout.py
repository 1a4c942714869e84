"""How exports lie on disk: Hugging Face dataset folders (default) or one Parquet file.

`hf` (a folder `datasets.load_dataset(FOLDER)` reads, with one split per file):

    <folder>/README.md                               YAML card: configs (data_files per split) + autotriton metadata
    <folder>/data/train-00000-of-00001.parquet
    <folder>/data/validation-00000-of-00001.parquet

`parquet` (one file, the `split` column kept): `<dir>/<name>.parquet`.

Names are stable per export name (`exports/sft/`, not `sft-<hash>.parquet`), so a glob never mixes
versions; the content hash lives in the metadata instead: each Parquet file's schema metadata
(key `autotriton`) and the card's YAML. A newer export of the same name replaces the folder
atomically (written beside it, then swapped in), and `export_content_hash(path)` tells which export
a folder holds now. Parquet is written with zstd compression.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

FORMATS = ("hf", "parquet")
METADATA_KEY = b"autotriton"
DATA_DIR = "data"
SPLIT_ORDER = ("train", "validation", "test")


class LayoutError(RuntimeError):
    """An export on disk is missing or is not what its record says."""


def split_file(split: str) -> str:
    """The path of a split's file inside an `hf` folder (the hub's own naming, so its split
    inference and `data_files` globs both find it)."""
    return f"{DATA_DIR}/{split}-00000-of-00001.parquet"


def _with_metadata(table: pa.Table, meta: Mapping[str, Any]) -> pa.Table:
    old = dict(table.schema.metadata or {})
    old[METADATA_KEY] = json.dumps(dict(meta), sort_keys=True, default=str).encode()
    return table.replace_schema_metadata(old)


def _write_parquet(table: pa.Table, path: Path) -> None:
    with open(path, "wb") as fh:
        pq.write_table(table, fh, compression="zstd")
        fh.flush()
        os.fsync(fh.fileno())


def split_tables(table: pa.Table) -> dict[str, pa.Table]:
    """Rows grouped by their `split` column (all rows are "train" without one), known splits first."""
    if "split" not in table.column_names:
        return {"train": table}
    groups: dict[str, list[int]] = defaultdict(list)
    for i, value in enumerate(table.column("split").to_pylist()):
        groups[str(value)].append(i)
    names = sorted(groups, key=lambda s: (SPLIT_ORDER.index(s) if s in SPLIT_ORDER else len(SPLIT_ORDER), s))
    return {name: table.take(groups[name]) for name in names}


def card_yaml(splits: Sequence[str], meta: Mapping[str, Any], config_name: str = "default") -> str:
    """The YAML front matter that makes the folder a hub dataset: each split's data files, plus
    the export's metadata under `autotriton` (the hub keeps unknown card keys)."""
    lines = ["---", "configs:", f"- config_name: {config_name}", "  data_files:"]
    for split in splits:
        lines += [f"  - split: {split}", f"    path: {split_file(split)}"]
    lines.append("autotriton:")
    for key, value in sorted(meta.items()):
        lines.append(f"  {key}: {json.dumps(value, sort_keys=True, default=str)}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def _default_card(name: str, meta: Mapping[str, Any], counts: Mapping[str, int]) -> str:
    rows = "\n".join(f"| {s} | {n} | `{split_file(s)}` |" for s, n in counts.items())
    return (f"# autotriton export `{name}`\n\nContent hash `{meta.get('content_hash')}` (also in each Parquet file's "
            "schema metadata, key `autotriton`).\n\n| split | rows | file |\n| --- | --- | --- |\n" + rows +
            "\n\n```python\nimport datasets\nds = datasets.load_dataset(\"PATH/TO/THIS/FOLDER\")  # DatasetDict by split\n```\n")


def _swap_in(tmp: Path, final: Path) -> None:
    """Replace `final` (file or folder) by `tmp` with no moment where a half-written one is visible."""
    old = final.with_name(f".{final.name}.old-{uuid.uuid4().hex[:8]}")
    if final.exists():
        os.replace(final, old)
    try:
        os.replace(tmp, final)
    except BaseException:
        if old.exists():
            os.replace(old, final)
        raise
    if old.is_dir():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.unlink(missing_ok=True)


def write_export(table: pa.Table, target: str | os.PathLike[str], fmt: str, meta: Mapping[str, Any],
                 card: str | None = None) -> dict[str, int]:
    """Write `table` to `target` (a folder for `hf`, a file for `parquet`) atomically, with `meta`
    (name, content_hash, ...) in every file's schema metadata. Returns rows per split.
    `card` is the Markdown body of the `hf` folder's README.md (after the YAML front matter)."""
    if fmt not in FORMATS:
        raise ValueError(f"export format {fmt!r}: choose one of {', '.join(FORMATS)}")
    final = Path(target).resolve()
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".{final.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    parts = split_tables(table)
    counts = {s: t.num_rows for s, t in parts.items()}
    try:
        if fmt == "parquet":
            _write_parquet(_with_metadata(table, {**meta, "splits": counts}), tmp)
        else:
            (tmp / DATA_DIR).mkdir(parents=True)
            for split, part in parts.items():
                _write_parquet(_with_metadata(part, {**meta, "split": split, "splits": counts}), tmp / split_file(split))
            body = card if card is not None else _default_card(str(meta.get("name", "")), meta, counts)
            (tmp / "README.md").write_text(card_yaml(list(parts), {**meta, "splits": counts}) + "\n" + body, encoding="utf-8")
        _swap_in(tmp, final)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
    return counts


def data_files(path: str | os.PathLike[str]) -> dict[str, list[str]]:
    """Split -> Parquet files of an export (an `hf` folder or one file: its rows are all under "all")."""
    p = Path(path)
    if p.is_file():
        return {"all": [str(p)]}
    if not p.is_dir():
        raise LayoutError(f"{p}: no export there (neither a Parquet file nor a dataset folder)")
    out: dict[str, list[str]] = defaultdict(list)
    for f in sorted((p / DATA_DIR).glob("*.parquet")):
        out[f.name.split("-", 1)[0]].append(str(f))
    if not out:
        raise LayoutError(f"{p}: a folder without {DATA_DIR}/*.parquet files is not an export")
    return dict(out)


def export_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The autotriton metadata (name, content_hash, splits, ...) stored in an export's files."""
    files = [f for group in data_files(path).values() for f in group]
    raw = (pq.read_schema(files[0]).metadata or {}).get(METADATA_KEY)
    if raw is None:
        raise LayoutError(f"{files[0]}: has no autotriton metadata; it was not written by `autotriton db export`")
    return json.loads(raw)


def read_export(path: str | os.PathLike[str], split: str | None = None) -> pa.Table:
    """All rows of an export (or of one split), as one Arrow table without the file metadata."""
    groups = data_files(path)
    if Path(path).is_file():
        table = pq.read_table(groups["all"][0])
        if split is not None:
            import pyarrow.compute as pc

            if "split" not in table.column_names:
                raise LayoutError(f"{path}: has no split column; read it without a split")
            table = table.filter(pc.equal(table["split"], split))
        return table.replace_schema_metadata(None)
    if split is not None:
        if split not in groups:
            return pq.read_table(next(iter(groups.values()))[0]).schema.empty_table().replace_schema_metadata(None)
        groups = {split: groups[split]}
    tables = [pq.read_table(f).replace_schema_metadata(None) for files in groups.values() for f in files]
    return pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]
