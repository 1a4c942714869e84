"""Configuration of distillation (teachers)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class DistillConfig(BaseModel):
    teacher: Literal["replay", "inductor", "openai"] = Field("replay", description="replay: recorded teacher outputs shipped with autotriton; inductor: torch.compile on a GPU; openai: any OpenAI-compatible endpoint")
    samples: int = Field(1, ge=1, description="candidates per problem")
    rounds: int = Field(2, ge=0, description="repair rounds: validator errors sent back to the LLM teacher")
    base_url: str = Field("http://127.0.0.1:8000/v1", description="OpenAI-compatible endpoint (openai teacher)")
    model: str = Field("deepseek-reasoner", description="model name at the endpoint")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the endpoint's key (never stored)")
    temperature: float = Field(0.6, ge=0)
    top_p: float = Field(0.95, gt=0, le=1)
    max_tokens: int = Field(8192, ge=1)
    concurrency: int = Field(4, ge=1, description="requests in flight at once")
    max_problems: int = Field(0, ge=0, description="distill at most this many problems (0 = all)")
