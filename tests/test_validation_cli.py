"""`autotriton validate`: one JSON object on stdout, exit 0 for any verdict, 2 for usage errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from validation_helpers import JUDGE_DATA

KEYS = {"status", "correct", "rule_ok", "violations", "exec_reward", "rule_reward", "reward", "max_abs_err", "speedup",
        "triton_kernels_launched"}


def autotriton(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOTRITON_")}
    code = "import sys; from autotriton.flows.cli import main; sys.argv[0] = 'autotriton'; main()"
    return subprocess.run([sys.executable, "-c", code, "--profile", "demo", "validate", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


def test_validate_json_for_a_correct_and_a_noisy_cheating_candidate(tmp_path):
    problem = JUDGE_DATA / "problems" / "relu.py"
    good = autotriton("--problem", str(problem), "--candidate", str(JUDGE_DATA / "candidates" / "correct_relu.py"),
                      "--device", "cpu", "--trials", "2", "--json", cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    summary = json.loads(good.stdout)
    assert KEYS <= set(summary)
    assert summary["status"] == "correct" and summary["reward"] == 1.0 and summary["speedup"] is None
    assert summary["triton_kernels_launched"] == ["relu_kernel"] and len(summary["trials"]) == 2 + 1

    noisy = JUDGE_DATA / "candidates" / "cheat_never_launched.py"
    printing = tmp_path / "printing_cheat.py"
    printing.write_text(noisy.read_text().replace("return torch.relu(x)", "print('CANDIDATE-NOISE ' * 100)\n        return torch.relu(x)"))
    bad = autotriton("--problem", str(problem), "--candidate", str(printing), "--device", "cpu", "--trials", "2", "--json", cwd=tmp_path)
    assert bad.returncode == 0, bad.stderr  # a verdict was produced, whatever it says
    lines = bad.stdout.strip().splitlines()
    assert len(lines) == 1 and "CANDIDATE-NOISE" not in bad.stdout + bad.stderr
    summary = json.loads(lines[0])
    assert summary["status"] == "rule_violation" and summary["reward"] == 0.0
    assert {"RUNTIME-NO-TRITON-LAUNCH", "TORCH-COMPUTE"} <= {v["rule"] for v in summary["violations"]}
    assert all(set(v) == {"rule", "message", "line"} for v in summary["violations"])


def test_validate_usage_errors_exit_2(tmp_path):
    candidate = JUDGE_DATA / "candidates" / "correct_relu.py"
    missing = autotriton("--problem", str(tmp_path / "nope.py"), "--candidate", str(candidate), "--json", cwd=tmp_path)
    assert missing.returncode == 2 and "nope.py" in missing.stderr and "not found" in missing.stderr and missing.stdout == ""
    not_a_problem = autotriton("--problem", str(candidate), "--candidate", str(candidate), "--json", cwd=tmp_path)
    assert not_a_problem.returncode == 2 and "not a KernelBench-format problem" in not_a_problem.stderr
    assert "Model" in not_a_problem.stderr
    bad_device = autotriton("--problem", str(JUDGE_DATA / "problems" / "relu.py"), "--candidate", str(candidate), "--device", "tpu",
                            cwd=tmp_path)
    assert bad_device.returncode == 2 and "--device" in bad_device.stderr
