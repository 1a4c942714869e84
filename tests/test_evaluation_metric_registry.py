"""The metrics registry (evaluation/metrics.py): a metric is defined and registered once, and the
report, the summary and the flat metrics the flows and tasks show pick it up without other edits."""

from __future__ import annotations

import pytest

from autotriton.evaluation import METRICS, Metric, metrics_in, register_metric, write_report
from autotriton.evaluation.metrics import flat_metrics
from test_evaluation_report import _result


@pytest.fixture
def odd_samples_metric():
    metric = register_metric(Metric("odd_sample_share", "Share of samples with an odd position (a test metric).",
                                    lambda s: s.share(sum(i % 2 for i in range(s.total))), label="odd samples"))
    try:
        yield metric
    finally:
        del METRICS[metric.name]


def test_a_registered_metric_reaches_the_report_the_summary_and_the_flat_metrics(tmp_path, odd_samples_metric):
    result = _result("cpu")  # computed after registering: the metric is in the stored metrics
    assert result.metrics["odd_sample_share"] == 0.5 and result.metrics["by_level"]["kb/level1"]["odd_sample_share"] == 0.5
    text = write_report(result, tmp_path / "r").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| problems |"))
    assert header.rstrip(" |").endswith("odd samples")
    assert "| 50.0% |" in next(line for line in text.splitlines() if line.startswith("| 2 | 4 |"))
    assert result.summary()["odd_sample_share"] == 0.5
    assert flat_metrics(result.metrics)["odd_sample_share"] == "0.500"
    assert metrics_in("flat")[-1] is odd_samples_metric


def test_a_name_is_registered_once_and_the_views_keep_their_columns():
    with pytest.raises(ValueError, match="registered already"):
        register_metric(Metric("hack_rate", "again", lambda s: 0.0))
    with pytest.raises(ValueError, match="shown="):
        register_metric(Metric("x_metric", "badly shown", lambda s: 0.0, shown="stars"))
    assert [m.name for m in metrics_in("level")] == ["problems", "samples", "exec_accuracy", "hack_rate", "pass_at_k"]
    assert [m.name for m in metrics_in("flat")] == ["problems", "samples", "rule_pass", "compile_rate", "exec_accuracy",
                                                    "hack_rate", "pass_at_k", "geomean_speedup"]
