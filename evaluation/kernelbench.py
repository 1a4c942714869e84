"""KernelBench's own layouts, read and written as KernelBench (ScalingIntelligence/KernelBench) has them.

* **Problems**: the repository's `KernelBench/` folder, `level<L>/<P>_<Name>.py` (e.g.
  `level1/1_Square_matrix_multiplication_.py`), one level folder, or one problem file. A problem
  defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`. Suite ids are
  `kernelbench/level<L>/<P>`, the ids of the JSONL suites and of the hub dataset, so results of the
  three forms line up.
* **Generated kernels**: a run folder as KernelBench's `generate_samples.py` leaves it,
  `runs/<run_name>/level_<L>_problem_<P>_sample_<S>_kernel.py`, judged as they are (no generation).
* **Results**: `eval_results.json` as KernelBench's `scripts/eval_from_generations.py` writes it:
  `{"<problem_id>": [{"sample_id", "compiled", "correctness", "metadata", "runtime", "runtime_stats"}]}`
  with `runtime` in milliseconds and -1.0 when the kernel was not timed (no GPU).

Reading is static: no problem or kernel code runs here. Errors name the file and what to do.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autotriton.evaluation.suite_entries import SuiteEntry, SuiteError
from autotriton.records import Candidate, Problem, Verdict

BENCHMARK = "kernelbench"
PROBLEM_FILE = re.compile(r"^(\d+)_(.+)\.py$")
LEVEL_DIR = re.compile(r"^level[_-]?(\d+)$", re.IGNORECASE)
KERNEL_FILE = re.compile(r"^level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py$")
KERNEL_PATTERN = "level_<L>_problem_<P>_sample_<S>_kernel.py"
RESULTS_FILE = "eval_results.json"

_MODEL = re.compile(r"^class\s+Model\s*\(", re.MULTILINE)
_GET_INPUTS = re.compile(r"^def\s+get_inputs\s*\(", re.MULTILINE)
_GET_INIT = re.compile(r"^def\s+get_init_inputs\s*\(", re.MULTILINE)


def missing_parts(source: str) -> list[str]:
    """What a KernelBench problem needs and `source` lacks (empty: it is one)."""
    needed = (("class Model(nn.Module)", _MODEL), ("def get_inputs()", _GET_INPUTS), ("def get_init_inputs()", _GET_INIT))
    return [name for name, pattern in needed if not pattern.search(source)]


def is_problem_source(source: str) -> bool:
    return not missing_parts(source)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{path}: could not be read ({exc}).") from exc


def _level_of_dir(folder: Path) -> int | None:
    match = LEVEL_DIR.match(folder.name)
    return int(match.group(1)) if match else None


def _problem_files(folder: Path) -> list[Path]:
    return sorted((p for p in folder.glob("*.py") if PROBLEM_FILE.match(p.name)), key=lambda p: int(PROBLEM_FILE.match(p.name).group(1)))


def _level_dirs(folder: Path) -> list[tuple[int, Path]]:
    found = [(_level_of_dir(d), d) for d in folder.iterdir() if d.is_dir()]
    return sorted((level, d) for level, d in found if level is not None and _problem_files(d))


def looks_like_problems(path: Path) -> bool:
    """KernelBench's folder, a level folder of it, or one KernelBench problem file."""
    if path.is_file():
        return path.suffix == ".py" and is_problem_source(_read(path))
    if not path.is_dir():
        return False
    if _level_dirs(path):
        return True
    files = _problem_files(path)
    return bool(files) and is_problem_source(_read(files[0]))


def looks_like_run(path: Path) -> bool:
    """A folder of generated kernels in KernelBench's naming."""
    return path.is_dir() and any(KERNEL_FILE.match(p.name) for p in path.iterdir())


def _entry(path: Path, level: int | None) -> SuiteEntry:
    source = _read(path)
    missing = missing_parts(source)
    if missing:
        raise SuiteError(f"{path}: not a KernelBench problem (no {', '.join(missing)} at the start of a line). A problem file "
                         "defines class Model(nn.Module), get_inputs() and get_init_inputs(); move other files out of the folder.")
    match = PROBLEM_FILE.match(path.name)
    problem_id: int | None = int(match.group(1)) if match else None
    name = path.stem
    if level is not None and problem_id is not None:
        suite_id = f"{BENCHMARK}/level{level}/{problem_id}"
    else:
        suite_id = f"{BENCHMARK}/{path.stem}"
    return SuiteEntry(id=suite_id, level=level, problem_id=problem_id, name=name, source=source, origin=str(path), license="MIT")


