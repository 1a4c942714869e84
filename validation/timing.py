"""GPU timing: speedups of a candidate over eager PyTorch and over torch.compile of the reference.

Method (the same routine for reference and candidate):
- warm-up calls first (JIT compiles, autotuning, allocator), then `runs` timed calls;
- before every timed call the L2 cache is flushed by zeroing a buffer larger than any L2
  (256 MiB; an H200 has 60 MB), so no call profits from the previous one's data;
- each call is timed with CUDA events recorded around the call alone (the flush is outside);
- outliers are dropped with Tukey's fences (outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR]) and the
  median of the rest is the time of that input set; several input sets (the trials' inputs) are
  timed and the speedup is the median over sets of reference_time / candidate_time;
- each timing also records `host_ms`, the median time until a call returns with the GPU idle
  before it (host work: Python, allocations, launches), so a slow candidate says whether its
  kernels or its launches are slow;
- a speedup above `suspect_speedup` (default 10x) is flagged `suspect` in `Verdict.timing`
  and earns no reward bonus: such numbers are far likelier to be a measurement or caching
  artefact than a real kernel.
The worker times the reference before the candidate's job is sent (so the two never share the
GPU), and caches those times per problem. torch, triton and the standard library only
(plus reference_problem, which loads the problem for full-size timing).

Sizes: timing runs at the problem's own sizes. Usually the timed input sets are the first
correctness trials' inputs. When correctness is judged at sizes shrunk for memory
(`max_trial_mb`, judge.fit_to_budget), both sides instead build the full-size model and input
sets themselves with `full_size_setup` (same source, same seeds, made on the GPU: identical
values on both sides), so no multi-GiB tensor crosses a process boundary; the candidate's are
made in its own process and never come back.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

from autotriton.validation.reference_problem import load_problem_module

L2_FLUSH_BYTES = 256 * 2**20
WARMUP_CALLS = 3


def _trimmed_median(times: list[float]) -> tuple[float, int]:
    ordered = sorted(times)
    if len(ordered) >= 4:
        q = statistics.quantiles(ordered, n=4)
        lo, hi = q[0] - 1.5 * (q[2] - q[0]), q[2] + 1.5 * (q[2] - q[0])
        kept = [t for t in ordered if lo <= t <= hi] or ordered
    else:
        kept = ordered
    return statistics.median(kept), len(kept)


def bench(fn: Callable[[], Any], runs: int) -> dict[str, Any]:
    """Median time of fn() in milliseconds (L2 flushed before each call, outliers trimmed)."""
    import torch

    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    with torch.no_grad():
        for _ in range(WARMUP_CALLS):
            fn()
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        for i in range(runs):
            flush.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    median, kept = _trimmed_median(times)
    del flush
    return {"median_ms": median, "min_ms": min(times), "runs": runs, "kept": kept, "host_ms": host_time(fn)}


def host_time(fn: Callable[[], Any], runs: int = 10) -> float:
    """Median wall time (ms) until fn() returns, the GPU idle before each call: the host work of a
    call (Python, allocation, launches). When it is close to the GPU time (`median_ms`), the GPU
    waits for the host, and launch overhead, not the kernels, decides the speedup."""
    import torch

    times = []
    with torch.no_grad():
        for _ in range(runs):
            torch.cuda.synchronize()
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
        torch.cuda.synchronize()
    return statistics.median(times)


def _on_device(inputs: list[Any], device: str = "cuda") -> list[Any]:
    import torch

    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]


def full_size_setup(full: dict[str, Any], device: str = "cuda", load_problem: Callable[..., Any] | None = None,
                    ) -> tuple[Any, list[Any], list[list[Any]]]:
    """(problem module, init inputs, input sets) at the problem's own sizes, from `full`
    ({"source", "init_seed", "seeds"}, judge.timing_plan). Inputs are made directly on `device`
    (factories under torch.device(device)) with torch.manual_seed(seed) per set, so the worker and
    the candidate process get the same values without sending them."""
    import torch

    if load_problem is None:  # the worker side; the candidate side binds it before candidate code runs
        load_problem = load_problem_module

    module = load_problem(full["source"], "", "fullsize")
    torch.manual_seed(full["init_seed"])
    init_inputs = list(module.get_init_inputs())
    sets = []
    for seed in full["seeds"]:
        torch.manual_seed(seed)
        with torch.device(device):
            inputs = list(module.get_inputs())
        sets.append(_on_device(inputs, device))
    return module, init_inputs, sets


def time_callable(model: Any, input_sets: list[list[Any]], job: dict[str, Any], kernel_names: set[str] | None = None,
                  ) -> dict[str, Any]:
    """Candidate side: per input set, the median time of model(*inputs); plus the share of
    CUDA time spent in the candidate's Triton kernels `kernel_names` (torch.profiler over one forward)."""
    import torch

    start = time.perf_counter()
    sets = [_on_device(s) for s in input_sets[: job["input_sets"]]]
    out = {"sets": [bench(lambda s=s: model(*s), job["runs"]) for s in sets]}
    out["triton_time_share"] = _triton_share(model, sets[0], kernel_names or set())
    out["elapsed_s"] = time.perf_counter() - start
    del torch
    return out


