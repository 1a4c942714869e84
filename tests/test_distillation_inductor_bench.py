"""benchmarks/inductor_l1.py's CPU-side stages on recorded captures: convert writes one outcome per
problem (and replay lines for the converted ones), summary recomputes the figures from a run's
files -- what a user does with the tarball a GPU run brings back."""

from __future__ import annotations

import json

from inductor_helpers import load_bench, seeded_run


def test_convert_and_summary_stages_on_recorded_captures(tmp_path, capsys):
    bench = load_bench()
    suite, run = seeded_run(tmp_path, bench, ["pointwise_relu", "template_mm", "aten_fallback_avg_pool3d"])
    with suite.open("a") as f:
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


def test_capture_subprocesses_are_spread_round_robin_over_the_visible_gpus(tmp_path, monkeypatch, capsys):
    """Each capture subprocess sees one GPU (CUDA_VISIBLE_DEVICES), taken in turn from the parent's
    visible GPUs, and gets the GEMM/conv config cap. (No GPU here: the captures themselves fail at
    load and say so, which is all the bookkeeping needs.)"""
    bench = load_bench()
    suite = tmp_path / "suite.jsonl"
    source = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, x):\n"
              "        return x + 1\ndef get_inputs():\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return []\n")
    with suite.open("w") as f:
        for i in range(3):
            f.write(json.dumps({"id": f"p{i}", "name": f"p{i}", "source": source}) + "\n")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert bench.visible_gpus() == ["3", "5"]
    out = tmp_path / "run"
    assert bench.main(["capture", "--suite", str(suite), "--out", str(out), "--jobs", "1",
                       "--max-mm-configs", "2", "--problem-timeout", "120"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["capture_gpus"] == 2 and summary["max_mm_configs"] == 2
    records = [json.loads((out / "captures" / f"p{i}.json").read_text()) for i in range(3)]
    assert [r["cuda_visible_devices"] for r in records] == ["3", "5", "3"]
    assert all(a["max_mm_configs"] == 2 for r in records for a in r["attempts"])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert bench.visible_gpus() == []


def test_judge_settings_and_full_verdict_records():
    """The benchmark judges without timing torch.compile of the reference, lets a candidate run
    120 s, and writes each verdict's full record so the Verdict can be rebuilt from verdicts.jsonl."""
    from autotriton.records import Verdict, Violation

    bench = load_bench()
    cfg = bench.judge_config("cuda", trials=3, workers=8)
    assert cfg.time_compile is False and cfg.time_kernels is True and cfg.timeout_s == 120.0 and cfg.workers == 8
    assert bench.judge_config("cpu", trials=2, workers=1).time_kernels is False
    v = Verdict(candidate_key="c", problem_key="p", status="rule_violation", correct=True, rule_ok=False,
                violations=[Violation("no_torch_compute", "uses torch.matmul", 12)], speedup=1.5,
                timing={"eager_ms": 1.0, "candidate_ms": 0.66}, trials=[{"seed": 1, "ok": True}], device="NVIDIA H200")
    row = json.loads(json.dumps(bench.verdict_row("L1/1", v)))
    assert row["id"] == "L1/1" and row["status"] == "rule_violation" and row["speedup"] == 1.5
    assert bench.verdict_from_row(row) == v
    assert bench.verdict_from_row({"id": "x", "status": "not_judged"}) is None


def test_big_problems_are_captured_at_shrunk_sizes_that_still_fit_together():
    """Inputs + outputs over 1 GiB are shrunk for capture; when shrinking the batch harder than the other
    dims breaks the problem (L1/100: (batch, n) * (batch,) needs n == batch), the batch is shrunk
    like the rest instead."""
    bench = load_bench()
    source = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
              "    def forward(self, predictions, targets):\n"
              "        return torch.mean(torch.clamp(1 - predictions * targets, min=0))\n"
              "batch_size = 32768\ninput_shape = (32768,)\n\ndef get_inputs():\n"
              "    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]\n"
              "def get_init_inputs():\n    return []\n")
    assert bench.runs_on_meta(source)
    small, why = bench.capture_source(source)
    assert why and "max_batch=4096" in why
    assert bench.runs_on_meta(small) and bench.data_bytes(small) <= bench.CAPTURE_MAX_BYTES
    tiny = source.replace("32768", "64")
    assert bench.capture_source(tiny) == (tiny, None)  # small problems are captured as given
    assert not bench.runs_on_meta(source.replace("(batch_size,)", "(batch_size + 1,)"))


def test_small_inputs_with_a_huge_output_are_captured_shrunk():
    """L1/7's shape: two 8 MiB inputs, a 4 GiB output. Capture sizes count the output too."""
    bench = load_bench()
    source = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n"
              "    def forward(self, A, B):\n        return torch.matmul(A, B)\n"
              "M = 16384 * 2\nN = 16384 * 2\nK = 32 * 2\n\ndef get_inputs():\n"
              "    return [torch.rand(M, K), torch.rand(K, N)]\ndef get_init_inputs():\n    return []\n")
    assert bench.data_bytes(source) > bench.CAPTURE_MAX_BYTES  # 16 MiB in, 4 GiB out
    small, why = bench.capture_source(source)
    assert why and "inputs + outputs were 4.0 GiB" in why
    assert bench.data_bytes(small) <= bench.CAPTURE_MAX_BYTES


