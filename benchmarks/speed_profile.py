"""Where does a validated candidate lose time against torch.compile? A timing study for the GPU.

    python benchmarks/speed_profile.py --db autotriton.duckdb --out speed.jsonl [--limit 30]
    python benchmarks/speed_profile.py --pairs datasets/fused-h200-preview/pairs/data --out speed.jsonl
    python benchmarks/speed_profile.py --pairs pairs.jsonl --device cpu --smoke --out smoke.jsonl   (CPU test)

Input: the validated pairs of a warehouse (`Warehouse(path, read_only=True).validated_pairs()`), or
a JSONL / Parquet file or folder of rows with the problem's source (`problem_source` or
`reference_source`) and the candidate's (`candidate_source` or `code`), e.g. a release's pairs.
Each pair is built as the judge builds it (validation/timing.full_size_setup: the problem at its
own sizes, Model and ModelNew made under the same seed, the reference's weights loaded into
ModelNew when names and shapes match) and, for eager, torch.compile(Model) and ModelNew:
- `judge_ms`: the judge's own timing (validation/timing.bench: L2 flushed, CUDA events, median)
  and `host_ms` (time until a call returns, GPU idle before it: Python + allocations + launches);
- `steady_ms`: calls back to back, wall time per call (a pipeline's view: max(host, GPU));
- torch.profiler over a few forwards: `kernel_ms` (sum of GPU kernel durations per forward),
  `launches` (GPU kernels per forward) and the top kernels by time;
- candidate only: `graph_ms`, its forward captured in a CUDA graph and replayed (its kernels
  alone, no Python or launch cost), and `triton_launches` (Triton launches per forward).
Writes one JSON line per pair to --out as it goes, then a `{"summary": ...}` line (geomeans, the
share of host-bound candidates, evidence per suspect of issue 15), also printed. Progress on stderr.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# candidate kernels that only move data for a convolution rewritten as gathers + matmul
# (inductor_decompose.py: zero-insertion, padding, im2col, weight flips)
GATHER_NAMES = re.compile(r"unfold|flip|constant_pad|new_zeros|cat_")
# library kernels torch.compile calls for GEMMs and convolutions (cuBLAS, cuDNN, CUTLASS)
LIBRARY_NAMES = re.compile(r"gemm|xmma|cutlass|cudnn|conv|implicit|sm\d\d_|ampere|hopper", re.I)


def _size_params(src: str) -> set[str]:
    """The kernels' runtime size parameters: not a pointer, element count or constexpr (Inductor's
    `ks0`, named after forward's locals by the converter: `x_dim3`)."""
    out = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.FunctionDef) and node.name.endswith("_kernel"):  # not the helpers they call
            out |= {a.arg for a in node.args.args if a.annotation is None and "ptr" not in a.arg
                    and not a.arg.endswith("numel") and not a.arg.startswith("arg_")}
    return out


def read_pairs(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    """{"name", "problem_source", "candidate_source", "verdict": {...}, "sampling": {...}} per pair."""
    if args.db:
        from autotriton.warehouse import Warehouse

        with Warehouse(args.db, read_only=True) as wh:
            triples = wh.validated_pairs(require=args.require)
        for problem, candidate, verdict in triples:
            yield {"name": problem.name, "problem_source": problem.reference_source, "candidate_source": candidate.code,
                   "candidate_key": candidate.key, "sampling": candidate.sampling,
                   "verdict": {"speedup": verdict.speedup, "speedup_vs_compile": verdict.speedup_vs_compile}}
        return
    path = Path(args.pairs)
    files = sorted(path.rglob("*.parquet")) + sorted(path.rglob("*.jsonl")) if path.is_dir() else [path]
    for file in files:
        if file.suffix == ".parquet":
            import pyarrow.parquet as pq

            rows: list[dict[str, Any]] = pq.read_table(file).to_pylist()
        else:
            rows = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
        for i, row in enumerate(rows):
            sampling = row.get("sampling") or {}
            yield {"name": row.get("problem_name") or row.get("name") or f"{file.stem}:{i}",
                   "problem_source": row.get("problem_source") or row["reference_source"],
                   "candidate_source": row.get("candidate_source") or row["code"],
                   "candidate_key": row.get("candidate_key"),
                   "sampling": json.loads(sampling) if isinstance(sampling, str) else sampling,
                   "verdict": {"speedup": row.get("speedup"), "speedup_vs_compile": row.get("speedup_vs_compile")}}


def load_candidate(source: str, directory: str, tag: str) -> Any:
    """The candidate as a module from a real file (Triton's @jit reads its source back)."""
    path = Path(directory) / f"candidate_{tag}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"speed_profile_candidate_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def build(pair: dict[str, Any], device: str, seed: int, directory: str, tag: str) -> tuple[Any, Any, list[Any], str]:
    """(Model, ModelNew, inputs, weights) as the judge builds them at the problem's own sizes."""
    import torch

    from autotriton.validation.timing import full_size_setup
    module, init_inputs, sets = full_size_setup({"source": pair["problem_source"], "init_seed": seed, "seeds": [seed + 1]},
                                                device)
    torch.manual_seed(seed)
    ref = module.Model(*init_inputs)
    torch.manual_seed(seed)
    new = load_candidate(pair["candidate_source"], directory, tag).ModelNew(*init_inputs)
    weights = "none"
    if isinstance(ref, torch.nn.Module) and isinstance(new, torch.nn.Module):
        ref_state, new_state = ref.state_dict(), new.state_dict()
        if ref_state and set(ref_state) == set(new_state) and all(ref_state[k].shape == new_state[k].shape for k in ref_state):
            new.load_state_dict(ref_state)
            weights = "loaded from the reference"
        ref, new = ref.to(device).eval(), new.to(device).eval()
    return ref, new, sets[0], weights


def max_abs_err(expected: Any, actual: Any) -> float | None:  # a sanity check, not the judge's comparison
    import torch

    if isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor) and expected.shape == actual.shape:
        return float((expected.double() - actual.double()).abs().max()) if expected.numel() else 0.0
    if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)) and len(expected) == len(actual):
        errs = [e for e in (max_abs_err(x, y) for x, y in zip(expected, actual)) if e is not None]
        return max(errs) if errs else None
    return None


