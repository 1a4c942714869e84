"""What a judge worker keeps per problem: the reference, built once, and its trial phases.

- `Phase`: one model construction and its trials, deterministic from seeds (the candidate gets
  the same init inputs and weights; trial inputs only once its __init__ returned), the trials'
  inputs drawn on the judge's device (`draw_inputs`);
- `ProblemState`: the runnable reference of a problem (shrunk on the CPU, fitted to the trial
  byte budget on a GPU) with its main phase and the odd-size trial;
- `problem_state`: the worker's cache of them (least recently used out first), building one again
  after a wait when the GPU was out of memory (`OOM_WAITS_S`).

Runs inside a judge worker (validation/worker.py), like judge.py.
"""

from __future__ import annotations

import contextlib
import gc
import os
import time
from typing import Any, Callable, TypeVar

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map

from autotriton.hashing import source_key
from autotriton.validation import candidate_runner as cr
from autotriton.validation import shrink
from autotriton.validation.reference_problem import ProblemError, load_problem_module
from autotriton.validation.trial_budget import _tensor_bytes, fit_to_budget, own_sizes_fit

MAX_CACHED_PROBLEMS = 16
# ...and at most this many bytes of their trial inputs and reference outputs (host memory): a
# problem judged at its own sizes (max_trial_mb raised, answer files) can hold tens of GiB alone.
MAX_CACHED_BYTES = 16 * 2**30
# ...and, all workers' caches together, at most this share of the host's memory (the rest is the
# candidates', the captures' and Inductor's): eight GPU judge workers at 16 GiB each were the whole
# of a 128 GiB host, and the twenty-sixth GPU run lost a worker and a candidate to SIGKILL.
HOST_MEMORY_SHARE = 0.25


def cache_limit(cfg: dict[str, Any], host_bytes: int | None = None) -> int:
    """Bytes this worker's cache of problems may hold: MAX_CACHED_BYTES, or its share of
    HOST_MEMORY_SHARE of the host's memory among the pool's workers (`pool_workers`) when less."""
    if host_bytes is None:
        try:
            host_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            return MAX_CACHED_BYTES
    return min(MAX_CACHED_BYTES, int(host_bytes * HOST_MEMORY_SHARE / max(1, int(cfg.get("pool_workers") or 1))))


def _clone(obj: Any) -> Any:
    """A copy of trial inputs for the reference to run on, dicts included: a module that writes
    its result into its `features` dict (`features.update(...)`) must leave the trial's own
    inputs, which the candidate gets and whose digest was taken, as they were."""
    return tree_map(lambda x: x.clone() if isinstance(x, torch.Tensor) else x, obj)


def _to(obj: Any, device: str) -> Any:
    return cr._to(obj, device)


def draw_inputs(module: Any, seed: int, device: str) -> list[Any]:
    """get_inputs() under torch.manual_seed(seed), on the CPU where the worker keeps them.

    On a GPU judge the tensor factories run under torch.device(device), as the timed input sets
    do (validation/timing.py): the GPU draws GiBs in milliseconds where the worker's one CPU
    thread took seconds a GiB (the twenty-sixth GPU run: 33-94 s of a verdict making the inputs
    of problems judged at their own sizes). The values are the seed's on that device; worker and
    candidate see the same ones, since the worker sends them. A get_inputs() that does not run
    so (it calls .numpy(), or mixes in CPU tensors) is drawn on the CPU as written."""
    if torch.device(device).type != "cpu":
        try:
            torch.manual_seed(seed)
            with torch.device(device):
                drawn = list(module.get_inputs())
            return _to(drawn, "cpu")
        except Exception:  # noqa: BLE001 - drawn again below, as the problem wrote it
            pass
    torch.manual_seed(seed)
    return _to(list(module.get_inputs()), "cpu")


# The operators that run in TF32 under torch's own allow_tf32 switches (cuBLAS matmuls, cuDNN
# convolutions, attention's matmuls): a reference without one of them on fp32 operands computes
# nothing a TF32 `tl.dot` stands for, so a candidate's TF32 dot earns no looser fp32 tolerance there
# (a gratuitous dot launched beside an approximation would otherwise buy one; compare.py).
TF32_OPS = frozenset({
    "mm", "bmm", "addmm", "addbmm", "baddbmm", "matmul", "linear", "_addmm_activation", "mv", "addmv", "einsum",
    "tensordot", "convolution", "_convolution", "cudnn_convolution", "cudnn_convolution_transpose",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_attention_math", "_efficient_attention_forward",
    "_flash_attention_forward", "_fused_rnn_tanh_cell", "_thnn_fused_lstm_cell", "_thnn_fused_gru_cell",
    "_cudnn_rnn", "lstm", "gru", "rnn_tanh", "rnn_relu",
})


