"""The per-trial byte budget (`max_trial_mb`): problems too big to send through the judge's pipes
are judged for correctness at shrunk sizes, and say so; timing keeps the problem's own sizes."""

from __future__ import annotations

import json

import pytest
import torch

from autotriton.validation import JudgePool, ValidationConfig
from autotriton.validation import candidate_runner, judge, problem_state, timing, trial_budget
from validation_helpers import candidate, judge_config

# One trial at full size: A (256x32) + B (32x256) + C (256x256) fp32 = 320 KiB.
BIG_MATMUL = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 256
K = 32
N = 256


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
'''

LINEAR = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.linear(x)


batch_size = 64
in_features = 512
out_features = 256


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
'''

# Only the first K block is summed: right when K <= 16, wrong at K = 32.
WRONG_MATMUL = candidate("correct_matmul").replace("for k0 in range(0, K, BK):", "for k0 in range(0, BK, BK):")


def _cfg(**overrides) -> dict:
    cfg = ValidationConfig(**{"device": "cpu", "shrink_for_cpu": False, "trials": 2, **overrides}).model_dump(mode="json")
    cfg["timing_job"] = {"runs": 20, "input_sets": 2}
    return cfg


def test_fit_to_budget_keeps_small_problems_and_shrinks_big_ones():
    src, notes = trial_budget.fit_to_budget(BIG_MATMUL, _cfg())
    assert src == BIG_MATMUL and notes["trial_mb"] == pytest.approx(0.3, abs=0.1) and "shrunk_for_memory" not in notes
    src, notes = trial_budget.fit_to_budget(BIG_MATMUL, _cfg(max_trial_mb=0.1))
    assert notes["shrunk_for_memory"] and notes["shrink_max_dim"] == 128  # the largest power of two that fits
    assert "M = 128" in src and "N = 128" in src and "K = 32" in src
    assert notes["judged_trial_mb"] <= 0.1
    # without answer files the answer limit counts too: all trials' outputs must fit max_output_mb
    src, notes = trial_budget.fit_to_budget(BIG_MATMUL, _cfg(max_output_mb=0.5, answer_shm=False))
    assert notes["shrunk_for_memory"] and "M = 128" in src
    # with them (the default) an answer over max_output_mb travels through the worker's answer file
    src, notes = trial_budget.fit_to_budget(BIG_MATMUL, _cfg(max_output_mb=0.5))
    assert src == BIG_MATMUL and "shrunk_for_memory" not in notes


def test_trial_bytes_come_from_the_meta_device():
    ins, outs = judge.trial_bytes(LINEAR)
    assert ins == 64 * 512 * 4 and outs == 64 * 256 * 4


def test_kernelbench_large_output_matmul_is_shrunk(kernelbench_l1):
    rows = {r["problem_id"]: r for r in map(json.loads, kernelbench_l1.read_text().splitlines()) if r.get("level") == 1}
    assert 7 in rows, f"{kernelbench_l1} lacks KernelBench L1/7 (the 32768x32768 matmul this test needs)"
    src, notes = trial_budget.fit_to_budget(rows[7]["source"], _cfg(device="cuda", trials=3))
    assert notes["trial_mb"] >= 4096  # a 32768 x 32768 fp32 output
    assert notes["shrunk_for_memory"] and notes["judged_trial_mb"] <= 512
    ins, outs = judge.trial_bytes(src)
    assert outs * 4 <= 1024 * 2**20  # 3 trials + the odd-size one fit the answer limit


