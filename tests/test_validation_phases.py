"""Where a judgement's time goes: the per-phase wall times every verdict carries (benchmarks and
the GRPO reward profile read them by name), and the worker's compiler warm-up that candidates
inherit without the template ever initialising CUDA."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from autotriton.validation import JudgePool
from validation_helpers import candidate, judge_config, problem

WORKER_PHASES = ("phase_spawn_s", "phase_problem_s", "phase_send_s", "phase_wait_s", "phase_assess_s", "phase_finish_s")
CANDIDATE_PHASES = ("candidate_fork_s", "candidate_confine_s", "candidate_recv_job_s", "candidate_run_s", "candidate_import_s",
                    "candidate_first_transfer_s", "candidate_first_trial_s", "candidate_trials_s", "candidate_compile_check_s")
CALLER_PHASES = ("caller_rules_s", "caller_queue_s", "caller_roundtrip_s")

HANG = '''
import time
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        time.sleep(60)
'''


@pytest.fixture(scope="module")
def pool():
    with JudgePool(judge_config(workers=1, timeout_s=4)) as p:
        yield p


def test_a_verdict_says_where_its_time_went(pool):
    v = pool.validate(problem("relu"), candidate("correct_relu"))
    assert v.status == "correct"
    t = v.timing
    for key in WORKER_PHASES + CANDIDATE_PHASES + CALLER_PHASES + ("phase_refs_s",):
        assert isinstance(t.get(key), float) and t[key] >= 0.0, key
    # The worker's phases are consecutive laps of one judgement: they fit in the caller's round trip.
    assert sum(t[k] for k in WORKER_PHASES) <= t["caller_roundtrip_s"] + 1e-3
    assert t["caller_roundtrip_s"] <= v.elapsed_s + 1e-3
    # What the candidate did happened while the worker waited for its answer (the candidate may
    # read its job a scheduling slice before the worker's send call returns: a small allowance).
    assert t["candidate_run_s"] <= t["phase_wait_s"] + 0.05
    assert t["candidate_trials_s"] >= t["candidate_first_trial_s"]
    assert t["candidate_run_s"] >= t["candidate_import_s"] + t["candidate_trials_s"] + t["candidate_compile_check_s"] - 1e-3
    assert t["phase_refs_s"] <= t["phase_wait_s"]


def test_a_timeout_still_times_the_wait_and_the_tear_down(pool):
    v = pool.validate(problem("relu"), HANG)
    assert v.status == "timeout"
    assert v.timing["phase_wait_s"] >= 4.0 * 0.9
    assert v.timing["phase_finish_s"] >= 0.0
    assert "candidate_run_s" not in v.timing  # nothing came back from the candidate
    # and the pool goes on judging
    assert pool.validate(problem("relu"), candidate("correct_relu")).status == "correct"


@pytest.mark.parametrize("interpret", ["1", ""])
def test_compiler_warm_up_fills_the_key_cache_without_touching_cuda(tmp_path, interpret):
    """The template forks right after this: the hash must be cached, CUDA untouched, the
    caller's TRITON_CACHE_DIR back as it was and nothing of the warm compile left behind."""
    code = ("import json, os\n"
            "from autotriton.validation.warmup import warm_compiler\n"
            "import torch, triton.runtime.cache as c\n"
            f"warm_compiler({str(tmp_path)!r})\n"
            "print(json.dumps({'cached': c.triton_key.cache_info().currsize, 'cuda': torch.cuda.is_initialized(),\n"
            "                  'cache_dir': os.environ.get('TRITON_CACHE_DIR'), 'left': os.listdir(" + repr(str(tmp_path)) + ")}))\n")
    env = dict(os.environ, TRITON_INTERPRET=interpret, TRITON_CACHE_DIR=str(tmp_path / "callers"), CUDA_VISIBLE_DEVICES="")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"cached": 1, "cuda": False, "cache_dir": str(tmp_path / "callers"), "left": []}


