"""The models training fine-tunes: LoRA settings from the training config, and the model loading
training shares with evaluation, which lives in core (autotriton/models.py) and is re-exported here
so `autotriton.training.models` keeps working.
"""

from __future__ import annotations

from typing import Any

from autotriton.models import (  # noqa: F401 (re-exported: training's public names)
    CHATML_TEMPLATE, SMOLLM2_GGUF, SMOLLM2_NAME, SMOLLM2_WHEEL, TINY_NAME, ModelLoadError, dtype_for, fetch_smollm2,
    load_model, make_tiny_model, model_cache_dir, prepare_tokenizer, resolve_device, resolve_model_path, write_gguf,
)


def lora_config(cfg) -> Any:
    """peft LoraConfig from the training config (None when LoRA is off)."""
    if not cfg.lora:
        return None
    from peft import LoraConfig

    targets: Any = cfg.lora_target_modules
    if targets == ["all-linear"]:
        targets = "all-linear"
    return LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                      target_modules=targets, task_type="CAUSAL_LM")
