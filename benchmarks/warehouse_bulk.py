"""Warehouse throughput: bulk puts, idempotent re-ingest, reads, validated pairs, Parquet export.

    .venv/bin/python benchmarks/warehouse_bulk.py --n 5000 [--db /tmp/bench.duckdb]

Writes N full chains (source, module, problem, candidate, verdict) with realistic text sizes into a
fresh file and prints one JSON line of timings and rows/s. Record results in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from autotriton.records import Candidate, HarvestedModule, Problem, SourceRef, Verdict, Violation
from autotriton.versioning import code_version
from autotriton.warehouse import Warehouse
from autotriton.warehouse.schema import TABLES

BODY = "\n".join(f"    y = torch.relu(x * {k}) + y  # layer {k}" for k in range(40))  # ~2 KB of source


def chains(n: int):
    for i in range(n):
        ref = SourceRef("github", f"owner/repo{i % 500}", "c0ffee", f"models/m{i}.py", "MIT", stars=i % 1000)
        src = f"import torch\nclass Block{i}(torch.nn.Module):\n    def forward(self, x):\n        y = x\n{BODY}\n        return y + {i}\n"
        module = HarvestedModule(ref, f"Block{i}", src * 3, src)
        problem = Problem(src.replace(f"Block{i}", "Model") + "def get_inputs():\n    return [torch.randn(8, 8)]\n",
                          f"block_{i}", module_key=module.key, source_key=ref.key,
                          input_spec=[{"shape": [8, 8], "dtype": "float32"}], op_tags=["relu", "mul", "add"])
        cand = Candidate(problem.key, f"import triton\n@triton.jit\ndef k{i}(x_ptr):\n    pass\n{BODY}\n",
                         reasoning="fuse relu and mul " * 40, instruction="write Triton", generator="replay",
                         sampling={"temperature": 0.7, "seed": i}, usage={"prompt_tokens": 900}, raw_output="x" * 3000)
        ok = i % 3 != 0
        verdict = Verdict(cand.key, problem.key, "correct" if ok else "incorrect", correct=ok, rule_ok=True, compiled=True,
                          violations=[] if ok else [Violation("R1", "bad", 3)],
                          trials=[{"seed": s, "ok": ok, "max_abs_err": 0.0} for s in range(3)],
                          triton_kernels_launched=[f"k{i}"], aten_ops=[], versions={"torch": "2.13"},
                          judge_config_hash="j", elapsed_s=1.0)
        yield ref, module, problem, cand, verdict


def timed(label: str, results: dict, fn):
    start = time.perf_counter()
    value = fn()
    results[label] = round(time.perf_counter() - start, 3)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=5000, help="chains to write")
    parser.add_argument("--batch", type=int, default=1000, help="records per put")
    parser.add_argument("--db", type=Path, default=None, help="warehouse file (default: a fresh temp file)")
    args = parser.parse_args()
    path = args.db or Path(tempfile.mkdtemp(prefix="whbench-")) / "bench.duckdb"
    path.unlink(missing_ok=True)
    data = list(chains(args.n))
    res: dict = {"n": args.n, "batch": args.batch, "cpus": os.cpu_count(), "machine": platform.processor() or platform.machine(),
                 "commit": code_version()}
    with Warehouse(path) as wh:
        run = wh.start_run("bench", {"n": args.n})

        def write_all():
            for lo in range(0, args.n, args.batch):
                part = data[lo:lo + args.batch]
                wh.put_modules(run, [d[1] for d in part])
                wh.put_problems(run, [d[2] for d in part])
                wh.put_candidates(run, [d[3] for d in part])
                wh.put_verdicts(run, [d[4] for d in part])

        # Content keys (AST-normalised source, autotriton/hashing.py) are part of every put; time them alone.
        timed("keys_s", res, lambda: [(d[1].key, d[2].key, d[3].key, d[4].key) for d in data])
        # Record -> row conversion (includes the keys); the rest of write_s is Arrow + DuckDB.
        timed("to_row_s", res, lambda: [(TABLES["sources"].to_row(d[0]), TABLES["modules"].to_row(d[1]),
                                          TABLES["problems"].to_row(d[2]), TABLES["candidates"].to_row(d[3]),
                                          TABLES["verdicts"].to_row(d[4])) for d in data])
        timed("write_s", res, write_all)
        res["db_s"] = round(res["write_s"] - res["to_row_s"], 3)
        res["db_rows_per_s"] = round(5 * args.n / max(res["db_s"], 1e-6))
        timed("reingest_s", res, write_all)
        res["write_rows_per_s"] = round(5 * args.n / res["write_s"])
        res["load_avg_1m"] = os.getloadavg()[0]
        res["reingest_rows_per_s"] = round(5 * args.n / res["reingest_s"])
        problems = timed("read_problems_s", res, lambda: wh.problems())
        assert len(problems) == args.n
        pairs = timed("validated_pairs_s", res, wh.validated_pairs)
        res["pairs"] = len(pairs)
        from autotriton.warehouse.exports import pair_rows

        rows, filt = timed("pair_rows_s", res, lambda: pair_rows(wh))
        timed("export_parquet_s", res, lambda: wh.export_parquet("pairs", rows, filt, run, out_dir=path.parent))
        timed("lineage_s", res, lambda: wh.lineage(data[args.n // 2][4].key))
    res["file_mb"] = round(path.stat().st_size / 2**20, 1)  # after close: the WAL is checkpointed
    print(json.dumps(res))


if __name__ == "__main__":
    main()
