"""Evaluation reports: markdown with tables and PNG plots, and side-by-side comparisons.

`write_report(result, out_dir)` writes `report.md` (with one example answer per outcome),
`metrics.json`, `samples.jsonl` (one line per sample: problem, candidate, verdict, status, speedup,
the completion) and the plots: `accuracy_by_level.png`
(rule pass / compile / exec accuracy / hack rate per level), `status_mix.png` (verdict statuses per
level) and, when the judge ran on a GPU, `speedups.png` (distribution of the speedups of correct
samples). `compare_markdown(evaluations)` puts several evaluations side by side.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from autotriton.evaluation.metrics import fmt, table_cells, table_header
from autotriton.records import Evaluation

STATUS_COLOURS = {
    "correct": "#2e7d32", "incorrect": "#ef6c00", "rule_violation": "#c62828", "compile_error": "#6a1b9a",
    "runtime_error": "#1565c0", "timeout": "#5d4037", "crashed": "#424242", "unsupported_here": "#9e9e9e", "parse_error": "#f9a825",
    "truncated": "#757575",
}
# What each sample outcome means, for the report (metrics.outcome).
OUTCOME_MEANING = {
    "correct": "outputs match and no rule is broken",
    "incorrect": "ran, but the outputs do not match the reference",
    "rule_violation": "code came out, but it breaks a rule (e.g. no Triton kernel launched, a PyTorch fallback)",
    "compile_error": "a kernel did not compile for the target",
    "runtime_error": "raised while running",
    "timeout": "ran past the judge's time limit (or was never judged)",
    "crashed": "the candidate's process died",
    "parse_error": "the completion held no usable ```python block defining ModelNew",
    "truncated": "the completion was cut off at the token cap before its code block closed: raise max_new_tokens",
}


def _counts(m: dict[str, Any]) -> dict[str, int]:
    """Sample outcomes (parse errors and truncation apart); stored evaluations from before have only statuses."""
    return m.get("outcome_counts") or m.get("status_counts") or {}


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _ks(metrics: dict[str, Any]) -> list[str]:
    return sorted((metrics.get("pass_at_k") or {}).keys(), key=int)


def _plot_levels(metrics: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = list(metrics["by_level"].items())
    names = [n for n, _ in levels]
    series = [("rule pass", "rule_pass", "#1565c0"), ("compile", "compile_rate", "#6a1b9a"),
              ("exec accuracy", "exec_accuracy", "#2e7d32"), ("hack rate", "hack_rate", "#c62828")]
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.6 * len(names) + 2), 3.6))
    for i, (label, key, colour) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(names))]
        ys = [100 * (lv.get(key) or 0.0) for _, lv in levels]
        bars = ax.bar(xs, ys, width, label=label, color=colour)
        ax.bar_label(bars, fmt="%.0f", fontsize=7, padding=1)
    ax.set_xticks(range(len(names)), names, rotation=15 if len(names) > 3 else 0)
    ax.set_ylabel("% of samples")
    ax.set_ylim(0, 110)
    ax.set_title("Accuracy per level")
    ax.legend(fontsize=8, ncols=4, loc="upper center", bbox_to_anchor=(0.5, -0.15 if len(names) <= 3 else -0.25))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plot_status(metrics: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = list(metrics["by_level"].items())
    names = [n for n, _ in levels]
    fig, ax = plt.subplots(figsize=(max(5.0, 1.4 * len(names) + 2), 3.4))
    bottoms = [0.0] * len(names)
    from autotriton.evaluation.metrics import OUTCOMES

    for status in OUTCOMES:
        shares = []
        for _, lv in levels:
            total = lv.get("samples") or 0
            shares.append(100 * _counts(lv).get(status, 0) / total if total else 0.0)
        if not any(shares):
            continue
        ax.bar(range(len(names)), shares, 0.6, bottom=bottoms, label=status, color=STATUS_COLOURS.get(status))
        bottoms = [b + s for b, s in zip(bottoms, shares)]
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("% of samples")
    ax.set_ylim(0, 100)
    ax.set_title("Sample outcomes")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plot_speedups(speedups: list[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    logs = [math.log2(s) for s in speedups]
    ax.hist(logs, bins=min(30, max(5, len(logs) // 2)), color="#1565c0")
    ax.axvline(0.0, color="black", linewidth=1)
    ax.axvline(1.0, color="#2e7d32", linewidth=1, linestyle="--", label="2x")
    ax.set_xlabel("log2(speedup vs eager PyTorch)")
    ax.set_ylabel("correct samples")
    ax.set_title(f"Speedups of {len(speedups)} correct samples")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _examples(result: Any, lines_per_example: int = 40) -> list[dict[str, Any]]:
    """One sample per outcome (correct ones first): what a reader of the report should see of the
    model's answers, its working kernels and its typical failures, with why each failed."""
    from autotriton.evaluation.metrics import outcome

    chosen: dict[str, dict[str, Any]] = {}
    for problem, cands, verdicts in zip(result.problems, result.candidates, result.verdicts):
        for c, v in zip(cands, verdicts):
            kind = outcome(c, v)
            if kind in chosen:
                continue
            error_lines = (v.error or "").strip().splitlines()
            why = (c.parse_error or "; ".join(f"{x.rule}: {x.message}" for x in v.violations[:2])
                   or (error_lines[-1] if error_lines else ""))
            text = c.code if c.code.strip() else (c.raw_output or "")
            shown = text.splitlines()
            # code from its start; an answer with no code block from its end, where it stopped
            excerpt = shown[:lines_per_example] if c.code.strip() else shown[-lines_per_example:]
            chosen[kind] = {"outcome": kind, "problem": problem.suite_id or problem.name, "why": why[:300],
                            "excerpt": "\n".join(excerpt), "cut": len(shown) > lines_per_example}
    order = ["correct"] + [k for k in chosen if k != "correct"]
    return [chosen[k] for k in order if k in chosen]


