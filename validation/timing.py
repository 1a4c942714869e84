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
- the candidate's timed calls get the same input tensors with new values at every call
  (FreshValues: the trials' input sets in turn, floating-point values scaled by 1 + (i+1)/4096),
  and one timed call (position and trial chosen by the worker) gets a trial's exact values
  instead, its answer compared with the reference's in the judge's worker
  (RUNTIME-TIMING-MISMATCH when it differs): a forward that answers repeated inputs from a cache
  instead of computing times as what it is, or is caught;
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
made in its own process and never come back. The check call then runs on a set from a secret seed
and only `project`ions of its answer come back, compared with the reference's within the exact
bound of the elementwise tolerance (`compare_projections`).
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable, Iterator

from autotriton.validation import compare
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


def _sync(device: str) -> None:
    import torch

    if device != "cpu":
        torch.cuda.synchronize()


def bench(fn: Callable[[], Any], runs: int, prepare: Callable[[int], Any] | None = None, device: str = "cuda") -> dict[str, Any]:
    """Median time of fn() in milliseconds (L2 flushed before each call, outliers trimmed).
    `prepare(i)` runs before call i (the warm-up calls first), outside the timed region: the
    candidate's timing gives every call new input values through it (FreshValues). On the CPU
    (`device="cpu"`, the timing protocol checked without a GPU) calls are timed by the wall clock
    and nothing is flushed: such figures mean nothing about kernels."""
    import torch

    cuda = device != "cpu"
    flush = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda") if cuda else None
    times: list[float] = []
    with torch.no_grad():
        for i in range(WARMUP_CALLS):
            if prepare is not None:
                prepare(i)
            fn()
        _sync(device)
        if cuda:
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
            for i in range(runs):
                if prepare is not None:
                    prepare(WARMUP_CALLS + i)
                flush.zero_()
                starts[i].record()
                fn()
                ends[i].record()
            torch.cuda.synchronize()
            times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
        else:
            for i in range(runs):
                if prepare is not None:
                    prepare(WARMUP_CALLS + i)
                start = time.perf_counter()
                fn()
                times.append((time.perf_counter() - start) * 1e3)
    median, kept = _trimmed_median(times)
    del flush
    return {"median_ms": median, "min_ms": min(times), "runs": runs, "kept": kept,
            "host_ms": host_time(fn, prepare=prepare, device=device, first=WARMUP_CALLS + runs)}


def host_time(fn: Callable[[], Any], runs: int = 10, prepare: Callable[[int], Any] | None = None, device: str = "cuda",
              first: int = 0) -> float:
    """Median wall time (ms) until fn() returns, the GPU idle before each call: the host work of a
    call (Python, allocation, launches). When it is close to the GPU time (`median_ms`), the GPU
    waits for the host, and launch overhead, not the kernels, decides the speedup. `prepare(first + i)`
    runs before call i, untimed (as in bench)."""
    import torch

    times = []
    with torch.no_grad():
        for i in range(runs):
            if prepare is not None:
                prepare(first + i)
            _sync(device)
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1e3)
        _sync(device)
    return statistics.median(times)


class FreshValues:
    """The inputs of a candidate's timed calls: the same tensors at every call, holding new values
    at every call. Before call i the values of input set (offset + i) mod n are copied in (the
    variants: the trials' input sets of the same layout, all of the problem's own distribution)
    and floating-point tensors are scaled by 1 + (i + 1)/4096, so no two calls see the same values
    while sizes, dtypes and magnitudes stay the problem's. A forward that returns a stored answer
    when it sees inputs again (by identity, data pointer, version counter or a checksum of the
    values) must compute every timed call or return a stale answer. One call, `check_at` (a timed
    one, chosen by the judge's worker, so no call count tells it apart), gets the `check` input
    set's exact values instead, and its answer is kept (`check_output`) for the worker to compare
    with the reference's. Integer tensors are only rotated (n distinct values); inputs that are
    not tensors keep theirs. Use `call(model)` as the timed function: it keeps the last answer
    until the next call's values are written."""

    def __init__(self, variants: list[list[Any]], offset: int = 0, check: list[Any] | None = None,
                 check_at: int | None = None):
        import torch
        from torch.utils._pytree import tree_map

        self.base = variants[offset % len(variants)]
        same = [v for v in variants if same_layout(v, self.base)]
        first = next(i for i, v in enumerate(same) if v is self.base)
        self.variants = same[first:] + same[:first]
        with torch.no_grad():  # nested inputs (a list of tensors as one argument) are copied and refreshed leaf by leaf
            self.buffers = tree_map(lambda x: x.detach().clone().requires_grad_(x.requires_grad)
                                    if isinstance(x, torch.Tensor) else x, list(self.base))
        self._leaves = _leaves(self.buffers)
        self.check = check if check is not None and same_layout(check, self.base) else None
        self.check_at = check_at if self.check is not None else None
        self.checked = False
        self.check_output: Any = None
        self._last: Any = None

    def call(self, model: Any) -> Any:
        self._last = model(*self.buffers)
        return self._last

    def __call__(self, i: int) -> None:
        import torch

        if self.check_at is not None and i == self.check_at + 1 and not self.checked:
            self.check_output, self.checked = self._last, True
        self._last = None
        if i == self.check_at and not self.checked:
            self.exact(self.check)
            return
        src = self.variants[i % len(self.variants)]
        with torch.no_grad():
            for buf, value in zip(self._leaves, _leaves(src)):
                if isinstance(buf, torch.Tensor):
                    buf.copy_(value)
                    if buf.is_floating_point() or buf.is_complex():
                        buf.mul_(1 + (i + 1) / 4096)

    def exact(self, values: list[Any]) -> None:
        """The buffers hold `values` exactly (an input set of the same layout)."""
        import torch

        with torch.no_grad():
            for buf, value in zip(self._leaves, _leaves(values)):
                if isinstance(buf, torch.Tensor):
                    buf.copy_(value)


