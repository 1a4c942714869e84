"""Dataset sources: KernelBook-style pair datasets and benchmark suites (JSONL or Parquet).

KernelBook (GPUMODE/KernelBook) rows carry `python_code` (a module with get_inputs /
get_init_inputs), `triton_code` (the Inductor-generated `<module_name>New`), `module_name`,
`repo_name`, `licenses`, `stars`, `sha`, `repo_link`, `uuid`. Each row becomes a module, a
problem (class renamed to Model) and, when the problem runs, a ready (Problem, Candidate) pair with
generator "kernelbook". Benchmark suites in the `shared/benchmarks` JSONL form (id, level,
problem_id, name, source, origin, license) are imported verbatim as problems with suite ids.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator

from autotriton.harvesting.config import HarvestConfig
from autotriton.harvesting.core import Harvester, HarvestResult, ProbeFn, op_tags
from autotriton.harvesting.probe_steps import Pending
from autotriton.harvesting.extract import rename_names, rename_to_model
from autotriton.harvesting.licences import normalize_spdx
from autotriton.harvesting.local import HarvestInputError
from autotriton.harvesting.state import HarvestState
from autotriton.harvesting.synthesis import Attempt
from autotriton.records import Candidate, Problem, SourceRef

KERNELBOOK_GENERATOR = "kernelbook"


def read_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line or row number, row) of a JSONL or Parquet file. Raises HarvestInputError naming the line."""
    if path.suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types for a bad file
            raise HarvestInputError(f"{path}: not a readable Parquet file ({exc})") from exc
        for i, row in enumerate(table.to_pylist()):
            yield i, row
        return
    with path.open("r", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise HarvestInputError(f"{path}:{lineno}: not valid JSON ({exc.msg}); each line must be one JSON object") from exc
            if not isinstance(row, dict):
                raise HarvestInputError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
            yield lineno, row


class _Verbatim(Attempt):
    """The dataset's own get_inputs/get_init_inputs (already in the source)."""

    def functions(self) -> str:
        return ""


def _positional_init(source: str, class_name: str = "Model") -> str:
    """KernelBook's `get_init_inputs()` returns `[args, kwargs]`; KernelBench calls
    `Model(*get_init_inputs())`. Rewrite it to positional arguments in __init__'s order."""
    tree = ast.parse(source)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_init_inputs"), None)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    if fn is None or cls is None:
        return source
    ret = next((n for n in ast.walk(fn) if isinstance(n, ast.Return)), None)
    if ret is None or not isinstance(ret.value, ast.List) or len(ret.value.elts) != 2:
        return source
    args, kwargs = ret.value.elts
    if not isinstance(args, ast.List) or not isinstance(kwargs, ast.Dict):
        return source
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    params = [a.arg for a in (init.args.posonlyargs + init.args.args)][1:] if init else []
    defaults = init.args.defaults if init else []
    default_of = dict(zip(params[len(params) - len(defaults):], defaults))
    values: list[str] = [ast.unparse(a) for a in args.elts]
    given = {ast.literal_eval(k): ast.unparse(v) for k, v in zip(kwargs.keys, kwargs.values) if isinstance(k, ast.Constant)}
    if any(k not in params for k in given):
        return source
    last = max([params.index(k) for k in given], default=-1)
    for i in range(len(values), last + 1):
        name = params[i]
        if name in given:
            values.append(given[name])
        elif name in default_of:
            values.append(ast.unparse(default_of[name]))
        else:
            return source
    lines = source.splitlines()
    new = ["def get_init_inputs():", f"    return [{', '.join(values)}]"]
    return "\n".join(lines[: fn.lineno - 1] + new + lines[fn.end_lineno:]) + "\n"


def _kernelbook_licence(row: dict[str, Any]) -> str | None:
    lic = row.get("licenses", row.get("license", row.get("licence")))
    if isinstance(lic, str):
        lic = [lic]
    for item in lic or []:
        found = normalize_spdx(str(item))
        if found:
            return found
    return None


def harvest_dataset(path: str | os.PathLike[str], config: HarvestConfig | None = None, *, probe: ProbeFn | None = None,
                    progress: bool = False, commit_state: bool = True, state: HarvestState | None = None,
                    console: Any = None, validation_config: Any = None, suite: str | None = None,
                    environments: Any = None) -> HarvestResult:
    """Import a KernelBook-style dataset (modules, problems and ready pairs) or a benchmark suite
    (problems with suite ids), detected from the columns. Unchanged files are skipped (state)."""
    config = config or HarvestConfig()
    file = Path(path).expanduser()
    if not file.is_file():
        raise HarvestInputError(f"{path}: no such file; pass a .jsonl or .parquet dataset")
    file = file.resolve()
    if state is None:
        state = HarvestState.for_config(config)
    harvester = Harvester(config, probe=probe, state=state, progress=progress, console=console, validation_config=validation_config,
                          environments=environments)
    digest = hashlib.sha256(file.read_bytes()).hexdigest()
    source_state = state.source(f"dataset:{file}")
    if config.incremental and source_state.get("sha256") == digest:
        harvester.result.unchanged += 1
        result = harvester.finish()
        return result
    rows = list(read_rows(file))
    kernelbook: list[tuple[Problem, str, str]] = []
    bar = harvester._progress()
    with bar:
        task = bar.add_task(f"read {file.name}", total=len(rows))
        for lineno, row in rows:
            bar.advance(task)
            _dataset_row(harvester, file, lineno, row, suite, kernelbook)
    result = harvester.finish()
    by_key = {p.key: p for p in result.problems if p.status == "runnable"}
    for problem, triton_code, module_name in kernelbook:
        if problem.key in by_key:
            code = triton_code
            if module_name:
                try:
                    code = rename_names(triton_code, {f"{module_name}New": "ModelNew", module_name: "Model"})
                except Exception:  # libcst cannot parse it: keep the text; the judge will say why
                    code = triton_code
            result.pairs.append((problem, Candidate(problem_key=problem.key, code=code, generator=KERNELBOOK_GENERATOR,
                                                    raw_output=triton_code)))
    source_state.update({"sha256": digest, "rows": len(rows)})
    if commit_state:
        result.commit_state()
    return result


def _dataset_row(harvester: Harvester, file: Path, lineno: int, row: dict[str, Any], suite: str | None,
                 kernelbook: list[tuple[Problem, str, str]]) -> None:
    harvester.result.files += 1
    subject = f"{file.name}:{lineno}"
    if "python_code" in row:
        item = _kernelbook_row(harvester, file, lineno, row, subject)
        if item is not None:
            kernelbook.append(item)
    elif "source" in row and ("id" in row or "problem_id" in row):
        _suite_row(harvester, file, lineno, row, subject, suite)
    else:
        harvester.reject_file(subject, "unknown_row_format",
                              f"row has neither `python_code` (KernelBook) nor `source` + `id` (benchmark suite); columns: {sorted(row)[:12]}")


def _kernelbook_row(harvester: Harvester, file: Path, lineno: int, row: dict[str, Any], subject: str) -> tuple[Problem, str, str] | None:
    code = row.get("python_code")
    if not isinstance(code, str) or not code.strip():
        harvester.reject_file(subject, "bad_row", "`python_code` is empty")
        return None
    licence = _kernelbook_licence(row)
    ref = SourceRef(kind="dataset", repo=str(row.get("repo_name") or file.name), commit=str(row.get("sha") or ""),
                    path=f"{file.name}#{row.get('uuid', lineno)}", licence=licence,
                    stars=int(row["stars"]) if isinstance(row.get("stars"), (int, float)) else None,
                    url=row.get("repo_link") or None)
    if not harvester.licence_ok(licence, subject):
        return None
    module_name = str(row.get("module_name") or row.get("entry_point") or "")
    try:
        ast.parse(code)
    except SyntaxError as exc:
        harvester.reject_file(subject, "syntax_error", f"python_code line {exc.lineno}: {exc.msg}")
        return None
    model_source = rename_to_model(code, module_name) if module_name else code
    if "class Model" not in model_source:
        harvester.reject_file(subject, "bad_row", f"python_code defines no class `{module_name or 'Model'}` (module_name column)")
        return None
    model_source = _positional_init(model_source)
    kind, _ = harvester.dedup.check(model_source, subject)
    if kind is not None:
        harvester.result.duplicates += 1
        return None
    from autotriton.harvesting.dedup import canonical_key
    from autotriton.records import HarvestedModule

    harvester._new_keys.add(canonical_key(model_source))
    harvester.add_source(ref)
    module = HarvestedModule(source=ref, class_name=module_name or "Model", original_source=code, standalone_source=code)
    harvester.result.modules.append(module)
    problem = Problem(reference_source=model_source, name=module_name or "Model", module_key=module.key, source_key=ref.key,
                      licence=licence, op_tags=op_tags(code))
    harvester.pending.append(Pending(problem, model_source, [_Verbatim([], [], [], [], label="dataset")]))
    triton_code = row.get("triton_code")
    return (problem, triton_code, module_name) if isinstance(triton_code, str) and triton_code.strip() else None


def _suite_row(harvester: Harvester, file: Path, lineno: int, row: dict[str, Any], subject: str, suite: str | None) -> None:
    source = row.get("source")
    if not isinstance(source, str) or "class Model" not in source:
        harvester.reject_file(subject, "bad_row", "`source` must be a KernelBench problem defining class Model")
        return
    licence = normalize_spdx(str(row.get("license") or row.get("licence") or ""))
    if not harvester.licence_ok(licence, subject):
        return
    suite_id = str(row.get("id") or f"{suite or file.stem}/{row.get('problem_id')}")
    suite_name = suite or (suite_id.rsplit("/", 1)[0] if "/" in suite_id else file.stem)
    origin = str(row.get("origin") or "")
    repo, _, rest = origin.partition("@")
    commit, _, opath = rest.partition(":")
    ref = SourceRef(kind="suite", repo=repo or file.name, commit=commit, path=opath or f"{file.name}:{lineno}", licence=licence)
    harvester.add_source(ref)
    harvester.add_problem(Problem(reference_source=source, name=str(row.get("name") or suite_id), source_key=ref.key,
                                  licence=licence, suite=suite_name, suite_id=suite_id, op_tags=op_tags(source),
                                  shape_profile="gpu-full"))
