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

from autotriton.training.config import TrainingConfig
from autotriton.training.data import build_rl_rows
from autotriton.training.grpo import run_grpo
from autotriton.training.models import load_model, make_tiny_model
from autotriton.validation import JudgePool, ValidationConfig
from training_helpers import TextJudge, elementwise_problem, good_answer, rotate_and_record


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path = make_tiny_model(tmp_path_factory.mktemp("tiny"))
    return path, load_model(str(path), device="cpu")[1]


def train(tiny, tmp_path, overlap: bool, pause: float, judge=None, steps: int = 3, grpo_trl=None, problems: int = 1,
          num_iterations: int = 1):
    path, tok = tiny
    model, _ = load_model(str(path), device="cpu")
    rows = build_rl_rows([elementwise_problem("relu", "torch.relu(x)", n=300 + 10 * i, suffix=f"_{i}" if i else "")
                          for i in range(problems)], val_fraction=0.0)
    cfg = TrainingConfig(model=str(path), output_dir=str(tmp_path / ("on" if overlap else "off")), device="cpu",
                         grpo_max_steps=steps, num_generations=4, per_device_train_batch_size=4, max_completion_length=400,
                         grpo_learning_rate=1e-3, save_steps=100, reward_overlap=overlap, grpo_trl=grpo_trl or {},
                         num_iterations=num_iterations)
    judge, log = judge or TextJudge(pause), {"generations": [], "trained": []}
    result = run_grpo(cfg, rows, judge, model=model, tokenizer=tok, progress=False,
                      trainer_hook=lambda trainer: rotate_and_record(trainer, tok, log))
    return result, judge, log


def test_overlapped_rewards_belong_to_the_batch_they_train_and_match_trl(tiny, tmp_path):
    plain, _, plain_log = train(tiny, tmp_path, overlap=False, pause=0.0)
    result, judge, log = train(tiny, tmp_path, overlap=True, pause=1.5)
    assert len(log["trained"]) == 3 and len(plain_log["trained"]) == 3
    # trl's own advantages for one correct answer in a group of four (no overlap) ...
    trl_good = {round(a, 5) for b in plain_log["trained"] for t, a in zip(b["texts"], b["advantages"]) if good_answer(t)}
    trl_wrong = {round(a, 5) for b in plain_log["trained"] for t, a in zip(b["texts"], b["advantages"]) if not good_answer(t)}
    assert len(trl_good) == 1 and len(trl_wrong) == 1
    good_adv, wrong_adv = trl_good.pop(), trl_wrong.pop()
    assert good_adv > 0 > wrong_adv
    # ... are exactly what every overlapped batch carries, on its own rows.
    for batch in log["trained"]:
        assert batch["old_logps"]  # the sampling policy's log-probs travel with the batch
        for text, adv in zip(batch["texts"], batch["advantages"]):
            assert adv == pytest.approx(good_adv if good_answer(text) else wrong_adv, abs=1e-5)
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


def test_overlap_with_several_updates_per_generation(tiny, tmp_path):
    """`training.grpo_trl = {steps_per_generation = 2}`: one generate() call makes two updates'
    completions (the way to more updates a minute where decoding dominates a step, RESULTS.md
    nineteenth run); with overlap each generation batch is judged while the next is generated,
    and every trained row still carries its own group's advantage."""
    result, judge, log = train(tiny, tmp_path, overlap=True, pause=0.5, steps=4, grpo_trl={"steps_per_generation": 2},
                                problems=2)
    assert len(log["trained"]) == 4 and all(len(b["texts"]) == 4 for b in log["trained"])
    # two generation batches of 8 trained (4 updates), one more filled the pipeline
    assert len(log["generations"]) == 3 and len(judge.calls) == 3
    good, wrong = 0.75 / (0.5 + 1e-4), -0.25 / (0.5 + 1e-4)
    for batch in log["trained"]:
        assert batch["old_logps"]
        for text, adv in zip(batch["texts"], batch["advantages"]):
            assert adv == pytest.approx(good if good_answer(text) else wrong, abs=1e-4)
    assert result.metrics["steps"] == 4


