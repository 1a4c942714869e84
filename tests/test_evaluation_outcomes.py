"""The report's outcome mix: samples without code are told apart (truncated at the token cap, or
unparseable) from code that broke a rule, though the judge calls all three `rule_violation`."""

from __future__ import annotations

from autotriton.evaluation.metrics import compute_metrics, outcome, truncated
from autotriton.evaluation.report import _markdown
from autotriton.records import Candidate, Evaluation, Problem, Verdict, Violation
from kernel_fixtures import elementwise_reference


def _sample(problem: Problem, code: str = "", *, parse_error: str | None = None, sampling=None, usage=None) -> tuple[Candidate, Verdict]:
    cand = Candidate(problem_key=problem.key, code=code, generator="t", parse_error=parse_error,
                     sampling=sampling or {}, usage=usage or {})
    verdict = Verdict(candidate_key=cand.key, problem_key=problem.key, status="rule_violation",
                      violations=[Violation(rule="TRITON-NO-KERNEL", message="no kernel")])
    return cand, verdict


def test_outcomes_split_truncation_and_parse_errors_from_rule_violations():
    problem = Problem(reference_source=elementwise_reference("torch.relu(x)"), name="relu", suite="custom/level1",
                      suite_id="custom/level1/relu")
    samples = [
        _sample(problem, parse_error="truncated code block (no closing ```)"),
        _sample(problem, parse_error="no ```python code block in the output", sampling={"finish_reason": "length"}),
        _sample(problem, parse_error="no ```python code block in the output", sampling={"max_new_tokens": 64},
                usage={"completion_tokens": 64}),
        _sample(problem, parse_error="no code block defines `class ModelNew`", sampling={"max_new_tokens": 64},
                usage={"completion_tokens": 20}),
        _sample(problem, code="class ModelNew:\n    pass\n"),
    ]
    assert [truncated(c) for c, _ in samples] == [True, True, True, False, False]
    assert [outcome(c, v) for c, v in samples] == ["truncated", "truncated", "truncated", "parse_error", "rule_violation"]
    metrics = compute_metrics([problem], [[c for c, _ in samples]], [[v for _, v in samples]], ks=(1,))
    assert metrics["status_counts"] == {"rule_violation": 5}
    assert metrics["outcome_counts"] == {"rule_violation": 1, "parse_error": 1, "truncated": 3}
    assert metrics["truncated_rate"] == 0.6
    assert metrics["per_problem"][0]["outcomes"] == {"truncated": 3, "parse_error": 1, "rule_violation": 1}
    evaluation = Evaluation(suite="custom/level1", generator="t", config={"max_new_tokens": 64},
                            verdict_keys=[v.key for _, v in samples], metrics=metrics)
    text = _markdown(evaluation, metrics, {}, None)
    assert "## Sample outcomes" in text and "| truncated | 3 | the completion was cut off at the token cap" in text
    assert "60.0% of the samples hit the token cap (max new tokens 64)" in text
