"""pass@k against hand-computed values, and every aggregate metric over hand-built verdicts,
timeouts and crashes among them (the definitions are in evaluation/metrics.py's docstring)."""

from __future__ import annotations

import math
from fractions import Fraction
from math import comb

import pytest

from autotriton.evaluation import compute_metrics, pass_at_k
from autotriton.records import Candidate, Problem, Verdict, Violation


@pytest.mark.parametrize(
    "n, c, k, expected",
    [
        (1, 0, 1, 0.0),
        (1, 1, 1, 1.0),
        (10, 3, 1, 0.3),  # pass@1 is the plain share correct
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (10, 3, 10, 1.0),  # n - c < k: every draw holds a correct sample
        (5, 0, 1, 0.0),  # c = 0
        (5, 0, 5, 0.0),
        (5, 3, 3, 1.0),  # n - c = 2 < 3
        (4, 1, 2, 0.5),  # 1 - C(3,2)/C(4,2) = 1 - 3/6
        (20, 2, 10, 1 - 45 / 190),  # 1 - C(18,10)/C(20,10) = 1 - (10*9)/(20*19)
        (3, 1, 2, 2 / 3),
    ],
)
def test_pass_at_k_hand_computed(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_matches_binomials_exactly_and_stays_stable_for_large_n():
    for n in (1, 2, 7, 30):
        for c in range(n + 1):
            for k in range(1, n + 1):
                exact = 1 - Fraction(comb(n - c, k), comb(n, k))
                assert pass_at_k(n, c, k) == pytest.approx(float(exact), abs=1e-12)
    # C(2000, 1000) overflows a float; the product form does not.
    value = pass_at_k(2000, 3, 1000)
    assert math.isfinite(value) and value == pytest.approx(1 - (1000 * 999 * 998) / (2000 * 1999 * 1998), rel=1e-9)


@pytest.mark.parametrize("n, c, k", [(0, 0, 1), (5, 6, 1), (5, -1, 1), (5, 2, 0), (5, 2, 6)])
def test_pass_at_k_rejects_impossible_inputs(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def _problem(name: str, suite: str) -> Problem:
    src = f"import torch\nclass Model(torch.nn.Module):\n    pass  # {name}\ndef get_inputs():\n    return []\ndef get_init_inputs():\n    return []\n"
    return Problem(reference_source=src, name=name, suite=suite, suite_id=f"{suite}/{name}")


def _sample(problem: Problem, i: int, *, status: str, correct: bool, rule_ok: bool, compiled: bool = True,
            speedup: float | None = None, device: str = "cpu", suspect: bool = False, parse_error: str | None = None,
            violations: tuple[str, ...] = ()):
    cand = Candidate(problem_key=problem.key, code=f"# sample {i}\nclass ModelNew: pass\n" if not parse_error else "",
                     parse_error=parse_error)
    verdict = Verdict(candidate_key=cand.key, problem_key=problem.key, status=status, correct=correct, rule_ok=rule_ok,
                      compiled=compiled, speedup=speedup, device=device, timing={"suspect": True} if suspect else {},
                      violations=[Violation(rule, "seen before the end") for rule in violations])
    return cand, verdict


def _groups(spec):
    problems, cands, verdicts = [], [], []
    for problem, samples in spec:
        problems.append(problem)
        pairs = [_sample(problem, i, **s) for i, s in enumerate(samples)]
        cands.append([c for c, _ in pairs])
        verdicts.append([v for _, v in pairs])
    return problems, cands, verdicts


OK = dict(status="correct", correct=True, rule_ok=True)
HACK = dict(status="rule_violation", correct=True, rule_ok=False)
WRONG = dict(status="incorrect", correct=False, rule_ok=True)
JUNK = dict(status="rule_violation", correct=False, rule_ok=False, compiled=False, parse_error="no ```python code block in the output")


def test_cpu_metrics_per_suite_and_level():
    a, b, c = _problem("a", "kb/level1"), _problem("b", "kb/level1"), _problem("c", "kb/level2")
    problems, cands, verdicts = _groups([
        (a, [OK, HACK, JUNK]),  # c = 1
        (b, [WRONG, WRONG, WRONG]),  # c = 0
        (c, [OK, OK, HACK]),  # c = 2
    ])
    m = compute_metrics(problems, cands, verdicts, ks=(1, 2, 5))
    assert m["problems"] == 3 and m["samples"] == 9
    assert m["rule_pass"] == pytest.approx(6 / 9)  # OK x3 + WRONG x3
    assert m["compile_rate"] == pytest.approx(8 / 9)  # all but the junk sample
    assert m["exec_accuracy"] == pytest.approx(3 / 9)
    assert m["hack_rate"] == pytest.approx(2 / 9)
    assert m["parse_error_rate"] == pytest.approx(1 / 9)
    assert m["problems_solved"] == 2
    # pass@1 = mean(1/3, 0, 2/3); pass@2 = mean(1 - C(2,2)/C(3,2), 0, 1); k=5 > n is skipped
    assert m["pass_at_k"] == pytest.approx({"1": 1 / 3, "2": (2 / 3 + 0 + 1) / 3})
    assert m["fast_1"] is None and m["fast_2"] is None and m["geomean_speedup"] is None
    assert m["status_counts"] == {"correct": 3, "incorrect": 3, "rule_violation": 3}
    assert set(m["by_level"]) == {"kb/level1", "kb/level2"} and set(m["by_suite"]) == {"kb"}
    assert m["by_level"]["kb/level1"]["exec_accuracy"] == pytest.approx(1 / 6)
    assert m["by_level"]["kb/level1"]["pass_at_k"]["1"] == pytest.approx(1 / 6)
    assert m["by_level"]["kb/level2"]["hack_rate"] == pytest.approx(1 / 3)
    per = {p["name"]: p for p in m["per_problem"]}
    assert per["a"]["solved"] == 1 and per["a"]["hacks"] == 1 and per["c"]["solved"] == 2


def test_gpu_fast_p_and_geomean_ignore_incorrect_hacked_and_suspect_speedups():
    a, b, c, d = (_problem(n, "kb/level1") for n in "abcd")
    gpu = dict(device="NVIDIA H200")
    problems, cands, verdicts = _groups([
        (a, [dict(OK, speedup=1.5, **gpu), dict(OK, speedup=0.5, **gpu)]),  # fast_1 only
        (b, [dict(OK, speedup=4.0, **gpu), dict(WRONG, speedup=9.0, **gpu)]),  # fast_2; the wrong one never counts
        (c, [dict(HACK, speedup=8.0, **gpu), dict(OK, speedup=50.0, suspect=True, **gpu)]),  # nothing trusted
        (d, [dict(WRONG, **gpu), dict(WRONG, **gpu)]),
    ])
    m = compute_metrics(problems, cands, verdicts, ks=(1,))
    assert m["device"] == "gpu"
    assert m["fast_1"] == pytest.approx(2 / 4)
    assert m["fast_2"] == pytest.approx(1 / 4)
    assert m["geomean_speedup"] == pytest.approx((1.5 * 0.5 * 4.0) ** (1 / 3))
    assert m["suspect_speedups"] == 1 and m["timed_samples"] == 3


def test_metrics_need_matching_lists():
    a = _problem("a", "kb/level1")
    with pytest.raises(ValueError):
        compute_metrics([a], [], [], ks=(1,))


def test_problems_whose_reference_failed_are_named_and_still_count_as_failures():
    a, b = _problem("a", "kb/level1"), _problem("b", "kb/level1")
    broken = dict(status="runtime_error", correct=False, rule_ok=True, compiled=False)
    problems, cands, verdicts = _groups([(a, [OK]), (b, [broken, broken])])
    for v in verdicts[1]:
        v.error = "reference problem failed: RuntimeError: out of memory"
    m = compute_metrics(problems, cands, verdicts, ks=(1,))
    assert m["reference_failures"] == ["kb/level1/b"]
    assert m["exec_accuracy"] == pytest.approx(1 / 3) and m["pass_at_k"]["1"] == pytest.approx(0.5)


# As the judge hands them out (validation/pool.py): a timeout or crash fails `correct` and `compiled`,
# and fails `rule_ok` only when a violation was seen before it.
TIMEOUT = dict(status="timeout", correct=False, rule_ok=True, compiled=False)
CRASH = dict(status="crashed", correct=False, rule_ok=True, compiled=False)
CRASH_AFTER_RULE = dict(status="crashed", correct=False, rule_ok=False, compiled=False, violations=("RUNTIME-THREADS",))

# Four samples for each of three problems (CPU judge): a solved once, b never, c twice.
CPU_SET = [("a", "kb/level1", [OK, TIMEOUT, CRASH, HACK]),
           ("b", "kb/level1", [WRONG, TIMEOUT, CRASH_AFTER_RULE, JUNK]),
           ("c", "kb/level2", [OK, OK, TIMEOUT, WRONG])]
CPU_EXPECTED = {
    "problems": 3,
    "samples": 12,
    "rule_pass": 9 / 12,  # all but HACK, CRASH_AFTER_RULE and JUNK: timeouts and the plain crash keep the rules
    "compile_rate": 6 / 12,  # OK x3, HACK, WRONG x2; no timeout or crash showed its kernels compile
    "exec_accuracy": 3 / 12,  # OK x3
    "hack_rate": 1 / 12,
    "correct_rate": 4 / 12,  # OK x3 + HACK
    "parse_error_rate": 1 / 12,
    "problems_solved": 2,
    # n = 4: pass@1 = mean(1/4, 0, 2/4); pass@2 = mean(1 - C(3,2)/C(4,2), 0, 1 - C(2,2)/C(4,2)); k = 5 > n is left out
    "pass_at_k": {"1": 0.25, "2": (0.5 + 0 + 5 / 6) / 3},
    "status_counts": {"correct": 3, "incorrect": 2, "rule_violation": 2, "timeout": 3, "crashed": 2},
    "fast_1": None,
    "fast_2": None,
    "geomean_speedup": None,
    # No verdict here carries the own-size/odd-size split, so both yields are exec_accuracy
    # (the split itself: tests/test_validation_sizes.py).
    "require_sizes": "own_sizes",
    "own_sizes_yield": 3 / 12,
    "general_yield": 3 / 12,
    "unsupported_here": 0,
    # the status of each sample, except JUNK (no code): parse_error rather than its rule_violation
    "outcome_counts": {"correct": 3, "incorrect": 2, "rule_violation": 1, "timeout": 3, "crashed": 2, "parse_error": 1},
    "truncated_rate": 0.0,  # no sample says it hit the token cap (tests/test_evaluation_outcomes.py)
    "looping_rate": 0.0,  # nor ran away repeating itself there (tests/test_evaluation_outcomes.py)
}

_GPU = dict(device="NVIDIA H200")
# Two samples for each of four problems (GPU judge), with speedups.
GPU_SET = [("a", "kb/level1", [dict(OK, speedup=1.5, **_GPU), dict(TIMEOUT, **_GPU)]),
           ("b", "kb/level1", [dict(OK, speedup=4.0, **_GPU), dict(CRASH, **_GPU)]),
           ("c", "kb/level1", [dict(HACK, speedup=8.0, **_GPU), dict(OK, speedup=50.0, suspect=True, **_GPU)]),
           ("d", "kb/level1", [dict(OK, speedup=0.5, **_GPU), dict(CRASH_AFTER_RULE, **_GPU)])]
GPU_EXPECTED = {
    "problems": 4,
    "samples": 8,
    "rule_pass": 6 / 8,  # all but HACK and CRASH_AFTER_RULE
    "compile_rate": 5 / 8,
    "exec_accuracy": 4 / 8,  # a suspect speedup does not unsolve a sample
    "hack_rate": 1 / 8,
    "correct_rate": 5 / 8,
    "parse_error_rate": 0.0,
    "problems_solved": 4,
    "pass_at_k": {"1": 0.5, "2": 1.0},
    "status_counts": {"correct": 4, "rule_violation": 1, "timeout": 1, "crashed": 2},
    "fast_1": 2 / 4,  # a (1.5) and b (4.0); c's only trusted-looking speedup is suspect, d's is 0.5
    "fast_2": 1 / 4,  # b
    "geomean_speedup": (1.5 * 4.0 * 0.5) ** (1 / 3),  # never the hack's 8.0 or the suspect 50.0
    "timed_samples": 3,
    "suspect_speedups": 1,
    "require_sizes": "own_sizes",
    "own_sizes_yield": 4 / 8,
    "general_yield": 4 / 8,
    "unsupported_here": 0,
    "outcome_counts": {"correct": 4, "rule_violation": 1, "timeout": 1, "crashed": 2},
    "truncated_rate": 0.0,
    "looping_rate": 0.0,
    # no verdict was timed against torch.compile
    "fast_compile_1": 0.0,
    "geomean_speedup_vs_compile": None,
}
# What compute_metrics adds beside summarize's metrics (tested below, one by one).
BREAKDOWNS = {"by_suite", "by_level", "per_problem", "reference_failures", "device"}


def _metrics(spec):
    return compute_metrics(*_groups([(_problem(name, suite), samples) for name, suite, samples in spec]), ks=(1, 2, 5))


@pytest.fixture(scope="module")
def cpu_metrics():
    return _metrics(CPU_SET)


@pytest.fixture(scope="module")
def gpu_metrics():
    return _metrics(GPU_SET)


def test_every_metric_has_a_hand_computed_value_here(cpu_metrics, gpu_metrics):
    # A new metric without a definition and a test below fails here.
    assert set(cpu_metrics) == set(CPU_EXPECTED) | BREAKDOWNS
    assert set(gpu_metrics) == set(GPU_EXPECTED) | BREAKDOWNS


@pytest.mark.parametrize("metric", sorted(CPU_EXPECTED))
def test_metric_on_cpu_verdicts_with_timeouts_and_crashes(cpu_metrics, metric):
    assert cpu_metrics[metric] == pytest.approx(CPU_EXPECTED[metric]), metric


@pytest.mark.parametrize("metric", sorted(GPU_EXPECTED))
def test_metric_on_gpu_verdicts_with_timeouts_and_crashes(gpu_metrics, metric):
    assert gpu_metrics[metric] == pytest.approx(GPU_EXPECTED[metric]), metric


def test_breakdowns_by_suite_level_and_problem_with_timeouts_and_crashes(cpu_metrics, gpu_metrics):
    assert cpu_metrics["device"] == "cpu" and gpu_metrics["device"] == "gpu"
    assert set(cpu_metrics["by_suite"]) == {"kb"} and cpu_metrics["by_suite"]["kb"]["rule_pass"] == pytest.approx(9 / 12)
    level1, level2 = cpu_metrics["by_level"]["kb/level1"], cpu_metrics["by_level"]["kb/level2"]
    assert (level1["samples"], level1["rule_pass"], level1["exec_accuracy"]) == (8, pytest.approx(5 / 8), pytest.approx(1 / 8))
    assert (level2["samples"], level2["rule_pass"], level2["exec_accuracy"]) == (4, 1.0, pytest.approx(2 / 4))
    assert level1["status_counts"] == {"correct": 1, "incorrect": 1, "rule_violation": 2, "timeout": 2, "crashed": 2}
    per = {p["name"]: p for p in cpu_metrics["per_problem"]}
    assert (per["a"]["n"], per["a"]["solved"], per["a"]["hacks"]) == (4, 1, 1)
    assert per["b"]["statuses"] == {"incorrect": 1, "timeout": 1, "crashed": 1, "rule_violation": 1} and per["b"]["solved"] == 0
    assert all(p["best_speedup"] is None for p in per.values())
    gpu_per = {p["name"]: p["best_speedup"] for p in gpu_metrics["per_problem"]}
    assert gpu_per == {"a": 1.5, "b": 4.0, "c": None, "d": 0.5}
    assert cpu_metrics["reference_failures"] == [] and gpu_metrics["reference_failures"] == []
