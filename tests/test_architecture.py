"""The direction of imports (issue 16): stages hand records to each other, the warehouse and the
orchestration stay at the edges.

    stage packages (harvesting, distillation, validation, training, evaluation)
        import only `autotriton/` core modules (autotriton/*.py) and their own package; another
        stage only through the judge's batch API: the public names of `autotriton.validation`
        (its `__init__`); never the warehouse, tasks, flows, Prefect or DuckDB.
    warehouse/  imports no stage and no Prefect.
    flows/      imports no warehouse and no stage internals (`autotriton.<stage>.<module>`);
                a stage's public `__init__` is fine, and so is a package's `config` module
                (flows/config.py composes them: a config sits beside the thing it configures).

Every import is read with ast, those inside functions and under TYPE_CHECKING included.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
STAGES = ("harvesting", "distillation", "validation", "training", "evaluation")
EDGES = ("warehouse", "tasks", "flows")
CORE = frozenset(p.stem for p in (REPO_ROOT / "autotriton").glob("*.py") if p.stem != "__init__")
# The one documented way a stage reaches another: the judge's batch API (validation/README.md).
SHARED_STAGE_API = "validation"
FOREIGN = ("prefect", "prefect_dask", "duckdb")


@dataclass(frozen=True)
class Import:
    file: str  # relative to the repository root
    line: int
    module: str  # the module reached, e.g. autotriton.evaluation.suites
    names: tuple[str, ...] = ()  # `from module import names`

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.module}"


def _package_dir(package: str) -> Path:
    return REPO_ROOT / ("autotriton" if package == "autotriton" else package)


def _is_submodule(package: str, name: str) -> bool:
    folder = _package_dir(package)
    return (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file()


def _imports(path: Path) -> list[Import]:
    rel = str(path.relative_to(REPO_ROOT))
    out: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=rel)):
        if isinstance(node, ast.Import):
            out += [Import(rel, node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            for alias in node.names:
                # `from autotriton.evaluation import kernelbench` reaches the module, not the API
                if parts[0] == "autotriton" and len(parts) <= 2 and _is_submodule(parts[-1] if len(parts) == 2 else "autotriton", alias.name):
                    out.append(Import(rel, node.lineno, f"{node.module}.{alias.name}"))
                else:
                    out.append(Import(rel, node.lineno, node.module, (alias.name,)))
    return out


@cache
def _files(folder: str) -> tuple[Path, ...]:
    return tuple(sorted((REPO_ROOT / folder).rglob("*.py")))


def _all_imports(folders: tuple[str, ...]) -> list[Import]:
    return [imp for folder in folders for path in _files(folder) for imp in _imports(path)]


def _parts(module: str) -> list[str]:
    return module.split(".")


def _stage_violation(stage: str, imp: Import) -> str | None:
    parts = _parts(imp.module)
    if parts[0] in FOREIGN:
        return "a stage imports no orchestrator or database"
    if parts[0] != "autotriton" or len(parts) == 1:
        return None
    top = parts[1]
    if top in CORE or top == stage:
        return None
    if top in EDGES:
        return f"a stage never imports autotriton.{top}"
    if top in STAGES:
        if top == SHARED_STAGE_API and len(parts) == 2:
            private = [n for n in imp.names if n not in _public_names(top)]
            return f"{', '.join(private)}: not in autotriton.{top}'s public API" if private else None
        return f"{stage} imports another stage ({'.'.join(parts[:3])})"
    return None


@cache
def _public_names(stage: str) -> frozenset[str]:
    import importlib

    return frozenset(importlib.import_module(f"autotriton.{stage}").__all__)


def _stage_violations(stages: tuple[str, ...]) -> list[str]:
    found = []
    for stage in stages:
        for imp in _all_imports((stage,)):
            why = _stage_violation(stage, imp)
            if why:
                found.append(f"{imp}  ({why})")
    return found


def test_the_checker_sees_every_folder_and_function_level_imports():
    for folder in (*STAGES, *EDGES):
        assert _files(folder), folder
    lazy = [imp for imp in _all_imports(("tasks",)) if imp.file == "tasks/distill.py" and imp.module == "autotriton.distillation"]
    assert lazy, "function-level imports must be read"
    assert "records" in CORE and "hashing" in CORE


def test_stage_rule_catches_what_it_forbids():
    cases = {
        ("evaluation", "autotriton.training.data"): "another stage",
        ("evaluation", "autotriton.distillation"): "another stage",
        ("training", "autotriton.warehouse"): "never imports",
        ("training", "prefect.flows"): "orchestrator",
        ("harvesting", "duckdb"): "database",
    }
    for (stage, module), why in cases.items():
        assert why in (_stage_violation(stage, Import("x.py", 1, module)) or ""), (stage, module)
    for stage, module, names in [("training", "autotriton.validation", ("JudgePool",)), ("training", "autotriton.records", ()),
                                 ("training", "autotriton.training.sft", ()), ("evaluation", "torch", ())]:
        assert _stage_violation(stage, Import("x.py", 1, module, names)) is None, (stage, module)
    assert _stage_violation("training", Import("x.py", 1, "autotriton.validation.pool"))
    assert "public API" in _stage_violation("training", Import("x.py", 1, "autotriton.validation", ("load_problem_module",)))


@pytest.mark.parametrize("stage", ["harvesting", "distillation", "validation", "training", "evaluation"])
def test_stage_imports_only_core_its_own_package_and_the_judges_api(stage):
    found = _stage_violations((stage,))
    assert not found, "\n".join(found)


def test_warehouse_imports_no_stage_and_no_prefect():
    found = []
    for imp in _all_imports(("warehouse",)):
        parts = _parts(imp.module)
        if parts[0] in ("prefect", "prefect_dask") or (parts[0] == "autotriton" and len(parts) > 1
                                                      and parts[1] in (*STAGES, "tasks", "flows")):
            found.append(str(imp))
    assert not found, "\n".join(found)


def test_flows_import_no_warehouse_and_no_stage_internals():
    found = []
    for imp in _all_imports(("flows",)):
        parts = _parts(imp.module)
        if parts[0] != "autotriton" or len(parts) < 2:
            continue
        is_config = len(parts) == 3 and parts[2] == "config"  # flows/config.py composes the configs
        if parts[1] == "warehouse" and not is_config:
            found.append(f"{imp}  (flows reach the warehouse through tasks/)")
        elif parts[1] in STAGES and len(parts) > 2 and not is_config:
            found.append(f"{imp}  (a stage internal: use its public __init__ or tasks/)")
    assert not found, "\n".join(found)
