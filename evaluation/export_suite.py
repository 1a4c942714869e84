"""A split of a training export as a suite: `--suite exports/rl:validation` evaluates on the held-out problems.

A released dataset's `problems` config reads the same way (`--suite datasets/h200/problems:validation`):
its rows name the reference `reference_source` and the problem `problem_name`.

The `sft` and `rl` exports (`autotriton db export sft|rl`) share one train/validation split by
near-duplicate cluster (training/data.py `problem_split`), so their `validation` rows are problems
that neither SFT nor GRPO trained on, nor any near-copy of them. An export lies on disk as a
Hugging Face dataset folder (`<folder>/data/<split>-00000-of-00001.parquet`, warehouse/layout.py)
or as one Parquet file with a `split` column; both are read here with pyarrow (no warehouse).

Each problem of the split is one entry (an SFT export's several answers to a problem are one
entry): id `heldout/<name>-<key[:8]>` (`<split>/...` for another split), stable across exports
because the problem key is the hash of its reference; source = the row's `reference`; licence
= the row's `licence`.
"""

from __future__ import annotations

import re
from pathlib import Path

from autotriton.evaluation.suite_entries import SuiteEntry, SuiteError

EXPORT_SUITE_FORM = "<export>:<split> (a training export's folder or Parquet file, e.g. exports/rl:validation)"
_DATA_DIR = "data"  # an `hf` export folder's Parquet files (warehouse/layout.py DATA_DIR)


def is_export(path: Path) -> bool:
    """Whether `path` is a training export: an `hf` dataset folder or a Parquet file."""
    if path.is_dir():
        return any((path / _DATA_DIR).glob("*.parquet"))
    return path.is_file() and path.suffix == ".parquet"


def split_export_spec(spec: str) -> tuple[Path, str] | None:
    """`exports/rl:validation` -> (exports/rl, "validation") when the part before the last `:` is
    an export; None otherwise (the spec is some other suite form)."""
    head, sep, split = spec.rpartition(":")
    if not sep or not head or not is_export(Path(head)):
        return None
    return Path(head), split


def _splits_of(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    if path.is_dir():
        return sorted({f.name.split("-", 1)[0] for f in (path / _DATA_DIR).glob("*.parquet")})
    names = pq.read_table(path, columns=["split"]).column("split").to_pylist() if "split" in pq.read_schema(path).names else []
    return sorted({str(s) for s in names}) or ["train"]


def read_export_split(path: str | Path, split: str) -> list[SuiteEntry]:
    """The problems of one split of a training export, one SuiteEntry each, sorted by id."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    path = Path(path)
    where = f"{path}:{split}"
    if not is_export(path):
        raise SuiteError(f"{path}: not a training export (a dataset folder with {_DATA_DIR}/*.parquet, or a .parquet "
                         "file). Write one with `autotriton db export rl` (or sft), then pass --suite <export>:validation.")
    splits = _splits_of(path)
    if split not in splits:
        raise SuiteError(f"{where}: the export has no split {split!r}; its splits are {', '.join(splits)}. Pass "
                         f"--suite {path}:validation for the held-out problems (whole near-duplicate clusters unseen in training).")
    if path.is_dir():
        table = pa.concat_tables(pq.read_table(f) for f in sorted((path / _DATA_DIR).glob(f"{split}-*.parquet")))
    else:
        table = pq.read_table(path)
        if "split" in table.column_names:
            table = table.filter(pc.equal(table.column("split"), split))
    # A released dataset (`db release`) names the columns as the warehouse does: accepted alike.
    for release_name, export_name in (("reference_source", "reference"), ("problem_name", "name")):
        if release_name in table.column_names and export_name not in table.column_names:
            table = table.append_column(export_name, table.column(release_name))
    missing = {"problem_key", "reference"} - set(table.column_names)
    if missing:
        raise SuiteError(f"{where}: the export's rows lack {', '.join(sorted(missing))} (an export written before rows "
                         "carried their reference); write it again with `autotriton db export rl` (or sft).")
    prefix = "heldout" if split == "validation" else split
    entries: dict[str, SuiteEntry] = {}
    licences = table.column("licence").to_pylist() if "licence" in table.column_names else [None] * table.num_rows
    names = table.column("name").to_pylist() if "name" in table.column_names else [""] * table.num_rows
    for key, reference, name, licence in zip(table.column("problem_key").to_pylist(), table.column("reference").to_pylist(),
                                             names, licences):
        if key in entries:
            continue  # an SFT export holds one row per answer: one entry per problem
        name = str(name or key)
        # "/" would split the id into another suite (suite_of_id), so names are folded to one path part.
        entries[key] = SuiteEntry(id=f"{prefix}/{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}-{key[:8]}", level=None,
                                  problem_id=key, name=name, source=reference, origin=where, license=licence)
    if not entries:
        raise SuiteError(f"{where}: the split holds no problems; pick another split ({', '.join(splits)}).")
    return sorted(entries.values(), key=lambda e: e.id)
