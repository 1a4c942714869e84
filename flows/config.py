"""The pipeline config: every stage's config, composed, with the `demo` and `gpu` profiles.

Precedence (lowest first): defaults < profile < autotriton.toml or .yaml < AUTOTRITON_* env < CLI flags.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import BaseModel, Field

from autotriton.configuration import ConfigError, config_hash, load_layers
from autotriton.paths import DEMO_EVAL_SUITE, DEMO_MODULES, DEMO_TRAIN_SUITE
from autotriton.distillation.config import DistillConfig
from autotriton.environments import EnvironmentConfig
from autotriton.evaluation.config import EvaluationConfig
from autotriton.harvesting.config import HarvestConfig
from autotriton.training.config import TrainingConfig
from autotriton.validation.config import ValidationConfig
from autotriton.warehouse.config import WarehouseConfig

__all__ = ["PipelineConfig", "OrchestrationConfig", "PROFILES", "load_config", "ConfigError", "config_hash"]


class OrchestrationConfig(BaseModel):
    task_runner: Literal["threads", "dask"] = Field("threads", description="Prefect task runner: threads (one machine) or dask (prefect-dask)")
    dask_address: str = Field("", description="address of an existing Dask scheduler; empty = start a local cluster")
    max_workers: int = Field(2, ge=1, description="threads / local Dask workers")
    refresh_cron: str = Field("0 3 * * *", description="cron of the scheduled dataset refresh (autotriton serve)")
    timezone: str = Field("UTC")
    network_retries: int = Field(3, ge=0, description="retries of tasks that call GitHub or an LLM endpoint")
    network_timeout_s: float = Field(3600.0, gt=0, description="timeout of tasks that call GitHub or an LLM endpoint")
    verbs_as_flows: Literal["auto", "always", "never"] = Field(
        "auto", description="single-stage verbs that write rows (harvest, distill, sft, grpo, train, eval, db export/import/"
        "release/decontaminate) run as a Prefect flow run, so the UI shows them and their rows carry its id: auto = when a "
        "Prefect server is configured (PREFECT_API_URL, which `autotriton ui` sets while it runs); always = also on Prefect's "
        "ephemeral server when none is (6-13 s more per verb); never = plain")


class PipelineConfig(BaseModel):
    profile: str = Field("demo", description="demo (CPU only, tiny/small model) or gpu")
    warehouse: WarehouseConfig = Field(default_factory=WarehouseConfig)
    harvest: HarvestConfig = Field(default_factory=HarvestConfig)
    distill: DistillConfig = Field(default_factory=DistillConfig)
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    environments: EnvironmentConfig = Field(default_factory=EnvironmentConfig)  # harvested modules' own dependencies
    training: TrainingConfig = Field(default_factory=TrainingConfig)
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig)
    orchestration: OrchestrationConfig = Field(default_factory=OrchestrationConfig)

    @property
    def hash(self) -> str:
        return config_hash(self)


# Profiles are overlays on the defaults; a TOML file, env and CLI flags still win over them.
PROFILES: dict[str, dict[str, Any]] = {
    "demo": {
        # The embedded defaults: harvest the shipped example repository and demo problems,
        # distil them with the recorded teacher outputs, evaluate on the held-out demo suite.
        "harvest": {"local_paths": [str(DEMO_MODULES)], "dataset_paths": [str(DEMO_TRAIN_SUITE)]},
        "validation": {"device": "cpu", "trials": 3, "workers": 2, "time_kernels": False},
        "distill": {"teacher": "replay"},
        # Sized so `autotriton run` finishes in minutes on 2 CPU cores: it shows every stage
        # working, not a trained model (SmolLM2-135M steps take seconds each in fp32 on a CPU).
        # The token caps still hold kernels: with SmolLM2's tokenizer the demo's validated kernels
        # are 344-1737 tokens as a code block (prompt + kernel: 683-2127), so 512 completion tokens
        # hold 10 of 16 and SFT rows of 1024 keep 12 of 16 whole; at 128/192/768 every GRPO and
        # evaluation completion was cut off (reward std 0) and SFT taught cut-off kernels.
        # A high SFT learning rate, so 16 steps leave GRPO a model that sometimes writes a kernel.
        # A format reward (a complete ModelNew block: 0.2) gives 3 GRPO steps of a 135M model a
        # signal: with the judge's 0/1 alone every completion scored 0 (reward std 0, nothing learned).
        "training": {"model": "smollm2-135m", "sft_max_steps": 16, "sft_learning_rate": 1e-4, "grpo_max_steps": 3,
                     "format_reward": 0.2,
                     "num_generations": 4, "rl_prompts": 8, "max_completion_length": 512, "max_length": 1024, "per_device_train_batch_size": 2},
        "evaluation": {"suite": str(DEMO_EVAL_SUITE), "samples": 2, "temperature": 0.7, "top_p": 0.95, "max_problems": 8,
                       "max_new_tokens": 512},
    },
    "gpu": {
        # A problem whose trial is over max_trial_mb (512) but at most 8 GiB (16 GiB with the odd-size trial) is judged at
        # its own sizes with one trial instead of shrunk: static candidates (sizes baked in) ran out of bounds at shrunk
        # sizes (13 of KernelBench L1 on an H100, twenty-third run); bigger ones are still shrunk (host memory per worker).
        "validation": {"device": "cuda", "trials": 5, "time_kernels": True, "shrink_for_cpu": False,
                       "max_own_size_trial_mb": 16384},
        "distill": {"teacher": "inductor", "samples": 2},  # inductor: sample 2 = the symbolic-parameter variant (convolutions)
        "training": {"model": "Qwen/Qwen2.5-0.5B-Instruct", "max_length": 4096, "max_completion_length": 2048,
                     "num_generations": 8, "grpo_max_steps": 200, "per_device_train_batch_size": 8, "sft_epochs": 2.0,
                     "reward_overlap": True,  # the GPU judge works while the next batch is generated (training/README.md)
                     # Rollouts at 0.7, each used for two updates: at 1.0 a small SFT model's samples were
                     # correct 40 % of the time (its evaluation samples at 0.4: 58 %) and the reward did not
                     # rise; at 0.7 with two updates per generation it rose 0.84 -> 0.88 in 57 updates
                     # against 33 (benchmarks/RESULTS.md, twenty-first and twenty-second GPU runs).
                     "temperature": 0.7, "num_iterations": 2},
        "evaluation": {"samples": 10, "temperature": 0.8, "top_p": 0.95, "max_new_tokens": 4096},
    },
}

# Short environment names for the most used keys.
ENV_ALIASES = {"db": "warehouse.path", "profile": "profile"}


def load_config(
    config_file: Path | None = None,
    cli: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[PipelineConfig, dict[str, str]]:
    """Effective config and, for each dotted key, the layer it came from."""
    cfg, sources = load_layers(
        PipelineConfig, profiles=PROFILES, config_file=config_file, environ=environ, cli=cli, env_aliases=ENV_ALIASES,
    )
    assert isinstance(cfg, PipelineConfig)
    if sources.get("harvest.state_path") == "default":
        # The incremental state lives in the warehouse now; this is where older versions kept it
        # beside the warehouse, read only to import it into a warehouse that has none yet.
        cfg.harvest.state_path = warehouse_state_path(cfg.warehouse.path)
        sources["harvest.state_path"] = "derived:warehouse.path"
    return cfg, sources


def warehouse_state_path(db_path: str) -> str:
    """The legacy harvest state file of a warehouse file (beside it, where older versions wrote it)."""
    return "harvest-state.json" if db_path == ":memory:" else f"{db_path}.harvest-state.json"
