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
