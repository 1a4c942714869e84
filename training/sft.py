"""Supervised fine-tuning on validated pairs with trl's SFTTrainer.

Rows are conversational prompt/completion pairs (`build_sft_rows`): trl renders them with the
model's chat template and computes the loss on the completion tokens only. Packing (trl's BFD
packing, which is padding-free) is used only where the attention kernel keeps packed examples
apart (flash attention): with sdpa/eager a packed row would attend across examples.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from autotriton.records import Checkpoint
from autotriton.training.config import TrainingConfig
from autotriton.training.models import lora_config, load_model, resolve_device
from autotriton.training.monitor import SFT_CURVES, RichProgress, StepTimer, TimeBudget, plot_curves
from autotriton.training.trl_args import check_trl_args, write_model_card


# transformers 5.2x renames gradient_checkpointing to activation_checkpointing; trl's configs and
# transformers 5.17 (the GPU image) still use the old name, so it stays, without the noise.
warnings.filterwarnings("ignore", message=r".*(is_)?gradient_checkpointing.* is deprecated", category=FutureWarning)


@dataclass
class TrainResult:
    """What a trainer run produced: the checkpoint record (for the warehouse) and the details."""

    checkpoint: Checkpoint
    output_dir: str
    curves_png: str | None
    steps: int
    metrics: dict[str, Any]
    log_history: list[dict[str, Any]] = field(default_factory=list)
    resumed_from: str | None = None


def to_splits(data: Any) -> tuple[Any, Any]:
    """(train, validation or None) datasets from a datasets.Dataset / DatasetDict, a list of rows,
    a Hugging Face dataset folder (an export: one file per split) or a Parquet file; rows are
    split on their `split` column when they have one."""
    import datasets

    if isinstance(data, (str, Path)):
        path = Path(data)
        if path.is_dir():
            data = datasets.load_dataset(str(path))  # the folder is a dataset: its card names the splits
        elif path.is_file():
            data = datasets.Dataset.from_parquet(str(path))
        else:
            raise FileNotFoundError(f"{path}: no such export; run `autotriton db export` or pass a dataset folder or Parquet file.")
    elif isinstance(data, list):
        if not data:
            raise ValueError("the training set is empty: the export holds no rows (are there validated pairs in the warehouse?)")
        data = datasets.Dataset.from_list(data)
    if isinstance(data, datasets.DatasetDict):
        return data["train"], data.get("validation")
    if "split" in data.column_names:
        splits = data["split"]
        train = data.select([i for i, s in enumerate(splits) if s == "train"])
        val = data.select([i for i, s in enumerate(splits) if s == "validation"])
        return train, (val if len(val) else None)
    return data, None


def last_checkpoint(output_dir: str | Path) -> str | None:
    """The newest `checkpoint-N` folder under output_dir, or None."""
    from transformers.trainer_utils import get_last_checkpoint

    output_dir = Path(output_dir)
    return get_last_checkpoint(str(output_dir)) if output_dir.is_dir() else None


def precision_args(device: str, cfg: TrainingConfig) -> dict[str, Any]:
    """bf16 / fp32 and gradient checkpointing set explicitly: trl's configs default to bf16 and
    gradient checkpointing, which is wrong (and slow) on the CPU."""
    import torch

    cuda = device == "cuda"
    return {
        "bf16": bool(cuda and torch.cuda.is_bf16_supported()),
        "fp16": False,
        "use_cpu": not cuda,
        "gradient_checkpointing": cuda if cfg.gradient_checkpointing is None else cfg.gradient_checkpointing,
        "disable_tqdm": True,
    }


def quiet_stdout(trainer) -> None:
    """Drop transformers' PrinterCallback (it prints every log dict on stdout, which belongs to
    --json output); the rich progress bar on stderr shows the run instead."""
    from transformers.trainer_callback import PrinterCallback

    trainer.remove_callback(PrinterCallback)


def save_final(trainer, tokenizer, path: Path) -> None:
    """Save the trained model where generation can load it as a plain model, from rank 0 only:
    LoRA adapters are merged into the base weights first (the adapters alone stay in the
    checkpoints); full models go through trainer.save_model, which gathers ZeRO-3 shards."""
    model = trainer.model
    if hasattr(model, "merge_and_unload"):
        if trainer.is_world_process_zero():
            model.merge_and_unload().save_pretrained(str(path))
    else:
        trainer.save_model(str(path))
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(path))
    trainer.accelerator.wait_for_everyone()


def use_packing(cfg: TrainingConfig, model) -> bool:
    if cfg.packing == "on":
        return True
    if cfg.packing == "off":
        return False
    impl = getattr(model.config, "_attn_implementation", "") or ""
    return impl.startswith("flash_attention")


def trainer_config_summary(cfg: TrainingConfig, keys: tuple[str, ...]) -> dict[str, Any]:
    dumped = cfg.model_dump(mode="json")
    return {k: dumped[k] for k in keys}


SFT_KEYS = ("model", "lora", "max_length", "sft_overlong", "packing", "sft_epochs", "sft_max_steps", "sft_learning_rate", "sft_time_budget_s", "per_device_train_batch_size",
            "gradient_accumulation_steps", "seed", "sft_trl")


def build_sft_config(cfg: TrainingConfig, output_dir: Path, device: str, packing: bool = False):
    """trl's SFTConfig from the training config; `training.sft_trl` (trl's own argument names) wins."""
    from trl import SFTConfig

    from autotriton.training.trl_args import extra_trl_args, tracking_args

    kwargs: dict[str, Any] = dict(
        output_dir=str(output_dir),
        max_length=cfg.max_length,
        packing=packing,
        completion_only_loss=True,
        num_train_epochs=cfg.sft_epochs,
        max_steps=cfg.sft_max_steps,
        learning_rate=cfg.sft_learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=0,
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        per_device_eval_batch_size=cfg.per_device_train_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        logging_steps=cfg.logging_steps,
        logging_first_step=True,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=cfg.save_total_limit,
        eval_strategy="no",
        seed=cfg.seed,
        dataset_num_proc=None,
        **precision_args(device, cfg),
        **tracking_args(cfg),
    )
    kwargs.update(extra_trl_args(cfg, "sft"))
    return SFTConfig(**kwargs)


def chat_tokens(tokenizer: Any, messages: Any, add_generation_prompt: bool = False) -> int:
    """Tokens of `messages` rendered with the tokenizer's chat template (a plain string: as is)."""
    if isinstance(messages, str):
        return len(tokenizer(messages)["input_ids"])
    ids = tokenizer.apply_chat_template(list(messages), tokenize=True, add_generation_prompt=add_generation_prompt)
    return len(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)


