"""The caller's side of the judge: a pool of warm worker processes and the batch API.

`JudgePool(config)` starts N workers (`python -m autotriton.validation.worker`), one per CPU core
(device cpu, Triton interpreter) or one per GPU (device cuda, `CUDA_VISIBLE_DEVICES=i`), each
with a scrubbed environment. Jobs are dealt to whichever worker is free; a worker that dies or
stops answering is killed (its whole process group) and replaced, and the job it held gets a
`crashed` / `timeout` verdict. This process never imports or executes candidate code: it only
parses it (the static rules) and sends it on.
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autotriton.hashing import content_key, source_key
from autotriton.records import Verdict, Violation, candidate_key
from autotriton.validation import sandbox, wire
from autotriton.validation.config import ValidationConfig

# The caller's static work (content keys, the static rules) parses Python in validate_many's and
# probe_many's threads; CPython 3.11's AST construction keeps its recursion depth in shared state and
# can fail under concurrent use with "SystemError: AST constructor recursion depth mismatch"
# (python/cpython#106905; seen here in a CI run). It is GIL-bound work: one thread at a time costs nothing.
_AST_LOCK = threading.Lock()

_AUTOTRITON_PARENT = str(Path(__import__("autotriton").__file__).resolve().parent.parent)
READY_TIMEOUT_S = 180.0


class JudgeError(RuntimeError):
    """The judge itself could not run (workers do not start); the message says why and what to do."""


@dataclass
class ProbeResult:
    """Whether a reference problem runs in the sandbox (see validation/probe.py for the reasons)."""

    ok: bool
    reason: str | None
    detail: str = ""
    output_shapes: list[list[int]] = field(default_factory=list)
    elapsed_s: float = 0.0
    shrunk: bool = False
    output_dtypes: list[str] = field(default_factory=list)
    # forward failed, and these inputs pass its shape checks on symbolic sizes, one entry per input
    # (a shape, a retyped tensor, {"dict": ...} / {"list": ...}, None: unchanged): shape_solver.py
    suggested_shapes: list[Any] | None = None
    # and these integer constructor arguments (None: unchanged), when the module's own sizes
    # disagreed (shape_solver.solve_sizes)
    suggested_init: list[Any] | None = None
    # it ran, and forward changed its own inputs in place (harvesting/pure_inputs.py gives it copies)
    mutates_inputs: bool = False


def resolve_device(device: str) -> str:
    if device in ("cpu", "cuda"):
        return device
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count()


def visible_gpu_ids(count: int, environ: dict[str, str] | os._Environ = os.environ) -> list[str]:
    """The ids to put in a worker's CUDA_VISIBLE_DEVICES for this process's GPUs 0..count-1: this
    process's own CUDA_VISIBLE_DEVICES entries when it has them (so "2,3" stays GPUs 2 and 3)."""
    listed = [x.strip() for x in (environ.get("CUDA_VISIBLE_DEVICES") or "").split(",") if x.strip()]
    return listed[:count] if len(listed) >= count else [str(i) for i in range(count)]


def assign_gpus(n_workers: int, visible: list[str], chosen: list[int]) -> list[str]:
    """One GPU id per worker, round-robin over `chosen` (indices into `visible`; empty = all)."""
    if not visible:
        raise JudgeError("validation.device is cuda but no GPU is visible to this process")
    bad = [i for i in chosen if not 0 <= i < len(visible)]
    if bad:
        raise JudgeError(f"validation.gpus = {chosen}: this process sees {len(visible)} GPU(s) (indices 0..{len(visible) - 1}); "
                         f"{bad} do not exist. Use indices as this process sees them (after CUDA_VISIBLE_DEVICES).")
    pool = [visible[i] for i in chosen] if chosen else visible
    return [pool[i % len(pool)] for i in range(n_workers)]


def judge_config_hash(config: ValidationConfig, device: str) -> str:
    """Hash of everything that can change a verdict (not the worker count)."""
    dump = config.model_dump(mode="json")
    for k in ("workers", "device", "spare_candidates", "gpus"):
        dump.pop(k, None)
    return content_key("judge", dump, device)


