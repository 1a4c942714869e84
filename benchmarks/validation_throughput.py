"""Judge throughput: warm JudgePool (validate_many) vs a cold process per candidate.

The baseline is KernelBench's style: a fresh `python` per candidate, which imports torch and
triton, starts the judge, initialises the device, judges one candidate and exits. The warm pool
pays imports and device start-up once per worker and forks each candidate from a clean template.
Both use the same judge code, so their verdicts must be identical (checked on the baseline sample).

    # on one H200 (from the repository root):
    PYTHONPATH=. python benchmarks/validation_throughput.py --device cuda --n 100 --baseline-sample 8
    # smaller, on a CPU (Triton interpreter):
    PYTHONPATH=. python benchmarks/validation_throughput.py --device cpu --n 20 --baseline-sample 3

Reports candidates/s for both, the speed-up, and the judge's own overhead per candidate: wall
time per candidate minus the candidate's own import, compile and trial time (what remains is
process creation, data transfer, reference and comparison). Targets: >= 10x the baseline's
throughput and < 0.3 s of overhead per candidate. torch, triton, numpy, pydantic, stdlib only.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "judge"

# (problem, candidate) pairs: honest kernels of several kinds and quick-to-judge cheats.
PAIRS = [
    ("relu", "correct_relu"), ("rowsum", "correct_rowsum"), ("softmax", "correct_softmax"), ("matmul", "correct_matmul"),
    ("linear_relu", "correct_linear_relu"), ("matmul", "cheat_matmul_fallback"), ("relu", "cheat_never_launched"),
    ("relu", "cheat_cached_results"), ("relu", "cheat_input_mutation"), ("tiny_scale", "cheat_zero_output"),
    ("relu", "cheat_wrong_shape"), ("relu", "cheat_nan_output"), ("relu", "cheat_aten_ops"), ("conv_relu", "cheat_conv_fallback"),
]
# A decorated function's name: `@triton.jit` (possibly with arguments and further decorators) then `def NAME`.
_KERNEL_NAME = re.compile(r"@triton\.jit[^\n]*\n(?:@[^\n]*\n)*def (\w+)")


def variant(source: str, k: int) -> str:
    """The k-th variant of a candidate: each of its Triton kernels renamed `NAME_v{k}` (k = 0: as it is).

    Every variant differs from every other one in what the judge keys and compiles (the kernels' own
    source), while its behaviour, and so its verdict, stays the original's."""
    if k == 0:
        return source
    for name in _KERNEL_NAME.findall(source):
        source = re.sub(rf"\b{name}\b", f"{name}_v{k}", source)
    return source


def make_jobs(n: int) -> list[tuple[str, str, str]]:
    """n (name, problem_source, candidate_source) jobs, every candidate distinct: the pairs in turn,
    round k using the k-th variant of each candidate."""
    jobs = []
    for i in range(n):
        prob, cand = PAIRS[i % len(PAIRS)]
        k = i // len(PAIRS)
        source = variant((DATA / "candidates" / f"{cand}.py").read_text(), k)
        jobs.append((f"{cand}[v{k}]", (DATA / "problems" / f"{prob}.py").read_text(), source))
    return jobs


def verdict_signature(v) -> dict:
    return {"status": v.status, "rules": sorted({x.rule for x in v.violations}), "correct": v.correct}


def own_time(v) -> float:
    """The candidate's own work inside its process: import (kernel definitions), trials (JIT compile
    on the first one), sm_90 compile check and timing."""
    t = sum(float(tr.get("elapsed_s") or 0.0) for tr in v.trials) + float(v.timing.get("candidate_import_s") or 0.0)
    for kernel in (v.compile_report.get("kernels") or {}).values():
        if isinstance(kernel, dict):
            t += float(kernel.get("compile_s") or 0.0)
    t += float((v.timing.get("candidate") or {}).get("elapsed_s") or 0.0)
    return t


