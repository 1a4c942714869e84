"""The judge on a real GPU (run on the device machine: pytest -m gpu tests/test_validation_gpu.py).

Same candidates as the CPU suite, compiled and run by Triton on CUDA, with timing."""

from __future__ import annotations

import pytest

from autotriton.validation import JudgePool
from autotriton.validation.rewards import combined_reward
from validation_helpers import CORRECT, candidate, judge_config, problem

pytestmark = pytest.mark.gpu

TF32_MATMUL = candidate("correct_matmul").replace(', input_precision="ieee"', "")  # default tl.dot: TF32 on NVIDIA

ILLEGAL_ACCESS = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bad_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs + (1 << 40))  # far out of bounds: an illegal memory access
    tl.store(y_ptr + offs, x, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        bad_kernel[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
        return y
'''


@pytest.fixture(scope="module")
def gpu_verdicts():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    jobs = {kind: (problem(p), candidate(c)) for kind, (p, c) in CORRECT.items()}
    jobs["tf32_matmul"] = (problem("matmul"), TF32_MATMUL)
    jobs["side_stream"] = (problem("relu"), candidate("cheat_side_stream"))
    jobs["matmul_fallback"] = (problem("matmul"), candidate("cheat_matmul_fallback"))
    jobs["illegal_access"] = (problem("relu"), ILLEGAL_ACCESS)
    jobs["after_illegal_access"] = (problem("relu"), candidate("correct_relu"))
    jobs["input_mutation"] = (problem("relu"), candidate("cheat_input_mutation"))
    jobs["timing_memo"] = (problem("relu"), candidate("cheat_timing_memo_by_pointer"))
    names = list(jobs)
    with JudgePool(judge_config(device="cuda", workers=1, timeout_s=120, timing_runs=20, timing_input_sets=2, time_compile=False)) as pool:
        return dict(zip(names, pool.validate_many([jobs[n] for n in names])))


def test_speedup_against_torch_compile_of_the_reference(gpu_verdicts):
    with JudgePool(judge_config(device="cuda", workers=1, timeout_s=300, timing_runs=20, timing_input_sets=1)) as pool:
        v = pool.validate(problem("softmax"), candidate("correct_softmax"))
    assert v.status == "correct", v.error
    assert v.speedup_vs_compile is not None and v.speedup_vs_compile > 0, v.timing.get("reference")
    assert v.timing["reference"]["compiled"][0]["kept"] >= 1
    # host work per call, each side: what says whether launches or kernels decide a speedup
    assert all(v.timing["host_ms"][side] > 0 for side in ("candidate", "eager", "compiled")), v.timing.get("host_ms")
    share = v.timing.get("triton_time_share")
    assert share is None or 0.0 < share <= 1.0


@pytest.mark.parametrize("kind", sorted(CORRECT) + ["tf32_matmul", "after_illegal_access"])
def test_correct_kernels_on_gpu(gpu_verdicts, kind):
    v = gpu_verdicts[kind]
    assert v.status == "correct", (kind, v.status, v.error, [(x.rule, x.message) for x in v.violations])
    assert combined_reward(v) == 1.0 and v.device != "cpu"
    assert v.speedup is not None and v.speedup > 0 and "suspect" in v.timing
    assert v.timing["candidate"]["sets"][0]["runs"] >= 20
    if kind == "tf32_matmul":
        assert v.timing["tf32_tolerance_applied"] is True
    if kind == "matmul_masked_edges":
        assert v.timing["tf32_tolerance_applied"] is False  # asked for ieee


def test_side_stream_is_caught_at_run_time(gpu_verdicts):
    v = gpu_verdicts["side_stream"]
    assert v.status == "rule_violation" and {"RUNTIME-SIDE-STREAM", "CONCURRENCY"} <= {x.rule for x in v.violations}


def test_fallback_and_mutation_on_gpu(gpu_verdicts):
    assert "RUNTIME-ATEN-COMPUTE" in {x.rule for x in gpu_verdicts["matmul_fallback"].violations}
    assert "RUNTIME-INPUT-MUTATION" in {x.rule for x in gpu_verdicts["input_mutation"].violations}


def test_illegal_memory_access_is_a_verdict(gpu_verdicts):
    v = gpu_verdicts["illegal_access"]
    assert v.status in ("runtime_error", "crashed") and combined_reward(v) == 0.0, (v.status, v.error)


def test_a_forward_answering_timed_calls_from_a_cache_is_caught_on_the_gpu(gpu_verdicts):
    """validation/timing.py FreshValues and the check call, on CUDA events: the pointer-keyed cache
    passes every trial, then answers the check call with a stale output."""
    cheat, honest = gpu_verdicts["timing_memo"], gpu_verdicts["elementwise"]
    assert cheat.correct and "RUNTIME-TIMING-MISMATCH" in {v.rule for v in cheat.violations}, (cheat.status, cheat.violations)
    assert cheat.timing["check"]["ok"] is False and "speedup" not in cheat.timing
    assert honest.timing["check"]["ok"] is True and honest.timing["candidate"]["fresh_values"] is True
    assert honest.timing["speedup"] > 0


def test_at_its_own_sizes_a_cache_kept_only_at_full_size_is_caught_on_the_gpu():
    """A problem judged shrunk for memory (max_trial_mb) is timed at its own sizes on the GPU: the
    check call there runs on secret-seeded inputs and is compared through projections."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    jobs = [(problem("relu"), candidate("correct_relu")), (problem("relu"), candidate("cheat_timing_memo_at_full_size"))]
    with JudgePool(judge_config(device="cuda", workers=1, timeout_s=120, timing_runs=20, timing_input_sets=1,
                                time_compile=False, max_trial_mb=0.002)) as pool:
        honest, cheat = pool.validate_many(jobs)
    assert honest.timing["problem_shrunk_for_memory"] and honest.correct and honest.rule_ok, (honest.status, honest.violations)
    assert honest.timing["check"] == {"trial": "own-size check set", "ok": True, "reason": None,
                                      "max_excess": honest.timing["check"]["max_excess"]}
    assert honest.timing["candidate"]["full_size"] and honest.timing["speedup"] > 0
    assert cheat.correct and "RUNTIME-TIMING-MISMATCH" in {v.rule for v in cheat.violations}
    assert cheat.timing["check"]["ok"] is False and "speedup" not in cheat.timing


def test_trial_inputs_are_drawn_on_the_gpu_and_kept_on_the_cpu():
    """A GPU judge draws a problem's trial inputs with its factories on the GPU (the seed's values
    there), keeps them on the CPU; a get_inputs() that cannot run so is drawn on the CPU."""
    import types

    import torch

    from autotriton.validation.problem_state import draw_inputs

    module = types.SimpleNamespace(get_inputs=lambda: [torch.rand(64, 32), 3])
    inputs = draw_inputs(module, 11, "cuda")
    torch.manual_seed(11)
    assert inputs[0].device.type == "cpu" and torch.equal(inputs[0], torch.rand(64, 32, device="cuda").cpu()) and inputs[1] == 3
    numpy_bound = types.SimpleNamespace(get_inputs=lambda: [torch.from_numpy(torch.rand(4).numpy())])
    torch.manual_seed(11)
    expected = torch.rand(4)  # drawn before draw_inputs, which seeds the generators itself
    assert torch.equal(draw_inputs(numpy_bound, 11, "cuda")[0], expected)
