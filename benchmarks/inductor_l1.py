"""Inductor teacher over a suite (KernelBench level 1 by default) on a GPU: capture, convert, validate.

    python benchmarks/inductor_l1.py [STAGE] --suite PATH [--suite PATH2] --out DIR

Stages (each reads what the one before wrote under --out):
  capture   torch.compile every problem (Triton-only max-autotune, at most --max-mm-configs
            GEMM/conv template configs per op), one subprocess per problem, --jobs at a time,
            round-robin over the visible GPUs (CUDA_VISIBLE_DEVICES per subprocess), each under
            --problem-timeout; writes DIR/captures/<id>.json
            (dynamic shapes; static shapes only when dynamic fails). Problems whose inputs exceed
            1 GiB are compiled at shrunk sizes (the kernels take sizes as arguments).
            --dynamic-parameters: the dynamic attempt keeps parameter shapes symbolic too, with
            convolutions traced as gathers + matmul (channel counts then come from
            self.<module>.weight.shape in the candidate instead of literals).
  convert   turn each capture into a standalone ModelNew (distillation/inductor_convert.py);
            writes DIR/converted/<id>.py and DIR/conversions.jsonl (ok / reason per problem).
  validate  judge the converted candidates with one autotriton.validation.JudgePool of
            --judge-workers workers spread over the GPUs (eager-vs-candidate timing, no
            torch.compile timing, --judge-timeout per candidate; falls back to a direct
            eager-vs-candidate comparison when the judge cannot be imported, and says so in the
            summary); writes DIR/verdicts.jsonl (and DIR/verdicts.partial.jsonl as it goes), each
            line with the summary fields and `record`, the full Verdict.to_dict().
  all       the three in order.
  summary   recompute the summary from the files a run left (e.g. one killed at its time limit).
  replay    (on a CPU machine, after the others) re-judge the converted candidates with the CPU
            interpreter and write the passing ones as replay data (--replay-out), the format the
            replay teacher serves (distillation/cache.py).
The summary (conversion rate, validated yield, speedups, extern_kernels check) is printed as
one JSON object and written to DIR/summary.json. Needs torch + triton (+ pydantic for the judge).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _load(module: str) -> Any:
    """Import autotriton.distillation.<module>, or load the file directly when the package's
    __init__ needs something this machine lacks (a bare GPU image has no openai/duckdb). Loaded
    from its file, its parent packages are registered empty, so that a module's own lazy import of
    a sibling (conv_kernels from inductor_decompose) finds the one loaded here."""
    try:
        return importlib.import_module(f"autotriton.distillation.{module}")
    except ImportError:
        for parent in ("autotriton", "autotriton.distillation"):
            sys.modules.setdefault(parent, types.ModuleType(parent))
        path = ROOT / "distillation" / f"{module}.py"
        spec = importlib.util.spec_from_file_location(f"autotriton.distillation.{module}", path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod
        spec.loader.exec_module(mod)
        return mod


def safe_id(problem_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", problem_id)


def read_suites(paths: list[str], only: list[str] | None) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise SystemExit(f"{path}:{lineno}: not JSON ({exc}); fix or remove the line")
                if only and row["id"] not in only and safe_id(row["id"]) not in only:
                    continue
                rows.append(row)
    return rows


# ---------------------------------------------------------------- capture
CAPTURE_MAX_BYTES = 1 << 30  # problems whose inputs + outputs exceed this are captured at shrunk sizes (the kernels take sizes as arguments)


def data_bytes(source: str) -> int:
    """Bytes of one forward's inputs plus outputs, from a run on the meta device (nothing is
    allocated; the judge's own estimate). Inputs alone when the forward does not run on meta: a
    matmul of two 8 MiB inputs can still write a 4 GiB output (L1/7, L1/9)."""
    from autotriton.validation.judge import trial_bytes

    sizes = trial_bytes(source)
    if sizes is None:
        raise ValueError("get_inputs() does not run on the meta device")
    return sizes[0] + (sizes[1] or 0)


def capture_source(source: str) -> tuple[str, str | None]:
    """The source to compile: as given, or shrunk (validation's rule) when its inputs and outputs
    exceed CAPTURE_MAX_BYTES, so a dozen captures fit on one GPU at once."""
    try:
        size = data_bytes(source)
    except Exception:  # noqa: BLE001 - the capture itself reports a broken problem
        return source, None
    if size <= CAPTURE_MAX_BYTES:
        return source, None
    from autotriton.validation.shrink import shrink_problem

    check = runs_on_meta(source)  # ops without meta kernels: accept shrunk sources unchecked
    for max_dim in (4096, 2048, 1024, 512, 256):
        # batch shrunk harder first; then batch like the other dims, for problems whose batch
        # must equal another size (e.g. L1/100: (batch, n) * (batch,) broadcasts only if n == batch)
        for max_batch in (16, max_dim):
            small = shrink_problem(source, max_dim=max_dim, max_batch=max_batch)
            try:
                if data_bytes(small) > CAPTURE_MAX_BYTES or (check and not runs_on_meta(small)):
                    continue
            except Exception:  # noqa: BLE001
                continue
            return small, (f"captured at shrunk sizes (max_dim={max_dim}, max_batch={max_batch}; "
                           f"inputs + outputs were {size / 2**30:.1f} GiB)")
    return source, None


def runs_on_meta(source: str) -> bool:
    """Whether the problem's Model runs on its inputs on the meta device (shapes only, nothing
    allocated): a shrunk problem whose sizes no longer fit together fails here."""
    import torch

    try:
        ns: dict[str, Any] = {}
        exec(compile(source, "<problem>", "exec"), ns)
        with torch.device("meta"):
            model = ns["Model"](*ns["get_init_inputs"]())
            inputs = ns["get_inputs"]()
            with torch.no_grad():
                model(*inputs)
        return True
    except Exception:  # noqa: BLE001 - any failure means "does not run as written"
        return False


def visible_gpus() -> list[str]:
    """The GPUs capture subprocesses are spread over (CUDA_VISIBLE_DEVICES values): the parent's
    own CUDA_VISIBLE_DEVICES list when set, else one per `nvidia-smi -L` line, else
    torch.cuda.device_count(); [] on a machine without GPUs."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
        n = sum(1 for line in listing.stdout.splitlines() if line.startswith("GPU "))
        if listing.returncode == 0 and n:
            return [str(i) for i in range(n)]
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        import torch

        return [str(i) for i in range(torch.cuda.device_count())]
    except Exception:  # noqa: BLE001 - no torch CUDA: no GPUs
        return []