def read_problems(path: str | Path) -> list[SuiteEntry]:
    """Suite entries from KernelBench's folder (`level<L>/` subfolders), one level folder or one problem file.

    The level comes from the folder name (`level1`); the problem id from the file name (`19_ReLU.py`).
    Two files with one problem id in a level are an error, as is a `.py` in a level folder that is
    not a problem (KernelBench would try to load it too)."""
    path = Path(path)
    if path.is_file():
        return [_entry(path, _level_of_dir(path.parent))]
    if not path.is_dir():
        raise SuiteError(f"{path}: no such file or folder.")
    levels = _level_dirs(path)
    folders = levels or [(_level_of_dir(path), path)]
    entries: list[SuiteEntry] = []
    for level, folder in folders:
        seen: dict[int, Path] = {}
        for file in sorted(folder.glob("*.py")):
            if file.name == "__init__.py":
                continue
            entry = _entry(file, level)
            if entry.problem_id is not None:
                if entry.problem_id in seen:
                    raise SuiteError(f"{file}: problem {entry.problem_id} of this level is also {seen[entry.problem_id]}; "
                                     "problem numbers must be unique within a level.")
                seen[entry.problem_id] = file
            entries.append(entry)
    if not entries:
        raise SuiteError(f"{path}: no KernelBench problem files (level<L>/<P>_<Name>.py) in this folder.")
    entries.sort(key=lambda e: (e.level or 0, e.problem_id if isinstance(e.problem_id, int) else 0, e.name))
    return entries


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) or "problem"


def write_problems(entries: Sequence[SuiteEntry], out: str | Path) -> list[Path]:
    """Write entries in KernelBench's layout under `out` (`level<L>/<P>_<Name>.py`), nothing if any
    entry cannot be placed. Entries without a level go to `level0`; without a numeric problem id
    they are numbered after the level's highest id. `out` must not hold problem files already."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.rglob("*.py"))):
        raise SuiteError(f"{out}: already holds files; pass a new or empty folder to write KernelBench problems into.")
    placed: list[tuple[Path, str]] = []
    taken: dict[int, set[int]] = {}
    for entry in entries:
        if isinstance(entry.problem_id, int) or (isinstance(entry.problem_id, str) and entry.problem_id.isdigit()):
            taken.setdefault(entry.level or 0, set()).add(int(entry.problem_id))
    for entry in entries:
        level = entry.level or 0
        ids = taken.setdefault(level, set())
        if isinstance(entry.problem_id, int) or (isinstance(entry.problem_id, str) and entry.problem_id.isdigit()):
            pid = int(entry.problem_id)
        else:
            pid = max(ids, default=0) + 1
            ids.add(pid)
        stem = PROBLEM_FILE.match(f"{entry.name}.py")
        name = stem.group(2) if stem and int(stem.group(1)) == pid else entry.name
        placed.append((out / f"level{level}" / f"{pid}_{_safe_name(name)}.py", entry.source))
    paths = [p for p, _ in placed]
    if len(set(paths)) != len(paths):
        dupes = sorted({str(p) for p in paths if paths.count(p) > 1})
        raise SuiteError(f"two problems would be written to {', '.join(dupes)}: their suite has repeated problem ids in one level.")
    staging = out.with_name(out.name + ".tmp-kernelbench")
    if staging.exists():
        import shutil

        shutil.rmtree(staging)
    for path, source in placed:
        target = staging / path.relative_to(out)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source if source.endswith("\n") else source + "\n", encoding="utf-8")
    if out.exists():
        out.rmdir()  # empty (checked above): the staged folder takes its place whole
    staging.rename(out)
    return paths


# ----------------------------------------------------------------------------------------------
# Generated kernels


@dataclass(frozen=True)
class GeneratedKernel:
    level: int
    problem_id: int
    sample_id: int
    path: Path
    code: str

    @property
    def suite_id(self) -> str:
        return f"{BENCHMARK}/level{self.level}/{self.problem_id}"


def read_run(path: str | Path) -> list[GeneratedKernel]:
    """Every `level_<L>_problem_<P>_sample_<S>_kernel.py` of a run folder, by level, problem and sample."""
    path = Path(path)
    if not path.is_dir():
        raise SuiteError(f"{path}: not a folder. Pass a KernelBench run folder (runs/<run_name>) holding {KERNEL_PATTERN} files.")
    kernels = []
    for file in path.iterdir():
        match = KERNEL_FILE.match(file.name)
        if match and file.is_file():
            level, pid, sample = (int(g) for g in match.groups())
            kernels.append(GeneratedKernel(level, pid, sample, file, _read(file)))
    if not kernels:
        raise SuiteError(f"{path}: no generated kernels named {KERNEL_PATTERN} in this folder (KernelBench's "
                         "generate_samples.py writes them to runs/<run_name>/).")
    return sorted(kernels, key=lambda k: (k.level, k.problem_id, k.sample_id))


def run_candidates(kernels: Sequence[GeneratedKernel], problems: Sequence[Problem], *, run_name: str) -> tuple[list[Candidate], list[GeneratedKernel]]:
    """Candidates for the kernels whose problem is in `problems` (matched by suite id), sample by
    sample in sample-id order, and the kernels that match no problem."""
    by_id = {p.suite_id: p for p in problems if p.suite_id}
    candidates, unmatched = [], []
    for kernel in kernels:
        problem = by_id.get(kernel.suite_id)
        if problem is None:
            unmatched.append(kernel)
            continue
        code = kernel.code if kernel.code.strip() else ""
        candidates.append(Candidate(problem_key=problem.key, code=code, generator=f"kernelbench-run:{run_name}",
                                    generator_version=run_name, sampling={"kernelbench_sample": kernel.sample_id,
                                                                          "file": kernel.path.name},
                                    raw_output=kernel.code, parse_error=None if code else "empty kernel file"))
    return candidates, unmatched


# ----------------------------------------------------------------------------------------------
# Results in KernelBench's format


def _runtime(verdict: Verdict) -> tuple[float, dict[str, Any]]:
    sets = ((verdict.timing or {}).get("candidate") or {}).get("sets") or []
    medians = [float(s["median_ms"]) for s in sets if isinstance(s, dict) and s.get("median_ms") is not None]
    if not medians:
        return -1.0, {}
    mean = statistics.fmean(medians)
    return round(mean, 4), {"mean": round(mean, 4), "std": round(statistics.pstdev(medians), 4),
                            "min": round(min(medians), 4), "max": round(max(medians), 4),
                            "num_trials": sum(int(s.get("runs") or 0) for s in sets), "hardware": verdict.device}


def result_row(sample_id: int, verdict: Verdict, candidate: Candidate) -> dict[str, Any]:
    """One sample as eval_from_generations.py records it. `correctness` is autotriton's criterion
    (outputs match AND no rule broken: a PyTorch fallback is not a correct Triton kernel);
    `metadata.outputs_match` keeps the outputs-only answer KernelBench's own check gives."""
    from autotriton.evaluation.metrics import solved

    runtime, stats = _runtime(verdict)
    metadata: dict[str, Any] = {"status": verdict.status, "outputs_match": bool(verdict.correct), "rule_ok": bool(verdict.rule_ok),
                                "hardware": verdict.device, "judge": "autotriton"}
    if verdict.error:
        metadata["error"] = verdict.error[:2000]
    if verdict.violations:
        metadata["violations"] = [f"{v.rule}: {v.message}" for v in verdict.violations]
    if candidate.parse_error:
        metadata["parse_error"] = candidate.parse_error
    if verdict.speedup is not None:
        metadata["speedup_vs_eager"] = verdict.speedup
    if "file" in (candidate.sampling or {}):
        metadata["kernel_file"] = candidate.sampling["file"]
    return {"sample_id": sample_id, "compiled": bool(verdict.compiled), "correctness": solved(verdict), "metadata": metadata,
            "runtime": runtime, "runtime_stats": stats}


