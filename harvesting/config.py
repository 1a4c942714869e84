"""Configuration of harvesting (sources, extraction, input synthesis, filters)."""

from __future__ import annotations

from pydantic import BaseModel, Field

PERMISSIVE_LICENCES = ["MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "Unlicense", "0BSD", "CC0-1.0", "Zlib", "MIT-0"]


class HarvestConfig(BaseModel):
    github_query: str = Field("language:python torch nn.Module", description="GitHub repository search query")
    max_repos: int = Field(20, ge=1, description="at most this many repositories per GitHub harvest")
    min_stars: int = Field(10, ge=0, description="skip repositories with fewer stars")
    licences: list[str] = Field(default_factory=lambda: list(PERMISSIVE_LICENCES), description="licence allowlist (SPDX ids); unknown licences are always rejected")
    local_paths: list[str] = Field(default_factory=list, description="local directories / git clones harvested by the refresh flow")
    dataset_paths: list[str] = Field(default_factory=list, description="KernelBook-style parquet/JSONL or suite JSONL files harvested by the refresh flow")
    max_file_bytes: int = Field(1_000_000, ge=1, description="skip source files larger than this")
    near_duplicate_threshold: float = Field(0.85, gt=0, le=1, description="MinHash Jaccard threshold for near-duplicates")