def drop_overlong(rows: Any, tokenizer: Any, max_length: int) -> tuple[Any, int]:
    """(rows that fit, how many did not): a conversational prompt/completion row fits when its
    rendering with the tokenizer's chat template (prompt and completion messages in one
    conversation) is at most `max_length` tokens."""
    def fits(row: dict[str, Any]) -> bool:
        return chat_tokens(tokenizer, list(row["prompt"]) + list(row["completion"])) <= max_length

    kept = rows.filter(fits)
    return kept, len(rows) - len(kept)


def run_sft(cfg: TrainingConfig, data: Any, *, export_key: str = "", output_dir: str | Path | None = None,
            resume: bool = False, model=None, tokenizer=None, console=None, progress: bool = True,
            on_status: Callable[[str], None] | None = None) -> TrainResult:
    """Fine-tune `cfg.model` on SFT rows with trl's SFTTrainer and save the final model.

    `data`: an export (Parquet path, datasets.Dataset/DatasetDict or rows) with conversational
    `prompt`/`completion` columns and optionally `split`. Checkpoints go to
    `<output_dir>/checkpoint-N` every `save_steps`; `resume=True` continues from the newest one
    (a fresh start when there is none). The final model and tokenizer are saved to
    `<output_dir>/final`, the curves to `<output_dir>/curves.png`, and the returned Checkpoint
    record names the export it was trained on (`export_key`).
    """
    from trl import SFTTrainer

    output_dir = Path(output_dir or Path(cfg.output_dir) / "sft")
    check_trl_args(cfg, ("sft",))  # a misspelt trl argument fails before the model loads
    device = resolve_device(cfg.device)
    train, val = to_splits(data)
    if len(train) == 0:
        raise ValueError("the SFT export has no training rows (every row is in the validation split); lower "
                         "training.val_fraction or add validated pairs.")
    keep = [c for c in ("prompt", "completion") if c in train.column_names]
    if keep != ["prompt", "completion"]:
        raise ValueError(f"the SFT export lacks columns {sorted({'prompt', 'completion'} - set(keep))}: build it with "
                         "build_sft_rows (autotriton db export sft).")
    train = train.select_columns(keep)
    val = val.select_columns(keep) if val is not None else None
    if model is None:
        model, tokenizer = load_model(cfg.model, device=device, gguf_file=cfg.gguf_file, cache_dir=cfg.model_cache_dir,
                                      attn_implementation=cfg.attn_implementation, progress=on_status)
    dropped = 0
    if cfg.sft_overlong == "drop":
        train, dropped = drop_overlong(train, tokenizer, cfg.max_length)
        val, _ = drop_overlong(val, tokenizer, cfg.max_length) if val is not None else (None, 0)
        if len(train) == 0:
            raise ValueError(f"every SFT training row is longer than training.max_length={cfg.max_length} tokens "
                             f"({dropped} dropped): raise training.max_length, or set training.sft_overlong=truncate.")
        if dropped and on_status:
            on_status(f"SFT: left out {dropped} training row(s) longer than training.max_length={cfg.max_length} tokens")
    packing = use_packing(cfg, model)
    args = build_sft_config(cfg, output_dir, device, packing)
    timer, budget = StepTimer(), TimeBudget(cfg.sft_time_budget_s)
    trainer = SFTTrainer(model=model, args=args, train_dataset=train, eval_dataset=val, processing_class=tokenizer,
                         peft_config=lora_config(cfg), callbacks=[RichProgress("SFT", console, progress), timer, budget])
    quiet_stdout(trainer)
    resumed_from = last_checkpoint(output_dir) if resume else None
    result = trainer.train(resume_from_checkpoint=resumed_from)
    save_final(trainer, tokenizer, output_dir / "final")
    write_model_card(trainer, cfg.model, output_dir / "final", "SFT")
    trainer.save_state()
    metrics: dict[str, Any] = {"train_loss": result.training_loss, "steps": trainer.state.global_step,
                               "train_rows": len(train), "val_rows": 0 if val is None else len(val), "packing": packing,
                               "overlong_dropped": dropped, "stopped_by_time_budget": budget.stopped}
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    if losses:
        metrics["first_loss"], metrics["final_loss"] = losses[0], losses[-1]
    if val is not None and len(val):
        metrics.update({k: v for k, v in trainer.evaluate().items() if k in ("eval_loss", "eval_mean_token_accuracy")})
    tokens = trainer.state.num_input_tokens_seen or 0
    if timer.step_times:
        metrics["mean_step_s"] = sum(timer.step_times) / len(timer.step_times)
        metrics["steady_step_s"] = timer.steady_step_s()
    if tokens:
        metrics["tokens_seen"] = tokens
    curves = None
    if trainer.is_world_process_zero():
        curves = plot_curves(trainer.state.log_history, output_dir / "curves.png", SFT_CURVES, title=f"SFT {cfg.model}")
        (output_dir / "metrics.json").write_text(json.dumps(metrics, indent=2, default=str))
    checkpoint = Checkpoint(base_model=cfg.model, export_key=export_key, trainer="sft",
                            trainer_config=trainer_config_summary(cfg, SFT_KEYS), metrics=metrics,
                            path=str((output_dir / "final").resolve()))
    return TrainResult(checkpoint, str(output_dir.resolve()), str(Path(curves).resolve()) if curves else None, trainer.state.global_step, metrics,
                       list(trainer.state.log_history), resumed_from)