def test_the_driver_seed_lies_where_triton_looks_for_its_cuda_utils(tmp_path):
    """A GPU worker builds Triton's cuda_utils extension once and copies it into every candidate's
    cache: it must sit exactly where Triton's compile_module_from_src looks it up (the key is
    Triton's own), else every candidate runs gcc again. Built here without libcuda (no GPU)."""
    pytest.importorskip("triton.backends.nvidia.driver")
    import shutil as _shutil

    if _shutil.which("gcc") is None and _shutil.which("cc") is None:
        pytest.skip("no C compiler")
    code = ("import hashlib, os, sysconfig\n"
            "from pathlib import Path\n"
            "from autotriton.validation.worker import build_driver_seed\n"
            "seed = build_driver_seed(" + repr(str(tmp_path)) + ", library_dirs=[], libraries=[])\n"
            "os.environ['TRITON_CACHE_DIR'] = seed\n"
            "from triton.backends.nvidia import driver as nv\n"
            "from triton.runtime.build import platform_key\n"
            "from triton.runtime.cache import get_cache_manager\n"
            "src = Path(nv.dirname, 'driver.c').read_text()\n"
            "key = hashlib.sha256((src + platform_key()).encode('utf-8')).hexdigest()\n"
            "print(get_cache_manager(key).get_file('cuda_utils' + sysconfig.get_config_var('EXT_SUFFIX')))\n")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    env.pop("TRITON_INTERPRET", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    found = out.stdout.strip().splitlines()[-1]
    assert found != "None" and os.path.getsize(found) > 10_000
    assert sorted(os.listdir(tmp_path)) == ["triton-seed"]  # the build directory is gone


# --- spare candidate processes (validation/README.md, "Spare candidate processes") -------------


def _spares(pool) -> set[int]:
    """Live processes of the pool other than its workers and their templates: the spares."""
    roles = pool.roles()
    spares = set(pool.processes()) - {pid for pid, role in roles.items() if role != "spare"}
    assert spares == {pid for pid, role in roles.items() if role == "spare"}
    return spares


def test_every_candidate_gets_its_own_process_from_a_spare_made_ahead():
    with JudgePool(judge_config(workers=1)) as p:
        assert p.validate(problem("relu"), candidate("correct_relu")).status == "correct"
        first = _spares(p)
        assert len(first) == 1  # the next candidate's process, already forked and confined
        v = p.validate(problem("relu"), candidate("cheat_zero_output"))
        assert v.status == "incorrect"
        second = _spares(p)
        # The spare was used up by that candidate (and is gone with it); a new one waits.
        assert len(second) == 1 and not (first & second)
        assert v.timing["phase_spawn_s"] < 5.0


def test_a_spare_that_died_is_replaced_and_the_candidate_is_judged_normally():
    with JudgePool(judge_config(workers=1)) as p:
        assert p.validate(problem("relu"), candidate("correct_relu")).status == "correct"
        (spare,) = _spares(p)
        os.kill(spare, 9)
        for _ in range(200):  # until it has exited (a zombie or gone: its socket is closed then)
            try:
                with open(f"/proc/{spare}/stat", "rb") as f:
                    if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                        break
            except OSError:
                break
            time.sleep(0.05)
        v = p.validate(problem("relu"), candidate("correct_relu"))
        assert v.status == "correct", v.error
        assert spare not in p.processes()


def test_without_spares_no_process_waits_between_candidates():
    with JudgePool(judge_config(workers=1, spare_candidates=False)) as p:
        assert p.validate(problem("relu"), candidate("correct_relu")).status == "correct"
        assert _spares(p) == set()


def test_a_candidate_loads_large_weights_although_the_worker_used_openmp_before_forking(monkeypatch):
    """The worker's warm-up runs torch CPU ops on an OpenMP pool (OMP_NUM_THREADS > 1), which does
    not survive fork: a candidate copying a weight over ATen's parallel grain size (32768 elements)
    used to wait on it forever, in load_state_dict, before any of its kernels ran (eleven
    KernelBench L1 problems timed out that way on the H200)."""
    monkeypatch.setattr(os, "cpu_count", lambda: 8)  # the pool gives its one worker 8 OpenMP threads
    source = problem("linear_relu").replace("in_features = 20", "in_features = 256").replace(
        "out_features = 24", "out_features = 160")  # a 160 x 256 weight: 40960 elements
    with JudgePool(judge_config(workers=1, trials=1, timeout_s=20, shrink_for_cpu=False)) as p:
        v = p.validate(source, candidate("correct_linear_relu"))
    assert v.status == "correct", v.error