class _WorkerHandle:
    def __init__(self, index: int, device: str, n_workers: int, log_dir: str, pool_id: str, gpu: str = "0"):
        env = sandbox.scrubbed_env(os.environ)
        env["AUTOTRITON_JUDGE_POOL_ID"] = pool_id  # marks every process of this pool (see JudgePool.processes)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_AUTOTRITON_PARENT, env.get("PYTHONPATH", "")) if p)
        env.setdefault("PYTHONHASHSEED", "0")
        # The cores are shared between the workers (and their candidates): without a cap every one
        # of them runs a full-width OpenMP pool (torch's CPU ops: comparison, digests, copies), and
        # N workers x all cores threads oversubscribe the machine. On CUDA as on the CPU.
        threads = max(1, (os.cpu_count() or 1) // n_workers)
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(threads)
        if device == "cpu":
            env["TRITON_INTERPRET"] = "1"
            env["CUDA_VISIBLE_DEVICES"] = ""
        else:
            env.pop("TRITON_INTERPRET", None)
            env["CUDA_VISIBLE_DEVICES"] = gpu  # one GPU per worker; several workers may share one
        self.index = index
        self.log_path = os.path.join(log_dir, f"worker-{index}.log")
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "autotriton.validation.worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._log, env=env, start_new_session=True)
        self.ready: dict[str, Any] | None = None

    def wait_ready(self) -> dict[str, Any]:
        if self.ready is None:
            try:
                self.ready = wire.recv_pickle(self.proc.stdout.fileno(), deadline=time.monotonic() + READY_TIMEOUT_S)
            except (EOFError, TimeoutError, OSError) as exc:
                self.kill()
                raise JudgeError(f"judge worker {self.index} did not start ({exc}); its log says:\n{self.log_tail()}") from exc
        return self.ready

    def log_tail(self, n: int = 3000) -> str:
        try:
            return Path(self.log_path).read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            sandbox.kill_group(self.proc.pid)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self._log.close()


class JudgePool:
    """Warm judge workers kept across calls (GRPO calls `validate_many` every step).

    Use as a context manager; `close()` stops the workers.
    """

    def __init__(self, config: ValidationConfig | None = None, *, workers: int | None = None):
        self.config = config or ValidationConfig()
        self.device = resolve_device(self.config.device)
        if workers is None:
            workers = self.config.workers or _default_workers(self.config)
        self.n_workers = max(1, workers)
        self._gpus = (assign_gpus(self.n_workers, visible_gpu_ids(_gpu_count()), self.config.gpus)
                      if self.device == "cuda" else ["0"] * self.n_workers)
        self.config_hash = judge_config_hash(self.config, self.device)
        self._log_dir = tempfile.mkdtemp(prefix="autotriton-judge-logs-")
        self.pool_id = os.path.basename(self._log_dir).rsplit("-", 1)[-1] + f"-{os.getpid()}"
        self._slots: queue.Queue[int] = queue.Queue()
        self._handles: list[_WorkerHandle | None] = [None] * self.n_workers
        self._lock = threading.Lock()
        self._closed = False
        self.versions: dict[str, str] = {}
        self.device_name = "cpu"
        # problem key -> site-packages folders of that problem's dependency environment
        # (autotriton/environments.py): appended to sys.path after the judge's own, for it only.
        self.environments: dict[str, list[str]] = {}
        for i in range(self.n_workers):
            self._handles[i] = _WorkerHandle(i, self.device, self.n_workers, self._log_dir, self.pool_id, self._gpus[i])
        for i in range(self.n_workers):
            ready = self._handles[i].wait_ready()  # type: ignore[union-attr]
            self.versions = dict(ready.get("versions", {}))
            self._slots.put(i)
        if self.device == "cuda":
            try:
                import torch

                self.device_name = torch.cuda.get_device_name(0)
            except Exception:  # noqa: BLE001
                self.device_name = "cuda"
        self._worker_cfg = self._wire_config()

    # -- lifecycle -----------------------------------------------------------------------------

    def __enter__(self) -> "JudgePool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        live = [h for h in self._handles if h is not None]
        for h in live:  # EOF on its request channel: every worker stops at once, in parallel
            try:
                h.proc.stdin.close()
            except OSError:
                pass
        deadline = time.monotonic() + 5
        for h in live:
            try:
                h.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            h.kill()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    def processes(self) -> list[int]:
        """PIDs of every live process this pool started: workers, templates, candidates and
        anything they forked (found by the marker in their start-up environment)."""
        return pool_processes(self.pool_id)

    def roles(self) -> dict[int, str]:
        """pid -> "worker" | "template" | "spare" for the pool's standing processes (ask while no
        job runs: each worker is asked once, round-robin). Any other pid in `processes()` is a
        candidate at work, or something a candidate left behind."""
        out: dict[int, str] = {}
        for _ in range(self.n_workers):
            kind, res = self._call({"op": "ping"}, 60)
            if kind != "ok":
                raise JudgeError(f"a judge worker did not answer a ping: {res}")
            out[res["pid"]] = "worker"
            out[res["zygote"]] = "template"
            if res.get("spare"):
                out[res["spare"]] = "spare"
        return out

    def use_environments(self, environments: dict[str, Sequence[str]]) -> None:
        """Judge and probe these problems (by problem key, i.e. `source_key` of the reference
        source) with their dependency environments: the folders are appended to `sys.path`
        AFTER the judge's own (torch, triton and numpy stay the judge's) in the worker while it
        loads and runs the reference, and in the candidate's or probe's process."""
        for key, paths in environments.items():
            if paths:
                self.environments[key] = [str(p) for p in paths]
            else:
                self.environments.pop(key, None)

    def _wire_config(self) -> dict[str, Any]:
        cfg = self.config.model_dump(mode="json")
        cfg["device"] = self.device
        cfg["pool_workers"] = self.n_workers  # each worker's share of host memory for its cached problems
        cfg["timing_job"] = {"runs": self.config.timing_runs, "input_sets": self.config.timing_input_sets}
        return cfg

    def _replace(self, index: int) -> None:
        old = self._handles[index]
        if old is not None:
            old.kill()
        handle = _WorkerHandle(index, self.device, self.n_workers, self._log_dir, self.pool_id, self._gpus[index])
        self._handles[index] = handle
        handle.wait_ready()

    def _call(self, payload: dict[str, Any], budget_s: float, _retry: bool = True) -> tuple[str, Any]:
        """('ok', result) | ('timeout', msg) | ('crashed', msg), on whichever worker is free."""
        kind, res = self._call_once(payload, budget_s)
        if kind == "retry" and _retry:
            return self._call(payload, budget_s, _retry=False)
        return ("crashed", res) if kind == "retry" else (kind, res)

    def _call_once(self, payload: dict[str, Any], budget_s: float) -> tuple[str, Any]:
        queued = time.monotonic()
        index = self._slots.get()
        got_slot = time.monotonic()
        try:
            handle = self._handles[index]
            if handle is None or not handle.alive():
                self._replace(index)
                handle = self._handles[index]
            assert handle is not None
            try:
                wire.send_pickle(handle.proc.stdin.fileno(), payload)
            except OSError as exc:  # it died while idle: nothing of this job ran yet
                self._replace(index)
                return "retry", f"the judge worker had died ({exc!r}); it was replaced"
            try:
                answer = wire.recv_pickle(handle.proc.stdout.fileno(), deadline=time.monotonic() + budget_s)
            except TimeoutError:
                self._replace(index)
                return "timeout", f"the judge worker did not answer within {budget_s:.0f} s; it was killed and replaced"
            except (EOFError, OSError, wire.WireError) as exc:
                # The worker died mid-job (killed from outside, or the job's reference killed it):
                # replace it and let the job run once more; a second death is the verdict.
                tail = handle.log_tail(800)
                self._replace(index)
                return "retry", f"the judge worker died ({exc!r}); it was replaced. Worker log tail:\n{tail}"
            if not answer.get("ok"):
                if answer.get("fatal"):
                    self._replace(index)
                    if answer.get("retry"):
                        return "retry", f"judge worker error: {answer.get('error')}"
                return "crashed", f"judge worker error: {answer.get('error')}"
            result = answer["result"]
            if isinstance(result, dict) and isinstance(result.get("timing"), dict):
                # The caller's side of the judgement: waiting for a free worker, and the round trip
                # to it (request pickled and sent -> answer read; minus the worker's own time = IPC).
                result["timing"]["caller_queue_s"] = got_slot - queued
                result["timing"]["caller_roundtrip_s"] = time.monotonic() - got_slot
            return "ok", result
        finally:
            self._slots.put(index)

    # -- the batch APIs --------------------------------------------------------------------------

    def validate_many(self, jobs: Sequence[tuple[str, str]], *, progress: bool = False) -> list[Verdict]:
        """One Verdict per (problem_source, candidate_source), in job order."""
        if self._closed:
            raise JudgeError("this JudgePool is closed; open a new one")
        results: list[Verdict | None] = [None] * len(jobs)
        with _progress(progress, "judging candidates", len(jobs)) as advance:
            def one(i: int) -> None:
                results[i] = self._validate_one(*jobs[i])
                advance()

            with ThreadPoolExecutor(max_workers=self.n_workers) as ex:
                for f in [ex.submit(one, i) for i in range(len(jobs))]:
                    f.result()
        return [r for r in results if r is not None]

    def validate(self, problem_source: str, candidate_source: str) -> Verdict:
        return self._validate_one(problem_source, candidate_source)

    def _validate_one(self, problem_source: str, candidate_source: str) -> Verdict:
        start = time.monotonic()
        with _AST_LOCK:
            pkey = source_key(problem_source)
            verdict = Verdict(candidate_key=candidate_key(candidate_source, pkey), problem_key=pkey, status="crashed",
                              device=self.device_name, versions=dict(self.versions), judge_config_hash=self.config_hash)
            static = static_rules(candidate_source) if self.config.static_rules else []
        rules_s = time.monotonic() - start
        if static and self.config.skip_execution_on_rule_violation:
            verdict.status, verdict.violations = "rule_violation", static
            verdict.error = "not executed: the static rules already failed"
            verdict.elapsed_s = time.monotonic() - start
            return verdict
        budget = self.config.timeout_s * 2 + 120
        kind, res = self._call({"op": "validate", "problem_source": problem_source, "candidate_source": candidate_source,
                                "config": self._worker_cfg, "env_paths": self.environments.get(pkey, [])}, budget)
        if kind != "ok":
            verdict.status, verdict.error, verdict.violations = kind, res, static
            # rule_ok means "no rule violation found" (records.py, evaluation/metrics.py): a judge
            # that timed out or crashed found none beyond the static ones; `correct` stays False.
            verdict.rule_ok = not static
            verdict.elapsed_s = time.monotonic() - start
            return verdict
        runtime = [Violation(v["rule"], v["message"], v.get("line")) for v in res["violations"]]
        violations = static + runtime
        status = res["status"]
        if violations and status not in ("timeout", "crashed"):
            status = "rule_violation"
        verdict.status = status
        verdict.correct = res["status"] == "correct"
        verdict.correct_own_sizes = bool(res.get("correct_own_sizes", verdict.correct))
        verdict.odd_sizes_ok = res.get("odd_sizes_ok")
        # A timeout or crash is its own status, not a rule failure: only the violations seen fail rule_ok.
        verdict.rule_ok = not violations
        verdict.compiled = bool(res.get("compiled"))
        verdict.violations = violations
        verdict.compile_report = res.get("compile_report") or {}
        verdict.trials = res.get("trials", [])
        verdict.triton_kernels_launched = res.get("triton_kernels_launched", [])
        verdict.aten_ops = res.get("aten_ops", [])
        verdict.error = res.get("error")
        verdict.max_abs_err = res.get("max_abs_err")
        timing = res.get("timing", {})
        if res.get("reference_failed"):
            timing["reference_failed"] = True  # the problem, not the candidate, is at fault
        timing["caller_rules_s"] = rules_s  # the static rules, in this (the caller's) thread
        verdict.timing = timing
        if "speedup" in timing:
            verdict.speedup = timing.get("speedup")
            verdict.speedup_vs_compile = timing.get("speedup_vs_compile")
        verdict.elapsed_s = time.monotonic() - start
        return verdict

    def footprints(self, sources: Sequence[str]) -> list[dict[str, int | None] | None]:
        """Bytes of one run of each reference problem at its own sizes (trial_budget.footprint:
        inputs, outputs, parameters), worked out on the meta device in a worker with the problem's
        environment, in order; None where get_inputs() does not run on meta or the worker failed."""
        results: list[dict[str, int | None] | None] = [None] * len(sources)

        def one(i: int) -> None:
            with _AST_LOCK:
                key = source_key(sources[i])
            kind, res = self._call({"op": "footprint", "problem_source": sources[i],
                                    "env_paths": self.environments.get(key, [])}, self.config.probe_timeout_s + 60)
            results[i] = res if kind == "ok" else None

        with ThreadPoolExecutor(max_workers=self.n_workers) as ex:
            for f in [ex.submit(one, i) for i in range(len(sources))]:
                f.result()
        return results

    def probe_many(self, sources: Sequence[str], *, progress: bool = False, shrink: bool | None = None,
                   environments: dict[str, Sequence[str]] | None = None) -> list[ProbeResult]:
        """One ProbeResult per reference problem source, in order. `shrink` overrides
        config.shrink_for_cpu (False: probe exactly the given sources). `environments` (problem
        key -> site-packages folders) adds to those registered with `use_environments`."""
        if environments:
            self.use_environments(environments)
        cfg = dict(self._worker_cfg, device="cpu")
        if shrink is not None:
            cfg["shrink_for_cpu"] = shrink
        results: list[ProbeResult | None] = [None] * len(sources)
        with _progress(progress, "probing problems", len(sources)) as advance:
            def one(i: int) -> None:
                with _AST_LOCK:
                    key = source_key(sources[i])
                kind, res = self._call({"op": "probe", "problem_source": sources[i], "config": cfg,
                                        "env_paths": self.environments.get(key, [])},
                                       self.config.probe_timeout_s * 2 + 60)
                if kind != "ok":
                    res = {"ok": False, "reason": kind, "detail": res}
                results[i] = ProbeResult(ok=bool(res.get("ok")), reason=res.get("reason"), detail=res.get("detail", ""),
                                         output_shapes=res.get("output_shapes", []), elapsed_s=float(res.get("elapsed_s", 0.0)),
                                         shrunk=bool(res.get("shrunk", False)), output_dtypes=res.get("output_dtypes", []),
                                         suggested_shapes=res.get("suggested_shapes"),
                                         suggested_init=res.get("suggested_init"),
                                         mutates_inputs=bool(res.get("mutates_inputs")))
                advance()

            with ThreadPoolExecutor(max_workers=self.n_workers) as ex:
                for f in [ex.submit(one, i) for i in range(len(sources))]:
                    f.result()
        return [r for r in results if r is not None]


def pool_processes(pool_id: str) -> list[int]:
    marker = f"AUTOTRITON_JUDGE_POOL_ID={pool_id}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in env and state != b"Z":
            found.append(int(entry))
    return sorted(found)


def static_rules(candidate_source: str) -> list[Violation]:
    """The static rules as the judge applies them: a crash of the checker is itself a violation
    (RULES-CHECKER-ERROR), a missing libcst a JudgeError (never judge without the rules)."""
    try:
        from autotriton.validation.rules import check_rules
    except ImportError as exc:
        # Never judge silently without the static rules: a missing libcst would make every
        # source-level cheat invisible. Install it, or set validation.static_rules = false.
        raise JudgeError(
            f"the static rules cannot run here ({exc}); install libcst (pip install libcst) or, knowingly, "
            "set validation.static_rules = false"
        ) from exc
    try:
        return list(check_rules(candidate_source))
    except Exception as exc:  # noqa: BLE001 (a crash of the rule checker must not hide the candidate's verdict)
        return [Violation("RULES-CHECKER-ERROR", f"the static rule checker failed on this candidate: {exc!r}"[:500], None)]


class _progress:
    """A rich progress bar on stderr (or nothing), usable from worker threads."""

    def __init__(self, enabled: bool, label: str, total: int):
        self.enabled, self.label, self.total = enabled and total > 0, label, total
        self._bar = None
        self._lock = threading.Lock()

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn, TimeRemainingColumn

            self._bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True))
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total)

        def advance() -> None:
            if self._bar is not None:
                with self._lock:
                    self._bar.advance(self._task)

        return advance

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.stop()


