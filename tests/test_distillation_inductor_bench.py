"""benchmarks/inductor_l1.py's CPU-side stages on recorded captures: convert writes one outcome per
problem (and replay lines for the converted ones), summary recomputes the figures from a run's
files -- what a user does with the tarball a GPU run brings back."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "data" / "inductor"


def load_bench():
    spec = importlib.util.spec_from_file_location("inductor_l1_bench", ROOT / "benchmarks" / "inductor_l1.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_convert_and_summary_stages_on_recorded_captures(tmp_path, capsys):
    bench = load_bench()
    names = ["pointwise_relu", "template_mm", "aten_fallback_avg_pool3d"]
    suite = tmp_path / "suite.jsonl"
    run = tmp_path / "run"
    (run / "captures").mkdir(parents=True)
    with suite.open("w") as f:
        for name in names:
            capture = json.loads((FIXTURES / f"{name}.json").read_text())
            f.write(json.dumps({"id": capture["id"], "name": capture["name"], "source": capture["source"]}) + "\n")
            shutil.copy(FIXTURES / f"{name}.json", run / "captures" / f"{bench.safe_id(capture['id'])}.json")
        f.write(json.dumps({"id": "never/captured", "name": "x", "source": "class Model: pass"}) + "\n")

    assert bench.main(["convert", "--suite", str(suite), "--out", str(run)]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["converted"] == 2 and summary["problems"] == 4
    assert summary["conversion_outcomes"] == {"ok": 2, "aten_fallback": 1, "not_captured": 1}
    outcomes = [json.loads(line) for line in (run / "conversions.jsonl").read_text().splitlines()]
    assert [o["ok"] for o in outcomes] == [True, True, False, False]
    assert not any(o["extern_kernels_in_code"] for o in outcomes)
    replay = [json.loads(line) for line in (run / "replay.jsonl").read_text().splitlines()]
    assert len(replay) == 2 and all(r["teacher"] == "inductor" and "class ModelNew" in r["code"] for r in replay)

    # a judged run (here: one verdict written by a run killed before it finished judging)
    (run / "verdicts.partial.jsonl").write_text(json.dumps(
        {"id": outcomes[0]["id"], "status": "correct", "correct": True, "rule_ok": True, "speedup": 2.0}) + "\n")
    assert bench.main(["summary", "--suite", str(suite), "--out", str(run)]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["validated"] == 1 and summary["validated_yield"] == 0.25
    assert summary["verdicts"] == {"correct": 1, "not_judged": 1}
    assert summary["speedup_geomean"] == 2.0 and summary["fast_1"] == 0.25
    assert summary["extern_kernels_in_kept"] == []
