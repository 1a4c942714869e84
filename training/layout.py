"""Where GRPO's training processes and its judge run (`training.layout`).

    single            one training process in the CLI's own process, the judge beside it (any
                      GPUs it sees; validation.gpus). One GPU, or the CPU.
    judge_on_own_gpu  one training process on the first GPU (launched with only that GPU
                      visible, so transformers does not fall back to nn.DataParallel), the
                      judge's pool on the other GPUs: its CUDA contexts and kernels never slow
                      generation.
    data_parallel     one training process per GPU (`accelerate launch`, DDP) and ONE judge
                      pool for all of them, on every GPU (or validation.gpus), served from the
                      launching process (training/judge_service.py), instead of one pool per
                      rank contending for CUDA context creation.
    auto              judge_on_own_gpu when two or more GPUs are visible and one process is asked
                      for; data_parallel when training.num_processes > 1; single otherwise.

In both two-GPU layouts the launching process holds the judge pool (it sees every GPU) and
the trainers are launched under `accelerate launch` with their own CUDA_VISIBLE_DEVICES.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LAYOUTS = ("auto", "single", "judge_on_own_gpu", "data_parallel")

# What `auto` picks with two or more GPUs and training.num_processes = 1. Chosen before the
# two-GPU runs of issue 19 were measured: it is the layout whose generation cannot be slowed
# by the judge; change it here if benchmarks/RESULTS.md shows data_parallel better.
AUTO_WITH_SEVERAL_GPUS = "judge_on_own_gpu"


class LayoutError(ValueError):
    """training.layout cannot be honoured on this machine; the message says why and what to do."""


@dataclass(frozen=True)
class Layout:
    name: str  # single | judge_on_own_gpu | data_parallel
    num_processes: int  # training processes
    train_gpus: list[int] = field(default_factory=list)  # indices (as the CLI sees them) given to the trainers; [] = unchanged
    judge_gpus: list[int] = field(default_factory=list)  # validation.gpus of the shared pool; [] = every visible GPU
    shared_judge: bool = False  # the CLI process serves one pool to the launched ranks
    reason: str = ""

    def describe(self) -> str:
        where = f"training on GPU(s) {self.train_gpus}" if self.train_gpus else f"{self.num_processes} training process(es)"
        judge = f"judge on GPU(s) {self.judge_gpus}" if self.judge_gpus else "judge on every visible device"
        return f"layout {self.name}: {where}, {judge}" + (" (one shared pool)" if self.shared_judge else "") + \
            (f"; {self.reason}" if self.reason else "")


def choose_layout(layout: str, *, num_processes: int, visible_gpus: int, device: str,
                  judge_gpus: list[int] | None = None) -> Layout:
    """The layout GRPO runs with. `visible_gpus`: GPUs the CLI process sees; `device`: the
    training device after 'auto' is resolved (cpu or cuda); `judge_gpus`: validation.gpus as
    configured ([] = let the layout decide). Raises LayoutError naming training.layout."""
    if layout not in LAYOUTS:
        raise LayoutError(f"training.layout = {layout!r}: choose one of {', '.join(LAYOUTS)}.")
    judge_gpus = list(judge_gpus or [])
    gpus = visible_gpus if device == "cuda" else 0
    if layout == "auto":
        if num_processes > 1:
            layout, reason = "data_parallel", f"training.num_processes = {num_processes}"
        elif gpus >= 2:
            layout, reason = AUTO_WITH_SEVERAL_GPUS, f"{gpus} GPUs visible"
        else:
            layout, reason = "single", "one GPU" if gpus == 1 else "no GPU"
    else:
        reason = "training.layout"

    if layout == "single":
        if num_processes > 1:
            raise LayoutError(f"training.layout = single runs one process, but training.num_processes = {num_processes}: "
                              "use layout data_parallel (or auto), or num_processes = 1.")
        return Layout("single", 1, [], judge_gpus, False, reason)

    if layout == "judge_on_own_gpu":
        if gpus < 2:
            raise LayoutError(f"training.layout = judge_on_own_gpu needs two GPUs; this process sees {gpus} "
                              f"(training device {device}). Use layout single or auto.")
        if num_processes > 1:
            raise LayoutError(f"training.layout = judge_on_own_gpu trains in one process, but training.num_processes = "
                              f"{num_processes}: use layout data_parallel for several training processes.")
        judge = judge_gpus or list(range(1, gpus))
        free = [g for g in range(gpus) if g not in judge]
        if not free:
            raise LayoutError(f"validation.gpus = {judge_gpus} leaves no GPU for training (layout judge_on_own_gpu): "
                              "leave one GPU out of validation.gpus.")
        return Layout("judge_on_own_gpu", 1, [free[0]], judge, True, reason)

    # data_parallel
    procs = num_processes if num_processes > 1 else gpus
    if procs < 2:
        raise LayoutError(f"training.layout = data_parallel needs two or more training processes: set "
                          f"training.num_processes (or --gpus) to 2 or more (this process sees {gpus} GPU(s)).")
    if gpus and procs > gpus:
        raise LayoutError(f"training.num_processes = {procs} but this process sees {gpus} GPU(s): one process per GPU.")
    train = list(range(procs)) if gpus else []
    return Layout("data_parallel", procs, train, judge_gpus, True, reason)


def trainer_env(layout: Layout, environ=None) -> dict[str, str]:
    """CUDA_VISIBLE_DEVICES for the launched trainers: the layout's training GPUs, named as the
    launching process names them (its own CUDA_VISIBLE_DEVICES entries when it has them)."""
    import os

    from autotriton.validation import visible_gpu_ids

    if not layout.train_gpus:
        return {}
    ids = visible_gpu_ids(max(layout.train_gpus) + 1, os.environ if environ is None else environ)
    return {"CUDA_VISIBLE_DEVICES": ",".join(ids[g] for g in layout.train_gpus)}
