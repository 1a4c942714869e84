"""Benchmark suites as data: KernelBench-format JSONL, KernelBench's own folders, TritonBench-T, the KernelBench hub
dataset, and a split of a training export (`exports/rl:validation`, export_suite.py).

`read_entries(path)` reads any of these forms into SuiteEntry records (the suite JSONL format and
its parser: suite_entries.py) and `load_suite(path)` makes them Problems, filtered and optionally
shrunk for the CPU interpreter.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from pathlib import Path

from autotriton.describe import instruction_for
from autotriton.evaluation import kernelbench
from autotriton.evaluation.export_suite import is_export, read_export_split, split_export_spec
from autotriton.evaluation.suite_entries import (  # noqa: F401 (re-exported: the suite API keeps its names here)
    _LEVEL_IN_ID, REQUIRED_FIELDS, SUITE_FORMS, SuiteEntry, SuiteError, benchmark_of, level_of, parse_json_lines,
    read_suite_jsonl, suite_of_id, write_suite_jsonl,
)
from autotriton.evaluation.tritonbench import convert_tritonbench_t
from autotriton.records import Problem

HF_DATASET = "ScalingIntelligence/KernelBench"


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


def looks_like_tritonbench(path: str | Path) -> bool:
    """Whether an existing path is TritonBench-T data rather than KernelBench problems, a
    KernelBench run or a suite file."""
    from autotriton.evaluation import kernelbench

    p = Path(path)
    return not kernelbench.looks_like_problems(p) and not kernelbench.looks_like_run(p) and _looks_like_tritonbench(p)


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
    export = split_export_spec(text)
    if export is not None:
        return read_export_split(*export)
    p = Path(path)
    if not p.exists():
        raise SuiteError(f"{p}: suite not found. {SUITE_FORMS}")
    if is_export(p):
        raise SuiteError(f"{p}: a training export; name the split to evaluate on: --suite {p}:validation (the held-out "
                         f"problems, whole near-duplicate clusters unseen in training) or {p}:train.")
    # KernelBench's files are checked first: its problems are .py files too, which the TritonBench-T
    # reader would take for operator files without a test section.
    if kernelbench.looks_like_problems(p):
        return kernelbench.read_problems(p)
    if kernelbench.looks_like_run(p):
        raise SuiteError(f"{p}: a folder of generated kernels ({kernelbench.KERNEL_PATTERN}), not of problems. Judge them "
                         f"with `autotriton eval --suite <KernelBench level folder> --kernels {p}`.")
    if _looks_like_tritonbench(p):
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
    `hf:level_N` / `hf:kernelbench` to read KernelBench from the hub (only with `hub=True`), or
    `<export>:<split>`, a split of a training export (`exports/rl:validation`: export_suite.py).
    `shrink=True` applies `autotriton.validation.shrink_problem` so the CPU interpreter can run it.
    """
    entries = read_entries(path, hub=hub, levels=levels)
    entries = filter_entries(entries, levels=levels, ids=ids, name_glob=name_glob, limit=limit)
    problems = [e.to_problem() for e in entries]
    if shrink:
        problems = [shrink_suite_problem(p) for p in problems]
    return problems


def cap_problems(problems: Sequence[Problem], max_problems: int, pick: str = "sample", seed: int = 0) -> list[Problem]:
    """At most `max_problems` of `problems` (0 = all), in suite order. `pick="sample"`: a seeded
    uniform sample (every problem equally likely; a suite sorted by name or level would otherwise
    give one family only: a held-out split's first problems are its package modules, whose names
    sort first); `pick="first"`: the suite's first ones (KernelBench's numbering)."""
    if not max_problems or len(problems) <= max_problems:
        return list(problems)
    if pick == "first":
        return list(problems[:max_problems])
    if pick != "sample":
        raise ValueError(f"evaluation.pick_problems = {pick!r}: choose 'sample' or 'first'.")
    import random

    chosen = sorted(random.Random(seed).sample(range(len(problems)), max_problems))
    return [problems[i] for i in chosen]


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
