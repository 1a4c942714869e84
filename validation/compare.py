"""Comparing a candidate's outputs with the reference's: dtype-aware tolerances, strict on the rest.

Tolerances (absolute and relative, as in `torch.allclose`: |a - b| <= atol + rtol * |b|):

| output dtype | default atol = rtol | why |
| --- | --- | --- |
| float32 / float64 | 1e-4 | KernelBench's fp32 tolerance |
| float16 / bfloat16 | 1e-2 | KernelBench's half-precision tolerance |
| float32 produced through a TF32 `tl.dot` (GPU only) | 1e-2 (`tf32_tolerance`) | see below |
| integer / bool | exact | |

TF32. On NVIDIA GPUs `tl.dot` on fp32 operands defaults to `input_precision="tf32"`: the operands
are rounded to a 10-bit mantissa, the same as fp16, while accumulation stays fp32. That is the
idiomatic way to write a Triton matmul and what cuBLAS does under `allow_tf32`; rejecting it
would teach models to avoid the tensor cores. So when, in a trial on a GPU, a launch of the
candidate's ran a `tl.dot` in TF32, the trial's fp32 outputs are held to the half-precision
tolerance (the rounding is that of fp16 inputs), and the verdict's trial records say which
tolerance applied. A launch runs its dot in TF32 when it passes "tf32" as an argument (a
precision constexpr), or passes no precision and the kernel's text asks for none ("ieee" and
"tf32x3" are fp32's accuracy; candidate_recorders._asks_tf32). Only where the reference itself
multiplies fp32 matrices (a matmul, convolution, attention or RNN operator on fp32 operands,
problem_state.TF32_OPS): elsewhere TF32 stands for nothing the reference computes, and a dot
launched beside an approximation would buy it a 100x looser tolerance. On the CPU interpreter
dots are computed in full fp32, so the strict fp32 tolerance always applies there.

Beyond tolerance: the number of outputs, each shape and each dtype must match; NaN and +/-Inf
must appear exactly where the reference has them (never pass otherwise); a constant output
(e.g. all zeros) never matches a reference that is not constant, however small its values.
"""

from __future__ import annotations

from typing import Any

import torch

DEFAULT_TOLERANCES = {"float32": 1e-4, "float64": 1e-4, "float16": 1e-2, "bfloat16": 1e-2}


def tolerance_for(dtype: torch.dtype, tolerances: dict[str, float], tf32_dot: bool, tf32_tolerance: float) -> float:
    name = str(dtype).removeprefix("torch.")
    if name == "float32" and tf32_dot:
        return max(tolerances.get("float32", 1e-4), tf32_tolerance)
    if dtype.is_floating_point or dtype.is_complex:
        return tolerances.get(name, 1e-4)
    return 0.0


def key_mismatch(ref_paths: list[str], got_paths: Any) -> str | None:
    """Why the candidate's output tensors do not sit under the reference's dict keys (the paths
    candidate_runner gives each tensor, `['sentence_embedding']`; "" for one under no dict), or
    None when they do or only their number differs. `got_paths` comes from the candidate's
    process: anything but a list of strings counts as no keys at all."""
    got = [p for p in got_paths if isinstance(p, str)] if isinstance(got_paths, list) else []
    if got == ref_paths:
        return None
    missing = [p for p in dict.fromkeys(ref_paths) if p and p not in set(got)]
    extra = [p for p in dict.fromkeys(got) if p and p not in set(ref_paths)]
    if missing:
        return f"output lacks key(s) {', '.join(missing)} of the reference's output" + (
            f" (and has {', '.join(extra)} instead)" if extra else "")
    if extra:
        return f"output has key(s) {', '.join(extra)} that the reference's output has not"
    if len(got) != len(ref_paths):
        return None  # the same keys, another number of tensors: the count's message says it
    return "output holds its tensors under other dict keys than the reference's output"


# Elements compared at a time: a problem judged at its own sizes answers with gigabytes (KernelBench
# L1's cumsum: 4.3 GB an output, five answers a judgement); compared whole in float64 on the CPU
# that was 150 s of a 265 s verdict (benchmarks/RESULTS.md, twenty-fifth GPU run) and five
# float64 copies of the output in host memory. Slices of this many elements, moved to the judge's
# device (its GPU: the reference ran there), keep both small.
CHUNK_ELEMENTS = 2**25


def _slices(r: torch.Tensor, g: torch.Tensor, device: str | torch.device | None, chunk: int) -> Any:
    """(reference slice, candidate slice) pairs over both tensors flattened, each on `device`."""
    rf, gf = r.reshape(-1), g.reshape(-1)
    for start in range(0, rf.numel(), chunk):
        a, b = rf[start:start + chunk], gf[start:start + chunk]
        yield (a.to(device) if device is not None else a), (b.to(device) if device is not None else b)


