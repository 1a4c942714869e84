"""GRPO with trl's GRPOTrainer and the real judge (Triton interpreter) as the reward.

The tiny model's generation is steered (a LogitsProcessor) so that each group holds a correct
and an incorrect Triton answer to the same prompt: the rewards then come from the real judge
and the group has non-zero reward variance, so the update is a real policy-gradient step.
"""

from __future__ import annotations

import pytest

from autotriton.prompting import format_completion
from autotriton.records import Verdict
from autotriton.training.config import TrainingConfig
from autotriton.training.data import build_rl_rows
from autotriton.training.grpo import run_grpo
from autotriton.training.models import load_model, make_tiny_model
from autotriton.training.rewards import JudgeRewards
from training_helpers import elementwise_answer, elementwise_problem, steer_generation

RULE_BREAKER = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
'''


@pytest.fixture(scope="module")
def judge():
    from autotriton.validation import JudgePool, ValidationConfig

    with JudgePool(ValidationConfig(device="cpu", trials=2, workers=2, timeout_s=60)) as pool:
        yield pool


def test_grpo_steps_take_rewards_from_the_real_judge(judge, tmp_path):
    tiny = make_tiny_model(tmp_path / "tiny")
    model, tok = load_model(str(tiny), device="cpu")
    problem = elementwise_problem("relu", "torch.relu(x)", n=300)
    rows = build_rl_rows([problem], val_fraction=0.0)
    good = format_completion("ReLU is elementwise: max(x, 0) per block.", elementwise_answer("relu", "tl.maximum(x, 0.0)"))
    wrong = format_completion("Copy the input.", elementwise_answer("relu", "x"))  # real Triton, wrong values
    cfg = TrainingConfig(model=str(tiny), output_dir=str(tmp_path / "out"), device="cpu", grpo_max_steps=2,
                         num_generations=4, per_device_train_batch_size=4, max_completion_length=400, grpo_learning_rate=1e-3,
                         save_steps=100)
    result = run_grpo(cfg, rows, judge, export_key="rl-export", model=model, tokenizer=tok, progress=False,
                      trainer_hook=lambda trainer: steer_generation(trainer.model, tok, [good, wrong]))
    steps = [e for e in result.log_history if "reward" in e]
    assert len(steps) == 2
    for entry in steps:
        assert entry["reward"] == pytest.approx(0.5)  # 2 correct, 2 incorrect in every group
        assert entry["reward_std"] > 0.4 and entry["frac_reward_zero_std"] == 0.0
        assert entry["judge/correct"] == pytest.approx(0.5) and entry["judge/compiled"] == pytest.approx(1.0)
        assert entry["judge/rule_violation"] == 0.0 and entry["judge/hack"] == 0.0
        assert entry["rewards/rule_reward/mean"] == 1.0
        assert entry["completions/mean_length"] > 50
        assert entry["time/reward_s"] > 0 and entry["time/generation_s"] > 0
        assert abs(entry["grad_norm"]) > 0  # non-zero advantages made a real update
    ck = result.checkpoint
    assert ck.trainer == "grpo" and ck.export_key == "rl-export" and result.metrics["judge_calls"] == 2
    assert result.metrics["stopped_by_time_budget"] is False and result.metrics["long_prompts_dropped"] == 0
    assert result.curves_png and (tmp_path / "out" / "grpo" / "final" / "config.json").is_file()


def test_grpo_leaves_out_long_prompts_and_ends_within_its_time_budget(judge, tmp_path):
    """training.max_prompt_length leaves out prompts a small model cannot answer (counted), and
    training.grpo_time_budget_s ends the run after the step that used the budget up, with the
    final model saved as after a full run."""
    from autotriton.training.grpo import drop_long_prompts

    tiny = make_tiny_model(tmp_path / "tiny")
    model, tok = load_model(str(tiny), device="cpu")
    short = elementwise_problem("relu", "torch.relu(x)", n=300)
    long = elementwise_problem("relu", "torch.relu(x)", n=300, suffix="\n# " + "padding words " * 200)
    rows = build_rl_rows([short], val_fraction=0.0) + build_rl_rows([long], val_fraction=0.0)  # one near-duplicate cluster
    import datasets

    lengths = sorted(len(tok.apply_chat_template(list(r["prompt"]), tokenize=True, add_generation_prompt=True)["input_ids"])
                     for r in rows)
    kept, dropped = drop_long_prompts(datasets.Dataset.from_list(rows), tok, lengths[0])
    assert dropped == 1 and [r["problem_key"] for r in kept] == [short.key]
    assert drop_long_prompts(datasets.Dataset.from_list(rows), tok, 0)[1] == 0
    good = format_completion("ReLU is elementwise.", elementwise_answer("relu", "tl.maximum(x, 0.0)"))
    wrong = format_completion("Copy the input.", elementwise_answer("relu", "x"))
    cfg = TrainingConfig(model=str(tiny), output_dir=str(tmp_path / "out"), device="cpu", grpo_max_steps=5,
                         num_generations=2, per_device_train_batch_size=2, max_completion_length=400,
                         save_steps=100, max_prompt_length=lengths[0], grpo_time_budget_s=0.001)
    result = run_grpo(cfg, rows, judge, model=model, tokenizer=tok, progress=False,
                      trainer_hook=lambda trainer: steer_generation(trainer.model, tok, [good, wrong]))
    assert result.steps == 1 and result.metrics["stopped_by_time_budget"] is True
    assert result.metrics["long_prompts_dropped"] == 1 and result.metrics["prompts"] == 1
    assert (tmp_path / "out" / "grpo" / "final" / "config.json").is_file()
    with pytest.raises(ValueError, match="longer than training.max_prompt_length"):
        run_grpo(cfg.model_copy(update={"max_prompt_length": 5}), rows, judge, model=model, tokenizer=tok, progress=False)


def test_reward_functions_judge_a_batch_once_and_zero_rule_breakers(judge):
    problem = elementwise_problem("relu", "torch.relu(x)", n=300)
    good = format_completion("max with 0", elementwise_answer("relu", "tl.maximum(x, 0.0)"))
    hack = format_completion("just call torch", RULE_BREAKER)
    batch = [[{"role": "assistant", "content": t}] for t in (good, hack, "no code at all", good)]
    refs = [problem.reference_source] * 4

    class CountingJudge:
        def __init__(self, inner):
            self.inner, self.jobs = inner, []

        def validate_many(self, jobs):
            self.jobs.append(list(jobs))
            return self.inner.validate_many(jobs)

    counting = CountingJudge(judge)
    rewards = JudgeRewards(counting)
    logged: dict[str, float] = {}
    funcs, weights = rewards.reward_funcs()
    results = [f(prompts=None, completions=batch, reference=refs, log_metric=logged.__setitem__) for f in funcs]
    assert len(counting.jobs) == 1 and len(counting.jobs[0]) == 2  # one call; duplicates and unparsable skipped
    combined, exec_r, rule_r, format_r = results
    # the torch-only answer breaks the rules: 0. The judge's dispatch guard makes PyTorch compute
    # inside ModelNew.forward fail (validation/dispatch_guard.py), so it does not pass the tests either
    assert combined == [1.0, 0.0, 0.0, 1.0]
    assert exec_r == [1.0, 0.0, 0.0, 1.0] and rule_r == [1.0, 0.0, 0.0, 1.0]
    assert weights == [1.0, 0.0, 0.0, 0.0]  # the format reward is logged, not trained on, unless asked
    assert format_r == [1.0, 1.0, 0.0, 1.0]  # a complete ModelNew block, whatever the judge says of it
    assert JudgeRewards(counting, format_weight=0.2).reward_funcs()[1] == [1.0, 0.0, 0.0, 0.2]
    assert logged["judge/no_code"] == 0.25 and logged["judge/correct"] == 0.5 and logged["judge/hack"] == 0.0
    assert rewards.verdicts(batch, refs)[1].status == "rule_violation"
    assert isinstance(rewards.verdicts(batch, refs)[0], Verdict)
    assert len(counting.jobs) == 1  # still cached for this batch


def test_the_reward_summary_says_what_the_run_learned_step_one_to_last():
    from autotriton.training.grpo import reward_summary

    history = [{"loss": 0.1},
               {"reward": 0.05, "reward_std": 0.1, "rewards/combined_reward/mean": 0.0, "rewards/format_reward/mean": 0.25},
               {"reward": 0.2, "reward_std": 0.3, "rewards/combined_reward/mean": 0.1, "rewards/format_reward/mean": 0.5}]
    s = reward_summary(history)
    assert (s["first_reward"], s["final_reward"], s["max_reward_std"]) == (0.05, 0.2, 0.3)
    assert (s["first_format_reward"], s["final_format_reward"]) == (0.25, 0.5)
    assert (s["first_combined_reward"], s["final_combined_reward"]) == (0.0, 0.1)
    assert reward_summary([{"loss": 1.0}]) == {}


def test_the_format_reward_is_refused_below_zero():
    with pytest.raises(ValueError, match="format_reward"):
        JudgeRewards(None, format_weight=-0.1)  # type: ignore[arg-type]
