"""When the judge allows TF32's looser fp32 tolerance (validation/compare.py): for a trial in which
one of the candidate's launches ran a `tl.dot` in TF32 (the precision a launch passes decides over
the kernel's text), and only where the reference itself multiplies fp32 matrices. A candidate that
launches a gratuitous dot beside an approximation buys no 100x looser tolerance."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import triton
import triton.language as tl

from autotriton.validation import candidate_recorders as rec
from autotriton.validation import compare, judge
from autotriton.validation.candidate_runner import CANDIDATE_MODULE
from autotriton.validation.problem_state import _Fp32Matmuls


@triton.jit
def _dot_either_way(a_ptr, b_ptr, c_ptr, PRECISION: tl.constexpr):
    offs = tl.arange(0, 16)
    a = tl.load(a_ptr + offs[:, None] * 16 + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * 16 + offs[None, :])
    if PRECISION == "ieee":
        c = tl.dot(a, b, input_precision="ieee")
    else:
        c = tl.dot(a, b)
    tl.store(c_ptr + offs[:, None] * 16 + offs[None, :], c)


@triton.jit
def _plain_dot(a_ptr, c_ptr):
    offs = tl.arange(0, 16)
    a = tl.load(a_ptr + offs[:, None] * 16 + offs[None, :])
    tl.store(c_ptr + offs[:, None] * 16 + offs[None, :], tl.dot(a, a))


def test_the_precision_a_launch_passes_decides_over_the_kernels_text():
    either = rec._kernel_info(_dot_either_way)
    assert either["uses_dot"] and either["ieee_dot"]  # the text names "ieee" in one branch
    assert rec._asks_tf32(either, ("a", "b", "c", "tf32"), {}) is True
    assert rec._asks_tf32(either, ("a", "b", "c"), {"PRECISION": "ieee"}) is False
    plain = rec._kernel_info(_plain_dot)
    assert plain["uses_dot"] and not plain["ieee_dot"]
    assert rec._asks_tf32(plain, ("a", "c"), {}) is True  # a dot naming no precision: TF32 on a GPU


def test_the_reference_is_watched_for_fp32_matrix_products():
    x = torch.randn(4, 8)
    for fn, expected in [(lambda: torch.nn.functional.linear(x, torch.randn(3, 8)), True),
                         (lambda: torch.nn.functional.conv1d(x[None], torch.randn(2, 4, 3)), True),
                         (lambda: torch.softmax(x, -1).sum(0), False),
                         (lambda: x.double() @ x.double().T, False)]:  # fp64: never TF32
        with _Fp32Matmuls() as watch:
            fn()
        assert watch.seen is expected


def _assess(monkeypatch, *, reference_matmuls: bool, tf32_launch: bool, error: float) -> dict:
    """The judge's assessment of one GPU trial whose output is off by `error`."""
    real = compare.compare_outputs
    monkeypatch.setattr(compare, "compare_outputs", lambda *a, device=None, **k: real(*a, device="cpu", **k))
    ref = torch.randn(32, 32)
    phase = SimpleNamespace(name="main", output_paths=[[""]], fp32_matmuls=reference_matmuls,
                            trials=[{"seed": 1, "inputs": [torch.randn(32, 32)], "digest": "d"}])
    kernel = f"{CANDIDATE_MODULE}:matmul_kernel"
    trial = {"launches": [kernel], "tf32_launches": [kernel] if tf32_launch else [], "input_digest": "d",
             "outputs": [0], "output_devices": ["cuda:0"], "output_paths": [""], "aten_ops": {}}
    header = {"phases": [{"trials": [trial]}]}
    cfg = {"device": "cuda:0", "tolerances": compare.DEFAULT_TOLERANCES, "tf32_tolerance": 1e-2,
           "compile_check": False, "suspect_speedup": 100.0}
    result = {"status": None, "violations": [], "trials": [], "timing": {}}
    judge._assess(result, header, [ref + error], [phase], [[[ref]]], cfg, state=None)
    return result


@pytest.mark.parametrize("reference_matmuls, tf32_launch, passes", [
    (True, True, True),  # a matmul computed in TF32: half precision's tolerance
    (False, True, False),  # a gratuitous TF32 dot where the reference multiplies no matrices
    (True, False, False),  # the dot launched as "ieee": fp32's own tolerance
])
def test_tf32_tolerance_only_for_a_tf32_launch_where_the_reference_multiplies_matrices(
        monkeypatch, reference_matmuls, tf32_launch, passes):
    result = _assess(monkeypatch, reference_matmuls=reference_matmuls, tf32_launch=tf32_launch, error=2e-3)
    assert (result["status"] == "correct") is passes, (result["status"], result.get("error"))
    assert result["timing"]["tf32_tolerance_applied"] is passes
    assert result["trials"][0]["tolerance"] == (1e-2 if passes else 1e-4)
    # what fp32 allows passes either way
    assert _assess(monkeypatch, reference_matmuls=reference_matmuls, tf32_launch=tf32_launch, error=1e-5)["status"] == "correct"