def _leaves(inputs: Any) -> list[Any]:
    """The values of an input set in order, nested lists, tuples and dicts opened."""
    from torch.utils._pytree import tree_leaves

    return tree_leaves(list(inputs))


def same_layout(a: list[Any], b: list[Any]) -> bool:
    """The same nesting, the same tensors' shapes, dtypes and devices, and equal values that are not tensors."""
    import torch
    from torch.utils._pytree import tree_flatten

    (xs, spec_a), (ys, spec_b) = tree_flatten(list(a)), tree_flatten(list(b))
    if spec_a != spec_b:
        return False
    for x, y in zip(xs, ys):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype or x.device != y.device:
                return False
            continue
        try:
            if bool(x != y):
                return False
        except Exception:  # noqa: BLE001 (values whose comparison has no truth value: not the same layout)
            return False
    return True


def _on_device(inputs: list[Any], device: str = "cuda") -> list[Any]:
    import torch
    from torch.utils._pytree import tree_map

    return tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, list(inputs))


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
                  device: str = "cuda", check_inputs: list[Any] | None = None) -> dict[str, Any]:
    """Candidate side: per timed input set, the median time of model(*inputs) over calls that each
    see new input values (FreshValues; every set of `input_sets` serves as a variant); plus the
    share of CUDA time spent in the candidate's Triton kernels `kernel_names` (torch.profiler over
    one forward). With job["check_trial"] = k, timed call job["check_at"] of the first set (after
    the warm-up calls; after timing when out of range) runs on input set k's exact values, and its
    raw answer is returned under "_check_outputs" for the caller to hand to the judge's worker,
    which compares it with the reference's outputs of that trial. At the problem's own sizes
    (correctness judged shrunk) `check_inputs` is the check input set instead (made here from a
    secret seed, full_size_setup), and only `project`ions of the check call's answer go back
    (under "check"): the worker compares them with the same projections of the reference's."""
    import torch

    start = time.perf_counter()
    variants = [_on_device(s, device) for s in input_sets]
    out: dict[str, Any] = {"sets": [], "fresh_values": True}
    k = job.get("check_trial")
    check = variants[k] if isinstance(k, int) and 0 <= k < len(variants) else None
    if check_inputs is not None:
        check = _on_device(check_inputs, device)
    first = None
    for j in range(min(job["input_sets"], len(variants))):
        fresh = FreshValues(variants, offset=j, check=check if j == 0 else None,
                            check_at=WARMUP_CALLS + int(job.get("check_at") or 0) if j == 0 else None)
        first = first or fresh
        out["sets"].append(bench(lambda f=fresh: f.call(model), job["runs"], prepare=fresh, device=device))
    if first is not None and first.check is not None:
        if not first.checked:  # check_at past the timed calls: one call more
            first.exact(first.check)
            with torch.no_grad():
                first.check_output, first.checked = model(*first.buffers), True
        _sync(device)
        if check_inputs is not None:
            out["check"] = {"full_size": True, "projections": project(first.check_output, int(job["full_size"]["projection_seed"]))}
        else:
            out["_check_outputs"] = first.check_output
            out["check"] = {"trial": k}
    if check_inputs is not None and "check" not in out:
        out["check"] = {"full_size": True, "skipped": "the check set's layout is not the timed one's"}
    out["triton_time_share"] = _triton_share(model, variants[0], kernel_names or set()) if device != "cpu" else None
    out["elapsed_s"] = time.perf_counter() - start
    return out