def test_timing_plan_keeps_full_sizes_when_correctness_is_shrunk(tmp_path):
    cfg = _cfg(max_trial_mb=0.05)
    state = problem_state.ProblemState(LINEAR, cfg, str(tmp_path))
    assert state.notes["shrunk_for_memory"] and state.source != LINEAR
    assert [list(x.shape) for x in state.main.trials[0]["inputs"]] != [[64, 512]]
    assert judge.timing_plan(state, cfg) is None  # no timing on the CPU
    plan = judge.timing_plan(state, dict(cfg, device="cuda", time_kernels=True))
    assert plan["full_size"]["source"] == LINEAR and len(plan["full_size"]["seeds"]) == 2
    # both sides build the same full-size inputs from the reference's own get_inputs()
    _, init_inputs, sets = timing.full_size_setup(plan["full_size"], "cpu")
    _, _, again = timing.full_size_setup(plan["full_size"], "cpu")
    assert init_inputs == [512, 256] and [list(s[0].shape) for s in sets] == [[64, 512], [64, 512]]
    assert all(torch.equal(a[0], b[0]) for a, b in zip(sets, again)) and not torch.equal(sets[0][0], sets[1][0])

    class ModelNew(torch.nn.Module):  # what the candidate process times: a full-size instance of its own
        def __init__(self, in_features, out_features):
            super().__init__()
            self.linear = torch.nn.Linear(in_features, out_features)

    job = {"timing": plan, "phases": [{"trials": [{"inputs": t["inputs"]} for t in state.main.trials]}]}
    model, timed = candidate_runner.timing_model_and_inputs(ModelNew, "shrunk instance", job, "cpu")
    assert tuple(model.linear.weight.shape) == (256, 512) and [list(s[0].shape) for s in timed] == [[64, 512]] * 2
    # within budget: the trials' own model and inputs are timed, as before
    small = problem_state.ProblemState(LINEAR, _cfg(), str(tmp_path))
    plan = judge.timing_plan(small, dict(_cfg(), device="cuda", time_kernels=True))
    assert "full_size" not in plan
    job = {"timing": plan, "phases": [{"trials": [{"inputs": t["inputs"]} for t in small.main.trials]}]}
    assert candidate_runner.timing_model_and_inputs(ModelNew, "main", job, "cpu")[0] == "main"


def test_over_budget_problem_is_judged_shrunk_and_still_catches_a_wrong_kernel():
    cfg = judge_config(shrink_for_cpu=False, max_trial_mb=0.1, trials=2, timeout_s=60)
    with JudgePool(cfg, workers=2) as pool:
        right, wrong = pool.validate_many([(BIG_MATMUL, candidate("correct_matmul")), (BIG_MATMUL, WRONG_MATMUL)])
    assert right.status == "correct", right.error
    assert right.timing["problem_shrunk_for_memory"] and right.timing["problem_shrink_max_dim"] == 128
    assert right.timing["problem_trial_mb"] > 0.1 >= right.timing["problem_judged_trial_mb"]
    assert right.trials[0]["shapes"] == [[128, 32], [32, 128]]
    assert wrong.status == "incorrect" and not wrong.correct
    assert wrong.timing["problem_shrunk_for_memory"]


# The same kernel with BIG_MATMUL's sizes baked in, as a static Inductor capture writes them: right at
# the problem's own sizes, out of step at any other (shrunk or odd).
STATIC_MATMUL = candidate("correct_matmul").replace(
    "        M, K = A.shape\n        _, N = B.shape\n", "        M, K, N = 256, 32, 256\n").replace(
    "A.stride(0), A.stride(1), B.stride(0), B.stride(1), C.stride(0), C.stride(1)", "32, 1, 256, 1, 256, 1")


def test_a_problem_over_the_trial_budget_is_judged_at_its_own_sizes_when_it_fits_the_own_size_limit():
    """KernelBench's correctness is at the problem's own sizes. Over max_trial_mb but within
    max_own_size_trial_mb (one trial and the odd-size one), the judge keeps those sizes with
    own_size_trials trials: a static candidate is then correct at its own sizes and fails only the
    odd-size trial; shrunk, as before (limit 0), it failed its own sizes too."""
    assert "M, K, N = 256, 32, 256" in STATIC_MATMUL and "A.shape" not in STATIC_MATMUL
    own = judge_config(shrink_for_cpu=False, max_trial_mb=0.1, max_own_size_trial_mb=1.0, trials=2, timeout_s=60)
    shrunk = judge_config(shrink_for_cpu=False, max_trial_mb=0.1, trials=2, timeout_s=60)
    with JudgePool(own, workers=2) as pool:
        static_own, general_own = pool.validate_many([(BIG_MATMUL, STATIC_MATMUL), (BIG_MATMUL, candidate("correct_matmul"))])
    with JudgePool(shrunk, workers=1) as pool:
        (static_shrunk,) = pool.validate_many([(BIG_MATMUL, STATIC_MATMUL)])
    assert static_own.correct_own_sizes and static_own.odd_sizes_ok is False and not static_own.correct
    assert [t["shapes"] for t in static_own.trials if t["phase"] == "main"] == [[[256, 32], [32, 256]]]  # one trial
    assert not static_own.timing.get("problem_shrunk_for_memory")
    assert general_own.status == "correct" and general_own.correct_own_sizes and general_own.odd_sizes_ok
    assert static_shrunk.timing["problem_shrunk_for_memory"] and not static_shrunk.correct_own_sizes
