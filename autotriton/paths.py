"""Where the shipped demo data lives in a source checkout (the README's quick start runs from one)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = REPO_ROOT / "examples"
DEMO_MODULES = EXAMPLES / "modules"  # a small local "repository" harvested by the demo
DEMO_TRAIN_SUITE = EXAMPLES / "demo" / "problems.jsonl"  # distilled (replay teacher) for training
DEMO_EVAL_SUITE = EXAMPLES / "demo" / "eval_problems.jsonl"  # held out: the demo's evaluation suite
