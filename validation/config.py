"""Configuration of the judge (the validator)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class ValidationConfig(BaseModel):
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="cpu: Triton interpreter; cuda: real GPU; auto: cuda when available")
    trials: int = Field(5, ge=1, description="correctness trials, each with fresh random inputs")
    timeout_s: float = Field(120.0, gt=0, description="hard wall-clock limit per candidate (whole process group killed)")
    memory_limit_gb: float = Field(64.0, gt=0, description="address-space limit of a candidate process (CUDA needs ~64 GiB of AS)")
    workers: int = Field(0, ge=0, description="warm judge workers; 0 = one per CPU core (cpu) or per GPU (cuda)")
    target: str = Field("cuda:90", description="compile-check target, 'cuda:<sm>' (sm_90 = Hopper)")
    compile_check: bool = Field(True, description="compile every kernel for `target`, even without a GPU")
    time_kernels: bool = Field(True, description="measure speedups (GPU only)")
    shrink_for_cpu: bool = Field(True, description="shrink problem sizes so the interpreter can run them")