@contextlib.contextmanager
def count_triton_launches() -> Iterator[list[str]]:
    """Names of the Triton kernels launched inside the block (compiled or interpreted)."""
    from triton.runtime.jit import JITFunction

    classes: list[Any] = [JITFunction]
    with contextlib.suppress(ImportError):
        from triton.runtime.interpreter import InterpretedFunction

        classes.append(InterpretedFunction)
    seen: list[str] = []
    originals = {cls: cls.run for cls in classes}

    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            seen.extend([] if kwargs.get("warmup") else [getattr(getattr(self, "fn", None), "__name__", "?")])
            return original(self, *args, **kwargs)
        return run

    for cls, original in originals.items():
        cls.run = wrap(original)
    try:
        yield seen
    finally:
        for cls, original in originals.items():
            cls.run = original


def wall_ms(fn: Callable[[], Any], runs: int, sync: Callable[[], None]) -> float:
    """Wall time per call, calls back to back (host and GPU overlap as in a real pipeline)."""
    import torch

    with torch.no_grad():
        fn()
        sync()
        start = time.perf_counter()
        for _ in range(runs):
            fn()
        sync()
    return (time.perf_counter() - start) * 1e3 / runs


def profile_kernels(fn: Callable[[], Any], forwards: int) -> dict[str, Any]:
    """GPU kernel time and launches per forward, and the top kernels, from torch.profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad():
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(forwards):
                fn()
            torch.cuda.synchronize()
    per_name: dict[str, list[float]] = {}
    for evt in prof.events():
        us = getattr(evt, "device_time", None) or getattr(evt, "cuda_time", 0.0) or 0.0
        if str(getattr(evt, "device_type", "")).endswith("CUDA") and us:
            per_name.setdefault(evt.name, []).append(us)
    total_us = sum(sum(v) for v in per_name.values())
    top = sorted(per_name.items(), key=lambda kv: -sum(kv[1]))[:8]
    return {"kernel_ms": total_us / forwards / 1e3,
            "launches": sum(len(v) for v in per_name.values()) / forwards,
            "kernels": [{"name": n[:120], "per_forward": len(v) / forwards, "ms": sum(v) / forwards / 1e3} for n, v in top],
            "by_name": {n: sum(v) / forwards / 1e3 for n, v in per_name.items()}}


def graph_ms(fn: Callable[[], Any], runs: int) -> float | None:
    """The forward captured in a CUDA graph and replayed: its kernels without Python or launch
    cost (judge-like timing: L2 flushed). None when the forward cannot be captured."""
    import torch

    from autotriton.validation.timing import bench
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.no_grad(), torch.cuda.stream(stream):
            for _ in range(3):
                fn()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(graph):
            fn()
        return bench(graph.replay, runs)["median_ms"]
    except Exception as exc:  # noqa: BLE001 - a forward that syncs or reads a value cannot be captured
        print(f"  (no CUDA graph: {type(exc).__name__}: {str(exc)[:120]})", file=sys.stderr)
        return None


def time_side(fn: Callable[[], Any], device: str, runs: int, profile: bool) -> dict[str, Any]:
    import torch

    if device == "cpu":  # smoke mode: the interpreter; no events, no L2 flush, no GPU profile
        ms = wall_ms(fn, runs, lambda: None)
        return {"judge_ms": ms, "host_ms": ms, "steady_ms": ms}
    from autotriton.validation.timing import bench

    out = bench(fn, runs)
    side = {"judge_ms": out["median_ms"], "host_ms": out["host_ms"], "steady_ms": wall_ms(fn, runs, torch.cuda.synchronize)}
    if profile:
        side.update(profile_kernels(fn, forwards=5))
    return side


def kernel_split(by_name: dict[str, float], pattern: re.Pattern[str], skip_triton: bool = False) -> float:
    """GPU ms per forward in kernels whose name matches (compile's own Triton kernels skipped on request)."""
    return sum(ms for name, ms in by_name.items() if pattern.search(name) and not (skip_triton and name.startswith("triton")))


def profile_pair(pair: dict[str, Any], args: argparse.Namespace, directory: str, tag: str) -> dict[str, Any]:
    import torch

    device = args.device
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    ref, new, inputs, weights = build(pair, device, args.seed, directory, tag)
    row: dict[str, Any] = {"name": pair["name"], "candidate_key": pair.get("candidate_key"), "weights": weights,
                           "sampling": {k: (pair.get("sampling") or {}).get(k) for k in ("dynamic", "dynamic_parameters")},
                           "judge_verdict": pair.get("verdict")}
    with torch.no_grad():
        expected = ref(*inputs)
        with count_triton_launches() as names:
            got = new(*inputs)
            sync()
    row["max_abs_err"] = max_abs_err(expected, got)
    row["triton_launches"] = len(names)
    src = pair["candidate_source"]
    row["source"] = {"dot_kernels": src.count("tl.dot("), "runtime_size_args": len(_size_params(src)),
                     "baked_configs": len(re.findall(r"\bnum_warps=\d+", src)),  # launch sites with a fixed config
                     "gather_kernels": sorted({n for n in names if GATHER_NAMES.search(n)})}
    row["eager"] = time_side(lambda: ref(*inputs), device, args.runs, args.profile)
    if not args.no_compile:
        try:
            compiled = torch.compile(ref)
            with torch.no_grad():
                compiled(*inputs)
            row["compiled"] = time_side(lambda: compiled(*inputs), device, args.runs, args.profile)
        except Exception as exc:  # noqa: BLE001 - no compile baseline; the others still count
            row["compiled"] = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    row["candidate"] = time_side(lambda: new(*inputs), device, args.runs, args.profile)
    cand = row["candidate"]
    if device == "cuda":
        cand["graph_ms"] = graph_ms(lambda: new(*inputs), args.runs)
        if "kernel_ms" in cand:
            # GPU idle share of a back-to-back call: the host (Python, allocation, launches) is the bottleneck
            cand["host_share"] = max(0.0, 1.0 - cand["kernel_ms"] / cand["steady_ms"])
            cand["gather_ms"] = kernel_split(cand["by_name"], GATHER_NAMES)
            comp = row.get("compiled") or {}
            if "by_name" in comp:
                comp["library_ms"] = kernel_split(comp["by_name"], LIBRARY_NAMES, skip_triton=True)
    for side in ("eager", "compiled"):
        other = row.get(side) or {}
        for key in ("judge_ms", "steady_ms"):
            if other.get(key) and cand.get(key):
                row[f"speedup_vs_{side}_{key[:-3]}"] = other[key] / cand[key]
    if cand.get("graph_ms") and (row.get("compiled") or {}).get("judge_ms"):
        row["speedup_vs_compiled_if_launch_free"] = row["compiled"]["judge_ms"] / cand["graph_ms"]
    for side in ("eager", "compiled", "candidate"):
        (row.get(side) or {}).pop("by_name", None)
    return row


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rows if "error" not in r]

    def gm(key: str, subset: list[dict[str, Any]] | None = None) -> float | None:
        return geomean([r[key] for r in (ok if subset is None else subset) if r.get(key)])

    def median(side: str, key: str) -> float | None:
        values = [r[side][key] for r in ok if (r.get(side) or {}).get(key)]
        return statistics.median(values) if values else None

    cands = [r["candidate"] for r in ok]
    shares = [c["host_share"] for c in cands if "host_share" in c]
    decomposed = [r for r in ok if r["source"]["gather_kernels"]]
    dynamic = [r for r in ok if r["source"]["runtime_size_args"]]
    return {
        "pairs": len(rows), "profiled": len(ok), "errors": len(rows) - len(ok),
        "geomean_speedup_vs_eager": gm("speedup_vs_eager_judge"),
        "geomean_speedup_vs_compiled": gm("speedup_vs_compiled_judge"),
        "geomean_speedup_vs_compiled_steady": gm("speedup_vs_compiled_steady"),
        "geomean_speedup_vs_compiled_if_launch_free": gm("speedup_vs_compiled_if_launch_free"),
        "share_host_bound": (sum(s > 0.5 for s in shares) / len(shares)) if shares else None,
        "suspects": {
            "a_fixed_tuning": {  # candidate GEMM/conv templates (configs baked at capture) vs compile's libraries
                "candidates_with_dot_kernels": sum(1 for r in ok if r["source"]["dot_kernels"]),
                "baked_launch_configs": sum(r["source"]["baked_configs"] for r in ok),
                "compiled_library_ms_total": sum((r.get("compiled") or {}).get("library_ms") or 0 for r in ok),
                "candidate_kernel_ms_total": sum(c.get("kernel_ms") or 0 for c in cands),
            },
            "b_dynamic_shapes": {
                "with_runtime_sizes": len(dynamic), "static": len(ok) - len(dynamic),
                "geomean_vs_compiled_dynamic": gm("speedup_vs_compiled_judge", dynamic),
                "geomean_vs_compiled_static": gm("speedup_vs_compiled_judge", [r for r in ok if r not in dynamic]),
            },
            "c_decomposed_convolutions": {
                "with_gather_kernels": len(decomposed),
                "geomean_vs_compiled_decomposed": gm("speedup_vs_compiled_judge", decomposed),
                "geomean_vs_compiled_other": gm("speedup_vs_compiled_judge", [r for r in ok if r not in decomposed]),
                "gather_share_of_kernel_time": (sum(c.get("gather_ms") or 0 for c in cands)
                                                / (sum(c.get("kernel_ms") or 0 for c in cands) or math.inf)),
            },
            "d_host_work": {
                "median_host_ms": {side: median(side, "host_ms") for side in ("eager", "compiled", "candidate")},
                "median_launches": {side: median(side, "launches") for side in ("compiled", "candidate")},
                "median_host_share": statistics.median(shares) if shares else None,
            },
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--db", help="warehouse file (opened read-only); its validated pairs are profiled")
    source.add_argument("--pairs", help="JSONL or Parquet file (or folder) of {problem_source, candidate_source} rows")
    parser.add_argument("--out", required=True, help="JSONL written: one line per pair, then a summary line")
    parser.add_argument("--require", default="own_and_odd_sizes", choices=["own_and_odd_sizes", "own_sizes"],
                        help="with --db: which validated pairs (Warehouse.validated_pairs)")
    parser.add_argument("--limit", type=int, default=0, help="profile at most this many pairs (0: all)")
    parser.add_argument("--runs", type=int, default=30, help="timed calls per measurement")
    parser.add_argument("--seed", type=int, default=1234, help="model seed (the judge's default validation.seed)")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile of the reference")
    parser.add_argument("--no-profile", dest="profile", action="store_false", help="skip torch.profiler")
    parser.add_argument("--smoke", action="store_true", help="one pair, 3 runs, no torch.compile (the CPU test)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.limit, args.runs, args.no_compile = 1, 3, True
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: candidates run in the interpreter
        args.profile = False
    import torch

    if args.device == "cpu":
        from autotriton.validation.triton_compat import apply_interpreter_fixes

        apply_interpreter_fixes()  # as the judge's CPU candidate process does (numpy >= 2.4, autotune)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda needs a CUDA GPU; on a CPU machine use --device cpu --smoke")
    rows: list[dict[str, Any]] = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with out.open("w", encoding="utf-8") as f, tempfile.TemporaryDirectory(prefix="speed-profile-") as tmp:
        for i, pair in enumerate(read_pairs(args)):
            if args.limit and i >= args.limit:
                break
            print(f"[{i + 1}] {pair['name']} ...", file=sys.stderr, flush=True)
            try:
                row = profile_pair(pair, args, tmp, str(i))
            except Exception as exc:  # noqa: BLE001 - one broken pair must not end the study
                row = {"name": pair["name"], "candidate_key": pair.get("candidate_key"),
                       "error": f"{type(exc).__name__}: {str(exc)[:500]}"}
            rows.append(row)
            f.write(json.dumps(row) + "\n")
            f.flush()
            print(f"    vs eager {row.get('speedup_vs_eager_judge')}, vs compile {row.get('speedup_vs_compiled_judge')}, "
                  f"host share {(row.get('candidate') or {}).get('host_share')}, {row.get('error', '')}"
                  f" ({time.monotonic() - started:.0f}s)", file=sys.stderr, flush=True)
            if args.device == "cuda" and not args.no_compile:
                torch._dynamo.reset()  # each problem's compile starts clean; no recompile limits hit
        summary = summarise(rows)
        f.write(json.dumps({"summary": summary}) + "\n")
    print(json.dumps(summary, indent=1))
    return 0 if rows and len(rows) > summary["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
