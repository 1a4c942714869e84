"""One rank of the 2-process reward-overlap test (tests/test_training_overlap.py), run under
`torch.distributed.run --nproc_per_node 2` (what `accelerate launch` runs for several processes) with
ACCELERATE_USE_CPU=true, so accelerate uses gloo: GRPO with reward_overlap on the tiny model, answers
rotated per generation call, the text judge; writes what this rank trained on to
OUT/rank<k>.json. Not a test module itself (no test_ prefix)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from autotriton.training.config import TrainingConfig  # noqa: E402
from autotriton.training.data import build_rl_rows  # noqa: E402
from autotriton.training.grpo import run_grpo  # noqa: E402
from autotriton.training.models import load_model  # noqa: E402
from training_helpers import TextJudge, elementwise_problem, rotate_and_record  # noqa: E402


def main(tiny: str, out: str) -> None:
    rank = int(os.environ.get("RANK", "0"))
    model, tok = load_model(tiny, device="cpu")
    problems = [elementwise_problem("relu", "torch.relu(x)", n=300 + k) for k in range(2)]
    rows = build_rl_rows(problems, val_fraction=0.0)
    cfg = TrainingConfig(model=tiny, output_dir=str(Path(out) / "run"), device="cpu", grpo_max_steps=3,
                         num_generations=4, per_device_train_batch_size=4, max_completion_length=400, grpo_learning_rate=1e-3,
                         save_steps=100, reward_overlap=True)
    judge, log = TextJudge(0.5), {"generations": [], "trained": []}

    def hook(trainer):
        log["processes"] = trainer.accelerator.num_processes
        rotate_and_record(trainer, tok, log)

    result = run_grpo(cfg, rows, judge, model=model, tokenizer=tok, progress=False, trainer_hook=hook)
    steps = [e for e in result.log_history if "reward" in e]
    Path(out, f"rank{rank}.json").write_text(json.dumps({"trained": log["trained"], "judge_calls": len(judge.calls),
                                                         "generations": len(log["generations"]), "steps": steps,
                                                         "processes": log["processes"]}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
