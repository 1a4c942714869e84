"""How much a fresh CUDA context costs a judge candidate, alone and under concurrency (GPU only).

The judge forks every candidate from a template that imported torch and triton but never
touched CUDA (validation/worker.py), so each candidate creates its own CUDA context. This
benchmark measures that cost the same way: a parent imports torch, then forks N children at
once; each child creates a context (`torch.empty(1, device="cuda")`, synchronised), reports how
long that took, and exits; the parent measures how long each child took to be reaped after it
reported (context teardown at exit). Repeated for several N, so one sees whether context
creation or teardown serialises in the driver.

    python3 benchmarks/cuda_start_probe.py --concurrency 1,4,8,16 --rounds 2

Prints one JSON line per N (medians and maxima in seconds); needs only torch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time


def child(write_fd: int, hold_s: float) -> None:
    import torch

    t0 = time.monotonic()
    torch.cuda.init()
    x = torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    t1 = time.monotonic()
    y = (x + 1).sum().item()  # one kernel launch: the first launch loads the module
    t2 = time.monotonic()
    time.sleep(hold_s)
    os.write(write_fd, json.dumps({"init_s": t1 - t0, "first_kernel_s": t2 - t1, "done_at": time.monotonic(), "y": y}).encode() + b"\n")
    os._exit(0)


def round_of(n: int, hold_s: float) -> dict:
    read_fd, write_fd = os.pipe()
    start = time.monotonic()
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            try:
                child(write_fd, hold_s)
            finally:
                os._exit(1)
        pids.append(pid)
    os.close(write_fd)
    reaped = {}
    for _ in pids:
        pid, _status = os.wait()
        reaped[pid] = time.monotonic()
    wall = time.monotonic() - start
    with os.fdopen(read_fd) as f:
        reports = [json.loads(line) for line in f if line.strip()]
    last_done = max(r["done_at"] for r in reports) if reports else start
    return {"n": n, "wall_s": wall, "init_s": [r["init_s"] for r in reports],
            "first_kernel_s": [r["first_kernel_s"] for r in reports],
            "teardown_after_last_report_s": max(reaped.values()) - last_done}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", default="1,4,8,16", help="comma-separated numbers of children started at once")
    ap.add_argument("--rounds", type=int, default=2, help="rounds per concurrency (the first warms the driver's caches)")
    ap.add_argument("--hold", type=float, default=0.0, help="seconds each child keeps its context before exiting")
    args = ap.parse_args()
    import torch  # noqa: F401  (imported before forking, like the judge's template; CUDA untouched)

    for n in [int(x) for x in args.concurrency.split(",")]:
        rows = [round_of(n, args.hold) for _ in range(args.rounds)]
        last = rows[-1]
        med = lambda xs: round(statistics.median(xs), 3) if xs else None  # noqa: E731
        print(json.dumps({"cuda_start": {
            "children": n, "rounds": args.rounds,
            "wall_s_per_round": [round(r["wall_s"], 3) for r in rows],
            "init_median_s": med(last["init_s"]), "init_max_s": round(max(last["init_s"]), 3) if last["init_s"] else None,
            "first_kernel_median_s": med(last["first_kernel_s"]),
            "teardown_after_last_report_s": round(last["teardown_after_last_report_s"], 3),
            "contexts_per_s": round(n / last["wall_s"], 2)}}), flush=True)


if __name__ == "__main__":
    main()