def cpu_triton_codegen() -> None:
    """Dry-run mode (--capture-device cpu-triton, no GPU): Inductor writes Triton kernels for CPU
    tensors (cpu_backend="triton") against a stub Triton driver that claims an sm_90 target; the
    compiled module is never run (kernel launches raise), only its output code is kept, so
    capture + convert of a whole suite takes seconds a problem. No GEMM/conv templates on the
    CPU: matmuls stay extern_kernels and plain convolutions find no Triton choice, so those
    problems say nothing here; pointwise, reduction, scan, pooling, norm and loss problems are
    representative. Needs TRITON_INTERPRET=1 in the environment before triton is imported."""
    from unittest import mock

    import torch
    import torch._inductor.config as ic
    import torch._inductor.utils as iu
    import triton
    from torch._inductor.runtime import triton_heuristics
    from triton.backends.compiler import GPUTarget

    class StubDriver:
        def get_current_target(self) -> Any:
            return GPUTarget("cuda", 90, 32)

        def get_current_device(self) -> int:
            return 0

        def get_current_stream(self, device: Any = None) -> int:
            return 0

        def get_active_torch_device(self) -> Any:
            return torch.device("cpu")

        def get_device_interface(self) -> Any:
            return torch.cpu

        def get_benchmarker(self) -> Any:
            return triton.testing.do_bench

        def is_active(self) -> bool:
            return True

    triton.runtime.driver.set_active(StubDriver())
    ic.cpu_backend = "triton"

    def no_launch(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("cpu-triton dry run: generated kernels are not launched")

    triton_heuristics.CachingAutotuner.run = no_launch

    def run_and_get_code(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, list[str]]:
        from torch._inductor.graph import GraphLowering

        codes: list[str] = []
        with mock.patch.object(GraphLowering, "save_output_code", staticmethod(codes.append)):
            try:
                result = fn(*args, **kwargs)
            except Exception:  # noqa: BLE001 - the launch refused above; the code is what counts
                if not codes:
                    raise
                result = None
        return result, codes

    iu.run_and_get_code = run_and_get_code


def capture_one(row: dict[str, Any], out: Path, decompose_convolution: bool, device: str,
                max_mm_configs: int | None = None, dynamic_parameters: bool = False) -> None:
    """Runs inside a fresh subprocess: dynamic shapes; static shapes only when dynamic fails.
    `dynamic_parameters`: the dynamic attempt keeps parameter shapes symbolic too
    (capture_problem's option of that name)."""
    cap = _load("inductor_capture")
    autotune = device.startswith("cuda")
    source, shrunk = capture_source(row["source"])
    if device == "cpu-triton":
        from autotriton.validation.shrink import shrink_problem

        cpu_triton_codegen()
        device, source, shrunk = "cpu", shrink_problem(row["source"]), "cpu-triton dry run at shrink_problem's sizes"
    attempts = []
    extra = {"dynamic_parameters": True} if dynamic_parameters else {}
    # Captured smaller than it will run: Inductor's int32 indexing, chosen for the small sizes,
    # would overflow at the real ones (capture_problem's index_64bit).
    wide = {"index_64bit": True} if shrunk and not device.startswith("cpu") else {}
    first = cap.capture_problem(source, name=row["id"], dynamic=True, device=device, max_autotune=autotune,
                                decompose_convolution=decompose_convolution, max_mm_configs=max_mm_configs, **extra, **wide)
    first["shrunk"] = shrunk
    attempts.append(first)
    if not first["ok"]:
        second = cap.capture_problem(source, name=row["id"], dynamic=False, device=device, max_autotune=autotune,
                                     decompose_convolution=decompose_convolution, max_mm_configs=max_mm_configs, **wide)
        second["shrunk"] = shrunk
        attempts.append(second)
    record = {"id": row["id"], "name": row["name"], "source": row["source"], "attempts": attempts,
              "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES")}
    tmp = out / f".{safe_id(row['id'])}.json.tmp"
    tmp.write_text(json.dumps(record))
    tmp.replace(out / f"{safe_id(row['id'])}.json")


