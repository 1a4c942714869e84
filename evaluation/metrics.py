"""Evaluation metrics over judged samples: accuracy, hacks, pass@k, fast_p and speedups.

Every metric is defined once, in the registry below (`METRICS`: `Metric(name, description,
compute, shown, views)`), and the report, the CLI, the tasks and the flows read their columns from
it; adding a metric is its definition and one `register_metric(...)`. One sample = one generated
candidate and its verdict; a share is over all samples unless the description says otherwise.

"Correct" in the metrics means what `require` (`evaluation.require_sizes`) says: "own_sizes"
(default, KernelBench-compatible) or "own_and_odd_sizes" (validation/rewards.py `correct_at`).
The speed metrics (`fast_1`, `fast_2`, `geomean_speedup`) need a GPU judge; without one they are
None, and the torch.compile and timing counts (`fast_compile_1`, `geomean_speedup_vs_compile`,
`timed_samples`, `suspect_speedups`) are absent. `compute_metrics` adds the same per benchmark and
per level, per-problem rows, and `reference_failures`: problems none of whose samples could be
judged because the reference itself failed (still counted as failures).
"""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from autotriton.evaluation.suite_entries import benchmark_of, level_of
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
    from autotriton.validation import correct_at

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


OUTCOMES: tuple[str, ...] = (*VERDICT_STATUSES, "parse_error", "truncated")


def truncated(candidate: Candidate) -> bool:
    """The completion was cut off by the generation cap (the code block never closed, the endpoint
    said `finish_reason: length`, or the model used every token it was allowed)."""
    sampling, usage = candidate.sampling or {}, candidate.usage or {}
    if sampling.get("finish_reason") == "length" or (candidate.parse_error or "").startswith("truncated"):
        return True
    cap, used = sampling.get("max_new_tokens") or sampling.get("max_tokens"), usage.get("completion_tokens")
    return bool(cap and used and int(used) >= int(cap))


_DIGITS = re.compile(r"\d+")


def looping(candidate: Candidate, tail: int = 2000, ratio: float = 0.06) -> bool:
    """A truncated answer that was repeating itself when the cap cut it off: its last `tail`
    characters, numbers masked, compress (zlib) to under `ratio` of their size. Calibrated on the
    released pairs and the eighth H200 run (RESULTS.md): the teacher's kernels, cut anywhere, stay
    above it (none of 600 cuts of the 200 longest below 0.06, median 0.30), while a small model running
    away in Inductor's `tmp101 = tmp100 + tmp101` numbering, or writing one launch inside another,
    falls to 0.01-0.06 (82 of the run's 151 truncated answers).
    More tokens would not have finished such an answer; a long kernel still being written would."""
    if not truncated(candidate):
        return False
    text = _DIGITS.sub("N", candidate.raw_output or candidate.code or "")[-tail:]
    if len(text) < tail // 2:
        return False
    return len(zlib.compress(text.encode(), 9)) < ratio * len(text)


def outcome(candidate: Candidate, verdict: Verdict) -> str:
    """Why a sample ended as it did: its verdict status, or `truncated` / `parse_error` when no code came out."""
    if candidate.parse_error or not (candidate.code or "").strip():
        return "truncated" if truncated(candidate) else "parse_error"
    return verdict.status


def _share(count: int, total: int) -> float:
    return count / total if total else 0.0


def fmt(value: Any, pct: bool = False) -> str:
    """A metric for a table cell: percentages for rates, 'n/a' for None (no GPU)."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        return f"{100 * value:.1f}%" if pct else f"{value:.3g}"
    return str(value)


# --------------------------------------------------------------------------------------------
# The metrics registry: every metric once, with what it means, how it is computed, how it is
# shown and where. The report, the CLI, the tasks and the flows read it; adding a metric is its
# `Metric(...)` and one `register_metric(...)`.


class SampleSet:
    """The samples one set of metrics is computed over: problems, each with its candidates and
    verdicts (same order), the pass@k ks, whether the judge ran on a GPU and the size requirement."""

    def __init__(self, groups: Sequence[tuple[Problem, Sequence[Candidate], Sequence[Verdict]]], ks: Sequence[int], *,
                 gpu: bool, require: str) -> None:
        self.groups, self.ks, self.gpu, self.require = groups, ks, gpu, require
        self.verdicts = [v for _, _, vs in groups for v in vs]
        self.candidates = [c for _, cs, _ in groups for c in cs]
        self.total = len(self.verdicts)
        self.status = Counter(v.status for v in self.verdicts)
        self.outcomes = Counter(outcome(c, v) for _, cs, vs in groups for c, v in zip(cs, vs))
        self._speeds: dict[str, list[list[float]]] = {}

    def solved(self, verdict: Verdict) -> bool:
        return solved(verdict, self.require)

    def share(self, count: int) -> float:
        """`count` as a share of the samples."""
        return _share(count, self.total)

    def speeds_per_problem(self, against: str = "eager") -> list[list[float]]:
        """Per problem, the trusted speedups of its samples (over eager, or over torch.compile)."""
        if against not in self._speeds:
            self._speeds[against] = [[s for s in (trusted_speedup(v, self.require, against) for v in vs) if s is not None]
                                     for _, _, vs in self.groups]
        return self._speeds[against]

    def faster_share(self, threshold: float, against: str = "eager") -> float:
        """Share of problems with a sample faster than `threshold` times the baseline."""
        return _share(sum(any(s > threshold for s in per) for per in self.speeds_per_problem(against)), len(self.groups))

    def geomean_speedup(self, against: str = "eager") -> float | None:
        speeds = [s for per in self.speeds_per_problem(against) for s in per]
        return math.exp(sum(math.log(s) for s in speeds) / len(speeds)) if speeds else None


# Where a metric appears (Metric.views; callers outside this module pass the strings to `metrics_in`).
TABLE = "table"  # the report's and `eval compare`'s tables, one column each (evaluation/report.py)
SUMMARY = "summary"  # EvaluationResult.summary(): the eval verb's --json object and its terminal table
LEVEL = "level"  # the summary's per-level breakdown
FLAT = "flat"  # one flat row per evaluation: the flows' evaluation artifact and retrain report


@dataclass(frozen=True)
class Metric:
    """One evaluation metric.

    `compute(samples)` gives its value over a SampleSet. `shown` says how it is shown: "share" (a
    rate, as a percentage), "count", "number" (3 significant digits), "per_k" (a {k: share} dict,
    one `pass@k` column per k), "counts" (a {name: count} dict) or "text" (the last two are not
    table cells). `without_gpu`:
    "compute" (the CPU judge gives it too), "none" (None on the CPU: a speed metric) or "absent"
    (left out on the CPU). `views`: where it appears (TABLE, SUMMARY, LEVEL, FLAT); () keeps it in
    the stored metrics only. `label`: its table header (default: its name).
    """

    name: str
    description: str
    compute: Callable[[SampleSet], Any]
    shown: str = "share"
    views: tuple[str, ...] = (TABLE, SUMMARY, FLAT)
    without_gpu: str = "compute"
    label: str = ""

    @property
    def header(self) -> str:
        return self.label or self.name

    def cell(self, value: Any) -> str:
        """The value as a table cell (fmt: percentages for shares, 'n/a' for None)."""
        return fmt(value, pct=self.shown in ("share", "per_k"))


METRICS: dict[str, Metric] = {}


def register_metric(metric: Metric) -> Metric:
    """Add a metric to the registry (after the others: its place in tables and rows)."""
    if metric.name in METRICS:
        raise ValueError(f"metric {metric.name!r} is registered already (evaluation/metrics.py)")
    if metric.shown not in ("share", "count", "number", "per_k", "counts", "text"):
        raise ValueError(f"metric {metric.name!r}: shown={metric.shown!r}; use share, count, number, per_k, counts or text")
    if metric.without_gpu not in ("compute", "none", "absent"):
        raise ValueError(f"metric {metric.name!r}: without_gpu={metric.without_gpu!r}; use compute, none or absent")
    METRICS[metric.name] = metric
    return metric


def metrics_in(view: str) -> list[Metric]:
    """The registered metrics that appear in `view`, in registry order."""
    return [m for m in METRICS.values() if view in m.views]


def table_header(ks: Sequence[str]) -> list[str]:
    """The TABLE view's column headers, a `pass@k` column per k."""
    return [h for m in metrics_in(TABLE) for h in ([f"pass@{k}" for k in ks] if m.shown == "per_k" else [m.header])]


def table_cells(metrics: dict[str, Any], ks: Sequence[str]) -> list[str]:
    """One table row of stored metrics, under `table_header(ks)` ('n/a' where a value is missing)."""
    cells: list[str] = []
    for m in metrics_in(TABLE):
        if m.shown == "per_k":
            cells += [m.cell((metrics.get(m.name) or {}).get(k)) for k in ks]
        else:
            cells.append(m.cell(metrics.get(m.name)))
    return cells