def _triton_share(model: Any, inputs: list[Any], names: set[str]) -> float | None:
    """Fraction of the forward's GPU kernel time spent in the Triton kernels `names` (the
    candidate's own; the caller knows them: the judge's modules are out of sys.modules by now,
    and importing candidate_runner again would give a fresh module that saw no launch)."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    try:
        with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
            model(*inputs)
            torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 (profiling is best effort)
        return None
    total = triton = 0.0
    for evt in prof.events():
        dev_time = getattr(evt, "device_time", None) or getattr(evt, "cuda_time", 0.0) or 0.0
        if getattr(evt, "device_type", None) is not None and str(evt.device_type).endswith("CUDA") and dev_time:
            total += dev_time
            if any(evt.name == n or evt.name.startswith(n) for n in names):
                triton += dev_time
    return (triton / total) if total else None


def reference_timing(worker: Any, state: Any, cfg: dict[str, Any], plan: dict[str, Any] | None = None) -> dict[str, Any]:
    """Worker side: eager and torch.compile times of the reference, cached per problem.
    With plan["full_size"] the reference is built and fed at its own sizes (full_size_setup)."""
    import torch

    cached = getattr(state, "timing", None)
    if cached is not None:
        return cached
    job = plan or cfg["timing_job"]
    full = job.get("full_size")
    if full:
        module, init_inputs, sets = full_size_setup(full)
        torch.manual_seed(full["init_seed"])
        model = module.Model(*init_inputs)
        model = model.to("cuda").eval() if isinstance(model, torch.nn.Module) else model
    else:
        model = state.main.model
        sets = [_on_device(t["inputs"]) for t in state.main.trials[: job["input_sets"]]]
    result: dict[str, Any] = {"eager": [bench(lambda s=s: model(*s), job["runs"]) for s in sets]}
    if full:
        result["full_size"] = True
    compiled = None
    if cfg.get("time_compile", True):
        try:
            compiled = torch.compile(model)
            result["compiled"] = [bench(lambda s=s: compiled(*s), job["runs"]) for s in sets]
        except Exception as exc:  # noqa: BLE001 (no compile baseline; the eager one still counts)
            result["compile_error"] = f"{type(exc).__name__}: {exc}"[:500]
    state.timing = result
    if full:  # the full-size model, inputs and compiled graph go: the candidate needs the memory
        del model, sets, compiled
        torch._dynamo.reset()
        torch.cuda.empty_cache()
    return result


def speedups(reference: dict[str, Any], candidate: dict[str, Any], suspect_above: float) -> dict[str, Any]:
    """Median over input sets of reference/candidate time; flags implausible speedups."""
    cand = [s["median_ms"] for s in candidate.get("sets", [])]
    out: dict[str, Any] = {}
    for key, name in (("eager", "speedup"), ("compiled", "speedup_vs_compile")):
        ref = [s["median_ms"] for s in reference.get(key, [])]
        ratios = [r / c for r, c in zip(ref, cand) if c > 0]
        if ratios:
            out[name] = statistics.median(ratios)
    out["suspect"] = bool(out.get("speedup") and out["speedup"] > suspect_above)
    hosts = {side: [s["host_ms"] for s in sets if isinstance(s.get("host_ms"), (int, float))]
             for side, sets in (("candidate", candidate.get("sets", [])), ("eager", reference.get("eager", [])),
                                ("compiled", reference.get("compiled", [])))}
    if any(hosts.values()):
        out["host_ms"] = {side: statistics.median(v) for side, v in hosts.items() if v}
    return out