# The full-size check compares PROJECTIONS = 4 signed sums over PROJECTION_SIZE elements of each
# output drawn (with replacement) by a seed the worker chose; a stale answer differs from the right
# one almost everywhere, so its sums miss the reference's by far more than any answer within the
# elementwise tolerance can (the bound is exact: the sum of each drawn element's tolerance).
PROJECTIONS = 4
PROJECTION_SIZE = 1 << 16


def _projection_draws(numel: int, seed: int, index: int) -> tuple[Any, Any]:
    import torch

    g = torch.Generator().manual_seed((seed * 1_000_003 + index) % 2**63)
    idx = torch.randint(0, numel, (min(numel, PROJECTION_SIZE),), generator=g)
    signs = torch.randint(0, 2, (idx.numel(),), generator=g, dtype=torch.float64) * 2 - 1
    return idx, signs


def _keys_sorted(outputs: Any) -> Any:
    """Dicts in an answer as lists of their values in sorted key order (exact types only), as
    candidate_runner orders output tensors: a dict's insertion order is not part of the answer,
    so the i-th tensor (and its draws) is the same one for the reference and the candidate."""
    if type(outputs) is dict:
        return [_keys_sorted(outputs[k]) for k in sorted(outputs, key=repr)]
    if type(outputs) is list or type(outputs) is tuple:
        return [_keys_sorted(o) for o in outputs]
    return outputs


def _drawn(outputs: Any, seed: int) -> Iterator[tuple[Any, list[Any]]]:
    """Per output tensor (nested outputs opened): the tensor and, per projection, its drawn
    elements as float64 on the CPU with their signs (the same draws for any answer's tensor)."""
    import torch
    from torch.utils._pytree import tree_leaves

    leaves = [t for t in tree_leaves(_keys_sorted(outputs if isinstance(outputs, (list, tuple)) else [outputs]))
              if isinstance(t, torch.Tensor)]
    for i, t in enumerate(leaves):
        flat = t.detach().reshape(-1)
        draws = []
        for j in range(PROJECTIONS if flat.numel() else 0):
            idx, signs = _projection_draws(flat.numel(), seed, i * PROJECTIONS + j)
            draws.append((flat[idx.to(flat.device)].to(torch.float64).cpu(), signs))
        yield t, draws