def flat_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """The FLAT view of stored metrics: one value per column (floats to 3 decimals, a `pass@k`
    column per k), for the flows' markdown tables; a metric the metrics lack is left out."""
    out: dict[str, Any] = {}
    for m in metrics_in(FLAT):
        if m.name not in metrics:
            continue
        values = {f"pass@{k}": v for k, v in (metrics[m.name] or {}).items()} if m.shown == "per_k" else {m.name: metrics[m.name]}
        out.update({k: f"{v:.3f}" if isinstance(v, float) else v for k, v in values.items()})
    return out


def summarize(groups: Sequence[tuple[Problem, Sequence[Candidate], Sequence[Verdict]]], ks: Sequence[int], *,
              gpu: bool | None = None, require: str = "own_sizes") -> dict[str, Any]:
    """Metrics over problems, each with its samples' candidates and verdicts (same order): every
    registered metric (METRICS), in registry order."""
    samples = SampleSet(groups, ks, gpu=on_gpu(v for _, _, vs in groups for v in vs) if gpu is None else gpu,
                        require=require)
    out: dict[str, Any] = {}
    for metric in METRICS.values():
        if samples.gpu or metric.without_gpu == "compute":
            out[metric.name] = metric.compute(samples)
        elif metric.without_gpu == "none":
            out[metric.name] = None
    return out


def _pass_at_ks(s: SampleSet) -> dict[str, float]:
    n_min = min((len(vs) for _, _, vs in s.groups), default=0)
    pass_k: dict[str, float] = {}
    for k in sorted({int(k) for k in s.ks}):
        if k < 1 or not s.groups or k > n_min:
            continue
        pass_k[str(k)] = sum(pass_at_k(len(vs), sum(s.solved(v) for v in vs), k) for _, _, vs in s.groups) / len(s.groups)
    return pass_k