def one(problem_path: str, candidate_path: str, device: str, trials: int, time_kernels: bool) -> None:
    """Baseline mode: judge one candidate in this fresh process (cold start) and print its signature."""
    from autotriton.validation import ValidationConfig, validate_candidate

    cfg = ValidationConfig(device=device, trials=trials, workers=1, time_kernels=time_kernels)
    v = validate_candidate(Path(problem_path).read_text(), Path(candidate_path).read_text(), cfg)
    print(json.dumps(verdict_signature(v)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    ap.add_argument("--n", type=int, default=100, help="candidates through the warm pool")
    ap.add_argument("--baseline-sample", type=int, default=8, help="candidates judged by cold processes (throughput extrapolates)")
    ap.add_argument("--workers", type=int, default=0, help="warm workers (0: one per GPU / CPU core)")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--time-kernels", action="store_true", help="also measure speedups (GPU; slower)")
    ap.add_argument("--out", type=Path, default=None, help="write the results as JSON here")
    ap.add_argument("--one", nargs=2, metavar=("PROBLEM", "CANDIDATE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        one(args.one[0], args.one[1], args.device, args.trials, args.time_kernels)
        return

    from autotriton.validation import JudgePool, ValidationConfig
    from autotriton.validation.pool import resolve_device

    device = resolve_device(args.device)
    cfg = ValidationConfig(device=device, trials=args.trials, workers=args.workers, time_kernels=args.time_kernels)
    jobs = make_jobs(args.n)

    t0 = time.perf_counter()
    with JudgePool(cfg) as pool:
        startup = time.perf_counter() - t0
        t1 = time.perf_counter()
        verdicts = pool.validate_many([(p, c) for _, p, c in jobs], progress=True)
        warm_wall = time.perf_counter() - t1
        device_name, n_workers = pool.device_name, pool.n_workers
    overheads = [v.elapsed_s - own_time(v) for v in verdicts]

    sample = jobs[: args.baseline_sample]
    tmp = Path(tempfile.mkdtemp(prefix="autotriton-bench-"))
    base_sigs, base_times = [], []
    for k, (name, p, c) in enumerate(sample):
        (tmp / "p.py").write_text(p)
        (tmp / "c.py").write_text(c)
        t = time.perf_counter()
        cmd = [sys.executable, __file__, "--one", str(tmp / "p.py"), str(tmp / "c.py"), "--device", device, "--trials", str(args.trials)]
        if args.time_kernels:
            cmd.append("--time-kernels")
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=900)
        base_times.append(time.perf_counter() - t)
        if out.returncode != 0:
            raise SystemExit(f"baseline process for {name} failed:\n{out.stderr[-3000:]}")
        base_sigs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"baseline {k + 1}/{len(sample)} {name}: {base_times[-1]:.1f} s", file=sys.stderr)

    identical = all(verdict_signature(v) == b for v, b in zip(verdicts, base_sigs))
    mismatches = [(j[0], verdict_signature(v), b) for j, v, b in zip(sample, verdicts, base_sigs) if verdict_signature(v) != b]
    warm_rate = len(jobs) / warm_wall
    base_rate = len(sample) / sum(base_times) if base_times else float("nan")
    statuses: dict[str, int] = {}
    for v in verdicts:
        statuses[v.status] = statuses.get(v.status, 0) + 1
    result = {
        "device": device_name, "workers": n_workers, "candidates": len(jobs), "trials": args.trials, "time_kernels": args.time_kernels,
        "pool_startup_s": round(startup, 2), "warm_wall_s": round(warm_wall, 2), "warm_candidates_per_s": round(warm_rate, 3),
        "warm_s_per_candidate": round(warm_wall / len(jobs), 3),
        "baseline_sample": len(sample), "baseline_s_per_candidate": round(statistics.mean(base_times), 2) if base_times else None,
        "baseline_candidates_per_s": round(base_rate, 4), "speedup_vs_baseline": round(warm_rate / base_rate, 1) if base_times else None,
        "judge_overhead_s_median": round(statistics.median(overheads), 3), "judge_overhead_s_p90": round(sorted(overheads)[int(0.9 * (len(overheads) - 1))], 3),
        "verdicts_identical_on_sample": identical, "mismatches": mismatches, "statuses": statuses,
    }
    print(json.dumps(result, indent=2))
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