def project(outputs: Any, seed: int) -> list[dict[str, Any]]:
    """Per output tensor: {"shape", "dtype", "sums": PROJECTIONS signed sums of drawn elements (float64),
    "nonfinite": how many drawn elements were NaN or Inf (counted, left out of the sums)}."""
    import torch

    out = []
    for t, draws in _drawn(outputs, seed):
        entry: dict[str, Any] = {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."), "sums": [], "nonfinite": 0}
        for vals, signs in draws:
            finite = torch.isfinite(vals)
            entry["nonfinite"] += int((~finite).sum())
            entry["sums"].append(float((torch.where(finite, vals, 0.0) * signs).sum()))
        out.append(entry)
    return out


def projection_bounds(outputs: Any, seed: int, tolerance_of: Callable[[Any], float]) -> list[list[float]]:
    """For the reference's outputs: per tensor and projection, the largest difference in its sum
    that answers within the elementwise tolerance (|got - ref| <= tol + tol * |ref|) can make."""
    import torch

    bounds = []
    for t, draws in _drawn(outputs, seed):
        tol = tolerance_of(t.dtype)
        magnitudes = [torch.where(torch.isfinite(vals), vals.abs(), 0.0) for vals, _ in draws]
        bounds.append([float((tol + tol * m).sum()) * (1 + 1e-9) + 1e-12 * float(m.sum()) for m in magnitudes])
    return bounds


def compare_projections(ref: list[dict[str, Any]], bounds: list[list[float]], got: Any) -> dict[str, Any]:
    """{ok, reason, max_excess}: the candidate's projections (as it sent them) against the reference's."""
    if not isinstance(got, list) or len(got) != len(ref):
        return {"ok": False, "reason": f"projections of {len(got) if isinstance(got, list) else 'no'} output(s), expected {len(ref)}"}
    worst = 0.0
    for i, (r, g, b) in enumerate(zip(ref, got, bounds)):
        where = f"output {i}" if len(ref) > 1 else "output"
        if not isinstance(g, dict) or g.get("shape") != r["shape"] or g.get("dtype") != r["dtype"]:
            shape = g.get("shape") if isinstance(g, dict) else None
            return {"ok": False, "reason": f"{where} has shape {shape}, expected {r['shape']} ({r['dtype']})"}
        sums = g.get("sums")
        if g.get("nonfinite") != r["nonfinite"] or not isinstance(sums, list) or len(sums) != len(r["sums"]):
            return {"ok": False, "reason": f"{where}: NaN or Inf where the reference has none, or the reverse"}
        for got_sum, ref_sum, bound in zip(sums, r["sums"], b):
            if not isinstance(got_sum, (int, float)) or not abs(float(got_sum) - ref_sum) <= bound:
                excess = abs(float(got_sum) - ref_sum) / bound if isinstance(got_sum, (int, float)) and bound else float("inf")
                return {"ok": False, "reason": f"{where}: drawn elements differ from the reference's by more than the tolerance "
                                               f"allows ({excess:.3g}x the bound)", "max_excess": excess}
            worst = max(worst, abs(float(got_sum) - ref_sum) / bound if bound else 0.0)
    return {"ok": True, "reason": None, "max_excess": worst}


def full_size_reference(full: dict[str, Any], device: str) -> tuple[Any, list[list[Any]]]:
    """Worker side: the reference Model at the problem's own sizes (seeded as the candidate's
    ModelNew is) and its input sets for full["seeds"], on `device`."""
    import torch

    module, init_inputs, sets = full_size_setup(full, device)
    torch.manual_seed(full["init_seed"])
    model = module.Model(*init_inputs)
    return (model.to(device).eval() if isinstance(model, torch.nn.Module) else model), sets


def full_size_check_reference(full: dict[str, Any], device: str, tolerance_of: Callable[[Any], float]) -> tuple[Any, Any]:
    """Worker side: the reference at the problem's own sizes on the check input set
    (full["check_seed"]): (its projections, their bounds), for compare_projections; (None, None)
    when that set's layout is not the timed one's (FreshValues then asks for no check call)."""
    import torch

    model, sets = full_size_reference({**full, "seeds": [full["check_seed"], full["seeds"][0]]}, device)
    if not same_layout(sets[0], sets[1]):  # get_inputs() draws its shapes: the candidate can check no call
        return None, None
    with torch.no_grad():
        outputs = model(*sets[0])
    seed = int(full["projection_seed"])
    return project(outputs, seed), projection_bounds(outputs, seed, tolerance_of)


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
        model, sets = full_size_reference(full, cfg["device"])
    else:
        model = state.main.model
        sets = [_on_device(t["inputs"], cfg["device"]) for t in state.main.trials[: job["input_sets"]]]
    result: dict[str, Any] = {"eager": [bench(lambda s=s: model(*s), job["runs"], device=cfg["device"]) for s in sets]}
    if full:
        result["full_size"] = True
    compiled = None
    if cfg.get("time_compile", True):
        try:
            compiled = torch.compile(model)
            result["compiled"] = [bench(lambda s=s: compiled(*s), job["runs"], device=cfg["device"]) for s in sets]
        except Exception as exc:  # noqa: BLE001 (no compile baseline; the eager one still counts)
            result["compile_error"] = f"{type(exc).__name__}: {exc}"[:500]
    state.timing = result
    if full:  # the full-size model, inputs and compiled graph go: the candidate needs the memory
        del model, sets, compiled
        torch._dynamo.reset()
        if cfg["device"] != "cpu":
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


def full_size_check(check: Any, full: dict[str, Any], cfg: dict[str, Any], tf32: bool) -> dict[str, Any]:
    """The check call at the problem's own sizes: projections of its answer against the reference's
    on the same (secret-seeded) inputs, computed here (below)."""
    def tolerance_of(dtype: Any) -> float:
        return compare.tolerance_for(dtype, cfg["tolerances"], tf32, cfg["tf32_tolerance"])

    trial = "own-size check set"
    try:
        ref, bounds = full_size_check_reference(full, cfg["device"], tolerance_of)
    except Exception as exc:  # noqa: BLE001 (not the candidate's fault: no check, and so no speedup)
        return {"trial": trial, "ok": None, "reason": f"no check: the reference failed on the check set: {type(exc).__name__}: {exc}"[:300]}
    if ref is None:  # get_inputs() gives this seed another layout: no call could be checked
        return {"trial": trial, "ok": True, "reason": None, "skipped": "the check set's layout is not the timed one's"}
    if not isinstance(check, dict) or not check.get("full_size") or "projections" not in check:
        return {"trial": trial, "ok": False, "reason": "timing came back without the check call's projections"}
    cmp = compare_projections(ref, bounds, check["projections"])
    return {"trial": trial, "ok": bool(cmp["ok"]), "reason": cmp["reason"], "max_excess": cmp.get("max_excess")}
