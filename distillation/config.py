"""Configuration of distillation (teachers)."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, Field


class DistillConfig(BaseModel):
    teacher: Literal["replay", "inductor", "openai"] = Field("replay", description="replay: recorded teacher outputs shipped with autotriton; inductor: torch.compile on a GPU; openai: any OpenAI-compatible endpoint")
    samples: int = Field(1, ge=1, description="candidates per problem (inductor teacher, deterministic: 2 adds the dynamic-parameters capture as a second candidate where it differs)")
    rounds: int = Field(2, ge=0, description="repair rounds: validator errors sent back to the LLM teacher")
    base_url: str = Field("http://127.0.0.1:8000/v1", description="OpenAI-compatible endpoint (openai teacher)")
    model: str = Field("deepseek-reasoner", description="model name at the endpoint")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the endpoint's key (never stored)")
    temperature: float = Field(0.6, ge=0)
    top_p: float = Field(0.95, gt=0, le=1)
    max_tokens: int = Field(8192, ge=1)
    seed: int = Field(0, description="base sampling seed sent to the endpoint; sample i of a problem uses seed + i")
    concurrency: int = Field(4, ge=1, description="requests in flight at once")
    max_problems: int = Field(0, ge=0, description="distill at most this many problems (0 = all)")
    batch_problems: int = Field(32, ge=0, description="`distill` verb: problems distilled and stored per batch, so a long run stopped half-way keeps every finished batch (0 = one batch; the inductor teacher compiles a batch's problems in parallel)")
    stream: bool = Field(False, description="stream completions (SSE); usage is then requested with stream_options.include_usage")
    request_timeout_s: float = Field(600.0, gt=0, description="client timeout of one request; a timed-out request is retried")
    max_retries: int = Field(5, ge=0, description="retries of one request on 429, 5xx, timeouts and connection errors")
    backoff_base_s: float = Field(1.0, ge=0, description="first retry waits about this long, doubling each retry (plus jitter), unless the server sends Retry-After")
    backoff_max_s: float = Field(60.0, ge=0, description="longest wait between retries (also caps Retry-After)")
    price_prompt_per_m: float = Field(0.0, ge=0, description="USD per 1M prompt tokens (0 = cost unknown)")
    price_completion_per_m: float = Field(0.0, ge=0, description="USD per 1M completion tokens (0 = cost unknown)")
    cache_dir: str = Field(".autotriton/teacher_cache", description="response cache (JSONL, one file per teacher/model); reruns with the same prompts cost nothing")
    use_cache: bool = Field(True, description="read and write the response cache")
    replay_paths: list[str] = Field(default_factory=list, description="extra replay JSONL files or cache dirs served by the replay teacher, besides the shipped data")
    replay_shipped: bool = Field(True, description="replay teacher also serves the data shipped in autotriton/distillation/data/replay")
    describe_trace: bool = Field(True, description="when describing compiler pairs without an LLM, also trace the reference on the meta device (in a child process) for its aten ops and output shapes")
    explain_with_llm: bool = Field(False, description="with the openai teacher configured, have it write instruction and reasoning for compiler (inductor/replay) pairs")
    inductor_jobs: int = Field(0, ge=0, description="inductor teacher: problems compiled at once, each in its own process (0 = half the CPU cores, at most 8)")
    inductor_timeout_s: float = Field(600.0, gt=0, description="inductor teacher: wall-clock limit for compiling one problem (its process is killed)")
    inductor_dynamic: bool = Field(True, description="inductor teacher: compile with dynamic shapes so kernels take sizes as arguments (static only when that fails)")
    inductor_decompose_convolution: bool = Field(True, description="inductor teacher: rewrite transposed/1-D/grouped convolutions as gathers + Triton matmul (Inductor has no Triton template for them)")
    inductor_max_mm_configs: Optional[int] = Field(None, ge=1, description="inductor teacher: at most this many GEMM/conv template configs autotuned per op (None = Inductor's own list; benchmarks/inductor_l1.py uses 4 to fit a device call)")
    inductor_dynamic_parameters: bool = Field(False, description="inductor teacher: trace every convolution as gathers + matmul so channel counts taken from weights stay kernel arguments (Inductor's conv lowering bakes them in) in the FIRST capture; samples >= 2 adds that capture as a second candidate anyway (H200: 9 of L1's 11 baked-channel convolutions then validate, slower)")
