"""Configuration of evaluation: which suite, which generator, how many samples, where reports go."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class EvaluationConfig(BaseModel):
    suite: str = Field("", description="suite to evaluate: a KernelBench-format JSONL file, a TritonBench-T data file/folder, or 'hf:level_1' (needs --hub); empty = the demo suite examples/demo/eval_problems.jsonl")
    levels: list[int] = Field(default_factory=list, description="keep only these levels of the suite (empty = all)")
    ids: list[str] = Field(default_factory=list, description="keep only these problem ids (suite ids like 'kernelbench/level1/19', or bare problem numbers)")
    name_glob: str = Field("", description="keep only problems whose name matches this glob, e.g. '*conv*' (empty = all)")
    hub: bool = Field(False, description="allow loading KernelBench from the Hugging Face hub (datasets.load_dataset('ScalingIntelligence/KernelBench')); needs network")
    generator: Literal["auto", "local", "openai"] = Field("auto", description="local: a HF model / checkpoint; openai: an OpenAI-compatible endpoint; auto: openai when `endpoint` is set, else local")
    model: str = Field("", description="local: HF model id, local path or warehouse checkpoint key; openai: the model name at the endpoint; empty = training.model")
    endpoint: str = Field("", description="base URL of an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    api_key_env: str = Field("OPENAI_API_KEY", description="environment variable holding the endpoint's key (never stored)")
    request_timeout_s: float = Field(600.0, gt=0, description="timeout of one request to the endpoint")
    max_retries: int = Field(4, ge=0, description="retries of a failed request (429, 5xx, timeouts, connection errors), with exponential backoff")
    concurrency: int = Field(4, ge=1, description="endpoint requests in flight at once")
    samples: int = Field(1, ge=1, description="samples per problem (n); pass@k is reported for k in pass_k with k <= n, and for k = n")
    pass_k: list[int] = Field(default_factory=lambda: [1, 5, 10], description="k values of pass@k (those above `samples` are skipped; pass@samples is always reported)")
    temperature: float = Field(0.0, ge=0, description="sampling temperature; 0 = greedy (a local model then returns one distinct sample)")
    top_p: float = Field(1.0, gt=0, le=1, description="nucleus sampling threshold")
    max_new_tokens: int = Field(1024, ge=1, description="completion length limit (tokens)")
    batch_size: int = Field(4, ge=1, description="problems per generate() call of a local model")
    continuous_batching: bool = Field(False, description=(
        "local model: generate every sample through transformers' continuous batching (generate_batch, a paged KV cache "
        "whose freed slots go to waiting samples) instead of padded batches of batch_size problems that each run to their "
        "longest answer"))
    generation_kwargs: dict[str, Any] = Field(default_factory=dict, description=(
        "extra transformers generate() arguments for a local model, by their own names (e.g. {cache_implementation = "
        "\"static\"}: a static KV cache, which generate() compiles on a GPU); they win over the keys above"))
    seed: int = Field(0, description="sampling seed (local model; passed to endpoints that accept one)")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="where a local model generates; the judge's device is validation.device")
    max_problems: int = Field(0, ge=0, description="evaluate at most this many problems (0 = all); which ones: pick_problems")
    pick_problems: Literal["sample", "first"] = Field("sample", description=(
        "with max_problems: sample = a uniform sample seeded by `seed`, kept in suite order (a capped held-out split or "
        "suite stays representative); first = the suite's first ones (KernelBench's numbering)"))
    shrink: bool = Field(False, description="shrink problem sizes for the CPU interpreter when loading the suite (the judge also shrinks when validation.shrink_for_cpu)")
    require_sizes: Literal["own_sizes", "own_and_odd_sizes"] = Field("own_sizes", description=(
        "what counts as solved in the metrics (exec accuracy, pass@k, fast_p, speedups): own_sizes = correct at the problem's "
        "own sizes (KernelBench's definition, so figures compare with KernelBench's); own_and_odd_sizes = also at the judge's "
        "odd-size trial. Reports give both yields either way (own_sizes_yield, general_yield)"))
    report_dir: str = Field("runs/eval", description="markdown reports and plots go here (one folder per evaluation)")