for _metric in (
    Metric("problems", "How many problems.", lambda s: len(s.groups), "count", (TABLE, SUMMARY, LEVEL, FLAT)),
    Metric("samples", "How many samples over all problems.", lambda s: s.total, "count", (TABLE, SUMMARY, LEVEL, FLAT)),
    Metric("rule_pass", "Share of samples with no static or runtime rule violation (`Verdict.rule_ok`). A timeout or a "
           "crash is not a rule failure: it counts against `rule_pass` only when a violation was found before it (the "
           "judge sets `rule_ok` so, validation/pool.py).",
           lambda s: s.share(sum(bool(v.rule_ok) for v in s.verdicts)), label="rule pass"),
    Metric("compile_rate", "Share of samples whose kernels all compiled for the target (`Verdict.compiled`); a sample "
           "that timed out, crashed or was not run did not show that, so it does not count.",
           lambda s: s.share(sum(bool(v.compiled) for v in s.verdicts)), label="compile"),
    Metric("exec_accuracy", "Share of samples that are correct AND rule-ok: the AutoTriton reward of 1.",
           lambda s: s.share(sum(s.solved(v) for v in s.verdicts)), views=(TABLE, SUMMARY, LEVEL, FLAT), label="exec acc"),
    Metric("hack_rate", "Share of samples whose outputs matched the reference but that broke a rule: the tests alone "
           "would have passed them. A plain PyTorch fallback seldom counts here any more: the judge's dispatch guard "
           "makes PyTorch compute inside `ModelNew.forward` fail, so it matches nothing.",
           lambda s: s.share(sum(hacked(v) for v in s.verdicts)), views=(TABLE, SUMMARY, LEVEL, FLAT), label="hack rate"),
    Metric("parse_error_rate", "Share of samples whose generation held no usable code (`Candidate.parse_error`).",
           lambda s: s.share(sum(bool(c.parse_error) for c in s.candidates)), views=(SUMMARY,)),
    Metric("truncated_rate", "Share of samples that hit the token cap, whatever came of them.",
           lambda s: s.share(sum(truncated(c) for c in s.candidates)), views=(SUMMARY,)),
    Metric("looping_rate", "Share of samples cut off at the token cap while repeating themselves (their last 2,000 "
           "characters, numbers masked, compress to under 6 %: `looping`): more tokens would not have finished them.",
           lambda s: s.share(sum(looping(c) for c in s.candidates)), views=(SUMMARY,)),
    Metric("pass_at_k", "Per problem, the unbiased estimator of Chen et al. (2021) with n samples of which c are correct "
           "and rule-ok, averaged over problems; a k above the fewest samples of any problem is left out (it cannot be "
           "estimated).", _pass_at_ks, "per_k", (TABLE, SUMMARY, LEVEL, FLAT)),
    Metric("fast_1", "(KernelBench) Share of problems with at least one correct, rule-ok sample whose speedup over eager "
           "PyTorch is above 1. Speedups the judge flagged `suspect` do not count.",
           lambda s: s.faster_share(1.0), views=(TABLE, SUMMARY), without_gpu="none"),
    Metric("fast_2", "The same as `fast_1` with a speedup above 2.", lambda s: s.faster_share(2.0), views=(TABLE, SUMMARY),
           without_gpu="none"),
    Metric("geomean_speedup", "Geometric mean of the speedups of correct, rule-ok samples.",
           lambda s: s.geomean_speedup(), "number", without_gpu="none", label="geomean speedup"),
    Metric("geomean_speedup_vs_compile", "The same against torch.compile of the reference.",
           lambda s: s.geomean_speedup("compile"), "number", (TABLE,), without_gpu="absent", label="geomean vs compile"),
    Metric("own_sizes_yield", "Share of samples correct and rule-ok at the problem's own sizes (KernelBench's definition).",
           lambda s: s.share(sum(solved(v, "own_sizes") for v in s.verdicts)), views=(TABLE,), label="yield own sizes"),
    Metric("general_yield", "Share of samples correct and rule-ok at the problem's own sizes and also at the judge's "
           "odd-size trial (general kernels).", lambda s: s.share(sum(solved(v, "own_and_odd_sizes") for v in s.verdicts)),
           views=(TABLE,), label="yield own+odd sizes"),
    Metric("status_counts", "Samples per verdict status (`records.VERDICT_STATUSES`), statuses never seen left out.",
           lambda s: {st: s.status.get(st, 0) for st in VERDICT_STATUSES if s.status.get(st)}, "counts", (SUMMARY,)),
    Metric("outcome_counts", "The verdict status of each sample, except that a sample whose completion held no code is "
           "counted apart, as `truncated` (cut off at the token cap: no closing fence, finish reason `length`, or as "
           "many completion tokens as the cap) or `parse_error` (no usable code block). The judge gives such a sample "
           "`rule_violation` (no kernel), which would hide why it failed.",
           lambda s: {o: s.outcomes.get(o, 0) for o in OUTCOMES if s.outcomes.get(o)}, "counts", (SUMMARY,)),
    Metric("correct_rate", "Share of samples whose outputs matched the reference, rules aside (`Verdict.correct`).",
           lambda s: s.share(sum(bool(v.correct) for v in s.verdicts)), views=()),
    Metric("require_sizes", "What \"correct\" means in the other metrics (`evaluation.require_sizes`): \"own_sizes\" "
           "(default, KernelBench-compatible) or \"own_and_odd_sizes\" (validation/rewards.py `correct_at`).",
           lambda s: s.require, "text", ()),
    Metric("problems_solved", "Number of problems with at least one correct, rule-ok sample.",
           lambda s: sum(any(s.solved(v) for v in vs) for _, _, vs in s.groups), "count", ()),
    # Judged nowhere: GPU-only features on the CPU judge. No credit (a model cannot raise its
    # scores by using them), but counted apart so a report does not read them as its failures.
    Metric("unsupported_here", "Samples the judge could not judge on this device (`unsupported_here`).",
           lambda s: s.status.get("unsupported_here", 0), "count", ()),
    Metric("fast_compile_1", "Share of problems with a correct, rule-ok sample faster than torch.compile of the reference.",
           lambda s: s.faster_share(1.0, "compile"), views=(), without_gpu="absent"),
    Metric("timed_samples", "How many speedups went into `geomean_speedup`.",
           lambda s: sum(len(per) for per in s.speeds_per_problem()), "count", (), without_gpu="absent"),
    Metric("suspect_speedups", "Samples whose speedup the judge flagged as suspect (over 10x), whatever their verdict.",
           lambda s: sum(1 for v in s.verdicts if (v.timing or {}).get("suspect")), "count", (), without_gpu="absent"),
):
    register_metric(_metric)


def compute_metrics(problems: Sequence[Problem], candidates: Sequence[Sequence[Candidate]], verdicts: Sequence[Sequence[Verdict]],
                    ks: Sequence[int] = (1, 5, 10), require: str = "own_sizes") -> dict[str, Any]:
    """Overall metrics plus the same per benchmark (`by_suite`), per level (`by_level`) and per problem.

    `candidates[i]` and `verdicts[i]` are the samples of `problems[i]`.
    """
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
