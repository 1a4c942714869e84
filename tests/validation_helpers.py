"""Shared data for the judge's tests: problem and candidate sources under tests/data/judge/."""

from __future__ import annotations

from pathlib import Path

JUDGE_DATA = Path(__file__).resolve().parent / "data" / "judge"


def problem(name: str) -> str:
    return (JUDGE_DATA / "problems" / f"{name}.py").read_text()


def candidate(name: str) -> str:
    return (JUDGE_DATA / "candidates" / f"{name}.py").read_text()


# (problem, candidate) pairs that are honest and right: reward 1 on the interpreter and on a GPU.
CORRECT = {
    "elementwise": ("relu", "correct_relu"),
    "row_reduction": ("rowsum", "correct_rowsum"),
    "softmax": ("softmax", "correct_softmax"),
    "matmul_masked_edges": ("matmul", "correct_matmul"),
    "fused_linear_relu": ("linear_relu", "correct_linear_relu"),
}


def judge_config(**overrides):
    """Small, quick judge settings for tests (CPU interpreter unless overridden)."""
    from autotriton.validation import ValidationConfig

    base = dict(device="cpu", trials=3, timeout_s=15, max_output_mb=64, max_log_mb=16, workers=2)
    base.update(overrides)
    return ValidationConfig(**base)
