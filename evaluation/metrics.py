"""Evaluation metrics over judged samples: accuracy, hacks, pass@k, fast_p and speedups.

Definitions (one sample = one generated candidate and its verdict; a share is over all samples unless it says otherwise):

* `problems`, `samples`: how many problems, and how many samples over all of them.
* `rule_pass`: share of samples with no static or runtime rule violation (`Verdict.rule_ok`). A
  timeout or a crash is not a rule failure: it counts against `rule_pass` only when a violation was
  found before it (the judge sets `rule_ok` so, validation/pool.py).
* `compile_rate`: share of samples whose kernels all compiled for the target (`Verdict.compiled`);
  a sample that timed out, crashed or was not run did not show that, so it does not count.
* `exec_accuracy`: share of samples that are correct AND rule-ok: the AutoTriton reward of 1.
* `hack_rate`: share of samples whose outputs matched the reference but that broke a rule: the
  tests alone would have passed them. A plain PyTorch fallback seldom counts here any more: the
  judge's dispatch guard makes PyTorch compute inside `ModelNew.forward` fail, so it matches nothing.
* `correct_rate`: share of samples whose outputs matched the reference, rules aside (`Verdict.correct`).
* `parse_error_rate`: share of samples whose generation held no usable code (`Candidate.parse_error`).
* `problems_solved`: number of problems with at least one correct, rule-ok sample.
* `pass_at_k`: per problem, the unbiased estimator of Chen et al. (2021) with n samples of which c
  are correct and rule-ok, averaged over problems; a k above the fewest samples of any problem is
  left out (it cannot be estimated).
* `status_counts`: samples per verdict status (`records.VERDICT_STATUSES`), statuses never seen left out.
* `fast_p` (KernelBench): share of problems with at least one correct, rule-ok sample whose speedup
  over eager PyTorch is above p (p = 1, 2). Speedups the judge flagged `suspect` do not count.
* `geomean_speedup`: geometric mean of the speedups of correct, rule-ok samples.
* `geomean_speedup_vs_compile`: the same against torch.compile of the reference (`fast_compile_1`:
  share of problems with a sample faster than torch.compile).
* `own_sizes_yield` / `general_yield`: share of samples correct and rule-ok at the problem's own
  sizes (KernelBench's definition), and also at the judge's odd-size trial (general kernels).
"Correct" in the other metrics means what `require` (`evaluation.require_sizes`) says: "own_sizes"
(default, KernelBench-compatible) or "own_and_odd_sizes" (validation/rewards.py `correct_at`).
* `outcome_counts`: the verdict status of each sample, except that a sample whose completion held no
  code is counted apart, as `truncated` (cut off at the token cap: no closing fence, finish reason
  `length`, or as many completion tokens as the cap) or `parse_error` (no usable code block). The
  judge gives such a sample `rule_violation` (no kernel), which would hide why it failed.
* `truncated_rate`: share of samples that hit the token cap, whatever came of them.
The speed metrics need a GPU judge; without one they are None.
* `timed_samples`: how many speedups went into `geomean_speedup`; `suspect_speedups`: samples whose
  speedup the judge flagged as suspect (over 10x), whatever their verdict.
counts are absent. `compute_metrics` adds the same per benchmark and per level, per-problem rows,
and `reference_failures`: problems none of whose samples could be judged because the reference
itself failed (still counted as failures above).
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


def solved(verdict: Verdict, require: str = "own_sizes") -> bool:
    """The AutoTriton criterion: correct (at the sizes `require` names) and rule-ok."""
    from autotriton.validation.rewards import correct_at

    return bool(correct_at(verdict, require) and verdict.rule_ok)


def hacked(verdict: Verdict) -> bool:
    """Outputs matched the reference but a rule was broken (what lenient harnesses count as a pass)."""
    return bool(verdict.correct and not verdict.rule_ok)


def trusted_speedup(verdict: Verdict, require: str = "own_sizes", against: str = "eager") -> float | None:
    """The verdict's speedup (over eager, or over torch.compile with against="compile") when it is a
    correct, rule-ok sample timed on a GPU and not flagged suspect."""
    value = verdict.speedup if against == "eager" else verdict.speedup_vs_compile
    if not solved(verdict, require) or value is None:
        return None
    if (verdict.timing or {}).get("suspect"):
        return None
    speed = float(value)
    return speed if speed > 0 and math.isfinite(speed) else None


def reference_failed(verdict: Verdict) -> bool:
    """The judge could not run the reference problem itself: the harness's failure, not the model's."""
    return (verdict.error or "").startswith("reference problem")


def on_gpu(verdicts: Iterable[Verdict]) -> bool:
    """Whether the judge ran on a GPU (the CPU interpreter reports device 'cpu' and no timings)."""
    return any((v.device or "cpu") != "cpu" for v in verdicts)


_solved = solved
_trusted_speedup = trusted_speedup
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
              gpu: bool | None = None, require: str = "own_sizes") -> dict[str, Any]:
    """Metrics over problems, each with its samples' candidates and verdicts (same order)."""

    def solved(v: Verdict) -> bool:
        return _solved(v, require)

    def trusted_speedup(v: Verdict, against: str = "eager") -> float | None:
        return _trusted_speedup(v, require, against)

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
        "require_sizes": require,
        "own_sizes_yield": _share(sum(_solved(v, "own_sizes") for v in verdicts), total),
        "general_yield": _share(sum(_solved(v, "own_and_odd_sizes") for v in verdicts), total),
        "parse_error_rate": _share(sum(bool(c.parse_error) for c in candidates), total),
        "problems_solved": sum(any(solved(v) for v in vs) for _, _, vs in groups),
        "pass_at_k": pass_k,
        "fast_1": None,
        "fast_2": None,
        "geomean_speedup": None,
        "status_counts": {s: status.get(s, 0) for s in VERDICT_STATUSES if status.get(s)},
        # Judged nowhere: GPU-only features on the CPU judge. No credit (a model cannot raise its
        # scores by using them), but counted apart so a report does not read them as its failures.
        "unsupported_here": status.get("unsupported_here", 0),
        "outcome_counts": {s: outcomes.get(s, 0) for s in OUTCOMES if outcomes.get(s)},
        "truncated_rate": _share(sum(truncated(c) for c in candidates), total),
    }
    if gpu:
        speeds_per_problem = [[s for s in (trusted_speedup(v) for v in vs) if s is not None] for _, _, vs in groups]
        speeds = [s for per in speeds_per_problem for s in per]
        out["fast_1"] = _share(sum(any(s > 1.0 for s in per) for per in speeds_per_problem), len(groups))
        out["fast_2"] = _share(sum(any(s > 2.0 for s in per) for per in speeds_per_problem), len(groups))
        out["geomean_speedup"] = math.exp(sum(math.log(s) for s in speeds) / len(speeds)) if speeds else None
        vs_compile_per_problem = [[s for s in (trusted_speedup(v, "compile") for v in vs) if s is not None] for _, _, vs in groups]
        vs_compile = [s for per in vs_compile_per_problem for s in per]
        out["fast_compile_1"] = _share(sum(any(s > 1.0 for s in per) for per in vs_compile_per_problem), len(groups))
        out["geomean_speedup_vs_compile"] = math.exp(sum(math.log(s) for s in vs_compile) / len(vs_compile)) if vs_compile else None
        out["timed_samples"] = len(speeds)
        out["suspect_speedups"] = sum(1 for v in verdicts if (v.timing or {}).get("suspect"))
    return out


