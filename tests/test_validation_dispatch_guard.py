"""The dispatch guard's stand-in for a wrapped number (`x * 0.5` reaches a Python kernel as a
Python scalar) must promote as the scalar would, or guarded code computes other dtypes than the
same code unguarded. Run in a fresh interpreter: the guard registers kernels process-wide."""

from __future__ import annotations

import json
import subprocess
import sys

_SCRIPT = r"""
import json, torch
from autotriton.validation.dispatch_guard import install
cases = {
    "int_times_float": lambda: torch.arange(4) * -0.5,
    "bool_plus_int": lambda: torch.ones(3, dtype=torch.bool) + 2,
    "float32_0dim_plus_float": lambda: torch.tensor(1.5) + 0.1,
    "float64_times_float": lambda: torch.full((3,), 3.0, dtype=torch.float64) * 0.1,
    "float32_times_complex": lambda: torch.ones(2) * 1j,
    "int32_times_int": lambda: torch.ones(2, dtype=torch.int32) * 3,
}
before = {k: f() for k, f in cases.items()}
guard = install(frozenset())
after = {k: f() for k, f in cases.items()}
print(json.dumps({"wrapped": guard.wrapped, "cases": {
    k: [str(before[k].dtype), str(after[k].dtype), bool(torch.equal(before[k], after[k]))] for k in cases}}))
"""


def test_numbers_the_guard_rewraps_promote_as_python_scalars_do():
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["wrapped"] > 0  # the guard really sits under these operators
    for name, (unguarded, guarded, equal) in result["cases"].items():
        # same dtype and the same values (the float64 scalar is not rounded through float32)
        assert guarded == unguarded and equal, (name, unguarded, guarded)