def results_by_level(problems: Sequence[Problem], candidates: Sequence[Sequence[Candidate]],
                     verdicts: Sequence[Sequence[Verdict]]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """{level label: {problem id: [sample rows]}}: KernelBench keys a results file by problem id within one level."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for problem, cands, vs in zip(problems, candidates, verdicts):
        parts = (problem.suite_id or problem.name).split("/")
        level = parts[1] if len(parts) == 3 and parts[0] == BENCHMARK else (problem.suite or "custom").replace("/", "_")
        key = parts[-1]
        rows = []
        for s, (cand, verdict) in enumerate(zip(cands, vs)):
            sample = (cand.sampling or {}).get("kernelbench_sample", s)
            rows.append(result_row(int(sample), verdict, cand))
        out.setdefault(level, {})[key] = rows
    return out


def write_results(problems: Sequence[Problem], candidates: Sequence[Sequence[Candidate]], verdicts: Sequence[Sequence[Verdict]],
                  out_dir: str | Path) -> list[Path]:
    """`eval_results.json` in `out_dir` (one level), or `<level>/eval_results.json` per level."""
    out_dir = Path(out_dir)
    grouped = results_by_level(problems, candidates, verdicts)
    written = []
    for level, rows in grouped.items():
        path = out_dir / RESULTS_FILE if len(grouped) == 1 else out_dir / level / RESULTS_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(rows, indent=4, default=str) + "\n", encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written
