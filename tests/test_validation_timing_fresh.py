"""Timing that a cache cannot game (validation/timing.py FreshValues, the check call after timing).

A candidate is timed by calling its forward again and again; if those calls saw the same inputs,
a forward that remembers its answer (by input identity, data pointer, version or a checksum of the
values) would time as a lookup and earn a speedup for work it never does. The timed calls get the
same tensors holding new values each call, and one more call on a trial's exact inputs is compared
with the reference in the judge's worker."""

from __future__ import annotations

import torch

from autotriton.validation import JudgePool
from autotriton.validation.timing import time_callable
from validation_helpers import candidate, judge_config, problem


class _Recording:
    """A 'model' that writes down what each call saw."""

    def __init__(self):
        self.calls: list[tuple[int, int, torch.Tensor, torch.Tensor]] = []

    def __call__(self, x, idx, n):
        self.calls.append((x.data_ptr(), x._version, x.clone(), idx.clone()))
        return x * 2 + idx


class _RecordingOne:
    def __init__(self):
        self.seen: list[torch.Tensor] = []

    def __call__(self, x):
        self.seen.append(x.clone())
        return x.clone()


def test_timed_calls_see_one_tensor_with_new_values_and_one_of_them_a_trial_exactly():
    g = torch.Generator().manual_seed(0)
    sets = [[torch.randn(4, 8, generator=g), torch.randint(0, 5, (4, 8), generator=g), 3] for _ in range(3)]
    model = _Recording()
    out = time_callable(model, sets, {"runs": 20, "input_sets": 1, "check_trial": 2, "check_at": 7}, device="cpu")

    calls = model.calls
    assert len(calls) == 3 + 20 + 10  # warm-up, timed, host-time calls: the check is one of the timed
    assert len({ptr for ptr, *_ in calls}) == 1  # the same tensor every call ...
    assert len({version for _, version, *_ in calls}) == len(calls)  # ... written before each
    values = [x for _, _, x, _ in calls]
    assert all(not torch.equal(a, b) for i, a in enumerate(values) for b in values[i + 1:])  # never the same values
    check = 3 + 7
    for i, (_, _, x, idx) in enumerate(calls):
        if i == check:  # trial 2's exact values
            assert torch.equal(x, sets[2][0]) and torch.equal(idx, sets[2][1])
        else:  # the trials in turn, floats scaled, integers only rotated
            assert torch.allclose(x, sets[i % 3][0] * (1 + (i + 1) / 4096)) and torch.equal(idx, sets[i % 3][1])
    # that call's own answer goes back for the worker to compare with the reference's
    assert out["check"] == {"trial": 2} and torch.equal(out["_check_outputs"], sets[2][0] * 2 + sets[2][1])
    assert out["fresh_values"] and out["sets"][0]["runs"] == 20


def test_a_check_position_past_the_timed_calls_becomes_one_call_more():
    sets = [[torch.ones(4)], [torch.full((4,), 2.0)]]
    model = _RecordingOne()
    out = time_callable(model, sets, {"runs": 20, "input_sets": 1, "check_trial": 1, "check_at": 10_000}, device="cpu")
    assert len(model.seen) == 3 + 20 + 10 + 1 and torch.equal(model.seen[-1], sets[1][0])
    assert torch.equal(out["_check_outputs"], sets[1][0])


def test_input_sets_of_another_layout_are_not_mixed_in():
    sets = [[torch.ones(4)], [torch.ones(5)], [torch.full((4,), 2.0)]]
    model = _RecordingOne()
    out = time_callable(model, sets, {"runs": 20, "input_sets": 1, "check_trial": 1, "check_at": 0}, device="cpu")
    assert {tuple(x.shape) for x in model.seen} == {(4,)}
    assert {round(float(x[0])) for x in model.seen} == {1, 2}  # sets 0 and 2 in turn
    assert "check" not in out  # trial 1 has another layout: no check call on it


class _RecordingPathways:
    """A two-pathway forward (pytorchvideo's fusions): one argument, a list of tensors."""

    def __init__(self):
        self.seen: list[tuple[torch.Tensor, torch.Tensor]] = []

    def __call__(self, x, scale):
        self.seen.append((x[0].clone(), x[1].clone()))
        return x[0].sum() + x[1].sum() * scale


