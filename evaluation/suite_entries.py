"""The suite JSONL format: one KernelBench-format problem a line, parsed into SuiteEntry records.

A suite file holds one problem a line (what `autotriton suite convert KernelBench/level1 --out level1.jsonl` writes):

| field | meaning |
| --- | --- |
| `id` | stable suite id, `<benchmark>/level<N>/<problem_id>` (e.g. `kernelbench/level1/19`) |
| `level`, `problem_id`, `name` | as in the benchmark |
| `source` | the problem: `class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()` |
| `origin`, `license` | where it came from and under which licence (optional) |

Each line becomes a `Problem` with `suite = "<benchmark>/level<N>"` (the id without its last part),
`suite_id = id` and `name`. Errors name the file, the line and the field at fault.

Its own module because every suite reader and converter shares it: suites.py (which reads any
suite form), kernelbench.py and tritonbench.py (which convert their benchmark into entries) import
it, and it imports none of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from autotriton.describe import instruction_for
from autotriton.records import Problem

T = TypeVar("T")

SUITE_FORMS = ("Pass KernelBench's folder or one of its level folders (KernelBench/level1), one KernelBench problem .py, "
               "a suite JSONL (autotriton suite convert writes one), TritonBench-T data, hf:level_N with --hub, or a "
               "training export's split, <export>:<split> (exports/rl:validation: the held-out problems).")
REQUIRED_FIELDS = ("id", "source")


class SuiteError(ValueError):
    """A suite input is wrong; the message names the file, line or field at fault and what to do."""


@dataclass(frozen=True)
class SuiteEntry:
    """One suite line, parsed (before it becomes a Problem)."""

    id: str
    level: int | None
    problem_id: int | str | None
    name: str
    source: str
    origin: str = ""
    license: str | None = None

    def to_problem(self) -> Problem:
        return Problem(
            reference_source=self.source,
            name=self.name,
            licence=self.license,
            suite=suite_of_id(self.id),
            suite_id=self.id,
            shape_profile="gpu-full",
            instruction=instruction_for(self.source),
        )

    def to_row(self) -> dict[str, Any]:
        return {"id": self.id, "level": self.level, "problem_id": self.problem_id, "name": self.name,
                "source": self.source, "origin": self.origin, "license": self.license}


def suite_of_id(suite_id: str) -> str:
    """`kernelbench/level1/19` -> `kernelbench/level1`; an id with no `/` is its own suite."""
    return suite_id.rsplit("/", 1)[0] if "/" in suite_id else suite_id


def benchmark_of(problem: Problem) -> str:
    """The benchmark a problem belongs to: the first part of its suite (`kernelbench`), or `custom`."""
    return (problem.suite or "custom").split("/", 1)[0]


def level_of(problem: Problem) -> str:
    """The group metrics are reported per level by: the problem's suite (`kernelbench/level1`)."""
    return problem.suite or "custom"


_LEVEL_IN_ID = re.compile(r"level[_-]?(\d+)", re.IGNORECASE)


def _parse_line(path: Path, lineno: int, text: str) -> SuiteEntry:
    where = f"{path}:{lineno}"
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SuiteError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}). Each line must be one JSON object.") from exc
    if not isinstance(row, dict):
        raise SuiteError(f"{where}: expected a JSON object with fields {', '.join(REQUIRED_FIELDS)}, got {type(row).__name__}.")
    for name in REQUIRED_FIELDS:
        if not isinstance(row.get(name), str) or not row[name].strip():
            raise SuiteError(f"{where}: field {name!r} is missing or not a non-empty string. "
                             "Every suite line needs `id` and `source` (the KernelBench problem code).")
    source = row["source"]
    for needed in ("class Model", "def get_inputs", "def get_init_inputs"):
        if needed not in source:
            raise SuiteError(f"{where}: field 'source' of {row['id']!r} has no `{needed}`; a suite problem must be in "
                             "KernelBench format (Model, get_inputs, get_init_inputs).")
    level = row.get("level")
    if level is None:
        match = _LEVEL_IN_ID.search(row["id"])
        level = int(match.group(1)) if match else None
    elif not isinstance(level, int) or isinstance(level, bool):
        raise SuiteError(f"{where}: field 'level' of {row['id']!r} must be an integer, got {level!r}.")
    name = row.get("name") or row["id"].rsplit("/", 1)[-1]
    return SuiteEntry(id=row["id"], level=level, problem_id=row.get("problem_id"), name=str(name), source=source,
                      origin=str(row.get("origin") or ""), license=row.get("license"))


def read_suite_jsonl(path: str | Path) -> list[SuiteEntry]:
    """Every line of a KernelBench-format JSONL suite file; duplicate ids are an error."""
    path = Path(path)
    if not path.is_file():
        raise SuiteError(f"{path}: suite file not found. {SUITE_FORMS}")
    entries: list[SuiteEntry] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8") as fh:
        for lineno, text in enumerate(fh, 1):
            if not text.strip():
                continue
            entry = _parse_line(path, lineno, text)
            if entry.id in seen:
                raise SuiteError(f"{path}:{lineno}: duplicate id {entry.id!r} (first on line {seen[entry.id]}). Ids must be unique.")
            seen[entry.id] = lineno
            entries.append(entry)
    if not entries:
        raise SuiteError(f"{path}: the suite file holds no problems.")
    return entries


def parse_json_lines(paths: Sequence[str | Path], parse: Callable[[Any], T | None], what: str, hint: str) -> list[T]:
    """`parse(row)` for every non-blank line of every file, in order (None results are skipped). A
    line that is not JSON, or that `parse` rejects (KeyError, TypeError, ValueError), is a
    ValueError naming the file and line: "<path>:<line>: not <what> (<why>); <hint>"."""
    out: list[T] = []
    for path in paths:
        with Path(path).open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    item = parse(json.loads(line))
                except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                    raise ValueError(f"{path}:{lineno}: not {what} ({exc}); {hint}") from exc
                if item is not None:
                    out.append(item)
    return out


def write_suite_jsonl(entries: Iterable[SuiteEntry], path: str | Path) -> Path:
    """Write entries as a suite file (atomically: a temp file renamed into place)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for entry in entries:
            fh.write(json.dumps(entry.to_row(), ensure_ascii=False) + "\n")
    tmp.replace(path)
    return path
