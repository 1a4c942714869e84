"""Configuration of evaluation."""

from __future__ import annotations

from pydantic import BaseModel, Field


class EvaluationConfig(BaseModel):
    suite: str = Field("", description="suite JSONL path (KernelBench format); empty = the demo suite")
    samples: int = Field(1, ge=1, description="samples per problem (k)")
    temperature: float = Field(0.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    max_new_tokens: int = Field(1024, ge=1)
    max_problems: int = Field(0, ge=0, description="evaluate at most this many problems (0 = all)")
    report_dir: str = Field("runs/eval", description="markdown reports and plots go here")
