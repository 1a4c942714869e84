"""Test-wide settings: offline, isolated Prefect home, no telemetry.

Set before anything imports prefect / transformers, so every test process is hermetic.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

_PREFECT_HOME = tempfile.mkdtemp(prefix="autotriton-prefect-")
os.environ.setdefault("PREFECT_HOME", _PREFECT_HOME)
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("WANDB_DISABLED", "true")
# A developer's own AUTOTRITON_* settings must not leak into tests.
for _name in [n for n in os.environ if n.startswith("AUTOTRITON_")]:
    del os.environ[_name]
# Harvested modules' dependency environments install from PyPI into ~/.cache: off for the suite;
# tests/test_harvesting_environments.py turns them on with a cache of its own.
os.environ["AUTOTRITON_ENVIRONMENTS__ENABLED"] = "false"

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"
KERNELBENCH_L1 = SHARED / "benchmarks" / "kernelbench_level1.jsonl"


@pytest.fixture
def kernelbench_l1() -> Path:
    """The shared KernelBench level-1 suite; tests that need it skip where it is absent."""
    if not KERNELBENCH_L1.exists():
        pytest.skip(f"{KERNELBENCH_L1} not present (shared benchmark data)")
    return KERNELBENCH_L1


@pytest.fixture(scope="session")
def prefect_harness():
    """One temporary Prefect API server (and database) for every test that runs flows."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield
