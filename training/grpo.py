"""GRPO with trl's GRPOTrainer, the judge as the reward.

Each step: generate `num_generations` completions per prompt, judge the whole batch at once
through the judge's batch API (`JudgeRewards`), and update. The trainer is trl's own; the
subclass here only times generation and reward computation (logged as `time/generation_s`,
`time/reward_s`; the rest of a step is the update) so a run shows where its time goes.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

from autotriton.records import Checkpoint
from autotriton.training.config import TrainingConfig
from autotriton.training.models import lora_config, load_model, resolve_device
from autotriton.training.monitor import GRPO_CURVES, RichProgress, StepTimer, TimeBudget, plot_curves, step_breakdown
from autotriton.training.rewards import BatchJudge, JudgeRewards
from autotriton.training.trl_args import check_trl_args, write_model_card
from autotriton.training.sft import (
    TrainResult, chat_tokens, last_checkpoint, precision_args, quiet_stdout, save_final, to_splits, trainer_config_summary,
)

GRPO_KEYS = ("model", "lora", "grpo_max_steps", "grpo_learning_rate", "grpo_time_budget_s", "max_prompt_length", "num_generations", "max_completion_length",
             "temperature", "top_p", "beta", "loss_type", "num_iterations", "reward", "speedup_bonus", "speedup_cap",
             "use_vllm", "vllm_mode", "reward_overlap", "per_device_train_batch_size", "gradient_accumulation_steps", "seed", "grpo_trl")


def make_grpo_trainer_class(reward_overlap: bool = False):
    """GRPOTrainer plus timing of generation and reward (trl's own profiling only reaches
    wandb/mlflow/trackio, so it is not visible in log_history); with `reward_overlap`, the
    judge works on one batch while the next is generated (training/overlap.py)."""
    from trl import GRPOTrainer

    from autotriton.training.overlap import RewardOverlapMixin

    class TimedGRPOTrainer(RewardOverlapMixin, GRPOTrainer):
        def _generate(self, prompts):
            t0 = time.perf_counter()
            out = super()._generate(prompts)
            mode = "train" if self.model.training else "eval"
            self._metrics[mode]["time/generation_s"].append(time.perf_counter() - t0)
            return out

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            if getattr(self, "_overlap_deferring", False):  # judged in the background, timed there
                return super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            t0 = time.perf_counter()
            out = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            mode = "train" if self.model.training else "eval"
            self._metrics[mode]["time/reward_s"].append(time.perf_counter() - t0)
            return out

    TimedGRPOTrainer.reward_overlap = reward_overlap
    return TimedGRPOTrainer


def drop_long_prompts(rows: Any, tokenizer: Any, max_prompt_length: int) -> tuple[Any, int]:
    """(rows whose prompt fits, how many did not): a conversational prompt fits when its rendering
    with the tokenizer's chat template and the generation prompt is at most `max_prompt_length`
    tokens; 0 keeps every row."""
    if not max_prompt_length:
        return rows, 0

    def fits(row: dict[str, Any]) -> bool:
        return chat_tokens(tokenizer, row["prompt"], add_generation_prompt=True) <= max_prompt_length

    kept = rows.filter(fits)
    return kept, len(rows) - len(kept)


def grpo_batch_size(cfg: TrainingConfig) -> int:
    """Per-device completions per step: per_device_train_batch_size rounded up to a multiple of the group size."""
    g = cfg.num_generations
    return max(g, -(-cfg.per_device_train_batch_size // g) * g)


def build_grpo_config(cfg: TrainingConfig, output_dir: Path, device: str, **overrides: Any):
    """trl's GRPOConfig from the training config; `training.grpo_trl` (trl's own argument names)
    wins over the keys above it, and `overrides` (callers' own) win over both."""
    from trl import GRPOConfig

    from autotriton.training.trl_args import extra_trl_args, tracking_args

    kwargs: dict[str, Any] = dict(
        output_dir=str(output_dir),
        max_steps=cfg.grpo_max_steps,
        learning_rate=cfg.grpo_learning_rate,
        per_device_train_batch_size=grpo_batch_size(cfg),
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        num_generations=cfg.num_generations,
        max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        beta=cfg.beta,
        loss_type=cfg.loss_type,
        num_iterations=cfg.num_iterations,
        logging_steps=cfg.logging_steps,
        logging_first_step=True,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=cfg.save_total_limit,
        seed=cfg.seed,
        use_vllm=cfg.use_vllm,
        vllm_mode=cfg.vllm_mode,
        log_completions=False,
        **precision_args(device, cfg),
        **tracking_args(cfg),
    )
    kwargs.update(extra_trl_args(cfg, "grpo"))
    kwargs.update(overrides)
    return GRPOConfig(**kwargs)


def reward_summary(log_history: list[dict[str, Any]]) -> dict[str, Any]:
    """Final-step and whole-run reward statistics from trl's log history."""
    steps = [e for e in log_history if "reward" in e]
    out: dict[str, Any] = {}
    if not steps:
        return out
    last = steps[-1]
    for key in ("reward", "reward_std", "judge/correct", "judge/compiled", "judge/rule_violation", "judge/hack",
                "judge/no_code", "completions/mean_length", "time/generation_s", "time/reward_s", "time/reward_wait_s"):
        if key in last:
            out[f"final_{key.replace('/', '_')}"] = last[key]
    out["mean_reward"] = sum(e["reward"] for e in steps) / len(steps)
    out["first_reward"] = steps[0]["reward"]  # with final_reward: what the run learned, step 1 -> last
    for name in ("combined_reward", "exec_reward", "format_reward"):
        key = f"rewards/{name}/mean"
        if key in steps[0] and key in last:
            out[f"first_{name}"], out[f"final_{name}"] = steps[0][key], last[key]
    out["max_reward_std"] = max(e.get("reward_std", 0.0) for e in steps)
    return out


def run_grpo(cfg: TrainingConfig, data: Any, judge: BatchJudge, *, export_key: str = "", base_model: str | None = None,
             output_dir: str | Path | None = None, resume: bool = False, model=None, tokenizer=None, console=None,
             progress: bool = True, on_status: Callable[[str], None] | None = None,
             trainer_hook: Callable[[Any], None] | None = None, **grpo_overrides: Any) -> TrainResult:
    """Train `base_model` (default `cfg.model`, e.g. an SFT checkpoint) with GRPO on RL rows.

    `data`: an RL export (rows from `build_rl_rows`, a Parquet path or a datasets.Dataset) with
    `prompt` and `reference` columns; the train split is used. `judge`: the judge's batch API,
    normally a warm `autotriton.validation.JudgePool` (the caller owns its lifetime). Rewards
    and per-step judge shares are logged (see `JudgeRewards`); checkpoints every `save_steps`,
    `resume=True` continues from the newest; the final model goes to `<output_dir>/final` and
    the curves to `<output_dir>/curves.png`. `trainer_hook(trainer)` runs before training
    (benchmarks and tests use it to observe or steer generation); `grpo_overrides` go straight
    into GRPOConfig.
    """
    output_dir = Path(output_dir or Path(cfg.output_dir) / "grpo")
    check_trl_args(cfg, ("grpo",))  # a misspelt trl argument fails before the model loads
    device = resolve_device(cfg.device)
    train, _val = to_splits(data)
    missing = {"prompt", "reference"} - set(train.column_names)
    if missing:
        raise ValueError(f"the RL export lacks columns {sorted(missing)}: build it with build_rl_rows "
                         "(autotriton db export rl).")
    if len(train) == 0:
        raise ValueError("the RL export has no training prompts: are there runnable problems in the warehouse?")
    train = train.select_columns([c for c in ("prompt", "reference", "problem_key") if c in train.column_names])
    base = base_model or cfg.model
    if model is None:
        model, tokenizer = load_model(base, device=device, gguf_file=cfg.gguf_file, cache_dir=cfg.model_cache_dir,
                                      attn_implementation=cfg.attn_implementation, progress=on_status)
    train, long_prompts = drop_long_prompts(train, tokenizer, cfg.max_prompt_length)
    if len(train) == 0:
        raise ValueError(f"every RL prompt is longer than training.max_prompt_length={cfg.max_prompt_length} tokens "
                         f"({long_prompts} left out): raise it, or set it to 0 to keep every prompt.")
    if long_prompts and on_status:
        on_status(f"GRPO: left out {long_prompts} prompt(s) longer than training.max_prompt_length={cfg.max_prompt_length} tokens")
    rewards = JudgeRewards(judge, reward=cfg.reward, speedup_bonus=cfg.speedup_bonus, speedup_cap=cfg.speedup_cap,
                           require_sizes=cfg.require_sizes, format_weight=cfg.format_reward)
    funcs, weights = rewards.reward_funcs()
    args = build_grpo_config(cfg, output_dir, device, reward_weights=weights, **grpo_overrides)
    timer, budget = StepTimer(), TimeBudget(cfg.grpo_time_budget_s)
    trainer = make_grpo_trainer_class(cfg.reward_overlap)(
        model=model, reward_funcs=funcs, args=args, train_dataset=train, processing_class=tokenizer,
        peft_config=lora_config(cfg), callbacks=[RichProgress("GRPO", console, progress), timer, budget],
    )
    quiet_stdout(trainer)
    if trainer_hook is not None:
        trainer_hook(trainer)
    resumed_from = last_checkpoint(output_dir) if resume else None
    trainer.train(resume_from_checkpoint=resumed_from)
    save_final(trainer, tokenizer, output_dir / "final")
    write_model_card(trainer, base, output_dir / "final", "GRPO")
    trainer.save_state()
    history = list(trainer.state.log_history)
    metrics: dict[str, Any] = {"steps": trainer.state.global_step, "prompts": len(train), "long_prompts_dropped": long_prompts,
                               "stopped_by_time_budget": budget.stopped,
                               "judge_calls": rewards.judge_calls, **reward_summary(history)}
    if timer.step_times:
        metrics["mean_step_s"] = sum(timer.step_times) / len(timer.step_times)
        metrics["steady_step_s"] = timer.steady_step_s()
        # where a step's time goes (medians): generation, waiting for the judge, the update
        metrics["step_breakdown"] = step_breakdown(history, timer.step_times)
    if rewards.judge_seconds:
        metrics["mean_judge_s"] = sum(rewards.judge_seconds) / len(rewards.judge_seconds)
    curves = None
    if trainer.is_world_process_zero():
        curves = plot_curves(history, output_dir / "curves.png", GRPO_CURVES, title=f"GRPO {base}")
        (output_dir / "metrics.json").write_text(json.dumps(metrics, indent=2, default=str))
    checkpoint = Checkpoint(base_model=base, export_key=export_key, trainer="grpo",
                            trainer_config=trainer_config_summary(cfg, GRPO_KEYS), metrics=metrics,
                            path=str((output_dir / "final").resolve()))
    return TrainResult(checkpoint, str(output_dir.resolve()), str(Path(curves).resolve()) if curves else None, trainer.state.global_step, metrics,
                       history, resumed_from)
