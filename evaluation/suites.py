"""Benchmark suites as data: KernelBench-format JSONL, KernelBench's own folders, TritonBench-T, and the KernelBench hub dataset.

A suite file holds one problem a line (what `autotriton suite convert KernelBench/level1 --out level1.jsonl` writes):

| field | meaning |
| --- | --- |
| `id` | stable suite id, `<benchmark>/level<N>/<problem_id>` (e.g. `kernelbench/level1/19`) |
| `level`, `problem_id`, `name` | as in the benchmark |
| `source` | the problem: `class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()` |
| `origin`, `license` | where it came from and under which licence (optional) |

Each line becomes a `Problem` with `suite = "<benchmark>/level<N>"` (the id without its last part),
`suite_id = id` and `name`. Errors name the file, the line and the field at fault.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from autotriton.describe import instruction_for
from autotriton.records import Problem

T = TypeVar("T")

HF_DATASET = "ScalingIntelligence/KernelBench"
SUITE_FORMS = ("Pass KernelBench's folder or one of its level folders (KernelBench/level1), one KernelBench problem .py, "
               "a suite JSONL (autotriton suite convert writes one), TritonBench-T data, or hf:level_N with --hub.")
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


def load_hub_entries(levels: Sequence[int] | None = None) -> list[SuiteEntry]:
    """KernelBench from the Hugging Face hub (splits `level_1` ... `level_4`; columns code, level, name, problem_id).

    Needs network access; offline it raises a SuiteError that says so and what to use instead.
    """
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - datasets is a pinned dependency
        raise SuiteError("loading from the hub needs the `datasets` package (pip install datasets).") from exc
    wanted = list(levels) if levels else [1, 2, 3, 4]
    entries: list[SuiteEntry] = []
    for level in wanted:
        split = f"level_{level}"
        try:
            ds = datasets.load_dataset(HF_DATASET, split=split)
        except Exception as exc:  # offline, unknown split, hub error: all end here with one clear message
            raise SuiteError(
                f"could not load {HF_DATASET} split {split!r} from the Hugging Face hub ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}). Without network access use a local suite file "
                "(--suite KernelBench/level1, the level folder of a KernelBench clone); HF_HUB_OFFLINE=1 or HF_DATASETS_OFFLINE=1 also block the hub."
            ) from exc
        for row in ds:
            pid = row.get("problem_id")
            entries.append(SuiteEntry(id=f"kernelbench/level{level}/{pid}", level=int(row.get("level") or level),
                                      problem_id=pid, name=str(row.get("name", pid)), source=row["code"],
                                      origin=f"{HF_DATASET}:{split}", license="MIT"))
    return entries


def _matches_id(entry: SuiteEntry, ids: set[str]) -> bool:
    return entry.id in ids or str(entry.problem_id) in ids or entry.id.rsplit("/", 1)[-1] in ids


def filter_entries(entries: Sequence[SuiteEntry], *, levels: Sequence[int] | None = None, ids: Sequence[str] | None = None,
                   name_glob: str | None = None, limit: int | None = None) -> list[SuiteEntry]:
    """Keep entries of the given levels, ids (full suite ids or problem numbers) and name glob, then the first `limit`."""
    out = list(entries)
    if levels:
        keep = {int(x) for x in levels}
        out = [e for e in out if e.level in keep]
    if ids:
        wanted = {str(x) for x in ids}
        out = [e for e in out if _matches_id(e, wanted)]
    if name_glob:
        out = [e for e in out if fnmatch.fnmatch(e.name.lower(), name_glob.lower())]
    if limit:
        out = out[:limit]
    return out


def _looks_like_tritonbench(path: Path) -> bool:
    if path.is_dir():
        return any(path.glob("*.py")) or any(path.glob("TritonBench_T*"))
    if path.suffix == ".py":
        return True
    if path.suffix in (".json", ".jsonl"):
        with path.open(encoding="utf-8") as fh:
            head = fh.read(4096).lstrip()
        # TritonBench ships its statistics as one JSON array (even in the .jsonl file).
        return head.startswith("[")
    return False


def read_entries(path: str | Path, *, hub: bool = False, levels: Sequence[int] | None = None) -> list[SuiteEntry]:
    """The suite entries of any suite form `load_suite` takes, unfiltered (the format is detected)."""
    text = str(path)
    if text.startswith("hf:"):
        if not hub:
            raise SuiteError(f"{text}: loading from the Hugging Face hub is off. Pass --hub (evaluation.hub=true) when online, "
                             "or use a local suite.")
        spec = text[3:]
        match = _LEVEL_IN_ID.search(spec)
        hub_levels = [int(match.group(1))] if match else (list(levels) if levels else None)
        return load_hub_entries(hub_levels)
    p = Path(path)
    if not p.exists():
        raise SuiteError(f"{p}: suite not found. {SUITE_FORMS}")
    from autotriton.evaluation import kernelbench

    # KernelBench's files are checked first: its problems are .py files too, which the TritonBench-T
    # reader would take for operator files without a test section.
    if kernelbench.looks_like_problems(p):
        return kernelbench.read_problems(p)
    if kernelbench.looks_like_run(p):
        raise SuiteError(f"{p}: a folder of generated kernels ({kernelbench.KERNEL_PATTERN}), not of problems. Judge them "
                         f"with `autotriton eval --suite <KernelBench level folder> --kernels {p}`.")
    if _looks_like_tritonbench(p):
        from autotriton.evaluation.tritonbench import convert_tritonbench_t

        converted = convert_tritonbench_t(p)
        if not converted.entries:
            detail = "; ".join(f"{e.record}: {e.message}" for e in converted.errors[:5])
            raise SuiteError(f"{p}: neither KernelBench problems (class Model, get_inputs, get_init_inputs) nor TritonBench-T "
                             f"operators that could be converted ({detail}).")
        return converted.entries
    return read_suite_jsonl(p)


def load_suite(path: str | Path, *, levels: Sequence[int] | None = None, ids: Sequence[str] | None = None,
               name_glob: str | None = None, limit: int | None = None, shrink: bool = False, hub: bool = False) -> list[Problem]:
    """Load a benchmark suite as Problems (suite, suite_id and name set), filtered and optionally shrunk.

    `path` is a KernelBench-format JSONL file, KernelBench's folder, a level folder of it or one problem
    file (`autotriton.evaluation.kernelbench`), TritonBench-T data (its statistics JSON, its folder of
    operator files, or one operator file; converted with `convert_tritonbench_t`, records that cannot
    be converted are skipped, see `convert_tritonbench_t` for the per-record errors), or
    `hf:level_N` / `hf:kernelbench` to read KernelBench from the hub (only with `hub=True`).
    `shrink=True` applies `autotriton.validation.shrink_problem` so the CPU interpreter can run it.
    """
    entries = read_entries(path, hub=hub, levels=levels)
    entries = filter_entries(entries, levels=levels, ids=ids, name_glob=name_glob, limit=limit)
    problems = [e.to_problem() for e in entries]
    if shrink:
        problems = [shrink_suite_problem(p) for p in problems]
    return problems


def shrink_suite_problem(problem: Problem) -> Problem:
    """The problem with its sizes shrunk for the CPU interpreter (validation's documented rule).

    The shrunk source is a different problem (its own key); suite, suite_id and name stay, so
    metrics still group by the benchmark's ids.
    """
    from autotriton.validation import shrink_problem

    small = shrink_problem(problem.reference_source)
    if small == problem.reference_source:
        return problem
    return Problem(reference_source=small, name=problem.name, licence=problem.licence, suite=problem.suite,
                   suite_id=problem.suite_id, shape_profile="cpu-small", op_tags=list(problem.op_tags),
                   instruction=instruction_for(small))
