"""Shared fixtures of the training tests: small KernelBench-format problems with Triton answers."""

from __future__ import annotations

import time

from autotriton.hashing import source_key
from autotriton.prompting import format_completion
from autotriton.records import Candidate, Problem, Verdict
from kernel_fixtures import ELEMENTWISE_REFERENCE, elementwise_answer, elementwise_reference  # noqa: F401 - the training tests import these from here

# name, torch expression, triton expression (all computed on the loaded `x`)
ELEMENTWISE_OPS = [
    ("relu", "torch.relu(x)", "tl.maximum(x, 0.0)"),
    ("sigmoid", "torch.sigmoid(x)", "1.0 / (1.0 + tl.exp(-x))"),
    ("double", "x * 2.0", "x * 2.0"),
    ("square", "x * x", "x * x"),
    ("tanh", "torch.tanh(x)", "2.0 / (1.0 + tl.exp(-2.0 * x)) - 1.0"),
    ("abs", "torch.abs(x)", "tl.where(x >= 0, x, -x)"),
]


def elementwise_problem(name: str, expr: str, n: int = 1000, suffix: str = "") -> Problem:
    return Problem(reference_source=elementwise_reference(expr, n=n, doc=f"{name}{suffix}"), name=f"{name}{suffix}")


def reward1_verdict(problem: Problem, candidate: Candidate) -> Verdict:
    """A reward-1 verdict record, as the warehouse would hand back for a validated pair."""
    return Verdict(candidate_key=candidate.key, problem_key=problem.key, status="correct", correct=True,
                   rule_ok=True, compiled=True, judge_config_hash="test")


def validated_pairs(count_per_op: int = 1) -> list[tuple[Problem, Candidate, Verdict]]:
    pairs = []
    for name, expr, tl_expr in ELEMENTWISE_OPS:
        for i in range(count_per_op):
            p = elementwise_problem(name, expr, n=1000 + 24 * i)
            c = Candidate(problem_key=p.key, code=elementwise_answer(name, tl_expr),
                          reasoning=f"{name} is elementwise: one program per block of 256 elements, masked at the edge.",
                          instruction=f"Implement the {name} module with a Triton kernel.", generator="replay")
            pairs.append((p, c, reward1_verdict(p, c)))
    return pairs


# --------------------------------------------------------------------------------------------
# Steering generation: the real GRPOTrainer, the real model's log-probs, chosen completions.


class SteerToTargets:
    """A LogitsProcessor that makes row i of a generate() call emit targets[i % len(targets)]
    token by token, then EOS. Used to build GRPO groups with known, different rewards."""

    def __init__(self, targets: list[list[int]], prompt_len: int, eos_id: int):
        self.targets, self.prompt_len, self.eos_id = targets, prompt_len, eos_id

    def __call__(self, input_ids, scores):
        import torch

        step = input_ids.shape[1] - self.prompt_len
        forced = torch.full_like(scores, float("-inf"))
        for row in range(scores.shape[0]):
            target = self.targets[row % len(self.targets)]
            forced[row, target[step] if step < len(target) else self.eos_id] = 0.0
        return forced


def steer_generation(model, tokenizer, completions: list[str]) -> None:
    """Make `model.generate` produce the given completions in rotation (row i gets
    completions[i % n]); the model itself still scores them (log-probs, loss)."""
    from transformers import LogitsProcessorList

    targets = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in completions]
    original = model.generate

    def generate(*args, **kwargs):
        input_ids = kwargs.get("input_ids", args[0] if args else None)
        processors = kwargs.pop("logits_processor", None) or LogitsProcessorList()
        processors.append(SteerToTargets(targets, input_ids.shape[1], tokenizer.eos_token_id))
        return original(*args, logits_processor=processors, **kwargs)

    model.generate = generate


# --------------------------------------------------------------------------------------------
# Reward overlap (tests/test_training_overlap.py): answers rotated across generation calls and
# a judge that reads verdicts off the text.

GOOD = format_completion("max with 0", elementwise_answer("relu", "tl.maximum(x, 0.0)"))
WRONG = [format_completion(f"copy, take {k}", elementwise_answer("relu", "x")) for k in range(3)]
ANSWERS = [GOOD, *WRONG]


def good_answer(text: str) -> bool:
    return "tl.maximum" in text


class TextJudge:
    """A BatchJudge: correct iff the kernel takes the max with 0, decided after `pause` seconds."""

    def __init__(self, pause: float):
        self.pause, self.calls = pause, []

    def validate_many(self, jobs):
        start = time.monotonic()
        time.sleep(self.pause)
        out = [Verdict(candidate_key=source_key(code), problem_key=source_key(ref), status="correct" if ok else "incorrect",
                       correct=ok, rule_ok=True, compiled=True, judge_config_hash="text")
               for ref, code in jobs for ok in [good_answer(code)]]
        self.calls.append((start, time.monotonic()))
        return out


def rotate_and_record(trainer, tok, log):
    """Generation call c emits ANSWERS rotated by c (row i: ANSWERS[(i + c) % 4]); records when
    each generation ran and what each update trained on."""
    from transformers import LogitsProcessorList

    targets = [tok(t, add_special_tokens=False)["input_ids"] for t in ANSWERS]
    model = trainer.model
    original_generate = model.generate

    def generate(*args, **kwargs):
        c = len(log["generations"])
        input_ids = kwargs.get("input_ids", args[0] if args else None)
        processors = kwargs.pop("logits_processor", None) or LogitsProcessorList()
        processors.append(SteerToTargets(targets[c % 4:] + targets[:c % 4], input_ids.shape[1], tok.eos_token_id))
        start = time.monotonic()
        try:
            return original_generate(*args, logits_processor=processors, **kwargs)
        finally:
            log["generations"].append((start, time.monotonic()))

    model.generate = generate
    original_loss = trainer._compute_loss

    def compute_loss(model, inputs):
        texts = tok.batch_decode(inputs["completion_ids"] * inputs["completion_mask"], skip_special_tokens=True)
        log["trained"].append({"texts": texts, "advantages": inputs["advantages"].tolist(),
                               "old_logps": "old_per_token_logps" in inputs})
        return original_loss(model, inputs)

    trainer._compute_loss = compute_loss
