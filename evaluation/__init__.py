"""Evaluation: benchmark any model, local or behind an endpoint, on KernelBench and TritonBench-T.

Public API:
    load_suite(path, *, levels=None, ids=None, name_glob=None, limit=None, shrink=False, hub=False) -> list[Problem]
    convert_tritonbench_t(path, *, probe=False) -> ConversionResult(entries, errors)
    LocalModelGenerator, OpenAIGenerator, RecordedGenerator (the Generator protocol)
    RecordedJudge, read_verdicts (score candidates with verdicts an earlier judge run recorded, e.g. on a GPU)
    evaluate(problems, generator, config, validation_config, judge=None) -> EvaluationResult
    pass_at_k(n, c, k), compute_metrics(...)
    Metric, METRICS, register_metric(metric), metrics_in(view)   the metrics registry (metrics.py): each metric once
    flat_metrics(metrics), table_header(ks), table_cells(metrics, ks)   its views, for reports, tasks, flows and the CLI
    write_report(result, out_dir), compare_markdown(evaluations)
A plain library: no Prefect and no warehouse here (tasks/steps.py `store_evaluation_result` stores an
EvaluationResult, for the flow's task and the CLI verb).
Names are imported on first use, so a bare GPU machine (torch, triton, numpy, rich, matplotlib; no
pydantic) can use the suites, generators, evaluate and reports without the config models.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "EvaluationConfig": "config",
    "EvaluationResult": "harness", "evaluate": "harness", "suite_label": "harness",
    "RecordedJudge": "recorded", "read_verdicts": "recorded",
    "Generator": "generators", "LocalModelGenerator": "generators", "OpenAIGenerator": "generators",
    "RecordedGenerator": "generators", "candidate_from_output": "generators", "default_instruction": "generators",
    "make_generator": "generators",
    "compute_metrics": "metrics", "hacked": "metrics", "pass_at_k": "metrics", "solved": "metrics", "summarize": "metrics",
    "Metric": "metrics", "METRICS": "metrics", "register_metric": "metrics", "metrics_in": "metrics",
    "flat_metrics": "metrics", "table_header": "metrics", "table_cells": "metrics",
    "compare_markdown": "report", "compare_rows": "report", "write_report": "report",
    "SuiteEntry": "suite_entries", "SuiteError": "suite_entries", "filter_entries": "suites", "load_suite": "suites",
    "cap_problems": "suites",
    "read_suite_jsonl": "suite_entries", "shrink_suite_problem": "suites", "write_suite_jsonl": "suite_entries",
    "looks_like_tritonbench": "suites", "kernelbench_run_candidates": "kernelbench:run_candidates",
    "convert_to_suite_file": "tritonbench",
    "read_entries": "suites", "read_problems": "kernelbench", "read_run": "kernelbench", "write_problems": "kernelbench",
    "write_results": "kernelbench",
    "ConversionError": "tritonbench", "ConversionResult": "tritonbench", "convert_tritonbench_t": "tritonbench",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, _, attr = _LAZY[name].partition(":")  # "module" or "module:name" (exported under another name)
        return getattr(importlib.import_module(f"autotriton.evaluation.{module}"), attr or name)
    raise AttributeError(f"module 'autotriton.evaluation' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_LAZY))