def test_tensors_inside_a_list_argument_get_new_values_and_the_check_too():
    """A list of tensors as one argument was neither refreshed nor comparable (the layout check
    raised on it): its tensors are refreshed like top-level ones, and the check call gets them exactly."""
    g = torch.Generator().manual_seed(0)
    sets = [[[torch.randn(2, 3, generator=g), torch.randn(2, 5, generator=g)], 2.0] for _ in range(3)]
    model = _RecordingPathways()
    out = time_callable(model, sets, {"runs": 20, "input_sets": 1, "check_trial": 1, "check_at": 4}, device="cpu")
    assert len(model.seen) == 3 + 20 + 10
    slow = [a for a, _ in model.seen]
    assert all(not torch.equal(a, b) for i, a in enumerate(slow) for b in slow[i + 1:])
    check = 3 + 4
    assert torch.equal(model.seen[check][0], sets[1][0][0]) and torch.equal(model.seen[check][1], sets[1][0][1])
    assert torch.allclose(model.seen[0][1], sets[0][0][1] * (1 + 1 / 4096))
    assert torch.equal(out["_check_outputs"], sets[1][0][0].sum() + sets[1][0][1].sum() * 2.0)
    # a list of another length (or tensor shapes) is another layout: never mixed in
    other = [[[torch.ones(2, 3)], 2.0]]
    lengths: list[int] = []
    out = time_callable(lambda x, s: lengths.append(len(x)) or x[0].sum(), sets + other,
                        {"runs": 20, "input_sets": 1, "check_trial": 3, "check_at": 0}, device="cpu")
    assert set(lengths) == {2} and "check" not in out


def _judge(cand: str, **overrides):
    pool = JudgePool(judge_config(time_on_cpu=True, time_compile=False, timing_runs=20, timing_input_sets=1,
                                  workers=1, timeout_s=120, **overrides))
    try:
        return pool.validate(problem("relu"), candidate(cand))
    finally:
        pool.close()


def test_a_forward_that_answers_timed_calls_from_a_cache_is_caught_and_gets_no_speedup():
    verdict = _judge("cheat_timing_memo_by_pointer")
    rules = {v.rule for v in verdict.violations}
    assert verdict.correct  # every trial computed and was right: only the timing shows the cache
    assert "RUNTIME-TIMING-MISMATCH" in rules, (verdict.status, verdict.violations, verdict.error)
    assert not verdict.rule_ok
    check = verdict.timing["check"]
    assert check["ok"] is False and check["trial"] in (1, 2)
    assert "speedup" not in verdict.timing


def test_an_honest_forward_passes_the_check_and_is_timed():
    verdict = _judge("correct_relu")
    assert verdict.correct and verdict.rule_ok, (verdict.status, verdict.violations, verdict.error)
    assert verdict.timing["check"]["ok"] is True and verdict.timing["check"]["trial"] in (1, 2)
    assert verdict.timing["candidate"]["fresh_values"] is True
    assert verdict.timing["speedup"] > 0


RAGGED = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(int(torch.randint(3, 40, (1,))), 16)]


def get_init_inputs():
    return []
'''


def test_trials_of_other_shapes_are_never_asked_for_the_check():
    """get_inputs() whose sizes change with the seed: the check call can only use a trial of the
    timed tensors' shape, and an honest forward is never blamed for a check that could not run."""
    pool = JudgePool(judge_config(time_on_cpu=True, time_compile=False, timing_runs=20, timing_input_sets=1,
                                  workers=1, timeout_s=120, trials=5))
    try:
        verdicts = [pool.validate(RAGGED, candidate("correct_relu")) for _ in range(3)]
    finally:
        pool.close()
    for verdict in verdicts:
        assert verdict.correct and verdict.rule_ok, (verdict.status, verdict.violations, verdict.error)
        assert verdict.timing["check"]["ok"] is True
    shapes = {tuple(t["shapes"][0]) for v in verdicts for t in v.trials if t["phase"] == "main"}
    assert len(shapes) > 1  # the trials did differ in shape


LIST_PROBLEM = '''import torch
import torch.nn as nn
from typing import List

class Model(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x: List[torch.Tensor]) -> torch.Tensor:
        return x[0] * 2.0 + x[1]

def get_inputs():
    return [[torch.randn(2, 8, 4), torch.randn(2, 8, 4)]]

def get_init_inputs():
    return []
'''

LIST_CANDIDATE = '''import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def scale_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0 + tl.load(y_ptr + offs, mask=m), mask=m)

