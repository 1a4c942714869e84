"""The per-trial byte budget (`max_trial_mb`): how big one trial is, and how far to shrink a problem.

`trial_bytes` estimates one trial's inputs and outputs at the problem's own sizes on the meta
device (shapes and dtypes, no memory, no compute); `fit_to_budget` returns the problem itself
when it fits, else `shrink.shrink_problem` at the largest power-of-two size that does
(validation/README.md, "Per-trial byte budget"). Used by the worker's judgement (judge.py,
which re-exports both names).
"""

from __future__ import annotations

import sys
from typing import Any

import torch

from autotriton.validation import shrink
from autotriton.validation.reference_problem import load_problem_module


def _tensor_bytes(obj: Any) -> int:
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, (list, tuple)):
        return sum(_tensor_bytes(o) for o in obj)
    if isinstance(obj, dict):
        return sum(_tensor_bytes(o) for o in obj.values())
    return 0


def trial_bytes(source: str, directory: str = "") -> tuple[int, int | None] | None:
    """(input bytes, output bytes) of one trial of the problem at its own sizes, from a run on the
    meta device (shapes and dtypes only: no memory, no compute). Output bytes are None when the
    reference's forward does not run on meta; None altogether when get_inputs() does not."""
    got = footprint(source, directory)
    return None if got is None else (int(got["inputs"] or 0), got["outputs"])


def _meta_bytes(module) -> tuple[int, int | None, int] | None:
    """(inputs, outputs or None, parameters + buffers) in bytes, on the meta device."""
    try:
        with torch.device("meta"):
            inputs = list(module.get_inputs())
    except Exception:  # noqa: BLE001
        return None
    in_bytes = _tensor_bytes(inputs)  # tensors get_inputs placed on a device itself count the same
    out_bytes: int | None = None
    param_bytes = 0
    try:
        with torch.device("meta"), torch.no_grad():
            model = module.Model(*module.get_init_inputs())
            param_bytes = sum(_tensor_bytes(t) for t in (*model.parameters(), *model.buffers()))
            out_bytes = _tensor_bytes(model(*inputs))
    except Exception:  # noqa: BLE001 (data-dependent ops, .item(), ...: inputs alone decide)
        pass
    return in_bytes, out_bytes, param_bytes


def footprint(source: str, directory: str = "") -> dict[str, int | None] | None:
    """One run of the problem at its own sizes, in bytes, from the meta device (no memory, no
    compute): {"inputs", "outputs" (None where forward does not run on meta), "parameters"
    (parameters and buffers)}; None where get_inputs() does not run. What a GPU scheduler reserves
    for the problem (distillation/gpu_memory.py) is computed from it."""
    try:
        module = load_problem_module(source, directory, "size")
    except BaseException:  # noqa: BLE001 (the real load reports it)
        return None
    try:
        got = _meta_bytes(module)
    finally:
        sys.modules.pop(module.__name__, None)
    if got is None:
        return None
    return {"inputs": got[0], "outputs": got[1], "parameters": got[2]}


def fit_to_budget(source: str, cfg: dict[str, Any], directory: str = "") -> tuple[str, dict[str, Any]]:
    """The problem itself when one trial fits `max_trial_mb` (inputs + outputs) and all trials'
    outputs fit `max_output_mb`; else shrink.shrink_problem at the largest power-of-two max_dim
    (batch constants capped by the same max_dim) whose estimate fits. Returns (source, notes)."""
    budget = cfg["max_trial_mb"] * 2**20
    answer_budget = cfg["max_output_mb"] * 2**20 * 0.9  # headroom for the header and the odd-size trial's growth
    n_trials = cfg["trials"] + (1 if cfg["odd_size_trial"] else 0)

    def fits(est: tuple[int, int | None]) -> bool:
        ins, outs = est[0], est[1] or 0
        # With answer files (answer_shm) the answer's size is bounded by the reference's, not a frame.
        return ins + outs <= budget and (cfg.get("answer_shm", True) or outs * n_trials <= answer_budget)

    def mb(est: tuple[int, int | None]) -> float:
        return round((est[0] + (est[1] or 0)) / 2**20, 1)

    est = trial_bytes(source, directory)
    if est is None:
        return source, {"trial_mb": "unknown (get_inputs does not run on the meta device): judged at full size"}
    notes: dict[str, Any] = {"trial_mb": mb(est)}
    if est[1] is None:
        notes["trial_mb_outputs_unknown"] = True
    if fits(est):
        return source, notes
    previous = source
    for k in range(40, 4, -1):
        max_dim = 2**k
        shrunk = shrink.shrink_problem(source, max_dim, max_batch=max_dim)
        if shrunk in (source, previous):
            continue
        previous = shrunk
        est_small = trial_bytes(shrunk, directory)
        if est_small is not None and fits(est_small):
            notes.update(shrunk_for_memory=True, shrink_max_dim=max_dim, judged_trial_mb=mb(est_small))
            return shrunk, notes
    if previous != source:
        est_small = trial_bytes(previous, directory)
        notes.update(shrunk_for_memory=True, shrink_max_dim=32, judged_trial_mb=mb(est_small) if est_small else None,
                     over_budget="still over max_trial_mb at the smallest shrink")
        return previous, notes
    notes["over_budget"] = "over max_trial_mb, but no size constant to shrink: judged at full size"
    return source, notes


def own_sizes_fit(budget_notes: dict[str, Any], cfg: dict[str, Any]) -> bool:
    """Whether one trial at the problem's own sizes (inputs + outputs, `trial_mb` of fit_to_budget)
    and the odd-size trial's fit `max_own_size_trial_mb` (0: always shrink over max_trial_mb)."""
    limit = float(cfg.get("max_own_size_trial_mb", 0) or 0)
    trial_mb = budget_notes.get("trial_mb")
    if limit <= 0 or not isinstance(trial_mb, (int, float)):
        return False
    return trial_mb * (2 if cfg["odd_size_trial"] else 1) <= limit