def _markdown(evaluation: Evaluation, metrics: dict[str, Any], plots: dict[str, str], timings: dict[str, float] | None,
              per_problem_limit: int = 200, examples: Sequence[dict[str, Any]] = ()) -> str:
    ks = _ks(metrics)
    cfg = evaluation.config
    lines = [f"# Evaluation {evaluation.key}", "",
             f"- suite: `{evaluation.suite}`",
             f"- generator: `{evaluation.generator}` (version `{cfg.get('generator_version', '')}`)",
             f"- samples per problem: {cfg.get('samples')}, temperature {cfg.get('temperature')}, top_p {cfg.get('top_p')}, "
             f"max new tokens {cfg.get('max_new_tokens')}, prompt {cfg.get('prompt_version')}",
             f"- judge: device `{cfg.get('judge_device', '')}`, config `{cfg.get('judge_config_hash', '')}`"]
    in_suite = metrics.get("problems_in_suite")
    if in_suite and in_suite > metrics.get("problems", 0):
        lines.append(f"- **{metrics.get('problems')} of the suite's {in_suite} problems evaluated** (evaluation.max_problems)")
    cap = metrics.get("completion_cap")
    if cap and cap.get("shortest"):
        verdict = "holds" if cap.get("holds") else "**cannot hold**"
        lines.append(f"- max new tokens {cap['cap']} {verdict} the shortest validated kernel ({cap['shortest_name']}, "
                     f"{cap['shortest']} tokens); {cap['fitting']} of the {cap['measured']} shortest fit")
    if timings:
        lines.append(f"- time: generation {timings.get('generate_s', 0):.1f} s, judging {timings.get('judge_s', 0):.1f} s")
    if metrics.get("reference_failures"):
        failed = metrics["reference_failures"]
        lines.append(f"- **{len(failed)} problems whose reference did not run in the judge** (counted as failures): "
                     + ", ".join(f"`{x}`" for x in failed[:20]) + (" ..." if len(failed) > 20 else ""))
    if metrics.get("device") != "gpu":
        lines.append("- fast_1, fast_2 and the speedup need a GPU judge: n/a here (CPU interpreter).")
    lines += ["", "Exec accuracy counts a sample only when it is correct AND breaks no rule (the AutoTriton reward); "
              "the hack rate is the share that matched the reference while breaking a rule (e.g. a PyTorch fallback).", "",
              "## Overall", "", _table(table_header(ks), [table_cells(metrics, ks)]), ""]
    lines += ["## Per level", "", _table(["level"] + table_header(ks),
                                          [[name] + table_cells(m, ks) for name, m in metrics.get("by_level", {}).items()]), ""]
    if len(metrics.get("by_suite", {})) > 1:
        lines += ["## Per benchmark", "", _table(["benchmark"] + table_header(ks),
                                                 [[name] + table_cells(m, ks) for name, m in metrics["by_suite"].items()]), ""]
    counts = _counts(metrics)
    if counts:
        lines += ["## Sample outcomes", "", _table(["outcome", "samples", "meaning"],
                                                   [[s, str(n), OUTCOME_MEANING.get(s, "")] for s, n in counts.items()]), ""]
        if metrics.get("truncated_rate"):
            loop = (f"; {fmt(metrics['looping_rate'], pct=True)} were repeating themselves when cut off (the same lines or "
                    "calls over and over, numbers aside), which more tokens would not have finished") if metrics.get("looping_rate") else ""
            lines += [f"{fmt(metrics['truncated_rate'], pct=True)} of the samples hit the token cap (max new tokens "
                      f"{cfg.get('max_new_tokens')}){loop}.", ""]
    if metrics.get("unsupported_here"):
        lines += [f"{metrics['unsupported_here']} sample(s) could not be judged on this device (`unsupported_here`: GPU-only "
                  "features such as libdevice or inline assembly on the CPU judge). They earn no credit above; judge them "
                  "on a GPU to know whether they are right.", ""]
    for title, name in (("Accuracy per level", "accuracy_by_level.png"), ("Status mix", "status_mix.png"),
                        ("Speedup distribution", "speedups.png")):
        if name in plots:
            lines += [f"![{title}]({name})", ""]
    if examples:
        lines += ["## Examples", "", "One sample per outcome, as the model wrote it (code from its start; an answer without a "
                  "complete code block from where it stopped).", ""]
        for ex in examples:
            where = "last" if ex["outcome"] in ("truncated", "parse_error") else "first"
            lines += [f"### {ex['outcome']}: `{ex['problem']}`", ""]
            if ex["why"]:
                lines += [f"Why: {ex['why']}", ""]
            lines += [f"({where} {ex['excerpt'].count(chr(10)) + 1} lines{' of more' if ex['cut'] else ''})", "",
                      "````python", ex["excerpt"], "````", ""]
    per = metrics.get("per_problem") or []
    if per:
        lines += ["## Per problem", "",
                  _table(["problem", "solved / n", "hacks", "outcomes", "best speedup"],
                         [[f"`{p['suite_id']}`", f"{p['solved']}/{p['n']}", str(p["hacks"]),
                           ", ".join(f"{k} {v}" for k, v in sorted((p.get("outcomes") or p["statuses"]).items())),
                           fmt(p.get("best_speedup"))]
                          for p in per[:per_problem_limit]])]
        if len(per) > per_problem_limit:
            lines.append(f"\n({len(per) - per_problem_limit} more problems in metrics.json)")
        lines.append("")
    return "\n".join(lines)