class _Tally:
    """What the comparison of one output found, slice by slice: NaN and Inf placement, errors over
    the finite elements, and whether each side is one constant value."""

    def __init__(self) -> None:
        self.extra_nan = self.missing_nan = self.bad = self.finite = 0
        self.inf_differs = False
        self.max_err = 0.0
        self.r_first: torch.Tensor | None = None
        self.g_first: torch.Tensor | None = None
        self.r_constant = self.g_constant = True

    def add(self, r: torch.Tensor, g: torch.Tensor, tol: float) -> None:
        wide = torch.complex128 if r.is_complex() else torch.float64
        r64, g64 = r.to(wide), g.to(torch.complex128 if g.is_complex() else torch.float64)
        r_nan, g_nan = torch.isnan(r64), torch.isnan(g64)
        self.extra_nan += int((g_nan & ~r_nan).sum())
        self.missing_nan += int((r_nan & ~g_nan).sum())
        r_inf, g_inf = torch.isinf(r64), torch.isinf(g64)
        if not torch.equal(r_inf, g_inf) or not torch.equal(r64[r_inf], g64[g_inf]):
            self.inf_differs = True
        finite = ~(r_nan | r_inf)
        rf, gf = r64[finite], g64[finite]
        if rf.numel() == 0:
            return
        self.finite += rf.numel()
        err = (rf - gf).abs()
        self.max_err = max(self.max_err, float(err.max()))
        self.bad += int((err > tol + tol * rf.abs()).sum())
        if self.r_first is None:
            self.r_first, self.g_first = rf[0], gf[0]
        self.r_constant = self.r_constant and bool((rf == self.r_first).all())
        self.g_constant = self.g_constant and bool((gf == self.g_first).all())


def compare_outputs(ref: list[torch.Tensor], got: list[torch.Tensor], *, tolerances: dict[str, float],
                    tf32_dot: bool = False, tf32_tolerance: float = 1e-2, ref_paths: list[str] | None = None,
                    got_paths: Any = None, device: str | torch.device | None = None,
                    chunk: int = CHUNK_ELEMENTS) -> dict[str, Any]:
    """{ok, max_abs_err, reason, tolerance} for one trial's outputs. With `ref_paths` (the
    reference's dict keys per tensor, candidate_runner._flatten_outputs) the candidate's
    `got_paths` must be the same: a key missing or added is a mismatch, named. The elements are
    compared `chunk` at a time on `device` (None: where the tensors are), each slice moved there."""
    wrong_keys = key_mismatch(ref_paths, got_paths) if ref_paths is not None else None
    if wrong_keys is not None:
        return {"ok": False, "max_abs_err": None, "reason": wrong_keys}
    if len(ref) != len(got):
        return {"ok": False, "max_abs_err": None, "reason": f"returned {len(got)} output tensor(s), expected {len(ref)}"}
    worst = 0.0
    tols = []
    for i, (r, g) in enumerate(zip(ref, got)):
        where = f"output {i}" if len(ref) > 1 else "output"
        if ref_paths and ref_paths[i]:
            where += f" {ref_paths[i]}"
        if tuple(r.shape) != tuple(g.shape):
            return {"ok": False, "max_abs_err": None, "reason": f"{where} has shape {tuple(g.shape)}, expected {tuple(r.shape)}"}
        if r.dtype != g.dtype:
            return {"ok": False, "max_abs_err": None, "reason": f"{where} has dtype {g.dtype}, expected {r.dtype}"}
        tol = tolerance_for(r.dtype, tolerances, tf32_dot, tf32_tolerance)
        tols.append(tol)
        if r.numel() == 0:
            continue
        if not (r.dtype.is_floating_point or r.dtype.is_complex):
            mismatches = sum(int((a != b).sum()) for a, b in _slices(r, g, device, chunk))
            if mismatches:
                return {"ok": False, "max_abs_err": None, "reason": f"{where}: {mismatches} element(s) differ (integer outputs must match exactly)"}
            continue
        tally = _Tally()
        for a, b in _slices(r, g, device, chunk):
            tally.add(a, b, tol)
        if tally.extra_nan or tally.missing_nan:
            return {"ok": False, "max_abs_err": float("nan"), "reason": f"{where}: NaN where the reference has none ({tally.extra_nan} element(s))"
                    if tally.extra_nan else f"{where}: a number where the reference has NaN"}
        if tally.inf_differs:
            return {"ok": False, "max_abs_err": float("inf"), "reason": f"{where}: Inf values differ from the reference's"}
        if not tally.finite:
            continue
        worst = max(worst, tally.max_err)
        if tally.bad:
            return {"ok": False, "max_abs_err": worst, "tolerance": tol,
                    "reason": f"{where}: {tally.bad} of {tally.finite} element(s) outside atol=rtol={tol:g} (max abs error {tally.max_err:.3g})"}
        if tally.finite > 1 and tally.g_constant and not tally.r_constant:
            first = tally.g_first
            return {"ok": False, "max_abs_err": worst, "tolerance": tol,
                    "reason": f"{where} is constant ({float(first.real) if first.is_complex() else float(first):g}) but the reference is not"}
    return {"ok": True, "max_abs_err": worst, "reason": None, "tolerance": max(tols) if tols else None}
