"""benchmarks/speed_profile.py on the CPU (--device cpu --smoke): a shipped Inductor pair (linear +
relu: weights to load, a GEMM template and a launch) goes through the whole study without a GPU,
and the output says what it measured. The GPU figures themselves come from the H200 run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _pair(name: str) -> dict[str, str]:
    problems = [json.loads(line) for line in (ROOT / "examples/demo/problems.jsonl").read_text().splitlines()]
    replay = [json.loads(line) for line in (ROOT / "distillation/data/replay/inductor.jsonl").read_text().splitlines()]
    source = next(p["source"] for p in problems if p["name"] == name)
    code = next(r["code"] for r in replay if r["problem_name"] == name)
    return {"name": name, "problem_source": source, "candidate_source": code}


def _run(tmp_path: Path, pairs: list[dict[str, str]]) -> tuple[subprocess.CompletedProcess, list[dict]]:
    src = tmp_path / "pairs.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in pairs))
    out = tmp_path / "speed.jsonl"
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks/speed_profile.py"), "--pairs", str(src), "--device", "cpu",
                           "--smoke", "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
    lines = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return proc, lines


def test_smoke_on_the_cpu_profiles_one_pair_and_writes_a_summary(tmp_path):
    proc, lines = _run(tmp_path, [_pair("linear_relu"), _pair("relu")])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(lines) == 2, "--smoke profiles one pair, then the summary line"
    row, summary = lines[0], lines[1]["summary"]
    assert "error" not in row, row
    assert row["name"] == "linear_relu" and row["weights"] == "loaded from the reference"
    assert row["max_abs_err"] is not None and row["max_abs_err"] < 1e-3  # the same weights, the same answer
    assert row["triton_launches"] >= 1 and row["source"]["dot_kernels"] >= 1
    for side in ("eager", "candidate"):
        assert row[side]["judge_ms"] > 0 and row[side]["steady_ms"] > 0
    assert "compiled" not in row  # --smoke skips torch.compile
    assert row["speedup_vs_eager_judge"] > 0
    assert summary["pairs"] == 1 and summary["errors"] == 0 and summary["geomean_speedup_vs_eager"] > 0
    assert set(summary["suspects"]) == {"a_fixed_tuning", "b_dynamic_shapes", "c_decomposed_convolutions", "d_host_work"}
    assert "[1] linear_relu" in proc.stderr  # progress


def test_a_broken_pair_is_reported_not_fatal(tmp_path):
    broken = dict(_pair("relu"), candidate_source="import torch\nclass ModelNew(torch.nn.Module):\n    def __init__(self):\n"
                  "        raise RuntimeError('cannot build')\n")
    proc, lines = _run(tmp_path, [broken])
    assert proc.returncode == 1  # nothing profiled
    assert "cannot build" in lines[0]["error"] and lines[1]["summary"]["errors"] == 1
