"""How long the judge's static checks take per candidate (they run inside the GRPO reward loop).

Measures `check_rules` on the realistic clean candidates of tests/validation_rules_helpers.py
(median of N repeats each, after one warm-up) and `compile_check` (source-only, sm_90, cold Triton
cache) per candidate, and prints a Markdown table for benchmarks/RESULTS.md. Target: check_rules < 50 ms for
a typical candidate. The machine's load average is printed too: on a shared box it dominates wall
time, so CPU time (process_time) is reported as well.

    .venv/bin/python benchmarks/validation_rules_speed.py [--repeats 20] [--no-compile]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
# a cold Triton cache, so compile_check timings are real compiles (set before triton is imported)
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="autotriton-bench-triton-cache-")

from validation_rules_helpers import GOOD_CANDIDATES  # noqa: E402

from autotriton.validation.rules import check_rules  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20, help="timed repeats per candidate (median reported)")
    parser.add_argument("--no-compile", action="store_true", help="skip the sm_90 compile_check timing")
    args = parser.parse_args()

    import libcst as cst

    rows = []
    for name, source in GOOD_CANDIDATES.items():
        assert check_rules(source) == [], name  # warm-up, and the corpus must stay clean
        rule_times, cpu_times, parse_times = [], [], []
        for _ in range(args.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            check_rules(source)
            rule_times.append(time.perf_counter() - t0)
            cpu_times.append(time.process_time() - c0)
            t0 = time.perf_counter()
            cst.parse_module(source)
            parse_times.append(time.perf_counter() - t0)
        compile_s, compiled = None, ""
        if not args.no_compile and name not in ("inductor_style", "kernelbook_style"):  # those import torch._inductor
            from autotriton.validation.compile_check import compile_check

            t0 = time.perf_counter()
            report = compile_check(source)
            compile_s = time.perf_counter() - t0
            assert report["ok"], report["error"]
            compiled = f"{report['n_variants']} / {len(report['skipped'])}"
        rows.append((name, len(source.splitlines()), statistics.median(rule_times) * 1e3, statistics.median(cpu_times) * 1e3,
                     statistics.median(parse_times) * 1e3, compile_s, compiled))

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    load = os.getloadavg()
    print(f"commit {commit}, {os.cpu_count()} CPU cores, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}\n")
    print("| candidate | lines | check_rules wall ms (median) | check_rules CPU ms | libcst parse wall ms | compile_check sm_90 s | kernels compiled / skipped |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, lines, rule_ms, cpu_ms, parse_ms, compile_s, compiled in rows:
        c = f"{compile_s:.2f}" if compile_s is not None else "n/a"
        print(f"| {name} | {lines} | {rule_ms:.1f} | {cpu_ms:.1f} | {parse_ms:.1f} | {c} | {compiled or 'n/a'} |")


if __name__ == "__main__":
    main()