def write_report(result: Any, out_dir: str | Path) -> Path:
    """Write the markdown report, metrics.json, samples.jsonl and PNG plots into `out_dir`.

    `result` is an `EvaluationResult` (everything, including per-sample speedups) or an `Evaluation`
    record read back from the warehouse (tables and plots from its stored metrics). Returns the
    path of report.md.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    evaluation: Evaluation = result if isinstance(result, Evaluation) else result.evaluation
    metrics = evaluation.metrics
    timings = None if isinstance(result, Evaluation) else result.timings
    plots: dict[str, str] = {}
    if metrics.get("by_level"):
        _plot_levels(metrics, out / "accuracy_by_level.png")
        plots["accuracy_by_level.png"] = "accuracy"
        _plot_status(metrics, out / "status_mix.png")
        plots["status_mix.png"] = "status"
    if isinstance(result, Evaluation):
        speedups = [p["best_speedup"] for p in metrics.get("per_problem", []) if p.get("best_speedup")]
    else:
        from autotriton.evaluation.kernelbench import BENCHMARK, write_results
        from autotriton.evaluation.metrics import outcome, trusted_speedup

        speedups = [s for s in (trusted_speedup(v, metrics.get("require_sizes", "own_sizes")) for v in result.all_verdicts)
                    if s is not None]
        with (out / "samples.jsonl").open("w", encoding="utf-8") as fh:
            for problem, cands, verdicts in zip(result.problems, result.candidates, result.verdicts):
                for index, (c, v) in enumerate(zip(cands, verdicts)):
                    fh.write(json.dumps({
                        "suite_id": problem.suite_id or problem.name, "problem_key": problem.key, "sample": index,
                        "candidate_key": c.key, "verdict_key": v.key, "status": v.status, "correct": v.correct,
                        "outcome": outcome(c, v), "rule_ok": v.rule_ok, "compiled": v.compiled, "speedup": v.speedup,
                        "speedup_vs_compile": v.speedup_vs_compile, "correct_own_sizes": v.correct_own_sizes,
                        "odd_sizes_ok": v.odd_sizes_ok,
                        "violations": [x.rule for x in v.violations], "parse_error": c.parse_error,
                        "error": (v.error or "")[:500] or None,
                        "completion_tokens": (c.usage or {}).get("completion_tokens"), "completion": c.raw_output or c.code,
                    }) + "\n")
        # KernelBench's own result file too, so its tooling (and its users) can read the judge's answers.
        if any((p.suite_id or "").startswith(BENCHMARK + "/") for p in result.problems):
            write_results(result.problems, result.candidates, result.verdicts, out)
    if metrics.get("device") == "gpu" and speedups:
        _plot_speedups(speedups, out / "speedups.png")
        plots["speedups.png"] = "speedups"
    (out / "metrics.json").write_text(json.dumps({"evaluation_key": evaluation.key, "suite": evaluation.suite,
                                                   "generator": evaluation.generator, "config": evaluation.config,
                                                   "metrics": metrics}, indent=2, default=str), encoding="utf-8")
    report = out / "report.md"
    examples = [] if isinstance(result, Evaluation) else _examples(result)
    report.write_text(_markdown(evaluation, metrics, plots, timings, examples=examples), encoding="utf-8")
    return report


def compare_rows(evaluations: Sequence[Evaluation], labels: Sequence[str] | None = None) -> tuple[list[str], list[list[str]]]:
    """(header, rows): one row per evaluation with its headline metrics, for tables and markdown."""
    ks = sorted({k for e in evaluations for k in (e.metrics.get("pass_at_k") or {})}, key=int)
    header = ["evaluation", "generator", "suite"] + table_header(ks)
    rows = []
    for i, ev in enumerate(evaluations):
        label = labels[i] if labels and i < len(labels) else ev.key
        rows.append([label, ev.generator, ev.suite] + table_cells(ev.metrics, ks))
    return header, rows


def compare_markdown(evaluations: Sequence[Evaluation], labels: Sequence[str] | None = None) -> str:
    """A markdown table putting evaluations side by side, then per level where they share levels."""
    header, rows = compare_rows(evaluations, labels)
    parts = ["# Evaluations compared", "", _table(header, rows), ""]
    levels = sorted({lv for e in evaluations for lv in (e.metrics.get("by_level") or {})})
    for level in levels:
        present = [(i, e) for i, e in enumerate(evaluations) if level in (e.metrics.get("by_level") or {})]
        if len(present) < 2:
            continue
        ks = sorted({k for _, e in present for k in (e.metrics["by_level"][level].get("pass_at_k") or {})}, key=int)
        rows = [[(labels[i] if labels and i < len(labels) else e.key), e.generator] + table_cells(e.metrics["by_level"][level], ks)
                for i, e in present]
        parts += [f"## {level}", "", _table(["evaluation", "generator"] + table_header(ks), rows), ""]
    return "\n".join(parts)


__all__ = ["write_report", "compare_markdown", "compare_rows", "fmt"]