def validate_many(jobs: Sequence[tuple[str, str]], config: ValidationConfig | None = None, *, progress: bool = False,
                  environments: dict[str, Sequence[str]] | None = None) -> list[Verdict]:
    """Judge (problem_source, candidate_source) pairs with a temporary pool; verdicts in job order.
    `environments`: problem key -> site-packages folders of its dependency environment."""
    if not jobs:
        return []
    config = config or ValidationConfig()
    n = config.workers or None
    with JudgePool(config, workers=min(n or _default_workers(config), len(jobs))) as pool:
        pool.use_environments(environments or {})
        return pool.validate_many(jobs, progress=progress)


def _default_workers(config: ValidationConfig) -> int:
    """One worker per CPU core; on GPUs one per GPU when timing (timings must not share a GPU),
    else up to 4 per GPU so that candidates' JIT compiles overlap (benchmarks/RESULTS.md)."""
    device = resolve_device(config.device)
    if device != "cuda":
        return max(1, os.cpu_count() or 1)
    gpus = len(set(config.gpus)) or max(1, _gpu_count())
    if config.time_kernels:
        return gpus
    return gpus * max(1, min(4, (os.cpu_count() or 1) // gpus))


def validate_candidate(problem_source: str, candidate_source: str, config: ValidationConfig | None = None) -> Verdict:
    return validate_many([(problem_source, candidate_source)], config)[0]


def probe_many(sources: Sequence[str], config: ValidationConfig | None = None, *, progress: bool = False,
               environments: dict[str, Sequence[str]] | None = None) -> list[ProbeResult]:
    if not sources:
        return []
    config = config or ValidationConfig()
    n = config.workers or max(1, os.cpu_count() or 1)
    with JudgePool(config.model_copy(update={"device": "cpu"}), workers=min(n, len(sources))) as pool:
        return pool.probe_many(sources, progress=progress, environments=environments)


def probe_problem(problem_source: str, config: ValidationConfig | None = None) -> ProbeResult:
    return probe_many([problem_source], config)[0]


def shrink_and_check(problem_source: str, config: ValidationConfig | None = None, *,
                     pool: JudgePool | None = None) -> tuple[str, ProbeResult]:
    """`shrink_problem`, then run the shrunk problem in the sandbox; if it does not run, the original
    is returned instead (with the original's probe). Returns (source to use, its ProbeResult).
    Pass a warm `pool` to avoid starting workers for this call."""
    from autotriton.validation.shrink import shrink_problem

    config = config or (pool.config if pool is not None else ValidationConfig())
    if pool is None:
        with JudgePool(config.model_copy(update={"device": "cpu"}), workers=1) as own:
            return shrink_and_check(problem_source, config, pool=own)
    shrunk = shrink_problem(problem_source, config.shrink_max_dim)
    if shrunk != problem_source:
        (result,) = pool.probe_many([shrunk], shrink=False)
        if result.ok:
            result.shrunk = True
            return shrunk, result
    (result,) = pool.probe_many([problem_source], shrink=False)
    return problem_source, result
