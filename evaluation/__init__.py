"""Evaluation: benchmark any model, local or behind an endpoint, on KernelBench and TritonBench-T.

Public API:
    load_suite(path, *, levels=None, ids=None, name_glob=None, limit=None, shrink=False, hub=False) -> list[Problem]
    convert_tritonbench_t(path, *, probe=False) -> ConversionResult(entries, errors)
    LocalModelGenerator, OpenAIGenerator, RecordedGenerator (the Generator protocol)
    evaluate(problems, generator, config, validation_config, judge=None) -> EvaluationResult
    pass_at_k(n, c, k), compute_metrics(...)
    write_report(result, out_dir), compare_markdown(evaluations)
A plain library: no Prefect and no DuckDB here (the CLI verb stores results in the warehouse).
"""

from autotriton.evaluation.config import EvaluationConfig
from autotriton.evaluation.evaluate import EvaluationResult, evaluate, store_evaluation, suite_label
from autotriton.evaluation.generators import (
    Generator,
    LocalModelGenerator,
    OpenAIGenerator,
    RecordedGenerator,
    candidate_from_output,
    default_instruction,
    make_generator,
)
from autotriton.evaluation.metrics import compute_metrics, hacked, pass_at_k, solved, summarize
from autotriton.evaluation.report import compare_markdown, compare_rows, write_report
from autotriton.evaluation.suites import (
    SuiteEntry,
    SuiteError,
    filter_entries,
    load_suite,
    read_suite_jsonl,
    shrink_suite_problem,
    write_suite_jsonl,
)
from autotriton.evaluation.tritonbench import ConversionError, ConversionResult, convert_tritonbench_t

__all__ = [
    "EvaluationConfig", "EvaluationResult", "evaluate", "store_evaluation", "suite_label",
    "Generator", "LocalModelGenerator", "OpenAIGenerator", "RecordedGenerator", "candidate_from_output",
    "default_instruction", "make_generator",
    "compute_metrics", "hacked", "pass_at_k", "solved", "summarize",
    "compare_markdown", "compare_rows", "write_report",
    "SuiteEntry", "SuiteError", "filter_entries", "load_suite", "read_suite_jsonl", "shrink_suite_problem", "write_suite_jsonl",
    "ConversionError", "ConversionResult", "convert_tritonbench_t",
]
