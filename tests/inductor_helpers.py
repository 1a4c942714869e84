"""Shared by the Inductor teacher tests: the L1 benchmark script as a module, and a run folder
seeded with recorded captures (tests/data/inductor), as a GPU run would leave it."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "data" / "inductor"


def load_bench(name: str = "inductor_l1_bench") -> Any:
    """benchmarks/inductor_l1.py, imported (it is a script, not a package module)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "inductor_l1.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seeded_run(tmp_path: Path, bench: Any, names: list[str]) -> tuple[Path, Path]:
    """(suite, run): a suite of the recorded captures' problems and a run folder whose captures/
    already holds them (append more suite lines for problems that were never captured)."""
    suite, run = tmp_path / "suite.jsonl", tmp_path / "run"
    (run / "captures").mkdir(parents=True)
    with suite.open("w") as f:
        for name in names:
            capture = json.loads((FIXTURES / f"{name}.json").read_text())
            f.write(json.dumps({"id": capture["id"], "name": capture["name"], "source": capture["source"]}) + "\n")
            shutil.copy(FIXTURES / f"{name}.json", run / "captures" / f"{bench.safe_id(capture['id'])}.json")
    return suite, run


def capture_on_cpu(problems: dict[str, str], tmp: Path, prefix: str) -> dict[str, dict]:
    """cpu-triton captures of `problems` (name -> KernelBench source), as `inductor_l1.py capture`
    writes them, keyed by name (suite ids `prefix/name`)."""
    suite = tmp / "suite.jsonl"
    suite.write_text("".join(json.dumps({"id": f"{prefix}/{n}", "name": n, "source": s}) + "\n" for n, s in problems.items()))
    assert load_bench().main(["capture", "--suite", str(suite), "--out", str(tmp / "run"), "--jobs", "2",
                              "--capture-device", "cpu-triton"]) == 0
    return {n: json.loads((tmp / "run" / "captures" / f"{prefix}_{n}.json").read_text()) for n in problems}


def convert_all(captured: dict[str, dict], problems: dict[str, str]) -> dict:
    """Every capture converted; a conversion that fails fails the caller with its reason."""
    from autotriton.distillation.inductor_convert import convert_capture

    out = {n: convert_capture(c, problems[n]) for n, c in captured.items()}
    for name, result in out.items():
        assert result.ok, f"{name}: {result.reason}: {result.detail}"
    return out


def load_source(code: str, path: Path, prefix: str) -> dict:
    """Write `code` to `path` and import it as a module; its globals."""
    import sys

    path.write_text(code)
    spec = importlib.util.spec_from_file_location(f"{prefix}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return vars(module)


def assert_cpu_judge_passes(problems: dict[str, str], converted: dict, names: list[str] | None = None) -> list:
    """Every converted candidate of `names` (default: all of `problems`) judged by the CPU judge
    (interpreter, two trials) is correct and within the rules; the verdicts, in `names`' order."""
    from autotriton.validation import ValidationConfig, validate_many

    names = list(problems) if names is None else names
    verdicts = validate_many([(problems[n], converted[n].code) for n in names],
                             ValidationConfig(device="cpu", trials=2, workers=2, timeout_s=300))
    for name, verdict in zip(names, verdicts):
        assert verdict.correct and verdict.rule_ok, f"{name}: {verdict.status}: {verdict.error} {verdict.violations}"
    return verdicts