def stage_capture(rows: list[dict[str, Any]], out: Path, jobs: int, problem_timeout: float, deadline: float,
                  decompose_convolution: bool, suites: list[str], device: str,
                  max_mm_configs: int | None = None, dynamic_parameters: bool = False) -> dict[str, Any]:
    """One subprocess per problem, `jobs` at a time; on CUDA each subprocess gets one GPU
    (CUDA_VISIBLE_DEVICES), round-robin over the visible GPUs."""
    cap_dir = out / "captures"
    cap_dir.mkdir(parents=True, exist_ok=True)
    todo = [r for r in rows if not (cap_dir / f"{safe_id(r['id'])}.json").exists()]
    # Longest first: convolution captures autotune conv (or decomposed bmm) templates and took
    # 40-110 s on an H200, the rest 10-30 s; starting them first keeps them off the deadline.
    todo.sort(key=lambda r: 0 if "conv" in (r.get("name", "") + r["id"]).lower() else 1)
    cores = os.cpu_count() or 2
    env = dict(os.environ)
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(max(1, cores // max(1, jobs))))
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    running: dict[str, tuple[subprocess.Popen, float, Any]] = {}
    failures: dict[str, str] = {}
    started = time.monotonic()
    logs = out / "capture_logs"
    logs.mkdir(exist_ok=True)
    gpus = visible_gpus() if device.startswith("cuda") else []
    launched = 0
    while todo or running:
        now = time.monotonic()
        while todo and len(running) < jobs and now - started < deadline:
            row = todo.pop(0)
            sid = safe_id(row["id"])
            cmd = [sys.executable, __file__, "_capture_one", "--id", row["id"], "--out", str(out),
                   "--capture-device", device]
            for s in suites:
                cmd += ["--suite", s]
            if not decompose_convolution:
                cmd.append("--no-decompose-convolution")
            if max_mm_configs is not None:
                cmd += ["--max-mm-configs", str(max_mm_configs)]
            if dynamic_parameters:
                cmd.append("--dynamic-parameters")
            penv = dict(env, TORCHINDUCTOR_CACHE_DIR=f"/tmp/inductor_cache_{sid}")
            if gpus:
                penv["CUDA_VISIBLE_DEVICES"] = gpus[launched % len(gpus)]
            if device == "cpu-triton":
                penv["TRITON_INTERPRET"] = "1"  # before triton is imported (see cpu_triton_codegen)
            launched += 1
            log = open(logs / f"{sid}.log", "w")
            running[row["id"]] = (subprocess.Popen(cmd, env=penv, stdout=log, stderr=subprocess.STDOUT), now, log)
        if not todo and not running:
            break
        if now - started >= deadline and todo:
            for row in todo:
                failures[row["id"]] = "not started before the deadline"
            todo = []
        for pid, (proc, t0, log) in list(running.items()):
            rc = proc.poll()
            over = time.monotonic() - t0 > problem_timeout or time.monotonic() - started > deadline + 30
            if rc is None and over:
                proc.kill()
                proc.wait()
                rc = "timeout"
            if rc is not None:
                log.close()
                del running[pid]
                if rc != 0:
                    failures[pid] = f"capture process exit {rc}"
                print(f"[capture] {pid}: {'ok' if rc == 0 else rc} "
                      f"({time.monotonic() - t0:.0f}s; {len(todo)} left, {len(running)} running)", flush=True)
        time.sleep(0.2)
    summary = {"captured": captured_count(cap_dir), "capture_failures": failures,
               "capture_wall_s": round(time.monotonic() - started, 1), "capture_gpus": len(gpus),
               "max_mm_configs": max_mm_configs}
    if dynamic_parameters:
        summary["dynamic_parameters"] = True
    # Captures that ran out of GPU memory next to the others get one more try alone on a GPU
    # (L1/70 asked for 36 GiB while 27 captures shared two H200s), time permitting.
    oom = [r for r in rows if capture_ran_out_of_memory(cap_dir / f"{safe_id(r['id'])}.json")]
    remaining = deadline - (time.monotonic() - started)
    if oom and jobs > 1 and remaining > 0:
        print(f"[capture] {len(oom)} out of memory with {jobs} at once: again, one at a time", flush=True)
        for r in oom:
            (cap_dir / f"{safe_id(r['id'])}.json").unlink()
        retry = stage_capture(oom, out, 1, problem_timeout, remaining, decompose_convolution, suites, device,
                              max_mm_configs, dynamic_parameters)
        summary.update(captured=retry["captured"], capture_wall_s=round(time.monotonic() - started, 1),
                       oom_retried=[r["id"] for r in oom])
        summary["capture_failures"].update(retry["capture_failures"])
    return summary


def captured_count(cap_dir: Path) -> int:
    """Problems whose capture record holds Inductor output code from at least one attempt. A record
    whose every attempt failed (out of memory, no Triton template, ...) is a failure, not a capture."""
    count = 0
    for path in cap_dir.glob("*.json"):
        try:
            attempts = json.loads(path.read_text()).get("attempts") or []
        except (OSError, ValueError):
            continue
        count += any(a.get("output_codes") for a in attempts)
    return count


def capture_ran_out_of_memory(path: Path) -> bool:
    """Whether a capture record exists and every attempt in it failed for lack of GPU memory."""
    try:
        attempts = json.loads(path.read_text()).get("attempts") or []
    except (OSError, ValueError):
        return False
    return bool(attempts) and all(not a.get("ok") and ("OutOfMemoryError" in str(a.get("error"))
                                                       or "out of memory" in str(a.get("error")).lower())
                                  for a in attempts)


# ---------------------------------------------------------------- convert
def stage_convert(rows: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    conv = _load("inductor_convert")
    from autotriton.hashing import source_key

    cap_dir, conv_dir = out / "captures", out / "converted"
    conv_dir.mkdir(parents=True, exist_ok=True)
    reasons: dict[str, int] = {}
    n_ok = 0
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    with open(out / "conversions.jsonl", "w") as log, open(out / "replay.jsonl", "w") as replay:
        for row in rows:
            path = cap_dir / f"{safe_id(row['id'])}.json"
            if not path.exists():
                res = conv.ConversionResult(ok=False, reason="not_captured", detail="no capture (timeout or deadline)")
                versions = {}
            else:
                capture = json.loads(path.read_text())
                res = conv.convert_capture(capture, row["source"])
                versions = next((a.get("versions") for a in capture["attempts"] if a.get("versions")), {}) or {}
            reasons[res.reason or "ok"] = reasons.get(res.reason or "ok", 0) + 1
            entry = {"id": row["id"], **res.to_dict(), "extern_kernels_in_code": "extern_kernels" in res.code}
            log.write(json.dumps(entry) + "\n")
            if res.ok:
                n_ok += 1
                (conv_dir / f"{safe_id(row['id'])}.py").write_text(res.code)
                replay.write(json.dumps({
                    "problem_key": source_key(row["source"]), "problem_name": row["name"], "teacher": "inductor",
                    "teacher_version": f"torch-{versions.get('torch', '?')}+triton-{versions.get('triton', '?')}",
                    "prompt_version": "", "code": res.code, "reasoning": "", "instruction": "", "usage": {},
                    "created": created, "suite_id": row["id"]}) + "\n")
    return {"converted": n_ok, "conversion_rate": round(n_ok / max(1, len(rows)), 4), "conversion_outcomes": reasons}


# ---------------------------------------------------------------- validate
def judge_config(device: str, trials: int, workers: int, timeout_s: float = 120.0, max_output_mb: float | None = None) -> Any:
    """The benchmark's judge settings: eager-vs-candidate timing on a GPU, but no torch.compile
    of each reference (seconds to tens of seconds per problem, and not what the yield needs)."""
    from autotriton.validation import ValidationConfig

    extra = {"max_output_mb": max_output_mb} if max_output_mb else {}
    return ValidationConfig(device=device, trials=trials, timeout_s=timeout_s, timing_runs=20, timing_input_sets=1,
                            time_kernels=device == "cuda", time_compile=False, workers=workers, **extra)


def verdict_row(pid: str, v: Any) -> dict[str, Any]:
    """One verdicts.jsonl line: the summary fields this script reads (id, status, correct,
    rule_ok, speedup, ...) plus `record`, the full `Verdict.to_dict()` (Verdict(**record) with
    its violations rebuilt as Violation records gives the Verdict back)."""
    return {"id": pid, "status": v.status, "correct": v.correct, "rule_ok": v.rule_ok,
            "speedup": v.speedup, "max_abs_err": v.max_abs_err, "error": (v.error or "")[:600],
            "violations": [f"{x.rule}: {x.message[:160]}" for x in v.violations][:5],
            "device": v.device, "elapsed_s": round(v.elapsed_s, 2), "timing": v.timing,
            "record": v.to_dict()}


def verdict_from_row(row: dict[str, Any]) -> Any:
    """The Verdict a verdicts.jsonl line carries (None for lines without a full record)."""
    from autotriton.records import Verdict, Violation

    record = row.get("record")
    if not record:
        return None
    record = dict(record)
    record["violations"] = [Violation(**x) for x in record.get("violations", [])]
    return Verdict(**record)


def previous_verdicts(out: Path) -> dict[str, dict[str, Any]]:
    """Verdicts an earlier (possibly killed) validate call left in verdicts.partial.jsonl, by id."""
    found: dict[str, dict[str, Any]] = {}
    path = out / "verdicts.partial.jsonl"
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                if row.get("status") != "not_judged":
                    found[row["id"]] = {k: x for k, x in row.items() if k != "id"}
    return found


def stage_validate(rows: list[dict[str, Any]], out: Path, device: str, workers: int, trials: int,
                   deadline_s: float, timeout_s: float = 120.0, max_output_mb: float | None = None) -> dict[str, Any]:
    """Judge every converted candidate with one JudgePool of `workers` workers (the pool puts
    worker i on GPU i % n_gpus, so the workers spread over every GPU) fed by `workers` threads."""
    conv_dir = out / "converted"
    jobs, ids = [], []
    for row in rows:
        path = conv_dir / f"{safe_id(row['id'])}.py"
        if path.exists():
            jobs.append((row["source"], path.read_text()))
            ids.append(row["id"])
    started = time.monotonic()
    verdicts: dict[str, dict[str, Any]] = {}
    # Resume: candidates judged by an earlier call (verdicts.partial.jsonl) are not judged again.
    done = previous_verdicts(out)
    pending = [i for i, pid in enumerate(ids) if pid not in done]
    verdicts.update({pid: done[pid] for pid in ids if pid in done})
    if done:
        print(f"[judge] resuming: {len(ids) - len(pending)} of {len(ids)} candidates already judged", flush=True)
    import queue
    import threading

    judge = "autotriton.validation.validate_many"
    try:
        from autotriton.validation import JudgePool
    except ImportError as exc:  # no pydantic on a bare GPU image: say so, compare directly
        judge = f"direct comparison (judge not importable: {exc})"
        JudgePool = None
    start_errors: list[str] = []
    if JudgePool is not None:
        n_workers = max(1, min(workers, len(pending) or 1))
        cfg = judge_config(device, trials, n_workers, timeout_s, max_output_mb)
        live = open(out / "verdicts.partial.jsonl", "a")  # survives a run killed at its time limit
        lock = threading.Lock()
        todo: "queue.Queue[int]" = queue.Queue()
        for i in pending:
            todo.put(i)

        def judge_loop(pool: Any) -> None:
            while time.monotonic() - started < deadline_s:
                try:
                    i = todo.get_nowait()
                except queue.Empty:
                    return
                v = pool.validate(*jobs[i])
                row = verdict_row(ids[i], v)
                with lock:
                    verdicts[ids[i]] = {k: x for k, x in row.items() if k != "id"}
                    live.write(json.dumps(row, default=str) + "\n")
                    live.flush()
                print(f"[judge] {ids[i]}: {v.status} speedup={v.speedup} ({v.elapsed_s:.0f}s)", flush=True)

        try:
            with JudgePool(cfg, workers=n_workers) as pool:
                print(f"[judge] {n_workers} workers on {pool.device_name} ({len(jobs)} candidates)", flush=True)
                threads = [threading.Thread(target=judge_loop, args=(pool,)) for _ in range(n_workers)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
        except Exception as exc:  # noqa: BLE001 - a judge that cannot start: direct comparison below
            start_errors.append(f"{type(exc).__name__}: {str(exc)[:300]}")
        live.close()
    if JudgePool is None or (start_errors and not verdicts):
        if start_errors:
            judge = f"direct comparison (judge did not start: {start_errors[0]})"
        for i, (problem, code) in enumerate(jobs):
            if time.monotonic() - started > deadline_s:
                break
            verdicts[ids[i]] = direct_check(problem, code, device)
    with open(out / "verdicts.jsonl", "w") as f:
        for pid in ids:
            f.write(json.dumps({"id": pid, **verdicts.get(pid, {"status": "not_judged", "error": "deadline"})},
                               default=str) + "\n")
    return {"judge": judge, **summarize_verdicts(rows, out, verdicts),
            "validate_wall_s": round(time.monotonic() - started, 1)}


def summarize_verdicts(rows: list[dict[str, Any]], out: Path, verdicts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Yield, verdicts by status, speedups (geomean/median over kept pairs, fast_1 over all
    problems) and the extern_kernels check, from verdicts keyed by problem id."""
    import math

    conv_dir = out / "converted"
    ids = [r["id"] for r in rows if (conv_dir / f"{safe_id(r['id'])}.py").exists()]
    kept = [pid for pid in ids if verdicts.get(pid, {}).get("correct") and verdicts.get(pid, {}).get("rule_ok")]
    speedups = [verdicts[p]["speedup"] for p in kept if verdicts[p].get("speedup")]
    statuses: dict[str, int] = {}
    for pid in ids:
        st = verdicts.get(pid, {}).get("status", "not_judged")
        statuses[st] = statuses.get(st, 0) + 1
    extern_in_kept = [p for p in kept if "extern_kernels" in (conv_dir / f"{safe_id(p)}.py").read_text()]
    geo = math.exp(sum(math.log(x) for x in speedups) / len(speedups)) if speedups else None
    return {"judged": sum(1 for p in ids if p in verdicts), "verdicts": statuses, "validated": len(kept),
            "validated_yield": round(len(kept) / max(1, len(rows)), 4),
            "speedup_geomean": round(geo, 3) if geo else None,
            "speedup_median": round(sorted(speedups)[len(speedups) // 2], 3) if speedups else None,
            "fast_1": round(sum(1 for x in speedups if x > 1.0) / max(1, len(rows)), 4),
            "extern_kernels_in_kept": extern_in_kept}


def stage_summary(rows: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    """Recompute the summary from the files a run left (also one killed at its time limit)."""
    summary: dict[str, Any] = {"captured": captured_count(out / "captures")}
    if (out / "conversions.jsonl").exists():
        outcomes: dict[str, int] = {}
        for line in (out / "conversions.jsonl").read_text().splitlines():
            reason = json.loads(line)["reason"] or "ok"
            outcomes[reason] = outcomes.get(reason, 0) + 1
        summary.update(converted=outcomes.get("ok", 0), conversion_rate=round(outcomes.get("ok", 0) / max(1, len(rows)), 4),
                       conversion_outcomes=outcomes)
    verdicts: dict[str, dict[str, Any]] = {}
    for name in ("verdicts.partial.jsonl", "verdicts.jsonl"):
        if (out / name).exists():
            for line in (out / name).read_text().splitlines():
                if line.strip():
                    v = json.loads(line)
                    if v.get("status") != "not_judged":
                        verdicts[v["id"]] = v
    summary.update(summarize_verdicts(rows, out, verdicts))
    return summary


# ---------------------------------------------------------------- replay data
def stage_replay(rows: list[dict[str, Any]], out: Path, replay_path: Path) -> dict[str, Any]:
    """Re-judge the converted candidates on the CPU interpreter here and write those with reward 1
    as replay lines (exactly the replay format's keys) to `replay_path`; the rest are listed."""
    from autotriton.distillation.cache import replay_record
    from autotriton.hashing import source_key
    from autotriton.validation import ValidationConfig, validate_many

    conv_dir = out / "converted"
    versions = {}
    jobs, kept_rows = [], []
    for row in rows:
        path = conv_dir / f"{safe_id(row['id'])}.py"
        cap = out / "captures" / f"{safe_id(row['id'])}.json"
        if path.exists():
            jobs.append((row["source"], path.read_text()))
            kept_rows.append(row)
            if cap.exists():
                attempts = json.loads(cap.read_text())["attempts"]
                versions[row["id"]] = next((a.get("versions") for a in attempts if a.get("versions")), {}) or {}
    verdicts = validate_many(jobs, ValidationConfig(device="cpu", trials=3, time_kernels=False, timeout_s=300.0),
                             progress=True)
    written, failed = 0, {}
    replay_path.parent.mkdir(parents=True, exist_ok=True)
    with open(replay_path, "w", encoding="utf-8") as f:
        for row, (_, code), v in zip(kept_rows, jobs, verdicts):
            if not (v.correct and v.rule_ok):
                failed[row["id"]] = f"{v.status}: {(v.error or '; '.join(x.message for x in v.violations))[:300]}"
                continue
            ver = versions.get(row["id"], {})
            record = replay_record(problem_key=source_key(row["source"]), problem_name=row["name"], teacher="inductor",
                                   teacher_version=f"torch-{ver.get('torch', '?')}+triton-{ver.get('triton', '?')}",
                                   prompt_version="", code=code, reasoning="", instruction="", usage={},
                                   created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
            f.write(json.dumps(record) + "\n")
            written += 1
    not_converted = [r["id"] for r in rows if r not in kept_rows]
    return {"replay_file": str(replay_path), "replay_written": written, "replay_failed_cpu_judge": failed,
            "replay_not_converted": not_converted}


def direct_check(problem: str, code: str, device: str) -> dict[str, Any]:
    """Minimal judge: same weights, three random input sets, allclose at 1e-4 (KernelBench's
    tolerance), median time of both. Only used when the real judge cannot be imported."""
    import torch
    import triton.testing

    try:
        ref_ns: dict[str, Any] = {}
        exec(compile(problem, "<problem>", "exec"), ref_ns)
        cand_ns: dict[str, Any] = {}
        exec(compile(code, "<candidate>", "exec"), cand_ns)
        torch.manual_seed(0)
        init = ref_ns["get_init_inputs"]()
        ref = ref_ns["Model"](*init).to(device)
        new = cand_ns["ModelNew"](*init).to(device)
        new.load_state_dict(ref.state_dict())
        worst = 0.0
        with torch.no_grad():
            for seed in (1, 2, 3):
                torch.manual_seed(seed)
                inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in ref_ns["get_inputs"]()]
                a, b = ref(*inputs), new(*inputs)
                if not torch.allclose(a, b, atol=1e-4, rtol=1e-4):
                    return {"status": "incorrect", "correct": False, "rule_ok": True,
                            "max_abs_err": float((a.float() - b.float()).abs().max())}
                worst = max(worst, float((a.float() - b.float()).abs().max()))
            t_ref = triton.testing.do_bench(lambda: ref(*inputs), return_mode="median")
            t_new = triton.testing.do_bench(lambda: new(*inputs), return_mode="median")
        return {"status": "correct", "correct": True, "rule_ok": "extern_kernels" not in code,
                "max_abs_err": worst, "speedup": t_ref / t_new}
    except Exception as exc:  # noqa: BLE001 - a failing candidate is a verdict, not a crash
        return {"status": "runtime_error", "correct": False, "rule_ok": False, "error": f"{type(exc).__name__}: {exc}"[:600]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("stage", nargs="?", default="all", choices=["all", "capture", "convert", "validate", "replay", "summary", "_capture_one"])
    ap.add_argument("--suite", action="append", default=[], help="suite JSONL (repeatable)")
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--only", action="append", default=[], help="problem id to run (repeatable; default all)")
    ap.add_argument("--id", help=argparse.SUPPRESS)
    ap.add_argument("--jobs", type=int, default=8, help="capture subprocesses at once")
    ap.add_argument("--problem-timeout", type=float, default=240.0, help="seconds per problem capture")
    ap.add_argument("--deadline", type=float, default=420.0, help="no capture starts after this many seconds")
    ap.add_argument("--no-decompose-convolution", dest="decompose_convolution", action="store_false",
                    help="leave transposed/1-D/grouped convolutions to Inductor (they then need cuDNN)")
    ap.add_argument("--device", default="cuda", help="validation device (cuda or cpu)")
    ap.add_argument("--capture-device", default="cuda",
                    help="device torch.compile targets: cuda; cpu-triton for a dry run of capture + convert without "
                         "a GPU (Triton for CPU tensors, never run; see cpu_triton_codegen); cpu (C++ code, tests only)")
    ap.add_argument("--judge-workers", type=int, default=4,
                    help="judge workers (one pool; worker i runs on GPU i %% n_gpus) and candidates judged at once")
    ap.add_argument("--judge-timeout", type=float, default=120.0, help="seconds one candidate may run in the judge")
    ap.add_argument("--max-output-mb", type=float, default=None,
                    help="the judge's cap on one candidate's answer (all trials' outputs; default: the judge's own)")
    ap.add_argument("--max-mm-configs", type=int, default=4,
                    help="GEMM/conv template configs autotuned per op at capture (0 = Inductor's full list)")
    ap.add_argument("--dynamic-parameters", action="store_true",
                    help="capture with parameter shapes symbolic (channel counts read from self.<module>.<param>.shape "
                         "in the candidate, convolutions traced as gathers + matmul; see capture_problem)")
    ap.add_argument("--trials", type=int, default=3, help="correctness trials per candidate")
    ap.add_argument("--validate-deadline", type=float, default=300.0, help="no candidate is judged after this many seconds")
    ap.add_argument("--replay-out", default=str(ROOT / "distillation" / "data" / "replay" / "inductor.jsonl"),
                    help="replay stage: where the CPU-validated candidates are written")
    args = ap.parse_args(argv)
    if not args.suite:
        ap.error("give at least one --suite PATH")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    if args.stage == "_capture_one":
        rows = read_suites(args.suite, [args.id])
        capture_one(rows[0], out / "captures", args.decompose_convolution, args.capture_device,
                    args.max_mm_configs or None, args.dynamic_parameters)
        return 0

    rows = read_suites(args.suite, args.only or None)
    summary: dict[str, Any] = {"problems": len(rows), "suites": args.suite}
    if args.stage in ("all", "capture"):
        summary.update(stage_capture(rows, out, args.jobs, args.problem_timeout, args.deadline,
                                     args.decompose_convolution, args.suite, args.capture_device,
                                     args.max_mm_configs or None, args.dynamic_parameters))
    if args.stage in ("all", "convert"):
        summary.update(stage_convert(rows, out))
    if args.stage in ("all", "validate"):
        summary.update(stage_validate(rows, out, args.device, args.judge_workers, args.trials, args.validate_deadline,
                                      args.judge_timeout, args.max_output_mb))
    if args.stage == "summary":
        summary.update(stage_summary(rows, out))
    if args.stage == "replay":
        summary.update(stage_replay(rows, out, Path(args.replay_out)))
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
