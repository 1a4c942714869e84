"""The report's outcome mix: samples without code are told apart (truncated at the token cap, or
unparseable) from code that broke a rule, though the judge calls all three `rule_violation`."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from autotriton.evaluation.metrics import compute_metrics, looping, outcome, truncated
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


def _runaway_kernel(n: int = 150) -> str:
    # What SmolLM2-135M wrote after SFT (RESULTS.md, eighth H200 run): Inductor's numbering, without end
    lines = ["```python", "@triton.jit", "def add_mul_kernel(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):",
             "    tmp0 = tl.load(in_ptr0 + x0, xmask)"]
    lines += [f"    tmp{i} = tmp{i - 1} {'+*'[i % 2]} tmp{i + (i % 3 == 0)}" for i in range(1, n)]
    return "\n".join(lines)


def _nested_launch(n: int = 40) -> str:
    call = "add_elu_kernel[(add_elu_xnumel + 1) // 2,](x, self.bias1, self.norm2, x_dim3, add_elu_xnumel, "
    return "```python\n    def forward(self, x):\n        " + call * n


def test_answers_cut_off_while_repeating_themselves_are_told_from_long_kernels():
    problem = Problem(reference_source=elementwise_reference("torch.relu(x)"), name="relu", suite="custom/level1",
                      suite_id="custom/level1/relu")
    cap = {"max_new_tokens": 2048}

    def cut(text: str) -> Candidate:
        return Candidate(problem_key=problem.key, code="", raw_output=text, generator="t", sampling=cap,
                         parse_error="truncated code block (no closing ```)", usage={"completion_tokens": 2048})

    assert looping(cut(_runaway_kernel())) and looping(cut(_nested_launch()))
    # the same text, closed before the cap, is a wrong answer, not a runaway one
    closed = Candidate(problem_key=problem.key, code="", raw_output=_runaway_kernel(), generator="t", sampling=cap,
                       parse_error="no code block defines `class ModelNew`", usage={"completion_tokens": 900})
    assert not looping(closed)
    # the teacher's own kernels, cut anywhere past 2,000 characters, are long answers still being written
    pairs = Path(__file__).resolve().parents[1] / "datasets" / "h200" / "pairs" / "data" / "train-00000-of-00001.parquet"
    codes = sorted((c for c in pq.read_table(pairs, columns=["code"]).column("code").to_pylist() if len(c) > 6000),
                   key=len)[-200:]
    flagged = [c for c in codes for k in (len(c) // 3, len(c) // 2, len(c)) if looping(cut(c[:k]))]
    assert not flagged, f"{len(flagged)} of {3 * len(codes)} cuts of the teacher's kernels called looping"

    samples = [cut(_runaway_kernel()), cut(codes[-1][: len(codes[-1]) // 2]), cut(_nested_launch()), closed]
    verdicts = [_sample(problem)[1] for _ in samples]
    metrics = compute_metrics([problem], [samples], [verdicts], ks=(1,))
    assert metrics["truncated_rate"] == 0.75 and metrics["looping_rate"] == 0.5
    evaluation = Evaluation(suite="custom/level1", generator="t", config={"max_new_tokens": 2048},
                            verdict_keys=[v.key for v in verdicts], metrics=metrics)
    text = _markdown(evaluation, metrics, {}, None)
    assert "75.0% of the samples hit the token cap (max new tokens 2048); 50.0% were repeating themselves" in text
