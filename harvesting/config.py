"""Configuration of harvesting (sources, extraction, input synthesis, filters)."""

from __future__ import annotations

from pydantic import BaseModel, Field

PERMISSIVE_LICENCES = ["MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "Unlicense", "0BSD", "CC0-1.0", "Zlib", "MIT-0"]


class HarvestConfig(BaseModel):
    github: bool = Field(False, description="harvest GitHub (github_query) in the refresh flow; needs network and GITHUB_TOKEN for useful rate limits")
    github_query: str = Field("language:python torch nn.Module", description="GitHub repository search query")
    max_repos: int = Field(20, ge=1, description="at most this many repositories per GitHub harvest")
    min_stars: int = Field(10, ge=0, description="skip repositories with fewer stars")
    pushed_after: str = Field("", description="only repositories pushed after this date (YYYY-MM-DD); empty = any")
    github_base_url: str = Field("https://api.github.com", description="GitHub REST API root (GitHub Enterprise: https://HOST/api/v3)")
    github_retries: int = Field(3, ge=0, description="retries of transient GitHub errors (5xx, connection resets)")
    rate_limit_max_wait_s: float = Field(900.0, ge=0, description="longest wait for a GitHub rate-limit reset; a longer reset stops the harvest with an error")
    max_files_per_repo: int = Field(2000, ge=1, description="at most this many .py files downloaded per repository")
    licences: list[str] = Field(default_factory=lambda: list(PERMISSIVE_LICENCES), description="licence allowlist (SPDX ids); unknown licences are always rejected")
    local_paths: list[str] = Field(default_factory=list, description="local directories / git clones harvested by the refresh flow")
    sources_files: list[str] = Field(default_factory=list, description="sources files (TOML/YAML lists of pinned PyPI packages and folders, e.g. harvesting/sources/pytorch.toml) harvested by the refresh flow and `harvest packages`")
    package_cache: str = Field("~/.cache/autotriton/packages", description="where package sources are downloaded (pip download) and unpacked, one folder per name-version")
    dataset_paths: list[str] = Field(default_factory=list, description="KernelBook-style parquet/JSONL or suite JSONL files harvested by the refresh flow")
    synthetic_count: int = Field(0, ge=0, description="generated fused-operator problems (harvesting/synthetic.py) the refresh flow harvests; 0 = none")
    synthetic_seed: int = Field(0, description="seed of the generated problems: the same seed gives the same problems")
    synthetic_pointwise_count: int = Field(0, ge=0, description="generated pointwise problems (no GEMM or convolution: `harvest synthetic --family pointwise`) the refresh flow harvests, same seed; 0 = none")
    synthetic_elementwise_count: int = Field(0, ge=0, description="generated elementwise problems (1-3 operators that touch each element once, one short kernel: `harvest synthetic --family elementwise`) the refresh flow harvests, same seed; 0 = none")
    eval_suites: list[str] = Field(default_factory=list, description="evaluation suites (KernelBench-format JSONL, TritonBench-T data, by path) whose problems, and near copies of them, never enter training exports; matches are recorded as decontamination rejections")
    decontamination_threshold: float = Field(0.8, gt=0, le=1, description="Jaccard similarity (of the models, sizes and input builders aside) from which a problem counts as a near copy of an evaluation problem")
    max_file_bytes: int = Field(1_000_000, ge=1, description="skip source files larger than this")
    max_problem_chars: int = Field(30_000, ge=100, description="reject standalone problems longer than this (too_large); a longer one first loses the methods, helpers and imports its forward never reaches, then its docstrings, then its comments (harvesting/prune.py)")
    near_duplicate_threshold: float = Field(0.85, gt=0, le=1, description="MinHash Jaccard threshold for near-duplicates")
    probe: bool = Field(True, description="confirm each problem by running it in the validation sandbox (off: trust the first input guess, for quick previews only)")
    max_attempts: int = Field(6, ge=1, description="input guesses tried per module before it is rejected")
    parse_jobs: int = Field(0, ge=0, description="processes that parse a source's files ahead of extraction (libcst: ~0.5 s a file, the harvest's main CPU cost on large packages); 0 = one per CPU core, 1 = parse in the harvest's own process")
    state_path: str = Field("", description="legacy side file of the incremental state (commits, ETags, file hashes, seen modules): the CLI and flows keep that state in the warehouse (tables harvest_state, harvest_seen) and read this file only to import it once into a warehouse that has none (default there: <warehouse>.harvest-state.json, where older versions wrote it); a library call without a warehouse reads and writes it (empty: an in-memory state)")
    incremental: bool = Field(True, description="skip files and repositories unchanged since the last harvest and count modules seen before as duplicates (the state in the warehouse); off: harvest everything and leave the state untouched")