def compute_metrics(problems: Sequence[Problem], candidates: Sequence[Sequence[Candidate]], verdicts: Sequence[Sequence[Verdict]],
                    ks: Sequence[int] = (1, 5, 10), require: str = "own_sizes") -> dict[str, Any]:
    """Overall metrics plus the same per benchmark (`by_suite`), per level (`by_level`) and per problem.

    `candidates[i]` and `verdicts[i]` are the samples of `problems[i]`.
    """
    from autotriton.evaluation.suites import benchmark_of, level_of

    if not (len(problems) == len(candidates) == len(verdicts)):
        raise ValueError(f"compute_metrics: {len(problems)} problems, {len(candidates)} candidate lists, {len(verdicts)} verdict lists")
    groups = list(zip(problems, candidates, verdicts))
    gpu = on_gpu(v for vs in verdicts for v in vs)
    metrics = summarize(groups, ks, gpu=gpu, require=require)
    by_suite: dict[str, list] = defaultdict(list)
    by_level: dict[str, list] = defaultdict(list)
    for group in groups:
        by_suite[benchmark_of(group[0])].append(group)
        by_level[level_of(group[0])].append(group)
    metrics["by_suite"] = {name: summarize(g, ks, gpu=gpu, require=require) for name, g in sorted(by_suite.items())}
    metrics["by_level"] = {name: summarize(g, ks, gpu=gpu, require=require)
                           for name, g in sorted(by_level.items(), key=lambda kv: _level_sort(kv[0]))}
    metrics["per_problem"] = [
        {
            "suite_id": p.suite_id or p.name,
            "name": p.name,
            "problem_key": p.key,
            "level": level_of(p),
            "n": len(vs),
            "solved": sum(solved(v, require) for v in vs),
            "solved_odd_sizes_too": sum(solved(v, "own_and_odd_sizes") for v in vs),
            "hacks": sum(hacked(v) for v in vs),
            "statuses": dict(Counter(v.status for v in vs)),
            "best_speedup": max((s for s in (trusted_speedup(v, require) for v in vs) if s is not None), default=None),
            "best_speedup_vs_compile": max((s for s in (trusted_speedup(v, require, "compile") for v in vs) if s is not None),
                                           default=None),
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
