"""Harvest yield on real open-source code: what share of nn.Module classes become runnable problems.

Run on demand (not a test). Fetches permissively licensed PyTorch model libraries from PyPI as
source distributions (`pip download --no-deps --no-binary :all:`), unpacks them, harvests the
chosen sub-folders twice (the second harvest must add nothing) and prints the figures, the
rejection reasons and, with --json, one JSON object. Record results in benchmarks/RESULTS.md.

    .venv/bin/python benchmarks/harvest_yield.py                      # timm 1.0.15, timm/layers
    .venv/bin/python benchmarks/harvest_yield.py --package timm==1.0.15 --subdir timm/layers --subdir timm/models/_efficientnet_blocks.py
    .venv/bin/python benchmarks/harvest_yield.py --path /some/clone   # any local clone instead
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path

from autotriton.harvesting import HarvestConfig, HarvestState, harvest_local


def fetch_sdist(spec: str, into: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", spec, "-d", str(into), "-q"],
                   check=True, capture_output=True, text=True)
    archive = next(p for p in into.iterdir() if p.name.endswith((".tar.gz", ".zip")))
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return next(p for p in into.iterdir() if p.is_dir())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--package", default="timm==1.0.15", help="PyPI sdist to fetch (ignored with --path)")
    ap.add_argument("--path", default=None, help="harvest this local clone instead of a PyPI sdist")
    ap.add_argument("--subdir", action="append", default=None, help="sub-folders/files to harvest (default timm/layers)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.path) if args.path else fetch_sdist(args.package, Path(tmp))
        subdirs = args.subdir or (["timm/layers"] if not args.path else ["."])
        state = HarvestState(Path(tmp) / "state.json")
        config = HarvestConfig(state_path=str(Path(tmp) / "state.json"))
        totals: Counter[str] = Counter()
        rejected: Counter[str] = Counter()
        file_errors: Counter[str] = Counter()
        missing_reason = 0
        t0 = time.monotonic()
        for sub in subdirs:
            result = harvest_local(root / sub, config, progress=True, state=state, commit_state=True)
            s = result.summary()
            totals.update({k: s[k] for k in ("files", "modules", "runnable", "duplicates")})
            rejected.update(s["rejected"])
            file_errors.update(s["file_errors"])
            missing_reason += sum(1 for p in result.problems if p.status != "runnable" and not p.reject_reason)
        first_s = time.monotonic() - t0
        again = Counter()
        for sub in subdirs:
            result = harvest_local(root / sub, config, state=state, commit_state=True)
            again.update({"modules": len(result.modules), "problems": len(result.problems)})
        distinct = totals["modules"] - totals["duplicates"]
        figures = {
            "source": args.path or args.package, "subdirs": subdirs, "files": totals["files"], "module_classes": totals["modules"],
            "duplicates": totals["duplicates"], "distinct_modules": distinct, "runnable": totals["runnable"],
            "runnable_pct": round(100.0 * totals["runnable"] / max(1, distinct), 1),
            "rejected": dict(rejected.most_common()), "file_errors": dict(file_errors), "rejections_without_reason": missing_reason,
            "second_harvest_new": dict(again), "seconds": round(first_s, 1),
        }
    if args.json:
        print(json.dumps(figures))
    else:
        for k, v in figures.items():
            print(f"{k:>26}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