class ModelNew(nn.Module):
    def __init__(self, dim: int = 1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        a, b = x[0].contiguous(), x[1].contiguous()
        o = torch.empty_like(a)
        n = a.numel()
        scale_kernel[(triton.cdiv(n, 128),)](a, b, o, n, BLOCK=128)
        return o
'''


def test_a_problem_taking_a_list_of_tensors_is_judged_timed_and_checked():
    """Harvested fusions take a list of tensors as one argument: trials, the timing's fresh values
    and its check call all reach the tensors inside the list."""
    pool = JudgePool(judge_config(time_on_cpu=True, time_compile=False, timing_runs=20, timing_input_sets=1,
                                  workers=1, timeout_s=120))
    try:
        verdict = pool.validate(LIST_PROBLEM, LIST_CANDIDATE)
    finally:
        pool.close()
    assert verdict.correct and verdict.rule_ok, (verdict.status, verdict.violations, verdict.error)
    assert all(t["shapes"] == [[2, 8, 4], [2, 8, 4]] for t in verdict.trials if t["phase"] == "main")
    assert verdict.timing["check"]["ok"] is True and verdict.timing["candidate"]["fresh_values"] is True


def _judge_shrunk(cand: str):
    """relu judged at sizes shrunk for memory (max_trial_mb), timed at its own sizes."""
    pool = JudgePool(judge_config(time_on_cpu=True, time_compile=False, timing_runs=20, timing_input_sets=1,
                                  workers=1, timeout_s=120, max_trial_mb=0.002, shrink_for_cpu=False))
    try:
        return pool.validate(problem("relu"), candidate(cand))
    finally:
        pool.close()


def test_at_the_problems_own_sizes_a_check_call_on_secret_inputs_is_compared_by_projections():
    """Correctness judged shrunk, timing at full size: one timed call gets inputs from a secret seed
    and projections of its answer must match the reference's within the elementwise tolerance; a
    forward that caches only at full sizes (where no trial looks) is caught and gets no speedup."""
    honest = _judge_shrunk("correct_relu")
    assert honest.timing["problem_shrunk_for_memory"] and honest.trials[0]["shapes"] != [[16, 64]]
    assert honest.correct and honest.rule_ok, (honest.status, honest.violations, honest.error)
    assert honest.timing["check"]["ok"] is True and honest.timing["check"]["trial"] == "own-size check set"
    assert honest.timing["candidate"]["full_size"] and honest.timing["speedup"] > 0
    cheat = _judge_shrunk("cheat_timing_memo_at_full_size")
    assert cheat.correct  # every (shrunk) trial computed
    assert "RUNTIME-TIMING-MISMATCH" in {v.rule for v in cheat.violations}
    assert cheat.timing["check"]["ok"] is False and "speedup" not in cheat.timing


def test_projections_accept_any_answer_within_tolerance_and_refuse_another_inputs_answer():
    from autotriton.validation.timing import compare_projections, project, projection_bounds

    g = torch.Generator().manual_seed(3)
    ref = [torch.randn(300, 700, generator=g), torch.arange(12).reshape(3, 4)]
    tol = {torch.float32: 1e-4, torch.int64: 0.0}
    seed = 2**47 + 5
    refs, bounds = project(ref, seed), projection_bounds(ref, seed, tol.get)
    worst_case = [ref[0] + torch.where(ref[0] > 0, 1, -1) * 0.999e-4 * (1 + ref[0].abs()), ref[1].clone()]
    assert compare_projections(refs, bounds, project(worst_case, seed))["ok"]  # every element at its tolerance
    stale = [torch.randn(300, 700, generator=g), ref[1]]
    assert not compare_projections(refs, bounds, project(stale, seed))["ok"]
    nan = [ref[0].clone(), ref[1]]
    nan[0][::3] = float("nan")
    assert not compare_projections(refs, bounds, project(nan, seed))["ok"]
    assert not compare_projections(refs, bounds, project([ref[0].t(), ref[1]], seed))["ok"]
    assert not compare_projections(refs, bounds, "forged")["ok"]


def test_a_check_the_reference_cannot_make_is_no_violation_and_no_speedup():
    """The worker's own reference failing on the check set (say, out of memory beside the candidate)
    is not the candidate's fault: no violation, but no speedup without a check either."""
    from autotriton.validation.timing import full_size_check as _full_size_check

    failing = problem("relu").replace("return torch.relu(x)", "raise RuntimeError('out of memory')")
    cfg = {"device": "cpu", "tolerances": {"float32": 1e-4}, "tf32_tolerance": 1e-2}
    full = {"source": failing, "init_seed": 0, "seeds": [1], "check_seed": 2, "projection_seed": 3}
    result = _full_size_check({"full_size": True, "projections": []}, full, cfg, False)
    assert result["ok"] is None and "out of memory" in result["reason"]
    honest = problem("relu")
    ok = _full_size_check({"full_size": True, "projections": []}, {**full, "source": honest}, cfg, False)
    assert ok["ok"] is False and "projections of 0 output" in ok["reason"]  # a check it can make, answered wrongly


def test_projections_of_a_dict_answer_do_not_depend_on_the_order_its_keys_were_set():
    """A candidate may build its `features` dict in another order than the reference: the
    full-size check projects tensors in sorted key order, as the trials compare them."""
    from autotriton.validation.timing import compare_projections, project, projection_bounds

    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(64, 32, generator=g), torch.randn(64, 32, generator=g)
    seed = 2**45 + 11
    ref = {"token_embeddings": a, "sentence_embedding": b}
    refs, bounds = project(ref, seed), projection_bounds(ref, seed, {torch.float32: 1e-5}.get)
    assert compare_projections(refs, bounds, project({"sentence_embedding": b, "token_embeddings": a}, seed))["ok"]
    assert not compare_projections(refs, bounds, project({"sentence_embedding": a, "token_embeddings": b}, seed))["ok"]
