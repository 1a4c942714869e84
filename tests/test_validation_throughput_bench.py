"""benchmarks/validation_throughput.py: its candidates are really distinct, and renaming kept them
what they were (the correct ones are judged correct on the interpreter, the cheats still fail)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from autotriton.hashing import source_key
from autotriton.records import candidate_key
from autotriton.validation import JudgePool
from autotriton.validation.rewards import combined_reward
from validation_helpers import judge_config

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("validation_throughput", ROOT / "benchmarks" / "validation_throughput.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

ROUNDS = 3


def test_every_benchmark_candidate_is_distinct_in_bytes_and_in_key():
    jobs = bench.make_jobs(ROUNDS * len(bench.PAIRS))
    sources = [source for _, _, source in jobs]
    assert len(set(sources)) == len(jobs)  # byte-distinct
    keys = {candidate_key(source, source_key(problem)) for _, problem, source in jobs}
    assert len(keys) == len(jobs)  # distinct after normalisation (comments and layout do not count)
    for name, _, source in jobs:
        k = int(re.search(r"\[v(\d+)\]$", name).group(1))
        kernels = bench._KERNEL_NAME.findall(source)
        assert kernels, name  # every candidate of the benchmark defines a kernel
        if k:
            assert all(kernel.endswith(f"_v{k}") for kernel in kernels), (name, kernels)


def test_renamed_candidates_keep_their_verdicts():
    jobs = bench.make_jobs(2 * len(bench.PAIRS))[len(bench.PAIRS):]  # round 1: every pair, renamed
    with JudgePool(judge_config(workers=2, odd_size_trial=False)) as pool:
        verdicts = pool.validate_many([(problem, source) for _, problem, source in jobs])
    for (name, _, _), v in zip(jobs, verdicts):
        if name.startswith("correct_"):
            assert v.status == "correct" and combined_reward(v) == 1.0, (name, v.status, v.error, v.violations)
        else:
            assert combined_reward(v) == 0.0 and v.status != "correct", (name, v.status)
