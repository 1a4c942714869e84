"""GRPO with the judge overlapped with generation (`training.reward_overlap`, training/overlap.py).

The tiny model's generation is steered to a known rotation of answers (one correct of four in
every group, at a different row in every batch), and the judge reads each verdict off the
answer's text after a pause. So each trained batch must carry the advantages of ITS OWN
answers (a batch whose rewards came from another batch would have the wrong rows positive),
equal to what trl computes without overlap, with the log-probs of the policy that sampled it;
and the judge must have worked while the next batch was being generated.
"""

from __future__ import annotations

import time

import pytest

from autotriton.hashing import source_key
from autotriton.prompting import format_completion
from autotriton.records import Verdict
from autotriton.training.config import TrainingConfig
from autotriton.training.data import build_rl_rows
from autotriton.training.grpo import run_grpo
from autotriton.training.models import load_model, make_tiny_model
from training_helpers import SteerToTargets, elementwise_answer, elementwise_problem

GOOD = format_completion("max with 0", elementwise_answer("relu", "tl.maximum(x, 0.0)"))
WRONG = [format_completion(f"copy, take {k}", elementwise_answer("relu", "x")) for k in range(3)]
ANSWERS = [GOOD, *WRONG]


class TextJudge:
    """A BatchJudge: correct iff the kernel takes the max with 0, decided after `pause` seconds."""

    def __init__(self, pause: float):
        self.pause, self.calls = pause, []

    def validate_many(self, jobs):
        start = time.monotonic()
        time.sleep(self.pause)
        out = [Verdict(candidate_key=source_key(code), problem_key=source_key(ref), status="correct" if ok else "incorrect",
                       correct=ok, rule_ok=True, compiled=True, judge_config_hash="text")
               for ref, code in jobs for ok in ["tl.maximum" in code]]
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


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = make_tiny_model(tmp_path_factory.mktemp("tiny"))
    return path, load_model(str(path), device="cpu")[1]


def train(tiny, tmp_path, overlap: bool, pause: float):
    path, tok = tiny
    model, _ = load_model(str(path), device="cpu")
    rows = build_rl_rows([elementwise_problem("relu", "torch.relu(x)", n=300)], val_fraction=0.0)
    cfg = TrainingConfig(model=str(path), output_dir=str(tmp_path / ("on" if overlap else "off")), device="cpu",
                         grpo_max_steps=3, num_generations=4, batch_size=4, max_completion_length=400,
                         grpo_learning_rate=1e-3, save_steps=100, reward_overlap=overlap)
    judge, log = TextJudge(pause), {"generations": [], "trained": []}
    result = run_grpo(cfg, rows, judge, model=model, tokenizer=tok, progress=False,
                      trainer_hook=lambda trainer: rotate_and_record(trainer, tok, log))
    return result, judge, log


def good_row(text: str) -> bool:
    return "tl.maximum" in text


def test_overlapped_rewards_belong_to_the_batch_they_train_and_match_trl(tiny, tmp_path):
    plain, _, plain_log = train(tiny, tmp_path, overlap=False, pause=0.0)
    result, judge, log = train(tiny, tmp_path, overlap=True, pause=1.5)
    assert len(log["trained"]) == 3 and len(plain_log["trained"]) == 3
    # trl's own advantages for one correct answer in a group of four (no overlap) ...
    trl_good = {round(a, 5) for b in plain_log["trained"] for t, a in zip(b["texts"], b["advantages"]) if good_row(t)}
    trl_wrong = {round(a, 5) for b in plain_log["trained"] for t, a in zip(b["texts"], b["advantages"]) if not good_row(t)}
    assert len(trl_good) == 1 and len(trl_wrong) == 1
    good_adv, wrong_adv = trl_good.pop(), trl_wrong.pop()
    assert good_adv > 0 > wrong_adv
    # ... are exactly what every overlapped batch carries, on its own rows.
    for batch in log["trained"]:
        assert batch["old_logps"]  # the sampling policy's log-probs travel with the batch
        for text, adv in zip(batch["texts"], batch["advantages"]):
            assert adv == pytest.approx(good_adv if good_row(text) else wrong_adv, abs=1e-5)
    # Every update trained a whole batch it had judged; one more batch filled the pipeline.
    assert len(judge.calls) == 4 and len(log["generations"]) == 4
    # The judge worked while the trainer generated the next batch.
    assert any(j0 < g1 and g0 < j1 for j0, j1 in judge.calls for g0, g1 in log["generations"])
    steps = [e for e in result.log_history if "reward" in e]
    assert len(steps) == 3
    for entry in steps:
        assert entry["reward"] == pytest.approx(0.25) and entry["judge/correct"] == pytest.approx(0.25)
        assert entry["time/reward_s"] >= 1.5 and "time/reward_wait_s" in entry
        assert entry["frac_reward_zero_std"] == 0.0
    assert result.metrics["judge_calls"] == 4


def test_overlap_refuses_reward_functions_it_cannot_run_in_the_background(tiny, tmp_path):
    from trl import GRPOConfig

    from autotriton.training.grpo import make_grpo_trainer_class

    path, tok = tiny
    model, _ = load_model(str(path), device="cpu")
    rows = build_rl_rows([elementwise_problem("relu", "torch.relu(x)", n=300)], val_fraction=0.0)

    async def async_reward(completions, **_):
        return [0.0] * len(completions)

    from datasets import Dataset

    args = GRPOConfig(output_dir=str(tmp_path / "x"), max_steps=1, per_device_train_batch_size=4, num_generations=4,
                      max_completion_length=8, use_cpu=True, bf16=False, gradient_checkpointing=False, report_to=[])
    trainer = make_grpo_trainer_class(reward_overlap=True)(
        model=model, reward_funcs=[async_reward], args=args, processing_class=tok,
        train_dataset=Dataset.from_list([{"prompt": r["prompt"]} for r in rows["train"]] if isinstance(rows, dict) else
                                        [{"prompt": r["prompt"]} for r in rows]))
    with pytest.raises(ValueError, match="reward_overlap works with plain synchronous reward functions"):
        trainer.train()
