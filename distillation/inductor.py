"""The Inductor teacher: torch.compile on a GPU, its generated Triton turned into a standalone ModelNew.

    teacher = InductorTeacher(config)            # needs a CUDA GPU
    candidates = teacher.generate(problems, samples=1)

For each problem a fresh subprocess (`python distillation/inductor_capture.py OUT.json`, so a
problem that crashes or hangs the compiler costs only itself) compiles the problem's `Model` with
Triton-only max-autotune and dynamic shapes (inductor_capture.py); transposed, 1-D and grouped
convolutions are first rewritten as gathers + matmul (inductor_decompose.py) so they too come out
as Triton. The generated output code is then converted into a clean candidate with plain
`torch` + `triton` imports (inductor_convert.py).

Every problem yields one Candidate per capture variant. The compiler is deterministic, so
`samples` buys variants, not samples: the first is the configured capture; with `samples` >= 2 a
second is captured with symbolic parameter shapes (`dynamic_parameters`: convolutions traced as
gathers + matmul, channel counts read from the weights), kept only when it converts and differs
from the first. Inductor's own convolution lowering bakes channel counts in, which the judge's
odd-size trial rejects; on the H200 the variant turned 9 of KernelBench L1's 11 such convolutions
into validated candidates (slower ones: benchmarks/RESULTS.md, run E). The first candidate is
always returned: a converted one, or one with `code == ""` and `parse_error` naming why the conversion
failed (`extern_kernels`, `aten_fallback`, `graph_breaks`, `capture_failed: ...`) with Inductor's
output code in `raw_output`, so failures are recorded, counted in `counters`, and never raise.
Instruction and reasoning are left empty: the pipeline (or the replay teacher, for shipped data)
fills them with `describe_problem`, or the LLM explainer when one is configured.

Repair (the pipeline's repair rounds): GEMM and convolution templates multiply on the tensor cores
(TF32, `tf32_matmuls`), which the judge allows a looser fp32 tolerance; in a deep chain (attention
plus MLP, stacked convolutions) the TF32 error can still pass it. A candidate judged `incorrect`
by values (not by shape) whose kernels call `tl.dot` is captured once more with TF32 off (fp32
products); every other failed candidate has no repair (the compiler would write the same code).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional, Sequence

from pydantic import BaseModel, Field

from autotriton.distillation.inductor_convert import ConversionResult, convert_capture
from autotriton.distillation.teacher import GPUUnavailableError, RepairRequest, TeacherSpec
from autotriton.records import Candidate, Problem

__all__ = ["InductorTeacher", "InductorSettings", "TEACHER", "capture_in_subprocess", "may_convolve"]

_ROOT = str(Path(__file__).resolve().parent.parent)


def may_convolve(source: str) -> bool:
    """Whether a problem's source can run a convolution (nn.ConvNd, F.conv*, conv_transpose,
    a library's Conv2dSame...): the only case where the dynamic-parameters capture differs from
    the first. Errs towards yes: any mention of "conv", in any case."""
    return "conv" in source.lower()


def capture_in_subprocess(source: str, *, name: str, timeout_s: float, dynamic: bool = True,
                          decompose_convolution: bool = True, max_autotune: bool = True,
                          device: str = "cuda", max_mm_configs: int | None = None,
                          dynamic_parameters: bool = False, env_paths: Sequence[str] = (),
                          compile_threads: int = 0, tf32: bool = True, implicit_gemm: bool = True) -> dict[str, Any]:
    """Run `inductor_capture.capture_problem` in a child process; a crash or timeout becomes a
    capture with `ok` False and `stage` "crashed"/"timeout" instead of taking the caller down.
    `dynamic_parameters`: capture_problem's opt-in symbolic parameter shapes. `env_paths`: the
    problem's dependency environment, appended to the child's sys.path after its own.
    `compile_threads` (> 0): Inductor's Triton compile workers in the child
    (TORCHINDUCTOR_COMPILE_THREADS, unless the caller's environment sets it). `tf32` False: GEMM and
    convolution templates multiply in fp32 (capture_problem's `tf32`). `implicit_gemm`: capture_problem's."""
    request = {"source": source, "name": name, "dynamic": dynamic, "decompose_convolution": decompose_convolution,
               "max_autotune": max_autotune, "device": device, "max_mm_configs": max_mm_configs,
               "dynamic_parameters": dynamic_parameters, "env_paths": [str(p) for p in env_paths], "tf32": tf32,
               "implicit_gemm": implicit_gemm}
    env = dict(os.environ)
    env["PYTHONPATH"] = _ROOT + os.pathsep + env.get("PYTHONPATH", "")
    if compile_threads > 0 and "TORCHINDUCTOR_COMPILE_THREADS" not in os.environ:
        env["TORCHINDUCTOR_COMPILE_THREADS"] = str(int(compile_threads))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="autotriton-inductor-") as tmp:
        out_path = os.path.join(tmp, "capture.json")
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(tmp, "inductor-cache")
        try:
            # run the file, not `-m autotriton.distillation...`: the package __init__ needs more
            # than a bare GPU machine has, the capture needs torch + triton only
            proc = subprocess.run([sys.executable, str(Path(__file__).with_name("inductor_capture.py")), out_path],
                                  input=json.dumps(request), text=True, capture_output=True, timeout=timeout_s, env=env)
        except subprocess.TimeoutExpired:
            return {"ok": False, "name": name, "stage": "timeout", "error": f"capture took over {timeout_s:.0f}s",
                    "elapsed_s": time.monotonic() - started}
        if proc.returncode != 0 or not os.path.exists(out_path):
            tail = (proc.stderr or proc.stdout or "")[-2000:]
            return {"ok": False, "name": name, "stage": "crashed",
                    "error": f"capture process exited with {proc.returncode}: {tail}", "elapsed_s": time.monotonic() - started}
        with open(out_path, encoding="utf-8") as f:
            return json.load(f)


class InductorTeacher:
    """Teacher protocol implementation over torch.compile (see module docstring)."""

    name = "inductor"

    def __init__(self, config: Any = None, *, jobs: int | None = None, timeout_s: float | None = None,
                 dynamic: bool | None = None, decompose_convolution: bool | None = None, max_autotune: bool = True,
                 device: str = "cuda", max_mm_configs: int | None = None, dynamic_parameters: bool | None = None):
        """`config` is a DistillConfig (its inductor_* fields); keyword arguments override it.

        `max_mm_configs` caps the GEMM/conv template configs autotuned per op; None (default)
        keeps Inductor's own list: the teacher has no wall-time budget of its own, and a wider
        search finds faster templates (benchmarks/inductor_l1.py caps it to fit a device call).
        `dynamic_parameters` (default: the config's `inductor_dynamic_parameters`, off): the dynamic
        capture keeps parameter shapes symbolic (see capture_problem)."""
        import torch
        import triton

        from autotriton.distillation.inductor_capture import CAPTURE_FORMAT

        # the capture format too: a capture change (e.g. TF32 templates) must re-distil cached problems
        self.version = f"torch-{torch.__version__}+triton-{triton.__version__}+capture-{CAPTURE_FORMAT}"
        self.jobs = jobs or int(getattr(config, "inductor_jobs", 0) or 0) or max(1, min(8, (os.cpu_count() or 2) // 2))
        self.timeout_s = timeout_s or float(getattr(config, "inductor_timeout_s", 0) or 0) or 600.0
        # Inductor starts a compile pool as large as the machine in every capture process; with
        # `jobs` captures (times the batches distilled side by side) that is jobs x cores
        # processes fighting over the cores. Share the cores out instead.
        per_batch = min(self.jobs, int(getattr(config, "batch_problems", 0) or 0) or self.jobs)
        at_once = per_batch * max(1, int(getattr(config, "concurrent_batches", 1) or 1))
        self.compile_threads = (int(getattr(config, "inductor_compile_threads", 0) or 0)
                                or max(1, (os.cpu_count() or 1) // at_once))
        self.dynamic = getattr(config, "inductor_dynamic", True) if dynamic is None else dynamic
        self.decompose_convolution = (getattr(config, "inductor_decompose_convolution", True)
                                      if decompose_convolution is None else decompose_convolution)
        self.max_autotune = max_autotune
        self.implicit_gemm = bool(getattr(config, "inductor_implicit_gemm", True))
        self.device = device
        self.max_mm_configs = max_mm_configs if max_mm_configs is not None else getattr(config, "inductor_max_mm_configs", None)
        self.dynamic_parameters = (bool(getattr(config, "inductor_dynamic_parameters", False))
                                   if dynamic_parameters is None else dynamic_parameters)
        self.counters: Counter = Counter()
        self.conversions: dict[str, ConversionResult] = {}  # problem key -> outcome, for reports
        # problem key -> "conversion_failed:<kind>: detail" for the pipeline's rejections (stored
        # with the reason kind, so `autotriton db report` can count converter failures by kind)
        self.failures: dict[str, str] = {}
        self.environments: dict[str, list[str]] = {}  # problem key -> its dependency environment's site-packages

    def use_environments(self, environments: dict[str, Sequence[str]]) -> None:
        """Capture these problems (by key) with their dependency environments (autotriton/environments.py)."""
        self.environments.update({k: [str(p) for p in v] for k, v in environments.items() if v})

    def variants(self, samples: int) -> list[bool]:
        """The captures made per problem, as their `dynamic_parameters` flag (module docstring)."""
        first = self.dynamic_parameters and self.dynamic
        return [first, True] if samples >= 2 and self.dynamic and not first else [first]

    def generate(self, problems: list[Problem], samples: int = 1) -> list[Candidate]:
        """Per problem: its first candidate (converted, or empty with `parse_error` saying why),
        then the symbolic-parameter variant when `samples` >= 2 and it converts to different code."""
        variants = self.variants(samples)
        capture = self._capture

        def one(problem: Problem) -> list[Candidate]:
            out = [self._candidate(problem, capture(problem, variants[0]), dynamic_parameters=variants[0])]
            if len(variants) > 1 and not may_convolve(problem.reference_source):
                # The variant differs from the first capture only in how convolutions are traced
                # (the Dynamo switches are the same), so without one it would convert to the same
                # code: a second compile of the problem for nothing.
                self.counters["variants_skipped"] += 1
                return out
            for dynamic_parameters in variants[1:]:
                extra = self._candidate(problem, capture(problem, dynamic_parameters), dynamic_parameters=dynamic_parameters,
                                        extra="variants")
                if extra.code and all(extra.code != c.code for c in out):
                    out.append(extra)
            return out

        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            return [c for cands in pool.map(one, problems) for c in cands]

    def _capture(self, problem: Problem, dynamic_parameters: bool, tf32: bool = True) -> dict[str, Any]:
        """The problem's capture(s): dynamic first, static when that fails (not after a timeout or crash)."""
        settings = dict(name=problem.name, timeout_s=self.timeout_s, decompose_convolution=self.decompose_convolution,
                        max_autotune=self.max_autotune, device=self.device, max_mm_configs=self.max_mm_configs,
                        env_paths=self.environments.get(problem.key, ()), compile_threads=self.compile_threads, tf32=tf32,
                        implicit_gemm=self.implicit_gemm)
        first = capture_in_subprocess(problem.reference_source, dynamic=self.dynamic,
                                      dynamic_parameters=dynamic_parameters, **settings)
        attempts = [first]
        if not first.get("ok") and self.dynamic and first.get("stage") not in ("timeout", "crashed"):
            attempts.append(capture_in_subprocess(problem.reference_source, dynamic=False, **settings))
        return {"attempts": attempts, "source": problem.reference_source}

    @staticmethod
    def tf32_repairable(request: RepairRequest) -> bool:
        """Whether `request`'s candidate failed by values with TF32 tensor-core products in it (module docstring)."""
        parent, verdict = request.parent, request.verdict
        return (parent.generator == "inductor" and (parent.sampling or {}).get("tf32", True) is not False
                and "tl.dot(" in parent.code and verdict is not None and verdict.status == "incorrect"
                and "outside atol" in (verdict.error or ""))

    def repair(self, requests: list[RepairRequest]) -> list[Candidate]:
        """Per TF32-repairable request (tf32_repairable), the problem captured again with TF32 off:
        a candidate with `repair_round` and `parent_key` set. Other requests get none."""
        todo = [r for r in requests if self.tf32_repairable(r)]

        def one(request: RepairRequest) -> Candidate:
            dynamic_parameters = bool((request.parent.sampling or {}).get("dynamic_parameters", False))
            capture = self._capture(request.problem, dynamic_parameters, tf32=False)
            cand = self._candidate(request.problem, capture, dynamic_parameters=dynamic_parameters, extra="tf32_repairs", tf32=False)
            cand.repair_round, cand.parent_key = request.repair_round, request.parent.key
            return cand

        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            return [c for c in pool.map(one, todo) if c.code]

    def _candidate(self, problem: Problem, capture: dict[str, Any], *, dynamic_parameters: bool = False,
                   extra: str | None = None, tf32: bool = True) -> Candidate:
        """The candidate of a capture. `extra`: the counter prefix of a second capture of a problem
        already counted ("variants", "tf32_repairs"); None for the problem's first candidate."""
        result = convert_capture(capture, problem.reference_source)
        if extra:
            self.counters[f"{extra}_converted" if result.ok else f"{extra}_failed"] += 1
        else:
            self.conversions[problem.key] = result
            if result.ok:
                self.failures.pop(problem.key, None)
            else:
                self.failures[problem.key] = f"conversion_failed:{result.reason}: {result.detail}"[:1000]
            self.counters["problems"] += 1
            self.counters["converted" if result.ok else f"failed:{result.reason}"] += 1
        attempt = next((a for a in capture["attempts"] if a.get("output_code")), capture["attempts"][0])
        return Candidate(
            problem_key=problem.key,
            code=result.code if result.ok else "",
            generator=self.name,
            generator_version=self.version,
            prompt_version="",
            sampling={"dynamic": attempt.get("dynamic"), "dynamic_parameters": dynamic_parameters, "tf32": tf32,
                      "max_autotune": self.max_autotune,
                      "decompose_convolution": self.decompose_convolution, "kernels": result.kernels,
                      "notes": result.notes,
                      # wall time of the capture(s) behind this candidate (a timeout or crash included)
                      "capture_s": round(sum(float(a.get("elapsed_s") or 0.0) for a in capture["attempts"]), 3)},
            raw_output=attempt.get("output_code") or "",
            parse_error=None if result.ok else f"inductor conversion failed ({result.reason}): {result.detail}",
        )


class InductorSettings(BaseModel):
    """The inductor teacher's `distill.*` fields."""

    inductor_jobs: int = Field(0, ge=0, description="inductor teacher: problems compiled at once, each in its own process (0 = half the CPU cores, at most 8)")
    inductor_timeout_s: float = Field(600.0, gt=0, description="inductor teacher: wall-clock limit for compiling one problem (its process is killed)")
    inductor_compile_threads: int = Field(0, ge=0, description="inductor teacher: Triton compile workers inside each capture process (TORCHINDUCTOR_COMPILE_THREADS; 0 = the CPU cores shared out over the captures running at once, at least 1: Inductor's own default is a pool as large as the machine in every capture, i.e. jobs x cores processes)")
    inductor_dynamic: bool = Field(True, description="inductor teacher: compile with dynamic shapes so kernels take sizes as arguments (static only when that fails)")
    inductor_decompose_convolution: bool = Field(True, description="inductor teacher: rewrite transposed/1-D/grouped convolutions as gathers + Triton matmul (Inductor has no Triton template for them)")
    inductor_max_mm_configs: Optional[int] = Field(None, ge=1, description="inductor teacher: at most this many GEMM/conv template configs autotuned per op (None = Inductor's own list; benchmarks/inductor_l1.py uses 4 to fit a device call)")
    inductor_implicit_gemm: bool = Field(True, description="inductor teacher: the convolutions rewritten for Triton (transposed, 1-D, grouped, dilated; every one with symbolic parameter shapes) whose per-group product is tensor-core sized run as one implicit-GEMM Triton kernel with channel counts as arguments (distillation/conv_kernels.py) instead of an im2col gather + matmul")
    inductor_dynamic_parameters: bool = Field(False, description="inductor teacher: trace every convolution as gathers + matmul so channel counts taken from weights stay kernel arguments (Inductor's conv lowering bakes them in) in the FIRST capture; samples >= 2 adds that capture as a second candidate anyway (H200: 9 of L1's 11 baked-channel convolutions then validate, slower)")


def build_inductor_teacher(config: Any) -> InductorTeacher:
    """The teacher from `config`; GPUUnavailableError without a CUDA GPU."""
    import torch

    if not torch.cuda.is_available():
        raise GPUUnavailableError(
            "the inductor teacher runs torch.compile on a CUDA GPU and this machine has none. "
            "Use --teacher replay (its recorded outputs, re-validated here) or --teacher openai, or run on a GPU machine."
        )
    return InductorTeacher(config)


TEACHER = TeacherSpec(name="inductor", description="torch.compile, needs a CUDA GPU",
                      build=build_inductor_teacher, settings=InductorSettings)