class _Fp32Matmuls(TorchDispatchMode):
    """Notes whether a TF32_OPS operator ran on fp32 operands (the reference's first trial)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not self.seen and getattr(getattr(func, "overloadpacket", None), "__name__", None) in TF32_OPS:
            self.seen = any(isinstance(x, torch.Tensor) and x.dtype == torch.float32
                            for x in tree_leaves((args, kwargs or {})))
        return func(*args, **(kwargs or {}))


class Phase:
    """One model construction plus its trials, computed deterministically from seeds."""

    def __init__(self, name: str, module, init_seed: int, trial_seeds: list[int], device: str):
        self.name = name
        torch.manual_seed(init_seed)
        self.init_inputs = list(module.get_init_inputs())
        torch.manual_seed(init_seed)
        model = module.Model(*self.init_inputs)
        self.state_dict = {k: v.detach().to("cpu").clone() for k, v in model.state_dict().items()} if isinstance(model, torch.nn.Module) else {}
        self.model = model.to(device).eval() if isinstance(model, torch.nn.Module) else model
        self.init_seed = init_seed
        self.module = module
        self.device = device
        self.reseed(trial_seeds)

    def reseed(self, trial_seeds: list[int]) -> None:
        """New trial inputs (and, lazily, reference outputs) from these seeds; model and weights stay."""
        self.trials = []
        for seed in trial_seeds:
            inputs = draw_inputs(self.module, seed, self.device)
            self.trials.append({"seed": seed, "inputs": inputs, "digest": cr.digest(cr.input_leaves(inputs))})
        self.outputs: list[list[torch.Tensor]] | None = None
        self.fp32_matmuls = False  # set with the outputs: the reference ran a TF32_OPS operator on fp32 (GPU only)
        self.output_paths: list[list[str]] = []  # per trial, each output tensor's dict keys (compare.key_mismatch)

    def job(self) -> dict[str, Any]:
        """What the candidate gets before its ModelNew exists: no trial inputs and no seeds (those
        follow on request, `trial_inputs`, once its __init__ returned)."""
        return {"name": self.name, "init_seed": self.init_seed, "init_inputs": self.init_inputs,
                "state_dict": self.state_dict, "trials": [{} for _ in self.trials]}

    def trial_inputs(self) -> list[Any]:
        return [t["inputs"] for t in self.trials]

    def reference_outputs(self) -> list[list[torch.Tensor]]:
        if self.outputs is None:
            outs, self.output_paths = [], []
            on_gpu = torch.device(self.device).type != "cpu"
            with torch.no_grad():
                for i, t in enumerate(self.trials):
                    watch = _Fp32Matmuls() if on_gpu and i == 0 else contextlib.nullcontext()
                    with watch:
                        # a copy on the device (moving to another device copies): cloned first on the CPU only
                        out = self.model(*(_to(t["inputs"], self.device) if on_gpu else _clone(t["inputs"])))
                    if i == 0:
                        self.fp32_matmuls = bool(getattr(watch, "seen", False))
                    paths: list[str] = []
                    outs.append([o.detach().to("cpu") for o in cr._flatten_outputs(out, paths)])
                    self.output_paths.append(paths)
            self.outputs = outs
        return self.outputs


class ProblemState:
    """What a worker keeps per problem: the runnable (maybe shrunk) reference and its phases."""

    def __init__(self, source: str, cfg: dict[str, Any], directory: str):
        self.notes: dict[str, Any] = {}
        self.timing: dict[str, Any] | None = None  # reference times on a GPU (validation/timing.py)
        self.original_source = source
        device = cfg["device"]
        candidates = [source]
        if device == "cpu" and cfg["shrink_for_cpu"]:
            shrunk = shrink.shrink_problem(source, cfg["shrink_max_dim"])
            if shrunk != source:
                candidates = [shrunk, source]
        trials = cfg["trials"]
        if not (device == "cpu" and cfg["shrink_for_cpu"]):  # full sizes, within the per-trial byte budget (README, "Devices")
            fitted, budget_notes = fit_to_budget(source, cfg, directory)
            self.notes.update(budget_notes)
            if fitted != source and own_sizes_fit(budget_notes, cfg):
                # over max_trial_mb but within max_own_size_trial_mb: judged at the problem's own sizes
                # (KernelBench's definition, and a candidate with the sizes baked in can run nowhere
                # else), with fewer trials to hold in memory instead of shrunk
                trials = min(trials, cfg.get("own_size_trials", 1))
                self.notes.pop("shrunk_for_memory", None)
                self.notes.update(own_sizes_for_memory=True, trials=trials)
            elif fitted != source:
                candidates = [fitted, source]
        seeds = [cfg["seed"] + 1000 * (i + 1) for i in range(trials)]
        last_exc: BaseException | None = None
        self.main: Phase | None = None
        for i, src in enumerate(candidates):
            try:
                module = load_problem_module(src, directory, "main")
                phase = Phase("main", module, cfg["seed"], seeds, device)
                phase.reference_outputs()  # the shrunk problem must still run
                self.main, self.source = phase, src
                self.notes["shrunk"] = src != source
                break
            except BaseException as exc:  # noqa: BLE001
                last_exc = exc
                if i == 0 and len(candidates) > 1:
                    self.notes["shrink_failed"] = f"{type(exc).__name__}: {exc}"[:300]
                    self.notes.pop("shrunk_for_memory", None)
        if self.main is None:
            raise ProblemError(f"the reference problem does not run: {type(last_exc).__name__}: {last_exc}")
        self.odd: Phase | None = None
        if cfg["odd_size_trial"]:
            self.notes["odd_size_trial"] = "skipped: no even size constants to perturb"
            for j, variant in enumerate(shrink.perturb_sizes(self.source)):
                try:
                    module = load_problem_module(variant, directory, f"odd{j}")
                    phase = Phase("odd_sizes", module, cfg["seed"] + 7, [cfg["seed"] + 7777], device)
                    phase.reference_outputs()
                    self.odd = phase
                    self.notes["odd_size_trial"] = f"variant {j}"
                    break
                except BaseException as exc:  # noqa: BLE001
                    self.notes["odd_size_trial"] = f"skipped: no perturbed variant runs ({type(exc).__name__})"

    def phases(self) -> list[Phase]:
        return [self.main] + ([self.odd] if self.odd is not None else [])  # type: ignore[list-item]

    def cached_bytes(self) -> int:
        return sum(_tensor_bytes([t["inputs"] for t in p.trials]) + _tensor_bytes(p.outputs or []) for p in self.phases())


# Batches distilled side by side share the GPU (distillation/gpu_memory.py reserves per problem,
# but CUDA contexts and allocator slack are not in its books): a reference that found the GPU full
# at one moment is not a broken problem. Built again after each of these waits, then given up.
OOM_WAITS_S = (5.0, 15.0, 30.0)
T = TypeVar("T")


def out_of_memory(exc: BaseException) -> bool:
    """Did this reference fail for want of GPU memory (torch's OutOfMemoryError, or a CUDA
    "out of memory" error raised as RuntimeError by a kernel launch)?"""
    return isinstance(exc, torch.OutOfMemoryError) or mentions_out_of_memory(str(exc))


def mentions_out_of_memory(text: str) -> bool:
    """An error's text that says the GPU was out of memory (torch's OutOfMemoryError by name, or a
    kernel launch's CUDA "out of memory"): how a candidate's error, which arrives as text, is read."""
    return "OutOfMemoryError" in text or "out of memory" in text.lower()


def problem_state(worker, source: str, cfg: dict[str, Any], waits: tuple[float, ...] = OOM_WAITS_S) -> ProblemState:
    key = "|".join(str(x) for x in (source_key(source), cfg["device"], cfg["shrink_for_cpu"], cfg["shrink_max_dim"],
                                     cfg["seed"], cfg["trials"], cfg["odd_size_trial"], cfg["max_trial_mb"], cfg["max_output_mb"],
                                     cfg.get("max_own_size_trial_mb"), cfg.get("own_size_trials")))
    state = worker.problems.get(key)
    if state is None:
        state = _build(source, cfg, worker.tmp, waits)
        worker.problems[key] = state
        while len(worker.problems) > MAX_CACHED_PROBLEMS or (
                len(worker.problems) > 1 and sum(s.cached_bytes() for s in worker.problems.values()) > cache_limit(cfg)):
            worker.problems.popitem(last=False)
    else:
        worker.problems.move_to_end(key)
    return state


def _build(source: str, cfg: dict[str, Any], directory: str, waits: tuple[float, ...]) -> ProblemState:
    """A ProblemState, built again after each wait while a GPU reference runs out of memory
    (`notes["oom_retries"]`, `notes["oom_wait_s"]`: how often and how long it waited)."""
    state, waited = after_memory_waits(lambda: ProblemState(source, cfg, directory),
                                       lambda outcome: isinstance(outcome, ProblemError) and out_of_memory(outcome), waits)
    if waited:
        state.notes.update(oom_retries=len(waited), oom_wait_s=sum(waited))
    return state


def after_memory_waits(attempt: Callable[[], T], short_of_memory: Callable[[Any], bool],
                       waits: tuple[float, ...]) -> tuple[T, list[float]]:
    """`attempt()`, again after each of `waits` (seconds) while `short_of_memory(outcome)` says it
    found the shared GPU full (outcome: what it returned, or the exception it raised); the failed
    try's tensors and the allocator's cache go back to the GPU before each wait. Returns (result,
    the waits taken); an exception raised for another reason, or still after the last wait, is
    raised. The reference's build and the candidate's judgement (judge.judge_retrying) use it."""
    waited: list[float] = []
    while True:
        try:
            result = attempt()
        except Exception as exc:  # noqa: BLE001 - re-raised below unless it is a shortage to wait out
            if len(waited) >= len(waits) or not short_of_memory(exc):
                raise
        else:
            if len(waited) >= len(waits) or not short_of_memory(result):
                return result, waited
        gc.collect()
        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()
        waited.append(waits[len(waited)])
        time.sleep(waited[-1])
