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
would teach models to avoid the tensor cores. So when a launched kernel of the candidate uses
`tl.dot` without asking for "ieee"/"tf32x3", and the judge runs on a GPU, its fp32 outputs are
held to the half-precision tolerance (the rounding is that of fp16 inputs), and the verdict's
trial records say which tolerance applied. On the CPU interpreter dots are computed in full fp32,
so the strict fp32 tolerance always applies there.

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


def compare_outputs(ref: list[torch.Tensor], got: list[torch.Tensor], *, tolerances: dict[str, float],
                    tf32_dot: bool = False, tf32_tolerance: float = 1e-2, ref_paths: list[str] | None = None,
                    got_paths: Any = None) -> dict[str, Any]:
    """{ok, max_abs_err, reason, tolerance} for one trial's outputs. With `ref_paths` (the
    reference's dict keys per tensor, candidate_runner._flatten_outputs) the candidate's
    `got_paths` must be the same: a key missing or added is a mismatch, named."""
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
            if not torch.equal(r, g):
                mismatches = int((r != g).sum())
                return {"ok": False, "max_abs_err": None, "reason": f"{where}: {mismatches} element(s) differ (integer outputs must match exactly)"}
            continue
        r64, g64 = r.to(torch.float64 if not r.is_complex() else torch.complex128), g.to(torch.float64 if not g.is_complex() else torch.complex128)
        r_nan, g_nan = torch.isnan(r64), torch.isnan(g64)
        if not torch.equal(r_nan, g_nan):
            return {"ok": False, "max_abs_err": float("nan"), "reason": f"{where}: NaN where the reference has none ({int((g_nan & ~r_nan).sum())} element(s))"
                    if bool((g_nan & ~r_nan).any()) else f"{where}: a number where the reference has NaN"}
        r_inf, g_inf = torch.isinf(r64), torch.isinf(g64)
        if not torch.equal(r_inf, g_inf) or not torch.equal(r64[r_inf], g64[g_inf]):
            return {"ok": False, "max_abs_err": float("inf"), "reason": f"{where}: Inf values differ from the reference's"}
        finite = ~(r_nan | r_inf)
        rf, gf = r64[finite], g64[finite]
        if rf.numel() == 0:
            continue
        err = (rf - gf).abs()
        max_err = float(err.max())
        worst = max(worst, max_err)
        bad = err > tol + tol * rf.abs()
        if bool(bad.any()):
            return {"ok": False, "max_abs_err": worst, "tolerance": tol,
                    "reason": f"{where}: {int(bad.sum())} of {rf.numel()} element(s) outside atol=rtol={tol:g} (max abs error {max_err:.3g})"}
        if rf.numel() > 1 and bool((gf == gf.reshape(-1)[0]).all()) and not bool((rf == rf.reshape(-1)[0]).all()):
            return {"ok": False, "max_abs_err": worst, "tolerance": tol,
                    "reason": f"{where} is constant ({float(gf.reshape(-1)[0].real) if gf.is_complex() else float(gf.reshape(-1)[0]):g}) but the reference is not"}
    return {"ok": True, "max_abs_err": worst, "reason": None, "tolerance": max(tols) if tols else None}
