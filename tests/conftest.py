"""Test-wide settings: offline, isolated Prefect home, no telemetry.

Set before anything imports prefect / transformers, so every test process is hermetic.
"""

from __future__ import annotations

import json
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
# CLI verbs run plainly in tests (a session-wide Prefect harness would otherwise make every verb a
# flow run, orchestration.verbs_as_flows=auto); tests of that behaviour set it themselves.
os.environ["AUTOTRITON_ORCHESTRATION__VERBS_AS_FLOWS"] = "never"

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"
KERNELBENCH_L1 = SHARED / "benchmarks" / "kernelbench_level1.jsonl"


def in_ci() -> bool:
    """True under a CI runner (they set CI=true; GitHub, GitLab and most others do)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture
def kernelbench_l1() -> Path:
    """The shared KernelBench level-1 suite (read by path, never copied into the repository).

    CI is given ../shared, so there its absence is a broken setup and fails the test; on a developer's
    clone without ../shared the test skips, naming the file it needs.
    """
    if not KERNELBENCH_L1.exists():
        message = f"{KERNELBENCH_L1} not present (shared benchmark data, KernelBench level 1; see README 'Licence')"
        if in_ci():
            pytest.fail(f"{message}: CI must provide ../shared/benchmarks", pytrace=False)
        pytest.skip(message)
    return KERNELBENCH_L1


@pytest.fixture(scope="session")
def prefect_harness():
    """One temporary Prefect API server (and database) for every test that runs flows."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=180):
        yield


# Skips are counted and written down so that `.ci/run` can print them last: a test skipped for a
# missing part of the project would otherwise pass unseen in a green run. Only what the machine lacks
# (a GPU, a compiler, the network, ../shared outside CI) may skip.
SKIP_REPORT = REPO_ROOT / ".pytest-skips.json"


def pytest_sessionstart(session):
    # A report left from an earlier run must not be read as this run's.
    SKIP_REPORT.unlink(missing_ok=True)


def _skip_reason(report) -> str:
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    return str(report.longrepr)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter):
    skipped = terminalreporter.stats.get("skipped", [])
    reasons: dict[str, int] = {}
    for report in skipped:
        reason = _skip_reason(report)
        reasons[reason] = reasons.get(reason, 0) + 1
    SKIP_REPORT.write_text(json.dumps({"skipped": len(skipped), "reasons": reasons}, indent=1) + "\n")
    terminalreporter.write_sep("-", f"{len(skipped)} skipped")
    for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"{count:4d}  {reason}")