def test_overlap_with_two_updates_per_generation(tiny, tmp_path):
    """`training.num_iterations = 2` (the gpu profile's): each judged batch is trained twice, the
    second time against the log-probs of the policy that sampled it (trl's clipped ratio), so four
    updates need two generation batches (and one more to fill the pipeline), and both updates on a
    batch carry its own rows' advantages."""
    result, judge, log = train(tiny, tmp_path, overlap=True, pause=0.5, steps=4, num_iterations=2)
    assert len(log["trained"]) == 4 and len(log["generations"]) == 3 and len(judge.calls) == 3
    first, second = [b["texts"] for b in log["trained"][:2]], [b["texts"] for b in log["trained"][2:]]
    assert first[0] == first[1] and second[0] == second[1] and first[0] != second[0]
    good, wrong = 0.75 / (0.5 + 1e-4), -0.25 / (0.5 + 1e-4)
    for batch in log["trained"]:
        assert batch["old_logps"]
        for text, adv in zip(batch["texts"], batch["advantages"]):
            assert adv == pytest.approx(good if good_answer(text) else wrong, abs=1e-4)
    assert result.metrics["steps"] == 4 and result.metrics["judge_calls"] == 3


class TimedJudge:
    """The real judge pool, with the wall-clock span of each batch noted (to see the overlap)."""

    def __init__(self, pool: JudgePool):
        self.pool, self.calls = pool, []

    def validate_many(self, jobs):
        start = time.monotonic()
        try:
            return self.pool.validate_many(jobs)
        finally:
            self.calls.append((start, time.monotonic()))


def test_overlap_with_the_real_judge_pool(tiny, tmp_path):
    """The same pipeline with the real judge (CPU interpreter, candidates in their own processes)
    in place of the text judge: its verdicts (one correct relu kernel in every group of four, the
    others copy kernels) reach each batch's own rows, one step late, while the next batch is generated."""
    with JudgePool(ValidationConfig(device="cpu", trials=2, workers=2, timeout_s=60)) as pool:
        judge = TimedJudge(pool)
        result, _, log = train(tiny, tmp_path, overlap=True, pause=0.0, judge=judge)
    assert len(log["trained"]) == 3 and len(judge.calls) == 4 and len(log["generations"]) == 4
    # trl's group advantage for one reward-1 answer of four: (r - mean) / (unbiased std 0.5 + 1e-4).
    for batch in log["trained"]:
        assert batch["old_logps"]
        assert sum(good_answer(t) for t in batch["texts"]) == len(batch["texts"]) // 4
        for text, adv in zip(batch["texts"], batch["advantages"]):
            assert adv == pytest.approx(0.75 / (0.5 + 1e-4) if good_answer(text) else -0.25 / (0.5 + 1e-4), abs=1e-4)
    # (That the judge works while the next batch generates is asserted with the paced judge above:
    # with this one, a loaded 2-core machine can delay the judging thread past a short generation.)
    assert all(j1 > j0 for j0, j1 in judge.calls)
    steps = [e for e in result.log_history if "reward" in e]
    assert len(steps) == 3 and all(e["reward"] == pytest.approx(0.25) for e in steps)
    assert all(e["judge/correct"] == pytest.approx(0.25) for e in steps)


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


def test_overlap_with_two_processes_keeps_each_rank_aligned(tiny, tmp_path):
    """Two CPU processes (torchrun, as `accelerate launch` starts them; accelerate on gloo):
    rewards are gathered across ranks and the advantages sliced back per rank, one step late;
    every rank must still train its own batch's advantages (one correct answer per group of
    four: +0.75 / -0.25 over the group's std 0.5)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    path, _ = tiny
    out = tmp_path / "ddp"
    out.mkdir()
    env = dict(os.environ, OMP_NUM_THREADS="1", ACCELERATE_USE_CPU="true")
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--standalone",
                           str(Path(__file__).parent / "overlap_ddp_worker.py"), str(path), str(out)],
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for rank in (0, 1):
        record = json.loads((out / f"rank{rank}.json").read_text())
        assert record["processes"] == 2
        assert len(record["trained"]) == 3 and record["judge_calls"] == 4 and record["generations"] == 4
        for batch in record["trained"]:
            assert batch["old_logps"]
            for text, adv in zip(batch["texts"], batch["advantages"]):
                assert adv == pytest.approx(0.75 / (0.5 + 1e-4) if good_answer(text) else -0.25 / (0.5 + 1e-4), abs=1e-4)
    steps = json.loads((out / "rank0.json").read_text())["steps"]
    assert len(steps) == 3 and all(e["reward"] == pytest.approx(0.25) for e in steps)
