"""Evaluation metrics over judged samples: accuracy, hacks, pass@k, fast_p and speedups.

Definitions (one sample = one generated candidate and its verdict):

* `rule_pass`: share of samples with no static or runtime rule violation (`Verdict.rule_ok`).
* `compile_rate`: share of samples whose kernels all compiled for the target (`Verdict.compiled`).
* `exec_accuracy`: share of samples that are correct AND rule-ok: the AutoTriton reward of 1.
* `hack_rate`: share of samples whose outputs matched the reference but that broke a rule (e.g.
  PyTorch fallback): the tests alone would have passed them.
* `pass_at_k`: per problem, the unbiased estimator of Chen et al. (2021) with n samples of which c
  are correct and rule-ok, averaged over problems.
* `fast_p` (KernelBench): share of problems with at least one correct, rule-ok sample whose speedup
  over eager PyTorch is above p (p = 1, 2). Speedups the judge flagged `suspect` do not count.
* `geomean_speedup`: geometric mean of the speedups of correct, rule-ok samples.
* `outcome_counts`: the verdict status of each sample, except that a sample whose completion held no
  code is counted apart, as `truncated` (cut off at the token cap: no closing fence, finish reason
  `length`, or as many completion tokens as the cap) or `parse_error` (no usable code block). The
  judge gives such a sample `rule_violation` (no kernel), which would hide why it failed.
* `truncated_rate`: share of samples that hit the token cap, whatever came of them.
The speed metrics need a GPU judge; without one they are None.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from autotriton.records import VERDICT_STATUSES, Candidate, Problem, Verdict


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: 1 - C(n-c, k) / C(n, k), in the numerically stable product form.

    `n` samples of which `c` passed; 1 <= k <= n. Computed as 1 - prod_{i=n-c+1}^{n} (1 - k/i), which
    never forms the huge binomials (Chen et al. 2021, "Evaluating Large Language Models Trained on Code").
    """
    if not (isinstance(n, int) and isinstance(c, int) and isinstance(k, int)):
        raise TypeError(f"pass_at_k takes integers, got n={n!r}, c={c!r}, k={k!r}")
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"pass_at_k needs n >= 1 and 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 1 <= k <= n, got k={k} with n={n}")
    if n - c < k:
        return 1.0  # every draw of k samples holds a correct one
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def solved(verdict: Verdict) -> bool:
    """The AutoTriton criterion: correct and rule-ok."""
    return bool(verdict.correct and verdict.rule_ok)


def hacked(verdict: Verdict) -> bool:
    """Outputs matched the reference but a rule was broken (what lenient harnesses count as a pass)."""
    return bool(verdict.correct and not verdict.rule_ok)


def trusted_speedup(verdict: Verdict) -> float | None:
    """The verdict's speedup when it is a correct, rule-ok sample timed on a GPU and not flagged suspect."""
    if not solved(verdict) or verdict.speedup is None:
        return None
    if (verdict.timing or {}).get("suspect"):
        return None
    speed = float(verdict.speedup)
    return speed if speed > 0 and math.isfinite(speed) else None


def reference_failed(verdict: Verdict) -> bool:
    """The judge could not run the reference problem itself: the harness's failure, not the model's."""
    return (verdict.error or "").startswith("reference problem")


def on_gpu(verdicts: Iterable[Verdict]) -> bool:
    """Whether the judge ran on a GPU (the CPU interpreter reports device 'cpu' and no timings)."""
    return any((v.device or "cpu") != "cpu" for v in verdicts)


OUTCOMES: tuple[str, ...] = (*VERDICT_STATUSES, "parse_error", "truncated")


def truncated(candidate: Candidate) -> bool:
    """The completion was cut off by the generation cap (the code block never closed, the endpoint
    said `finish_reason: length`, or the model used every token it was allowed)."""
    sampling, usage = candidate.sampling or {}, candidate.usage or {}
    if sampling.get("finish_reason") == "length" or (candidate.parse_error or "").startswith("truncated"):
        return True
    cap, used = sampling.get("max_new_tokens") or sampling.get("max_tokens"), usage.get("completion_tokens")
    return bool(cap and used and int(used) >= int(cap))


def outcome(candidate: Candidate, verdict: Verdict) -> str:
    """Why a sample ended as it did: its verdict status, or `truncated` / `parse_error` when no code came out."""
    if candidate.parse_error or not (candidate.code or "").strip():
        return "truncated" if truncated(candidate) else "parse_error"
    return verdict.status


def _share(count: int, total: int) -> float:
    return count / total if total else 0.0