def test_cpu_triton_dry_run_captures_and_converts_without_a_gpu(tmp_path, capsys):
    """--capture-device cpu-triton: Inductor's Triton output for CPU tensors goes through the
    same convert stage as a GPU capture, so converter failures show up before a GPU run."""
    bench = load_bench()
    suite = tmp_path / "suite.jsonl"
    source = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def __init__(self, n):\n"
              "        super().__init__()\n        self.ln = nn.LayerNorm(n)\n    def forward(self, x):\n"
              "        return torch.relu(self.ln(x)).cumsum(1)\nbatch_size = 64\nn = 48\n"
              "def get_inputs():\n    return [torch.randn(batch_size, n)]\ndef get_init_inputs():\n    return [n]\n")
    suite.write_text(json.dumps({"id": "dry/1", "name": "ln_relu_cumsum", "source": source}) + "\n")
    out = tmp_path / "run"
    assert bench.main(["capture", "--suite", str(suite), "--out", str(out), "--jobs", "1",
                       "--capture-device", "cpu-triton"]) == 0
    assert bench.main(["convert", "--suite", str(suite), "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["conversion_outcomes"] == {"ok": 1}, (out / "conversions.jsonl").read_text()
    code = (out / "converted" / "dry_1.py").read_text()
    assert "@triton.jit" in code and "class ModelNew" in code and "torch._inductor" not in code


def test_validate_resumes_after_a_call_killed_at_its_time_limit(tmp_path, capsys):
    """A second validate call judges only what the first left unjudged (verdicts.partial.jsonl),
    and verdicts.jsonl then holds every candidate: the earlier verdict and the new one."""
    bench = load_bench()
    suite, run = seeded_run(tmp_path, bench, ["pointwise_relu", "pointwise_tanh"])
    assert bench.main(["convert", "--suite", str(suite), "--out", str(run)]) == 0
    ids = [json.loads(line)["id"] for line in suite.read_text().splitlines()]
    earlier = {"id": ids[0], "status": "incorrect", "correct": False, "rule_ok": True, "speedup": None}
    (run / "verdicts.partial.jsonl").write_text(json.dumps(earlier) + "\n")
    capsys.readouterr()

    assert bench.main(["validate", "--suite", str(suite), "--out", str(run), "--device", "cpu", "--judge-workers", "2",
                       "--trials", "1"]) == 0
    out = capsys.readouterr().out
    assert "resuming: 1 of 2 candidates already judged" in out
    judged = [line for line in out.splitlines() if line.startswith("[judge] ") and ": " in line and "workers" not in line
              and "resuming" not in line]
    assert len(judged) == 1 and judged[0].startswith(f"[judge] {ids[1]}:")
    final = {json.loads(line)["id"]: json.loads(line) for line in (run / "verdicts.jsonl").read_text().splitlines()}
    assert final[ids[0]]["status"] == "incorrect"  # kept from the earlier call, not judged again
    assert final[ids[1]]["status"] == "correct" and final[ids[1]]["record"]["device"] == "cpu"


def test_captures_that_ran_out_of_memory_are_retried_one_at_a_time(tmp_path, capsys):
    """A capture that ran out of GPU memory next to the others is captured again alone (here: a
    recorded OOM from an earlier call, retried by a cpu-triton capture with --jobs 2)."""
    bench = load_bench()
    suite = tmp_path / "suite.jsonl"
    source = ("import torch\nimport torch.nn as nn\nclass Model(nn.Module):\n    def forward(self, x):\n"
              "        return torch.relu(x) * 2.0\ndef get_inputs():\n    return [torch.randn(8, 64)]\n"
              "def get_init_inputs():\n    return []\n")
    suite.write_text(json.dumps({"id": "dry/oom", "name": "relu2", "source": source}) + "\n")
    out = tmp_path / "run"
    (out / "captures").mkdir(parents=True)
    oom = {"id": "dry/oom", "name": "relu2", "source": source, "attempts": [
        {"ok": False, "stage": "compile", "error": "InductorError: OutOfMemoryError: CUDA out of memory. Tried to allocate 36.35 GiB."}]}
    (out / "captures" / "dry_oom.json").write_text(json.dumps(oom))
    assert bench.capture_ran_out_of_memory(out / "captures" / "dry_oom.json")
    assert bench.main(["capture", "--suite", str(suite), "--out", str(out), "--jobs", "2",
                       "--capture-device", "cpu-triton"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["oom_retried"] == ["dry/oom"] and summary["captured"] == 1
    record = json.loads((out / "captures" / "dry_oom.json").read_text())
    assert record["attempts"][0]["ok"], record["attempts"][0].get("error")
    assert not bench.capture_ran_out_of_memory(out / "captures" / "dry_oom.json")


def test_captured_counts_only_captures_that_hold_output_code(tmp_path):
    """A capture record whose every attempt failed (run E's L1/70 out of memory, L1/80 without a Triton
    template) is a failure: "captured" must not count it."""
    bench = load_bench()
    records = {"ok": [{"ok": True, "output_codes": ["# inductor output"]}],
               "second_try_ok": [{"ok": False, "error": "OutOfMemoryError"}, {"ok": True, "output_codes": ["# code"]}],
               "oom": [{"ok": False, "error": "OutOfMemoryError: CUDA out of memory"}],
               "no_template": [{"ok": False, "error": "NoValidChoicesError"}]}
    for name, attempts in records.items():
        (tmp_path / f"{name}.json").write_text(json.dumps({"attempts": attempts}))
    (tmp_path / "torn.json").write_text("{")
    assert bench.captured_count(tmp_path) == 2