def summarize(groups: Sequence[tuple[Problem, Sequence[Candidate], Sequence[Verdict]]], ks: Sequence[int], *,
              gpu: bool | None = None) -> dict[str, Any]:
    """Metrics over problems, each with its samples' candidates and verdicts (same order)."""
    verdicts = [v for _, _, vs in groups for v in vs]
    candidates = [c for _, cs, _ in groups for c in cs]
    total = len(verdicts)
    gpu = on_gpu(verdicts) if gpu is None else gpu
    status = Counter(v.status for v in verdicts)
    outcomes = Counter(outcome(c, v) for _, cs, vs in groups for c, v in zip(cs, vs))
    n_min = min((len(vs) for _, _, vs in groups), default=0)
    pass_k: dict[str, float] = {}
    for k in sorted({int(k) for k in ks}):
        if k < 1 or not groups or k > n_min:
            continue
        pass_k[str(k)] = sum(pass_at_k(len(vs), sum(solved(v) for v in vs), k) for _, _, vs in groups) / len(groups)
    out: dict[str, Any] = {
        "problems": len(groups),
        "samples": total,
        "rule_pass": _share(sum(bool(v.rule_ok) for v in verdicts), total),
        "compile_rate": _share(sum(bool(v.compiled) for v in verdicts), total),
        "exec_accuracy": _share(sum(solved(v) for v in verdicts), total),
        "hack_rate": _share(sum(hacked(v) for v in verdicts), total),
        "correct_rate": _share(sum(bool(v.correct) for v in verdicts), total),
        "parse_error_rate": _share(sum(bool(c.parse_error) for c in candidates), total),
        "problems_solved": sum(any(solved(v) for v in vs) for _, _, vs in groups),
        "pass_at_k": pass_k,
        "fast_1": None,
        "fast_2": None,
        "geomean_speedup": None,
        "status_counts": {s: status.get(s, 0) for s in VERDICT_STATUSES if status.get(s)},
        "outcome_counts": {s: outcomes.get(s, 0) for s in OUTCOMES if outcomes.get(s)},
        "truncated_rate": _share(sum(truncated(c) for c in candidates), total),
    }
    if gpu:
        speeds_per_problem = [[s for s in (trusted_speedup(v) for v in vs) if s is not None] for _, _, vs in groups]
        speeds = [s for per in speeds_per_problem for s in per]
        out["fast_1"] = _share(sum(any(s > 1.0 for s in per) for per in speeds_per_problem), len(groups))
        out["fast_2"] = _share(sum(any(s > 2.0 for s in per) for per in speeds_per_problem), len(groups))
        out["geomean_speedup"] = math.exp(sum(math.log(s) for s in speeds) / len(speeds)) if speeds else None
        out["timed_samples"] = len(speeds)
        out["suspect_speedups"] = sum(1 for v in verdicts if (v.timing or {}).get("suspect"))
    return out


def compute_metrics(problems: Sequence[Problem], candidates: Sequence[Sequence[Candidate]], verdicts: Sequence[Sequence[Verdict]],
                    ks: Sequence[int] = (1, 5, 10)) -> dict[str, Any]:
    """Overall metrics plus the same per benchmark (`by_suite`), per level (`by_level`) and per problem.

    `candidates[i]` and `verdicts[i]` are the samples of `problems[i]`.
    """
    from autotriton.evaluation.suites import benchmark_of, level_of

    if not (len(problems) == len(candidates) == len(verdicts)):
        raise ValueError(f"compute_metrics: {len(problems)} problems, {len(candidates)} candidate lists, {len(verdicts)} verdict lists")
    groups = list(zip(problems, candidates, verdicts))
    gpu = on_gpu(v for vs in verdicts for v in vs)
    metrics = summarize(groups, ks, gpu=gpu)
    by_suite: dict[str, list] = defaultdict(list)
    by_level: dict[str, list] = defaultdict(list)
    for group in groups:
        by_suite[benchmark_of(group[0])].append(group)
        by_level[level_of(group[0])].append(group)
    metrics["by_suite"] = {name: summarize(g, ks, gpu=gpu) for name, g in sorted(by_suite.items())}
    metrics["by_level"] = {name: summarize(g, ks, gpu=gpu) for name, g in sorted(by_level.items(), key=lambda kv: _level_sort(kv[0]))}
    metrics["per_problem"] = [
        {
            "suite_id": p.suite_id or p.name,
            "name": p.name,
            "problem_key": p.key,
            "level": level_of(p),
            "n": len(vs),
            "solved": sum(solved(v) for v in vs),
            "hacks": sum(hacked(v) for v in vs),
            "statuses": dict(Counter(v.status for v in vs)),
            "outcomes": dict(Counter(outcome(c, v) for c, v in zip(cs, vs))),
            "best_speedup": max((s for s in (trusted_speedup(v) for v in vs) if s is not None), default=None),
        }
        for p, cs, vs in groups
    ]
    # Problems whose reference did not run still count as failures above (conservative), but are
    # named here: a broken or oversized reference is the harness's problem, not the model's.
    metrics["reference_failures"] = [p.suite_id or p.name for p, _, vs in groups if vs and all(reference_failed(v) for v in vs)]
    metrics["device"] = "gpu" if gpu else "cpu"
    return metrics


def _level_sort(name: str) -> tuple:
    import re

    match = re.search(r"(\d+)$", name)
    return (name.rsplit("/", 1)[0], int(match.group(1)) if match else -1, name)
